"""Type hints on the public API (the architecture issue's "type hints on the public API and the
kit").  For each module below, every public function (its __all__, less the functions it only
re-exports, as dataloader's default_collate; creation.py and views.py, which have none: their
public functions torchlite exports at the top level) and every class of __all__ (the nn and optim
modules' classes, random's Generator, the data modules' datasets, samplers and DataLoader) with
its __init__, forward, step, other public methods and special methods defined in that module,
annotates every parameter (but self, cls, *args and **kwargs) and its return.  The annotations
must also evaluate (typing.get_type_hints, with torchlite's Tensor, dtype, device, Size, layout,
memory_format, Generator, nn.Module, optim.Optimizer, nn.utils.rnn.PackedSequence,
utils.data.Dataset and utils.data.Sampler and the typing names at hand), so a misspelled name
fails here; and each module has `from __future__ import annotations`, so none is evaluated on
import."""
import __future__
import collections.abc
import importlib
import inspect
import typing

import pytest

import torchlite

MODULES = {   # module: a few of the names it must cover (so the check is never vacuous)
    "torchlite._ops.creation": ["tensor", "zeros", "arange", "linspace", "eye", "zeros_like"],
    "torchlite._ops.reduction": ["sum", "mean", "max", "var_mean", "softmax"],
    "torchlite._ops.joining": ["cat", "stack", "split", "meshgrid"],
    "torchlite.nn.modules.linear": ["Linear.__init__", "Linear.forward", "Bilinear.forward"],
    "torchlite.nn.modules.conv": ["Conv2d.__init__", "Conv2d.forward", "ConvTranspose2d.forward"],
    "torchlite.nn.modules.container": ["Sequential.__init__", "ModuleList.append", "ParameterDict.update"],
    "torchlite.nn.modules.activation": ["ReLU.__init__", "ReLU.forward", "Softmax.forward"],
    "torchlite.optim.optimizer": ["Optimizer.step", "Optimizer.zero_grad", "Optimizer.state_dict",
                                  "Optimizer.load_state_dict", "Optimizer.add_param_group"],
    "torchlite.optim.sgd": ["SGD.__init__", "sgd"],
    "torchlite.optim.adam": ["Adam.__init__", "adam"],
    "torchlite.optim.adamw": ["AdamW.__init__", "adamw"],
    "torchlite._ops.linalg": ["matmul", "mm", "addmm", "einsum", "tensordot", "kron", "norm"],
    "torchlite._ops.sorting": ["sort", "topk", "unique", "searchsorted", "isin"],
    "torchlite._ops.indexing": ["gather", "scatter", "index_select", "masked_fill", "nonzero",
                                "unravel_index"],
    "torchlite.nn.modules.rnn": ["RNNBase.__init__", "RNNBase.forward", "LSTM.__init__",
                                 "LSTMCell.forward", "GRUCell.__init__"],
    "torchlite.nn.modules.transformer": ["Transformer.__init__", "Transformer.forward",
                                         "Transformer.generate_square_subsequent_mask",
                                         "TransformerEncoder.forward",
                                         "TransformerDecoderLayer.forward"],
    "torchlite.nn.modules.dropout": ["Dropout.__init__", "Dropout.forward", "Dropout2d.forward"],
    "torchlite.nn.modules.flatten": ["Flatten.__init__", "Unflatten.__init__", "Unflatten.forward"],
    "torchlite.nn.modules.padding": ["ConstantPad2d.__init__", "ZeroPad2d.__init__",
                                     "ReflectionPad1d.forward", "CircularPad2d.forward"],
    "torchlite.optim.rmsprop": ["RMSprop.__init__", "rmsprop"],
    "torchlite.optim.adagrad": ["Adagrad.__init__", "adagrad"],
    "torchlite.optim.lr_scheduler": ["LRScheduler.step", "LRScheduler.get_last_lr",
                                     "LRScheduler.state_dict", "LambdaLR.load_state_dict",
                                     "StepLR.__init__", "ReduceLROnPlateau.step",
                                     "CyclicLR.state_dict", "SequentialLR.step"],
    "torchlite.nn.functional.activation": ["relu", "leaky_relu", "gelu", "softmax", "log_softmax",
                                           "threshold", "gumbel_softmax"],
    "torchlite.nn.functional.conv": ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"],
    "torchlite.nn.functional.linear": ["linear", "bilinear"],
    "torchlite.nn.functional.pooling": ["max_pool2d", "max_pool2d_with_indices", "avg_pool2d",
                                        "adaptive_avg_pool2d", "max_unpool2d", "lp_pool2d"],
    "torchlite.nn.functional.normalization": ["batch_norm", "layer_norm", "group_norm", "rms_norm",
                                              "normalize"],
    "torchlite.nn.functional.dropout": ["dropout", "dropout2d", "alpha_dropout"],
    "torchlite.nn.functional.loss": ["cross_entropy", "nll_loss", "mse_loss",
                                     "binary_cross_entropy_with_logits", "kl_div",
                                     "triplet_margin_with_distance_loss"],
    "torchlite.nn.functional.distance": ["pairwise_distance", "cosine_similarity", "pdist"],
    "torchlite.nn.functional.vision": ["pad", "interpolate", "unfold", "fold", "pixel_shuffle"],
    "torchlite.nn.modules.module": ["Module.__init__", "Module.__call__", "Module.forward",
                                    "Module.parameters", "Module.named_modules", "Module.state_dict",
                                    "Module.load_state_dict", "Module.to", "Module.register_buffer",
                                    "Module.register_forward_hook", "Module.get_submodule"],
    "torchlite.nn.modules.normalization": ["BatchNorm2d.__init__", "BatchNorm2d.forward",
                                           "InstanceNorm1d.__init__", "LayerNorm.__init__",
                                           "GroupNorm.forward", "RMSNorm.__init__"],
    "torchlite.nn.modules.loss": ["MSELoss.__init__", "MSELoss.forward", "CrossEntropyLoss.__init__",
                                  "TripletMarginLoss.forward", "GaussianNLLLoss.forward",
                                  "LinearCrossEntropyLoss.__init__"],
    "torchlite.nn.modules.pooling": ["MaxPool2d.__init__", "MaxPool2d.forward", "AvgPool2d.__init__",
                                     "AdaptiveAvgPool2d.__init__", "MaxUnpool2d.forward",
                                     "LPPool2d.__init__"],
    "torchlite.nn.modules.sparse": ["Embedding.__init__", "Embedding.forward", "Embedding.from_pretrained",
                                    "EmbeddingBag.forward"],
    "torchlite.nn.modules.upsampling": ["Upsample.__init__", "Upsample.forward",
                                        "UpsamplingBilinear2d.__init__"],
    "torchlite.nn.modules.fold": ["Fold.__init__", "Fold.forward", "Unfold.__init__"],
    "torchlite.nn.modules.shuffle": ["PixelShuffle.__init__", "PixelShuffle.forward",
                                     "ChannelShuffle.forward"],
    "torchlite.nn.modules.distance": ["PairwiseDistance.__init__", "CosineSimilarity.forward"],
    "torchlite._ops.views": ["reshape", "permute", "transpose", "squeeze", "flatten", "narrow",
                             "as_strided", "flip", "clone", "broadcast_shapes", "view_copy",
                             "slice_copy"],
    "torchlite._ops.random": ["Generator.__init__", "Generator.get_state", "manual_seed", "rand",
                              "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
                              "rand_like"],
    "torchlite.optim.adadelta": ["Adadelta.__init__", "adadelta"],
    "torchlite.optim.adamax": ["Adamax.__init__", "adamax"],
    "torchlite.optim.nadam": ["NAdam.__init__", "nadam"],
    "torchlite.optim.radam": ["RAdam.__init__", "radam"],
    "torchlite.optim.asgd": ["ASGD.__init__", "asgd"],
    "torchlite.optim.rprop": ["Rprop.__init__", "rprop"],
    "torchlite.optim.lbfgs": ["LBFGS.__init__", "LBFGS.step"],
    "torchlite.optim.sparse_adam": ["SparseAdam.__init__"],
    "torchlite.optim.adafactor": ["Adafactor.__init__", "adafactor"],
    "torchlite.optim.muon": ["Muon.__init__", "muon"],
    "torchlite.optim.swa_utils": ["AveragedModel.__init__", "AveragedModel.forward",
                                  "AveragedModel.update_parameters", "update_bn", "SWALR.__init__",
                                  "SWALR.get_lr", "SWALR.state_dict", "get_ema_multi_avg_fn",
                                  "get_swa_avg_fn"],
    "torchlite.utils.data.dataloader": ["DataLoader.__init__", "DataLoader.__iter__",
                                        "DataLoader.__len__",
                                        "DataLoader.check_worker_number_rationality"],
    "torchlite.utils.data.dataset": ["Dataset.__getitem__", "Dataset.__add__", "IterableDataset.__iter__",
                                     "TensorDataset.__init__", "StackDataset.__getitems__",
                                     "ConcatDataset.cumsum", "ChainDataset.__len__", "Subset.__init__",
                                     "random_split"],
    "torchlite.utils.data.sampler": ["Sampler.__iter__", "SequentialSampler.__init__",
                                     "RandomSampler.__init__", "RandomSampler.__iter__",
                                     "SubsetRandomSampler.__len__", "WeightedRandomSampler.__init__",
                                     "BatchSampler.__init__", "BatchSampler.__iter__"],
    "torchlite.utils.data.distributed": ["DistributedSampler.__init__", "DistributedSampler.__iter__",
                                         "DistributedSampler.__len__", "DistributedSampler.set_epoch"],
}


