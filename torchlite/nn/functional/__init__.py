"""torchlite.nn.functional: the stateless form of every layer (``import torchlite.nn.functional
as F``).  One file per family; each lists its public functions in ``__all__``."""
from .activation import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .convolution3d import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .pooling3d import *  # noqa: F401,F403
from .fractional_pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .spatial_transform import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .linear_cross_entropy import linear_cross_entropy  # noqa: F401
from .ctc import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .aten import conv_tbc, native_channel_shuffle  # noqa: F401,E402
