#!/usr/bin/env bash
# Load smoke test: about 200 clients x 20 requests on the control socket, and
# 200 idle connections, while a swap-budget breach is enforced. Asserts only
# correctness: no request failed, the breach happened under load and its job
# got SIGTERM within a generous bound, a newcomer was served next to the idle
# crowd, the daemon stopped cleanly. Timing targets live in bench/ and
# docs/benchmarks.md. The driver is bench/load.py (bench/load.c does the load).
set -eu
: "${SL_BIN:?set SL_BIN to the bin directory of a build}"
src=${SL_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
for b in stageloadd sl-load; do
	if [ ! -x "$SL_BIN/$b" ]; then
		echo "FAIL: $SL_BIN/$b is not built" >&2
		exit 1
	fi
done
out=$(python3 "$src/bench/load.py" -b "$SL_BIN/.." -c 200 -n 20 -i 200 \
	--interval 0.1 --min-seconds 2 --breaches 3 --check-breach-ms 5000) || {
	echo "FAIL: $out" >&2
	exit 1
}
echo "$out"
