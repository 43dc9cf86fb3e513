#!/usr/bin/env bash
# Build the libFuzzer targets with clang, ASan and UBSan in build-fuzz and
# run each for SECONDS (default 60) over its corpus in tests/fuzz/corpus.
# New inputs go to build-fuzz/corpus-NAME (merge the interesting ones into
# the repository by hand); crashers are written to build-fuzz/crashes/ and
# belong in the corpus once fixed, so ctest replays them forever.
set -euo pipefail

secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$src/build-fuzz}
targets=(proto)

cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="${CC:-clang}" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGELOAD_FUZZ=ON >/dev/null
cmake --build "$build" -j2 --target "${targets[@]/#/fuzz_}"

mkdir -p "$build/crashes"
status=0
for t in "${targets[@]}"; do
	mkdir -p "$build/corpus-$t"
	dict=()
	if [ -f "$src/tests/fuzz/$t.dict" ]; then
		dict=(-dict="$src/tests/fuzz/$t.dict")
	fi
	echo "== fuzz_$t for ${secs}s"
	"$build/bin/fuzz_$t" -max_total_time="$secs" -max_len=4096 \
		-timeout=10 -print_final_stats=1 "${dict[@]}" \
		-artifact_prefix="$build/crashes/$t-" \
		"$build/corpus-$t" "$src/tests/fuzz/corpus/$t" || status=$?
done
exit "$status"
