"""torchlite.quasirandom.SobolEngine: against PyTorch's engine where installed (the same
direction numbers, so unscrambled points are equal bit for bit), and against the defining
property of a Sobol sequence everywhere: each of its first 2^m points lies in its own dyadic
interval of length 2^-m in every coordinate, and in its own elementary box of area 2^-m in the
first two coordinates jointly (a (0, m, 2)-net); scrambling keeps both."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.quasirandom import SobolEngine


def _one_per_interval(points, m):
    cells = np.floor(points * 2 ** m).astype(np.int64)
    return all(np.array_equal(np.sort(cells[:, d]), np.arange(2 ** m)) for d in range(points.shape[1]))


def _net_2d(points, m):
    """Every elementary box 2^-a x 2^-(m-a) holds exactly one of the 2^m points."""
    for a in range(m + 1):
        cells = np.floor(points[:, 0] * 2 ** a).astype(np.int64) * 2 ** (m - a) + \
            np.floor(points[:, 1] * 2 ** (m - a)).astype(np.int64)
        if not np.array_equal(np.sort(cells), np.arange(2 ** m)):
            return False
    return True


def test_first_points():
    e = SobolEngine(5)
    got = e.draw(3).numpy()
    np.testing.assert_array_equal(got, [[0] * 5, [0.5] * 5, [0.75, 0.25, 0.25, 0.25, 0.75]])
    assert e.num_generated == 3 and e.draw().dtype is tl.get_default_dtype()
    assert repr(e) == "SobolEngine(dimension=5)"
    assert repr(SobolEngine(2, scramble=True, seed=3)) == "SobolEngine(dimension=2, scramble=True, seed=3)"


@pytest.mark.parametrize("scramble", [False, True])
def test_net_properties(scramble):
    e = SobolEngine(8, scramble=scramble, seed=11)
    pts = e.draw_base2(10, dtype=tl.float64).numpy()
    assert pts.shape == (1024, 8) and (pts >= 0).all() and (pts < 1).all()
    for m in range(1, 11):
        assert _one_per_interval(pts[:2 ** m], m), m
        assert _net_2d(pts[:2 ** m], m), m
    if scramble:      # the mean of a stratified sample is 1/2 within the strata's width
        np.testing.assert_allclose(pts.mean(0), 0.5, atol=2 ** -10)


def test_scrambling_is_seeded():
    a = SobolEngine(6, scramble=True, seed=5).draw(64).numpy()
    b = SobolEngine(6, scramble=True, seed=5).draw(64).numpy()
    c = SobolEngine(6, scramble=True, seed=6).draw(64).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, SobolEngine(6).draw(64).numpy())
    unseeded = SobolEngine(6, scramble=True)
    assert _one_per_interval(unseeded.draw(32, dtype=tl.float64).numpy(), 5)


def test_state_reset_fast_forward_and_out():
    e = SobolEngine(3)
    whole = e.draw(40, dtype=tl.float64).numpy()
    e.reset()
    np.testing.assert_array_equal(e.draw(13, dtype=tl.float64).numpy(), whole[:13])
    np.testing.assert_array_equal(e.fast_forward(10).draw(17, dtype=tl.float64).numpy(), whole[23:40])
    assert e.num_generated == 40
    f = SobolEngine(3, scramble=True, seed=2)
    ref = f.draw(20, dtype=tl.float64).numpy()
    f.reset().fast_forward(0)
    f.fast_forward(7)
    np.testing.assert_array_equal(f.draw(13, dtype=tl.float64).numpy(), ref[7:])
    out = tl.empty(0)
    res = SobolEngine(2).draw(4, out=out)
    assert res is out and out.shape == (4, 2) and out[1].tolist() == [0.5, 0.5]
    assert SobolEngine(2).draw(0).shape == (0, 2)


def test_errors():
    for d in (0, 21202, 2.5):
        with pytest.raises(ValueError, match="Supported range of dimensionality"):
            SobolEngine(d)
    e = SobolEngine(2)
    e.draw(3)
    with pytest.raises(ValueError, match="power of 2"):
        e.draw_base2(2)
    with pytest.raises(ValueError, match="2\\*\\*30 points"):
        e.draw(2 ** 30)
    with pytest.raises(ValueError, match="2\\*\\*30 points"):
        e.fast_forward(2 ** 40)
    with pytest.raises(ValueError, match="non-negative"):
        e.draw(-1)
    # the far end of the sequence is reachable at once
    e.reset().fast_forward(2 ** 30 - 1)
    assert e.draw(1).shape == (1, 2)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for d in (1, 3, 21, 300, 1111, 4000, 21201):
        ours, theirs = SobolEngine(d), torch.quasirandom.SobolEngine(d)
        np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
        for step in (("draw", 1), ("draw", 6), ("ff", 100), ("draw", 9), ("base2", None)):
            if step[0] == "ff":
                ours.fast_forward(step[1]), theirs.fast_forward(step[1])
                continue
            if step[0] == "base2":
                ours.reset(), theirs.reset()
                a, b = ours.draw_base2(5).numpy(), theirs.draw_base2(5).numpy()
            else:
                a = ours.draw(step[1], dtype=tl.float64).numpy()
                b = theirs.draw(step[1], dtype=torch.float64).numpy()
            np.testing.assert_array_equal(a, b, err_msg=f"dimension {d}, {step}")
