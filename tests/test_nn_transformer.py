"""nn.TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder, TransformerDecoder
and Transformer against PyTorch with the state_dict copied across (eval mode, every layout and
mask option), gradients against PyTorch, reprs, state_dict names, masks, dropout and errors."""
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F

torch = pytest.importorskip("torch")

D_MODEL, NHEAD, FF = 8, 2, 16


@pytest.fixture(autouse=True)
def _quiet():
    # PyTorch warns about its nested-tensor fast path when building encoders
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
        # both libraries warn when a float mask meets a bool padding mask
        warnings.filterwarnings("ignore", message="Support for mismatched")
        yield


def _np(t):
    return t.detach().numpy()


def _pair(name, *args, **kwargs):
    """The same layer built in torchlite and torch, torch's weights copied from torchlite's."""
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **_torch_kwargs(kwargs))
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                            for k, v in ours.state_dict().items()})
    return ours, theirs


def _torch_kwargs(kwargs):
    out = dict(kwargs)
    act = kwargs.get("activation")
    if isinstance(act, nn.Module):
        out["activation"] = getattr(torch.nn, type(act).__name__)()
    for key in ("encoder_layer", "decoder_layer"):
        if key in kwargs:
            raise AssertionError("build stacks with _stack_pair")
    return out


def _args(lib, kw):
    """Forward keyword arguments: NumPy arrays become lib tensors."""
    conv = (lambda a: tl.tensor(a)) if lib is tl else torch.from_numpy
    return {k: conv(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


def _close(ours, theirs, atol=2e-5):
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=2e-5, atol=atol)


def _seq(rng, length, batch, batch_first, feats=D_MODEL):
    shape = (batch, length, feats) if batch_first else (length, batch, feats)
    return rng.standard_normal(shape).astype(np.float32)


def _causal_bool(n):
    return np.triu(np.ones((n, n), bool), 1)


def _square_mask(n):
    return np.triu(np.full((n, n), -np.inf, np.float32), 1)


def _padding(batch, length):
    kpm = np.zeros((batch, length), bool)
    kpm[1, length - 2:] = True
    return kpm


# ---- encoder layer ------------------------------------------------------------------------
LAYER_OPTIONS = {
    "post_norm": {},
    "norm_first": {"norm_first": True},
    "batch_first": {"batch_first": True},
    "gelu_norm_first_batch_first": {"activation": "gelu", "norm_first": True,
                                    "batch_first": True},
    "gelu_module": {"activation": nn.GELU()},
    "no_bias": {"bias": False},
    "eps": {"layer_norm_eps": 1e-3},
}


def _encoder_masks(rng, S, N):
    return {
        "none": {},
        "causal_bool": {"src_mask": _causal_bool(S)},
        "float_mask": {"src_mask": rng.standard_normal((S, S)).astype(np.float32)},
        "padding": {"src_key_padding_mask": _padding(N, S)},
        "padding_and_mask": {"src_key_padding_mask": _padding(N, S),
                             "src_mask": _causal_bool(S)},
        "is_causal": {"src_mask": _square_mask(S), "is_causal": True},
        "per_head_mask": {"src_mask": rng.standard_normal((N * NHEAD, S, S)).astype(np.float32)},
    }


@pytest.mark.parametrize("opt", list(LAYER_OPTIONS))
def test_encoder_layer_matches_torch(opt, threads):
    tl.manual_seed(0)
    kw = LAYER_OPTIONS[opt]
    m, tm = _pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, **kw)
    m.eval()
    tm.eval()
    rng = np.random.default_rng(0)
    S, N = 5, 3
    x = _seq(rng, S, N, kw.get("batch_first", False))
    for name, mk in _encoder_masks(rng, S, N).items():
        out = m(tl.tensor(x), **_args(tl, mk))
        ref = tm(torch.from_numpy(x), **_args(torch, mk))
        assert tuple(out.shape) == x.shape, name
        _close(out, ref)


def test_encoder_layer_unbatched_matches_torch():
    tl.manual_seed(1)
    m, tm = _pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, batch_first=True)
    m.eval()
    tm.eval()
    x = np.random.default_rng(1).standard_normal((5, D_MODEL)).astype(np.float32)
    kpm = np.array([0, 0, 0, 1, 1], bool)
    for mk in ({}, {"src_key_padding_mask": kpm}, {"src_mask": _causal_bool(5)}):
        _close(m(tl.tensor(x), **_args(tl, mk)), tm(torch.from_numpy(x), **_args(torch, mk)))


