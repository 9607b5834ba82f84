"""The torch.* spellings of nn.functional's ops (torchlite/nn/functional/aten.py): each with
ATen's signature, checked against PyTorch's own top-level function where PyTorch is installed
and, everywhere, against the nn.functional call it stands for (the argument orders and integer
reductions that differ are the point)."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite import nn
from torchlite.nn.functional import aten

try:
    import torch
except ImportError:          # the PyTorch comparisons skip
    torch = None


def _rand(*shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.1 if positive else a


def _lib_args(lib, args):
    """NumPy arrays as the library's tensors (int64 arrays stay integer), tuples of them too,
    other args as given."""
    conv = (lambda a: lib.tensor(a)) if lib is tl else (lambda a: torch.from_numpy(a.copy()))
    return [conv(a) if isinstance(a, np.ndarray) else
            tuple(conv(x) for x in a) if isinstance(a, tuple) and a and isinstance(a[0], np.ndarray) else a
            for a in args]


X4 = _rand(2, 3, 6, 6)
W4 = _rand(4, 3, 3, 3, seed=1)
X3 = _rand(2, 3, 8, seed=2)
W3 = _rand(4, 3, 3, seed=3)
X5 = _rand(1, 2, 4, 4, 4, seed=4)
W5 = _rand(3, 2, 2, 2, 2, seed=5)
IDX = np.array([[1, 3], [0, 4]], dtype=np.int64)
EMB = _rand(5, 3, seed=6)
C3, RM, RV = _rand(3, seed=7), _rand(3, seed=8), _rand(3, seed=9, positive=True)
A, B = _rand(4, 5, seed=10), _rand(4, 5, seed=11)
T01 = (np.random.default_rng(12).random((4, 5)) > 0.5).astype(np.float32)
SIGN = np.where(np.random.default_rng(13).random(4) > 0.5, 1.0, -1.0).astype(np.float32)

H2, C2 = _rand(2, 3, seed=16), _rand(2, 3, seed=17)
WI4, WH4, BI4, BH4 = _rand(12, 5, seed=18), _rand(12, 3, seed=19), _rand(12, seed=20), _rand(12, seed=21)
WI3, WH3, BI3, BH3 = _rand(9, 5, seed=22), _rand(9, 3, seed=23), _rand(9, seed=24), _rand(9, seed=25)
WI1, WH1, BI1, BH1 = _rand(3, 5, seed=26), _rand(3, 3, seed=27), _rand(3, seed=28), _rand(3, seed=29)
GRID = np.random.default_rng(30).uniform(-1.1, 1.1, (2, 3, 4, 2)).astype(np.float32)
GRID3 = np.random.default_rng(31).uniform(-1, 1, (1, 2, 3, 2, 3)).astype(np.float32)
THETA = _rand(2, 2, 3, seed=32)


def _cell(layer, weights, x, hx):
    """The nn cell layer with the given (w_ih, w_hh[, b_ih, b_hh]) applied to x and hx."""
    with tl.no_grad():
        for p, w in zip((layer.weight_ih, layer.weight_hh, layer.bias_ih, layer.bias_hh), weights):
            p.copy_(tl.tensor(w))
    hx = tuple(tl.tensor(h) for h in hx) if isinstance(hx, tuple) else tl.tensor(hx)
    return layer(tl.tensor(x), hx)


# name -> (positional arguments in ATen's order, the same call through nn.functional)
TBC = _rand(7, 2, 3, seed=7)                     # (time, batch, channels)
TBC_W, TBC_B = _rand(3, 3, 4, seed=8), _rand(4, seed=9)

CASES = {
    "conv1d": ((X3, W3, None, 2, 1), lambda: F.conv1d(tl.tensor(X3), tl.tensor(W3), None, 2, 1)),
    "conv_tbc": ((TBC, TBC_W, TBC_B, 1), lambda: F.conv1d(
        tl.tensor(TBC).permute(1, 2, 0), tl.tensor(TBC_W).permute(2, 1, 0), tl.tensor(TBC_B),
        padding=1).permute(2, 0, 1)),
    "conv2d": ((X4, W4, C3[:1].repeat(4), 1, 1, 1, 1),
               lambda: F.conv2d(tl.tensor(X4), tl.tensor(W4), tl.tensor(C3[:1].repeat(4)), 1, 1)),
    "conv3d": ((X5, W5), lambda: F.conv3d(tl.tensor(X5), tl.tensor(W5))),
    "conv_transpose1d": ((X3, W3.transpose(1, 0, 2).copy(), None, 2),
                         lambda: F.conv_transpose1d(tl.tensor(X3), tl.tensor(W3.transpose(1, 0, 2).copy()),
                                                    None, 2)),
    "conv_transpose2d": ((X4, W4.transpose(1, 0, 2, 3).copy(), None, 2, 1, 1),
                         lambda: F.conv_transpose2d(tl.tensor(X4), tl.tensor(W4.transpose(1, 0, 2, 3).copy()),
                                                    None, 2, 1, 1)),
    "conv_transpose3d": ((X5, W5.transpose(1, 0, 2, 3, 4).copy()),
                         lambda: F.conv_transpose3d(tl.tensor(X5), tl.tensor(W5.transpose(1, 0, 2, 3, 4).copy()))),
    "max_pool1d": ((X3, 2), lambda: F.max_pool1d(tl.tensor(X3), 2)),          # stride () = kernel
    "max_pool2d": ((X4, 3, 2, 1), lambda: F.max_pool2d(tl.tensor(X4), 3, 2, 1)),
    "max_pool3d": ((X5, 2), lambda: F.max_pool3d(tl.tensor(X5), 2)),
    "max_pool1d_with_indices": ((X3, 3, 2), lambda: F.max_pool1d(tl.tensor(X3), 3, 2, return_indices=True)),
    "avg_pool1d": ((X3, 3, 1, 1, False, False),
                   lambda: F.avg_pool1d(tl.tensor(X3), 3, 1, 1, count_include_pad=False)),
    "adaptive_avg_pool1d": ((X3, 3), lambda: F.adaptive_avg_pool1d(tl.tensor(X3), 3)),
    "adaptive_max_pool1d": ((X3, 3), lambda: F.adaptive_max_pool1d(tl.tensor(X3), 3, return_indices=True)),
    "pixel_shuffle": ((_rand(1, 8, 2, 3), 2), lambda: F.pixel_shuffle(tl.tensor(_rand(1, 8, 2, 3)), 2)),
    "pixel_unshuffle": ((_rand(1, 2, 4, 6), 2), lambda: F.pixel_unshuffle(tl.tensor(_rand(1, 2, 4, 6)), 2)),
    "channel_shuffle": ((_rand(1, 6, 2, 2), 3), lambda: F.channel_shuffle(tl.tensor(_rand(1, 6, 2, 2)), 3)),
    "dropout": ((A, 0.5, False), lambda: tl.tensor(A)),                       # train=False: identity
    "alpha_dropout": ((A, 0.5, False), lambda: tl.tensor(A)),
    "feature_alpha_dropout": ((X4, 0.5, False), lambda: tl.tensor(X4)),
    "feature_dropout": ((X4, 0.3, False), lambda: tl.tensor(X4)),
    "embedding": ((EMB, IDX), lambda: F.embedding(tl.tensor(IDX), tl.tensor(EMB))),
    "embedding_bag": ((EMB, np.array([1, 3, 0, 4, 2]), np.array([0, 2])),
                      lambda: (F.embedding_bag(tl.tensor(np.array([1, 3, 0, 4, 2])), tl.tensor(EMB),
                                               tl.tensor(np.array([0, 2])), mode="sum"),
                               tl.tensor([0, 0, 1, 1, 1]), tl.tensor([2, 3]), tl.tensor([2, 3]))),
    "layer_norm": ((X3, (8,), None, None, 1e-5, True), lambda: F.layer_norm(tl.tensor(X3), (8,))),
    "rms_norm": ((X3, (8,), None, 1e-6), lambda: F.rms_norm(tl.tensor(X3), (8,), None, 1e-6)),
    "group_norm": ((X4, 3, C3, RM, 1e-5, True),
                   lambda: F.group_norm(tl.tensor(X4), 3, tl.tensor(C3), tl.tensor(RM))),
    "batch_norm": ((X4, C3, RM, RM, RV, False, 0.1, 1e-5, True),             # weight, bias, then stats
                   lambda: F.batch_norm(tl.tensor(X4), tl.tensor(RM), tl.tensor(RV), tl.tensor(C3),
                                        tl.tensor(RM), False, 0.1, 1e-5)),
    "instance_norm": ((X4, C3, RM, None, None, True, 0.1, 1e-5, True),
                      lambda: F.instance_norm(tl.tensor(X4), None, None, tl.tensor(C3), tl.tensor(RM))),
    "prelu": ((X4, np.array([0.25], np.float32)), lambda: F.prelu(tl.tensor(X4), tl.tensor([0.25]))),
    "selu": ((A,), lambda: F.selu(tl.tensor(A))),
    "celu": ((A, 0.7), lambda: F.celu(tl.tensor(A), 0.7)),
    "threshold": ((A, 0.1, -2.0), lambda: F.threshold(tl.tensor(A), 0.1, -2.0)),
    "rrelu": ((A,), lambda: F.rrelu(tl.tensor(A), training=False)),          # ATen's default: eval
    "hardshrink": ((A, 0.6), lambda: F.hardshrink(tl.tensor(A), 0.6)),
    "bilinear": ((A, B, _rand(3, 5, 5, seed=14), _rand(3, seed=15)),
                 lambda: F.bilinear(tl.tensor(A), tl.tensor(B), tl.tensor(_rand(3, 5, 5, seed=14)),
                                    tl.tensor(_rand(3, seed=15)))),
    "cosine_similarity": ((A, B, 1), lambda: F.cosine_similarity(tl.tensor(A), tl.tensor(B), 1)),
    "pairwise_distance": ((A, B, 1.5), lambda: F.pairwise_distance(tl.tensor(A), tl.tensor(B), 1.5)),
    "pdist": ((A, 2.0), lambda: F.pdist(tl.tensor(A))),
    "kl_div": ((np.log(T01 * 0.5 + 0.25), T01 * 0.5 + 0.2, 2),                 # 2: 'sum'
               lambda: F.kl_div(tl.tensor(np.log(T01 * 0.5 + 0.25)), tl.tensor(T01 * 0.5 + 0.2), reduction="sum")),
    "binary_cross_entropy_with_logits": ((A, T01, None, None, 0),
                                         lambda: F.binary_cross_entropy_with_logits(tl.tensor(A), tl.tensor(T01),
                                                                                    reduction="none")),
    "margin_ranking_loss": ((A[:, 0].copy(), B[:, 0].copy(), SIGN, 0.2, 2),
                            lambda: F.margin_ranking_loss(tl.tensor(A[:, 0].copy()), tl.tensor(B[:, 0].copy()),
                                                          tl.tensor(SIGN), 0.2, reduction="sum")),
    "hinge_embedding_loss": ((A[:, 0].copy(), SIGN, 0.5),
                             lambda: F.hinge_embedding_loss(tl.tensor(A[:, 0].copy()), tl.tensor(SIGN), 0.5,
                                                            reduction="none")),
    "cosine_embedding_loss": ((A, B, SIGN, 0.1, 0),
                              lambda: F.cosine_embedding_loss(tl.tensor(A), tl.tensor(B), tl.tensor(SIGN), 0.1,
                                                              reduction="none")),
    "triplet_margin_loss": ((A, B, A[::-1].copy(), 1.0, 2.0, 1e-6, True, 1),
                            lambda: F.triplet_margin_loss(tl.tensor(A), tl.tensor(B), tl.tensor(A[::-1].copy()),
                                                          swap=True)),
    "poisson_nll_loss": ((A, np.abs(B), True, True, 1e-8, 1),
                         lambda: F.poisson_nll_loss(tl.tensor(A), tl.tensor(np.abs(B)), True, True)),
    "constant_pad_nd": ((X3, (1, 2), 0.5), lambda: F.pad(tl.tensor(X3), (1, 2), value=0.5)),
    "lstm_cell": ((A[:2], (H2, C2), WI4, WH4, BI4, BH4),
                  lambda: _cell(nn.LSTMCell(5, 3), (WI4, WH4, BI4, BH4), A[:2], (H2, C2))),
    "gru_cell": ((A[:2], H2, WI3, WH3, BI3, BH3), lambda: _cell(nn.GRUCell(5, 3), (WI3, WH3, BI3, BH3), A[:2], H2)),
    "rnn_tanh_cell": ((A[:2], H2, WI1, WH1), lambda: _cell(nn.RNNCell(5, 3, bias=False), (WI1, WH1), A[:2], H2)),
    "rnn_relu_cell": ((A[:2], H2, WI1, WH1, BI1, BH1),
                      lambda: _cell(nn.RNNCell(5, 3, nonlinearity="relu"), (WI1, WH1, BI1, BH1), A[:2], H2)),
    "grid_sampler": ((X4, GRID, 1, 2, True), lambda: F.grid_sample(tl.tensor(X4), tl.tensor(GRID), "nearest",
                                                                   "reflection", True)),
    "grid_sampler_2d": ((X4, GRID, 0, 1, False), lambda: F.grid_sample(tl.tensor(X4), tl.tensor(GRID), "bilinear",
                                                                       "border", False)),
    "grid_sampler_3d": ((X5, GRID3, 0, 0, False), lambda: F.grid_sample(tl.tensor(X5), tl.tensor(GRID3),
                                                                         "bilinear", "zeros", False)),
    "affine_grid_generator": ((THETA, [2, 3, 4, 5], False),
                              lambda: F.affine_grid(tl.tensor(THETA), [2, 3, 4, 5], align_corners=False)),
}


def _close(got, want, what):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), what
        for g, w in zip(got, want):
            _close(g, w, what)
        return
    g = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    w = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-5, atol=2e-6, err_msg=what)


def test_every_name_is_a_case_and_reachable_from_torchlite():
    assert set(CASES) <= set(aten.NAMES)
    assert {n for n, m in tl._LAZY_NAMES.items() if m == "nn.functional.aten"} == set(aten.NAMES)
    for name in aten.NAMES:
        assert getattr(tl, name) is getattr(aten, name), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_aten_spelling_matches_nn_functional(name):
    args, via_functional = CASES[name]
    _close(getattr(tl, name)(*_lib_args(tl, args)), via_functional(), name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_aten_spelling_matches_pytorch(name):
    if torch is None:
        pytest.skip("PyTorch is not installed")
    args, _ = CASES[name]
    want = getattr(torch, name)(*_lib_args(torch, args))
    got = getattr(tl, name)(*_lib_args(tl, args))
    if name == "lstm_cell":
        _close(got, tuple(w.numpy() for w in want), name)
        return
    if name == "embedding_bag":     # (its index tensors: test_nn_sparse)
        _close(got[0], want[0].numpy(), name)
        return
    if name in ("max_pool1d_with_indices", "adaptive_max_pool1d"):
        _close(got[0], want[0].numpy(), name)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        return
    _close(got, want.numpy(), name)


def test_conv_tbc_checks_and_gradients():
    """conv_tbc: PyTorch's messages for bad shapes, a contiguous (time, batch, out) result, and
    gradients against float64 finite differences."""
    x, w, b = tl.tensor(TBC), tl.tensor(TBC_W), tl.tensor(TBC_B)
    for args, msg in (((x[0], w, b), "Input must have 3 dims"), ((x, w[0], b), "Weight tensor must have 3"),
                      ((x, w, b[None]), "Bias must be 1-D"), ((x, w[:, :2], b), "Input dim 2"),
                      ((x, w, tl.zeros(5)), "Bias size must equal")):
        with pytest.raises(RuntimeError, match=msg):
            tl.conv_tbc(*args)
    y = tl.conv_tbc(x, w, b, 2)
    assert y.shape == (9, 2, 4) and y.is_contiguous()
    xd, wd, bd = (t.double().requires_grad_() for t in (x, w, b))
    assert tl.autograd.gradcheck(lambda *a: tl.conv_tbc(*a, 1), (xd, wd, bd))


def test_dropout_spellings_train_and_in_place():
    tl.manual_seed(0)
    x = tl.ones(200, 50)
    y = tl.dropout(x, 0.5, True)
    kept = (y != 0).float().mean().item()
    assert 0.45 < kept < 0.55 and set(np.unique(y.numpy())) <= {0.0, 2.0}
    z = tl.ones(4, 6, 5, 5)
    tl.feature_dropout_(z, 0.5, True)
    per_channel = z.reshape(4, 6, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()    # whole channels
    w = tl.ones(3)
    assert tl.dropout_(w, 0.0, True) is w


def test_losses_default_to_no_reduction_as_pytorchs_top_level():
    a, b, s = tl.tensor(A[:, 0].copy()), tl.tensor(B[:, 0].copy()), tl.tensor(SIGN)
    assert tl.hinge_embedding_loss(a, s).shape == (4,)
    assert tl.margin_ranking_loss(a, b, s).shape == (4,)
    assert tl.kl_div(tl.tensor(A), tl.tensor(T01)).shape == (4, 5)
    assert tl.binary_cross_entropy_with_logits(tl.tensor(A), tl.tensor(T01)).shape == (4, 5)
    assert tl.triplet_margin_loss(tl.tensor(A), tl.tensor(B), tl.tensor(A[::-1].copy())).shape == (4,)
    if torch is not None:
        assert torch.hinge_embedding_loss(torch.from_numpy(A[:, 0].copy()), torch.from_numpy(SIGN)).shape == (4,)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="reduction must be 0"):
        tl.kl_div(tl.zeros(2), tl.ones(2), 5)
    with pytest.raises(RuntimeError, match="feature_dropout"):
        tl.feature_dropout(tl.ones(4), 0.5, True)
    with pytest.raises(TypeError):
        tl.dropout(tl.ones(2), 0.5)                 # ATen's train is required


def test_native_norms_give_the_statistics():
    x = tl.tensor(X4, dtype=tl.float64).requires_grad_()
    a = X4.astype(np.float64)
    out, mean, rstd = tl.native_layer_norm(x, (6, 6), None, None, 1e-5)
    m = a.mean((2, 3), keepdims=True)
    r = 1 / np.sqrt(a.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), (a - m) * r, rtol=1e-10, atol=1e-12)
    assert out.requires_grad and not mean.requires_grad and not rstd.requires_grad
    out, mean, rstd = tl.native_group_norm(x, None, None, 2, 3, 36, 3, 1e-5)
    g = a.reshape(2, 3, -1)
    np.testing.assert_allclose(mean.detach().numpy(), g.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(rstd.detach().numpy(), 1 / np.sqrt(g.var(-1) + 1e-5), rtol=1e-12)
    assert mean.requires_grad           # PyTorch's group-norm statistics are differentiable
    rm, rv = tl.zeros(3, dtype=tl.float64), tl.ones(3, dtype=tl.float64)
    out, save_mean, invstd = tl.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    np.testing.assert_allclose(save_mean.numpy(), a.mean((0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(a.var((0, 2, 3)) + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.1 * a.mean((0, 2, 3)), rtol=1e-12)
    _, e1, e2 = tl.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    assert e1.shape == (0,) and e2.shape == (0,)
    assert len(tl._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5)) == 3
    tl.manual_seed(0)
    y, keep = tl.native_dropout(tl.ones(1000), 0.25, True)
    assert keep.dtype is tl.bool
    np.testing.assert_allclose(y.numpy(), keep.numpy() / 0.75, rtol=1e-6)
    assert 0.7 < keep.float().mean().item() < 0.8
    y, keep = tl.native_dropout(tl.ones(3), 0.25, False)
    assert keep.all() and y.tolist() == [1.0, 1.0, 1.0]
    if torch is not None:
        t = torch.tensor(a)
        for ours, theirs in zip(tl.native_layer_norm(x, (6, 6), None, None, 1e-5),
                                torch.native_layer_norm(t, (6, 6), None, None, 1e-5)):
            np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
