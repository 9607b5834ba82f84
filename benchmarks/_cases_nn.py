"""nn and optim benchmark cases (issue 4's speed targets): whole training steps and layers,
float32, the same weights in both libraries (copied from NumPy arrays drawn once).

Each case returns the time of one call ("us/op"); a training step is forward, backward and
optimizer.step().  The result check is off for these (a training step changes the model, so
repeated calls differ); the tests check the values."""
import numpy as np

from _cases_core import Case, NotImplementedOp, Target

T_MLP_STEP = Target(1 / 1.25, "time <= 1.25x torch")
T_CONV = Target(1 / 1.5, "time <= 1.5x torch")
T_CNN_STEP = Target(1 / 1.5, "time <= 1.5x torch")
T_LSTM = Target(1 / 2.0, "time <= 2x torch")
T_OPT_STEP = Target(1.0, "time <= torch")


def _nn(lib):
    """The library's nn and optim modules (raising NotImplementedOp when missing)."""
    nn, optim = lib.fn("nn"), lib.fn("optim")
    for name in ("Linear", "ReLU", "Sequential", "CrossEntropyLoss"):
        if not hasattr(nn, name):
            raise NotImplementedOp(f"nn.{name}")
    if not hasattr(optim, "SGD"):
        raise NotImplementedOp("optim.SGD")
    return nn, optim


