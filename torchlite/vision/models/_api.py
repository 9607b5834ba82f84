"""The weights API of torchvision.models: Weights entries (url, transforms, meta), WeightsEnum
classes per architecture (ResNet18_Weights.IMAGENET1K_V1, .DEFAULT), and the model registry
(get_model, list_models, get_model_builder, get_model_weights, get_weight)."""
import enum

__all__ = ["Weights", "WeightsEnum", "register_model", "get_model", "list_models",
           "get_model_builder", "get_model_weights", "get_weight", "handle_weights",
           "imagenet_categories"]

_CATEGORIES_FILE = "imagenet_categories.txt"
_imagenet_categories = None     # the list, read from _CATEGORIES_FILE on first use


def imagenet_categories():
    """The 1000 ImageNet-1K class names as torchvision lists them (index = class id), read
    once from the data file next to this module and cached; the one list is shared, as
    torchvision's meta["categories"] is."""
    global _imagenet_categories
    if _imagenet_categories is None:
        from importlib import resources
        text = resources.files(__package__).joinpath(_CATEGORIES_FILE).read_text(encoding="utf-8")
        names = text.splitlines()
        if len(names) != 1000:
            raise RuntimeError(f"{_CATEGORIES_FILE}: expected 1000 class names, found {len(names)}")
        _imagenet_categories = names
    return _imagenet_categories


class _Lazy:
    """A meta value computed on first read (the file behind it is not read at import time)."""

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return self.name        # pickles as the module-level constant of that name


IMAGENET_CATEGORIES = _Lazy("IMAGENET_CATEGORIES", imagenet_categories)
"""Put as meta["categories"]: reads as imagenet_categories() (loaded on the first access)."""


class _Meta(dict):
    """A Weights entry's meta: a dict whose lazy values (IMAGENET_CATEGORIES) become the real
    value the first time anything reads them, so meta["categories"] is a list."""

    def _resolve(self, key=None):
        keys = [key] if key is not None else list(dict.keys(self))
        for k in keys:
            v = dict.get(self, k)
            if isinstance(v, _Lazy):
                dict.__setitem__(self, k, v.fn())

    def __getitem__(self, key):
        self._resolve(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._resolve(key)
        return dict.get(self, key, default)

    def __iter__(self):             # makes dict(meta) and {**meta} read through __getitem__
        return dict.__iter__(self)

    def items(self):
        self._resolve()
        return dict.items(self)

    def values(self):
        self._resolve()
        return dict.values(self)

    def copy(self):
        self._resolve()
        return _Meta(self)

    def pop(self, key, *default):
        self._resolve(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key, default=None):
        self._resolve(key)
        return dict.setdefault(self, key, default)

    def popitem(self):
        self._resolve()
        return dict.popitem(self)

    def __eq__(self, other):
        self._resolve()
        if isinstance(other, _Meta):
            other._resolve()
        return dict.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __or__(self, other):
        self._resolve()
        merged = dict.__or__(self, other)
        return merged if merged is NotImplemented else _Meta(merged)

    def __repr__(self):
        self._resolve()
        return dict.__repr__(self)

    def __reduce__(self):
        self._resolve()
        return (_Meta, (dict(self),))


class Weights:
    """One set of pretrained weights: where the state dict is (url, hash-named as torchvision's
    files, so load_state_dict_from_url(check_hash=True) checks it), the transforms the model
    expects, and meta (num_params, min_size, categories, metrics, ...).  meta["categories"]
    may be given as IMAGENET_CATEGORIES: it reads as the list of the 1000 ImageNet-1K names,
    loaded on first access."""

    def __init__(self, url, transforms, meta):
        self.url, self.transforms, self.meta = url, transforms, _Meta(meta)

    def __repr__(self):
        return f"Weights(url={self.url!r})"


class WeightsEnum(enum.Enum):
    """The weights an architecture has; `DEFAULT` is the best of them.  An entry is used as
    its Weights: .url, .transforms(), .meta, .get_state_dict()."""

    @classmethod
    def verify(cls, obj):
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            name = obj.replace(cls.__name__ + ".", "")
            try:
                return cls[name]
            except KeyError:
                raise ValueError(f"Failed to find Weights {obj} in {cls.__name__}.") from None
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                        f"{type(obj).__name__}.")

    def get_state_dict(self, progress=True, check_hash=True, **kwargs):
        """The state dict, downloaded once into the hub cache (torchlite.hub)."""
        from ...hub import load_state_dict_from_url
        return load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash, **kwargs)

    def __repr__(self):
        return f"{type(self).__name__}.{self._name_}"

    def __getattr__(self, name):
        if name in ("url", "transforms", "meta"):
            return getattr(self._value_, name)
        raise AttributeError(name)


