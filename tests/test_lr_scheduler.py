"""torchlite.optim.lr_scheduler: lr sequences against closed forms (NumPy/math) and against
PyTorch's schedulers step by step; state_dict round trips; warnings; errors."""
import copy
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.optim as optim
from torchlite.optim import lr_scheduler as S

N_STEPS = 30


def make_optimizer(lib=tl, name="SGD", lrs=(0.1, 0.05)):
    """An optimizer with one param group per lr (SGD with momentum, or Adam)."""
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if name == "SGD":
        return lib.optim.SGD(groups, lr=lrs[0], momentum=0.9)
    return getattr(lib.optim, name)(groups, lr=lrs[0])


def lr_sequence(opt, scheduler, n=N_STEPS, metrics=None):
    """The lrs (and momentum/beta1) of every group after each of n steps."""
    out = []
    for i in range(n):
        opt.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        momenta = [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]
        out.append(list(scheduler.get_last_lr()) + momenta)
    return out


PLATEAU_METRICS = [1.0 / (i % 7 + 1) if i < 12 else 5.0 - 0.001 * i for i in range(N_STEPS)]

# every scheduler with its options; each entry builds the scheduler on an optimizer of a
# library (torchlite or torch)
SCHEDULERS = {
    "StepLR": lambda L, o: L.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.001),
    "CosineAnnealingWarmRestarts": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001),
    "CosineAnnealingWarmRestarts-Tmult1": lambda L, o:
        L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4),
    "LambdaLR": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)),
    "LambdaLR-per-group": lambda L, o: L.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 0.9 ** e, lambda e: 1 + e]),
    "MultiplicativeLR": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95),
    "LinearLR": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.2, 0.9, total_iters=7),
    "ConstantLR": lambda L, o: L.optim.lr_scheduler.ConstantLR(o, factor=0.4, total_iters=6),
    "PolynomialLR": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=10, power=2.0),
    "OneCycleLR": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, [1.0, 0.5], total_steps=31),
    "OneCycleLR-three-phase-linear": lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, 1.0, epochs=3, steps_per_epoch=11, three_phase=True, anneal_strategy="linear"),
    "CyclicLR-triangular": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 4, 3),
    "CyclicLR-triangular2": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, step_size_down=3, mode="triangular2"),
    "CyclicLR-exp_range": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=4, mode="exp_range", gamma=0.9),
    "CyclicLR-scale_fn": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, scale_fn=lambda x: 1 / (1 + 0.1 * x), scale_mode="iterations",
        cycle_momentum=False),
    "SequentialLR": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, 5),
            L.optim.lr_scheduler.CosineAnnealingLR(o, 10),
            L.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[5, 15]),
    "ChainedScheduler": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, 0.5, 4), L.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
    "ReduceLROnPlateau": lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=2, cooldown=1, factor=0.5),
    "ReduceLROnPlateau-max-abs": lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, mode="max", threshold_mode="abs", threshold=0.01, patience=1, min_lr=[0.03, 0.0]),
}


def metrics_for(key):
    return PLATEAU_METRICS if key.startswith("ReduceLROnPlateau") else None


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_matches_torch(key, optimizer_name):
    torch = pytest.importorskip("torch")
    sequences = []
    for lib in (tl, torch):
        opt = make_optimizer(lib, optimizer_name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scheduler = SCHEDULERS[key](lib, opt)
            sequences.append(lr_sequence(opt, scheduler, metrics=metrics_for(key)))
    ours, theirs = sequences
    assert ours == theirs               # the same formulas in the same order: the same floats


@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_lr_changes_and_stays_positive(key):
    opt = make_optimizer()
    scheduler = SCHEDULERS[key](tl, opt)
    seq = np.array(lr_sequence(opt, scheduler, metrics=metrics_for(key)))
    assert len({tuple(row) for row in seq}) > 1           # the schedule does something
    assert np.all(seq[:, :2] >= 0)


# ---- closed forms (NumPy/math oracles) -----------------------------------------------------
def run(make, n=N_STEPS, base=(0.1, 0.05)):
    opt = make_optimizer(lrs=base)
    scheduler = make(opt)
    first = list(scheduler.get_last_lr())
    return [first] + [row[:2] for row in lr_sequence(opt, scheduler, n)]


def closed(fn, n=N_STEPS, base=(0.1, 0.05)):
    return [[b * fn(e) for b in base] for e in range(n + 1)]


def assert_close(got, want):
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)


