"""ResNet (He et al. 2015), with torchvision's constructors, module names and state_dict keys:
resnet18/34/50/101/152, resnext50_32x4d, resnext101_32x8d, wide_resnet50_2/101_2."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import nn, flatten
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights, load_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext101_32x8d", "wide_resnet50_2",
           "wide_resnet101_2", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights",
           "ResNet101_Weights", "ResNet152_Weights"]


def conv3x3(cin: int, cout: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut (ResNet-18/34)."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None, groups: int = 1,
                 base_width: int = 64, dilation: int = 1, norm_layer: Callable[..., Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1, self.bn1 = conv3x3(inplanes, planes, stride), norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2, self.bn2 = conv3x3(planes, planes), norm_layer(planes)
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped for ResNeXt), 1x1 expand by 4, and a shortcut (ResNet-50+);
    the stride sits on the 3x3 convolution, as in torchvision (ResNet v1.5)."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None, groups: int = 1,
                 base_width: int = 64, dilation: int = 1, norm_layer: Callable[..., Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1, self.bn1 = conv1x1(inplanes, width), norm_layer(width)
        self.conv2, self.bn2 = conv3x3(width, width, stride, groups, dilation), norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    """The ResNet trunk: a 7x7 stem, four stages of blocks, global average pooling, a linear
    classifier.  Initialised as torchvision does (Kaiming-normal convolutions, BN weight 1 and
    bias 0; zero_init_residual zeroes each block's last BN weight)."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: Callable[..., Module] | None = None) -> None:
        super().__init__()
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        replace_stride_with_dilation = replace_stride_with_dilation or [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(f"replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last = m.bn3 if isinstance(m, Bottleneck) else m.bn2 if isinstance(m, BasicBlock) else None
                if last is not None and last.weight is not None:
                    nn.init.constant_(last.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer, previous_dilation = self._norm_layer, self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(flatten(self.avgpool(x), 1))


def _meta(num_params, acc1, acc5):
    return {"num_params": num_params, "min_size": (1, 1), "categories": IMAGENET_CATEGORIES,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification",
            "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}, "num_classes": 1000}


def _weights(url, crop, resize, meta):
    return Weights(url, classification_transforms(crop, resize), meta)


_BASE = "https://download.pytorch.org/models/"


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = _weights(_BASE + "resnet18-f37072fd.pth", 224, 256, _meta(11689512, 69.758, 89.078))
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = _weights(_BASE + "resnet34-b627a593.pth", 224, 256, _meta(21797672, 73.314, 91.420))
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = _weights(_BASE + "resnet50-0676ba61.pth", 224, 256, _meta(25557032, 76.130, 92.862))
    IMAGENET1K_V2 = _weights(_BASE + "resnet50-11ad3fa6.pth", 224, 232, _meta(25557032, 80.858, 95.434))
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = _weights(_BASE + "resnet101-63fe2227.pth", 224, 256, _meta(44549160, 77.374, 93.546))
    IMAGENET1K_V2 = _weights(_BASE + "resnet101-cd907fc2.pth", 224, 232, _meta(44549160, 81.886, 95.780))
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = _weights(_BASE + "resnet152-394f9c45.pth", 224, 256, _meta(60192808, 78.312, 94.046))
    IMAGENET1K_V2 = _weights(_BASE + "resnet152-f82ba261.pth", 224, 232, _meta(60192808, 82.284, 96.002))
    DEFAULT = IMAGENET1K_V2


def _resnet(block, layers, weights_enum, weights, progress, kwargs):
    weights = handle_weights(weights_enum, weights, kwargs) if weights_enum else weights
    return load_weights(ResNet(block, layers, **kwargs), weights, progress)


@register_model(weights=ResNet18_Weights)
def resnet18(*, weights: ResNet18_Weights | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-18; weights: None, ResNet18_Weights.DEFAULT (or its name) for ImageNet weights."""
    return _resnet(BasicBlock, [2, 2, 2, 2], ResNet18_Weights, weights, progress, kwargs)


@register_model(weights=ResNet34_Weights)
def resnet34(*, weights: ResNet34_Weights | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-34."""
    return _resnet(BasicBlock, [3, 4, 6, 3], ResNet34_Weights, weights, progress, kwargs)


@register_model(weights=ResNet50_Weights)
def resnet50(*, weights: ResNet50_Weights | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-50."""
    return _resnet(Bottleneck, [3, 4, 6, 3], ResNet50_Weights, weights, progress, kwargs)


@register_model(weights=ResNet101_Weights)
def resnet101(*, weights: ResNet101_Weights | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-101."""
    return _resnet(Bottleneck, [3, 4, 23, 3], ResNet101_Weights, weights, progress, kwargs)


@register_model(weights=ResNet152_Weights)
def resnet152(*, weights: ResNet152_Weights | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-152."""
    return _resnet(Bottleneck, [3, 8, 36, 3], ResNet152_Weights, weights, progress, kwargs)


def _no_weights(name, weights):
    if weights is not None:
        raise ValueError(f"{name}: pretrained weights are not available in torchlite yet")


@register_model()
def resnext50_32x4d(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNeXt-50 32x4d (grouped 3x3 convolutions)."""
    _no_weights("resnext50_32x4d", weights)
    return ResNet(Bottleneck, [3, 4, 6, 3], groups=32, width_per_group=4, **kwargs)


@register_model()
def resnext101_32x8d(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """ResNeXt-101 32x8d."""
    _no_weights("resnext101_32x8d", weights)
    return ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=8, **kwargs)


@register_model()
def wide_resnet50_2(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """Wide ResNet-50-2 (twice the bottleneck width)."""
    _no_weights("wide_resnet50_2", weights)
    return ResNet(Bottleneck, [3, 4, 6, 3], width_per_group=128, **kwargs)


@register_model()
def wide_resnet101_2(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> ResNet:
    """Wide ResNet-101-2."""
    _no_weights("wide_resnet101_2", weights)
    return ResNet(Bottleneck, [3, 4, 23, 3], width_per_group=128, **kwargs)
