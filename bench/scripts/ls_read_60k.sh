#!/usr/bin/env bash
# ls_read_60k.sh: wall time of `ls -R` and of a full read of the 60,000 MNIST
# training digits through a deltafs mount (28x28 PNGs in class folders),
# cold and warm, next to the same files copied to tmpfs (/dev/shm).
#
#   bench/scripts/ls_read_60k.sh                 # builds deltafs first
#   DELTAFS_BIN=bin/deltafs bench/scripts/ls_read_60k.sh
#
# deltafs: one fresh mount with no disk cache (--cache-dir none), and, when
# run as root, the kernel's page cache dropped before it (the Parquet files
# then come from disk). In order: ls -R cold (builds the shard index), ls -R
# warm, full read cold (every sample decoded from Parquet pages), full read
# warm (the kernel's page cache). A full read is
# `find DIR -type f -print0 | xargs -0 cat > /dev/null`.
# tmpfs: the same files copied with cp -r, then the same commands twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/deltafs-60k-XXXXXX)
shm=$(mktemp -d /dev/shm/deltafs-60k-XXXXXX)
mnt=$work/mnt
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  fusermount3 -u -z "$mnt" 2>/dev/null || true
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
bin=${DELTAFS_BIN:-}
if [ -z "$bin" ]; then
  bin=$work/deltafs
  go build -o "$bin" ./cmd/deltafs
fi
drop() { if [ "$(id -u)" = 0 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }
lsr() { ls -R "$1" > /dev/null; }
readall() { find "$1" -type f -print0 | xargs -0 cat > /dev/null; }
TIMEFORMAT=%R
timed() { # timed LABEL CMD...: one line, LABEL and the wall seconds of CMD
  local label=$1 s
  shift
  s=$( { time "$@"; } 2>&1 )
  printf '  %-22s %7.2f s\n' "$label" "$s"
}

echo "== deltafs import testdata/mnist/mnist-train.npy.gz"
"$bin" import testdata/mnist/mnist-train.npy.gz "$work/table"
mkdir -p "$mnt"
drop
"$bin" mount "$work/table" "$mnt" --image 28x28 --class-column label --cache-dir none > "$work/mount.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -e "$mnt/latest" ] && break; sleep 0.1; done
[ -e "$mnt/latest" ] || { cat "$work/mount.log" >&2; exit 1; }
sd=$mnt/version/0/shard/0
echo "== deltafs mount (version 0, shard 0; page cache dropped: $([ "$(id -u)" = 0 ] && echo yes || echo no))"
timed "ls -R cold" lsr "$sd"
timed "ls -R warm" lsr "$sd"
timed "full read cold" readall "$sd"
timed "full read warm" readall "$sd"
n=$(find "$sd" -type f -name '*.png' | wc -l)
bytes=$(du -sb --apparent-size "$sd" | cut -f1)
echo "  ($n samples, $((bytes / 1024 / 1024)) MiB)"

echo "== tmpfs (/dev/shm), the same files"
cp -r "$sd/." "$shm/"
drop
timed "ls -R first" lsr "$shm"
timed "ls -R second" lsr "$shm"
timed "full read first" readall "$shm"
timed "full read second" readall "$shm"
echo "  ($(find "$shm" -type f -name '*.png' | wc -l) samples)"
