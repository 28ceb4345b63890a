#!/usr/bin/env bash
# make demo: import a small real MNIST sample into a Delta table with three
# versions (import, append, overwrite), mount it, show the tree, and serve
# until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
# DELTAFS_BIN and DEMO_DIR override the binary and the work directory (tests).
bin=${DELTAFS_BIN:-bin/deltafs}
demo=${DEMO_DIR:-.demo}
table=$demo/mnist-table
mnt=$demo/mnt
data=testdata/mnist/demo

if mountpoint -q "$mnt" 2>/dev/null || grep -q " $(realpath -m "$mnt") " /proc/mounts; then
  "$bin" unmount "$mnt" || "$bin" unmount --lazy "$mnt"
fi
rm -rf "$table"
mkdir -p "$mnt"

echo "== 1. Write a Delta table of real MNIST digits (3 versions)"
"$bin" import "$data/demo-1-import.npy.gz" "$table"
"$bin" import "$data/demo-2-append.npy.gz" "$table" --mode append
"$bin" import "$data/demo-3-overwrite.npy.gz" "$table" --mode overwrite
echo
echo "== 2. Its history"
"$bin" log "$table"
echo
echo "== 3. Mount it: every row of every version becomes a PNG in a class folder"
"$bin" mount "$table" "$mnt" --image 28x28 --class-column label --shards 2 &
pid=$!
cleanup() { kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
trap cleanup EXIT
# Ctrl-C (or SIGTERM) is how the demo ends: unmount, exit 0.
trap 'cleanup; trap - EXIT; echo "demo: unmounted $mnt"; exit 0' INT TERM
for _ in $(seq 100); do [ -e "$mnt/latest" ] && break; sleep 0.1; done
[ -e "$mnt/latest" ] || { echo "demo: the mount did not come up" >&2; exit 1; }

echo "\$ ls $mnt"; ls "$mnt"
echo "\$ ls $mnt/version"; ls "$mnt/version"
echo "\$ readlink $mnt/latest"; readlink "$mnt/latest"
echo "\$ cat $mnt/version/1/_commit.json"; cat "$mnt/version/1/_commit.json"; echo
echo "\$ ls $mnt/latest/shard/0"; ls "$mnt/latest/shard/0"
echo "\$ ls $mnt/latest/shard/0/7 | head -3"; ls "$mnt/latest/shard/0/7" | head -3
for v in 0 1 2; do
  printf 'version %s: %s samples\n' "$v" "$(find "$mnt/version/$v/shard" -name '*.png' | wc -l)"
done
echo "\$ head -3 $mnt/latest/shard/0/_samples.tsv"; head -3 "$mnt/latest/shard/0/_samples.tsv"
cat <<MSG

== 4. Train on it (torchvision's ImageFolder, unmodified), in another terminal:
   /usr/bin/python3 examples/mnist/train.py $mnt/latest/shard/0 --val $mnt/latest/shard/1 --epochs 1
     (train.py pins the version: it resolves latest once, so a new commit cannot change the data mid-training)
   /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 --redirects 1 --tee 1 examples/ddp/train_ddp.py $mnt

   Time travel: ls $mnt/version/0/shard/0      ls $mnt/at/\$(date -u +%Y-%m-%dT%H:%M:%SZ)
   New commits appear without a remount: bin/deltafs import $data/demo-2-append.npy.gz $table --mode append

Serving $mnt until Ctrl-C.
MSG
wait "$pid"
