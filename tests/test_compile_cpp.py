"""torchlite.compile(options={"cpp_codegen": True}) (or TORCHLITE_CPP_CODEGEN=1): each fused
elementwise program also runs as generated C (torchlite/compiler/_cpp.py), compiled by the
system C compiler into a shared object cached under $TORCHLITE_CACHE_DIR/cpp and called by the
interpreter per tile (torchlite/_core/fused.pyx _native).  Oracles: eager torchlite and the
interpreter-compiled twin, up to the floating-point contraction (fused multiply-add) the C
compiler may apply across ops: compared with tolerances, never bitwise.  Every test writes
its shared objects into its own tmp_path (nothing under the home directory)."""
import copy
import ctypes
import os
import platform
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import torchlite as tl
import torchlite.compiler as tlc
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.compiler import _compile, _cpp
from torchlite.compiler._lowering import RANDOM
from compile_helpers import apply_binary as binary, apply_unary as unary, fresh_compiler, kernels_of  # noqa: F401
from compile_helpers import graph_fn, random_graphs

if _cpp.compiler() is None:
    pytest.skip("cpp_codegen needs a C compiler ($CC, cc, gcc or clang) and none was found",
                allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPP = {"cpp_codegen": True}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """A private disk cache per test (tmp_path/cpp holds the shared objects); the switch
    comes from each test's options alone."""
    monkeypatch.setenv("TORCHLITE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHLITE_CPP_CODEGEN", raising=False)
    yield tmp_path / "cpp"
    _cpp._environment_key.cache_clear()      # a test may have pointed it at other headers


def so_files(d):
    return sorted(p.name for p in d.glob("*.so")) if d.is_dir() else []


def assert_close(got, want, dtype=None, rtol=None):
    """Equal up to contraction: float32 rtol 1e-5 (atol 1e-6 scaled by the values' size),
    float64 tight."""
    got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    f32 = (dtype or (tl.float32 if want.dtype == np.float32 else tl.float64)) is tl.float32
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    if f32:
        np.testing.assert_allclose(got, want, rtol=rtol or 1e-5, atol=1e-6 * scale)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol or 1e-12, atol=1e-13 * scale)


def has_c_form(spec):
    """Whether _cpp can write the spec's program as C (no row instruction, every op in the
    formula table)."""
    try:
        _cpp.c_source(spec)
    except _cpp.Unsupported:
        return False
    return True


def programs_of(compiled):
    """(what, program) for every program of every fused kernel: forward, and each backward
    plan's program and forward program (the forward that also writes the saved values)."""
    out = []
    for k in kernels_of(compiled):
        out.append(("forward", k.program))
        for bw in k._backwards.values():
            if bw.program is not None:
                out.append(("backward", bw.program))
            if bw.forward_program is not None:
                out.append(("forward+saved", bw.forward_program))
    return out


# ---- 1. the elementwise chain ------------------------------------------------------------------
def chain(x, w, b, y, z):
    return F.gelu(x * w + b) * tl.sigmoid(y) - z


LAYOUTS = ["rows", "columns", "scalars", "transposed"]


def chain_inputs(dtype, layout, seed=7):
    """x, y, z (64, 300); w, b broadcast: (300,) rows, (64, 1) columns or 0-d scalars; with
    "transposed", x is the transpose of a (300, 64) tensor (strided)."""
    g = tl.Generator().manual_seed(seed)
    x, y, z = (tl.randn(64, 300, generator=g, dtype=dtype) for _ in range(3))
    small = {"rows": (300,), "columns": (64, 1), "scalars": (), "transposed": (300,)}[layout]
    w, b = (tl.randn(*small, generator=g, dtype=dtype) for _ in range(2))
    if layout == "transposed":
        x = tl.randn(300, 64, generator=g, dtype=dtype).t()
        assert not x.is_contiguous()
    return x, w, b, y, z


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
def test_chain_equals_eager_in_every_layout(dtype, threads, cache_dir):
    """One compiled function over the four layouts (a graph per shape signature): every kernel
    runs generated C, every result equals eager's; the layouts share one program text (the
    strides are the interpreter's business), hence one shared object."""
    c = tl.compile(chain, options=CPP)
    for layout in LAYOUTS:
        args = chain_inputs(dtype, layout)
        got = c(*args)
        assert got.dtype is dtype
        assert_close(got, chain(*args), dtype)
        ks = kernels_of(c)
        assert ks and all(k.program.has_native for k in ks), layout
    assert len(c.cache) == 3              # the transposed x has the rows' signature
    assert len(so_files(cache_dir)) == 1


