"""DenseNet (Huang et al. 2016): densenet121/161/169/201 with torchvision's names and keys.
torchvision's published checkpoints use an older key spelling ('norm.1' for 'norm1'); their
state dicts are renamed on load, as torchvision does."""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING

from ... import nn, cat, flatten
from ...nn import functional as F
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201",
           "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights"]


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1,
                               bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1,
                               padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def forward(self, input):
        features = cat(input, 1) if isinstance(input, (list, tuple)) else input
        bottleneck = self.conv1(self.relu1(self.norm1(features)))
        new = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new = F.dropout(new, p=self.drop_rate, training=self.training)
        return new


class _DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate,
                 memory_efficient=False):
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(
                num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate, memory_efficient))

    def forward(self, init_features):
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1,
                              bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int = 32, block_config: tuple[int, int, int, int] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)), ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
        n = num_init_features
        for i, layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(
                layers, n, bn_size, growth_rate, drop_rate, memory_efficient))
            n += layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(n, n // 2))
                n //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(n))
        self.classifier = nn.Linear(n, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        out = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(flatten(out, 1))


_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _load(model, weights, progress):
    if weights is None:
        return model
    state = weights.get_state_dict(progress=progress, check_hash=True)
    for key in list(state):
        m = _OLD_KEY.match(key)
        if m:
            state[m.group(1) + m.group(2)] = state.pop(key)
    model.load_state_dict(state)
    return model


_BASE = "https://download.pytorch.org/models/"


def _entry(file, params, acc1, acc5):
    return Weights(_BASE + file, classification_transforms(224, 256),
                   {"num_params": params, "min_size": (29, 29), "categories": IMAGENET_CATEGORIES,
                    "num_classes": 1000, "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}})


class DenseNet121_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("densenet121-a639ec97.pth", 7978856, 74.434, 91.972)
    DEFAULT = IMAGENET1K_V1


class DenseNet161_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("densenet161-8d451a50.pth", 28681000, 77.138, 93.560)
    DEFAULT = IMAGENET1K_V1


class DenseNet169_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("densenet169-b2777c0a.pth", 14149480, 75.600, 92.806)
    DEFAULT = IMAGENET1K_V1


class DenseNet201_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("densenet201-c1103571.pth", 20013928, 76.896, 93.370)
    DEFAULT = IMAGENET1K_V1


def _densenet(growth, blocks, init, weights_enum, weights, progress, kwargs):
    weights = handle_weights(weights_enum, weights, kwargs)
    return _load(DenseNet(growth, blocks, init, **kwargs), weights, progress)


@register_model(weights=DenseNet121_Weights)
def densenet121(*, weights: DenseNet121_Weights | str | None = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-121."""
    return _densenet(32, (6, 12, 24, 16), 64, DenseNet121_Weights, weights, progress, kwargs)


@register_model(weights=DenseNet161_Weights)
def densenet161(*, weights: DenseNet161_Weights | str | None = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-161."""
    return _densenet(48, (6, 12, 36, 24), 96, DenseNet161_Weights, weights, progress, kwargs)


@register_model(weights=DenseNet169_Weights)
def densenet169(*, weights: DenseNet169_Weights | str | None = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-169."""
    return _densenet(32, (6, 12, 32, 32), 64, DenseNet169_Weights, weights, progress, kwargs)


@register_model(weights=DenseNet201_Weights)
def densenet201(*, weights: DenseNet201_Weights | str | None = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-201."""
    return _densenet(32, (6, 12, 48, 32), 64, DenseNet201_Weights, weights, progress, kwargs)
