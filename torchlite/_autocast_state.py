"""Autocast's thread-local state and the entry of every op on its lists.

Each op on autocast's lists (torchlite/amp/_lists.py) begins with

    if _autocast.regions and _autocast.here.active:
        return _autocast_run(<the op>, locals())

`regions` counts the threads with autocast switched on (a plain attribute: with autocast off
everywhere an op pays one attribute read, a few nanoseconds); `here` is this thread's state,
whose `active` is true while autocast is on here and no listed op is running (a thread-local
read costs about 25 ns, so it comes second).  _autocast_run hands the call, with the
op's parameters, to the handler torchlite.amp registers when autocast is first switched on: it
casts the inputs by the op's policy and calls the op again with `active` off (so the ops it
runs inside keep the dtypes it chose, as PyTorch's autocast dispatch key is excluded below an
autocast op).  The check lives in the op itself, so every way of reaching the op (torchlite.mm,
`from torchlite import mm`, Tensor.mm, the @ operator) is autocast.

This module sits with the plain values (it imports only _dtype): the ops, Tensor and autograd
read it, and amp, above them, writes it."""
import threading

from . import _dtype as D

__all__ = ["entry", "state", "run", "set_handler", "refresh"]


class _State(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": D.bfloat16, "cuda": D.float16}
        self.cache_enabled = True
        self.active = False         # some device type is enabled and no listed op is running
        self.nesting = 0            # open autocast regions (the cache is cleared at 0)
        self.cache = {}             # (id(leaf), dtype) -> (leaf, its cast copy)
        self.counted = False        # this thread is counted in entry.regions


class _Entry:
    __slots__ = ("regions", "here")


state = _State()
entry = _Entry()
entry.regions = 0
entry.here = state
_count_lock = threading.Lock()
_handler = None


def refresh():
    """Recompute this thread's `active` from its enabled flags (after a region opens or
    closes, or a listed op returns) and keep entry.regions counting the threads that have
    autocast on."""
    on = state.enabled["cpu"] or state.enabled["cuda"]
    state.active = on
    if on != state.counted:
        with _count_lock:
            entry.regions += 1 if on else -1
        state.counted = on


def set_handler(handler):
    """Install handler(op, params) -> result (torchlite.amp's, on first use)."""
    global _handler
    _handler = handler


def run(op, params):
    """A listed op called while autocast is active: params is the op's locals() at its entry
    (its parameters by name)."""
    return _handler(op, params)
