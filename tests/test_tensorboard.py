"""torchlite.utils.tensorboard: every record SummaryWriter writes is read back with TensorBoard's
own reader (EventAccumulator, keeping every event) and checked value by value against NumPy:
scalars, add_scalars' runs, histograms, images (PNG decoded with Pillow), grids, figures, audio,
text, hparams, PR curves, custom scalars, embeddings' files and the graph of a torchlite.nn
model; then flush/close, purge_step, filename_suffix, the default log_dir and the install hints.
Where PyTorch is installed, torch.utils.tensorboard's records for the same calls are compared."""
import glob
import io
import math
import os
import re
import socket
import subprocess
import sys
import time
import wave

import numpy as np
import pytest

import torchlite as torch
import torchlite.nn as nn

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator, event_file_loader  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from torchlite.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path):
    acc = event_accumulator.EventAccumulator(str(path), size_guidance=event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE)
    return acc.Reload()


def _event_files(path):
    return sorted(glob.glob(os.path.join(str(path), "events.out.tfevents.*")))


@pytest.fixture
def pil():
    return pytest.importorskip("PIL.Image")


def _png(data):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(data)))


def _as_uint8(x):
    return x if x.dtype == np.uint8 else (x.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


# ---------------------------------------------------------------- scalars

def test_add_scalar_steps_values_walltime(tmp_path):
    x = torch.tensor([1.5, 2.0], requires_grad=True)
    before = time.time()
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 0.25, 0, walltime=100.0)
        w.add_scalar("loss", x.sum(), 1, walltime=101.5)            # a tensor requiring grad
        w.add_scalar("loss", np.float32(-3.0), 2)                     # walltime: now
        w.add_scalar("loss", np.array([[7.0]]), torch.tensor(3))     # one element; a tensor step
        w.add_scalar("half", torch.tensor(0.5).to(torch.bfloat16), 0)
    after = time.time()
    events = _read(tmp_path).Scalars("loss")
    assert [e.step for e in events] == [0, 1, 2, 3]
    assert [e.value for e in events] == [0.25, 3.5, -3.0, 7.0]
    assert events[0].wall_time == 100.0 and events[1].wall_time == 101.5
    assert before <= events[2].wall_time <= after
    assert _read(tmp_path).Scalars("half")[0].value == 0.5


def test_add_scalar_new_style_and_double_precision(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("f32", 1 / 3, 4, new_style=True)
        w.add_scalar("f64", 1 / 3, 4, new_style=True, double_precision=True)
    acc = _read(tmp_path)
    f32, f64 = (tensor_util.make_ndarray(acc.Tensors(t)[0].tensor_proto) for t in ("f32", "f64"))
    assert f32.dtype == np.float32 and f32.shape == () and f32 == np.float32(1 / 3)
    assert f64.dtype == np.float64 and f64 == 1 / 3
    assert acc.Tensors("f32")[0].step == 4
    assert acc.SummaryMetadata("f32").plugin_data.plugin_name == "scalars"


def test_add_scalar_rejects_arrays(tmp_path):
    with SummaryWriter(tmp_path) as w, pytest.raises(ValueError, match="one number"):
        w.add_scalar("x", np.ones(3))


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": step * 1.0, "val": torch.tensor(step + 0.5)}, step)
    assert sorted(os.listdir(tmp_path / "run_loss_train")) and sorted(os.listdir(tmp_path / "run_loss_val"))
    train, val = _read(tmp_path / "run_loss_train"), _read(tmp_path / "run_loss_val")
    assert [e.value for e in train.Scalars("run/loss")] == [0.0, 1.0, 2.0]
    assert [e.value for e in val.Scalars("run/loss")] == [0.5, 1.5, 2.5]
    assert [e.step for e in val.Scalars("run/loss")] == [0, 1, 2]
    # both parts of one call share its walltime; the main run has no scalars
    assert [e.wall_time for e in train.Scalars("run/loss")] == [e.wall_time for e in val.Scalars("run/loss")]
    assert _read(tmp_path).Tags()["scalars"] == []


# ---------------------------------------------------------------- histograms

def _tensorflow_edges():
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in edges[::-1]] + [0.0] + edges