def test_the_environment_variable_turns_it_on_and_options_turn_it_off(monkeypatch, cache_dir):
    monkeypatch.setenv("TORCHLITE_CPP_CODEGEN", "1")
    args = chain_inputs(tl.float32, "rows")
    on, off = tl.compile(chain), tl.compile(chain, options={"cpp_codegen": False})
    assert_close(on(*args), chain(*args))
    assert_close(off(*args), chain(*args))
    assert [k.program.has_native for k in kernels_of(on)] == [True]
    assert [k.program.has_native for k in kernels_of(off)] == [False]
    assert len(so_files(cache_dir)) == 1
    monkeypatch.setenv("TORCHLITE_CPP_CODEGEN", "0")
    plain = tl.compile(chain)
    plain(*args)
    assert [k.program.has_native for k in kernels_of(plain)] == [False]


@pytest.mark.parametrize("mask_shape", [(64, 1), ()], ids=["column", "scalar"])
def test_a_bool_input_broadcast(mask_shape):
    """A bool mask from outside (1-byte elements: _native's byte-wise fill when broadcast)."""
    g = tl.Generator().manual_seed(2)
    x, y = tl.randn(64, 300, generator=g), tl.randn(64, 300, generator=g)
    m = tl.randn(*mask_shape, generator=g) > 0

    def f(m, x, y):
        return tl.where(m, x * 2, y) + 1
    c = tl.compile(f, options=CPP)
    assert_close(c(m, x, y), f(m, x, y))
    (k,) = kernels_of(c)
    assert k.program.has_native and 0 in k.spec.in_dtypes       # the bool input


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
def test_special_constants(dtype):
    """Constants the C spells by name or in hex (infinities, NaN, -0.0, 0.1) and an op's
    parameters (clamp's bounds)."""
    x = tl.randn(40, 30, generator=tl.Generator().manual_seed(6), dtype=dtype)

    def f(x):
        a = tl.where(x > 0, x * 2.5, float("-inf")) + tl.where(x > 1, float("nan"), x)
        return a - x.clamp(-0.1, 0.3) + tl.where(x < -1, float("inf"), x * -0.0) * 0.1
    c = tl.compile(f, options=CPP)
    got, want = c(x), f(x)
    assert np.isnan(want.numpy()).any() and np.isinf(want.numpy()).any()
    assert_close(got, want, dtype)
    signed = ~np.isnan(want.numpy())
    np.testing.assert_array_equal(np.signbit(got.numpy()[signed]), np.signbit(want.numpy()[signed]))
    assert [k.program.has_native for k in kernels_of(c)] == [True]


# a C function of the interpreter's native ABI that reports what it was handed: out[i] =
# 1000 * in0[i] + in1[i] (inputs, then the output, all contiguous), and the elements it saw
_PROBE = r"""
#include <stdint.h>
int64_t seen = 0;
#define PROBE(NAME, T) \
    int NAME(char **d, int64_t n, int64_t L) { \
        (void)L; \
        const T *a = (const T *)d[0], *b = (const T *)d[1]; T *o = (T *)d[2]; \
        for (int64_t i = 0; i < n; i++) o[i] = (T)1000 * a[i] + b[i]; \
        __atomic_fetch_add(&seen, n, __ATOMIC_RELAXED); \
        return 0; \
    }
PROBE(probe_f32, float)
PROBE(probe_f64, double)
"""


@pytest.fixture(scope="module")
def probe_lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("probe")
    src, so = d / "probe.c", d / "probe.so"
    src.write_text(_PROBE)
    cc = _cpp.compiler()
    subprocess.run(cc + [str(src), "-o", str(so), "-O1", "-shared", "-fPIC"], check=True,
                   capture_output=True, timeout=120)
    return ctypes.CDLL(str(so))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(64, 300), (300, 40)], ids=["row_tiles", "flat_tiles"])
