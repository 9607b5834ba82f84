"""torch.cond and torch.while_loop: PyTorch's structured control flow.  torch.compile and
torch.export capture them as one graph node each; here, as in PyTorch's eager mode, they run
the chosen branch or the loop directly (and torchlite.compile breaks the graph at the
data-dependent choice, as at any bool of a tensor)."""

__all__ = ["cond", "while_loop"]


def _truth(pred, op):
    from ._tensor import Tensor
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"{op}: expected pred to be a boolean or a tensor with one element, "
                               f"got a tensor of shape {tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise RuntimeError(f"{op}: expected pred to be bool or a tensor, got {type(pred).__name__}")


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands); pred a bool or a one-element
    tensor, operands a tuple or list."""
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("cond: expected true_fn and false_fn to be callable")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: expected operands to be a tuple or list, got "
                           f"{type(operands).__name__}")
    return (true_fn if _truth(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """carried = body_fn(*carried) while cond_fn(*carried) holds; returns the final carried
    tuple.  body_fn must return as many values as it is given."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: expected carried_inputs to be a tuple or list, got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while _truth(cond_fn(*carried), "while_loop"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"while_loop: body_fn returned {len(out)} values for "
                               f"{len(carried)} carried inputs")
        carried = out
    return carried
