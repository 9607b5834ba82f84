"""Building blocks torchvision keeps in torchvision.ops.misc and its models share:
Conv2dNormActivation, SqueezeExcitation, StochasticDepth, and the channel rounding of the
MobileNets (_make_divisible)."""
from .. import nn

__all__ = ["Conv2dNormActivation", "SqueezeExcitation", "StochasticDepth", "stochastic_depth",
           "make_divisible"]


def make_divisible(v, divisor, min_value=None):
    """v rounded to a multiple of divisor, never below 90% of v (the MobileNets' rule)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(nn.Sequential):
    """Conv2d -> norm_layer -> activation_layer (each optional); padding keeps the size at
    stride 1; the convolution has a bias only without a norm layer (unless bias is given)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True,
                 bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else activation_layer(inplace=inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(nn.Module):
    """Channel attention (Hu et al.): x * scale(fc2(act(fc1(avgpool(x)))))."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU,
                 scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


def stochastic_depth(input, p, mode, training=True):
    """Drop whole residual branches with probability p ('row': per sample, 'batch': all),
    scaling the kept ones by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    keep = 1.0 - p
    shape = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = input.new_empty(shape).bernoulli_(keep)
    if keep > 0.0:
        noise = noise / keep
    return input * noise


class StochasticDepth(nn.Module):
    def __init__(self, p, mode):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def extra_repr(self):
        return f"p={self.p}, mode={self.mode}"