@pytest.mark.parametrize("layout", ["contiguous", "column", "scalar", "transposed"])
def test_native_code_gets_contiguous_operands(probe_lib, dtype, shape, layout):
    """An interpreter program given a probe as its native function (_native's contract, no
    generated C needed): the probe sees every element once, each input written out
    contiguously in the output's order (a broadcast one filled with its value, a strided one
    gathered), and what it writes is the result."""
    g = tl.Generator().manual_seed(4)
    x = tl.randn(*shape, generator=g, dtype=dtype)
    if layout == "transposed":
        x = tl.randn(*reversed(shape), generator=g, dtype=dtype).t()
    s_shape = {"contiguous": shape, "column": (shape[0], 1), "scalar": (), "transposed": shape}
    s = tl.randn(*s_shape[layout], generator=g, dtype=dtype)

    def f(x, s):
        return (x + s) * 2
    c = tl.compile(f)
    assert_close(c(x, s), f(x, s))
    (k,) = kernels_of(c)
    assert not k.program.has_native and len(k.spec.in_dtypes) == 2
    fn = getattr(probe_lib, "probe_f32" if dtype is tl.float32 else "probe_f64")
    seen = ctypes.c_int64.in_dll(probe_lib, "seen")
    seen.value = 0
    k.program.set_native(ctypes.cast(fn, ctypes.c_void_p).value, probe_lib)
    got = c(x, s)
    assert seen.value == x.numel()
    want = 1000 * x.numpy() + np.broadcast_to(s.numpy(), shape)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if dtype is tl.float32 else 1e-15)


# ---- 2. random elementwise expressions (hypothesis) --------------------------------------------
UNARY = ["neg", "abs", "exp", "log_abs1", "tanh", "sigmoid", "relu", "gelu", "silu", "clamp"]
BINARY = ["add", "sub", "mul", "div_away", "maximum", "minimum", "where_gt", "gt_float", "le_float"]
SHAPES = [(6,), (3, 5), (2, 3, 4), (1, 7), (33, 70), (4, 1, 300), (5, 260)]
INPUT_LAYOUTS = ["full", "trailing", "column", "scalar", "transposed"]


def make_input(layout, shape, g, dtype):
    if layout == "trailing" and len(shape) > 1:
        return tl.randn(*shape[1:], generator=g, dtype=dtype)
    if layout == "column" and len(shape) > 1:
        return tl.randn(*shape[:-1], 1, generator=g, dtype=dtype)
    if layout == "scalar":
        return tl.randn((), generator=g, dtype=dtype)
    if layout == "transposed" and len(shape) > 1:
        return tl.randn(*reversed(shape), generator=g, dtype=dtype).permute(*reversed(range(len(shape))))
    return tl.randn(*shape, generator=g, dtype=dtype)


expressions = random_graphs(UNARY, BINARY, SHAPES, INPUT_LAYOUTS, 8)   # make_input's layouts


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expressions, st.sampled_from([tl.float32, tl.float64]))
def test_random_expressions_equal_eager_and_the_interpreter(expr, dtype):
    n_inputs, steps, shape, layouts = expr
    f = graph_fn(steps)
    g = tl.Generator().manual_seed(len(steps) * 10 + n_inputs)
    xs = [make_input(layouts[i], shape, g, dtype) for i in range(n_inputs)]
    if all(x.ndim == 0 for x in xs):
        xs[0] = tl.randn(*shape, generator=g, dtype=dtype)
    want = f(*xs)
    native, interp = tl.compile(f, options=CPP), tl.compile(f)
    got = native(*xs)
    assert_close(got, want, dtype)
    assert_close(got, interp(*xs), dtype)
    # every op of these is in ewise_exprs.h's table: every fused program runs as C
    assert kernels_of(native) and all(k.program.has_native for k in kernels_of(native))
    assert not any(k.program.has_native for k in kernels_of(interp))


# ---- 3. training -------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32, bias=False)
        self.b1 = nn.Parameter(tl.randn(32) * 0.1)
        self.fc2 = nn.Linear(32, 16)
        self.scale = nn.Parameter(tl.ones(16))

    def forward(self, x):
        h = F.gelu(self.fc1(x) + self.b1)                        # bias + GELU: one kernel
        return tl.tanh(x + self.fc2(h) * self.scale) * 0.5 + x    # the residual: another


