"""Train a small neural network on handwritten digits with torchlite.

The data are the 1797 8x8 digit images that scikit-learn ships (no network needed). The
model is a two-layer MLP, 64 -> 128 -> 10, trained with minibatch SGD on the cross-entropy
loss. Until torchlite's autograd lands, the backward pass is written out by hand: each line
below is the gradient of one line of the forward pass.

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
    w = torch.empty(n_out, n_in).uniform_(-bound, bound)
    b = torch.empty(n_out).uniform_(-bound, bound)
    return w, b


def forward(params, x):
    w1, b1, w2, b2 = params
    h_pre = x @ w1.T + b1
    h = h_pre.relu()
    logits = h @ w2.T + b2
    return h_pre, h, logits


def train_step(params, x, y, lr):
    w1, b1, w2, b2 = params
    h_pre, h, logits = forward(params, x)
    log_probs = logits.log_softmax(dim=1)
    onehot = (y.unsqueeze(1) == torch.arange(10)).float()
    loss = -(log_probs * onehot).sum() / len(y)
    # backward, by hand
    g_logits = (log_probs.exp() - onehot) / len(y)      # d loss / d logits
    g_w2 = g_logits.T @ h
    g_b2 = g_logits.sum(0)
    g_h = g_logits @ w2
    g_hpre = g_h * (h_pre > 0)
    g_w1 = g_hpre.T @ x
    g_b1 = g_hpre.sum(0)
    for p, g in zip(params, (g_w1, g_b1, g_w2, g_b2)):
        p.sub_(g, alpha=lr)                              # SGD, in place
    return loss.item()


def accuracy(params, x, y):
    _, _, logits = forward(params, x)
    return (logits.argmax(dim=1) == y).float().mean().item()


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
