"""nn.AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. (2016), "Efficient
softmax approximation for GPUs", for outputs over very many classes with a skewed frequency.

The classes are split at `cutoffs` into a head (the most frequent ones, below cutoffs[0]) and
clusters.  The head layer scores the head classes plus one entry per cluster; a class in cluster
i gets log p(cluster i) from the head plus its log-probability within the cluster, from a
two-layer projection whose hidden size shrinks by div_value per cluster.  forward scores only
the target class of each row (the tail projections run on the rows whose target is in that
cluster), which is what makes training cheap; log_prob and predict compute every class."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._ops.creation import zeros as _zeros
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over n_classes with cluster boundaries `cutoffs` (increasing integers in
    [1, n_classes - 1]).  forward(input, target) returns (output, loss): the log-probability of
    each row's target class and the mean negative log-likelihood.  Modules: `head` (Linear to
    the head classes plus one logit per cluster, bias if head_bias) and `tail` (per cluster a
    Sequential of two bias-free Linear layers: in_features -> in_features // div_value**(i+1)
    -> the cluster's size), as PyTorch's, so state dicts move between the two."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: device | str | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an "
                             "increasing order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        if target.dim() == 1:
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                                   f"size {list(input.shape)}")
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            unbatched = False
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                                   f"size {list(input.shape)}")
            input, target, unbatched = input.unsqueeze(0), target.unsqueeze(0), True
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        self._check_features(input)
        n = target.size(0)
        # head_index: the head entry each row reads (its class, or its cluster's logit)
        head_index = target.clone()
        output = _zeros(n, dtype=input.dtype, device=input.device)
        covered = 0
        for i in range(self.n_clusters + 1):
            low = 0 if i == 0 else self.cutoffs[i - 1]
            high = self.cutoffs[i]
            rows = ((target >= low) & (target < high)).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i == 0:
                continue
            head_index = head_index.index_fill(0, rows, self.shortlist_size + i - 1)
            logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            within = (target.index_select(0, rows) - low).unsqueeze(1)
            output = output.index_copy(0, rows, logprob.gather(1, within).squeeze(1))
        if covered != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in "
                               f"range [{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if unbatched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _check_features(self, input):
        if input.size(-1) != self.in_features:
            raise RuntimeError(f"Input should have {self.in_features} features (its last dim), "
                               f"got shape {list(input.shape)}")

    def _full_log_prob(self, input, head_output):
        """[N, n_classes] log-probabilities from the head's logits [N, head_size]."""
        from ..._ops.joining import cat
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = F.log_softmax(projection(input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """log p(class) for every class: [N, n_classes] (or [n_classes] for a 1-d input)."""
        if input.dim() not in (1, 2):
            raise RuntimeError(f"log_prob expects a 1D or 2D input, got size {list(input.shape)}")
        self._check_features(input)
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        out = self._full_log_prob(x, self.head(x))
        return out.squeeze(0) if unbatched else out

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (int64 [N], or a 0-d tensor for a 1-d input).
        Rows whose best head entry is a head class skip the clusters, as in PyTorch."""
        if input.dim() not in (1, 2):
            raise RuntimeError(f"predict expects a 1D or 2D input, got size {list(input.shape)}")
        self._check_features(input)
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        head_output = self.head(x)
        best = head_output.argmax(dim=1)
        in_cluster = (best >= self.shortlist_size).nonzero().reshape(-1)
        if in_cluster.numel():
            rows = x.index_select(0, in_cluster)
            full = self._full_log_prob(rows, head_output.index_select(0, in_cluster))
            best = best.index_copy(0, in_cluster, full.argmax(dim=1))
        best = best.to(D.int64)
        return best.squeeze(0) if unbatched else best
