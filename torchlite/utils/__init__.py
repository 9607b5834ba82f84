"""torchlite.utils: utilities (torch.utils): data loading in torchlite.utils.data."""
from . import data
