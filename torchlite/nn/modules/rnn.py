"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameters,
shapes and gate orders (LSTM: input, forget, cell, output; GRU: reset, update, new).

The modules hold the parameters and check the arguments; the arithmetic is in
nn/functional/recurrent.py, shared with torch.lstm/gru/rnn_tanh/rnn_relu: a layer runs one
direction at a time, the input's contribution to every gate for every step one matrix product
up front, then one addmm with the hidden state and the gate arithmetic per step (an LSTM layer
without projection as one autograd op with fused step kernels)."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import TYPE_CHECKING

import torchlite as _tl
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

from ..functional.recurrent import rnn_step as _rnn_step, lstm_step as _lstm_step, gru_step as _gru_step
from ..functional.recurrent import run_layers
from ..._autocast_state import entry as _autocast

if TYPE_CHECKING:
    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor
    from ..utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---- one time step (shared by the layers and the cells) -------------------------------------
def _uniform_all_(module):
    """PyTorch's recurrent layers draw every parameter from U(-1/sqrt(H), 1/sqrt(H))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrent layer behind RNN, LSTM and GRU."""

    # inside torchlite.func.vmap, a call runs once per batch element (the recurrent kernels
    # take real tensors; there is no batching rule for them)
    _vmap_per_element = True

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
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
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, as PyTorch lists them."""
        per = len(self._flat_weights_names) // (self.num_layers * self._directions)
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (cuDNN's packed weights)."""

    def reset_parameters(self) -> None:
        _uniform_all_(self)

    def extra_repr(self) -> str:
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
        w = self.all_weights[0][0] if self.all_weights and self.all_weights[0] else None
        if w is not None and x.dtype is not w.dtype and not (_autocast.regions and _autocast.here.active):
            raise ValueError(f"RNN input dtype ({x.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({x.dtype})")

    def _state_shape(self, batch, size):
        return (self.num_layers * self._directions, batch, size)

    def _check_state(self, h, shape, which):
        if tuple(h.shape) != shape:
            raise RuntimeError(f"Expected hidden{which} size {shape}, got {list(h.shape)}")

    def forward(self, input: Tensor | PackedSequence,
                hx: Tensor | tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor | tuple[Tensor, Tensor]]:
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
        out, h_n, c_n = run_layers(self.mode, x, h0, c0, self.all_weights, self.num_layers,
                                   self.dropout, self.training, self.bidirectional, self.bias,
                                   self.proj_size > 0)
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
        out, h_n, c_n = run_layers(self.mode, data, h0, c0, self.all_weights, self.num_layers,
                                   self.dropout, self.training, self.bidirectional, self.bias,
                                   self.proj_size > 0, sizes)
        if unsorted_idx is not None:
            h_n = h_n.index_select(1, unsorted_idx)
            c_n = c_n.index_select(1, unsorted_idx) if is_lstm else None
        out = packed_type(out, packed.batch_sizes, sorted_idx, unsorted_idx)
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

class RNN(RNNBase):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
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

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit; forward returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


# ---- cells ----------------------------------------------------------------------------------
class RNNCellBase(Module):
    """One time step: parameters weight_ih, weight_hh (and bias_ih, bias_hh)."""

    _vmap_per_element = True     # (see RNNBase)

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
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

    def reset_parameters(self) -> None:
        _uniform_all_(self)

    def extra_repr(self) -> str:
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
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh",
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step(self._gates(x, h), self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(self._gates(x, h), c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, hx, 1)
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        h = _gru_step(gi, gh, h)
        return h if batched else h.squeeze(0)
