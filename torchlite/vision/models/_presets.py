"""The inference transforms that pretrained weights expect (torchvision's presets)."""
from ... import Tensor, nn

__all__ = ["ImageClassification"]


class ImageClassification(nn.Module):
    """Resize the shorter side to resize_size, center-crop crop_size, scale to [0, 1] floats,
    normalize with mean and std; takes a PIL image or a (batched) uint8/float tensor."""

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225), interpolation=None, antialias=True):
        super().__init__()
        self.crop_size, self.resize_size = [crop_size], [resize_size]
        self.mean, self.std = list(mean), list(std)
        self.interpolation, self.antialias = interpolation, antialias

    def forward(self, img):
        from ..transforms import functional as TF
        kw = {"antialias": self.antialias}
        if self.interpolation is not None:
            kw["interpolation"] = self.interpolation
        img = TF.resize(img, self.resize_size, **kw)
        img = TF.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = TF.pil_to_tensor(img)
        img = TF.convert_image_dtype(img, __import__("torchlite").float32)
        return TF.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self):
        return (f"ImageClassification(\n    crop_size={self.crop_size}\n    resize_size="
                f"{self.resize_size}\n    mean={self.mean}\n    std={self.std}\n)")
