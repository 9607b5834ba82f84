"""nn.utils: gradient clipping, parameter/vector conversion, rnn helpers, parametrizations,
pruning, conv/linear-BatchNorm fusion, the hook forms of weight and spectral normalization,
and stateless.functional_call (PyTorch's torch.nn.utils)."""
from . import parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm_, clip_grad_norm, clip_grad_value_,  # noqa: F401
                        get_total_norm, clip_grads_with_norm_)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .init import skip_init  # noqa: F401
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: F401
                     fuse_linear_bn_weights)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_", "parameters_to_vector", "vector_to_parameters", "rnn",
           "parametrizations", "parametrize", "stateless", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "spectral_norm", "remove_spectral_norm", "weight_norm", "remove_weight_norm", "skip_init"]
