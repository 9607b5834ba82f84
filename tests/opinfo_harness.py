"""PyTorch's own sample inputs (torch.testing._internal's op_db OpInfos) run through torchlite
and through PyTorch, their results compared: values, shapes, dtypes and gradients.

Used by tests/test_opinfo.py (which checks that what passed keeps passing) and, as a script,
to list where torchlite stands:

    python tests/opinfo_harness.py [--ops REGEX] [--failures] [--write tests/opinfo_expected.txt]

Every outcome is one line "op[.variant]|dtype|kind|index outcome": kind is "value" (the
function on a sample), "method" (the Tensor method), "grad" (float64 gradients, through
the function, of a random projection of the outputs with respect to every input that
requires grad) or "error" (op_db's error inputs: torchlite must raise PyTorch's exception
type).  Outcomes: pass; missing (no such function in torchlite);
raised (PyTorch returned, torchlite raised); wrong (shape, dtype or values differ); skipped
(the sample holds something torchlite has no counterpart for, such as a CUDA device or a
torch.Generator).  Random ops (PyTorch gives two results for one input) are compared on shape
and dtype only.

The library never imports torch: only this harness does, and only where it is installed."""
import argparse
import math
import re
import sys
import warnings

import numpy as np

import torchlite as tl

# Values: torch.testing's default tolerances per dtype, loosened a little for float32 (the
# kernels sum in a different order); gradients in float64.
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-7, 1e-7)}
GRAD_TOL = (1e-6, 1e-6)

DTYPES = ("float32", "float64")

# ops whose result is uninitialised memory: compared on shape and dtype only
UNINITIALISED = {"empty", "new_empty", "empty_like", "empty_strided", "new_empty_strided",
                 "empty_permuted"}


class Unsupported(Exception):
    """The sample holds a value with no torchlite counterpart."""


def _torch():
    import torch
    return torch


def to_torchlite(x, requires_grad_from=True, memo=None):
    """x with every torch value replaced by torchlite's: tensors (values, dtype, requires_grad
    for float tensors), dtypes, sizes, devices.  Tensors that share a storage in x (an out=
    argument aliasing an input, say) share one in the result too; pass the same `memo` dict
    to calls whose results must share."""
    torch = _torch()
    memo = {} if memo is None else memo
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu" or x.layout != torch.strided or x.is_complex() \
                or x.dtype in (torch.complex32, torch.complex64, torch.complex128):
            raise Unsupported(f"tensor {x.dtype} {x.layout} on {x.device}")
        if x.is_conj() or x.is_neg():
            raise Unsupported("lazy conj/neg")
        d = x.detach()
        name = str(d.dtype).replace("torch.", "")
        if not hasattr(tl, name):
            raise Unsupported(f"dtype {name}")
        t = _tensor_like(d, memo)
        if requires_grad_from and x.requires_grad:
            t.requires_grad_()
        return t
    if isinstance(x, torch.dtype):
        name = str(x).replace("torch.", "")
        if not hasattr(tl, name):
            raise Unsupported(f"dtype {name}")
        return getattr(tl, name)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.device):
        if x.type != "cpu":
            raise Unsupported(f"device {x}")
        return "cpu"
    if isinstance(x, torch.memory_format):
        name = str(x).replace("torch.", "")
        if not hasattr(tl, name):
            raise Unsupported(f"memory format {name}")
        return getattr(tl, name)
    if isinstance(x, torch.Generator):
        raise Unsupported("torch.Generator")
    if isinstance(x, (list, tuple)):
        items = [to_torchlite(e, requires_grad_from, memo) for e in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: to_torchlite(v, requires_grad_from, memo) for k, v in x.items()}
    if isinstance(x, slice):
        return x
    if callable(x) and not isinstance(x, type):
        raise Unsupported("a callable argument")
    return x


def _values(d):
    try:       # NumPy has no bfloat16 or complex32: through float32 / complex64 (exact)
        if str(d.dtype) == "torch.bfloat16":
            return tl.tensor(d.float().numpy()).to(tl.bfloat16)
        if str(d.dtype) == "torch.complex32":
            return tl.tensor(d.cfloat().numpy()).to(tl.complex32)
        return tl.tensor(d.numpy())
    except Exception as e:       # more dims than NumPy (or torchlite) holds, say
        raise Unsupported(f"tensor {tuple(d.shape)}: {e}") from None


