#!/usr/bin/env bash
# stageloadd when the database's filesystem fills up (see daemon-storage.py).
# Root only: it mounts a small tmpfs, unmounted again even on failure.
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed (apt-get install sqlite3)" >&2; exit 1; }
exec python3 "$(dirname "$0")/daemon-storage.py" "$@"
