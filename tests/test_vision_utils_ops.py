"""torchlite.vision.utils, .io and .ops against NumPy (and Pillow for encoded images; torchvision
where installed): grids, saved images, boxes, NMS, RoIAlign (values by a direct per-sample
implementation, gradients by finite differences), focal loss."""
import io
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite.vision import io as vio
from torchlite.vision import ops, utils

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


# ---- utils ------------------------------------------------------------------------------------------
def test_make_grid_layout():
    g = np.random.default_rng(0)
    imgs = g.random((5, 3, 4, 6)).astype(np.float32)
    grid = utils.make_grid(tl.from_numpy(imgs), nrow=2, padding=1, pad_value=0.5).numpy()
    assert grid.shape == (3, 3 * 5 + 1, 2 * 7 + 1)
    for k in range(5):
        r, c = divmod(k, 2)
        np.testing.assert_array_equal(grid[:, 1 + r * 5: 1 + r * 5 + 4, 1 + c * 7: 1 + c * 7 + 6], imgs[k])
    assert grid[0, 0, 0] == 0.5 and grid[0, -1, -1] == 0.5        # padding, and the empty cell
    one = utils.make_grid(tl.from_numpy(imgs[:1]))
    np.testing.assert_array_equal(one.numpy(), imgs[0])
    gray = utils.make_grid(tl.from_numpy(imgs[:2, :1]), padding=0)
    assert gray.shape == (3, 4, 12)                                # one channel becomes three
    norm = utils.make_grid(tl.from_numpy(imgs * 10 - 3), normalize=True, padding=0).numpy()
    assert norm.min() == pytest.approx(0) and norm.max() == pytest.approx(1)
    each = utils.make_grid([tl.from_numpy(imgs[0] * 2), tl.from_numpy(imgs[1] + 5)], normalize=True,
                           scale_each=True, padding=0).numpy()
    assert each[:, :, :6].max() == pytest.approx(1) and each[:, :, 6:].min() == pytest.approx(0)


def test_save_image_round_trip(tmp_path):
    g = np.random.default_rng(1)
    img = g.integers(0, 256, (3, 5, 7)).astype(np.float32) / 255
    path = tmp_path / "x.png"
    utils.save_image(tl.from_numpy(img), str(path))
    back = np.asarray(Image.open(path))
    np.testing.assert_array_equal(back, np.round(img * 255).astype(np.uint8).transpose(1, 2, 0))
    buf = io.BytesIO()
    utils.save_image(tl.from_numpy(img), buf, format="PNG")
    assert buf.getvalue()[:4] == b"\x89PNG"


def test_draw_bounding_boxes():
    img = tl.zeros(3, 20, 30, dtype=tl.uint8)
    boxes = tl.tensor([[2.0, 3.0, 10.0, 12.0], [15, 5, 25, 18]])
    out = utils.draw_bounding_boxes(img, boxes, labels=["a", "b"], colors=["red", (0, 255, 0)])
    arr = out.numpy()
    assert out.dtype is tl.uint8 and out.shape == (3, 20, 30)
    assert tuple(arr[:, 3, 5]) == (255, 0, 0)        # the top edge of the first box
    assert tuple(arr[:, 18, 20]) == (0, 255, 0)      # the bottom edge of the second
    assert arr[:, 14:17, 5:9].max() == 0             # below the first box: untouched
    plain = utils.draw_bounding_boxes(img, boxes, colors="red").numpy()
    assert tuple(plain[:, 8, 6]) == (0, 0, 0)        # inside, not filled
    filled = utils.draw_bounding_boxes(img, boxes[:1], fill=True, colors="blue").numpy()
    assert filled[2, 8, 6] > 0
    assert img.numpy().max() == 0                    # the input is not changed
    with pytest.raises(ValueError, match="uint8"):
        utils.draw_bounding_boxes(img.float(), boxes)
    with pytest.raises(ValueError, match="xmin"):
        utils.draw_bounding_boxes(img, tl.tensor([[10.0, 3, 2, 12]]))
    # the label text takes label_colors where given, the box's color otherwise
    big = tl.zeros(3, 40, 60, dtype=tl.uint8)
    box = tl.tensor([[1.0, 1.0, 58.0, 38.0]])
    text = utils.draw_bounding_boxes(big, box, labels=["WWW"], colors="red", label_colors="blue").numpy()
    inner = text[:, 3:15, 3:40].reshape(3, -1)               # where the text is, off the edges
    drawn = inner.max(axis=0) > 0
    assert drawn.any() and (inner[2, drawn] > 0).all() and (inner[0, drawn] == 0).all()   # anti-aliased
    same = utils.draw_bounding_boxes(big, box, labels=["WWW"], colors="red").numpy()
    inner = same[:, 3:15, 3:40].reshape(3, -1)
    drawn = inner.max(axis=0) > 0
    assert drawn.any() and (inner[0, drawn] > 0).all() and (inner[2, drawn] == 0).all()


