"""torchlite.device: where a tensor's memory lives ('cpu' or 'cuda:N'), or 'meta' for tensors
with a shape and no data."""


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or a device, got {type!r}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device "
                               f"string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        # like torch.device: a device never equals a string
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    # `with torchlite.device("cuda"):` makes it the default device of the factory functions
    # inside the block, as in PyTorch (nesting restores the outer one)
    def __enter__(self):
        _entered.append(_default[0])
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        _default[0] = _entered.pop()
        return False


CPU = device("cpu")

# The device factory functions (zeros, tensor, randn, arange, ...) use when given none:
# None stands for the CPU, so the common case costs one list lookup.
_default = [None]
_entered = []


def set_default_device(d):
    """Make `d` (a device, a string like 'cuda:0', an index, or None for the CPU) the device of
    tensors that factory functions create without a device= argument (torch's
    set_default_device; *_like functions keep their input's device)."""
    dev = None if d is None else to_device(d)
    _default[0] = None if dev is None or dev.type == "cpu" else dev


def get_default_device():
    """The device factory functions use when given none (torch.get_default_device)."""
    return _default[0] if _default[0] is not None else CPU


def factory_device(d):
    """A factory's device= argument with the default device filled in (None: the CPU)."""
    return d if d is not None else _default[0]


def to_device(d):
    if d is None:
        return CPU
    if isinstance(d, device):
        return d
    if isinstance(d, int):
        return device("cuda", d)
    return device(d)
