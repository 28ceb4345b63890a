#!/usr/bin/env python3
"""Load a deltafs shard's samples into tensors straight from the disk cache.

A deltafs shard directory holds `_extents.tsv`: for every sample, the cache
file and byte range that hold its bytes (see gds/doc.go, "Manifest format").
With RAPIDS kvikio and a GPU, each sample is read by cuFile (GPUDirect
Storage) from the cache file into a CUDA tensor, bypassing FUSE and host
memory. Without them, it is read with os.pread into a CPU tensor, then
copied to the GPU if one was asked for. The bytes are the same either way.

Reading `_extents.tsv` makes deltafs write every sample of the shard to its
disk cache (it is read with O_DIRECT, so each read reaches deltafs). A
sample whose cache file has since vanished or ends early (evicted) is read
through the mount instead: the sample file next to the manifest.

    /usr/bin/python3 examples/gds/loader.py MOUNT/latest/shard/0/_extents.tsv \\
        [--device cuda|cpu] [--batch N] [--limit N] [--sha256]

prints how many samples and bytes it read, by which path, how fast, and how
many had to be read through the mount;
--sha256 also prints each sample's SHA-256 and name (escaped as in the
manifest), tab-separated.
"""
import argparse
import hashlib
import os
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Tuple

import torch

try:  # RAPIDS kvikio: Python bindings for cuFile.
    import kvikio
except ImportError:  # no kvikio: POSIX reads
    kvikio = None

MANIFEST_NAME = "_extents.tsv"
HEADER = "sample\tpath\toffset\tlength"
ALIGNMENT = 4096
_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(field: str) -> str:
    """Reverse the manifest's escaping of backslash, tab, newline and CR."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        c = field[i]
        if c == "\\":
            if i + 1 == len(field) or field[i + 1] not in _ESCAPES:
                raise ValueError("bad escape in %r" % field)
            out.append(_ESCAPES[field[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def escape(field: str) -> str:
    """The manifest's escaping: backslash, tab, newline and CR."""
    return field.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


class Extent(NamedTuple):
    sample: str  # path relative to the shard directory
    path: str    # cache file
    offset: int
    length: int


