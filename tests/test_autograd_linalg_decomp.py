"""Autograd of the decompositions and solvers (torchlite/_ops/linalg_decomp_grad.py):
gradcheck / gradgradcheck in float64 on well-conditioned inputs (symmetric or
positive-definite where the op needs it, built inside the function so finite differences stay
in the op's domain), PyTorch's gradients as a second oracle, grad_fn names."""
import numpy as np
import pytest

import torchlite as tl
from torchlite._ops import linalg_decomp as D
from torchlite.autograd import gradcheck, gradgradcheck

# torch.cholesky / torch.qr (the legacy names, compared here) warn that they are deprecated
pytestmark = pytest.mark.filterwarnings("ignore:torch.(cholesky|qr) is deprecated")

_rng = np.random.default_rng(5)


class _TopLevel:
    """torchlite with this family's top-level names (torchlite/__init__.py star-imports
    linalg_decomp's __all__; importing them from the module keeps the tests independent of
    that line)."""
    def __getattr__(self, name):
        return getattr(D, name) if name in D.__all__ else getattr(tl, name)


TL = _TopLevel()


def r(*shape):
    return _rng.standard_normal(shape)


def wc(*shape):
    """A well-conditioned square (batch): identity * 3 plus noise."""
    return r(*shape) * 0.5 + 3 * np.eye(shape[-1])


def spd(L, a):
    return a @ a.mT + a.shape[-1] * L.eye(a.shape[-1], dtype=a.dtype)


def sym(a):
    return a + a.mT


def distinct(L, a):
    """A square with well-separated singular values (a small perturbation of diag(1..n))."""
    n = a.shape[-1]
    return a * 0.1 + (L.arange(1, n + 1, dtype=a.dtype) * 1.5).diag_embed()


