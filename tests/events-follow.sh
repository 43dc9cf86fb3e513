#!/usr/bin/env bash
# The protocol side of events (see events-follow.py).
set -eu
exec python3 "$(dirname "$0")/events-follow.py" "$@"
