#!/usr/bin/env bash
# docs/cli.md's runnable console blocks against a test daemon (see
# docs-cli.py).
set -eu
exec python3 "$(dirname "$0")/docs-cli.py" "$@"