def _set_weights(lib, model, seed):
    """Give every parameter the same values in every library: U(-1/sqrt(fan_in), ..) drawn
    from a NumPy generator in parameter order."""
    rng = np.random.default_rng(seed)
    with lib.mod.no_grad():
        for p in model.parameters():
            fan_in = p.shape[1] * int(np.prod(p.shape[2:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(lib.mod.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def _labels(rng, n, classes=10):
    return rng.integers(0, classes, n).astype(np.int64)


def _train_step_build(make_model):
    """A training step: zero_grad, cross-entropy of model(x) against y, backward, SGD step."""
    def build(lib, xs):
        nn, optim = _nn(lib)
        model = make_model(nn)
        _set_weights(lib, model, 0)
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        x, y = lib.array(xs[0]), lib.mod.from_numpy(xs[1])

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    return build


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _small_cnn(nn):
    for name in ("Conv2d", "MaxPool2d", "Flatten"):
        if not hasattr(nn, name):
            raise NotImplementedOp(f"nn.{name}")
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def _conv_build(cin, cout, backward):
    """Conv2d(cin, cout, 3, padding=1) on the input: forward only (no_grad), or forward and
    backward from a fixed output gradient with the input requiring grad too."""
    def build(lib, xs):
        nn, _ = _nn(lib)
        if not hasattr(nn, "Conv2d"):
            raise NotImplementedOp("nn.Conv2d")
        conv = nn.Conv2d(cin, cout, 3, padding=1)
        _set_weights(lib, conv, 1)
        if not backward:
            x = lib.array(xs[0])

            def forward():
                with lib.mod.no_grad():
                    return conv(x)
            return forward
        x, g = lib.leaf(xs[0]), lib.array(xs[1])

        def forward_backward():
            conv.zero_grad()
            x.grad = None
            conv(x).backward(g)
            return x.grad
        return forward_backward
    return build


def _lstm_build(lib, xs):
    """nn.LSTM(128, 256) over (seq 64, batch 32, 128): forward, then backward from a fixed
    gradient of the output sequence."""
    nn, _ = _nn(lib)
    if not hasattr(nn, "LSTM"):
        raise NotImplementedOp("nn.LSTM")
    lstm = nn.LSTM(128, 256)
    _set_weights(lib, lstm, 2)
    x, g = lib.array(xs[0]), lib.array(xs[1])

    def run():
        lstm.zero_grad()
        out, _ = lstm(x)
        out.backward(g)
        return out
    return run


def _optimizer_step_build(name, **options):
    """optimizer.step() alone over the MLP 784-512-512-10's parameters (670k floats), each
    with a fixed gradient: the update's own cost (issue 16: fused steps)."""
    def build(lib, xs):
        nn, optim = _nn(lib)
        if not hasattr(optim, name):
            raise NotImplementedOp(f"optim.{name}")
        model = _mlp(nn)
        _set_weights(lib, model, 3)
        rng = np.random.default_rng(4)
        for p in model.parameters():
            p.grad = lib.array(rng.standard_normal(tuple(p.shape), dtype=np.float32))
        opt = getattr(optim, name)(model.parameters(), **options)

        def step():
            opt.step()
        return step
    return build


def _activation_build(name, **kw):
    """F.<name>(x, **kw) forward, then backward from a fixed gradient (x requires grad)."""
    def build(lib, xs):
        F = lib.fn("nn").functional
        fn = getattr(F, name)
        x, g = lib.array(xs[0]).requires_grad_(), lib.array(xs[1])

        def run():
            x.grad = None
            fn(x, **kw).backward(g)
            return x.grad
        return run
    return build


def _rows_build(kind):
    """Forward + backward of a row op a Transformer step runs: the attention softmax over
    (batch*heads, T, T), layer_norm over d_model, cross_entropy over the vocabulary."""
    def build(lib, xs):
        F = lib.fn("nn").functional
        x, g = lib.array(xs[0]).requires_grad_(), lib.array(xs[1])
        if kind == "cross_entropy":
            target = lib.mod.from_numpy(xs[2])

            def run():
                x.grad = None
                F.cross_entropy(x, target).backward()
                return x.grad
            return run
        n = xs[0].shape[-1]
        w, b = lib.mod.ones(n, requires_grad=True), lib.mod.zeros(n, requires_grad=True)

        def run():
            x.grad = None
            y = F.softmax(x, -1) if kind == "softmax" else F.layer_norm(x, (n,), w, b)
            y.backward(g)
            return x.grad
        return run
    return build


def _inputs(*shapes, labels=None):
    def make(rng):
        xs = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
        if labels is not None:
            xs.append(_labels(rng, labels))
        return xs
    return make


def _cases():
    cases = []
    for b in (64, 256):
        cases.append(Case(f"mlp_step_b{b}", "us/op", 1, _inputs((b, 784), labels=b),
                          _train_step_build(_mlp), f"training step of the MLP 784-512-512-10 "
                          f"(ReLU, CrossEntropyLoss, SGD momentum 0.9), batch {b}",
                          T_MLP_STEP, check=False, tags=("nn",)))
    for cin, cout, hw in ((3, 32, 32), (32, 64, 16)):
        shape_in, shape_out = (32, cin, hw, hw), (32, cout, hw, hw)
        cases.append(Case(f"conv2d_{cin}to{cout}_{hw}x{hw}_fwd", "us/op", 1,
                          _inputs(shape_in), _conv_build(cin, cout, False),
                          f"Conv2d({cin}, {cout}, 3, padding=1) forward, batch 32, {hw}x{hw}",
                          T_CONV, check=False, tags=("nn", "conv")))
        cases.append(Case(f"conv2d_{cin}to{cout}_{hw}x{hw}_fwdbwd", "us/op", 1,
                          _inputs(shape_in, shape_out), _conv_build(cin, cout, True),
                          f"Conv2d({cin}, {cout}, 3, padding=1) forward + backward (input "
                          f"and weight grads), batch 32, {hw}x{hw}",
                          T_CONV, check=False, tags=("nn", "conv")))
    cases.append(Case("cnn_step_b64", "us/op", 1, _inputs((64, 1, 28, 28), labels=64),
                      _train_step_build(_small_cnn), "training step of a small CNN on "
                      "1x28x28 (conv 1->16, relu, maxpool, conv 16->32, relu, maxpool, linear "
                      "1568->10), batch 64", T_CNN_STEP, check=False, tags=("nn", "conv")))
    cases.append(Case("lstm_fwdbwd", "us/op", 1, _inputs((64, 32, 128), (64, 32, 256)),
                      _lstm_build, "nn.LSTM(128, 256), sequence 64, batch 32: forward + "
                      "backward", T_LSTM, check=False, tags=("nn", "rnn")))
    for label, name, kw in (("gelu", "gelu", {}), ("gelu_tanh", "gelu", {"approximate": "tanh"}),
                            ("silu", "silu", {})):
        cases.append(Case(f"{label}_fwdbwd_1M", "us/op", 1, _inputs((32, 64, 512), (32, 64, 512)),
                          _activation_build(name, **kw), f"F.{name}({', '.join(f'{k}={v!r}' for k, v in kw.items())}) "
                          f"forward + backward over 1M float32 (a Transformer's feed-forward "
                          f"activations, batch 32 x 64 x 512)", None, check=False, tags=("nn",)))
    cases.append(Case("softmax_fwdbwd_128x64x64", "us/op", 1, _inputs((128, 64, 64), (128, 64, 64)),
                      _rows_build("softmax"), "F.softmax over the last dim forward + backward "
                      "(attention probabilities: batch*heads 128, 64 x 64)", None, check=False,
                      tags=("nn",)))
    cases.append(Case("layer_norm_fwdbwd_2048x128", "us/op", 1, _inputs((2048, 128), (2048, 128)),
                      _rows_build("layer_norm"), "F.layer_norm over 128 with weight and bias, "
                      "forward + backward (input grad)", None, check=False, tags=("nn",)))
    cases.append(Case("cross_entropy_fwdbwd_2048x65", "us/op", 1, _inputs((2048, 65), (1,), labels=2048),
                      _rows_build("cross_entropy"), "F.cross_entropy of 2048 rows of 65 logits, "
                      "forward + backward", None, check=False, tags=("nn",)))
    for name, options, what in (("SGD", dict(lr=0.01, momentum=0.9), "SGD momentum 0.9"),
                                ("Adam", dict(lr=1e-3), "Adam"),
                                ("AdamW", dict(lr=1e-3, amsgrad=True), "AdamW amsgrad")):
        label = what.split()[0].lower() + ("_amsgrad" if "amsgrad" in what else "")
        cases.append(Case(f"optim_step_{label}", "us/op", 1, _inputs(),
                          _optimizer_step_build(name, **options),
                          f"optimizer.step() of {what} over the MLP 784-512-512-10's "
                          f"parameters (670k floats)", T_OPT_STEP, check=False,
                          tags=("nn", "optim")))
    return cases


CASES = _cases()
