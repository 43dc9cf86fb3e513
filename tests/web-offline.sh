#!/usr/bin/env bash
# See web-offline.py.
set -eu
exec python3 "$(dirname "$0")/web-offline.py" "$@"
