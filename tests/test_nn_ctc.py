"""ctc_loss and CTCLoss (torchlite/nn/functional/ctc.py): losses against a brute-force NumPy
reference written here (the probability of every alignment of T frames, collapsed by removing
repeats and then blanks, summed over those that spell the target), the gradient against
finite differences (PyTorch's gradient is the true one plus exp(log_probs) on each sequence's
frames, which log_softmax's backward removes again), and PyTorch as a second oracle for
values and gradients (reductions, padded and concatenated targets, unequal lengths,
zero_infinity, unbatched input) where it is installed."""
import itertools

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck

_rng = np.random.default_rng(17)


def log_softmax(a):
    a = a - a.max(-1, keepdims=True)
    return a - np.log(np.exp(a).sum(-1, keepdims=True))


def np_ctc_nll(lp, target, blank):
    """-log sum over alignments (lp: (T, C) log-probabilities of one sequence)."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        collapsed = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in collapsed if k != blank] == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def _problem(t_max=5, n=3, c=3, s=2, seed=0):
    rng = np.random.default_rng(seed)
    lp = log_softmax(rng.standard_normal((t_max, n, c)))
    targets = rng.integers(1, c, (n, s))
    return lp, targets


def test_values_match_brute_force():
    lp, targets = _problem()
    targets[0] = [1, 1]               # a repeat needs a blank between
    in_lens, tgt_lens = [5, 4, 3], [2, 1, 0]
    got = F.ctc_loss(tl.tensor(lp), tl.tensor(targets), tl.tensor(in_lens), tl.tensor(tgt_lens),
                     reduction="none").numpy()
    want = [np_ctc_nll(lp[:in_lens[b], b], targets[b, :tgt_lens[b]], 0) for b in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the reductions: 'mean' divides by the target lengths (at least 1) first
    mean = F.ctc_loss(tl.tensor(lp), tl.tensor(targets), in_lens, tgt_lens).item()
    assert mean == pytest.approx(np.mean(np.array(want) / np.maximum(tgt_lens, 1)), rel=1e-12)
    total = F.ctc_loss(tl.tensor(lp), tl.tensor(targets), in_lens, tgt_lens, reduction="sum").item()
    assert total == pytest.approx(sum(want), rel=1e-12)


def test_blank_concatenated_targets_and_unbatched():
    lp, _ = _problem(t_max=4, n=2, c=3, seed=1)
    concat = np.array([0, 1, 1])            # blank=2: sequences (0, 1) and (1,)
    got = F.ctc_loss(tl.tensor(lp), tl.tensor(concat, dtype=tl.int32), (4, 3), (2, 1), blank=2,
                     reduction="none").numpy()
    want = [np_ctc_nll(lp[:4, 0], [0, 1], 2), np_ctc_nll(lp[:3, 1], [1], 2)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    one = F.ctc_loss(tl.tensor(lp[:, 0]), tl.tensor([0, 1]), tl.tensor(4), tl.tensor(2), blank=2,
                     reduction="none")
    assert one.shape == () and one.item() == pytest.approx(want[0], rel=1e-12)


def test_impossible_alignments_and_zero_infinity():
    lp, targets = _problem(t_max=4, n=2, c=3, s=3, seed=2)
    targets[0] = [1, 1, 1]             # needs 5 frames
    args = (tl.tensor(lp), tl.tensor(targets), [4, 0], [3, 0])
    losses = F.ctc_loss(*args, reduction="none").numpy()
    assert losses[0] == np.inf and losses[1] == 0           # no frames, empty target: p = 1
    x = tl.tensor(lp, requires_grad=True)
    loss = F.ctc_loss(x, *args[1:], reduction="sum", zero_infinity=True)
    assert loss.item() == 0
    loss.backward()
    assert not x.grad.numpy().any()


def test_gradient_is_pytorchs_formula():
    """d loss / d log_probs == the finite-difference gradient + exp(log_probs) on each
    sequence's frames, zero past them; through log_softmax it is the true gradient."""
    lp, targets = _problem(t_max=5, n=2, c=3, s=2, seed=3)
    in_lens, tgt_lens = [5, 3], [2, 1]
    x = tl.tensor(lp, requires_grad=True)
    F.ctc_loss(x, tl.tensor(targets), in_lens, tgt_lens, reduction="sum").backward()
    eps, fd = 1e-6, np.zeros_like(lp)
    for idx in np.ndindex(*lp.shape):
        for sign in (1, -1):
            p = lp.copy()
            p[idx] += sign * eps
            val = sum(np_ctc_nll(p[:in_lens[b], b], targets[b, :tgt_lens[b]], 0) for b in range(2))
            fd[idx] += sign * val / (2 * eps)
    frames = (np.arange(5)[:, None] < np.array(in_lens)[None, :])[..., None]
    np.testing.assert_allclose(x.grad.numpy(), fd + np.exp(lp) * frames, rtol=1e-6, atol=1e-6)
    logits = tl.tensor(_rng.standard_normal((5, 2, 3))).requires_grad_()
    for reduction in ("mean", "sum"):
        assert gradcheck(lambda z: F.ctc_loss(z.log_softmax(2), tl.tensor(targets), in_lens,
                                              tgt_lens, reduction=reduction), (logits,))