def test_training_matches_the_interpreter_twin(cache_dir):
    tl.manual_seed(0)
    model = MLP()
    twin = copy.deepcopy(model)
    native, interp = tl.compile(model, options=CPP), tl.compile(twin)
    opts = [tl.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    g = tl.Generator().manual_seed(1)
    for step in range(3):
        x, y = tl.randn(8, 16, generator=g), tl.randn(8, 16, generator=g)
        outs = []
        for m, opt in zip((native, interp), opts):
            opt.zero_grad()
            out = m(x)
            ((out - y) ** 2).mean().backward()
            opt.step()
            outs.append(out)
        assert_close(outs[0], outs[1], rtol=1e-5)
        for (n1, p1), (n2, p2) in zip(model.named_parameters(), twin.named_parameters()):
            assert n1 == n2
            assert_close(p1.grad, p2.grad, rtol=1e-5)
            assert_close(p1, p2, rtol=1e-5)
    progs = programs_of(native)
    assert {what for what, _ in progs} >= {"forward", "backward"}
    # bias + GELU, the residual's chain and their gradients are all table ops: all run as C
    assert all(p.has_native for _, p in progs), [(w, p.has_native) for w, p in progs]
    assert not any(p.has_native for _, p in programs_of(interp))
    assert len(so_files(cache_dir)) >= 3


# ---- 4. programs with row instructions run as C; an op with no one-expression formula does not --
def _layer_norm_by_means(x, w, b):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    return d * ((d * d).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b


ROW_CASES = {
    "softmax": lambda x, w, b: F.softmax(x * 2 + b, -1),
    "log_softmax": lambda x, w, b: F.log_softmax(x * w, -1) - 1,
    "keepdim_mean": lambda x, w, b: x - x.mean(-1, keepdim=True) * 2,
    "keepdim_sum": lambda x, w, b: tl.tanh(x).sum(-1, keepdim=True) * x,
    "rms_norm": lambda x, w, b: x * (x * x).mean(-1, keepdim=True).add(1e-6).rsqrt() * w,
    "layer_norm_by_means": _layer_norm_by_means,
}


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
@pytest.mark.parametrize("case", sorted(ROW_CASES))
@pytest.mark.parametrize("cols", [7, 300, 5000])
def test_row_programs_run_as_c(case, dtype, cols):
    """Row reductions (one pass per reduction, then the stores) as C: eager's values and
    gradients, rows shorter and longer than a tile, forward and backward programs native."""
    f = ROW_CASES[case]
    g = tl.Generator().manual_seed(5)
    x0 = tl.randn(37, cols, generator=g, dtype=dtype)
    w0, b0 = tl.randn(cols, generator=g, dtype=dtype), tl.randn(cols, generator=g, dtype=dtype)
    seed = tl.randn(37, cols, generator=g, dtype=dtype)
    c = tl.compile(f, options=CPP)
    results = []
    for fn in (c, f):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y = fn(x, w, b)
        y.backward(seed)
        results.append([y.detach(), x.grad] + [t.grad for t in (w, b) if t.grad is not None])
    for got, want in zip(*results):
        # (rows of 5000 summed in another order: float64 keeps 1e-9 of a sum's terms)
        assert_close(got, want, dtype, rtol=1e-4 if dtype == tl.float32 else 1e-9)
    ks = kernels_of(c)
    assert ks and all(k.program.has_native and k.program.has_row_instructions for k in ks)
    assert all(k._backward is None or k._backward.program is None or k._backward.program.has_native
               for k in ks)


def test_softmax_rows_with_nan_and_all_masked():
    """A NaN in a row makes the row NaN, a row of -inf gives NaN, as eager's softmax does."""
    x = tl.randn(4, 50, generator=tl.Generator().manual_seed(2))
    x[1, 7] = float("nan")
    x[2] = float("-inf")
    x[3, :10] = float("-inf")
    f = lambda x: F.softmax(x * 1.5, -1)      # noqa: E731
    got, want = tl.compile(f, options=CPP)(x), f(x)
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want.numpy()))
    ok = ~np.isnan(want.numpy())
    np.testing.assert_allclose(got.numpy()[ok], want.numpy()[ok], rtol=1e-5, atol=1e-7)


