"""nn.RNN, nn.LSTM, nn.GRU and the cells: forward against a NumPy reference written here and
against PyTorch (same weights), gradients by gradcheck in float64 and against PyTorch,
shapes, options and errors."""
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.autograd import gradcheck, gradgradcheck


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_weights(m):
    return {k: v.detach().numpy().astype(np.float64) for k, v in m.state_dict().items()}


def _np_layer(mode, x, h, c, w, sfx, reverse=False):
    """One layer, one direction, in NumPy: x (T, B, in) -> (out (T, B, H), h, c)."""
    wih, whh = w[f"weight_ih{sfx}"], w[f"weight_hh{sfx}"]
    bih = w.get(f"bias_ih{sfx}", 0.0)
    bhh = w.get(f"bias_hh{sfx}", 0.0)
    outs = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        gi, gh = x[t] @ wih.T + bih, h @ whh.T + bhh
        if mode == "LSTM":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
        elif mode == "GRU":
            ir, iz, inn = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = _sig(ir + hr), _sig(iz + hz)
            n = np.tanh(inn + r * hn)
            h = (1 - z) * n + z * h
        else:
            h = np.tanh(gi + gh) if mode == "RNN" else np.maximum(gi + gh, 0)
        outs[t] = h
    return np.stack(outs), h, c


def _np_rnn(mode, x, w, num_layers, bidirectional, hidden):
    d = 2 if bidirectional else 1
    B = x.shape[1]
    out, hs, cs = x, [], []
    for layer in range(num_layers):
        res = []
        for k, sfx in enumerate(["", "_reverse"][:d]):
            y, h, c = _np_layer(mode, out, np.zeros((B, hidden)), np.zeros((B, hidden)), w,
                                f"_l{layer}{sfx}", reverse=k == 1)
            res.append(y)
            hs.append(h)
            cs.append(c)
        out = np.concatenate(res, axis=2)
    return out, np.stack(hs), np.stack(cs)


CASES = [  # (class, mode for the reference, kwargs)
    (nn.LSTM, "LSTM", {}),
    (nn.LSTM, "LSTM", {"num_layers": 2, "bidirectional": True}),
    (nn.LSTM, "LSTM", {"bias": False}),
    (nn.GRU, "GRU", {}),
    (nn.GRU, "GRU", {"num_layers": 2, "bidirectional": True}),
    (nn.GRU, "GRU", {"bias": False}),
    (nn.RNN, "RNN", {}),
    (nn.RNN, "RNN_RELU", {"nonlinearity": "relu", "num_layers": 2}),
    (nn.RNN, "RNN", {"bidirectional": True, "bias": False}),
]


