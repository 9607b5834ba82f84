"""The recurrent layers' arithmetic, shared by nn.RNN/LSTM/GRU (nn/modules/rnn.py), their
*Cell layers, and the torch.* functions with ATen's signatures (nn/functional/aten.py:
torch.lstm, gru, rnn_tanh, rnn_relu and the *_cell forms): one step of each cell from its gate
pre-activations, one layer in one direction (plain or packed), and the stack of layers."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._ops.creation import empty as _empty, empty_like as _empty_like
from ..._ops.elementwise import addcmul as _addcmul, mul as _mul
from ..._ops.joining import cat as _cat, stack as _stack
from ..._ops.linalg import addmm as _addmm
from ..._ops import rnn as _fused
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled as _is_grad_enabled
from ...autograd import grad as _autograd_grad
from ...autograd import graph as _graph
from .linear import linear as _linear
from .dropout import dropout as _dropout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._tensor import Tensor


def rnn_step(gates: Tensor, relu: bool) -> Tensor:
    """h = tanh(gates), or relu(gates)."""
    return gates.relu() if relu else gates.tanh()


def lstm_step(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """gates: (B, 4H) pre-activations in the order i, f, g, o; returns (h, c).  chunk (one
    node whose backward concatenates) rather than slices (a node each, each scattering into
    a zero tensor of the full size)."""
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """gi = W_i x + b_i, gh = W_h h + b_h, each (B, 3H) in the order r, z, n."""
    ir, iz, in_ = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (h - n)


class _LSTMLayer(Function):
    """One LSTM layer in one direction as a single autograd op (no projection).

    The forward loop records nothing; backward runs the recurrence backwards with the saved
    gate activations and then forms the weight gradients in one product each over all time
    steps (dW_hh = dG^T H_prev, dW_ih = dG^T X), where the step-by-step graph makes one small
    product per step and sums them.  Under create_graph the backward is recomputed through
    the step-by-step graph instead, so higher-order gradients stay exact."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, bias, reverse):
        steps = x.shape[0]
        xw = _linear(x.reshape(-1, x.shape[2]), w_ih, bias).view(steps, x.shape[1], -1)
        # each step adds h W_hh^T to its slice of xw in place, then activates it there:
        # acts holds i, f, g, o after their nonlinearities
        acts = xw
        cs = _empty(steps, *c0.shape, dtype=x.dtype, device=x.device)
        hs = _empty(steps, *h0.shape, dtype=x.dtype, device=x.device)
        w_hh_t = w_hh.t()
        if _fused.lstm_forward_steps(acts, h0, c0, hs, cs, w_hh_t, reverse):  # one call
            last = 0 if reverse else steps - 1
            h, c = hs[last], cs[last]
        else:
            h, c = _lstm_steps_in_python(acts, h0, c0, hs, cs, w_hh_t, reverse)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, bias, hs)   # hs is the output: a later
        ctx.acts, ctx.cs, ctx.reverse = acts, cs, reverse           # in-place change is caught
        if _graph.forward_ad is not None:        # a dual level is open: jvp may need them
            ctx.save_for_forward(x, h0, c0, w_ih, w_hh, bias)
        return hs, h.clone(), c.clone()

    @staticmethod
    def jvp(ctx, dx, dh0, dc0, dw_ih, dw_hh, dbias, _reverse):
        """The tangents by the forward recurrence of the tangents, with the saved gate
        activations: dA = dx W_ih^T + x dW_ih^T + db + h_prev dW_hh^T (all steps in one product
        each) + dh_prev W_hh^T (per step); di = i(1-i) dA_i, df = f(1-f) dA_f,
        dg = (1-g^2) dA_g, do = o(1-o) dA_o; dc = df c_prev + f dc_prev + di g + i dg;
        dh = do tanh(c) + o (1 - tanh(c)^2) dc."""
        x, h0, c0, w_ih, w_hh, bias = ctx.saved_tensors
        acts, cs, reverse = ctx.acts, ctx.cs, ctx.reverse
        steps, batch = x.shape[0], x.shape[1]
        order = list(range(steps - 1, -1, -1) if reverse else range(steps))
        base = None

        def add(term):
            nonlocal base
            base = term if base is None else base + term
        if dx is not None:
            add(dx.reshape(steps * batch, -1).mm(w_ih.t()))
        if dw_ih is not None:
            add(x.reshape(steps * batch, -1).mm(dw_ih.t()))
        if dw_hh is not None:       # h_{t-1} of every step, in time order: o * tanh(c) of the step before
            o = acts[:, :, 3 * h0.shape[1]:]
            hs = o * cs.tanh()
            first = h0.unsqueeze(0)
            h_prev = _cat([hs[1:], first]) if reverse else _cat([first, hs[:-1]])
            add(h_prev.reshape(steps * batch, -1).mm(dw_hh.t()))
        if dbias is not None:
            add(dbias)
        base = None if base is None else base.expand(steps * batch, acts.shape[2]).reshape(acts.shape)
        dh = dh0 if dh0 is not None else h0.new_zeros(h0.shape)
        dc = dc0 if dc0 is not None else c0.new_zeros(c0.shape)
        w_hh_t = w_hh.t()
        d_out = [None] * steps
        for k, t in enumerate(order):
            c_prev = c0 if k == 0 else cs[order[k - 1]]
            da = dh.mm(w_hh_t) if base is None else _addmm(base[t], dh, w_hh_t)
            i, f, g, o = acts[t].chunk(4, 1)
            da_i, da_f, da_g, da_o = da.chunk(4, 1)
            dc = (da_f * f * (1 - f) * c_prev + f * dc + da_i * i * (1 - i) * g
                  + i * (1 - g * g) * da_g)
            tc = cs[t].tanh()
            dh = da_o * o * (1 - o) * tc + o * (1 - tc * tc) * dc
            d_out[t] = dh
        return _stack(d_out), dh, dc

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        x, h0, c0, w_ih, w_hh, bias, hs = ctx.saved_tensors
        if _is_grad_enabled():       # create_graph: differentiate the step-by-step graph
            return _lstm_layer_grads_by_graph(ctx, (x, h0, c0, w_ih, w_hh, bias),
                                              (d_out, d_h, d_c))
        acts, cs, reverse = ctx.acts, ctx.cs, ctx.reverse
        steps = x.shape[0]
        order = list(range(steps - 1, -1, -1) if reverse else range(steps))
        d_gates = _empty_like(acts)
        dh, dc = d_h.contiguous().clone(), d_c.contiguous().clone()
        if _fused.lstm_backward_steps(acts, c0, cs, d_out, dh, dc, d_gates, w_hh, reverse):
            return _lstm_weight_grads(ctx, x, h0, w_ih, w_hh, bias, hs, d_gates, dh, dc)
        packed = _fused.pack_right(w_hh)
        for k in range(steps - 1, -1, -1):          # the forward's steps, last first
            t = order[k]
            c_prev = c0 if k == 0 else cs[order[k - 1]]
            dh += d_out[t]
            dg = d_gates[t]
            if _fused.lstm_step_backward(acts[t], c_prev, cs[t], dh, dc, dg):
                dh = _times(dg, w_hh, packed)
                continue
            i, f, g, o = acts[t].chunk(4, 1)
            tc = cs[t].tanh()
            dc.addcmul_(dh * o, 1 - tc * tc)
            di, df, dgg, do = dg.chunk(4, 1)
            _mul(dc * g, i * (1 - i), out=di)
            _mul(dc * c_prev, f * (1 - f), out=df)
            _mul(dc * i, 1 - g * g, out=dgg)
            _mul(dh * tc, o * (1 - o), out=do)
            dc.mul_(f)
            dh = _times(dg, w_hh, packed)
        return _lstm_weight_grads(ctx, x, h0, w_ih, w_hh, bias, hs, d_gates, dh, dc)


