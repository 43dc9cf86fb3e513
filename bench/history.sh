#!/usr/bin/env bash
# Storage benchmark: builds bench_store and runs it (30 days of 0.5 s
# samples through the store API, then the history queries). Extra
# arguments go to bench_store (--days N, --flush-every N, --runs N,
# --dir DIR). The numbers belong in docs/benchmarks.md, "Storage".
#
#   bench/history.sh                 # build dir: build-bench
#   BUILD=build bench/history.sh --days 7
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build-bench}
case $build in /*) ;; *) build=$src/$build ;; esac

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_store >/dev/null

echo "# stageload storage benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# $(uname -srm), $(nproc) CPUs, sqlite $(pkg-config --modversion sqlite3 2>/dev/null || echo '?')"
grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/^/# /' || true
exec "$build/bin/bench_store" "$@"