def handle_weights(weights_enum, weights, kwargs, num_classes_key="num_classes"):
    """Verify `weights` and make the model's num_classes agree with them (torchvision's rule:
    a different num_classes with pretrained weights is an error)."""
    weights = weights_enum.verify(weights)
    if weights is not None:
        categories = weights.meta.get("categories")
        n = len(categories) if categories else weights.meta.get("num_classes")
        if n is not None:
            if num_classes_key in kwargs and kwargs[num_classes_key] != n:
                raise ValueError(f"The parameter '{num_classes_key}' expected value {n} but got "
                                 f"{kwargs[num_classes_key]} instead.")
            kwargs[num_classes_key] = n
    return weights


def load_weights(model, weights, progress):
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_MODELS = {}        # name -> builder
_WEIGHTS = {}       # name -> WeightsEnum class


def _legacy_pretrained(build, weights_enum):
    """The builder, also taking torchvision's deprecated `pretrained=` (before 0.13, and in
    much code since): True is the enum's first weights (torchvision's legacy mapping, e.g.
    IMAGENET1K_V1), False is None, each with torchvision's deprecation warnings."""
    import functools
    import warnings

    @functools.wraps(build)
    def builder(*args, **kwargs):
        if "pretrained" in kwargs:
            pretrained = kwargs.pop("pretrained")
            warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be removed in "
                          "the future, please use 'weights' instead.", UserWarning, stacklevel=2)
            if kwargs.get("weights") is not None:
                raise ValueError(f"{build.__name__}: give 'weights' or the deprecated 'pretrained', "
                                 f"not both")
            if pretrained:
                first = next(iter(weights_enum))
                warnings.warn(f"Arguments other than a weight enum or `None` for 'weights' are "
                              f"deprecated since 0.13 and may be removed in the future. The current "
                              f"behavior is equivalent to passing `weights={weights_enum.__name__}."
                              f"{first.name}`. You can also use `weights={weights_enum.__name__}."
                              f"DEFAULT` to get the most up-to-date weights.", UserWarning, stacklevel=2)
                kwargs["weights"] = first
            else:
                kwargs["weights"] = None
        return build(*args, **kwargs)
    return builder


def register_model(name=None, weights=None):
    """Decorator: make a builder known to get_model/list_models under `name` (with weights,
    it also takes the deprecated `pretrained=`)."""
    def wrap(fn):
        key = name or fn.__name__
        if key in _MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        if weights is not None:
            fn = _legacy_pretrained(fn, weights)
            _WEIGHTS[key] = weights
        _MODELS[key] = fn
        return fn
    return wrap


def list_models(module=None, include=None, exclude=None):
    """The registered model names (of one module, e.g. torchlite.vision.models), sorted;
    include/exclude: fnmatch patterns."""
    import fnmatch
    names = [n for n, fn in _MODELS.items()
             if module is None or fn.__module__.startswith(module.__name__)]
    if include:
        pats = [include] if isinstance(include, str) else include
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in pats)]
    if exclude:
        pats = [exclude] if isinstance(exclude, str) else exclude
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in pats)]
    return sorted(names)


def get_model_builder(name):
    name = name.lower()
    try:
        return _MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name, **config):
    """The model `name` built with config (weights=..., num_classes=...)."""
    return get_model_builder(name)(**config)


def get_model_weights(name):
    """The WeightsEnum class of a model (by name or builder)."""
    if callable(name):
        name = next((k for k, v in _MODELS.items() if v is name), name.__name__)
    try:
        return _WEIGHTS[name.lower()]
    except KeyError:
        raise ValueError(f"The model {name} has no weights enum") from None


def get_weight(name):
    """A weights entry by its full name, e.g. 'ResNet50_Weights.IMAGENET1K_V2'."""
    try:
        enum_name, value = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    for cls in _WEIGHTS.values():
        if cls.__name__ == enum_name:
            return cls[value]
    raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")


def classification_transforms(crop_size, resize_size=256, interpolation=None):
    """A factory of torchvision's ImageClassification preset (resize, center crop, scale to
    [0, 1], normalize with ImageNet's mean and std) for a Weights entry's `transforms`;
    interpolation: an InterpolationMode name ('bicubic'), bilinear by default."""
    def make():
        from ._presets import ImageClassification
        mode = None
        if interpolation is not None:
            from ..transforms import InterpolationMode
            mode = InterpolationMode(interpolation)
        return ImageClassification(crop_size=crop_size, resize_size=resize_size, interpolation=mode)
    return make
