#!/usr/bin/env bash
# proto/PROTOCOL.md against the real daemon (see protocol-conformance.py):
# methods, params, result members, objects, notifications and error codes.
set -eu
exec python3 "$(dirname "$0")/protocol-conformance.py" "$@"
