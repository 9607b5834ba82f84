"""EfficientNet-B0..B3 (Tan & Le 2019), with torchvision's names and keys."""
from __future__ import annotations

import copy
import functools
import math
from typing import TYPE_CHECKING

from ... import nn, flatten
from .._misc import Conv2dNormActivation, SqueezeExcitation, StochasticDepth, make_divisible
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights, load_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["EfficientNet", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2",
           "efficientnet_b3", "EfficientNet_B0_Weights"]


class MBConvConfig:
    """One stage: channels scaled by width_mult (rounded to 8), layers by depth_mult."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0) -> None:
        self.expand_ratio, self.kernel, self.stride = expand_ratio, kernel, stride
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.num_layers = int(math.ceil(num_layers * depth_mult))

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        return make_divisible(channels * width_mult, 8, min_value)


class MBConv(nn.Module):
    """Expand (SiLU), depthwise (SiLU), squeeze-excitation, project; a residual with stochastic
    depth when the shape is kept."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., Module],
                 se_layer: Callable[..., Module] = SqueezeExcitation) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = MBConvConfig.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        layers = []
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=cnf.kernel, stride=cnf.stride,
                                           groups=expanded, norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(se_layer(expanded, max(1, cnf.input_channels // 4),
                               activation=functools.partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    def __init__(self, inverted_residual_setting: Sequence[MBConvConfig], dropout: float,
                 stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                 norm_layer: Callable[..., Module] | None = None, last_channel: int | None = None) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        norm_layer = norm_layer or nn.BatchNorm2d
        first = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                       activation_layer=nn.SiLU)]
        total = sum(c.num_layers for c in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                c = copy.copy(cnf)
                if stage:
                    c.input_channels, c.stride = c.out_channels, 1
                stage.append(MBConv(c, stochastic_depth_prob * float(block_id) / total, norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                r = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -r, r)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


def _config(width_mult, depth_mult):
    c = functools.partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
    return [c(1, 3, 1, 32, 16, 1), c(6, 3, 2, 16, 24, 2), c(6, 5, 2, 24, 40, 2), c(6, 3, 2, 40, 80, 3),
            c(6, 5, 1, 80, 112, 3), c(6, 5, 2, 112, 192, 4), c(6, 3, 1, 192, 320, 1)]


class EfficientNet_B0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth",
                            classification_transforms(224, 256, "bicubic"),
                            {"num_params": 5288548, "min_size": (1, 1), "categories": IMAGENET_CATEGORIES,
                             "num_classes": 1000, "_metrics": {"ImageNet-1K": {"acc@1": 77.692, "acc@5": 93.532}}})
    DEFAULT = IMAGENET1K_V1


def _efficientnet(width, depth, dropout, weights_enum, weights, progress, kwargs):
    weights = handle_weights(weights_enum, weights, kwargs) if weights_enum else weights
    if weights_enum is None and weights is not None:
        raise ValueError("pretrained weights for this EfficientNet are not available in torchlite yet")
    model = EfficientNet(_config(width, depth), kwargs.pop("dropout", dropout), **kwargs)
    return load_weights(model, weights, progress)


@register_model(weights=EfficientNet_B0_Weights)
def efficientnet_b0(*, weights: EfficientNet_B0_Weights | str | None = None, progress: bool = True,
                    **kwargs) -> EfficientNet:
    """EfficientNet-B0."""
    return _efficientnet(1.0, 1.0, 0.2, EfficientNet_B0_Weights, weights, progress, kwargs)


@register_model()
def efficientnet_b1(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> EfficientNet:
    """EfficientNet-B1 (no pretrained weights here yet)."""
    return _efficientnet(1.0, 1.1, 0.2, None, weights, progress, kwargs)


@register_model()
def efficientnet_b2(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> EfficientNet:
    """EfficientNet-B2 (no pretrained weights here yet)."""
    return _efficientnet(1.1, 1.2, 0.3, None, weights, progress, kwargs)


@register_model()
def efficientnet_b3(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> EfficientNet:
    """EfficientNet-B3 (no pretrained weights here yet)."""
    return _efficientnet(1.2, 1.4, 0.3, None, weights, progress, kwargs)
