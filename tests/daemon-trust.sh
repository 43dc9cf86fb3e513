#!/usr/bin/env bash
# Root's daemon refuses a database, -wal, lock file or state directory
# another user made or could replace (see daemon-trust.py). Root only: it
# creates a user with useradd, named as auth.py's users are.
here=$(dirname "$0")
exec bash "$here/lib/with-users.sh" "$here/daemon-trust.py" "$@"
