"""torchlite.optim against PyTorch's own optimizer test database: every configuration that
torch.testing._internal.common_optimizers.optim_db lists (each OptimizerInfo's
optim_inputs_func, for the CPU and for CUDA, crossed with the implementation flags it
supports: foreach, fused, differentiable; in float32, and in complex64 where the optimizer
takes complex parameters) runs in torchlite and in PyTorch from the same initial parameters
with the same gradients.  The parameter trajectories, the state_dict() structure and values,
and a PyTorch state dict loaded into torchlite and stepped on must agree.  A differentiable
configuration also backpropagates through all its steps (the same gradients, or PyTorch and
torchlite both raise because a later step overwrote what an earlier one saved), and through
one recorded step from a warm state whose per-element tensors require grad (PyTorch's own
differentiable check).  optim_db's error inputs must raise PyTorch's exception type with its
message.

PyTorch runs every configuration through its single-tensor CPU path (foreach, fused and
capturable only choose how PyTorch computes, and capturable needs a CUDA device there);
torchlite runs the configuration as given.  SparseAdam takes sparse gradients only, which
torchlite does not have: its class must refuse a dense one as PyTorch's does, and its update
rule (torchlite.optim._functional.sparse_adam, given the gradients' COO indices and values)
must follow PyTorch's class.  LBFGS runs in float64 (see DTYPE).

Each configuration is one test, so pytest's report (-v) is the per-configuration result;
`python tests/test_optim_db.py` prints the same as a table with the totals.  Skips where
PyTorch is not installed."""
import copy
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
common_optimizers = pytest.importorskip("torch.testing._internal.common_optimizers")

import torchlite as tl  # noqa: E402

STEPS = 4
RELOAD_STEPS = 2
# float32 trajectories: PyTorch's single-tensor path and torchlite round the same formulas
# in a slightly different order; Muon orthogonalises in bfloat16 (8 bits of mantissa)
TOL = {"default": (2e-5, 2e-6), "Muon": (2e-2, 2e-4), "LBFGS": (1e-9, 1e-10)}
# LBFGS reaches float32's noise floor within one step (20 iterations) on any problem small
# enough for a test, and there the loss's own last bits (summed in a different order) decide
# the line search's branches: it runs in float64
DTYPE = {"LBFGS": {"float32": "float64", "complex64": "complex128"}}
GRAD_TOL = (1e-4, 1e-5)

# Configurations torchlite does not pass, with the reason (shown as xfail in the report)
KNOWN_FAILURES = {}


# ---- the configurations ------------------------------------------------------------------
def _configurations():
    """(id, OptimizerInfo, kwargs, dtype) for every optim_inputs_func configuration (CPU and
    CUDA ones, deduplicated) crossed with the OptimizerInfo's supported implementation flags,
    as PyTorch's _get_optim_inputs_including_global_cliquey_kwargs does: the base with every
    flag False, then each flag True on its own; in float32 (optim_db's dtype), and again in
    complex64 where the OptimizerInfo supports complex parameters (PyTorch's test_complex;
    not the differentiable variants, whose check backpropagates a real projection)."""
    out = []
    for info in common_optimizers.optim_db:
        name = info.optim_cls.__name__
        seen = []
        inputs = []
        for device in ("cpu", "cuda"):
            for oi in info.optim_inputs_func(device):
                key = (oi.desc, repr(oi.kwargs))
                if key not in seen:
                    seen.append(key)
                    inputs.append(oi)
        for n, oi in enumerate(inputs):
            base = dict(oi.kwargs, **{flag: False for flag in info.supported_impls})
            variants = [("", base)] + [(f" & {flag}", dict(base, **{flag: True}))
                                       for flag in info.supported_impls]
            for suffix, kwargs in variants:
                out.append((f"{name}[{n}:{oi.desc}{suffix}]", info, kwargs, "float32"))
                if info.supports_complex and not kwargs.get("differentiable"):
                    out.append((f"{name}[{n}:{oi.desc}{suffix} complex64]", info, kwargs,
                                "complex64"))
    return out


CONFIGURATIONS = _configurations()


def _error_inputs():
    out = []
    for info in common_optimizers.optim_db:
        if info.optim_error_inputs_func is None:
            continue
        for n, err in enumerate(info.optim_error_inputs_func("cpu", torch.float32)):
            out.append((f"{info.optim_cls.__name__}[{n}:{err.optimizer_error_input.desc}]",
                        info, err))
    return out


ERROR_INPUTS = _error_inputs()


