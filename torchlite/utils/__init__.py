"""torchlite.utils: utilities (torch.utils): data loading in torchlite.utils.data, imported on
first use (it brings NumPy in, which `import torchlite` does not need)."""

__all__ = ["data"]


def __getattr__(name):
    if name == "data":
        import importlib
        return importlib.import_module(f"{__name__}.data")
    raise AttributeError(f"module 'torchlite.utils' has no attribute '{name}'")
