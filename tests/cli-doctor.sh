#!/usr/bin/env bash
# stageloadctl doctor against a daemon reading the real kernel and one
# reading fixture files (see cli-doctor.py).
set -eu
exec python3 "$(dirname "$0")/cli-doctor.py" "$@"