@pytest.mark.parametrize("cls,mode,kw", CASES)
def test_forward_matches_numpy_reference(cls, mode, kw):
    tl.manual_seed(0)
    m = cls(4, 3, **kw)
    x = np.random.default_rng(1).standard_normal((5, 2, 4))
    out, state = m(tl.tensor(x, dtype=tl.float32))
    ref_out, ref_h, ref_c = _np_rnn(mode, x, _np_weights(m), kw.get("num_layers", 1),
                                    kw.get("bidirectional", False), 3)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-5, atol=1e-5)
    h = state[0] if cls is nn.LSTM else state
    np.testing.assert_allclose(h.detach().numpy(), ref_h, rtol=1e-5, atol=1e-5)
    if cls is nn.LSTM:
        np.testing.assert_allclose(state[1].detach().numpy(), ref_c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls,mode,kw", CASES)
def test_gradcheck_input_and_state(cls, mode, kw):
    tl.manual_seed(0)
    m = cls(3, 2, dtype=tl.float64, **kw)
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    x = tl.randn(6, 3, dtype=tl.float64).view(3, 2, 3)[:, :, ::1].requires_grad_()
    h0 = tl.randn(d, 2, 2, dtype=tl.float64, requires_grad=True)
    if cls is nn.LSTM:
        c0 = tl.randn(d, 2, 2, dtype=tl.float64, requires_grad=True)
        fn = lambda x, h0, c0: (lambda o, s: (o, s[0], s[1]))(*m(x, (h0, c0)))
        assert gradcheck(fn, (x, h0, c0))
    else:
        assert gradcheck(lambda x, h0: m(x, h0), (x, h0))


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_gradcheck_weights_and_gradgradcheck(cls):
    tl.manual_seed(0)
    m = cls(2, 2, dtype=tl.float64)
    x = tl.randn(3, 1, 2, dtype=tl.float64)
    params = tuple(m.parameters())
    # gradcheck perturbs its inputs in place, so a closure over the layer sees the changes
    run = lambda *ws: m(x)[0]
    assert gradcheck(run, params)
    assert gradgradcheck(run, params)


def _torch_pair(cls_name, kw, dtype="float32"):
    torch = pytest.importorskip("torch")
    tl.manual_seed(0)
    ours = getattr(nn, cls_name)(4, 3, **kw)
    theirs = getattr(torch.nn, cls_name)(4, 3, **kw)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    return torch, ours, theirs


@pytest.mark.parametrize("cls_name,kw", [
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 2}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 3, "batch_first": True}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
])
def test_matches_torch_forward_and_gradients(cls_name, kw):
    torch, ours, theirs = _torch_pair(cls_name, kw)
    x = np.random.default_rng(2).standard_normal((2, 5, 4)).astype(np.float32)
    g = None
    out, _ = ours(tl.from_numpy(x).requires_grad_())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xt = torch.from_numpy(x).requires_grad_()
        out_t, _ = theirs(xt)
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
    out.backward(tl.from_numpy(g))
    out_t.backward(torch.from_numpy(g))
    for (name, p), (name_t, p_t) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == name_t
        np.testing.assert_allclose(p.grad.numpy(), p_t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_batch_first_unbatched_and_given_state():
    tl.manual_seed(0)
    m = nn.LSTM(4, 3, batch_first=True)
    x = tl.randn(2, 5, 4)
    out, (h, c) = m(x)
    assert out.shape == (2, 5, 3) and h.shape == (1, 2, 3) and c.shape == (1, 2, 3)
    ref, _ = nn.LSTM.forward(m, x[0])                 # unbatched: (L, H_in)
    assert ref.shape == (5, 3)
    np.testing.assert_allclose(ref.detach().numpy(), out[0].detach().numpy(), rtol=1e-6)
    # continuing from the returned state equals running the whole sequence
    o1, s1 = m(x[:, :2])
    o2, _ = m(x[:, 2:], s1)
    np.testing.assert_allclose(tl.cat([o1, o2], 1).detach().numpy(), out.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    gru = nn.GRU(4, 3)
    o, h = gru(tl.randn(5, 4), tl.zeros(1, 3))
    assert o.shape == (5, 3) and h.shape == (1, 3)


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0"] == (80, 5)
    assert shapes["weight_ih_l1_reverse"] == (80, 10) and shapes["weight_hr_l1_reverse"] == (5, 20)
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 5
    bound = 1 / math.sqrt(20)
    for p in m.parameters():
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound and v.std() > bound / 3


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for cls, kw in [("GRU", {"num_layers": 2, "bias": False, "batch_first": True, "dropout": 0.5,
                             "bidirectional": True}),
                    ("LSTM", {"proj_size": 2}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {})]:
        assert repr(getattr(nn, cls)(4, 3, **kw)) == repr(getattr(torch.nn, cls)(4, 3, **kw))
    for cls, kw in [("LSTMCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("GRUCell", {"bias": False})]:
        assert repr(getattr(nn, cls)(3, 4, **kw)) == repr(getattr(torch.nn, cls)(3, 4, **kw))


def test_dropout_between_layers_only_in_training():
    tl.manual_seed(0)
    m = nn.GRU(4, 8, num_layers=2, dropout=0.5)
    x = tl.randn(3, 2, 4)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    assert tl.equal(a, b)
    m.train()
    c, _ = m(x)
    assert not tl.allclose(a, c)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 3, dropout=0.5)


@pytest.mark.parametrize("cell_name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch_and_gradcheck(cell_name):
    torch = pytest.importorskip("torch")
    tl.manual_seed(0)
    ours = getattr(nn, cell_name)(4, 3)
    theirs = getattr(torch.nn, cell_name)(4, 3)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    h = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    if cell_name == "LSTMCell":
        r, rt = ours(tl.from_numpy(x), (tl.from_numpy(h), tl.from_numpy(h))), \
            theirs(torch.from_numpy(x), (torch.from_numpy(h), torch.from_numpy(h)))
        for a, b in zip(r, rt):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
        h1, _ = ours(tl.from_numpy(x[0]))                    # unbatched, zero state
        assert h1.shape == (3,)
    else:
        r, rt = ours(tl.from_numpy(x), tl.from_numpy(h)), theirs(torch.from_numpy(x), torch.from_numpy(h))
        np.testing.assert_allclose(r.detach().numpy(), rt.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert ours(tl.from_numpy(x[0])).shape == (3,)
    cell = getattr(nn, cell_name)(3, 2, dtype=tl.float64)
    xs = tl.randn(2, 3, dtype=tl.float64, requires_grad=True)
    hs = tl.randn(2, 2, dtype=tl.float64, requires_grad=True)
    if cell_name == "LSTMCell":
        assert gradcheck(lambda a, b: cell(a, (b, b * 0.5)), (xs, hs))
    else:
        assert gradcheck(lambda a, b: cell(a, b), (xs, hs))


def test_errors_match_torch():
    m = nn.LSTM(4, 3)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(tl.randn(2, 3, 4, 5))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 5"):
        m(tl.randn(2, 3, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 3\), got \[1, 2, 3\]"):
        m(tl.randn(2, 3, 4), (tl.randn(1, 3, 3), tl.randn(1, 2, 3)))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx and cx should also be 2-D"):
        m(tl.randn(2, 4), (tl.randn(1, 1, 3), tl.randn(1, 3)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 3\), got \[1, 3, 3\]"):
        nn.GRU(4, 3)(tl.randn(5, 2, 4), tl.randn(1, 3, 3))
    c = nn.GRUCell(4, 3)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        c(tl.randn(2, 5))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        c(tl.randn(2, 4), tl.randn(3, 3))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(4, 3, proj_size=3)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(4, 3, nonlinearity="gelu")


def test_lstm_output_modified_in_place_before_backward_raises():
    m = nn.LSTM(3, 2)
    out, _ = m(tl.randn(4, 1, 3))
    out.add_(1)          # the layer's backward needs its outputs
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_lstm_fused_layer_matches_the_step_by_step_graph():
    """The one-op LSTM layer and the step-by-step graph give the same values and gradients."""
    from torchlite.nn.functional.recurrent import _LSTMLayer, _lstm_layer_composite
    tl.manual_seed(3)
    args = [tl.randn(5, 2, 3, dtype=tl.float64), tl.randn(2, 4, dtype=tl.float64),
            tl.randn(2, 4, dtype=tl.float64), tl.randn(16, 3, dtype=tl.float64),
            tl.randn(16, 4, dtype=tl.float64), tl.randn(16, dtype=tl.float64)]
    for reverse in (False, True):
        a = [t.clone().requires_grad_() for t in args]
        b = [t.clone().requires_grad_() for t in args]
        outs_a = _LSTMLayer.apply(*a, reverse)
        outs_b = _lstm_layer_composite(*b, reverse)
        loss_a = sum((o * (k + 1)).sum() for k, o in enumerate(outs_a))
        loss_b = sum((o * (k + 1)).sum() for k, o in enumerate(outs_b))
        loss_a.backward()
        loss_b.backward()
        for ta, tb in zip(outs_a + tuple(a), outs_b + tuple(b)):
            x, y = (ta.grad, tb.grad) if ta.is_leaf else (ta, tb)
            np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_lstm_step_equals_the_tensor_ops(monkeypatch, dtype):
    """The whole-recurrence kernels (torchlite/_core/rnn.pyx, one call per layer and
    direction) at every SIMD level, and the per-step kernels called from Python, give the
    Tensor-op version's outputs and gradients (to rounding), and each does run."""
    from helpers import available_isa_levels, isa_level
    from torchlite._ops import rnn as fused
    dt = getattr(tl, dtype)
    tl.manual_seed(3)
    lstm = tl.nn.LSTM(5, 7, num_layers=2, bidirectional=True).to(dt)
    x = tl.randn(6, 3, 5, dtype=dt)
    g = tl.randn(6, 3, 14, dtype=dt)

    def run():
        lstm.zero_grad()
        xx = x.clone().requires_grad_()
        out, (h, c) = lstm(xx)
        (out * g).sum().backward()
        return [out.detach(), h.detach(), c.detach(), xx.grad] + \
            [p.grad.clone() for p in lstm.parameters()]
    def spy(name, log):
        real = getattr(fused, name)
        monkeypatch.setattr(fused, name, lambda *a: log.append(1) or real(*a))
    whole, steps = [], []
    spy("lstm_forward_steps", whole)
    spy("lstm_step_forward", steps)
    results = {}
    for level in available_isa_levels():
        with isa_level(level):
            results[level] = run()           # the whole recurrence in one kernel call
    assert whole and not steps
    for name in ("lstm_forward_steps", "lstm_backward_steps"):
        monkeypatch.setattr(fused, name, lambda *a: False)
    results["per step"] = run()              # a kernel call per step from Python
    assert steps
    for name in ("lstm_step_forward", "lstm_step_backward"):
        monkeypatch.setattr(fused, name, lambda *a: False)
    want = run()                             # the Tensor ops
    tol = 1e-5 if dtype == "float32" else 1e-12
    for got in results.values():
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


# ---- PackedSequence input -------------------------------------------------------------------------
from torchlite.nn.utils.rnn import pack_padded_sequence, pack_sequence, pad_packed_sequence  # noqa: E402


def _packed_reference(layer, seqs, h0s=None):
    """Each sequence alone through the same layer (batch of one, unpadded): the oracle for what
    packing must give."""
    outs, hs = [], []
    for i, s in enumerate(seqs):
        hx = None
        if h0s is not None:
            hx = tuple(h[:, i:i + 1] for h in h0s) if isinstance(h0s, tuple) else h0s[:, i:i + 1]
        o, h = layer(s.unsqueeze(1), hx)
        outs.append(o[:, 0])
        hs.append(h)
    return outs, hs


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packed_input_equals_each_sequence_alone(mode, bidirectional, enforce_sorted):
    tl.manual_seed(0)
    layer = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=bidirectional).double()
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    seqs = [tl.randn(n, 3, dtype=tl.float64) for n in lengths]
    dirs = 2 if bidirectional else 1
    h0 = tl.randn(2 * dirs, 3, 4, dtype=tl.float64)
    hx = (h0, tl.randn(2 * dirs, 3, 4, dtype=tl.float64)) if mode == "LSTM" else h0
    packed = pack_sequence(seqs, enforce_sorted=enforce_sorted)
    out, h_n = layer(packed, hx)
    padded, got_lengths = pad_packed_sequence(out)
    assert got_lengths.tolist() == lengths
    ref_out, ref_h = _packed_reference(layer, seqs, hx)
    for i, n in enumerate(lengths):
        np.testing.assert_allclose(padded[:n, i].detach().numpy(), ref_out[i].detach().numpy(),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(padded[n:, i].detach().numpy(), 0)
        for got, want in zip(h_n if mode == "LSTM" else (h_n,),
                             ref_h[i] if mode == "LSTM" else (ref_h[i],)):
            np.testing.assert_allclose(got[:, i].detach().numpy(), want[:, 0].detach().numpy(),
                                       rtol=1e-12, atol=1e-14)


def test_packed_input_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6, 2))
    lengths = [4, 6, 1]
    tm = torch.nn.LSTM(2, 3, batch_first=True, bidirectional=True, proj_size=2).double()
    lm = nn.LSTM(2, 3, batch_first=True, bidirectional=True, proj_size=2).double()
    lm.load_state_dict({k: tl.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    tx, lx = torch.tensor(x, requires_grad=True), tl.tensor(x, requires_grad=True)
    to, (th, tc) = tm(torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=True,
                                                              enforce_sorted=False))
    lo, (lh, lc) = lm(pack_padded_sequence(lx, lengths, batch_first=True, enforce_sorted=False))
    tpad = torch.nn.utils.rnn.pad_packed_sequence(to, batch_first=True)[0]
    lpad = pad_packed_sequence(lo, batch_first=True)[0]
    np.testing.assert_allclose(lpad.detach().numpy(), tpad.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(lc.detach().numpy(), tc.detach().numpy(), atol=1e-12)
    ((tpad ** 2).sum() + th.sum() + tc.sum()).backward()
    ((lpad ** 2).sum() + lh.sum() + lc.sum()).backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    for (name, p) in lm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), dict(tm.named_parameters())[name].grad.numpy(),
                                   atol=1e-12, err_msg=name)


# ---- torch.lstm / gru / rnn_tanh / rnn_relu: the whole layers with ATen's signatures -----------------
def test_rnn_tanh_function_matches_a_numpy_recurrence():
    rng = np.random.default_rng(2)
    x, h0 = rng.standard_normal((4, 2, 3)), rng.standard_normal((1, 2, 5))
    w_ih, w_hh = rng.standard_normal((5, 3)), rng.standard_normal((5, 5))
    b_ih, b_hh = rng.standard_normal(5), rng.standard_normal(5)
    out, h_n = tl.rnn_tanh(tl.tensor(x), tl.tensor(h0), [tl.tensor(w) for w in (w_ih, w_hh, b_ih, b_hh)],
                           True, 1, 0.0, False, False, False)
    h, ref = h0[0], []
    for t in range(4):
        h = np.tanh(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        ref.append(h)
    np.testing.assert_allclose(out.numpy(), np.stack(ref), rtol=1e-12)
    np.testing.assert_allclose(h_n.numpy()[0], h, rtol=1e-12)
    relu_out, _ = tl.rnn_relu(tl.tensor(x), tl.tensor(h0), [tl.tensor(w) for w in (w_ih, w_hh)],
                              False, 1, 0.0, False, False, False)
    h = h0[0]
    for t in range(4):
        h = np.maximum(x[t] @ w_ih.T + h @ w_hh.T, 0)
    np.testing.assert_allclose(relu_out.numpy()[-1], h, rtol=1e-12)


@pytest.mark.parametrize("name, mode", [("lstm", "LSTM"), ("gru", "GRU"), ("rnn_tanh", "RNN")])
@pytest.mark.parametrize("packed", [False, True])
def test_whole_layer_functions_match_pytorch(name, mode, packed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    m = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    params = [p.detach() for p in m._flat_weights]
    x = torch.tensor(rng.standard_normal((2, 5, 3)))
    h = [torch.tensor(rng.standard_normal((4, 2, 4))) for _ in range(2)]
    hx = h if mode == "LSTM" else h[0]
    lhx = [tl.tensor(t.numpy()) for t in h] if mode == "LSTM" else tl.tensor(h[0].numpy())
    lparams = [tl.tensor(p.numpy()) for p in params]
    if packed:
        pk = torch.nn.utils.rnn.pack_padded_sequence(x, [5, 3], batch_first=True)
        want = getattr(torch, name)(pk.data, pk.batch_sizes, hx, params, True, 2, 0.0, False, True)
        got = getattr(tl, name)(tl.tensor(pk.data.numpy()), tl.tensor(pk.batch_sizes.numpy()), lhx,
                                lparams, True, 2, 0.0, False, True)
    else:
        want = getattr(torch, name)(x, hx, params, True, 2, 0.0, False, True, True)
        got = getattr(tl, name)(tl.tensor(x.numpy()), lhx, lparams, True, 2, 0.0, False, True, True)
    assert len(got) == len(want)
    for a, b in zip(want, got):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-12)


def test_whole_layer_function_errors():
    with pytest.raises(RuntimeError, match="expected 4 per layer"):
        tl.gru(tl.zeros(2, 1, 3), tl.zeros(1, 1, 4), [tl.zeros(12, 3)] * 3, True, 1, 0.0, False, False,
               False)
    with pytest.raises(TypeError, match="missing required argument 'batch_first'"):
        tl.gru(tl.zeros(2, 1, 3), tl.zeros(1, 1, 4), [tl.zeros(12, 3), tl.zeros(12, 4)], False, 1,
               0.0, False, False)


@pytest.mark.parametrize("cls", [nn.RNN, nn.LSTM, nn.GRU])
def test_an_input_of_another_dtype_than_the_weights_is_pytorchs_value_error(cls):
    m = cls(3, 4)
    with pytest.raises(ValueError, match=r"RNN input dtype \(torchlite.float64\) does not match weight "
                                         r"dtype \(torchlite.float32\)"):
        m(tl.ones(2, 1, 3, dtype=tl.float64))
    out = m.double()(tl.ones(2, 1, 3, dtype=tl.float64))[0]
    assert out.dtype is tl.float64
