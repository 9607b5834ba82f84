"""torchlite.optim's ASGD, Rprop, Adafactor, SparseAdam and Muon against their update rules
written out in NumPy (float64), without PyTorch; and what every optimizer now shares:
differentiable=True (gradcheck through one recorded step), foreach/fused/capturable giving
the same trajectory, complex parameters stepping as their real view, Tensor lr and betas,
state_dict layouts, swap_in_optimizer_params_and_state.  tests/test_optim_db.py checks
all of it against PyTorch's own optimizer database where PyTorch is installed."""
import copy
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.optim as optim
from torchlite.optim._functional import sparse_adam

STEPS = 12
SHAPES = [(4, 3), (5,), (2, 3, 2)]


# ---- the problem: fixed gradients (a few exact zeros), fixed initial values -----------------
def initial_weights(shapes=SHAPES):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s) for s in shapes]


def gradients(steps=STEPS, shapes=SHAPES, seed=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        gs = []
        for s in shapes:
            g = rng.standard_normal(s)
            g[rng.random(s) < 0.15] = 0.0
            gs.append(g)
        out.append(gs)
    return out


def run(name, kwargs, dtype=tl.float64, shapes=SHAPES, steps=STEPS):
    """torchlite's parameters (float64 NumPy) after each step, and the optimizer."""
    params = [tl.tensor(w, dtype=dtype).requires_grad_() for w in initial_weights(shapes)]
    opt = getattr(optim, name)(params, **kwargs)
    trajectory = []
    for gs in gradients(steps, shapes):
        for p, g in zip(params, gs):
            p.grad = tl.tensor(g, dtype=dtype)
        opt.step()
        trajectory.append([p.detach().numpy().astype(np.float64) for p in params])
    return trajectory, opt, params


def assert_trajectories_close(got, want, rtol, atol):
    moved = max(np.abs(w - w0).max() for w, w0 in zip(want[-1], initial_weights(
        [w.shape for w in want[-1]])))
    assert moved > 1e-3                           # the case does exercise the update
    for t, (gs, ws) in enumerate(zip(got, want)):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"step {t + 1}")


def f32(x):
    return float(np.float32(x))


# ---- the oracles: each optimizer's rule as PyTorch documents (and computes) it ---------------
def asgd_oracle(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    thetas = initial_weights()
    out, axs = [], [np.zeros_like(th) for th in thetas]
    eta, mu = f32(lr), 1.0                      # 0-d float32 tensors in the state
    for t, gs in enumerate(gradients(), 1):
        new = []
        for i, (th, g) in enumerate(zip(thetas, gs)):
            g = -g if maximize else g
            g = g + weight_decay * th
            th = th * (1 - lambd * eta) - eta * g
            axs[i] = th.copy() if mu == 1 else axs[i] + (th - axs[i]) * mu
            new.append(th)
        eta = f32(lr / (1 + lambd * lr * t) ** alpha)
        mu = f32(1 / max(1, t - t0))
        thetas = new
        out.append(thetas)
    return out, axs


def rprop_oracle(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    thetas = initial_weights()
    prevs = [np.zeros_like(th) for th in thetas]
    sizes = [np.full_like(th, lr) for th in thetas]
    out = []
    for gs in gradients():
        new = []
        for i, (th, g) in enumerate(zip(thetas, gs)):
            g = -g if maximize else g
            s = np.sign(g * prevs[i])
            factor = np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0))
            sizes[i] = np.clip(sizes[i] * factor, *step_sizes)
            g = np.where(s < 0, 0.0, g)
            new.append(th - np.sign(g) * sizes[i])
            prevs[i] = g
        thetas = new
        out.append(thetas)
    return out


def lerp(a, b, w):
    return a + w * (b - a)


def rms(x):
    return np.sqrt(np.mean(x * x))


