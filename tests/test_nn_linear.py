"""F.linear / F.bilinear and the Linear, Bilinear, Identity, Flatten, Unflatten modules:
values vs NumPy (and torch with copied weights), gradients (gradcheck), bad shapes."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck


def _t(a, requires_grad=False):
    return tl.tensor(np.asarray(a), requires_grad=requires_grad)


def _bilinear_ref(x1, x2, w, b):
    y = np.einsum("...i,oij,...j->...o", x1, w, x2)
    return y if b is None else y + b


# every function of the family and its gradcheck case (float64, small, non-contiguous inputs)
def _noncontig(shape, seed):
    """A float64 tensor of `shape` that is a transposed (non-contiguous) view."""
    a = np.random.default_rng(seed).standard_normal(shape[::-1])
    return tl.tensor(a).t() if len(shape) == 2 else tl.tensor(a).permute(*range(len(shape))[::-1])


GRAD_CASES = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [(3, 4), (2, 4), (2,)]),
    "linear_nobias": (lambda x, w: F.linear(x, w), [(3, 4), (2, 4)]),
    "linear_3d": (lambda x, w, b: F.linear(x, w, b), [(2, 3, 4), (2, 4), (2,)]),
    "bilinear": (lambda x1, x2, w, b: F.bilinear(x1, x2, w, b), [(3, 2), (3, 4), (2, 2, 4), (2,)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    inputs = [_noncontig(s, i).requires_grad_() for i, s in enumerate(shapes)]
    assert not inputs[0].is_contiguous() or len(shapes[0]) == 1
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xshape", [(5, 4), (4,), (2, 3, 4), (2, 1, 3, 4), (0, 4)])
def test_linear_values_vs_numpy(dtype, xshape, threads):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xshape).astype(dtype)
    w = rng.standard_normal((3, 4)).astype(dtype)
    b = rng.standard_normal(3).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(F.linear(_t(x), _t(w), _t(b)).numpy(), x @ w.T + b, rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(F.linear(_t(x), _t(w)).numpy(), x @ w.T, rtol=tol, atol=tol)


def test_linear_noncontiguous_and_expanded_inputs():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 5))
    w = rng.standard_normal((3, 5))
    xt = _t(x).transpose(0, 1)                     # (6, 4, 5), non-contiguous
    np.testing.assert_allclose(F.linear(xt, _t(w), _t(np.ones(3))).numpy(),
                               x.transpose(1, 0, 2) @ w.T + 1, rtol=1e-12)
    xs = _t(x)[:, ::2]                              # stepped slice
    np.testing.assert_allclose(F.linear(xs, _t(w)).numpy(), x[:, ::2] @ w.T, rtol=1e-12)
    xe = _t(x[0, 0]).expand(7, 5)                   # stride-0 rows
    np.testing.assert_allclose(F.linear(xe, _t(w)).numpy(), np.tile(x[0, 0] @ w.T, (7, 1)),
                               rtol=1e-12)


def test_linear_graph_is_torchs():
    x = tl.randn(4, 3)
    lin = nn.Linear(3, 2)
    y = lin(x)
    assert type(y.grad_fn).__name__ == "AddmmBackward0"
    names = [type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions]
    assert names == ["AccumulateGrad", None, "TBackward0"]
    assert type(nn.Linear(3, 2, bias=False)(x).grad_fn).__name__ == "MmBackward0"
    assert type(lin(tl.randn(2, 4, 3)).grad_fn).__name__ == "ViewBackward0"


def test_linear_bad_shapes_and_types():
    w, b = tl.randn(512, 784), tl.randn(512)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(64x100 and 784x512\)"):
        F.linear(tl.randn(64, 100), w, b)
    with pytest.raises(RuntimeError, match=r"\(6x100 and 784x512\)"):
        F.linear(tl.randn(2, 3, 100), w, b)
    with pytest.raises(RuntimeError, match=r"\(64x100 and 784x512\)"):
        nn.Linear(784, 512)(tl.randn(64, 100))
    with pytest.raises(RuntimeError, match="at least 1D"):
        F.linear(tl.tensor(1.0), w)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(tl.randn(2, 784, dtype=tl.float64), w, b)
    with pytest.raises(RuntimeError, match="expanded size"):
        F.linear(tl.randn(2, 784), w, tl.randn(3))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.linear([1.0], w)


def test_linear_matches_torch_with_copied_weights():
    torch = pytest.importorskip("torch")
    ours = nn.Linear(6, 4)
    theirs = torch.nn.Linear(6, 4)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))
    x = np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32)
    xo, xt = _t(x, True), torch.from_numpy(x).requires_grad_()
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (yo ** 2).sum().backward()
    (yt ** 2).sum().backward()
    for a, b in ((xo.grad, xt.grad), (ours.weight.grad, theirs.weight.grad),
                 (ours.bias.grad, theirs.bias.grad)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    assert repr(ours) == repr(theirs)
    assert repr(nn.Linear(2, 3, bias=False)) == repr(torch.nn.Linear(2, 3, bias=False))


def test_linear_default_init_distribution():
    tl.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)                        # kaiming_uniform_(a=sqrt(5)) on fan_in 400
    w = lin.weight.detach().numpy()
    b = lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.01 * bound
    assert abs(w.mean()) < 0.01 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.5 * bound / np.sqrt(3)
    lin2 = nn.Linear(3, 2, dtype=tl.float64)
    assert lin2.weight.dtype == tl.float64 and lin2.bias.dtype == tl.float64


def test_bilinear_values_grad_and_repr():
    rng = np.random.default_rng(4)
    x1, x2 = rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 5))
    w, b = rng.standard_normal((4, 2, 5)), rng.standard_normal(4)
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(w), _t(b)).numpy(),
                               _bilinear_ref(x1, x2, w, b), rtol=1e-12)
    np.testing.assert_allclose(F.bilinear(_t(x1[0, 0]), _t(x2[0, 0]), _t(w)).numpy(),
                               _bilinear_ref(x1[0, 0], x2[0, 0], w, None), rtol=1e-12)
    m = nn.Bilinear(2, 5, 4)
    bound = 1 / np.sqrt(2)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert tuple(m(_t(x1).float(), _t(x2).float()).shape) == (2, 3, 4)
    torch = pytest.importorskip("torch")
    assert repr(m) == repr(torch.nn.Bilinear(2, 5, 4))
    tw, tb = torch.from_numpy(w), torch.from_numpy(b)
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(w), _t(b)).numpy(),
                               torch.nn.functional.bilinear(torch.from_numpy(x1),
                                                            torch.from_numpy(x2), tw, tb).numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("args, msg", [
    (((2, 3), (3, 4), (5, 3, 4), None),
     "input batch dimensions do not match at dim 0: got 2 and 3"),
    (((2, 3), (2, 4), (5, 2, 4), None),
     "input1 size does not match weight size: got 3 but expected 2"),
    (((2, 3), (2, 4), (5, 3, 5), None),
     "input2 size does not match weight size: got 4 but expected 5"),
    (((2, 3), (2, 4), (5, 3, 4), (4,)),
     "bias size does not match weight size: got 4 but expected 5"),
    (((2, 3), (2, 2, 4), (5, 3, 4), None), "input dimensions do not match: got 2 and 3"),
])
def test_bilinear_errors_like_torch(args, msg):
    tensors = [None if s is None else tl.zeros(*s) for s in args]
    with pytest.raises(RuntimeError, match="bilinear\\(\\): " + msg):
        F.bilinear(*tensors)


def test_identity_flatten_unflatten():
    x = tl.randn(2, 3, 4, 5)
    assert nn.Identity(1, foo=2)(x) is x
    np.testing.assert_array_equal(nn.Flatten()(x).numpy(), x.numpy().reshape(2, 60))
    np.testing.assert_array_equal(nn.Flatten(0, 2)(x).numpy(), x.numpy().reshape(24, 5))
    u = nn.Unflatten(1, (3, 20))(nn.Flatten()(x))
    np.testing.assert_array_equal(u.numpy(), x.numpy().reshape(2, 3, 20))
    assert tuple(nn.Unflatten(-1, [5, -1])(tl.zeros(2, 10)).shape) == (2, 5, 2)
    with pytest.raises(TypeError, match="found element of type float at pos 1"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="must be a tuple of ints"):
        nn.Unflatten(1, 4)
    torch = pytest.importorskip("torch")
    assert repr(nn.Flatten(0, 2)) == repr(torch.nn.Flatten(0, 2))
    assert repr(nn.Unflatten(1, (3, 20))) == repr(torch.nn.Unflatten(1, (3, 20)))
    assert repr(nn.Identity()) == repr(torch.nn.Identity())


def test_linear_property_shapes_and_strides():
    """Any leading shape, any input layout (transposed, stepped): F.linear equals x @ w.T + b."""
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=40, deadline=None)
    @given(lead=st.lists(st.integers(0, 4), min_size=0, max_size=3),
           in_f=st.integers(1, 5), out_f=st.integers(1, 4), step=st.integers(1, 2),
           transpose=st.booleans(), bias=st.booleans())
    def check(lead, in_f, out_f, step, transpose, bias):
        rng = np.random.default_rng(len(lead) * 100 + in_f * 10 + out_f)
        full = rng.standard_normal(tuple(lead) + (in_f * step,))
        x_np = full[..., ::step]
        x = _t(full)[..., ::step]
        if transpose and len(lead) >= 2:
            x_np = np.swapaxes(x_np, 0, 1)
            x = x.transpose(0, 1)
        w = rng.standard_normal((out_f, in_f))
        b = rng.standard_normal(out_f) if bias else None
        y = F.linear(x, _t(w), None if b is None else _t(b))
        ref = x_np @ w.T + (0 if b is None else b)
        assert tuple(y.shape) == ref.shape
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-12)

    check()


def test_mlp_training_step_matches_torch(threads):
    """Forward, backward and an SGD update of a small MLP agree with torch's (copied weights)."""
    torch = pytest.importorskip("torch")
    sizes = [(12, 16), (16, 16), (16, 3)]
    ours = nn.Sequential(*[nn.Linear(i, o) for i, o in sizes])
    theirs = torch.nn.Sequential(*[torch.nn.Linear(i, o) for i, o in sizes])
    with torch.no_grad():
        for a, b in zip(ours.parameters(), theirs.parameters()):
            b.copy_(torch.from_numpy(a.detach().numpy()))
    x = np.random.default_rng(5).standard_normal((8, 12)).astype(np.float32)

    def step(model, lib, inp):
        h = inp
        for i, layer in enumerate(model):
            h = layer(h)
            if i < len(model) - 1:
                h = lib.relu(h)
        loss = (h ** 2).mean()
        loss.backward()
        with lib.no_grad():
            for p in model.parameters():
                p.sub_(p.grad, alpha=0.1)
        return loss.item()

    for _ in range(3):
        assert step(ours, tl, tl.from_numpy(x)) == pytest.approx(
            step(theirs, torch, torch.from_numpy(x)), rel=1e-5)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _grouped_cases(rng):
    a2, b3 = rng.standard_normal((10, 8)), rng.standard_normal((3, 8, 16))
    a3, b2 = rng.standard_normal((2, 8, 16)), rng.standard_normal((16, 32))
    a2k, b2k = rng.standard_normal((8, 16)), rng.standard_normal((16, 24))
    return [("2d x 3d", a2, b3, [3, 7, 10]), ("2d x 3d, tail past the last offset", a2, b3, [3, 7, 8]),
            ("3d x 2d", a3, b2, [16, 32]), ("2d x 2d", a2k, b2k, [8, 16]),
            ("3d x 3d", rng.standard_normal((3, 4, 8)), b3, None)]