def test_step_lr_closed_form():
    assert_close(run(lambda o: S.StepLR(o, 4, gamma=0.5)), closed(lambda e: 0.5 ** (e // 4)))


def test_multistep_lr_closed_form():
    milestones = [3, 7, 7, 12]
    got = run(lambda o: S.MultiStepLR(o, milestones, gamma=0.2))
    assert_close(got, closed(lambda e: 0.2 ** sum(m <= e for m in milestones)))


def test_exponential_lr_closed_form():
    assert_close(run(lambda o: S.ExponentialLR(o, 0.93)), closed(lambda e: 0.93 ** e))


def test_cosine_annealing_closed_form():
    T, eta = 8, 0.001
    got = run(lambda o: S.CosineAnnealingLR(o, T, eta))
    want = [[eta + (b - eta) * (1 + math.cos(math.pi * e / T)) / 2 for b in (0.1, 0.05)]
            for e in range(N_STEPS + 1)]
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-9, atol=1e-12)


def test_cosine_warm_restarts_closed_form():
    T0, mult, eta = 3, 2, 0.0
    got = run(lambda o: S.CosineAnnealingWarmRestarts(o, T0, mult, eta))
    want = []
    for e in range(N_STEPS + 1):
        T_i, T_cur = T0, e
        while T_cur >= T_i:
            T_cur -= T_i
            T_i *= mult
        want.append([b * (1 + math.cos(math.pi * T_cur / T_i)) / 2 for b in (0.1, 0.05)])
    assert_close(got, want)


def test_lambda_linear_constant_polynomial_closed_forms():
    assert_close(run(lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e))),
                 closed(lambda e: 1 / (1 + e)))
    s, f, n = 0.25, 0.75, 8
    np.testing.assert_allclose(run(lambda o: S.LinearLR(o, s, f, n)),
                               closed(lambda e: s + (f - s) * min(e, n) / n), rtol=1e-12)
    np.testing.assert_allclose(run(lambda o: S.ConstantLR(o, 0.3, 5)),
                               closed(lambda e: 0.3 if e < 5 else 1.0), rtol=1e-12)
    np.testing.assert_allclose(run(lambda o: S.PolynomialLR(o, 10, 1.5)),
                               closed(lambda e: (1 - min(e, 10) / 10) ** 1.5),
                               rtol=1e-12, atol=1e-15)


def test_one_cycle_closed_form():
    n, max_lr, pct = 20, 1.0, 0.25
    got = run(lambda o: S.OneCycleLR(o, max_lr, total_steps=n, pct_start=pct), n=n - 1)
    initial, final = max_lr / 25.0, max_lr / 25.0 / 1e4
    up = pct * n - 1

    def cos_anneal(a, b, x):
        return b + (a - b) / 2 * (1 + math.cos(math.pi * x))
    want = [cos_anneal(initial, max_lr, e / up) if e <= up else
            cos_anneal(max_lr, final, (e - up) / (n - 1 - up)) for e in range(n)]
    np.testing.assert_allclose(np.array(got)[:, 0], want, rtol=1e-12)


def test_cyclic_triangular_closed_form():
    got = run(lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, cycle_momentum=False))
    # a triangle wave of period 8 between 0.01 and 0.1
    want = [0.01 + 0.09 * (1 - abs((e % 8) / 4 - 1)) for e in range(N_STEPS + 1)]
    np.testing.assert_allclose(np.array(got)[:, 0], want, rtol=1e-12)