def adafactor_oracle(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                     maximize=False):
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    thetas = initial_weights()
    rows = [np.zeros(th.shape[:-1] + (1,)) if th.ndim > 1 else None for th in thetas]
    cols = [np.zeros(th.shape[:-2] + (1, th.shape[-1])) if th.ndim > 1 else None
            for th in thetas]
    variances = [np.zeros_like(th) if th.ndim <= 1 else None for th in thetas]
    out = []
    for t, gs in enumerate(gradients(), 1):
        new = []
        for i, (th, g) in enumerate(zip(thetas, gs)):
            g = -g if maximize else g
            c = t ** beta2_decay
            alpha = max(eps[1], rms(th)) * min(lr, 1 / math.sqrt(t))
            th = th * (1 - lr * weight_decay)
            if g.ndim > 1:
                rows[i] = lerp(rows[i], np.mean(g * g, axis=-1, keepdims=True), c)
                cols[i] = lerp(cols[i], np.mean(g * g, axis=-2, keepdims=True), c)
                v = rows[i] @ cols[i] / np.maximum(rows[i].mean(axis=-2, keepdims=True), eps1)
            else:
                variances[i] = lerp(variances[i], g * g, c)
                v = variances[i]
            u = g / np.sqrt(np.maximum(v, eps1 * eps1))
            new.append(th - alpha / max(1.0, rms(u) / d) * u)
        thetas = new
        out.append(thetas)
    return out


# ---- ASGD --------------------------------------------------------------------------------------
ASGD_CASES = [dict(), dict(lambd=0.1), dict(lr=0.05, t0=3), dict(t0=5, alpha=0.5),
              dict(weight_decay=0.1, maximize=True)]


@pytest.mark.parametrize("kwargs", ASGD_CASES, ids=str)
def test_asgd_matches_its_rule_and_averages(kwargs):
    got, opt, params = run("ASGD", kwargs)
    want, axs = asgd_oracle(**kwargs)
    assert_trajectories_close(got, want, 1e-12, 1e-13)
    for p, ax in zip(params, axs):
        np.testing.assert_allclose(opt.state[p]["ax"].numpy(), ax, rtol=1e-12, atol=1e-13)
    state = opt.state[params[0]]
    assert list(state) == ["step", "eta", "mu", "ax"]
    assert state["eta"].dtype is tl.float32 and state["mu"].dim() == 0
    assert state["step"].item() == STEPS


def test_asgd_float32_and_a_state_saved_with_number_eta_mu():
    got, opt, params = run("ASGD", dict(t0=3), dtype=tl.float32)
    want, _ = asgd_oracle(t0=3)
    assert_trajectories_close(got, want, 1e-5, 1e-6)
    sd = copy.deepcopy(opt.state_dict())
    for s in sd["state"].values():     # an older checkpoint: eta and mu as Python numbers
        s["eta"], s["mu"] = s["eta"].item(), s["mu"].item()
    opt.load_state_dict(sd)
    assert isinstance(opt.state[params[0]]["eta"], tl.Tensor)
    assert opt.state[params[0]]["mu"].dtype is tl.float32


# ---- Rprop ----------------------------------------------------------------------------------
RPROP_CASES = [dict(), dict(lr=2e-4), dict(etas=(0.3, 1.5)), dict(step_sizes=(5e-3, 2e-2)),
               dict(maximize=True)]


@pytest.mark.parametrize("kwargs", RPROP_CASES, ids=str)
def test_rprop_matches_its_rule(kwargs):
    got, opt, params = run("Rprop", kwargs, steps=STEPS)
    assert_trajectories_close(got, rprop_oracle(**kwargs), 1e-12, 1e-14)
    state = opt.state[params[0]]
    assert list(state) == ["step", "prev", "step_size"]
    lo, hi = kwargs.get("step_sizes", (1e-6, 50))
    assert lo <= state["step_size"].min().item() and state["step_size"].max().item() <= hi


def test_rprop_ignores_the_gradients_size():
    a, _, _ = run("Rprop", {})
    params = [tl.tensor(w).requires_grad_() for w in initial_weights()]
    opt = optim.Rprop(params)
    for gs in gradients():
        for p, g in zip(params, gs):
            p.grad = tl.tensor(1000.0 * g)
        opt.step()
    for p, w in zip(params, a[-1]):
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-14)


