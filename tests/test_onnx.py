"""torchlite.onnx.export: each model family exported, checked by onnx.checker, run in
onnxruntime (CPU) and compared with torchlite's eager output, at two batch sizes where a
dynamic axis is given; where PyTorch is installed, PyTorch's own export of the same model
(copied weights) runs in onnxruntime too and must agree.  Skips without onnx/onnxruntime."""
import io
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(model, args, **kw):
    buf = io.BytesIO()
    proto = tl.onnx.export(model, args, buf, **kw)
    onnx.checker.check_model(proto)
    return ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"]), proto


def _run(sess, *arrays):
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, arrays)))


def _eager(model, *xs):
    with tl.no_grad():
        out = model(*[tl.tensor(x) for x in xs])
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.numpy() for o in outs]


class Elementwise(nn.Module):
    """Arithmetic with broadcasting and numbers, matmul, views, slicing, reductions."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(tl.randn(6, 6) * 0.3)
        self.register_buffer("bias", tl.linspace(-1, 1, 6))

    def forward(self, x):
        h = (x @ self.w + self.bias) * 0.5 - x / 3
        h = tl.cat([h, h.sigmoid()], dim=1)                 # (b, 12)
        v = h.view(h.shape[0], 3, 4).permute(0, 2, 1)       # (b, 4, 3)
        s = v[:, 1:, ::2].transpose(1, 2)                   # (b, 2, 3)
        r = s.sum(dim=-1) + s.mean(dim=1, keepdim=True).squeeze(1)[:, :2]
        m = tl.max(v, dim=1).values
        return r.pow(2).sqrt().exp().log(), m, tl.bmm(v.transpose(1, 2), v)[0]


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.acts = nn.ModuleList([nn.GELU(), nn.GELU("tanh"), nn.SiLU(), nn.LeakyReLU(0.2),
                                   nn.ELU(0.7), nn.Tanh(), nn.Sigmoid(), nn.ReLU()])
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.norm(x)
        outs = [act(self.lin(h)) for act in self.acts]
        return tl.stack(outs, 0).sum(0).softmax(-1), F.log_softmax(h, dim=-1), F.gelu(h).clamp(-0.1, 0.5)


FAMILIES = {
    "mlp": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.3),
                                  nn.Linear(32, 10)), [(3, 8, 8)]),
    "cnn": (lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Conv2d(8, 4, 3, padding="same",
                                                             dilation=2),
                                  nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
            [(3, 1, 8, 8)]),
    "conv1d_transpose": (lambda: nn.Sequential(nn.Conv1d(2, 4, 3, stride=2, groups=2),
                                               nn.Tanh(), nn.AvgPool1d(2),
                                               nn.Unflatten(1, (4, 1)),
                                               nn.ConvTranspose2d(4, 3, 2, stride=2)),
                         [(3, 2, 11)]),
    "elementwise": (Elementwise, [(3, 6)]),
    "activations": (Activations, [(3, 5, 8)]),
    "embedding": (lambda: nn.Sequential(nn.Embedding(10, 6), nn.Linear(6, 3)), None),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_exported_model_runs_in_onnxruntime_like_torchlite(family):
    tl.manual_seed(0)
    make, shapes = FAMILIES[family]
    model = make().eval()
    rng = np.random.default_rng(1)
    if shapes is None:                                  # token ids
        example = [rng.integers(0, 10, (3, 4))]
        batch2 = [rng.integers(0, 10, (5, 4))]
    else:
        example = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        batch2 = [rng.standard_normal((5,) + s[1:]).astype(np.float32) for s in shapes]
    names = [f"in{i}" for i in range(len(example))]
    n_out = len(_eager(model, *example))
    outs = [f"out{i}" for i in range(n_out)]
    dyn = {n: {0: "batch"} for n in names + outs[:1]}
    try:
        sess, proto = _session(model, tuple(tl.tensor(x) for x in example), input_names=names,
                               output_names=outs, dynamic_axes=dyn)
    except tl.onnx.UnsupportedOperatorError as e:
        pytest.fail(f"{family}: {e}")
    for xs in (example, batch2):
        got = _run(sess, *xs)
        for g, w in zip(got, _eager(model, *xs)):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert proto.opset_import[0].version == 17
    assert {i.name for i in proto.graph.input} == set(names)


def test_sizes_read_from_the_input_stay_symbolic():
    class Reads(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(12, 2)

        def forward(self, x):
            n, c = x.size(0), x.shape[1]
            flat = x.view(n, -1) + tl.arange(c * 4).float()
            return self.lin(flat), tl.arange(x.shape[0] * 2)
    m = Reads().eval()
    sess, _ = _session(m, (tl.randn(2, 3, 4),), input_names=["x"],
                       dynamic_axes={"x": {0: "n", 1: "c"}})
    for x in (tl.randn(2, 3, 4), tl.randn(5, 3, 4)):
        for g, w in zip(_run(sess, x.numpy()), _eager(m, x.numpy())):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_dynamic_batch_axis_is_symbolic_in_the_file():
    model = nn.Sequential(nn.Linear(4, 2))
    _, proto = _session(model, (tl.randn(3, 4),), input_names=["x"], output_names=["y"],
                        dynamic_axes={"x": [0], "y": {0: "n"}})
    dim = proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "x_dynamic_axes_1" and not dim.HasField("dim_value")
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "n"
    static = tl.onnx.export(model, (tl.randn(3, 4),), None)
    assert static.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 3
    assert [i.name for i in static.graph.initializer] == ["0.weight", "0.bias"]


def test_unsupported_op_names_the_op_and_its_module():
    class Inner(nn.Module):
        def forward(self, x):
            return tl.cumsum(x, 0)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Inner()

        def forward(self, x):
            return self.block(x) + 1
    with pytest.raises(tl.onnx.UnsupportedOperatorError, match="cumsum.*in module 'block'"):
        tl.onnx.export(Outer(), (tl.ones(3),), None)
    with pytest.raises(tl.onnx.UnsupportedOperatorError, match="module PixelShuffle .*in module '0'"):
        tl.onnx.export(nn.Sequential(nn.PixelShuffle(2)), (tl.ones(1, 4, 2, 2),), None)


def test_options_and_probes():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(tl.onnx.is_in_onnx_export())
            return x * 2
    tl.onnx.export(Probe(), tl.ones(2), None)
    assert seen == [True] and not tl.onnx.is_in_onnx_export()
    with pytest.raises(ValueError, match="opset_version 9"):
        tl.onnx.export(Probe(), tl.ones(2), None, opset_version=9)
    proto = tl.onnx.export(nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2)), tl.ones(1, 2), None,
                           opset_version=18)
    assert proto.opset_import[0].version == 18
    bn = nn.BatchNorm1d(2)
    tl.onnx.export(nn.Sequential(bn), tl.ones(3, 2), None)       # exported in eval mode
    assert bn.training                                            # and put back
    assert tl.onnx.TrainingMode.EVAL == 0 and tl.onnx.OperatorExportTypes.ONNX.value == 0


def test_without_onnx_export_names_the_extra(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_onnx(name, *a, **k):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(ImportError, match=r"torchlite-dl\[onnx\]"):
        tl.onnx.export(nn.Linear(2, 2), tl.ones(1, 2), None)


TORCH_FAMILIES = {
    "cnn": (lambda lib: lib.nn.Sequential(
        lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.BatchNorm2d(4), lib.nn.ReLU(),
        lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Linear(16, 5), lib.nn.LogSoftmax(dim=1)),
        (2, 1, 4, 4), "float"),
    "mlp_norms": (lambda lib: lib.nn.Sequential(
        lib.nn.Linear(6, 8), lib.nn.LayerNorm(8), lib.nn.GELU(), lib.nn.Linear(8, 8),
        lib.nn.Unflatten(1, (4, 2)), lib.nn.GroupNorm(2, 4), lib.nn.Flatten(), lib.nn.SiLU()),
        (3, 6), "float"),
    "lstm": (lambda lib: lib.nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True),
             (2, 7, 4), "float"),
    "gru": (lambda lib: lib.nn.GRU(4, 5), (7, 2, 4), "float"),
    "encoder": (lambda lib: lib.nn.TransformerEncoder(
        lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0), 2,
        enable_nested_tensor=False), (2, 5, 8), "float"),
    "embedding": (lambda lib: lib.nn.Sequential(lib.nn.Embedding(10, 4), lib.nn.Tanh()),
                  (2, 5), "int"),
}


@pytest.mark.parametrize("family", sorted(TORCH_FAMILIES))
def test_matches_torch_onnx_export(family):
    """The same model (weights copied) exported by torchlite and by PyTorch: onnxruntime runs
    both files to the same outputs."""
    torch = pytest.importorskip("torch")
    build, shape, kind = TORCH_FAMILIES[family]
    rng = np.random.default_rng(2)
    ours, theirs = build(tl).eval(), build(torch).eval()
    with torch.no_grad():
        for (ka, a), (kb, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
            assert ka == kb
            if a.dtype == tl.int64:
                continue
            v = rng.standard_normal(tuple(a.shape)).astype(np.float32) * 0.5
            if "running_var" in ka:
                v = np.abs(v) + 0.5
            a.copy_(tl.tensor(v))
            b.copy_(torch.tensor(v))
    x = rng.integers(0, 10, shape) if kind == "int" else \
        rng.standard_normal(shape).astype(np.float32)
    sess, _ = _session(ours, (tl.tensor(x),), input_names=["x"])
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(theirs, (torch.tensor(x),), buf, input_names=["x"], dynamo=False)
    their_sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    ours_out, theirs_out = _run(sess, x), their_sess.run(None, {"x": x})
    for g, w in zip(ours_out, theirs_out):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_export_with_keyword_inputs():
    class Kw(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x, scale):
            return self.lin(x) * scale
    m = Kw().eval()
    x, s = tl.randn(4, 3), tl.full((1,), 2.0)
    sess, _ = _session(m, (), kwargs={"x": x, "scale": s}, input_names=["x", "scale"])
    np.testing.assert_allclose(_run(sess, x.numpy(), s.numpy())[0], _eager(m, x.numpy(),
                                                                            s.numpy())[0],
                               rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"batch_first": True},
                                {"num_layers": 2, "bidirectional": True, "batch_first": True}],
                         ids=["plain", "batch_first", "2layers_bidirectional"])
def test_recurrent_layers_export_as_onnx_lstm_and_gru(mode, kw):
    """ONNX's LSTM/GRU ops (gates reordered, GRU's linear_before_reset), batch and sequence
    dims symbolic: the outputs and final states at two shapes; with given initial states."""
    class Rec(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, mode)(3, 5, **kw)

        def forward(self, x, h0):
            out, state = self.rnn(x, (h0, h0 * 0.5) if mode == "LSTM" else h0)
            return out, state[0] if mode == "LSTM" else state
    tl.manual_seed(2)
    m = Rec().eval()
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    bdim = 0 if kw.get("batch_first") else 1
    x = tl.randn(4, 6, 3)
    h0 = tl.randn(layers, x.shape[bdim], 5)
    sess, _ = _session(m, (x, h0), input_names=["x", "h0"],
                       dynamic_axes={"x": {0: "a", 1: "b"}, "h0": {1: "batch"}})
    for xs in ((x, h0), (tl.randn(2, 7, 3), None)):
        xx = xs[0]
        hh = xs[1] if xs[1] is not None else tl.randn(layers, xx.shape[bdim], 5)
        got = _run(sess, xx.numpy(), hh.numpy())
        for g, w in zip(got, _eager(m, xx.numpy(), hh.numpy())):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_attention_and_the_transformer_encoder():
    """MultiheadAttention (both layouts, masks, weights), TransformerEncoder (post- and
    pre-norm, GELU, final norm), scaled_dot_product_attention (causal), each at two shapes
    with symbolic batch and sequence dims."""
    tl.manual_seed(0)

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2)

        def forward(self, x, mask, pad):
            return self.attn(x, x, x, attn_mask=mask, key_padding_mask=pad)

    class Sdpa(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    pad = tl.tensor([[False] * 4 + [True], [False] * 5, [False] * 3 + [True] * 2])
    cases = [
        (nn.MultiheadAttention(8, 2, batch_first=True), [(3, 5, 8)] * 3, {0: "b", 1: "l"},
         [(2, 4, 8)] * 3),
        (Masked(), [(5, 3, 8)], {1: "b"}, None),
        (Sdpa(), [(2, 2, 5, 4)] * 3, {0: "b", 2: "l"}, [(1, 2, 3, 4)] * 3),
    ]
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first,
                                           activation="gelu")
        cases.append((nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8),
                                            enable_nested_tensor=False),
                      [(3, 5, 8)], {0: "b", 1: "s"}, [(2, 7, 8)]))
    for model, shapes, dyn, other in cases:
        model.eval()
        xs = [tl.randn(*s) for s in shapes]
        if isinstance(model, Masked):
            xs = [xs[0], mask, pad]
        names = [f"in{i}" for i in range(len(xs))]
        sess, _ = _session(model, tuple(xs), input_names=names,
                           dynamic_axes={n: dyn for n in names[:len(shapes)]})
        runs = [xs] + ([[tl.randn(*s) for s in other]] if other else [])
        for inputs in runs:
            got = _run(sess, *[x.numpy() for x in inputs])
            want = _eager(model, *[x.numpy() for x in inputs])
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_the_transformer_example_exports_with_dynamic_batch_and_length():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    try:
        from transformer_lm import TinyGPT
    finally:
        sys.path.pop(0)
    tl.manual_seed(1)
    model = TinyGPT(30, 16, d_model=16, heads=2, layers=2).eval()
    codes = tl.randint(0, 30, (2, 9))
    # the positions and the causal mask are built from codes.shape[1]: computed in the graph
    sess, proto = _session(model, (codes,), input_names=["codes"], output_names=["logits"],
                           dynamic_axes={"codes": {0: "batch", 1: "time"},
                                         "logits": {0: "batch", 1: "time"}})
    assert {"Shape", "Range", "Trilu"} <= {n.op_type for n in proto.graph.node}
    for batch in (codes, tl.randint(0, 30, (5, 9)), tl.randint(0, 30, (1, 16))):
        np.testing.assert_allclose(_run(sess, batch.numpy())[0], _eager(model, batch.numpy())[0],
                                   rtol=1e-4, atol=1e-5)


def test_group_norm_split_chunk_and_weights_as_inputs():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.gn = nn.GroupNorm(2, 4)
            self.plain = nn.GroupNorm(4, 4, affine=False)

        def forward(self, x):
            a, b = self.gn(x).split(2, dim=1)
            c = self.plain(x).chunk(2, 1)
            return a * b + c[1], c[0]
    tl.manual_seed(0)
    m = M().eval()
    x = tl.randn(3, 4, 5, 6)
    sess, proto = _session(m, (x,), input_names=["x"], dynamic_axes={"x": {0: "b", 2: "h"}})
    for xx in (x, tl.randn(2, 4, 3, 6)):
        for g, w in zip(_run(sess, xx.numpy()), _eager(m, xx.numpy())):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    bare = tl.onnx.export(m, (x,), None, input_names=["x"], export_params=False)
    assert [i.name for i in bare.graph.input] == ["x", "gn.weight", "gn.bias"]
    assert not {i.name for i in bare.graph.initializer} & {"gn.weight", "gn.bias"}
    weights_fed = ort.InferenceSession(bare.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
    got = weights_fed.run(None, {"x": x.numpy(), "gn.weight": m.gn.weight.detach().numpy(),
                                 "gn.bias": m.gn.bias.detach().numpy()})
    np.testing.assert_allclose(got[0], _eager(m, x.numpy())[0], rtol=1e-4, atol=1e-5)


def test_importing_torchlite_onnx_loads_no_onnx():
    import subprocess
    import sys
    code = ("import sys, torchlite, torchlite.onnx as o; o.is_in_onnx_export(); "
            "print('onnx' in sys.modules, 'onnxruntime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


class _LastSteps(nn.Module):
    def forward(self, x):
        return x[:, -1], x[:, -2], x[-1], x[:, 1]


def test_negative_indices_follow_a_dynamic_axis():
    # x[:, -1] (an LSTM classifier's last step) must be the last row of each input's own
    # length, not of the traced one's (it was a constant index: a wrong row, or an error)
    sess, _ = _session(_LastSteps(), (tl.rand(4, 5, 3),), input_names=["x"],
                       dynamic_axes={"x": {0: "n", 1: "t"}})
    for n, t in ((4, 5), (2, 3), (6, 9)):
        x = np.random.default_rng(t).random((n, t, 3), dtype=np.float32)
        got = _run(sess, x)
        for g, w in zip(got, (x[:, -1], x[:, -2], x[-1], x[:, 1])):
            np.testing.assert_array_equal(g, w)


class _Keywords(nn.Module):
    def forward(self, a, b=None, c=None):
        return a * 2 + (0 if b is None else b) + (0 if c is None else c * 3)


@pytest.mark.parametrize("form", ["kwargs", "trailing dict"])
def test_keyword_inputs_become_graph_inputs(form):
    a, c = tl.ones(2), tl.ones(2)
    args, kw = ((a,), {"kwargs": {"c": c}}) if form == "kwargs" else ((a, {"c": c}), {})
    sess, proto = _session(_Keywords(), args, input_names=["a", "c"], **kw)
    assert [i.name for i in proto.graph.input] == ["a", "c"]
    x, z = np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)
    np.testing.assert_allclose(_run(sess, x, z)[0], x * 2 + z * 3)
