#!/usr/bin/env bash
# Root's daemon refuses a database, -wal, lock file or state directory
# another user made or could replace (see daemon-trust.py). Root only: it
# creates a user with useradd, named as auth.py's users are, so that
# auth.py --reap removes it even when this run is killed.
set -u
here=$(dirname "$0")
python3 "$here/daemon-trust.py" "$@" &
pid=$!
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	[ "$(id -u)" -eq 0 ] && python3 "$here/auth.py" --reap
}
trap cleanup EXIT
trap 'exit 1' TERM INT HUP
wait "$pid"
rc=$?
pid=
exit $rc
