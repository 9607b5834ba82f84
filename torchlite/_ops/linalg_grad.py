"""Backward formulas of the matrix products in linalg.py.

Each formula is written with the products themselves (and views), so it is differentiable
again.  A node computes only the gradients of the inputs that require grad, and saves an
operand only when the other operand's gradient needs it (as PyTorch does), so modifying an
operand in place after the product fails only when its value is really needed."""
import math

from ..autograd.graph import Node, record, sum_to


def _operand(node, name):
    """A saved operand, conjugated when complex: every product here is holomorphic in each
    operand, so with PyTorch's convention its gradient is the real formula on conj(operand)
    (g @ b^H rather than g @ b^T)."""
    t = node.saved(name)
    return t.conj() if t is not None and t.is_complex() else t


def _wants(node, i):
    """Whether input i of node gets a gradient (it requires grad)."""
    return node.next_functions[i][0] is not None


def _scaled(t, s):
    return t if s == 1 else t * s


def _as(t, dtype):
    return t if t.dtype is dtype else t.to(dtype)


def _save_pair(node, a, b, names=("a", "b")):
    """Save a only if b needs a gradient and b only if a does (a's gradient needs b)."""
    node.save(**{names[0]: a if b._requires_grad else None,
                 names[1]: b if a._requires_grad else None})


# ---- the plain products ----------------------------------------------------------------------
def _transposed(m):
    """A 2-D operand stored column-major (a .t() of a contiguous matrix, like nn.Linear's
    weight in x @ w.t())."""
    st = m.stride()
    return st[0] == 1 and st[1] == m.shape[0] and m.shape[0] > 1


def _mat1_grad(g, b, column_major):
    """dL/da of a @ b, laid out like a (so a gradient flowing on through a .t() view arrives
    contiguous), as PyTorch's mm_mat1_backward does."""
    return b.mm(g.t()).t() if column_major else g.mm(b.t())


def _mat2_grad(g, a, column_major):
    """dL/db of a @ b, laid out like b."""
    return g.t().mm(a).t() if column_major else a.t().mm(g)


class MmBackward0(Node):
    def backward(self, g):
        a, b = _operand(self, "a"), _operand(self, "b")
        return (_mat1_grad(g, b, self.layout[0]) if _wants(self, 0) else None,
                _mat2_grad(g, a, self.layout[1]) if _wants(self, 1) else None)


class BmmBackward0(Node):
    def backward(self, g):
        a, b = _operand(self, "a"), _operand(self, "b")
        return (g.bmm(b.mT) if _wants(self, 0) else None,
                a.mT.bmm(g) if _wants(self, 1) else None)


class MvBackward0(Node):
    def backward(self, g):
        m, v = _operand(self, "a"), _operand(self, "b")
        from .linalg import outer
        return (outer(g, v) if _wants(self, 0) else None,
                m.t().mv(g) if _wants(self, 1) else None)


class DotBackward0(Node):
    def backward(self, g):
        a, b = _operand(self, "a"), _operand(self, "b")
        return (g * b if _wants(self, 0) else None, g * a if _wants(self, 1) else None)


class VdotBackward0(DotBackward0):
    """vdot conjugates its first operand: the same as dot for real dtypes."""


class OuterBackward0(Node):
    """outer(a, b)[i, j] = a[i] * b[j] (dtypes promote, so gradients are cast back)."""

    def backward(self, g):
        a, b = _operand(self, "a"), _operand(self, "b")
        ga = _as(g.mv(_as(b, g.dtype)), self.dtypes[0]) if _wants(self, 0) else None
        gb = _as(g.t().mv(_as(a, g.dtype)), self.dtypes[1]) if _wants(self, 1) else None
        return ga, gb


_PLAIN = {"mm": MmBackward0, "bmm": BmmBackward0, "mv": MvBackward0, "dot": DotBackward0,
          "vdot": VdotBackward0, "outer": OuterBackward0}


def record_product(op, a, b, result):
    """Record a two-operand product (mm, bmm, mv, dot, vdot, outer)."""
    node = _PLAIN[op]()
    _save_pair(node, a, b)
    if op == "mm":
        node.layout = (_transposed(a), _transposed(b))
    elif op == "outer":
        node.dtypes = (a.dtype, b.dtype)
    return record(node, (a, b), result)


