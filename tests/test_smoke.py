import os

import numpy as np
import pytest

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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_runs_parallel_kernels_without_hanging():
    """The parent's OpenMP pool does not survive fork: the child must fall back to one thread
    (it would otherwise wait forever at the first parallel region)."""
    import multiprocessing as mp
    a = tl.randn(512, 512)
    (a @ a).sum()                                    # the parent's thread pool is up
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_matmul, args=(q,))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        pytest.fail("the forked child hung in a parallel kernel")
    assert q.get(timeout=5) == (1, 512.0)


def _child_matmul(q):
    b = tl.ones(512, 512)
    q.put((tl.get_num_threads(), (b @ b)[0, 0].item()))
