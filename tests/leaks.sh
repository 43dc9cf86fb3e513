#!/usr/bin/env bash
# stageloadd under valgrind (LeakSanitizer in a sanitizer build) through a session of submits, cancels, a breach
# kill, attached and detached jobs, client disconnects, subscribers and logs,
# then SIGTERM: no error and no definite or indirect leak (see leaks.py).
set -eu
# A sanitizer build has LeakSanitizer built in (leaks.py uses it there).
if [ "${SL_SANITIZE:-OFF}" != ON ] && ! command -v valgrind >/dev/null; then
	echo "SKIP: valgrind is not installed (apt-get install valgrind)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
exec python3 "$(dirname "$0")/leaks.py" "$@"
