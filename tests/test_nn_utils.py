"""nn.utils: gradient clipping, parameters <-> vector, and the rnn padding/packing helpers
(values vs NumPy and torch, gradients, errors)."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.autograd import gradcheck
from torchlite.nn.utils import (clip_grad_norm_, clip_grad_value_, get_total_norm,
                                parameters_to_vector, vector_to_parameters)
from torchlite.nn.utils import rnn


def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(tl.zeros(*np.shape(g), dtype=tl.float64))
        p.grad = tl.tensor(np.asarray(g, dtype=np.float64))
        ps.append(p)
    return ps


GRADS = [np.arange(6.0).reshape(2, 3) - 2, np.array([3.0, -4.0]), np.array([[0.5]])]


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), "inf"])
def test_clip_grad_norm_values(norm_type):
    flat = np.concatenate([g.ravel() for g in GRADS])
    p = float(norm_type)
    total = np.abs(flat).max() if p == np.inf else (np.abs(flat) ** p).sum() ** (1 / p)
    ps = _params_with_grads(GRADS)
    out = clip_grad_norm_(ps, max_norm=2.0, norm_type=norm_type)
    assert out.ndim == 0
    np.testing.assert_allclose(out.item(), total, rtol=1e-12)
    scale = min(1.0, 2.0 / (total + 1e-6))
    for p_, g in zip(ps, GRADS):
        np.testing.assert_allclose(p_.grad.numpy(), g * scale, rtol=1e-12)
    ps = _params_with_grads(GRADS)
    clip_grad_norm_(ps, max_norm=1e6, norm_type=norm_type)   # below the limit: unchanged
    for p_, g in zip(ps, GRADS):
        np.testing.assert_allclose(p_.grad.numpy(), g * min(1.0, 1e6 / (total + 1e-6)), rtol=1e-12)


def test_clip_grad_norm_matches_torch():
    torch = pytest.importorskip("torch")
    ours = _params_with_grads(GRADS)
    theirs = [torch.nn.Parameter(torch.zeros(np.shape(g), dtype=torch.float64)) for g in GRADS]
    for t, g in zip(theirs, GRADS):
        t.grad = torch.tensor(g)
    a = clip_grad_norm_(ours, 1.5)
    b = torch.nn.utils.clip_grad_norm_(theirs, 1.5)
    assert a.item() == pytest.approx(b.item(), rel=1e-12)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_edge_cases():
    single = _params_with_grads([np.array([3.0, 4.0])])[0]
    assert clip_grad_norm_(single, 1.0).item() == pytest.approx(5.0)     # a lone tensor
    np.testing.assert_allclose(single.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    no_grad = nn.Parameter(tl.zeros(2))
    assert clip_grad_norm_([no_grad], 1.0).item() == 0.0
    assert clip_grad_norm_([], 1.0).item() == 0.0
    bad = _params_with_grads([np.array([np.nan, 1.0])])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    assert np.isnan(clip_grad_norm_(bad, 1.0).item())
    assert get_total_norm([tl.tensor([3.0]), tl.tensor([4.0])]).item() == pytest.approx(5.0)


def test_clip_grad_value():
    ps = _params_with_grads(GRADS)
    assert clip_grad_value_(ps, 1.5) is None
    for p, g in zip(ps, GRADS):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -1.5, 1.5))
    with pytest.raises(TypeError, match="clip_value must be a number"):
        clip_grad_value_(ps, "1")


def test_parameters_to_vector_and_back():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = parameters_to_vector(m.parameters())
    expected = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    vec.sum().backward()                                   # differentiable
    assert all((p.grad.numpy() == 1).all() for p in m.parameters())
    new = tl.arange(float(vec.numel()))
    vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m[1].bias.detach().numpy(), [10.0])
    assert isinstance(m[0].weight, nn.Parameter)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters([1.0], m.parameters())
    with pytest.raises(RuntimeError, match="11 elements"):
        vector_to_parameters(tl.zeros(5), m.parameters())


# ---- rnn helpers ------------------------------------------------------------------------------
SEQS = [np.arange(8.0).reshape(4, 2), np.arange(2.0).reshape(1, 2) + 10,
        np.arange(6.0).reshape(3, 2) + 20]


def _pad_ref(seqs, batch_first, value, side):
    n = max(len(s) for s in seqs)
    out = np.full((len(seqs), n) + seqs[0].shape[1:], value)
    for i, s in enumerate(seqs):
        if side == "right":
            out[i, :len(s)] = s
        else:
            out[i, n - len(s):] = s
    return out if batch_first else out.swapaxes(0, 1)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    out = rnn.pad_sequence([tl.tensor(s) for s in SEQS], batch_first=batch_first,
                           padding_value=-1.0, padding_side=side)
    np.testing.assert_array_equal(out.numpy(), _pad_ref(SEQS, batch_first, -1.0, side))


def test_pad_sequence_errors_and_grad():
    with pytest.raises(RuntimeError, match="empty list"):
        rnn.pad_sequence([])
    with pytest.raises(ValueError, match="padding_side to be one of left or right"):
        rnn.pad_sequence([tl.zeros(1)], padding_side="top")
    with pytest.raises(RuntimeError, match="pad_sequence"):
        rnn.pad_sequence([tl.zeros(2, 3), tl.zeros(1, 4)])
    seqs = [tl.tensor(s).requires_grad_() for s in SEQS]
    assert gradcheck(lambda *s: rnn.pad_sequence(list(s), padding_value=0.5), seqs)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_pad_round_trip_vs_torch(batch_first, enforce_sorted):
    torch = pytest.importorskip("torch")
    seqs = SEQS if not enforce_sorted else sorted(SEQS, key=len, reverse=True)
    lengths = [len(s) for s in seqs]
    padded_np = _pad_ref(seqs, batch_first, 0.0, "right")
    ours = rnn.pack_padded_sequence(tl.tensor(padded_np), lengths, batch_first=batch_first,
                                    enforce_sorted=enforce_sorted)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(padded_np), lengths,
                                                     batch_first=batch_first,
                                                     enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    np.testing.assert_array_equal(ours.batch_sizes.numpy(), theirs.batch_sizes.numpy())
    for a, b in ((ours.sorted_indices, theirs.sorted_indices),
                 (ours.unsorted_indices, theirs.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    back, lens = rnn.pad_packed_sequence(ours, batch_first=batch_first, padding_value=7.0,
                                         total_length=5)
    tback, tlens = torch.nn.utils.rnn.pad_packed_sequence(theirs, batch_first=batch_first,
                                                          padding_value=7.0, total_length=5)
    np.testing.assert_array_equal(back.numpy(), tback.numpy())
    np.testing.assert_array_equal(lens.numpy(), tlens.numpy())
    assert lens.dtype == tl.int64


def test_pack_errors():
    x = tl.zeros(3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn.pack_padded_sequence(x, [1, 2])
    with pytest.raises(RuntimeError, match="greater than 0"):
        rnn.pack_padded_sequence(x, [2, 0])
    with pytest.raises(RuntimeError, match="equal to batch_size, but got 1"):
        rnn.pack_padded_sequence(x, [3])
    with pytest.raises(RuntimeError, match="exceeds the number of time steps"):
        rnn.pack_padded_sequence(x, [4, 1])
    packed = rnn.pack_padded_sequence(x, [3, 1])
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 3"):
        rnn.pad_packed_sequence(packed, total_length=2)


def test_pack_and_unpack_gradients():
    x = tl.tensor(np.random.default_rng(0).standard_normal((4, 3, 2)), requires_grad=True)

    def round_trip(inp):
        packed = rnn.pack_padded_sequence(inp, [2, 4, 1], enforce_sorted=False)
        return rnn.pad_packed_sequence(packed)[0]
    assert gradcheck(lambda inp: rnn.pack_padded_sequence(inp, [4, 2, 1]).data, [x])
    assert gradcheck(round_trip, [x])


def test_pack_sequence_unpack_unpad():
    seqs = [tl.tensor(s) for s in SEQS]
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    assert isinstance(packed, rnn.PackedSequence)
    for a, b in zip(rnn.unpack_sequence(packed), SEQS):
        np.testing.assert_array_equal(a.numpy(), b)
    padded = rnn.pad_sequence(seqs)
    for a, b in zip(rnn.unpad_sequence(padded, [4, 1, 3]), SEQS):
        np.testing.assert_array_equal(a.numpy(), b)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn.pack_sequence(seqs)
    as64 = packed.double()
    assert as64.data.dtype == tl.float64 and packed.float().data.dtype == tl.float32
    assert not packed.is_cuda
    np.testing.assert_array_equal(rnn.invert_permutation(tl.tensor([2, 0, 1])).numpy(), [1, 2, 0])


def test_modules_utils_tuple_helpers_as_pytorch():
    # custom layers written for PyTorch import these private helpers by name
    from torchlite.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple
    cases = [(_single, 3, (3,)), (_pair, 3, (3, 3)), (_triple, (1, 2, 3), (1, 2, 3)),
             (_quadruple, 0, (0, 0, 0, 0)), (_pair, [4, 5], (4, 5)), (_ntuple(5), "ab", ("ab",) * 5)]
    for fn, x, expected in cases:
        assert fn(x) == expected
    try:
        import torch.nn.modules.utils as T
    except ImportError:
        return
    for name, x in [("_single", 3), ("_pair", 3), ("_triple", (1, 2, 3)), ("_quadruple", 0),
                    ("_pair", [4, 5])]:
        assert getattr(T, name)(x) == {"_single": _single, "_pair": _pair, "_triple": _triple,
                                       "_quadruple": _quadruple}[name](x)
