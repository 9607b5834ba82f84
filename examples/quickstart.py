"""Train a small neural network on handwritten digits with torchlite.

The data are the 1797 8x8 digit images that scikit-learn ships (no network needed). The
model is a two-layer MLP, 64 -> 128 -> 10, trained with minibatch SGD on the cross-entropy
loss, with gradients from torchlite's autograd. (torchlite.nn and torchlite.optim, which
will shorten this to the usual nn.Module + optimizer loop, are the next milestone.)

    python examples/quickstart.py
"""
import time

import numpy as np

import torchlite as torch


def load_digits(seed=0):
    from sklearn.datasets import load_digits as sk_digits
    d = sk_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0          # pixels 0..16 -> 0..1
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    x, y = x[perm], y[perm]
    n_train = 1500
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def init_linear(n_in, n_out):
    # PyTorch's default nn.Linear init: U(-1/sqrt(n_in), 1/sqrt(n_in))
    bound = 1.0 / n_in ** 0.5
    w = torch.empty(n_out, n_in).uniform_(-bound, bound).requires_grad_()
    b = torch.empty(n_out).uniform_(-bound, bound).requires_grad_()
    return w, b


def forward(params, x):
    w1, b1, w2, b2 = params
    h = (x @ w1.T + b1).relu()
    return h @ w2.T + b2


def train_step(params, x, y, lr):
    logits = forward(params, x)
    loss = -logits.log_softmax(dim=1)[torch.arange(len(y)), y].mean()   # cross-entropy
    loss.backward()
    with torch.no_grad():                                               # SGD, in place
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss.item()


@torch.no_grad()
def accuracy(params, x, y):
    return (forward(params, x).argmax(dim=1) == y).float().mean().item()


def main():
    torch.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = load_digits()
    params = [*init_linear(64, 128), *init_linear(128, 10)]
    batch, lr, epochs = 32, 0.5, 30
    t0 = time.perf_counter()
    for epoch in range(epochs):
        perm = torch.randperm(len(y_train))
        losses = [train_step(params, x_train[idx], y_train[idx], lr)
                  for idx in perm.split(batch)]
        if epoch % 5 == 4 or epoch == epochs - 1:
            print(f"epoch {epoch + 1:2d}  loss {np.mean(losses):.4f}  "
                  f"test accuracy {accuracy(params, x_test, y_test):.3f}")
    acc = accuracy(params, x_test, y_test)
    print(f"trained in {time.perf_counter() - t0:.1f} s; test accuracy {acc:.3f} on {len(y_test)} images")
    assert acc > 0.9, "the model should reach more than 90% test accuracy"


if __name__ == "__main__":
    main()
