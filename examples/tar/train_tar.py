#!/usr/bin/env python3
"""Train the MNIST CNN by streaming a shard's tar view from a deltafs mount.

Every shard of a version is also one tar archive, MOUNT/version/N/shard/K.tar,
in the WebDataset layout: for each sample, in shard order, <key>.png (the
sample file, as in shard/K/) then <key>.cls (its class folder's name). A
loader that reads the tar front to back makes a few large reads instead of
an open, a read and a close per sample: use it for small samples (tabular
rows, tokens, MNIST-sized images), where the per-file cost decides the epoch.

    /usr/bin/python3 examples/tar/train_tar.py MOUNT/latest/shard/0.tar --epochs 2

With torch.distributed, one tar per rank (rank r reads shard r of a version
rank 0 pins and broadcasts); mount with --shards WORLD_SIZE:

    /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \
        examples/tar/train_tar.py --mount MOUNT --epochs 1

The stream is shuffled through a buffer of --shuffle samples (WebDataset's
way: a tar is read in order, not at random). One DataLoader worker reads the
stream (more would each read the whole archive). Mount with
`--image 28x28 --class-column label` for MNIST; a class is read as an
integer (the label column's value).

--max-steps N stops every epoch after N batches (a quick smoke run).
"""
import argparse
import io
import os
import random
import sys
import tarfile
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, IterableDataset
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mnist"))
from train import Net, accuracy, check_mount, train_epoch  # noqa: E402

TF = transforms.Compose([
    transforms.Grayscale(num_output_channels=1),
    transforms.ToTensor(),
    transforms.Normalize((0.1307,), (0.3081,)),
])


def tar_groups(path):
    """Yields (key, {extension: bytes}) for each sample of a WebDataset tar,
    streaming it front to back."""
    with open(path, "rb", buffering=1 << 20) as f, tarfile.open(fileobj=f, mode="r|") as tf:
        key, group = None, {}
        for m in tf:
            if not m.isfile():
                continue
            k, _, ext = m.name.partition(".")  # keys hold no dots
            if k != key and group:
                yield key, group
                group = {}
            key = k
            group[ext] = tf.extractfile(m).read()
        if group:
            yield key, group


class TarSamples(IterableDataset):
    """(image tensor, class) pairs from one shard's tar, shuffled through a
    buffer of `shuffle` samples (0: in shard order)."""

    def __init__(self, path, shuffle=0, seed=0):
        self.path, self.shuffle, self.seed, self.epoch = path, shuffle, seed, 0

    def decode(self, key, group):
        image = next(v for e, v in group.items() if e in ("png", "jpg", "jpeg", "pgm", "bmp"))
        x = TF(Image.open(io.BytesIO(image)))
        return x, int(group["cls"])

    def __iter__(self):
        rng = random.Random(self.seed + self.epoch)
        self.epoch += 1
        buf = []
        for key, group in tar_groups(self.path):
            sample = self.decode(key, group)
            if self.shuffle <= 1:
                yield sample
                continue
            if len(buf) < self.shuffle:
                buf.append(sample)
                continue
            i = rng.randrange(len(buf))
            buf[i], sample = sample, buf[i]
            yield sample
        rng.shuffle(buf)
        yield from buf


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tar", nargs="?", help="a shard's tar view, e.g. MOUNT/latest/shard/0.tar")
    p.add_argument("--mount", help="with torch.distributed: the mount point; rank r reads shard r")
    p.add_argument("--version", help="with --mount: the table version (default: latest, pinned by rank 0)")
    p.add_argument("--val", help="a tar view to measure accuracy on (default: the training tar)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--shuffle", type=int, default=1000, help="shuffle buffer, in samples")
    p.add_argument("--workers", type=int, default=1, choices=(0, 1))
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop each epoch after this many batches, and measure accuracy on as many")
    args = p.parse_args()
    if (args.tar is None) == (args.mount is None):
        p.error("give a tar view, or --mount under torch.distributed")

    rank, world, dist = 0, 1, None
    if args.mount:
        import torch.distributed as dist
        check_mount(args.mount, args.version, int(os.environ.get("WORLD_SIZE", "1")), os.path.basename(sys.argv[0]))
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        version = [args.version]
        if rank == 0 and version[0] is None:
            version[0] = os.path.basename(os.readlink(os.path.join(args.mount, "latest")))
        dist.broadcast_object_list(version, src=0)
        args.tar = os.path.join(args.mount, "version", version[0], "shard", f"{rank}.tar")
    # Pin the version: resolve MOUNT/latest (and any other link) once.
    args.tar = os.path.realpath(args.tar)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    ds = TarSamples(args.tar, shuffle=args.shuffle)
    train = DataLoader(ds, batch_size=args.batch_size, num_workers=args.workers)
    val_ds = TarSamples(os.path.realpath(args.val)) if args.val else TarSamples(args.tar)
    val = DataLoader(val_ds, batch_size=256, num_workers=args.workers)
    print(f"rank {rank}/{world}: streaming {args.tar}", flush=True)

    model = Net(10)
    if dist is not None:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
    opt = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        ctx = model.join() if dist is not None else _nothing()
        with ctx:
            log = (lambda i, seen, loss: print(f"epoch {epoch} [{seen}] loss {loss:.4f}", flush=True)) if rank == 0 else None
            seen = train_epoch(model, opt, train, args.max_steps, log)
        sched.step()
        rate = seen / (time.time() - start)
        acc = accuracy(model.module if dist is not None else model, val, args.max_steps)
        if dist is not None:
            t = torch.tensor([acc])
            dist.all_reduce(t)
            acc = t.item() / world
        if rank == 0:
            print(f"epoch {epoch}: accuracy {acc:.4f}, {rate:.0f} samples/s", flush=True)
    if dist is not None:
        dist.destroy_process_group()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main()
