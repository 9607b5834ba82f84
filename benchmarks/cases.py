"""Every benchmark case, in the order RESULTS.md lists them: the array layer and autograd
(_cases_core.py), nn/optim training steps (_cases_nn.py), the DataLoader (_cases_data.py),
whole example scripts (_cases_examples.py)."""
from _cases_core import CASES as _CORE
from _cases_data import CASES as _DATA
from _cases_examples import CASES as _EXAMPLES
from _cases_nn import CASES as _NN

CASES = _CORE + _NN + _DATA + _EXAMPLES
