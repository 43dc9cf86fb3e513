#!/usr/bin/env bash
# Runs the hostile-input corpus against a real daemon (see badinput.py).
exec python3 "$(dirname "$0")/badinput.py" "$@"
