#!/usr/bin/env bash
# mandoc -T lint of the man pages; completions in bash, zsh and fish (see
# admin-man.py).
set -eu
exec python3 "$(dirname "$0")/admin-man.py" "$@"
