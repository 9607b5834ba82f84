"""repr() of a tensor, laid out as PyTorch prints it: 4 decimals (or scientific notation
when the magnitudes call for it), integer-valued floats as '1.', long tensors summarised
with '...', and a dtype suffix for dtypes that are not inferred from Python numbers."""
import math

from . import _dtype as D


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Like torch.set_printoptions."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, math.inf, 3, 80
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            setattr(PRINT_OPTS, k, v)
    PRINT_OPTS.sci_mode = sci_mode


def _summarized(t, summarize):
    """Nested lists of the values to print; '...' marks elided runs."""
    if t.ndim == 0:
        return t.item()
    n, e = t.shape[0], PRINT_OPTS.edgeitems
    if summarize and n > 2 * e:
        idx = list(range(e)) + [None] + list(range(n - e, n))
    else:
        idx = range(n)
    if t.ndim == 1:
        if summarize and n > 2 * e:
            head, tail = t[:e].tolist(), t[n - e:].tolist()
            return head + [Ellipsis] + tail
        return t.tolist()
    return [Ellipsis if i is None else _summarized(t[i], summarize) for i in idx]


def _flat(vals, out):
    if isinstance(vals, list):
        for v in vals:
            _flat(v, out)
    elif vals is not Ellipsis:
        out.append(vals)
    return out


class _Formatter:
    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max([len(str(v)) for v in values] or [1])
            return
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            self.width = max([len(self._fmt_special(v)) for v in values] or [1])
            return
        self.int_mode = all(v == math.ceil(v) for v in finite)
        absf = [abs(v) for v in finite if v != 0]
        hi, lo = (max(absf), min(absf)) if absf else (0.0, 0.0)
        if self.int_mode:
            self.sci_mode = hi > 1e8
        else:
            self.sci_mode = bool(absf) and (hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode
        self.width = max(len(self.format(v, pad=False)) for v in values)

    @staticmethod
    def _fmt_special(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")

    def format(self, v, pad=True):
        if not self.floating:
            s = str(v)
        elif not math.isfinite(v):
            s = self._fmt_special(v)
        elif self.sci_mode:
            s = f"{v:.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            s = f"{v:.0f}."
        else:
            s = f"{v:.{PRINT_OPTS.precision}f}"
        return s.rjust(self.width) if pad else s


def _render(vals, fmt, indent, ndim):
    if not isinstance(vals, list):
        return fmt.format(vals)
    if ndim == 1:
        items = ["..." if v is Ellipsis else fmt.format(v) for v in vals]
        per_line = max(1, (PRINT_OPTS.linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    sep = "," + "\n" * (ndim - 1) + " " * (indent + 1)
    parts = ["..." if v is Ellipsis else _render(v, fmt, indent + 1, ndim - 1) for v in vals]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t, prefix="tensor("):
    dt = t.dtype
    src = t.detach()
    if src.device.type != "cpu":
        src = src.cpu()
    summarize = src.numel() > PRINT_OPTS.threshold
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if src.numel() == 0 and src.ndim != 1:
        body = "[]"
        suffixes.insert(0, f"size={tuple(src.shape)}")
    else:
        vals = _summarized(src, summarize)
        fmt = _Formatter(_flat(vals, []) if isinstance(vals, list) else [vals], dt)
        body = _render(vals, fmt, len(prefix), src.ndim)
    if dt not in (D.get_default_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={dt!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    if suffixes:
        body += ", " + ", ".join(suffixes)
    return prefix + body + ")"