def _tensor_like(d, memo):
    """A torchlite tensor with d's values and d's layout: the same strides and storage offset
    into a storage of the same size, so views and non-contiguous samples stay so; the storage
    is the one made for an earlier tensor on d's storage (memo), so aliasing stays too."""
    torch = _torch()
    n_storage = d.untyped_storage().nbytes() // d.element_size() if d.element_size() else 0
    key = d.untyped_storage().data_ptr()
    base = memo.get(key) if key else None
    if base is not None and (base[0] != d.dtype or base[1].numel() != n_storage):
        raise Unsupported("tensors of two dtypes over one storage")
    if base is None:
        if d.is_contiguous() and d.storage_offset() == 0 and n_storage == d.numel():
            t = _values(d)
            if key:
                memo[key] = (d.dtype, t.reshape(-1) if t.ndim != 1 else t)
            return t
        storage = _values(torch.as_strided(d, (n_storage,), (1,), 0).contiguous())
        if key:
            memo[key] = (d.dtype, storage)
    else:
        storage = base[1]
    try:
        with tl.no_grad():
            t = tl.as_strided(storage, tuple(d.shape), tuple(d.stride()), d.storage_offset())
    except RuntimeError as e:     # a sample whose storage PyTorch changed under it
        raise Unsupported(f"layout: {e}") from None
    return t.detach()


def to_numpy(x):
    """A comparable form of an output: nested tuples of (kind, value)."""
    torch = _torch()
    if isinstance(x, torch.Tensor):
        d = x.detach()
        dt = str(d.dtype).replace("torch.", "")
        if d.dtype == torch.bfloat16:
            d = d.float()
        elif d.dtype == torch.complex32:
            d = d.cfloat()
        return ("tensor", dt, tuple(x.shape), d.resolve_conj().resolve_neg().numpy(force=True).copy())
    if isinstance(x, tl.Tensor):
        d = x.detach()
        dt = str(d.dtype).replace("torchlite.", "")
        if d.dtype == tl.bfloat16:
            d = d.float()
        elif d.dtype == tl.complex32:
            d = d.cfloat()
        return ("tensor", dt, tuple(x.shape), d.numpy().copy())
    if isinstance(x, (list, tuple)):
        return ("seq", tuple(to_numpy(e) for e in x))
    if isinstance(x, (torch.dtype, tl.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size,)):
        return ("seq", tuple(("scalar", v) for v in x))
    if isinstance(x, (bool, int, float, np.number, np.bool_)) or x is None:
        return ("scalar", x)
    return ("other", type(x).__name__)


def same(a, b, rtol, atol, values=True):
    """None when outputs a (torch) and b (torchlite) agree, else why not."""
    if a[0] == "tensor" and b[0] == "scalar" or a[0] == "scalar" and b[0] == "tensor":
        return f"kind: {a[0]} vs {b[0]}"
    if a[0] != b[0]:
        return f"kind: {a[0]} vs {b[0]}"
    if a[0] == "seq":
        if len(a[1]) != len(b[1]):
            return f"length {len(a[1])} vs {len(b[1])}"
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            why = same(x, y, rtol, atol, values)
            if why:
                return f"[{i}] {why}"
        return None
    if a[0] == "tensor":
        _, dta, sa, va = a
        _, dtb, sb, vb = b
        if sa != sb:
            return f"shape {sa} vs {sb}"
        if dta != dtb:
            return f"dtype {dta} vs {dtb}"
        if not values:
            return None
        if va.dtype.kind in "fc":
            if not np.allclose(vb, va, rtol=rtol, atol=atol, equal_nan=True):
                bad = ~np.isclose(vb, va, rtol=rtol, atol=atol, equal_nan=True)
                return f"values differ at {int(bad.sum())} of {va.size}"
            return None
        if not np.array_equal(va, vb):
            return "values differ"
        return None
    if a[0] == "scalar":
        x, y = a[1], b[1]
        if not values:
            return None
        if isinstance(x, float) or isinstance(y, float):
            if x is None or y is None:
                return f"{x} vs {y}"
            if not (math.isclose(x, y, rel_tol=rtol, abs_tol=atol) or (x != x and y != y)):
                return f"{x} vs {y}"
            return None
        return None if x == y else f"{x} vs {y}"
    if a[0] == "dtype":
        return None if a[1] == b[1] else f"dtype {a[1]} vs {b[1]}"
    return None