# ---- Adafactor ------------------------------------------------------------------------------
ADAFACTOR_CASES = [dict(), dict(weight_decay=0.1, lr=0.01), dict(weight_decay=0.1, maximize=True),
                   dict(beta2_decay=-1.0), dict(d=1.5), dict(lr=0.5, eps=(1e-20, 1e-2)),
                   dict(eps=(1e-3, 1e-3))]


@pytest.mark.parametrize("kwargs", ADAFACTOR_CASES, ids=str)
def test_adafactor_matches_its_rule(kwargs):
    got, opt, params = run("Adafactor", kwargs)
    assert_trajectories_close(got, adafactor_oracle(**kwargs), 1e-10, 1e-12)
    assert list(opt.state[params[0]]) == ["step", "row_var", "col_var"]
    assert opt.state[params[0]]["row_var"].shape == (4, 1)
    assert opt.state[params[0]]["col_var"].shape == (1, 3)
    assert list(opt.state[params[1]]) == ["step", "variance"]
    assert opt.state[params[2]]["col_var"].shape == (2, 1, 2)      # batched over dim 0


def test_adafactor_float32_uses_float32_epsilon_and_takes_0d_params():
    got, _, _ = run("Adafactor", {}, dtype=tl.float32)
    want = adafactor_oracle()
    assert_trajectories_close(got, want, 2e-5, 1e-6)
    p = tl.tensor(2.0, requires_grad=True)
    opt = optim.Adafactor([p])
    p.grad = tl.tensor(0.5)
    opt.step()                      # rho = min(lr, 1) = 0.01, alpha = 2 * 0.01, |U| = 1
    assert p.item() == pytest.approx(2.0 - 0.02, rel=1e-6)


