#!/usr/bin/env bash
# An attached job whose end root reports (see jobs-root-report.py).
set -eu
exec python3 "$(dirname "$0")/jobs-root-report.py" "$@"
