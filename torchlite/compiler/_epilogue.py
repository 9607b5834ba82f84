"""Epilogue fusion (options={"epilogue_fusion": True}): a fused elementwise kernel that
reads a matrix product's result (a Linear's output going through GELU, a dropout, a residual
add) runs on each tile of the product as the GEMM finishes it, while the tile is in L1
(torchlite/_core/matmul.pyx's mm_epilogue, through the GEMM's epilogue hook in
kernels/gemm.h), instead of as a pass over the whole result afterwards.

The pass runs after fusion.  A FusedKernel call one of whose inputs is an F.linear, mm or
2-D matmul node read by nothing else, of the kernel's own shape (the kernel maps the
product's elements one to one) and with no row instructions, becomes one MatmulEpilogue call
taking the product's operands and the kernel's other inputs.  Autograd sees eager's graph:
the product recorded as addmm or mm (linalg.mm_computed_by), the kernel's node on its result,
so gradients are eager's.  Where the fused form does not apply to a call's tensors (CUDA,
dtypes other than float32/float64, an input F.linear does not fold into one product, empty
products), the product and the kernel run one after the other."""
import operator

from .._dispatch import matmul as _mm
from .._ops.linalg import matmul, mm, mm_computed_by
from ..autograd.grad_mode import _state as _grad_state
from ..nn import functional as F
from ..nn.functional.linear import as_matrix_product
from ._fusion import FusedKernel, install, _fusable, _family, _is_row_op
from ._passes import _impure
from ._random import philox_reserve
from ._lowering import FLOATS

__all__ = ["fuse_epilogues", "MatmulEpilogue"]


def _product_operands(n):
    """(input, weight, bias) of a node computing input @ weight.t() + bias (F.linear), or
    (a, b) of one computing a @ b with 2-D operands (mm, matmul); None otherwise."""
    if n.op == "call_function" and n.target is F.linear:
        names = ("input", "weight", "bias")
        args = list(n.args) + [n.kwargs[k] for k in names[len(n.args):] if k in n.kwargs]
        if len(args) == 2:
            args.append(None)
        return ("linear", *args) if len(args) == 3 and set(n.kwargs) <= set(names) else None
    is_mm = (n.op == "call_function" and n.target in (mm, matmul, operator.matmul)) \
        or (n.op == "call_method" and n.target in ("mm", "matmul", "__matmul__"))
    if is_mm and len(n.args) == 2 and not n.kwargs:
        a, b = n.args
        if all(getattr(x, "meta", {}).get("val") is not None and len(x.meta["val"][0]) == 2
               for x in (a, b)):
            return ("mm", a, b, None)
    return None


def _foldable(h, n, shape):
    """Whether product node h can run inside node n, which works on `shape`: n is its only
    reader, h has that shape, and no effect (a grad-mode switch, an in-place op) lies between
    them in the graph, so running the product where n runs changes nothing.  (A dropout's
    reservation of generator blocks changes nothing the product reads, as in fusion.)"""
    hv = h.meta.get("val")
    if _product_operands(h) is None or len(h.users) != 1 or hv is None \
            or tuple(hv[0]) != tuple(shape):
        return False
    m = h.next
    while m is not n:                # n reads h, so it comes after it
        if _impure(m) and m.target is not philox_reserve:
            return False
        m = m.next
    return True


def _single_op_kernels(graph):
    """A fusable elementwise op alone after a product (the GELU of Linear-GELU, a residual
    add) is not worth a kernel of its own, so fusion leaves it; as an epilogue it saves a pass
    over the product's result, so it becomes a one-op FusedKernel here."""
    for n in list(graph.nodes):
        if n.meta.get("fused") is None and _fusable(n) and not _impure(n) \
                and not _is_row_op(n) and _family(n) is not None \
                and any(_foldable(h, n, n.meta["val"][0]) and h.meta["val"][1] in FLOATS
                        and h.meta["val"][2] == "cpu" for h in n.all_input_nodes):
            inputs = list(dict.fromkeys(n.all_input_nodes))
            install(graph, f"{n.name}_epilogue", [n], inputs, [n], tuple(n.meta["val"][0]))


def fuse_epilogues(graph):
    """Fold each fusable (product, kernel) pair of the graph into one MatmulEpilogue call;
    returns the MatmulEpilogue objects made.  For static graphs (the kernels made here have
    the graph's sizes)."""
    made = []
    _single_op_kernels(graph)
    for call in list(graph.nodes):
        kernel = call.meta.get("fused")
        if not isinstance(kernel, FusedKernel) or call.op != "call_function" or kernel.dynamic \
                or any(kernel.out_rows) or kernel.program.has_row_instructions:
            continue
        for i, h in enumerate(call.args):
            if not hasattr(h, "users") or not _foldable(h, call, kernel.shape):
                continue
            v = h.meta["val"]
            if tuple(v[0]) != tuple(kernel.shape) or v[1] not in FLOATS or v[2] != "cpu":
                continue
            form, x, w, b = _product_operands(h)
            fused = MatmulEpilogue(kernel, i, form)
            others = call.args[:i] + call.args[i + 1:]
            with graph.inserting_before(call):
                new = graph.create_node("call_function", fused, (x, w, b) + tuple(others), {})
            new.meta.update(call.meta)
            new.meta["fused"] = kernel
            call.replace_all_uses_with(new)
            graph.erase_node(call)
            graph.erase_node(h)
            kernel.epilogue_of = form
            made.append(fused)
            break
    return made