def _lstm_weight_grads(ctx, x, h0, w_ih, w_hh, bias, hs, d_gates, dh, dc):
    """_LSTMLayer's gradients once the recurrence has run backwards: one product each over
    all time steps for the input and the weights."""
    steps, hsz = x.shape[0], h0.shape[1]
    flat = d_gates.view(steps * x.shape[1], -1)
    # h_{t-1} for every step, in time order (one copy, not one per step)
    first = h0.unsqueeze(0)
    h_prev = _cat([hs[1:], first]) if ctx.reverse else _cat([first, hs[:-1]])
    need = ctx.needs_input_grad
    dx = flat.mm(w_ih).view(x.shape) if need[0] else None
    dw_ih = flat.t().mm(x.reshape(-1, x.shape[2])) if need[3] else None
    dw_hh = flat.t().mm(h_prev.view(-1, hsz)) if need[4] else None
    db = flat.sum(0) if bias is not None and need[5] else None
    return dx, dh, dc, dw_ih, dw_hh, db, None


def _lstm_steps_in_python(acts, h0, c0, hs, cs, w_hh_t, reverse):
    """The recurrence step by step from Python (where the one-call kernel does not apply:
    another device or dtype): each step's product, then the fused step kernel or its Tensor
    ops.  Returns the last (h, c)."""
    steps, hsz = acts.shape[0], h0.shape[1]
    packed = _fused.pack_right(w_hh_t)       # W_hh packed once for all the steps
    h, c = h0, c0
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        a = acts[t]
        if not _fused.addmm_packed(a, h, w_hh_t, packed, a):
            _addmm(a, h, w_hh_t, out=a)
        if _fused.lstm_step_forward(a, c, cs[t], hs[t]):     # one kernel for the rest
            h, c = hs[t], cs[t]
            continue
        a[:, :2 * hsz].sigmoid_()
        a[:, 2 * hsz:3 * hsz].tanh_()
        a[:, 3 * hsz:].sigmoid_()
        i, f, g, o = a.chunk(4, 1)
        c = _addcmul(f * c, i, g, out=cs[t])
        h = _mul(o, c.tanh(), out=hs[t])
    return h, c


