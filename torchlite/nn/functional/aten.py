"""The torch.* spellings of nn.functional's ops: `torch.conv2d`, `torch.dropout`,
`torch.layer_norm`, `torch.batch_norm`, `torch.embedding`, ... with ATen's signatures, which
differ from nn.functional's in places PyTorch programs rely on: arguments required that
nn.functional defaults (`torch.dropout(input, p, train)`), another order
(`torch.batch_norm(input, weight, bias, running_mean, running_var, ...)`,
`torch.embedding(weight, indices)`), reductions as integers (0 'none', 1 'mean', 2 'sum'),
and a trailing `cudnn_enable(d)` flag that only selects a backend.  The losses' integer
reduction defaults to 0 ('none') at this level: that is what PyTorch's top-level functions do
when it is left out (measured on torch 2.13; nn.functional's default is 'mean').  Each is a thin adapter
over the nn.functional op that does the work; `torchlite.<name>` finds them here on first
use (torchlite/__init__.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .activation import rrelu_with_generator as _rrelu_with_generator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._ops.random import Generator
    from ..._tensor import Tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r, op):
    """ATen's integer reduction (nn.functional's strings pass through)."""
    if isinstance(r, str):
        return r
    try:
        return _REDUCTIONS[int(r)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {r!r}") from None


# ---- convolution and pooling ---------------------------------------------------------------------
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
           padding: str | int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """1-d convolution (torch.conv1d)."""
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution of a (time, batch, channels) input, fairseq's layout (torch.conv_tbc):
    weight (kernel width, in channels, out channels), bias (out channels), `pad` zeros at
    each end of time; the output, contiguous, is (time, batch, out channels)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    y = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1).contiguous()


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
           padding: str | int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """2-d convolution (torch.conv2d)."""
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
           padding: str | int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1, groups: int = 1) -> Tensor:
    """3-d convolution (torch.conv3d)."""
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
                     padding: int | tuple[int, ...] = 0, output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """1-d transposed convolution (torch.conv_transpose1d)."""
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
                     padding: int | tuple[int, ...] = 0, output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """2-d transposed convolution (torch.conv_transpose2d)."""
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | tuple[int, ...] = 1,
                     padding: int | tuple[int, ...] = 0, output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> Tensor:
    """3-d transposed convolution (torch.conv_transpose3d)."""
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def _stride(stride, kernel_size):
    """ATen's empty stride means the kernel size."""
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) else stride


def max_pool1d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = (),
               padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
               ceil_mode: bool = False) -> Tensor:
    """1-d max pooling (torch.max_pool1d)."""
    return F.max_pool1d(input, kernel_size, _stride(stride, kernel_size), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = (),
                            padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """1-d max pooling and the indices of the maxima (torch.max_pool1d_with_indices)."""
    return F.max_pool1d(input, kernel_size, _stride(stride, kernel_size), padding, dilation, ceil_mode,
                        return_indices=True)


def max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = (),
               padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
               ceil_mode: bool = False) -> Tensor:
    """2-d max pooling (torch.max_pool2d)."""
    return F.max_pool2d(input, kernel_size, _stride(stride, kernel_size), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = (),
               padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
               ceil_mode: bool = False) -> Tensor:
    """3-d max pooling (torch.max_pool3d)."""
    return F.max_pool3d(input, kernel_size, _stride(stride, kernel_size), padding, dilation, ceil_mode)


def avg_pool1d(input: Tensor, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = (),
               padding: int | tuple[int, ...] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-d average pooling (torch.avg_pool1d)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride, kernel_size), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size: int | tuple[int, ...]) -> Tensor:
    """1-d adaptive average pooling (torch.adaptive_avg_pool1d)."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: int | tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """1-d adaptive max pooling: (values, indices) (torch.adaptive_max_pool1d)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r) (torch.pixel_shuffle)."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W) (torch.pixel_unshuffle)."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of `groups` groups (torch.channel_shuffle)."""
    return F.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


# ---- dropout -------------------------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout with `train` required (torch.dropout)."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place dropout (torch.dropout_)."""
    return F.dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels of an (N, C, *) input (torch.feature_dropout)."""
    return _channel_dropout(F.dropout1d, F.dropout2d, F.dropout3d, input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place channel dropout (torch.feature_dropout_)."""
    return _channel_dropout(F.dropout1d, F.dropout2d, F.dropout3d, input, p, train, True)


