"""The Connectionist Temporal Classification loss (torch.nn.functional.ctc_loss; Graves et al.,
ICML 2006), with PyTorch's arguments, checks, reductions and gradient.

Each target l (length L) is extended with blanks, l' = (blank, l_1, blank, ..., l_L, blank) of
length S = 2L + 1, and the loss is -log p(l | x), the log-sum over the alignments of l' to the
T_n input frames.  The forward variable alpha_t(s) (the log-probability of the prefixes of l'
ending in s at frame t) follows

    alpha_t(s) = log(e^alpha_{t-1}(s) + e^alpha_{t-1}(s-1) [+ e^alpha_{t-1}(s-2)]) + lp_t(l'_s)

(the skip from s-2 only onto a label that differs from the one two back), in log space with
PyTorch's max shift.  The recursion runs over time only: each step is a few tensor ops over
every (batch, position) pair at once, sequences of other lengths masked.  The backward
variable beta runs the same way from each sequence's last frame, and the gradient with respect
to log_probs is PyTorch's:

    grad_t(c) = (e^lp_t(c) - sum_{s: l'_s = c} e^(alpha_t(s) + beta_t(s) + nll - lp_t(c))) * g

which assumes, as PyTorch does, that log_probs come from a log_softmax (the e^lp term is the
normaliser's share, which log_softmax's own backward removes again); frames past a sequence's
input length get 0, and with zero_infinity so does a sequence whose loss is infinite.  Like
PyTorch's, this gradient is not differentiable again with respect to log_probs."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from ... import _dtype as D
from ...autograd.grad_mode import no_grad
from ...autograd.graph import Node, record, needs_grad
from ..._ops.creation import arange, full, tensor as _tensor, zeros
from ..._ops.joining import cat, stack
from ..._ops.elementwise import where, maximum
from ..._ops._kit import tensor_arg

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ctc_loss"]

_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}
_WHERE = " (while checking arguments for ctc_loss_allocate_outputs)"


# ---- arguments ---------------------------------------------------------------------------------
def _lengths(v, name):
    """A lengths argument (an integral tensor, or a sequence of ints) as a list of ints."""
    if isinstance(v, Tensor):
        if v.dtype.is_floating_point or v.dtype is D.bool or v.dtype.is_complex:
            raise RuntimeError(f"{name} must be integral")
        return [int(a) for a in v.reshape(-1).tolist()]
    if isinstance(v, (list, tuple)) and all(isinstance(a, numbers.Integral)
                                            and not isinstance(a, builtins.bool) for a in v):
        return [int(a) for a in v]
    raise TypeError(f"ctc_loss(): argument '{name}' must be Tensor or tuple of ints, not "
                    f"{type(v).__name__}")


def _check(log_probs, targets, in_lens, tgt_lens, blank):
    """PyTorch's ctc_loss_allocate_outputs checks; returns (batch offsets of the targets or
    None for a padded (N, S) targets tensor, the longest target)."""
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional "
                           f"tensor for argument #1 'log_probs'{_WHERE}")
    if targets.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional "
                           f"tensor for argument #2 'targets'{_WHERE}")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tgt_lens) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tgt_lens:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value "
                               f"{v}{_WHERE}")
    longest = max(tgt_lens, default=0)
    offsets = None
    if targets.dim() == 1:
        offsets, pos = [], 0
        for v in tgt_lens:
            offsets.append(pos)
            pos += v
        if targets.shape[0] != pos:
            raise RuntimeError(f"Expected tensor to have size {pos} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{_WHERE}")
    else:
        if targets.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{_WHERE}")
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 'targets'{_WHERE}")
    for v in in_lens:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{v}{_WHERE}")
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {v}{_WHERE}")
    return offsets, longest


# ---- the extended labels ---------------------------------------------------------------------------
class _Lattice:
    """Per batch element: the extended labels l' (N, S) (blank where past the element's own
    2L+1 positions), which positions exist, which may be entered by a skip from two back, and
    the input and target lengths as (N, 1) tensors."""

    def __init__(self, targets, offsets, in_lens, tgt_lens, longest, blank, device):
        n = len(tgt_lens)
        tl_ = _tensor(tgt_lens, dtype=D.int64, device=device).view(n, 1)
        j = arange(longest, device=device).view(1, longest)
        targets = targets.to(D.int64)
        if offsets is None:
            labels = targets[:, :longest]
        elif longest == 0 or targets.shape[0] == 0:
            labels = zeros((n, longest), dtype=D.int64, device=device)
        else:
            start = _tensor(offsets, dtype=D.int64, device=device).view(n, 1)
            pos = (start + j).clamp(0, targets.shape[0] - 1)
            labels = targets[pos]
        labels = where(j < tl_, labels, blank)
        blanks = full((n, longest), blank, dtype=D.int64, device=device)
        self.ext = cat([stack([blanks, labels], 2).reshape(n, 2 * longest),
                        full((n, 1), blank, dtype=D.int64, device=device)], 1)
        s = arange(2 * longest + 1, device=device).view(1, -1)
        self.size = 2 * longest + 1
        self.valid = s < 2 * tl_ + 1
        two_back = cat([full((n, min(2, self.size)), -1, dtype=D.int64, device=device),
                        self.ext[:, :self.size - 2]], 1)
        self.skip = (s >= 2) & (self.ext != two_back) & self.valid
        self.in_lens = _tensor(in_lens, dtype=D.int64, device=device).view(n, 1)
        self.tgt_lens = tl_
        self.first = (s == 0) | ((s == 1) & (tl_ > 0))          # where alpha starts
        self.last = (s == 2 * tl_) | ((s == 2 * tl_ - 1) & (tl_ > 0))   # where beta starts


def _shift(x, k, fill):
    """x (N, S) moved k positions right (k > 0) or left (k < 0) along S, filled with `fill`."""
    n, size = x.shape
    m = min(abs(k), size)
    pad = full((n, m), fill, dtype=x.dtype, device=x.device)
    if k > 0:
        return cat([pad, x[:, :size - m]], 1)
    return cat([x[:, m:], pad], 1)


def _log_add3(a, b, c, neg_inf):
    """log(e^a + e^b + e^c) with PyTorch's shift by the maximum (0 when all are -inf)."""
    m = maximum(maximum(a, b), c)
    m = where(m == neg_inf, 0.0, m)
    return ((a - m).exp() + (b - m).exp() + (c - m).exp()).log() + m


