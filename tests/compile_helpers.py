"""What the torchlite.compile test files share: a fresh compiler state around each test and
the fused kernels a compiled callable holds."""
import pytest

import torchlite as tl
import torchlite._dynamo as dynamo
import torchlite.nn.functional as F


@pytest.fixture(autouse=True)
def fresh_compiler():
    """Every test starts and ends with no compiled graphs (imported by a test module, it
    applies to each of its tests)."""
    dynamo.reset()
    yield
    dynamo.reset()


def kernels_of(compiled):
    """The fused kernels of every graph a compiled callable (or OptimizedModule) holds."""
    c = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    entries = list(c.cache.values()) + list(getattr(c, "dynamic_cache", {}).values())
    return [k for e in entries for k in getattr(e, "kernels", [])]


def check_one_instruction_activation(fn, seed, scale=1.0):
    """fn (an activation that is one kernel op) compiled inside fn(t * v) + 1.0 is one
    instruction of a three-instruction kernel, and its forward and backward equal eager's to
    the bit."""
    import numpy as np
    dynamo.reset()
    g = tl.Generator().manual_seed(seed)
    x, w, gy = tl.randn(64, 48, generator=g) * scale, tl.randn(48, generator=g), tl.randn(64, 48, generator=g)

    def f(t, v):
        return fn(t * v) + 1.0
    c = tl.compile(f)
    xc, xe = x.detach().requires_grad_(), x.detach().requires_grad_()
    yc, ye = c(xc, w), f(xe, w)
    (k,) = kernels_of(c)
    assert k.program.num_instructions == 3          # mul, the activation, add
    np.testing.assert_array_equal(yc.detach().numpy(), ye.detach().numpy())
    yc.backward(gy)
    ye.backward(gy)
    np.testing.assert_array_equal(xc.grad.numpy(), xe.grad.numpy())
    dynamo.reset()


# ---- random graphs (the hypothesis tests of test_compile.py and test_compile_rows.py) ------
UNARY = ["neg", "abs", "exp", "tanh", "sigmoid", "sin", "cos", "relu", "square", "erf", "atan",
         "softsign"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "where_gt", "hypot", "atan2"]


def apply_unary(name, a):
    """Unary op `name` (of UNARY, or of test_compile_cpp.py's list) on a."""
    if name == "softsign":
        return a / (a.abs() + 1)
    if name == "log_abs1":
        return tl.log(a.abs() + 1)
    if name in ("relu", "gelu", "silu"):
        return getattr(F, name)(a)
    if name == "clamp":
        return a.clamp(-1.5, 0.75)
    return getattr(a, name)()


def apply_binary(name, a, b):
    """Binary op `name` (of BINARY, or of test_compile_cpp.py's list) on a and b."""
    if name == "add":
        return a + b
    if name == "sub":
        return a - b
    if name == "mul":
        return a * b
    if name == "div_away":
        return a / (b.abs() + 0.25)           # away from 0: no quotient of a rounding error
    if name == "where_gt":
        return tl.where(a > b, a, b * 0.5)
    if name == "gt_float":
        return (a > b).to(a.dtype) * a
    if name == "le_float":
        return (a <= b).to(b.dtype) - b
    return getattr(tl, name)(a, b)


def random_input(layout, shape, g, dtype):
    """An input of `shape` in a layout: full, broadcast from its trailing dims, 0-dim, or
    a transposed view."""
    if layout == "bcast" and len(shape) > 1:
        return tl.randn(*shape[1:], generator=g, dtype=dtype)
    if layout == "scalar":
        return tl.randn((), generator=g, dtype=dtype)
    if layout == "t" and len(shape) >= 2:
        return tl.randn(*reversed(shape), generator=g, dtype=dtype).permute(
            *reversed(range(len(shape))))
    return tl.randn(*shape, generator=g, dtype=dtype)


def random_graphs(unary, binary, shapes, layouts, max_steps):
    """A hypothesis strategy of random elementwise graphs: (n_inputs, steps, shape, layouts),
    1-4 inputs, 1-max_steps steps ("u", op, operand) or ("b", op, operand, operand) naming
    earlier values by index (mod their count), a shape from `shapes` and one layout from
    `layouts` per input (random_input's or the caller's names).  graph_fn runs one."""
    from hypothesis import strategies as st

    @st.composite
    def graphs(draw):
        n_inputs = draw(st.integers(1, 4))
        steps = []
        for _ in range(draw(st.integers(1, max_steps))):
            if draw(st.booleans()):
                steps.append(("u", draw(st.sampled_from(unary)), draw(st.integers(0, 50))))
            else:
                steps.append(("b", draw(st.sampled_from(binary)), draw(st.integers(0, 50)),
                              draw(st.integers(0, 50))))
        shape = draw(st.sampled_from(shapes))
        return n_inputs, steps, shape, [draw(st.sampled_from(layouts)) for _ in range(n_inputs)]
    return graphs()


def graph_fn(steps):
    """The function of a random_graphs graph: each step applied to earlier values, the result
    the last value times 1.5 plus the one before it."""
    def f(*xs):
        vals = list(xs)
        for s in steps:
            if s[0] == "u":
                vals.append(apply_unary(s[1], vals[s[2] % len(vals)]))
            else:
                vals.append(apply_binary(s[1], vals[s[2] % len(vals)], vals[s[3] % len(vals)]))
        return vals[-1] * 1.5 + vals[-2 if len(vals) > 1 else -1]
    return f
