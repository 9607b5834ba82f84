"""VGG (Simonyan & Zisserman 2014) and AlexNet (Krizhevsky et al. 2012, torchvision's "one
weird trick" variant), with torchvision's constructors, module names and state_dict keys."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import nn, flatten
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights, load_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["VGG", "AlexNet", "alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16",
           "vgg16_bn", "vgg19", "vgg19_bn", "AlexNet_Weights", "VGG11_Weights", "VGG11_BN_Weights",
           "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights",
           "VGG19_Weights", "VGG19_BN_Weights"]

_CFGS = {"A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
         "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
         "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
         "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
               512, 512, 512, 512, "M"]}


def make_layers(cfg: list[str | int], batch_norm: bool = False) -> nn.Sequential:
    """VGG's feature extractor: 3x3 convolutions (+ BatchNorm) + ReLU, 'M' a 2x2 max pool."""
    layers, cin = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(cin, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        cin = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    """features -> 7x7 adaptive average pool -> three linear layers with ReLU and dropout."""

    def __init__(self, features: Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


class AlexNet(nn.Module):
    """Five convolutions, three max pools, a 6x6 adaptive pool and three linear layers."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


_BASE = "https://download.pytorch.org/models/"


def _entry(file, params, acc1, acc5):
    return Weights(_BASE + file, classification_transforms(224, 256),
                   {"num_params": params, "min_size": (63, 63) if "alexnet" in file else (32, 32),
                    "categories": IMAGENET_CATEGORIES,
                    "num_classes": 1000, "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}})


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("alexnet-owt-7be5be79.pth", 61100840, 56.522, 79.066)
    DEFAULT = IMAGENET1K_V1


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg11-8a719046.pth", 132863336, 69.020, 88.628)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg11_bn-6002323d.pth", 132868840, 70.370, 89.810)
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg13-19584684.pth", 133047848, 69.928, 89.246)
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg13_bn-abd245e5.pth", 133053736, 71.586, 90.374)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg16-397923af.pth", 138357544, 71.592, 90.382)
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg16_bn-6c64b313.pth", 138365992, 73.360, 91.516)
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg19-dcbb9e9d.pth", 143667240, 72.376, 90.876)
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("vgg19_bn-c79401a0.pth", 143678248, 74.218, 91.842)
    DEFAULT = IMAGENET1K_V1


@register_model(weights=AlexNet_Weights)
def alexnet(*, weights: AlexNet_Weights | str | None = None, progress: bool = True, **kwargs) -> AlexNet:
    """AlexNet; weights=AlexNet_Weights.DEFAULT for ImageNet weights."""
    weights = handle_weights(AlexNet_Weights, weights, kwargs)
    return load_weights(AlexNet(**kwargs), weights, progress)


def _vgg(cfg, bn, weights_enum, weights, progress, kwargs):
    weights = handle_weights(weights_enum, weights, kwargs)
    if weights is not None:
        kwargs.setdefault("init_weights", False)
    return load_weights(VGG(make_layers(_CFGS[cfg], bn), **kwargs), weights, progress)


def _builder(name, cfg, bn, weights_enum):
    def build(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> VGG:
        return _vgg(cfg, bn, weights_enum, weights, progress, kwargs)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"VGG-{name[3:5]} (configuration {cfg}){' with BatchNorm' if bn else ''}."
    return register_model(name, weights_enum)(build)


vgg11 = _builder("vgg11", "A", False, VGG11_Weights)
vgg11_bn = _builder("vgg11_bn", "A", True, VGG11_BN_Weights)
vgg13 = _builder("vgg13", "B", False, VGG13_Weights)
vgg13_bn = _builder("vgg13_bn", "B", True, VGG13_BN_Weights)
vgg16 = _builder("vgg16", "D", False, VGG16_Weights)
vgg16_bn = _builder("vgg16_bn", "D", True, VGG16_BN_Weights)
vgg19 = _builder("vgg19", "E", False, VGG19_Weights)
vgg19_bn = _builder("vgg19_bn", "E", True, VGG19_BN_Weights)
