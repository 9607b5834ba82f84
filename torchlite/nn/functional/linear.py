"""F.linear and F.bilinear, composed from the matrix products of torchlite/_ops/linalg.py
(so autograd needs no extra code, and the graph is PyTorch's: AddmmBackward0 for a 2-D input
with a bias, TBackward0 for the weight)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._ops.linalg import addmm, matmul
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["linear", "bilinear", "grouped_mm"]


def _check_tensor(x, op, name, pos, optional=False):
    if optional and x is None:
        return
    tensor_arg(x, op, name, pos=pos)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight.T + bias over the last dim of input: weight (out_features,
    in_features), bias (out_features,) or None."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(linear, locals())
    _check_tensor(input, "linear", "input", 1)
    _check_tensor(weight, "linear", "weight", 2)
    _check_tensor(bias, "linear", "bias", 3, optional=True)
    nd = input.ndim
    if nd == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{nd}D and {weight.ndim}D")
    wt = weight.t()
    if bias is None:
        return matmul(input, wt)
    rows = as_matrix_product(input, weight)
    if rows is not None:
        x2, lead = rows
        flat = addmm(bias, x2, wt)
        return flat if lead is None else flat.view(lead + (flat.shape[-1],))
    return matmul(input, wt) + bias


def as_matrix_product(input: Tensor, weight: Tensor) -> tuple[Tensor, tuple[int, ...] | None] | None:
    """(x2, lead) when linear(input, weight, bias) is one 2-D product x2 @ weight.t() (+ bias)
    viewed back to lead + (out_features,) (lead None: no view, a 2-D input); None when it takes
    another path.  The leading dims of a contiguous input (or of more than two) fold into one
    GEMM with the bias added in place, as PyTorch does.  (torchlite.compile's epilogue fusion
    asks the same question.)"""
    nd = input.ndim
    if nd == 2:                     # (addmm raises PyTorch's error for a weight of other dims)
        return input, None
    if nd > 2 and weight.ndim == 2 and (nd > 3 or input.is_contiguous()):
        lead = tuple(input.shape[:-1])
        return input.reshape(math.prod(lead), input.shape[-1]), lead     # (-1 fails on no elements)
    return None


def _bilinear_checks(input1, input2, weight, bias):
    """PyTorch's argument checks of bilinear, with its messages."""
    for x, name, pos in ((input1, "input1", 1), (input2, "input2", 2), (weight, "weight", 3)):
        _check_tensor(x, "bilinear", name, pos)
    _check_tensor(bias, "bilinear", "bias", 4, optional=True)
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {weight.ndim} "
                           f"dimensions")
    if input1.ndim == 0:
        raise RuntimeError("bilinear(): input1 and input2 must be at least 1-dimensional")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        got = bias.shape[0] if bias.ndim == 1 else list(bias.shape)
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but "
                           f"expected {weight.shape[0]}")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(bilinear, locals())
    _bilinear_checks(input1, input2, weight, bias)
    out_f, in1, in2 = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # one GEMM: (N, in1) @ (in1, out*in2), then contract in2 against input2
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = x1.mm(w).view(x1.shape[0], out_f, in2)
    y = matmul(t, x2.unsqueeze(2)).squeeze(2)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out_f,))


def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype: dtype | None = None) -> Tensor:
    """The grouped matrix products of a mixture-of-experts layer (F.grouped_mm), by int32
    group end offsets `offs` along the jagged dimension:

    - 2-d (M, K) x 3-d (G, K, N): rows offs[g-1]..offs[g] of mat_a times mat_b[g] -> (M, N);
    - 3-d (G, M, K) x 2-d (K, N): mat_a[g] times columns offs[g-1]..offs[g] of mat_b -> (M, N);
    - 2-d (M, K) x 2-d (K, N): the K range of each group, one product per group -> (G, M, N);
    - 3-d x 3-d: a batched product, offs None.

    Rows (columns) past offs[-1] are 0 (PyTorch leaves them unwritten).  Differentiable
    (PyTorch's CPU version is not); bias is refused, as PyTorch's ("Bias not supported
    yet"); out_dtype casts the result."""
    from ..._ops.joining import cat, stack
    from ..._ops.creation import zeros
    op = "grouped_mm"
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        tensor_arg(t, op, name)
        if t.dim() not in (2, 3):
            raise RuntimeError(f"{op}: {name} must be 2-d or 3-d, got shape {list(t.shape)}")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if (offs is None) != (mat_a.dim() == 3 and mat_b.dim() == 3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both "
                           "matrices are 3d")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError(f"{op}: contraction dims differ: mat_a {list(mat_a.shape)}, mat_b "
                           f"{list(mat_b.shape)}")
    if offs is None:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError(f"{op}: mat_a and mat_b have {mat_a.shape[0]} and {mat_b.shape[0]} "
                               f"groups")
        out = matmul(mat_a, mat_b)
        return out if out_dtype is None else out.to(out_dtype)
    tensor_arg(offs, op, "offs")
    if offs.dtype is not D.int32 or offs.dim() != 1:
        raise RuntimeError("Offsets have to be int32")
    ends = [int(e) for e in offs.tolist()]
    jagged = (mat_a.shape[0] if mat_a.dim() == 2 and mat_b.dim() == 3 else
              mat_b.shape[1] if mat_a.dim() == 3 else mat_a.shape[1])
    groups = mat_b.shape[0] if mat_b.dim() == 3 else mat_a.shape[0] if mat_a.dim() == 3 else len(ends)
    if len(ends) != groups:
        raise RuntimeError(f"{op}: {len(ends)} offsets for {groups} groups")
    if any(b < a for a, b in zip([0] + ends, ends)) or (ends and ends[-1] > jagged):
        raise RuntimeError(f"{op}: offsets must increase and end at most at {jagged}, got {ends}")
    starts = [0] + ends[:-1]
    if mat_a.dim() == 2 and mat_b.dim() == 3:
        pieces = [matmul(mat_a[s:e], mat_b[g]) for g, (s, e) in enumerate(zip(starts, ends))]
        tail = jagged - (ends[-1] if ends else 0)
        pieces.append(zeros(tail, mat_b.shape[2], dtype=mat_a.dtype, device=mat_a.device))
        out = cat(pieces, 0)
    elif mat_a.dim() == 3:
        pieces = [matmul(mat_a[g], mat_b[:, s:e]) for g, (s, e) in enumerate(zip(starts, ends))]
        tail = jagged - (ends[-1] if ends else 0)
        pieces.append(zeros(mat_a.shape[1], tail, dtype=mat_a.dtype, device=mat_a.device))
        out = cat(pieces, 1)
    else:
        out = stack([matmul(mat_a[:, s:e], mat_b[s:e]) for s, e in zip(starts, ends)])
    return out if out_dtype is None else out.to(out_dtype)
