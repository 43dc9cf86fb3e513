#!/usr/bin/env bash
# Job filters and bulk actions through the fixture proc root (see
# queue-filters.py): status and events filters, cancel_matching, wait --all.
set -eu
exec python3 "$(dirname "$0")/queue-filters.py" "$@"
