#!/usr/bin/env bash
# Build the libFuzzer targets with clang, ASan and UBSan in build-fuzz and
# run each for SECONDS (default 60) over its corpus in tests/fuzz/corpus.
#
#   tests/fuzz/run.sh [SECONDS]
#   FUZZ_TARGETS="dispatch" tests/fuzz/run.sh 14400   one target, 4 hours
#
# New inputs go to build-fuzz/corpus-NAME (merge the interesting ones into
# the repository by hand); crashers are written to build-fuzz/crashes/ and
# belong in the corpus once fixed, so ctest replays them forever. The exit
# status is 0 only when no target found anything: a crash, a leak, a
# timeout or a failed check makes it 1. docs/fuzzing.md has the long run.
set -euo pipefail

secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$src/build-fuzz}
if [ -n "${FUZZ_TARGETS:-}" ]; then
	read -r -a targets <<<"$FUZZ_TARGETS"
elif [ "$(uname -s)" = Linux ]; then
	targets=(proto dispatch)
else
	targets=(proto) # dispatch reads a fixture proc root: Linux only
fi

cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="${CC:-clang}" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGELOAD_FUZZ=ON >/dev/null
cmake --build "$build" -j2 --target "${targets[@]/#/fuzz_}"

mkdir -p "$build/crashes"
status=0
for t in "${targets[@]}"; do
	mkdir -p "$build/corpus-$t"
	opts=()
	if [ -f "$src/tests/fuzz/$t.dict" ]; then
		opts+=(-dict="$src/tests/fuzz/$t.dict")
	fi
	# Stray artifacts of an earlier run must not fail this one, nor
	# hide that this one found nothing new.
	before=$(find "$build/crashes" -name "$t-*" -type f | wc -l)
	echo "== fuzz_$t for ${secs}s"
	rc=0
	"$build/bin/fuzz_$t" -max_total_time="$secs" -max_len=4096 \
		-timeout=10 -print_final_stats=1 "${opts[@]}" \
		-artifact_prefix="$build/crashes/$t-" \
		"$build/corpus-$t" "$src/tests/fuzz/corpus/$t" || rc=$?
	after=$(find "$build/crashes" -name "$t-*" -type f | wc -l)
	if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
		echo "FAIL: fuzz_$t exited $rc; artifacts in $build/crashes:" >&2
		find "$build/crashes" -name "$t-*" -type f -newer "$build/corpus-$t" >&2 || true
		status=1
	fi
done
exit "$status"