def test_adafactor_refuses_complex_parameters_and_bad_options():
    p = tl.zeros(2, 2, dtype=tl.complex64, requires_grad=True)
    p.grad = tl.zeros(2, 2, dtype=tl.complex64)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        optim.Adafactor([p]).step()
    q = [tl.zeros(2, requires_grad=True)]
    for kwargs, message in [(dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
                            (dict(beta2_decay=0.8), "beta2_decay should be <= 0 but is: 0.8"),
                            (dict(eps=(-1e-30, 1e-3)), "epsilon1 should be >= 0"),
                            (dict(eps=(None, -1.0)), "epsilon2 should be >= 0"),
                            (dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
                            (dict(weight_decay=-1), "weight_decay should be >= 0 but is: -1")]:
        with pytest.raises(ValueError, match=message):
            optim.Adafactor(q, **kwargs)


# ---- SparseAdam -----------------------------------------------------------------------------
def masked_adam_oracle(theta, rows_and_values, lr, beta1, beta2, eps, maximize=False):
    """Adam on the rows each step's sparse gradient holds (repeated rows summed); the other
    rows of the parameter and its moments stay."""
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    theta = theta.copy()
    for t, (rows, values) in enumerate(rows_and_values, 1):
        g = np.zeros_like(theta)
        np.add.at(g, rows, values)
        held = np.unique(rows)
        g = -g if maximize else g
        m[held] = lerp(m[held], g[held], 1 - beta1)
        v[held] = lerp(v[held], g[held] ** 2, 1 - beta2)
        step = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        theta[held] -= step * m[held] / (np.sqrt(v[held]) + eps)
    return theta


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_rule_on_coo_gradients_with_repeated_rows(maximize):
    rng = np.random.default_rng(4)
    theta = rng.standard_normal((6, 3))
    steps = [(np.array([1, 4, 1]), rng.standard_normal((3, 3))),
             (np.array([0, 4]), rng.standard_normal((2, 3))),
             (np.array([], dtype=np.int64), np.zeros((0, 3))),
             (np.array([5, 2, 2, 4]), rng.standard_normal((4, 3)))]
    p = tl.tensor(theta).requires_grad_()
    opt = optim.SparseAdam([p], lr=0.05, maximize=maximize)
    state = opt.state[p]
    state.update(step=0, exp_avg=tl.zeros_like(p), exp_avg_sq=tl.zeros_like(p))
    for rows, values in steps:
        state["step"] += 1
        coo = (tl.tensor(rows.reshape(1, -1)), tl.tensor(values))   # hybrid: rows sparse
        with tl.no_grad():
            sparse_adam([p], [coo], [state["exp_avg"]], [state["exp_avg_sq"]], [state["step"]],
                        eps=1e-8, beta1=0.9, beta2=0.999, lr=0.05, maximize=maximize)
    want = masked_adam_oracle(theta, steps, 0.05, 0.9, 0.999, 1e-8, maximize)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(p.detach().numpy()[3], theta[3])      # never held


def test_sparse_adam_element_coo_matches_row_coo():
    rng = np.random.default_rng(5)
    theta = rng.standard_normal((3, 2))
    g = np.array([[0.0, 1.5], [0.0, 0.0], [-2.0, 0.5]])
    results = []
    for coo in [(tl.tensor(np.array([[0, 2, 2], [1, 0, 1]])), tl.tensor(np.array([1.5, -2, .5]))),
                (tl.tensor(np.array([[0, 2]])), tl.tensor(g[[0, 2]]))]:
        p = tl.tensor(theta)
        m, v = tl.zeros_like(p), tl.zeros_like(p)
        sparse_adam([p], [coo], [m], [v], [1], eps=1e-8, beta1=0.9, beta2=0.999, lr=0.1,
                    maximize=False)
        results.append((p.numpy(), m.numpy()))
    np.testing.assert_allclose(results[0][0][[0, 2]][g[[0, 2]] != 0],
                               results[1][0][[0, 2]][g[[0, 2]] != 0], rtol=1e-14)
    # element-wise, an entry the gradient does not hold stays; row-wise, the whole row moves
    assert results[0][0][0, 0] == theta[0, 0] and results[1][1][0, 0] == 0.0


def test_sparse_adam_refuses_dense_gradients_and_keeps_pytorchs_layout():
    p, q = tl.ones(3, requires_grad=True), tl.ones(2, requires_grad=True)
    opt = optim.SparseAdam([p, q], lr=0.01)
    opt.step()                                   # no gradients: nothing to do
    assert len(opt.state) == 0
    p.grad = tl.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                           "please consider Adam instead"):
        opt.step()
    assert len(opt.state) == 0
    saved = {"state": {0: {"step": 3, "exp_avg": tl.full((3,), 0.5),
                           "exp_avg_sq": tl.full((3,), 0.25)}},
             "param_groups": [{"lr": 0.02, "betas": (0.9, 0.999), "eps": 1e-8,
                               "maximize": False, "params": [0, 1]}]}
    opt.load_state_dict(saved)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 3 and list(sd["state"][0]) == ["step", "exp_avg",
                                                                     "exp_avg_sq"]
    assert sd["param_groups"][0]["lr"] == 0.02
    assert sorted(sd["param_groups"][0]) == ["betas", "eps", "lr", "maximize", "params"]


def test_sparse_adam_options():
    p = [tl.zeros(2, requires_grad=True)]
    for kwargs, message in [(dict(lr=0.0), "Invalid learning rate: 0.0"),
                            (dict(eps=0.0), "Invalid epsilon value: 0.0"),
                            (dict(betas=(1.0, 0.0)), "Invalid beta parameter at index 0: 1.0"),
                            (dict(betas=(0.5, 1.0)), "Invalid beta parameter at index 1: 1.0"),
                            (dict(lr=tl.tensor([0.1, 0.2])), "Tensor lr must be 1-element")]:
        with pytest.raises(ValueError, match=message):
            optim.SparseAdam(p, **kwargs)
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 1\]\]: SparseAdam "
                                         "does not support complex parameters"):
        optim.SparseAdam([p[0], tl.zeros(2, dtype=tl.complex64, requires_grad=True)])


