"""torchlite.vision speed against PyTorch/torchvision in the same run (issue 13's targets, not
tests):
- ResNet-18 on 32x32 inputs, batch 64, one training step (SGD with momentum) on the CPU: no
  more than 1.0x PyTorch's time; inference at batch 1: no more than 1.0x;
- an epoch of a CIFAR-style DataLoader (RandomCrop(32, padding=4) + RandomHorizontalFlip +
  ToTensor + Normalize, batch 128, 2 workers): at least torchvision's images per second.

    python benchmarks/bench_vision.py [--repeat 5] [--images 5000]

PyTorch's ResNet-18 is torchvision's when installed, else the same architecture written here
with torch.nn (identical layers and sizes); the DataLoader comparison needs torchvision."""
import argparse
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import torchlite as tl  # noqa: E402
from _timing import best_of  # noqa: E402
from torchlite.vision import models  # noqa: E402




def torch_resnet18(torch, num_classes=10):
    try:
        import torchvision
        return torchvision.models.resnet18(num_classes=num_classes)
    except Exception:
        pass
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))
    return ResNet18()


def resnet_rows(torch, repeat):
    tl.manual_seed(0)
    m = models.resnet18(num_classes=10)
    x, y = tl.randn(64, 3, 32, 32), tl.randint(0, 10, (64,))
    opt = tl.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

    def tl_step():
        opt.zero_grad()
        tl.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    tm = torch_resnet18(torch)
    tx, ty = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())
    topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)

    def t_step():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tm(tx), ty).backward()
        topt.step()
    m1, tm1 = models.resnet18(num_classes=10).eval(), torch_resnet18(torch).eval()
    x1, tx1 = tl.randn(1, 3, 32, 32), torch.randn(1, 3, 32, 32)

    def tl_inf():
        with tl.no_grad():
            m1(x1)

    def t_inf():
        with torch.no_grad():
            tm1(tx1)
    rows = []
    for name, a, b, n in (("ResNet-18 32x32 batch 64, training step", tl_step, t_step, 3),
                          ("ResNet-18 32x32 batch 1, inference", tl_inf, t_inf, 50)):
        a(), b()
        ta, tb = [], []
        for _ in range(repeat):
            ta.append(best_of(a, n))
            tb.append(best_of(b, n))
        ta, tb = statistics.median(ta), statistics.median(tb)
        rows.append((name, ta, tb, ta / tb, 1.0))
    return rows


def loader_rows(torch, images, repeat):
    from torchlite.vision import transforms as T
    g = np.random.default_rng(0)
    data = g.integers(0, 256, (images, 32, 32, 3), dtype=np.uint8)
    labels = g.integers(0, 10, images)
    mean, std = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)

    def make(Dataset, PILImage, transforms, DataLoader):
        class Images(Dataset):
            def __init__(self):
                self.tf = transforms.Compose([transforms.RandomCrop(32, padding=4),
                                              transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                                              transforms.Normalize(mean, std)])

            def __len__(self):
                return images

            def __getitem__(self, i):
                return self.tf(PILImage.fromarray(data[i])), int(labels[i])
        return DataLoader(Images(), batch_size=128, shuffle=True, num_workers=2)
    from PIL import Image
    ours = make(tl.utils.data.Dataset, Image, T, tl.utils.data.DataLoader)

    def epoch(loader):
        def run():
            for _ in loader:
                pass
        return run
    theirs = None
    try:
        import torchvision
        theirs = make(torch.utils.data.Dataset, Image, torchvision.transforms, torch.utils.data.DataLoader)
    except Exception:
        pass
    ta = statistics.median(best_of(epoch(ours), 1) for _ in range(repeat))
    tb = statistics.median(best_of(epoch(theirs), 1) for _ in range(repeat)) if theirs else None
    return [("CIFAR-style DataLoader epoch, 2 workers (images/s)", images / ta,
             images / tb if tb else None)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--images", type=int, default=5000)
    a = p.parse_args()
    import torch
    torch.set_num_threads(tl.get_num_threads())
    print("| case | torchlite | PyTorch | ratio (target) |\n|---|---:|---:|---|")
    for name, ta, tb, r, target in resnet_rows(torch, a.repeat):
        print(f"| {name} | {ta * 1e3:.2f} ms | {tb * 1e3:.2f} ms | {r:.2f}x (<= {target}x: "
              f"{'met' if r <= target else 'NOT met'}) |")
    for name, ours, theirs in loader_rows(torch, a.images, a.repeat):
        if theirs is None:
            print(f"| {name} | {ours:.0f} | torchvision not installed | - |")
        else:
            print(f"| {name} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f}x (>= 1.0x: "
                  f"{'met' if ours >= theirs else 'NOT met'}) |")


if __name__ == "__main__":
    main()
