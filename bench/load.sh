#!/usr/bin/env bash
# Load benchmark (docs/benchmarks.md, "Load"): 1,000 concurrent clients x 100
# requests each on the control socket while a swap-budget breach is enforced
# (its SIGTERM latency is measured under the load), then 1,000 idle
# connections and a newcomer. Reports throughput, p50/p99 latency, daemon CPU
# and RSS as one JSON object per interval.
#
# usage: bench/load.sh [BUILD_DIR] [INTERVAL...]   (default build-bench, 0.5 0.1)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build-bench}
shift || true
[ $# -gt 0 ] || set -- 0.5 0.1
# sl-load holds one descriptor per connection (2,000 here).
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
for iv in "$@"; do
	python3 "$here/load.py" -b "$build" -c 1000 -n 100 -i 1000 --breaches 10 --interval "$iv"
done
