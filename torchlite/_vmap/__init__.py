"""vmap with batching rules (torchlite.func.vmap's engine): batched.py holds the Batched
tensor and the door to torchlite's functions, rules.py the rule per operation; `run` maps a
function over its inputs' batch dimension."""
import torchlite as _tl

from ..utils._pytree import tree_flatten, tree_unflatten
from .batched import Batched, Level, current, has_batched, loop, patched, pop, push

__all__ = ["Batched", "current", "has_batched", "loop", "run"]


def _leaf_dims(arg, d, where):
    """The in_dim of every leaf of arg: d an int or None for all, or a structure matching
    arg's (a prefix of it, as PyTorch's in_dims)."""
    if d is None or isinstance(d, int):
        return [d] * len(tree_flatten(arg)[0])
    if isinstance(d, (list, tuple)) and isinstance(arg, (list, tuple)) and len(d) == len(arg):
        return [x for a, dd in zip(arg, d) for x in _leaf_dims(a, dd, where)]
    if isinstance(d, dict) and isinstance(arg, dict) and set(d) == set(arg):
        return [x for k in arg for x in _leaf_dims(arg[k], d[k], where)]
    raise ValueError(f"vmap({where}): in_dims is not compatible with the structure of the "
                     f"inputs: {d!r} for an input of type {type(arg).__name__}")


def _inputs(func, args, in_dims):
    """(leaves, their spec, their dims normalised, the batch size)."""
    where = getattr(func, "__name__", "f")
    if isinstance(in_dims, (tuple, list)):
        if len(in_dims) != len(args):
            raise ValueError(f"vmap({where}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             f"compatible with the structure of `inputs`: {len(in_dims)} "
                             f"in_dims for {len(args)} arguments")
        dims = [x for a, d in zip(args, in_dims) for x in _leaf_dims(a, d, where)]
    else:
        dims = _leaf_dims(list(args), in_dims, where)
    leaves, spec = tree_flatten(list(args))
    sizes, norm = set(), []
    for leaf, d in zip(leaves, dims):
        if d is None:
            norm.append(None)
            continue
        if not isinstance(leaf, (_tl.Tensor, Batched)):
            raise ValueError(f"vmap({where}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for an input but the input is of type {type(leaf).__name__}. "
                             f"We cannot vmap over non-Tensor arguments, please use None as "
                             f"the respective in_dim")
        n = leaf.dim()
        if not -n <= d < n or n == 0:
            raise ValueError(f"vmap({where}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for some input, but that input is a Tensor of dimensionality "
                             f"{n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
        d %= n
        norm.append(d)
        sizes.add(leaf.shape[d])
    if not sizes:
        raise ValueError(f"vmap({where}, in_dims={in_dims}, ...)(<inputs>): at least one input "
                         f"must be batched (in_dims not None)")
    if len(sizes) != 1:
        raise ValueError(f"vmap({where}, in_dims={in_dims}, ...)(<inputs>): Expected all tensors "
                         f"to have the same size in the mapped dimension, got sizes "
                         f"{sorted(sizes)} for the mapped dimension")
    return leaves, spec, norm, sizes.pop()


def _out_dims(out_leaves, out, out_dims):
    if isinstance(out_dims, (tuple, list)):
        if isinstance(out, (tuple, list)) and len(out) == len(out_dims):
            return [d for o, d in zip(out, out_dims) for _ in tree_flatten(o)[0]]
        if len(out_dims) == len(out_leaves):
            return list(out_dims)
        raise ValueError(f"vmap: out_dims {out_dims!r} is not compatible with the structure of "
                         f"the outputs")
    return [out_dims] * len(out_leaves)


class _Unbatched:
    """An output that does not depend on the batch, kept as it is for out_dims=None."""
    __slots__ = ("value", "size")

    def __init__(self, value, size):
        self.value, self.size = value, size

    def expanded(self):
        if not isinstance(self.value, _tl.Tensor):
            raise ValueError(f"vmap: the function must only return Tensors, got type "
                             f"{type(self.value)}. Did you mean to set out_dims= to None for "
                             f"output?")
        return self.value.unsqueeze(0).expand(self.size, *self.value.shape)


def _physical_outputs(func, out, size):
    """The output's leaves with the batch first (an unbatched output kept as _Unbatched), and
    its spec."""
    leaves, spec = tree_flatten(out)
    phys = []
    for leaf in leaves:
        if type(leaf) is Batched:
            phys.append(leaf.value)
        elif isinstance(leaf, _tl.Tensor) or leaf is None or isinstance(leaf, (int, float, bool)):
            phys.append(_Unbatched(leaf, size))
        else:
            raise ValueError(f"vmap({getattr(func, '__name__', 'f')}, ...): `"
                             f"{getattr(func, '__name__', 'f')}` must only return Tensors, got "
                             f"type {type(leaf)}. Did you mean to set out_dims= to None for "
                             f"output?")
    return phys, spec


def _loop_run(func, args, kwargs, leaves, spec, dims, size):
    """Inside another vmap: func once per element of this map (its ops still batched over the
    outer one)."""
    results = []
    for i in range(size):
        sliced = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, dims)]
        results.append(func(*tree_unflatten(sliced, spec), **kwargs))
    per_leaf, out_spec = [], None
    for r in results:
        flat, out_spec = tree_flatten(r)
        per_leaf.append(flat)
    return results[0], [_tl.stack(list(vals)) for vals in zip(*per_leaf)], out_spec


def run(func, args, kwargs, in_dims, out_dims, randomness, chunk_size):
    leaves, spec, dims, size = _inputs(func, args, in_dims)
    if current() is not None:
        first, stacked, out_spec = _loop_run(func, args, kwargs, leaves, spec, dims, size)
    else:
        step = size if chunk_size is None else chunk_size
        pieces, first, out_spec = [], None, None
        rng = _tl.random.get_rng_state() if randomness == "same" and step < size else None
        for start in range(0, size, step):
            if rng is not None:                  # 'same': every chunk draws alike
                _tl.random.set_rng_state(rng)
            stop = min(size, start + step)
            batched = [leaf if d is None else
                       Batched(leaf.movedim(d, 0)[start:stop] if step < size else
                               leaf.movedim(d, 0))
                       for leaf, d in zip(leaves, dims)]
            with patched():
                push(Level(stop - start, randomness))
                try:
                    out = func(*tree_unflatten(batched, spec), **kwargs)
                finally:
                    pop()
            phys, out_spec = _physical_outputs(func, out, stop - start)
            pieces.append(phys)
            first = out if first is None else first
        stacked = pieces[0] if len(pieces) == 1 else \
            [parts[0] if all(type(p) is _Unbatched for p in parts) else
             _tl.cat([p.expanded() if type(p) is _Unbatched else p for p in parts])
             for parts in zip(*pieces)]
    odims = _out_dims(stacked, tree_unflatten(stacked, out_spec), out_dims)
    result = []
    for value, d in zip(stacked, odims):
        if d is None:
            if type(value) is not _Unbatched:
                raise ValueError("vmap: out_dims=None is only for outputs that do not depend "
                                 "on the batch; this one does")
            result.append(value.value)
            continue
        if type(value) is _Unbatched:
            value = value.expanded()
        result.append(value.movedim(0, d) if d != 0 else value)
    return tree_unflatten(result, out_spec)