def _alphas(lp_ext, lat):
    """log alpha (T, N, S) for every frame (frames past an element's input length hold
    values no result reads)."""
    neg_inf = float("-inf")
    alpha = where(lat.first, lp_ext[0], neg_inf)
    out = [alpha]
    for t in range(1, lp_ext.shape[0]):
        a2 = _shift(alpha, 1, neg_inf)
        a3 = where(lat.skip, _shift(alpha, 2, neg_inf), neg_inf)
        alpha = where(lat.valid, _log_add3(alpha, a2, a3, neg_inf) + lp_ext[t], neg_inf)
        out.append(alpha)
    return stack(out, 0)


def _betas(lp_ext, lat):
    """log beta (T, N, S): -inf at and past each element's input length."""
    neg_inf = float("-inf")
    t_max, n, size = lp_ext.shape
    skip_ahead = _shift(lat.skip, -2, False)        # position s may skip to s + 2
    beta = full((n, size), neg_inf, dtype=lp_ext.dtype, device=lp_ext.device)
    out = [None] * t_max
    for t in range(t_max - 1, -1, -1):
        b2 = _shift(beta, -1, neg_inf)
        b3 = where(skip_ahead, _shift(beta, -2, neg_inf), neg_inf)
        step = where(lat.valid, _log_add3(beta, b2, b3, neg_inf) + lp_ext[t], neg_inf)
        start = where(lat.last, lp_ext[t], neg_inf)
        last = lat.in_lens - 1
        beta = where(last == t, start, where(last > t, step, neg_inf))
        out[t] = beta
    return stack(out, 0)


# ---- the op ------------------------------------------------------------------------------------------
class CtcLossBackward0(Node):
    """PyTorch's gradient of the per-sequence losses with respect to log_probs (module
    docstring), from the saved alphas; none for the targets and lengths."""

    lattice = None
    alphas = None
    zero_infinity = False

    def backward(self, g):
        lp, nll = self.saved("log_probs"), self.saved("result")
        alphas, lat = self.alphas, self.lattice
        with no_grad():
            t_max, n, c = lp.shape
            index = lat.ext.unsqueeze(0).expand(t_max, n, lat.size)
            lp_ext = lp.gather(2, index)
            lcab = alphas + _betas(lp_ext, lat)
            occupancy = (lcab + nll.view(1, n, 1) - lp_ext).exp()
            collected = zeros((t_max, n, c), dtype=lp.dtype, device=lp.device)
            collected = collected.scatter_add(2, index, occupancy)
            base = lp.exp() - collected
            frames = arange(t_max, device=lp.device).view(t_max, 1, 1)
            keep = frames < lat.in_lens.view(1, n, 1)
            infinite = (nll == float("inf")).view(1, n, 1)
            if self.zero_infinity:
                keep = keep & ~infinite
            else:           # PyTorch's formula gives NaN on every frame of such a sequence
                base = where(infinite, float("nan"), base)
            base = where(keep, base, 0.0)
        return (base * g.view(1, n, 1),)


