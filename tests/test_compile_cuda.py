"""torchlite.compile's fused programs as generated CUDA C (torchlite/cuda/_fused.py), without a GPU.

* The kernels generated for real programs (the gelu chain lowered from a compile, its
  backward, a where/comparison program, a float64 one) compile with NVRTC for sm_80 and
  sm_90 (skipped without NVRTC).
* The same kernels built for the CPU with the host emulation (tests/cuda_host/tl_emulation.h,
  g++) give the CPU interpreter's results on random inputs, through the contiguous fast path
  and the strided walk (broadcast and transposed inputs): exactly for the float64 program,
  within 1e-6 for float32 (the host's libm and the CPU kernels' vector math differ by ulps).
* End to end on the stand-in driver (tests/fake_cuda_driver.py): torchlite.compile on
  device='cuda' tensors launches the generated kernels (run by the host build) for the
  forward and the backward, and matches eager CPU results.
"""
import ctypes
import hashlib
import os
import subprocess

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite.compiler import _lowering as L
from torchlite.cuda import _fused as _cuda
from torchlite.cuda import _elementwise as E, _kernels as K, _launch


def chain(x, w, b, y, z):
    return F.gelu(x * w + b) * tl.sigmoid(y) - z


def where_prog(x, y):
    return tl.where(x > y, x * 2.0, (y - x).clamp(-0.5, 0.5)) + tl.where(x <= 0.25, y, -x)


def f64_prog(x, y):
    return ((x * y + 1.5) / (y.abs() + 2.0)).sqrt() - tl.maximum(x, y) * 0.75


def dropout_prog(x, r):
    return r + F.dropout(F.gelu(x * 2.0), 0.3)


def softmax_prog(a, m):
    return F.softmax(a * 0.125 + m, dim=-1) * 2.0


def rms_prog(x, w):
    return x * tl.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def log_softmax_prog(x, t):
    return (F.log_softmax(x, -1) * t).sum(-1, keepdim=True) + x.mean(-1, keepdim=True) * x


def activations_prog(x, y):
    """Every activation compile inlines (on CUDA tensors too): its formula's ops must all have
    CUDA functors, or the program would run op by op."""
    return (F.relu(x) + F.leaky_relu(y, 0.2) + F.elu(x) + F.selu(y) + F.softplus(x)
            + F.mish(y) + tl.sigmoid(x) + tl.tanh(y))


def _kernels_of(compiled):
    return [k for e in compiled.cache.values() for k in getattr(e, "kernels", [])]


def _specs(fn, *tensors, grad=False):
    """The forward specs (and the backward ones with grad) of `fn` compiled on CPU tensors."""
    c = tl.compile(fn)
    if grad:
        ts = [t.clone().requires_grad_() for t in tensors]
        c(*ts).sum().backward()
    else:
        c(*tensors)
    ks = _kernels_of(c)
    assert ks
    specs = [k.spec for k in ks]
    if grad:
        specs += [k._backward.spec for k in ks if k._backward is not None and k._backward.spec]
    return specs


def _program_specs():
    g = tl.Generator().manual_seed(0)
    x, y, z = (tl.randn(4, 6, generator=g) for _ in range(3))
    w, b = tl.randn(6, generator=g), tl.randn(6, generator=g)
    out = {}
    fw, bw = _specs(chain, x, w, b, y, z, grad=True)[:2]
    out["chain"], out["chain_backward"] = fw, bw
    out["where"] = _specs(where_prog, x, y)[0]
    out["f64"] = _specs(f64_prog, x.double(), y.double())[0]
    out["dropout"] = _specs(dropout_prog, x, y)[0]
    out["softmax"], out["softmax_backward"] = _specs(softmax_prog, x, w, grad=True)[:2]
    out["rms"], out["rms_backward"] = _specs(rms_prog, x, w, grad=True)[:2]
    out["log_softmax"] = _specs(log_softmax_prog, x.double(), y.double())[0]
    out["activations"], out["activations_backward"] = _specs(activations_prog, x, y, grad=True)[:2]
    for k in ("softmax", "softmax_backward", "rms", "rms_backward", "log_softmax"):
        assert any(i[0] in _cuda.ROW_KINDS for i in out[k].instrs), k
    assert any(i[0] == _cuda.SOFTMAX_BWD for i in out["softmax_backward"].instrs)
    assert any(i[0] == _cuda.RANDOM for i in out["dropout"].instrs)
    assert out["f64"].in_dtypes == (L.F64, L.F64)
    assert out["where"].in_dtypes == (L.F32, L.F32)
    assert sum(i[0] == L.TERNARY for i in out["where"].instrs) == 2
    return out


