#!/usr/bin/env python3
"""Train a small CNN on MNIST digits read straight from a deltafs mount.

The data loader is torchvision's unmodified ImageFolder over a shard of a
table version, e.g. MOUNT/latest/shard/0, mounted with
`--image 28x28 --class-column label` so every row is a PNG in a class folder.

    /usr/bin/python3 examples/mnist/train.py MOUNT/latest/shard/0 --epochs 2

A path through MOUNT/latest is resolved once, at start: `latest` moves
when the table gets a new commit, and an ImageFolder built from one version
must keep reading that version (its file list would otherwise name samples
the new version may not have).

--max-steps N stops every epoch after N batches (a quick smoke run).

Prints the loss every few batches and the accuracy after every epoch (on
--val DIR when given, e.g. another table version or shard, else on the
training data).
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    """The classic two-convolution MNIST network (PyTorch's MNIST example)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def _kind(path):
    """What a deltafs path is, from its entries: "mount" (latest, version/),
    "version" (shard/, _commit.json), "shards" (0, 1, ... and 0.tar, ...:
    a version's shard/), else None (a shard, or not deltafs's)."""
    try:
        names = set(os.listdir(path))
    except OSError:
        return None
    if {"latest", "version"} <= names:
        return "mount"
    if {"shard", "_commit.json"} <= names:
        return "version"
    # Every shard K is listed twice, K/ and K.tar: a tree of class
    # folders 0..9 (an ImageFolder of digits) is not a shard list.
    dirs = {n for n in names if n.isdigit()}
    if dirs and names == dirs | {n + ".tar" for n in dirs}:
        return "shards"
    return None


def shard_dir(path, prog):
    """Returns path, resolved (a MOUNT/latest link pinned to its version),
    when it is one shard of a mount, e.g. MOUNT/latest/shard/0. Exits with
    one line saying what to pass when it is the mount point, a version or
    the shard list: ImageFolder would take their entries (shard numbers,
    "shard") for classes."""
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        sys.exit(f"{prog}: {path}: not a directory; pass one shard of a deltafs mount, e.g. MOUNT/latest/shard/0")
    what, shard = {
        "mount": ("the mount point", "latest/shard/0"),
        "version": ("a table version", "shard/0"),
        "shards": ("the list of shards", "0"),
    }.get(_kind(real), (None, None))
    if what:
        sys.exit(f"{prog}: {path} is {what}, not a shard: pass one shard, "
                 f"e.g. {os.path.join(path, shard)} (ImageFolder would read its entries as classes)")
    return real


def check_mount(mount, version, world, prog):
    """Exits with one line saying what to pass unless mount is a deltafs
    mount point whose versions have at least world shards (one per rank);
    version is a version number, or None for the latest. Returns the
    number of shards."""
    kind = _kind(os.path.realpath(mount))
    if kind != "mount":
        sys.exit(f"{prog}: {mount} is not a deltafs mount point (no latest and version/ in it): "
                 "pass the directory given to `deltafs mount`, e.g. /mnt/mnist")
    version = version if version is not None else os.path.basename(os.readlink(os.path.join(mount, "latest")))
    shards = os.path.join(mount, "version", str(version), "shard")
    try:
        n = sum(1 for e in os.listdir(shards) if e.isdigit())
    except OSError as e:
        sys.exit(f"{prog}: {shards}: {e.strerror}")
    if n < world:
        sys.exit(f"{prog}: {mount} has {n} shard{'s' if n != 1 else ''} but the job has {world} ranks: "
                 f"mount it with --shards {world} (one shard per rank), or run {n} rank{'s' if n != 1 else ''}")
    if n > world:
        print(f"{prog}: warning: {mount} has {n} shards and the job {world} ranks: "
              f"shards {world}..{n - 1} are not trained on (mount with --shards {world})", file=sys.stderr)
    return n


def loader(root, batch_size, workers, shuffle):
    tf = transforms.Compose([
        transforms.Grayscale(num_output_channels=1),  # ImageFolder opens as RGB
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,)),
    ])
    ds = datasets.ImageFolder(root, transform=tf)
    return ds, DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                          num_workers=workers, persistent_workers=workers > 0)


def accuracy(model, dl, max_batches=None):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for i, (x, y) in enumerate(dl):
            if max_batches is not None and i >= max_batches:
                break
            right += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return right / max(total, 1)


def train_epoch(model, opt, dl, max_steps=None, log=None):
    """Trains model for one epoch of dl (at most max_steps batches) with
    the negative log-likelihood loss, calling log(batch, samples seen, loss)
    every 50 batches; returns the samples seen. The DDP and tar examples
    share it."""
    seen = 0
    for i, (x, y) in enumerate(dl):
        if max_steps is not None and i >= max_steps:
            break
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        seen += len(y)
        if log is not None and i % 50 == 0:
            log(i, seen, loss.item())
    return seen


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="an ImageFolder root, e.g. MOUNT/latest/shard/0")
    p.add_argument("--val", help="ImageFolder root to measure accuracy on")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop each epoch after this many batches, and measure accuracy on as many (a quick smoke run)")
    args = p.parse_args()

    # Pin the version: resolve MOUNT/latest (and any other link) once;
    # refuse a path one level too high (ImageFolder would train on shard
    # numbers as classes).
    prog = os.path.basename(sys.argv[0])
    args.data = shard_dir(args.data, prog)
    if args.val:
        args.val = shard_dir(args.val, prog)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    ds, train = loader(args.data, args.batch_size, args.workers, shuffle=True)
    val = loader(args.val, 256, args.workers, False)[1] if args.val else train
    print(f"{len(ds)} samples in {len(ds.classes)} classes from {args.data}")

    model = Net(len(ds.classes))
    opt = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        seen = train_epoch(model, opt, train, args.max_steps, lambda i, seen, loss: print(
            f"epoch {epoch} [{seen}/{len(ds)}] loss {loss:.4f}", flush=True))
        sched.step()
        rate = seen / (time.time() - start)
        acc = accuracy(model, val, args.max_steps)
        print(f"epoch {epoch}: accuracy {acc:.4f}, {rate:.0f} samples/s", flush=True)


if __name__ == "__main__":
    main()
