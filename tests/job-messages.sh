#!/usr/bin/env bash
# What the daemon tells a job's user, through the fixture proc root (see
# job-messages.py): marker lines in job logs, swap growth worded as the
# system's, what a waiting job waits behind, the recent ends in top, and
# stage reports that reach the job's own daemon.
set -eu
exec python3 "$(dirname "$0")/job-messages.py" "$@"