# ---- matmul with vectors and broadcast batch dims -----------------------------------------------
class MatmulBackward0(Node):
    """matmul in the forms that are not mm/mv/dot: a 1-D operand is a one-row (first) or
    one-column (second) matrix; batch dims broadcast, so gradients are summed back over the
    batch dims an operand was broadcast along.  When the second operand has no batch dims,
    its gradient is one (k, B*m) @ (B*m, n) product rather than a batch of products to sum."""

    def backward(self, g):
        a, b = _operand(self, "a"), _operand(self, "b")
        sa, sb = self.shapes
        if len(sa) == 1:
            g = g.unsqueeze(-2)                       # (..., 1, n)
        if len(sb) == 1:
            g = g.unsqueeze(-1)                       # (..., m, 1)
        ga = gb = None
        if _wants(self, 0):
            bm = b.unsqueeze(-1) if len(sb) == 1 else b
            ga = g.matmul(bm.mT)
            ga = sum_to(ga, ((1,) + sa) if len(sa) == 1 else sa).reshape(sa)
        if _wants(self, 1):
            am = a.unsqueeze(0) if len(sa) == 1 else a
            if len(sb) <= 2 and am.ndim > 2:
                k, n = am.shape[-1], g.shape[-1]
                rows = math.prod(am.shape[:-1])      # not -1: k or n may be 0
                gb = am.reshape(rows, k).t().mm(g.reshape(rows, n))
            else:
                gb = sum_to(am.mT.matmul(g), (sb + (1,)) if len(sb) == 1 else sb)
            gb = gb.reshape(sb)
        return ga, gb


def record_matmul(a, b, result):
    node = MatmulBackward0()
    _save_pair(node, a, b)
    node.shapes = (tuple(a.shape), tuple(b.shape))
    return record(node, (a, b), result)


# ---- the fused add forms ----------------------------------------------------------------------
class _AddProduct(Node):
    """beta * input + alpha * product(x, y): the input's gradient is beta * g summed back to
    its (broadcast) shape; the operands' are alpha times the plain product's."""

    def backward(self, g):
        x, y = _operand(self, "x"), _operand(self, "y")
        gx, gy = self.operand_grads(g, x, y)
        return (sum_to(_scaled(g, self.beta), self.input_shape) if _wants(self, 0) else None,
                _scaled(gx, self.alpha) if gx is not None else None,
                _scaled(gy, self.alpha) if gy is not None else None)


class AddmmBackward0(_AddProduct):
    def operand_grads(self, g, x, y):
        return (_mat1_grad(g, y, self.layout[0]) if _wants(self, 1) else None,
                _mat2_grad(g, x, self.layout[1]) if _wants(self, 2) else None)


class AddmvBackward0(_AddProduct):
    def operand_grads(self, g, m, v):
        from .linalg import outer
        return (outer(g, v) if _wants(self, 1) else None,
                m.t().mv(g) if _wants(self, 2) else None)


class BaddbmmBackward0(_AddProduct):
    def operand_grads(self, g, x, y):
        return (g.bmm(y.mT) if _wants(self, 1) else None,
                x.mT.bmm(g) if _wants(self, 2) else None)


class AddbmmBackward0(_AddProduct):
    """The product is sum_i x[i] @ y[i]: each batch gets the same output gradient."""

    def operand_grads(self, g, x, y):
        gb = g.unsqueeze(0).expand((self.batches,) + tuple(g.shape))
        return (gb.bmm(y.mT) if _wants(self, 1) else None,
                x.mT.bmm(gb) if _wants(self, 2) else None)


_ADD = {"addmm": AddmmBackward0, "addmv": AddmvBackward0, "baddbmm": BaddbmmBackward0,
        "addbmm": AddbmmBackward0}


def record_add_product(op, input, x, y, alpha, beta, result):
    node = _ADD[op]()
    _save_pair(node, x, y, ("x", "y"))
    node.input_shape = tuple(input.shape)
    node.alpha, node.beta = alpha, beta
    node.batches = x.shape[0] if op == "addbmm" else None
    if op == "addmm":
        node.layout = (_transposed(x), _transposed(y))
    return record(node, (input, x, y), result)