def resolve(path, root=None):
    """torchlite's function of PyTorch's dotted op name, or None."""
    obj = tl if root is None else root
    if root is None and path.startswith("__"):     # op_db's dunder ops are Tensor's methods
        obj = tl.Tensor
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    # a dtype of the same name (torch.cdouble the op is Tensor.cdouble, a method) is no op
    return None if isinstance(obj, tl.dtype) else obj


def ops(pattern=None):
    from torch.testing._internal.common_methods_invocations import op_db
    rx = re.compile(pattern) if pattern else None
    for op in op_db:
        full = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if rx is None or rx.search(full):
            yield op


def _tensors_requiring_grad(x, out):
    torch = _torch()
    if isinstance(x, (torch.Tensor, tl.Tensor)):
        if x.requires_grad:
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for e in x:
            _tensors_requiring_grad(e, out)
    elif isinstance(x, dict):
        for e in x.values():
            _tensors_requiring_grad(e, out)
    return out


def _float_outputs(x, out):
    torch = _torch()
    if isinstance(x, (torch.Tensor, tl.Tensor)):
        if x.dtype in (torch.float64, tl.float64, torch.float32, tl.float32) and x.requires_grad:
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for e in x:
            _float_outputs(e, out)
    return out


def _grads(lib, result, inputs, cotangent_seed):
    """d(sum(out_k * c_k)) / d input for every input requiring grad (zeros where unused)."""
    outs = _float_outputs(result, [])
    if not outs or not inputs:
        return None
    rng = np.random.default_rng(cotangent_seed)
    total = None
    for o in outs:
        c = lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)
        term = (o * c).sum()
        total = term if total is None else total + term
    grads = lib.autograd.grad(total, inputs, allow_unused=True)
    return tuple(lib.zeros_like(i) if g is None else g for i, g in zip(inputs, grads))


def _align_signs(name, want, got):
    """Singular and eigenvectors are defined up to sign: flip got's to want's (per column, by
    the sign of their inner product), in the numpy forms of both outputs."""
    if name not in ("svd", "linalg.svd", "linalg.eigh", "linalg.eig"):
        return got
    if want[0] != "seq" or got[0] != "seq":
        return got
    outs = list(got[1])
    if name in ("svd", "linalg.svd"):
        (_, _, _, uw), (_, dt, sh, ug) = want[1][0], outs[0]
        if uw.shape != ug.shape or uw.ndim < 2:
            return got
        vg = outs[2][3].copy()
        k = min(ug.shape[-1], vg.shape[-1] if name == "svd" else vg.shape[-2])
        signs = np.sign(np.sum(uw[..., :, :k] * ug[..., :, :k], axis=-2))
        signs[signs == 0] = 1
        ug = ug.copy()
        ug[..., :, :k] *= signs[..., None, :]
        if name == "svd":            # V: columns
            vg[..., :, :k] *= signs[..., None, :]
        else:                        # Vh: rows
            vg[..., :k, :] *= signs[..., :, None]
        # with full matrices, the columns past k are any orthonormal basis of the null space:
        # take want's where both span the same space
        vw = want[1][2][3]
        ug = _same_span(uw, ug, k, rows=False)
        vg = _same_span(vw, vg, k, rows=(name != "svd"))
        outs[0] = ("tensor", dt, sh, ug)
        outs[2] = outs[2][:3] + (vg,)
    else:
        (_, _, _, vw), (_, dt, sh, vg) = want[1][1], outs[1]
        if vw.shape != vg.shape or vw.ndim < 2:
            return got
        signs = np.sign(np.sum(vw * vg, axis=-2))
        signs[signs == 0] = 1
        outs[1] = ("tensor", dt, sh, vg * signs[..., None, :])
    return ("seq", tuple(outs))


