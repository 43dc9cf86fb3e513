#!/usr/bin/env bash
# See web-metrics.py.
set -eu
exec python3 "$(dirname "$0")/web-metrics.py" "$@"
