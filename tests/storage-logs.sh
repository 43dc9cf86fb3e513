#!/usr/bin/env bash
# Job logs cannot fill the disk (see storage-logs.py). Root: mounts a small
# tmpfs for the database and the job logs, removed again even on failure.
set -eu
exec python3 "$(dirname "$0")/storage-logs.py" "$@"
