#!/usr/bin/env bash
# The queue's controls through the fixture proc root (see queue-deps.py):
# dependencies (after, after_any), holds, and their CLI.
set -eu
exec python3 "$(dirname "$0")/queue-deps.py" "$@"
