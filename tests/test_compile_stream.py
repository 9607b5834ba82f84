"""The fused interpreter's streaming mode (torchlite/_core/fused.pyx's header): a program whose
operands are larger than the last level cache runs on tiles of STREAM_TILE elements and
prefetches the next tile's operands.  It changes how the work is cut and when memory is
touched, never what is computed, so its results must equal the non-streaming interpreter's
to the bit, and eager's as the other compile tests check.  fused.stream_bytes(0) makes every
program stream, so these run on small tensors."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite._core import fused
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401
from compile_helpers import UNARY, BINARY, graph_fn, random_graphs, random_input


@pytest.fixture
def streaming():
    old = fused.stream_bytes(0)
    yield
    fused.stream_bytes(old)


def _run_both(fn, *args, grads=False):
    """fn compiled, run without streaming and with it (each a fresh compile), forward and,
    with grads, backward of the sum: the two lists of result arrays."""
    results = []
    for threshold in (1 << 62, 0):
        tl._dynamo.reset()
        old = fused.stream_bytes(threshold)
        try:
            c = tl.compile(fn)
            xs = [a.detach().clone().requires_grad_(grads and a.dtype.is_floating_point) for a in args]
            runs = fused.streamed_runs()
            y = c(*xs)
            assert (fused.streamed_runs() > runs) == (threshold == 0), "streamed or not as asked"
            out = [y.detach().numpy().copy()]
            if grads:
                y.sum().backward()
                out += [x.grad.numpy().copy() for x in xs if x.grad is not None]
            assert kernels_of(c), "nothing was fused"
        finally:
            fused.stream_bytes(old)
        results.append(out)
    return results


def _assert_bit_equal(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def chain(x, w, b, y, z):
    return F.gelu(x * w + b) * tl.sigmoid(y) - z


def test_threshold_defaults_to_the_last_level_cache_and_is_settable():
    llc = fused.last_level_cache_bytes()
    assert llc >= 1 << 16                         # a real cache size (or the 32 MB fallback)
    old = fused.stream_bytes()
    assert old == fused.stream_bytes(12345)
    assert fused.stream_bytes() == 12345
    fused.stream_bytes(old)
    with pytest.raises(ValueError, match="stream_bytes"):
        fused.stream_bytes(-1)


@pytest.mark.parametrize("shape", [(3, 2500), (5000,), (1023,), (1025,), (2, 3, 1030), (7, 9)])
@pytest.mark.parametrize("threads", [1, 2])
def test_chain_streams_to_the_bit(shape, threads):
    g = tl.Generator().manual_seed(len(shape) + shape[-1])
    x, y, z = (tl.randn(*shape, generator=g) for _ in range(3))
    w, b = tl.randn(shape[-1], generator=g), tl.randn(shape[-1], generator=g)
    old = tl.get_num_threads()
    tl.set_num_threads(threads)
    try:
        plain, streamed = _run_both(chain, x, w, b, y, z, grads=True)
    finally:
        tl.set_num_threads(old)
    _assert_bit_equal(plain, streamed)
    np.testing.assert_allclose(streamed[0], chain(x, w, b, y, z).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_layouts_that_gather_or_broadcast(dtype):
    """Transposed inputs (flat tiles gather them into scratch: nothing to prefetch), a column
    broadcast along rows, a 0-dim tensor, and an output of flat tiles (short rows)."""
    g = tl.Generator().manual_seed(5)
    x = tl.randn(3000, 40, generator=g, dtype=dtype).t()
    w = tl.randn(40, 1, generator=g, dtype=dtype)
    s = tl.randn((), generator=g, dtype=dtype)
    narrow = tl.randn(5000, 3, generator=g, dtype=dtype)
    bias = tl.randn(3, generator=g, dtype=dtype)

    def f(x, w, s):
        return ((x * w).tanh() + s) * x

    def h(a, b):
        return (a * b).exp() - a
    _assert_bit_equal(*_run_both(f, x, w, s, grads=True))
    _assert_bit_equal(*_run_both(h, narrow, bias, grads=True))


def test_dropout_masks_do_not_depend_on_the_tiles(streaming):
    """The mask is drawn at each element's flat index, whatever tile holds it."""
    x = tl.randn(4, 3000)

    def f(x):
        return F.dropout(x * 2, 0.3) + 1
    outs = []
    for threshold in (1 << 62, 0):
        fused.stream_bytes(threshold)
        tl._dynamo.reset()
        tl.manual_seed(7)
        outs.append(tl.compile(f)(x).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    tl.manual_seed(7)
    np.testing.assert_array_equal(outs[1], f(x).numpy())        # eager draws the same mask


def test_row_programs_keep_their_whole_row_tiles(streaming):
    """Softmax and row means do not stream (their tiles are whole rows): still eager's values."""
    x = tl.randn(6, 2100)
    f = tl.compile(lambda x: F.softmax(x * 0.5, dim=-1) + x.mean(-1, keepdim=True))
    np.testing.assert_allclose(f(x).numpy(), (F.softmax(x * 0.5, dim=-1) + x.mean(-1, keepdim=True)).numpy(),
                               rtol=1e-6, atol=1e-6)


# ---- random elementwise graphs, streaming (as test_compile.py's, against the plain interpreter)
hyp = pytest.importorskip("hypothesis")
st = hyp.strategies


_programs = random_graphs(UNARY, BINARY, [(2100,), (3, 1500), (2, 3, 700), (1, 1025), (2500, 3)],
                          ["full", "bcast", "scalar", "t"], 8)     # random_input's layouts


@hyp.settings(max_examples=40, deadline=None, derandomize=True)
@hyp.given(_programs, st.sampled_from([tl.float32, tl.float64]))
def test_random_graphs_stream_to_the_bit(program, dtype):
    n_inputs, steps, shape, layouts = program
    f = graph_fn(steps)
    g = tl.Generator().manual_seed(len(steps))
    xs = [random_input(layouts[i], shape, g, dtype) for i in range(n_inputs)]
    if all(x.ndim == 0 for x in xs):
        xs[0] = tl.randn(*shape, generator=g, dtype=dtype)
    plain, streamed = _run_both(f, *xs, grads=True)
    _assert_bit_equal(plain, streamed)
    tol = 1e-5 if dtype is tl.float32 else 1e-12
    np.testing.assert_allclose(streamed[0], f(*xs).numpy(), rtol=tol, atol=tol)
