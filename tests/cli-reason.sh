#!/usr/bin/env bash
# See cli-reason.py.
set -eu
exec python3 "$(dirname "$0")/cli-reason.py" "$@"
