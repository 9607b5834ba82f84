"""PyTorch's top-level spellings of Tensor methods (torch.detach(x), torch.fill_(x, v), ...),
the *_copy forms of views, as_strided_scatter, empty_permuted, frombuffer, from_file, the
deprecated range, the process-wide settings (interop threads, warn-always, deterministic debug
mode, flush-denormal, typename, is_storage, is_distributed) and the sym_* helpers; against
NumPy and, where installed, PyTorch."""
import array
import warnings

import numpy as np
import pytest

import torchlite as tl
from torchlite._ops.method_forms import _NAMES as METHOD_FORMS


def test_method_forms_are_the_methods():
    x = tl.tensor([0.25, 0.5])
    for name, args in (("arccos_", ()), ("arcsin_", ()), ("arctan_", ()), ("negative_", ()), ("fix_", ()),
                       ("logit_", ()), ("xlogy_", (2.0,))):
        a, b = x.clone(), x.clone()
        r = getattr(tl, name)(a, *args)
        assert r is a
        np.testing.assert_array_equal(a.numpy(), getattr(b, name)(*args).numpy(), err_msg=name)
    y = tl.tensor([1.5, 2.0])
    assert tl.arccosh_(y.clone()).allclose(y.arccosh()) and tl.arctanh_(x.clone()).allclose(x.arctanh())
    assert tl.arcsinh_(x.clone()).allclose(x.asinh())
    t = tl.zeros(3)
    assert tl.fill_(t, 2) is t and t.tolist() == [2, 2, 2]
    assert tl.index_put_(t, (tl.tensor([0]),), tl.tensor(5.0)).tolist() == [5, 2, 2]
    assert tl.resize_as_(tl.zeros(2), tl.zeros(3, 1)).shape == (3, 1)
    g = tl.ones(2, requires_grad=True) * 2
    assert not tl.detach(g).requires_grad and tl.detach_(g.clone().detach()).is_leaf
    assert tl.is_complex(tl.zeros(1, dtype=tl.complex64)) and not tl.is_complex(tl.zeros(1))
    assert tl.is_signed(tl.zeros(1)) and not tl.is_signed(tl.zeros(1, dtype=tl.uint8))
    assert not tl.is_inference(t) and tl.get_device(t) == -1
    with pytest.raises(TypeError, match="must be Tensor"):
        tl.detach([1.0])
    assert set(METHOD_FORMS) <= set(dir(tl))


def test_copy_forms_of_views_are_fresh():
    a = tl.arange(12).reshape(3, 4)
    s = tl.select_copy(a, 1, 2)
    np.testing.assert_array_equal(s.numpy(), a.numpy()[:, 2])
    assert s.is_contiguous() and s.data_ptr() != a.data_ptr()
    np.testing.assert_array_equal(tl.slice_copy(tl.arange(10), 0, 2, 8, 3).numpy(), [2, 5])
    np.testing.assert_array_equal(tl.slice_copy(a, 1, 1).numpy(), a.numpy()[:, 1:])
    parts = tl.split_copy(tl.arange(5), 2)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]
    assert [p.tolist() for p in tl.split_with_sizes_copy(tl.arange(5), [2, 3])] == [[0, 1], [2, 3, 4]]
    c = tl.tensor([1 + 2j, 3 - 1j])
    r = tl.view_as_real_copy(c)
    assert r.tolist() == [[1, 2], [3, -1]] and r.data_ptr() != c.data_ptr()
    assert tl.view_as_complex_copy(r).tolist() == [1 + 2j, 3 - 1j]


def test_as_strided_scatter_and_its_gradient():
    base, src = tl.zeros(3, 3), tl.tensor([1.0, 2.0])
    out = tl.as_strided_scatter(base, src, (2,), (4,), 0)
    np.testing.assert_array_equal(out.numpy(), [[1, 0, 0], [0, 2, 0], [0, 0, 0]])
    assert base.sum().item() == 0                         # a copy
    a = tl.randn(3, 3, dtype=tl.float64, requires_grad=True)
    b = tl.randn(2, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: tl.as_strided_scatter(a, b, (2,), (4,), 1), (a, b))


def test_empty_permuted_lays_dims_out_in_the_order_given():
    x = tl.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))
    assert x.shape == (2, 3, 4, 5) and x.stride() == (60, 1, 15, 3)
    assert x.is_contiguous(memory_format=tl.channels_last)
    with pytest.raises(RuntimeError, match="must be a permutation"):
        tl.empty_permuted((2, 3), (0, 0))


