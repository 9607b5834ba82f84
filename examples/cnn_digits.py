"""A convolutional network for the 8x8 handwritten digits that scikit-learn ships: Conv2d,
BatchNorm2d, MaxPool2d and Dropout, trained with Adam, evaluated on a held-out split.

    python -m pip install -e ".[examples]"
    python examples/cnn_digits.py --epochs 20
"""
import argparse
import time

import torchlite as torch
from torchlite import nn
from torchlite.utils.data import DataLoader, TensorDataset, random_split


class DigitsCNN(nn.Module):
    """1x8x8 -> conv 32 -> BN -> ReLU -> pool (4x4) -> conv 64 -> BN -> ReLU -> pool (2x2)
    -> dropout -> linear 10."""

    def __init__(self, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(64 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def digits(seed):
    from sklearn.datasets import load_digits
    d = load_digits()
    images = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    data = TensorDataset(images, torch.tensor(d.target, dtype=torch.int64))
    return random_split(data, [0.8, 0.2], generator=torch.Generator().manual_seed(seed))


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(1)
            correct += (pred == y.to(device)).sum().item()
            total += len(y)
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    train_data, test_data = digits(args.seed)
    train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_data, batch_size=256)
    model = DigitsCNN().to(args.device)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for x, y in train_loader:
            x, y = x.to(args.device), y.to(args.device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
        scheduler.step()
        print(f"epoch {epoch + 1:3d}  train loss {total / len(train_data):.4f}  "
              f"test accuracy {100 * accuracy(model, test_loader, args.device):.1f}%")
    print(f"trained {args.epochs} epochs in {time.perf_counter() - start:.1f} s")
    print(f"final test accuracy {100 * accuracy(model, test_loader, args.device):.1f}%")


if __name__ == "__main__":
    main()
