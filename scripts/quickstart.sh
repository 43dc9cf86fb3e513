#!/usr/bin/env bash
# Install what is missing, build, and run stageloadd in the foreground on its
# default socket and database (system paths as root, per-user otherwise).
# Extra arguments go to stageloadd, e.g. scripts/quickstart.sh -v.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGELOAD_TESTS=OFF
cmake --build build -j"$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
echo "stageloadd starting; in another terminal: build/bin/stageloadctl info" >&2
exec build/bin/stageloadd "$@"
