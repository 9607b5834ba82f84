"""PyTorch's classic MNIST example, on torchlite: two convolutions, dropout, Adadelta with a
StepLR schedule, torchvision-style transforms and torchlite.vision.datasets.MNIST.

    python -m pip install -e ".[examples,vision]"
    python examples/mnist.py --epochs 14                 # MNIST's idx files in data/MNIST/raw

Without the real files (and with --no-download, or no network), the idx files are made from
scikit-learn's 8x8 digits, scaled to 28x28 and written in MNIST's format, and the script says so.
"""
import argparse
import os

import numpy as np

import torchlite as torch
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.optim.lr_scheduler import StepLR
from torchlite.vision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)} "
                  f"({100.0 * batch_idx / len(loader):.0f}%)]\tLoss: {loss.item():.6f}")
            if args.dry_run:
                break


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(dim=1) == target).sum().item()
    n = len(loader.dataset)
    print(f"\nTest set: Average loss: {test_loss / n:.4f}, Accuracy: {correct}/{n} "
          f"({100.0 * correct / n:.0f}%)\n")
    return correct / n


def _idx(arr):
    head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    return head + arr.astype(np.uint8).tobytes()


def synthesize_mnist(root):
    """MNIST-format idx files from scikit-learn's 8x8 digits (upscaled to 28x28)."""
    from sklearn.datasets import load_digits
    from PIL import Image
    d = load_digits()
    imgs = np.stack([np.asarray(Image.fromarray((im * 255 / 16).astype(np.uint8)).resize(
        (20, 20), Image.BILINEAR)) for im in d.images])
    imgs = np.pad(imgs, ((0, 0), (4, 4), (4, 4)))                  # MNIST's 20x20 in 28x28
    order = np.random.default_rng(0).permutation(len(imgs))
    imgs, labels = imgs[order], d.target[order].astype(np.uint8)
    split = int(0.8 * len(imgs))
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name, arr in (("train-images-idx3-ubyte", imgs[:split]), ("train-labels-idx1-ubyte", labels[:split]),
                      ("t10k-images-idx3-ubyte", imgs[split:]), ("t10k-labels-idx1-ubyte", labels[split:])):
        with open(os.path.join(raw, name), "wb") as f:
            f.write(_idx(arr))


def mnist(root, download):
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    try:
        return (datasets.MNIST(root, train=True, download=download, transform=transform),
                datasets.MNIST(root, train=False, transform=transform))
    except RuntimeError as e:
        print(f"MNIST is not available ({str(e).splitlines()[0]}); using scikit-learn's digits, "
              f"scaled to 28x28, written as MNIST idx files in {root}/MNIST/raw")
        synthesize_mnist(root)
        return (datasets.MNIST(root, train=True, transform=transform),
                datasets.MNIST(root, train=False, transform=transform))


def main():
    p = argparse.ArgumentParser(description="torchlite MNIST Example")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=14)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--gamma", type=float, default=0.7)
    p.add_argument("--no-accel", action="store_true", help="stay on the CPU even with a GPU")
    p.add_argument("--dry-run", action="store_true", help="one batch per epoch")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save-model", action="store_true")
    p.add_argument("--data", default="data")
    p.add_argument("--no-download", action="store_true")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.no_accel else "cpu")
    train_set, test_set = mnist(args.data, not args.no_download)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=args.test_batch_size)
    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        acc = test(model, device, test_loader)
        scheduler.step()
    print(f"final test accuracy {100 * acc:.1f}%")
    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")


if __name__ == "__main__":
    main()
