"""torchlite.utils.tensorboard: PyTorch's torch.utils.tensorboard, writing TensorBoard event files.

SummaryWriter(log_dir) logs scalars, histograms, images, figures, text, audio, PR curves,
hyperparameters, embeddings and the model's graph (a torchlite.jit.trace) for TensorBoard
(`tensorboard --logdir runs`).  Every record goes through the tensorboard package's own
protobufs and event-file writer: install it with pip install "torchlite-dl[tensorboard]"
(images also need Pillow: the [vision] extra).  Importing this package imports neither;
the first use of SummaryWriter imports tensorboard, raising ImportError with that hint."""

__all__ = ["SummaryWriter", "FileWriter"]


def __getattr__(name):
    """SummaryWriter and FileWriter, from .writer on first use (which imports tensorboard)."""
    if name in __all__:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.writer"), name)
    raise AttributeError(f"module 'torchlite.utils.tensorboard' has no attribute '{name}'")


def __dir__():
    """The module's names, the lazy ones included."""
    return sorted(list(globals()) + __all__)