# ---- Muon -----------------------------------------------------------------------------------
def newton_schulz(g, coefficients, steps, eps):
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def muon_oracle(shapes, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                ns_coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7, ns_steps=5,
                adjust_lr_fn=None):
    thetas = initial_weights(shapes)
    bufs = [np.zeros_like(th) for th in thetas]
    out = []
    for gs in gradients(STEPS, shapes):
        new = []
        for i, (th, g) in enumerate(zip(thetas, gs)):
            bufs[i] = lerp(bufs[i], g, 1 - momentum)
            u = lerp(g, bufs[i], momentum) if nesterov else bufs[i]
            o = newton_schulz(u, ns_coefficients, ns_steps, eps)
            rows, cols = th.shape
            scale = (0.2 * math.sqrt(max(rows, cols)) if adjust_lr_fn == "match_rms_adamw"
                     else math.sqrt(max(1, rows / cols)))
            new.append(th * (1 - lr * weight_decay) - lr * scale * o)
        thetas = new
        out.append(thetas)
    return out


MUON_SHAPES = [(6, 3), (3, 5)]
MUON_CASES = [dict(), dict(lr=0.02, nesterov=False), dict(momentum=0.8, weight_decay=0.2),
              dict(adjust_lr_fn="match_rms_adamw", lr=0.01), dict(ns_steps=6),
              dict(ns_coefficients=(3.4, -4.7, 2.0), adjust_lr_fn="original")]


@pytest.mark.parametrize("kwargs", MUON_CASES, ids=str)
def test_muon_matches_its_rule_to_bfloat16(kwargs):
    got, opt, params = run("Muon", kwargs, shapes=MUON_SHAPES)
    want = muon_oracle(MUON_SHAPES, **kwargs)
    lr = kwargs.get("lr", 1e-3)
    # the orthogonalisation runs in bfloat16 (8 mantissa bits), as PyTorch's does: each step
    # moves by about lr * scale, and agrees with float64 to a few bfloat16 roundings of it
    for gs, ws in zip(got, want):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, atol=0.05 * lr * STEPS, rtol=0)
    assert list(opt.state[params[0]]) == ["momentum_buffer"]


def test_muon_orthogonalises_and_checks_its_input():
    from torchlite.optim.muon import _zeropower_via_newtonschulz
    g = tl.tensor(np.random.default_rng(3).standard_normal((8, 5)), dtype=tl.float32)
    o = _zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    assert o.dtype is tl.bfloat16 and o.shape == (8, 5)
    s = np.linalg.svd(o.float().numpy(), compute_uv=False)
    assert 0.5 < s.min() and s.max() < 1.5
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([tl.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
        optim.Muon([tl.zeros(3, 3, requires_grad=True)], adjust_lr_fn="x")
    with pytest.raises(ValueError, match="less than 100"):
        _zeropower_via_newtonschulz(g, (1, 2, 3), 100, 1e-7)


# ---- every optimizer: implementation flags, Tensor hyperparameters, complex parameters -------
ALL = {"SGD": dict(lr=0.05, momentum=0.9, nesterov=True), "Adam": dict(amsgrad=True),
       "AdamW": {}, "Adagrad": dict(lr_decay=0.1), "Adadelta": {}, "Adamax": {},
       "NAdam": {}, "RAdam": dict(decoupled_weight_decay=True, weight_decay=0.1),
       "RMSprop": dict(centered=True, momentum=0.5), "ASGD": dict(t0=3), "Rprop": {},
       "Adafactor": {}}
FLAGS = {"SGD": ("foreach", "fused"), "Adam": ("foreach", "fused", "capturable"),
         "AdamW": ("foreach", "fused", "capturable"), "Adagrad": ("foreach", "fused"),
         "Adadelta": ("foreach", "capturable"), "Adamax": ("foreach", "capturable"),
         "NAdam": ("foreach", "capturable"), "RAdam": ("foreach", "capturable"),
         "RMSprop": ("foreach", "capturable"), "ASGD": ("foreach", "capturable"),
         "Rprop": ("foreach", "capturable"), "Adafactor": ("foreach",)}


@pytest.mark.parametrize("name", list(ALL))
def test_implementation_flags_give_the_same_trajectory(name):
    base, _, _ = run(name, ALL[name], dtype=tl.float32, steps=4)
    for flag in FLAGS[name]:
        got, opt, _ = run(name, dict(ALL[name], **{flag: True}), dtype=tl.float32, steps=4)
        assert opt.param_groups[0][flag] is True
        for gs, ws in zip(got, base):
            for g, w in zip(gs, ws):
                np.testing.assert_array_equal(g, w, err_msg=flag)


@pytest.mark.parametrize("name", ["ASGD", "Rprop", "Adam", "RMSprop", "Adagrad"])
def test_complex_parameters_step_as_their_real_view(name):
    """A complex parameter moves as the real tensor of its (real, imag) pairs would."""
    rng = np.random.default_rng(6)
    z = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    gz = [rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)) for _ in range(5)]
    pc = tl.tensor(z).requires_grad_()
    pr = tl.tensor(np.stack([z.real, z.imag], -1)).requires_grad_()
    oc, orr = getattr(optim, name)([pc]), getattr(optim, name)([pr])
    for g in gz:
        pc.grad, pr.grad = tl.tensor(g), tl.tensor(np.stack([g.real, g.imag], -1))
        oc.step()
        orr.step()
    got = pc.detach().numpy()
    np.testing.assert_allclose(np.stack([got.real, got.imag], -1), pr.detach().numpy(),
                               rtol=1e-13, atol=1e-14)


