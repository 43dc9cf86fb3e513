#!/usr/bin/env bash
# See web-http.py.
set -eu
exec python3 "$(dirname "$0")/web-http.py" "$@"
