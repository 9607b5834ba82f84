"""torchlite.vision.models: each architecture's parameter count against torchvision's published
numbers, state_dict keys as torchvision names them, forward/backward shapes, the weights API
(verify, DEFAULT, get_weight, num_classes checks) and loading weights through torchlite.hub
from a local HTTP server; outputs against torchvision with copied weights where installed."""
import hashlib
import http.server
import io
import threading

import numpy as np
import pytest

import torchlite as tl
from torchlite import hub
from torchlite.vision import models as M

# torchvision's documented parameter counts (its model docs' "num_params")
PARAMS = {"alexnet": 61100840, "resnet18": 11689512, "resnet34": 21797672, "resnet50": 25557032,
          "resnet101": 44549160, "resnet152": 60192808, "resnext50_32x4d": 25028904,
          "resnext101_32x8d": 88791336, "wide_resnet50_2": 68883240, "wide_resnet101_2": 126886696,
          "vgg11": 132863336, "vgg11_bn": 132868840, "vgg13": 133047848, "vgg13_bn": 133053736,
          "vgg16": 138357544, "vgg16_bn": 138365992, "vgg19": 143667240, "vgg19_bn": 143678248,
          "mobilenet_v2": 3504872, "mobilenet_v3_small": 2542856, "mobilenet_v3_large": 5483032,
          "squeezenet1_0": 1248424, "squeezenet1_1": 1235496, "densenet121": 7978856,
          "densenet161": 28681000, "densenet169": 14149480, "densenet201": 20013928,
          "efficientnet_b0": 5288548, "efficientnet_b1": 7794184, "efficientnet_b2": 9109994,
          "efficientnet_b3": 12233232, "vit_b_16": 86567656, "vit_b_32": 88224232}


def test_every_model_is_registered():
    assert set(PARAMS) <= set(M.list_models())
    assert M.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18", "resnet34", "resnet50"]
    assert "vgg11" not in M.list_models(exclude="vgg*")
    assert M.list_models(module=M) == M.list_models()


@pytest.mark.parametrize("name", ["alexnet", "resnet18", "resnet50", "resnext50_32x4d", "vgg11",
                                  "vgg16_bn", "wide_resnet50_2", "resnet152", "vgg19", "mobilenet_v2",
                                  "mobilenet_v3_small", "mobilenet_v3_large", "squeezenet1_0",
                                  "squeezenet1_1", "densenet121", "densenet201", "efficientnet_b0",
                                  "efficientnet_b2", "efficientnet_b3", "vit_b_16", "vit_b_32"])
def test_parameter_counts(name):
    m = M.get_model(name)
    assert sum(p.numel() for p in m.parameters()) == PARAMS[name]


def test_resnet18_state_dict_keys():
    sd = M.resnet18().state_dict()
    keys = list(sd)
    assert len(keys) == 122
    assert keys[:6] == ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                        "bn1.num_batches_tracked"]
    assert "layer2.0.downsample.0.weight" in sd and "layer2.0.downsample.1.running_var" in sd
    assert "layer1.0.downsample.0.weight" not in sd
    assert keys[-2:] == ["fc.weight", "fc.bias"]
    assert tuple(sd["layer4.1.conv2.weight"].shape) == (512, 512, 3, 3)
    r50 = M.resnet50().state_dict()
    assert len(r50) == 320 and tuple(r50["layer1.0.conv3.weight"].shape) == (256, 64, 1, 1)
    vgg = list(M.vgg16().state_dict())
    assert vgg[0] == "features.0.weight" and "features.28.bias" in vgg and vgg[-1] == "classifier.6.bias"


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "vgg11_bn", "alexnet", "mobilenet_v2",
                                  "mobilenet_v3_small", "squeezenet1_1", "densenet121",
                                  "efficientnet_b0", "vit_b_16"])