SPECS = _program_specs()


def test_program_spec_is_the_cpu_program():
    """The spec is plain data; its Program is what FusedKernel runs on the CPU."""
    spec = SPECS["chain"]
    assert spec.out_dtypes == (L.F32,) and len(spec.in_dtypes) == 5
    assert spec.program().num_instructions == len(spec.instrs)


def test_source_shape():
    text = _cuda.cuda_source(SPECS["chain"], "k")
    assert '#include "tl_common.cuh"' in text and '#include "tl_ops.cuh"' in text
    assert 'extern "C" __global__ void k(' in text and "tl::Indexer<6> ix" in text
    assert "tl::op::Gelu()" in text and "tl::op::Sigmoid()" in text
    # same spec, same text (the cache key); another spec, another kernel name
    assert _cuda.cuda_source(SPECS["chain"], "k") == text
    assert _cuda.kernel_name(SPECS["chain"]) != _cuda.kernel_name(SPECS["where"])


def test_unsupported_op_is_refused():
    spec = SPECS["chain"]
    bad = L.ProgramSpec("bad", spec.in_dtypes, spec.consts, spec.n_scratch, spec.out_dtypes,
                        ((L.BINARY, tl._core.elementwise.BINARY["shl"], L.F32,
                          ((3, 0, L.F32), (0, 0, L.F32), (0, 1, L.F32)), ()),))
    with pytest.raises(_cuda.Unsupported):
        _cuda.cuda_source(bad)


# ---- NVRTC ------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("which", sorted(SPECS))
def test_generated_kernel_compiles_with_nvrtc(which, arch):
    from test_cuda_compile import nvrtc_or_skip
    N = nvrtc_or_skip()
    spec = SPECS[which]
    name = _cuda.kernel_name(spec)
    src = K.source_from_text(name + ".cu", _cuda.cuda_source(spec, name))
    assert dict(src.headers).keys() >= {"tl_common.cuh", "tl_ops.cuh"}
    fast = ("--Ofast-compile=min",) if arch == "sm_80" else ()
    prog = N.compile_source(src, (name,), arch, _cuda.OPTIONS + fast)
    assert prog.kind == "cubin" and prog.lowered[name] == name
    assert name.encode() in prog.image
    assert "warning" not in prog.log.lower(), prog.log


def test_program_from_text_uses_the_cache(tmp_path):
    """The text entry point of the kernel cache: keyed by the text, compiled once."""
    from torchlite.cuda import _cache as C
    calls = []

    def fake_compile(source, names, arch, options):
        calls.append((source.name, source.digest(), names, options))
        from torchlite.cuda._nvrtc import Program
        return Program(image=b"img", kind="cubin", arch=arch, lowered={n: n for n in names})
    cache = C.KernelCache(str(tmp_path), fake_compile, lambda: ((12, 0), "12000"))
    text = _cuda.cuda_source(SPECS["where"], "kw")
    src = K.source_from_text("kw.cu", text)
    assert cache.get(src, ("kw",), "sm_90", _cuda.OPTIONS).lowered == {"kw": "kw"}
    cache.clear_memory()
    cache.get(src, ("kw",), "sm_90", _cuda.OPTIONS)           # from disk
    other = K.source_from_text("kw.cu", _cuda.cuda_source(SPECS["f64"], "kw"))
    cache.get(other, ("kw",), "sm_90", _cuda.OPTIONS)
    assert len(calls) == 2 and calls[0][1] != calls[1][1]
    assert cache.stats["disk_hits"] == 1


