"""ONNX export of the Transformer decoder -- TransformerDecoderLayer, TransformerDecoder and
nn.Transformer (post- and pre-norm, batch first or not, causal and padding masks) -- and of
nn.RNN (ONNX RNN: tanh or relu, layers, directions), run in onnxruntime at two batch sizes
against torchlite's own output.  Skips without onnx and onnxruntime."""
import io

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _check(model, inputs, batch_dim):
    model.eval()
    names = [f"in{i}" for i in range(len(inputs))]
    buf = io.BytesIO()
    proto = tl.onnx.export(model, tuple(inputs), buf, input_names=names, output_names=["y"],
                           dynamic_axes={**{n: {batch_dim: "batch"} for n in names},
                                         "y": {batch_dim: "batch"}})
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    for extra in (0, 2):
        xs = [tl.cat([t] + [t.narrow(batch_dim, 0, 1)] * extra, dim=batch_dim) for t in inputs]
        (got,) = sess.run(None, dict(zip(names, [t.numpy() for t in xs])))
        with tl.no_grad():
            want = model(*xs).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_with_a_causal_target_mask(batch_first, norm_first):
    tl.manual_seed(0)
    tr = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                        dim_feedforward=32, batch_first=batch_first, norm_first=norm_first)
    mask = nn.Transformer.generate_square_subsequent_mask(4)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tr = tr

        def forward(self, src, tgt):
            return self.tr(src, tgt, tgt_mask=mask)
    shape = (lambda n: (2, n, 16)) if batch_first else (lambda n: (n, 2, 16))
    src, tgt = tl.randn(*shape(5)), tl.randn(*shape(4))
    _check(Model(), [src, tgt], 0 if batch_first else 1)
    _check(tr, [src, tgt], 0 if batch_first else 1)


def test_decoder_with_padding_masks_and_a_causal_flag():
    tl.manual_seed(1)
    layer = nn.TransformerDecoderLayer(16, 2, 32, batch_first=True, activation="gelu")
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(16))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec, self.layer = dec, nn.TransformerDecoderLayer(16, 2, 32, batch_first=True)

        def forward(self, tgt, memory):
            pad = memory[:, :, 0] > 1.5                     # some memory positions padded
            t = tgt.shape[1]
            y = self.dec(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(t),
                         memory_key_padding_mask=pad)
            return self.layer(y, memory, tgt_is_causal=True,
                              tgt_mask=nn.Transformer.generate_square_subsequent_mask(t))
    _check(Model(), [tl.randn(2, 4, 16), tl.randn(2, 6, 16)], 0)


def test_a_decoder_in_training_mode_is_refused():
    dec = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec = dec

        def forward(self, t, m):
            return self.dec(t, m)
    model = Model()
    with pytest.raises(tl.onnx.UnsupportedOperatorError, match="training mode"):
        tl.onnx.export(model, (tl.randn(1, 3, 8), tl.randn(1, 4, 8)), io.BytesIO(),
                       training=tl.onnx.TrainingMode.TRAINING)


@pytest.mark.parametrize("kw", [{}, {"nonlinearity": "relu"}, {"bidirectional": True, "num_layers": 2},
                                {"batch_first": True, "bias": False}])
def test_rnn(kw):
    tl.manual_seed(2)
    rnn = nn.RNN(5, 7, **kw)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x, h0):
            y, h = self.rnn(x, h0)
            return y + h.mean()
    batch_first = kw.get("batch_first", False)
    x = tl.randn(2, 3, 5) if batch_first else tl.randn(3, 2, 5)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    _check_pair(Model(), x, tl.randn(layers, 2, 7), batch_first)


def _check_pair(model, x, h0, batch_first):
    """x batched on dim 0 or 1, h0 on dim 1 (PyTorch's layout for the state)."""
    model.eval()
    buf = io.BytesIO()
    bx = 0 if batch_first else 1
    tl.onnx.export(model, (x, h0), buf, input_names=["x", "h0"], output_names=["y"],
                   dynamic_axes={"x": {bx: "batch"}, "h0": {1: "batch"}, "y": {bx: "batch"}})
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    for extra in (0, 2):
        xs = tl.cat([x] + [x.narrow(bx, 0, 1)] * extra, dim=bx)
        hs = tl.cat([h0] + [h0.narrow(1, 0, 1)] * extra, dim=1)
        (got,) = sess.run(None, {"x": xs.numpy(), "h0": hs.numpy()})
        with tl.no_grad():
            want = model(xs, hs).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
