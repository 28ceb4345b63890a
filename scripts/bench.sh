#!/usr/bin/env bash
# make bench: every benchmark in one run; writes bench/RESULTS.md and
# bench/throughput.svg. Go micro-benchmarks run first (snapshot construction,
# scan, cache), then the end-to-end workloads (bench/run), the scale ones
# (ten-million, million-files) under a memory watchdog; as root they drop
# the kernel's caches before each mount. Extra arguments go to bench/run
# (scripts/bench.sh -max-server-rss 8; see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
echo "== Go benchmarks"
go test -run '^$' -bench . -benchtime 3x -count 3 ./snapshot/ ./scan/ ./cache/ 2>&1 | tee bench/out/go-bench.txt
echo "== End-to-end workloads"
go run ./bench/run -runs "${RUNS:-3}" "$@"
echo "== Many nodes (simulated: two mounts of one S3 table through Toxiproxy, torchrun --nnodes 2)"
DELTAFS_MULTINODE_REPORT=bench/out/multinode.md go test -count=1 -run '^TestMultiNodeDDP$' ./e2e/ -timeout 20m
echo "multi-node figures: bench/out/multinode.md (rows for bench/RESULTS.md, Many nodes)"
