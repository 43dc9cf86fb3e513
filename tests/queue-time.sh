#!/usr/bin/env bash
# Time limits, delayed starts and the records of each attempt, through
# the fixture proc root (see queue-time.py).
set -eu
exec python3 "$(dirname "$0")/queue-time.py" "$@"