def test_step_with_epoch_uses_closed_form_and_warns():
    opt = make_optimizer()
    scheduler = S.StepLR(opt, 3, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        scheduler.step(7)
    assert scheduler.last_epoch == 7
    assert scheduler.get_last_lr() == pytest.approx([0.1 * 0.25, 0.05 * 0.25])


# ---- bookkeeping -------------------------------------------------------------------------
def test_initial_lr_base_lrs_and_last_epoch():
    opt = make_optimizer()
    scheduler = S.ExponentialLR(opt, 0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert scheduler.base_lrs == [0.1, 0.05] and scheduler.last_epoch == 0
    assert scheduler.get_last_lr() == [0.1, 0.05]
    opt.step()
    scheduler.step()
    assert scheduler.last_epoch == 1 and opt.param_groups[0]["lr"] == 0.05
    # resuming needs initial_lr in every group
    fresh = make_optimizer()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        S.StepLR(fresh, 2, last_epoch=3)
    resumed = S.StepLR(opt, 2, last_epoch=3)
    assert resumed.last_epoch == 4


def test_get_last_lr_is_a_copy_and_tensor_lr_is_filled_in_place():
    p = tl.zeros(2, requires_grad=True)
    lr = tl.tensor(0.2)
    opt = optim.SGD([p], lr=lr)
    scheduler = S.ExponentialLR(opt, 0.5)
    opt.step()
    scheduler.step()
    assert opt.param_groups[0]["lr"] is lr and abs(lr.item() - 0.1) < 1e-7
    last = scheduler.get_last_lr()[0]
    assert isinstance(last, tl.Tensor) and last is not lr
    base = scheduler.base_lrs[0]
    assert isinstance(base, tl.Tensor) and abs(base.item() - 0.2) < 1e-7


def test_warns_when_scheduler_steps_before_optimizer():
    opt = make_optimizer()
    scheduler = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before "
                                         "`optimizer.step\\(\\)`"):
        scheduler.step()


def test_optimizer_steps_before_the_scheduler_existed_do_not_count():
    opt = make_optimizer()
    opt.step()
    scheduler = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        scheduler.step()


def test_no_warning_in_the_right_order():
    opt = make_optimizer()
    scheduler = S.CosineAnnealingLR(opt, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.step()
            scheduler.step()


def test_warns_when_optimizer_step_was_replaced():
    opt = make_optimizer()
    scheduler = S.StepLR(opt, 2)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler"):
        scheduler.step()


def test_get_lr_outside_step_warns():
    scheduler = S.StepLR(make_optimizer(), 2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        scheduler.get_lr()


def test_lr_scheduler_alias_and_custom_subclass():
    assert issubclass(S._LRScheduler, S.LRScheduler) and S._LRScheduler.__name__ == "_LRScheduler"

    class Halving(S._LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]

    opt = make_optimizer()
    scheduler = Halving(opt)
    opt.step()
    scheduler.step()
    scheduler.step()
    assert scheduler.get_last_lr() == [0.025, 0.0125]
    with pytest.raises(NotImplementedError):
        S.LRScheduler(make_optimizer())


# ---- state_dict --------------------------------------------------------------------------
@pytest.mark.parametrize("key", [k for k in SCHEDULERS if not any(
    fn in k for fn in ("Lambda", "scale_fn", "Multiplicative"))])
def test_state_dict_round_trip(key):
    metrics = metrics_for(key)
    opt = make_optimizer()
    scheduler = SCHEDULERS[key](tl, opt)
    lr_sequence(opt, scheduler, n=9, metrics=metrics)
    saved_sched = copy.deepcopy(scheduler.state_dict())
    saved_opt = copy.deepcopy(opt.state_dict())
    assert "optimizer" not in saved_sched
    rest = lr_sequence(opt, scheduler, n=12, metrics=metrics[9:] if metrics else None)

    opt2 = make_optimizer(lrs=(0.7, 0.7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scheduler2 = SCHEDULERS[key](tl, opt2)
    opt2.load_state_dict(saved_opt)
    scheduler2.load_state_dict(saved_sched)
    rest2 = lr_sequence(opt2, scheduler2, n=12, metrics=metrics[9:] if metrics else None)
    assert rest2 == rest


@pytest.mark.parametrize("key", ["StepLR", "CosineAnnealingLR", "OneCycleLR",
                                 "CyclicLR-exp_range", "SequentialLR", "ReduceLROnPlateau",
                                 "LambdaLR"])
def test_state_dict_keys_match_torch(key):
    torch = pytest.importorskip("torch")
    layouts = []
    for lib in (tl, torch):
        opt = make_optimizer(lib)
        scheduler = SCHEDULERS[key](lib, opt)
        opt.step()
        if key.startswith("ReduceLROnPlateau"):
            scheduler.step(1.0)
        else:
            scheduler.step()
        sd = scheduler.state_dict()
        layouts.append((sorted(sd), [sorted(s) for s in sd.get("_schedulers", [])]))
    assert layouts[0] == layouts[1]


def test_lambda_state_dict_saves_callable_objects_only():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_optimizer()
    scheduler = S.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    sd = scheduler.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    other = S.LambdaLR(make_optimizer(), [Decay(0.9), lambda e: 1.0])
    other.load_state_dict(sd)
    assert other.lr_lambdas[0].rate == 0.5
    assert "lr_lambdas" in sd                      # the caller's dict is left as it was


# ---- ReduceLROnPlateau -------------------------------------------------------------------
def test_plateau_reduces_after_patience_and_respects_min_lr_and_cooldown():
    opt = make_optimizer(lrs=(1.0, 1.0))
    scheduler = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=2, min_lr=[0.3, 0.0])
    lrs = []
    for metric in [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]:
        scheduler.step(tl.tensor(metric))
        lrs.append(scheduler.get_last_lr())
    # bad epochs 1, 2 -> cut (epoch 3), then 2 cooldown epochs that count nothing, ...
    assert [lr[1] for lr in lrs] == [1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    assert min(lr[0] for lr in lrs) == 0.3
    assert scheduler.best == 1.0 and scheduler.last_epoch == 9


def test_plateau_improvement_thresholds():
    opt = make_optimizer()
    rel = S.ReduceLROnPlateau(opt, threshold=0.1)
    rel.step(1.0)
    rel.step(0.95)                 # not 10% better
    assert rel.num_bad_epochs == 1 and rel.best == 1.0
    rel.step(0.85)
    assert rel.num_bad_epochs == 0 and rel.best == 0.85
    up = S.ReduceLROnPlateau(opt, mode="max", threshold=0.5, threshold_mode="abs")
    up.step(1.0)
    up.step(1.4)
    assert up.best == 1.0 and up.num_bad_epochs == 1


def test_plateau_errors():
    opt = make_optimizer()
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode sideways is unknown!"):
        S.ReduceLROnPlateau(opt, mode="sideways")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        S.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.ReduceLROnPlateau([1, 2])
    scheduler = S.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
    opt.add_param_group({"params": [tl.zeros(1, requires_grad=True)], "lr": 0.1})
    scheduler.step(1.0)
    with pytest.raises(RuntimeError, match="The number of param groups in the `optimizer`"):
        scheduler.step(2.0)


# ---- errors ------------------------------------------------------------------------------
def adagrad_optimizer():
    return optim.Adagrad([tl.zeros(1, requires_grad=True)])


SCHEDULER_ERRORS = [
    (lambda o: S.StepLR([1], 2), TypeError, "list is not an Optimizer"),
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError, "Constant multiplicative factor"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda o: S.LinearLR(o, end_factor=2), ValueError, "Ending multiplicative factor"),
    (lambda o: S.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: S.MultiplicativeLR(o, 0.9), TypeError,
     "lr_lambda should be a function, but got float"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 2, T_mult=0), ValueError,
     "Expected integer T_mult >= 1"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, 2, eta_min="x"), ValueError,
     "Expected float or int eta_min"),
    (lambda o: S.OneCycleLR(o, 1.0), ValueError, "You must define either total_steps OR"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=0), ValueError,
     "Expected positive integer total_steps"),
    (lambda o: S.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=2), ValueError,
     "Expected positive integer epochs"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of"),
    (lambda o: S.OneCycleLR(o, [1.0], total_steps=10), ValueError,
     "max_lr must have the same length as optimizer.param_groups"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, mode="sine"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda o: S.CyclicLR(adagrad_optimizer(), 0.1, 1.0), ValueError,
     "optimizer must support momentum or beta1"),
    (lambda o: S.SequentialLR(o, [], []), ValueError, "expects at least one scheduler"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], [1, 2]), ValueError,
     "expects number of schedulers provided to be one more than the number of milestone"),
    (lambda o: S.SequentialLR(o, [S.ReduceLROnPlateau(o)], []), ValueError,
     "does not support `ReduceLROnPlateau`"),
    (lambda o: S.SequentialLR(o, [S.StepLR(make_optimizer(), 2)], []), ValueError,
     "expects all schedulers to belong to the same optimizer"),
    (lambda o: S.SequentialLR(o, [object()], []), TypeError,
     "should have `optimizer` as its attribute"),
    (lambda o: S.ChainedScheduler([]), ValueError, "expects at least one scheduler to be chained"),
]


@pytest.mark.parametrize("make,exc,message", SCHEDULER_ERRORS,
                         ids=[str(i) for i in range(len(SCHEDULER_ERRORS))])
def test_errors(make, exc, message):
    with pytest.raises(exc) as info:
        make(make_optimizer())
    assert message in str(info.value)


def test_one_cycle_steps_past_the_end():
    opt = make_optimizer()
    scheduler = S.OneCycleLR(opt, 1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total "
                                         "steps is 3"):
        scheduler.step()


def test_cosine_warm_restarts_fractional_epochs():
    opt = make_optimizer(lrs=(1.0, 1.0))
    scheduler = S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
    opt.step()
    for epoch, (t_cur, t_i) in [(1.5, (1.5, 4)), (5.0, (1.0, 8)), (13.25, (1.25, 16))]:
        scheduler.step(epoch)
        assert scheduler.T_cur == pytest.approx(t_cur) and scheduler.T_i == t_i
        want = (1 + math.cos(math.pi * t_cur / t_i)) / 2
        assert scheduler.get_last_lr()[0] == pytest.approx(want)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        scheduler.step(-1)
