"""The fused GPU updates of SGD and Adam/AdamW: one kernel per parameter (torchlite/cuda/
_optim.py) instead of a chain of Tensor ops, used when a parameter, its gradient and its
state are contiguous CUDA tensors of one floating dtype.  Like PyTorch's choice between
its for-loop, foreach and fused implementations, this changes how the update runs, not what
it computes (the formulas are those of sgd.py and adam.py)."""
import sys


def _cuda_optim():
    # only once CUDA tensors exist: a CPU-only program never imports the CUDA backend here
    if "torchlite.cuda._array" not in sys.modules:
        return None
    from ..cuda import _ops, _optim
    return _optim if _ops.kernels_enabled else None      # off: the tests' host-memory driver


def _arr(t):
    return None if t is None else t._data


def sgd_step(param, grad, buf, **kw):
    """True when the step ran fused (param, and buf when given, updated in place)."""
    optim = _cuda_optim()
    if optim is None or not param.is_cuda:
        return False
    if not optim.sgd_step(_arr(param), _arr(grad), _arr(buf), **kw):
        return False
    param._bump_version()
    if buf is not None:
        buf._bump_version()
    return True


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, **kw):
    """True when the step ran fused (param and the moments updated in place)."""
    optim = _cuda_optim()
    if optim is None or not param.is_cuda:
        return False
    if not optim.adam_step(_arr(param), _arr(grad), _arr(exp_avg), _arr(exp_avg_sq),
                           _arr(max_exp_avg_sq), **kw):
        return False
    for t in (param, exp_avg, exp_avg_sq, max_exp_avg_sq):
        if t is not None:
            t._bump_version()
    return True