def test_module_and_errors():
    lp, targets = _problem(t_max=6, n=2, c=5, s=3, seed=4)
    m = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(m) == "CTCLoss()"
    assert m(tl.tensor(lp), tl.tensor(targets), [6, 5], [3, 2]).item() == pytest.approx(
        F.ctc_loss(tl.tensor(lp), tl.tensor(targets), [6, 5], [3, 2], reduction="sum").item())
    x, tg, il, tln = tl.tensor(lp), tl.tensor(targets), tl.tensor([6, 5]), tl.tensor([3, 2])
    cases = [
        (lambda: F.ctc_loss(x, tg, il.float(), tln), RuntimeError, "input_lengths must be integral"),
        (lambda: F.ctc_loss(x, tg, il, tln, blank=5), RuntimeError, "blank must be in label range"),
        (lambda: F.ctc_loss(x, tg, tl.tensor([7, 5]), tln), RuntimeError,
         "Expected input_lengths to have value at most 6, but got value 7"),
        (lambda: F.ctc_loss(x, tg, tl.tensor([-1, 5]), tln), RuntimeError,
         "Expected input_lengths to have value at least 0"),
        (lambda: F.ctc_loss(x, tg, il, tl.tensor([4, 2])), RuntimeError,
         "Expected tensor to have size at least 4 at dimension 1, but got size 3 for argument "
         "#2 'targets'"),
        (lambda: F.ctc_loss(x, tg, il[:1], tln), RuntimeError,
         "input_lengths must be of size batch_size"),
        (lambda: F.ctc_loss(x, tg.flatten(), il, tln), RuntimeError,
         "Expected tensor to have size 5 at dimension 0, but got size 6"),
        (lambda: F.ctc_loss(x[:, :, None], tg, il, tln), RuntimeError,
         "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1"),
        (lambda: F.ctc_loss(x, tg[:, :, None], il, tln), RuntimeError,
         "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'"),
        (lambda: F.ctc_loss(x, tg, il, tln, reduction="foo"), ValueError,
         "foo is not a valid value for reduction"),
        (lambda: F.ctc_loss(x.long(), tg, il, tln), NotImplementedError,
         "\"ctc_loss_cpu\" not implemented for 'Long'"),
        (lambda: F.ctc_loss(x[:0], tg, tl.tensor([0, 0]), tln), RuntimeError,
         "log_probs tensor must not be empty"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


# ---- PyTorch as the oracle --------------------------------------------------------------------------
TORCH_CASES = [
    dict(shape=(12, 4, 6), s=5, in_lens=[12, 7, 9, 12], tgt_lens=[5, 0, 3, 4], reduction="mean"),
    dict(shape=(12, 4, 6), s=5, in_lens=[12, 7, 9, 1], tgt_lens=[5, 2, 3, 4], reduction="none",
         zero_infinity=True, repeats=True),
    dict(shape=(30, 3, 8), s=10, in_lens=[30, 25, 11], tgt_lens=[10, 7, 1], reduction="sum",
         concat=True, blank=7),
    dict(shape=(9, 5), s=4, in_lens=9, tgt_lens=4, reduction="mean", unbatched=True),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: c["reduction"] + ("_concat" if
                                                                             c.get("concat") else ""))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    shape = case["shape"]
    c = shape[-1]
    blank = case.get("blank", 0)
    lp = log_softmax(rng.standard_normal(shape)).astype(dtype)
    n = 1 if case.get("unbatched") else shape[1]
    labels = [k for k in range(c) if k != blank]
    targets = rng.choice(labels, (n, case["s"]))
    if case.get("repeats"):
        targets[:, 1] = targets[:, 0]
    tgt_lens = case["tgt_lens"]
    if case.get("concat"):
        targets = np.concatenate([targets[b, :tgt_lens[b]] for b in range(n)])
    if case.get("unbatched"):
        targets = targets[0]
    res = {}
    for L, mod in ((tl, F), (torch, torch.nn.functional)):
        x = L.tensor(lp, requires_grad=True)
        lens = [L.tensor(case["in_lens"]), L.tensor(tgt_lens)]
        y = mod.ctc_loss(x, L.tensor(targets), *lens, blank=blank, reduction=case["reduction"],
                         zero_infinity=case.get("zero_infinity", False))
        y.backward(L.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)), dtype=y.dtype))
        res[L] = (y.detach().numpy(), x.grad.numpy())
    tol = 1e-5 if dtype == "float32" else 1e-10
    for a, b in zip(res[tl], res[torch]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