def test_an_op_without_a_one_expression_formula_stays_on_the_interpreter(cache_dir):
    """float32 sin is fixed up by the C library on part of its domain: no C form."""
    x = tl.randn(64, 300, generator=tl.Generator().manual_seed(3))
    f = lambda x: tl.sin(x) * 2       # noqa: E731
    c = tl.compile(f, options=CPP)
    assert_close(c(x), f(x))
    ks = kernels_of(c)
    assert ks and not any(k.program.has_native for k in ks)
    assert not any(has_c_form(k.spec) for k in ks)
    assert so_files(cache_dir) == []


def test_dropout_in_training_mode():
    """A program with a random instruction runs as C (the interpreter draws the mask into the
    loop's reach): the mask is the one eager dropout draws from the same seed."""
    x = tl.randn(64, 300, generator=tl.Generator().manual_seed(3))

    def f(x):
        return F.dropout(x * 2, 0.5, training=True) + 1
    c = tl.compile(f, options=CPP)
    tl.manual_seed(123)
    got = c(x)
    tl.manual_seed(123)
    want = f(x)
    assert_close(got, want)
    kept = got.numpy() != 1
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_allclose(got.numpy()[kept], (x.numpy() * 4 + 1)[kept], rtol=1e-6, atol=1e-6)
    (k,) = kernels_of(c)
    assert any(ins[0] == RANDOM for ins in k.spec.instrs)
    assert k.program.has_native and has_c_form(k.spec)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_dropout_gradients(dtype):
    """Forward (the scaled mask saved as an output) and backward of gelu(dropout(x * w)) as C:
    eager's values and gradients under the same seed."""
    g = tl.Generator().manual_seed(4)
    x0, w0 = tl.randn(33, 130, generator=g, dtype=dtype), tl.randn(130, generator=g, dtype=dtype)

    def f(x, w):
        return F.gelu(F.dropout(x * w, 0.3, training=True))
    c = tl.compile(f, options=CPP)
    results = []
    for fn in (c, f):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        tl.manual_seed(9)
        y = fn(x, w)
        (y * y).sum().backward()
        results.append((y.detach(), x.grad, w.grad))
    for a, b in zip(*results):
        assert_close(a, b, dtype)
    (k,) = kernels_of(c)
    assert k.program.has_native and k._backward.program.has_native
    assert k._backward.forward_program is None or k._backward.forward_program.has_native


# ---- 5. the disk cache -------------------------------------------------------------------------
_SECOND_PROCESS = """
import torchlite as tl
import torchlite.nn.functional as F
from torchlite.compiler import _cpp

def no_build(*a):
    raise AssertionError("the second process compiled C")
_cpp._build = no_build

def chain(x, w, b, y, z):
    return F.gelu(x * w + b) * tl.sigmoid(y) - z

g = tl.Generator().manual_seed(7)
x, y, z = (tl.randn(64, 300, generator=g) for _ in range(3))
w, b = (tl.randn(300, generator=g) for _ in range(2))
c = tl.compile(chain, options={"cpp_codegen": True})
err = float((c(x, w, b, y, z) - chain(x, w, b, y, z)).abs().max())
ks = [k for e in c.cache.values() for k in e.kernels]
print("native", len(ks), all(k.program.has_native for k in ks), err)
"""


