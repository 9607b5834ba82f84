"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016), with torchvision's names and keys."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import nn, cat, flatten
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights, load_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1", "SqueezeNet1_0_Weights",
           "SqueezeNet1_1_Weights"]


class Fire(nn.Module):
    """A 1x1 squeeze, then 1x1 and 3x3 expands side by side (concatenated)."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return cat([self.expand1x1_activation(self.expand1x1(x)),
                    self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        pool = lambda: nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)  # noqa: E731
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256), pool(), Fire(512, 64, 256, 256))
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256))
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        final_conv = nn.Conv2d(512, num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        return flatten(self.classifier(self.features(x)), 1)


_BASE = "https://download.pytorch.org/models/"


def _entry(file, params, acc1, acc5):
    return Weights(_BASE + file, classification_transforms(224, 256),
                   {"num_params": params, "min_size": (21, 21) if "1_0" in file else (17, 17),
                    "categories": IMAGENET_CATEGORIES, "num_classes": 1000,
                    "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}})


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("squeezenet1_0-b66bff10.pth", 1248424, 58.092, 80.420)
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("squeezenet1_1-b8a52dc0.pth", 1235496, 58.178, 80.624)
    DEFAULT = IMAGENET1K_V1


@register_model(weights=SqueezeNet1_0_Weights)
def squeezenet1_0(*, weights: SqueezeNet1_0_Weights | str | None = None, progress: bool = True, **kwargs) -> SqueezeNet:
    """SqueezeNet 1.0."""
    weights = handle_weights(SqueezeNet1_0_Weights, weights, kwargs)
    return load_weights(SqueezeNet("1_0", **kwargs), weights, progress)


@register_model(weights=SqueezeNet1_1_Weights)
def squeezenet1_1(*, weights: SqueezeNet1_1_Weights | str | None = None, progress: bool = True, **kwargs) -> SqueezeNet:
    """SqueezeNet 1.1 (2.4x less computation than 1.0, same accuracy)."""
    weights = handle_weights(SqueezeNet1_1_Weights, weights, kwargs)
    return load_weights(SqueezeNet("1_1", **kwargs), weights, progress)
