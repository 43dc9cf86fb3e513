#!/usr/bin/env bash
# events -n/-f/--job/--user/--since/--until and logs -n (see admin-events.py).
set -eu
exec python3 "$(dirname "$0")/admin-events.py" "$@"
