#!/usr/bin/env python3
"""Load a deltafs shard's samples into tensors straight from the disk cache.

A deltafs shard directory holds `_extents.tsv`: for every sample, the cache
file and byte range that hold its bytes, and their CRC-32 (see extents/doc.go,
"Extent list format"). With RAPIDS kvikio and a GPU, each sample is read by
cuFile (GPUDirect Storage) from the cache file into a CUDA tensor, bypassing
FUSE and host memory. Without them, it is read with os.pread into a CPU
tensor, then copied to the GPU if one was asked for. The bytes are the same
either way.

Every sample is verified against its CRC-32 (zlib.crc32) before it is
returned: with os.pread in host memory; with kvikio after one copy of the
batch back to host memory (the cost of checking what landed on the GPU).
The FUSE mount verifies what it serves; the cache files read here bypass
it, so a damaged or replaced cache file would otherwise become a sample.

Reading `_extents.tsv` makes deltafs write every sample of the shard to its
disk cache, verifying the entries already there and rewriting broken ones
(it is read with O_DIRECT, so each read reaches deltafs). A sample whose
cache file has since vanished (evicted), ends early or fails its checksum
(corrupt, logged as a warning) is a miss: the extent list is read again, which
re-materialises it, and it is read once more; if it misses again, or has no
checksum (deltafs could not cache it), it is read through the mount instead
(the sample file next to the extent list) and verified. Wrong bytes are never
returned: when the true ones cannot be had, the loader fails.

    /usr/bin/python3 examples/gds/loader.py MOUNT/latest/shard/0/_extents.tsv \\
        [--device cuda|cpu] [--batch N] [--limit N] [--sha256]

prints how many samples and bytes it read, by which path, how fast, how
many were corrupt in the cache and how many had to be read through the
mount; --sha256 also prints each sample's SHA-256 and name (escaped as in
the extent list), tab-separated.
"""
import argparse
import hashlib
import logging
import os
import sys
import time
import zlib
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import torch

try:  # RAPIDS kvikio: Python bindings for cuFile.
    import kvikio
except ImportError:  # no kvikio: POSIX reads
    kvikio = None

LIST_NAME = "_extents.tsv"
HEADER = "sample\tpath\toffset\tlength\tcrc32"
OLD_HEADER = "sample\tpath\toffset\tlength"  # before checksums: refused
UNKNOWN_CRC = "--------"  # a sample deltafs could not cache
ALIGNMENT = 4096
log = logging.getLogger("deltafs.loader")
_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(field: str) -> str:
    """Reverse the extent list's escaping of backslash, tab, newline and CR."""
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
    """The extent list's escaping: backslash, tab, newline and CR."""
    return field.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


class Extent(NamedTuple):
    sample: str  # path relative to the shard directory
    path: str    # cache file
    offset: int
    length: int
    crc: Optional[int]  # CRC-32 (zlib.crc32) of the bytes; None: unknown


def parse_crc(field: str) -> Optional[int]:
    """The crc32 column: 8 lowercase hex digits, or "--------" (unknown)."""
    if field == UNKNOWN_CRC:
        return None
    if len(field) != 8 or any(c not in "0123456789abcdef" for c in field):
        raise ValueError("bad crc32 %r" % field)
    return int(field, 16)


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


def read_extent_list(list_path: str) -> List[Extent]:
    """Parse an _extents.tsv; relative cache paths are relative to it. The
    header line is required: it names the format."""
    base = os.path.dirname(os.path.abspath(list_path))
    out = []
    lines = _read_all(list_path).decode("utf-8").split("\n")
    first = lines[0].rstrip("\r")
    if first == OLD_HEADER:
        raise ValueError("%s: extent list without checksums, written by a deltafs older than this loader: "
                         "remount the table with this deltafs" % list_path)
    if first != HEADER:
        raise ValueError("%s: not an extent list (the first line is not %r)" % (list_path, HEADER))
    for lineno, line in enumerate(lines[1:], 2):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            raise ValueError("%s:%d: want 5 tab-separated fields" % (list_path, lineno))
        sample, path = unescape(fields[0]), unescape(fields[1])
        offset, length = int(fields[2]), int(fields[3])
        try:
            crc = parse_crc(fields[4])
        except ValueError as e:
            raise ValueError("%s:%d: %s" % (list_path, lineno, e)) from None
        if not sample or not path or offset < 0 or length < 0:
            raise ValueError("%s:%d: bad entry" % (list_path, lineno))
        out.append(Extent(sample, os.path.join(base, path), offset, length, crc))
    return out


class Miss(Exception):
    """A sample that cannot be taken from its cache extent as it stands."""


class Evicted(Miss):
    """The cache file is gone: the entry was evicted (normal)."""


class Corrupt(Miss):
    """The cache file ends inside the extent or its bytes fail the CRC-32:
    a damaged or replaced cache file (logged)."""