def test_grouped_mm_against_numpy_and_pytorch():
    """F.grouped_mm's four operand forms against per-group NumPy products (rows or columns past
    the last offset are 0 here), its gradient by gradcheck, and PyTorch's CPU kernel where
    installed (it wants mat_b column-major and leaves the tail unwritten)."""
    rng = np.random.default_rng(0)
    for name, a, b, offs in _grouped_cases(rng):
        o = None if offs is None else tl.tensor(offs, dtype=tl.int32)
        got = F.grouped_mm(tl.tensor(a), tl.tensor(b), offs=o).numpy()
        starts = [0] + (offs or [])[:-1]
        if offs is None:
            want = a @ b
        elif a.ndim == 2 and b.ndim == 3:
            want = np.zeros((a.shape[0], b.shape[2]))
            for g, (s, e) in enumerate(zip(starts, offs)):
                want[s:e] = a[s:e] @ b[g]
        elif a.ndim == 3:
            want = np.zeros((a.shape[1], b.shape[1]))
            for g, (s, e) in enumerate(zip(starts, offs)):
                want[:, s:e] = a[g] @ b[:, s:e]
        else:
            want = np.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, offs)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    a = tl.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    b = tl.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    assert tl.autograd.gradcheck(lambda x, y: F.grouped_mm(x, y, offs=tl.tensor([2, 5], dtype=tl.int32)), (a, b))
    with pytest.raises(RuntimeError, match="Bias not supported yet"):
        F.grouped_mm(a, b, offs=tl.tensor([2, 5], dtype=tl.int32), bias=tl.zeros(4))
    with pytest.raises(RuntimeError, match="Offsets have to be int32"):
        F.grouped_mm(a, b, offs=tl.tensor([2, 5]))
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        F.grouped_mm(a, b)
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    if not hasattr(tf, "grouped_mm"):
        pytest.skip("this PyTorch has no grouped_mm")
    compared = []
    for name, a_, b_, offs in _grouped_cases(np.random.default_rng(0)):
        jagged = a_.shape[0] if a_.ndim == 2 and b_.ndim == 3 else b_.shape[1] if a_.ndim == 3 else a_.shape[1]
        if offs is not None and offs[-1] < jagged:
            continue                                  # (PyTorch leaves the tail unwritten)
        compared.append(name)
        ta = torch.tensor(a_, dtype=torch.float32)
        tb = torch.tensor(b_, dtype=torch.float32).transpose(-2, -1).contiguous().transpose(-2, -1)
        to = None if offs is None else torch.tensor(offs, dtype=torch.int32)
        ours = F.grouped_mm(tl.tensor(a_, dtype=tl.float32), tl.tensor(b_, dtype=tl.float32),
                            offs=None if offs is None else tl.tensor(offs, dtype=tl.int32))
        np.testing.assert_allclose(ours.numpy(), tf.grouped_mm(ta, tb, offs=to).numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=name)
    assert len(compared) == 4
