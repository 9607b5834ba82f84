"""torchlite.compile's dropout: the mask drawn inside the fused kernel by its random
instruction (torchlite/_core/fused.pyx K_RANDOM, torchlite/compiler/_random.py), from the
stream eager dropout draws from.  Oracle: eager torchlite with the same seed (the same masks
to the bit, the generator at the same place afterwards) and eager bernoulli_."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite._core import elementwise as ew
from torchlite._core import random as R
from torchlite._core.fused import Program
from torchlite._tensor import _wrap
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401

RANDOM = 6
F32, F64, I64 = 8, 9, 5


def random_kernels(compiled):
    return [k for k in kernels_of(compiled) if any(i[0] == RANDOM for i in k.spec.instrs)]


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("shape", [(1000,), (7, 100), (3, 5000), (33, 65, 3), (64, 64)])
def test_the_random_instruction_draws_what_bernoulli_draws(dt, shape):
    """Element i of the kernel's output is element i of eager bernoulli_'s request, for any
    tiling (row tiles of long rows, flat tiles of short ones, tiles not on group edges)."""
    g = tl.Generator().manual_seed(11)
    tl.empty(123).bernoulli_(0.5, generator=g)          # the stream is not at its start
    seed, base = g.initial_seed(), g.offset
    dtype = tl.float32 if dt == F32 else tl.float64
    want = tl.empty(*shape, dtype=dtype).bernoulli_(0.35, generator=g).numpy()
    p = Program("mask", [I64, I64, dt], [], 1, [dt], [
        (RANDOM, 0, dt, ((2, 0, dt), (0, 0, I64), (0, 1, I64)), (0.35,)),
        (1, ew.BINARY["mul"], dt, ((3, 0, dt), (2, 0, dt), (0, 2, dt)), ()),
    ])
    ones = tl.ones(*shape, dtype=dtype)
    got = _wrap(p.run((tl.tensor(seed)._data, tl.tensor(base)._data, ones._data), shape)[0])
    np.testing.assert_array_equal(got.numpy(), want)
    direct = tl.empty(*shape, dtype=dtype)
    R.fill_bernoulli_at(direct._data, seed, base, 0.35)
    np.testing.assert_array_equal(direct.numpy(), want)


def test_bad_random_instructions_are_rejected():
    for ins in [(RANDOM, 1, F32, ((3, 0, F32), (0, 0, I64), (0, 1, I64)), (0.5,)),   # no op 1
                (RANDOM, 0, F32, ((3, 0, F32), (0, 0, F32), (0, 1, I64)), (0.5,)),   # seed float
                (RANDOM, 0, F32, ((3, 0, F32), (0, 0, I64), (0, 1, I64)), (1.5,)),   # p > 1
                (RANDOM, 0, I64, ((3, 0, I64), (0, 0, I64), (0, 1, I64)), (0.5,))]:  # int mask
        with pytest.raises(ValueError):
            Program("bad", [I64, I64], [], 0, [ins[2]], [ins])


class Block(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.fc = nn.Linear(16, 40)
        self.drop = nn.Dropout(p)

    def forward(self, x, r):
        return r + self.drop(F.gelu(self.fc(x)))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_compiled_dropout_draws_eager_masks_and_fuses(dtype):
    tl.manual_seed(0)
    m = Block().to(dtype)
    c = tl.compile(m)
    x = tl.randn(7, 16, dtype=dtype, requires_grad=True)        # 280 elements: not whole
    r = tl.randn(7, 40, dtype=dtype, requires_grad=True)        # groups of 64
    leaves = [x, r] + list(m.parameters())
    for step in range(3):
        tl.manual_seed(100 + step)
        want = m(x, r)
        after_eager = tl.rand(4)
        tl.manual_seed(100 + step)
        got = c(x, r)
        after_compiled = tl.rand(4)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(after_compiled.numpy(), after_eager.numpy())
        seed = tl.randn(7, 40, dtype=dtype)
        tol = 1e-5 if dtype == tl.float32 else 1e-12
        for a, b in zip(tl.autograd.grad(got, leaves, seed), tl.autograd.grad(want, leaves, seed)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
    # the gelu, the mask, the scaling, the multiply and the residual add: one kernel
    (k,) = random_kernels(c)
    assert len(kernels_of(c)) == 1 and k._backward.program is not None
    # about 30% of the elements dropped, the rest scaled by 1 / 0.7
    tl.manual_seed(5)
    out = c(tl.zeros(8, 16, dtype=dtype), tl.zeros(8, 40, dtype=dtype)).detach().numpy()
    ref = F.gelu(m.fc(tl.zeros(8, 16, dtype=dtype))).detach().numpy() / 0.7
    kept = np.isclose(out, ref)
    assert np.all(kept | (out == 0)) and 0.5 < kept.mean() < 0.9


def test_gradients_against_finite_differences_with_a_fixed_mask():
    """With the seed set before every call, the compiled function is a fixed function of its
    inputs, and its gradient is checked numerically."""
    tl.manual_seed(0)
    m = Block(0.5).double()
    c = tl.compile(m)
    x = tl.randn(4, 16, dtype=tl.float64, requires_grad=True)
    r = tl.randn(4, 40, dtype=tl.float64, requires_grad=True)

    def f(x, r):
        tl.manual_seed(3)
        return c(x, r)
    assert tl.autograd.gradcheck(f, (x, r))
    assert random_kernels(c)


def test_dropout_calls_that_stay_eager():
    """Eval mode, p = 0 or 1, in place, and dynamic shapes keep eager dropout (and its
    answers)."""
    x = tl.randn(6, 10)
    cases = [lambda x: F.dropout(x * 2, 0.4, training=False) + 1,
             lambda x: F.dropout(x * 2, 0.0) + 1,
             lambda x: F.dropout(x * 2, 1.0) + 1,
             lambda x: F.dropout(x * 2, 0.4, True, True) + 1]
    for fn in cases:
        c = tl.compile(fn)
        tl.manual_seed(1)
        want = fn(x)
        tl.manual_seed(1)
        got = c(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert not random_kernels(c)
    fn = lambda x: F.dropout(x * 2, 0.4) + 1      # noqa: E731
    c = tl.compile(fn, dynamic=True)
    for n in (3, 5):
        xs = tl.randn(n, 10)
        tl.manual_seed(2)
        want = fn(xs)
        tl.manual_seed(2)
        np.testing.assert_array_equal(c(xs).numpy(), want.numpy())


def test_the_transformer_lm_trains_as_eager_with_dropout_on():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
    from transformer_lm import TinyGPT
    tl.manual_seed(0)
    a, b = TinyGPT(20, 12, d_model=32, heads=4, layers=1), TinyGPT(20, 12, d_model=32, heads=4,
                                                                    layers=1)
    b.load_state_dict(a.state_dict())
    cb = tl.compile(b)
    oa, ob = tl.optim.AdamW(a.parameters(), lr=1e-2), tl.optim.AdamW(b.parameters(), lr=1e-2)
    codes, target = tl.randint(0, 20, (4, 12)), tl.randint(0, 20, (4, 12))
    for step in range(3):
        losses = []
        for model, opt in ((a, oa), (cb, ob)):
            tl.manual_seed(50 + step)
            opt.zero_grad()
            loss = F.cross_entropy(model(codes).reshape(-1, 20), target.reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-5, (step, losses)
    assert random_kernels(cb)