def _same_span(want, got, k, rows):
    """got with its vectors past the first k replaced by want's when they span the same space
    (columns, or rows when `rows`)."""
    if want.shape != got.shape:
        return got
    w = np.swapaxes(want, -1, -2) if rows else want
    g = np.swapaxes(got, -1, -2) if rows else got
    if w.shape[-1] <= k:
        return got
    we, ge = w[..., :, k:], g[..., :, k:]
    pw = we @ np.swapaxes(we, -1, -2)
    pg = ge @ np.swapaxes(ge, -1, -2)
    if not np.allclose(pw, pg, atol=1e-4):
        return got
    g = g.copy()
    g[..., :, k:] = we
    return np.swapaxes(g, -1, -2) if rows else g


def run_sample(name, torch_fn, tl_fn, sample, kind, dtype):
    """The outcome of one sample: 'pass', or 'raised: ...', 'wrong: ...', 'skipped: ...'.
    torch_fn(input, *args, **kwargs) is PyTorch's variant; tl_fn the same for torchlite."""
    torch = _torch()
    rtol, atol = TOL[dtype] if kind != "grad" else GRAD_TOL
    try:
        memo = {}
        args_tl = to_torchlite((sample.input,) + tuple(sample.args), memo=memo)
        kwargs_tl = to_torchlite(dict(sample.kwargs), memo=memo)
    except Unsupported as e:
        return f"skipped: {e}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = torch_fn(sample.input, *sample.args, **sample.kwargs)
            if kind == "grad":
                want = sample.output_process_fn_grad(want)
                t_inputs = _tensors_requiring_grad((sample.input, sample.args, sample.kwargs), [])
                want_g = _grads(torch, want, t_inputs, 1)
                if want_g is None:
                    return "skipped: nothing differentiable"
        except Exception as e:                       # PyTorch rejects it: not a sample for us
            return f"skipped: torch raised {type(e).__name__}"
        random_op = name in UNINITIALISED
        if kind != "grad" and not random_op:
            again = torch_fn(sample.input, *sample.args, **sample.kwargs)
            random_op = same(to_numpy(want), to_numpy(again), 0, 0) is not None
        try:
            got = tl_fn(*args_tl, **kwargs_tl)
            if kind == "grad":
                got = sample.output_process_fn_grad(got)
                l_inputs = _tensors_requiring_grad((args_tl, kwargs_tl), [])
                got_g = _grads(tl, got, l_inputs, 1)
                if got_g is None:
                    return "wrong: no differentiable output"
        except Exception as e:
            return f"raised: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    if kind == "grad":
        why = same(to_numpy(want_g), to_numpy(got_g), rtol, atol)
    else:
        w = to_numpy(want)
        g = _align_signs(name, w, to_numpy(got))
        why = same(w, g, rtol, atol, values=not random_op)
        if why is not None and dtype == "float32" and not random_op:
            # PyTorch's float32 result is itself rounded: take the same op in float64 as the
            # reference, rounded to float32, where PyTorch can compute it
            exact = _in_float64(torch_fn, sample)
            if exact is not None and same(exact, g, rtol, atol) is None:
                why = None
            elif exact is not None and name in SUMS_OF_PRODUCTS:
                why = _within_summation_bound(torch_fn, sample, exact, g, why)
    return "pass" if why is None else f"wrong: {why}"