class MatmulEpilogue:
    """A product (F.linear, or mm) and the FusedKernel that reads its result as input
    `index`, run as one GEMM whose epilogue is the kernel's program.  Called with the
    product's operands (input, weight, bias; or a, b, None) and the kernel's other inputs;
    returns the kernel's outputs."""

    def __init__(self, kernel, index, form):
        self.kernel, self.index, self.form = kernel, index, form
        self.__name__ = f"{kernel.__name__}_after_{form}"

    def __repr__(self):
        return f"<MatmulEpilogue {self.kernel.__name__} after {self.form}>"

    def __call__(self, x, w, b, *others):
        k, i = self.kernel, self.index
        rows = self._matrix_product(x, w, b)
        if rows is None or any(t.device.type != "cpu" for t in others):
            return self._apart(x, w, b, others)
        x2, w2, lead = rows
        shape = tuple(k.shape)
        arrays = _as_matrices(others, shape, (x2.shape[0], w2.shape[1])) if lead else \
            tuple(t._data for t in others)
        if arrays is None or not all(_row_major(a) for a in arrays):
            # (an input in another memory order gives eager's result that order)
            return self._apart(x, w, b, others)
        h_requires_grad = _grad_state.enabled and any(
            t is not None and t._requires_grad for t in (x, w, b))
        flags = tuple(t._requires_grad for t in others)
        bw, program, spec = k.plan(flags[:i] + (h_requires_grad,) + flags[i:])
        arrays = arrays[:i] + (None,) + arrays[i:]
        made = []

        def compute(a, bm, addend):
            res = _mm.mm_epilogue(a, bm, addend, program, arrays, i)
            if res is None:                   # _matrix_product checked what it needs
                raise RuntimeError(f"{self.__name__}: the fused product refused its operands")
            made.extend(res[1])
            return res[0]
        h = mm_computed_by(b, x2, w2, compute)
        if lead is not None:
            h = h.view(shape)
            made = [o.view(shape) for o in made]
        return k.finish(others[:i] + (h,) + others[i:], made, shape, bw)

    def _apart(self, x, w, b, others):
        """The product, then the kernel on its result: where the fused form does not apply."""
        h = F.linear(x, w, b) if self.form == "linear" else mm(x, w)
        i = self.index
        return self.kernel(*others[:i], h, *others[i:])

    def _matrix_product(self, x, w, b):
        """(x2, w2, lead): the 2-D product to run fused, its result viewed to lead + (n,)
        after (None: 2-D already); None when the fused form does not apply."""
        if x.device.type != "cpu" or w.device.type != "cpu" or \
                (b is not None and b.device.type != "cpu"):
            return None
        if self.form == "linear":
            if w.ndim != 2:
                return None
            rows = as_matrix_product(x, w)
            if rows is None:
                return None
            x2, lead = rows
            w2 = w.t()
        else:
            x2, w2, lead = x, w, None
        if x2.ndim != 2 or w2.ndim != 2 or x2._data.dtype not in FLOATS \
                or w2._data.dtype != x2._data.dtype or 0 in x2.shape or 0 in w2.shape \
                or x2.shape[1] != w2.shape[0] \
                or (b is not None and b._data.dtype != x2._data.dtype) \
                or tuple(self.kernel.shape) != (tuple(lead) if lead else (x2.shape[0],)) + (w2.shape[1],):
            return None
        return x2, w2, lead


def _as_matrices(tensors, shape, matrix):
    """The arrays of `tensors` broadcast to `shape` and viewed as the (m, n) `matrix` the
    product computes (its leading dims folded into rows); None when one cannot be a view."""
    out = []
    for t in tensors:
        a = t._data
        if tuple(a.shape) != shape:
            a = a.expand(shape)
        v = a.view(matrix)
        if v is None:
            return None
        out.append(v)
    return tuple(out)


def _row_major(a):
    """Whether a 2-D view (of the product's shape) leaves an elementwise result row-major, as
    the epilogue's outputs are: a row-major or broadcast layout, not a transposed one."""
    if a.ndim < 2:
        return True
    (r, c), (sr, sc) = a.shape[-2:], a.strides[-2:]
    return r == 1 or c == 1 or sr == 0 or sc == 0 or sr >= sc