# ---- conversion torch -> torchlite ---------------------------------------------------------
def to_tl(x):
    """A torch value (kwargs, state dicts) with its tensors as torchlite tensors."""
    if isinstance(x, torch.Tensor):
        t = tl.tensor(x.detach().numpy())
        return t.requires_grad_() if x.requires_grad else t
    if isinstance(x, dict):
        return {k: to_tl(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_tl(v) for v in x)
    return x


def torch_reference_kwargs(kwargs):
    """The configuration for PyTorch's single-tensor CPU path: the same update rule."""
    ref = dict(kwargs)
    for flag in ("foreach", "fused", "capturable"):
        if flag in ref:
            ref[flag] = False
    return ref


def as_numpy(t):
    t = t.detach().numpy()
    return t.astype(np.complex128 if np.iscomplexobj(t) else np.float64)


# ---- the problem -----------------------------------------------------------------------
def shapes_for(name):
    # Muon takes matrices only; the others also get a vector and a 3-d tensor (Adafactor
    # factors the last two dims of anything with more than one)
    return [(5, 3), (3, 4)] if name == "Muon" else [(5, 3), (4,), (2, 3, 2)]


def random_values(rng, shape, dtype):
    values = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def initial_values(name, dtype="float32"):
    rng = np.random.default_rng(7)
    return [random_values(rng, s, DTYPE.get(name, {}).get(dtype, dtype))
            for s in shapes_for(name)]


def gradient_values(name, steps, dtype="float32"):
    """Per step, per parameter: a fixed gradient with a few exact zeros (Rprop's sign 0,
    SparseAdam's unmaterialised entries)."""
    rng = np.random.default_rng(11)
    out = []
    for _ in range(steps):
        gs = []
        for s in shapes_for(name):
            g = random_values(rng, s, DTYPE.get(name, {}).get(dtype, dtype))
            g[rng.random(s) < 0.2] = 0.0
            gs.append(g)
        out.append(gs)
    return out


def quadratic_loss(lib, params):
    """LBFGS's objective: a separable quartic-plus-quadratic with a known minimum (of the
    real and imaginary parts, for complex parameters)."""
    loss = 0
    for i, p in enumerate(params):
        if p.is_complex():
            p = lib.view_as_real(p)
        k = lib.arange(p.numel(), dtype=p.dtype).reshape(p.shape)
        loss = loss + (0.5 * (1 + 0.1 * k) * p * p + 0.1 * (k - i) * p + 0.05 * p ** 4).sum()
    return loss


class Run:
    """One library's optimizer over the problem: its parameters and the steps taken."""

    def __init__(self, lib, info, kwargs, differentiable=False, sparse_grads=False,
                 dtype="float32"):
        self.lib, self.info, self.name = lib, info, info.optim_cls.__name__
        self.differentiable = differentiable
        self.sparse_grads = sparse_grads
        values = initial_values(self.name, dtype)
        self.leaves = [lib.tensor(v).requires_grad_() for v in values]
        # differentiable: PyTorch's setting, parameters that are not leaves (the step is
        # recorded into them in place)
        self.params = [p.clone() for p in self.leaves] if differentiable else self.leaves
        self.grad_leaves = []
        self.opt = getattr(lib.optim, self.name)(self.params, **kwargs)

    def step(self, grads):
        lib = self.lib
        if self.info.step_requires_closure:
            def closure():
                self.opt.zero_grad()
                loss = quadratic_loss(lib, self.params)
                loss.backward()
                return loss
            return self.opt.step(closure)
        for p, g in zip(self.params, grads):
            g = lib.tensor(g)
            if self.differentiable:
                g.requires_grad_()
                self.grad_leaves.append(g)
            if self.sparse_grads:
                g = g.to_sparse()
            p.grad = g
        return self.opt.step()

    def values(self):
        return [p.detach().numpy().copy() for p in self.params]

    def backward_through_steps(self):
        """Gradients of a fixed projection of the final parameters with respect to the
        initial parameters and to every gradient fed in (None where not reached)."""
        lib = self.lib
        rng = np.random.default_rng(3)
        loss = sum((p * lib.tensor(rng.standard_normal(p.shape).astype(np.float32))).sum()
                   for p in self.params)
        loss.backward()
        return [None if t.grad is None else as_numpy(t.grad)
                for t in self.leaves + self.grad_leaves]


def _value_kind(v):
    if isinstance(v, (torch.Tensor, tl.Tensor)):
        return ("tensor", tuple(v.shape), str(v.dtype).split(".")[-1])
    return (type(v).__name__,)


def assert_same_state_dict(got, want, rtol, atol, options=None):
    """torchlite's state_dict() against PyTorch's: the same keys, the same per-parameter state
    (names in order, kinds, shapes, dtypes, values) and the same group options (`options`
    gives the implementation flags the configuration set, which PyTorch's reference run
    did not)."""
    assert list(got) == list(want)
    assert len(got["param_groups"]) == len(want["param_groups"])
    for g, w in zip(got["param_groups"], want["param_groups"]):
        assert sorted(g) == sorted(w)
        for key in w:
            a, b = g[key], (options or {}).get(key, w[key])
            if isinstance(b, torch.Tensor) or (isinstance(b, tuple) and b and
                                               isinstance(b[0], torch.Tensor)):
                np.testing.assert_allclose(np.asarray(to_numpy_nested(a)),
                                           np.asarray(to_numpy_nested(b)), err_msg=key)
            else:
                assert a == b, (key, a, b)
    assert list(got["state"]) == list(want["state"])
    for k in want["state"]:
        gs, ws = got["state"][k], want["state"][k]
        assert list(gs) == list(ws), (k, list(gs), list(ws))
        for name in ws:
            assert_same_value(gs[name], ws[name], rtol, atol, name)


def assert_same_value(got, want, rtol, atol, name):
    """One per-parameter state value: the same kind (tensor of a shape and dtype, number,
    list...) and the same value."""
    assert _value_kind(got) == _value_kind(want), (name, got, want)
    if isinstance(want, torch.Tensor):
        np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=rtol, atol=atol,
                                   err_msg=name)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), name
        for a, b in zip(got, want):
            assert_same_value(a, b, rtol, atol, name)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=rtol, abs=atol), name
    else:
        assert got == want, name