def test_adam_tensor_lr_and_betas():
    a, _, _ = run("Adam", dict(lr=0.01, betas=(0.8, 0.99)), steps=3)
    b, opt, _ = run("Adam", dict(lr=tl.tensor(0.01, dtype=tl.float64),
                                 betas=(tl.tensor([[0.8]], dtype=tl.float64),
                                        tl.tensor([0.99], dtype=tl.float64))), steps=3)
    for gs, ws in zip(b, a):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=1e-15)
    beta1, beta2 = opt.param_groups[0]["betas"]          # squeezed, as PyTorch keeps them
    assert isinstance(beta1, tl.Tensor) and beta1.dim() == 0 and beta2.dim() == 0
    p = [tl.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="lr as a Tensor is not supported for "
                                         "capturable=False and foreach=True"):
        optim.Adam(p, lr=tl.tensor(0.1), foreach=True)
    with pytest.raises(ValueError, match=r"betas\[0\] as a Tensor is not supported"):
        optim.AdamW(p, betas=(tl.tensor(0.9), tl.tensor(0.99)), foreach=True)
    with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
        optim.Adam(p, betas=(0.9, tl.tensor(0.99)))
    optim.Adam(p, lr=tl.tensor(0.1), foreach=True, capturable=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.SGD(p, fused=True, differentiable=True)


# ---- differentiable=True: gradcheck through one recorded step -------------------------------
DIFFERENTIABLE = {"SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True),
                  "Adam": dict(lr=0.1, weight_decay=0.1, amsgrad=True),
                  "AdamW": dict(lr=0.1), "Adagrad": dict(lr=0.1, lr_decay=0.1),
                  "Adadelta": dict(weight_decay=0.1), "Adamax": dict(lr=0.1),
                  "NAdam": dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1),
                  "RAdam": dict(lr=0.1), "RMSprop": dict(centered=True, momentum=0.5),
                  "ASGD": dict(lr=0.1, weight_decay=0.1), "Rprop": dict(lr=0.1)}


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_differentiable_step_passes_gradcheck(name):
    """PyTorch's check of differentiable=True (its test_optim's _diff_fn): one recorded step
    from a state a few steps left, differentiated with respect to the parameter, its
    gradient and every per-element state tensor, against finite differences."""
    kwargs = DIFFERENTIABLE[name]
    rng = np.random.default_rng(8)
    warm = tl.tensor(rng.standard_normal(4)).requires_grad_()
    opt = getattr(optim, name)([warm], **kwargs)
    for _ in range(8):          # past RAdam's rectification threshold, ASGD's t0
        warm.grad = tl.tensor(rng.uniform(0.5, 1.5, 4) * np.sign(rng.standard_normal(4)))
        opt.step()
    state = {k: v.detach().clone() if isinstance(v, tl.Tensor) else v
             for k, v in opt.state[warm].items()}
    tensor_keys = [k for k, v in state.items() if isinstance(v, tl.Tensor) and v.shape == (4,)]

    def one_step(p, g, *tensors):
        p = p.clone()
        p.grad = g
        o = getattr(optim, name)([p], differentiable=True, **kwargs)
        o.state[p].update({k: (v.clone() if isinstance(v, tl.Tensor) else v)
                           for k, v in state.items()})
        o.state[p].update({k: t.clone() for k, t in zip(tensor_keys, tensors)})
        o.step()
        return (p,) + tuple(o.state[p][k] for k in tensor_keys)

    inputs = [warm.detach().clone().requires_grad_(),
              tl.tensor(rng.uniform(0.5, 1.5, 4)).requires_grad_()]
    inputs += [state[k].clone().requires_grad_() for k in tensor_keys]
    # eps small: Adadelta's sqrt(acc_delta + 1e-6) curves hard where acc_delta is tiny
    assert tl.autograd.gradcheck(one_step, tuple(inputs), eps=1e-8, atol=1e-5)


