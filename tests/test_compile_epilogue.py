"""torchlite.compile's epilogue fusion (options={"epilogue_fusion": True}): a fused elementwise
kernel reading a matrix product's result (F.linear, mm, 2-D @) runs on each tile of the
product as the GEMM finishes it (torchlite/compiler/_epilogue.py, _core/matmul.pyx's
mm_epilogue, _core/fused.pyx's Epilogue).  Oracle: eager torchlite on an identical copy of
the model (load_state_dict), the same seed before each call so dropout draws the same masks;
outputs and gradients are compared to the bit.  Whether the fused GEMM ran is seen by
counting the calls of mm_epilogue."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.compiler._epilogue as E
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite._dispatch import matmul as _real_mm
from compile_helpers import fresh_compiler  # noqa: F401

ON = {"epilogue_fusion": True}

def expect_fused(ok, bug=None):
    """Assert that a fold that should have happened did (bug: what it would mean if not)."""
    assert ok, bug or "the product was not folded into its kernel"


class _Counter:
    """Stands in for the module E._mm: counts mm_epilogue calls and the results it refuses."""

    def __init__(self):
        self.calls = 0
        self.refused = 0

    def mm_epilogue(self, *args):
        self.calls += 1
        res = _real_mm.mm_epilogue(*args)
        self.refused += res is None
        return res


@pytest.fixture
def counter(monkeypatch):
    c = _Counter()
    monkeypatch.setattr(E, "_mm", c)
    return c


def epilogues_of(compiled):
    """The MatmulEpilogue calls of every graph a compiled callable (or OptimizedModule) holds."""
    c = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    return [n.target for e in c.cache.values() for n in getattr(getattr(e, "graph", None), "nodes", ())
            if isinstance(n.target, E.MatmulEpilogue)]


def graph_code(compiled):
    c = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    return "\n".join(e.graph.python_code("self").src for e in c.cache.values() if hasattr(e, "graph"))


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b), strict=True)   # shapes and dtypes too


class MLP(nn.Module):
    """Linear -> GELU -> *2+1 -> dropout -> Linear, plus the residual."""

    def __init__(self, d, h, p=0.1):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x)) * 2 + 1)) + x


def twin_models(d, h, dtype, seed=0):
    tl.manual_seed(seed)
    eager = MLP(d, h).to(dtype)
    other = MLP(d, h).to(dtype)
    other.load_state_dict(eager.state_dict())
    return eager, other


def train_and_compare(eager, model, compiled, x, steps=3, seed=100):
    """`steps` SGD steps of eager and compiled (on `model`, eager's copy): the outputs, the
    input's gradient, every parameter's gradient and the parameters after the step equal
    eager's to the bit."""
    oe = tl.optim.SGD(eager.parameters(), lr=0.01)
    oc = tl.optim.SGD(model.parameters(), lr=0.01)
    g = tl.Generator().manual_seed(seed)
    for step in range(steps):
        xe = x.detach().requires_grad_()
        xc = x.detach().requires_grad_()
        seedg = tl.randn(*x.shape, generator=g, dtype=x.dtype)
        tl.manual_seed(seed + step)
        ye = eager(xe)
        after_eager = tl.rand(3)
        tl.manual_seed(seed + step)
        yc = compiled(xc)
        after_compiled = tl.rand(3)
        same(yc.detach().numpy(), ye.detach().numpy())
        same(after_compiled.numpy(), after_eager.numpy())
        oe.zero_grad()
        oc.zero_grad()
        ye.backward(seedg)
        yc.backward(seedg)
        same(xc.grad.numpy(), xe.grad.numpy())
        for (name, pe), (_, pc) in zip(eager.named_parameters(), model.named_parameters()):
            assert pc.grad is not None, name
            same(pc.grad.numpy(), pe.grad.numpy())
        oe.step()
        oc.step()
        for pe, pc in zip(eager.parameters(), model.parameters()):
            same(pc.detach().numpy(), pe.detach().numpy())


CASES = {                           # name: (input shape, hidden width h = fc1's columns)
    "2d": ((64, 512), 256),
    "3d": ((4, 37, 512), 256),
    "one_row": ((1, 512), 256),
    "wide": ((64, 512), 1000),      # wider than the GEMM's column block: per-row epilogue
    "narrow": ((64, 512), 300),     # one column block: the block merged into one run
}


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
@pytest.mark.parametrize("case", list(CASES))
def test_mlp_block_trains_as_eager(case, dtype, counter):
    shape, h = CASES[case]
    eager, model = twin_models(shape[-1], h, dtype)
    compiled = tl.compile(model, options=ON)
    x = tl.randn(*shape, dtype=dtype)
    train_and_compare(eager, model, compiled, x)
    assert counter.refused == 0
    # fc2's residual add: a one-op kernel folded into fc2's GEMM, run fused on each step
    forms = [e.form for e in epilogues_of(compiled)]
    expect_fused("linear" in forms and counter.calls >= 3 and "_after_linear" in graph_code(compiled))
    # fc1's kernel (gelu, *2+1, the dropout's mask) folded into fc1's GEMM too
    expect_fused(forms == ["linear", "linear"] and counter.calls == 2 * 3, "dropout")


def test_mlp_block_matches_numpy(counter):
    """The compiled block (eval mode) against NumPy in float64."""
    from math import erf
    _, model = twin_models(32, 48, tl.float64)
    model.eval()
    c = tl.compile(model, options=ON)
    x = tl.randn(10, 32, dtype=tl.float64)
    w1, b1 = model.fc1.weight.detach().numpy(), model.fc1.bias.detach().numpy()
    w2, b2 = model.fc2.weight.detach().numpy(), model.fc2.bias.detach().numpy()
    xn = x.numpy()
    hn = xn @ w1.T + b1
    hn = hn * 0.5 * (1 + np.vectorize(erf)(hn / np.sqrt(2))) * 2 + 1
    np.testing.assert_allclose(c(x).detach().numpy(), hn @ w2.T + b2 + xn, rtol=1e-12, atol=1e-12)
    expect_fused(len(epilogues_of(c)) == 2 and counter.calls == 2)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_eval_and_no_grad_inference(dtype, counter):
    eager, model = twin_models(512, 300, dtype)
    eager.eval()
    model.eval()
    for shape in [(64, 512), (4, 37, 512), (1, 512)]:
        tl._dynamo.reset()              # static graphs (test_dynamic_shapes has the dynamic ones)
        c = tl.compile(model, options=ON)
        x = tl.randn(*shape, dtype=dtype)
        same(c(x).detach().numpy(), eager(x).detach().numpy())
        with tl.no_grad():
            yc = c(x)
            ye = eager(x)
        assert not yc.requires_grad
        same(yc.numpy(), ye.numpy())
    assert tl.is_grad_enabled() and counter.refused == 0
    # no dropout in eval mode: both kernels folded, each call running 2 fused GEMMs
    expect_fused(counter.calls == 3 * 2 * 2)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_non_contiguous_3d_input_falls_back(dtype, counter):
    """A transposed 3-D input: F.linear cannot fold it into one product, so the product and
    the kernel run apart (and the residual add, reading the non-contiguous input, cannot be
    viewed as a matrix either); the answers are still eager's."""
    eager, model = twin_models(512, 256, dtype)
    compiled = tl.compile(model, options=ON)
    x = tl.randn(37, 4, 512, dtype=dtype).transpose(0, 1)
    assert not x.is_contiguous()
    train_and_compare(eager, model, compiled, x, steps=2)
    assert counter.calls == 0                       # not run fused ...
    expect_fused(len(epilogues_of(compiled)) >= 1)  # ... though folded in the graph


def test_linear_inputs_of_other_layouts(counter):
    """A transposed 2-D input (strided operand of the GEMM), a 4-D non-contiguous input (F.linear
    copies it into one product) and a 3-D input with kernel inputs broadcast along its rows."""
    tl.manual_seed(0)
    lin = nn.Linear(24, 40)
    v = tl.randn(40)

    def f(x):
        return F.gelu(lin(x)) * v + 1
    g = tl.Generator().manual_seed(1)
    xs = [tl.randn(24, 9, generator=g).t(), tl.randn(3, 5, 6, 24, generator=g).transpose(1, 2),
          tl.randn(3, 7, 24, generator=g)]
    for x in xs:
        tl._dynamo.reset()
        c = tl.compile(f, options=ON)
        xe, xc = x.detach().requires_grad_(), x.detach().requires_grad_()
        ye, yc = f(xe), c(xc)
        same(yc.detach().numpy(), ye.detach().numpy())
        s = tl.randn(*ye.shape, generator=g)
        we = tl.autograd.grad(ye, [xe, lin.weight, lin.bias], s)
        wc = tl.autograd.grad(yc, [xc, lin.weight, lin.bias], s)
        for a, b in zip(wc, we):
            same(a.numpy(), b.numpy())
    assert counter.refused == 0
    expect_fused(counter.calls == len(xs))


def test_float16_is_not_fused(counter):
    """float16 products are left alone: the kernel runs after the product, as without the
    option."""
    tl.manual_seed(0)
    lin = nn.Linear(64, 40).to(tl.float16)

    def f(x):
        return F.gelu(lin(x)) * 2 + 1
    x = tl.randn(16, 64).to(tl.float16)
    on, off = tl.compile(f, options=ON), tl.compile(f)
    got, plain = on(x), off(x)
    assert got.dtype == tl.float16
    same(got.detach().float().numpy(), plain.detach().float().numpy())
    np.testing.assert_allclose(got.detach().float().numpy(), f(x).detach().float().numpy(),
                               rtol=1e-2, atol=1e-2)
    assert counter.calls == 0 and not epilogues_of(on)


def test_option_off_by_default(counter):
    eager, model = twin_models(512, 256, tl.float32)
    compiled = tl.compile(model)
    train_and_compare(eager, model, compiled, tl.randn(8, 512), steps=1)
    compiled2 = tl.compile(lambda x, w: F.gelu(x @ w) + 1, options={"fusion": True})
    x, w = tl.randn(8, 16), tl.randn(16, 24)
    same(compiled2(x, w).numpy(), (F.gelu(x @ w) + 1).numpy())
    assert counter.calls == 0
    assert not epilogues_of(compiled) and not epilogues_of(compiled2)
    assert "_after_" not in graph_code(compiled)


def test_product_under_no_grad_inside_the_model(counter):
    """The no_grad switch between the product and the kernel keeps them apart (the kernel
    reads the product outside no_grad): x.grad is the residual's ones only."""
    lin = nn.Linear(3, 3)

    def g(x):
        with tl.no_grad():
            y = lin(x)
        return y * 2 + x
    x = tl.randn(2, 3, requires_grad=True)
    c = tl.compile(g, options=ON)
    out = c(x)
    same(out.detach().numpy(), g(x).detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 3)))
    assert lin.weight.grad is None and tl.is_grad_enabled()
    assert counter.calls == 0 and not epilogues_of(c)


