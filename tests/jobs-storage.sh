#!/usr/bin/env bash
# The database fills up: enforcement goes on, admissions wait, submits get
# -32006, and all resumes when writes succeed (see jobs-storage.py). Root.
set -eu
exec python3 "$(dirname "$0")/jobs-storage.py" "$@"
