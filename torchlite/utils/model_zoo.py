"""torch.utils.model_zoo: the old name of the hub's weight download (torchlite/hub.py)."""
from ..hub import load_state_dict_from_url

load_url = load_state_dict_from_url

__all__ = ["load_url"]
