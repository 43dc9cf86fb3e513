#!/usr/bin/env bash
# Accounting through the fixture proc root (see jobs-report.py): report's
# figures against the jobs' own records, after pruning, its CLI and --db.
set -eu
exec python3 "$(dirname "$0")/jobs-report.py" "$@"
