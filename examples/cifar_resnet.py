"""ResNet-18 on CIFAR-10 with torchlite.vision: a folder in CIFAR's format, torchvision-style
augmentation, a DataLoader with worker processes, TensorBoard logging, a progress bar and a
saved checkpoint.

    python -m pip install -e ".[examples,vision,tensorboard]"
    python examples/cifar_resnet.py --data data --epochs 30      # CIFAR's files in data/
    tensorboard --logdir runs

Without CIFAR-10 in --data (and with --no-download, or no network) the script writes a small
synthetic dataset in CIFAR's format (colored patterns, one per class) and says so.
"""
import argparse
import hashlib
import os
import pickle
import time

import numpy as np

import torchlite as torch
import torchlite.nn.functional as F
from torchlite.utils.data import DataLoader
from torchlite.vision import datasets, models, transforms

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def _md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def synthetic_cifar(root, n_train, n_test, seed=0):
    """A CIFAR-10 dataset class over files written in CIFAR's format: each class a colored,
    striped pattern with noise (learnable, not trivial)."""
    g = np.random.default_rng(seed)
    folder = os.path.join(root, "synthetic-cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    colors = g.integers(40, 216, (10, 3))
    yy, xx = np.mgrid[0:32, 0:32]

    def batch(n):
        labels = g.integers(0, 10, n)
        imgs = np.empty((n, 3, 32, 32), np.float64)
        for i, c in enumerate(labels):
            stripes = np.sin((xx * np.cos(c) + yy * np.sin(c)) * (0.3 + 0.05 * c))
            imgs[i] = colors[c][:, None, None] * (0.75 + 0.25 * stripes) + g.normal(0, 25, (3, 32, 32))
        return np.clip(imgs, 0, 255).astype(np.uint8).reshape(n, 3072), [int(v) for v in labels]
    files = {}
    per = max(1, n_train // 5)
    for k in range(5):
        data, labels = batch(per)
        files[f"data_batch_{k + 1}"] = {b"data": data, b"labels": labels}
    data, labels = batch(n_test)
    files["test_batch"] = {b"data": data, b"labels": labels}
    files["batches.meta"] = {b"label_names": [f"pattern{i}" for i in range(10)]}
    for name, content in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(content, f, protocol=2)
    md5 = {name: _md5(os.path.join(folder, name)) for name in files}

    class SyntheticCIFAR10(datasets.CIFAR10):
        base_folder = "synthetic-cifar-10-batches-py"
        train_list = [[f"data_batch_{k + 1}", md5[f"data_batch_{k + 1}"]] for k in range(5)]
        test_list = [["test_batch", md5["test_batch"]]]
        meta = {"filename": "batches.meta", "key": "label_names", "md5": md5["batches.meta"]}
    return SyntheticCIFAR10


def cifar(root, download, n_train, n_test):
    try:
        datasets.CIFAR10(root, train=False, download=download)
        return datasets.CIFAR10
    except RuntimeError as e:
        print(f"CIFAR-10 is not available ({str(e).splitlines()[0][:100]}); writing a synthetic "
              f"dataset in CIFAR's format to {root} ({n_train} training and {n_test} test images)")
        return synthetic_cifar(root, n_train, n_test)


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
            total += len(y)
    return correct / total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-download", action="store_true")
    p.add_argument("--synthetic-size", type=int, default=2000, help="training images when synthetic")
    p.add_argument("--logdir", default=None, help="TensorBoard folder (default runs/...)")
    p.add_argument("--checkpoint", default="cifar_resnet18.pt")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    dataset = cifar(args.data, not args.no_download, args.synthetic_size, max(100, args.synthetic_size // 5))
    train_tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train_set = dataset(args.data, train=True, transform=train_tf)
    test_set = dataset(args.data, train=False, transform=test_tf)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                              persistent_workers=args.workers > 0)
    test_loader = DataLoader(test_set, batch_size=256, num_workers=args.workers)
    model = models.resnet18(num_classes=10).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, args.lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_loader))
    try:
        from torchlite.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(args.logdir)
        print(f"logging to TensorBoard in {writer.get_logdir()}")
    except ImportError:
        writer = None
        print("tensorboard is not installed: no logging (pip install \"torchlite-dl[tensorboard]\")")
    try:
        from tqdm import tqdm
    except ImportError:
        def tqdm(it, **kw):
            return it
    step = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0, seen, total_loss = time.perf_counter(), 0, 0.0
        for x, y in tqdm(train_loader, desc=f"epoch {epoch}", leave=False):
            x, y = x.to(args.device), y.to(args.device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total_loss += loss.item() * len(y)
            seen += len(y)
            if writer is not None:
                writer.add_scalar("train/loss", loss.item(), step)
            step += 1
        acc = evaluate(model, test_loader, args.device)
        print(f"epoch {epoch}: train loss {total_loss / seen:.4f}, test accuracy {100 * acc:.1f}%, "
              f"{seen / (time.perf_counter() - t0):.0f} images/s")
        if writer is not None:
            writer.add_scalar("test/accuracy", acc, epoch)
    torch.save(model.state_dict(), args.checkpoint)
    print(f"saved {args.checkpoint}; final test accuracy {100 * acc:.1f}%")
    if writer is not None:
        writer.close()


if __name__ == "__main__":
    main()
