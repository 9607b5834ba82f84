"""autocast's op lists (PyTorch's, per device type).  Each listed function checks autocast at
its entry (see torchlite/_autocast_state.py); tests/test_amp.py checks that every one does.

Names are looked up in torchlite ("name"), torchlite.nn.functional ("F.name"), torchlite.linalg
("linalg.name"), torchlite.fft ("fft.name") and Tensor ("Tensor.name", for operators that
exist only as methods).  The CUDA lists follow PyTorch's CUDA autocast lists; the CPU lists
follow PyTorch's CPU ones, which are much shorter (on the CPU, softmax, layer_norm, exp, sum,
... are on neither list)."""
from .._tensor import Tensor
from . import autocast_mode as _am

# composites in PyTorch whose inner matrix products autocast there are listed as lower-precision
# ops here (einsum, chain_matmul, multi_dot, vecdot), so the result dtype is the same
# (Tensor.__matmul__ needs no entry: it calls the module's matmul, which is wrapped)
_LOWER_COMMON = """matmul mm bmm addmm addbmm baddbmm einsum chain_matmul linalg.matmul
    linalg.multi_dot linalg.vecdot F.linear F.conv1d
    F.conv2d F.conv_transpose1d F.conv_transpose2d F.prelu F.scaled_dot_product_attention"""
_LOWER_CUDA_ONLY = "addmv mv"

_FP32_LOSSES = """F.cross_entropy F.nll_loss F.mse_loss F.l1_loss F.smooth_l1_loss F.huber_loss
    F.binary_cross_entropy_with_logits F.kl_div F.poisson_nll_loss F.hinge_embedding_loss
    F.cosine_embedding_loss F.margin_ranking_loss F.multilabel_margin_loss F.soft_margin_loss
    F.triplet_margin_loss F.multi_margin_loss cdist"""
_FP32_CUDA_ONLY = """acos asin cosh sinh tan erfinv exp expm1 log log10 log2 log1p reciprocal
    rsqrt pow Tensor.__rtruediv__ F.softplus F.layer_norm
    F.group_norm norm F.cosine_similarity F.pdist dist renorm logsumexp F.normalize F.softmin
    F.interpolate"""
_FP32_OPT_DTYPE_CUDA = """sum prod cumsum cumprod softmax log_softmax F.softmax F.log_softmax
    linalg.vector_norm linalg.matrix_norm"""
_PROMOTE_CUDA = """addcmul addcdiv atan2 cross linalg.cross dot tensordot scatter_add index_put
    F.bilinear"""
_FP32_CPU_ONLY = """prod F.binary_cross_entropy fft.fft fft.ifft fft.rfft fft.irfft fft.hfft fft.ihfft
    fft.fftn fft.ifftn fft.rfftn fft.irfftn fft.hfftn fft.ihfftn"""
# (fft.fft2 and the other 2-d forms run through their n-d forms, so they follow them)

# Functions that are single ops in PyTorch but compositions of listed ops here: they run with
# autocast off inside, so their result dtype follows their inputs as PyTorch's does
_NATIVE = """var std var_mean std_mean mean nanmean F.gelu F.silu F.mish F.elu F.selu F.celu
    F.logsigmoid F.tanhshrink F.softsign F.hardswish F.hardsigmoid F.glu F.rrelu F.leaky_relu
    F.batch_norm F.instance_norm F.rms_norm F.local_response_norm F.dropout F.embedding
    F.embedding_bag F.avg_pool1d F.avg_pool2d F.adaptive_avg_pool1d F.adaptive_avg_pool2d
    F.lp_pool1d F.lp_pool2d F.pairwise_distance F.gaussian_nll_loss F.multilabel_soft_margin_loss
    F.triplet_margin_with_distance_loss logcumsumexp logaddexp logaddexp2 xlogy sinc float_power
    autograd.backward autograd.grad"""
# (Tensor.__pow__ and __rpow__ are pow, Tensor.backward is autograd.backward: autocast at
# those functions' entry covers the methods)


def _policies():
    """name -> {device type: policy name}."""
    table = {}

    def put(names, device_types, policy):
        for n in names.split():
            table.setdefault(n, {}).update({d: policy for d in device_types})
    put(_NATIVE, ("cpu", "cuda"), "native")
    put(_LOWER_COMMON, ("cpu", "cuda"), "lower")
    put(_LOWER_CUDA_ONLY, ("cuda",), "lower")
    put(_FP32_LOSSES, ("cpu", "cuda"), "fp32")
    put(_FP32_CUDA_ONLY, ("cuda",), "fp32")
    put(_FP32_OPT_DTYPE_CUDA, ("cuda",), "fp32_opt")
    put(_PROMOTE_CUDA, ("cuda",), "promote")
    put(_FP32_CPU_ONLY, ("cpu",), "fp32")
    return table


def _lookup(name):
    import torchlite
    owner, _, attr = name.rpartition(".")
    holder = {"": torchlite, "F": torchlite.nn.functional, "linalg": torchlite.linalg,
              "Tensor": Tensor, "autograd": torchlite.autograd, "fft": torchlite.fft}[owner]
    fn = holder.__dict__.get(attr) if owner == "Tensor" else getattr(holder, attr, None)
    if fn is None:
        raise AttributeError(f"autocast list names {name}, which torchlite lacks")
    return fn


def policies_by_op():
    """{listed op (its function object): {device type: policy function}}."""
    table = {}
    for name, by_device in _policies().items():
        policy = {d: _am._POLICIES[p] for d, p in by_device.items()}
        if name == "F.binary_cross_entropy":
            policy["cuda"] = _am._banned("binary_cross_entropy")
        table.setdefault(_lookup(name), {}).update(policy)
    return table
