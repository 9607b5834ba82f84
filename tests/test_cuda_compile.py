"""The CUDA kernels without a GPU.

* Every kernel variant (every op x dtype instantiation of torchlite.cuda._kernels.variants())
  compiles through NVRTC to a CUBIN for sm_80 and sm_90 with an empty log (no warning,
  with NVRTC's optional warnings switched on), and its symbol is in the CUBIN.
* The parameter structs' layouts match the host-side packers (static_asserts compiled).
* The kernel cache: keys change with the source, an included header, the name expressions,
  options, architecture and NVRTC version; the disk cache round-trips, survives corrupt
  files, and two processes compiling one kernel at once both succeed.
* Compile errors name the kernel and carry NVRTC's log.
* Host runs of the device code (g++ compiles tl_philox.cuh and tl_ops.cuh as plain C++):
  the Philox kernels give the CPU generator's numbers bit for bit, and the op functors the
  CPU kernels' results.
The NVRTC tests skip when cuda-bindings / the NVRTC wheel / the CUDA headers are missing;
the host runs skip without g++.
"""
import os
import shutil
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp

import numpy as np
import pytest

from torchlite.cuda import _cache as C
from torchlite.cuda import _kernels as K

ARCHS = ("sm_80", "sm_90")
WARNING_OPTIONS = ("--Wreorder", "--Wconversion")   # NVRTC's opt-in warnings
CHUNK = 100                                         # name expressions per NVRTC compile
# sm_90 is compiled with the run-time options; sm_80 with NVRTC's fast-compile mode, which
# runs the same front end (every diagnostic) and ptxas in a third of the time, keeping this
# file under a minute on two cores.  TORCHLITE_CUDA_TEST_FULL=1 compiles both in full.
FAST = () if os.environ.get("TORCHLITE_CUDA_TEST_FULL") == "1" else ("--Ofast-compile=min",)
ARCH_OPTIONS = {"sm_90": (), "sm_80": FAST}


def nvrtc_or_skip():
    pytest.importorskip("cuda.bindings")
    pytest.importorskip("cuda.bindings.nvrtc")
    from torchlite.cuda import _nvrtc as N
    try:
        N.version()
    except Exception as e:
        pytest.skip(f"libnvrtc cannot be loaded (pip install nvidia-cuda-nvrtc): {e}")
    if N.cuda_include_dir() is None:
        pytest.skip("the CUDA headers (nvidia-cuda-runtime) are not installed")
    return N


@pytest.fixture(scope="module")
def nv():
    return nvrtc_or_skip()


# =========================================================================================
# Every variant compiles, for both architectures, with no warning
# =========================================================================================
def _result_file(job):
    """Where the outcome of compiling `job` is kept between runs: named by the hash of all
    that decides it (the source and its headers, the names, the options, NVRTC's version), so
    a second run compiles only what changed.  TORCHLITE_TEST_CACHE moves the folder; setting
    it to an empty folder compiles everything again."""
    import hashlib
    from torchlite.cuda import _kernels, _nvrtc
    source_name, names, arch = job
    options = _kernels.SOURCE_OPTIONS[source_name] + WARNING_OPTIONS + ARCH_OPTIONS[arch]
    key = hashlib.sha256("\0".join((_kernels.load_source(source_name).digest(), arch,
                                     str(_nvrtc.version()), str(_nvrtc.cuda_include_dir()))
                                    + tuple(options) + tuple(names)).encode()).hexdigest()
    root = os.environ.get("TORCHLITE_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "torchlite", "tests")
    return os.path.join(root, "nvrtc-checks", key[:32] + ".json")


def _kept_result(job):
    """The outcome of an earlier run's compile of `job`, or None."""
    import json
    try:
        with open(_result_file(job)) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return None
    return dict(kept, job=job) if isinstance(kept, dict) else None


def _compile_chunk(job):
    """Worker: compile one chunk; returns what the test checks (picklable, and kept on disk
    when it compiled: a failure is compiled again next time)."""
    import json
    from torchlite.cuda import _kernels, _nvrtc
    path = _result_file(job)
    source_name, names, arch = job
    src = _kernels.load_source(source_name)
    t0 = time.perf_counter()
    try:
        prog = _nvrtc.compile_source(src, names, arch, _kernels.SOURCE_OPTIONS[source_name]
                                     + WARNING_OPTIONS + ARCH_OPTIONS[arch])
    except Exception as e:
        return dict(job=job, error=str(e), seconds=time.perf_counter() - t0)
    missing = [n for n in names if prog.lowered.get(n, "").encode() not in prog.image]
    result = dict(job=job, error=None, log=prog.log, elf=prog.image[:4] == b"\x7fELF",
                  kind=prog.kind, missing=missing, seconds=time.perf_counter() - t0)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + f".{os.getpid()}", "w") as f:
            json.dump({k: v for k, v in result.items() if k != "job"}, f)
        os.replace(path + f".{os.getpid()}", path)
    except OSError:
        pass                # an unwritable cache only costs the next run its time
    return result


@pytest.fixture(scope="module")
def compiled(nv):
    jobs = [(src, names[i:i + CHUNK], arch)
            for arch in ARCHS for src, names in K.variants().items()
            for i in range(0, len(names), CHUNK)]
    jobs.sort(key=lambda j: -len(j[1]))               # big chunks first: better packing
    t0 = time.perf_counter()
    results = [_kept_result(job) for job in jobs]
    todo = [job for job, r in zip(jobs, results) if r is None]
    workers = max(2, min(len(todo), os.cpu_count() or 2))
    if todo:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
            fresh = iter(ex.map(_compile_chunk, todo))
            results = [r if r is not None else next(fresh) for r in results]
    wall = time.perf_counter() - t0
    print(f"\ncompiled {sum(len(j[1]) for j in todo)} kernels ({len(todo)} NVRTC runs; "
          f"{len(jobs) - len(todo)} runs' outcomes kept from an earlier run) in "
          f"{wall:.1f} s wall with {workers} processes; NVRTC time per architecture: " +
          ", ".join(f"{a} {sum(r['seconds'] for r in results if r['job'][2] == a):.1f} s" for a in ARCHS))
    return results


@pytest.mark.parametrize("arch", ARCHS)
def test_every_kernel_variant_compiles_cleanly(compiled, arch):
    mine = [r for r in compiled if r["job"][2] == arch]
    assert sum(len(r["job"][1]) for r in mine) == sum(len(v) for v in K.variants().values())
    errors = [f"{r['job'][0]}: {r['error']}" for r in mine if r["error"]]
    assert not errors, "\n\n".join(errors)
    warnings = [f"{r['job'][0]} [{r['job'][1][0]} ...]:\n{r['log']}" for r in mine if r["log"]]
    assert not warnings, "NVRTC warnings:\n" + "\n\n".join(warnings)
    assert all(r["elf"] and r["kind"] == "cubin" for r in mine)
    missing = [n for r in mine for n in r["missing"]]
    assert not missing, f"symbols missing from the CUBIN: {missing[:10]}"