def test_differentiable_asgd_averaging_overwrites_what_backward_needs_as_pytorchs_does():
    """Once averaging starts (mu < 1), ASGD's step multiplies by mu and then overwrites it:
    backward through that step raises, as PyTorch's does."""
    p0 = tl.ones(3, dtype=tl.float64, requires_grad=True)
    p = p0.clone()
    p.grad = tl.ones(3, dtype=tl.float64, requires_grad=True)
    opt = optim.ASGD([p], t0=0, differentiable=True)
    opt.state[p].update(step=tl.tensor(5.0), eta=tl.tensor(0.01), mu=tl.tensor(0.5),
                        ax=tl.zeros(3, dtype=tl.float64, requires_grad=True).clone())
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (p.sum() + opt.state[p]["ax"].sum()).backward()


def test_differentiable_sgd_step_has_the_closed_form_gradient():
    p0 = tl.tensor([1.0, -2.0], requires_grad=True)
    g = tl.tensor([0.5, 0.25], requires_grad=True)
    p = p0.clone()
    p.grad = g
    optim.SGD([p], lr=0.1, weight_decay=0.2, differentiable=True).step()
    assert p.grad_fn is not None and tl.is_grad_enabled()      # grad mode put back
    p.sum().backward()
    np.testing.assert_allclose(p0.grad.numpy(), [1 - 0.1 * 0.2] * 2, rtol=1e-6)
    np.testing.assert_allclose(g.grad.numpy(), [-0.1] * 2, rtol=1e-6)
    # a Tensor lr that requires grad is differentiated too: d sum(p1) / d lr = -sum(g + wd p0)
    lr = tl.tensor(0.1, requires_grad=True)
    p = p0.detach().clone().requires_grad_().clone()
    p.grad = g.detach()
    optim.SGD([p], lr=lr, weight_decay=0.2, differentiable=True).step()
    p.sum().backward()
    assert lr.grad.item() == pytest.approx(-(0.75 + 0.2 * -1.0), rel=1e-6)
    # without differentiable the step is not recorded
    q = tl.tensor([1.0, 2.0], requires_grad=True)
    q.grad = tl.ones(2)
    optim.SGD([q], lr=0.1).step()
    assert q.grad_fn is None


# ---- state_dict layouts and round trips ------------------------------------------------------
GROUP_KEYS = {
    "ASGD": ["alpha", "capturable", "differentiable", "foreach", "lambd", "lr", "maximize",
             "params", "t0", "weight_decay"],
    "Rprop": ["capturable", "differentiable", "etas", "foreach", "lr", "maximize", "params",
              "step_sizes"],
    "Adafactor": ["beta2_decay", "d", "eps", "foreach", "lr", "maximize", "params",
                  "weight_decay"],
    "Muon": ["adjust_lr_fn", "eps", "lr", "momentum", "nesterov", "ns_coefficients",
             "ns_steps", "params", "weight_decay"],
}


