"""torchlite.cuda without a GPU: PyTorch's CPU-only behaviour (is_available() False,
device_count() 0, memory statistics 0, seeds remembered), clear errors naming what is
missing (cuda-python, the driver, a device, NVRTC, the headers), and an import that never
fails.  The device-query logic itself is checked against a stand-in driver."""
import subprocess
import sys
import textwrap

import pytest

import torchlite
import torchlite.cuda as cuda
from torchlite.cuda import _driver, _state

no_gpu = pytest.mark.skipif(cuda.is_available(), reason="a usable GPU is present (the CUDA suite covers it)")


def run_python(code):
    """Run code in a fresh interpreter; returns its stdout (fails the test on an error)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


BLOCK_CUDA_PYTHON = """
import sys
sys.modules["cuda"] = None              # `import cuda...` now raises ImportError
sys.modules["cuda.bindings"] = None
"""


# ---- the answers PyTorch gives without CUDA ------------------------------------------------------
@no_gpu
def test_queries_answer_without_cuda():
    assert cuda.is_available() is False
    assert cuda.device_count() == 0
    assert cuda.is_initialized() is False
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 0
    assert cuda.memory_reserved() == 0 and cuda.max_memory_reserved() == 0
    assert cuda.empty_cache() is None
    cuda.reset_peak_memory_stats()
    assert isinstance(cuda.why_unavailable(), str) and cuda.why_unavailable()


@no_gpu
def test_seeding_is_remembered_without_cuda():
    cuda.manual_seed(1234)
    state = cuda.get_rng_state()
    assert bytes(state.tolist())[:8] == (1234).to_bytes(8, "little")
    cuda.manual_seed_all(99)
    assert bytes(cuda.get_rng_state().tolist())[:8] == (99).to_bytes(8, "little")
    cuda.set_rng_state(state)
    assert bytes(cuda.get_rng_state().tolist()) == bytes(state.tolist())
    with pytest.raises(ValueError):
        cuda.manual_seed(2**64)


DEVICE_CALLS = [
    ("get_device_name", lambda: cuda.get_device_name()),
    ("get_device_name(0)", lambda: cuda.get_device_name(0)),
    ("get_device_properties", lambda: cuda.get_device_properties(0)),
    ("get_device_capability", lambda: cuda.get_device_capability()),
    ("current_device", lambda: cuda.current_device()),
    ("set_device", lambda: cuda.set_device(0)),
    ("synchronize", lambda: cuda.synchronize()),
    ("current_stream", lambda: cuda.current_stream()),
    ("default_stream", lambda: cuda.default_stream()),
    ("Stream", lambda: cuda.Stream()),
    ("Event.record", lambda: cuda.Event(enable_timing=True).record()),
    ("initial_seed", lambda: cuda.initial_seed()),
    ("init", lambda: cuda.init()),
    ("device context", lambda: cuda.device(0).__enter__()),
]


@no_gpu
@pytest.mark.parametrize("name,call", DEVICE_CALLS, ids=[n for n, _ in DEVICE_CALLS])
def test_device_functions_raise_the_reason(name, call):
    with pytest.raises(RuntimeError) as info:
        call()
    e = info.value
    assert isinstance(e, cuda.CudaUnavailableError) and isinstance(e, AssertionError)
    assert "CUDA is not available because" in str(e)
    assert cuda.why_unavailable() in str(e)
    assert cuda.is_initialized() is False


@no_gpu
def test_event_objects_exist_without_cuda():
    e = cuda.Event(enable_timing=True)
    assert e.query() is True                 # never recorded
    e.synchronize()
    with pytest.raises(RuntimeError, match="recorded"):
        e.elapsed_time(cuda.Event(enable_timing=True))
    with pytest.raises(RuntimeError, match="enable_timing"):
        e.elapsed_time(cuda.Event())


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(cuda.CudaUnavailableError, RuntimeError)
    assert issubclass(cuda.CudaUnavailableError, AssertionError)


@no_gpu
def test_require_cuda_names_the_action_and_the_reason():
    with pytest.raises(RuntimeError, match="cannot create a CUDA tensor: CUDA is not available because"):
        cuda._require_cuda("create a CUDA tensor")
    with pytest.raises(RuntimeError, match="cannot initialize CUDA"):
        cuda._lazy_init()


@no_gpu
def test_cuda_tensors_raise_with_the_reason():
    reason = cuda.why_unavailable()
    with pytest.raises(RuntimeError) as info:
        torchlite.zeros(2, 3, device="cuda")
    assert reason in str(info.value)
    with pytest.raises(RuntimeError) as info:
        torchlite.ones(2).to("cuda:0")
    assert reason in str(info.value)


@no_gpu
def test_show_config_reports_the_reason():
    cfg = torchlite._config.config()
    assert cfg["cuda"].startswith("not available: ") and cuda.why_unavailable() in cfg["cuda"]
    status = cuda._status()
    assert status["available"] is False and status["kind"] in (
        "no-cuda-python", "no-driver", "no-device", "no-nvrtc", "no-headers", "driver-error")


# ---- device arguments ------------------------------------------------------------------------
def test_device_arguments():
    assert cuda._device_index("cuda:1") == 1
    assert cuda._device_index(torchlite.device("cuda", 2)) == 2
    assert cuda._device_index(3) == 3
    assert cuda._device_index(None) == cuda._current_index()
    assert cuda._device_index("cuda") == cuda._current_index()
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        cuda._device_index("cpu")
    with pytest.raises(TypeError):
        cuda._device_index(True)
    with pytest.raises(TypeError):
        cuda._device_index(1.5)
    with pytest.raises(RuntimeError):
        cuda._device_index("gpu:0")


# ---- import never fails, and says which piece is missing -----------------------------------------
def test_import_does_not_load_cuda_python():
    out = run_python("""
        import sys, torchlite, torchlite.cuda
        print('cuda.bindings' in sys.modules)
    """)
    assert out.strip() == "False"


def test_without_cuda_python():
    out = run_python(BLOCK_CUDA_PYTHON + """
