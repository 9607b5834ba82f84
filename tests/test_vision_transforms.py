"""torchlite.vision.transforms against independent oracles: NumPy formulas for the pixel
arithmetic, Pillow's own functions for the PIL paths, PIL vs tensor agreement where torchvision
has it, batched shapes, seeding, argument validation -- and torchvision itself where installed."""
import math

import numpy as np
import pytest

import torchlite as torch
from torchlite.vision import transforms as T
from torchlite.vision.transforms import functional as F
from torchlite.vision.transforms import v2

Image = pytest.importorskip("PIL.Image")
ImageOps = pytest.importorskip("PIL.ImageOps")
IM = F.InterpolationMode
H, W = 24, 30


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.fixture
def arr():
    """A random HWC uint8 image."""
    return _rng().integers(0, 256, (H, W, 3), dtype=np.uint8)


@pytest.fixture
def smooth():
    """A smooth HWC uint8 image (interpolation agrees across implementations on it)."""
    yy, xx = np.mgrid[0:H, 0:W]
    return np.stack([xx * 7 + 20, yy * 8 + 10, (xx + yy) * 4 + 5], -1).astype(np.uint8)


def chw(a):
    """A torchlite CHW tensor of an HWC array."""
    return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def hwc(t):
    """The HWC array of a CHW tensor (or a PIL image)."""
    if isinstance(t, torch.Tensor):
        return t.numpy().transpose(1, 2, 0)
    a = np.asarray(t)
    return a[:, :, None] if a.ndim == 2 else a


def gray_np(a):
    return 0.299 * a[..., 0] + 0.587 * a[..., 1] + 0.114 * a[..., 2]


