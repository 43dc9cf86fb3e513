#!/usr/bin/env bash
# Groups with a real user (see groups.py): creates a user and a group with
# useradd and groupadd, runs the daemon as root and checks that a detached
# job has exactly its submitter's groups. Root only.
here=$(dirname "$0")
exec bash "$here/lib/with-users.sh" "$here/groups.py" "$@"
