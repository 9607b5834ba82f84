"""nn.SyncBatchNorm in one process (no process group, or a group of one): BatchNorm exactly;
convert_sync_batchnorm keeps the parameters, buffers and mode.  The several-rank behaviour is
checked under mpiexec (tests/distributed_scripts/sync_batchnorm.py, run by test_distributed)."""
import numpy as np
import pytest

import torchlite as tl
from torchlite import nn


def test_without_a_process_group_it_is_batch_norm():
    tl.manual_seed(0)
    ref = nn.BatchNorm2d(3)
    sync = nn.SyncBatchNorm(3)
    sync.load_state_dict(ref.state_dict())
    x = tl.randn(4, 3, 5, 5)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ref(xa), sync(xb)
    np.testing.assert_allclose(yb.detach().numpy(), ya.detach().numpy(), rtol=1e-6)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    np.testing.assert_allclose(xb.grad.numpy(), xa.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sync.running_var.numpy(), ref.running_var.numpy(), rtol=1e-6)
    assert sync.num_batches_tracked.item() == 1


def test_convert_sync_batchnorm_keeps_state_and_mode():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Sequential(nn.BatchNorm1d(4)))
    model[1].running_mean.fill_(0.5)
    model.eval()
    weight = model[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and type(model[1]) is nn.SyncBatchNorm and type(model[2][0]) is nn.SyncBatchNorm
    assert model[1].weight is weight and not model[1].training
    np.testing.assert_array_equal(model[1].running_mean.numpy(), [0.5, 0.5])
    bn = nn.BatchNorm1d(3)
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(bn)) is nn.SyncBatchNorm


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="expected at least 2D input"):
        nn.SyncBatchNorm(3)(tl.randn(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(tl.randn(2, 0))


def test_against_pytorch_in_one_process():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((6, 3, 4)).astype(np.float32)
    ours, theirs = nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    assert repr(ours) == repr(theirs)
    theirs.eval(), ours.eval()          # PyTorch's training mode needs a process group on a GPU
    np.testing.assert_allclose(ours(tl.tensor(x)).detach().numpy(), theirs(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-6)