def _channel_dropout(d1, d2, d3, input, p, train, inplace):
    fn = {3: d1, 4: d2, 5: d3}.get(input.dim())
    if fn is None:
        raise RuntimeError(f"feature_dropout: expected a 3-d, 4-d or 5-d (N, C, *) input, got "
                           f"shape {tuple(input.shape)}")
    return fn(input, p, train, inplace)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout with `train` required (torch.alpha_dropout)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place alpha dropout (torch.alpha_dropout_)."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels (torch.feature_alpha_dropout)."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place channel alpha dropout (torch.feature_alpha_dropout_)."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# ---- embeddings and normalisation ----------------------------------------------------------------
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of `weight` at `indices`: ATen's order, weight first; padding_idx -1 means none
    (torch.embedding)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """Layer normalisation over the trailing `normalized_shape` (torch.layer_norm)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation (torch.rms_norm)."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """Group normalisation (torch.group_norm)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """Batch normalisation with ATen's argument order: weight and bias before the running
    statistics, every argument required (torch.batch_norm)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


# ---- the generic convolution and embedding_renorm_ -----------------------------------------------
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: int | tuple[int, ...],
                padding: str | int | tuple[int, ...], dilation: int | tuple[int, ...], transposed: bool,
                output_padding: int | tuple[int, ...], groups: int) -> Tensor:
    """ATen's one convolution (torch.convolution): conv1d/2d/3d, or their transposes when
    `transposed`, chosen by the weight's dims."""
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-d, 4-d or 5-d weight, got {weight.ndim}-d")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Rescale in place the rows of weight at indices whose norm_type-norm exceeds max_norm
    to that norm (torch.embedding_renorm_, what embedding(max_norm=...) does first)."""
    from .sparse import _renorm_
    _renorm_(weight, indices.reshape(-1).contiguous(), max_norm, norm_type)
    return weight


# ---- the native_* forms: the normalised output with the statistics backward uses ----------------
def _stats(x, dims, eps):
    """Mean and 1 / sqrt(biased variance + eps) of x over dims (kept)."""
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, correction=0, keepdim=True)
    return mean, (var + eps).rsqrt()


def native_layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm(input), mean, rstd), the statistics over the trailing normalized_shape dims
    kept as size-1 dims; they are outside the graph, as PyTorch's are (torch.native_layer_norm)."""
    out = F.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(tuple(normalized_shape)), input.ndim))
    mean, rstd = _stats(input.detach(), dims, eps)
    return out, mean, rstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int, group: int,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm(input), mean, rstd) with the (N, group) statistics; all three in the graph, as
    PyTorch's (torch.native_group_norm)."""
    out = F.group_norm(input, group, weight, bias, eps)
    per_group = (C // group) * HxW if group else 0        # (a -1 in reshape fails when N is 0)
    mean, rstd = _stats(input.reshape(N, group, per_group), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm(input), save_mean, save_invstd): in training the batch's per-channel mean and
    1 / sqrt(biased variance + eps) (outside the graph; the running statistics are updated as
    batch_norm updates them), in evaluation empty tensors (torch.native_batch_norm)."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, input.new_empty((0,)), input.new_empty((0,))
    dims = (0,) + tuple(range(2, input.ndim))
    mean, invstd = _stats(input.detach(), dims, eps)
    return out, mean.reshape(-1), invstd.reshape(-1)


def _native_batch_norm_legit(input, weight, bias, *args):
    """native_batch_norm's (input, weight, bias, running_mean, running_var, training, momentum,
    eps) form and its no-statistics (input, weight, bias, training, momentum, eps) form."""
    if len(args) == 3:
        return native_batch_norm(input, weight, bias, None, None, *args)
    return native_batch_norm(input, weight, bias, *args)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """(dropout(input), mask): the kept elements scaled by 1 / (1 - p) and the bool mask of
    them; without train, input itself and an all-True mask (torch.native_dropout)."""
    if not train:
        return input.clone(), input.new_ones(input.shape).bool()
    if p >= 1:
        return input * 0, input.new_zeros(input.shape).bool()
    mask = input.new_empty(input.shape).bernoulli_(1 - p).bool()
    return input * mask.to(input.dtype) * (1.0 / (1 - p)), mask


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                  running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """Instance normalisation with ATen's argument order (torch.instance_norm)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


# ---- activations ---------------------------------------------------------------------------------
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), weight per channel (torch.prelu)."""
    return F.prelu(input, weight)


def selu(input: Tensor) -> Tensor:
    """Scaled ELU (torch.selu)."""
    return F.selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place scaled ELU (torch.selu_)."""
    return F.selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Continuously differentiable ELU (torch.celu)."""
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place CELU (torch.celu_)."""
    return F.celu(input, alpha, inplace=True)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else value (torch.threshold)."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold (torch.threshold_)."""
    return F.threshold(input, threshold, value, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Generator | None = None) -> Tensor:
    """Randomized leaky ReLU; note ATen's default training=False (torch.rrelu); the slopes
    come from `generator` when given."""
    return _rrelu_with_generator(input, lower, upper, training, False, generator)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Generator | None = None) -> Tensor:
    """In-place randomized leaky ReLU (torch.rrelu_); the slopes come from `generator` when
    given."""
    return _rrelu_with_generator(input, lower, upper, training, True, generator)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (torch.hardshrink)."""
    return F.hardshrink(input, lambd)


# ---- distances and losses ------------------------------------------------------------------------
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x1^T A x2 + b (torch.bilinear)."""
    return F.bilinear(input1, input2, weight, bias)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between x1 and x2 along dim (torch.cosine_similarity)."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim (torch.pairwise_distance)."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of an (N, M) input, upper triangle (torch.pdist)."""
    return F.pdist(input, p)


def kl_div(input: Tensor, target: Tensor, reduction: int | str = 0, log_target: bool = False) -> Tensor:
    """KL divergence with ATen's integer reduction (torch.kl_div)."""
    return F.kl_div(input, target, reduction=_reduction(reduction, "kl_div"), log_target=log_target)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int | str = 0) -> Tensor:
    """Sigmoid and binary cross-entropy in one, integer reduction
    (torch.binary_cross_entropy_with_logits)."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction, "binary_cross_entropy_with_logits"),
                                              pos_weight=pos_weight)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: int | str = 0,
             zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss, integer reduction (torch.ctc_loss)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss"), zero_infinity)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int | str = 0) -> Tensor:
    """max(0, -target (x1 - x2) + margin), integer reduction (torch.margin_ranking_loss)."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction, "margin_ranking_loss"))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int | str = 0) -> Tensor:
    """The hinge embedding loss, integer reduction (torch.hinge_embedding_loss)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int | str = 0) -> Tensor:
    """The cosine embedding loss, integer reduction (torch.cosine_embedding_loss)."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss"))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: int | str = 0) -> Tensor:
    """The triplet margin loss, integer reduction (torch.triplet_margin_loss)."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int | str) -> Tensor:
    """The Poisson negative log-likelihood, every argument required, integer reduction
    (torch.poisson_nll_loss)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """Pad the trailing dims by `pad` (last dim first) with `value` (torch.constant_pad_nd)."""
    return F.pad(input, tuple(pad), mode="constant", value=value)