# ---- the host emulation -----------------------------------------------------------------------
def _host_library(name, text):
    """tl_emu_run(grid, block, params) of the generated kernel built for the CPU."""
    import fake_cuda_kernels as FK
    if FK.compiler() is None:
        pytest.skip("no g++")
    with open(FK._HEADER) as f:
        header = f.read()
    key = hashlib.sha256((text + "\0" + header + "\0" + K.load_source("elementwise.cu").digest())
                         .encode()).hexdigest()[:24]
    folder = FK.build_dir()
    lib = os.path.join(folder, f"fused-{key}.so")
    if not os.path.exists(lib):
        os.makedirs(folder, exist_ok=True)
        tmp = f"{lib}.{os.getpid()}.tmp"
        cpp = tmp + ".cpp"
        with open(cpp, "w") as f:
            f.write(text)
            f.write(f'\nextern "C" void tl_emu_run(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
                    f'unsigned by, unsigned bz, void** params) {{\n'
                    f'    tl_emu::launch(&{name}, dim3{{gx, gy, gz}}, dim3{{bx, by, bz}}, params);\n}}\n')
        try:
            r = subprocess.run([FK.compiler(), "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread",
                                "-DTL_HOST_EMULATION", "-include", FK._HEADER, "-I", K.kernel_dir(),
                                "-o", tmp, cpp], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-4000:]
            os.replace(tmp, lib)
        finally:
            for leftover in (cpp, tmp):
                if os.path.exists(leftover):
                    os.remove(leftover)
    fn = ctypes.CDLL(lib).tl_emu_run
    fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_void_p]
    fn.restype = None
    return fn


_NP = {L.F32: np.float32, L.F64: np.float64, L.BOOL: np.bool_}


def _element_strides(a, shape):
    pad = len(shape) - a.ndim
    st = [0] * pad + [s // a.itemsize for s in a.strides]
    ash = [1] * pad + list(a.shape)
    return tuple(0 if ash[d] == 1 and shape[d] != 1 else st[d] for d in range(len(shape)))


def _emulate(spec, arrays, shape):
    assert len(arrays) == len(spec.in_dtypes)
    name, text = _cuda._compiled_text(spec)
    fn = _host_library(name, text)
    outs = [np.full(shape, np.nan if dt != L.BOOL else False, _NP[dt]) for dt in spec.out_dtypes]
    ops = outs + list(arrays)
    ix = E.packed_indexer(shape, [_element_strides(a, shape) for a in ops])
    assert ix is not None
    n = int(np.prod(shape))
    args = [ctypes.c_uint64(a.ctypes.data) for a in ops]
    args += [ctypes.c_int64(n), ctypes.create_string_buffer(ix, len(ix))]
    threads = 32
    if any(i[0] in _cuda.ROW_KINDS for i in spec.instrs):
        args.append(ctypes.c_int64(shape[-1]))        # a row program: its row length
        threads = 64                                  # two warps combine a row's sums
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    fn(3, 1, 1, threads, 1, 1, params)        # a grid-stride loop (over rows: 3 at a time)
    return outs, struct_of(ix)


def struct_of(ix):
    return "fast" if int.from_bytes(ix[:4], "little", signed=True) == 0 else "strided"


def _cpu_run(spec, arrays, shape):
    ts = tuple(tl.from_numpy(np.ascontiguousarray(a) if a.strides == () else a)._data
               for a in arrays)
    return [np.asarray(tl._tensor._wrap(o).numpy()) for o in spec.program().run(ts, shape)]


def _inputs(spec, shape, layout, rng):
    arrays = []
    for k, dt in enumerate(spec.in_dtypes):
        if dt == _cuda.I64:         # a random instruction's seed, then its first block
            a = np.array(0x1234_5678_9ABC if k == 0 or spec.in_dtypes[k - 1] != dt
                         else 4000 + k, np.int64)
        elif dt == L.BOOL:
            a = rng.random(shape) < 0.5
        elif layout == "broadcast" and k % 2 == 1:
            a = rng.standard_normal(shape[-1]).astype(_NP[dt])        # a row, broadcast
        elif layout == "broadcast":
            a = rng.standard_normal(shape[::-1]).astype(_NP[dt]).T     # transposed
        else:
            a = rng.standard_normal(shape).astype(_NP[dt])
        arrays.append(a)
    return arrays


@pytest.mark.parametrize("layout", ["contiguous", "broadcast"])
@pytest.mark.parametrize("which", sorted(SPECS))
def test_emulated_kernel_matches_cpu_program(which, layout):
    spec = SPECS[which]
    rng = np.random.default_rng(7)
    shape = (7, 45)
    arrays = _inputs(spec, shape, layout, rng)
    got, path = _emulate(spec, arrays, shape)
    assert path == ("fast" if layout == "contiguous" else "strided")
    want = _cpu_run(spec, arrays, shape)
    # row sums add in another order than the CPU's lanes (the block's threads, in double)
    rows = any(i[0] in _cuda.ROW_KINDS for i in spec.instrs)
    for g, w, dt in zip(got, want, spec.out_dtypes):
        assert g.shape == w.shape and g.dtype == w.dtype
        if (dt == L.F64 and not rows) or dt == L.BOOL:
            np.testing.assert_array_equal(g, w)
        elif dt == L.F64:
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
        elif any(i[0] == _cuda.SOFTMAX_BWD for i in spec.instrs):
            # the CPU's softmax gradient sums g * y in float lanes (the eager row kernel), the
            # block in double: with these inputs (not probabilities) the sums reach tens, so
            # they differ by their float rounding, ~1e-6 of them
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_emulated_special_values():
    """NaN, infinities and -0.0 through the where/comparison and float64 programs."""
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.25, -0.5, 1e30, -1e-30], np.float64)
    x, y = np.meshgrid(vals, vals)
    for which, dt in (("where", np.float32), ("f64", np.float64)):
        spec = SPECS[which]
        arrays = [np.ascontiguousarray(x, dt), np.ascontiguousarray(y, dt)]
        got, _ = _emulate(spec, arrays, x.shape)
        want = _cpu_run(spec, arrays, x.shape)
        for g, w in zip(got, want):
            real = ~np.isnan(w)                   # a NaN's sign is the hardware's choice
            np.testing.assert_array_equal(np.signbit(g)[real], np.signbit(w)[real])
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)


