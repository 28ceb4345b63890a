#!/usr/bin/env python3
"""Write an ImageFolder tree of JPEGs: make_jpegs.py DIR N [--classes 10]

N images of 224x224 RGB noise at quality 92 without chroma subsampling
(about 100 KB each, what a photo of ImageNet's size weighs), in DIR/<class>/<i>.jpg,
the same bytes for the same N on every run (seeded). Prints one JSON line:
files and bytes.
"""
import argparse
import json
import os

import numpy as np
from PIL import Image


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("n", type=int)
    p.add_argument("--classes", type=int, default=10)
    a = p.parse_args()
    total = 0
    for i in range(a.n):
        rng = np.random.default_rng(i)
        d = os.path.join(a.dir, "c%02d" % (i % a.classes))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "%06d.jpg" % i)
        Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(path, "JPEG", quality=92, subsampling=0)
        total += os.path.getsize(path)
    print(json.dumps({"files": a.n, "bytes": total}))


if __name__ == "__main__":
    main()
