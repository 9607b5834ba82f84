"""PyTorch's module_db (torch.testing._internal.common_modules) through torchlite.nn.

For every ModuleInfo, dtype (float32, float64) and mode (training; eval too where the module's
metadata says the two differ), each ModuleInput's constructor arguments build the torch module
and torchlite's module of the same name; torchlite's takes the torch module's state_dict
(so the keys must match and the parameters be the same), runs the same forward inputs, and
then one backward of sum(out * c) for a seeded cotangent c.  Compared: outputs (values,
shapes, dtypes), the gradients of the inputs and of every parameter, and the buffers after
the call (running statistics).  Modules whose training forward is random (dropout and the
like) are compared by shape only in training mode.

Outcomes: pass; missing (no such module in torchlite.nn); skipped: ... (a value with no
torchlite counterpart); anything else is a failure with its reason.  Used by
tests/test_module_db.py; runnable alone:
    python tests/module_db_harness.py [--modules REGEX] [--json OUT]"""
import argparse
import json
import re
import sys


import torchlite as tl
from opinfo_harness import Unsupported, same, to_numpy, to_torchlite
from opinfo_harness import _grads as _backward, _tensors_requiring_grad as _inputs_requiring_grad

DTYPES = ("float32", "float64")
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}
# modules whose training forward draws random numbers: shapes only in training mode
RANDOM_IN_TRAINING = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                      "FeatureAlphaDropout", "RReLU", "FractionalMaxPool2d", "FractionalMaxPool3d",
                      "Transformer", "TransformerEncoder", "TransformerDecoder",
                      "TransformerEncoderLayer", "TransformerDecoderLayer", "MultiheadAttention")


def _torch():
    import torch
    return torch


def _constructor_value(x):
    """A constructor argument for torchlite: tensors and dtypes as to_torchlite makes them,
    torch.nn classes and nn.functional functions by name, containers element by element."""
    torch = _torch()
    if isinstance(x, type) and issubclass(x, torch.nn.Module):
        cls = getattr(tl.nn, x.__name__, None)
        if cls is None:
            raise Unsupported(f"module class {x.__name__}")
        return cls
    name = getattr(x, "__name__", None)
    if callable(x) and name and getattr(torch.nn.functional, name, None) is x \
            and hasattr(tl.nn.functional, name):
        return getattr(tl.nn.functional, name)        # F.gelu and the like, passed as a value
    if isinstance(x, torch.nn.TransformerEncoderLayer):
        return _encoder_layer(x)
    if isinstance(x, torch.nn.Module):
        raise Unsupported(f"a module instance argument ({type(x).__name__})")
    if isinstance(x, (list, tuple)):
        items = [_constructor_value(e) for e in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: _constructor_value(v) for k, v in x.items()}
    if callable(x) and not isinstance(x, type) and not isinstance(x, torch.Tensor):
        raise Unsupported("a callable argument")
    return to_torchlite(x, requires_grad_from=False)


def _forward_values(x, memo, seen):
    """Forward arguments for torchlite: one torchlite tensor per torch tensor object (a sample
    that passes the same tensor twice gets the same tensor twice, so gradients add up as in
    PyTorch), storages shared as in x."""
    torch = _torch()
    if isinstance(x, torch.Tensor):
        if id(x) not in seen:
            seen[id(x)] = to_torchlite(x, True, memo)
        return seen[id(x)]
    if isinstance(x, (list, tuple)):
        items = [_forward_values(e, memo, seen) for e in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: _forward_values(v, memo, seen) for k, v in x.items()}
    return to_torchlite(x, True, memo)


def _encoder_layer(layer):
    """torchlite's TransformerEncoderLayer with a torch layer's hyperparameters (the encoder
    copies it num_layers times; the weights come later, with the state_dict)."""
    act = layer.activation
    name = getattr(act, "__name__", None) or type(act).__name__.lower()
    if not hasattr(tl.nn.functional, name):
        raise Unsupported(f"activation {act!r}")
    attn = layer.self_attn
    return tl.nn.TransformerEncoderLayer(
        attn.embed_dim, attn.num_heads, layer.linear1.out_features, layer.dropout.p,
        getattr(tl.nn.functional, name), layer.norm1.eps, attn.batch_first, layer.norm_first,
        bias=layer.linear1.bias is not None)


def _state_for(tmod):
    torch = _torch()
    state = {}
    for k, v in tmod.state_dict().items():
        if not isinstance(v, torch.Tensor):
            raise Unsupported(f"state entry {k} of type {type(v).__name__}")
        state[k] = to_torchlite(v.detach(), requires_grad_from=False)
    return state