import torchlite, torchlite.cuda as cuda
assert cuda.is_available() is False and cuda.device_count() == 0
st = cuda._status()
assert st["kind"] == "no-cuda-python", st
assert "pip install 'torchlite-dl[cuda]'" in cuda.why_unavailable()
assert cuda.memory_allocated() == 0
cuda.manual_seed_all(3)
try:
    torchlite.zeros(2, device="cuda")
except RuntimeError as e:
    assert "cuda-python is not installed" in str(e) and "pip install 'torchlite-dl[cuda]'" in str(e), e
else:
    raise AssertionError("no error")
try:
    cuda.get_device_name()
except AssertionError as e:          # PyTorch's exception type, still a RuntimeError too
    assert isinstance(e, RuntimeError) and "pip install 'torchlite-dl[cuda]'" in str(e)
torchlite.show_config()
print("ok")
""")
    assert out.strip().endswith("ok")
    assert "pip install 'torchlite-dl[cuda]'" in out           # show_config printed the reason


# ---- which piece is missing: the classifier against stand-ins -------------------------------------
class FakeNvrtc:
    def __init__(self, ok=True):
        self.ok = ok

    def nvrtcVersion(self):
        if not self.ok:
            raise RuntimeError('Failure finding "libnvrtc.so.13"')
        return (0, 13, 5)


class FakeDriver:
    def __init__(self, init=0, count=1, raise_init=None):
        self.init, self.count, self.raise_init = init, count, raise_init

    def cuInit(self, flags):
        if self.raise_init:
            raise self.raise_init
        return (self.init,)

    def cuDriverGetVersion(self):
        return (0, 13000)

    def cuDeviceGetCount(self):
        return (0, self.count)


def classify(driver=None, nvrtc=None, include="/x/include", import_error=None):
    def importer():
        if import_error:
            raise import_error
        return driver or FakeDriver(), nvrtc or FakeNvrtc()
    return _driver.classify(importer, lambda: include)


def test_classify_every_case():
    st = classify(import_error=ImportError("No module named 'cuda'"))
    assert (st.available, st.kind) == (False, "no-cuda-python") and "pip install 'torchlite-dl[cuda]'" in st.reason
    st = classify(import_error=OSError("broken install"))
    assert st.kind == "no-cuda-python"
    st = classify(FakeDriver(raise_init=RuntimeError('"cuda" is an NVIDIA driver library')))
    assert st.kind == "no-driver" and "no NVIDIA driver" in st.reason and "libcuda" in st.reason
    assert st.nvrtc == (13, 5)
    st = classify(FakeDriver(init=100))
    assert st.kind == "no-device" and "CUDA_ERROR_NO_DEVICE" in st.reason
    st = classify(FakeDriver(count=0))
    assert st.kind == "no-device" and "cuDeviceGetCount: 0" in st.reason
    st = classify(FakeDriver(init=34))
    assert st.kind == "no-driver" and "stub" in st.reason
    st = classify(FakeDriver(init=999))
    assert st.kind == "driver-error" and "999" in st.reason
    st = classify(FakeDriver(count=2), FakeNvrtc(ok=False))
    assert st.kind == "no-nvrtc" and "nvidia-cuda-nvrtc" in st.reason and st.devices == 2
    st = classify(FakeDriver(count=2), include=None)
    assert st.kind == "no-headers" and "cuda_fp16.h" in st.reason
    st = classify(FakeDriver(count=2))
    assert (st.available, st.kind, st.devices, st.driver, st.reason) == (True, "ok", 2, 13000, "")


def test_no_device_mentions_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert "CUDA_VISIBLE_DEVICES=''" in classify(FakeDriver(init=100)).reason


# ---- the query logic with a stand-in driver (two devices) ----------------------------------------
class FakeDevices:
    names = ["Fake GPU A", "Fake GPU B"]

    def __init__(self):
        self.activated = []

    def count(self):
        return 2

    def name(self, i):
        return self.names[i]

    def capability(self, i):
        return (9, 0) if i == 0 else (8, 6)

    def total_memory(self, i):
        return (80 << 30) if i == 0 else (24 << 30)

    def attribute(self, i, name):
        return {"MULTIPROCESSOR_COUNT": 132, "L2_CACHE_SIZE": 50 << 20, "WARP_SIZE": 32}.get(name, 1)

    def uuid(self, i):
        return f"0000000{i}-0000-0000-0000-000000000000"

    def activate(self, i):
        self.activated.append(i)


class FakeAllocator:
    def __init__(self):
        self.emptied = 0
        self.reset = []

    def stats(self, i):
        return {"allocated": 100 + i, "max_allocated": 200, "reserved": 300, "max_reserved": 400}

    def empty_cache(self):
        self.emptied += 1

    def reset_peak(self, i):
        self.reset.append(i)


@pytest.fixture
def two_fake_gpus(monkeypatch):
    monkeypatch.setattr(_driver, "_status", _driver.Status(True, "ok", "", devices=2, nvrtc=(13, 5)))
    monkeypatch.setattr(_driver, "Devices", FakeDevices)
    monkeypatch.setattr(_state, "initialized", False)
    monkeypatch.setattr(_state, "devices", None)
    monkeypatch.setattr(_state, "allocator", None)
    calls = []
    monkeypatch.setattr(_driver, "call", lambda name, *args: calls.append(name))
    old = getattr(cuda._tls, "index", None)
    cuda._tls.index = 0
    yield calls
    if old is None:
        del cuda._tls.index
    else:
        cuda._tls.index = old


def test_queries_with_two_devices(two_fake_gpus):
    assert cuda.is_available() and cuda.device_count() == 2
    assert not cuda.is_initialized()
    assert cuda.get_device_name() == "Fake GPU A"
    assert cuda.is_initialized()
    assert cuda.get_device_name("cuda:1") == "Fake GPU B"
    assert cuda.get_device_capability(torchlite.device("cuda", 1)) == (8, 6)
    p = cuda.get_device_properties(0)
    assert (p.name, p.major, p.minor, p.total_memory, p.multi_processor_count) == \
        ("Fake GPU A", 9, 0, 80 << 30, 132)
    assert "name='Fake GPU A'" in repr(p) and "total_memory=81920MB" in repr(p)
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.get_device_name(2)
    with pytest.raises(ValueError):
        cuda.get_device_properties("cpu")


def test_current_device_is_per_thread(two_fake_gpus):
    import threading
    cuda.set_device(1)
    assert cuda.current_device() == 1
    seen = []
    t = threading.Thread(target=lambda: seen.append(cuda.current_device()))
    t.start()
    t.join()
    assert seen == [0]
    with cuda.device(0):
        assert cuda.current_device() == 0
    assert cuda.current_device() == 1
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.set_device(5)


def test_synchronize_calls_the_driver(two_fake_gpus):
    cuda.synchronize(1)
    assert two_fake_gpus == ["cuCtxSynchronize"] and _state.devices.activated == [1]


def test_memory_statistics_come_from_the_allocator(two_fake_gpus):
    alloc = FakeAllocator()
    cuda._set_allocator(alloc)
    cuda.init()
    assert cuda.memory_allocated() == 100 and cuda.memory_allocated(1) == 101
    assert (cuda.max_memory_allocated(), cuda.memory_reserved(), cuda.max_memory_reserved()) == (200, 300, 400)
    cuda.empty_cache()
    cuda.reset_peak_memory_stats("cuda:1")
    assert alloc.emptied == 1 and alloc.reset == [1]


def test_streams_default_and_current(two_fake_gpus):
    s = cuda.current_stream()
    assert s.cuda_stream == 0 and s == cuda.default_stream(0) and s.device == torchlite.device("cuda", 0)
    other = cuda.Stream._wrap(1234, 0)
    with cuda.stream(other):
        assert cuda.current_stream() == other
    assert cuda.current_stream() == s
