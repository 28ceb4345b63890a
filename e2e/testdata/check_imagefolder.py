#!/usr/bin/env python3
"""Check a deltafs mount against its source digits with torchvision.

    check_imagefolder.py SOURCE.npy[.gz] ROOT [ROOT ...]

Each ROOT is an ImageFolder root (a shard directory of a mount made with
--image HxW --class-column label). Loads every root with the unmodified
torchvision ImageFolder through a DataLoader with two workers and checks that
the union holds every source record exactly once, that every root has the
same ten classes (so class_to_idx agrees across shards), that the class index
the DataLoader yields equals the label itself (int(target) == label), and that every decoded image equals the source pixels.
Prints one JSON line with the counts; exits non-zero on any mismatch.
"""
import gzip
import json
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def load_source(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        rec = np.load(f)
    return {int(i): (int(l), p) for i, l, p in zip(rec["id"], rec["label"], rec["pixels"])}


def main():
    src = load_source(sys.argv[1])
    seen = {}
    per_class = [0] * 10
    for root in sys.argv[2:]:
        ds = datasets.ImageFolder(root, transform=transforms.ToTensor())
        classes = [int(c) for c in ds.classes]
        assert classes == sorted(classes), f"{root}: classes not in numeric order: {ds.classes}"
        assert classes == list(range(10)), f"{root}: classes {ds.classes}, want the ten digits"
        assert all(ds.class_to_idx[c] == int(c) for c in ds.classes), f"{root}: class_to_idx {ds.class_to_idx}"
        dl = DataLoader(ds, batch_size=100, shuffle=False, num_workers=2)
        k = 0
        for images, targets in dl:
            for img, target in zip(images, targets):
                path, _ = ds.samples[k]
                k += 1
                sid = int(os.path.splitext(os.path.basename(path))[0])
                assert sid not in seen, f"sample {sid} appears twice ({seen[sid]}, {path})"
                seen[sid] = path
                label, pixels = src[sid]
                got_label = classes[int(target)]
                assert got_label == label, f"{path}: class {got_label}, source label {label}"
                assert int(target) == label, f"{path}: target {int(target)}, source label {label}"
                assert img.shape == (3, 28, 28), f"{path}: shape {tuple(img.shape)}"
                want = torch.from_numpy(pixels.reshape(28, 28).astype(np.float32) / 255.0)
                for c in range(3):
                    if not torch.equal(img[c], want):
                        raise AssertionError(f"{path}: channel {c} differs from source pixels")
                per_class[label] += 1
    missing = set(src) - set(seen)
    assert not missing, f"{len(missing)} source records have no sample file, e.g. {sorted(missing)[:5]}"
    print(json.dumps({"samples": len(seen), "per_class": per_class}))


if __name__ == "__main__":
    main()
