"""torchlite: a small, fast deep learning library with PyTorch's programming model.

    import torchlite as torch
    x = torch.randn(3, 4)

The layers (see the README): torchlite/_core (Cython + OpenMP array layer) -> Tensor and
its ops (torchlite/_tensor.py, torchlite/_ops/) -> nn, optim, utils.data.
"""
import math as _math

from .version import __version__
from ._dtype import (dtype, bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
                     float64, complex64, complex128, complex32, half, float, double, short, int,
                     long, cfloat, cdouble, chalf, get_default_dtype, get_default_complex_dtype,
                     set_default_dtype, promote_types, can_cast, finfo, iinfo)
from ._device import device, set_default_device, get_default_device
from ._memory_format import (memory_format, contiguous_format, channels_last, channels_last_3d,
                             preserve_format)
from ._layout import (layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr,  # noqa: F401
                      sparse_bsc, jagged)
from ._size import Size
from ._tensor import Tensor
from ._tensor_str import set_printoptions
from ._ops import creation as _creation, elementwise as _elementwise, views as _views
from ._ops import conversion as _conversion, indexing as _indexing
from ._ops.creation import (tensor, as_tensor, asarray, from_numpy, zeros, ones, empty, full,
                            zeros_like, ones_like, empty_like, full_like, arange, linspace,
                            logspace, eye)
from ._ops.elementwise import *  # noqa: F401,F403  (the elementwise ops, listed in its tables)
from ._ops.elementwise import (add, sub, subtract, rsub, div, divide, true_divide, pow,
                             float_power, where, clamp, clip, clamp_min, clamp_max, nan_to_num,
                             logit, round, positive, isclose, allclose, equal, lerp, addcmul,
                             addcdiv, neg, negative)
from ._ops.views import (view_as, reshape, permute, transpose, swapaxes, swapdims, t, adjoint,
                         movedim, moveaxis, broadcast_to, broadcast_shapes, broadcast_tensors,
                         squeeze, unsqueeze, flatten, ravel, unflatten, narrow, select,
                         diagonal, as_strided, flip, fliplr, flipud, clone, atleast_1d,
                         atleast_2d, atleast_3d)
# each op family's module lists its public functions in __all__
from ._ops.reduction import *  # noqa: F401,F403
from ._ops.reduction import _segment_reduce  # noqa: F401  (op_db's and ATen's spelling)
from ._ops.linalg import *  # noqa: F401,F403
from ._ops.joining import *  # noqa: F401,F403
from ._ops.sorting import *  # noqa: F401,F403
from ._ops.complex import *  # noqa: F401,F403
from ._ops.fft import stft, istft  # noqa: F401
from ._ops.legacy_types import *  # noqa: F401,F403  (FloatTensor, LongTensor, ...)
from ._ops.storage import *  # noqa: F401,F403  (UntypedStorage, TypedStorage, FloatStorage, ...)
from ._ops.removed import *  # noqa: F401,F403  (eig, lstsq, solve, ...: removed, they say so)
from ._ops.indexing import *  # noqa: F401,F403
from ._ops.random import *  # noqa: F401,F403
from ._ops.linalg_decomp import *  # noqa: F401,F403
from ._ops.linalg_decomp import lu_legacy as lu, lu_solve_legacy as lu_solve  # noqa: F401
from ._ops.views import (view_copy, permute_copy, t_copy, transpose_copy,  # noqa: F401
                         squeeze_copy, unsqueeze_copy, unbind_copy, unfold_copy, expand_copy,
                         diagonal_copy, as_strided_copy, detach_copy, alias_copy, select_copy,
                         slice_copy, split_copy, split_with_sizes_copy, as_strided_scatter,
                         as_strided_)
from ._ops.complex import view_as_real_copy, view_as_complex_copy  # noqa: F401
from ._ops.creation import (scalar_tensor, empty_strided, fill, zero_, hann_window,  # noqa: F401
                            hamming_window, blackman_window, bartlett_window, empty_permuted,
                            frombuffer, from_file, range)
from ._ops.method_forms import *  # noqa: F401,F403  (torch.detach(x), torch.fill_(x, v), ...)
from ._ops.lowrank import svd_lowrank, pca_lowrank  # noqa: F401
# the top-level ops on the special-function kernels (i0, polygamma, mvlgamma, igamma, ...)
from ._ops.special import *  # noqa: F401,F403
from . import linalg, random, return_types, autograd, _dlpack
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, is_anomaly_enabled, set_detect_anomaly)
from ._dlpack import *  # noqa: F401,F403  (from_dlpack, to_dlpack)
from ._config import (show_config, get_num_threads, set_num_threads, is_tensor, numel,
                      is_floating_point, is_nonzero, result_type, get_num_interop_threads,
                      set_num_interop_threads, init_num_threads, set_warn_always,
                      is_warn_always_enabled, set_flush_denormal, typename, is_storage,
                      has_openmp, has_lapack, has_mkl, has_spectral, compiled_with_cxx11_abi,
                      get_device_module, is_distributed, is_vulkan_available, cudnn_is_acceptable)