@pytest.mark.parametrize("name", list(GROUP_KEYS))
def test_state_dict_round_trip_continues_identically(name):
    shapes = MUON_SHAPES if name == "Muon" else SHAPES
    # float32: load_state_dict casts floating state to the parameters' dtype (PyTorch's
    # rule), which would turn ASGD's float32 eta and mu into float64 ones
    _, opt, params = run(name, {}, dtype=tl.float32, shapes=shapes, steps=5)
    sd = copy.deepcopy(opt.state_dict())
    assert sorted(sd["param_groups"][0]) == GROUP_KEYS[name]
    params2 = [p.detach().clone().requires_grad_() for p in params]
    opt2 = getattr(optim, name)(params2)
    opt2.load_state_dict(sd)
    for gs in gradients(4, shapes, seed=9):
        for o, ps in ((opt, params), (opt2, params2)):
            for p, g in zip(ps, gs):
                p.grad = tl.tensor(g, dtype=tl.float32)
            o.step()
    for p, q in zip(params, params2):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_new_optimizers_option_errors():
    p = [tl.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid eta values: 1.0, 0.5"):
        optim.Rprop(p, etas=(1.0, 0.5))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Rprop(p, lr=-1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.5"):
        optim.ASGD(p, weight_decay=-0.5)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.ASGD(p, lr=tl.tensor([0.1, 0.1]))
    with pytest.raises(ValueError, match="momentum should be >= 0 but is: -1"):
        optim.Muon([tl.zeros(2, 2, requires_grad=True)], momentum=-1)
    with pytest.raises(RuntimeError, match="Foreach is not supported for Muon yet"):
        optim._functional.muon([], [], [], foreach=True, lr=0.1, weight_decay=0, momentum=0,
                               nesterov=False, ns_coefficients=(1, 1, 1), ns_steps=1, eps=0,
                               adjust_lr_fn=None)


def test_lbfgs_keeps_its_curvature_scalars_as_tensors():
    x = tl.tensor([1.5, -0.5], requires_grad=True)
    opt = optim.LBFGS([x], lr=1, max_iter=5)

    def closure():
        opt.zero_grad()
        loss = ((x - tl.tensor([0.5, 0.25])) ** 2 * tl.tensor([1.0, 3.0])).sum()
        loss.backward()
        return loss
    opt.step(closure)
    state = opt.state[x]
    assert all(isinstance(r, tl.Tensor) and r.dim() == 0 for r in state["ro"])
    assert isinstance(state["H_diag"], tl.Tensor)
    np.testing.assert_allclose(x.detach().numpy(), [0.5, 0.25], atol=1e-4)


# ---- swap_in_optimizer_params_and_state ------------------------------------------------------
def test_swap_in_optimizer_params_and_state():
    w = tl.ones(3, requires_grad=True)
    b = tl.zeros(1, requires_grad=True)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    w.grad, b.grad = tl.ones(3), tl.ones(1)
    opt.step()
    live_state = opt.state
    live_params = opt.param_groups[0]["params"]
    sd = copy.deepcopy(opt.state_dict())
    sd["param_groups"][0]["lr"] = 1.0
    w2, b2 = tl.full((3,), 2.0, requires_grad=True), tl.zeros(1, requires_grad=True)
    w2.grad, b2.grad = tl.ones(3), tl.ones(1)
    with optim.swap_in_optimizer_params_and_state(opt, {"w": w2, "b": b2}, sd):
        assert opt.param_groups[0]["params"] == [w2] and opt.param_groups[0]["lr"] == 1.0
        opt.step()
    # momentum 0.9 * 1 + 1 = 1.9, at lr 1.0; the swap-in state's buffer was updated in place
    np.testing.assert_allclose(w2.detach().numpy(), [2.0 - 1.9] * 3, rtol=1e-6)
    np.testing.assert_allclose(sd["state"][0]["momentum_buffer"].numpy(), [1.9] * 3)
    assert opt.state is live_state and opt.param_groups[0]["params"] is live_params
    assert opt.param_groups[0]["lr"] == 0.1
    np.testing.assert_allclose(w.detach().numpy(), [0.9] * 3)
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.SGD([w2]), {"w": w2}, sd):
            pass
    bad = copy.deepcopy(sd)
    bad["param_groups"][0]["extra"] = 1
    with pytest.raises(RuntimeError, match=r"Keys only in swap-in: \['extra'\]"):
        with optim.swap_in_optimizer_params_and_state(opt, {"w": w2, "b": b2}, bad):
            pass
