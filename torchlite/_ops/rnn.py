"""The fused LSTM time step on Tensors (torchlite/_core/rnn.pyx), for nn.LSTM's layer
(torchlite/nn/modules/rnn.py): no autograd of their own (the layer's Function records the
step), True when the kernel ran, False where it does not take these tensors (a dtype other
than float32/float64, or a non-contiguous state) and the caller runs the Tensor ops."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import elementwise as _ew
from .._dispatch import matmul as _MM
from .._dispatch import rnn as _R
from .._tensor import _wrap

if TYPE_CHECKING:
    from typing import Any

    from .._tensor import Tensor

__all__ = ["lstm_step_forward", "lstm_step_backward", "lstm_forward_steps",
           "lstm_backward_steps", "pack_right", "addmm_packed", "mm_packed"]


def _fusable(*tensors):
    dt = tensors[0].dtype
    return dt in (D.float32, D.float64) and all(
        t.dtype is dt and t.is_contiguous() for t in tensors)


def lstm_step_forward(gates: Tensor, c_prev: Tensor, c_out: Tensor, h_out: Tensor) -> bool:
    """gates (B, 4H) pre-activations -> activated in place; c_out, h_out (B, H) written."""
    if not _fusable(gates, c_prev, c_out, h_out):
        return False
    _R.lstm_step_forward(gates._data, c_prev._data, c_out._data, h_out._data)
    return True


def _on_cpu(*tensors):
    return all(t.device.type == "cpu" for t in tensors)


def lstm_forward_steps(acts: Tensor, h0: Tensor, c0: Tensor, hs: Tensor, cs: Tensor, w_hh_t: Tensor,
                       reverse: bool) -> bool:
    """Every step of a layer's direction in one kernel call (torchlite/_core/rnn.pyx): acts
    (T, B, 4H) holding the input products on entry, activated on return; hs, cs (T, B, H)
    written.  False where it does not apply (another dtype or device, a non-contiguous
    buffer): the caller steps in Python."""
    if not (_fusable(acts, hs, cs) and _on_cpu(acts, h0, c0, w_hh_t)
            and h0.dtype is acts.dtype and c0.dtype is acts.dtype and w_hh_t.dtype is acts.dtype):
        return False
    _R.lstm_forward_steps(acts._data, h0.contiguous()._data, c0.contiguous()._data, hs._data,
                          cs._data, w_hh_t._data, reverse)
    return True


def lstm_backward_steps(acts: Tensor, c0: Tensor, cs: Tensor, d_out: Tensor, dh: Tensor, dc: Tensor,
                        d_gates: Tensor, w_hh: Tensor, reverse: bool) -> bool:
    """The forward's steps backwards in one kernel call: d_gates written, dh and dc
    (contiguous) turned into the gradients of h0 and c0.  False where it does not apply."""
    if not (_fusable(acts, cs, dh, dc, d_gates) and _on_cpu(acts, c0, d_out, w_hh)
            and d_out.dtype is acts.dtype and c0.dtype is acts.dtype and w_hh.dtype is acts.dtype):
        return False
    _R.lstm_backward_steps(acts._data, c0.contiguous()._data, cs._data,
                           d_out.contiguous()._data, dh._data, dc._data, d_gates._data,
                           w_hh._data, reverse)
    return True


def pack_right(w: Tensor) -> Any:
    """w (k x n), the right operand of every time step's product, packed once into the GEMM's
    panels (torchlite/_core/matmul.pyx, PackedB): each step then skips repacking it (a
    quarter of a (32 x 256) @ (256 x 1024) step's time).  None where there is no packed form
    (not a CPU float32/float64 matrix): the steps use addmm/mm as before."""
    if w.device.type != "cpu" or w.dim() != 2 or w.dtype not in (D.float32, D.float64):
        return None
    return _MM.pack_b(w._data)


def _packable(a, w, packed, *others):
    return packed is not None and a.device.type == "cpu" and a.dtype is w.dtype and all(
        t.dtype is w.dtype and t.device.type == "cpu" for t in others)


def addmm_packed(addend: Tensor, a: Tensor, w: Tensor, packed: Any, out: Tensor) -> bool:
    """out = addend + a @ w, w read from packed (pack_right(w)); no autograd.  False where it
    does not apply (the caller runs addmm)."""
    if not _packable(a, w, packed, addend, out) or out.dim() != 2:
        return False
    if addend is not out:
        _ew.copy_(out._data, addend._data)
    _MM.bmm(a._data, w._data, out._data, 1, 1, "addmm", packed)
    return True


def mm_packed(a: Tensor, w: Tensor, packed: Any) -> Tensor | None:
    """a @ w with w read from packed, or None where it does not apply (the caller runs mm)."""
    if not _packable(a, w, packed) or a.dim() != 2:
        return None
    return _wrap(_MM.bmm(a._data, w._data, None, 1, 0, "mm", packed))


def lstm_step_backward(gates: Tensor, c_prev: Tensor, c: Tensor, dh: Tensor, dc: Tensor,
                       d_gates: Tensor) -> bool:
    """d_gates (B, 4H) written from the activated gates; dc (B, H) updated in place."""
    if not _fusable(gates, c_prev, c, dh, dc, d_gates):
        return False
    _R.lstm_step_backward(gates._data, c_prev._data, c._data, dh._data, dc._data,
                          d_gates._data)
    return True