# ---- io ---------------------------------------------------------------------------------------------
def test_read_and_write_images(tmp_path):
    g = np.random.default_rng(2)
    rgb = g.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(tmp_path / "a.png")
    t = vio.read_image(str(tmp_path / "a.png"))
    assert t.dtype is tl.uint8 and t.shape == (3, 6, 5)
    np.testing.assert_array_equal(t.numpy(), rgb.transpose(2, 0, 1))
    gray = vio.read_image(str(tmp_path / "a.png"), vio.ImageReadMode.GRAY)
    np.testing.assert_array_equal(gray.numpy()[0], np.asarray(Image.fromarray(rgb).convert("L")))
    raw = vio.read_file(str(tmp_path / "a.png"))
    np.testing.assert_array_equal(vio.decode_image(raw).numpy(), t.numpy())
    vio.write_png(t, str(tmp_path / "b.png"))
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "b.png")), rgb)
    jpg = vio.encode_jpeg(t, quality=95)
    assert bytes(jpg.numpy()[:2]) == b"\xff\xd8"
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(RuntimeError, match="decode_image"):
        vio.read_image(str(tmp_path / "bad.png"))


# ---- boxes ------------------------------------------------------------------------------------------
def np_iou(a, b):
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            w = max(0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = w * h
            out[i, j] = inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter)
    return out


def random_boxes(g, n):
    xy = g.random((n, 2)) * 50
    wh = g.random((n, 2)) * 30 + 1
    return np.concatenate([xy, xy + wh], 1)


def test_box_iou_area_convert():
    g = np.random.default_rng(3)
    a, b = random_boxes(g, 6), random_boxes(g, 4)
    np.testing.assert_allclose(ops.box_iou(tl.tensor(a), tl.tensor(b)).numpy(), np_iou(a, b), rtol=1e-12)
    np.testing.assert_allclose(ops.box_area(tl.tensor(a)).numpy(), (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]))
    giou = ops.generalized_box_iou(tl.tensor(a), tl.tensor(b)).numpy()
    assert (giou <= np_iou(a, b) + 1e-12).all() and (giou >= -1).all()
    for fmt in ("xywh", "cxcywh"):
        there = ops.box_convert(tl.tensor(a), "xyxy", fmt)
        np.testing.assert_allclose(ops.box_convert(there, fmt, "xyxy").numpy(), a, rtol=1e-12)
    np.testing.assert_allclose(ops.box_convert(tl.tensor(a), "xyxy", "cxcywh").numpy()[:, :2],
                               (a[:, :2] + a[:, 2:]) / 2)
    with pytest.raises(ValueError):
        ops.box_convert(tl.tensor(a), "xyxy", "yxyx")
    clipped = ops.clip_boxes_to_image(tl.tensor(a), (20, 30)).numpy()
    assert clipped[:, 0::2].max() <= 30 and clipped[:, 1::2].max() <= 20
    keep = ops.remove_small_boxes(tl.tensor(a), 15).numpy()
    np.testing.assert_array_equal(keep, np.nonzero(((a[:, 2] - a[:, 0]) >= 15) & ((a[:, 3] - a[:, 1]) >= 15))[0])


def np_nms(b, s, thr):
    order = list(np.argsort(-s, kind="stable"))
    keep = []
    while order:
        i = order.pop(0)
        keep.append(i)
        order = [j for j in order if np_iou(b[i:i + 1], b[j:j + 1])[0, 0] <= thr]
    return keep


def test_nms_and_batched_nms():
    g = np.random.default_rng(4)
    b = random_boxes(g, 40)
    s = g.random(40)
    for thr in (0.1, 0.3, 0.7):
        got = ops.nms(tl.tensor(b), tl.tensor(s), thr)
        assert got.dtype is tl.int64
        assert got.numpy().tolist() == np_nms(b, s, thr)
    cls = g.integers(0, 3, 40)
    got = ops.batched_nms(tl.tensor(b), tl.tensor(s), tl.tensor(cls), 0.3).numpy().tolist()
    want = []
    for c in range(3):
        idx = np.nonzero(cls == c)[0]
        want += [idx[k] for k in np_nms(b[idx], s[idx], 0.3)]
    assert sorted(got, key=lambda i: -s[i]) == got and sorted(got) == sorted(want)
    with pytest.raises(RuntimeError, match="boxes"):
        ops.nms(tl.tensor(b[:, :3]), tl.tensor(s), 0.5)


