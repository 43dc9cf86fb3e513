#!/usr/bin/env bash
# Run a Python test that creates users and groups (auth.py's naming), and
# remove them whatever happens: the test removes its own on SIGTERM, and
# auth.py --reap removes those of any run no longer alive (one killed
# with SIGKILL). usage: with-users.sh TEST.py [ARGS...]
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
python3 "$@" &
pid=$!
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	[ "$(id -u)" -eq 0 ] && python3 "$tests/auth.py" --reap
}
trap cleanup EXIT
trap 'exit 1' TERM INT HUP
wait "$pid"
rc=$?
pid=
exit $rc
