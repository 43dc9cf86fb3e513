#!/usr/bin/env bash
# Job scenarios through the fixture proc root (see jobs-scenarios.py):
# admission, settle, expect, exclusive, breaches, retries, cancel, logs,
# attached jobs. Jobs are real processes; a 1 s grace keeps it quick.
set -eu
exec python3 "$(dirname "$0")/jobs-scenarios.py" "$@"