# ---- recurrent cells --------------------------------------------------------------------------------
def _cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    return F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step: (h, c) from input (B, I) and hx = (h, c) (torch.lstm_cell)."""
    from .recurrent import lstm_step
    h, c = hx
    return lstm_step(_cell_gates(input, h, w_ih, w_hh, b_ih, b_hh), c)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step: h from input (B, I) and hx (B, H) (torch.gru_cell)."""
    from .recurrent import gru_step
    return gru_step(F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with tanh (torch.rnn_tanh_cell)."""
    from .recurrent import rnn_step
    return rnn_step(_cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh), False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with relu (torch.rnn_relu_cell)."""
    from .recurrent import rnn_step
    return rnn_step(_cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh), True)


# ---- whole recurrent layers (torch.lstm, gru, rnn_tanh, rnn_relu: what nn.LSTM & co. call) ---------
def _layer_weights(params, has_biases, num_layers, bidirectional, mode, op):
    """params (PyTorch's flat list: per layer and direction w_ih, w_hh, then b_ih, b_hh when
    has_biases, then w_hr for a projected LSTM) grouped per layer and direction; and whether
    the LSTM has projections."""
    params = list(params)
    dirs = 2 if bidirectional else 1
    groups = num_layers * dirs
    per = len(params) // groups if groups else 0
    base = 4 if has_biases else 2
    proj = mode == "LSTM" and per == base + 1
    if groups <= 0 or per * groups != len(params) or per not in (base, base + proj):
        raise RuntimeError(f"{op}: got {len(params)} parameters for {num_layers} layer(s) in "
                           f"{dirs} direction(s) (expected {base} per layer and direction"
                           f"{', or ' + str(base + 1) + ' with projections' if mode == 'LSTM' else ''})")
    return [params[k * per:(k + 1) * per] for k in range(groups)], proj


