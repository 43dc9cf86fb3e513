#!/usr/bin/env bash
# Large answers written a slice at a time (see large-answers.py).
set -eu
exec python3 "$(dirname "$0")/large-answers.py" "$@"