def test_the_disk_cache_is_reused(monkeypatch, tmp_path, cache_dir):
    args = chain_inputs(tl.float32, "rows")
    first = tl.compile(chain, options=CPP)
    assert_close(first(*args), chain(*args))
    files = so_files(cache_dir)
    assert len(files) == 1
    with monkeypatch.context() as m:
        def no_build(*a):
            raise AssertionError("compiled again")
        m.setattr(_cpp, "_build", no_build)
        # a fresh compile object, then the same one after reset(): the file is loaded again
        second = tl.compile(chain, options=CPP)
        assert_close(second(*args), chain(*args))
        tlc.reset()
        assert not first.cache
        assert_close(first(*args), chain(*args))
        assert all(k.program.has_native for k in kernels_of(first) + kernels_of(second))
    assert so_files(cache_dir) == files
    # another program: one more file
    other = tl.compile(lambda x, y: (x - y).tanh() * 3, options=CPP)
    assert_close(other(args[0], args[3]), (args[0] - args[3]).tanh() * 3)
    assert len(so_files(cache_dir)) == 2 and set(files) < set(so_files(cache_dir))
    # a second process with the same cache compiles nothing and runs the C
    script = tmp_path / "second.py"
    script.write_text(_SECOND_PROCESS)
    env = dict(os.environ, TORCHLITE_CACHE_DIR=str(tmp_path))
    env.pop("TORCHLITE_CPP_CODEGEN", None)
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    words = r.stdout.split()
    assert words[:3] == ["native", "1", "True"], r.stdout
    assert float(words[3]) < 1e-5
    assert len(so_files(cache_dir)) == 2


# ---- 6. no compiler ----------------------------------------------------------------------------
def test_no_compiler_warns_once_and_runs_on_the_interpreter(monkeypatch, cache_dir):
    monkeypatch.setattr(_cpp, "compiler", lambda: None)
    monkeypatch.setattr(_compile, "_warned_no_cc", [])
    args = chain_inputs(tl.float32, "rows")
    c = tl.compile(chain, options=CPP)
    with pytest.warns(UserWarning, match="needs a C compiler"):
        got = c(*args)
    assert_close(got, chain(*args))
    assert [k.program.has_native for k in kernels_of(c)] == [False]
    with warnings.catch_warnings():            # given once
        warnings.simplefilter("error")
        d = tl.compile(lambda x: (x * 2).exp() + 1, options=CPP)
        assert_close(d(args[0]), (args[0] * 2).exp() + 1)
    assert so_files(cache_dir) == []


# ---- 7. a compiler that fails ------------------------------------------------------------------
@pytest.fixture
def clear_compiler_cache():
    _cpp.compiler.cache_clear()
    yield
    _cpp.compiler.cache_clear()


@pytest.mark.parametrize("how", ["bad_flag", "bad_cc"])
def test_a_failing_compiler_warns_and_runs_on_the_interpreter(how, monkeypatch, request, cache_dir,
                                                              clear_compiler_cache):
    if how == "bad_flag":
        flags = _cpp._flags
        monkeypatch.setattr(_cpp, "_flags", lambda: flags() + ["-fno-such-flag-for-torchlite"])
    else:
        cc = _cpp.compiler()
        monkeypatch.setenv("CC", " ".join(cc + ["-fno-such-flag-for-torchlite"]))
        _cpp.compiler.cache_clear()
        # runs before monkeypatch restores $CC: the next compiler() reads the real one
        request.addfinalizer(_cpp.compiler.cache_clear)
        assert _cpp.compiler()[-1] == "-fno-such-flag-for-torchlite"
    args = [a.clone().requires_grad_() for a in chain_inputs(tl.float64, "columns")]
    c = tl.compile(chain, options=CPP)
    with pytest.warns(UserWarning, match="cpp_codegen could not build") as rec:
        got = c(*args)
        got.sum().backward()
    assert any("runs on the interpreter" in str(w.message) for w in rec)
    e = [a.detach().clone().requires_grad_() for a in args]
    want = chain(*e)
    want.sum().backward()
    assert_close(got, want)
    for a, b in zip(args, e):
        assert_close(a.grad, b.grad)
    progs = programs_of(c)
    assert progs and not any(p.has_native for _, p in progs)
    assert so_files(cache_dir) == []


def test_the_compiler_cache_is_restored():
    """(After the test above) the real compiler again, and it builds."""
    assert _cpp.compiler() is not None and "-fno-such-flag-for-torchlite" not in _cpp.compiler()
    c = tl.compile(lambda x: x.exp() * 2 - 1, options=CPP)
    x = tl.randn(10, 10)
    assert_close(c(x), x.exp() * 2 - 1)
    assert [k.program.has_native for k in kernels_of(c)] == [True]


