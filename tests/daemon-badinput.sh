#!/usr/bin/env bash
# stageloadd under bad and hostile clients (see daemon-badinput.py).
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed (apt-get install sqlite3)" >&2; exit 1; }
exec python3 "$(dirname "$0")/daemon-badinput.py" "$@"