def test_product_and_kernel_both_under_no_grad(counter):
    """The product and its kernel inside the no_grad block: folded, and nothing recorded."""
    lin = nn.Linear(16, 16)

    def g(x):
        with tl.no_grad():
            y = F.gelu(lin(x)) * 2
        return y + x * 3
    x = tl.randn(8, 16, requires_grad=True)
    c = tl.compile(g, options=ON)
    out = c(x)
    same(out.detach().numpy(), g(x).detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((8, 16), 3.0))
    assert lin.weight.grad is None and tl.is_grad_enabled()
    expect_fused(counter.calls == 1 and len(epilogues_of(c)) == 1)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_mm_forms(dtype, counter):
    """x @ w, torchlite.mm, x.mm(w), torchlite.matmul: the product a kernel reads is folded
    into it; values and gradients are eager's."""
    fns = [
        lambda x, w: F.gelu(x @ w) + F.relu(tl.mm(x, w)) * 2,
        lambda x, w: x.mm(w).tanh() * 3 - 1,
        lambda x, w: tl.matmul(x, w).sigmoid() * x[:, :1],     # a broadcast kernel input
        lambda x, w: (x @ w) + 1.5,                            # one op after the product
    ]
    g = tl.Generator().manual_seed(3)
    folded = []
    for f in fns:
        x = tl.randn(33, 70, generator=g, dtype=dtype)
        w = tl.randn(70, 50, generator=g, dtype=dtype)
        seed = tl.randn(33, 50, generator=g, dtype=dtype)
        before = counter.calls
        c = tl.compile(f, options=ON)
        xe, we = x.detach().requires_grad_(), w.detach().requires_grad_()
        xc, wc = x.detach().requires_grad_(), w.detach().requires_grad_()
        ye, yc = f(xe, we), c(xc, wc)
        same(yc.detach().numpy(), ye.detach().numpy())
        ye.backward(seed)
        yc.backward(seed)
        same(xc.grad.numpy(), xe.grad.numpy())
        same(wc.grad.numpy(), we.grad.numpy())
        eps = epilogues_of(c)
        folded.append(len(eps) == 1 and eps[0].form == "mm" and counter.calls - before == 1
                      and "_after_mm" in graph_code(c))
        with tl.no_grad():                  # a second graph (grad mode is in the guards)
            same(c(x, w).numpy(), f(x, w).numpy())
    assert counter.refused == 0
    expect_fused(all(folded))