def to_numpy_nested(x):
    if isinstance(x, (torch.Tensor, tl.Tensor)):
        return x.detach().numpy().astype(np.float64).reshape(-1)
    if isinstance(x, (list, tuple)):
        return [to_numpy_nested(v) for v in x]
    return np.float64(x).reshape(-1)


# ---- the tests -----------------------------------------------------------------------------
def _check_configuration(info, kwargs, dtype="float32"):
    name = info.optim_cls.__name__
    if not hasattr(tl.optim, name):
        raise AssertionError(f"torchlite.optim has no {name}")
    rtol, atol = TOL.get(name, TOL["default"])
    differentiable = bool(kwargs.get("differentiable"))
    sparse = info.only_supports_sparse_grads
    grads = gradient_values(name, STEPS + RELOAD_STEPS, dtype)
    ref = Run(torch, info, torch_reference_kwargs(kwargs), differentiable, sparse, dtype)
    got = Run(tl, info, to_tl(kwargs), differentiable, dtype=dtype)
    if sparse:
        return _check_sparse_configuration(ref, got, grads, rtol, atol)
    for t in range(STEPS):
        ref.step(grads[t])
        got.step(grads[t])
        for a, b in zip(got.values(), ref.values()):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"step {t + 1}")
    flags = {k: v for k, v in kwargs.items() if k in ("foreach", "fused", "capturable")}
    assert_same_state_dict(got.opt.state_dict(), ref.opt.state_dict(), rtol, atol, flags)
    if differentiable:
        check_backward_through_steps(got, ref)
        check_one_step_gradients(info, kwargs, grads)
        return
    # PyTorch's state dict loaded into a fresh torchlite optimizer (on a copy of PyTorch's
    # parameters) continues exactly as PyTorch does
    resumed = Run(tl, info, to_tl(kwargs), dtype=dtype)
    with tl.no_grad():
        for p, v in zip(resumed.params, ref.values()):
            p.copy_(tl.tensor(v))
    resumed.opt.load_state_dict(to_tl(copy.deepcopy(ref.opt.state_dict())))
    for t in range(STEPS, STEPS + RELOAD_STEPS):
        ref.step(grads[t])
        resumed.step(grads[t])
        for a, b in zip(resumed.values(), ref.values()):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol,
                                       err_msg=f"step {t + 1} after load_state_dict")


def check_backward_through_steps(got, ref):
    """Backward through all the steps taken: where PyTorch's graph holds (some optimizers
    overwrite, in a later step, a value an earlier step saved for backward: PyTorch raises
    then), torchlite's gives the same gradients; where PyTorch raises, torchlite raises."""
    try:
        want = ref.backward_through_steps()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            got.backward_through_steps()
        return
    for i, (a, b) in enumerate(zip(got.backward_through_steps(), want)):
        assert_same_gradient(a, b, f"through all steps: gradient {i}")