# ---- conversions --------------------------------------------------------------------------------
def test_to_tensor_and_pil_to_tensor(arr):
    x = F.to_tensor(Image.fromarray(arr))
    assert x.dtype == torch.float32 and tuple(x.shape) == (3, H, W)
    np.testing.assert_allclose(x.numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    np.testing.assert_allclose(T.ToTensor()(arr).numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert tuple(F.to_tensor(arr[..., 0]).shape) == (1, H, W)
    f = _rng().random((H, W, 2))
    np.testing.assert_array_equal(F.to_tensor(f).numpy(), f.transpose(2, 0, 1))   # other dtypes kept
    assert F.to_tensor(Image.fromarray(arr).convert("F")).dtype == torch.float32
    assert F.to_tensor(Image.fromarray(arr).convert("I")).dtype == torch.int32
    np.testing.assert_array_equal(F.to_tensor(Image.fromarray(arr).convert("1")).numpy() * 255,
                                  np.asarray(Image.fromarray(arr).convert("1"), np.uint8)[None] * 255)
    p = F.pil_to_tensor(Image.fromarray(arr))
    assert p.dtype == torch.uint8
    np.testing.assert_array_equal(p.numpy(), arr.transpose(2, 0, 1))
    np.testing.assert_array_equal(T.PILToTensor()(Image.fromarray(arr).convert("L")).numpy()[0],
                                  np.asarray(Image.fromarray(arr).convert("L")))
    with pytest.raises(TypeError):
        F.to_tensor([[1, 2]])
    with pytest.raises(ValueError):
        F.to_tensor(np.zeros((1, 2, 3, 4), np.uint8))
    with pytest.raises(TypeError):
        F.pil_to_tensor(arr)


def test_to_pil_image(arr):
    t = chw(arr)
    np.testing.assert_array_equal(np.asarray(F.to_pil_image(t)), arr)
    assert F.to_pil_image(t).mode == "RGB" and F.to_pil_image(t[:1]).mode == "L"
    assert F.to_pil_image(t[:2]).mode == "LA" and F.to_pil_image(torch.cat([t, t[:1]])).mode == "RGBA"
    assert F.to_pil_image(t[0]).mode == "L" and F.to_pil_image(arr).mode == "RGB"
    assert T.ToPILImage(mode="YCbCr")(t).mode == "YCbCr"
    f = torch.from_numpy(_rng().random((3, H, W)).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(F.to_pil_image(f)), (f.numpy() * 255).astype(np.uint8).transpose(1, 2, 0))
    g = F.to_pil_image(f[:1], mode="F")
    assert g.mode == "F"
    np.testing.assert_array_equal(np.asarray(g), f.numpy()[0])
    assert F.to_pil_image(t[:1].to(torch.int32)).mode == "I"
    assert F.to_pil_image(t[:1].to(torch.int16)).mode == "I;16"
    with pytest.raises(ValueError):
        F.to_pil_image(t, mode="L")
    with pytest.raises(ValueError):
        F.to_pil_image(t[:1], mode="RGB")
    with pytest.raises(ValueError):
        F.to_pil_image(torch.zeros(5, 4, 4))
    with pytest.raises(ValueError):
        F.to_pil_image(torch.zeros(1, 1, 4, 4))
    with pytest.raises(TypeError):
        F.to_pil_image([[1]])


def test_normalize(arr):
    x = chw(arr).float() / 255
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    expected = (x.numpy() - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    out = T.Normalize(mean, std)(x)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert out is not x and not np.allclose(x.numpy(), expected)
    batch = torch.stack([x, x])
    np.testing.assert_allclose(F.normalize(batch, mean, std).numpy(), np.stack([expected] * 2), rtol=1e-5, atol=1e-6)
    y = x.clone()
    assert F.normalize(y, mean, std, inplace=True) is y
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError):
        F.normalize(chw(arr), mean, std)
    with pytest.raises(ValueError):
        F.normalize(x, mean, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError):
        F.normalize(x[0], [0.5], [0.5])
    with pytest.raises(TypeError):
        F.normalize(arr, mean, std)
    # the constants are converted once per value (a pipeline's every image): a new value, a
    # dtype or a list changed in place gives new constants, and the kept ones are never written
    mean[0] = 0.0
    np.testing.assert_allclose(F.normalize(x, mean, std)[0].numpy(), x[0].numpy() / std[0], rtol=1e-6)
    np.testing.assert_allclose(F.normalize(x.double(), mean, std).numpy(),
                               (x.double().numpy() - np.array(mean)[:, None, None]) / np.array(std)[:, None, None])
    for _ in range(2):
        F.normalize(x.clone(), mean, std, inplace=True)
    np.testing.assert_allclose(F.normalize(x, mean, std)[0].numpy(), x[0].numpy() / std[0], rtol=1e-6)
    with pytest.raises(ValueError):                  # the zero check holds for a kept value too
        F.normalize(x, mean, [1.0, 0.0, 1.0])


def test_convert_image_dtype(arr):
    u = chw(arr)
    f = F.convert_image_dtype(u, torch.float32)
    np.testing.assert_allclose(f.numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    v = torch.from_numpy(_rng().random((3, 4, 5)).astype(np.float32))
    np.testing.assert_array_equal(F.convert_image_dtype(v, torch.uint8).numpy(),
                                  (v.numpy() * (256 - 1e-3)).astype(np.uint8))
    assert F.convert_image_dtype(torch.ones(1, 2, 2), torch.uint8).numpy().min() == 255
    np.testing.assert_array_equal(F.convert_image_dtype(u, torch.int32).numpy(),
                                  arr.transpose(2, 0, 1).astype(np.int64) * 2 ** 23)
    i32 = F.convert_image_dtype(u, torch.int32)
    np.testing.assert_array_equal(F.convert_image_dtype(i32, torch.uint8).numpy(), arr.transpose(2, 0, 1))
    assert T.ConvertImageDtype(torch.float64)(v).dtype == torch.float64
    assert F.convert_image_dtype(u, torch.uint8) is u
    with pytest.raises(RuntimeError):
        F.convert_image_dtype(v, torch.int32)
    with pytest.raises(TypeError):
        F.convert_image_dtype(arr)


def test_dimensions(arr):
    pil, t = Image.fromarray(arr), chw(arr)
    for img in (pil, t):
        assert F.get_dimensions(img) == [3, H, W]
        assert F.get_image_size(img) == [W, H] and F.get_image_num_channels(img) == 3
    assert F.get_dimensions(t[0]) == [1, H, W] and F.get_dimensions(pil.convert("L")) == [1, H, W]
    assert F.get_dimensions(torch.zeros(2, 5, 3, 7, 9)) == [3, 7, 9]
    with pytest.raises(TypeError):
        F.get_dimensions(torch.zeros(4))


# ---- geometry ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size, expected", [(12, (12, 15)), ([12], (12, 15)), ((10, 7), (10, 7)), (36, (36, 45))])
def test_resize_sizes(arr, size, expected):
    for img in (Image.fromarray(arr), chw(arr)):
        assert F.get_dimensions(F.resize(img, size))[1:] == list(expected)
    tall = chw(arr).transpose(-1, -2)
    assert tuple(F.resize(tall, 12).shape[-2:]) == (15, 12)
    assert tuple(F.resize(chw(arr), 12, max_size=14).shape[-2:]) == (11, 14)
    assert tuple(F.resize(chw(arr), None, max_size=15).shape[-2:]) == (12, 15)


def test_resize_pil_is_pillow(arr):
    pil = Image.fromarray(arr)
    for mode, flt in [(IM.NEAREST, Image.Resampling.NEAREST), (IM.BILINEAR, Image.Resampling.BILINEAR),
                      (IM.BICUBIC, Image.Resampling.BICUBIC), (IM.LANCZOS, Image.Resampling.LANCZOS),
                      (IM.BOX, Image.Resampling.BOX), (IM.HAMMING, Image.Resampling.HAMMING)]:
        np.testing.assert_array_equal(np.asarray(T.Resize((13, 17), mode)(pil)), np.asarray(pil.resize((17, 13), flt)))
    np.testing.assert_array_equal(np.asarray(F.resize(pil, (13, 17), 2)), np.asarray(pil.resize((17, 13), 2)))


@pytest.mark.parametrize("mode", [IM.BILINEAR, IM.BICUBIC])
@pytest.mark.parametrize("size", [(11, 13), (40, 47), (12, 50)])
def test_resize_tensor_matches_pillow(smooth, arr, mode, size):
    # float: PIL's float ('F') resampling is the same antialiased filter, unrounded
    pil_f = Image.fromarray(arr[..., 0].astype(np.float32) / 255, mode="F")
    expected = np.asarray(pil_f.resize(size[::-1], Image.Resampling.BILINEAR if mode == IM.BILINEAR else
                                       Image.Resampling.BICUBIC))
    got = F.resize(chw(arr)[:1].float() / 255, size, mode).numpy()[0]
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # uint8: within one level of Pillow on a smooth image
    got8 = F.resize(chw(smooth), size, mode)
    assert got8.dtype == torch.uint8
    diff = np.abs(hwc(got8).astype(int) - np.asarray(F.resize(Image.fromarray(smooth), size, mode)).astype(int))
    assert diff.max() <= 1


def test_resize_nearest_and_options(arr):
    t = chw(arr)
    pil_nearest = Image.fromarray(arr).resize((12, 16), Image.Resampling.NEAREST)   # no ties at these sizes
    np.testing.assert_array_equal(hwc(F.resize(t, (16, 12), IM.NEAREST_EXACT)), np.asarray(pil_nearest))
    src = arr.transpose(2, 0, 1)
    rows, cols = np.floor((np.arange(17) + 0.5) * H / 17).astype(int), np.floor((np.arange(11) + 0.5) * W / 11)
    np.testing.assert_array_equal(F.resize(t, (17, 11), IM.NEAREST_EXACT).numpy(), src[:, rows][:, :, cols.astype(int)])
    rows, cols = np.floor(np.arange(17) * H / 17).astype(int), np.floor(np.arange(11) * W / 11).astype(int)
    np.testing.assert_array_equal(F.resize(t, (17, 11), IM.NEAREST).numpy(), src[:, rows][:, :, cols])
    plain = F.resize(t.float(), (10, 12), antialias=False)
    ref = torch.nn.functional.interpolate(t.float()[None], size=(10, 12), mode="bilinear", align_corners=False)[0]
    np.testing.assert_allclose(plain.numpy(), ref.numpy(), rtol=1e-6)
    assert F.resize(t, [H, W]) is t
    batch = torch.stack([t, t.flip(-1)]).reshape(1, 2, 3, H, W)
    out = F.resize(batch, (10, 12))
    assert tuple(out.shape) == (1, 2, 3, 10, 12)
    np.testing.assert_array_equal(out[0, 1].numpy(), F.resize(t.flip(-1), (10, 12)).numpy())
    assert tuple(F.resize(t[0], (5, 6)).shape) == (5, 6)
    with pytest.raises(ValueError):
        F.resize(t, (5, 6), IM.LANCZOS)


def test_resize_validation(arr):
    t = chw(arr)
    with pytest.raises(TypeError):
        T.Resize(12.5)
    with pytest.raises(ValueError):
        T.Resize([1, 2, 3])
    with pytest.raises(TypeError):
        F.resize(t, 12.5)
    with pytest.raises(ValueError):
        F.resize(t, [1, 2, 3])
    with pytest.raises(ValueError):
        F.resize(t, (10, 12), max_size=20)
    with pytest.raises(ValueError):
        F.resize(t, 12, max_size=12)
    with pytest.raises(TypeError):
        F.resize(t, 12, interpolation="bilinear")


def test_crops(arr):
    t, pil = chw(arr), Image.fromarray(arr)
    np.testing.assert_array_equal(hwc(F.crop(t, 3, 5, 10, 12)), arr[3:13, 5:17])
    np.testing.assert_array_equal(hwc(F.crop(pil, 3, 5, 10, 12)), arr[3:13, 5:17])
    padded = np.pad(arr, ((4, 4), (4, 4), (0, 0)))
    for img in (t, pil):
        np.testing.assert_array_equal(hwc(F.crop(img, -2, 25, 8, 9)), padded[2:10, 29:38])
    for size in [(10, 10), (11, 17), 8, (24, 30)]:
        sh, sw = (size, size) if isinstance(size, int) else size
        top, left = int(round((H - sh) / 2)), int(round((W - sw) / 2))
        for img in (t, pil):
            np.testing.assert_array_equal(hwc(T.CenterCrop(size)(img)), arr[top:top + sh, left:left + sw])
    big = np.pad(arr, ((3, 4), (2, 3), (0, 0)))     # 31 x 35: extra (7, 5) split floor first
    for img in (t, pil):
        np.testing.assert_array_equal(hwc(F.center_crop(img, (31, 35))), big)
    with pytest.raises(ValueError):
        T.CenterCrop((1, 2, 3))


def test_five_and_ten_crop(arr):
    t = chw(arr)
    crops = T.FiveCrop((10, 12))(t)
    expected = [arr[:10, :12], arr[:10, -12:], arr[-10:, :12], arr[-10:, -12:], arr[7:17, 9:21]]
    for c, e in zip(crops, expected):
        np.testing.assert_array_equal(hwc(c), e)
    ten = T.TenCrop(10)(Image.fromarray(arr))
    assert len(ten) == 10
    np.testing.assert_array_equal(hwc(ten[5]), arr[:, ::-1][:10, :10])
    np.testing.assert_array_equal(hwc(F.ten_crop(t, 10, vertical_flip=True)[5]), arr[::-1][:10, :10])
    with pytest.raises(ValueError):
        F.five_crop(t, (30, 10))


def test_flips(arr):
    t, pil = chw(arr), Image.fromarray(arr)
    np.testing.assert_array_equal(hwc(F.hflip(t)), arr[:, ::-1])
    np.testing.assert_array_equal(hwc(F.vflip(pil)), arr[::-1])
    np.testing.assert_array_equal(hwc(T.RandomHorizontalFlip(p=1.0)(pil)), arr[:, ::-1])
    np.testing.assert_array_equal(hwc(T.RandomVerticalFlip(p=1.0)(t)), arr[::-1])
    assert T.RandomHorizontalFlip(p=0.0)(t) is t
    batch = torch.stack([t, t])
    np.testing.assert_array_equal(F.hflip(batch).numpy(), batch.numpy()[..., ::-1])
    with pytest.raises(TypeError):
        F.hflip(arr)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes(arr, mode):
    t, pil = chw(arr), Image.fromarray(arr)
    for padding, ltrb in [(2, (2, 2, 2, 2)), ([3, 1], (3, 1, 3, 1)), ((1, 2, 3, 4), (1, 2, 3, 4))]:
        l, tp, r, b = ltrb
        kw = {"constant_values": 9} if mode == "constant" else {}
        expected = np.pad(arr, ((tp, b), (l, r), (0, 0)), mode=mode, **kw)
        for img in (t, pil):
            np.testing.assert_array_equal(hwc(T.Pad(padding, fill=9, padding_mode=mode)(img)), expected)
    np.testing.assert_array_equal(hwc(F.pad(t, [-2, 1, 3, -4], 0, mode))[:, :],
                                  np.pad(arr[:-4, 2:], ((1, 0), (0, 3), (0, 0)), mode=mode))
    batch = torch.stack([t, t]).float()
    assert tuple(F.pad(batch, 2, padding_mode=mode).shape) == (2, 3, H + 4, W + 4)


def test_pad_fill_and_validation(arr):
    t, pil = chw(arr), Image.fromarray(arr)
    fill = (10, 20, 30)
    expected = np.stack([np.pad(arr[..., c], 2, constant_values=fill[c]) for c in range(3)], -1)
    np.testing.assert_array_equal(hwc(F.pad(t, 2, fill)), expected)
    np.testing.assert_array_equal(hwc(F.pad(pil, 2, fill)), expected)
    with pytest.raises(TypeError):
        F.pad(t, "2")
    with pytest.raises(ValueError):
        F.pad(t, [1, 2, 3])
    with pytest.raises(ValueError):
        F.pad(t, 1, padding_mode="wrap")
    with pytest.raises(TypeError):
        T.Pad(2, fill="x")
    with pytest.raises(ValueError):
        T.Pad((1, 2, 3))


def _inside(img_shape, warp):
    """Where the tensor warp reads only pixels of the image (an all-ones image stays 1)."""
    ones = torch.ones((1,) + tuple(img_shape[-2:]))
    return warp(ones).numpy()[0] > 1 - 1e-6


def test_rotate(arr, smooth):
    sq = chw(arr[:, :H])
    np.testing.assert_array_equal(F.rotate(sq, 90).numpy(), np.rot90(sq.numpy(), 1, axes=(1, 2)))
    np.testing.assert_array_equal(F.rotate(chw(arr), -90, expand=True).numpy(),
                                  np.rot90(arr.transpose(2, 0, 1), -1, axes=(1, 2)))
    np.testing.assert_array_equal(F.rotate(chw(arr), 180, IM.BILINEAR).numpy(), arr.transpose(2, 0, 1)[:, ::-1, ::-1])
    pil, t = Image.fromarray(smooth), chw(smooth)
    for angle, expand in [(30, False), (-45, True), (17, True)]:
        np.testing.assert_array_equal(hwc(F.rotate(pil, angle, IM.BILINEAR, expand)),
                                      np.asarray(pil.rotate(angle, Image.Resampling.BILINEAR, expand)))
        near = np.abs(hwc(F.rotate(t, angle, expand=expand)).astype(int) - hwc(F.rotate(pil, angle, expand=expand)))
        assert near.shape == hwc(F.rotate(pil, angle, expand=expand)).shape and (near > 0).mean() < 0.02
        bil = np.abs(hwc(F.rotate(t, angle, IM.BILINEAR, expand)).astype(int)
                     - hwc(F.rotate(pil, angle, IM.BILINEAR, expand)))
        inside = _inside(t.shape, lambda x: F.rotate(x, angle, IM.BILINEAR, expand))
        assert bil[inside].max() <= 2
    odd = Image.fromarray(smooth[:23, :29])                       # a centre off the pixel grid
    for angle in (45, -30, 100):
        turned = F.rotate(chw(smooth[:23, :29]), angle, expand=True)
        assert tuple(turned.shape[-2:]) == odd.rotate(angle, expand=True).size[::-1]
    filled = F.rotate(t, 30, center=[3, 4], fill=[10, 20, 30])
    np.testing.assert_array_equal(hwc(filled), np.asarray(pil.rotate(30, center=(3, 4), fillcolor=(10, 20, 30))))
    assert tuple(T.RandomRotation(20, expand=True)(torch.stack([t, t]).float()).shape[:2]) == (2, 3)
    with pytest.raises(TypeError):
        F.rotate(t, "30")
    with pytest.raises(ValueError):
        T.RandomRotation(-3)
    with pytest.raises(ValueError):
        F.rotate(t, 30, IM.BICUBIC)


def test_affine(arr, smooth):
    t = chw(arr)
    np.testing.assert_array_equal(F.affine(t, 0, [0, 0], 1.0, 0).numpy(), t.numpy())
    shifted = np.zeros_like(arr)
    shifted[2:, :-3] = arr[:-2, 3:]                       # dx = -3, dy = +2
    np.testing.assert_array_equal(hwc(F.affine(t, 0, [-3, 2], 1.0, [0.0, 0.0])), shifted)
    np.testing.assert_array_equal(hwc(F.affine(Image.fromarray(arr), 0, [-3, 2], 1.0, 0)), shifted)
    pil, ts = Image.fromarray(smooth), chw(smooth)
    for args in [(20, [3, -4], 1.2, [10, 5]), (-15, [0, 2], 0.8, 12), (0, [0, 0], 1.0, [25, 0])]:
        near = np.abs(hwc(F.affine(ts, *args)).astype(int) - hwc(F.affine(pil, *args)))
        assert (near > 0).mean() < 0.02
        bil = np.abs(hwc(F.affine(ts, *args, IM.BILINEAR)).astype(int) - hwc(F.affine(pil, *args, IM.BILINEAR)))
        assert bil[_inside(ts.shape, lambda x: F.affine(x, *args, IM.BILINEAR))].max() <= 2
    with pytest.raises(TypeError):
        F.affine(t, 0, 3, 1.0, 0)
    with pytest.raises(ValueError):
        F.affine(t, 0, [1, 2, 3], 1.0, 0)
    with pytest.raises(ValueError):
        F.affine(t, 0, [0, 0], 0.0, 0)
    with pytest.raises(ValueError):
        F.affine(t, 0, [0, 0], 1.0, [1, 2, 3])


def test_perspective(arr, smooth):
    corners = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
    t = chw(arr)
    np.testing.assert_array_equal(F.perspective(t, corners, corners, IM.NEAREST).numpy(), t.numpy())
    end = [[2, 1], [W - 3, 3], [W - 2, H - 4], [1, H - 2]]
    pil, ts = Image.fromarray(smooth), chw(smooth)
    near = np.abs(hwc(F.perspective(ts, corners, end, IM.NEAREST)).astype(int)
                  - hwc(F.perspective(pil, corners, end, IM.NEAREST)))
    assert (near > 0).mean() < 0.02
    bil = np.abs(hwc(F.perspective(ts, corners, end)).astype(int) - hwc(F.perspective(pil, corners, end)))
    assert bil[_inside(ts.shape, lambda x: F.perspective(x, corners, end))].max() <= 2
    assert tuple(T.RandomPerspective(p=1.0)(ts.float()).shape) == (3, H, W)
    with pytest.raises(ValueError):
        F.perspective(t, corners[:3], end)


# ---- colour ---------------------------------------------------------------------------------
def test_brightness_contrast_saturation(arr, smooth):
    x = chw(arr).float() / 255
    a = arr.astype(np.float64) / 255
    np.testing.assert_allclose(hwc(F.adjust_brightness(x, 1.4)), np.clip(a * 1.4, 0, 1), atol=1e-6)
    np.testing.assert_array_equal(hwc(F.adjust_brightness(chw(arr), 1.4)),
                                  np.clip(arr * np.float32(1.4), 0, 255).astype(np.uint8))
    mean = gray_np(a).mean()
    np.testing.assert_allclose(hwc(F.adjust_contrast(x, 0.6)), np.clip(0.6 * a + 0.4 * mean, 0, 1), atol=1e-3)
    g = gray_np(a)[..., None]
    np.testing.assert_allclose(hwc(F.adjust_saturation(x, 1.7)), np.clip(1.7 * a - 0.7 * g, 0, 1), atol=1e-3)
    np.testing.assert_allclose(hwc(F.adjust_saturation(x, 0.0)), np.repeat(g, 3, -1), atol=1e-3)
    pil, t = Image.fromarray(smooth), chw(smooth)
    for fn in (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_sharpness):
        for factor in (0.3, 1.6):
            diff = np.abs(hwc(fn(t, factor)).astype(int) - hwc(fn(pil, factor)))
            assert diff.max() <= 1, fn.__name__
    from PIL import ImageEnhance
    np.testing.assert_array_equal(hwc(F.adjust_contrast(pil, 0.5)), np.asarray(ImageEnhance.Contrast(pil).enhance(0.5)))
    for fn in (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_sharpness):
        with pytest.raises(ValueError):
            fn(t, -0.1)
    with pytest.raises(TypeError):
        F.adjust_brightness(torch.zeros(2, 4, 4), 1.0)


def test_hue_and_gamma(arr, smooth):
    x = chw(arr).float() / 255
    np.testing.assert_allclose(F.adjust_hue(x, 0.0).numpy(), x.numpy(), atol=1e-5)
    np.testing.assert_allclose(F.adjust_hue(x, 0.5).numpy(), F.adjust_hue(x, -0.5).numpy(), atol=1e-5)
    import colorsys
    r, g, b = arr[5, 7] / 255.0
    hh, ss, vv = colorsys.rgb_to_hsv(r, g, b)
    expected = colorsys.hsv_to_rgb((hh + 0.2) % 1.0, ss, vv)
    np.testing.assert_allclose(F.adjust_hue(x, 0.2).numpy()[:, 5, 7], expected, atol=1e-5)
    diff = np.abs(hwc(F.adjust_hue(chw(smooth), 0.2)).astype(int) - hwc(F.adjust_hue(Image.fromarray(smooth), 0.2)))
    assert diff.max() <= 16                                      # PIL's HSV is 8-bit
    with pytest.raises(ValueError):
        F.adjust_hue(x, 0.6)
    np.testing.assert_allclose(hwc(F.adjust_gamma(x, 2.2, 0.9)), np.clip(0.9 * (arr / 255.0) ** 2.2, 0, 1), atol=1e-5)
    table = [min(255, int((256 - 1e-3) * (v / 255.0) ** 0.5)) for v in range(256)]
    np.testing.assert_array_equal(hwc(F.adjust_gamma(chw(arr), 0.5)), np.array(table, np.uint8)[arr])
    np.testing.assert_array_equal(hwc(F.adjust_gamma(Image.fromarray(arr), 0.5)), np.array(table, np.uint8)[arr])
    with pytest.raises(ValueError):
        F.adjust_gamma(x, -1)


def test_grayscale(arr):
    x = chw(arr).float() / 255
    np.testing.assert_allclose(F.rgb_to_grayscale(x).numpy()[0], gray_np(arr / 255.0), atol=1e-4)
    three = T.Grayscale(3)(x)
    assert tuple(three.shape) == (3, H, W)
    np.testing.assert_array_equal(three.numpy()[0], three.numpy()[2])
    pil = Image.fromarray(arr)
    np.testing.assert_array_equal(np.asarray(F.to_grayscale(pil)), np.asarray(pil.convert("L")))
    assert T.Grayscale(3)(pil).mode == "RGB" and T.RandomGrayscale(p=1.0)(pil).mode == "RGB"
    assert tuple(T.RandomGrayscale(p=1.0)(x).shape) == (3, H, W)
    diff = np.abs(F.rgb_to_grayscale(chw(arr)).numpy()[0].astype(int) - np.asarray(pil.convert("L")).astype(int))
    assert diff.max() <= 1
    with pytest.raises(ValueError):
        F.rgb_to_grayscale(x, 2)
    with pytest.raises(TypeError):
        F.rgb_to_grayscale(torch.zeros(2, 4, 4))


def test_invert_posterize_solarize_autocontrast_equalize(arr):
    t, pil = chw(arr), Image.fromarray(arr)
    np.testing.assert_array_equal(hwc(F.invert(t)), 255 - arr)
    np.testing.assert_allclose(F.invert(t.float() / 255).numpy(), 1 - arr.transpose(2, 0, 1) / 255.0, atol=1e-6)
    np.testing.assert_array_equal(hwc(F.posterize(t, 3)), arr & 0b11100000)
    np.testing.assert_array_equal(hwc(F.solarize(t, 100)), np.where(arr >= 100, 255 - arr, arr))
    low = (arr // 4 + 40).astype(np.uint8)
    lo, hi = low.min((0, 1)), low.max((0, 1))
    scale = np.float32(255) / (hi - lo).astype(np.float32)       # float32, as the tensor path computes
    expected = ((low - lo).astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(hwc(F.autocontrast(chw(low))), expected)
    for fn, ref in [(F.invert, ImageOps.invert), (F.equalize, ImageOps.equalize),
                    (F.autocontrast, ImageOps.autocontrast),
                    (lambda im: F.posterize(im, 2), lambda im: ImageOps.posterize(im, 2)),
                    (lambda im: F.solarize(im, 90), lambda im: ImageOps.solarize(im, 90))]:
        np.testing.assert_array_equal(hwc(fn(pil)), np.asarray(ref(pil)))
        np.testing.assert_array_equal(hwc(fn(t)), np.asarray(ref(pil)))
    assert F.equalize(torch.full((3, 4, 4), 7, dtype=torch.uint8)).numpy().max() == 7
    with pytest.raises(TypeError):
        F.posterize(t.float(), 3)
    with pytest.raises(ValueError):
        F.posterize(t, 9)
    with pytest.raises(TypeError):
        F.equalize(t.float())
    with pytest.raises(TypeError):
        F.solarize(t.float() / 255, 2.0)


def test_gaussian_blur(arr):
    x = chw(arr).float()
    k, s = (5, 3), (1.5, 0.7)
    kx, ky = [np.exp(-0.5 * (np.arange(n) - n // 2) ** 2 / sg ** 2) for n, sg in zip(k, s)]
    kern = np.outer(ky / ky.sum(), kx / kx.sum())
    padded = np.pad(arr.astype(np.float64), ((1, 1), (2, 2), (0, 0)), mode="reflect")
    expected = sum(kern[i, j] * padded[i:i + H, j:j + W] for i in range(3) for j in range(5))
    np.testing.assert_allclose(hwc(F.gaussian_blur(x, list(k), list(s))), expected, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(hwc(F.gaussian_blur(chw(arr), list(k), list(s))),
                                  np.round(expected).clip(0, 255).astype(np.uint8))
    np.testing.assert_array_equal(hwc(F.gaussian_blur(Image.fromarray(arr), list(k), list(s))),
                                  np.round(expected).clip(0, 255).astype(np.uint8))
    default = F.gaussian_blur(x, 3)
    sigma3 = 0.3 * ((3 - 1) * 0.5 - 1) + 0.8                       # the documented default for k = 3
    np.testing.assert_allclose(default.numpy(), F.gaussian_blur(x, 3, sigma3).numpy(), rtol=1e-6)
    out = T.GaussianBlur(3, sigma=(0.5, 1.0))(torch.stack([x, x]))
    assert tuple(out.shape) == (2, 3, H, W)
    for bad in (4, (3, 4), -3):
        with pytest.raises(ValueError):
            F.gaussian_blur(x, bad)
    with pytest.raises(ValueError):
        F.gaussian_blur(x, 3, 0.0)
    with pytest.raises(TypeError):
        F.gaussian_blur(x, 3.0)
    with pytest.raises(ValueError):
        T.GaussianBlur(4)
    with pytest.raises(ValueError):
        T.GaussianBlur(3, sigma=(2.0, 1.0))


def test_erase(arr):
    t = chw(arr)
    out = F.erase(t, 2, 3, 5, 6, torch.tensor([1, 2, 3]).reshape(3, 1, 1))
    expected = arr.copy()
    expected[2:7, 3:9] = [1, 2, 3]
    np.testing.assert_array_equal(hwc(out), expected)
    np.testing.assert_array_equal(hwc(t), arr)                     # not in place
    y = t.clone()
    assert F.erase(y, 0, 0, 2, 2, 0, inplace=True) is y and int(y[:, :2, :2].sum()) == 0
    with pytest.raises(TypeError):
        F.erase(Image.fromarray(arr), 0, 0, 1, 1, 0)


def test_random_erasing(arr):
    x = chw(arr).float() / 255
    torch.manual_seed(3)
    out = T.RandomErasing(p=1.0, value=0.5)(x)
    changed = np.argwhere((out.numpy() != x.numpy()).any(0))
    (r0, c0), (r1, c1) = changed.min(0), changed.max(0)
    np.testing.assert_array_equal(out.numpy()[:, r0:r1 + 1, c0:c1 + 1], 0.5)
    np.testing.assert_array_equal(np.delete(out.numpy(), np.s_[r0:r1 + 1], axis=1),
                                  np.delete(x.numpy(), np.s_[r0:r1 + 1], axis=1))
    torch.manual_seed(3)
    torch.rand(1)                                                  # the draw against p
    i, j, h, w, v = T.RandomErasing.get_params(x, (0.02, 0.33), (0.3, 3.3), value=[0.5])
    assert (i, j, h, w) == (r0, c0, r1 - r0 + 1, c1 - c0 + 1)
    assert 0.02 * H * W * 0.5 <= h * w <= 0.33 * H * W * 1.5
    noisy = T.RandomErasing(p=1.0, value="random")(x)
    assert tuple(noisy.shape) == (3, H, W) and not np.array_equal(noisy.numpy(), x.numpy())
    assert T.RandomErasing(p=1.0, value=(1, 2, 3))(chw(arr)).dtype == torch.uint8
    assert tuple(T.RandomErasing(p=1.0)(torch.stack([x, x])).shape) == (2, 3, H, W)
    assert T.RandomErasing(p=0.0)(x) is x
    for kwargs, exc in [({"value": "x"}, ValueError), ({"value": None}, TypeError), ({"scale": (0, 2)}, ValueError),
                        ({"p": 1.5}, ValueError), ({"scale": 0.3}, TypeError)]:
        with pytest.raises(exc):
            T.RandomErasing(**kwargs)
    with pytest.raises(ValueError):
        T.RandomErasing(p=1.0, value=(1, 2))(x)


# ---- random transforms, composition, seeding --------------------------------------------------------
def test_random_crop(arr):
    t = chw(arr)
    torch.manual_seed(0)
    out = T.RandomCrop((10, 12))(t)
    torch.manual_seed(0)
    i, j, h, w = T.RandomCrop.get_params(t, (10, 12))
    np.testing.assert_array_equal(hwc(out), arr[i:i + 10, j:j + 12])
    assert F.get_dimensions(T.RandomCrop(30, pad_if_needed=True)(Image.fromarray(arr)))[1:] == [30, 30]
    assert tuple(T.RandomCrop(28, padding=4, padding_mode="reflect")(t).shape) == (3, 28, 28)
    assert T.RandomCrop.get_params(t, (H, W)) == (0, 0, H, W)
    with pytest.raises(ValueError):
        T.RandomCrop(40)(t)


def test_random_resized_crop(arr):
    t = chw(arr)
    for _ in range(20):
        i, j, h, w = T.RandomResizedCrop.get_params(t, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i <= H - h and 0 <= j <= W - w and h > 0 and w > 0
    # an impossible ratio falls back to the centre crop with the nearest ratio
    assert T.RandomResizedCrop.get_params(t, (1.0, 1.0), (3.0, 4.0)) == ((H - 10) // 2, 0, 10, W)
    rrc = T.RandomResizedCrop(16, antialias=True)
    torch.manual_seed(5)
    out = rrc(t)
    torch.manual_seed(5)
    i, j, h, w = rrc.get_params(t, rrc.scale, rrc.ratio)
    np.testing.assert_array_equal(out.numpy(), F.resized_crop(t, i, j, h, w, [16, 16]).numpy())
    assert T.RandomResizedCrop((8, 9))(Image.fromarray(arr)).size == (9, 8)
    with pytest.raises(TypeError):
        T.RandomResizedCrop(8, scale=0.5)
    with pytest.warns(UserWarning):
        T.RandomResizedCrop(8, scale=(1.0, 0.5))


def test_random_rotation_affine_params():
    torch.manual_seed(0)
    for _ in range(10):
        assert -10 <= T.RandomRotation.get_params([-10.0, 10.0]) <= 10
        angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params([-5, 5], [0.1, 0.2], [0.9, 1.1], [-3, 3, -2, 2],
                                                                     [W, H])
        assert -5 <= angle <= 5 and abs(tx) <= 3 and abs(ty) <= 5 and 0.9 <= scale <= 1.1
        assert -3 <= sx <= 3 and -2 <= sy <= 2
    assert T.RandomAffine(10).degrees == [-10.0, 10.0] and T.RandomAffine(0, shear=5).shear == [-5.0, 5.0]
    for kwargs, exc in [({"degrees": -1}, ValueError), ({"degrees": [1, 2, 3]}, ValueError),
                        ({"degrees": 5, "translate": [0.5, 1.5]}, ValueError),
                        ({"degrees": 5, "translate": 0.5}, TypeError),
                        ({"degrees": 5, "scale": [0, 1]}, ValueError), ({"degrees": 5, "shear": [1, 2, 3]}, ValueError),
                        ({"degrees": 5, "fill": "x"}, TypeError), ({"degrees": 5, "interpolation": "x"}, TypeError)]:
        with pytest.raises(exc):
            T.RandomAffine(**kwargs)


def test_color_jitter(arr):
    cj = T.ColorJitter(brightness=0.5, contrast=(0.2, 0.8), saturation=0.3, hue=0.1)
    assert cj.brightness == (0.5, 1.5) and cj.contrast == (0.2, 0.8) and cj.hue == (-0.1, 0.1)
    assert T.ColorJitter().brightness is None and T.ColorJitter(brightness=2).brightness == (0.0, 3.0)
    torch.manual_seed(1)
    order, b, c, s, h = T.ColorJitter.get_params(cj.brightness, cj.contrast, cj.saturation, cj.hue)
    assert sorted(order.tolist()) == [0, 1, 2, 3] and 0.5 <= b <= 1.5 and 0.2 <= c <= 0.8 and -0.1 <= h <= 0.1
    x = chw(arr).float() / 255
    torch.manual_seed(1)
    out = cj(x)
    expected, fns = x, [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
    for k in order.tolist():
        expected = fns[k](expected, [b, c, s, h][k])
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-6)
    assert cj(Image.fromarray(arr)).size == (W, H)
    for kwargs, exc in [({"brightness": -1}, ValueError), ({"hue": 0.7}, ValueError), ({"contrast": "a"}, TypeError),
                        ({"saturation": (1, 2, 3)}, TypeError), ({"brightness": (2, 1)}, ValueError)]:
        with pytest.raises(exc):
            T.ColorJitter(**kwargs)


def test_compose_and_containers(arr):
    pipe = T.Compose([T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)])
    np.testing.assert_allclose(pipe(Image.fromarray(arr)).numpy(), (arr.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25,
                               rtol=1e-5, atol=1e-5)
    assert "ToTensor()" in repr(pipe) and "Normalize(" in repr(pipe)
    t = chw(arr)
    np.testing.assert_array_equal(T.RandomApply([T.RandomInvert(1.0)], p=1.0)(t).numpy(), 255 - t.numpy())
    assert T.RandomApply([T.RandomInvert(1.0)], p=0.0)(t) is t
    np.testing.assert_array_equal(T.RandomChoice([T.RandomInvert(1.0), T.RandomInvert(1.0)], p=[0.3, 0.7])(t).numpy(),
                                  255 - t.numpy())
    flips = T.RandomOrder([T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0)])(t)
    np.testing.assert_array_equal(flips.numpy(), t.numpy()[:, ::-1, ::-1])
    np.testing.assert_array_equal(T.Lambda(lambda im: im * 2)(t.float()).numpy(), t.numpy() * 2.0)
    seq = torch.nn.Sequential(T.RandomHorizontalFlip(1.0), T.ConvertImageDtype(torch.float32))
    np.testing.assert_allclose(seq(t).numpy(), t.numpy()[:, :, ::-1] / 255.0, rtol=1e-6)
    with pytest.raises(TypeError):
        T.Lambda(3)
    with pytest.raises(TypeError):
        T.RandomApply(T.RandomInvert())
    with pytest.raises(TypeError):
        T.RandomChoice([T.RandomInvert()], p=0.5)


def test_random_single_ops(arr):
    t = chw(arr)
    for cls, fn in [(T.RandomInvert, F.invert), (T.RandomAutocontrast, F.autocontrast), (T.RandomEqualize, F.equalize)]:
        np.testing.assert_array_equal(cls(p=1.0)(t).numpy(), fn(t).numpy())
        assert cls(p=0.0)(t) is t
    np.testing.assert_array_equal(T.RandomPosterize(2, p=1.0)(t).numpy(), F.posterize(t, 2).numpy())
    np.testing.assert_array_equal(T.RandomSolarize(50, p=1.0)(t).numpy(), F.solarize(t, 50).numpy())
    np.testing.assert_array_equal(T.RandomAdjustSharpness(2, p=1.0)(t).numpy(), F.adjust_sharpness(t, 2).numpy())


def test_linear_transformation(arr):
    x = chw(arr[:4, :5]).float() / 255
    n = 3 * 4 * 5
    m = torch.from_numpy(_rng().random((n, n)).astype(np.float32))
    mu = torch.from_numpy(_rng().random(n).astype(np.float32))
    out = T.LinearTransformation(m, mu)(x)
    np.testing.assert_allclose(out.numpy().reshape(-1), (x.numpy().reshape(-1) - mu.numpy()) @ m.numpy(), rtol=1e-4)
    with pytest.raises(ValueError):
        T.LinearTransformation(torch.zeros(3, 4), torch.zeros(3))
    with pytest.raises(ValueError):
        T.LinearTransformation(m, torch.zeros(3))


def _pipeline():
    return T.Compose([T.RandomResizedCrop(20), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                      T.RandomRotation(15), T.RandomAffine(5, translate=(0.1, 0.1)), T.RandomGrayscale(0.5),
                      T.GaussianBlur(3), T.RandomErasing(p=0.9)])


def test_seeding_reproducible(arr):
    x = chw(arr).float() / 255

    def run(seed):
        torch.manual_seed(seed)
        return _pipeline()(x).numpy()
    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))
    pil = Image.fromarray(arr)

    def run_pil(seed):
        torch.manual_seed(seed)
        return np.asarray(T.Compose(_pipeline().transforms[:-1])(pil))
    np.testing.assert_array_equal(run_pil(3), run_pil(3))
    assert not np.array_equal(run_pil(3), run_pil(4))


def test_batched_tensors_match_per_image(arr):
    x = torch.stack([chw(arr), chw(arr[::-1].copy())])
    ops = [lambda im: F.resize(im, (10, 13)), lambda im: F.rotate(im, 20, IM.BILINEAR),
           lambda im: F.affine(im, 10, [1, 2], 1.1, 5), lambda im: F.adjust_contrast(im, 0.5),
           lambda im: F.adjust_hue(im, 0.1), lambda im: F.adjust_sharpness(im, 2.0), F.equalize, F.autocontrast,
           lambda im: F.gaussian_blur(im, 3), lambda im: F.pad(im, [1, 2], padding_mode="symmetric"),
           lambda im: F.center_crop(im, 30), lambda im: F.rgb_to_grayscale(im, 3)]
    for op in ops:
        batched = op(x)
        for k in range(2):
            np.testing.assert_array_equal(batched[k].numpy(), op(x[k]).numpy())
        deep = op(x.reshape(1, 2, 3, H, W))
        assert tuple(deep.shape[:2]) == (1, 2)


# ---- auto augmentation ------------------------------------------------------------------------
def test_autoaugment_policies(arr):
    from torchlite.vision.transforms.autoaugment import _POLICIES, _parse_policy
    ops = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Color", "Posterize", "Solarize", "Contrast",
           "Sharpness", "Brightness", "AutoContrast", "Equalize", "Invert"}
    for policy in T.AutoAugmentPolicy:
        table = _parse_policy(_POLICIES[policy])
        assert len(table) == 25 and all(len(sub) == 2 for sub in table)
        for name, p, mag in (item for sub in table for item in sub):
            assert name in ops and 0 <= p <= 1 and (mag is None or 0 <= mag <= 9)
    assert _parse_policy(_POLICIES[T.AutoAugmentPolicy.IMAGENET])[0] == (("Posterize", 0.4, 8), ("Rotate", 0.6, 9))
    with pytest.raises(ValueError):
        T.AutoAugment("imagenet")


@pytest.mark.parametrize("make", [lambda: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), lambda: T.AutoAugment(),
                                  lambda: T.RandAugment(num_ops=3), lambda: T.TrivialAugmentWide(fill=128)])
def test_auto_augment_runs_and_seeds(arr, make):
    aug = make()
    t, pil = chw(arr), Image.fromarray(arr)
    outs = []
    for seed in range(6):
        torch.manual_seed(seed)
        out = aug(t)
        assert out.dtype == torch.uint8 and tuple(out.shape) == (3, H, W)
        torch.manual_seed(seed)
        assert aug(pil).size == (W, H)
        torch.manual_seed(seed)
        np.testing.assert_array_equal(aug(t).numpy(), out.numpy())
        outs.append(out.numpy())
    assert any(not np.array_equal(outs[0], o) for o in outs[1:])
    assert tuple(aug(torch.stack([t, t])).shape) == (2, 3, H, W)


def test_apply_op_pil_and_tensor_agree(smooth):
    from torchlite.vision.transforms.autoaugment import _apply_op
    pil, t = Image.fromarray(smooth), chw(smooth)
    # magnitudes that put no sample exactly half-way between pixels (PIL rounds those up, the
    # tensor path to even, as torch's grid_sample does)
    for name, mag in [("ShearX", 0.23), ("ShearY", -0.17), ("TranslateX", 5.0), ("TranslateY", -4.0), ("Rotate", 90.0),
                      ("Brightness", 0.4), ("Color", -0.5), ("Contrast", 0.3), ("Sharpness", 0.8), ("Posterize", 3),
                      ("Solarize", 120.0), ("AutoContrast", 0), ("Equalize", 0), ("Invert", 0), ("Identity", 0)]:
        a, b = hwc(_apply_op(pil, name, mag, IM.NEAREST, None)), hwc(_apply_op(t, name, mag, IM.NEAREST, None))
        diff = np.abs(a.astype(int) - b)
        assert (diff > 1).mean() < 0.02, name
    with pytest.raises(ValueError):
        _apply_op(t, "Blur", 1.0, IM.NEAREST, None)


# ---- v2, repr --------------------------------------------------------------------------------
def test_v2_names(arr):
    # v2's classes are the v1 transforms, taking whole samples (an image with its label) too
    assert issubclass(v2.Resize, T.Resize) and issubclass(v2.RandomResizedCrop, T.RandomResizedCrop) \
        and issubclass(v2.AutoAugment, T.AutoAugment)
    img = v2.ToImage()(Image.fromarray(arr))
    assert img.dtype == torch.uint8 and tuple(img.shape) == (3, H, W)
    np.testing.assert_array_equal(v2.ToImage()(arr).numpy(), arr.transpose(2, 0, 1))
    scaled = v2.ToDtype(torch.float32, scale=True)(img)
    np.testing.assert_allclose(scaled.numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert float(v2.ToDtype(torch.float32)(img).max()) == float(arr.max())
    np.testing.assert_array_equal(v2.functional.horizontal_flip(img).numpy(), img.numpy()[..., ::-1])
    assert tuple(v2.RGB()(img[:1]).shape) == (3, H, W) and v2.Identity()(img) is img
    assert v2.functional.resize is F.resize and v2.functional.to_dtype(img, torch.float64).dtype == torch.float64


def test_reprs():
    assert repr(T.Resize(32)) == "Resize(size=32, interpolation=bilinear, max_size=None, antialias=True)"
    assert repr(T.RandomHorizontalFlip()) == "RandomHorizontalFlip(p=0.5)"
    assert "AutoAugmentPolicy.IMAGENET" in repr(T.AutoAugment())
    assert repr(T.CenterCrop(4)) == "CenterCrop(size=(4, 4))"


# ---- torchvision, where installed -------------------------------------------------------------
def test_matches_torchvision(arr, smooth):
    tv = pytest.importorskip("torchvision.transforms.functional")
    pt = pytest.importorskip("torch")
    pil, t, pt_img = Image.fromarray(smooth), chw(smooth), pt.from_numpy(smooth.transpose(2, 0, 1).copy())
    cases = [("resize", ((13, 17),)), ("rotate", (30.0,)), ("affine", (10.0, [2, 3], 1.1, [5.0, 2.0])),
             ("adjust_contrast", (0.6,)), ("adjust_saturation", (1.5,)), ("adjust_hue", (0.2,)),
             ("adjust_sharpness", (2.0,)), ("gaussian_blur", ([5, 3], [1.2, 0.7])), ("center_crop", ((30, 34),)),
             ("pad", ([2, 3], 0, "symmetric")), ("equalize", ()), ("autocontrast", ()), ("posterize", (3,)),
             ("perspective", ([[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]], [[2, 1], [W - 3, 3], [W - 2, H - 4],
                                                                               [1, H - 2]])),
             ("resize", ((40, 47), IM.BICUBIC)), ("rotate", (-45.0, IM.BILINEAR, True))]
    tvmode = pytest.importorskip("torchvision.transforms").InterpolationMode
    for name, args in cases:
        args_tv = tuple(tvmode(a.value) if isinstance(a, IM) else a for a in args)
        mine_pil, theirs_pil = getattr(F, name)(pil, *args), getattr(tv, name)(pil, *args_tv)
        np.testing.assert_array_equal(hwc(mine_pil), np.asarray(theirs_pil), err_msg=name)
        mine, theirs = getattr(F, name)(t, *args).numpy(), getattr(tv, name)(pt_img, *args_tv).numpy()
        assert mine.shape == theirs.shape, name
        assert (np.abs(mine.astype(int) - theirs.astype(int)) > 1).mean() < 0.01, name
    x = arr.transpose(2, 0, 1).astype(np.float32) / 255
    np.testing.assert_allclose(F.normalize(torch.from_numpy(x), [0.4] * 3, [0.2] * 3).numpy(),
                               tv.normalize(pt.from_numpy(x), [0.4] * 3, [0.2] * 3).numpy(), rtol=1e-5, atol=1e-6)
    assert math.isfinite(float(F.to_tensor(pil).sum()))


def test_review_cases_float_arrays_and_16_bit_padding():
    from PIL import Image
    from torchlite.vision.transforms import functional as TF
    arr = np.full((2, 3, 3), 0.5, np.float32)
    img = TF.to_pil_image(arr)
    assert img.mode == "RGB" and np.asarray(img)[0, 0, 0] == 127
    gray = TF.to_pil_image(np.full((2, 3, 1), 0.5, np.float32))
    assert gray.mode == "L"
    padded = TF.pad(Image.new("I;16", (4, 4)), 2, padding_mode="edge")
    assert padded.size == (8, 8)


# ---- ElasticTransform / elastic_transform ----------------------------------------------------------
def test_elastic_transform_moves_pixels_by_the_displacement():
    img = torch.rand(3, 12, 16)
    assert torch.equal(F.elastic_transform(img, torch.zeros(1, 12, 16, 2)), img)      # no move
    d = torch.zeros(1, 12, 16, 2)
    d[..., 0] = 2 * 3 / 16                  # 3 pixels right (2 spans the image)
    d[..., 1] = -2 * 1 / 12                 # 1 pixel up
    out = F.elastic_transform(img, d, fill=[0.5])
    np.testing.assert_allclose(out[:, 1:, :-3].numpy(), img[:, :-1, 3:].numpy(), atol=1e-6)
    np.testing.assert_allclose(out[:, :, -3:].numpy(), 0.5, atol=1e-6)      # from outside: fill
    np.testing.assert_allclose(out[:, 0, :].numpy(), 0.5, atol=1e-6)
    near = F.elastic_transform(img, d, interpolation=F.InterpolationMode.NEAREST)
    np.testing.assert_array_equal(near[:, 1:, :-3].numpy(), img[:, :-1, 3:].numpy())
    u8 = (img * 255).to(torch.uint8)
    assert F.elastic_transform(u8, d).dtype is torch.uint8
    with pytest.raises(ValueError, match="displacement shape"):
        F.elastic_transform(img, torch.zeros(1, 12, 15, 2))
    with pytest.raises(TypeError, match="displacement should be a Tensor"):
        F.elastic_transform(img, np.zeros((1, 12, 16, 2)))


def test_elastic_transform_class_draws_from_torchlites_generator():
    from PIL import Image
    img = torch.rand(1, 32, 32)
    t = T.ElasticTransform(alpha=30.0, sigma=4.0)
    torch.manual_seed(3)
    a = t(img)
    torch.manual_seed(3)
    b = t(img)
    assert torch.equal(a, b) and not torch.equal(a, img) and a.shape == img.shape
    torch.manual_seed(0)
    d = T.ElasticTransform.get_params([30.0, 30.0], [4.0, 4.0], [32, 48])
    assert d.shape == (1, 32, 48, 2)
    assert d[..., 0].abs().max().item() <= 30.0 / 32 and d[..., 1].abs().max().item() <= 30.0 / 48
    pil = Image.fromarray((np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8))
    out = T.ElasticTransform(alpha=20.0, sigma=3.0)(pil)
    assert isinstance(out, Image.Image) and out.size == (32, 32) and out.mode == "RGB"
    with pytest.raises(ValueError, match="length should be 1 or 2"):
        T.ElasticTransform(alpha=[1.0, 2.0, 3.0])
    assert issubclass(__import__("torchlite.vision.transforms.v2", fromlist=["x"]).ElasticTransform, T.ElasticTransform)


# ---- AugMix ----------------------------------------------------------------------------------------
def test_augmix_mixes_the_chains_with_weights_that_sum_to_one(monkeypatch):
    from torchlite.vision.transforms import autoaugment
    # every operation replaced by inversion: each chain gives 255 - x or x (even depth), so an
    # image's output is a x + (1 - a)(255 - x) for one a in [0, 1] per image
    monkeypatch.setattr(autoaugment, "_apply_op", lambda img, *a: 255.0 - img)
    torch.manual_seed(1)
    x = torch.randint(0, 256, (4, 3, 8, 8)).to(torch.float32)
    out = autoaugment.AugMix(chain_depth=1)(x)
    xs, ys = x.numpy().reshape(4, -1), out.numpy().reshape(4, -1)
    a = (ys - (255 - xs)) / np.where(2 * xs == 255, 1, 2 * xs - 255)
    for i in range(4):
        ok = 2 * xs[i] != 255
        assert np.allclose(a[i][ok], a[i][ok][0], atol=1e-4) and 0 <= a[i][ok][0] <= 1
    assert len({round(float(a[i][0]), 4) for i in range(4)}) > 1        # weights per image


def test_augmix_on_uint8_tensors_and_pil_images():
    from PIL import Image
    img = (torch.rand(3, 32, 32) * 255).to(torch.uint8)
    torch.manual_seed(7)
    a = T.AugMix()(img)
    torch.manual_seed(7)
    b = T.AugMix()(img)
    assert a.dtype is torch.uint8 and a.shape == img.shape and torch.equal(a, b)
    assert T.AugMix(severity=10, mixture_width=2, chain_depth=3, all_ops=False)(
        (torch.rand(2, 3, 16, 16) * 255).to(torch.uint8)).shape == (2, 3, 16, 16)
    pil = Image.fromarray((np.random.default_rng(0).random((16, 16, 3)) * 255).astype(np.uint8))
    out = T.AugMix()(pil)
    assert isinstance(out, Image.Image) and out.mode == "RGB" and out.size == (16, 16)
    with pytest.raises(ValueError, match="severity must be between"):
        T.AugMix(severity=11)
    assert issubclass(v2.AugMix, T.AugMix)


def test_v2_transforms_take_a_whole_sample_and_pass_the_rest_through():
    # torchvision's v2: t(img, label) and t({"image": img, "label": y}) transform the image only
    from PIL import Image
    from torchlite.vision.transforms import v2
    img = Image.fromarray((np.arange(48).reshape(4, 4, 3) * 5).astype(np.uint8))
    flip = v2.RandomHorizontalFlip(p=1.0)
    out, label = flip(img, 3)
    assert label == 3 and np.array_equal(np.asarray(out), np.asarray(img)[:, ::-1])
    d = flip({"image": img, "label": 3, "meta": [1, "x"]})
    assert d["label"] == 3 and d["meta"] == [1, "x"] and np.array_equal(np.asarray(d["image"]),
                                                                        np.asarray(img)[:, ::-1])
    pipe = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.RandomHorizontalFlip(p=1.0)])
    x, y = pipe(img, 7)
    assert y == 7 and x.shape == (3, 4, 4) and x.dtype is torch.float32
    t = torch.rand(3, 4, 4)
    a, b = flip(t, torch.tensor(5))              # the first tensor is the image, the next passes
    assert torch.equal(a, t.flip(-1)) and b.item() == 5
    assert torch.equal(flip(t), t.flip(-1))      # one image, as before
    with pytest.raises(ValueError, match="several PIL images"):
        flip(img, img)
