"""The fused LSTM time step on the GPU: one tl_lstm_fwd / tl_lstm_bwd launch
(cuda_kernels/rnn.cu) per step, the CUDA versions of torchlite/_core/rnn.pyx's
lstm_step_forward / lstm_step_backward (same signature, same formulas), reached through
torchlite._dispatch by nn.LSTM's layer.  Without them each step ran the CPU kernel on host
copies of its arrays: two transfers per step and direction."""
from . import _kernels as K, _launch
from ._array import CudaArray
from ._registry import native

_THREADS = 256


def _check(op, gates, others):
    """The CPU kernel's checks (rnn.pyx's _check), with its messages."""
    if gates.ndim != 2 or gates.shape[1] % 4 or not gates.is_contiguous():
        raise RuntimeError(f"{op}: gates must be a contiguous (B, 4H) array")
    if gates.dtype not in (K.FLOAT32, K.FLOAT64):
        raise RuntimeError(f"{op}: float32 or float64 only")
    b, h = gates.shape[0], gates.shape[1] // 4
    for x in others:
        if not isinstance(x, CudaArray) or x.device_index != gates.device_index \
                or x.dtype != gates.dtype or x.shape != (b, h) or not x.is_contiguous():
            raise RuntimeError(f"{op}: every state must be a contiguous (B, H) array of the "
                               f"gates' dtype")
    return b, h


def _run(kind, gates, arrays, nb, nh):
    n = nb * nh
    if n:
        dev = gates.device_index
        k = _launch.kernel("rnn.cu", K.lstm_kernel(kind, gates.dtype), dev)
        _launch.launch(k, _launch.grid_for(n, dev, _THREADS), _THREADS,
                       [_launch.ptr_of(x) for x in arrays] + [_launch.i64(nb), _launch.i64(nh)])


@native("rnn", "lstm_step_forward", kernel=True)
def lstm_step_forward(gates, c_prev, c_out, h_out):
    nb, nh = _check("lstm_step_forward", gates, [c_prev, c_out, h_out])
    _run("fwd", gates, [gates, c_prev, c_out, h_out], nb, nh)


@native("rnn", "lstm_step_backward", kernel=True)
def lstm_step_backward(gates, c_prev, c, dh, dc, d_gates):
    nb, nh = _check("lstm_step_backward", gates, [c_prev, c, dh, dc])
    if not isinstance(d_gates, CudaArray) or d_gates.dtype != gates.dtype \
            or d_gates.shape != gates.shape or not d_gates.is_contiguous():
        raise RuntimeError("lstm_step_backward: d_gates must be shaped like the gates")
    _run("bwd", gates, [gates, c_prev, c, dh, dc, d_gates], nb, nh)
