"""torchlite.utils: utilities (torch.utils): data loading in torchlite.utils.data, activation
checkpointing in torchlite.utils.checkpoint, TensorBoard logging in torchlite.utils.tensorboard and
timing in torchlite.utils.benchmark,
each imported on first use (data brings NumPy in, which `import torchlite` does not need)."""

__all__ = ["data", "checkpoint", "tensorboard", "benchmark", "_pytree"]


def __getattr__(name):
    if name in __all__:           # (and _pytree, PyTorch's name for its tree utilities)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'torchlite.utils' has no attribute '{name}'")
