"""Data-parallel training with DistributedDataParallel: the quickstart's MLP on scikit-learn's
handwritten digits, on several processes.

    python -m torchlite.distributed.run --nproc-per-node 2 examples/ddp_train.py --epochs 5
    # or: mpiexec -n 2 python examples/ddp_train.py

Each rank reads its own shard of the training set (DistributedSampler), runs forward and
backward on it, and DistributedDataParallel averages the gradients across the ranks, so every
rank takes the same optimizer step and the replicas stay identical.  The test set is split
across the ranks too; the correct counts are summed with all_reduce, so every rank prints the
same final accuracy.  Run with one process it is plain (non-distributed) training.
"""
import argparse
import os
import sys
import time

import torchlite as torch
import torchlite.distributed as dist
from torchlite import nn
from torchlite.nn.parallel import DistributedDataParallel as DDP
from torchlite.utils.data import DataLoader, DistributedSampler, Subset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quickstart import NeuralNetwork, digits_datasets  # noqa: E402


def parse_args():
    """The command line: epochs, global batch size, learning rate, seed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch (split across ranks)")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    """Train on this rank's shard, evaluate on the whole test set (split across the ranks)."""
    args = parse_args()
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    train_set, test_set = digits_datasets(seed=args.seed)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=max(1, args.batch_size // world), sampler=sampler)
    test_shard = Subset(test_set, list(range(rank, len(test_set), world)))
    test_loader = DataLoader(test_shard, batch_size=256)
    print(f"rank {rank}/{world}: a shard of {len(sampler)} of the {len(train_set)} training images, "
          f"{len(test_shard)} of the {len(test_set)} test images", flush=True)

    model = DDP(NeuralNetwork())          # rank 0's initial weights go to every rank
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)          # a new shuffle each epoch, the same on every rank
        model.train()
        total = torch.zeros(2, dtype=torch.float64)     # (sum of losses, samples) on this rank
        for X, y in loader:
            loss = loss_fn(model(X), y)
            optimizer.zero_grad()
            loss.backward()               # the gradients are averaged across ranks here
            optimizer.step()
            total += torch.tensor([loss.item() * len(y), len(y)], dtype=torch.float64)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1:3d}  train loss {(total[0] / total[1]).item():.4f}", flush=True)
    elapsed = time.perf_counter() - start

    model.eval()
    counts = torch.zeros(2, dtype=torch.int64)          # (correct, seen) on this rank's test shard
    with torch.no_grad():
        for X, y in test_loader:
            counts += torch.tensor([(model(X).argmax(1) == y).sum().item(), len(y)])
    dist.all_reduce(counts)
    accuracy = counts[0].item() / counts[1].item()

    checksum = sum(p.double().sum().item() for p in model.parameters())
    sums = [None] * world
    dist.all_gather_object(sums, checksum)
    print(f"rank {rank}: final test accuracy {100 * accuracy:.1f}% after {args.epochs} epochs in "
          f"{elapsed:.2f} s; replicas identical: {len(set(sums)) == 1}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