def test_frombuffer_shares_the_memory():
    buf = array.array("f", [1.0, 2.0, 3.0])
    t = tl.frombuffer(buf, dtype=tl.float32)
    assert t.tolist() == [1, 2, 3] and t.data_ptr() == buf.buffer_info()[0]
    t[0] = 9
    assert buf[0] == 9
    with pytest.warns(UserWarning, match="not writable"):            # bytes: read-only, as PyTorch warns
        assert tl.frombuffer(b"\x01\x02\x03\x04", dtype=tl.uint8, count=2, offset=1).tolist() == [2, 3]
    assert tl.frombuffer(bytearray(8), dtype=tl.int32).shape == (2,)
    with pytest.raises(ValueError, match="multiple of element size"):
        tl.frombuffer(bytearray(6), dtype=tl.float32)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        tl.frombuffer(bytearray(8), dtype=tl.float32, count=3)
    with pytest.raises(TypeError, match="buffer protocol"):
        tl.frombuffer([1, 2], dtype=tl.float32)


def test_range_includes_its_end_and_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = tl.range(1, 4)
    assert r.tolist() == [1, 2, 3, 4] and r.dtype == tl.float32
    assert any("torch.range is deprecated" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(tl.range(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75, 1])
        assert tl.range(1, 4, dtype=tl.int64).tolist() == [1, 2, 3, 4]
        assert tl.range(5, 1, -2).tolist() == [5, 3, 1]
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            tl.range(0, 1, 0)


def test_settings():
    assert tl.get_deterministic_debug_mode() == 0
    try:
        tl.set_deterministic_debug_mode("warn")
        assert tl.get_deterministic_debug_mode() == 1 and tl.are_deterministic_algorithms_enabled()
        tl.set_deterministic_debug_mode(2)
        assert tl.get_deterministic_debug_mode() == 2 and not tl.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            tl.set_deterministic_debug_mode(3)
    finally:
        tl.set_deterministic_debug_mode(0)
    assert not tl.are_deterministic_algorithms_enabled()
    assert tl.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="positive number of threads"):
        tl.set_num_interop_threads(0)
    assert tl.init_num_threads() is None
    tl.set_warn_always(True)
    assert tl.is_warn_always_enabled()
    tl.set_warn_always(False)
    assert tl.set_flush_denormal(True) is False
    assert tl.typename(tl.ones(1)) == "torchlite.FloatTensor" and tl.typename(1) == "int"
    assert tl.typename(tl.nn.Linear(1, 1)) == "torchlite.nn.modules.linear.Linear"
    assert tl.is_storage(tl.ones(1).untyped_storage()) and not tl.is_storage(tl.ones(1))


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4)
    for name, args in (("select_copy", (1, 2)), ("slice_copy", (1, 1, 4, 2))):
        np.testing.assert_array_equal(getattr(tl, name)(tl.tensor(a), *args).numpy(),
                                      getattr(torch, name)(torch.tensor(a), *args).numpy())
    np.testing.assert_array_equal(tl.as_strided_scatter(tl.zeros(3, 3), tl.ones(2), (2,), (4,), 0).numpy(),
                                  torch.as_strided_scatter(torch.zeros(3, 3), torch.ones(2), (2,), (4,), 0).numpy())
    assert tl.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(tl.range(0.5, 2, 0.3).numpy(), torch.range(0.5, 2, 0.3).numpy())


# ---- from_file, is_distributed, the sym_* helpers ---------------------------------------------
def test_from_file_maps_the_file_shared_or_private(tmp_path):
    path = tmp_path / "data.bin"
    t = tl.from_file(str(path), shared=True, size=4, dtype=tl.float32)   # created, zero-filled
    assert t.tolist() == [0, 0, 0, 0] and path.stat().st_size == 16
    t[1] = 5.0
    del t
    assert np.fromfile(path, np.float32).tolist() == [0, 5, 0, 0]         # shared: written through
    u = tl.from_file(path, size=4, dtype=tl.float32)                        # private: copy on write
    u[0] = 9.0
    assert u.tolist() == [9, 5, 0, 0] and np.fromfile(path, np.float32)[0] == 0
    assert tl.from_file(path, size=3).dtype == tl.get_default_dtype()
    assert tl.from_file(path, size=0).shape == (0,)
    b = tl.from_file(path, size=8, dtype=tl.bfloat16)
    assert b.dtype == tl.bfloat16 and b[3].item() == 5.0                  # 5.0f's high half
    assert tl.from_file(path, True, 2, dtype=tl.float64).shape == (2,)
    with pytest.raises(RuntimeError, match="smaller than the required mapping size <32>"):
        tl.from_file(path, shared=False, size=8, dtype=tl.float32)
    with pytest.raises(RuntimeError, match="unable to open file"):
        tl.from_file(tmp_path / "missing.bin", size=1)
    with pytest.raises(RuntimeError, match="non-negative"):
        tl.from_file(path, size=-1)
    try:
        import torch
    except ImportError:
        return
    for shared, n, dt in ((False, 4, "float32"), (False, 8, "int16"), (True, 2, "float64")):
        want = torch.from_file(str(path), shared, n, dtype=getattr(torch, dt)).numpy()
        np.testing.assert_array_equal(tl.from_file(str(path), shared, n, dtype=getattr(tl, dt)).numpy(), want)


