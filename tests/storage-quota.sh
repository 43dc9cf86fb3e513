#!/usr/bin/env bash
# What one user can make the daemon store is bounded (see storage-quota.py).
# Root: mounts a small tmpfs for the database, removed again even on failure.
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed (apt-get install sqlite3)" >&2; exit 1; }
exec python3 "$(dirname "$0")/storage-quota.py" "$@"
