"""torchvision.ops' detection helpers: boxes (box_area, box_iou, generalized_box_iou,
box_convert, clip_boxes_to_image, remove_small_boxes), non-maximum suppression (nms,
batched_nms), roi_align, and sigmoid_focal_loss.  Box math is Tensor ops (differentiable);
nms is a selection (no gradient); roi_align is differentiable in its input."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import from_numpy, tensor as _tensor, stack as _stack, cat as _cat, int64 as _int64
from ..nn import functional as F

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["box_area", "box_iou", "generalized_box_iou", "box_convert", "clip_boxes_to_image",
           "remove_small_boxes", "nms", "batched_nms", "roi_align", "RoIAlign",
           "sigmoid_focal_loss"]


def box_area(boxes: Tensor) -> Tensor:
    """Areas of N x 4 boxes in (x1, y1, x2, y2)."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _inter_union(a, b):
    lt = _max2(a[:, None, :2], b[None, :, :2])
    rb = _min2(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = box_area(a)[:, None] + box_area(b)[None, :] - inter
    return inter, union


def _max2(a, b):
    from .. import maximum
    return maximum(a, b)


def _min2(a, b):
    from .. import minimum
    return minimum(a, b)


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """The N x M intersection-over-union of two sets of (x1, y1, x2, y2) boxes."""
    inter, union = _inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """IoU minus the part of the enclosing box the union does not cover (N x M)."""
    inter, union = _inter_union(boxes1, boxes2)
    iou = inter / union
    lt = _min2(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = _max2(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert N x 4 boxes between 'xyxy', 'xywh' (corner, size) and 'cxcywh' (center, size)."""
    fmts = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in fmts or out_fmt not in fmts:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return _stack([a, b, c, d], dim=-1)


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Boxes clipped to an image of size (height, width)."""
    h, w = size
    x = boxes[..., 0::2].clamp(min=0, max=w)
    y = boxes[..., 1::2].clamp(min=0, max=h)
    return _stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], dim=-1)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose both sides are at least min_size."""
    b = boxes.detach().cpu().numpy()
    keep = np.nonzero(((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size))[0]
    return from_numpy(keep.astype(np.int64)).to(boxes.device)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: the indices of the boxes kept (int64, by decreasing
    score), dropping each box whose IoU with a kept higher-scoring box exceeds iou_threshold."""
    if boxes.ndim != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have shape (N, 4), got {tuple(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError(f"scores should have shape ({boxes.shape[0]},), got {tuple(scores.shape)}")
    b = boxes.detach().double().cpu().numpy()
    s = scores.detach().double().cpu().numpy()
    order = np.argsort(-s, kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    suppressed = np.zeros(len(b), bool)
    keep = []
    for i in order:
        if suppressed[i]:
            continue
        keep.append(i)
        xx1 = np.maximum(b[i, 0], b[:, 0])
        yy1 = np.maximum(b[i, 1], b[:, 1])
        xx2 = np.minimum(b[i, 2], b[:, 2])
        yy2 = np.minimum(b[i, 3], b[:, 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (area[i] + area - inter)
        suppressed |= iou > iou_threshold
    return _tensor(np.asarray(keep, dtype=np.int64), dtype=_int64).to(boxes.device)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """nms within each category idxs[i] (boxes of different categories never suppress each
    other); the kept indices by decreasing score."""
    if boxes.numel() == 0:
        return _tensor(np.zeros(0, np.int64)).to(boxes.device)
    b = boxes.detach().double()
    offset = (b.max() + 1) * idxs.double()[:, None]
    return nms(b + offset, scores, iou_threshold)


def _roi_weights(start, size, bins, grid, length):
    """The out x length matrix that averages the bilinear samples of each bin of one roi along
    one axis (torchvision's sampling: `grid` points per bin, zero outside [-1, length])."""
    W = np.zeros((bins, length))
    if grid <= 0:
        return W
    bin_size = size / bins
    for p in range(bins):
        for i in range(grid):
            v = start + p * bin_size + (i + 0.5) * bin_size / grid
            if v < -1.0 or v > length:
                continue
            v = max(v, 0.0)
            lo = int(math.floor(v))
            if lo >= length - 1:
                lo = hi = length - 1
                v = float(lo)
            else:
                hi = lo + 1
            frac = v - lo
            W[p, lo] += (1 - frac) / grid
            W[p, hi] += frac / grid
    return W


def roi_align(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False) -> Tensor:
    """Average of bilinear samples over each output bin of each region (Mask R-CNN's RoIAlign):
    input B x C x H x W, boxes a K x 5 tensor (batch index, x1, y1, x2, y2) or a list of L x 4
    tensors (one per image); returns K x C x out_h x out_w.  sampling_ratio <= 0: as many
    samples per bin as the bin is pixels wide (rounded up).  aligned: shift by half a pixel."""
    if isinstance(boxes, (list, tuple)):
        rows = [_cat([_tensor(np.full((len(b), 1), i, np.float64)).to(dtype=b.dtype, device=b.device), b],
                     dim=1) for i, b in enumerate(boxes)]
        boxes = _cat(rows, dim=0) if rows else boxes
    if boxes.ndim != 2 or boxes.shape[1] != 5:
        raise ValueError(f"roi_align: boxes must be K x 5 or a list of L x 4, got {tuple(boxes.shape)}")
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    _, _, H, W = input.shape
    off = 0.5 if aligned else 0.0
    wy, wx, batch = [], [], []
    for k, (bi, x1, y1, x2, y2) in enumerate(boxes.detach().double().cpu().numpy().tolist()):
        sx, sy = x1 * spatial_scale - off, y1 * spatial_scale - off
        rw, rh = x2 * spatial_scale - off - sx, y2 * spatial_scale - off - sy
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gy = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rh / out_h))
        gx = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rw / out_w))
        # a grid of 0 samples (an empty box with aligned=True) gives 0, as torchvision
        wy.append(_roi_weights(sy, rh, out_h, gy, H))
        wx.append(_roi_weights(sx, rw, out_w, gx, W))
        batch.append(int(bi))
    if not batch:
        return input.new_zeros((0, input.shape[1], out_h, out_w))
    Wy = _tensor(np.stack(wy)).to(dtype=input.dtype, device=input.device)[:, None]   # K, 1, out_h, H
    Wx = _tensor(np.stack(wx)).to(dtype=input.dtype, device=input.device)[:, None]   # K, 1, out_w, W
    feats = input[_tensor(batch).to(input.device)]                                   # K, C, H, W
    return Wy @ feats @ Wx.transpose(-1, -2)


class RoIAlign:
    """roi_align as a callable object with its settings (torchvision's module)."""

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float, sampling_ratio: int,
                 aligned: bool = False) -> None:
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def __call__(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio,
                         self.aligned)

    def __repr__(self) -> str:
        return (f"RoIAlign(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2,
                       reduction: str = "none") -> Tensor:
    """The focal loss of RetinaNet on logits: binary cross-entropy scaled by (1 - p_t)^gamma
    and, for alpha >= 0, by alpha_t; reduction 'none', 'mean' or 'sum'."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction}' \n Supported reduction "
                         f"modes: 'none', 'mean', 'sum'")
    p = inputs.sigmoid()
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = loss * (alpha * targets + (1 - alpha) * (1 - targets))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss

