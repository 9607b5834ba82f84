"""Linear regression, the seed of every model: nn.Linear trained with SGD on MSELoss, then
compared with the closed-form least-squares answer.

    python examples/linear_regression.py --steps 500

The data are synthetic (y = X w + b + noise, fixed seed), so nothing is downloaded.
"""
import argparse

import numpy as np

import torchlite as torch
from torchlite import nn


def make_data(n, features, noise, seed):
    """Inputs X (n x features), targets y (n x 1) and the weights that generated them."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, features)).astype(np.float32)
    true_w = rng.uniform(-2, 2, (features, 1)).astype(np.float32)
    true_b = np.float32(0.5)
    y = X @ true_w + true_b + noise * rng.standard_normal((n, 1)).astype(np.float32)
    return X, y, true_w, true_b


def least_squares(X, y):
    """The closed-form answer: [w; b] minimising |[X 1] [w; b] - y|^2 (NumPy's lstsq)."""
    A = np.hstack([X, np.ones((X.shape[0], 1), dtype=X.dtype)]).astype(np.float64)
    sol, *_ = np.linalg.lstsq(A, y.astype(np.float64), rcond=None)
    return sol[:-1, 0], sol[-1, 0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--features", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args()

    torch.manual_seed(0)
    X, y, true_w, true_b = make_data(args.samples, args.features, noise=0.1, seed=0)
    inputs = torch.from_numpy(X).to(args.device)
    targets = torch.from_numpy(y).to(args.device)

    model = nn.Linear(args.features, 1).to(args.device)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if step % max(1, args.steps // 10) == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.6f}")

    w = model.weight.detach().cpu().numpy()[0]
    b = model.bias.detach().cpu().numpy()[0]
    ls_w, ls_b = least_squares(X, y)
    print("learned weights     ", np.array2string(w, precision=4), f"bias {b:.4f}")
    print("least squares       ", np.array2string(ls_w, precision=4), f"bias {ls_b:.4f}")
    print("generating weights  ", np.array2string(true_w[:, 0], precision=4), f"bias {true_b:.4f}")
    gap = max(np.abs(w - ls_w).max(), abs(b - ls_b))
    print(f"largest difference from least squares: {gap:.2e}")


if __name__ == "__main__":
    main()
