"""The nn layers as Modules, one file per family (each lists its classes in ``__all__``)."""
from .module import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .conv3d import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .pooling3d import *  # noqa: F401,F403
from .fractional_pooling import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .shuffle import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .sync_batchnorm import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
# PyTorch's module names for families kept in other files here (nn.modules.batchnorm._BatchNorm)
from . import batchnorm, channelshuffle, instancenorm, pixelshuffle  # noqa: F401,E402

# the layer classes and functions, not the family modules (nn.modules.utils must not pass for
# nn.utils when torchlite.nn star-imports this package)
import types as _types  # noqa: E402
__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and not isinstance(_v, _types.ModuleType)]