def _expected_histogram(values, bins):
    counts, edges = np.histogram(values, bins=bins)
    nz = np.nonzero(counts)[0]
    lo, hi = nz.min(), nz.max()
    # right edges of the buckets lo .. hi, after an empty one ending at the left edge of lo
    return list(edges[lo:hi + 2]), [0.0] + list(counts[lo:hi + 1].astype(float))


@pytest.mark.parametrize("bins", ["tensorflow", 10, "auto", [-1.0, 0.0, 0.5, 3.0]])
def test_add_histogram_buckets_against_numpy(tmp_path, bins):
    values = np.random.default_rng(0).normal(size=(20, 50)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", torch.tensor(values, requires_grad=True), 7, bins=bins, walltime=5.0)
    (event,) = _read(tmp_path).Histograms("h")
    h = event.histogram_value
    v = values.astype(np.float64).reshape(-1)
    limits, counts = _expected_histogram(v, _tensorflow_edges() if bins == "tensorflow" else bins)
    assert (event.step, event.wall_time) == (7, 5.0)
    assert list(h.bucket_limit) == pytest.approx(limits, rel=1e-12) and list(h.bucket) == counts
    assert (h.min, h.max, h.num) == (v.min(), v.max(), v.size)
    assert h.sum == pytest.approx(v.sum(), rel=1e-12) and h.sum_squares == pytest.approx(v @ v, rel=1e-12)


def test_add_histogram_max_bins_and_raw(tmp_path):
    values = np.arange(100.0)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("merged", values, bins=10, max_bins=3)
        w.add_histogram_raw("raw", 0.0, 9.0, 10, 45.0, 285.0, [3.0, 6.0, 9.0], [4, 3, 3], global_step=2)
        with pytest.raises(ValueError):
            w.add_histogram("empty", np.array([]))
        with pytest.raises(ValueError):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0, 2.0], [1])
    acc = _read(tmp_path)
    merged = acc.Histograms("merged")[0].histogram_value
    # 10 bins of 10 merged 4 by 4 (the last group padded): at most max_bins buckets, plus the empty first
    assert list(merged.bucket) == [0, 40, 40, 20] and list(merged.bucket_limit) == [0.0, 39.6, 79.2, 99.0]
    raw = acc.Histograms("raw")[0]
    assert raw.step == 2 and list(raw.histogram_value.bucket) == [4, 3, 3]
    assert (raw.histogram_value.num, raw.histogram_value.sum_squares) == (10, 285.0)


# ---------------------------------------------------------------- images

@pytest.mark.parametrize("dataformats, shape", [("CHW", (3, 5, 7)), ("HWC", (5, 7, 3)), ("HW", (5, 7)),
                                                 ("CHW", (1, 5, 7)), ("HWC", (5, 7, 4)), ("WHC", (7, 5, 3))])
