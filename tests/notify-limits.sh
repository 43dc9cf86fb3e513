#!/usr/bin/env bash
# Per-uid limits on deferred answers and metered trees (see notify-limits.py).
# Root only.
set -eu
exec python3 "$(dirname "$0")/notify-limits.py" "$@"
