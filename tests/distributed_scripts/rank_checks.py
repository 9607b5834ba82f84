"""Checks the scripts under mpiexec share (imported from the script's own folder)."""
import numpy as np

import torchlite.distributed as dist


def same_on_every_rank(name, arrays):
    """Raise unless every rank holds exactly these arrays (NumPy), compared with rank 0's."""
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, arrays)
    for r in range(1, len(everyone)):
        for x, y in zip(everyone[0], everyone[r]):
            if not np.array_equal(x, y):
                raise AssertionError(f"{name}: rank {r} differs from rank 0")