# ---- end to end on the stand-in driver --------------------------------------------------------
@pytest.fixture
def fused_on_host(fake_cuda, monkeypatch):
    """The stand-in driver with the eager kernels emulated and the generated kernels run by
    their host build; yields the names of the fused kernels launched."""
    import fake_cuda_kernels as FK
    if FK.compiler() is None:
        pytest.skip("no g++")
    FK.install(fake_cuda, monkeypatch)
    eager_launch = fake_cuda.cuLaunchKernel
    libs, launched = {}, []

    def kernel_from_text(source_name, text, name, device, options=()):
        assert options == _cuda.OPTIONS and source_name == name + ".cu"
        libs[name] = _host_library(name, text)
        return _launch.Kernel(name, ("fused", name), device, 1024)

    def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if isinstance(f, tuple):
            launched.append(f[1])
            libs[f[1]](gx, gy, gz, min(bx, 64), by, bz, params)   # fewer host threads
            return (0,)
        return eager_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
    monkeypatch.setattr(_launch, "kernel_from_text", kernel_from_text)
    fake_cuda.cuLaunchKernel = launch
    yield launched


def test_compile_on_cuda_tensors_end_to_end(fused_on_host):
    _compiled_chain_matches_cpu(fused_on_host, rtol=1e-6)


def test_compile_on_a_real_gpu(monkeypatch):
    """The same on a GPU, where NVRTC's build of the generated kernels runs (the device's
    libm may differ from the CPU's vector math by ulps, hence the looser tolerance)."""
    from conftest import gpu_usable
    if not gpu_usable():
        pytest.skip("no CUDA GPU")
    launched, launch = [], _launch.launch
    monkeypatch.setattr(_launch, "launch", lambda k, *a, **kw: (launched.append(k.name), launch(k, *a, **kw))[1])
    _compiled_chain_matches_cpu(launched, rtol=1e-5)