def _namespace():
    data = importlib.import_module("torchlite.utils.data")
    ns = {name: getattr(typing, name) for name in typing.__all__}
    ns.update((name, getattr(collections.abc, name)) for name in collections.abc.__all__)
    ns.update(Tensor=torchlite.Tensor, dtype=torchlite.dtype, device=torchlite.device,
              Size=torchlite.Size, layout=torchlite.layout, memory_format=torchlite.memory_format,
              Generator=torchlite.Generator, Module=torchlite.nn.Module,
              Optimizer=torchlite.optim.Optimizer, PackedSequence=torchlite.nn.utils.rnn.PackedSequence,
              Dataset=data.Dataset, Sampler=data.Sampler)
    return ns


def _methods(cls, modname):
    """{name: function} of cls's __init__, public and special methods defined in modname (the
    one each name resolves to, along the MRO)."""
    found = {}
    for klass in cls.__mro__:
        for name, attr in vars(klass).items():
            if name in found or (name.startswith("_") and not
                                 (name.startswith("__") and name.endswith("__"))):
                continue
            fn = getattr(attr, "__func__", attr)         # staticmethod, classmethod
            if inspect.isfunction(fn):
                found[name] = fn if fn.__module__ == modname else None
    return {name: fn for name, fn in found.items() if fn is not None}


