"""nn.Module, nn.Parameter and the containers: PyTorch's module-system semantics, one test each."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.modules import module as module_mod


class Net(nn.Module):
    """Two linear layers, a buffer and a non-persistent buffer."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.Identity()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("steps", tl.zeros(()))
        self.register_buffer("scratch", tl.ones(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _torch_repr(s):
    return s.replace("torchlite.", "torch.")


# ---- Parameter --------------------------------------------------------------------------------
def test_parameter_shares_data_and_is_leaf():
    t = tl.arange(6.0).reshape(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, tl.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    t[0, 0] = 100.0
    assert p[0, 0].item() == 100.0                    # same memory
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert tuple(nn.Parameter().shape) == (0,)
    with tl.no_grad():
        assert nn.Parameter(tl.zeros(2)).requires_grad  # no_grad does not change the default
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(tl.zeros(2, dtype=tl.int64))


def test_complex_parameter_trains():
    # PyTorch allows complex parameters; the gradient of sum |p|^2 is 2p (conjugate convention)
    z = np.array([1 + 2j, -0.5 + 0.25j], np.complex64)
    p = nn.Parameter(tl.tensor(z))
    assert p.requires_grad and p.dtype is tl.complex64
    (p.abs() ** 2).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * z, rtol=1e-6)


def test_parameter_ops_return_plain_tensors_and_grads_accumulate():
    p = nn.Parameter(tl.tensor([1.0, 2.0]))
    y = p * 3
    assert type(y) is tl.Tensor
    y.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 3.0])


def test_parameter_repr_matches_torch():
    torch = pytest.importorskip("torch")
    a = nn.Parameter(tl.tensor([[1.0, 2.5], [3.0, 4.0]]))
    b = torch.nn.Parameter(torch.tensor([[1.0, 2.5], [3.0, 4.0]]))
    assert repr(a) == repr(b)
    assert repr(nn.Parameter(tl.zeros(2), requires_grad=False)) == \
        repr(torch.nn.Parameter(torch.zeros(2), requires_grad=False))


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(tl.tensor([1.0, 2.0]))
    p.grad = tl.ones(2)
    p.tag = "kept"
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.grad is None and c.tag == "kept"
    c.data.add_(1)
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])   # a copy, not an alias
    q = pickle.loads(pickle.dumps(nn.Parameter(tl.tensor([5.0]), requires_grad=False)))
    assert type(q) is nn.Parameter and not q.requires_grad and q.item() == 5.0


def test_buffer_assignment_registers_it():
    m = nn.Module()
    m.b = nn.Buffer(tl.ones(2))
    m.nb = nn.Buffer(tl.zeros(1), persistent=False)
    assert set(m._buffers) == {"b", "nb"}
    assert list(m.state_dict()) == ["b"]


# ---- registration and lookup --------------------------------------------------------------------
def test_setattr_registers_parameters_modules_buffers():
    m = Net()
    assert list(m._parameters) == []
    assert list(m._modules) == ["fc1", "act", "fc2"]
    assert list(m._buffers) == ["steps", "scratch"]
    assert "fc1" not in m.__dict__ and m.fc1 is m._modules["fc1"]
    m.w = nn.Parameter(tl.zeros(1))
    assert m._parameters["w"] is m.w
    m.plain = tl.zeros(1)                    # a plain tensor is a plain attribute
    assert "plain" in m.__dict__ and "plain" not in m._buffers
    m.steps = tl.ones(())                    # reassigning a buffer keeps it a buffer
    assert m._buffers["steps"].item() == 1.0
    m.fc2.bias = None                        # a None parameter stays registered as None
    assert m.fc2._parameters["bias"] is None


def test_setattr_type_errors_and_replacement():
    m = Net()
    with pytest.raises(TypeError,
                       match="cannot assign 'torchlite.FloatTensor' as parameter 'weight'"):
        m.fc1.weight = tl.zeros(3, 4)
    with pytest.raises(TypeError, match="as child module 'fc1'"):
        m.fc1 = 3
    with pytest.raises(TypeError, match="as buffer 'steps'"):
        m.steps = 3
    m.fc1 = nn.Parameter(tl.zeros(1))        # a parameter replaces the module of that name
    assert "fc1" not in m._modules and "fc1" in m._parameters


