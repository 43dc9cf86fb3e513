#!/usr/bin/env bash
# stageloadd end to end: info, history, subscribe/meter, signals, socket
# life cycle (see daemon-sampling.py). Needs python3 and the sqlite3 CLI.
set -eu
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed (apt-get install sqlite3)" >&2; exit 1; }
exec python3 "$(dirname "$0")/daemon-sampling.py" "$@"
