#!/usr/bin/env bash
# kill -9 and SIGTERM of the daemon with jobs queued and running: nothing
# lost, nothing run twice, running jobs re-adopted (see jobs-restart.py).
set -eu
exec python3 "$(dirname "$0")/jobs-restart.py" "$@"