def test_encoder_layer_gradients_match_torch():
    tl.manual_seed(2)
    m, tm = _pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, dropout=0.0, norm_first=True)
    rng = np.random.default_rng(2)
    x = _seq(rng, 5, 3, False)
    kpm = _padding(3, 5)
    tx = tl.tensor(x).requires_grad_()
    rx = torch.from_numpy(x).requires_grad_()
    out = m(tx, src_mask=tl.tensor(_causal_bool(5)), src_key_padding_mask=tl.tensor(kpm))
    ref = tm(rx, src_mask=torch.from_numpy(_causal_bool(5)),
             src_key_padding_mask=torch.from_numpy(kpm))
    g = rng.standard_normal(x.shape).astype(np.float32)
    out.backward(tl.tensor(g))
    ref.backward(torch.from_numpy(g))
    np.testing.assert_allclose(_np(tx.grad), rx.grad.numpy(), rtol=1e-4, atol=1e-5)
    theirs = dict(tm.named_parameters())
    ours = dict(m.named_parameters())
    assert set(ours) == set(theirs)
    for name, p in ours.items():
        np.testing.assert_allclose(_np(p.grad), theirs[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_encoder_layer_fast_path_difference_is_only_at_padding():
    """PyTorch's inference fast path (no autograd, eval, batch_first) zeroes padded positions
    of a TransformerEncoder's output; elsewhere it agrees with the composed path torchlite
    always runs (the documented difference)."""
    tl.manual_seed(3)
    layer, _ = _pair("TransformerEncoderLayer", D_MODEL, NHEAD, FF, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2)
    tenc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, batch_first=True), 2)
    tenc.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                          for k, v in enc.state_dict().items()})
    enc.eval()
    tenc.eval()
    x = _seq(np.random.default_rng(3), 6, 3, True)
    kpm = np.zeros((3, 6), bool)
    kpm[1, 4:] = True
    out = _np(enc(tl.tensor(x), src_key_padding_mask=tl.tensor(kpm)))
    with torch.no_grad():
        fast = tenc(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm)).numpy()
    slow = tenc(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm)).detach().numpy()
    np.testing.assert_allclose(out, slow, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out[~kpm], fast[~kpm], rtol=1e-4, atol=1e-4)
    assert not fast[kpm].any()


# ---- decoder layer ------------------------------------------------------------------------
def _decoder_masks(rng, T, S, N):
    return {
        "none": {},
        "tgt_causal": {"tgt_mask": _square_mask(T), "tgt_is_causal": True},
        "tgt_bool_memory_float": {"tgt_mask": _causal_bool(T),
                                  "memory_mask": rng.standard_normal((T, S)).astype(np.float32)},
        "paddings": {"tgt_key_padding_mask": _padding(N, T),
                     "memory_key_padding_mask": _padding(N, S)},
        "everything": {"tgt_mask": _causal_bool(T), "memory_mask": np.zeros((T, S), bool),
                       "tgt_key_padding_mask": _padding(N, T),
                       "memory_key_padding_mask": _padding(N, S)},
    }


@pytest.mark.parametrize("opt", list(LAYER_OPTIONS))
def test_decoder_layer_matches_torch(opt):
    tl.manual_seed(4)
    kw = LAYER_OPTIONS[opt]
    m, tm = _pair("TransformerDecoderLayer", D_MODEL, NHEAD, FF, **kw)
    m.eval()
    tm.eval()
    rng = np.random.default_rng(4)
    T, S, N = 4, 6, 3
    bf = kw.get("batch_first", False)
    tgt, mem = _seq(rng, T, N, bf), _seq(rng, S, N, bf)
    for name, mk in _decoder_masks(rng, T, S, N).items():
        out = m(tl.tensor(tgt), tl.tensor(mem), **_args(tl, mk))
        ref = tm(torch.from_numpy(tgt), torch.from_numpy(mem), **_args(torch, mk))
        assert tuple(out.shape) == tgt.shape, name
        _close(out, ref)


