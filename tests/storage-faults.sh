#!/usr/bin/env bash
# The database's file system fills up or turns read-only under running jobs:
# enforcement goes on at full speed, admissions wait, everything is accounted
# for afterwards (see storage-faults.py). Root: mounts a tmpfs and an ext4
# image on a loop device, both removed again even on failure.
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed (apt-get install sqlite3)" >&2; exit 1; }
exec python3 "$(dirname "$0")/storage-faults.py" "$@"
