#!/usr/bin/env bash
# The socket a client trusts (see client-trust.py): creates two users with
# useradd; one spoofs the other's per-user socket. Root only.
here=$(dirname "$0")
exec bash "$here/lib/with-users.sh" "$here/client-trust.py" "$@"
