#!/usr/bin/env bash
# Crash torture: SIGKILL the daemon at random moments under a seeded
# workload of about 50 jobs; every job accounted for (see torture.py).
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed" >&2; exit 1; }
exec python3 "$(dirname "$0")/torture.py" "$@"