def test_compiled_dropout_on_cuda_tensors_draws_eager_masks(fused_on_host):
    """Dropout fused on CUDA: the generated kernel draws the device generator's words (the
    CPU's layout), so the compiled model's output equals the eager CUDA model's with the same
    seed, and the generator ends where eager leaves it."""
    g = np.random.default_rng(4)
    x, r = (tl.from_numpy(g.standard_normal((6, 70)).astype(np.float32)).to("cuda")
            for _ in range(2))
    c = tl.compile(dropout_prog)
    tl.manual_seed(11)
    got = c(x, r)                       # the first call: its capture run puts the RNG back
    after = tl.rand(3, device="cuda")
    assert any(n for n in fused_on_host), "the fused kernel was not launched"
    tl.manual_seed(11)
    want = dropout_prog(x, r)
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-6, atol=1e-6)
    assert ((got.cpu().numpy() == r.cpu().numpy()) == (want.cpu().numpy() == r.cpu().numpy())).all()
    np.testing.assert_array_equal(after.cpu().numpy(), _rand_after_eager(x, r))


def _rand_after_eager(x, r):
    tl.manual_seed(11)
    dropout_prog(x, r)
    return tl.rand(3, device="cuda").cpu().numpy()


def test_compiled_row_programs_on_cuda_tensors(fused_on_host):
    """Softmax and RMSNorm programs compiled on CUDA tensors run their generated row kernels,
    forward and backward, and match eager CPU."""
    g = np.random.default_rng(5)
    a, m = g.standard_normal((5, 40)).astype(np.float32), g.standard_normal(40).astype(np.float32)
    for prog in (softmax_prog, rms_prog):
        fused_on_host.clear()
        cpu = [tl.from_numpy(a), tl.from_numpy(m)]
        cuda = [t.to("cuda").requires_grad_() for t in cpu]
        cpu = [t.clone().requires_grad_() for t in cpu]
        got = tl.compile(prog)(*cuda)
        want = prog(*cpu)
        assert fused_on_host, "the row kernel was not launched"
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        fused_on_host.clear()
        got.sum().backward()
        want.sum().backward()
        assert any("backward" in n for n in fused_on_host)
        for tc, te in zip(cuda, cpu):
            np.testing.assert_allclose(tc.grad.cpu().numpy(), te.grad.numpy(), rtol=1e-4, atol=1e-5)


def _compiled_chain_matches_cpu(fused_on_host, rtol):
    g = np.random.default_rng(3)
    xs = [g.standard_normal((5, 12)).astype(np.float32) for _ in range(3)]
    w, b = (g.standard_normal(12).astype(np.float32) for _ in range(2))
    cpu = [tl.from_numpy(a) for a in (xs[0], w, b, xs[1], xs[2])]
    cuda = [t.to("cuda") for t in cpu]
    c = tl.compile(chain)
    got = c(*cuda)
    assert got.device.type == "cuda"
    assert fused_on_host, "the fused kernel was not launched"
    np.testing.assert_allclose(got.cpu().numpy(), chain(*cpu).numpy(), rtol=rtol, atol=rtol)
    # backward: the generated backward kernel, gradients summed back to the broadcast shapes
    fused_on_host.clear()
    a = [t.clone().requires_grad_() for t in cuda]
    e = [t.clone().requires_grad_() for t in cpu]
    c(*a).sum().backward()
    chain(*e).sum().backward()
    assert any("backward" in n for n in fused_on_host)
    for ta, te in zip(a, e):
        assert ta.grad.device.type == "cuda"
        np.testing.assert_allclose(ta.grad.cpu().numpy(), te.grad.numpy(), rtol=10 * rtol, atol=10 * rtol)


