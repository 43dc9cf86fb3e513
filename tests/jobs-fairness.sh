#!/usr/bin/env bash
# Queue fairness (see jobs-fairness.py): priorities and limits at submit,
# the order at equal priority, the head's claim (hol_bound), as root with
# two other uids. Root only.
set -eu
exec python3 "$(dirname "$0")/jobs-fairness.py" "$@"
