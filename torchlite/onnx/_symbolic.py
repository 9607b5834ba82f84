"""What each traced node becomes in ONNX: one table for torchlite.nn's layers (call_module,
keyed by class), one for functions and Tensor methods (keyed by the name a user writes:
"torchlite.relu", "torchlite.nn.functional.relu", "operator.add", "Tensor.view").

A converter takes (ctx, node, args, kwargs) with the node's arguments as the graph holds them
(nodes and plain values) and returns the ONNX value name of the node's result (a list of
names for a node that returns several tensors).  ctx (torchlite/onnx/_export.py) makes ONNX
nodes and constants and knows each node's example shape and dtype.

Sizes are the example's (the trace fixes them, as in PyTorch); where a dim is symbolic
(dynamic_axes), reshapes keep it by writing 0 ("copy the input's dim") for a leading dim
equal to the input's symbolic one."""
import math

import numpy as np

from ..fx.node import Node, public_name
from .errors import UnsupportedOperatorError

# torchlite dtype names -> ONNX TensorProto element types
DTYPES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
          "int64": "INT64", "int32": "INT32", "int16": "INT16", "int8": "INT8", "uint8": "UINT8",
          "bool": "BOOL"}


# ---- helpers ------------------------------------------------------------------------------------
def _dim(d, rank):
    return d + rank if d < 0 else d


def _rank(ctx, node):
    s = ctx.shape(node)
    return len(s) if s is not None else None


def _x(ctx, a):
    return ctx.value(a)


def _shape_tensor(ctx, dims):
    """A 1-d int64 shape from numbers and size nodes (sizes computed from inputs)."""
    parts = []
    for d in dims:
        if isinstance(d, Node):
            parts.append(ctx.add("Unsqueeze", [_x(ctx, d), ctx.ints([0], "axes")]))
        else:
            parts.append(ctx.ints([int(d)]))
    return ctx.add("Concat", parts, axis=0)


def _reshape(ctx, node, src_node, shape):
    src_shape = ctx.shape(src_node)
    dyn = ctx.dynamic(src_node)
    shape = list(shape)
    if any(isinstance(s, Node) for s in shape):
        return ctx.add("Reshape", [_x(ctx, src_node), _shape_tensor(ctx, shape)],
                       name=node.name)
    for d in sorted(dyn):
        if d < len(shape) and src_shape is not None and d < len(src_shape) \
                and shape[d] == src_shape[d] and all(shape[k] == src_shape[k] for k in range(d)):
            shape[d] = 0                 # copy the symbolic dim from the input
    return ctx.add("Reshape", [_x(ctx, src_node), ctx.ints(shape)], name=node.name)


def _axes_input_or_attr(ctx, op_type, x, axes, keepdims, name):
    """Reduce* with axes as an input (opset 18+, and ReduceSum from 13) or an attribute."""
    if axes is None:
        return ctx.add(op_type, [x], keepdims=int(keepdims), name=name)
    if op_type == "ReduceSum" or ctx.opset >= 18:
        return ctx.add(op_type, [x, ctx.ints(list(axes), "axes")], keepdims=int(keepdims),
                       name=name)
    return ctx.add(op_type, [x], axes=list(axes), keepdims=int(keepdims), name=name)


def _dims_arg(dim, rank):
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [_dim(d, rank) for d in dims]


# ---- elementwise ----------------------------------------------------------------------------------
def _unary(op_type):
    def convert(ctx, node, args, kwargs):
        return ctx.add(op_type, [_x(ctx, args[0])], name=node.name)
    return convert


def _binary(op_type, swap=False):
    def convert(ctx, node, args, kwargs):
        a, b = (args[1], args[0]) if swap else (args[0], args[1])
        dtype = ctx.dtype(node) if op_type not in ("Equal", "Less", "Greater", "LessOrEqual",
                                                   "GreaterOrEqual") else \
            ctx.dtype(a if isinstance(a, Node) else b)
        if kwargs.get("alpha", 1) != 1:
            b_name = ctx.add("Mul", [ctx.value(b, dtype), ctx.scalar(kwargs["alpha"], dtype)])
        else:
            b_name = ctx.value(b, dtype)
        return ctx.add(op_type, [ctx.value(a, dtype), b_name], name=node.name)
    return convert


def _gelu_value(ctx, x, approximate, name):
    dtype = "float32"
    if approximate == "tanh":     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.add("Mul", [ctx.add("Mul", [x, x]), x])
        inner = ctx.add("Add", [x, ctx.add("Mul", [cube, ctx.scalar(0.044715, dtype)])])
        t = ctx.add("Tanh", [ctx.add("Mul", [inner, ctx.scalar(math.sqrt(2 / math.pi), dtype)])])
    else:                         # 0.5 x (1 + erf(x / sqrt 2))
        t = ctx.add("Erf", [ctx.add("Div", [x, ctx.scalar(math.sqrt(2.0), dtype)])])
    one_plus = ctx.add("Add", [t, ctx.scalar(1.0, dtype)])
    return ctx.add("Mul", [ctx.add("Mul", [x, one_plus]), ctx.scalar(0.5, dtype)], name=name)


def _gelu(ctx, node, args, kwargs):
    return _gelu_value(ctx, _x(ctx, args[0]), kwargs.get("approximate", "none"), node.name)


def _silu(ctx, node, args, kwargs):
    x = _x(ctx, args[0])
    return ctx.add("Mul", [x, ctx.add("Sigmoid", [x])], name=node.name)


def _hardtanh(lo, hi):
    """hardtanh / relu6 (clamped to [lo, hi]) as Clip; hardtanh's bounds from its arguments."""
    def convert(ctx, node, args, kwargs):
        a = lo if lo is not None else (args[1] if len(args) > 1 else kwargs.get("min_val", -1.0))
        b = hi if hi is not None else (args[2] if len(args) > 2 else kwargs.get("max_val", 1.0))
        dtype = ctx.dtype(node)
        return ctx.add("Clip", [_x(ctx, args[0]), ctx.value(a, dtype), ctx.value(b, dtype)],
                       name=node.name)
    return convert


def _hardsigmoid(ctx, node, args, kwargs):
    # ONNX's HardSigmoid is max(0, min(1, alpha x + beta)): relu6(x + 3) / 6 up to rounding
    return ctx.add("HardSigmoid", [_x(ctx, args[0])], alpha=1.0 / 6.0, beta=0.5, name=node.name)


def _leaky_relu(ctx, node, args, kwargs):
    slope = args[1] if len(args) > 1 else kwargs.get("negative_slope", 0.01)
    return ctx.add("LeakyRelu", [_x(ctx, args[0])], alpha=float(slope), name=node.name)


def _elu(ctx, node, args, kwargs):
    alpha = args[1] if len(args) > 1 else kwargs.get("alpha", 1.0)
    return ctx.add("Elu", [_x(ctx, args[0])], alpha=float(alpha), name=node.name)


