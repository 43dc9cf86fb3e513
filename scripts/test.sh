#!/usr/bin/env bash
# Install what the tests need, build, and run the whole suite under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGELOAD_TESTS=ON
cmake --build build -j"$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
ctest --test-dir build --output-on-failure "$@"
