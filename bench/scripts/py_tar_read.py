#!/usr/bin/env python3
"""Python's streaming read of a tar view, as WebDataset-style loaders read it.

    py_tar_read.py TAR

Streams TAR front to back with tarfile's stream mode ("r|", no seeking) and
reads every member's bytes, as examples/tar/train_tar.py does. Prints one
JSON line: members, bytes (of the members' contents), seconds.
"""

import json
import sys
import tarfile
import time


def main():
    path = sys.argv[1]
    members = 0
    nbytes = 0
    start = time.perf_counter()
    with open(path, "rb") as raw, tarfile.open(fileobj=raw, mode="r|") as tf:
        for m in tf:
            if not m.isfile():
                continue
            f = tf.extractfile(m)
            nbytes += len(f.read())
            members += 1
    secs = time.perf_counter() - start
    print(json.dumps({"members": members, "bytes": nbytes, "seconds": secs}))


if __name__ == "__main__":
    main()