# ---- the table: every differentiable op and its gradcheck case --------------------------------
# name: (fn(L, *inputs) -> output(s), inputs, torch's grad_fn name of the op's node or None,
#        gradgradcheck too)
CASES = {
    "linalg.inv": (lambda L, a: L.linalg.inv(a), [wc(2, 3, 3)], "LinalgInvExBackward0", True),
    "linalg.inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, [wc(3, 3)], "LinalgInvExBackward0",
                      True),
    "inverse": (lambda L, a: a.inverse(), [wc(3, 3)], "LinalgInvExBackward0", True),
    "linalg.solve": (lambda L, a, b: L.linalg.solve(a, b), [wc(2, 3, 3), r(3, 2)],
                     "LinalgSolveExBackward0", True),
    "linalg.solve_vec": (lambda L, a, b: L.linalg.solve(a, b), [wc(3, 3), r(3)],
                         "LinalgSolveExBackward0", True),
    "linalg.solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False), [wc(3, 3), r(2, 3)],
                           "LinalgSolveExBackward0", True),
    "linalg.solve_ex": (lambda L, a, b: L.linalg.solve_ex(a, b).result, [wc(3, 3), r(3, 2)],
                        "LinalgSolveExBackward0", False),
    "linalg.solve_triangular_upper": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), [wc(3, 3), r(3, 2)],
        "LinalgSolveTriangularBackward0", True),
    "linalg.solve_triangular_lower_right_unit": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, left=False,
                                                  unitriangular=True),
        [wc(2, 3, 3), r(2, 2, 3)], "LinalgSolveTriangularBackward0", True),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(spd(L, a))),
                       [r(3, 2), r(3, 3)], None, False),
    "linalg.det": (lambda L, a: L.linalg.det(a), [wc(2, 3, 3)], "LinalgDetBackward0", True),
    "det": (lambda L, a: a.det(), [wc(3, 3)], "LinalgDetBackward0", False),
    "linalg.slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet, [wc(2, 3, 3)],
                       "LinalgSlogdetBackward0", True),
    "slogdet": (lambda L, a: a.slogdet()[1], [wc(3, 3)], "LinalgSlogdetBackward0", False),
    "logdet": (lambda L, a: L.logdet(spd(L, a)), [r(3, 3)], None, True),
    "linalg.cholesky": (lambda L, a: L.linalg.cholesky(spd(L, a)), [r(2, 3, 3)],
                        "LinalgCholeskyExBackward0", True),
    "linalg.cholesky_upper": (lambda L, a: L.linalg.cholesky(spd(L, a), upper=True), [r(3, 3)],
                              "LinalgCholeskyExBackward0", False),
    "linalg.cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(spd(L, a)).L, [r(3, 3)],
                           "LinalgCholeskyExBackward0", False),
    "cholesky": (lambda L, a: spd(L, a).cholesky(), [r(3, 3)], "LinalgCholeskyExBackward0", False),
    "linalg.qr": (lambda L, a: L.linalg.qr(a), [r(2, 4, 3)], "LinalgQrBackward0", True),
    "linalg.qr_square": (lambda L, a: L.linalg.qr(a), [r(3, 3)], "LinalgQrBackward0", False),
    "linalg.qr_wide": (lambda L, a: L.linalg.qr(a), [r(2, 3, 5)], "LinalgQrBackward0", True),
    "qr": (lambda L, a: a.qr()[1], [r(4, 3)], "LinalgQrBackward0", False),
    "linalg.eigh": (lambda L, a: _eigh_gauge(L.linalg.eigh(sym(distinct(L, a)))), [r(2, 3, 3)],
                    "LinalgEighBackward0", True),
    "linalg.eigh_upper": (lambda L, a: _eigh_gauge(L.linalg.eigh(sym(distinct(L, a)), UPLO="U")),
                          [r(3, 3)], "LinalgEighBackward0", False),
    "linalg.eigvalsh": (lambda L, a: L.linalg.eigvalsh(sym(a)), [r(2, 3, 3)],
                        "LinalgEighBackward0", True),
    "linalg.svd": (lambda L, a: _svd_gauge(L.linalg.svd(distinct(L, a), full_matrices=False)),
                   [r(2, 3, 3)], "LinalgSvdBackward0", True),
    "linalg.svd_tall": (lambda L, a: _svd_gauge(L.linalg.svd(a, full_matrices=False)),
                        [r(4, 2)], "LinalgSvdBackward0", False),
    "linalg.svd_wide_full": (lambda L, a: _svd_gauge(L.linalg.svd(a)), [r(2, 4)],
                             "LinalgSvdBackward0", False),
    "svd": (lambda L, a: _svd_gauge((lambda U, S, V: (U, S, V.mT))(*L.svd(a))), [r(4, 3)], "LinalgSvdBackward0", False),
    "linalg.svdvals": (lambda L, a: L.linalg.svdvals(a), [r(2, 3, 4)], "LinalgSvdBackward0", True),
    "linalg.pinv": (lambda L, a: L.linalg.pinv(a), [r(4, 3)], "LinalgPinvBackward0", True),
    "pinverse": (lambda L, a: a.pinverse(), [r(2, 3)], "LinalgPinvBackward0", False),
    "linalg.lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, [r(4, 3), r(4, 2)], None,
                     False),
    "linalg.matrix_power": (lambda L, a: L.linalg.matrix_power(a, 3), [r(3, 3)], None, True),
    "linalg.matrix_power_neg": (lambda L, a: L.linalg.matrix_power(a, -2), [wc(3, 3)], None,
                                False),
    "matrix_power": (lambda L, a: a.matrix_power(2), [r(2, 3, 3)], None, False),
    "linalg.matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), [r(2, 3, 3)],
                          "LinalgMatrixExpBackward0", True),
    "matrix_exp": (lambda L, a: a.matrix_exp(), [r(3, 3) * 3], "LinalgMatrixExpBackward0", False),
    "linalg.cond": (lambda L, a: L.linalg.cond(a), [wc(3, 3)], None, False),
    "linalg.matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2), [r(2, 3, 4)], None, False),
    "linalg.matrix_norm_-2": (lambda L, a: L.linalg.matrix_norm(a, -2), [r(3, 3)], None, False),
    "linalg.matrix_norm_nuc": (lambda L, a: L.linalg.norm(a, "nuc"), [r(3, 4)], None, True),
    "linalg.householder_product": (lambda L, a, t: L.linalg.householder_product(a, t),
                                   [r(2, 5, 3), r(2, 3)], None, True),
    "orgqr": (lambda L, a, t: L.orgqr(a, t), [r(4, 3), r(2)], None, False),
    # LU: the square, wide and tall cases of the factors' gradient, the packed form, and the
    # solve from a factorisation (differentiable in LU and B, every left/adjoint)
    "linalg.lu": (lambda L, a: tuple(L.linalg.lu(a))[1:], [wc(2, 3, 3)], "LinalgLuBackward0",
                  True),
    "linalg.lu_wide": (lambda L, a: tuple(L.linalg.lu(a))[1:], [r(2, 3, 5)], "LinalgLuBackward0",
                       False),
    "linalg.lu_tall": (lambda L, a: tuple(L.linalg.lu(a))[1:], [r(5, 3)], "LinalgLuBackward0",
                       False),
    "linalg.lu_factor": (lambda L, a: L.linalg.lu_factor(a).LU, [wc(2, 3, 3)],
                         "LinalgLuFactorExBackward0", True),
    "linalg.lu_factor_ex": (lambda L, a: L.linalg.lu_factor_ex(a).LU, [r(4, 2)],
                            "LinalgLuFactorExBackward0", False),
    "lu": (lambda L, a: L.lu(a)[0], [r(2, 5)], "LinalgLuFactorExBackward0", False),
    "linalg.lu_solve": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
                        [wc(2, 3, 3), r(3, 2)], None, True),
    "linalg.lu_solve_adjoint_right": (
        lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, left=False, adjoint=True),
        [wc(3, 3), r(2, 3)], None, False),
    "lu_solve": (lambda L, a, b: L.lu_solve(b, *L.linalg.lu_factor(a)), [wc(3, 3), r(3, 2)],
                 None, False),
}