# ---- roi_align --------------------------------------------------------------------------------------
def np_roi_align(x, rois, out, scale, ratio, aligned):
    """A direct transcription of RoIAlign's definition: per bin, per sample point, bilinear."""
    K = len(rois)
    C, H, W = x.shape[1:]
    res = np.zeros((K, C, out, out))
    off = 0.5 if aligned else 0.0
    for k, (bi, x1, y1, x2, y2) in enumerate(rois):
        sx, sy = x1 * scale - off, y1 * scale - off
        rw, rh = x2 * scale - off - sx, y2 * scale - off - sy
        if not aligned:
            rw, rh = max(rw, 1), max(rh, 1)
        bw, bh = rw / out, rh / out
        gy = ratio if ratio > 0 else math.ceil(rh / out)
        gx = ratio if ratio > 0 else math.ceil(rw / out)
        for ph in range(out):
            for pw in range(out):
                acc = np.zeros(C)
                for iy in range(gy):
                    for ix in range(gx):
                        y = sy + ph * bh + (iy + .5) * bh / gy
                        xx = sx + pw * bw + (ix + .5) * bw / gx
                        if y < -1 or y > H or xx < -1 or xx > W:
                            continue
                        y, xx = max(y, 0), max(xx, 0)
                        yl, xl = int(y), int(xx)
                        if yl >= H - 1:
                            yl = yh = H - 1
                            y = yl
                        else:
                            yh = yl + 1
                        if xl >= W - 1:
                            xl = xh = W - 1
                            xx = xl
                        else:
                            xh = xl + 1
                        ly, lx = y - yl, xx - xl
                        f = x[int(bi)]
                        acc += ((1 - ly) * (1 - lx) * f[:, yl, xl] + (1 - ly) * lx * f[:, yl, xh]
                                + ly * (1 - lx) * f[:, yh, xl] + ly * lx * f[:, yh, xh])
                res[k, :, ph, pw] = acc / max(gy * gx, 1)
    return res


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [-1, 2])
def test_roi_align_values(aligned, ratio):
    g = np.random.default_rng(5)
    x = g.standard_normal((2, 3, 9, 11))
    rois = np.array([[0, 1.2, 0.5, 7.7, 6.1], [1, -2, 3, 12, 10.5], [1, 4, 4, 4.3, 4.2],
                     [0, 0, 0, 22, 18]])
    got = ops.roi_align(tl.tensor(x), tl.tensor(rois), 3, spatial_scale=0.5, sampling_ratio=ratio,
                        aligned=aligned)
    np.testing.assert_allclose(got.numpy(), np_roi_align(x, rois, 3, 0.5, ratio, aligned), rtol=1e-10,
                               atol=1e-12)
    as_list = ops.roi_align(tl.tensor(x), [tl.tensor(rois[rois[:, 0] == 0][:, 1:]),
                                           tl.tensor(rois[rois[:, 0] == 1][:, 1:])], 3, 0.5, ratio, aligned)
    assert as_list.shape == (4, 3, 3, 3)


def test_roi_align_gradient():
    g = np.random.default_rng(6)
    x = tl.tensor(g.standard_normal((1, 2, 6, 7)), requires_grad=True)
    rois = tl.tensor([[0, 0.5, 1.0, 5.5, 4.0], [0, 2, 2, 6, 5]])
    assert tl.autograd.gradcheck(lambda x: ops.roi_align(x, rois, 2, 1.0, 2), (x,))


def test_sigmoid_focal_loss():
    g = np.random.default_rng(7)
    x = g.standard_normal((5, 4))
    t = (g.random((5, 4)) > 0.5).astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    pt = p * t + (1 - p) * (1 - t)
    want = ce * (1 - pt) ** 2 * (0.25 * t + 0.75 * (1 - t))
    got = ops.sigmoid_focal_loss(tl.tensor(x), tl.tensor(t))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(ops.sigmoid_focal_loss(tl.tensor(x), tl.tensor(t), reduction="mean").item(),
                               want.mean(), rtol=1e-10)
    with pytest.raises(ValueError, match="reduction"):
        ops.sigmoid_focal_loss(tl.tensor(x), tl.tensor(t), reduction="max")


def test_against_torchvision_where_installed():
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision")
    g = np.random.default_rng(8)
    x = g.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.array([[0, 1.2, 0.5, 7.7, 6.1], [1, -2, 3, 12, 10.5]], np.float32)
    want = tv.ops.roi_align(torch.from_numpy(x), torch.from_numpy(rois), 3, 0.5, -1, True).numpy()
    got = ops.roi_align(tl.from_numpy(x), tl.from_numpy(rois), 3, 0.5, -1, True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    b, s = random_boxes(g, 30).astype(np.float32), g.random(30).astype(np.float32)
    assert ops.nms(tl.from_numpy(b), tl.from_numpy(s), 0.4).numpy().tolist() == \
        tv.ops.nms(torch.from_numpy(b), torch.from_numpy(s), 0.4).numpy().tolist()


def test_roi_align_of_an_empty_aligned_box_is_zero():
    x = tl.randn(1, 2, 5, 5)
    out = ops.roi_align(x, tl.tensor([[0, 2.0, 2.0, 2.0, 2.0]]), 2, 1.0, -1, aligned=True)
    assert float(out.abs().max()) == 0.0
