"""torchlite.compile's settings (PyTorch's torch._dynamo.config names, where scripts set them)."""

__all__ = ["config"]


class _Config:
    """Attributes scripts set: cache_size_limit (compiled graphs per callable before new input
    signatures run eagerly, PyTorch's default 8), suppress_errors (an error while compiling
    falls back to eager with a warning instead of raising), verbose."""

    def __init__(self):
        object.__setattr__(self, "_init", True)
        self.cache_size_limit = 8
        self.accumulated_cache_size_limit = 256
        self.suppress_errors = False
        self.verbose = False
        self.capture_scalar_outputs = False
        self.capture_dynamic_output_shape_ops = False
        self.automatic_dynamic_shapes = True
        self.assume_static_by_default = True
        object.__setattr__(self, "_init", False)

    @property
    def recompile_limit(self):          # PyTorch 2.6's new name for cache_size_limit
        return self.cache_size_limit

    @recompile_limit.setter
    def recompile_limit(self, value):
        self.cache_size_limit = value

    def __setattr__(self, name, value):
        if name.startswith("_") or name in type(self).__dict__ or name in self.__dict__ \
                or self._init:
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"torchlite._dynamo.config has no setting {name!r}")


config = _Config()