# ---- 8. set_native -----------------------------------------------------------------------------
def test_set_native(cache_dir):
    args = chain_inputs(tl.float32, "transposed")
    c = tl.compile(chain, options=CPP)
    first = c(*args)
    (k,) = kernels_of(c)
    assert k.program.has_native
    lib, address = _cpp.native_program(k.spec)              # from the disk cache
    assert address and len(so_files(cache_dir)) == 1
    k.program.set_native(0, None)                            # back to the interpreter
    assert not k.program.has_native
    again = c(*args)
    assert_close(again, chain(*args))
    assert_close(again, first)
    k.program.set_native(address, lib)                       # and to the C again
    assert k.program.has_native
    assert_close(c(*args), first)
    # a program with row instructions goes back to the interpreter and to the C alike
    x = tl.randn(8, 300)
    s = tl.compile(lambda x: F.softmax(x * 2, -1), options=CPP)
    first = s(x)
    (ks,) = kernels_of(s)
    assert ks.program.has_row_instructions and ks.program.has_native
    lib, address = _cpp.native_program(ks.spec)
    ks.program.set_native(0, None)
    assert not ks.program.has_native
    assert_close(s(x), F.softmax(x * 2, -1))
    ks.program.set_native(address, lib)
    assert_close(s(x), first)


# ---- robustness of the disk cache ------------------------------------------------------------
def test_an_unusable_cache_dir_falls_back_to_the_interpreter(tmp_path, monkeypatch):
    """A $TORCHLITE_CACHE_DIR that is a file: a warning, and the interpreter runs."""
    bad = tmp_path / "a_file"
    bad.write_text("")
    monkeypatch.setenv("TORCHLITE_CACHE_DIR", str(bad))
    args = chain_inputs(tl.float32, "rows")
    c = tl.compile(chain, options=CPP)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = c(*args)
    assert rec and all(issubclass(w.category, UserWarning) for w in rec)
    assert_close(got, chain(*args))
    assert [k.program.has_native for k in kernels_of(c)] == [False]