@pytest.mark.parametrize("kind", ["float", "uint8"])
def test_add_image_pixels(tmp_path, pil, dataformats, shape, kind):
    rng = np.random.default_rng(1)
    img = rng.random(shape).astype(np.float32) if kind == "float" else rng.integers(0, 256, shape, np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", torch.tensor(img), 3, dataformats=dataformats)
    (event,) = _read(tmp_path).Images("img")
    pixels = _png(event.encoded_image_string)
    hwc = img.transpose([dataformats.index(a) for a in "HWC"]) if len(shape) == 3 else img[:, :, None]
    if hwc.shape[2] == 1:
        hwc = np.repeat(hwc, 3, axis=2)
    assert (event.step, event.height, event.width) == (3, 5, 7)
    assert pixels.shape == hwc.shape and np.array_equal(pixels, _as_uint8(hwc))


def test_add_image_numpy_clips_and_rejects_bad_layouts(tmp_path, pil):
    img = np.array([[-0.5, 0.0], [0.5, 2.0]])
    with SummaryWriter(tmp_path) as w:
        w.add_image("clip", img, dataformats="HW")
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("bad", np.zeros((3, 4, 5)), dataformats="HW")
        with pytest.raises(ValueError, match="channels"):
            w.add_image("bad", np.zeros((2, 4, 5)))
    pixels = _png(_read(tmp_path).Images("clip")[0].encoded_image_string)
    assert pixels[:, :, 0].tolist() == [[0, 0], [127, 255]]


@pytest.mark.parametrize("dataformats", ["NCHW", "NHWC"])
def test_add_images_grid(tmp_path, pil, dataformats):
    n, h, wd = 10, 3, 4
    imgs = np.random.default_rng(2).random((n, 1, h, wd)).astype(np.float32)
    given = imgs if dataformats == "NCHW" else imgs.transpose(0, 2, 3, 1)
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", torch.tensor(given), 1, dataformats=dataformats)
    event = _read(tmp_path).Images("batch")[0]
    pixels = _png(event.encoded_image_string)
    assert pixels.shape == (2 * h, 8 * wd, 3)                 # 8 a row, 2 rows, no padding
    for i in range(n):
        r, c = divmod(i, 8)
        tile = pixels[r * h:(r + 1) * h, c * wd:(c + 1) * wd]
        assert np.array_equal(tile, np.repeat(_as_uint8(imgs[i, 0])[:, :, None], 3, axis=2))
    assert not pixels[h:, 2 * wd:].any()                      # the empty cells stay black


def test_add_figure(tmp_path, pil):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figs = [plt.figure(figsize=(2, 1), dpi=20, facecolor=color) for color in ("red", "blue")]
    with SummaryWriter(tmp_path) as w:
        w.add_figure("one", figs[0], 0, close=False)
        w.add_figure("two", figs, 1)
    assert plt.fignum_exists(figs[0].number) is False and plt.fignum_exists(figs[1].number) is False
    acc = _read(tmp_path)
    one = _png(acc.Images("one")[0].encoded_image_string)
    two = _png(acc.Images("two")[0].encoded_image_string)
    assert one.shape == (20, 40, 3) and (one == [255, 0, 0]).all()
    assert two.shape == (20, 80, 3) and (two[:, :40] == [255, 0, 0]).all() and (two[:, 40:] == [0, 0, 255]).all()


def test_pillow_missing_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with SummaryWriter(tmp_path) as w, pytest.raises(ImportError, match=re.escape('torchlite-dl[vision]')):
        w.add_image("x", np.zeros((3, 2, 2)))


# ---------------------------------------------------------------- audio, text, custom scalars

def test_add_audio(tmp_path):
    samples = np.sin(np.arange(400) / 7.0) * 1.2                  # beyond [-1, 1]: clipped
    with SummaryWriter(tmp_path) as w:
        w.add_audio("snd", torch.tensor(samples[None]), 2, sample_rate=8000)
    (event,) = _read(tmp_path).Audio("snd")
    assert (event.step, event.sample_rate, event.length_frames, event.content_type) == (2, 8000, 400, "audio/wav")
    with wave.open(io.BytesIO(event.encoded_audio_string)) as f:
        assert (f.getnchannels(), f.getsampwidth(), f.getframerate()) == (1, 2, 8000)
        pcm = np.frombuffer(f.readframes(400), "<i2")
    assert np.array_equal(pcm, (samples.clip(-1, 1) * 32767).astype(np.int16))


def test_add_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**bold** é", 5)
    acc = _read(tmp_path)
    (event,) = acc.Tensors("notes/text_summary")
    assert event.step == 5
    assert tensor_util.make_ndarray(event.tensor_proto).tolist() == ["**bold** é".encode()]
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


def test_add_custom_scalars(tmp_path):
    from tensorboard.plugins.custom_scalar import layout_pb2
    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars({"losses": {"all": ["Multiline", ["loss/.*"]], "band": ["Margin", ["m", "lo", "hi"]]}})
        with pytest.raises(ValueError):
            w.add_custom_scalars({"c": {"t": ["Margin", ["only-one"]]}})
    (event,) = _read(tmp_path).Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(tensor_util.make_ndarray(event.tensor_proto).item())
    (cat,) = layout.category
    assert cat.title == "losses" and [c.title for c in cat.chart] == ["all", "band"]
    assert list(cat.chart[0].multiline.tag) == ["loss/.*"]
    series = cat.chart[1].margin.series[0]
    assert (series.value, series.lower, series.upper) == ("m", "lo", "hi")


# ---------------------------------------------------------------- hparams

def test_add_hparams(tmp_path):
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams import metadata as hp
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "layers": 3, "opt": "adam", "bn": True, "skip": None, "wd": torch.tensor(1e-4)},
                      {"acc": 0.75, "loss": torch.tensor(0.5)}, hparam_domain_discrete={"opt": ["adam", "sgd"]},
                      run_name="trial", global_step=4)
        with pytest.raises(TypeError):
            w.add_hparams([("lr", 0.1)], {})
    acc = _read(tmp_path / "trial")
    content = acc.PluginTagToContent("hparams")
    assert set(content) == {hp.EXPERIMENT_TAG, hp.SESSION_START_INFO_TAG, hp.SESSION_END_INFO_TAG}
    experiment = hp.parse_experiment_plugin_data(content[hp.EXPERIMENT_TAG])
    infos = {i.name: i for i in experiment.hparam_infos}
    assert list(infos) == ["lr", "layers", "opt", "bn", "wd"]
    assert infos["lr"].type == api_pb2.DATA_TYPE_FLOAT64 and infos["opt"].type == api_pb2.DATA_TYPE_STRING
    assert infos["bn"].type == api_pb2.DATA_TYPE_BOOL
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in experiment.metric_infos] == ["acc", "loss"]
    start = hp.parse_session_start_info_plugin_data(content[hp.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["layers"].number_value == 3
    assert start.hparams["opt"].string_value == "adam" and start.hparams["bn"].bool_value is True
    assert start.hparams["wd"].number_value == pytest.approx(1e-4) and "skip" not in start.hparams
    end = hp.parse_session_end_info_plugin_data(content[hp.SESSION_END_INFO_TAG])
    assert end.status == api_pb2.STATUS_SUCCESS
    assert [(e.step, e.value) for e in acc.Scalars("acc")] == [(4, 0.75)]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(4, 0.5)]


# ---------------------------------------------------------------- PR curves

def _expected_pr(labels, predictions, n, weights=1.0):
    labels, w = labels.astype(np.float64), np.broadcast_to(weights, labels.shape)
    rows = []
    for i in range(n):                       # threshold i counts the predictions p with p (n - 1) >= i
        above = predictions * (n - 1) >= i
        tp, fp = (w * labels * above).sum(), (w * (1 - labels) * above).sum()
        fn, tn = (w * labels * ~above).sum(), (w * (1 - labels) * ~above).sum()
        rows.append([tp, fp, tn, fn, tp / max(tp + fp, 1e-7), tp / max(tp + fn, 1e-7)])
    return np.array(rows, np.float32).T


@pytest.mark.parametrize("num_thresholds, weighted", [(127, False), (11, True), (500, False)])
def test_add_pr_curve(tmp_path, num_thresholds, weighted):
    from tensorboard.plugins.pr_curve import metadata as pr
    rng = np.random.default_rng(3)
    labels, predictions = rng.random(300) > 0.4, rng.random(300).astype(np.float32)
    weights = rng.random(300) if weighted else None
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", torch.tensor(labels), torch.tensor(predictions, requires_grad=True), 9,
                       num_thresholds=num_thresholds, weights=None if weights is None else torch.tensor(weights))
    acc = _read(tmp_path)
    (event,) = acc.Tensors("pr")
    data = tensor_util.make_ndarray(event.tensor_proto)
    n = min(num_thresholds, 127)
    assert event.step == 9 and data.shape == (6, n) and data.dtype == np.float32
    want = _expected_pr(labels, predictions.astype(np.float64), n, 1.0 if weights is None else weights)
    np.testing.assert_allclose(data, want, rtol=1e-5, atol=1e-4)
    assert data[0, 0] == pytest.approx((labels * (1.0 if weights is None else weights)).sum(), rel=1e-5)
    assert pr.parse_plugin_metadata(acc.SummaryMetadata("pr").plugin_data.content).num_thresholds == n