def _times(a, w, packed):
    """a @ w, reading w's packed panels where it can."""
    r = _fused.mm_packed(a, w, packed)
    return a.mm(w) if r is None else r


def _lstm_layer_composite(x, h, c, w_ih, w_hh, bias, reverse):
    """The same layer as a step-by-step graph of Tensor ops (differentiable to any order)."""
    steps = x.shape[0]
    xw = _linear(x.reshape(-1, x.shape[2]), w_ih, bias).view(steps, x.shape[1], -1).unbind(0)
    w_hh_t = w_hh.t()
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        h, c = lstm_step(_addmm(xw[t], h, w_hh_t), c)
        outs[t] = h
    return _stack(outs), h, c


def _lstm_layer_grads_by_graph(ctx, inputs, grads):
    """_LSTMLayer's gradients under create_graph: rebuild the step-by-step graph from the
    inputs and differentiate it (with a graph, so the result is differentiable again)."""
    need = ctx.needs_input_grad
    wanted = [t for t, n in zip(inputs, need) if n and t is not None]
    outs = _lstm_layer_composite(*inputs, ctx.reverse)
    got = iter(_autograd_grad(outs, wanted, grads, create_graph=True, allow_unused=True))
    return tuple(next(got) if n and t is not None else None for t, n in zip(inputs, need)) + (None,)


# ---- whole layers: nn.RNN/LSTM/GRU and torch.lstm/gru/rnn_tanh/rnn_relu ----------------------------
def _unpack_weights(weights, has_biases, has_proj):
    if has_biases:
        w_ih, w_hh, b_ih, b_hh = weights[:4]
    else:
        (w_ih, w_hh), b_ih, b_hh = weights[:2], None, None
    return w_ih, w_hh, b_ih, b_hh, (weights[-1] if has_proj else None)


