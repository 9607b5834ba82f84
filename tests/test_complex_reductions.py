"""The reductions PyTorch defines on complex tensors beyond sum/mean/prod/cumsum: var, std,
var_mean, std_mean (real results: the mean squared modulus of the deviations), cumprod and
logsumexp (complex results).  NumPy is the oracle for values, gradcheck (complex inputs) for
gradients."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import gradcheck

rng = np.random.default_rng(0)
Z = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))


@pytest.mark.parametrize("kw, axis", [({}, None), ({"dim": 1}, 1), ({"dim": 0, "keepdim": True}, 0),
                                      ({"dim": (0, 1), "correction": 0}, (0, 1))])
def test_var_std_of_complex_match_numpy(kw, axis):
    t = tl.tensor(Z)
    ddof = kw.get("correction", 1)
    keep = kw.get("keepdim", False)
    want_var = np.var(Z, axis=axis, ddof=ddof, keepdims=keep)
    for name, want in (("var", want_var), ("std", np.sqrt(want_var))):
        got = getattr(tl, name)(t, **kw)
        assert got.dtype is tl.float64 and got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    v, m = tl.var_mean(t, **kw)
    np.testing.assert_allclose(v.numpy(), want_var, rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), np.mean(Z, axis=axis, keepdims=keep), rtol=1e-12)
    s, _ = tl.std_mean(t, **kw)
    np.testing.assert_allclose(s.numpy(), np.sqrt(want_var), rtol=1e-12)


def test_cumprod_and_logsumexp_of_complex_match_numpy():
    t = tl.tensor(Z)
    for dim in (0, 1):
        np.testing.assert_allclose(tl.cumprod(t, dim).numpy(), np.cumprod(Z, axis=dim), rtol=1e-12)
        np.testing.assert_allclose(tl.logsumexp(t, dim).numpy(), np.log(np.exp(Z).sum(axis=dim)),
                                   rtol=1e-12)
    big = tl.tensor(Z * 300)                # the largest real part is taken out first
    np.testing.assert_allclose(tl.logsumexp(big, 1).numpy().real,
                               np.log(np.abs(np.exp(Z * 300 - (Z * 300).real.max(1, keepdims=True))
                                             .sum(1))) + (Z * 300).real.max(1), rtol=1e-10)
    assert tl.cumprod(tl.tensor([1 + 1j, 0j, np.inf + 0j]), 0).numpy()[2] != tl.cumprod(
        tl.tensor([1 + 1j, 0j, np.inf + 0j]), 0).numpy()[2]        # 0 * inf: NaN, as in sequence


@pytest.mark.parametrize("fn", [lambda z: tl.var(z, 1), lambda z: tl.std(z, 0),
                                lambda z: tl.cumprod(z, 1), lambda z: tl.logsumexp(z, 1)])
def test_complex_reduction_gradients(fn):
    z = tl.tensor(Z, requires_grad=True)
    assert gradcheck(fn, (z,))