def one_step_gradients(lib, info, kwargs, grads):
    """PyTorch's differentiable-optimizer check (its test_optim's _diff_fn): from the state
    that a few ordinary steps left, one recorded step on a non-leaf parameter whose gradient
    and per-element state tensors are leaves requiring grad; returns the gradients of a
    fixed projection of the stepped parameters and state with respect to all of those."""
    warm = Run(lib, info, dict(kwargs, differentiable=False))
    for g in grads[:-1]:
        warm.step(g)
    leaves = [lib.tensor(v).requires_grad_() for v in warm.values()]
    params = [p.clone() for p in leaves]
    opt = getattr(lib.optim, info.optim_cls.__name__)(params, **kwargs)
    outputs = list(params)
    for p, wp, g in zip(params, warm.params, grads[-1]):
        for key, value in warm.opt.state[wp].items():
            if isinstance(value, (torch.Tensor, tl.Tensor)) and value.shape == p.shape:
                leaf = value.detach().clone().requires_grad_()
                leaves.append(leaf)
                value = leaf.clone()
                outputs.append(value)
            elif isinstance(value, (torch.Tensor, tl.Tensor)):
                value = value.detach().clone()
            opt.state[p][key] = value
        grad = lib.tensor(g).requires_grad_()
        leaves.append(grad)
        p.grad = grad
    opt.step()
    rng = np.random.default_rng(5)
    loss = sum((o * lib.tensor(rng.standard_normal(o.shape).astype(np.float32))).sum()
               for o in outputs)
    loss.backward()
    return [None if t.grad is None else as_numpy(t.grad) for t in leaves]


def check_one_step_gradients(info, kwargs, grads):
    want = one_step_gradients(torch, info, torch_reference_kwargs(kwargs), grads[:3])
    got = one_step_gradients(tl, info, to_tl(kwargs), grads[:3])
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert_same_gradient(a, b, f"one recorded step: gradient {i}")


def assert_same_gradient(got, want, what):
    """Gradients of one leaf.  None (the graph does not reach the leaf) and zeros are taken
    as equal: PyTorch reaches a leaf through paths that carry only zeros where torchlite's
    graph stops (the value copy_ overwrites; a sign used only in comparisons)."""
    if got is None or want is None:
        other = want if got is None else got
        assert other is None or not np.any(other), what
        return
    np.testing.assert_allclose(got, want, rtol=GRAD_TOL[0], atol=GRAD_TOL[1], err_msg=what)


def _check_sparse_configuration(ref, got, grads, rtol, atol):
    """SparseAdam: PyTorch takes sparse gradients only; torchlite has no sparse layout, so
    its SparseAdam refuses every (dense) gradient with PyTorch's error, and its update rule
    runs through the functional form on the gradient's COO indices and values."""
    from torchlite.optim._functional import sparse_adam
    dense_torch = torch.optim.SparseAdam([torch.zeros(2, requires_grad=True)])
    dense_torch.param_groups[0]["params"][0].grad = torch.ones(2)
    with pytest.raises(RuntimeError) as want:
        dense_torch.step()
    got.params[0].grad = tl.ones(got.params[0].shape)
    with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
        got.opt.step()
    for p in got.params:
        p.grad = None
    for t in range(STEPS):
        ref.step(grads[t])
        group = got.opt.param_groups[0]
        state = [got.opt.state[p] for p in got.params]
        for p, s in zip(got.params, state):
            if not s:
                s.update(step=0, exp_avg=tl.zeros_like(p), exp_avg_sq=tl.zeros_like(p))
            s["step"] += 1
        coo = []
        for g in grads[t]:
            sp = torch.tensor(g).to_sparse()
            coo.append((to_tl(sp._indices()), to_tl(sp._values())))
        with tl.no_grad():
            sparse_adam(got.params, coo, [s["exp_avg"] for s in state],
                        [s["exp_avg_sq"] for s in state], [s["step"] for s in state],
                        eps=group["eps"], beta1=group["betas"][0], beta2=group["betas"][1],
                        lr=group["lr"], maximize=group["maximize"])
        for a, b in zip(got.values(), ref.values()):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"step {t + 1}")
    assert_same_state_dict(got.opt.state_dict(), ref.opt.state_dict(), rtol, atol)
    resumed = Run(tl, ref.info, to_tl({k: v for k, v in ref.opt.defaults.items()}))
    resumed.opt.load_state_dict(to_tl(copy.deepcopy(ref.opt.state_dict())))
    assert_same_state_dict(resumed.opt.state_dict(), ref.opt.state_dict(), rtol, atol)


