"""ONNX export of torchlite.vision's model families (each built small) and of the ops they
brought in -- relu6/hardtanh (Clip), hardswish (HardSwish), hardsigmoid (HardSigmoid), the
functional adaptive_avg_pool2d, Tensor.expand (Expand, sizes from the input) -- run in
onnxruntime at two batch sizes against torchlite's own output.  Skips without onnx and
onnxruntime."""
import io

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.vision import models

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _check(model, shape, atol=1e-4):
    model.eval()
    x = tl.randn(*shape, generator=tl.Generator().manual_seed(0))
    buf = io.BytesIO()
    proto = tl.onnx.export(model, (x,), buf, input_names=["x"], output_names=["y"],
                           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    for batch in (shape[0], shape[0] + 2):
        xb = tl.randn(batch, *shape[1:], generator=tl.Generator().manual_seed(batch))
        (got,) = sess.run(None, {"x": xb.numpy()})
        with tl.no_grad():
            want = model(xb).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=atol)


@pytest.mark.parametrize("build, shape", [
    (lambda: models.resnet18(num_classes=5), (1, 3, 32, 32)),
    (lambda: models.squeezenet1_1(num_classes=5), (1, 3, 48, 48)),
    (lambda: models.densenet121(num_classes=5), (1, 3, 32, 32)),
    (lambda: models.mobilenet_v2(num_classes=5, width_mult=0.25), (1, 3, 32, 32)),
    (lambda: models.mobilenet_v3_small(num_classes=5, width_mult=0.25), (1, 3, 32, 32)),
    (lambda: models.efficientnet_b0(num_classes=5), (1, 3, 32, 32)),
    (lambda: models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                      hidden_dim=16, mlp_dim=32, num_classes=5), (1, 3, 32, 32)),
], ids=["resnet", "squeezenet", "densenet", "mobilenet_v2", "mobilenet_v3", "efficientnet",
        "vit"])
def test_vision_model_families_export(build, shape):
    tl.manual_seed(0)
    _check(build(), shape)


class _Ops(nn.Module):
    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(tl.randn(1, 1, 6))
        self.acts = nn.ModuleList([nn.ReLU6(), nn.Hardtanh(-0.5, 1.5), nn.Hardswish(),
                                   nn.Hardsigmoid()])

    def forward(self, x):                                   # x: (b, 6, 4, 4)
        h = sum(a(x * 3.0) for a in self.acts)
        h = h + F.relu6(x * 4.0) + F.hardtanh(x, -0.25, 0.75) + F.hardswish(x * 2.0) \
            + F.hardsigmoid(x * 5.0)
        p = F.adaptive_avg_pool2d(h, (2, 2)).flatten(2).transpose(1, 2)     # (b, 4, 6)
        t = self.token.expand(x.shape[0], -1, -1)                          # (b, 1, 6)
        return tl.cat([t, p], dim=1)


def test_new_ops_match_onnxruntime():
    tl.manual_seed(1)
    _check(_Ops(), (2, 6, 4, 4))


def test_adaptive_pool_that_does_not_divide_raises():
    # (PyTorch's exporter has no form for it either; vgg/alexnet export at 224 x 224, where
    # their pools divide)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d((3, 3)))
    with pytest.raises(tl.onnx.UnsupportedOperatorError, match="not dividing"):
        tl.onnx.export(m.eval(), (tl.randn(1, 3, 9, 9),), io.BytesIO())
