"""torchlite.masked: torch.masked's reductions and normalizations with a `mask` argument
(sum, prod, amax, amin, argmax, argmin, mean, median, logsumexp, norm, var, std, cumsum,
cumprod, softmax, log_softmax, softmin, normalize, logaddexp) on strided tensors.  The
MaskedTensor class and sparse inputs are not here yet."""
from ._ops import *  # noqa: F401,F403
from ._ops import __all__  # noqa: F401