def test_mm_forms_match_numpy(counter):
    g = tl.Generator().manual_seed(4)
    x, w = tl.randn(20, 30, generator=g, dtype=tl.float64), tl.randn(30, 40, generator=g, dtype=tl.float64)
    c = tl.compile(lambda x, w: F.relu(x @ w) * 2 + 1, options=ON)
    np.testing.assert_allclose(c(x, w).numpy(), np.maximum(x.numpy() @ w.numpy(), 0) * 2 + 1,
                               rtol=1e-12, atol=1e-12)
    expect_fused(len(epilogues_of(c)) == 1 and counter.calls == 1)


def test_row_ops_are_not_folded(counter):
    """Kernels with row instructions (softmax, a mean over the last dim) keep the product
    apart; the answers are those of the graph without the option, and eager's."""
    tl.manual_seed(0)
    lin = nn.Linear(40, 30)
    fns = [lambda x: F.softmax(lin(x), -1) * 2,
           lambda x: F.log_softmax(lin(x), dim=-1) + 1,
           lambda x: (lin(x) * 2).mean(-1, keepdim=True) + x[:, :1]]
    g = tl.Generator().manual_seed(2)
    for f in fns:
        x = tl.randn(12, 40, generator=g)
        c, off = tl.compile(f, options=ON), tl.compile(f)
        outs = []
        for fn in (c, off, f):
            xi = x.detach().requires_grad_()
            y = fn(xi)
            y.backward(tl.ones(*y.shape))
            outs.append((y.detach().numpy(), xi.grad.numpy()))
        for a, b in zip(outs[0], outs[1]):
            same(a, b)
        for a, b in zip(outs[0], outs[2]):          # the mean's backward: eager's to an ulp
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        assert not epilogues_of(c)
    assert counter.calls == 0


