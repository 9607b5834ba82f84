"""The default device (set_default_device, `with torchlite.device(...)`), PyTorch's legacy
typed tensor classes (FloatTensor, LongTensor, ...) and the torchlite.functional module."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.functional as F

try:
    import torch
except ImportError:
    torch = None


@pytest.fixture
def restore_default_device():
    yield
    tl.set_default_device(None)


def test_default_device_is_the_cpu():
    assert tl.get_default_device() == tl.device("cpu")
    assert tl.zeros(2).device.type == "cpu"


def test_set_default_device_moves_factories(fake_cuda, restore_default_device):
    tl.set_default_device("cuda")
    assert tl.get_default_device() == tl.device("cuda")
    for t in (tl.zeros(2), tl.ones(2, 3), tl.empty(4), tl.full((2,), 3.0), tl.tensor([1, 2]),
              tl.arange(5), tl.linspace(0, 1, 4), tl.eye(3), tl.randn(3), tl.rand(2),
              tl.randint(0, 5, (3,)), tl.randperm(4)):
        assert t.device.type == "cuda", t
    cpu = tl.zeros(3, device="cpu")                 # an explicit device still wins
    assert cpu.device.type == "cpu"
    assert tl.zeros_like(cpu).device.type == "cpu"    # *_like keeps its input's device
    assert tl.randn_like(cpu).device.type == "cpu"
    tl.set_default_device("cpu")
    assert tl.zeros(2).device.type == "cpu"


def test_device_context_manager_nests(fake_cuda, restore_default_device):
    with tl.device("cuda"):
        assert tl.zeros(1).device.type == "cuda"
        with tl.device("cpu"):
            assert tl.zeros(1).device.type == "cpu"
        assert tl.ones(1).device.type == "cuda"
    assert tl.zeros(1).device.type == "cpu" and tl.get_default_device() == tl.device("cpu")


def test_legacy_constructors_and_isinstance():
    a = tl.FloatTensor(2, 3)
    assert a.shape == (2, 3) and a.dtype is tl.float32
    assert isinstance(a, tl.FloatTensor) and not isinstance(a, tl.LongTensor)
    b = tl.LongTensor([1, 2, 3])
    assert b.dtype is tl.int64 and b.tolist() == [1, 2, 3]
    assert tl.DoubleTensor([[1.5]]).dtype is tl.float64
    assert tl.BoolTensor(tl.Size([2])).shape == (2,)
    assert tl.FloatTensor().shape == (0,)
    assert isinstance(tl.zeros(2, dtype=tl.uint8), tl.ByteTensor)
    assert b.type() == "torchlite.LongTensor" and tl.zeros(1).type() == "torchlite.FloatTensor"
    assert b.type(tl.FloatTensor).dtype is tl.float32
    assert b.type("torch.DoubleTensor").dtype is tl.float64
    assert b.type(tl.float16).dtype is tl.float16
    with pytest.raises(TypeError):
        tl.FloatTensor(tl.ones(2, dtype=tl.int64))
    with pytest.raises(RuntimeError):
        tl.FloatTensor(2, device="cuda")


def test_functional_module():
    x = tl.arange(6)
    assert [t.tolist() for t in F.split(x, 4)] == [[0, 1, 2, 3], [4, 5]]
    assert F.einsum is tl.einsum and F.stft is tl.stft and F.norm is tl.norm
    A = np.array([[4.0, 3.0, 2.0], [6.0, 3.0, 1.0], [2.0, 5.0, 7.0]])
    LU, piv = F.lu(tl.tensor(A))
    LU2, piv2, info = F.lu(tl.tensor(A), get_infos=True)
    assert info.item() == 0 and piv.tolist() == piv2.tolist()
    lu = LU.numpy()
    L, U = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    rows = np.arange(3)
    for i, p in enumerate(piv.tolist()):         # LAPACK's 1-based row swaps, in order
        rows[[i, p - 1]] = rows[[p - 1, i]]
    np.testing.assert_allclose((L @ U), A[rows], atol=1e-12)
    if torch is not None:
        LUt, pivt = torch.functional.lu(torch.tensor(A))
        np.testing.assert_allclose(LU.numpy(), LUt.numpy())
        assert piv.tolist() == pivt.tolist()


def test_version_attributes_scripts_print():
    import re
    import torchlite.version as v
    assert v.__version__ == tl.__version__
    assert v.debug is False and v.hip is None
    assert v.cuda is None or re.fullmatch(r"\d+\.\d+", v.cuda), v.cuda
    assert v.git_version == "unknown" or re.fullmatch(r"[0-9a-f]{40}", v.git_version)
    with pytest.raises(AttributeError):
        v.no_such_thing


def test_swap_tensors_exchanges_contents_and_keeps_identities():
    import weakref
    import numpy as np
    lin = tl.nn.Linear(2, 2)
    held = lin.weight
    opt = tl.optim.SGD(lin.parameters(), lr=0.5)
    new = tl.nn.Parameter(tl.ones(2, 2))
    new.tag = "new"
    old_values = held.detach().numpy().copy()
    tl.utils.swap_tensors(lin.weight, new)
    assert lin.weight is held and held.tag == "new" and not hasattr(new, "tag")
    np.testing.assert_array_equal(held.detach().numpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(new.detach().numpy(), old_values)
    lin(tl.ones(1, 2)).sum().backward()
    opt.step()                                      # the optimizer updates the swapped-in data
    np.testing.assert_allclose(held.detach().numpy(), np.ones((2, 2)) - 0.5, rtol=1e-6)
    x = tl.ones(2, requires_grad=True)
    y = tl.zeros(3) * 2
    tl.utils.swap_tensors(x, y)
    assert tuple(x.shape) == (3,) and not x.requires_grad and y.requires_grad and y.is_leaf
    r = weakref.ref(x)
    with pytest.raises(RuntimeError, match="weakref"):
        tl.utils.swap_tensors(x, y)
    del r
    with pytest.raises(RuntimeError, match="nn.Parameter"):
        tl.utils.swap_tensors(tl.nn.Parameter(tl.ones(2)), tl.zeros(2))
    with pytest.raises(TypeError):
        tl.utils.swap_tensors(tl.ones(2), [1, 2])
