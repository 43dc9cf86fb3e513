#!/usr/bin/env bash
# See docs-names.py.
set -eu
exec python3 "$(dirname "$0")/docs-names.py" "$@"
