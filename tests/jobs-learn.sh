#!/usr/bin/env bash
# Learned peaks through the fixture proc root (see jobs-learn.py): a named
# job reserves what its past runs reached; --expect 0, learn = 0 and the
# default name do not.
set -eu
exec python3 "$(dirname "$0")/jobs-learn.py" "$@"
