"""torchlite.testing.assert_close against torch.testing.assert_close's rules."""
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite.testing import assert_close


def test_passes_within_default_float32_tolerance():
    x = tl.tensor([1.0, 2.0, 3.0])
    assert_close(x, x + 1e-6)
    assert_close(x, x.clone())


def test_fails_beyond_tolerance_with_a_useful_message():
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3"):
        assert_close(tl.tensor([1.0, 2.0, 3.0]), tl.tensor([1.0, 2.5, 3.0]))


def test_integers_compare_exactly():
    assert_close(tl.tensor([1, 2]), tl.tensor([1, 2]))
    with pytest.raises(AssertionError):
        assert_close(tl.tensor([1, 2]), tl.tensor([1, 3]))


def test_shape_dtype_device_checks():
    with pytest.raises(AssertionError, match="shape"):
        assert_close(tl.zeros(2), tl.zeros(3))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(tl.zeros(2), tl.zeros(2, dtype=tl.float64))
    assert_close(tl.zeros(2), tl.zeros(2, dtype=tl.float64), check_dtype=False)


def test_nan_handling_and_explicit_tolerances():
    a = tl.tensor([1.0, math.nan])
    with pytest.raises(AssertionError):
        assert_close(a, a.clone())
    assert_close(a, a.clone(), equal_nan=True)
    assert_close(tl.tensor([1.0]), tl.tensor([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(ValueError):
        assert_close(tl.tensor([1.0]), tl.tensor([1.0]), rtol=0.1)


def test_sequences_mappings_and_numbers():
    assert_close([tl.ones(2), tl.zeros(1)], (tl.ones(2), tl.zeros(1)))
    assert_close({"a": tl.ones(2)}, {"a": tl.ones(2)})
    assert_close(1.0, 1.0 + 1e-9)
    with pytest.raises(AssertionError):
        assert_close([tl.ones(2)], [tl.ones(2), tl.ones(2)])


def test_options_reach_every_element_of_a_structure():
    # check_stride and the tolerances apply inside lists and dicts alike
    t = tl.ones(2, 2)
    transposed = tl.ones(2, 2).t().contiguous().t()
    for wrap in (lambda x: [x], lambda x: {"a": x}, lambda x: {"a": [x]}):
        assert_close(wrap(t), wrap(transposed))
        with pytest.raises(AssertionError, match="stride"):
            assert_close(wrap(t), wrap(transposed), check_stride=True)
        with pytest.raises(AssertionError):
            assert_close(wrap(t), wrap(t + 0.05), rtol=0.01, atol=0.0)
        assert_close(wrap(t), wrap(t + 0.05), rtol=0.1, atol=0.0)


def test_allow_subclasses():
    p = tl.nn.Parameter(tl.ones(2))
    assert_close(p, tl.ones(2))
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(p, tl.ones(2), allow_subclasses=False)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close({"w": p}, {"w": tl.ones(2)}, allow_subclasses=False)


def test_agrees_with_torch_on_random_pairs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = rng.standard_normal(5).astype(np.float32)
        b = a + rng.choice([0.0, 1e-7, 1e-5, 1e-3], size=5).astype(np.float32)
        try:
            torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(b))
            ok_torch = True
        except AssertionError:
            ok_torch = False
        try:
            assert_close(tl.from_numpy(a), tl.from_numpy(b))
            ok_tl = True
        except AssertionError:
            ok_tl = False
        assert ok_tl == ok_torch


@pytest.mark.parametrize("dtype, lo, hi", [("float32", -9, 9), ("float64", -9, 9), ("float16", -9, 9),
                                           ("bfloat16", -9, 9), ("int64", -9, 9), ("int8", -9, 9),
                                           ("uint8", 0, 9), ("bool", 0, 1)])
def test_make_tensor_draws_from_pytorchs_default_ranges(dtype, lo, hi):
    from torchlite.testing import make_tensor
    dt = getattr(tl, dtype)
    t = make_tensor(64, 32, dtype=dt, device="cpu")
    assert t.shape == (64, 32) and t.dtype is dt and t.is_contiguous()
    v = t.double() if dtype != "bool" else t.to(tl.int64)
    assert lo <= v.min().item() and v.max().item() <= hi
    assert v.max().item() > v.min().item()               # drawn, not constant


def test_make_tensor_options():
    from torchlite.testing import make_tensor
    t = make_tensor((2, 3), dtype=tl.float32, device="cpu", low=-1, high=1, noncontiguous=True,
                    requires_grad=True)
    assert t.shape == (2, 3) and not t.is_contiguous() and t.requires_grad and t.is_leaf
    assert -1 <= t.min().item() and t.max().item() < 1
    z = make_tensor(4000, dtype=tl.int64, device="cpu", low=0, high=3, exclude_zero=True)
    assert set(z.tolist()) == {1, 2}
    assert make_tensor(2, 3, 4, 5, dtype=tl.float32, device="cpu",
                       memory_format=tl.channels_last).stride() == (60, 1, 15, 3)
    c = make_tensor(100, dtype=tl.complex64, device="cpu")
    assert c.dtype is tl.complex64 and c.real.abs().max() <= 9 and c.imag.abs().max() <= 9
    assert make_tensor(5, dtype=tl.uint8, device="cpu", low=-5, high=300).max().item() <= 255  # clamped
    with pytest.raises(ValueError):
        make_tensor(2, dtype=tl.float32, device="cpu", low=2, high=1)
    with pytest.raises(ValueError):
        make_tensor(2, 2, dtype=tl.float32, device="cpu", noncontiguous=True, memory_format=tl.channels_last)
    with pytest.raises(ValueError):
        make_tensor(2, dtype=tl.int64, device="cpu", requires_grad=True)


def test_assert_allclose_is_the_deprecated_form():
    from torchlite.testing import assert_allclose
    with pytest.warns(FutureWarning, match="deprecated"):
        assert_allclose(tl.tensor([1.0, float("nan")]), [1.0, float("nan")])   # NaNs equal
    with pytest.warns(FutureWarning):
        assert_allclose([1, 2], tl.tensor([1.0, 2.0]))                           # dtypes not compared
    with pytest.warns(FutureWarning), pytest.raises(AssertionError):
        assert_allclose(tl.tensor([1.0]), [1.1])
