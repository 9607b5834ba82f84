"""torchlite.nn.utils.parametrize: a parametrized weight on every access, PyTorch's
state_dict layout (checked against torch.nn.utils.parametrize where installed), chaining,
right_inverse, caching and removal."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.utils import parametrize as P


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT


class Scale(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, X):
        return X * self.k

    def right_inverse(self, Y):
        return Y / self.k


def test_register_access_gradients_and_removal():
    tl.manual_seed(0)
    lin = nn.Linear(3, 3)
    w0 = lin.weight.detach().numpy().copy()
    P.register_parametrization(lin, "weight", Symmetric())
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(lin.weight.detach().numpy(), sym)
    assert P.is_parametrized(lin) and P.is_parametrized(lin, "weight")
    assert not P.is_parametrized(lin, "bias") and type(nn.Linear(2, 2)) is nn.Linear
    assert P.type_before_parametrizations(lin) is nn.Linear
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.original"]
    x = tl.randn(4, 3)
    lin(x).sum().backward()
    g = x.sum(0).numpy()
    want = np.outer(np.ones(3), g)          # d sum(x W^T) / dW, then through Symmetric
    want = np.triu(want) + np.tril(want, -1).T
    np.testing.assert_allclose(lin.parametrizations.weight.original.grad.numpy(),
                               np.triu(want), rtol=1e-5)
    P.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), sym)


def test_chaining_right_inverse_cached_and_errors():
    lin = nn.Linear(2, 2)
    w0 = lin.weight.detach().clone()
    P.register_parametrization(lin, "weight", Scale(2.0))
    np.testing.assert_allclose(lin.parametrizations.weight.original.detach().numpy(),
                               w0.numpy() / 2, rtol=1e-6)      # right_inverse at registration
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0.numpy(), rtol=1e-6)
    P.register_parametrization(lin, "weight", Scale(3.0))
    np.testing.assert_allclose(lin.weight.detach().numpy(), 3 * w0.numpy(), rtol=1e-6)
    with tl.no_grad():
        lin.weight = tl.ones(2, 2)                              # through both right_inverses
    np.testing.assert_allclose(lin.weight.detach().numpy(), np.ones((2, 2)), rtol=1e-6)
    with P.cached():
        assert lin.weight is lin.weight
    assert lin.weight is not lin.weight
    with pytest.raises(ValueError, match="shape or dtype"):
        P.register_parametrization(nn.Linear(2, 3), "weight", type("T", (nn.Module,), {
            "forward": lambda self, X: X.t()})())
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(lin, "nothing", Scale(1.0))
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(nn.Linear(2, 2), "weight")


def test_state_dict_matches_torch_and_loads_across():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.parametrize as TP

    class TSym(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT
    ours, theirs = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    P.register_parametrization(ours, "weight", Symmetric())
    TP.register_parametrization(theirs, "weight", TSym())
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    state = {k: tl.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_weight_norm():
    from torchlite.nn.utils.parametrizations import weight_norm
    tl.manual_seed(2)
    conv = nn.Conv2d(2, 3, 3)
    w = conv.weight.detach().numpy().copy()
    weight_norm(conv)
    assert sorted(k for k in conv.state_dict() if "param" in k) == [
        "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g = conv.parametrizations.weight.original0.detach().numpy()
    np.testing.assert_allclose(g.reshape(-1), np.sqrt((w ** 2).reshape(3, -1).sum(1)), rtol=1e-6)
    np.testing.assert_allclose(conv.weight.detach().numpy(), w, rtol=1e-5)
    x = tl.randn(1, 2, 5, 5)
    conv(x).sum().backward()
    assert conv.parametrizations.weight.original0.grad.shape == (3, 1, 1, 1)
    torch = pytest.importorskip("torch")
    from torch.nn.utils.parametrizations import weight_norm as twn
    tconv = twn(torch.nn.Conv2d(2, 3, 3))
    assert sorted(conv.state_dict()) == sorted(tconv.state_dict())
    conv.load_state_dict({k: tl.tensor(v.detach().numpy()) for k, v in tconv.state_dict().items()})
    np.testing.assert_allclose(conv(x).detach().numpy(),
                               tconv(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_spectral_norm_against_numpy_and_torch():
    import numpy as np
    from torchlite.nn.utils import parametrizations as P
    tl.manual_seed(0)
    lin = tl.nn.Linear(5, 4)
    P.spectral_norm(lin, n_power_iterations=30)
    assert set(lin.state_dict()) == {"bias", "parametrizations.weight.original",
                                     "parametrizations.weight.0._u", "parametrizations.weight.0._v"}
    w = lin.weight.detach().numpy()
    orig = lin.parametrizations.weight.original.detach().numpy()
    sigma = np.linalg.svd(orig, compute_uv=False)[0]
    np.testing.assert_allclose(w, orig / sigma, rtol=1e-4)
    assert abs(np.linalg.svd(w, compute_uv=False)[0] - 1) < 1e-4
    conv = tl.nn.ConvTranspose2d(3, 6, 3)
    P.spectral_norm(conv)
    assert conv.parametrizations.weight[0].dim == 1
    lin.eval()
    a, b = lin.weight.detach().numpy(), lin.weight.detach().numpy()
    np.testing.assert_array_equal(a, b)                 # eval: u and v stay
    with pytest.raises(ValueError, match="n_power_iterations"):
        P.spectral_norm(tl.nn.Linear(2, 2), n_power_iterations=0)
    torch = pytest.importorskip("torch")
    tlin = torch.nn.Linear(5, 4)
    torch.nn.utils.parametrizations.spectral_norm(tlin)
    ours = tl.nn.Linear(5, 4)
    P.spectral_norm(ours)
    ours.load_state_dict({k: tl.from_numpy(v.detach().numpy().copy()) for k, v in tlin.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for _ in range(3):                                   # training: the power method runs each call
        want = tlin(torch.from_numpy(x)).detach().numpy()
        got = ours(tl.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    y = ours(tl.from_numpy(x))
    y.sum().backward()
    assert ours.parametrizations.weight.original.grad is not None


@pytest.mark.parametrize("orthogonal_map,shape", [("matrix_exp", (4, 4)), ("cayley", (4, 4)),
                                                   ("householder", (5, 3)), ("householder", (3, 5)),
                                                   ("matrix_exp", (3, 5)), ("cayley", (5, 3))])
def test_orthogonal(orthogonal_map, shape):
    import numpy as np
    from torchlite.nn.utils import parametrizations as P
    tl.manual_seed(0)
    lin = tl.nn.Linear(shape[1], shape[0])
    original = lin.weight.detach().clone()
    P.orthogonal(lin, orthogonal_map=orthogonal_map)
    W = lin.weight.detach().numpy().astype(np.float64)
    G = W.T @ W if shape[0] >= shape[1] else W @ W.T
    np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-5)
    assert set(lin.state_dict()) == {"bias", "parametrizations.weight.original",
                                     "parametrizations.weight.0.base"}
    if shape[0] == shape[1]:        # a square weight starts as the QR of the original
        Q = P._make_orthogonal(original).numpy()
        np.testing.assert_allclose(W, Q, atol=1e-5)
    x = tl.randn(2, shape[1])
    lin(x).sum().backward()
    assert lin.parametrizations.weight.original.grad is not None
    torch = pytest.importorskip("torch")
    tlin = torch.nn.Linear(shape[1], shape[0])
    torch.nn.utils.parametrizations.orthogonal(tlin, orthogonal_map=orthogonal_map)
    with torch.no_grad():
        tlin.parametrizations.weight.original.add_(torch.randn(shape) * 0.1)
    lin.load_state_dict({k: tl.from_numpy(v.detach().numpy().copy()) for k, v in tlin.state_dict().items()})
    np.testing.assert_allclose(lin.weight.detach().numpy(), tlin.weight.detach().numpy(), atol=2e-5)


def test_orthogonal_assignment_and_errors():
    import numpy as np
    from torchlite.nn.utils import parametrizations as P
    lin = tl.nn.Linear(3, 5)
    P.orthogonal(lin, orthogonal_map="householder", use_trivialization=False)
    Q = P._make_orthogonal(tl.randn(5, 3))
    with tl.no_grad():
        lin.weight = Q
    np.testing.assert_allclose(lin.weight.detach().numpy(), Q.numpy(), atol=1e-5)
    sq = tl.nn.Linear(3, 3)
    P.orthogonal(sq, use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        with tl.no_grad():
            sq.weight = tl.eye(3)
    with pytest.raises(ValueError, match="orthogonal_map"):
        P.orthogonal(tl.nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="matrix"):
        P.orthogonal(tl.nn.Linear(2, 2), name="bias")


def test_geqrf_and_householder_product_against_numpy():
    import numpy as np
    A = np.random.default_rng(1).standard_normal((2, 6, 4))
    a, tau = tl.geqrf(tl.tensor(A))
    Q = tl.linalg.householder_product(a, tau).numpy()
    R = np.triu(a.numpy())[..., :4, :]
    np.testing.assert_allclose(Q @ R, A, atol=1e-12)                 # QR = A
    np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-12)
    x = tl.tensor(A[0], requires_grad=True)
    t = tl.tensor(tau.numpy()[0], requires_grad=True)
    assert tl.autograd.gradcheck(lambda x, t: tl.linalg.householder_product(x, t), (x, t))
    with pytest.raises(RuntimeError, match="greater than or equal"):
        tl.linalg.householder_product(tl.randn(3, 5), tl.randn(3))
