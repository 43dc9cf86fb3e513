#!/usr/bin/env bash
# Authorisation with real users (see auth.py): creates two users with
# useradd, runs the daemon as root and checks PROTOCOL.md "Who may call
# what" from processes running as them. Root only.
here=$(dirname "$0")
exec bash "$here/lib/with-users.sh" "$here/auth.py" "$@"