def test_add_pr_curve_raw(tmp_path):
    curves = [np.arange(5.0) + k for k in range(6)]
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve_raw("raw", *curves, global_step=1, num_thresholds=5)
    data = tensor_util.make_ndarray(_read(tmp_path).Tensors("raw")[0].tensor_proto)
    assert np.array_equal(data, np.stack(curves))


# ---------------------------------------------------------------- embeddings

def test_add_embedding_files(tmp_path, pil):
    from google.protobuf import text_format
    from tensorboard.plugins.projector import projector_config_pb2
    rng = np.random.default_rng(4)
    mat = rng.normal(size=(5, 3)).astype(np.float32)
    label_img = rng.random((5, 3, 4, 4)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(torch.tensor(mat, requires_grad=True), metadata=list("abcde"), label_img=label_img)
        w.add_embedding(mat[:2], metadata=[["x", 1], ["y", 2]], metadata_header=["name", "n"], global_step=12,
                        tag="feat/a%b")
    first, second = tmp_path / "00000" / "default", tmp_path / "00012" / "feat%2fa%25b"
    rows = (first / "tensors.tsv").read_text().splitlines()
    assert np.array_equal(np.array([[float(v) for v in r.split("\t")] for r in rows], np.float32), mat)
    assert (first / "metadata.tsv").read_text() == "a\nb\nc\nd\ne\n"
    assert (second / "metadata.tsv").read_text() == "name\tn\nx\t1\ny\t2\n"
    sprite = _png((first / "sprite.png").read_bytes())
    assert sprite.shape == (12, 12, 3)                        # ceil(sqrt(5)) = 3 a row, made square
    assert np.array_equal(sprite[4:8, 0:4], _as_uint8(label_img[3].transpose(1, 2, 0)))
    assert not sprite[8:].any() and not sprite[4:8, 8:].any()
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                               projector_config_pb2.ProjectorConfig())
    a, b = config.embeddings
    assert (a.tensor_name, a.tensor_path, a.metadata_path) == ("default:00000", "00000/default/tensors.tsv",
                                                               "00000/default/metadata.tsv")
    assert a.sprite.image_path == "00000/default/sprite.png" and list(a.sprite.single_image_dim) == [4, 4]
    assert (b.tensor_name, b.tensor_path) == ("feat/a%b:00012", "00012/feat%2fa%25b/tensors.tsv")
    assert not b.sprite.image_path


