#!/usr/bin/env python3
"""Time ImageFolder epochs: imagefolder_epochs.py ROOT [--epochs 2] [--workers 2] [--batch 64] [--shuffle]

Loads ROOT with torchvision's unmodified ImageFolder through a DataLoader
(ToTensor, batch 64 unless --batch, in order unless --shuffle) and prints one
JSON line: samples and seconds per epoch.
"""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--shuffle", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    ds = datasets.ImageFolder(a.root, transform=transforms.ToTensor())
    dl = DataLoader(ds, batch_size=a.batch, shuffle=a.shuffle, num_workers=a.workers)
    secs = []
    for _ in range(a.epochs):
        start, n = time.perf_counter(), 0
        for x, _y in dl:
            n += len(x)
        secs.append(time.perf_counter() - start)
    print(json.dumps({"samples": n, "seconds": secs}))


if __name__ == "__main__":
    main()