def _eigh_gauge(res):
    """A loss of eigh invariant under each eigenvector's sign."""
    w, V = res
    # (w * 1: the engine rejects two roots when one root's node is reachable from another)
    return w * 1, V * V, (V[..., :1, :] * V)


def _svd_gauge(res):
    U, S, Vh = res
    k = S.shape[-1]
    return S * 1, U[..., :, :k] @ Vh[..., :k, :], U * U


def _leaves(L, arrays, noncontig=False):
    out = []
    for a in arrays:
        if noncontig and a.ndim >= 2:
            t = L.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=L.float64).mT
        else:
            t = L.tensor(a, dtype=L.float64)
        out.append(t.requires_grad_())
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, arrays, _, gg = CASES[name]
    inputs = _leaves(tl, arrays, noncontig=True)
    assert gradcheck(lambda *xs: fn(TL, *xs), inputs, atol=1e-6, rtol=1e-4)
    if gg:
        assert gradgradcheck(lambda *xs: fn(TL, *xs), _leaves(tl, arrays), atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    fn, arrays, node, _ = CASES[name]
    ours = _leaves(tl, arrays)
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    o, t = fn(TL, *ours), fn(torch, *theirs)
    o = o if isinstance(o, tuple) else (o,)
    t = t if isinstance(t, tuple) else (t,)
    seeds = [r(*x.shape) for x in t]
    sum(((x * tl.tensor(s)).sum() for x, s in zip(o, seeds)), tl.tensor(0.0)).backward()
    sum(((x * torch.tensor(s)).sum() for x, s in zip(t, seeds)), torch.tensor(0.0)).backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(k for k, c in CASES.items() if c[2]))
def test_grad_fn_name(name):
    fn, arrays, node, _ = CASES[name]
    x = _leaves(tl, arrays)
    # the op's own node: build its output without the gauge-fixing wrappers
    op = {"LinalgEighBackward0": lambda a: tl.linalg.eigh(a)[0],
          "LinalgSvdBackward0": lambda a: tl.linalg.svd(a)[1],
          "LinalgCholeskyExBackward0": lambda a: tl.linalg.cholesky(a @ a.mT),
          "LinalgQrBackward0": lambda a: tl.linalg.qr(a)[1],
          "LinalgLuBackward0": lambda a: tl.linalg.lu(a).U}.get(node)
    out = op(x[0]) if op is not None else fn(TL, *x)
    assert type(out.grad_fn).__name__ == node


def test_lu_solve_is_differentiable_in_the_factors_themselves():
    # the gradient reaches LU as a tensor of its own (PyTorch's LinalgLuSolveBackward0 takes
    # it so); gradcheck over LU and B directly, not through lu_factor
    a = tl.tensor(wc(3, 3))
    LU, piv = tl.linalg.lu_factor(a)
    LU = LU.detach().requires_grad_()
    b = tl.tensor(r(3, 2)).requires_grad_()
    for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
        bb = b if left else b.detach().mT.contiguous().requires_grad_()
        assert gradcheck(lambda LU, B: tl.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint),
                         (LU, bb))


def test_qr_mode_r_gradient_raises():
    a = tl.tensor(r(3, 3)).requires_grad_()
    with pytest.raises(RuntimeError, match="mode='r'"):
        tl.linalg.qr(a, mode="r").R.sum().backward()


def test_svdvals_repeated_values_finite():
    # only S gets a gradient: the 1/(s_j^2 - s_i^2) terms are never formed
    a = tl.eye(3, dtype=tl.float64).requires_grad_()
    tl.linalg.svdvals(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.eye(3))


def test_requires_grad_flags_match_torch():
    torch = pytest.importorskip("torch")
    a = r(3, 3)
    calls = {
        "lu": lambda L, x: L.linalg.lu(x), "lu_factor_ex": lambda L, x: L.linalg.lu_factor_ex(x),
        "slogdet": lambda L, x: L.linalg.slogdet(x), "inv_ex": lambda L, x: L.linalg.inv_ex(x),
        "cholesky_ex": lambda L, x: L.linalg.cholesky_ex(spd(L, x)),
        "solve_ex": lambda L, x: L.linalg.solve_ex(x, x), "qr_r": lambda L, x: L.linalg.qr(x, mode="r"),
        "lstsq": lambda L, x: L.linalg.lstsq(x, x), "svd_no_uv": lambda L, x: L.svd(x, compute_uv=False),
        "matrix_rank": lambda L, x: (L.linalg.matrix_rank(x),), "eigh": lambda L, x: L.linalg.eigh(spd(L, x)),
    }
    for name, fn in calls.items():
        ours = fn(TL, tl.tensor(a).requires_grad_())
        theirs = fn(torch, torch.tensor(a, requires_grad=True))
        assert [t.requires_grad for t in ours] == [t.requires_grad for t in theirs], name