def _api(modname):
    """[(qualified name, function)] that the module must annotate."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items() if inspect.isfunction(v) and v.__module__ == modname
                 and not n.startswith("_") and getattr(torchlite, n, None) is v]
    out = []
    for name in names:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            out += [(f"{name}.{m}", fn) for m, fn in sorted(_methods(obj, modname).items())]
        elif inspect.isfunction(obj) and obj.__module__ == modname:   # not re-exported
            out.append((name, obj))
    return mod, out


def _missing(fn):
    sig = inspect.signature(fn)
    bad = [p.name for p in sig.parameters.values()
           if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")
           and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if sig.return_annotation is inspect.Signature.empty:
        bad.append("return")
    return bad


@pytest.mark.parametrize("modname", list(MODULES))
def test_public_api_is_annotated(modname):
    mod, api = _api(modname)
    assert getattr(mod, "annotations", None) is __future__.annotations, \
        f"{modname}: add `from __future__ import annotations`"
    covered = {name for name, _ in api}
    assert set(MODULES[modname]) <= covered, sorted(set(MODULES[modname]) - covered)
    ns = _namespace()
    problems = []
    for name, fn in api:
        bad = _missing(fn)
        if bad:
            problems.append(f"{name}: no annotation on {', '.join(bad)}")
            continue
        try:
            typing.get_type_hints(fn, localns=ns)
        except Exception as e:                          # NameError, TypeError, SyntaxError
            problems.append(f"{name}: annotations do not evaluate: {type(e).__name__}: {e}")
    assert not problems, f"{modname}:\n  " + "\n  ".join(problems)
