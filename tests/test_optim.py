"""torchlite.optim optimizers: trajectories against the documented update equations written
out in NumPy (float64), and against PyTorch (same weights, same gradients); state_dict round
trips; param groups; zero_grad; hooks; errors; LBFGS."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
import torchlite.optim as optim
from helpers import available_isa_levels, isa_level

STEPS = 20
SHAPES = [(3, 4), (4,)]


# ---- the problem: gradients of a fixed quadratic plus a step-dependent wiggle ---------------
def initial_weights():
    return [np.linspace(-1.5, 1.2, num=int(np.prod(s))).reshape(s) for s in SHAPES]


def gradient(theta, t, i):
    """The gradient fed at step t to parameter i with value theta (float64 NumPy): of
    sum(a theta^2 / 2 + b theta) plus a deterministic wiggle, so every step differs."""
    k = np.arange(theta.size, dtype=np.float64).reshape(theta.shape)
    a = 0.5 + 0.1 * k
    b = 0.3 * np.cos(k + i)
    return a * theta + b + 0.4 * np.sin(0.7 * t + k + 2 * i)


# ---- NumPy oracles: each is the algorithm as PyTorch documents it ---------------------------
class Oracle:
    """Subclasses implement update(theta, g, s, t) -> new theta for one parameter, with s
    its state dict and t the step number (from 1); g is the raw gradient."""

    def __init__(self, **options):
        self.o = options
        self.states = None
        self.t = 0

    def step(self, thetas, grads):
        if self.states is None:
            self.states = [self.init_state(th) for th in thetas]
        self.t += 1
        return [self.update(th.copy(), g.copy(), s, self.t)
                for th, g, s in zip(thetas, grads, self.states)]

    def init_state(self, theta):
        return {}

    def signed(self, g):
        return -g if self.o.get("maximize", False) else g


class SGDOracle(Oracle):
    def update(self, th, g, s, t):
        o = self.o
        g = self.signed(g)
        mu, wd = o.get("momentum", 0), o.get("weight_decay", 0)
        if wd:
            g = g + wd * th
        if mu:
            s["b"] = g if t == 1 else mu * s["b"] + (1 - o.get("dampening", 0)) * g
            g = g + mu * s["b"] if o.get("nesterov", False) else s["b"]
        return th - o["lr"] * g


class AdamOracle(Oracle):
    decoupled = False

    def init_state(self, th):
        return {"m": np.zeros_like(th), "v": np.zeros_like(th), "vmax": np.zeros_like(th)}

    def update(self, th, g, s, t):
        o = self.o
        lr, (b1, b2), eps, wd = o["lr"], o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8), \
            o.get("weight_decay", 0)
        g = self.signed(g)
        if wd:
            if self.decoupled or o.get("decoupled_weight_decay", False):
                th = th - lr * wd * th
            else:
                g = g + wd * th
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1 ** t)
        v = s["v"]
        if o.get("amsgrad", False):
            s["vmax"] = np.maximum(s["vmax"], s["v"])
            v = s["vmax"]
        v_hat = v / (1 - b2 ** t)
        return th - lr * m_hat / (np.sqrt(v_hat) + eps)


class AdamWOracle(AdamOracle):
    decoupled = True

    def __init__(self, **options):
        super().__init__(**dict({"weight_decay": 1e-2}, **options))


class RMSpropOracle(Oracle):
    def init_state(self, th):
        return {"v": np.zeros_like(th), "b": np.zeros_like(th), "gave": np.zeros_like(th)}

    def update(self, th, g, s, t):
        o = self.o
        alpha, eps, mu, lr = o.get("alpha", 0.99), o.get("eps", 1e-8), o.get("momentum", 0), o["lr"]
        g = self.signed(g)
        if o.get("weight_decay", 0):
            g = g + o["weight_decay"] * th
        s["v"] = alpha * s["v"] + (1 - alpha) * g * g
        v = s["v"]
        if o.get("centered", False):
            s["gave"] = s["gave"] * alpha + (1 - alpha) * g
            v = v - s["gave"] ** 2
        if mu > 0:
            s["b"] = mu * s["b"] + g / (np.sqrt(v) + eps)
            return th - lr * s["b"]
        return th - lr * g / (np.sqrt(v) + eps)


class AdagradOracle(Oracle):
    def init_state(self, th):
        return {"sum": np.full_like(th, self.o.get("initial_accumulator_value", 0))}

    def update(self, th, g, s, t):
        o = self.o
        g = self.signed(g)
        clr = o["lr"] / (1 + (t - 1) * o.get("lr_decay", 0))
        if o.get("weight_decay", 0):
            g = g + o["weight_decay"] * th
        s["sum"] = s["sum"] + g * g
        return th - clr * g / (np.sqrt(s["sum"]) + o.get("eps", 1e-10))


class AdadeltaOracle(Oracle):
    def init_state(self, th):
        return {"v": np.zeros_like(th), "u": np.zeros_like(th)}

    def update(self, th, g, s, t):
        o = self.o
        rho, eps = o.get("rho", 0.9), o.get("eps", 1e-6)
        g = self.signed(g)
        if o.get("weight_decay", 0):
            g = g + o["weight_decay"] * th
        s["v"] = s["v"] * rho + g * g * (1 - rho)
        dx = np.sqrt(s["u"] + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = s["u"] * rho + dx * dx * (1 - rho)
        return th - o.get("lr", 1.0) * dx


class AdamaxOracle(Oracle):
    def init_state(self, th):
        return {"m": np.zeros_like(th), "u": np.zeros_like(th)}

    def update(self, th, g, s, t):
        o = self.o
        b1, b2 = o.get("betas", (0.9, 0.999))
        g = self.signed(g)
        if o.get("weight_decay", 0):
            g = g + o["weight_decay"] * th
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"], np.abs(g) + o.get("eps", 1e-8))
        return th - o["lr"] * s["m"] / ((1 - b1 ** t) * s["u"])


class NAdamOracle(Oracle):
    def init_state(self, th):
        return {"m": np.zeros_like(th), "v": np.zeros_like(th)}

    def mu(self, t):
        b1, psi = self.o.get("betas", (0.9, 0.999))[0], self.o.get("momentum_decay", 4e-3)
        return b1 * (1 - 0.5 * 0.96 ** (t * psi))

    def update(self, th, g, s, t):
        o = self.o
        lr, (b1, b2), eps, wd = o["lr"], o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8), \
            o.get("weight_decay", 0)
        g = self.signed(g)
        if wd:
            if o.get("decoupled_weight_decay", False):
                th = th - lr * wd * th
            else:
                g = g + wd * th
        prod_t = np.prod([self.mu(i) for i in range(1, t + 1)])
        prod_next = prod_t * self.mu(t + 1)
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = self.mu(t + 1) * s["m"] / (1 - prod_next) + (1 - self.mu(t)) * g / (1 - prod_t)
        v_hat = s["v"] / (1 - b2 ** t)
        return th - lr * m_hat / (np.sqrt(v_hat) + eps)


class RAdamOracle(Oracle):
    def init_state(self, th):
        return {"m": np.zeros_like(th), "v": np.zeros_like(th)}

    def update(self, th, g, s, t):
        o = self.o
        lr, (b1, b2), eps, wd = o["lr"], o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8), \
            o.get("weight_decay", 0)
        g = self.signed(g)
        if wd:
            if o.get("decoupled_weight_decay", False):
                th = th - lr * wd * th
            else:
                g = g + wd * th
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            l_t = np.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + eps)
            r_t = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            return th - lr * m_hat * r_t * l_t
        return th - lr * m_hat


ORACLES = {"SGD": SGDOracle, "Adam": AdamOracle, "AdamW": AdamWOracle, "RMSprop": RMSpropOracle,
           "Adagrad": AdagradOracle, "Adadelta": AdadeltaOracle, "Adamax": AdamaxOracle,
           "NAdam": NAdamOracle, "RAdam": RAdamOracle}

# every optimizer with each of its options (the ids name them)
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.1, weight_decay=0.2, momentum=0.5)),
    ("SGD", dict(lr=0.1, maximize=True, weight_decay=0.1, momentum=0.5)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-3)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.9))),     # lerp weight 1 - beta1 >= 0.5
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, maximize=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-4)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.7)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True, eps=1e-3)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-3)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.7, 0.9), weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.05, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.8))),   # rho_t > 5 early: the rectified branch
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
]
CASE_IDS = [name + "-" + "-".join(f"{k}={v}" for k, v in kw.items()) for name, kw in CASES]


def make_params(lib, dtype=None):
    dtype = dtype or lib.float32
    return [lib.tensor(w, dtype=dtype).requires_grad_() for w in initial_weights()]


def run_library(lib, name, kwargs, steps=STEPS, dtype=None):
    """Parameters (float64 NumPy) after `steps` optimizer steps on the test problem."""
    params = make_params(lib, dtype)
    opt = getattr(lib.optim, name)(params, **kwargs)
    for t in range(steps):
        for i, p in enumerate(params):
            g = gradient(p.detach().numpy().astype(np.float64), t, i)
            p.grad = lib.tensor(g, dtype=p.dtype)
        opt.step()
    return [p.detach().numpy().astype(np.float64) for p in params]


def run_oracle(name, kwargs, steps=STEPS):
    thetas = initial_weights()
    oracle = ORACLES[name](**kwargs)
    for t in range(steps):
        thetas = oracle.step(thetas, [gradient(th, t, i) for i, th in enumerate(thetas)])
    return thetas


@pytest.mark.parametrize("name,kwargs", CASES, ids=CASE_IDS)
def test_trajectory_matches_documented_update(name, kwargs):
    got = run_library(tl, name, kwargs)
    want = run_oracle(name, kwargs)
    moved = max(np.max(np.abs(w - w0)) for w, w0 in zip(want, initial_weights()))
    assert moved > 1e-2                                 # the case does exercise the update
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name,kwargs", CASES, ids=CASE_IDS)
def test_trajectory_float64_is_tight(name, kwargs):
    got = run_library(tl, name, kwargs, dtype=tl.float64)
    # NAdam keeps its momentum product in float32 whatever the dtype (as PyTorch does)
    tol = 1e-6 if name == "NAdam" else 1e-10
    for g, w in zip(got, run_oracle(name, kwargs)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol / 10)


@pytest.mark.parametrize("name,kwargs", CASES, ids=CASE_IDS)
def test_trajectory_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    for foreach in (False, None):
        got = run_library(tl, name, kwargs, steps=25)
        want = run_library(torch, name, dict(kwargs, foreach=foreach), steps=25)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ---- state_dict --------------------------------------------------------------------------
def step_with_gradients(opt, params, t):
    for i, p in enumerate(params):
        p.grad = tl.tensor(gradient(p.detach().numpy().astype(np.float64), t, i),
                           dtype=p.dtype)
    opt.step()


@pytest.mark.parametrize("name,kwargs", [c for c in CASES if "maximize" not in c[1]],
                         ids=[i for c, i in zip(CASES, CASE_IDS) if "maximize" not in c[1]])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    params = make_params(tl)
    opt = getattr(optim, name)(params, **kwargs)
    for t in range(7):
        step_with_gradients(opt, params, t)
    saved = copy.deepcopy(opt.state_dict())
    params2 = [p.detach().clone().requires_grad_() for p in params]
    opt2 = getattr(optim, name)(params2, **kwargs)
    opt2.load_state_dict(saved)
    for t in range(7, 15):
        step_with_gradients(opt, params, t)
        step_with_gradients(opt2, params2, t)
    for p, q in zip(params, params2):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_state_dict_layout():
    a, b, c = (tl.ones(n, requires_grad=True) for n in (2, 3, 1))
    opt = optim.Adam([{"params": [a, b]}, {"params": c, "lr": 0.1}], amsgrad=True)
    for p in (a, b, c):
        p.grad = tl.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.1 and sd["param_groups"][0]["lr"] == 1e-3
    assert list(sd["state"]) == [0, 1, 2]
    assert list(sd["state"][0]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    step = sd["state"][0]["step"]
    assert step.dtype is tl.float32 and step.dim() == 0 and step.item() == 1.0
    # the state dicts are the optimizer's own, as in PyTorch
    assert sd["state"][2] is opt.state[c]


@pytest.mark.parametrize("name", list(ORACLES) + ["LBFGS"])
def test_state_dict_layout_matches_torch(name):
    torch = pytest.importorskip("torch")
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9), "RMSprop": dict(momentum=0.5, centered=True)}
    kwargs = kwargs.get(name, {})
    layouts = []
    for lib in (tl, torch):
        params = [lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)]
        opt = getattr(lib.optim, name)(params, **kwargs)

        def closure():
            opt.zero_grad()
            loss = sum(((p - 0.5) ** 2).sum() for p in params)
            loss.backward()
            return loss
        opt.step(closure)
        sd = opt.state_dict()
        # LBFGS keeps its scalars (ro, H_diag, t) as Python floats, PyTorch as 0-d tensors:
        # only its keys are compared
        layouts.append(({k: (list(v), {n: type(x).__name__ for n, x in v.items()}
                             if name != "LBFGS" else None)
                         for k, v in sd["state"].items()}, sd["param_groups"]))
    assert layouts[0] == layouts[1]


def test_load_state_dict_from_torch_then_continue_like_torch():
    torch = pytest.importorskip("torch")
    t_params = make_params(torch)
    t_opt = torch.optim.Adam(t_params, lr=0.05, amsgrad=True)
    for t in range(5):
        for i, p in enumerate(t_params):
            p.grad = torch.tensor(gradient(p.detach().numpy().astype(np.float64), t, i),
                                  dtype=torch.float32)
        t_opt.step()
    sd = t_opt.state_dict()
    converted = {"state": {k: {n: tl.tensor(x.numpy()) for n, x in v.items()}
                           for k, v in sd["state"].items()},
                 "param_groups": sd["param_groups"]}
    params = [tl.tensor(p.detach().numpy()).requires_grad_() for p in t_params]
    opt = optim.Adam(params, lr=0.01)
    opt.load_state_dict(converted)
    assert opt.param_groups[0]["lr"] == 0.05 and opt.param_groups[0]["amsgrad"]
    assert opt.param_groups[0]["params"] == [] or opt.param_groups[0]["params"][0] is params[0]
    for t in range(5, 10):
        for lib_params in (params, t_params):
            for i, p in enumerate(lib_params):
                g = gradient(p.detach().numpy().astype(np.float64), t, i)
                p.grad = tl.tensor(g, dtype=tl.float32) if lib_params is params else \
                    torch.tensor(g, dtype=torch.float32)
        opt.step()
        t_opt.step()
    for p, q in zip(params, t_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_casts_state_to_param_dtype_but_not_step():
    p32 = tl.ones(3, requires_grad=True)
    opt = optim.Adam([p32])
    p32.grad = tl.ones(3)
    opt.step()
    p64 = tl.ones(3, dtype=tl.float64, requires_grad=True)
    opt64 = optim.Adam([p64])
    opt64.load_state_dict(opt.state_dict())
    state = opt64.state[p64]
    assert state["exp_avg"].dtype is tl.float64 and state["exp_avg_sq"].dtype is tl.float64
    assert state["step"].dtype is tl.float32
    p64.grad = tl.ones(3, dtype=tl.float64)
    opt64.step()
    assert state["step"].item() == 2.0


def test_load_state_dict_validates_groups():
    a, b = tl.ones(2, requires_grad=True), tl.ones(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_load_state_dict_restores_group_options_and_keeps_params():
    a = tl.ones(2, requires_grad=True)
    src = optim.SGD([a], lr=0.5, momentum=0.3)
    b = tl.ones(2, requires_grad=True)
    dst = optim.SGD([b], lr=0.1)
    dst.load_state_dict(src.state_dict())
    assert dst.param_groups[0]["lr"] == 0.5 and dst.param_groups[0]["momentum"] == 0.3
    assert dst.param_groups[0]["params"][0] is b


def test_state_dict_hooks():
    a = tl.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    assert opt.state_dict()["extra"] == 1 and calls == ["pre"]
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load_pre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load_post"))
    opt.load_state_dict(optim.SGD([a], lr=0.2).state_dict())
    assert calls[-2:] == ["load_pre", "load_post"] and opt.param_groups[0]["lr"] == 0.2


def test_pickle_and_deepcopy():
    a = tl.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    a.grad = tl.tensor([0.5, -0.5])
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.1
    (state,) = clone.state.values()
    np.testing.assert_array_equal(state["exp_avg"].numpy(), opt.state[a]["exp_avg"].numpy())
    dup = copy.deepcopy(opt)
    assert dup.param_groups[0]["params"][0] is not a
    dup.step()                                           # hooks lists were restored


# ---- param groups ------------------------------------------------------------------------
def test_param_groups_use_their_own_options():
    a, b = tl.zeros(2, requires_grad=True), tl.zeros(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert opt.param_groups[0]["momentum"] == 0 and opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    for _ in range(2):
        a.grad, b.grad = tl.ones(2), tl.ones(2)
        opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [-0.2, -0.2])
    np.testing.assert_allclose(b.detach().numpy(), [-0.5 - 0.5 * 1.9] * 2, rtol=1e-6)
    assert "momentum_buffer" not in opt.state[a] and "momentum_buffer" in opt.state[b]


def test_add_param_group_and_names():
    a, b = tl.zeros(2, requires_grad=True), tl.zeros(3, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["betas"] == (0.5, 0.6) and opt.param_groups[1]["lr"] == 0.1
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    named = optim.SGD([("w", a), ("b", b)], lr=0.1)
    assert named.param_groups[0]["param_names"] == ["w", "b"]
    assert named.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="with/without names"):
        named.add_param_group({"params": [tl.zeros(1, requires_grad=True)]})
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.SGD([("w", a), b], lr=0.1)


def test_duplicate_param_in_group_warns():
    a = tl.zeros(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_required_option():
    a = tl.zeros(2, requires_grad=True)

    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, dict(lr=lr))

    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Custom([a])
    assert Custom([{"params": [a], "lr": 0.3}]).param_groups[0]["lr"] == 0.3
    assert repr(optim.optimizer.required) == "<required parameter>"


def test_accepts_nn_parameter():
    Parameter = getattr(tl.nn, "Parameter", None)
    try:
        w = Parameter(tl.ones(3))
    except Exception:                                    # nn.Parameter not written yet
        pytest.skip("torchlite.nn.Parameter is not available")
    opt = optim.SGD([w], lr=0.5)
    w.grad = tl.ones(3)
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.5] * 3)


# ---- zero_grad, step, closures, hooks ------------------------------------------------------
def test_zero_grad_set_to_none_and_to_zero():
    a = tl.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 2).sum().backward()
    opt.zero_grad()
    assert a.grad is None
    (a * 2).sum().backward()
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0])
    opt.zero_grad(set_to_none=False)                     # no grad at all: fine


def test_zero_grad_detaches_a_grad_with_history():
    a = tl.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a ** 3).sum().backward(create_graph=True)
    assert a.grad.grad_fn is not None
    opt.zero_grad(set_to_none=False)
    assert a.grad.grad_fn is None and not a.grad.requires_grad
    np.testing.assert_array_equal(a.grad.numpy(), [0.0] * 3)


def test_params_without_grad_are_skipped():
    a, b = tl.ones(2, requires_grad=True), tl.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = tl.ones(2)
    opt.step()
    assert b not in opt.state and len(opt.state[a]) == 3
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])


def test_step_runs_without_recording_and_closure_with_grad():
    a = tl.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    seen = []

    def closure():
        seen.append(tl.is_grad_enabled())
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    with tl.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0
    assert a.grad_fn is None and a.is_leaf and a.requires_grad
    assert tl.is_grad_enabled()
    np.testing.assert_allclose(a.detach().numpy(), [0.8, -1.6], rtol=1e-6)
    assert opt.step() is None


def test_step_restores_grad_mode_after_an_error():
    a = tl.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)

    def closure():
        raise KeyError("boom")
    with pytest.raises(KeyError):
        opt.step(closure)
    assert tl.is_grad_enabled()


def test_step_hooks():
    a = tl.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", args, kwargs)))
    g = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a_, k: calls.append("global"))
    try:
        a.grad = tl.ones(2)
        opt.step()
    finally:
        g.remove()
    assert calls == ["global", ("pre", True), ("post", (), {})]
    h1.remove()
    calls.clear()
    opt.step()
    assert calls == [("post", (), {})]


def test_step_pre_hook_may_replace_arguments():
    a = tl.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)

    def closure():
        return 42
    opt.register_step_pre_hook(lambda o, args, kwargs: ((closure,), {}))
    assert opt.step() == 42
    opt2 = optim.SGD([a], lr=0.1)
    opt2.register_step_pre_hook(lambda o, args, kwargs: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt2.step()


def test_subclass_overriding_step_runs_hooks_once():
    a = tl.ones(2, requires_grad=True)

    class Scaled(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    opt = Scaled([a], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda *args: calls.append(1))
    a.grad = tl.ones(2)
    opt.step()
    assert calls == [1]
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 0.9])


def test_tensor_lr():
    a = tl.ones(2, requires_grad=True)
    lr = tl.tensor(0.25)
    opt = optim.SGD([a], lr=lr)
    a.grad = tl.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.75, 0.75])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.SGD([a], lr=tl.tensor([0.1, 0.2]))


def test_non_contiguous_params_and_grads(threads):
    base = tl.tensor(np.arange(24, dtype=np.float32).reshape(4, 6) / 10)
    w = base.t().detach().requires_grad_()                # a transposed leaf
    assert not w.is_contiguous()
    opt = optim.Adam([w], lr=0.1, amsgrad=True)
    ref = w.detach().numpy().astype(np.float64)
    oracle = AdamOracle(lr=0.1, amsgrad=True)
    for t in range(5):
        g = tl.tensor(np.ones((6, 8), np.float32) * (t + 1))[:, ::2]    # strided gradient
        w.grad = g
        opt.step()
        (ref,) = oracle.step([ref], [g.numpy().astype(np.float64)])
    np.testing.assert_allclose(w.detach().numpy(), ref, rtol=1e-5, atol=1e-6)


# ---- the fused steps (torchlite/_ops/optim.py: one kernel pass per parameter) ------------
FUSED_CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1), "sgd_steps"),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True), "sgd_steps"),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1), "adam_step"),
    ("AdamW", dict(lr=0.01, weight_decay=0.2, maximize=True), "adam_step"),
]


def _counting(monkeypatch, kernel):
    """Count the calls of _dispatch.optim.<kernel> that ran (returned True)."""
    from torchlite import _dispatch
    calls = []
    real = getattr(_dispatch.optim, kernel)

    def counted(*args, **kwargs):
        ran = real(*args, **kwargs)
        calls.append(ran)
        return ran
    monkeypatch.setattr(_dispatch.optim, kernel, counted)
    return calls


@pytest.mark.parametrize("level", available_isa_levels())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs,kernel", FUSED_CASES, ids=[c[0] + str(i) for i, c in
                                                                 enumerate(FUSED_CASES)])
def test_fused_step_on_a_large_parameter(monkeypatch, name, kwargs, kernel, dtype, level):
    """Large enough to run in parallel chunks: at each SIMD level, the same bits at 1 and 2
    threads, the documented update's values (NumPy, float64), and the kernel did run."""
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal(200_003)
    grads = [rng.standard_normal(200_003) for _ in range(3)]
    calls = _counting(monkeypatch, kernel)
    results = []
    old = tl.get_num_threads()
    try:
        with isa_level(level):
            for nthreads in (1, 2):
                tl.set_num_threads(nthreads)
                p = tl.tensor(w0, dtype=getattr(tl, dtype)).requires_grad_()
                opt = getattr(optim, name)([p], **kwargs)
                for g in grads:
                    p.grad = tl.tensor(g, dtype=p.dtype)
                    opt.step()
                results.append(p.detach().numpy())
    finally:
        tl.set_num_threads(old)
    assert calls == [True] * 6
    np.testing.assert_array_equal(results[0], results[1])
    oracle, theta = ORACLES[name](**kwargs), [w0]
    for g in grads:
        theta = oracle.step(theta, [g])
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(results[0], theta[0], rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kwargs,kernel", FUSED_CASES[::2])
def test_fused_step_and_tensor_ops_agree(monkeypatch, name, kwargs, kernel):
    """The kernel and the Tensor-op formulas it replaces give the same trajectory (to
    rounding), and tensors it does not take (float16) run the Tensor ops."""
    def run(fused):
        params = make_params(tl)
        if not fused:
            monkeypatch.setattr(tl._dispatch.optim, kernel, lambda *a, **k: False)
        opt = getattr(optim, name)(params, **kwargs)
        for t in range(10):
            for i, p in enumerate(params):
                p.grad = tl.tensor(gradient(p.detach().numpy().astype(np.float64), t, i),
                                   dtype=p.dtype)
            opt.step()
        monkeypatch.undo()
        return [p.detach().numpy() for p in params]
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    calls = _counting(monkeypatch, kernel)
    h = tl.ones(3, dtype=tl.float16, requires_grad=True)
    opt = getattr(optim, name)([h], **kwargs)
    h.grad = tl.full((3,), 0.5, dtype=tl.float16)
    opt.step()
    assert calls == [False] and h.dtype == tl.float16
    assert not np.allclose(h.detach().numpy().astype(np.float32), 1.0)


def test_fused_step_leaves_a_recorded_update_to_autograd():
    """The functional form called with grad mode on and a parameter that requires grad: the
    in-place update of a leaf raises as PyTorch's does, it is not done behind autograd's
    back by the kernel."""
    from torchlite.optim.sgd import sgd
    p = tl.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        sgd([p], [tl.ones(4)], [None], weight_decay=0, momentum=0, lr=0.1, dampening=0,
            nesterov=False, maximize=False)
    with tl.no_grad():
        sgd([p], [tl.ones(4)], [None], weight_decay=0, momentum=0, lr=0.1, dampening=0,
            nesterov=False, maximize=False)
    np.testing.assert_allclose(p.detach().numpy(), 0.9)


@st.composite
def strided_arrays(draw):
    """Float32 values, an index (every dim sliced with step 1 or 2) and whether to transpose:
    the recipe of a parameter of 0-3 dims (sizes 0-4) with any strides."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    step = draw(st.integers(1, 2))
    full = tuple(n * step for n in shape)
    values = np.random.default_rng(draw(st.integers(0, 1000))).standard_normal(full)
    index = tuple(slice(None, None, step) for _ in shape)
    return values.astype(np.float32), index, draw(st.booleans())


@settings(max_examples=40, deadline=None)
@given(strided_arrays(), strided_arrays(), st.sampled_from(["SGD", "Adam", "RMSprop"]))
def test_any_layout_matches_the_oracle(param_spec, grad_spec, name):
    values, index, transpose = param_spec
    base = tl.tensor(values)[index]
    p = (base.t() if transpose and base.dim() == 2 else base).detach().requires_grad_()
    shape = tuple(p.shape)
    g_values = grad_spec[0] if grad_spec[0].size else np.ones(1, np.float32)
    g = tl.tensor(np.resize(g_values, shape + (2,)))[..., 0]    # strided (last stride 2)
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.1), "Adam": dict(lr=0.1),
              "RMSprop": dict(lr=0.01, centered=True)}[name]
    opt = getattr(optim, name)([p], **kwargs)
    oracle = ORACLES[name](**kwargs)
    theta = p.detach().numpy().astype(np.float64)
    for _ in range(3):
        p.grad = g
        opt.step()
        (theta,) = oracle.step([theta], [g.numpy().astype(np.float64)])
    assert tuple(p.shape) == shape
    np.testing.assert_allclose(p.detach().numpy(), theta, rtol=1e-4, atol=1e-5)


def test_float64_and_empty_and_zero_dim_params():
    a = tl.tensor(2.0, dtype=tl.float64, requires_grad=True)
    e = tl.zeros(0, 3, requires_grad=True)
    opt = optim.Adam([a, e], lr=0.1)
    a.grad = tl.tensor(1.0, dtype=tl.float64)
    e.grad = tl.zeros(0, 3)
    opt.step()
    assert a.dtype is tl.float64 and abs(a.item() - (2 - 0.1 / (1 + 1e-8))) < 1e-15
    assert opt.state[a]["exp_avg"].dtype is tl.float64 and tuple(e.shape) == (0, 3)


# ---- errors ------------------------------------------------------------------------------
ERROR_CASES = [
    (optim.SGD, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.SGD, dict(lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (optim.SGD, dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.SGD, dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero "
                                             "dampening"),
    (optim.SGD, dict(lr=0.1, nesterov=True, momentum=0.9, dampening=0.1), "Nesterov momentum"),
    (optim.Adam, dict(lr=-1.0), "Invalid learning rate"),
    (optim.Adam, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.Adam, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.Adam, dict(betas=(0, 0.9)), "betas must be either both floats or both Tensors"),
    (optim.Adam, dict(weight_decay=-0.1), "Invalid weight_decay value"),
    (optim.AdamW, dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1"),
    (optim.RMSprop, dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    (optim.RMSprop, dict(momentum=-0.5), "Invalid momentum value"),
    (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    (optim.Adadelta, dict(rho=1.5), "Invalid rho value: 1.5"),
    (optim.Adamax, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
    (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (optim.RAdam, dict(eps=-1e-8), "Invalid epsilon value"),
    (optim.LBFGS, dict(lr=-1), "Invalid learning rate"),
]


@pytest.mark.parametrize("cls,kwargs,message", ERROR_CASES,
                         ids=[f"{c.__name__}-{k}" for c, k, _ in ERROR_CASES])
def test_invalid_options(cls, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls([tl.zeros(2, requires_grad=True)], **kwargs)


@pytest.mark.parametrize("cls,kwargs,message", ERROR_CASES[:11],
                         ids=[f"{c.__name__}-{k}" for c, k, _ in ERROR_CASES[:11]])
def test_invalid_options_same_error_as_torch(cls, kwargs, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, cls.__name__)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        cls([tl.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_bad_params():
    a = tl.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got "
                                        "torchlite.FloatTensor"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        optim.SGD([a, 3], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([a], lr=0.1).add_param_group({"params": {tl.zeros(1, requires_grad=True)}})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        optim.SGD([a], lr=0.1).add_param_group([a])
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.Adam([a], fused=True, differentiable=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.SGD([a], fused=True, foreach=True)


def test_non_leaf_that_retains_grad_is_accepted():
    a = tl.ones(2, requires_grad=True)
    b = a * 2
    b.retain_grad()
    optim.SGD([b], lr=0.1)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    for name, kwargs in [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", {}), ("AdamW", {}),
                         ("RMSprop", dict(centered=True)), ("Adagrad", {}), ("Adadelta", {}),
                         ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("LBFGS", {})]:
        ours = getattr(optim, name)([{"params": [tl.zeros(2, requires_grad=True)]},
                                     {"params": [tl.zeros(2, requires_grad=True)], "lr": 0.5}],
                                    **kwargs) if name != "LBFGS" else \
            optim.LBFGS([tl.zeros(2, requires_grad=True)])
        theirs = getattr(torch.optim, name)([{"params": [torch.zeros(2, requires_grad=True)]},
                                             {"params": [torch.zeros(2, requires_grad=True)],
                                              "lr": 0.5}], **kwargs) if name != "LBFGS" else \
            torch.optim.LBFGS([torch.zeros(2, requires_grad=True)])
        assert repr(ours) == repr(theirs)


# ---- LBFGS -------------------------------------------------------------------------------
def quadratic_problem(lib, dtype="float32", n=6):
    """0.5 x'Ax - b'x + 0.05 sum(x^4) with A well conditioned (eigenvalues 1..3)."""
    rng = np.random.default_rng(3)
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A = ((q * np.linspace(1, 3, n)) @ q.T).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    x = lib.tensor(np.zeros(n, dtype), requires_grad=True)
    At, bt = lib.tensor(A), lib.tensor(b)

    def loss_of(v):
        return 0.5 * (v * (At @ v)).sum() - (bt * v).sum() + 0.05 * (v ** 4).sum()
    return x, loss_of, A.astype(np.float64), b.astype(np.float64)


def lbfgs_closure(opt, loss_of, x):
    def closure():
        opt.zero_grad()
        loss = loss_of(x)
        loss.backward()
        return loss
    return closure


def test_lbfgs_first_iteration_is_a_scaled_gradient_step():
    x, loss_fn, A, b = quadratic_problem(tl)
    opt = optim.LBFGS([x], lr=0.5, max_iter=1)
    loss = opt.step(lbfgs_closure(opt, loss_fn, x))
    g0 = -b                                             # gradient at x = 0
    want = -min(1.0, 1.0 / np.abs(g0).sum()) * 0.5 * g0
    np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-6)
    assert loss.item() == 0.0
    state = opt.state[x]
    assert state["n_iter"] == 1 and state["func_evals"] == 1


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_converges_to_the_minimiser(line_search_fn):
    # float64: in float32 the loss stops resolving progress near the minimum (PyTorch too)
    x, loss_fn, A, b = quadratic_problem(tl, "float64")
    opt = optim.LBFGS([x], lr=1, line_search_fn=line_search_fn, history_size=4,
                      tolerance_grad=1e-12, tolerance_change=1e-14)
    closure = lbfgs_closure(opt, loss_fn, x)
    for _ in range(3):
        opt.step(closure)
    xs = x.detach().numpy()
    np.testing.assert_allclose(A @ xs - b + 0.2 * xs ** 3, 0, atol=1e-6)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("dtype,steps,tol", [("float32", 1, 1e-5), ("float64", 3, 1e-10)])
def test_lbfgs_matches_torch(line_search_fn, dtype, steps, tol):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tl, torch):
        x, loss_fn, _, _ = quadratic_problem(lib, dtype)
        opt = lib.optim.LBFGS([x], lr=1, line_search_fn=line_search_fn, history_size=3,
                              max_iter=6, tolerance_grad=1e-12, tolerance_change=1e-14)
        for _ in range(steps):
            opt.step(lbfgs_closure(opt, loss_fn, x))
        results.append((x.detach().numpy().copy(), opt.state[x]["n_iter"],
                        opt.state[x]["func_evals"]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=tol, atol=tol)
    assert results[0][1:] == results[1][1:]


def test_lbfgs_rosenbrock_with_two_params():
    a = tl.tensor([-1.0], requires_grad=True)
    b = tl.tensor([1.5], requires_grad=True)
    opt = optim.LBFGS([a, b], lr=1, line_search_fn="strong_wolfe", max_iter=50)

    def closure():
        opt.zero_grad()
        loss = ((1 - a) ** 2 + 100 * (b - a * a) ** 2).sum()
        loss.backward()
        return loss
    for _ in range(4):
        opt.step(closure)
    assert abs(a.item() - 1) < 1e-3 and abs(b.item() - 1) < 2e-3


def test_lbfgs_stops_at_a_stationary_point_and_errors():
    x = tl.zeros(3, requires_grad=True)
    opt = optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss
    opt.step(closure)
    assert len(calls) == 1 and opt.state[x]["n_iter"] == 0
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [tl.zeros(1, requires_grad=True)]},
                     {"params": [tl.zeros(1, requires_grad=True)]}])
    y = tl.ones(2, requires_grad=True)
    bad = optim.LBFGS([y], line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(lambda: (y * y).sum())


def test_lbfgs_state_dict_round_trip():
    x, loss_of, _, _ = quadratic_problem(tl)
    opt = optim.LBFGS([x], max_iter=2, history_size=3)
    opt.step(lbfgs_closure(opt, loss_of, x))
    saved = copy.deepcopy(opt.state_dict())
    x2 = x.detach().clone().requires_grad_()
    opt2 = optim.LBFGS([x2], max_iter=2, history_size=3)
    opt2.load_state_dict(saved)
    opt.step(lbfgs_closure(opt, loss_of, x))
    opt2.step(lbfgs_closure(opt2, loss_of, x2))
    np.testing.assert_array_equal(x2.detach().numpy(), x.detach().numpy())


def test_functional_forms_match_the_classes():
    from torchlite.optim.sgd import sgd
    from torchlite.optim.adam import adam
    p = tl.tensor([1.0, 2.0])
    g = tl.tensor([0.5, -1.0])
    bufs = [None]
    sgd([p], [g], bufs, weight_decay=0, momentum=0.9, lr=0.1, dampening=0, nesterov=False,
        maximize=False)
    np.testing.assert_allclose(p.numpy(), [0.95, 2.1], rtol=1e-6)
    np.testing.assert_array_equal(bufs[0].numpy(), g.numpy())
    q = tl.tensor([1.0, 2.0])
    step = tl.tensor(0.0)
    adam([q], [g], [tl.zeros(2)], [tl.zeros(2)], [], [step], amsgrad=False, beta1=0.9,
         beta2=0.999, lr=0.1, weight_decay=0, eps=1e-8, maximize=False)
    np.testing.assert_allclose(q.numpy(), [0.9, 2.1], rtol=1e-5)
    assert step.item() == 1.0


def test_no_warnings_in_ordinary_use():
    a = tl.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for cls in (optim.SGD, optim.Adam, optim.RMSprop, optim.NAdam):
            opt = cls([a], lr=0.01)
            a.grad = tl.ones(2)
            opt.step()
            opt.zero_grad()


def test_training_a_linear_layer_like_torch():
    """End to end: nn.Linear + MSE loss + backward + Adam/SGD steps, weights copied from torch."""
    torch = pytest.importorskip("torch")
    if not hasattr(tl.nn, "Linear"):
        pytest.skip("torchlite.nn.Linear is not available")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)
    for name, kwargs in [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                         ("Adam", dict(lr=0.01, weight_decay=0.01))]:
        t_layer = torch.nn.Linear(5, 3)
        layer = tl.nn.Linear(5, 3)
        with tl.no_grad():
            layer.weight.copy_(tl.tensor(t_layer.weight.detach().numpy()))
            layer.bias.copy_(tl.tensor(t_layer.bias.detach().numpy()))
        runs = []
        for lib, module in ((tl, layer), (torch, t_layer)):
            opt = getattr(lib.optim, name)(module.parameters(), **kwargs)
            xs, ys = lib.tensor(x), lib.tensor(y)
            for _ in range(15):
                opt.zero_grad()
                loss = ((module(xs) - ys) ** 2).mean()
                loss.backward()
                opt.step()
            runs.append([p.detach().numpy().copy() for p in module.parameters()])
        for a, b in zip(*runs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