def test_epilogue_fusion_leaves_cuda_products_apart(fused_on_host, monkeypatch):
    """options={"epilogue_fusion": True} on CUDA tensors: the CPU epilogue is never reached
    (the product runs on the device, then its generated elementwise kernel), with the CPU's
    values and gradients."""
    import torchlite.compiler._epilogue as EP
    calls = []
    monkeypatch.setattr(EP, "_mm", type("Spy", (), {"mm_epilogue": staticmethod(
        lambda *a: calls.append(1))}))
    g = np.random.default_rng(5)
    x, w, b = (g.standard_normal(s).astype(np.float32) for s in ((6, 8), (10, 8), (10,)))

    def f(x, w, b):
        return F.gelu(F.linear(x, w, b)) * 2 + 1
    cpu = [tl.from_numpy(a) for a in (x, w, b)]
    cuda = [t.to("cuda").requires_grad_() for t in cpu]
    cpu = [t.clone().requires_grad_() for t in cpu]
    got = tl.compile(f, options={"epilogue_fusion": True})(*cuda)
    want = f(*cpu)
    assert got.device.type == "cuda" and not calls and fused_on_host
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    got.sum().backward()
    want.sum().backward()
    for a, e in zip(cuda, cpu):
        np.testing.assert_allclose(a.grad.cpu().numpy(), e.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_activations_on_cuda_tensors_join_the_generated_kernel(fused_on_host):
    """On CUDA tensors too the compiler inlines an activation into its formula, so it fuses
    with its neighbours: relu(x + y) * 2 is one generated kernel, forward and backward."""
    g = tl.Generator().manual_seed(2)
    a, b = (tl.randn(6, 5, generator=g) for _ in range(2))
    f = lambda x, y: F.relu(x + y) * 2 - F.leaky_relu(y, 0.1)      # noqa: E731
    c = tl.compile(f)
    xs = [t.to("cuda").requires_grad_() for t in (a, b)]
    out = c(*xs)
    assert len(_kernels_of(c)) == 1 and fused_on_host
    np.testing.assert_allclose(out.detach().cpu().numpy(), f(a, b).numpy(), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    e = [t.clone().requires_grad_() for t in (a, b)]
    f(*e).sum().backward()
    for t, u in zip(xs, e):
        np.testing.assert_allclose(t.grad.cpu().numpy(), u.grad.numpy(), rtol=1e-6, atol=1e-6)


# ---- the model table of test_compile.py, trained on CUDA tensors (the stand-in) ----------------
@pytest.mark.parametrize("name", ["quickstart_mlp", "gelu_block", "transformer_lm", "swishy",
                                  "residual_bn", "cnn_digits", "char_lstm"])
def test_models_train_on_cuda_as_eager(name, fused_on_host):
    """Issue 12's differential table on CUDA tensors: each model compiled and eager, on the
    stand-in device (the eager kernels emulated, the generated fused kernels run by their host
    build), two training steps in train mode and one forward in eval mode; losses, gradients
    and parameters agree (to float32 rounding: the generated kernels call the device math)."""
    import copy
    from test_compile import MODELS
    make, x, y, loss_fn = MODELS[name]
    tl.manual_seed(0)
    eager = make().to("cuda")
    comp_model = copy.deepcopy(eager)
    comp = tl.compile(comp_model)
    x, y = x.to("cuda"), y.to("cuda")
    opts = [tl.optim.SGD(m.parameters(), lr=0.05) for m in (eager, comp_model)]
    for step in range(2):
        losses = []
        for m, fn, opt in ((eager, eager, opts[0]), (comp_model, comp, opts[1])):
            opt.zero_grad()
            tl.manual_seed(step)
            loss = loss_fn(fn(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, atol=1e-6)
        for (n, pe), pc in zip(eager.named_parameters(), comp_model.parameters()):
            assert pc.device.type == "cuda"
            np.testing.assert_allclose(pc.detach().cpu().numpy(), pe.detach().cpu().numpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=n)
    assert bool(fused_on_host) == (name not in ("quickstart_mlp", "char_lstm")), \
        "the models with elementwise chains run generated kernels (the others have none)"
    eager.eval()
    comp_model.eval()
    with tl.no_grad():
        out_e, out_c = eager(x), comp(x)
    out_e = out_e[0] if isinstance(out_e, tuple) else out_e
    out_c = out_c[0] if isinstance(out_c, tuple) else out_c
    np.testing.assert_allclose(out_c.cpu().numpy(), out_e.cpu().numpy(), rtol=1e-5, atol=1e-5)