def _ctc_nll(log_probs, lat, zero_infinity):
    """The per-sequence losses -log p(target | log_probs) (N,), recorded for the gradient."""
    with no_grad():
        lp = log_probs.detach()
        t_max, n, _ = lp.shape
        lp_ext = lp.gather(2, lat.ext.unsqueeze(0).expand(t_max, n, lat.size))
        alphas = _alphas(lp_ext, lat)
        last_frame = (lat.in_lens - 1).clamp(0, t_max - 1)
        final = alphas.gather(0, last_frame.view(1, n, 1).expand(1, n, lat.size)).squeeze(0)
        l1 = final.gather(1, 2 * lat.tgt_lens)
        l2 = final.gather(1, (2 * lat.tgt_lens - 1).clamp(0, lat.size - 1))
        l2 = where(lat.tgt_lens > 0, l2, float("-inf"))
        m = maximum(l1, l2)
        m = where(m == float("-inf"), 0.0, m)
        nll = -(((l1 - m).exp() + (l2 - m).exp()).log() + m).view(n)
        # no frames: the empty target has probability 1, any other 0
        empty_input = lat.in_lens.view(n) == 0
        no_path = full((n,), float("inf"), dtype=lp.dtype, device=lp.device)
        no_path = where(lat.tgt_lens.view(n) == 0, 0.0, no_path)
        nll = where(empty_input, no_path, nll)
    if needs_grad(log_probs):
        node = CtcLossBackward0()
        node.lattice, node.alphas, node.zero_infinity = lat, alphas, zero_infinity
        node.save(log_probs=log_probs)
        node.save_output(result=nll)
        record(node, (log_probs,), nll)
    return nll


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """The CTC loss of log_probs (T, N, C) (or unbatched (T, C)), log-probabilities over C
    classes (blank included) per frame, for targets (N, S) padded or concatenated
    (sum(target_lengths),), with input_lengths and target_lengths (N,) (tensors or sequences
    of ints).  reduction 'mean' divides each loss by its target length (at least 1) and
    averages over the batch; zero_infinity replaces infinite losses (and their gradients)
    by 0."""
    for name, v in (("log_probs", log_probs), ("targets", targets)):
        tensor_arg(v, "ctc_loss", name)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES[log_probs.dtype.name]}'")
    in_lens = _lengths(input_lengths, "input_lengths")
    tgt_lens = _lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if not isinstance(blank, numbers.Integral) or isinstance(blank, builtins.bool):
        raise TypeError(f"ctc_loss(): argument 'blank' must be int, not {type(blank).__name__}")
    offsets, longest = _check(lp, targets, in_lens, tgt_lens, int(blank))
    with no_grad():
        lat = _Lattice(targets, offsets, in_lens, tgt_lens, longest, int(blank), lp.device)
    res = _ctc_nll(lp, lat, builtins.bool(zero_infinity))
    if zero_infinity:
        res = where(res == float("inf"), 0.0, res)
    if reduction == "mean":
        lengths = lat.tgt_lens.view(-1).clamp(min=1).to(res.dtype)
        return (res / lengths).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
def _ctc_jvp(node, inputs, t, meta):
    """Each sequence's loss against the tangent of its frames, through the backward's rows
    (PyTorch's gradient, which takes log_probs to come from a log_softmax: for such a
    tangent, sum_c e^lp t = 0, this is the exact derivative); the double backward of this node
    gives the same numbers at three times the work."""
    if t[0] is None or t[0].dtype.is_complex:
        return None
    shape, dtype, device = meta[0]
    rows = node.backward(full(shape, 1.0, dtype=dtype, device=device))[0]
    return [(rows * t[0]).sum((0, 2))]


JVP = {CtcLossBackward0: _ctc_jvp}
