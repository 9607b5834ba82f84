"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameters,
shapes and gate orders (LSTM: input, forget, cell, output; GRU: reset, update, new).

A layer runs one direction at a time: the input's contribution to every gate, for every time
step, is one matrix product up front; the loop over time then does one addmm with the hidden
state and the gate arithmetic.  All of it is Tensor ops, so autograd (and double backward)
comes for free."""
import math
import numbers
import warnings

import torchlite as _tl
from ..._ops import rnn as _fused
from ...autograd import Function
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

from ..functional.recurrent import rnn_step as _rnn_step, lstm_step as _lstm_step, gru_step as _gru_step

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---- one time step (shared by the layers and the cells) -------------------------------------
def _uniform_all_(module):
    """PyTorch's recurrent layers draw every parameter from U(-1/sqrt(H), 1/sqrt(H))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)


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
        xw = F.linear(x.reshape(-1, x.shape[2]), w_ih, bias).view(steps, x.shape[1], -1)
        hsz = h0.shape[1]
        acts = _tl.empty_like(xw)                   # i, f, g, o after their nonlinearities
        cs = _tl.empty(steps, *c0.shape, dtype=x.dtype, device=x.device)
        hs = _tl.empty(steps, *h0.shape, dtype=x.dtype, device=x.device)
        w_hh_t = w_hh.t()
        h, c = h0, c0
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            a = acts[t]
            _tl.addmm(xw[t], h, w_hh_t, out=a)
            if _fused.lstm_step_forward(a, c, cs[t], hs[t]):     # one kernel for the rest
                h, c = hs[t], cs[t]
                continue
            a[:, :2 * hsz].sigmoid_()
            a[:, 2 * hsz:3 * hsz].tanh_()
            a[:, 3 * hsz:].sigmoid_()
            i, f, g, o = a.chunk(4, 1)
            c = _tl.addcmul(f * c, i, g, out=cs[t])
            h = _tl.mul(o, c.tanh(), out=hs[t])
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, bias, hs)   # hs is the output: a later
        ctx.acts, ctx.cs, ctx.reverse = acts, cs, reverse           # in-place change is caught
        return hs, h.clone(), c.clone()

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        x, h0, c0, w_ih, w_hh, bias, hs = ctx.saved_tensors
        if _tl.is_grad_enabled():       # create_graph: differentiate the step-by-step graph
            return _lstm_layer_grads_by_graph(ctx, (x, h0, c0, w_ih, w_hh, bias),
                                              (d_out, d_h, d_c))
        acts, cs, reverse = ctx.acts, ctx.cs, ctx.reverse
        steps, hsz = x.shape[0], h0.shape[1]
        order = list(range(steps - 1, -1, -1) if reverse else range(steps))
        d_gates = _tl.empty_like(acts)
        dh, dc = d_h.contiguous().clone(), d_c.contiguous().clone()
        for k in range(steps - 1, -1, -1):          # the forward's steps, last first
            t = order[k]
            c_prev = c0 if k == 0 else cs[order[k - 1]]
            dh += d_out[t]
            dg = d_gates[t]
            if _fused.lstm_step_backward(acts[t], c_prev, cs[t], dh, dc, dg):
                dh = dg.mm(w_hh)
                continue
            i, f, g, o = acts[t].chunk(4, 1)
            tc = cs[t].tanh()
            dc.addcmul_(dh * o, 1 - tc * tc)
            di, df, dgg, do = dg.chunk(4, 1)
            _tl.mul(dc * g, i * (1 - i), out=di)
            _tl.mul(dc * c_prev, f * (1 - f), out=df)
            _tl.mul(dc * i, 1 - g * g, out=dgg)
            _tl.mul(dh * tc, o * (1 - o), out=do)
            dc.mul_(f)
            dh = dg.mm(w_hh)
        flat = d_gates.view(steps * x.shape[1], -1)
        h_prev = _tl.empty_like(hs)                 # h_{t-1} for every step, in time order
        for k, t in enumerate(order):
            h_prev[t] = h0 if k == 0 else hs[order[k - 1]]
        need = ctx.needs_input_grad
        dx = flat.mm(w_ih).view(x.shape) if need[0] else None
        dw_ih = flat.t().mm(x.reshape(-1, x.shape[2])) if need[3] else None
        dw_hh = flat.t().mm(h_prev.view(-1, hsz)) if need[4] else None
        db = flat.sum(0) if bias is not None and need[5] else None
        return dx, dh, dc, dw_ih, dw_hh, db, None