from ._control_flow import cond, while_loop  # noqa: F401
from ._symbolic import *  # noqa: F401,F403  (sym_max, sym_int, ...: torch.compile-friendly helpers)
from ._symbolic import _assert  # noqa: F401  (torch._assert)
from ._lobpcg import lobpcg  # noqa: F401
from .autograd.anomaly import is_anomaly_check_nan_enabled, set_anomaly_enabled  # noqa: F401
# math's constants, as torch.e / torch.pi / ... (and numpy's newaxis)
e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None

# What a program may never use is imported on first use (PEP 562), which keeps
# `import torchlite` fast: `torchlite.nn`, `from torchlite import nn`, `import torchlite.nn` and
# `torchlite.save` work as before.  tests/test_import_time.py keeps this list honest.
_LAZY_MODULES = ("nn", "optim", "utils", "cuda", "backends", "amp", "cpu", "testing",
                 "serialization", "fx", "jit", "onnx", "distributions", "func", "compiler", "futures",
                 "vision", "hub", "distributed", "multiprocessing", "fft", "functional", "profiler",
                 "special", "signal", "masked", "storage", "accelerator", "types", "library",
                 "quasirandom")
_LAZY_NAMES = {
    "save": "serialization", "load": "serialization",
    "save_safetensors": "serialization", "load_safetensors": "serialization",
    "set_float32_matmul_precision": "_switches", "get_float32_matmul_precision": "_switches",
    "use_deterministic_algorithms": "_switches",
    "are_deterministic_algorithms_enabled": "_switches",
    "is_deterministic_algorithms_warn_only_enabled": "_switches", "compile": "compiler",
    "set_deterministic_debug_mode": "_switches", "get_deterministic_debug_mode": "_switches",
    "autocast": "amp", "is_autocast_enabled": "amp.autocast_mode",
    "get_autocast_dtype": "amp.autocast_mode", "vmap": "func", "fork": "jit", "wait": "jit",
    **dict.fromkeys(("set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled",
                     "set_autocast_cache_enabled", "clear_autocast_cache", "is_autocast_cpu_enabled",
                     "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
                     "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "autocast_increment_nesting",
                     "autocast_decrement_nesting"), "amp.autocast_mode"),
    "GradScaler": "amp", "OutOfMemoryError": "cuda", "Future": "futures", "Stream": "_stream",
    "Event": "_stream", "ops": "library",
    "norm_except_dim": "nn.utils.weight_norm", "_weight_norm": "nn.utils.weight_norm",
}
# torch.conv2d, torch.dropout, torch.batch_norm, ...: nn.functional's ops with ATen's signatures
# (torchlite/nn/functional/aten.py; tests/test_aten_spellings.py checks this list against it)
_LAZY_NAMES.update(dict.fromkeys((
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d",
    "batch_norm", "bilinear", "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle",
    "constant_pad_nd", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity", "ctc_loss", "dropout", "dropout_",
    "embedding", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_",
    "group_norm", "hardshrink", "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm",
    "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d",
    "native_channel_shuffle", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "rms_norm", "rrelu", "rrelu_", "selu", "selu_", "threshold", "threshold_",
    "triplet_margin_loss", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "grid_sampler",
    "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "native_layer_norm",
    "native_group_norm", "native_batch_norm", "_native_batch_norm_legit", "native_dropout",
    "convolution", "embedding_renorm_", "_softmax_backward_data", "lstm", "gru", "rnn_tanh",
    "rnn_relu", "embedding_bag"),
    "nn.functional.aten"))
# the steps of nn.SyncBatchNorm as PyTorch's top-level functions
_LAZY_NAMES.update(dict.fromkeys((
    "batch_norm_stats", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
    "batch_norm_elemt", "batch_norm_backward_reduce", "batch_norm_backward_elemt",
    "batch_norm_update_stats"), "nn.functional.sync_batch_norm"))


def __getattr__(name):
    import importlib
    if name in _LAZY_MODULES or name == "_dynamo":
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY_NAMES.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'torchlite' has no attribute '{name}'")


__all__ = sorted({n for n in dir() if not n.startswith("_")} | set(_LAZY_MODULES)
                 | set(_LAZY_NAMES))


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES) | set(_LAZY_NAMES))