def _softmax(op_type):
    def convert(ctx, node, args, kwargs):
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if dim is None:
            raise UnsupportedOperatorError(f"{op_type} without dim")
        return ctx.add(op_type, [_x(ctx, args[0])], axis=int(dim), name=node.name)
    return convert


def _identity(ctx, node, args, kwargs):
    return ctx.add("Identity", [_x(ctx, args[0])], name=node.name)


def _clamp(ctx, node, args, kwargs):
    lo = args[1] if len(args) > 1 else kwargs.get("min")
    hi = args[2] if len(args) > 2 else kwargs.get("max")
    dtype = ctx.dtype(node)
    return ctx.add("Clip", [_x(ctx, args[0]), ctx.value(lo, dtype) if lo is not None else "",
                            ctx.value(hi, dtype) if hi is not None else ""], name=node.name)


# ---- products and layers ---------------------------------------------------------------------------
def _linear_values(ctx, node, x, x_node, w, b):
    if _rank(ctx, x_node) == 2:
        inputs = [x, w] + ([b] if b else [])
        return ctx.add("Gemm", inputs, transB=1, name=node.name)
    y = ctx.add("MatMul", [x, ctx.add("Transpose", [w], perm=[1, 0])])
    return ctx.add("Add", [y, b], name=node.name) if b else ctx.add("Identity", [y],
                                                                     name=node.name)


def _linear_function(ctx, node, args, kwargs):
    w = args[1] if len(args) > 1 else kwargs["weight"]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    return _linear_values(ctx, node, _x(ctx, args[0]), args[0], _x(ctx, w),
                          _x(ctx, b) if b is not None else None)


def _matmul(ctx, node, args, kwargs):
    return ctx.add("MatMul", [_x(ctx, args[0]), _x(ctx, args[1])], name=node.name)


def _param(ctx, mod, path, name):
    t = getattr(mod, name)
    return None if t is None else ctx.tensor(t, f"{path}.{name}" if path else name)


def _linear_module(ctx, node, mod, args, kwargs):
    return _linear_values(ctx, node, _x(ctx, args[0]), args[0],
                          _param(ctx, mod, node.target, "weight"),
                          _param(ctx, mod, node.target, "bias"))


def _pads(padding, nd):
    p = list(padding) if isinstance(padding, (tuple, list)) else [padding] * nd
    return p + p


