#!/usr/bin/env bash
# history with the daemon stopped reads its database (see admin-history.py).
set -eu
exec python3 "$(dirname "$0")/admin-history.py" "$@"