# ---- tensordot / inner ---------------------------------------------------------------------------
class TensordotBackward0(Node):
    """out = sum over the contracted dims of a[free_a, da] * b[db, free_b].  Each gradient is
    a tensordot of g with the other operand over the other's free dims, permuted back into
    the operand's dim order."""

    def backward(self, g):
        from .linalg import tensordot
        a, b = _operand(self, "a"), _operand(self, "b")
        (na, nb), da, db = self.ndims, self.dims_a, self.dims_b
        fa = [d for d in range(na) if d not in da]
        fb = [d for d in range(nb) if d not in db]
        ga = gb = None
        if _wants(self, 0):
            # dims of the product: fa, then b's contracted dims in b's order (each is a dim of a)
            got = fa + [da[db.index(e)] for e in sorted(db)]
            ga = tensordot(g, b, ([len(fa) + i for i in range(len(fb))], fb))
            ga = ga.permute(tuple(got.index(d) for d in range(na)))
        if _wants(self, 1):
            got = [db[da.index(e)] for e in sorted(da)] + fb
            gb = tensordot(a, g, (fa, list(range(len(fa)))))
            gb = gb.permute(tuple(got.index(d) for d in range(nb)))
        return ga, gb


class InnerBackward0(TensordotBackward0):
    """inner(a, b) contracts the last dims of a and b."""


def record_tensordot(a, b, dims_a, dims_b, result, cls=TensordotBackward0):
    """dims_a, dims_b: the contracted dims as non-negative ints, pairwise."""
    node = cls()
    _save_pair(node, a, b)
    node.ndims = (a.ndim, b.ndim)
    node.dims_a, node.dims_b = list(dims_a), list(dims_b)
    return record(node, (a, b), result)


# ---- linalg.vecdot -------------------------------------------------------------------------------
class LinalgVecdotBackward0(Node):
    """out = sum(x * y, dim) over broadcast x, y."""

    def backward(self, g):
        x, y = _operand(self, "x"), _operand(self, "y")
        g = g.unsqueeze(self.dim)
        return (sum_to(g * y, self.shapes[0]) if _wants(self, 0) else None,
                sum_to(g * x, self.shapes[1]) if _wants(self, 1) else None)


def record_vecdot(x, y, dim, result):
    """dim: the reduced dim of the broadcast shape, non-negative."""
    node = LinalgVecdotBackward0()
    _save_pair(node, x, y, ("x", "y"))
    node.dim = dim
    node.shapes = (tuple(x.shape), tuple(y.shape))
    return record(node, (x, y), result)


# ---- einsum --------------------------------------------------------------------------------------
class EinsumBackward0(Node):
    """The gradient of an operand is an einsum of g with the other operands, whose output
    subscripts are the operand's own.  Three kinds of operand dims need one extra constant
    operand each: a repeated subscript (a diagonal) gets an identity matrix linking it to a
    fresh subscript; a subscript that no other operand nor the output has at full size gets a
    vector of ones (the output does not depend on where along it the value sits); a size-1 dim
    that broadcast against a larger one gets a fresh subscript with a ones(1), so the larger
    dim is summed."""

    def backward(self, g):
        ops = [_operand(self, f"op{i}") for i in range(len(self.terms))]
        return tuple(_einsum_operand_grad(i, g, ops, self.terms, self.output, self.sizes)
                     if _wants(self, i) else None for i in range(len(ops)))


def _einsum_operand_grad(i, g, ops, terms, output, sizes):
    from .creation import eye, ones
    from .linalg import einsum
    ids = {}

    def sub(label):
        if label not in ids:
            ids[label] = len(ids)
        return ids[label]

    def fresh():
        return sub(("fresh", len(ids)))

    args = [g, [sub(l) for l in output]]
    available = set(output)       # the subscripts some other operand has at full size
    for j, (t, term) in enumerate(zip(ops, terms)):
        if j != i:
            args += [_as(t, g.dtype), [sub(l) for l in term]]
            available.update(l for l, n in zip(term, t.shape) if n == sizes[l])
    out, seen = [], set()
    for label, n in zip(terms[i], ops[i].shape):
        if n != sizes[label]:
            f = fresh()
            args += [ones(1, dtype=g.dtype, device=g.device), [f]]
            out.append(f)
        elif label in seen:
            f = fresh()
            args += [eye(n, dtype=g.dtype, device=g.device), [sub(label), f]]
            out.append(f)
        else:
            if label not in available:
                args += [ones(n, dtype=g.dtype, device=g.device), [sub(label)]]
            out.append(sub(label))
        seen.add(label)
    if len(ids) > 52:
        raise RuntimeError(f"einsum(): the gradient of operand {i} needs {len(ids)} subscripts, "
                           f"more than the 52 einsum has")
    return _as(einsum(*args, out), ops[i].dtype)