def _lstm_layer_composite(x, h, c, w_ih, w_hh, bias, reverse):
    """The same layer as a step-by-step graph of Tensor ops (differentiable to any order)."""
    steps = x.shape[0]
    xw = F.linear(x.reshape(-1, x.shape[2]), w_ih, bias).view(steps, x.shape[1], -1).unbind(0)
    w_hh_t = w_hh.t()
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        h, c = _lstm_step(_tl.addmm(xw[t], h, w_hh_t), c)
        outs[t] = h
    return _tl.stack(outs), h, c


def _lstm_layer_grads_by_graph(ctx, inputs, grads):
    """_LSTMLayer's gradients under create_graph: rebuild the step-by-step graph from the
    inputs and differentiate it (with a graph, so the result is differentiable again)."""
    need = ctx.needs_input_grad
    wanted = [t for t, n in zip(inputs, need) if n and t is not None]
    outs = _lstm_layer_composite(*inputs, ctx.reverse)
    got = iter(_tl.autograd.grad(outs, wanted, grads, create_graph=True, allow_unused=True))
    return tuple(next(got) if n and t is not None else None for t, n in zip(inputs, need)) + (None,)


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrent layer behind RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) \
                or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        for name, v in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
            if v <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        kw = {"device": device, "dtype": dtype}
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[:2 if bidirectional else 1]:
                layer_in = input_size if layer == 0 else real_hidden * self._directions
                shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_tl.empty(*shape, **kw)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def _directions(self):
        return 2 if self.bidirectional else 1

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction, as PyTorch lists them."""
        per = len(self._flat_weights_names) // (self.num_layers * self._directions)
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self):
        """A no-op kept for PyTorch compatibility (cuDNN's packed weights)."""

    def reset_parameters(self):
        _uniform_all_(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ---------------------------------------------------------------------------
    def _name(self):
        return type(self).__name__

    def _check_input(self, x):
        if not isinstance(x, _tl.Tensor):
            raise TypeError(f"{self._name()}: expected a Tensor input, got {type(x).__name__}")
        if x.dim() not in (2, 3):
            raise ValueError(f"{self._name()}: Expected input to be 2D or 3D, got {x.dim()}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        if not x.is_floating_point():
            raise RuntimeError(f"{self._name()}: expected a floating point input, got {x.dtype}")

    def _state_shape(self, batch, size):
        return (self.num_layers * self._directions, batch, size)

    def _check_state(self, h, shape, which):
        if tuple(h.shape) != shape:
            raise RuntimeError(f"Expected hidden{which} size {shape}, got {list(h.shape)}")

    def forward(self, input, hx=None):
        from ..utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx, PackedSequence)
        self._check_input(input)
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if self.batch_first and batched:
            x = x.transpose(0, 1)
        batch = x.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        is_lstm = self.mode == "LSTM"
        h0, c0 = self._initial_state(hx, batched, batch, real_hidden, x)
        out, hs, cs = x, [], []
        w = self.all_weights
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                out = F.dropout(out, self.dropout, True)
            results = []
            for d in range(self._directions):
                k = layer * self._directions + d
                y, h, c = self._run_direction(out, h0[k], None if c0 is None else c0[k], w[k], d == 1)
                results.append(y)
                hs.append(h)
                cs.append(c)
            out = results[0] if len(results) == 1 else _tl.cat(results, 2)
        h_n = _tl.stack(hs)
        c_n = _tl.stack(cs) if is_lstm else None
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if is_lstm else None
        return out, ((h_n, c_n) if is_lstm else h_n)

    def _forward_packed(self, packed, hx, packed_type):
        """A PackedSequence in, one out (PyTorch's): at step t only the first batch_sizes[t]
        sequences of the length-sorted batch run, so each sequence's final state is its own
        last step's (the first step's, going backwards); h_n and c_n come back in the
        caller's batch order."""
        data, sorted_idx, unsorted_idx = packed.data, packed.sorted_indices, packed.unsorted_indices
        self._check_input(data)
        if data.dim() != 2:
            raise ValueError(f"{self._name()}: a PackedSequence's data must be 2-D, got "
                             f"{data.dim()}-D")
        sizes = [int(b) for b in packed.batch_sizes.tolist()]
        batch = sizes[0] if sizes else 0
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        is_lstm = self.mode == "LSTM"
        if hx is not None and sorted_idx is not None:       # the caller's order -> sorted
            hx = (tuple(t.index_select(1, sorted_idx) for t in hx) if is_lstm
                  else hx.index_select(1, sorted_idx))
        h0, c0 = self._initial_state(hx, True, batch, real_hidden, data)
        steps, hs, cs = list(data.split(sizes)), [], []
        w = self.all_weights
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                steps = list(F.dropout(_tl.cat(steps), self.dropout, True).split(sizes))
            results = []
            for d in range(self._directions):
                k = layer * self._directions + d
                ys, h, c = self._run_direction_packed(steps, sizes, h0[k],
                                                      None if c0 is None else c0[k], w[k], d == 1)
                results.append(ys)
                hs.append(h)
                cs.append(c)
            steps = results[0] if len(results) == 1 else [_tl.cat(pair, 1) for pair in zip(*results)]
        h_n = _tl.stack(hs)
        c_n = _tl.stack(cs) if is_lstm else None
        if unsorted_idx is not None:
            h_n = h_n.index_select(1, unsorted_idx)
            c_n = c_n.index_select(1, unsorted_idx) if is_lstm else None
        out = packed_type(_tl.cat(steps) if steps else data.new_empty((0, real_hidden * self._directions)),
                          packed.batch_sizes, sorted_idx, unsorted_idx)
        return out, ((h_n, c_n) if is_lstm else h_n)

    def _initial_state(self, hx, batched, batch, real_hidden, x):
        """(h0, c0) as (layers*directions, batch, size) tensors; zeros where hx is None."""
        is_lstm = self.mode == "LSTM"
        h_shape = self._state_shape(batch, real_hidden)
        c_shape = self._state_shape(batch, self.hidden_size)
        if hx is None:
            h0 = _tl.zeros(h_shape, dtype=x.dtype, device=x.device)
            c0 = _tl.zeros(c_shape, dtype=x.dtype, device=x.device) if is_lstm else None
            return h0, c0
        if is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
            if not batched:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            elif h0.dim() != 3 or c0.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({h0.dim()}-D, {c0.dim()}-D) tensors")
            self._check_state(h0, h_shape, "[0]")
            self._check_state(c0, c_shape, "[1]")
            return h0, c0
        if not isinstance(hx, _tl.Tensor):
            raise TypeError(f"{self._name()}: hx must be a Tensor, got {type(hx).__name__}")
        if not batched:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
        elif hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.dim()}-D tensor")
        self._check_state(hx, h_shape, "")
        return hx, None

    def _run_direction(self, x, h, c, weights, reverse):
        """One layer in one direction over x (T, B, in): (outputs (T, B, H), h_T, c_T)."""
        if self.bias:
            w_ih, w_hh, b_ih, b_hh = weights[:4]
        else:
            (w_ih, w_hh), b_ih, b_hh = weights[:2], None, None
        w_hr = weights[-1] if self.proj_size > 0 else None
        steps, batch = x.shape[0], x.shape[1]
        if self.mode == "LSTM" and w_hr is None:
            bias = None if b_ih is None else b_ih + b_hh
            return _LSTMLayer.apply(x, h, c, w_ih, w_hh, bias, reverse)
        gru = self.mode == "GRU"
        # the recurrent bias joins the input's (one add per layer) except in the GRU, whose
        # reset gate multiplies W_hn h + b_hn
        in_bias = b_ih if gru or b_ih is None else b_ih + b_hh
        xw = F.linear(x.reshape(steps * batch, x.shape[2]), w_ih, in_bias).view(steps, batch, -1)
        xw = xw.unbind(0)           # one node for every step's slice (its backward stacks)
        w_hh_t = w_hh.t()
        w_hr_t = None if w_hr is None else w_hr.t()
        relu = self.mode == "RNN_RELU"
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            if gru:
                gh = h.mm(w_hh_t) if b_hh is None else _tl.addmm(b_hh, h, w_hh_t)
                h = _gru_step(xw[t], gh, h)
            else:
                gates = _tl.addmm(xw[t], h, w_hh_t)
                if self.mode == "LSTM":
                    h, c = _lstm_step(gates, c)
                    if w_hr_t is not None:
                        h = h.mm(w_hr_t)
                else:
                    h = _rnn_step(gates, relu)
            outs[t] = h
        return _tl.stack(outs), h, c

    def _run_direction_packed(self, xs, sizes, h, c, weights, reverse):
        """One layer in one direction over a packed input (xs[t]: the batch_sizes[t] rows of
        step t): ([outputs of each step], h, c), the states of the sequences that have ended
        (or, going backwards, not begun) carried through unchanged."""
        if self.bias:
            w_ih, w_hh, b_ih, b_hh = weights[:4]
        else:
            (w_ih, w_hh), b_ih, b_hh = weights[:2], None, None
        w_hr_t = weights[-1].t() if self.proj_size > 0 else None
        gru, relu, lstm = self.mode == "GRU", self.mode == "RNN_RELU", self.mode == "LSTM"
        in_bias = b_ih if gru or b_ih is None else b_ih + b_hh
        xw = F.linear(_tl.cat(xs), w_ih, in_bias).split(sizes)
        w_hh_t = w_hh.t()
        outs = [None] * len(sizes)
        for t in (range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))):
            b = sizes[t]
            hp = h[:b]
            if gru:
                gh = hp.mm(w_hh_t) if b_hh is None else _tl.addmm(b_hh, hp, w_hh_t)
                hn = _gru_step(xw[t], gh, hp)
            else:
                gates = _tl.addmm(xw[t], hp, w_hh_t)
                if lstm:
                    hn, cn = _lstm_step(gates, c[:b])
                    if w_hr_t is not None:
                        hn = hn.mm(w_hr_t)
                    c = cn if b == c.shape[0] else _tl.cat([cn, c[b:]])
                else:
                    hn = _rnn_step(gates, relu)
            outs[t] = hn
            h = hn if b == h.shape[0] else _tl.cat([hn, h[b:]])
        return outs, h, c


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory; forward returns (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit; forward returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


# ---- cells ----------------------------------------------------------------------------------
class RNNCellBase(Module):
    """One time step: parameters weight_ih, weight_hh (and bias_ih, bias_hh)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(_tl.empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(_tl.empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(_tl.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_tl.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_all_(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        """(x (B, in), states (B, H) each, batched): validates as PyTorch does."""
        name = type(self).__name__
        if not isinstance(input, _tl.Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            zeros = _tl.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            return x, [zeros] * n_states, batched
        states = list(hx) if n_states == 2 else [hx]
        if len(states) != n_states:
            raise RuntimeError(f"{name}: hx must be a tuple of {n_states} tensors")
        out = []
        for i, s in enumerate(states):
            if s.dim() != input.dim():
                raise ValueError(f"{name}: Expected hidden to be {input.dim()}D, got "
                                 f"{s.dim()}D instead")
            s = s if batched else s.unsqueeze(0)
            if s.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{i} "
                                   f"batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.shape[1]}, "
                                   f"expected {self.hidden_size}")
            out.append(s)
        return x, out, batched

    def _gates(self, x, h):
        """W_ih x + b_ih + W_hh h + b_hh (the biases are optional)."""
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        if self.bias_hh is None:
            return _tl.addmm(xw, h, self.weight_hh.t())
        return _tl.addmm(xw + self.bias_hh, h, self.weight_hh.t())


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step(self._gates(x, h), self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(self._gates(x, h), c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        h = _gru_step(gi, gh, h)
        return h if batched else h.squeeze(0)