def test_register_errors_like_torch():
    m = nn.Module()
    with pytest.raises(KeyError, match="name can.+t contain"):
        m.register_buffer("a.b", tl.zeros(1))
    with pytest.raises(KeyError, match="empty string"):
        m.register_parameter("", None)
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, None)
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_buffer("training", tl.zeros(1))
    with pytest.raises(TypeError, match="torch.nn.Parameter or None required"):
        m.register_parameter("p", tl.zeros(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    p = nn.Parameter(tl.ones(1))
    p.grad_fn = (nn.Parameter(tl.ones(1)) * 2).grad_fn     # a parameter with a history
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        m.register_parameter("q", p)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tl.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_delattr_and_getattr_error():
    m = Net()
    del m.fc1
    del m.steps
    assert "fc1" not in m._modules and "steps" not in m._buffers
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nothing'"):
        m.nothing


def test_get_submodule_parameter_buffer():
    outer = nn.Sequential(Net(), nn.Linear(2, 2))
    assert outer.get_submodule("0.fc1") is outer[0].fc1
    assert outer.get_submodule("") is outer
    assert outer.get_parameter("0.fc1.weight") is outer[0].fc1.weight
    assert outer.get_buffer("0.steps") is outer[0].steps
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        outer.get_submodule("0.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        outer.get_parameter("0.steps")
    with pytest.raises(AttributeError, match="is not a buffer"):
        outer.get_buffer("0.fc1.weight")
    outer.set_submodule("0.act", nn.Flatten())
    assert isinstance(outer[0].act, nn.Flatten)


# ---- iteration and naming ---------------------------------------------------------------------
def test_named_parameters_buffers_modules():
    m = nn.Sequential(OrderedDict([("body", Net()), ("head", nn.Linear(2, 1))]))
    assert [n for n, _ in m.named_parameters()] == \
        ["body.fc1.weight", "body.fc1.bias", "body.fc2.weight", "head.weight", "head.bias"]
    assert [n for n, _ in m.named_parameters(prefix="model")][0] == "model.body.fc1.weight"
    assert [n for n, _ in m.named_buffers()] == ["body.steps", "body.scratch"]
    assert list(m.named_parameters(recurse=False)) == []
    assert [n for n, _ in m.named_modules()] == ["", "body", "body.fc1", "body.act", "body.fc2",
                                                 "head"]
    assert [n for n, _ in m.named_children()] == ["body", "head"]
    assert len(list(m.modules())) == 6 and len(list(m.parameters())) == 5
    assert len(list(m.buffers())) == 2


def test_shared_modules_and_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    assert len(list(m.parameters())) == 2
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4
    assert len(list(m.modules())) == 2
    assert len(list(m.children())) == 1
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_dir_lists_registered_names():
    d = dir(Net())
    for name in ("fc1", "steps", "forward", "training"):
        assert name in d
    assert "0" not in dir(nn.Sequential(nn.Identity()))


# ---- state_dict -------------------------------------------------------------------------------
def test_state_dict_round_trip():
    a, b = Net(), Net()
    with tl.no_grad():
        a.steps.fill_(7)
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert all(not v.requires_grad for v in sd.values())           # detached
    assert sd["fc1.weight"].data_ptr() == a.fc1.weight.data_ptr()  # but not copied
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    w_before = b.fc1.weight
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    assert b.fc1.weight is w_before and b.fc1.weight.requires_grad     # copied in place
    for k, v in sd.items():
        np.testing.assert_array_equal(b.state_dict()[k].numpy(), v.numpy())
    assert sd._metadata[""] == {"version": 1}


def test_load_state_dict_strict_errors():
    m = Net()
    sd = m.state_dict()
    del sd["fc1.bias"]
    sd["fc3.weight"] = tl.zeros(1)
    sd["extra"] = tl.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "fc1.bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "fc3.weight", "extra". ' in msg
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias"]
    assert sorted(res.unexpected_keys) == ["extra", "fc3.weight"]


def test_load_state_dict_shape_mismatch_names_key_and_shapes():
    m = Net()
    sd = m.state_dict()
    sd["fc1.weight"] = tl.zeros(5, 4)
    before = m.fc1.weight.detach().clone()
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1\.weight: copying a param with "
                       r"shape torchlite\.Size\(\[5, 4\]\) from checkpoint, the shape in current "
                       r"model is torchlite\.Size\(\[3, 4\]\)\."):
        m.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(m.fc1.weight.detach().numpy(), before.numpy())
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_assign_and_dtype_cast():
    m = nn.Linear(2, 2)
    sd = {"weight": tl.ones(2, 2, dtype=tl.float64), "bias": tl.zeros(2, dtype=tl.float64)}
    m.load_state_dict(sd)                          # copy_: keeps the module's dtype
    assert m.weight.dtype == tl.float32 and m.weight.sum().item() == 4.0
    m.load_state_dict(sd, assign=True)            # assign: takes the tensors themselves
    assert isinstance(m.weight, nn.Parameter) and m.weight.dtype == tl.float64
    assert m.weight.requires_grad


def test_extra_state_round_trip():
    class WithExtra(nn.Linear):
        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"]

    a, b = WithExtra(1, 1), WithExtra(1, 1)
    a.note, b.note = "a", "b"
    sd = a.state_dict()
    assert sd["_extra_state"] == {"note": "a"}
    b.load_state_dict(sd)
    assert b.note == "a"


# ---- calling and hooks ------------------------------------------------------------------------
def test_forward_missing_raises():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required '
                                                  r'"forward" function'):
        nn.Module()(tl.zeros(1))


def test_forward_pre_hook_and_forward_hook():
    m = nn.Identity()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    assert m(tl.tensor(3.0)).item() == 7.0
    assert calls == ["first"]
    h1.remove()
    h2.remove()
    assert m(tl.tensor(3.0)).item() == 3.0
    with m.register_forward_pre_hook(lambda mod, args: tl.tensor(10.0)):   # single value
        assert m(tl.tensor(3.0)).item() == 10.0
    assert m(tl.tensor(3.0)).item() == 3.0


def test_hooks_with_kwargs_and_always_call():
    class Scale(nn.Module):
        def forward(self, x, *, k=1.0):
            if k < 0:
                raise ValueError("negative")
            return x * k

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kw: (args, {"k": kw.get("k", 1.0) * 10}),
                                with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kw, out: seen.append(kw["k"]), with_kwargs=True)
    assert m(tl.tensor(1.0), k=2.0).item() == 20.0
    assert seen == [20.0]
    always = []
    m.register_forward_hook(lambda mod, args, out: always.append(out), always_call=True)
    with pytest.raises(ValueError, match="negative"):
        m(tl.tensor(1.0), k=-1.0)
    assert always == [None]
    bad = Scale()
    bad.register_forward_pre_hook(lambda mod, args, kw: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        bad(tl.tensor(1.0))


def test_global_forward_hook():
    seen = []
    h = module_mod.register_module_forward_hook(lambda mod, args, out: seen.append(type(mod)))
    try:
        nn.Sequential(nn.Identity())(tl.zeros(1))
    finally:
        h.remove()
    nn.Identity()(tl.zeros(1))
    assert seen == [nn.Identity, nn.Sequential]


def test_full_backward_hook():
    lin = nn.Linear(3, 2)
    record = {}

    def hook(mod, grad_input, grad_output):
        record["gi"], record["go"] = grad_input, grad_output
        return (grad_input[0] * 0,)

    lin.register_full_backward_hook(hook)
    x = tl.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    assert record["go"][0].shape == (4, 2)
    np.testing.assert_allclose(record["go"][0].numpy(), np.ones((4, 2)))
    expected = np.ones((4, 2)) @ lin.weight.detach().numpy()
    np.testing.assert_allclose(record["gi"][0].numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((4, 3)))       # replaced by the hook
    np.testing.assert_allclose(lin.bias.grad.numpy(), [4.0, 4.0])


def test_backward_pre_hook_scales_output_grad():
    lin = nn.Linear(2, 1, bias=False)
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x = tl.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * lin.weight.detach().numpy(), rtol=1e-6)


