import os

import numpy as np
import pytest

import torchlite


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Run a test with the OpenMP thread count at 1 and at 2."""
    old = torchlite.get_num_threads()
    torchlite.set_num_threads(request.param)
    yield request.param
    torchlite.set_num_threads(old)


def torch_or_skip():
    return pytest.importorskip("torch")
