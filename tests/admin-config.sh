#!/usr/bin/env bash
# The default config file and info's defaults (see admin-config.py).
set -eu
exec python3 "$(dirname "$0")/admin-config.py" "$@"
