#!/usr/bin/env bash
# See web-page.py.
set -eu
exec python3 "$(dirname "$0")/web-page.py" "$@"