def _conv_module(ctx, node, mod, args, kwargs):
    if mod.padding_mode != "zeros":
        raise UnsupportedOperatorError(f"{type(mod).__name__} with padding_mode="
                                       f"{mod.padding_mode!r}")
    nd = len(mod.kernel_size)
    if isinstance(mod.padding, str):
        if mod.padding == "valid":
            pads = [0] * (2 * nd)
        else:                                    # 'same': the extra on the end, as PyTorch
            total = [d * (k - 1) for d, k in zip(mod.dilation, mod.kernel_size)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        pads = _pads(mod.padding, nd)
    inputs = [_x(ctx, args[0]), _param(ctx, mod, node.target, "weight")]
    b = _param(ctx, mod, node.target, "bias")
    if b:
        inputs.append(b)
    op = "ConvTranspose" if "Transpose" in type(mod).__name__ else "Conv"
    attrs = dict(kernel_shape=list(mod.kernel_size), strides=list(mod.stride), pads=pads,
                 dilations=list(mod.dilation), group=int(mod.groups))
    if op == "ConvTranspose":
        attrs["output_padding"] = list(mod.output_padding)
    return ctx.add(op, inputs, name=node.name, **attrs)


def _batch_norm_module(ctx, node, mod, args, kwargs):
    if mod.training or mod.running_mean is None:
        raise UnsupportedOperatorError(f"{type(mod).__name__} in training mode or without "
                                       f"running statistics (export the model in eval mode)")
    c = mod.num_features
    dtype = np.float32
    scale = _param(ctx, mod, node.target, "weight") or ctx.initializer(np.ones(c, dtype), "ones")
    bias = _param(ctx, mod, node.target, "bias") or ctx.initializer(np.zeros(c, dtype), "zeros")
    return ctx.add("BatchNormalization",
                   [_x(ctx, args[0]), scale, bias, _param(ctx, mod, node.target, "running_mean"),
                    _param(ctx, mod, node.target, "running_var")],
                   epsilon=float(mod.eps), name=node.name)


def _layer_norm_module(ctx, node, mod, args, kwargs):
    shape = tuple(mod.normalized_shape)
    scale = _param(ctx, mod, node.target, "weight") if mod.elementwise_affine else None
    bias = _param(ctx, mod, node.target, "bias") if mod.elementwise_affine else None
    scale = scale or ctx.initializer(np.ones(shape, np.float32), "ones")
    inputs = [_x(ctx, args[0]), scale] + ([bias] if bias else [])
    return ctx.add("LayerNormalization", inputs, axis=-len(shape), epsilon=float(mod.eps),
                   name=node.name)


def _group_norm_module(ctx, node, mod, args, kwargs):
    """(N, C, *) as (N, G, rest): InstanceNormalization normalises each group, then the
    per-channel affine."""
    x = _x(ctx, args[0])
    g, c = mod.num_groups, mod.num_channels
    rank = _rank(ctx, args[0])
    grouped = ctx.add("Reshape", [x, ctx.ints([0, g, -1])])
    normed = ctx.add("InstanceNormalization",
                     [grouped, ctx.initializer(np.ones(g, np.float32), "ones"),
                      ctx.initializer(np.zeros(g, np.float32), "zeros")], epsilon=float(mod.eps))
    y = ctx.add("Reshape", [normed, ctx.add("Shape", [x])])
    if not mod.affine:
        return ctx.add("Identity", [y], name=node.name)
    shape = [c] + [1] * (rank - 2)
    w = ctx.add("Reshape", [_param(ctx, mod, node.target, "weight"), ctx.ints(shape)])
    y = ctx.add("Mul", [y, w])
    if mod.bias is None:
        return ctx.add("Identity", [y], name=node.name)
    b = ctx.add("Reshape", [_param(ctx, mod, node.target, "bias"), ctx.ints(shape)])
    return ctx.add("Add", [y, b], name=node.name)


def _embedding_module(ctx, node, mod, args, kwargs):
    if mod.max_norm is not None:
        raise UnsupportedOperatorError("Embedding with max_norm")
    return ctx.add("Gather", [_param(ctx, mod, node.target, "weight"), _x(ctx, args[0])],
                   axis=0, name=node.name)


def _pool_module(op_type):
    def convert(ctx, node, mod, args, kwargs):
        ks = mod.kernel_size if isinstance(mod.kernel_size, tuple) else (mod.kernel_size,) * 2
        nd = len(ks)
        stride = mod.stride if mod.stride is not None else ks
        stride = stride if isinstance(stride, tuple) else (stride,) * nd
        attrs = dict(kernel_shape=list(ks), strides=list(stride),
                     pads=_pads(mod.padding, nd), ceil_mode=int(mod.ceil_mode))
        if op_type == "MaxPool":
            if getattr(mod, "return_indices", False):
                raise UnsupportedOperatorError("MaxPool with return_indices=True")
            dil = mod.dilation if isinstance(mod.dilation, tuple) else (mod.dilation,) * nd
            attrs["dilations"] = list(dil)
        else:
            if getattr(mod, "divisor_override", None):
                raise UnsupportedOperatorError("AvgPool with divisor_override")
            attrs["count_include_pad"] = int(mod.count_include_pad)
        return ctx.add(op_type, [_x(ctx, args[0])], name=node.name, **attrs)
    return convert


def _adaptive_avg_pool_module(ctx, node, mod, args, kwargs):
    return _adaptive_avg_pool_values(ctx, node, args[0], mod.output_size)


def _adaptive_avg_pool_function(ctx, node, args, kwargs):
    return _adaptive_avg_pool_values(ctx, node, args[0],
                                     args[1] if len(args) > 1 else kwargs["output_size"])


def _adaptive_avg_pool_values(ctx, node, src, output_size):
    """AdaptiveAvgPool2d: GlobalAveragePool to 1x1, AveragePool where the output divides the
    input (what PyTorch's exporter supports too)."""
    in_shape = ctx.shape(src)
    out = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    spatial = in_shape[-len(out):]
    out = tuple(s if o is None else o for o, s in zip(out, spatial))
    if all(o == 1 for o in out):
        return ctx.add("GlobalAveragePool", [_x(ctx, src)], name=node.name)
    if all(s % o == 0 for s, o in zip(spatial, out)):
        k = [s // o for s, o in zip(spatial, out)]
        return ctx.add("AveragePool", [_x(ctx, src)], kernel_shape=k, strides=k,
                       name=node.name)
    raise UnsupportedOperatorError(f"AdaptiveAvgPool with output {out} not dividing the input "
                                   f"{spatial}")


def _flatten_values(ctx, node, src, start, end):
    shape = ctx.shape(src)
    rank = len(shape)
    start, end = _dim(start, rank), _dim(end, rank)
    if end == rank - 1 and start == 1:
        return ctx.add("Flatten", [_x(ctx, src)], axis=1, name=node.name)
    target = list(shape[:start]) + [-1] + list(shape[end + 1:])
    return _reshape(ctx, node, src, target)


def _flatten_module(ctx, node, mod, args, kwargs):
    return _flatten_values(ctx, node, args[0], mod.start_dim, mod.end_dim)


def _flatten_function(ctx, node, args, kwargs):
    start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
    return _flatten_values(ctx, node, args[0], start, end)


def _activation_module(convert):
    def module(ctx, node, mod, args, kwargs):
        attrs = {}
        for key in ("negative_slope", "alpha", "approximate", "dim"):
            if hasattr(mod, key):
                attrs[key] = getattr(mod, key)
        return convert(ctx, node, args, attrs)
    return module


# ---- recurrent layers ---------------------------------------------------------------------------
# PyTorch stacks gates as LSTM (i, f, g, o) and GRU (r, z, n); ONNX as LSTM (i, o, f, c) and
# GRU (z, r, h): the weight blocks are reordered when they are written.
_GATE_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


def _gates(w, mode):
    blocks = np.split(w, len(_GATE_ORDER[mode]), axis=0)
    return np.concatenate([blocks[i] for i in _GATE_ORDER[mode]], axis=0)


def _recurrent_module(ctx, node, mod, args, kwargs):
    mode = type(mod).__name__
    if mod.proj_size or (mode == "LSTM" and mod.mode != "LSTM"):
        raise UnsupportedOperatorError(f"{mode} with proj_size")
    x_node = args[0]
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    shape = ctx.shape(x_node)
    if len(shape) != 3:
        raise UnsupportedOperatorError(f"{mode} on unbatched input")
    dirs = 2 if mod.bidirectional else 1
    hidden = mod.hidden_size
    x = _x(ctx, x_node)
    if mod.batch_first:
        x = ctx.add("Transpose", [x], perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        if mode == "LSTM":
            h0, c0 = _x(ctx, hx[0]), _x(ctx, hx[1])
        else:
            h0 = _x(ctx, hx)
    ys, hs, cs = x, [], []
    for layer in range(mod.num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih = getattr(mod, "weight_ih" + sfx).detach().numpy()
            w_hh = getattr(mod, "weight_hh" + sfx).detach().numpy()
            ws.append(_gates(w_ih, mode))
            rs.append(_gates(w_hh, mode))
            if mod.bias:
                b = np.concatenate([_gates(getattr(mod, "bias_ih" + sfx).detach().numpy(), mode),
                                    _gates(getattr(mod, "bias_hh" + sfx).detach().numpy(), mode)])
            else:
                b = np.zeros(2 * w_ih.shape[0], w_ih.dtype)
            bs.append(b)
        base = f"{node.target}.l{layer}"
        inputs = [ys, ctx.initializer(np.stack(ws), base + ".W"),
                  ctx.initializer(np.stack(rs), base + ".R"),
                  ctx.initializer(np.stack(bs), base + ".B"), ""]
        if h0 is not None:
            sl = [layer * dirs, (layer + 1) * dirs]
            inputs.append(ctx.add("Slice", [h0, ctx.ints(sl[:1]), ctx.ints(sl[1:]),
                                            ctx.ints([0])]))
            if mode == "LSTM":
                inputs.append(ctx.add("Slice", [c0, ctx.ints(sl[:1]), ctx.ints(sl[1:]),
                                                ctx.ints([0])]))
        attrs = dict(hidden_size=hidden, direction="bidirectional" if dirs == 2 else "forward")
        if mode == "GRU":
            attrs["linear_before_reset"] = 1          # PyTorch's GRU: r * (W_hn h + b_hn)
        if mode == "RNN":                             # tanh or relu, per direction
            attrs["activations"] = [mod.nonlinearity.capitalize()] * dirs
        outs = ctx.add(mode, inputs, n_outputs=3 if mode == "LSTM" else 2, **attrs)
        y, y_h = outs[0], outs[1]                     # y: (seq, dirs, batch, hidden)
        ys = ctx.add("Reshape", [ctx.add("Transpose", [y], perm=[0, 2, 1, 3]),
                                 ctx.ints([0, 0, -1])])
        hs.append(y_h)
        if mode == "LSTM":
            cs.append(outs[2])
    out = ctx.add("Transpose", [ys], perm=[1, 0, 2]) if mod.batch_first else ys
    out = ctx.add("Identity", [out], name=node.name + "_output")
    h_n = ctx.add("Concat", hs, axis=0, name=node.name + "_h_n")
    batch_dim = 0 if mod.batch_first else 1
    dyn = ctx.dynamic(x_node)
    if (0 if mod.batch_first else 1) in dyn:
        ctx.dynamic_dims[out] = {batch_dim}
        ctx.dynamic_dims[h_n] = {1}
    if mode == "LSTM":
        c_n = ctx.add("Concat", cs, axis=0, name=node.name + "_c_n")
        ctx.dynamic_dims[c_n] = ctx.dynamic_dims.get(h_n, set())
        return [out, [h_n, c_n]]
    return [out, h_n]


# ---- attention and the Transformer encoder --------------------------------------------------------
def _np(t):
    return t.detach().cpu().numpy()


def _linear_v(ctx, x, weight, bias, base, name=None):
    """x @ W^T + b on values (any rank), W and b torchlite tensors made initializers."""
    y = ctx.add("MatMul", [x, ctx.initializer(np.ascontiguousarray(_np(weight).T), base + ".weight_t")])
    if bias is None:
        return ctx.add("Identity", [y], name=name) if name else y
    return ctx.add("Add", [y, ctx.initializer(_np(bias), base + ".bias")], name=name)


def _layer_norm_v(ctx, mod, base, x, name=None):
    shape = tuple(mod.normalized_shape)
    scale = ctx.initializer(_np(mod.weight) if mod.weight is not None
                            else np.ones(shape, np.float32), base + ".weight")
    inputs = [x, scale] + ([ctx.initializer(_np(mod.bias), base + ".bias")]
                           if getattr(mod, "bias", None) is not None else [])
    return ctx.add("LayerNormalization", inputs, axis=-len(shape), epsilon=float(mod.eps),
                   name=name)


def _mask_value(ctx, mask_node, dtype):
    """A mask argument as an additive float mask (True -> -inf), or None."""
    if mask_node is None:
        return None
    m = _x(ctx, mask_node)
    if ctx.dtype(mask_node) == "bool":
        return ctx.add("Where", [m, ctx.scalar(-np.inf, dtype), ctx.scalar(0.0, dtype)])
    return m


def _mha_v(ctx, mod, base, q, k, v, attn_mask=None, key_padding_mask=None, need_weights=True,
           average=True, is_causal=False, name=None):
    """MultiheadAttention on batch-first values q (N, L, E), k and v (N, S, E): returns
    (output (N, L, E), weights or None)."""
    if not mod._qkv_same_embed_dim or mod.bias_k is not None or mod.add_zero_attn:
        raise UnsupportedOperatorError("MultiheadAttention with kdim/vdim, add_bias_kv or "
                                       "add_zero_attn")
    e, h = mod.embed_dim, mod.num_heads
    d = e // h
    w = mod.in_proj_weight
    b = mod.in_proj_bias
    heads = []
    for i, x in enumerate((q, k, v)):
        proj = _linear_v(ctx, x, w[i * e:(i + 1) * e], None if b is None else b[i * e:(i + 1) * e],
                         f"{base}.in_proj.{'qkv'[i]}")
        split = ctx.add("Reshape", [proj, ctx.ints([0, 0, h, d])])
        heads.append(ctx.add("Transpose", [split], perm=[0, 2, 1, 3]))       # (N, H, L, D)
    qh, kh, vh = heads
    scores = ctx.add("Mul", [ctx.add("MatMul", [qh, ctx.add("Transpose", [kh],
                                                            perm=[0, 1, 3, 2])]),
                             ctx.scalar(1.0 / math.sqrt(d), "float32")])      # (N, H, L, S)
    if attn_mask is not None:
        m = _mask_value(ctx, attn_mask, "float32")
        if len(ctx.shape(attn_mask)) == 3:                                    # (N*H, L, S)
            m = ctx.add("Reshape", [m, ctx.ints([-1, h, 0, 0])])
        scores = ctx.add("Add", [scores, m])
    elif is_causal:
        size = ctx.add("Slice", [ctx.add("Shape", [scores]), ctx.ints([2]), ctx.ints([4])])
        ones = ctx.add("ConstantOfShape", [size],
                       value=ctx.numpy_helper.from_array(np.ones(1, np.float32)))
        allowed = ctx.add("Cast", [ctx.add("Trilu", [ones], upper=0)], to=9)     # to bool
        scores = ctx.add("Add", [scores, ctx.add("Where", [
            allowed, ctx.scalar(0.0, "float32"), ctx.scalar(-np.inf, "float32")])])
    if key_padding_mask is not None:
        kpm = ctx.add("Unsqueeze", [_mask_value(ctx, key_padding_mask, "float32"),
                                    ctx.ints([1, 2], "axes")])
        scores = ctx.add("Add", [scores, kpm])
    attn = ctx.add("Softmax", [scores], axis=-1)
    out = ctx.add("MatMul", [attn, vh])                                       # (N, H, L, D)
    merged = ctx.add("Reshape", [ctx.add("Transpose", [out], perm=[0, 2, 1, 3]),
                                 ctx.ints([0, 0, e])])
    out = _linear_v(ctx, merged, mod.out_proj.weight, mod.out_proj.bias, base + ".out_proj",
                    name=name)
    weights = None
    if need_weights:
        weights = _axes_input_or_attr(ctx, "ReduceMean", attn, [1], False, (name or "mha") +
                                      "_weights") if average else attn
    return out, weights


def _mha_module(ctx, node, mod, args, kwargs):
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
             "average_attn_weights", "is_causal")
    given = dict(zip(names, args))
    given.update(kwargs)
    if mod.training and mod.dropout > 0:
        raise UnsupportedOperatorError("MultiheadAttention in training mode")
    if len(ctx.shape(given["query"])) != 3:
        raise UnsupportedOperatorError("MultiheadAttention on unbatched input")
    q, k, v = (_x(ctx, given[n]) for n in ("query", "key", "value"))
    if not mod.batch_first:
        q, k, v = (ctx.add("Transpose", [t], perm=[1, 0, 2]) for t in (q, k, v))
    out, weights = _mha_v(ctx, mod, node.target, q, k, v, given.get("attn_mask"),
                          given.get("key_padding_mask"), given.get("need_weights", True),
                          given.get("average_attn_weights", True), given.get("is_causal", False))
    if not mod.batch_first:
        out = ctx.add("Transpose", [out], perm=[1, 0, 2])
    out = ctx.add("Identity", [out], name=node.name + "_output")
    batch_dim = 0 if mod.batch_first else 1
    if batch_dim in ctx.dynamic(given["query"]):
        ctx.dynamic_dims[out] = {batch_dim}
    return [out, weights]


def _activation_v(ctx, fn, x):
    from .. import nn
    from ..nn import functional as F
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return ctx.add("Relu", [x])
    if fn is F.gelu or isinstance(fn, nn.GELU):
        return _gelu_value(ctx, x, getattr(fn, "approximate", "none"), None)
    raise UnsupportedOperatorError(f"a Transformer activation {fn!r}")


def _encoder_layer_v(ctx, mod, base, x, mask, kpm, is_causal):
    """One TransformerEncoderLayer on batch-first x."""
    if mod.training:
        raise UnsupportedOperatorError("a Transformer layer in training mode")

    def sa(y):
        return _mha_v(ctx, mod.self_attn, base + ".self_attn", y, y, y, mask, kpm, False,
                      True, is_causal)[0]

    return _residual_blocks(ctx, mod, base, x, (sa, lambda y: _feed_forward_v(ctx, mod, base, y)))


def _feed_forward_v(ctx, mod, base, y):
    """A Transformer layer's linear1 -> activation -> linear2."""
    hidden = _activation_v(ctx, mod.activation,
                           _linear_v(ctx, y, mod.linear1.weight, mod.linear1.bias,
                                     base + ".linear1"))
    return _linear_v(ctx, hidden, mod.linear2.weight, mod.linear2.bias, base + ".linear2")


def _residual_blocks(ctx, mod, base, x, blocks):
    """x through a Transformer layer's blocks, each with its norm (norm1, norm2, ...) before
    it (norm_first) or after its residual add."""
    for i, block in enumerate(blocks):
        norm = getattr(mod, f"norm{i + 1}")
        nbase = f"{base}.norm{i + 1}"
        if mod.norm_first:
            x = ctx.add("Add", [x, block(_layer_norm_v(ctx, norm, nbase, x))])
        else:
            x = _layer_norm_v(ctx, norm, nbase, ctx.add("Add", [x, block(x)]))
    return x


def _decoder_layer_v(ctx, mod, base, x, mem, given):
    """One TransformerDecoderLayer on batch-first x and memory: self-attention (tgt masks),
    attention over the memory (memory masks), feed-forward."""
    if mod.training:
        raise UnsupportedOperatorError("a Transformer layer in training mode")

    def sa(y):
        return _mha_v(ctx, mod.self_attn, base + ".self_attn", y, y, y, given.get("tgt_mask"),
                      given.get("tgt_key_padding_mask"), False, True,
                      bool(given.get("tgt_is_causal") or False))[0]

    def ca(y):
        return _mha_v(ctx, mod.multihead_attn, base + ".multihead_attn", y, mem, mem,
                      given.get("memory_mask"), given.get("memory_key_padding_mask"), False,
                      True, bool(given.get("memory_is_causal") or False))[0]
    return _residual_blocks(ctx, mod, base, x, (sa, ca, lambda y: _feed_forward_v(ctx, mod, base, y)))


def _decoder_module(ctx, node, mod, args, kwargs):
    """TransformerDecoderLayer or TransformerDecoder (its layers, then its norm)."""
    is_layer = type(mod).__name__ == "TransformerDecoderLayer"
    names = ("tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask",
             "memory_key_padding_mask", "tgt_is_causal", "memory_is_causal")
    given = dict(zip(names, args))
    given.update(kwargs)
    layers = [mod] if is_layer else list(mod.layers)
    batch_first = layers[0].self_attn.batch_first
    if len(ctx.shape(given["tgt"])) != 3:
        raise UnsupportedOperatorError(f"{type(mod).__name__} on unbatched input")
    x, mem = _x(ctx, given["tgt"]), _x(ctx, given["memory"])
    if not batch_first:
        x, mem = (ctx.add("Transpose", [t], perm=[1, 0, 2]) for t in (x, mem))
    x = _decoder_stack_v(ctx, mod, node.target, is_layer, x, mem, given)
    if not batch_first:
        x = ctx.add("Transpose", [x], perm=[1, 0, 2])
    return ctx.add("Identity", [x], name=node.name)


def _decoder_stack_v(ctx, mod, base, is_layer, x, mem, given):
    layers = [mod] if is_layer else list(mod.layers)
    for i, layer in enumerate(layers):
        x = _decoder_layer_v(ctx, layer, base if is_layer else f"{base}.layers.{i}", x, mem, given)
    if not is_layer and mod.norm is not None:
        x = _layer_norm_v(ctx, mod.norm, base + ".norm", x)
    return x


def _transformer_module(ctx, node, mod, args, kwargs):
    """nn.Transformer: its encoder over src, then its decoder over tgt and the memory."""
    names = ("src", "tgt", "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
             "tgt_key_padding_mask", "memory_key_padding_mask", "src_is_causal", "tgt_is_causal",
             "memory_is_causal")
    given = dict(zip(names, args))
    given.update(kwargs)
    batch_first = mod.batch_first
    if len(ctx.shape(given["src"])) != 3:
        raise UnsupportedOperatorError("Transformer on unbatched input")
    src, tgt = _x(ctx, given["src"]), _x(ctx, given["tgt"])
    if not batch_first:
        src, tgt = (ctx.add("Transpose", [t], perm=[1, 0, 2]) for t in (src, tgt))
    enc = mod.encoder
    for i, layer in enumerate(enc.layers):
        src = _encoder_layer_v(ctx, layer, f"{node.target}.encoder.layers.{i}", src,
                               given.get("src_mask"), given.get("src_key_padding_mask"),
                               bool(given.get("src_is_causal") or False))
    if enc.norm is not None:
        src = _layer_norm_v(ctx, enc.norm, node.target + ".encoder.norm", src)
    x = _decoder_stack_v(ctx, mod.decoder, node.target + ".decoder", False, tgt, src, given)
    if not batch_first:
        x = ctx.add("Transpose", [x], perm=[1, 0, 2])
    return ctx.add("Identity", [x], name=node.name)


def _encoder_module(ctx, node, mod, args, kwargs):
    """TransformerEncoderLayer or TransformerEncoder (its layers, then its norm)."""
    is_layer = type(mod).__name__ == "TransformerEncoderLayer"
    names = ("src", "src_mask" if is_layer else "mask", "src_key_padding_mask", "is_causal")
    given = dict(zip(names, args))
    given.update(kwargs)
    layers = [mod] if is_layer else list(mod.layers)
    batch_first = layers[0].self_attn.batch_first
    src = given["src"]
    if len(ctx.shape(src)) != 3:
        raise UnsupportedOperatorError(f"{type(mod).__name__} on unbatched input")
    x = _x(ctx, src)
    if not batch_first:
        x = ctx.add("Transpose", [x], perm=[1, 0, 2])
    mask = given.get("src_mask" if is_layer else "mask")
    causal = bool(given.get("is_causal") or False)
    for i, layer in enumerate(layers):
        base = node.target if is_layer else f"{node.target}.layers.{i}"
        x = _encoder_layer_v(ctx, layer, base, x, mask, given.get("src_key_padding_mask"),
                             causal)
    if not is_layer and mod.norm is not None:
        x = _layer_norm_v(ctx, mod.norm, node.target + ".norm", x)
    if not batch_first:
        x = ctx.add("Transpose", [x], perm=[1, 0, 2])
    return ctx.add("Identity", [x], name=node.name)


def _sdpa(ctx, node, args, kwargs):
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
    given = dict(zip(names, args))
    given.update(kwargs)
    if given.get("dropout_p", 0.0):
        raise UnsupportedOperatorError("scaled_dot_product_attention with dropout_p")
    q, k, v = (_x(ctx, given[n]) for n in ("query", "key", "value"))
    e = ctx.shape(given["query"])[-1]
    scale = given.get("scale") or 1.0 / math.sqrt(e)
    rank = len(ctx.shape(given["key"]))
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scores = ctx.add("Mul", [ctx.add("MatMul", [q, ctx.add("Transpose", [k], perm=perm)]),
                             ctx.scalar(float(scale), "float32")])
    if given.get("attn_mask") is not None:
        scores = ctx.add("Add", [scores, _mask_value_sdpa(ctx, given["attn_mask"])])
    elif given.get("is_causal"):
        size = ctx.add("Slice", [ctx.add("Shape", [scores]), ctx.ints([-2]), ctx.ints([rank])])
        ones = ctx.add("ConstantOfShape", [size],
                       value=ctx.numpy_helper.from_array(np.ones(1, np.float32)))
        allowed = ctx.add("Cast", [ctx.add("Trilu", [ones], upper=0)], to=9)
        scores = ctx.add("Add", [scores, ctx.add("Where", [
            allowed, ctx.scalar(0.0, "float32"), ctx.scalar(-np.inf, "float32")])])
    return ctx.add("MatMul", [ctx.add("Softmax", [scores], axis=-1), v], name=node.name)


def _mask_value_sdpa(ctx, mask_node):
    """SDPA's boolean masks mark what may attend (True = keep), the opposite of MHA's."""
    m = _x(ctx, mask_node)
    if ctx.dtype(mask_node) == "bool":
        return ctx.add("Where", [m, ctx.scalar(0.0, "float32"), ctx.scalar(-np.inf, "float32")])
    return m


# ---- shapes ------------------------------------------------------------------------------------
def _sizes(args, start):
    rest = args[start:]
    if len(rest) == 1 and isinstance(rest[0], (tuple, list)):
        return list(rest[0])
    return list(rest)


def _expand(ctx, node, args, kwargs):
    """Tensor.expand as Expand, which broadcasts: a -1 (keep the size) is a 1 there."""
    sizes = _sizes(args, 1) or list(kwargs.get("size", ()))
    sizes = [1 if not isinstance(s, Node) and s == -1 else s for s in sizes]
    shape = _shape_tensor(ctx, sizes) if any(isinstance(s, Node) for s in sizes) \
        else ctx.ints([int(s) for s in sizes])
    return ctx.add("Expand", [_x(ctx, args[0]), shape], name=node.name)


def _view(ctx, node, args, kwargs):
    shape = _sizes(args, 1) or list(kwargs.get("shape", ()))
    return _reshape(ctx, node, args[0], shape)


def _reshape_function(ctx, node, args, kwargs):
    return _reshape(ctx, node, args[0], list(args[1] if len(args) > 1 else kwargs["shape"]))


def _permute(ctx, node, args, kwargs):
    rank = _rank(ctx, args[0])
    dims = [_dim(d, rank) for d in _sizes(args, 1) or kwargs.get("dims")]
    return ctx.add("Transpose", [_x(ctx, args[0])], perm=dims, name=node.name)


def _transpose(ctx, node, args, kwargs):
    rank = _rank(ctx, args[0])
    perm = list(range(rank))
    if len(args) >= 3:
        a, b = _dim(args[1], rank), _dim(args[2], rank)
        perm[a], perm[b] = perm[b], perm[a]
    else:                                  # t / T / mT: the last two
        perm[-1], perm[-2] = perm[-2], perm[-1]
    return ctx.add("Transpose", [_x(ctx, args[0])], perm=perm, name=node.name)


def _unsqueeze(ctx, node, args, kwargs):
    rank = _rank(ctx, args[0]) + 1
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    return ctx.add("Unsqueeze", [_x(ctx, args[0]), ctx.ints([_dim(dim, rank)], "axes")],
                   name=node.name)


def _squeeze(ctx, node, args, kwargs):
    shape = ctx.shape(args[0])
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        dims = [d for d, s in enumerate(shape) if s == 1]
    else:
        dims = [d for d in _dims_arg(dim, len(shape)) if shape[d] == 1]
    if not dims:
        return ctx.add("Identity", [_x(ctx, args[0])], name=node.name)
    return ctx.add("Squeeze", [_x(ctx, args[0]), ctx.ints(dims, "axes")], name=node.name)


def _split(ctx, node, args, kwargs, chunks=False):
    shape = ctx.shape(args[0])
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    d = _dim(dim, len(shape))
    n = shape[d]
    size = args[1] if len(args) > 1 else kwargs.get("chunks" if chunks else "split_size_or_sections",
                                                   kwargs.get("split_size"))
    if chunks:
        step = -(-n // size)
        sizes = [min(step, n - i) for i in range(0, n, step)]
    elif isinstance(size, int):
        sizes = [min(size, n - i) for i in range(0, n, size)]
    else:
        sizes = list(size)
    outs = ctx.add("Split", [_x(ctx, args[0]), ctx.ints(sizes, "split")], n_outputs=len(sizes),
                   axis=d, name=node.name)
    return list(outs) if len(sizes) > 1 else [outs]


def _chunk(ctx, node, args, kwargs):
    return _split(ctx, node, args, kwargs, chunks=True)


def _cat(ctx, node, args, kwargs):
    tensors = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    rank = _rank(ctx, node)
    return ctx.add("Concat", [_x(ctx, t) for t in tensors], axis=_dim(dim, rank), name=node.name)


def _stack(ctx, node, args, kwargs):
    tensors = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    d = _dim(dim, _rank(ctx, node))
    axes = ctx.ints([d], "axes")
    return ctx.add("Concat", [ctx.add("Unsqueeze", [_x(ctx, t), axes]) for t in tensors],
                   axis=d, name=node.name)


def _unflatten_module(ctx, node, mod, args, kwargs):
    shape = list(ctx.shape(args[0]))
    d = _dim(mod.dim, len(shape))
    return _reshape(ctx, node, args[0], shape[:d] + list(mod.unflattened_size) + shape[d + 1:])


def _is_shape(node):
    t = node.meta.get("type") if isinstance(node, Node) else None
    return node.meta.get("tensor_meta") is None and isinstance(t, type) and issubclass(t, tuple)


def _getitem(ctx, node, args, kwargs):
    src, index = args
    value = ctx.values[src]
    if isinstance(value, list):                   # an element of a multi-output node
        return value[index]
    if not isinstance(src, Node):
        raise UnsupportedOperatorError("indexing a value that is not a tensor")
    if _is_shape(src):                            # x.shape[i]: a 0-d int64 size
        if not isinstance(index, int):
            raise UnsupportedOperatorError("a slice of a tensor's shape")
        return ctx.add("Gather", [value, ctx.initializer(np.asarray(index, np.int64), "index")],
                       axis=0, name=node.name)
    shape = ctx.shape(src)
    index = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, Node) for i in index) or any(isinstance(i, (list, bool)) for i in index):
        raise UnsupportedOperatorError("indexing by tensors or lists")
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    expanded = []
    for i in index:
        if i is Ellipsis:
            expanded += [slice(None)] * (len(shape) - n_real)
        else:
            expanded.append(i)
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    d, out_d = 0, 0
    for i in expanded:
        if i is None:
            unsqueeze.append(out_d)
            out_d += 1
            continue
        if isinstance(i, int):
            # a negative index stays negative: ONNX's Slice counts it from the end, so x[:, -1]
            # is the last row of whatever length the input has (a dynamic axis), not of the
            # traced one's (-1's end is "to the end": end 0 would be empty)
            starts.append(i)
            ends.append(i + 1 if i != -1 else np.iinfo(np.int64).max)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
        elif isinstance(i, slice):
            if i != slice(None):
                step = 1 if i.step is None else i.step
                starts.append(0 if i.start is None else i.start)
                ends.append(np.iinfo(np.int64).max if i.stop is None else i.stop)
                axes.append(d)
                steps.append(step)
            out_d += 1
        d += 1
    x = value
    if axes:
        x = ctx.add("Slice", [x, ctx.ints(starts, "starts"), ctx.ints(ends, "ends"),
                              ctx.ints(axes, "axes"), ctx.ints(steps, "steps")])
    if squeeze:
        x = ctx.add("Squeeze", [x, ctx.ints(squeeze, "axes")])
    if unsqueeze:
        x = ctx.add("Unsqueeze", [x, ctx.ints(unsqueeze, "axes")])
    return ctx.add("Identity", [x], name=node.name)


# ---- sizes computed from the input (ONNX export keeps them symbolic) ------------------------------
def _shape_of(ctx, node, args, kwargs):
    return ctx.add("Shape", [_x(ctx, args[0])], name=node.name)


def _size_method(ctx, node, args, kwargs):
    shape = ctx.add("Shape", [_x(ctx, args[0])])
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return ctx.add("Identity", [shape], name=node.name)
    return ctx.add("Gather", [shape, ctx.initializer(np.asarray(dim, np.int64), "index")],
                   axis=0, name=node.name)


def _scalar_arg(ctx, a, dtype):
    if isinstance(a, Node):
        v = _x(ctx, a)
        return v if ctx.dtype(a) == dtype else ctx.add("Cast", [v], to=_ONNX_TYPES[dtype])
    return ctx.initializer(np.asarray(a, dtype=np.int64 if dtype == "int64" else np.float32),
                           "const")


_ONNX_TYPES = {"int64": 7, "float32": 1}


def _arange(ctx, node, args, kwargs):
    nums = list(args)
    if len(nums) == 1:
        nums = [0, nums[0], 1]
    elif len(nums) == 2:
        nums = [nums[0], nums[1], 1]
    for k, i in (("start", 0), ("end", 1), ("step", 2)):
        if k in kwargs:
            nums[i] = kwargs[k]
    dtype = ctx.dtype(node)
    dtype = "int64" if dtype == "int64" else "float32"
    start, end, step = (_scalar_arg(ctx, a, dtype) for a in nums)
    return ctx.add("Range", [start, end, step], name=node.name)


def _causal_mask(ctx, node, args, kwargs):
    """nn.Transformer.generate_square_subsequent_mask(sz): 0 on and below the diagonal, -inf
    above, for a size that may come from the input."""
    size = _scalar_arg(ctx, args[0] if args else kwargs["sz"], "int64")
    one = ctx.add("Unsqueeze", [size, ctx.ints([0], "axes")])
    ones = ctx.add("ConstantOfShape", [ctx.add("Concat", [one, one], axis=0)],
                   value=ctx.numpy_helper.from_array(np.ones(1, np.float32)))
    allowed = ctx.add("Cast", [ctx.add("Trilu", [ones], upper=0)], to=9)
    return ctx.add("Where", [allowed, ctx.scalar(0.0, "float32"), ctx.scalar(-np.inf, "float32")],
                   name=node.name)


# ---- reductions -----------------------------------------------------------------------------------
def _reduce(op_type):
    def convert(ctx, node, args, kwargs):
        rank = _rank(ctx, args[0])
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        if kwargs.get("dtype") is not None:
            raise UnsupportedOperatorError(f"{op_type} with dtype=")
        return _axes_input_or_attr(ctx, op_type, _x(ctx, args[0]), _dims_arg(dim, rank),
                                   keepdim, node.name)
    return convert


def _max(ctx, node, args, kwargs):
    rank = _rank(ctx, args[0])
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return _axes_input_or_attr(ctx, "ReduceMax", _x(ctx, args[0]), None, False, node.name)
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    d = _dim(dim, rank)
    values = _axes_input_or_attr(ctx, "ReduceMax", _x(ctx, args[0]), [d], keepdim,
                                 node.name + "_values")
    indices = ctx.add("ArgMax", [_x(ctx, args[0])], axis=d, keepdims=int(keepdim),
                      name=node.name + "_indices")
    return [values, indices]


# ---- the tables ----------------------------------------------------------------------------------
_F = "torchlite.nn.functional."
FUNCTIONS = {}
for _names, _conv in (
        (("relu",), _unary("Relu")), (("sigmoid",), _unary("Sigmoid")),
        (("tanh",), _unary("Tanh")), (("exp",), _unary("Exp")), (("log",), _unary("Log")),
        (("sqrt",), _unary("Sqrt")), (("abs",), _unary("Abs")), (("neg",), _unary("Neg")),
        (("erf",), _unary("Erf")), (("sin",), _unary("Sin")), (("cos",), _unary("Cos")),
        (("reciprocal",), _unary("Reciprocal")), (("floor",), _unary("Floor")),
        (("ceil",), _unary("Ceil")), (("gelu",), _gelu), (("silu",), _silu),
        (("leaky_relu",), _leaky_relu), (("elu",), _elu),
        (("relu6",), _hardtanh(0.0, 6.0)), (("hardtanh",), _hardtanh(None, None)),
        (("hardswish",), _unary("HardSwish")), (("hardsigmoid",), _hardsigmoid),
        (("adaptive_avg_pool2d",), _adaptive_avg_pool_function),
        (("softmax",), _softmax("Softmax")), (("log_softmax",), _softmax("LogSoftmax")),
        (("add",), _binary("Add")), (("sub",), _binary("Sub")), (("mul",), _binary("Mul")),
        (("div", "true_divide"), _binary("Div")), (("pow",), _binary("Pow")),
        (("matmul", "mm", "bmm"), _matmul), (("eq",), _binary("Equal")),
        (("lt",), _binary("Less")), (("gt",), _binary("Greater")), (("clamp", "clip"), _clamp),
        (("flatten",), _flatten_function), (("cat", "concat"), _cat), (("stack",), _stack),
        (("split",), _split), (("chunk",), _chunk),
        (("sum",), _reduce("ReduceSum")), (("mean",), _reduce("ReduceMean")),
        (("amax",), _reduce("ReduceMax")), (("max",), _max), (("reshape",), _reshape_function),
        (("permute",), _permute), (("transpose",), _transpose), (("unsqueeze",), _unsqueeze),
        (("squeeze",), _squeeze), (("t",), _transpose), (("dropout",), _identity),
        (("linear",), _linear_function), (("scaled_dot_product_attention",), _sdpa)):
    for _n in _names:
        FUNCTIONS[f"torchlite.{_n}"] = _conv
        FUNCTIONS[f"{_F}{_n}"] = _conv
        FUNCTIONS[f"Tensor.{_n}"] = _conv
for _n, _conv in (("add", _binary("Add")), ("sub", _binary("Sub")), ("mul", _binary("Mul")),
                  ("truediv", _binary("Div")), ("pow", _binary("Pow")), ("matmul", _matmul),
                  ("neg", _unary("Neg")), ("getitem", _getitem), ("eq", _binary("Equal")),
                  ("lt", _binary("Less")), ("gt", _binary("Greater"))):
    FUNCTIONS[f"operator.{_n}"] = _conv
def _cast(onnx_type):
    def convert(ctx, node, args, kwargs):
        return ctx.add("Cast", [_x(ctx, args[0])], to=onnx_type, name=node.name)
    return convert


def _to(ctx, node, args, kwargs):
    """Tensor.to: a cast to the node's dtype (a device or a copy is nothing in ONNX)."""
    dtype = ctx.dtype(node)
    return ctx.add("Cast", [_x(ctx, args[0])], name=node.name,
                   to=getattr(ctx.onnx.TensorProto, DTYPES[dtype]))


for _n, _conv in (("view", _view), ("reshape", _view), ("contiguous", _identity), ("expand", _expand),
                  ("flatten", _flatten_function), ("permute", _permute), ("to", _to),
                  ("float", _cast(1)), ("double", _cast(11)), ("long", _cast(7)),
                  ("int", _cast(6)), ("half", _cast(10)), ("bool", _cast(9))):
    FUNCTIONS[f"Tensor.{_n}"] = _conv
FUNCTIONS["getattr.T"] = _transpose
FUNCTIONS["getattr.shape"] = _shape_of
FUNCTIONS["Tensor.size"] = _size_method
FUNCTIONS["torchlite.arange"] = _arange
FUNCTIONS["operator.floordiv"] = _binary("Div")
FUNCTIONS["generate_square_subsequent_mask"] = _causal_mask
FUNCTIONS["getattr.mT"] = _transpose

MODULES = {
    "Linear": _linear_module, "Conv1d": _conv_module, "Conv2d": _conv_module,
    "ConvTranspose1d": _conv_module, "ConvTranspose2d": _conv_module,
    "BatchNorm1d": _batch_norm_module, "BatchNorm2d": _batch_norm_module,
    "LayerNorm": _layer_norm_module, "GroupNorm": _group_norm_module,
    "Embedding": _embedding_module,
    "MaxPool1d": _pool_module("MaxPool"), "MaxPool2d": _pool_module("MaxPool"),
    "AvgPool1d": _pool_module("AveragePool"), "AvgPool2d": _pool_module("AveragePool"),
    "AdaptiveAvgPool2d": _adaptive_avg_pool_module, "Flatten": _flatten_module,
    "Unflatten": _unflatten_module, "LSTM": _recurrent_module, "GRU": _recurrent_module,
    "RNN": _recurrent_module,
    "MultiheadAttention": _mha_module, "TransformerEncoderLayer": _encoder_module,
    "TransformerEncoder": _encoder_module, "TransformerDecoderLayer": _decoder_module,
    "TransformerDecoder": _decoder_module, "Transformer": _transformer_module,
    "ReLU": _activation_module(_unary("Relu")), "Sigmoid": _activation_module(_unary("Sigmoid")),
    "Tanh": _activation_module(_unary("Tanh")), "GELU": _activation_module(_gelu),
    "SiLU": _activation_module(_silu), "LeakyReLU": _activation_module(_leaky_relu),
    "ReLU6": _activation_module(_hardtanh(0.0, 6.0)),
    "Hardtanh": lambda ctx, node, mod, args, kwargs: _hardtanh(mod.min_val, mod.max_val)(
        ctx, node, args, kwargs),
    "Hardswish": _activation_module(_unary("HardSwish")),
    "Hardsigmoid": _activation_module(_hardsigmoid),
    "ELU": _activation_module(_elu), "Softmax": _activation_module(_softmax("Softmax")),
    "LogSoftmax": _activation_module(_softmax("LogSoftmax")),
    "Dropout": _activation_module(_identity), "Identity": _activation_module(_identity),
}


def _key(node):
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.target is getattr and len(node.args) == 2 and isinstance(node.args[1], str):
        return f"getattr.{node.args[1]}"
    return public_name(node.target) or getattr(node.target, "__name__", repr(node.target))


def _where(node):
    path = node.target if node.op == "call_module" else node.meta.get("module_path", "")
    return f" (in module '{path}')" if path else " (in the model's forward)"


def convert_node(ctx, node):
    """Make the ONNX nodes of one graph node and record its value name(s) in ctx.values."""
    if node.op == "get_attr":
        obj = ctx.gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        ctx.values[node] = ctx.tensor(obj, node.target)
        return
    if node.op == "call_module":
        mod = ctx.gm.get_submodule(node.target)
        convert = MODULES.get(type(mod).__name__)
        if convert is None or not type(mod).__module__.startswith("torchlite.nn"):
            raise UnsupportedOperatorError(f"torchlite.onnx.export: no ONNX form for module "
                                           f"{type(mod).__name__}{_where(node)}")
        result = convert(ctx, node, mod, node.args, node.kwargs)
    else:
        key = _key(node)
        convert = FUNCTIONS.get(key)
        if convert is None:
            raise UnsupportedOperatorError(f"torchlite.onnx.export: no ONNX form for {key}"
                                           f"{_where(node)}")
        result = convert(ctx, node, node.args, node.kwargs)
    ctx.values[node] = result
    _propagate_dynamic(ctx, node, result)


def _propagate_dynamic(ctx, node, result):
    """A symbolic dim of the first input stays symbolic in the result where the result has
    the same example size at the same position (batch and sequence dims, in practice)."""
    first = next((a for a in node.all_input_nodes if a.op != "get_attr"), None)
    if first is None or isinstance(result, list):
        return
    dyn = ctx.dynamic(first)
    src, out = ctx.shape(first), ctx.shape(node)
    if not dyn or src is None or out is None:
        return
    ctx.dynamic_dims[result] = {d for d in dyn if d < len(out) and d < len(src)
                                and out[d] == src[d]}
