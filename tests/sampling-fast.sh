#!/usr/bin/env bash
# Adaptive sampling through the fixture proc root (see sampling-fast.py):
# fast near a budget and after a job ends, stored and published at the
# normal interval.
set -eu
exec python3 "$(dirname "$0")/sampling-fast.py" "$@"
