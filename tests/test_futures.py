"""torchlite.futures.Future (PyTorch's torch.futures API) in one process: completion, errors,
chaining with then(), callbacks, collect_all/wait_all.  A collective's Work.get_future() is
checked under mpiexec, through DDP's communication hooks (tests/distributed_scripts/ddp.py)."""
import threading

import pytest

from torchlite.futures import Future, collect_all, wait_all


def test_set_result_wait_value_and_then():
    f = Future()
    assert not f.done()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    doubled = f.then(lambda fut: fut.value() * 2)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    f.set_result(21)
    assert f.done() and f.wait() == 21 and f.value() == 21 and seen == [21]
    assert doubled.wait() == 42
    late = []
    f.add_done_callback(lambda fut: late.append(1))          # already done: runs at once
    assert late == [1]
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(0)


def test_errors_propagate_through_then():
    f = Future()
    g = f.then(lambda fut: fut.value() + 1)
    f.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        f.wait()
    with pytest.raises(ValueError, match="boom"):
        g.wait()
    h = Future()
    bad = h.then(lambda fut: 1 / 0)
    h.set_result(1)
    with pytest.raises(ZeroDivisionError):
        bad.wait()
    with pytest.raises(TypeError, match="expects an exception"):
        Future().set_exception("not an exception")


def test_wait_blocks_until_another_thread_completes():
    f = Future()
    threading.Timer(0.05, lambda: f.set_result("late")).start()
    assert f.wait() == "late"


def test_collect_all_and_wait_all():
    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    b.set_result(2)
    assert [x.value() for x in both.wait()] == [1, 2]
    assert wait_all([a, b]) == [1, 2]