# ---- modes, gradients, conversion -------------------------------------------------------------
def test_train_eval_recursive():
    m = nn.Sequential(Net(), nn.Linear(1, 1))
    assert m.training and m[0].fc1.training
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_zero_grad_and_requires_grad_():
    m = Net()
    m(tl.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())


def test_apply_visits_children_first():
    order = []
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Identity()))
    assert m.apply(lambda mod: order.append(type(mod).__name__)) is m
    assert order == ["Linear", "Identity", "Sequential", "Sequential"]


def test_to_dtype_keeps_parameter_identity():
    m = Net()
    m.register_buffer("count", tl.zeros(1, dtype=tl.int64))
    w = m.fc1.weight
    m(tl.randn(1, 4)).sum().backward()
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype == tl.float64 and w.grad.dtype == tl.float64
    assert m.steps.dtype == tl.float64 and m.count.dtype == tl.int64     # integers stay
    m.to(tl.float32)
    assert w.dtype == tl.float32
    m.to(dtype=tl.float16)
    assert w.dtype == tl.float16
    m.float()
    m.to("cpu")
    m.to(tl.zeros(1, dtype=tl.float64))
    assert w.dtype == tl.float64 and w.is_leaf and w.requires_grad
    m.bfloat16()
    assert w.dtype == tl.bfloat16
    m.half().float().cpu()
    assert w.dtype == tl.float32
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(tl.int32)


