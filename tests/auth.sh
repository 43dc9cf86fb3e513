#!/usr/bin/env bash
# Authorisation with real users (see auth.py): creates two users with
# useradd, runs the daemon as root and checks PROTOCOL.md "Who may call
# what" from processes running as them. Root only.
set -u
here=$(dirname "$0")
python3 "$here/auth.py" "$@" &
pid=$!
# Even when this script is stopped, the test's users go: auth.py removes
# them itself on SIGTERM, and --reap removes those of any run that is no
# longer alive (one killed with SIGKILL).
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
