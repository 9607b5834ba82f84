"""DataLoader benchmark cases (issue 5's target): a TensorDataset of 60,000 x 784 float32
with int64 labels, batch 64, shuffled, one full epoch per call (worker start-up included,
as a user's epoch pays it), time per batch."""
import numpy as np

from _cases_core import Case, NotImplementedOp, Target

T_LOADER = Target(0.8, "batches/s >= 0.8x torch")
N, D, BATCH = 60_000, 784, 64


def _loader_build(workers):
    def build(lib, xs):
        data = lib.fn("utils.data")
        if not hasattr(data, "DataLoader"):
            raise NotImplementedOp("utils.data.DataLoader")
        ds = data.TensorDataset(lib.array(xs[0]), lib.mod.from_numpy(xs[1]))
        loader = data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers)

        def epoch():
            n = 0
            for xb, yb in loader:
                n += 1
            return n
        return epoch
    return build


def _inputs(rng):
    return [rng.standard_normal((N, D), dtype=np.float32), rng.integers(0, 10, N).astype(np.int64)]


CASES = [
    Case(f"dataloader_w{w}", "us/op", -(-N // BATCH), _inputs, _loader_build(w),
         f"DataLoader over TensorDataset(60000x784 float32, labels), batch 64, shuffle, "
         f"num_workers={w}: one epoch per call, time per batch", T_LOADER, check=False,
         tags=("data",))
    for w in (0, 2)
]
