"""ExponentialFamily (torch.distributions.ExponentialFamily): the base of distributions with
density h(x) exp(<theta, t(x)> - A(theta)).  A subclass gives its natural parameters theta
(_natural_params), the log-normaliser A (_log_normalizer) and E[log h(x)]
(_mean_carrier_measure); the base then has the entropy, A(theta) - <theta, grad A(theta)>
- E[log h], and kl.py the KL divergence between two members of one family, the Bregman
divergence of A, both through autograd's gradient of A."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from .distribution import Distribution

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        """The natural parameters theta, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """A(theta), over the batch shape."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[log h(x)] under the distribution."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        theta = [p.detach().requires_grad_() for p in self._natural_params]
        a = self._log_normalizer(*theta)
        grads = tl.autograd.grad(a.sum(), theta, create_graph=True)
        result = a - self._mean_carrier_measure
        for t, g in zip(theta, grads):
            result = result - (t * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
