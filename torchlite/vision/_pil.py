"""Pillow, imported on first use, with the install hint when it is missing."""

__all__ = ["pil_image"]


def pil_image():
    """PIL.Image, or ImportError naming the extra to install."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("this part of torchlite.vision reads or writes images with Pillow, which "
                          "is not installed: pip install \"torchlite-dl[vision]\" (or pip install "
                          "Pillow)") from None
    return Image