def test_is_distributed():
    assert tl.is_distributed(tl.zeros(2)) is False
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        tl.is_distributed(3)


def test_backend_queries_say_what_torchlite_lacks():
    assert tl.is_vulkan_available() is False and tl.cudnn_is_acceptable(tl.ones(2)) is False
    with pytest.raises(TypeError):
        tl.cudnn_is_acceptable([1.0])


def test_sym_constraints_check_concrete_sizes():
    assert tl.sym_constrain_range(5, min=0, max=10) is None
    assert tl.sym_constrain_range_for_size(tl.tensor(3), max=3) is None     # a size tensor
    with pytest.raises(RuntimeError, match=r"Invalid value range for 5 between \[6, 9223372036854775807\]"):
        tl.sym_constrain_range(5, min=6)
    with pytest.raises(RuntimeError, match=r"for -1 between \[0, "):
        tl.sym_constrain_range_for_size(-1)
    with pytest.raises(TypeError):
        tl.sym_constrain_range(2.5)
    assert tl.sym_fresh_size(7) == 7


def test_sym_helpers_follow_pytorchs_rules():
    assert tl.sym_max(2, 3) == 3 and type(tl.sym_max(2, 3)) is int
    assert tl.sym_max(1, 1.0) == 1.0 and type(tl.sym_max(1, 1.0)) is float
    assert tl.sym_min(2, 3.5) == 2.0 and type(tl.sym_min(2, 3.5)) is float
    assert tl.sym_max(np.int64(3), 2) == 3
    assert tl.sym_int(-3.7) == -3 and tl.sym_int(True) == 1 and tl.sym_float(3) == 3.0
    assert tl.sym_not(0) is True and tl.sym_sqrt(4) == 2.0
    assert tl.sym_sum([1, 2, 3]) == 6 and tl.sym_sum(1, 2.5) == 3.5 and tl.sym_sum([]) == 0
    assert tl.sym_ite(True, 1, 2) == 1 and tl.sym_ite(False, 1, 2) == 2
    with pytest.raises(AssertionError):
        tl.sym_max("a", 1)
    with pytest.raises(AssertionError):
        tl.sym_ite(1, 2, 3)                 # the condition must be a bool
    with pytest.raises(AssertionError):
        tl.sym_ite(True, 2, 3.0)            # the two values must share a type
    try:
        import torch
    except ImportError:
        return
    for name, args in (("sym_max", (2, 3.5)), ("sym_min", (4, 1)), ("sym_int", (-2.5,)),
                       ("sym_float", (7,)), ("sym_not", (1,)), ("sym_sqrt", (2,)), ("sym_sum", ([1, 2.5],)),
                       ("sym_ite", (False, "a", "b"))):
        want, got = getattr(torch, name)(*args), getattr(tl, name)(*args)
        assert got == want and type(got) is type(want), name
    for name, args, kwargs in (("sym_constrain_range", (5,), dict(min=6)), ("sym_constrain_range", (5,), dict(max=4)),
                               ("sym_constrain_range_for_size", (-1,), {}),
                               ("sym_constrain_range_for_size", (1,), dict(min=2, max=3))):
        with pytest.raises(RuntimeError) as want:
            getattr(torch, name)(*args, **kwargs)
        with pytest.raises(RuntimeError) as got:
            getattr(tl, name)(*args, **kwargs)
        assert str(got.value) == str(want.value), name


def test_symbolic_number_types_and_future():
    """torchlite has no symbolic numbers: SymInt/SymFloat/SymBool exist for isinstance checks,
    nothing is one, and constructing one raises; torchlite.Future is torchlite.futures.Future."""
    assert not isinstance(3, tl.SymInt) and not isinstance(1.5, tl.SymFloat)
    assert not isinstance(tl.ones(2).shape[0], tl.SymInt)
    for cls in (tl.SymInt, tl.SymFloat, tl.SymBool):
        with pytest.raises(TypeError, match="no symbolic numbers"):
            cls(1)
    assert tl.Future is tl.futures.Future
    fut = tl.Future()
    fut.set_result(5)
    assert fut.wait() == 5


def test_types_module_aliases():
    """torchlite.types: the aliases PyTorch code annotates with resolve, and the isinstance
    forms work."""
    import typing
    from torchlite import types as T
    assert isinstance(3, T._Number) and isinstance(2.5, T._Number) and not isinstance("3", T._Number)
    assert isinstance(tl.FloatStorage(2), T.Storage) and isinstance(tl.ones(1).untyped_storage(), T.Storage)
    assert set(typing.get_args(T.Number)) == {int, float, bool}
    assert tl.device in typing.get_args(T.Device) and T._dtype is tl.dtype and T.Tensor is tl.Tensor
