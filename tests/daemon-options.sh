#!/usr/bin/env bash
# stageloadd's command line and config file (see daemon-options.py).
set -eu
exec python3 "$(dirname "$0")/daemon-options.py" "$@"
