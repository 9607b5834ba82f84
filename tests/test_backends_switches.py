"""torchlite.backends, the precision/determinism switches, compile(), and the CUDA memory and
capability queries PyTorch scripts call."""
import pytest

import torchlite as tl


def test_backend_flags_are_settable_and_read_back():
    cudnn, matmul = tl.backends.cudnn, tl.backends.cuda.matmul
    saved = (cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32)
    try:
        cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32 = True, True, True
        assert (cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32) == (True, True, True)
    finally:
        cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32 = saved
    assert cudnn.is_available() is False and cudnn.version() is None
    assert tl.backends.mps.is_available() is False
    assert tl.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")


def test_float32_matmul_precision():
    try:
        tl.set_float32_matmul_precision("high")
        assert tl.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="Invalid precision"):
            tl.set_float32_matmul_precision("fast")
    finally:
        tl.set_float32_matmul_precision("highest")


def test_deterministic_algorithms_switch():
    try:
        tl.use_deterministic_algorithms(True, warn_only=True)
        assert tl.are_deterministic_algorithms_enabled()
        assert tl.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError):
            tl.use_deterministic_algorithms(1)
    finally:
        tl.use_deterministic_algorithms(False)
    assert not tl.are_deterministic_algorithms_enabled()


def test_cuda_queries_without_cuda_do_not_fail():
    if tl.cuda.is_available():
        pytest.skip("this checks the no-GPU answers")
    assert tl.cuda.is_bf16_supported() is False
    assert tl.cuda.memory_stats() == {}
    assert "not initialised" in tl.cuda.memory_summary()
    assert isinstance(tl.cuda.get_arch_list(), list)


def test_cuda_memory_queries(fake_cuda):
    x = tl.ones(1000, device="cuda")
    free, total = tl.cuda.mem_get_info()
    assert total == fake_cuda.capacity and 0 < free < total
    st = tl.cuda.memory_stats()
    assert st["allocated_bytes.all.current"] >= 4000
    assert st["allocated_bytes.all.peak"] >= st["allocated_bytes.all.current"]
    assert "allocated" in tl.cuda.memory_summary()
    assert tl.cuda.is_bf16_supported()
    del x


def test_deterministic_mode_sends_float_scatter_add_to_the_host(fake_cuda, monkeypatch):
    import fake_cuda_kernels
    from torchlite.cuda import _fallback
    fake_cuda_kernels.install(fake_cuda, monkeypatch)          # the kernels on, emulated
    calls = []
    run = _fallback.run_on_host
    monkeypatch.setattr(_fallback, "run_on_host", lambda fn, *a: (calls.append(fn.__name__), run(fn, *a))[1])
    src = tl.ones(2, 3)
    idx = tl.tensor([[0, 1, 0], [1, 1, 0]])
    expected = tl.zeros(2, 3).scatter_add(0, idx, src)

    def scatter_add():
        return tl.zeros(2, 3, device="cuda").scatter_add(0, idx.cuda(), src.cuda())
    assert scatter_add().cpu().tolist() == expected.tolist() and "along_dim" not in calls
    try:
        tl.use_deterministic_algorithms(True)
        got = scatter_add()
    finally:
        tl.use_deterministic_algorithms(False)
    assert got.cpu().tolist() == expected.tolist()
    assert "along_dim" in calls
