"""torchlite quickstart: train a neural network on handwritten digits.

This is PyTorch's classic quickstart written for torchlite: an `nn.Module` with `nn.Flatten`
and an `nn.Sequential` MLP, trained with a `DataLoader`, `CrossEntropyLoss` and `SGD`. The data
are the 1,797 8x8 images of handwritten digits that scikit-learn ships (the UCI "optdigits"
test set), so nothing is downloaded. The script saves a checkpoint, reloads it into a fresh
model and evaluates it again, and plots the loss and accuracy curves.

    python -m pip install -e ".[examples]"     # scikit-learn, tqdm, matplotlib
    python examples/quickstart.py              # a few seconds on 2 cores

tqdm and matplotlib are optional: without them the script prints plain progress lines and
skips the plot.
"""
import argparse
import os
import tempfile
import time

import numpy as np

if os.environ.get("TORCHLITE_EXAMPLE_BACKEND") == "torch":
    # Runs the very same script on PyTorch, to compare speed (benchmarks/RESULTS.md).
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset, random_split
else:
    import torchlite as torch
    from torchlite import nn
    from torchlite.utils.data import DataLoader, TensorDataset, random_split


class NeuralNetwork(nn.Module):
    """A multilayer perceptron: 8x8 image -> 512 -> 512 -> 10 class scores (logits)."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def digits_datasets(test_fraction=0.2, seed=0):
    """The scikit-learn digits as (train, test) datasets of (1x8x8 image in [0, 1], label)."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    dataset = TensorDataset(images, labels)
    generator = torch.Generator().manual_seed(seed)      # the same split on every run
    return random_split(dataset, [1 - test_fraction, test_fraction], generator=generator)


def train(dataloader, model, loss_fn, optimizer, device):
    """One pass over the training data; returns the mean training loss."""
    model.train()
    total_loss, n_seen = 0.0, 0
    for X, y in dataloader:
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.item() * len(y)
        n_seen += len(y)
    return total_loss / n_seen


def test(dataloader, model, loss_fn, device):
    """Returns (mean loss, accuracy) of the model on the data."""
    model.eval()
    total_loss, correct, n_seen = 0.0, 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            total_loss += loss_fn(pred, y).item() * len(y)
            correct += (pred.argmax(1) == y).sum().item()
            n_seen += len(y)
    return total_loss / n_seen, correct / n_seen


def train_briefly(epochs, seed=0):
    """The model trained for a few epochs (SGD with momentum, batch 64), with the held-out
    test set: what the export and deployment examples start from."""
    torch.manual_seed(seed)
    train_set, test_set = digits_datasets()
    model = NeuralNetwork()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(train_set, batch_size=64, shuffle=True)
    for epoch in range(epochs):
        loss = train(loader, model, nn.CrossEntropyLoss(), optimizer, "cpu")
        print(f"epoch {epoch + 1}: training loss {loss:.4f}")
    return model.eval(), test_set


def epochs_with_progress(epochs):
    """range(epochs) under a tqdm progress bar, or plain when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        print("(tqdm is not installed: plain progress lines instead of a progress bar)")
        return range(epochs), print
    bar = tqdm(range(epochs), desc="training", unit="epoch")
    return bar, bar.write          # bar.write prints a line without breaking the bar


def save_plot(history, path):
    """Plots training loss and test accuracy per epoch to a PNG, if matplotlib is there."""
    try:
        import matplotlib
        matplotlib.use("Agg")       # no display needed
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        print("matplotlib is not installed: skipping the plot (pip install matplotlib)")
        return
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["train_loss"], label="train")
    ax_loss.plot(epochs, history["test_loss"], label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss")
    ax_loss.legend()
    ax_acc.plot(epochs, 100 * np.array(history["test_acc"]), color="tab:green")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="Test accuracy")
    for ax in (ax_loss, ax_acc):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot written to {path}")


def parse_args():
    out_dir = os.path.join(tempfile.gettempdir(), "torchlite_examples")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default=os.path.join(out_dir, "quickstart_model.pt"),
                        help="where to save the trained weights")
    parser.add_argument("--plot", default=os.path.join(out_dir, "quickstart.png"),
                        help="PNG file for the loss/accuracy curves ('' for no plot)")
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    training_data, test_data = digits_datasets(seed=args.seed)
    train_dataloader = DataLoader(training_data, batch_size=args.batch_size, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=256)
    print(f"{len(training_data)} training and {len(test_data)} test images of 1x8x8 pixels")

    model = NeuralNetwork().to(device)
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    history = {"train_loss": [], "test_loss": [], "test_acc": []}
    start = time.perf_counter()
    epochs, log = epochs_with_progress(args.epochs)
    for epoch in epochs:
        train_loss = train(train_dataloader, model, loss_fn, optimizer, device)
        test_loss, test_acc = test(test_dataloader, model, loss_fn, device)
        for key, value in zip(history, (train_loss, test_loss, test_acc)):
            history[key].append(value)
        log(f"epoch {epoch + 1:3d}  train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
            f"test accuracy {100 * test_acc:.1f}%")
    print(f"trained {args.epochs} epochs in {time.perf_counter() - start:.2f} s")

    os.makedirs(os.path.dirname(os.path.abspath(args.checkpoint)), exist_ok=True)
    torch.save(model.state_dict(), args.checkpoint)
    print(f"saved the model's state_dict to {args.checkpoint}")

    reloaded = NeuralNetwork().to(device)
    reloaded.load_state_dict(torch.load(args.checkpoint, weights_only=True))
    _, reloaded_acc = test(test_dataloader, reloaded, loss_fn, device)
    print(f"reloaded model: test accuracy {100 * reloaded_acc:.1f}%")

    if args.plot:
        os.makedirs(os.path.dirname(os.path.abspath(args.plot)), exist_ok=True)
        save_plot(history, args.plot)
    print(f"final test accuracy {100 * history['test_acc'][-1]:.1f}%")


if __name__ == "__main__":
    main()