def test_a_warning_would_be_caught(nv, tmp_path):
    """The check above can fail: an unused variable gives a non-empty log."""
    (tmp_path / "w.cu").write_text(
        "template <class T> __global__ void k(T* o) { int unused = 1; o[0] = T(0); }\n")
    prog = nv.compile_source(K.load_source("w.cu", str(tmp_path)), ["k<float>"], "sm_90", WARNING_OPTIONS)
    assert "declared but never referenced" in prog.log


# =========================================================================================
# Catalogue and headers agree, without NVRTC
# =========================================================================================
def test_catalogue_covers_every_cpu_elementwise_op():
    from torchlite._core import elementwise as E
    assert {n.upper() for n in E.UNARY} == set(K.unary_ops())
    assert {n.upper() for n in E.BINARY} == set(K.binary_ops())
    assert {n.upper() for n in E.TERNARY} == {"WHERE"} | set(K.TERNARY_FLOAT)


def test_every_functor_in_the_catalogue_is_defined():
    import re
    text = open(os.path.join(K.kernel_dir(), "tl_ops.cuh")).read()
    defined = set(re.findall(r"\bstruct (\w+)", text))
    defined |= {m for m in re.findall(r"TL_F(?:UNARY|BINARY)\((\w+)", text)}
    defined |= {m for m in re.findall(r"TL_(?:PREDICATE|IBINARY)\((\w+)", text)}
    used = {K.functor(op).split("::")[-1] for op in K.unary_ops() + K.binary_ops()}
    used |= {K.functor(op).split("::")[-1] for op in K.TERNARY_FLOAT}
    assert used <= defined, sorted(used - defined)


def test_catalogue_size_and_no_duplicates():
    v = K.variants()
    for src, names in v.items():
        assert len(names) == len(set(names)), src
    assert len(v["elementwise.cu"]) > 600 and len(v["reduction.cu"]) == 72
    assert K.unary_kernel("ISNAN", K.FLOAT16) == "tl_unary<tl::op::Isnan, __half, bool>"
    assert K.cast_kernel(K.BFLOAT16, K.BFLOAT16) == "tl_unary<tl::op::Identity, tl::u16, tl::u16>"
    with pytest.raises(KeyError):
        K.unary_kernel("BITWISE_NOT", K.FLOAT32)
    with pytest.raises(KeyError):
        K.reduce_kernel("Mean", K.INT32)


def test_constants_match_the_headers():
    import re
    text = open(os.path.join(K.kernel_dir(), "tl_common.cuh")).read()
    assert int(re.search(r"#define TL_MAX_DIMS (\d+)", text).group(1)) == K.MAX_DIMS
    assert int(re.search(r"#define TL_MAX_SCALARS (\d+)", text).group(1)) == K.MAX_SCALARS


