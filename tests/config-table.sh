#!/usr/bin/env bash
# See config-table.py.
set -eu
exec python3 "$(dirname "$0")/config-table.py" "$@"
