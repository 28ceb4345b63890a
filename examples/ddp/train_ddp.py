#!/usr/bin/env python3
"""Distributed data-parallel training over a deltafs mount: one shard per rank.

Mount the table on every node with as many shards as there are ranks in all
(`deltafs mount --shards WORLD_SIZE --image 28x28 --class-column label ...`);
every shard holds the same number of samples (within one), so ranks step in
lockstep. Rank 0 pins the table version once and broadcasts it, so all ranks
train on the same snapshot even while writers keep committing.

    /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \
        examples/ddp/train_ddp.py MOUNT --epochs 1

(Debian's torch 1.13 on Python 3.11 needs `--redirects 1 --tee 1` after
--nproc_per_node: its default --redirects 0 fails to parse there.)
--max-steps N stops every epoch after N batches (a quick smoke run).

On several machines, run the same command on each node with --nnodes,
--node_rank and --master_addr; every node mounts the same table (on S3, say)
and rank r reads MOUNT/version/N/shard/r.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mnist"))
from train import Net, accuracy, check_mount, loader, train_epoch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mount", help="the deltafs mount point")
    p.add_argument("--version", help="table version (default: latest, pinned by rank 0)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop each epoch after this many batches, and measure accuracy on as many")
    args = p.parse_args()

    # Before joining the group, so that every rank exits with the same
    # line rather than waiting for one that has: the mount point, with a
    # shard for every rank (torch.distributed.run sets WORLD_SIZE).
    check_mount(args.mount, args.version, int(os.environ.get("WORLD_SIZE", "1")), os.path.basename(sys.argv[0]))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    version = [args.version]
    if rank == 0 and version[0] is None:
        version[0] = os.path.basename(os.readlink(os.path.join(args.mount, "latest")))
    dist.broadcast_object_list(version, src=0)
    root = os.path.join(args.mount, "version", version[0], "shard", str(rank))
    ds, train = loader(root, args.batch_size, args.workers, shuffle=True)
    print(f"rank {rank}/{world}: version {version[0]}, {len(ds)} samples from {root}", flush=True)

    model = DDP(Net(len(ds.classes)))
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        # Shards differ by at most one sample, so a rank may have one batch
        # fewer; join() lets the others finish without hanging.
        with model.join():
            log = (lambda i, seen, loss: print(f"epoch {epoch} batch {i} loss {loss:.4f}", flush=True)) if rank == 0 else None
            train_epoch(model, opt, train, args.max_steps, log)
        acc = torch.tensor([accuracy(model.module, train, args.max_steps)])
        dist.all_reduce(acc)
        if rank == 0:
            print(f"epoch {epoch}: mean accuracy over ranks {acc.item() / world:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