def test_decoder_layer_gradients_match_torch():
    tl.manual_seed(5)
    m, tm = _pair("TransformerDecoderLayer", D_MODEL, NHEAD, FF, dropout=0.0)
    rng = np.random.default_rng(5)
    tgt, mem = _seq(rng, 4, 2, False), _seq(rng, 5, 2, False)
    tt, tmem = tl.tensor(tgt).requires_grad_(), tl.tensor(mem).requires_grad_()
    rt, rmem = torch.from_numpy(tgt).requires_grad_(), torch.from_numpy(mem).requires_grad_()
    m(tt, tmem, tgt_mask=tl.tensor(_square_mask(4))).pow(2).sum().backward()
    tm(rt, rmem, tgt_mask=torch.from_numpy(_square_mask(4))).pow(2).sum().backward()
    np.testing.assert_allclose(_np(tt.grad), rt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(tmem.grad), rmem.grad.numpy(), rtol=1e-4, atol=1e-5)
    theirs = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(_np(p.grad), theirs[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


# ---- stacks and the full model ------------------------------------------------------------
def _load(ours, theirs):
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                            for k, v in ours.state_dict().items()})


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_match_torch(norm_first):
    tl.manual_seed(6)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF,
                                                           norm_first=norm_first), 3,
                                nn.LayerNorm(D_MODEL))
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        D_MODEL, NHEAD, FF, norm_first=norm_first), 3, torch.nn.LayerNorm(D_MODEL))
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF,
                                                           norm_first=norm_first), 2)
    tdec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(
        D_MODEL, NHEAD, FF, norm_first=norm_first), 2)
    for a, b in ((enc, tenc), (dec, tdec)):
        _load(a, b)
        a.eval()
        b.eval()
    rng = np.random.default_rng(6)
    src, tgt = _seq(rng, 6, 2, False), _seq(rng, 4, 2, False)
    for mk in ({}, {"mask": _square_mask(6)}, {"mask": _square_mask(6), "is_causal": True},
               {"src_key_padding_mask": _padding(2, 6)}):
        mem = enc(tl.tensor(src), **_args(tl, mk))
        tmem = tenc(torch.from_numpy(src), **_args(torch, mk))
        _close(mem, tmem)
    for mk in ({}, {"tgt_mask": _square_mask(4)},
               {"tgt_mask": _causal_bool(4), "memory_key_padding_mask": _padding(2, 6)}):
        _close(dec(tl.tensor(tgt), mem, **_args(tl, mk)),
               tdec(torch.from_numpy(tgt), tmem, **_args(torch, mk)))


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first):
    tl.manual_seed(7)
    m, tm = _pair("Transformer", D_MODEL, NHEAD, 2, 2, FF, batch_first=batch_first)
    m.eval()
    tm.eval()
    rng = np.random.default_rng(7)
    src, tgt = _seq(rng, 6, 3, batch_first), _seq(rng, 4, 3, batch_first)
    masks = {"tgt_mask": _square_mask(4), "src_key_padding_mask": _padding(3, 6),
             "memory_key_padding_mask": _padding(3, 6), "tgt_key_padding_mask": _padding(3, 4)}
    for mk in ({}, masks):
        out = m(tl.tensor(src), tl.tensor(tgt), **_args(tl, mk))
        assert tuple(out.shape) == tgt.shape
        _close(out, tm(torch.from_numpy(src), torch.from_numpy(tgt), **_args(torch, mk)))
    # unbatched
    _close(m(tl.tensor(src[:, 0] if not batch_first else src[0]),
             tl.tensor(tgt[:, 0] if not batch_first else tgt[0])),
           tm(torch.from_numpy(src[:, 0] if not batch_first else src[0]),
              torch.from_numpy(tgt[:, 0] if not batch_first else tgt[0])))


def test_generate_square_subsequent_mask_matches_torch():
    for sz in (0, 1, 4):
        ours = nn.Transformer.generate_square_subsequent_mask(sz)
        theirs = torch.nn.Transformer.generate_square_subsequent_mask(sz)
        assert ours.dtype == tl.float32 and tuple(ours.shape) == (sz, sz)
        np.testing.assert_array_equal(_np(ours), theirs.numpy())
    m64 = nn.Transformer.generate_square_subsequent_mask(3, dtype=tl.float64)
    assert m64.dtype == tl.float64
    np.testing.assert_array_equal(_np(m64), _square_mask(3))


