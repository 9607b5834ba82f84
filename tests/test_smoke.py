import numpy as np

import torchlite as tl


def test_version_and_config(capsys):
    assert isinstance(tl.__version__, str)
    tl.show_config()
    out = capsys.readouterr().out
    assert "openmp" in out and "simd" in out


def test_add_matches_numpy():
    a = np.random.randn(3, 4).astype(np.float32)
    b = np.random.randn(4).astype(np.float32)
    np.testing.assert_array_equal((tl.tensor(a) + tl.tensor(b)).numpy(), a + b)


def test_repr_like_pytorch():
    assert repr(tl.tensor([[1., 2.], [3., 4.5]])) == "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])"
    assert repr(tl.arange(3)) == "tensor([0, 1, 2])"
    assert repr(tl.tensor([1, 2], dtype=tl.int32)) == "tensor([1, 2], dtype=torchlite.int32)"