# =========================================================================================
# Parameter packing
# =========================================================================================
def test_magic_division_is_exact():
    rng = np.random.default_rng(0)
    divisors = [1, 2, 3, 5, 6, 7, 10, 25, 31, 32, 33, 641, 1000, 65535, 65536, 65537, 2**31 - 1,
                2**31, 2**31 + 1, 2**32 - 1] + [int(d) for d in rng.integers(1, 2**32, 200)]
    numerators = [0, 1, 2, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1] + \
                 [int(n) for n in rng.integers(0, 2**32, 300)]
    for d in divisors:
        magic, shift = K.magic_divisor(d)
        assert 0 <= magic < 2**32 and 0 <= shift <= 32
        for n in numerators + [d - 1, d, d + 1, 2 * d - 1, (2**32 - 1) // d * d]:
            if 0 <= n < 2**32:
                assert (((n * magic) >> 32) + n) >> shift == n // d, (n, d)
    with pytest.raises(ValueError):
        K.magic_divisor(0)


@pytest.mark.parametrize("nops", [1, 2, 3, 4])
def test_packed_indexer_gives_the_strided_offsets(nops):
    rng = np.random.default_rng(nops)
    shape = (3, 1, 5, 7)
    strides = [list(rng.integers(-50, 50, len(shape))) for _ in range(nops)]
    packed = K.pack_indexer(shape, strides)
    assert len(packed) == K.indexer_size(nops)
    for i in range(int(np.prod(shape))):
        idx = np.unravel_index(i, shape)
        want = [int(np.dot(idx, s)) for s in strides]
        assert K.indexer_offsets(packed, nops, i) == want
    fast = K.pack_indexer(steps=[1] + [0] * (nops - 1))
    assert len(fast) == K.indexer_size(nops)
    assert K.indexer_offsets(fast, nops, 9) == [9] + [0] * (nops - 1)


def test_pack_indexer_limits():
    with pytest.raises(ValueError, match="at most"):
        K.pack_indexer((1,) * (K.MAX_DIMS + 1), [[0] * (K.MAX_DIMS + 1)])
    with pytest.raises(ValueError, match="2\\^32"):
        K.pack_indexer((2**16, 2**16), [[1, 1]])
    with pytest.raises(ValueError):
        K.pack_indexer((3, 0), [[1, 1]])


def test_struct_layouts_match_the_packers(nv, tmp_path):
    """static_asserts on the device structs' sizes and field offsets, with the numbers the
    Python packers produce."""
    q = K.pack_random_request(7, 3, 10)
    checks = [f"static_assert(sizeof(tl::Indexer<{n}>) == {K.indexer_size(n)}, \"Indexer\");"
              for n in (1, 2, 3, 4)]
    checks += [f"static_assert(offsetof(tl::Indexer<{n}>, stride) == {K._stride_offset(n)}, \"stride\");"
               for n in (1, 2, 3, 4)]
    checks += [f"static_assert(sizeof(tl::Params) == {len(K.pack_params())}, \"Params\");",
               f"static_assert(sizeof(tl::rnd::Req) == {len(q)}, \"Req\");",
               "static_assert(offsetof(tl::rnd::Req, bits) == 40, \"bits\");",
               "static_assert(offsetof(tl::rnd::Req, out) == 88, \"out\");",
               "static_assert(offsetof(tl::Params, err) == 32, \"err\");"]
    # complex elements as the CPU lays them out (types.h: two parts, real first), one access each
    checks += [f"static_assert(sizeof(tl::{t}) == {n} && alignof(tl::{t}) == {n}, \"{t}\");"
               for t, n in (("c64", 8), ("c128", 16), ("u128", 16))]
    checks += ["static_assert(offsetof(tl::c128, im) == 8, \"im\");"]
    for header in ("tl_common.cuh", "tl_complex.cuh", "tl_philox.cuh", "tl_random_math.cuh"):
        shutil.copy(os.path.join(K.kernel_dir(), header), tmp_path)
    (tmp_path / "layout.cu").write_text(
        '#include "tl_common.cuh"\n#include "tl_philox.cuh"\n'
        "#define offsetof(T, f) __builtin_offsetof(T, f)\n" + "\n".join(checks) +
        "\n__global__ void k() {}\n")
    nv.compile_source(K.load_source("layout.cu", str(tmp_path)), ["k"], "sm_90")


# =========================================================================================
# NVRTC errors and targets
# =========================================================================================
def test_compile_error_names_the_kernel_and_carries_the_log(nv, tmp_path):
    (tmp_path / "bad.cu").write_text(
        "template <class T> __global__ void broken(T* o) { o[0] = undefined_thing; }\n")
    with pytest.raises(RuntimeError) as info:
        nv.compile_source(K.load_source("bad.cu", str(tmp_path)), ["broken<float>"], "sm_90")
    msg = str(info.value)
    assert isinstance(info.value, nv.CompileError)
    assert "bad.cu" in msg and "broken<float>" in msg
    assert 'identifier "undefined_thing" is undefined' in msg


def test_target_is_the_exact_cubin_when_nvrtc_knows_the_device(nv):
    archs = nv.supported_archs()
    assert nv.target_for(9, 0) == ("cubin", "sm_90")
    assert nv.target_for(8, 0) == ("cubin", "sm_80")
    kind, arch = nv.target_for(99, 9)               # newer than this NVRTC: PTX fallback
    assert kind == "ptx" and arch == f"compute_{max(archs)}"
    if min(archs) > 50:
        with pytest.raises(RuntimeError, match="cannot compile"):
            nv.target_for(5, 0)


def test_missing_include_is_reported(tmp_path):
    (tmp_path / "a.cu").write_text('#include "nowhere.cuh"\n')
    with pytest.raises(RuntimeError, match="nowhere.cuh"):
        K.load_source("a.cu", str(tmp_path))


# =========================================================================================
# Cache keys
# =========================================================================================
@pytest.fixture
def kernel_tree(tmp_path):
    (tmp_path / "a.cu").write_text(
        '#include "h.cuh"\ntemplate <class T> __global__ void k(T* o) { o[0] = h<T>(); }\n')
    (tmp_path / "h.cuh").write_text(
        '#include "g.cuh"\ntemplate <class T> __device__ T h() { return g<T>(); }\n')
    (tmp_path / "g.cuh").write_text("template <class T> __device__ T g() { return T(1); }\n")
    (tmp_path / "unrelated.cuh").write_text("// not included\n")
    return tmp_path


def _key(tree, names=("k<float>",), options=("--gpu-architecture=sm_90", "--std=c++17"),
         arch="sm_90", nvrtc=(13, 5), headers="13050"):
    return C.cache_key(K.load_source("a.cu", str(tree)), names, list(options), arch, nvrtc, headers)


def test_load_source_follows_includes(kernel_tree):
    src = K.load_source("a.cu", str(kernel_tree))
    assert [n for n, _ in src.headers] == ["g.cuh", "h.cuh"]


@pytest.mark.parametrize("edit", ["a.cu", "h.cuh", "g.cuh"])
def test_key_changes_with_the_source_and_every_included_header(kernel_tree, edit):
    before = _key(kernel_tree)
    path = kernel_tree / edit
    path.write_text(path.read_text() + "// edited\n")
    assert _key(kernel_tree) != before


def test_key_ignores_headers_that_are_not_included(kernel_tree):
    before = _key(kernel_tree)
    (kernel_tree / "unrelated.cuh").write_text("// edited\n")
    assert _key(kernel_tree) == before


def test_key_changes_with_names_options_arch_and_versions(kernel_tree):
    base = _key(kernel_tree)
    variants = [
        _key(kernel_tree, names=("k<double>",)),
        _key(kernel_tree, names=("k<float>", "k<double>")),
        _key(kernel_tree, options=("--gpu-architecture=sm_90", "--std=c++17", "--fmad=false")),
        _key(kernel_tree, arch="sm_80"),
        _key(kernel_tree, nvrtc=(13, 6)),
        _key(kernel_tree, headers="13060"),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_key_ignores_where_the_cuda_headers_are_installed(kernel_tree):
    opts = ("--gpu-architecture=sm_90", "--std=c++17")
    a = _key(kernel_tree, options=opts + ("--include-path=/venv1/nvidia/cu13/include",))
    b = _key(kernel_tree, options=opts + ("--include-path=/venv2/nvidia/cu13/include",))
    assert a == b


# =========================================================================================
# The disk cache
# =========================================================================================
class FakeCompiler:
    """Stands in for NVRTC: counts compiles, returns a recognisable program."""

    def __init__(self):
        self.calls = 0

    def __call__(self, source, names, arch, options):
        from torchlite.cuda._nvrtc import Program
        self.calls += 1
        image = b"\x7fELF" + source.digest().encode() + bytes(range(256)) + b"\0\0"
        return Program(image=image, kind="cubin", arch=arch,
                       lowered={n: f"_Z{len(n)}{n}" for n in names}, log="")


def _fake_cache(directory):
    fake = FakeCompiler()
    return fake, C.KernelCache(str(directory), compile_fn=fake, versions=lambda: ((13, 5), "13050"))


def test_disk_cache_round_trip(kernel_tree, tmp_path):
    src = K.load_source("a.cu", str(kernel_tree))
    fake, cache = _fake_cache(tmp_path / "cache")
    p1 = cache.get(src, ["k<float>"], "sm_90")
    assert fake.calls == 1 and cache.get(src, ["k<float>"], "sm_90") is p1     # memory hit
    fake2, fresh = _fake_cache(tmp_path / "cache")                               # a new process
    p2 = fresh.get(src, ["k<float>"], "sm_90")
    assert fake2.calls == 0 and fresh.stats["disk_hits"] == 1
    assert (p2.image, p2.lowered, p2.arch, p2.kind) == (p1.image, p1.lowered, p1.arch, p1.kind)
    assert p2.image.endswith(b"\0\0")                                             # NULs kept
    files = os.listdir(tmp_path / "cache")
    assert len(files) == 1 and files[0].endswith(".tlk")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_corrupt_cache_file_is_detected_and_rewritten(kernel_tree, tmp_path, damage):
    src = K.load_source("a.cu", str(kernel_tree))
    _, cache = _fake_cache(tmp_path / "cache")
    good = cache.get(src, ["k<float>"], "sm_90")
    (path,) = [os.path.join(tmp_path, "cache", f) for f in os.listdir(tmp_path / "cache")]
    data = bytearray(open(path, "rb").read())
    if damage == "flip":
        data[-10] ^= 0x40
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "empty":
        data = b""
    else:
        data = b"not a cache file at all"
    open(path, "wb").write(bytes(data))
    fake, fresh = _fake_cache(tmp_path / "cache")
    again = fresh.get(src, ["k<float>"], "sm_90")
    assert fresh.stats["corrupt"] == 1 and fake.calls == 1                         # recompiled
    assert again.image == good.image
    assert C.decode(open(path, "rb").read()).image == good.image                   # rewritten


def test_unwritable_cache_folder_still_compiles(kernel_tree, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    fake, cache = _fake_cache(blocker / "cache")
    src = K.load_source("a.cu", str(kernel_tree))
    assert cache.get(src, ["k<float>"], "sm_90").kind == "cubin" and fake.calls == 1


def test_cache_dir_default_and_override(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHLITE_KERNEL_CACHE", raising=False)
    assert C.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "torchlite", "kernels")
    monkeypatch.setenv("TORCHLITE_KERNEL_CACHE", str(tmp_path / "k"))
    assert C.cache_dir() == str(tmp_path / "k")


def test_real_compile_round_trips_through_the_disk(nv, tmp_path):
    cache = C.KernelCache(str(tmp_path))
    src = K.load_source("softmax.cu")
    names = [K.softmax_kernel(K.FLOAT32)]
    t0 = time.perf_counter()
    cold = cache.get(src, names, "sm_90")
    t1 = time.perf_counter()
    warm = C.KernelCache(str(tmp_path)).get(src, names, "sm_90")
    t2 = time.perf_counter()
    print(f"\ncold NVRTC compile {1e3 * (t1 - t0):.0f} ms, disk-cache hit {1e3 * (t2 - t1):.1f} ms")
    assert warm.image == cold.image and warm.lowered == cold.lowered


def _compile_in_child(args):
    directory, barrier = args
    from torchlite.cuda import _cache, _kernels
    barrier.wait()
    prog = _cache.KernelCache(directory).get(_kernels.load_source("softmax.cu"),
                                             [_kernels.softmax_kernel(_kernels.FLOAT64)], "sm_80")
    return prog.image


def test_two_processes_compiling_the_same_kernel_at_once(nv, tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            images = pool.map(_compile_in_child, [(str(tmp_path), barrier)] * 2)
    assert images[0] == images[1] and images[0][:4] == b"\x7fELF"
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].endswith(".tlk"), files          # no temp file left
    assert C.decode(open(tmp_path / files[0], "rb").read()).image == images[0]


# =========================================================================================
# The device code run on the host (g++)
# =========================================================================================
def gxx_or_skip():
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler to run the device code on the host")
    return gxx


def build(tmp_path, name, source):
    """Compile a host program against cuda_kernels/ (IEEE float, no FMA contraction)."""
    (tmp_path / f"{name}.cpp").write_text(source)
    exe = str(tmp_path / name)
    subprocess.run([gxx_or_skip(), "-std=c++17", "-O1", "-ffp-contract=off", "-I", K.kernel_dir(),
                    str(tmp_path / f"{name}.cpp"), "-o", exe], check=True, capture_output=True)
    return exe


RANDOM_DRIVER = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "tl_philox.cuh"
using namespace tl::rnd;
typedef void (*Fn)(const Req&, tl::u64);
struct Entry { const char* name; Fn fn; int words; int size; };
static const Entry table[] = {
%s
};
int main(int argc, char** argv) {
    /* argv: name request-file p-file|- out-file */
    Req q;
    FILE* f = fopen(argv[2], "rb");
    if (fread(&q, sizeof q, 1, f) != 1) return 2;
    fclose(f);
    std::vector<double> p;
    if (strcmp(argv[3], "-")) {
        p.resize(q.n);
        f = fopen(argv[3], "rb");
        if (fread(p.data(), 8, q.n, f) != (size_t)q.n) return 2;
        fclose(f);
        q.p = p.data();
    }
    for (const Entry& e : table) {
        if (strcmp(e.name, argv[1])) continue;
        std::vector<char> out((size_t)q.n * e.size + 8);
        q.out = out.data();
        const tl::u64 per_group = 64 / e.words, threads = (q.n + per_group - 1) / per_group * 16;
        for (tl::u64 t = 0; t < threads; t++) e.fn(q, t);     /* any order: one thread a block */
        f = fopen(argv[4], "wb");
        fwrite(out.data(), e.size, q.n, f);
        fclose(f);
        return 0;
    }
    return 3;
}
'''


@pytest.fixture(scope="module")
def random_host(tmp_path_factory):
    entries = []
    for dist, outs in K.RANDOM.items():
        for out, f in outs.items():
            words = 2 if f in K.RANDOM_TWO_WORD else 1
            size = 4 if out == "f32" else 8
            entries.append(f'    {{"{dist}:{out}", &{f}::run, {words}, {size}}}')
    return build(tmp_path_factory.mktemp("rnd"), "random_host", RANDOM_DRIVER % ",\n".join(entries))


def run_random_host(exe, tmp_path, dist, out, seed, base, n, p=None, **fields):
    req = tmp_path / "req.bin"
    req.write_bytes(K.pack_random_request(seed, base, n, **fields))
    pfile = "-"
    if p is not None:
        pfile = str(tmp_path / "p.bin")
        np.ascontiguousarray(p, np.float64).tofile(pfile)
    res = tmp_path / "out.bin"
    subprocess.run([exe, f"{dist}:{out}", str(req), pfile, str(res)], check=True)
    return np.fromfile(res, {"f32": np.float32, "f64": np.float64, "i64": np.int64}[out])


@pytest.fixture
def cpu_baseline():
    """The CPU's portable (no-FMA) kernels: the GPU port matches these bit for bit."""
    from torchlite._core import random as R
    old = R.isa_level()
    R.set_isa_level(0)
    yield R
    R.set_isa_level(old)


def cpu_generator(R, seed, base):
    g = R.Philox()
    g.set_state_bytes(int(seed).to_bytes(8, "little") + int(base).to_bytes(8, "little"))
    return g


REAL_DISTS = [("UNIFORM", -2.0, 3.0), ("NORMAL", 1.0, 2.0), ("LOG_NORMAL", 0.0, 0.5),
              ("EXPONENTIAL", 1.5, 0.0), ("CAUCHY", 0.5, 2.0)]


@pytest.mark.parametrize("out", ["f32", "f64"])
@pytest.mark.parametrize("dist,a,b", REAL_DISTS)
@pytest.mark.parametrize("n", [1, 63, 1000])
def test_philox_real_distributions_match_the_cpu(random_host, cpu_baseline, tmp_path, dist, a, b, out, n):
    from torchlite._core import array as A
    R, seed, base = cpu_baseline, 0x1234_5678_9ABC_DEF0, 37
    want = A.empty((n,), K.FLOAT32 if out == "f32" else K.FLOAT64)
    R.fill(want, cpu_generator(R, seed, base), getattr(R, dist), a, b)
    got = run_random_host(random_host, tmp_path, dist, out, seed, base, n, a=a, b=b)
    # exact, float64 log_normal and cauchy included: the host's exp and tan are glibc's, as
    # the CPU's (on a GPU those two use CUDA's libdevice and may differ in the last bit)
    np.testing.assert_array_equal(got, np.asarray(want))


@pytest.mark.parametrize("bits", [11, 8])
def test_philox_low_precision_uniforms_match_the_cpu(random_host, cpu_baseline, tmp_path, bits):
    from torchlite._core import array as A
    R = cpu_baseline
    dt = K.FLOAT16 if bits == 11 else K.BFLOAT16
    want = A.empty((300,), dt)
    R.fill(want, cpu_generator(R, 5, 0), R.UNIFORM, 0.0, 1.0)
    got = run_random_host(random_host, tmp_path, "UNIFORM", "f32", 5, 0, 300, a=0.0, b=1.0, bits=bits)
    from torchlite._core import elementwise as E
    assert np.array_equal(got, np.asarray(E.cast(want, K.FLOAT32)))


def test_philox_geometric_matches_the_cpu(random_host, cpu_baseline, tmp_path):
    from torchlite._core import array as A
    R = cpu_baseline
    want = A.empty((500,), K.FLOAT64)
    R.fill(want, cpu_generator(R, 11, 3), R.GEOMETRIC, 0.3)
    got = run_random_host(random_host, tmp_path, "GEOMETRIC", "f64", 11, 3, 500, a=0.3, b=float(np.log1p(-0.3)))
    np.testing.assert_array_equal(got, np.asarray(want))


@pytest.mark.parametrize("low,range_", [(-5, 10), (0, 3), (7, 2**32), (-(2**40), 2**40 + 12345),
                                        (0, 2**64)])
def test_philox_integers_match_the_cpu(random_host, cpu_baseline, tmp_path, low, range_):
    from torchlite._core import array as A
    R = cpu_baseline
    want = A.empty((777,), K.INT64)
    R.fill_int(want, cpu_generator(R, 99, 5), low, range_)
    wide = range_ > 2**32
    reject = ((1 << (64 if wide else 32)) - range_) % range_
    got = run_random_host(random_host, tmp_path, "RANDINT_WIDE" if wide else "RANDINT", "i64", 99, 5,
                          777, low=low, range_=range_ % 2**64, reject=reject)
    np.testing.assert_array_equal(got, np.asarray(want))


def test_philox_bernoulli_matches_the_cpu(random_host, cpu_baseline, tmp_path):
    from torchlite._core import array as A
    R = cpu_baseline
    want = A.empty((1000,), K.FLOAT32)
    R.fill_bernoulli(want, cpu_generator(R, 3, 1), 0.3)
    got = run_random_host(random_host, tmp_path, "BERNOULLI", "f32", 3, 1, 1000,
                          thresh=int(0.3 * 4294967296.0 + 0.5))
    np.testing.assert_array_equal(got, np.asarray(want))
    p = np.linspace(0, 1, 1000)
    want = A.empty((1000,), K.INT64)
    R.fill_bernoulli_tensor(want, cpu_generator(R, 3, 1), A.from_numpy(p))
    got = run_random_host(random_host, tmp_path, "BERNOULLI_P", "i64", 3, 1, 1000, p=p)
    np.testing.assert_array_equal(got, np.asarray(want))


def _shuffle(draws):
    """The CPU's inside-out Fisher-Yates over randperm's draws (random_sample.h)."""
    p = list(draws)
    for i in range(len(p)):
        j = p[i]
        p[i] = p[j]
        p[j] = i
    return p


def test_philox_randperm_draws_match_the_cpu(random_host, cpu_baseline, tmp_path):
    R = cpu_baseline
    g = cpu_generator(R, 8, 0)
    want = np.asarray(R.randperm(500, g))
    draws = run_random_host(random_host, tmp_path, "BELOW_INDEX", "i64", 8, 0, 500)
    assert all(0 <= d <= i for i, d in enumerate(draws))
    assert _shuffle(draws) == list(want)


def test_philox_requests_continue_the_stream(random_host, tmp_path):
    """A request of 128 float32 normals (32 blocks) equals two of 64, the second starting
    16 blocks later: what a block holds depends on its number only, never on the launch."""
    whole = run_random_host(random_host, tmp_path, "NORMAL", "f32", 1, 0, 128, a=0.0, b=1.0)
    first = run_random_host(random_host, tmp_path, "NORMAL", "f32", 1, 0, 64, a=0.0, b=1.0)
    second = run_random_host(random_host, tmp_path, "NORMAL", "f32", 1, 16, 64, a=0.0, b=1.0)
    np.testing.assert_array_equal(whole, np.concatenate([first, second]))


# ---- elementwise functors --------------------------------------------------------------------
OPS_DRIVER = r'''
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "tl_ops.cuh"
typedef void (*Fn)(const char*, const char*, char*, long, const tl::Params&);
template <class Op, class TI, class TO>
void run_unary(const char* a, const char*, char* out, long n, const tl::Params& p) {
    const Op op;
    for (long i = 0; i < n; i++) ((TO*)out)[i] = tl::cvt<TO>::from(op(tl::load(((const TI*)a)[i]), p));
}
template <class Op, class TI, class TO>
void run_binary(const char* a, const char* b, char* out, long n, const tl::Params& p) {
    const Op op;
    for (long i = 0; i < n; i++)
        ((TO*)out)[i] = tl::cvt<TO>::from(op(tl::load(((const TI*)a)[i]), tl::load(((const TI*)b)[i]), p));
}
static const Fn table[] = {
%s
};
int main(int argc, char** argv) {
    /* argv: index n in-bytes-a in-file out-bytes out-file s0 s1 s2 */
    const int idx = atoi(argv[1]);
    const long n = atol(argv[2]), na = atol(argv[3]), no = atol(argv[5]);
    std::vector<char> in(2 * na + 16), out(no + 16);
    FILE* f = fopen(argv[4], "rb");
    if (fread(in.data(), 1, 2 * na, f) != (size_t)(2 * na)) return 2;
    fclose(f);
    int err = 0;
    tl::Params p = {{atof(argv[7]), atof(argv[8]), atof(argv[9]), 0.0}, &err};
    table[idx](in.data(), in.data() + na, out.data(), n, p);
    f = fopen(argv[6], "wb");
    fwrite(out.data(), 1, no, f);
    fwrite(&err, 4, 1, f);
    fclose(f);
    return 0;
}
'''
HOST_DTYPES = (K.BOOL,) + K.INTS + (K.FLOAT32, K.FLOAT64)     # the host has no __half
NP = {K.BOOL: np.bool_, K.UINT8: np.uint8, K.INT8: np.int8, K.INT16: np.int16, K.INT32: np.int32,
      K.INT64: np.int64, K.FLOAT32: np.float32, K.FLOAT64: np.float64}


def _host_op_entries():
    entries = []
    for op in K.unary_ops():
        for dt in K._unary_dtypes(op):
            if dt in HOST_DTYPES and op != "ERFINV":       # no erfinv in the host's libm
                entries.append(("unary", op, dt, K.unary_kernel(op, dt).replace("tl_unary", "run_unary")))
    for op in K.binary_ops():
        for dt in K._binary_dtypes(op):
            if dt in HOST_DTYPES:
                entries.append(("binary", op, dt, K.binary_kernel(op, dt).replace("tl_binary", "run_binary")))
    return entries


@pytest.fixture(scope="module")
def ops_host(tmp_path_factory):
    entries = _host_op_entries()
    exe = build(tmp_path_factory.mktemp("ops"), "ops_host",
                OPS_DRIVER % ",\n".join("    " + e[3] for e in entries))
    return exe, entries, tmp_path_factory.mktemp("opsio")


def _inputs(dt, op, n_random=64):
    """Operand values: specials and random ones (a, b)."""
    rng = np.random.default_rng(hash((op, dt)) % 2**32)
    t = NP[dt]
    if dt == K.BOOL:
        a = np.array([0, 1, 0, 1], bool)
        return a, np.array([0, 0, 1, 1], bool)
    if dt in K.INTS:
        info = np.iinfo(t)
        special = np.array([0, 1, 2, 3, 7, info.max, info.min, info.max - 1] +
                           ([-1, -2, -7, info.min + 1] if info.min < 0 else [100, 200, 5, 9]), dtype=t)
        rand = lambda: rng.integers(info.min, info.max, n_random, dtype=t, endpoint=True)  # noqa: E731
        a = np.concatenate([np.repeat(special, len(special)), rand()])
        b = np.concatenate([np.tile(special, len(special)), rand()])
        if op in ("SHL", "SHR"):
            b = (b.astype(np.int64) % (8 * t().itemsize + 6) - 2).astype(t)
        if op == "POW":
            b = (b.astype(np.int64) % 14 - (3 if info.min < 0 else 0)).astype(t)
        if op in ("DIV_TRUNC", "DIV_FLOOR", "REMAINDER", "FMOD"):
            b = np.where(b == 0, t(3), b).astype(t)       # division by zero: its own test
        return a, b
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0,
                        1e30, -1e-30, 7.25, 0.999], dtype=t)
    a = np.concatenate([np.repeat(special, len(special)), rng.uniform(-10, 10, n_random).astype(t)])
    b = np.concatenate([np.tile(special, len(special)), rng.uniform(-10, 10, n_random).astype(t)])
    return a, b


OP_SCALARS = {"CLAMP": (-2.5, 3.5, 0.0), "LOGIT": (0.01, 0.0, 0.0), "NAN_TO_NUM": (0.5, 1e10, -1e10),
              "ROUND_DECIMALS": (2.0, 0.0, 0.0), "ADD_ALPHA": (3.0, 0.0, 0.0),
              "THRESHOLD_BACKWARD": (0.5, 0.0, 0.0)}
_BINARY_WITH_SCALAR = ("ADD_ALPHA", "THRESHOLD_BACKWARD")      # the CPU's alpha is s[0]


def _run_host_op(ops_host, idx, a, b, out_dtype, scalars):
    exe, _, io = ops_host
    inp, res = io / "in.bin", io / "out.bin"
    inp.write_bytes(a.tobytes() + b.tobytes())
    nout = len(a) * np.dtype(out_dtype).itemsize
    subprocess.run([exe, str(idx), str(len(a)), str(a.nbytes), str(inp), str(nout), str(res)] +
                   [repr(float(s)) for s in scalars], check=True)
    raw = res.read_bytes()
    return np.frombuffer(raw[:nout], out_dtype), int(np.frombuffer(raw[nout:], np.int32)[0])


def _compare(got, want, dt, what):
    if got.dtype.kind == "f":
        assert np.array_equal(np.isnan(got), np.isnan(want)), what
        ok = ~np.isnan(want)
        rtol = 1e-5 if dt == K.FLOAT32 else 1e-12
        np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def test_op_functors_match_the_cpu_kernels(ops_host):
    """Every (op, dtype) functor the host can run, against the CPU's loop on special and
    random values: NaN rules of maximum/minimum, Python-style integer division, wrapping,
    shifts, clamps and predicates."""
    from torchlite._core import array as A
    from torchlite._core import elementwise as E
    _, entries, _ = ops_host
    for idx, (kind, op, dt, _) in enumerate(entries):
        a, b = _inputs(dt, op)
        s = OP_SCALARS.get(op, (0.0, 0.0, 0.0))
        if dt not in (K.FLOAT32, K.FLOAT64) and op == "CLAMP":
            s = (-2.0, 3.0, 0.0)
        if kind == "unary":
            want = np.asarray(E.unary(E.UNARY[op.lower()], A.from_numpy(a), None, *s))
        else:
            alpha = s[0] if op in _BINARY_WITH_SCALAR else 1.0
            want = np.asarray(E.binary(E.BINARY[op.lower()], A.from_numpy(a), A.from_numpy(b), None, alpha))
        got, err = _run_host_op(ops_host, idx, a, b, want.dtype, s)
        assert err == 0, (op, dt)
        _compare(got, want, dt, f"{kind} {op} on dtype code {dt}")


@pytest.mark.parametrize("op", ["DIV_TRUNC", "DIV_FLOOR", "REMAINDER", "FMOD"])
def test_integer_division_by_zero_reports_an_error(ops_host, op):
    from torchlite._core import array as A
    from torchlite._core import elementwise as E
    _, entries, _ = ops_host
    idx = next(i for i, e in enumerate(entries) if e[1] == op and e[2] == K.INT32)
    a, b = np.array([5, 6], np.int32), np.array([1, 0], np.int32)
    got, err = _run_host_op(ops_host, idx, a, b, np.int32, (0.0, 0.0, 0.0))
    assert err == 1 and got[1] == 0
    with pytest.raises(Exception):                   # the CPU raises for the same input
        E.binary(E.BINARY[op.lower()], A.from_numpy(a), A.from_numpy(b))


# ---- reductions: the ops and the kernel's combine order, run on the host ------------------------
REDUCE_DRIVER = r'''
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "tl_reduce.cuh"
/* The kernel's order: each of `chunks` chunks is reduced by `lanes` threads, thread l taking
 * elements l, l + lanes, ... of the chunk, combined by the shuffle tree; the chunks' partials
 * are then combined the same way. */
template <class Op> typename Op::Acc tree(const Op& op, std::vector<typename Op::Acc> v) {
    for (size_t d = v.size() / 2; d > 0; d /= 2)
        for (size_t l = 0; l < d; l++) v[l] = op.combine(v[l], v[l + d]);
    return v[0];
}
template <class Op> void run(const char* in, long n, int lanes, long chunk, const tl::Params& p,
                             void* out0, void* out1) {
    typedef typename Op::Acc Acc;
    const Op op;
    const typename Op::In* x = (const typename Op::In*)in;
    std::vector<Acc> partial;
    for (long c0 = 0; c0 < n || (c0 == 0 && n == 0); c0 += chunk) {
        std::vector<Acc> v(lanes, op.identity());
        for (int l = 0; l < lanes; l++)
            for (long r = c0 + l; r < n && r < c0 + chunk; r += lanes) v[l] = op.step(v[l], x[r], r);
        partial.push_back(tree(op, v));
        if (n == 0) break;
    }
    std::vector<Acc> v(lanes, op.identity());
    for (size_t s = 0; s < partial.size(); s++) v[s % lanes] = op.combine(v[s % lanes], partial[s]);
    op.store(tree(op, v), n, p, out0, 0, out1, 0);
}
typedef void (*Fn)(const char*, long, int, long, const tl::Params&, void*, void*);
struct Entry { const char* name; Fn fn; };
static const Entry table[] = {
/*TABLE*/
};
int main(int argc, char** argv) {
    /* argv: op n lanes chunk in-file out-file s0 s1 */
    const long n = atol(argv[2]), chunk = atol(argv[4]);
    std::vector<char> in(8 * n + 8);
    FILE* f = fopen(argv[5], "rb");
    size_t got = fread(in.data(), 1, 8 * n, f);
    (void)got;
    fclose(f);
    tl::Params p = {{atof(argv[7]), atof(argv[8]), 0.0, 0.0}, nullptr};
    double out0 = 0; long long out1 = -1;
    for (const Entry& e : table)
        if (!strcmp(e.name, argv[1])) e.fn(in.data(), n, atoi(argv[3]), chunk, p, &out0, &out1);
    f = fopen(argv[6], "wb");
    fwrite(&out0, 8, 1, f);
    fwrite(&out1, 8, 1, f);
    fclose(f);
    return 0;
}
'''
REDUCE_OPS = ["Sum<float>", "Sum<double>", "Sum<tl::i32>", "Sum<bool>", "Prod<double>", "Prod<tl::i64>",
              "Max<float>", "Min<float>", "Max<tl::i32>", "Min<double>", "Mean<float>",
              "NanSum<double>", "VarStd<float>", "VarStd<double>", "Any<float>", "All<tl::i64>"]


@pytest.fixture(scope="module")
def reduce_host(tmp_path_factory):
    entries = ",\n".join(f'    {{"{op}", &run<tl::red::{op} >}}' for op in REDUCE_OPS)
    d = tmp_path_factory.mktemp("red")
    return build(d, "reduce_host", "#include <cstring>\n" + REDUCE_DRIVER.replace("/*TABLE*/", entries)), d


def host_reduce(reduce_host, op, x, lanes, chunk, s0=0.0, s1=0.0):
    exe, d = reduce_host
    (d / "in.bin").write_bytes(np.ascontiguousarray(x).tobytes())
    subprocess.run([exe, op, str(len(x)), str(lanes), str(max(chunk, 1)), str(d / "in.bin"),
                    str(d / "out.bin"), repr(s0), repr(s1)], check=True)
    raw = (d / "out.bin").read_bytes()
    return raw[:8], int(np.frombuffer(raw[8:], np.int64)[0])


def _val(raw, t):
    return np.frombuffer(raw[:np.dtype(t).itemsize], t)[0]


@pytest.mark.parametrize("lanes,chunk", [(1, 10**9), (32, 10**9), (256, 10**9), (32, 100), (4, 7)])
def test_reduction_ops_in_the_kernels_order(reduce_host, lanes, chunk):
    rng = np.random.default_rng(lanes + chunk)
    x = rng.standard_normal(1000).astype(np.float32)
    x[[10, 500]] = x.max() + 1                        # a tie for the max: the first index wins
    raw, _ = host_reduce(reduce_host, "Sum<float>", x, lanes, chunk)
    assert _val(raw, np.float32) == np.float32(x.astype(np.float64).sum())
    raw, idx = host_reduce(reduce_host, "Max<float>", x, lanes, chunk)
    assert (_val(raw, np.float32), idx) == (x.max(), 10)
    raw, idx = host_reduce(reduce_host, "Min<float>", x, lanes, chunk)
    assert (_val(raw, np.float32), idx) == (x.min(), int(np.argmin(x)))
    y = x.copy()
    y[[300, 700]] = np.nan                            # NaN is the extreme; the first one wins
    for op in ("Max<float>", "Min<float>"):
        raw, idx = host_reduce(reduce_host, op, y, lanes, chunk)
        assert np.isnan(_val(raw, np.float32)) and idx == 300
    raw, _ = host_reduce(reduce_host, "Mean<float>", x, lanes, chunk)
    assert _val(raw, np.float32) == np.float32(x.astype(np.float64).mean())
    for corr in (0.0, 1.0, 2.5):
        raw, _ = host_reduce(reduce_host, "VarStd<double>", x.astype(np.float64), lanes, chunk, corr, 0.0)
        want = ((x.astype(np.float64) - x.astype(np.float64).mean()) ** 2).sum() / (len(x) - corr)
        assert _val(raw, np.float64) == pytest.approx(want, rel=1e-12)
    raw, _ = host_reduce(reduce_host, "VarStd<float>", x, lanes, chunk, 1.0, 1.0)      # std
    assert _val(raw, np.float32) == pytest.approx(np.std(x.astype(np.float64), ddof=1), rel=1e-6)
    z = np.where(rng.random(1000) < 0.1, np.nan, rng.standard_normal(1000))
    raw, _ = host_reduce(reduce_host, "NanSum<double>", z, lanes, chunk)
    assert _val(raw, np.float64) == pytest.approx(np.nansum(z), rel=1e-12)
    i = rng.integers(-2**31, 2**31, 1000, dtype=np.int64).astype(np.int32)
    raw, _ = host_reduce(reduce_host, "Sum<tl::i32>", i, lanes, chunk)
    assert _val(raw, np.int64) == i.astype(np.int64).sum()
    raw, idx = host_reduce(reduce_host, "Max<tl::i32>", i, lanes, chunk)
    assert (_val(raw, np.int32), idx) == (i.max(), int(np.argmax(i)))
    b = rng.random(1000) < 0.3
    raw, _ = host_reduce(reduce_host, "Sum<bool>", b, lanes, chunk)
    assert _val(raw, np.int64) == b.sum()
    w = rng.integers(-3, 4, 40, dtype=np.int64)
    raw, _ = host_reduce(reduce_host, "Prod<tl::i64>", w, lanes, chunk)
    want = 1
    for v in w.tolist():
        want = (want * v) & 0xFFFFFFFFFFFFFFFF
    assert _val(raw, np.int64) == np.int64(np.uint64(want).astype(np.int64))
    raw, _ = host_reduce(reduce_host, "Any<float>", np.zeros(50, np.float32), lanes, chunk)
    assert _val(raw, np.bool_) == False  # noqa: E712
    raw, _ = host_reduce(reduce_host, "All<tl::i64>", np.arange(1, 60, dtype=np.int64), lanes, chunk)
    assert _val(raw, np.bool_) == True  # noqa: E712


def test_reduction_edge_cases(reduce_host):
    empty = np.zeros(0, np.float64)
    assert _val(host_reduce(reduce_host, "Sum<double>", empty, 32, 10**9)[0], np.float64) == 0
    assert _val(host_reduce(reduce_host, "Prod<double>", empty, 32, 10**9)[0], np.float64) == 1
    mean_of_empty = host_reduce(reduce_host, "Mean<float>", np.zeros(0, np.float32), 32, 10**9)[0]
    assert np.isnan(_val(mean_of_empty, np.float32))
    one = np.array([3.0])
    assert np.isnan(_val(host_reduce(reduce_host, "VarStd<double>", one, 32, 10**9, 1.0)[0], np.float64))
    assert _val(host_reduce(reduce_host, "VarStd<double>", one, 32, 10**9, 0.0)[0], np.float64) == 0
    assert np.isnan(_val(host_reduce(reduce_host, "VarStd<double>", empty, 32, 10**9, 0.0)[0], np.float64))
    inf = np.array([1.0, np.inf, -np.inf])
    assert np.isnan(_val(host_reduce(reduce_host, "Sum<double>", inf, 2, 10**9)[0], np.float64))
    assert host_reduce(reduce_host, "Min<double>", inf, 2, 10**9)[1] == 2


# ---- fused optimizers, against torchlite.optim ----------------------------------------------------
OPTIM_DRIVER = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "tl_optim.cuh"
template <class T> int step(int argc, char** argv) {
    /* argv: kind dtype n state-file, then the args */
    const long n = atol(argv[3]);
    const int arrays = !strcmp(argv[1], "sgd") ? 3 : 5;
    std::vector<T> s((size_t)arrays * n);
    FILE* f = fopen(argv[4], "rb");
    if (fread(s.data(), sizeof(T), s.size(), f) != s.size()) return 2;
    fclose(f);
    T *p = s.data(), *g = p + n, *a = g + n, *b = a + n, *c = b + n;
    if (arrays == 3) {
        tl::SgdArgs x = {atof(argv[5]), atof(argv[6]), atof(argv[7]), atof(argv[8]),
                         atoi(argv[9]), atoi(argv[10]), atoi(argv[11]), 0};
        for (long i = 0; i < n; i++) tl::sgd_update(p, g, a, i, x);
    } else {
        tl::AdamArgs x = {atof(argv[5]), atof(argv[6]), atof(argv[7]), atof(argv[8]), atof(argv[9]),
                          atof(argv[10]), atof(argv[11]), atoi(argv[12]), atoi(argv[13]), atoi(argv[14]), 0};
        for (long i = 0; i < n; i++) tl::adam_update(p, g, a, b, c, i, x);
    }
    f = fopen(argv[4], "wb");
    fwrite(s.data(), sizeof(T), s.size(), f);
    fclose(f);
    return 0;
}
int main(int argc, char** argv) {
    return !strcmp(argv[2], "f64") ? step<double>(argc, argv) : step<float>(argc, argv);
}
'''


@pytest.fixture(scope="module")
def optim_host(tmp_path_factory):
    d = tmp_path_factory.mktemp("optim")
    return build(d, "optim_host", OPTIM_DRIVER), d


@pytest.fixture
def cpu_isa_baseline():
    """Every CPU kernel at the baseline level (no FMA contraction), as the host build."""
    import torchlite._core as core
    from torchlite._core import elementwise as E
    old = E.isa_level()
    core.set_isa_level(0)
    yield
    core.set_isa_level(old)


def _host_optimizer_steps(optim_host, kind, dt, arrays, steps):
    exe, d = optim_host
    state = d / "state.bin"
    np.concatenate(arrays).astype(dt).tofile(state)
    for args in steps:
        subprocess.run([exe, kind, "f64" if dt == np.float64 else "f32", str(len(arrays[0])),
                        str(state)] + [repr(a) if isinstance(a, float) else str(int(a)) for a in args],
                       check=True)
    return np.fromfile(state, dt).reshape(len(arrays), -1)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("opts", [dict(momentum=0.0), dict(momentum=0.9, dampening=0.1, weight_decay=0.01),
                                  dict(momentum=0.9, nesterov=True, maximize=True)])
def test_fused_sgd_matches_torchlite_optim(optim_host, cpu_isa_baseline, dt, opts):
    import torchlite
    rng = np.random.default_rng(1)
    p0, g = rng.standard_normal(64).astype(dt), rng.standard_normal(64).astype(dt)
    p = torchlite.tensor(p0, requires_grad=True)
    opt = torchlite.optim.SGD([p], lr=0.1, **opts)
    for _ in range(3):
        p.grad = torchlite.tensor(g)
        opt.step()
    full = dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False) | opts
    steps = [(0.1, full["weight_decay"], full["momentum"], full["dampening"], full["nesterov"],
              full["maximize"], k == 0) for k in range(3)]
    out = _host_optimizer_steps(optim_host, "sgd", dt, [p0, g, np.zeros_like(p0)], steps)
    np.testing.assert_array_equal(out[0], p.detach().numpy())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("opts", [dict(), dict(weight_decay=0.1, amsgrad=True),
                                  dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)])
def test_fused_adam_matches_torchlite_optim(optim_host, cpu_isa_baseline, dt, opts):
    import torchlite
    rng = np.random.default_rng(2)
    p0 = rng.standard_normal(64).astype(dt)
    grads = [rng.standard_normal(64).astype(dt) for _ in range(3)]
    p = torchlite.tensor(p0, requires_grad=True)
    lr, betas, eps = 0.01, (0.9, 0.999), 1e-8
    opt = torchlite.optim.Adam([p], lr=lr, betas=betas, eps=eps, **opts)
    state = [p0, None, np.zeros_like(p0), np.zeros_like(p0), np.zeros_like(p0)]   # p g m v vmax
    for t, g in enumerate(grads, 1):
        p.grad = torchlite.tensor(g)
        opt.step()
        state[1] = g
        args = (betas[0], betas[1], lr, opts.get("weight_decay", 0.0), eps, lr / (1 - betas[0] ** t),
                (1 - betas[1] ** t) ** 0.5, opts.get("amsgrad", False), opts.get("maximize", False),
                opts.get("decoupled_weight_decay", False))
        state = list(_host_optimizer_steps(optim_host, "adam", dt, state, [args]))
    np.testing.assert_array_equal(state[0], p.detach().numpy())
    np.testing.assert_array_equal(state[2], opt.state[p]["exp_avg"].numpy())


# ---- the strided indexer: pack_indexer's bytes read by the device struct --------------------------
INDEXER_DRIVER = r'''
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include "tl_common.cuh"
int main(int argc, char** argv) {
    /* argv: packed-file n; prints the 3 offsets of every linear index, one line each */
    tl::Indexer<3> ix;
    FILE* f = fopen(argv[1], "rb");
    if (fread(&ix, sizeof ix, 1, f) != 1) return 2;
    fclose(f);
    for (long i = 0; i < atol(argv[2]); i++) {
        const tl::Offsets<3> o = tl::operand_offsets(ix, i);
        printf("%lld %lld %lld\n", o.o[0], o.o[1], o.o[2]);
    }
    return 0;
}
'''


@pytest.mark.parametrize("shape,strides", [
    ((4, 3, 5), [[15, 5, 1], [1, 4, 12], [0, 1, 0]]),            # contiguous, transposed, broadcast
    ((2, 1, 7, 3), [[21, 21, 3, 1], [-42, 9, -6, 2], [7, 0, 1, 0]]),  # negative and odd strides
    ((1000,), [[1], [3], [0]]),
])
def test_packed_indexer_read_by_the_kernel_struct(tmp_path, shape, strides):
    exe = build(tmp_path, "indexer_host", INDEXER_DRIVER)
    n = int(np.prod(shape))
    (tmp_path / "ix.bin").write_bytes(K.pack_indexer(shape, strides))
    out = subprocess.run([exe, str(tmp_path / "ix.bin"), str(n)], check=True, capture_output=True,
                         text=True).stdout.split()
    got = np.array(out, np.int64).reshape(n, 3)
    idx = np.array(np.unravel_index(np.arange(n), shape)).T
    want = idx @ np.array(strides, np.int64).T
    np.testing.assert_array_equal(got, want)
    (tmp_path / "ix.bin").write_bytes(K.pack_indexer(steps=[1, 1, 0]))      # contiguous fast path
    out = subprocess.run([exe, str(tmp_path / "ix.bin"), "5"], check=True, capture_output=True,
                         text=True).stdout.split()
    np.testing.assert_array_equal(np.array(out, np.int64).reshape(5, 3),
                                  [[i, i, 0] for i in range(5)])
