"""MobileNetV2 (Sandler et al. 2018) and MobileNetV3 (Howard et al. 2019), with torchvision's
constructors, module names and state_dict keys."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ... import nn, flatten
from .._misc import Conv2dNormActivation, SqueezeExcitation, make_divisible
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights, load_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["MobileNetV2", "MobileNetV3", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
           "MobileNet_V2_Weights", "MobileNet_V3_Small_Weights", "MobileNet_V3_Large_Weights"]


def _init(model):
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand (ReLU6), 3x3 depthwise (ReLU6), 1x1 linear projection;
    a residual connection when the shape is kept."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: float,
                 norm_layer: Callable[..., Module] | None = None) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden,
                                        norm_layer=norm_layer, activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0,
                 inverted_residual_setting: list[list[int]] | None = None, round_nearest: int = 8,
                 block: Callable[..., Module] | None = None, norm_layer: Callable[..., Module] | None = None,
                 dropout: float = 0.2) -> None:
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        setting = inverted_residual_setting or [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2],
                                                [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                                                [6, 320, 1, 1]]
        if not setting or len(setting[0]) != 4:
            raise ValueError(f"inverted_residual_setting should be non-empty or a 4-element list, "
                             f"got {setting}")
        cin = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, cin, stride=2, norm_layer=norm_layer,
                                         activation_layer=nn.ReLU6)]
        for t, c, n, s in setting:
            cout = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(cin, cout, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                cin = cout
        features.append(Conv2dNormActivation(cin, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        _init(self)

    def forward(self, x: Tensor) -> Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(flatten(x, 1))


class InvertedResidualConfig:
    """One MobileNetV3 block: channels scaled by width_mult and rounded to multiples of 8."""

    def __init__(self, input_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str, stride: int, dilation: int, width_mult: float) -> None:
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se, self.use_hs = use_se, activation == "HS"
        self.stride, self.dilation = stride, dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        return make_divisible(channels * width_mult, 8)


class InvertedResidualV3(nn.Module):
    """MobileNetV3's block: expand, depthwise, squeeze-excitation (hard sigmoid), project."""

    def __init__(self, cnf: InvertedResidualConfig, norm_layer: Callable[..., Module],
                 se_layer: Callable[..., Module] = functools.partial(SqueezeExcitation,
                                                                     scale_activation=nn.Hardsigmoid)) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=act))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels,
                                           kernel_size=cnf.kernel, stride=stride, dilation=cnf.dilation,
                                           groups=cnf.expanded_channels, norm_layer=norm_layer,
                                           activation_layer=act))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        return out + x if self.use_res_connect else out


class MobileNetV3(nn.Module):
    def __init__(self, inverted_residual_setting: list[InvertedResidualConfig], last_channel: int,
                 num_classes: int = 1000, block: Callable[..., Module] | None = None,
                 norm_layer: Callable[..., Module] | None = None, dropout: float = 0.2) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        block = block or InvertedResidualV3
        norm_layer = norm_layer or functools.partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                       activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        layers.append(Conv2dNormActivation(last_in, 6 * last_in, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * last_in, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(last_channel, num_classes))
        _init(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


def _v3_config(arch, width_mult=1.0, reduced_tail=False, dilated=False):
    c = functools.partial(InvertedResidualConfig, width_mult=width_mult)
    rd, dil = (2 if reduced_tail else 1), (2 if dilated else 1)
    if arch == "mobilenet_v3_large":
        setting = [c(16, 3, 16, 16, False, "RE", 1, 1), c(16, 3, 64, 24, False, "RE", 2, 1),
                   c(24, 3, 72, 24, False, "RE", 1, 1), c(24, 5, 72, 40, True, "RE", 2, 1),
                   c(40, 5, 120, 40, True, "RE", 1, 1), c(40, 5, 120, 40, True, "RE", 1, 1),
                   c(40, 3, 240, 80, False, "HS", 2, 1), c(80, 3, 200, 80, False, "HS", 1, 1),
                   c(80, 3, 184, 80, False, "HS", 1, 1), c(80, 3, 184, 80, False, "HS", 1, 1),
                   c(80, 3, 480, 112, True, "HS", 1, 1), c(112, 3, 672, 112, True, "HS", 1, 1),
                   c(112, 5, 672, 160 // rd, True, "HS", 2, dil),
                   c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
                   c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil)]
        last = 1280 // rd
    else:
        setting = [c(16, 3, 16, 16, True, "RE", 2, 1), c(16, 3, 72, 24, False, "RE", 2, 1),
                   c(24, 3, 88, 24, False, "RE", 1, 1), c(24, 5, 96, 40, True, "HS", 2, 1),
                   c(40, 5, 240, 40, True, "HS", 1, 1), c(40, 5, 240, 40, True, "HS", 1, 1),
                   c(40, 5, 120, 48, True, "HS", 1, 1), c(48, 5, 144, 48, True, "HS", 1, 1),
                   c(48, 5, 288, 96 // rd, True, "HS", 2, dil),
                   c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
                   c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil)]
        last = 1024 // rd
    return setting, make_divisible(last * width_mult, 8)


_BASE = "https://download.pytorch.org/models/"


def _entry(file, params, acc1, acc5, resize=256):
    return Weights(_BASE + file, classification_transforms(224, resize),
                   {"num_params": params, "min_size": (1, 1), "categories": IMAGENET_CATEGORIES,
                    "num_classes": 1000, "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}})


class MobileNet_V2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("mobilenet_v2-b0353104.pth", 3504872, 71.878, 90.286)
    IMAGENET1K_V2 = _entry("mobilenet_v2-7ebf99e0.pth", 3504872, 72.154, 90.822, 232)
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("mobilenet_v3_large-8738ca79.pth", 5483032, 74.042, 91.340)
    IMAGENET1K_V2 = _entry("mobilenet_v3_large-5c1a4163.pth", 5483032, 75.274, 92.566, 232)
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("mobilenet_v3_small-047dcff4.pth", 2542856, 67.668, 87.402)
    DEFAULT = IMAGENET1K_V1


@register_model(weights=MobileNet_V2_Weights)
def mobilenet_v2(*, weights: MobileNet_V2_Weights | str | None = None, progress: bool = True, **kwargs) -> MobileNetV2:
    """MobileNetV2 (width_mult, round_nearest, dropout as torchvision's)."""
    weights = handle_weights(MobileNet_V2_Weights, weights, kwargs)
    return load_weights(MobileNetV2(**kwargs), weights, progress)


def _v3(arch, weights_enum, weights, progress, kwargs):
    weights = handle_weights(weights_enum, weights, kwargs)
    setting, last = _v3_config(arch, kwargs.pop("width_mult", 1.0), kwargs.pop("reduced_tail", False),
                               kwargs.pop("dilated", False))
    return load_weights(MobileNetV3(setting, last, **kwargs), weights, progress)


@register_model(weights=MobileNet_V3_Large_Weights)
def mobilenet_v3_large(*, weights: MobileNet_V3_Large_Weights | str | None = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3-Large."""
    return _v3("mobilenet_v3_large", MobileNet_V3_Large_Weights, weights, progress, kwargs)


@register_model(weights=MobileNet_V3_Small_Weights)
def mobilenet_v3_small(*, weights: MobileNet_V3_Small_Weights | str | None = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3-Small."""
    return _v3("mobilenet_v3_small", MobileNet_V3_Small_Weights, weights, progress, kwargs)