def test_forward_and_backward(name):
    tl.manual_seed(0)
    extra = {"image_size": 32} if name.startswith("vit") else {}
    m = M.get_model(name, num_classes=7, **extra)
    size = 64 if name in ("alexnet", "squeezenet1_1") else 32
    x = tl.randn(2, 3, size, size)
    out = m(x)
    assert tuple(out.shape) == (2, 7)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.eval()
    with tl.no_grad():
        a, b = m(x), m(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_densenet_renames_torchvisions_old_keys(weights_server, monkeypatch, tmp_path):
    tl.manual_seed(4)
    state = M.densenet121().state_dict()
    # torchvision's published file: 'norm.1' for 'norm1', and (older than BatchNorm's counter) no
    # num_batches_tracked entries
    old = {k.replace("norm1.", "norm.1.").replace("conv2.", "conv.2."): v for k, v in state.items()
           if not k.endswith("num_batches_tracked")}
    buf = io.BytesIO()
    tl.save(old, buf)
    data = buf.getvalue()
    name = f"densenet121-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    url, _ = weights_server
    www = url.rsplit("/", 1)[0]
    import urllib.parse
    folder = tmp_path / "www"
    (folder / name).write_bytes(data)
    monkeypatch.setattr(M.DenseNet121_Weights.IMAGENET1K_V1.value, "url", f"{www}/{name}")
    assert urllib.parse.urlparse(www).hostname == "127.0.0.1"
    m = M.densenet121(weights="DEFAULT", progress=False)
    key = "features.denseblock1.denselayer1.norm1.running_mean"
    np.testing.assert_array_equal(m.state_dict()[key].numpy(), state[key].numpy())


def test_zero_init_residual_and_dilation():
    m = M.resnet18(zero_init_residual=True)
    assert float(m.layer1[0].bn2.weight.abs().sum()) == 0
    d = M.resnet50(replace_stride_with_dilation=[False, True, True])
    out = d.layer4(d.layer3(d.layer2(d.layer1(tl.randn(1, 64, 16, 16)))))
    assert tuple(out.shape) == (1, 2048, 8, 8)
    with pytest.raises(ValueError, match="replace_stride_with_dilation"):
        M.resnet50(replace_stride_with_dilation=[True])


def test_weights_api():
    W = M.ResNet50_Weights
    assert W.DEFAULT is W.IMAGENET1K_V2 and W.verify("IMAGENET1K_V1") is W.IMAGENET1K_V1
    assert W.verify("ResNet50_Weights.DEFAULT") is W.IMAGENET1K_V2 and W.verify(None) is None
    assert W.IMAGENET1K_V1.url.endswith("resnet50-0676ba61.pth")
    assert W.IMAGENET1K_V2.meta["num_params"] == PARAMS["resnet50"]
    assert M.get_weight("ResNet50_Weights.IMAGENET1K_V2") is W.IMAGENET1K_V2
    assert M.get_model_weights("resnet50") is W and M.get_model_weights(M.resnet18) is M.ResNet18_Weights
    with pytest.raises(ValueError, match="Failed to find"):
        W.verify("NOPE")
    with pytest.raises(TypeError, match="Invalid Weight class"):
        W.verify(M.ResNet18_Weights.DEFAULT)
    with pytest.raises(ValueError, match="num_classes"):
        M.resnet50(weights=W.DEFAULT, num_classes=10, progress=False)
    with pytest.raises(ValueError, match="Unknown model"):
        M.get_model("resnet7")
    with pytest.raises(ValueError, match="not available"):
        M.resnext50_32x4d(weights="DEFAULT")


@pytest.fixture
def weights_server(tmp_path, monkeypatch):
    """A hash-named checkpoint of resnet18 served on 127.0.0.1, and the hub cache in tmp."""
    www = tmp_path / "www"
    www.mkdir()
    tl.manual_seed(3)
    state = M.resnet18().state_dict()
    buf = io.BytesIO()
    tl.save(state, buf)
    data = buf.getvalue()
    name = f"resnet18-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    (www / name).write_bytes(data)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(www), **k)

        def log_message(self, *a):
            pass
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path / "hub"))
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/{name}", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(10)


def test_pretrained_weights_load_through_the_hub(weights_server, monkeypatch):
    url, state = weights_server
    entry = M.ResNet18_Weights.IMAGENET1K_V1
    monkeypatch.setattr(entry.value, "url", url)
    m = M.resnet18(weights="DEFAULT", progress=False)
    for k, v in state.items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())
    m2 = M.get_model("resnet18", weights=entry, progress=False)
    assert float((m2.fc.weight - m.fc.weight).abs().max()) == 0