def run_input(info, minput, dtype, training):
    """The outcome of one ModuleInput."""
    torch = _torch()
    name = info.module_cls.__name__
    cls = getattr(tl.nn, name, None)
    if cls is None:
        return "missing"
    rtol, atol = TOL[dtype]
    tdtype, ldtype = getattr(torch, dtype), getattr(tl, dtype)
    ci, fi = minput.constructor_input, minput.forward_input
    try:
        largs = _constructor_value(tuple(ci.args))
        lkwargs = _constructor_value(dict(ci.kwargs))
        memo, seen = {}, {}
        lfargs = _forward_values(tuple(fi.args), memo, seen)
        lfkwargs = _forward_values(dict(fi.kwargs), memo, seen)
    except Unsupported as e:
        return f"skipped: {e}"
    torch.manual_seed(0)
    tmod = info.module_cls(*ci.args, **ci.kwargs).to(tdtype)
    tmod.train(training)
    if info.is_lazy:     # a lazy module has its parameters after its first call
        with torch.no_grad():
            tmod(*fi.args, **fi.kwargs)
    try:
        lmod = cls(*largs, **lkwargs).to(ldtype)
    except Exception as e:
        return f"constructor raised {type(e).__name__}: {str(e)[:120]}"
    lmod.train(training)
    try:
        state = _state_for(tmod)
    except Unsupported as e:
        return f"skipped: {e}"
    tkeys, lkeys = set(state), set(lmod.state_dict())
    if tkeys != lkeys:
        return f"state_dict keys differ: torch only {sorted(tkeys - lkeys)[:4]}, torchlite only " \
               f"{sorted(lkeys - tkeys)[:4]}"
    try:
        lmod.load_state_dict(state)
    except Exception as e:
        return f"load_state_dict raised {type(e).__name__}: {str(e)[:120]}"
    try:
        want = tmod(*fi.args, **fi.kwargs)
    except Exception as e:
        return f"skipped: torch raised {type(e).__name__}"
    try:
        got = lmod(*lfargs, **lfkwargs)
    except Exception as e:
        return f"forward raised {type(e).__name__}: {str(e)[:160]}"
    values = not (training and name in RANDOM_IN_TRAINING)
    why = same(to_numpy(want), to_numpy(got), rtol, atol, values)
    if why:
        return f"output: {why}"
    if values:
        for (k, tb), (_, lb) in zip(sorted(tmod.state_dict().items()), sorted(lmod.state_dict().items())):
            why = same(to_numpy(tb), to_numpy(lb), rtol, atol)
            if why:
                return f"state {k} after forward: {why}"
    if not values:
        return "pass"
    tins = _inputs_requiring_grad((fi.args, fi.kwargs), []) + list(tmod.parameters())
    lins = _inputs_requiring_grad((lfargs, lfkwargs), []) + list(lmod.parameters())
    if len(tins) != len(lins):
        return f"{len(tins)} vs {len(lins)} tensors requiring grad"
    try:
        tg = _backward(torch, want, tins, 1)
    except Exception:
        return "pass"            # PyTorch's own backward refuses (a non-differentiable output)
    try:
        lg = _backward(tl, got, lins, 1)
    except Exception as e:
        return f"backward raised {type(e).__name__}: {str(e)[:160]}"
    if tg is None:
        return "pass"
    if lg is None:
        return "backward: no differentiable output"
    grtol, gatol = (rtol * 10, atol * 10)
    for i, (a, b) in enumerate(zip(tg, lg)):
        why = same(to_numpy(a), to_numpy(b), grtol, gatol)
        if why:
            return f"gradient {i}: {why}"
    return "pass"


def run_module(info):
    torch = _torch()
    results = []
    supported = info.supported_dtypes("cpu") if hasattr(info, "supported_dtypes") else info.dtypes
    modes = (True, False) if info.train_and_eval_differ else (True,)
    for dtype in DTYPES:
        if getattr(torch, dtype) not in supported:
            continue
        for training in modes:
            key = f"{info.name}|{dtype}|{'train' if training else 'eval'}"
            try:
                inputs = info.module_inputs_func(info, device="cpu", dtype=getattr(torch, dtype),
                                                 requires_grad=True, training=training)
            except Exception as e:
                results.append((f"{key}|*", f"skipped: inputs raised {type(e).__name__}"))
                continue
            for i, minput in enumerate(inputs):
                try:
                    outcome = run_input(info, minput, dtype, training)
                except Exception as e:        # the harness's own trouble is a failure too
                    outcome = f"harness raised {type(e).__name__}: {str(e)[:160]}"
                results.append((f"{key}|{i}", outcome))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", default=None, help="regex over module names")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from torch.testing._internal.common_modules import module_db
    rx = re.compile(args.modules) if args.modules else None
    results = []
    for info in module_db:
        if rx is None or rx.search(info.name):
            results += run_module(info)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)
    counted = [o for _, o in results if not o.startswith("skipped")]
    passed = sum(o == "pass" for o in counted)
    print(f"passed {passed} of {len(counted)} module samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