class NoChecksum(Miss):
    """The extent list has no checksum for the sample (deltafs could not cache
    it): its bytes cannot be verified, so it is read through the mount."""


def _check(ext: Extent, data) -> None:
    """Raise NoChecksum or Corrupt unless data (ext.length bytes) has
    ext's CRC-32."""
    if ext.crc is None:
        raise NoChecksum("%s: no checksum in the extent list" % ext.sample)
    got = zlib.crc32(data)
    if got != ext.crc:
        raise Corrupt("%s: cache bytes at %s@%d+%d have CRC-32 %08x, the extent list says %08x" % (
            ext.sample, ext.path, ext.offset, ext.length, got, ext.crc))


class ExtentReader:
    """Reads extents into uint8 tensors on `device`, verified.

    path is "kvikio" (cuFile into GPU memory: GDS, or cuFile's own
    compatibility mode) or "posix" (os.pread into host memory, then .to()).
    Every sample is checked against its CRC-32: on the posix path in host
    memory as read; on the kvikio path after copying the batch back from
    the device. A miss (see Miss) is read again after re-reading
    shard_dir's extent list (which re-materialises it), else from
    shard_dir/<sample> (the mount), verified; `corrupt` counts the samples
    whose cache bytes were wrong, `fallbacks` those read through the mount.
    Without shard_dir a miss is an error.
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
        self.corrupt = 0
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

    def _forget(self, path: str) -> None:
        """Close a cached handle: the entry may be rewritten (a new file at
        the same path) and must be opened again."""
        f = self._files.pop(path, None)
        if f is not None:
            if self.path == "kvikio":
                f.close()
            else:
                os.close(f)

    @staticmethod
    def _pread_fd(fd: int, ext: Extent) -> bytearray:
        buf = bytearray()
        while len(buf) < ext.length:
            chunk = os.pread(fd, ext.length - len(buf), ext.offset + len(buf))
            if not chunk:
                raise Corrupt("%s: %s ends inside the extent" % (ext.sample, ext.path))
            buf += chunk
        return buf

    def _pread(self, ext: Extent) -> bytearray:
        """ext's bytes from its cache file, through a cached descriptor."""
        return self._pread_fd(self._file(ext.path), ext)

    @staticmethod
    def _pread_fresh(ext: Extent) -> bytearray:
        """ext's bytes from its cache file opened now (after a miss: the
        entry may have been rewritten since a descriptor was cached)."""
        try:
            fd = os.open(ext.path, os.O_RDONLY)
        except FileNotFoundError as e:
            raise Evicted("%s is gone" % ext.path) from e
        try:
            return ExtentReader._pread_fd(fd, ext)
        finally:
            os.close(fd)

    @staticmethod
    def _why(ext: Extent, err: Exception) -> Miss:
        """The miss behind a failed kvikio read, or err itself: the cache
        file is gone (evicted), or ends inside the extent (corrupt)."""
        try:
            if os.stat(ext.path).st_size < ext.offset + ext.length:
                return Corrupt("%s: %s ends inside the extent (%s)" % (ext.sample, ext.path, err))
        except FileNotFoundError:
            return Evicted("%s: %s is gone (%s)" % (ext.sample, ext.path, err))
        raise err

    def _from_mount(self, ext: Extent) -> bytes:
        """The sample file itself, verified against ext's CRC-32 when known."""
        path = os.path.join(self.shard_dir, ext.sample)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != ext.length:
            raise ValueError("%s: %d bytes, the extent list says %d" % (path, len(data), ext.length))
        if ext.crc is not None and zlib.crc32(data) != ext.crc:
            raise ValueError("%s: read through the mount, has CRC-32 %08x, the extent list says %08x" % (
                path, zlib.crc32(data), ext.crc))
        self.fallbacks += 1
        return data

    def _recover(self, exts: List[Extent], missed: Dict[int, Miss], put: Callable[[int, bytes], None]) -> None:
        """The true bytes of the missed samples of a batch, each given to
        put(i, data): the extent list is read again (once for the batch: deltafs
        re-materialises the shard, rewriting broken entries), each sample is
        read from its fresh extent, and what misses again comes from the
        mount. Never wrong bytes: what cannot be had raises."""
        if not missed:
            return
        if self.shard_dir is None:
            raise next(iter(missed.values()))
        for i in sorted(missed):
            why = missed[i]
            self._forget(exts[i].path)
            if isinstance(why, Corrupt):
                self.corrupt += 1
                log.warning("deltafs loader: %s; reading it again", why)
        fresh = {e.sample: e for e in read_extent_list(os.path.join(self.shard_dir, LIST_NAME))}
        for i in sorted(missed):
            ext = fresh.get(exts[i].sample, exts[i])
            if ext.length != exts[i].length:
                raise ValueError("%s: %d bytes in the extent list read again, %d before" % (
                    ext.sample, ext.length, exts[i].length))
            try:
                data = self._pread_fresh(ext)
                _check(ext, data)
            except Miss as why:
                if isinstance(why, Corrupt):
                    log.warning("deltafs loader: %s, again after re-materialising; reading it through the mount", why)
                data = self._from_mount(ext)
            put(i, bytes(data))

    def read(self, ext: Extent) -> torch.Tensor:
        """One sample as a 1-D uint8 tensor."""
        data, _ = self.read_batch([ext], align=1)
        return data

    def read_batch(self, exts: List[Extent], align: int = ALIGNMENT) -> Tuple[torch.Tensor, List[int]]:
        """A batch of samples in one uint8 tensor, sample i at offsets[i]
        (each a multiple of align, like deltafs's Go reader), so a batch is
        one allocation and, with kvikio, reads that run in parallel. Every
        sample is verified (see the class)."""
        offsets, total = [], 0
        for e in exts:
            total = -(-total // align) * align
            offsets.append(total)
            total += e.length
        missed: Dict[int, Miss] = {}
        if self.path == "kvikio":
            out = torch.empty(total, dtype=torch.uint8, device=self.device)
            futures = []
            for i, (e, o) in enumerate(zip(exts, offsets)):
                if not e.length:
                    continue
                try:
                    futures.append((i, e, self._file(e.path).pread(out[o:o + e.length], e.length, e.offset)))
                except Miss as why:
                    missed[i] = why
            for i, e, fut in futures:
                try:
                    n = fut.get()
                except (OSError, RuntimeError) as err:
                    missed[i] = self._why(e, err)
                    continue
                if n != e.length:
                    missed[i] = Corrupt("%s: read %d of %d bytes" % (e.sample, n, e.length))
            # Verify what landed on the GPU: one copy of the batch back to
            # host memory, then zlib.crc32 per sample.
            host = memoryview(out.cpu().numpy()) if total else memoryview(b"")
            for i, (e, o) in enumerate(zip(exts, offsets)):
                if i not in missed:
                    try:
                        _check(e, host[o:o + e.length])
                    except Miss as why:
                        missed[i] = why

            def put(i: int, data: bytes) -> None:
                o, n = offsets[i], exts[i].length
                if n:
                    out[o:o + n] = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(self.device)
            self._recover(exts, missed, put)
            return out, offsets
        out = torch.zeros(total, dtype=torch.uint8)

        def put(i: int, data) -> None:
            o, n = offsets[i], exts[i].length
            if n:
                buf = data if isinstance(data, bytearray) else bytearray(data)
                out[o:o + n] = torch.frombuffer(buf, dtype=torch.uint8)
        for i, e in enumerate(exts):
            try:
                data = self._pread(e)
                _check(e, data)
            except Miss as why:
                missed[i] = why
                continue
            put(i, data)
        self._recover(exts, missed, put)
        if self.device.type != "cpu":
            out = out.to(self.device, non_blocking=False)
        return out, offsets

    def close(self):
        for path in list(self._files):
            self._forget(path)


class ExtentDataset(torch.utils.data.Dataset):
    """(tensor, sample name) for each line of a shard's _extents.tsv.

    Decode in `transform` (for example torchvision.io.decode_image on the
    uint8 tensor). With the kvikio path, keep num_workers=0: CUDA does not
    survive fork, and kvikio already reads with its own thread pool.
    """

    def __init__(self, list_path: str, device: Optional[str] = None, transform=None):
        self.extents = read_extent_list(list_path)
        self.reader = ExtentReader(device, shard_dir=os.path.dirname(os.path.abspath(list_path)))
        self.transform = transform

    def __len__(self):
        return len(self.extents)

    def __getitem__(self, i):
        ext = self.extents[i]
        t = self.reader.read(ext)
        return (self.transform(t) if self.transform else t), ext.sample


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("extents", help="a shard's _extents.tsv (or the shard directory)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--batch", type=int, default=64, help="samples per batch")
    ap.add_argument("--limit", type=int, default=0, help="read only the first N samples")
    ap.add_argument("--sha256", action="store_true", help="print each sample's SHA-256 and (escaped) name")
    args = ap.parse_args(argv)

    list_path = args.extents
    if os.path.isdir(list_path):
        list_path = os.path.join(list_path, LIST_NAME)
    exts = read_extent_list(list_path)
    if args.limit:
        exts = exts[: args.limit]
    reader = ExtentReader(args.device, shard_dir=os.path.dirname(os.path.abspath(list_path)))
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
    print("read %d samples, %.1f MB in %.3f s (%.1f MB/s, %.0f samples/s) by %s into %s; "
          "%d corrupt in the cache (read again); %d through the mount" % (
              len(exts), nbytes / 1e6, secs, nbytes / 1e6 / secs, len(exts) / secs, reader.path, reader.device.type,
              reader.corrupt, reader.fallbacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