def test_product_read_twice_is_not_folded(counter):
    def f(x, w):
        h = x @ w
        return F.gelu(h) * 2, h
    x, w = tl.randn(8, 16), tl.randn(16, 24)
    c = tl.compile(f, options=ON)
    for a, b in zip(c(x, w), f(x, w)):
        same(a.numpy(), b.numpy())
    assert counter.calls == 0 and not epilogues_of(c)


def test_kernels_of_other_output_dtypes(counter):
    """Kernels whose outputs are not the product's dtype (a comparison, a where of constants)."""
    g = tl.Generator().manual_seed(5)
    x, w = tl.randn(17, 30, generator=g), tl.randn(30, 21, generator=g)
    fns = [lambda x, w: (x @ w) > 0, lambda x, w: tl.where(x @ w > 0, 1.0, 2.0),
           lambda x, w: (x @ w).clamp(min=0).int()]
    for f in fns:
        c = tl.compile(f, options=ON)
        a, b = c(x, w), f(x, w)
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        same(a.numpy(), b.numpy())
    assert counter.refused == 0


@pytest.mark.parametrize("dynamic", [True, None])
def test_dynamic_shapes(dynamic):
    """dynamic=True, or the automatic dynamic graph made after a size changes: each size's
    answer is eager's (shape included)."""
    tl.manual_seed(0)
    lin = nn.Linear(32, 32)

    def f(x):
        return lin(x) + x
    c = tl.compile(f, options=ON, dynamic=dynamic)
    g = tl.Generator().manual_seed(6)
    for n in (6, 1, 3, 9):
        x = tl.randn(n, 32, generator=g)
        y = c(x)
        assert tuple(y.shape) == (n, 32)
        same(y.detach().numpy(), f(x).detach().numpy())


