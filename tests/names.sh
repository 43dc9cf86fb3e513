#!/usr/bin/env bash
# See names.py.
set -eu
exec python3 "$(dirname "$0")/names.py" "$@"
