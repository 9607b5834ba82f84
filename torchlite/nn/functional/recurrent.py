"""One step of the recurrent cells from their gate pre-activations, shared by nn.RNN/LSTM/GRU,
their *Cell layers and the torch.*_cell functions (nn/functional/aten.py)."""


def rnn_step(gates, relu):
    """h = tanh(gates), or relu(gates)."""
    return gates.relu() if relu else gates.tanh()


def lstm_step(gates, c):
    """gates: (B, 4H) pre-activations in the order i, f, g, o; returns (h, c).  chunk (one
    node whose backward concatenates) rather than slices (a node each, each scattering into
    a zero tensor of the full size)."""
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_step(gi, gh, h):
    """gi = W_i x + b_i, gh = W_h h + b_h, each (B, 3H) in the order r, z, n."""
    ir, iz, in_ = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (h - n)