def test_transformer_state_dict_and_init():
    tl.manual_seed(8)
    m = nn.Transformer(16, 4, 2, 1, 32)
    tm = torch.nn.Transformer(16, 4, 2, 1, 32)
    ours = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert ours == {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    assert list(m.state_dict()) == list(tm.state_dict())
    for name, p in m.named_parameters():
        if p.dim() > 1:                    # every matrix Xavier-uniform
            fan_out, fan_in = p.shape
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            assert np.abs(_np(p)).max() <= bound + 1e-7, name
    assert m.d_model == 16 and m.nhead == 4 and m.batch_first is False


# ---- structure, reprs, dropout, errors ----------------------------------------------------
def test_reprs_match_torch():
    cases = [("TransformerEncoderLayer", (D_MODEL, NHEAD), {}),
             ("TransformerEncoderLayer", (D_MODEL, NHEAD, FF),
              {"activation": nn.GELU(), "bias": False}),
             ("TransformerDecoderLayer", (D_MODEL, NHEAD, FF), {"norm_first": True}),
             ("Transformer", (D_MODEL, NHEAD, 2, 1, FF), {})]
    for name, args, kw in cases:
        ours = getattr(nn, name)(*args, **kw)
        theirs = getattr(torch.nn, name)(*args, **_torch_kwargs(kw))
        assert repr(ours) == repr(theirs), name
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF), 2)
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF), 2)
    assert repr(enc) == repr(tenc)


def test_encoder_attributes_match_torch():
    for kw in ({}, {"batch_first": True}, {"batch_first": True, "norm_first": True}):
        layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, **kw)
        tlayer = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, **kw)
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True, mask_check=False)
        tenc = torch.nn.TransformerEncoder(tlayer, 2, enable_nested_tensor=True,
                                           mask_check=False)
        for attr in ("num_layers", "enable_nested_tensor", "use_nested_tensor", "mask_check"):
            assert getattr(enc, attr) == getattr(tenc, attr), (kw, attr)
        assert layer.activation_relu_or_gelu == tlayer.activation_relu_or_gelu
    assert nn.TransformerEncoderLayer(4, 2, activation="gelu").activation is F.gelu
    assert nn.TransformerEncoderLayer(4, 2, activation=F.silu).activation_relu_or_gelu == 0


def test_stack_layers_are_independent_deep_copies():
    proto = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)
    enc = nn.TransformerEncoder(proto, 3)
    assert isinstance(enc.layers, nn.ModuleList) and len(enc.layers) == 3
    layers = list(enc.layers)
    assert all(layer is not proto for layer in layers)
    assert layers[0] is not layers[1]
    w0 = _np(layers[0].linear1.weight).copy()
    np.testing.assert_array_equal(w0, _np(proto.linear1.weight))
    with tl.no_grad():
        layers[1].linear1.weight.fill_(1.0)
    np.testing.assert_array_equal(_np(layers[0].linear1.weight), w0)
    np.testing.assert_array_equal(_np(proto.linear1.weight), w0)
    assert len(list(enc.parameters())) == 3 * len(list(proto.parameters()))
    assert enc.norm is None


def test_dropout_only_in_training():
    tl.manual_seed(9)
    m = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.5)
    ref = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0)
    ref.load_state_dict(m.state_dict())
    x = tl.tensor(_seq(np.random.default_rng(9), 5, 3, False))
    m.eval()
    np.testing.assert_allclose(_np(m(x)), _np(ref(x)), rtol=1e-6, atol=1e-6)
    m.train()
    a, b = _np(m(x)), _np(m(x))
    assert np.abs(a - b).max() > 1e-3
    assert np.abs(a - _np(ref(x))).max() > 1e-3


def test_errors_match_torch():
    def cases(lib):
        t = lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
        z = lib.zeros
        return {
            "batch": lambda: t(z(5, 2, D_MODEL), z(4, 3, D_MODEL)),
            "features": lambda: t(z(5, 2, D_MODEL), z(4, 2, D_MODEL + 1)),
            "activation": lambda: lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD,
                                                                 activation="tanh"),
            "heads": lambda: lib.nn.TransformerDecoderLayer(D_MODEL, 3),
            "memory_mask": lambda: t(z(5, 2, D_MODEL), z(4, 2, D_MODEL),
                                     memory_mask=z(4, 4)),
        }
    ours, theirs = cases(tl), cases(torch)
    for name in ours:
        with pytest.raises(Exception) as e_theirs:
            theirs[name]()
        with pytest.raises(type(e_theirs.value)) as e_ours:
            ours[name]()
        # torchlite names the innermost layer first, then torch's message
        assert str(e_ours.value).endswith(str(e_theirs.value).replace("torch.", "torchlite.")), name