@pytest.mark.parametrize("case", ["2d", "wide", "narrow"])
def test_thread_counts_agree(case, counter):
    """1 and 2 threads, training mode (dropout on): the same answers (eager's) to the bit."""
    shape, h = CASES[case]
    saved = tl.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            tl.set_num_threads(n)
            eager, model = twin_models(shape[-1], h, tl.float32)
            x = tl.randn(*shape, generator=tl.Generator().manual_seed(1))
            xe, xc = x.detach().requires_grad_(), x.detach().requires_grad_()
            c = tl.compile(model, options=ON)
            tl.manual_seed(7)
            y = c(xc)
            tl.manual_seed(7)
            ye = eager(xe)
            same(y.detach().numpy(), ye.detach().numpy())
            y.sum().backward()
            ye.sum().backward()
            same(xc.grad.numpy(), xe.grad.numpy())
            results.append([y.detach().numpy(), xc.grad.numpy()] + [p.grad.numpy() for p in model.parameters()])
            tl._dynamo.reset()
    finally:
        tl.set_num_threads(saved)
    assert tl.get_num_threads() == saved
    for a, b in zip(*results):
        same(a, b)
    assert counter.refused == 0
    expect_fused(counter.calls >= 2)                    # fc2's residual, on each thread count
    expect_fused(counter.calls == 2 * 2, "dropout")     # and fc1's kernel


def test_a_transposed_input_keeps_eager_memory_order(counter):
    """An elementwise input laid out column-major makes eager's result column-major; the fold,
    whose outputs are row-major, then runs the product and the kernel apart."""
    def f(a, b, c):
        return c + (a @ b) * 2
    g = tl.Generator().manual_seed(3)
    a, b, c = tl.randn(24, 16, generator=g), tl.randn(16, 32, generator=g), tl.randn(32, 24, generator=g).t()
    got, want = tl.compile(f, options=ON)(a, b, c), f(a, b, c)
    assert got.stride() == want.stride()
    same(got.numpy(), want.numpy())
    assert counter.calls == 0
    c2 = tl.randn(24, 32, generator=g)           # row-major: folded
    got2 = tl.compile(f, options=ON)(a, b, c2)
    same(got2.numpy(), f(a, b, c2).numpy())
    assert counter.calls == 1


def test_a_product_of_one_column(counter):
    """n = 1: each block of the product is one run down its column."""
    g = tl.Generator().manual_seed(4)
    x, w, b = tl.randn(5000, 16, generator=g), tl.randn(1, 16, generator=g), tl.randn(1, generator=g)

    def f(x):
        return F.gelu(F.linear(x, w, b)) * 2 + 1
    got = tl.compile(f, options=ON)(x)
    same(got.numpy(), f(x).numpy())
    assert counter.calls == 1
