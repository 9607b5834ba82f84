"""vmap against the loop on PyTorch's own sample inputs (op_db, through opinfo_harness): for
every op and its Tensor method, each of the first four float32 samples has its input batched
(three variants of it) and the other arguments unbatched; vmap's result must equal the
function called on each element.  No wrong answer is allowed; an op may only fail under
vmap where the loop works if it is listed below, with the reason.  Skipped without PyTorch
(the samples are PyTorch's)."""
import warnings

import numpy as np
import pytest

import torchlite as tl
from torchlite import func

# random ops: two calls give two results, so there is no loop to compare with
RANDOM = {"bernoulli", "multinomial", "normal", "poisson", "rand_like", "randn_like",
          "randint_like", "nn.functional.dropout", "nn.functional.dropout2d",
          "nn.functional.dropout3d", "nn.functional.alpha_dropout",
          "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "uniform",
          "exponential", "geometric", "cauchy", "log_normal", "randn", "rand", "randint",
          "randperm", "nn.functional.gumbel_softmax", "empty", "empty_like", "new_empty",
          "empty_strided", "new_empty_strided", "empty_permuted",
          "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
          "nn.functional.multi_head_attention_forward",
          "nn.functional.scaled_dot_product_attention"}
MAY_FAIL = {
    # the harness calls Tensor.__radd__(x, ...) and the like unbound: the batched tensor is
    # handed to the unwrapped operator, not through an expression vmap sees
    "__getitem__", "__radd__", "__rdiv__", "__rmatmul__", "__rmod__", "__rmul__", "__rpow__",
    "__rsub__", "cdouble", "cfloat",
    # private functions (vmap's door opens the public ones)
    "_segment_reduce.lengths", "_segment_reduce.offsets", "_unsafe_masked_index",
    "_unsafe_masked_index_put_accumulate",
    # a Python bool or a size that depends on the values: no batched answer (PyTorch's vmap
    # refuses them too)
    "allclose", "equal", "nonzero", "argwhere"}


def _cases(H, torch):
    for op in H.ops():
        full = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if op.name in RANDOM:
            continue
        for kind, _, lfn in H._variants(op):
            if lfn is None:
                continue
            try:
                samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:4]
            except Exception:
                continue
            for s in samples:
                yield full, kind, op, lfn, s


def test_vmap_matches_the_loop_on_op_db_samples():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    import opinfo_harness as H
    wrong, failed, checked = [], [], 0
    for full, kind, op, lfn, s in _cases(H, torch):
        try:
            inp = H.to_torchlite(s.input, requires_grad_from=False)
            args = H.to_torchlite(tuple(s.args), requires_grad_from=False)
            kwargs = H.to_torchlite(dict(s.kwargs), requires_grad_from=False)
        except Exception:
            continue
        if not isinstance(inp, tl.Tensor) or not inp.is_floating_point() or "out" in kwargs:
            continue
        other = inp.flip(list(range(inp.dim()))) if inp.dim() else -inp
        x = tl.stack([inp, inp * 0.5 + 0.25, other])
        if kind == "value":           # looked up when called, as user code does
            def f(xi, op=op):
                return H._torchlite_fn(op)(xi, *args, **kwargs)
        else:
            def f(xi, lfn=lfn):
                return lfn(xi, *args, **kwargs)
        try:
            ref = [f(x[i].clone()) for i in range(3)]
        except Exception:
            continue
        checked += 1
        try:
            got = func.vmap(f)(x.clone())
        except Exception as e:
            failed.append((full, kind, f"{type(e).__name__}: {e}"[:160]))
            continue
        got_leaves = tl.utils._pytree.tree_flatten(got)[0]
        ref_leaves = [tl.utils._pytree.tree_flatten(r)[0] for r in ref]
        for k, g in enumerate(got_leaves):
            if not isinstance(g, tl.Tensor) or not isinstance(ref_leaves[0][k], tl.Tensor):
                continue
            want = tl.stack([r[k] for r in ref_leaves])
            if tuple(g.shape) != tuple(want.shape):
                wrong.append((full, kind, f"shape {tuple(g.shape)} vs {tuple(want.shape)}"))
                break
            a, b = g.detach().double().numpy(), want.detach().double().numpy()
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
                wrong.append((full, kind, f"max |diff| {np.nanmax(np.abs(a - b)):.3g}"))
                break
    assert checked > 2500, checked
    assert not wrong, wrong
    unexpected = [f for f in failed if f[0] not in MAY_FAIL]
    assert not unexpected, unexpected


def test_vmap_of_modules_matches_the_loop_on_module_db_inputs():
    """Every torchlite.nn module of PyTorch's module_db (eval mode, not lazy, not random) on
    its first three forward inputs, the first input batched: vmap equals the loop, and no
    module fails under vmap where the loop works."""
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    import module_db_harness as M
    from torch.testing._internal.common_modules import module_db
    wrong, failed, checked = [], [], 0
    for info in module_db:
        name = info.module_cls.__name__
        cls = getattr(tl.nn, name, None)
        if cls is None or name in M.RANDOM_IN_TRAINING or info.is_lazy:
            continue
        try:
            inputs = list(info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                                  requires_grad=False, training=False))[:3]
        except Exception:
            continue
        for mi in inputs:
            ci, fi = mi.constructor_input, mi.forward_input
            try:
                largs = M._constructor_value(tuple(ci.args))
                lkw = M._constructor_value(dict(ci.kwargs))
                memo, seen = {}, {}
                fargs = M._forward_values(tuple(fi.args), memo, seen)
                fkw = M._forward_values(dict(fi.kwargs), memo, seen)
                tl.manual_seed(0)
                m = cls(*largs, **lkw).eval()
            except Exception:
                continue
            if not fargs or fkw or not isinstance(fargs[0], tl.Tensor) \
                    or not fargs[0].is_floating_point():
                continue
            x, rest = fargs[0], fargs[1:]
            batch = tl.stack([x, x * 0.5 + 0.1, -x])

            def f(xi, m=m, rest=rest):
                return m(xi, *rest)
            try:
                ref = [f(batch[i].clone()) for i in range(3)]
            except Exception:
                continue
            checked += 1
            try:
                got = func.vmap(f)(batch.clone())
            except Exception as e:
                failed.append((name, f"{type(e).__name__}: {e}"[:160]))
                continue
            got_leaves = tl.utils._pytree.tree_flatten(got)[0]
            ref_leaves = [tl.utils._pytree.tree_flatten(r)[0] for r in ref]
            for k, g in enumerate(got_leaves):
                if not isinstance(g, tl.Tensor):
                    continue
                want = tl.stack([r[k] for r in ref_leaves])
                if tuple(g.shape) != tuple(want.shape) or not np.allclose(
                        g.detach().double().numpy(), want.detach().double().numpy(),
                        rtol=1e-4, atol=1e-5, equal_nan=True):
                    wrong.append((name, tuple(x.shape)))
                    break
    assert checked > 200, checked
    assert not wrong, wrong
    assert not failed, failed
