#!/usr/bin/env bash
# The per-uid connection cap from accept on (see daemon-uid-cap.py). Root only.
set -eu
exec python3 "$(dirname "$0")/daemon-uid-cap.py" "$@"
