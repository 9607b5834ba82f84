"""The fused LSTM time step on Tensors (torchlite/_core/rnn.pyx), for nn.LSTM's layer
(torchlite/nn/modules/rnn.py): no autograd of their own (the layer's Function records the
step), True when the kernel ran, False where it does not take these tensors (a dtype other
than float32/float64, or a non-contiguous state) and the caller runs the Tensor ops."""
from .. import _dtype as D
from .._dispatch import rnn as _R

__all__ = ["lstm_step_forward", "lstm_step_backward"]


def _fusable(*tensors):
    dt = tensors[0].dtype
    return dt in (D.float32, D.float64) and all(
        t.dtype is dt and t.is_contiguous() for t in tensors)


def lstm_step_forward(gates, c_prev, c_out, h_out):
    """gates (B, 4H) pre-activations -> activated in place; c_out, h_out (B, H) written."""
    if not _fusable(gates, c_prev, c_out, h_out):
        return False
    _R.lstm_step_forward(gates._data, c_prev._data, c_out._data, h_out._data)
    return True


def lstm_step_backward(gates, c_prev, c, dh, dc, d_gates):
    """d_gates (B, 4H) written from the activated gates; dc (B, H) updated in place."""
    if not _fusable(gates, c_prev, c, dh, dc, d_gates):
        return False
    _R.lstm_step_backward(gates._data, c_prev._data, c._data, dh._data, dc._data,
                          d_gates._data)
    return True
