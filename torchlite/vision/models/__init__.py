"""torchlite.vision.models: torchvision's architectures with its constructors, module names and
state_dict keys (a state_dict saved by torchvision loads with strict=True), the weights API
(ResNet18_Weights.DEFAULT, .transforms(), .meta; downloaded through torchlite.hub into its
cache), and get_model / list_models."""
from ._api import Weights, WeightsEnum, get_model, get_model_builder, get_model_weights, get_weight
from ._api import list_models
from .resnet import *  # noqa: F401,F403
from .resnet import __all__ as _resnet_all
from .vgg import *  # noqa: F401,F403
from .vgg import __all__ as _vgg_all
from .mobilenet import *  # noqa: F401,F403
from .mobilenet import __all__ as _mobilenet_all
from .squeezenet import *  # noqa: F401,F403
from .squeezenet import __all__ as _squeezenet_all
from .densenet import *  # noqa: F401,F403
from .densenet import __all__ as _densenet_all
from .efficientnet import *  # noqa: F401,F403
from .efficientnet import __all__ as _efficientnet_all
from .vision_transformer import *  # noqa: F401,F403
from .vision_transformer import __all__ as _vit_all

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models"] + _resnet_all + _vgg_all + _mobilenet_all + _squeezenet_all \
    + _densenet_all + _efficientnet_all + _vit_all