def test_cuda_without_a_usable_gpu_raises_clearly():
    if tl.cuda.is_available():
        pytest.skip("a GPU is available here (tested in the CUDA tests)")
    with pytest.raises(RuntimeError, match="CUDA"):
        nn.Linear(1, 1).cuda()
    with pytest.raises(RuntimeError, match="CUDA"):
        nn.Linear(1, 1).to("cuda")


def test_deepcopy_module():
    m = Net()
    m.fc1.weight.grad = tl.ones(3, 4)
    h = m.register_forward_hook(lambda mod, a, o: o * 0)
    c = copy.deepcopy(m)
    assert c.fc1.weight is not m.fc1.weight and isinstance(c.fc1.weight, nn.Parameter)
    for (k, v), (k2, v2) in zip(m.state_dict().items(), c.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(v.numpy(), v2.numpy())
    with tl.no_grad():
        c.fc1.weight.fill_(0)
    assert m.fc1.weight.abs().sum().item() > 0
    assert c(tl.ones(1, 4)).abs().sum().item() == 0          # hooks are copied too
    h.remove()
    assert len(c._forward_hooks) == 1
    shared = nn.Linear(1, 1)
    s = copy.deepcopy(nn.Sequential(shared, shared))
    assert s[0] is s[1]                                      # sharing survives


def test_pickle_module():
    m = Net()
    r = pickle.loads(pickle.dumps(m))
    x = tl.randn(2, 4)
    np.testing.assert_allclose(r(x).detach().numpy(), m(x).detach().numpy())
    assert list(r.state_dict()) == list(m.state_dict())


def test_init_rejects_arguments():
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        nn.Module(3)


# ---- repr -------------------------------------------------------------------------------------
def test_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(ns):
        class Block(ns.Module):
            def __init__(self):
                super().__init__()
                self.seq = ns.Sequential(ns.Linear(4, 3), ns.Flatten(), ns.Identity())
                self.layers = ns.ModuleList([ns.Linear(2, 2) for _ in range(3)]
                                            + [ns.Linear(2, 3, bias=False), ns.Linear(2, 2)])
                self.heads = ns.ModuleDict({"a": ns.Bilinear(2, 3, 4),
                                            "b": ns.Unflatten(1, (2, 2))})
                self.plist = ns.ParameterList([ns.Parameter(ns_t(ns).zeros(2, 3)),
                                               ns_t(ns).ones(1)])
                self.pdict = ns.ParameterDict({"w": ns.Parameter(ns_t(ns).zeros(4))})

            def extra_repr(self):
                return "custom=1\nsecond line"
        return Block()

    def ns_t(ns):
        return torch if ns is torch.nn else tl

    ours, theirs = repr(build(nn)), repr(build(torch.nn))
    assert _torch_repr(ours) == theirs
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    assert repr(nn.Sequential()) == repr(torch.nn.Sequential())


# ---- containers -------------------------------------------------------------------------------
def test_sequential_forward_and_ordered_dict():
    a, b = nn.Linear(3, 2), nn.Linear(2, 1)
    s = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    x = tl.randn(5, 3)
    np.testing.assert_allclose(s(x).detach().numpy(), b(a(x)).detach().numpy())
    assert s.first is a and list(s._modules) == ["first", "second"]


def test_sequential_indexing_slicing_mutation():
    mods = [nn.Linear(1, 1) for _ in range(4)]
    s = nn.Sequential(*mods)
    assert len(s) == 4 and s[0] is mods[0] and s[-1] is mods[3]
    sub = s[1:3]
    assert isinstance(sub, nn.Sequential) and list(sub) == mods[1:3]
    assert list(sub._modules) == ["1", "2"]                 # slices keep their keys
    with pytest.raises(IndexError, match="index 4 is out of range"):
        s[4]
    s[1] = nn.Identity()
    assert isinstance(s[1], nn.Identity)
    del s[1]
    assert list(s) == [mods[0], mods[2], mods[3]] and list(s._modules) == ["0", "1", "2"]
    s.append(mods[1])
    s.insert(0, nn.Flatten())
    assert isinstance(s[0], nn.Flatten) and len(s) == 5
    with pytest.raises(IndexError, match="Index out of range"):
        s.insert(10, nn.Identity())
    popped = s.pop(0)
    assert isinstance(popped, nn.Flatten) and len(s) == 4
    s.extend([nn.Identity(), nn.Identity()])
    assert len(s) == 6
    del s[::2]
    assert len(s) == 3 and list(s._modules) == ["0", "1", "2"]
    t = s + nn.Sequential(nn.Identity())
    assert len(t) == 4 and t[0] is s[0]
    with pytest.raises(ValueError, match="only objects of Sequential class"):
        s + nn.ModuleList()
    assert len(s * 2) == 6 and (s * 2)[3] is s[0]
    s += nn.Sequential(nn.Identity())
    assert len(s) == 4


def test_module_list():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.Identity()])
    assert len(ml) == 2 and isinstance(ml[-1], nn.Identity)
    ml.append(nn.Flatten())
    ml.extend([nn.Identity()])
    ml.insert(1, nn.Linear(2, 2))
    assert [type(m).__name__ for m in ml] == ["Linear", "Linear", "Identity", "Flatten",
                                             "Identity"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    assert isinstance(ml.pop(-1), nn.Identity) and len(ml) == 3
    ml[0] = nn.Identity()
    assert len(list(ml.parameters())) == 0
    assert len(ml + nn.ModuleList([nn.Identity()])) == 4
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(3)
    with pytest.raises(IndexError):
        ml[5]


def test_module_dict():
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Identity()
    md.update([("c", nn.Flatten())])
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert list(md.keys()) == ["a", "b", "c"]
    assert isinstance(md.pop("c"), nn.Flatten) and len(md) == 2
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([tl.zeros(2), nn.Parameter(tl.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl)      # tensors become Parameters
    pl.append(tl.zeros(1))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert len(pl[1:]) == 2
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()
    pd = nn.ParameterDict({"b": tl.zeros(1), "a": tl.ones(1)})
    assert list(pd) == ["a", "b"]                           # a plain dict is sorted, as torch
    pd["c"] = nn.Parameter(tl.zeros(2))
    assert isinstance(pd["a"], nn.Parameter) and "c" in pd and len(pd) == 3
    assert pd.get("zz") is None and pd.pop("a").item() == 1.0
    assert [n for n, _ in pd.named_parameters()] == ["b", "c"]
    merged = pd | nn.ParameterDict({"d": tl.zeros(1)})
    assert list(merged) == ["b", "c", "d"]
    with pytest.raises(TypeError, match="not a string"):
        pd[1]


def test_containers_state_dict_round_trip():
    m = nn.Sequential(nn.ModuleList([nn.Linear(2, 2)]), nn.ModuleDict({"x": nn.Linear(2, 1)}))
    m2 = copy.deepcopy(m)
    with tl.no_grad():
        for p in m2.parameters():
            p.zero_()
    m2.load_state_dict(m.state_dict())
    assert list(m2.state_dict()) == ["0.0.weight", "0.0.bias", "1.x.weight", "1.x.bias"]
    for a, b in zip(m.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_errors_inside_a_layer_name_the_layer():
    """Issue 4: a layer fed the wrong shape raises naming the layer and both shapes; the
    innermost torchlite layer is named once, containers and user modules are not."""
    import torchlite as tl
    from torchlite import nn
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU())
    with pytest.raises(RuntimeError) as e:
        m(tl.randn(64, 100))
    assert str(e.value) == ("Linear(in_features=784, out_features=512, bias=True): mat1 and mat2 "
                            "shapes cannot be multiplied (64x100 and 784x512)")

    class Mine(nn.Module):
        def forward(self, x):
            raise ValueError("my own message")
    with pytest.raises(ValueError, match="^my own message$"):
        nn.Sequential(Mine())(tl.randn(1))
    with pytest.raises(IndexError, match=r"^CrossEntropyLoss\(\): Target 10 is out of bounds"):
        nn.CrossEntropyLoss()(tl.randn(4, 10), tl.tensor([1, 2, 3, 10]))
