#!/usr/bin/env python3
"""Python's per-file cost: open + read + close of every sample of a shard.

    py_open_read.py ROOT [--threads T] [--processes] [--buffering default|0]

ROOT is a shard directory with a `_samples.tsv` manifest (a deltafs shard, the
FUSE floor's mount, or a tmpfs copy of a shard): its first column names the
files, read before the clock starts, so the figure is the reading alone. Each
file is read the way a Python loader reads a sample:

    default    open(path, "rb").read(): a BufferedReader, and CPython asks
               isatty() (an ioctl(TCGETS)) of every file it opens so
               buffered (torchvision's pil_loader, most loaders)
    0          open(path, "rb", buffering=0).read(): a raw FileIO, no isatty

T threads (the GIL is released in open and read, held between) or, with
--processes, T forked processes, each reading every T-th file; the clock runs
from releasing them to the last one's end. Prints one JSON line: files, bytes,
seconds, files_per_s.
"""

import argparse
import json
import multiprocessing as mp
import os
import threading
import time


def manifest(root):
    files = []
    with open(os.path.join(root, "_samples.tsv"), encoding="utf-8") as f:
        for line in f:
            rel = line.split("\t", 1)[0].rstrip("\n")
            if rel and not rel.startswith("#"):
                files.append(os.path.join(root, rel))
    return files


def read_all(files, buffered):
    n = 0
    if buffered:
        for p in files:
            with open(p, "rb") as f:
                n += len(f.read())
    else:
        for p in files:
            with open(p, "rb", buffering=0) as f:
                n += len(f.read())
    return n


def run_threads(parts, buffered):
    total = [0] * len(parts)
    errors = []
    go = threading.Event()

    def work(i):
        go.wait()
        try:
            total[i] = read_all(parts[i], buffered)
        except BaseException as e:  # report it, do not print a partial figure
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(parts))]
    for t in threads:
        t.start()
    start = time.perf_counter()
    go.set()
    for t in threads:
        t.join()
    secs = time.perf_counter() - start
    if errors:
        raise errors[0]
    return sum(total), secs


def _proc(part, buffered, go, out):
    go.wait()
    try:
        out.put(read_all(part, buffered))
    except BaseException as e:
        out.put(repr(e))


def run_processes(parts, buffered):
    ctx = mp.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_proc, args=(p, buffered, go, out)) for p in parts]
    for p in procs:
        p.start()
    time.sleep(0.2)  # let every child reach go.wait()
    start = time.perf_counter()
    go.set()
    results = [out.get() for _ in procs]
    secs = time.perf_counter() - start
    for p in procs:
        p.join()
    for r in results:
        if not isinstance(r, int):
            raise RuntimeError("reader failed: " + r)
    return sum(results), secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--processes", action="store_true", help="T processes instead of T threads")
    ap.add_argument("--buffering", choices=["default", "0"], default="default")
    a = ap.parse_args()
    files = manifest(a.root)
    if not files:
        raise SystemExit(f"{a.root}: no files in _samples.tsv")
    parts = [files[i :: a.threads] for i in range(a.threads)]
    buffered = a.buffering == "default"
    run = run_processes if a.processes else run_threads
    nbytes, secs = run(parts, buffered)
    print(json.dumps({"files": len(files), "bytes": nbytes, "seconds": secs, "files_per_s": len(files) / secs}))


if __name__ == "__main__":
    main()
