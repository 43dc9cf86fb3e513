#!/usr/bin/env bash
# Bounded list answers: status and events pages in protocol version 2 (see answer-pages.py).
set -eu
exec python3 "$(dirname "$0")/answer-pages.py" "$@"