def test_add_embedding_checks(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError):
            w.add_embedding(np.zeros(3))
        with pytest.raises(ValueError):
            w.add_embedding(np.zeros((3, 2)), metadata=["a"], global_step=1)
        w.add_embedding(np.zeros((1, 2)), global_step=2)
        with pytest.warns(UserWarning, match="exists"):
            w.add_embedding(np.zeros((1, 2)), global_step=2)


# ---------------------------------------------------------------- graph

class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return torch.relu(self.fc(x)) + x * self.scale


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _Block()
        self.head = nn.Sequential(nn.Dropout(0.5), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.block(x)).chunk(2, 1)


def test_add_graph_nodes(tmp_path, capsys):
    model = _Net()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, torch.randn(3, 4), verbose=True)
    assert "graph(" in capsys.readouterr().out
    assert model.training and model.head[0].training          # traced in eval mode, modes restored
    acc = _read(tmp_path)
    nodes = {n.name: n for n in acc.Graph().node}
    ops = {name: n.op for name, n in nodes.items()}
    assert ops == {"input/x": "IO Node",
                   "_Net/_Block[block]/Linear[fc]/block_fc": "Linear",
                   "_Net/_Block[block]/relu": "relu",
                   "_Net/_Block[block]/block_scale": "prim::GetAttr",
                   "_Net/_Block[block]/mul": "mul",
                   "_Net/_Block[block]/add": "add",
                   "_Net/Sequential[head]/Dropout[0]/head_0": "Dropout",
                   "_Net/Sequential[head]/Linear[1]/head_1": "Linear",
                   "_Net/chunk": "Tensor.chunk",
                   "_Net/getitem": "getitem", "_Net/getitem_1": "getitem",
                   "output/output.1": "IO Node", "output/output.2": "IO Node"}
    assert list(nodes["_Net/_Block[block]/mul"].input) == ["input/x", "_Net/_Block[block]/block_scale"]
    assert list(nodes["output/output.2"].input) == ["_Net/getitem_1"]

    def shapes(name):
        return [[d.size for d in s.dim] for s in nodes[name].attr["_output_shapes"].list.shape]
    assert shapes("input/x") == [[3, 4]] and shapes("_Net/Sequential[head]/Linear[1]/head_1") == [[3, 2]]
    assert shapes("_Net/chunk") == [[3, 1], [3, 1]] and shapes("output/output.1") == [[3, 1]]
    assert b"Linear(in_features=4" in nodes["_Net/_Block[block]/Linear[fc]/block_fc"].attr["attr"].s
    assert acc.RunMetadata("step1").step_stats.dev_stats[0].device == "/device:CPU:0"