def _mark(cid):
    reason = KNOWN_FAILURES.get(cid)
    return pytest.mark.xfail(reason=reason, strict=True) if reason else ()


@pytest.mark.parametrize("info,kwargs,dtype",
                         [pytest.param(info, kwargs, dtype, id=cid, marks=_mark(cid))
                          for cid, info, kwargs, dtype in CONFIGURATIONS])
def test_configuration(info, kwargs, dtype):
    with warnings.catch_warnings():
        # the .grad of a non-leaf parameter (differentiable=True), read by both libraries
        warnings.simplefilter("ignore", UserWarning)
        _check_configuration(info, kwargs, dtype)


def _error_params(lib, err):
    """The params of an error input, in lib: torch's own or converted; None means a fresh
    2-d parameter (Muon takes matrices only)."""
    params = err.optimizer_error_input.params
    if params is None:
        return [lib.ones(2, 2, requires_grad=True)]
    if lib is torch:
        return params
    return _convert_params(params)


def _convert_params(x, memo=None):
    """torch parameters (a tensor, lists, dicts) as torchlite's; one torch tensor given twice
    becomes one torchlite tensor given twice."""
    memo = {} if memo is None else memo
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            pytest.skip("a sparse-layout parameter: torchlite has no sparse layout")
        if id(x) not in memo:
            t = tl.tensor(x.detach().numpy())
            if x.requires_grad:
                t.requires_grad_()
            if x.grad is not None:
                t.grad = tl.tensor(x.grad.numpy())
            memo[id(x)] = t
        return memo[id(x)]
    if isinstance(x, dict):
        return {k: _convert_params(v, memo) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_convert_params(v, memo) for v in x)
    return x


@pytest.mark.parametrize("info,err", [pytest.param(info, err, id=cid, marks=_mark(cid))
                                      for cid, info, err in ERROR_INPUTS])
def test_error_input(info, err):
    name = info.optim_cls.__name__
    cls = getattr(tl.optim, name, None)
    if cls is None:
        raise AssertionError(f"torchlite.optim has no {name}")
    params = _error_params(tl, err)
    kwargs = to_tl(err.optimizer_error_input.kwargs)
    construct = err.error_on == common_optimizers.OptimizerErrorEnum.CONSTRUCTION_ERROR
    if issubclass(err.error_type, Warning):
        with pytest.warns(err.error_type, match=err.error_regex):
            cls(params, **kwargs)
        return
    with pytest.raises(err.error_type, match=err.error_regex):
        opt = cls(params, **kwargs)
        if not construct:
            opt.step()


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(momentum=0.9, nesterov=True)),
                                         ("Adam", dict(weight_decay=0.1)),
                                         ("AdamW", dict(weight_decay=0.1))])
def test_differentiable_with_respect_to_a_tensor_lr(name, kwargs):
    """Beyond optim_db: a Tensor lr that requires grad, differentiated through a few
    recorded steps (learning the learning rate), as PyTorch's SGD and Adam allow."""
    grads = gradient_values(name, 3)
    results = []
    for lib in (torch, tl):
        lr = lib.tensor(0.05, requires_grad=True)
        info = next(i for i in common_optimizers.optim_db if i.optim_cls.__name__ == name)
        run = Run(lib, info, dict(kwargs, lr=lr, differentiable=True), differentiable=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for g in grads:
                run.step(g)
        sum((p * p).sum() for p in run.params).backward()
        results.append((lr.grad.item(), [as_numpy(t.grad) for t in run.leaves]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-4)
    for a, b in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(a, b, rtol=GRAD_TOL[0], atol=GRAD_TOL[1])


def _report():
    """Every configuration and error input with its outcome (the first line of a failure)."""
    totals = {}
    cases = [(cid, "configuration", lambda info=info, kw=kw, dt=dt: _check_configuration(
                info, kw, dt)) for cid, info, kw, dt in CONFIGURATIONS]
    cases += [(cid, "error input", lambda info=info, err=err: test_error_input(info, err))
              for cid, info, err in ERROR_INPUTS]
    for cid, kind, check in cases:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check()
            outcome = "pass"
        except pytest.skip.Exception as e:
            outcome = f"skip ({e.msg})"
        except Exception as e:
            outcome = f"FAIL {type(e).__name__}: {str(e).strip().splitlines()[0][:100]}"
        totals.setdefault(kind, {}).setdefault(outcome.split()[0], 0)
        totals[kind][outcome.split()[0]] += 1
        print(f"{cid:<80} {outcome}")
    for kind, counts in totals.items():
        print(f"{kind}s: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    _report()
