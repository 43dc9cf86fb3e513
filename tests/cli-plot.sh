#!/usr/bin/env bash
# See cli-plot.py.
set -eu
exec python3 "$(dirname "$0")/cli-plot.py" "$@"