def test_add_graph_without_inputs_and_of_a_function(tmp_path):
    with SummaryWriter(tmp_path / "sym") as w:
        w.add_graph(nn.Sequential(nn.Linear(2, 2), nn.Tanh()))
    names = [n.name for n in _read(tmp_path / "sym").Graph().node]
    assert names == ["input/input_1", "Sequential/Linear[0]/_0", "Sequential/Tanh[1]/_1", "output/output.1"]

    def f(a, b):
        return (a * b).sum()
    with SummaryWriter(tmp_path / "fn") as w:
        w.add_graph(f, (torch.randn(3), torch.randn(3)))
    nodes = {n.name: n for n in _read(tmp_path / "fn").Graph().node}
    assert list(nodes) == ["input/a", "input/b", "f/mul", "f/sum_1", "output/output.1"]
    assert nodes["f/sum_1"].op == "Tensor.sum" and list(nodes["f/mul"].input) == ["input/a", "input/b"]


# ---------------------------------------------------------------- files and lifecycle

def test_flush_close_and_context_manager(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=10_000, max_queue=1000)
    w.add_scalar("a", 1.0, 0)
    w.add_scalars("m", {"x": 2.0}, 0)
    w.flush()                                                   # on disk without closing
    assert [e.value for e in _read(tmp_path).Scalars("a")] == [1.0]
    assert [e.value for e in _read(tmp_path / "m_x").Scalars("m")] == [2.0]
    w.close()
    assert w.file_writer is None and w.all_writers is None
    w.close()
    w.flush()                                                   # both harmless once closed
    w.add_scalar("a", 3.0, 1)                                   # a new event file
    w.close()
    assert len(_event_files(tmp_path)) == 2
    assert [e.value for e in _read(tmp_path).Scalars("a")] == [1.0, 3.0]
    with SummaryWriter(tmp_path / "ctx") as w2:
        assert w2.get_logdir() == str(tmp_path / "ctx")
        w2.add_scalar("b", 4.0, 0)
    assert w2.all_writers is None and _read(tmp_path / "ctx").Scalars("b")[0].value == 4.0


