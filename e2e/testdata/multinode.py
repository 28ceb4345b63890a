#!/usr/bin/env python3
"""One rank of a simulated multi-node DDP run over deltafs mounts.

Every node mounts the same table; this rank reads only its shard,
NODE_MOUNT/version/N/shard/RANK, through torchvision's ImageFolder and a
DataLoader, for --epochs epochs. Rank 0 pins N (latest at start) and
broadcasts it. After each epoch the ranks gather what they read, and rank 0
checks that the union is every sample of the version exactly once and
prints one line per epoch; each rank prints its first-sample latency.

    python -m torch.distributed.run --nnodes 2 --nproc_per_node 2 \
        --node_rank K --master_addr 127.0.0.1 --master_port P \
        multinode.py NODE_MOUNT --epochs 2 [--expect 10000] [--pause FILE]

--pause FILE: after the first batch of epoch 1, each rank waits until FILE
exists (the test commits a new version, or kills a mount, meanwhile).
"""
import argparse
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torchvision import datasets


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mount")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--expect", type=int, default=0, help="samples the version holds")
    p.add_argument("--pause", default="")
    p.add_argument("--timeout", type=float, default=120, help="seconds a collective may wait for the other ranks")
    args = p.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    version = [None]
    if rank == 0:
        version[0] = os.path.basename(os.readlink(os.path.join(args.mount, "latest")))
    dist.broadcast_object_list(version, src=0)
    root = os.path.join(args.mount, "version", version[0], "shard", str(rank))
    if not os.path.isdir(root):
        sys.exit(f"rank {rank}: no shard directory {root}: mount with --shards {world} or more")

    t0 = time.monotonic()
    ds = datasets.ImageFolder(root, loader=lambda path: open(path, "rb").read())
    for epoch in range(1, args.epochs + 1):
        seen = []
        loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=0, collate_fn=lambda b: b)
        for i, batch in enumerate(loader):
            if epoch == 1 and i == 0:
                print(f"rank {rank}: first batch after {time.monotonic() - t0:.3f} s", flush=True)
                if args.pause:
                    while not os.path.exists(args.pause):
                        time.sleep(0.05)
            for data, label in batch:
                seen.append((ds.classes[label], hashlib.sha256(data).hexdigest()))
        names = [os.path.relpath(path, root) for path, _ in ds.samples]
        everyone = [None] * world
        dist.all_gather_object(everyone, (rank, names, seen))
        if rank == 0:
            union = [n for _, ns, _ in everyone for n in ns]
            reads = sum(len(s) for _, _, s in everyone)
            ok = len(union) == len(set(union)) and reads == len(union) and (args.expect == 0 or len(union) == args.expect)
            print(f"epoch {epoch}: version {version[0]}, {len(union)} samples read by {world} ranks, "
                  f"{len(set(union))} distinct, {'exactly once' if ok else 'NOT EXACTLY ONCE'}", flush=True)
            if not ok:
                sys.exit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
