"""Vision Transformer (Dosovitskiy et al. 2020): vit_b_16, vit_b_32, vit_l_16, vit_l_32, with
torchvision's names and keys (conv_proj, class_token, encoder.pos_embedding,
encoder.layers.encoder_layer_<i>, heads.head)."""
from __future__ import annotations

import functools
import math
import re
from collections import OrderedDict
from typing import TYPE_CHECKING

from ... import nn, zeros, empty, cat, _assert
from ._api import Weights, WeightsEnum, classification_transforms, handle_weights
from ._api import IMAGENET_CATEGORIES, register_model

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["VisionTransformer", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "ViT_B_16_Weights"]


class MLPBlock(nn.Sequential):
    """Linear -> GELU -> Dropout -> Linear -> Dropout (torchvision's MLP, keys 0..4)."""

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(nn.Linear(in_dim, mlp_dim), nn.GELU(), nn.Dropout(dropout),
                         nn.Linear(mlp_dim, in_dim), nn.Dropout(dropout))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, each with a residual."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer: Callable[..., Module]) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        _assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float,
                 attention_dropout: float, norm_layer: Callable[..., Module]) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout,
                                                attention_dropout, norm_layer))
            for i in range(num_layers)))
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: Tensor) -> Tensor:
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None,
                 norm_layer: Callable[..., Module] = functools.partial(nn.LayerNorm, eps=1e-6)) -> None:
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError("Input shape indivisible by patch size!")
        self.image_size, self.patch_size = image_size, patch_size
        self.hidden_dim, self.mlp_dim = hidden_dim, mlp_dim
        self.num_classes, self.representation_size = num_classes, representation_size
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                               attention_dropout, norm_layer)
        self.seq_length = seq_length
        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)
        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if "pre_logits" in heads:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, c, h, w = x.shape
        p = self.patch_size
        # (_assert, as torchvision writes it: recorded by graph capture where an `if` on a
        # traced size could not be)
        _assert(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        _assert(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        x = self.conv_proj(x)
        return x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self._process_input(x)
        x = cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vit_b_16-c867db91.pth",
                            classification_transforms(224, 256),
                            {"num_params": 86567656, "min_size": (224, 224), "categories": IMAGENET_CATEGORIES,
                             "num_classes": 1000, "_metrics": {"ImageNet-1K": {"acc@1": 81.072, "acc@5": 95.318}}})
    DEFAULT = IMAGENET1K_V1


_OLD_MLP_KEY = re.compile(r"^(.*\.mlp)\.linear_([12])\.(weight|bias)$")


def _vit(patch, layers, heads, hidden, mlp, weights_enum, weights, progress, kwargs):
    if weights_enum is not None:
        weights = handle_weights(weights_enum, weights, kwargs)
    elif weights is not None:
        raise ValueError("pretrained weights for this ViT are not available in torchlite yet")
    model = VisionTransformer(kwargs.pop("image_size", 224), patch, layers, heads, hidden, mlp, **kwargs)
    if weights is None:
        return model
    # torchvision's published checkpoints predate its MLP's Sequential keys: mlp.linear_1 and
    # mlp.linear_2 are mlp.0 and mlp.3 now (torchvision renames them on load too)
    state = weights.get_state_dict(progress=progress, check_hash=True)
    for key in [k for k in state if _OLD_MLP_KEY.match(k)]:
        m = _OLD_MLP_KEY.match(key)
        state[f"{m.group(1)}.{0 if m.group(2) == '1' else 3}.{m.group(3)}"] = state.pop(key)
    model.load_state_dict(state)
    return model


@register_model(weights=ViT_B_16_Weights)
def vit_b_16(*, weights: ViT_B_16_Weights | str | None = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-B/16."""
    return _vit(16, 12, 12, 768, 3072, ViT_B_16_Weights, weights, progress, kwargs)


@register_model()
def vit_b_32(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-B/32 (no pretrained weights here yet)."""
    return _vit(32, 12, 12, 768, 3072, None, weights, progress, kwargs)


@register_model()
def vit_l_16(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-L/16 (no pretrained weights here yet)."""
    return _vit(16, 24, 16, 1024, 4096, None, weights, progress, kwargs)


@register_model()
def vit_l_32(*, weights: WeightsEnum | str | None = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-L/32 (no pretrained weights here yet)."""
    return _vit(32, 24, 16, 1024, 4096, None, weights, progress, kwargs)