def test_a_corrupt_cached_object_is_not_fatal(tmp_path, monkeypatch):
    """A cached object that does not load is built again."""
    args = chain_inputs(tl.float32, "rows")
    tl.compile(chain, options=CPP)(*args)
    (name,) = so_files(tmp_path / "cpp")
    other = tmp_path / "other"
    (other / "cpp").mkdir(parents=True)
    (other / "cpp" / name).write_bytes(b"")       # another file: dlopen does not reuse the first
    monkeypatch.setenv("TORCHLITE_CACHE_DIR", str(other))
    c = tl.compile(chain, options=CPP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = c(*args)
    assert_close(got, chain(*args))


def test_a_change_of_the_headers_is_not_served_from_the_cache(tmp_path, monkeypatch, cache_dir):
    """Headers that changed (an upgrade: a new process) give a new object, not the old one."""
    import shutil
    headers = tmp_path / "kernels"
    shutil.copytree(_cpp._KERNELS, headers)
    monkeypatch.setattr(_cpp, "_KERNELS", str(headers))
    _cpp._environment_key.cache_clear()
    x, y = tl.randn(30, 20), tl.randn(30, 20)

    def f(x, y):
        return (x + y) * 2
    assert_close(tl.compile(f, options=CPP)(x, y), f(x, y))
    exprs = headers / "ewise_exprs.h"
    text = exprs.read_text()
    assert "X(ADD, x + y, x + y)" in text
    exprs.write_text(text.replace("X(ADD, x + y, x + y)", "X(ADD, x + y + 1, x + y + 1)"))
    _cpp._environment_key.cache_clear()          # what a new process would compute
    # what the C now says the program computes: a new object, (x + y + 1) * 2
    got = tl.compile(f, options=CPP)(x, y)
    assert len(so_files(cache_dir)) == 2
    assert_close(got, (x + y + 1) * 2)


def test_several_dropouts_in_one_program():
    """Masks the lowering gives one register (each dead before the next is drawn) stay on the
    interpreter, which draws each just before its use; results are eager's."""
    def d(t):
        return F.dropout(t, 0.5, training=True)
    fns = [lambda x, y: d(d(d(x * 2) * 3) * 5) + 1,
           lambda x, y: d(x) * d(y) + d(x * y) + d(x - y)]
    g = tl.Generator().manual_seed(8)
    x0, y0 = tl.randn(40, 70, generator=g), tl.randn(40, 70, generator=g)
    for f in fns:
        c = tl.compile(f, options=CPP)
        results = []
        for fn in (c, f):
            x, y = x0.clone().requires_grad_(), y0.clone().requires_grad_()
            tl.manual_seed(21)
            out = fn(x, y)
            out.backward(tl.ones_like(out))
            results.append((out.detach(), x.grad, y.grad))
        for got, want in zip(*results):
            assert (got is None) == (want is None)
            if want is not None:
                assert_close(got, want)


def test_several_dropouts_around_a_softmax():
    def d(t):
        return F.dropout(t, 0.5, training=True)

    def f(x):
        return d(F.softmax(d(x) * 2, -1)) + 1
    x0 = tl.randn(16, 90, generator=tl.Generator().manual_seed(9))
    c = tl.compile(f, options=CPP)
    results = []
    for fn in (c, f):
        x = x0.clone().requires_grad_()
        tl.manual_seed(5)
        out = fn(x)
        out.backward(tl.ones_like(out) * 0.5)
        results.append((out.detach(), x.grad))
    for got, want in zip(*results):
        assert_close(got, want)


def test_a_missing_kernel_folder_falls_back_to_the_interpreter(monkeypatch):
    """$TORCHLITE_KERNEL_DIR pointing nowhere: a warning, and the interpreter runs."""
    monkeypatch.setenv("TORCHLITE_KERNEL_DIR", "/nonexistent/torchlite-kernels")
    _cpp._environment_key.cache_clear()
    x = tl.randn(20, 30)
    f = lambda x: (x * 2).exp() + 1        # noqa: E731
    c = tl.compile(f, options=CPP)
    with pytest.warns(UserWarning, match="cpp_codegen"):
        got = c(x)
    assert_close(got, f(x))
    assert not any(k.program.has_native for k in kernels_of(c))


# ---- the SIMD level, and build folders a killed process left ------------------------------------
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 levels")
def test_generated_c_follows_a_forced_simd_level(cache_dir):
    """With the eager kernels forced below the CPU's best level (TORCHLITE_ISA or
    set_isa_level), the C is built for that x86-64 level, not -march=native: a separate
    object, whose results still equal eager's at that level."""
    from torchlite._core import elementwise
    best = elementwise.cpu_isa_level()
    if best == 0:
        pytest.skip("the CPU has only the baseline level")
    if tl._core.isa_level() < best:
        pytest.skip("the suite runs with TORCHLITE_ISA below the CPU's best level")
    assert "-march=native" in _cpp._flags()
    args = chain_inputs(tl.float32, "rows")
    native = tl.compile(chain, options=CPP)
    assert_close(native(*args), chain(*args))
    assert len(so_files(cache_dir)) == 1
    tlc.reset()
    old = tl._core.isa_level()
    tl._core.set_isa_level(0)
    try:
        assert "-march=x86-64" in _cpp._flags() and "-march=native" not in _cpp._flags()
        baseline = tl.compile(chain, options=CPP)
        assert_close(baseline(*args), chain(*args))
        assert all(k.program.has_native for k in kernels_of(baseline))
        assert len(so_files(cache_dir)) == 2               # a second object, built for level 0
    finally:
        tl._core.set_isa_level(old)
    assert "-march=native" in _cpp._flags()


def test_build_folders_left_by_a_killed_build_are_swept(cache_dir):
    """A build runs in a build-* folder of the cache; one an hour old belongs to a process
    that was killed while compiling and goes at the next build, a recent one stays."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    stale, live = cache_dir / "build-stale", cache_dir / "build-live"
    for d in (stale, live):
        d.mkdir()
        (d / "program.c").write_text("int x;")
    old = time.time() - 2 * _cpp._STALE_BUILD_S
    os.utime(stale, (old, old))
    other = cache_dir / "keep-me"
    other.mkdir()
    os.utime(other, (old, old))
    args = chain_inputs(tl.float32, "rows")
    assert_close(tl.compile(chain, options=CPP)(*args), chain(*args))
    assert not stale.exists() and live.exists() and other.exists()
    assert not [p for p in cache_dir.iterdir() if p.name.startswith("build-") and p != live]
