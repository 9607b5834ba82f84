"""repr() of a tensor, laid out as PyTorch prints it: 4 decimals (or scientific notation
when the magnitudes call for it), integer-valued floats as '1.', long tensors summarised
with '...', and a dtype suffix for dtypes that are not inferred from Python numbers.

The rules (which values set the width, when scientific notation is used, where lines and
suffixes wrap) follow torch/_tensor_str.py's documented output, so that a repr written by
torchlite reads exactly like PyTorch's with 'torch.' replaced by 'torchlite.'."""
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


def _nested_values(t, summarize):
    """t's values as nested lists; when summarising, only edgeitems entries at each end of
    every dim, with Ellipsis standing for the ones left out."""
    if t.ndim == 0:
        return t.item()
    n, e = t.shape[0], PRINT_OPTS.edgeitems
    if not summarize:
        return t.tolist()
    if n > 2 * e:
        keep = list(range(e)) + [None] + list(range(n - e, n))
    else:
        keep = list(range(n))
    if t.ndim == 1:
        return [Ellipsis if i is None else t[i].item() for i in keep]
    return [Ellipsis if i is None else _nested_values(t[i], True) for i in keep]


def _flat(vals, out):
    if isinstance(vals, list):
        for v in vals:
            _flat(v, out)
    elif vals is not Ellipsis:
        out.append(vals)
    return out


class _Formatter:
    """Chooses one format for all printed values: integer mode for integer-valued floats,
    scientific notation for wide ranges, and the common width.  Only finite non-zero values
    take part in the choice, as in PyTorch (so zeros, nan and inf never widen a column)."""

    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max([len(str(v)) for v in values] or [1])
            return
        shown = [v for v in values if math.isfinite(v) and v != 0]
        if shown:
            self._choose(shown)

    def _choose(self, shown):
        mags = [abs(v) for v in shown]
        hi, lo = max(mags), min(mags)
        self.int_mode = all(v == math.ceil(v) for v in shown)
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                         if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)
        if self.sci_mode:
            strs = [f"{v:.{PRINT_OPTS.precision}e}" for v in shown]
        elif self.int_mode:
            strs = [f"{v:.0f}." for v in shown]
        else:
            strs = [f"{v:.{PRINT_OPTS.precision}f}" for v in shown]
        self.width = max(len(s) for s in strs)

    def format(self, v):
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:{self.width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("." if math.isfinite(v) else "")
        else:
            s = f"{v:.{PRINT_OPTS.precision}f}"
        return s.rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex layout: the real parts share one format, right-aligned, and the
    imaginary parts another, written with their sign and a j: '1.+2.j', '-0.5000-1.2500j'."""

    def __init__(self, values, dtype):
        part = dtype.to_real()
        self.re = _Formatter([v.real for v in values], part)
        self.im = _Formatter([v.imag for v in values], part)
        self.width = self.re.width + self.im.width + 1

    def format(self, v):
        imag = self.im.format(v.imag).lstrip() + "j"
        return self.re.format(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _render(vals, fmt, indent, ndim):
    """The bracketed text of nested values; `indent` is the column of the opening bracket."""
    if ndim == 0:
        return fmt.format(vals)
    if ndim == 1:
        items = [" ..." if v is Ellipsis else fmt.format(v) for v in vals]
        per_line = max(1, int((PRINT_OPTS.linewidth - indent) // (fmt.width + 2)))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = ["..." if v is Ellipsis else _render(v, fmt, indent + 1, ndim - 1) for v in vals]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _body_and_suffixes(src, dt, indent):
    """The bracketed values and the suffixes they call for (size=, dtype=)."""
    suffixes = []
    if src.numel() == 0:
        if src.ndim != 1:
            suffixes.append(f"size={tuple(src.shape)}")
        # nothing shows whether an empty tensor is int64, so only the default dtype is implied
        if dt is not D.get_default_dtype():
            suffixes.append(f"dtype={dt!r}")
        return "[]", suffixes
    summarize = src.numel() > PRINT_OPTS.threshold
    if summarize and not PRINT_OPTS.edgeitems:
        suffixes.append(f"size={tuple(src.shape)}")
    if dt not in (D.get_default_dtype(), D.get_default_complex_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={dt!r}")
    if summarize and not PRINT_OPTS.edgeitems:
        return "[...]", suffixes
    vals = _nested_values(src, summarize)
    fmt = (_ComplexFormatter if dt.is_complex else _Formatter)(
        _flat(vals, []) if isinstance(vals, list) else [vals], dt)
    return _render(vals, fmt, indent, src.ndim), suffixes


def _join_suffixes(text, suffixes, indent):
    """Append ', suffix' items, starting a new line where one would pass linewidth."""
    last_len = len(text) - text.rfind("\n") + 1
    parts = [text]
    for sfx in suffixes:
        if last_len + len(sfx) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + sfx)
            last_len = indent + len(sfx)
        else:
            parts.append(", " + sfx)
            last_len += len(sfx) + 2
    return "".join(parts) + ")"


def tensor_repr(t, prefix="tensor("):
    """PyTorch's repr text for tensor t."""
    dt = t.dtype
    if t.is_meta:                       # no data: PyTorch prints the size instead
        suffixes = ["device='meta'", f"size={tuple(t.shape)}"]
        if dt is not D.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        if t.grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
        elif t.requires_grad:
            suffixes.append("requires_grad=True")
        return _join_suffixes(prefix + "...", suffixes, len(prefix))
    src = t.detach()
    if src.device.type != "cpu":
        src = src.cpu()
    indent = len(prefix)
    suffixes = [f"device='{t.device}'"] if t.device.type != "cpu" else []
    body, more = _body_and_suffixes(src, dt, indent)
    suffixes += more
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _join_suffixes(prefix + body, suffixes, indent)