def _whole_layer(mode, op, args, kwargs):
    """Both of ATen's forms: (input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) and the packed (data, batch_sizes, hx, params, has_biases,
    num_layers, dropout, train, bidirectional), told apart by where hx is."""
    from .recurrent import run_layers
    from ..._tensor import Tensor
    args = list(args)
    lstm = mode == "LSTM"
    packed = isinstance(args[1], Tensor) if lstm else (len(args) > 2 and isinstance(args[2], Tensor))
    names = (["data", "batch_sizes"] if packed else ["input"]) + \
        ["hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional"] + \
        ([] if packed else ["batch_first"])
    for name in names[len(args):]:
        if name not in kwargs:
            raise TypeError(f"{op}() missing required argument '{name}'")
        args.append(kwargs.pop(name))
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")
    a = dict(zip(names, args))
    x = a["data"] if packed else a["input"]
    hx = a["hx"]
    h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
    weights, proj = _layer_weights(a["params"], bool(a["has_biases"]), int(a["num_layers"]),
                                   bool(a["bidirectional"]), mode, op)
    common = (weights, int(a["num_layers"]), float(a["dropout"]), bool(a["train"]),
              bool(a["bidirectional"]), bool(a["has_biases"]), proj)
    if packed:
        sizes = [int(b) for b in a["batch_sizes"].tolist()]
        out, h_n, c_n = run_layers(mode, x, h0, c0, *common, sizes=sizes)
    else:
        if x.dim() != 3:
            raise RuntimeError(f"{op}: input must have 3 dimensions, got {x.dim()}")
        first = bool(a["batch_first"])
        out, h_n, c_n = run_layers(mode, x.transpose(0, 1) if first else x, h0, c0, *common)
        out = out.transpose(0, 1) if first else out
    return (out, h_n, c_n) if lstm else (out, h_n)


def lstm(*args, **kwargs) -> tuple[Tensor, Tensor, Tensor]:
    """A whole (multi-layer, optionally bidirectional) LSTM (torch.lstm, what nn.LSTM runs):
    lstm(input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) or, packed, lstm(data, batch_sizes, (h0, c0), params, ...): (output, h_n,
    c_n).  params: per layer and direction w_ih, w_hh, (b_ih, b_hh), (w_hr)."""
    return _whole_layer("LSTM", "lstm", args, kwargs)


def gru(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """A whole GRU (torch.gru): gru(input, h0, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) or gru(data, batch_sizes, h0, params, ...): (output, h_n)."""
    return _whole_layer("GRU", "gru", args, kwargs)


def rnn_tanh(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """A whole Elman RNN with tanh (torch.rnn_tanh), gru's signatures: (output, h_n)."""
    return _whole_layer("RNN_TANH", "rnn_tanh", args, kwargs)


def rnn_relu(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """A whole Elman RNN with relu (torch.rnn_relu), gru's signatures: (output, h_n)."""
    return _whole_layer("RNN_RELU", "rnn_relu", args, kwargs)


# ---- grid sampling ------------------------------------------------------------------------------------
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners, op):
    if interpolation_mode not in _INTERPOLATION:
        raise ValueError(f"{op}: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got "
                         f"{interpolation_mode!r}")
    if padding_mode not in _PADDING:
        raise ValueError(f"{op}: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got "
                         f"{padding_mode!r}")
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode],
                         align_corners)


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """F.grid_sample with ATen's integer modes (torch.grid_sampler)."""
    return _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners, "grid_sampler")


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """grid_sampler on a 4-d input (torch.grid_sampler_2d)."""
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes {list(input.shape)}")
    return _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners, "grid_sampler_2d")


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """grid_sampler on a 5-d input (torch.grid_sampler_3d)."""
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes {list(input.shape)}")
    return _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners, "grid_sampler_3d")


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """F.affine_grid with align_corners required (torch.affine_grid_generator)."""
    return F.affine_grid(theta, list(size), align_corners)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """softmax's backward from its output y (torch._softmax_backward_data): y * (g - sum(g * y)),
    summed along dim, in input_dtype."""
    g = grad_output * output
    return (g - output * g.sum(dim, keepdim=True)).to(input_dtype)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """embedding_bag in ATen's form (torch.embedding_bag): weight first, mode an integer
    (0 sum, 1 mean, 2 max), offsets required; a negative padding_idx counts from the end.
    Returns (output, offset2bag, bag_size, max_indices): the bag of each index, the indices
    counted in each bag, and for mode 2 the weight row of each maximum (else bag_size).
    (PyTorch's CPU kernel returns an empty offset2bag and zero bag sizes on its fast path for
    mode 0; torchlite always fills them.)"""
    from .sparse import embedding_bag_with_indices
    if offsets is None:
        raise TypeError("embedding_bag(): argument 'offsets' (position 3) must be Tensor, not NoneType")
    if mode not in _BAG_MODES:
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if sparse:
        raise RuntimeError("embedding_bag: sparse gradients are not supported by torchlite; use sparse=False")
    return embedding_bag_with_indices(weight, indices, offsets, scale_grad_by_freq, _BAG_MODES[mode],
                                      per_sample_weights, include_last_offset, padding_idx)


# the adapters: the functions written here (two with PyTorch's leading underscore)
NAMES = tuple(sorted(n for n, v in globals().items()
                     if callable(v) and getattr(v, "__module__", None) == __name__
                     and (not n.startswith("_") or n in ("_native_batch_norm_legit", "_softmax_backward_data"))))