def test_against_torchvision_where_installed():
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision")
    for name in ("resnet18", "vgg11_bn", "alexnet", "mobilenet_v2", "mobilenet_v3_small",
                 "squeezenet1_1", "densenet121", "efficientnet_b0"):
        ref = getattr(tv.models, name)().eval()
        ours = M.get_model(name).eval()
        ours.load_state_dict({k: tl.from_numpy(v.numpy()) for k, v in ref.state_dict().items()},
                             strict=True)
        x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
        with torch.no_grad():
            want = ref(torch.from_numpy(x)).numpy()
        got = ours(tl.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_vit_renames_torchvisions_old_mlp_keys(weights_server, monkeypatch, tmp_path):
    tl.manual_seed(5)
    state = M.vit_b_32(image_size=32).state_dict()
    old = {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v for k, v in state.items()}
    assert any("linear_1" in k for k in old)
    buf = io.BytesIO()
    tl.save(old, buf)
    data = buf.getvalue()
    name = f"vit-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    url, _ = weights_server
    (tmp_path / "www" / name).write_bytes(data)
    from torchlite.vision.models import vision_transformer as V
    entry = V.ViT_B_16_Weights.IMAGENET1K_V1
    monkeypatch.setattr(entry.value, "url", url.rsplit("/", 1)[0] + "/" + name)
    # the architecture of the file is vit_b_32 at 32 pixels: build that, with its weights
    model = V._vit(32, 12, 12, 768, 3072, V.ViT_B_16_Weights, "DEFAULT", False, {"image_size": 32})
    key = "encoder.layers.encoder_layer_0.mlp.3.weight"
    np.testing.assert_array_equal(model.state_dict()[key].numpy(), state[key].numpy())


def test_weights_meta_has_torchvisions_imagenet_categories():
    from torchlite.vision.models import _api
    cats = _api.imagenet_categories()
    assert isinstance(cats, list) and len(cats) == 1000
    assert cats[0] == "tench" and cats[1] == "goldfish" and cats[-1] == "toilet tissue"
    assert cats[281] == "tabby" and cats[985] == "daisy"
    # torchvision tells ImageNet's two "crane" and two "maillot" classes apart
    assert cats[134] == "crane bird" and cats[517] == "crane"
    assert cats[638] == "maillot" and cats[639] == "maillot tank suit"
    assert len(set(cats)) == 1000 and all(c and c == c.strip() for c in cats)
    meta = M.ResNet18_Weights.DEFAULT.meta
    assert meta["categories"][0] == "tench" and meta["num_classes"] == 1000
    assert meta.get("categories") is cats and dict(meta)["categories"] is cats
    for name in M.list_models(M):
        try:
            weights = M.get_model_weights(name)
        except ValueError:
            continue
        for entry in weights:
            assert entry.meta["categories"] is cats and entry.meta["num_classes"] == 1000
    with pytest.raises(ValueError, match="num_classes"):
        M.resnet18(weights=M.ResNet18_Weights.DEFAULT, num_classes=10)


def test_importing_models_does_not_read_the_categories_file():
    import subprocess
    import sys
    code = ("from torchlite.vision import models as M\n"
            "from torchlite.vision.models import _api\n"
            "assert _api._imagenet_categories is None\n"
            "meta = M.ResNet50_Weights.DEFAULT.meta\n"
            "assert meta['num_classes'] == 1000 and 'categories' in meta\n"
            "assert _api._imagenet_categories is None\n"
            "assert meta['categories'][1] == 'goldfish' and len(_api._imagenet_categories) == 1000\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_deprecated_pretrained_argument_is_taken_as_torchvision_takes_it(monkeypatch):
    import torchlite.vision.models.resnet as R
    seen = []
    monkeypatch.setattr(R, "load_weights", lambda model, weights, progress: (seen.append(weights), model)[1])
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"):
        m = M.resnet18(pretrained=False)
    assert seen[-1] is None and sum(p.numel() for p in m.parameters()) == 11689512
    with pytest.warns(UserWarning, match="equivalent to passing `weights=ResNet50_Weights.IMAGENET1K_V1`"):
        M.resnet50(pretrained=True)
    assert seen[-1] is M.ResNet50_Weights.IMAGENET1K_V1           # the legacy mapping, not DEFAULT
    with pytest.warns(UserWarning), pytest.raises(ValueError):
        M.resnet18(pretrained=True, weights=M.ResNet18_Weights.DEFAULT)