def record_einsum(operands, terms, output, sizes, result):
    node = EinsumBackward0()
    node.save(**{f"op{i}": t for i, t in enumerate(operands)})
    node.terms, node.output, node.sizes = terms, output, dict(sizes)
    return record(node, tuple(operands), result)


# ---- forward mode: J t for the products (autograd/forward_ad.py reads JVP) ---------------------
# Each product is bilinear: the tangent of a b is t_a b + a t_b (the add forms add beta t_input
# and scale the product by alpha), with the operands as saved (not conjugated: that is the
# backward's business), so the rule holds for complex tensors too.
def _bilinear(node, ta, tb, mul, a, b):
    total = None
    if ta is not None:
        total = mul(ta, node.saved(b))
    if tb is not None:
        term = mul(node.saved(a), tb)
        total = term if total is None else total + term
    return total


def _plain_jvp(mul):
    return lambda node, inputs, t, meta: [_bilinear(node, t[0], t[1], mul, "a", "b")]


def _add_jvp(mul):
    def rule(node, inputs, t, meta):
        total = _bilinear(node, t[1], t[2], mul, "x", "y")
        if total is not None and node.alpha != 1:
            total = total * node.alpha
        if t[0] is not None and node.beta != 0:       # beta = 0 ignores the input, as forward
            term = t[0] if node.beta == 1 else t[0] * node.beta
            if total is None:
                total = term.expand(meta[0][0]) if tuple(term.shape) != meta[0][0] else term
            else:
                total = total + term
        return [total]
    return rule


def _tensordot_jvp(node, inputs, t, meta):
    from .linalg import tensordot
    dims = (node.dims_a, node.dims_b)
    return [_bilinear(node, t[0], t[1], lambda p, q: tensordot(p, q, dims), "a", "b")]


def _vecdot_jvp(node, inputs, t, meta):      # (a complex x was conjugated before it was recorded)
    return [_bilinear(node, t[0], t[1], lambda p, q: (p * q).sum(node.dim), "x", "y")]


def _einsum_jvp(node, inputs, t, meta):
    """Multilinear: the sum over the operands with a tangent of the same einsum with that
    operand replaced by its tangent."""
    from .linalg import einsum
    ids = {}

    def subs(term):
        return [ids.setdefault(label, len(ids)) for label in term]
    total = None
    for i, ti in enumerate(t):
        if ti is None:
            continue
        args = []
        for j, term in enumerate(node.terms):
            args += [ti if j == i else node.saved(f"op{j}"), subs(term)]
        term = einsum(*args, subs(node.output))
        total = term if total is None else total + term
    return [total]


JVP = {
    OuterBackward0: _plain_jvp(lambda p, q: p.outer(q)),
    TensordotBackward0: _tensordot_jvp,         # and inner
    LinalgVecdotBackward0: _vecdot_jvp,
    EinsumBackward0: _einsum_jvp,
    MmBackward0: _plain_jvp(lambda p, q: p.mm(q)),
    BmmBackward0: _plain_jvp(lambda p, q: p.bmm(q)),
    MvBackward0: _plain_jvp(lambda p, q: p.mv(q)),
    DotBackward0: _plain_jvp(lambda p, q: p.dot(q)),
    MatmulBackward0: _plain_jvp(lambda p, q: p.matmul(q)),
    AddmmBackward0: _add_jvp(lambda p, q: p.mm(q)),
    AddmvBackward0: _add_jvp(lambda p, q: p.mv(q)),
    BaddbmmBackward0: _add_jvp(lambda p, q: p.bmm(q)),
    AddbmmBackward0: _add_jvp(lambda p, q: p.bmm(q).sum(0)),
}
