"""PyTorch's import paths for names whose home here is another file: code written for PyTorch
imports `nn.modules.batchnorm._BatchNorm` (to freeze batch norms or exclude them from weight
decay), `nn.common_types._size_2_t`, `utils.hooks.RemovableHandle`, `distributions.laplace`,
... Each path must give the library's own object; where PyTorch is installed, every name its
module lists in __all__ must be there too."""
import importlib

import pytest

import torchlite as tl

PATHS = {
    "nn.modules.batchnorm": {"_BatchNorm": tl.nn.modules.normalization._BatchNorm,
                             "_NormBase": tl.nn.modules.normalization._NormBase,
                             "BatchNorm2d": tl.nn.BatchNorm2d, "SyncBatchNorm": tl.nn.SyncBatchNorm,
                             "LazyBatchNorm1d": tl.nn.LazyBatchNorm1d},
    "nn.modules.instancenorm": {"_InstanceNorm": tl.nn.modules.normalization._InstanceNorm,
                                "InstanceNorm2d": tl.nn.InstanceNorm2d},
    "nn.modules.pixelshuffle": {"PixelShuffle": tl.nn.PixelShuffle, "PixelUnshuffle": tl.nn.PixelUnshuffle},
    "nn.modules.channelshuffle": {"ChannelShuffle": tl.nn.ChannelShuffle},
    "nn.modules.activation": {"MultiheadAttention": tl.nn.MultiheadAttention, "ReLU": tl.nn.ReLU},
    "nn.common_types": {},
    "utils.hooks": {"RemovableHandle": tl.nn.modules.module.RemovableHandle},
    "utils.dlpack": {"from_dlpack": tl.from_dlpack, "DLDeviceType": tl._dlpack.DLDeviceType},
    "utils.model_zoo": {"load_url": tl.hub.load_state_dict_from_url},
    "distributions.chi2": {"Chi2": tl.distributions.Chi2},
    "distributions.exponential": {"Exponential": tl.distributions.Exponential},
    "distributions.half_cauchy": {"HalfCauchy": tl.distributions.HalfCauchy},
    "distributions.half_normal": {"HalfNormal": tl.distributions.HalfNormal},
    "distributions.laplace": {"Laplace": tl.distributions.Laplace},
    "distributions.poisson": {"Poisson": tl.distributions.Poisson},
    "distributions.studentT": {"StudentT": tl.distributions.StudentT},
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_pytorch_module_path_gives_the_librarys_objects(path):
    mod = importlib.import_module(f"torchlite.{path}")
    attr = tl
    for part in path.split("."):           # reachable as attributes too, without an import
        attr = getattr(attr, part)
    assert attr is mod
    for name, obj in PATHS[path].items():
        assert getattr(mod, name) is obj
    torch = pytest.importorskip("torch")
    theirs = importlib.import_module(f"torch.{path}")
    if path == "nn.common_types":
        names = [n for n in vars(theirs) if n.startswith("_size") or n.startswith("_ratio")]
    else:
        names = [n for n in getattr(theirs, "__all__", ()) if n in PATHS[path] or not n.startswith("_")]
    # BackwardHook: PyTorch's internal helper for module backward hooks, which torchlite's
    # modules run by other means (nn/modules/module.py)
    missing = [n for n in names if not hasattr(mod, n) and (path, n) != ("utils.hooks", "BackwardHook")]
    assert not missing, f"torchlite.{path} lacks {missing} (torch {torch.__version__})"


def test_a_batch_norm_found_through_pytorchs_base_class():
    model = tl.nn.Sequential(tl.nn.Conv2d(3, 4, 3), tl.nn.BatchNorm2d(4), tl.nn.ReLU(),
                             tl.nn.Linear(4, 2), tl.nn.BatchNorm1d(2))
    found = [m for m in model.modules() if isinstance(m, tl.nn.modules.batchnorm._BatchNorm)]
    assert found == [model[1], model[4]]


def test_hooks_marked_unserializable_do_not_warn():
    from torchlite.utils import hooks
    t = tl.ones(2, requires_grad=True)
    t.register_hook(hooks.unserializable_hook(lambda g: g))
    y = t * 2
    y.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        hooks.warn_if_has_hooks(y)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(t)
