#!/usr/bin/env bash
# Groups with a real user (see groups.py): creates a user and a group with
# useradd and groupadd, runs the daemon as root and checks that a detached
# job has exactly its submitter's groups. Root only.
set -u
here=$(dirname "$0")
python3 "$here/groups.py" "$@" &
pid=$!
# Even when this script is stopped, the user and group go: groups.py
# removes them itself on SIGTERM, and auth.py --reap removes those of any
# run that is no longer alive (one killed with SIGKILL).
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	python3 "$here/auth.py" --reap
}
trap cleanup EXIT
trap 'exit 1' TERM INT HUP
wait "$pid"
rc=$?
pid=
exit $rc