def _read_all(path: str) -> bytes:
    """The whole file, with O_DIRECT where the filesystem takes it: on a
    deltafs mount every read of _extents.tsv then reaches deltafs (which
    materialises the shard) instead of the kernel's page cache. Local
    filesystems refuse O_DIRECT with unaligned buffers: read those plainly."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct:
        try:
            fd = os.open(path, os.O_RDONLY | direct)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                chunks = []
                while True:
                    c = os.read(fd, 1 << 20)
                    if not c:
                        return b"".join(chunks)
                    chunks.append(c)
            except OSError:
                pass  # EINVAL: alignment; fall through
            finally:
                os.close(fd)
    with open(path, "rb") as f:
        return f.read()


def read_manifest(manifest: str) -> List[Extent]:
    """Parse an _extents.tsv; relative cache paths are relative to it."""
    base = os.path.dirname(os.path.abspath(manifest))
    out = []
    text = _read_all(manifest).decode("utf-8")
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\n").rstrip("\r")
        if not line or (lineno == 1 and line == HEADER):
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError("%s:%d: want 4 tab-separated fields" % (manifest, lineno))
        sample, path = unescape(fields[0]), unescape(fields[1])
        offset, length = int(fields[2]), int(fields[3])
        if not sample or not path or offset < 0 or length < 0:
            raise ValueError("%s:%d: bad entry" % (manifest, lineno))
        out.append(Extent(sample, os.path.join(base, path), offset, length))
    return out


class Evicted(Exception):
    """A cache file is gone or shorter than the extent."""


class ExtentReader:
    """Reads extents into uint8 tensors on `device`.

    path is "kvikio" (cuFile into GPU memory: GDS, or cuFile's own
    compatibility mode) or "posix" (os.pread into host memory, then .to()).
    A sample whose cache file was evicted is read from shard_dir/<sample>
    (the mount) instead and counted in `fallbacks`; without shard_dir that
    is an error.
    """

    def __init__(self, device: Optional[str] = None, use_kvikio: Optional[bool] = None,
                 shard_dir: Optional[str] = None):
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if use_kvikio is None:
            use_kvikio = kvikio is not None and self.device.type == "cuda"
        if use_kvikio and (kvikio is None or self.device.type != "cuda"):
            raise RuntimeError("kvikio reads need the kvikio package and a CUDA device")
        self.path = "kvikio" if use_kvikio else "posix"
        self.shard_dir = shard_dir
        self.fallbacks = 0
        self._files: Dict[str, object] = {}

    def _file(self, path: str):
        f = self._files.get(path)
        if f is None:
            try:
                f = kvikio.CuFile(path, "r") if self.path == "kvikio" else os.open(path, os.O_RDONLY)
            except FileNotFoundError as e:
                raise Evicted("%s is gone" % path) from e
            self._files[path] = f
        return f

    def _pread(self, ext: Extent) -> bytearray:
        fd, buf = self._file(ext.path), bytearray()
        while len(buf) < ext.length:
            chunk = os.pread(fd, ext.length - len(buf), ext.offset + len(buf))
            if not chunk:
                raise Evicted("%s: %s ends inside the extent" % (ext.sample, ext.path))
            buf += chunk
        return buf

    @staticmethod
    def _gone(ext: Extent) -> bool:
        """Whether ext's cache file is missing or ends inside the extent."""
        try:
            return os.stat(ext.path).st_size < ext.offset + ext.length
        except FileNotFoundError:
            return True

    def _from_mount(self, ext: Extent, why: Exception) -> bytes:
        """The sample file itself, for a sample evicted from the cache."""
        if self.shard_dir is None:
            raise why
        path = os.path.join(self.shard_dir, ext.sample)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != ext.length:
            raise ValueError("%s: %d bytes, the manifest says %d" % (path, len(data), ext.length))
        self.fallbacks += 1
        return data

    def read(self, ext: Extent) -> torch.Tensor:
        """One sample as a 1-D uint8 tensor."""
        data, _ = self.read_batch([ext], align=1)
        return data

    def read_batch(self, exts: List[Extent], align: int = ALIGNMENT) -> Tuple[torch.Tensor, List[int]]:
        """A batch of samples in one uint8 tensor, sample i at offsets[i]
        (each a multiple of align, like deltafs's Go reader), so a batch is
        one allocation and, with kvikio, reads that run in parallel."""
        offsets, total = [], 0
        for e in exts:
            total = -(-total // align) * align
            offsets.append(total)
            total += e.length
        if self.path == "kvikio":
            out = torch.empty(total, dtype=torch.uint8, device=self.device)
            futures, missed = [], []
            for e, o in zip(exts, offsets):
                if not e.length:
                    continue
                try:
                    futures.append((e, o, self._file(e.path).pread(out[o:o + e.length], e.length, e.offset)))
                except Evicted as why:
                    missed.append((e, o, why))
            for e, o, fut in futures:
                try:
                    n = fut.get()
                except (OSError, RuntimeError) as err:
                    if not self._gone(e):
                        raise
                    missed.append((e, o, Evicted("%s: %s" % (e.sample, err))))
                    continue
                if n != e.length:
                    missed.append((e, o, Evicted("%s: read %d of %d bytes" % (e.sample, n, e.length))))
            for e, o, why in missed:
                data = self._from_mount(e, why)
                out[o:o + e.length] = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(self.device)
            return out, offsets
        out = torch.zeros(total, dtype=torch.uint8)
        for e, o in zip(exts, offsets):
            if e.length:
                try:
                    data = self._pread(e)
                except Evicted as why:
                    data = bytearray(self._from_mount(e, why))
                out[o:o + e.length] = torch.frombuffer(data, dtype=torch.uint8)
        if self.device.type != "cpu":
            out = out.to(self.device, non_blocking=False)
        return out, offsets

    def close(self):
        for f in self._files.values():
            if self.path == "kvikio":
                f.close()
            else:
                os.close(f)
        self._files.clear()


class ExtentDataset(torch.utils.data.Dataset):
    """(tensor, sample name) for each line of a shard's _extents.tsv.

    Decode in `transform` (for example torchvision.io.decode_image on the
    uint8 tensor). With the kvikio path, keep num_workers=0: CUDA does not
    survive fork, and kvikio already reads with its own thread pool.
    """

    def __init__(self, manifest: str, device: Optional[str] = None, transform=None):
        self.extents = read_manifest(manifest)
        self.reader = ExtentReader(device, shard_dir=os.path.dirname(os.path.abspath(manifest)))
        self.transform = transform

    def __len__(self):
        return len(self.extents)

    def __getitem__(self, i):
        ext = self.extents[i]
        t = self.reader.read(ext)
        return (self.transform(t) if self.transform else t), ext.sample


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", help="a shard's _extents.tsv (or the shard directory)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--batch", type=int, default=64, help="samples per batch")
    ap.add_argument("--limit", type=int, default=0, help="read only the first N samples")
    ap.add_argument("--sha256", action="store_true", help="print each sample's SHA-256 and (escaped) name")
    args = ap.parse_args(argv)

    manifest = args.manifest
    if os.path.isdir(manifest):
        manifest = os.path.join(manifest, MANIFEST_NAME)
    exts = read_manifest(manifest)
    if args.limit:
        exts = exts[: args.limit]
    reader = ExtentReader(args.device, shard_dir=os.path.dirname(os.path.abspath(manifest)))
    start, nbytes = time.perf_counter(), 0
    try:
        for i in range(0, len(exts), args.batch):
            batch = exts[i:i + args.batch]
            data, offsets = reader.read_batch(batch)
            nbytes += sum(e.length for e in batch)
            if args.sha256:
                host = data.cpu().numpy().tobytes() if data.is_cuda else data.numpy().tobytes()
                for e, o in zip(batch, offsets):
                    print("%s\t%s" % (hashlib.sha256(host[o:o + e.length]).hexdigest(), escape(e.sample)))
    finally:
        reader.close()
    secs = max(time.perf_counter() - start, 1e-9)
    print("read %d samples, %.1f MB in %.3f s (%.1f MB/s, %.0f samples/s) by %s into %s; %d through the mount (evicted)" % (
        len(exts), nbytes / 1e6, secs, nbytes / 1e6 / secs, len(exts) / secs, reader.path, reader.device.type,
        reader.fallbacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
