#!/usr/bin/env bash
# Job arrays through the fixture proc root (see queue-arrays.py): SPEC and
# %N, {} and the element's env, A42 and A42_3, after, bounds, the CLI.
set -eu
exec python3 "$(dirname "$0")/queue-arrays.py" "$@"