# Ops whose every output element is a sum of products of input elements (convolutions):
# in float32 an element where those products cancel carries rounding error of the size of
# eps times the sum of their magnitudes, whatever the summation order, so an elementwise
# tolerance fails there for any implementation that sums in another order than PyTorch.
SUMS_OF_PRODUCTS = {f"nn.functional.{k}" for k in (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")}
SUM_BOUND_EPS = 32 * 2.0 ** -23     # 32 ulps of the magnitudes: far below a wrong term


def _within_summation_bound(torch_fn, sample, exact, got, why):
    """None when every float32 element is within SUM_BOUND_EPS times the sum of its
    products' magnitudes (the same op on the inputs' absolute values, in float64) of the
    float64 result; else why, with the worst ratio."""
    torch = _torch()

    def absolute(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
            return x.detach().double().abs()
        if isinstance(x, (list, tuple)):
            return type(x)(absolute(e) for e in x)
        return x
    try:
        scale = torch_fn(absolute(sample.input), *absolute(tuple(sample.args)),
                         **dict(sample.kwargs)).detach().numpy()
        # (exact and got are to_numpy's ("tensor", dtype, shape, array) forms)
        err = np.abs(got[3].astype(np.float64) - exact[3].astype(np.float64))
        bound = SUM_BOUND_EPS * scale + 1e-30
    except Exception:
        return why
    if err.shape != bound.shape or not np.all(err <= bound):
        return f"{why}; beyond the float32 summation bound (worst {float(np.max(err / bound)):.3g}x)"
    return None


def _in_float64(torch_fn, sample):
    """The numpy form of torch_fn on the sample with float32 tensors as float64, its float64
    outputs rounded to float32; None where that fails."""
    torch = _torch()

    def up(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
            return x.detach().double()
        if isinstance(x, (list, tuple)):
            return type(x)(up(e) for e in x)
        if isinstance(x, dict):
            return {k: up(v) for k, v in x.items()}
        return x

    def down(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
            return x.float()
        if isinstance(x, (list, tuple)):
            return type(x)(down(e) for e in x)
        return x
    try:
        return to_numpy(down(torch_fn(up(sample.input), *up(tuple(sample.args)),
                                      **up(dict(sample.kwargs)))))
    except Exception:
        return None


def not_a_pytorch_function(op):
    """Why op_db's entry exercises no PyTorch function a program can call, or None: its name
    is neither a torch attribute nor a Tensor method (op_db's own test wrappers, such as
    max_pool2d_with_indices_backward around torch.ops.aten's backward kernel, or the CUDA
    jiterator), or it names an ATen operator overload (torch.ops.aten.*).  Such samples are
    not in scope: torchlite implements PyTorch's public API, not ATen's operator registry."""
    torch = _torch()
    if op.name.startswith("torch.ops."):
        return "an ATen operator overload (torch.ops.aten), not public API"
    if op.name.startswith("__") or resolve(op.name, torch) is not None \
            or ("." not in op.name and hasattr(torch.Tensor, op.name)):
        return None
    return "op_db's own test function, not a PyTorch function"


def _torchlite_fn(op):
    """torchlite's function of op_db's entry: by its dotted name, else (torch.cfloat and the
    like are dtypes, so the op is the Tensor method) the Tensor method of that name."""
    fn = resolve(op.name)
    if fn is None and "." not in op.name and getattr(_torch().Tensor, op.name, None) is op.op:
        fn = getattr(tl.Tensor, op.name, None)
    return fn


def _variants(op):
    """[(kind, torch function, torchlite function or None)]: the function, and the method
    where PyTorch has one.  A variant whose function wraps the op (builds a special input,
    picks an output: a lambda) has samples that are not the function's arguments: only its
    method runs."""
    torch = _torch()
    out = []
    if not (op.op is not resolve(op.name, torch)
            and getattr(op.op, "__name__", "") == "<lambda>"):
        out.append(("value", op.op, _torchlite_fn(op)))
    method = op.method_variant
    if method is not None and getattr(method, "__name__", "<lambda>") != "<lambda>":
        mname = method.__name__
        if hasattr(tl.Tensor, mname):
            out.append(("method", method, lambda x, *a, **k: getattr(x, mname)(*a, **k)))
        else:
            out.append(("method", method, None))
    return out


def run_op(op, dtypes=DTYPES, grads=True, max_samples=None):
    """[(key, outcome)] for every sample of op: each dtype's values through the function
    and the method, and float64 gradients through the function."""
    torch = _torch()
    name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
    why = not_a_pytorch_function(op)
    if why is not None:
        return [(f"{name}|*|*|*", f"skipped: {why}")]
    variants = _variants(op)
    if not variants:
        return [(f"{name}|*|*|*", "skipped: a wrapper around the function, no method")]
    results = []
    supported = op.supported_dtypes("cpu")
    for dtype in dtypes:
        tdtype = getattr(torch, dtype)
        if tdtype not in supported:
            continue
        runs = list(variants)
        if grads and dtype == "float64" and op.supports_autograd and variants[0][0] == "value":
            runs.append(("grad",) + variants[0][1:])
        for kind, torch_fn, tl_fn in runs:
            try:
                samples = list(op.sample_inputs("cpu", tdtype, requires_grad=(kind == "grad")))
            except Exception as e:
                results.append((f"{name}|{dtype}|{kind}|*",
                                f"skipped: samples raised {type(e).__name__}"))
                continue
            if max_samples:
                samples = samples[:max_samples]
            for i, s in enumerate(samples):
                key = f"{name}|{dtype}|{kind}|{i}"
                if tl_fn is None:
                    results.append((key, "missing"))
                    continue
                results.append((key, run_sample(op.name, torch_fn, tl_fn, s, kind, dtype)))
    return results


def run_error_inputs(op):
    """[(key, outcome)] for op's error_inputs: 'pass' when torchlite raises the exception type
    PyTorch's metadata names (or a subclass), else 'no error' or 'wrong type: ...'."""
    name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
    fn = _torchlite_fn(op)
    if fn is None or op.error_inputs_func is None:
        return []
    try:
        cases = list(op.error_inputs("cpu"))
    except Exception as e:
        return [(f"{name}|*|error|*", f"skipped: error_inputs raised {type(e).__name__}")]
    out = []
    for i, ei in enumerate(cases):
        key = f"{name}|*|error|{i}"
        s = ei.sample_input
        try:
            memo = {}
            args = to_torchlite((s.input,) + tuple(s.args), memo=memo)
            kwargs = to_torchlite(dict(s.kwargs), memo=memo)
        except Unsupported as e:
            out.append((key, f"skipped: {e}"))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:                    # some error inputs raise on other devices only
                op(s.input, *s.args, **s.kwargs)
                out.append((key, "skipped: PyTorch raises nothing on the CPU"))
                continue
            except Exception:
                pass
            try:
                fn(*args, **kwargs)
                out.append((key, f"no error: PyTorch raises {ei.error_type.__name__}"))
            except ei.error_type:
                out.append((key, "pass"))
            except Exception as e:
                out.append((key, f"wrong type: {type(e).__name__} ({str(e)[:100]}), PyTorch "
                                 f"raises {ei.error_type.__name__}"))
    return out


def summary(results):
    counted = [o for _, o in results if not o.startswith("skipped")]
    n_pass = sum(o == "pass" for o in counted)
    return n_pass, len(counted)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", help="regular expression on op names (with .variant)")
    p.add_argument("--failures", action="store_true", help="print every sample that fails")
    p.add_argument("--by-op", action="store_true", help="one line per op: passed/counted")
    p.add_argument("--write", help="write the passing samples' keys to this file")
    p.add_argument("--max-samples", type=int, default=None)
    p.add_argument("--json", help="write every (key, outcome) to this file")
    a = p.parse_args(argv)
    all_results = []
    for op in ops(a.ops):
        res = run_op(op, max_samples=a.max_samples) + run_error_inputs(op)
        all_results += res
        if a.by_op:
            n, c = summary(res)
            print(f"{n:4d}/{c:<4d} {op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}",
                  flush=True)
        if a.failures:
            for k, o in res:
                if o != "pass" and not o.startswith("skipped"):
                    print(f"  {k}: {o}", flush=True)
    n, c = summary(all_results)
    missing = sum(o == "missing" for _, o in all_results)
    print(f"passed {n} of {c} samples ({100 * n / max(c, 1):.1f}%); {missing} of them for ops "
          f"torchlite lacks")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump(all_results, f)
    if a.write:
        with open(a.write, "w") as f:
            for k, o in sorted(all_results):
                if o == "pass":
                    f.write(k + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