def test_purge_step(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    (old,) = _event_files(tmp_path)
    os.rename(old, os.path.join(tmp_path, "events.out.tfevents.0000000001.first"))   # read before the resumed run
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
    new = [f for f in _event_files(tmp_path) if not f.endswith(".first")][0]
    events = list(event_file_loader.EventFileLoader(new).Load())
    assert (events[1].step, events[1].file_version) == (5, "brain.Event:2")
    assert (events[2].step, events[2].session_log.status) == (5, events[2].session_log.START)
    loss = _read(tmp_path).Scalars("loss")
    assert [(e.step, e.value) for e in loss] == [(s, float(s)) for s in range(5)] + [(s, 100.0 + s) for s in (5, 6, 7)]


def test_filename_suffix(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".run1") as w:
        w.add_scalars("m", {"a": 1.0}, 0)
    assert _event_files(tmp_path)[0].endswith(".run1") and _event_files(tmp_path / "m_a")[0].endswith(".run1")


def test_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        logdir = w.get_logdir()
    pattern = r"runs[/\\][A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()) + r"_lr0\.1"
    assert re.fullmatch(pattern, logdir) and _event_files(tmp_path / logdir)
    with SummaryWriter(tmp_path / "given", comment="_ignored") as w:
        assert w.get_logdir() == str(tmp_path / "given")


def test_import_is_lazy_and_missing_tensorboard_names_the_extra(monkeypatch):
    code = ("import sys, torchlite.utils.tensorboard as tb\n"
            "assert 'tensorboard' not in sys.modules and 'PIL' not in sys.modules\n"
            "assert tb.SummaryWriter.__name__ == 'SummaryWriter' and 'tensorboard' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    for name in [m for m in sys.modules if m.startswith(("torchlite.utils.tensorboard.", "tensorboard."))]:
        monkeypatch.delitem(sys.modules, name)         # (restored after the test)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    import torchlite.utils.tensorboard as tb
    with pytest.raises(ImportError, match=re.escape('pip install "torchlite-dl[tensorboard]"')):
        tb.SummaryWriter


# ---------------------------------------------------------------- PyTorch, where installed

def test_same_records_as_pytorch(tmp_path, pil):
    real = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    rng = np.random.default_rng(5)
    values, img = rng.normal(size=500).astype(np.float32), rng.random((7, 3, 4, 5)).astype(np.float32)
    labels, predictions = rng.random(100) > 0.5, rng.random(100).astype(np.float32)

    def log(writer_cls, tensor, path):
        with writer_cls(str(path)) as w:
            w.add_scalar("s", tensor(np.float32(2.5)), 1, walltime=1.0)
            w.add_histogram("h", tensor(values), 1, walltime=1.0)
            w.add_histogram("h10", tensor(values), 1, bins=10, walltime=1.0)
            w.add_images("imgs", tensor(img), 1, walltime=1.0)
            w.add_text("t", "text", 1, walltime=1.0)
            w.add_pr_curve("pr", tensor(labels), tensor(predictions), 1, walltime=1.0)
    log(SummaryWriter, torch.tensor, tmp_path / "lite")
    log(TorchWriter, real.tensor, tmp_path / "torch")
    ours, theirs = _read(tmp_path / "lite"), _read(tmp_path / "torch")
    assert ours.Scalars("s") == theirs.Scalars("s")
    assert ours.Histograms("h") == theirs.Histograms("h") and ours.Histograms("h10") == theirs.Histograms("h10")
    assert ours.Images("imgs") == theirs.Images("imgs")
    for tag in ("t/text_summary", "pr"):
        a, b = (tensor_util.make_ndarray(acc.Tensors(tag)[0].tensor_proto) for acc in (ours, theirs))
        assert np.array_equal(a, b)
    assert math.isclose(1.0, ours.Scalars("s")[0].wall_time)