def run_direction(mode: str, x: Tensor, h: Tensor, c: Tensor | None, weights: Sequence[Tensor], has_biases: bool,
                  has_proj: bool, reverse: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """One layer in one direction over x (T, B, in): (outputs (T, B, H), h_T, c_T).  weights:
    [w_ih, w_hh, (b_ih, b_hh), (w_hr)] as PyTorch lists one layer's; mode 'RNN_TANH',
    'RNN_RELU', 'LSTM' or 'GRU'."""
    w_ih, w_hh, b_ih, b_hh, w_hr = _unpack_weights(weights, has_biases, has_proj)
    steps, batch = x.shape[0], x.shape[1]
    if mode == "LSTM" and w_hr is None:
        bias = None if b_ih is None else b_ih + b_hh
        return _LSTMLayer.apply(x, h, c, w_ih, w_hh, bias, reverse)
    gru = mode == "GRU"
    # the recurrent bias joins the input's (one add per layer) except in the GRU, whose
    # reset gate multiplies W_hn h + b_hn
    in_bias = b_ih if gru or b_ih is None else b_ih + b_hh
    xw = _linear(x.reshape(steps * batch, x.shape[2]), w_ih, in_bias).view(steps, batch, -1)
    xw = xw.unbind(0)           # one node for every step's slice (its backward stacks)
    w_hh_t = w_hh.t()
    w_hr_t = None if w_hr is None else w_hr.t()
    relu = mode == "RNN_RELU"
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        if gru:
            gh = h.mm(w_hh_t) if b_hh is None else _addmm(b_hh, h, w_hh_t)
            h = gru_step(xw[t], gh, h)
        else:
            gates = _addmm(xw[t], h, w_hh_t)
            if mode == "LSTM":
                h, c = lstm_step(gates, c)
                if w_hr_t is not None:
                    h = h.mm(w_hr_t)
            else:
                h = rnn_step(gates, relu)
        outs[t] = h
    return _stack(outs), h, c


def run_direction_packed(mode: str, xs: Sequence[Tensor], sizes: Sequence[int], h: Tensor, c: Tensor | None,
                         weights: Sequence[Tensor], has_biases: bool, has_proj: bool,
                         reverse: bool) -> tuple[list[Tensor], Tensor, Tensor | None]:
    """One layer in one direction over a packed input (xs[t]: the batch_sizes[t] rows of step
    t, the batch sorted by length): ([outputs of each step], h, c), the states of the
    sequences that have ended (or, going backwards, not begun) carried through unchanged."""
    w_ih, w_hh, b_ih, b_hh, w_hr = _unpack_weights(weights, has_biases, has_proj)
    w_hr_t = None if w_hr is None else w_hr.t()
    gru, relu, lstm = mode == "GRU", mode == "RNN_RELU", mode == "LSTM"
    in_bias = b_ih if gru or b_ih is None else b_ih + b_hh
    xw = _linear(_cat(xs), w_ih, in_bias).split(sizes)
    w_hh_t = w_hh.t()
    outs = [None] * len(sizes)
    for t in (range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))):
        b = sizes[t]
        hp = h[:b]
        if gru:
            gh = hp.mm(w_hh_t) if b_hh is None else _addmm(b_hh, hp, w_hh_t)
            hn = gru_step(xw[t], gh, hp)
        else:
            gates = _addmm(xw[t], hp, w_hh_t)
            if lstm:
                hn, cn = lstm_step(gates, c[:b])
                if w_hr_t is not None:
                    hn = hn.mm(w_hr_t)
                c = cn if b == c.shape[0] else _cat([cn, c[b:]])
            else:
                hn = rnn_step(gates, relu)
        outs[t] = hn
        h = hn if b == h.shape[0] else _cat([hn, h[b:]])
    return outs, h, c


def run_layers(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, layer_weights: Sequence[Sequence[Tensor]],
               num_layers: int, dropout: float, train: bool, bidirectional: bool, has_biases: bool, has_proj: bool,
               sizes: Sequence[int] | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    """Every layer and direction: x time-major (T, B, in), or, with sizes (a packed input's
    batch_sizes), the packed data (sum(sizes), in); h0/c0 (layers * directions, B, size), c0
    None but for LSTM; layer_weights[k] the weights of layer k // dirs, direction k % dirs.
    Returns (output (T, B, dirs*H) or packed (sum(sizes), dirs*H), h_n, c_n or None); dropout
    between layers when train."""
    dirs = 2 if bidirectional else 1
    packed = sizes is not None
    out = list(x.split(sizes)) if packed else x
    hs, cs = [], []
    for layer in range(num_layers):
        if layer > 0 and dropout > 0 and train:
            out = list(_dropout(_cat(out), dropout, True).split(sizes)) if packed \
                else _dropout(out, dropout, True)
        results = []
        for d in range(dirs):
            k = layer * dirs + d
            c_k = None if c0 is None else c0[k]
            if packed:
                y, h, c = run_direction_packed(mode, out, sizes, h0[k], c_k, layer_weights[k],
                                               has_biases, has_proj, d == 1)
            else:
                y, h, c = run_direction(mode, out, h0[k], c_k, layer_weights[k], has_biases,
                                        has_proj, d == 1)
            results.append(y)
            hs.append(h)
            cs.append(c)
        if packed:
            out = results[0] if dirs == 1 else [_cat(pair, 1) for pair in zip(*results)]
        else:
            out = results[0] if dirs == 1 else _cat(results, 2)
    if packed:
        width = h0.shape[2] * dirs
        out = _cat(out) if out else x.new_empty((0, width))
    return out, _stack(hs), (_stack(cs) if c0 is not None else None)
