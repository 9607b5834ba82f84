"""torchlite.Stream and torchlite.Event: PyTorch's device-generic stream and event classes.

On a CUDA device they are torchlite.cuda's Stream and Event (the constructor returns one).  On
the CPU, work runs in program order as it is called, so a CPU stream is always finished
(query() is True, synchronize() returns at once, waits are immediate), as PyTorch's CPU
stream; a CPU event cannot be recorded, and says so with PyTorch's error."""
from ._device import device as _device_cls

__all__ = ["Stream", "Event"]


def _device(device):
    """The device a stream or event is for: `device`, else the accelerator, else the CPU."""
    if device is None:
        from . import accelerator
        return accelerator.current_accelerator() or _device_cls("cpu")
    return device if isinstance(device, _device_cls) else _device_cls(device)


class Stream:
    """A stream of work on a device (torch.Stream).  Stream(device=None, priority=0)."""

    def __new__(cls, device=None, *, priority=0, **kwargs):
        dev = _device(device)
        if dev.type == "cuda":
            from . import cuda
            return cuda.Stream(dev, priority=priority)
        if dev.type != "cpu":
            raise RuntimeError(f"Stream: no streams on device type '{dev.type}'")
        self = super().__new__(cls)
        self.priority = priority
        return self

    device_type = property(lambda self: 0)       # PyTorch's device-type code of the CPU
    device_index = property(lambda self: -1)
    stream_id = property(lambda self: 0)
    device = property(lambda self: _device_cls("cpu"))

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream)

    def __hash__(self):
        return hash(("cpu stream", 0))

    def __repr__(self):
        return "torchlite.Stream device_type=cpu, device_index=-1, stream_id=0"


class Event:
    """A marker in a stream (torch.Event).  Event(device=None, enable_timing=False,
    blocking=False, interprocess=False)."""

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        dev = _device(device)
        if dev.type == "cuda":
            from . import cuda
            return cuda.Event(enable_timing=enable_timing, blocking=blocking,
                              interprocess=interprocess)
        if dev.type != "cpu":
            raise RuntimeError(f"Event: no events on device type '{dev.type}'")
        return super().__new__(cls)

    device = property(lambda self: _device_cls("cpu"))

    def _unsupported(self, *args, **kwargs):
        raise RuntimeError("cpu backend doesn't support events.")

    record = wait = query = synchronize = elapsed_time = _unsupported

    def __repr__(self):
        return "torchlite.Event device_type=cpu, device_index=-1, event_flag=0, event_id=0"
