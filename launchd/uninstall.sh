#!/bin/sh
# Stop stageloadd and remove its LaunchDaemon.
#
#   sudo launchd/uninstall.sh [--purge] [--dry-run]
#
# --purge    also delete the database (/var/db/stageload) and the logs
#            (/var/log/stageload); kept by default so history survives a
#            reinstall
# --dry-run  print each command it would run, one per line prefixed with
#            "+ ", and change nothing
#
# Safe to run again. Jobs already running are left to finish: the plist
# sets AbandonProcessGroup, and each job runs in its own session.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launchd/common.sh
. "$here/common.sh"

purge=0
dry_run=0

usage() {
	echo "usage: $0 [--purge] [--dry-run]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--purge)
		purge=1
		shift
		;;
	--dry-run | -n)
		dry_run=1
		shift
		;;
	-h | --help) usage ;;
	*)
		echo "$0: unknown argument: $1" >&2
		usage
		;;
	esac
done

if [ "$dry_run" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
	echo "$0: must run as root (sudo $0)" >&2
	exit 1
fi

# bootout waits for the daemon to exit (up to the plist's ExitTimeOut), so
# the socket is gone and the database closed when it returns.
if loaded; then
	run launchctl bootout "system/$LABEL"
fi
run rm -f "$PLIST_DIR/$LABEL.plist" "$HELPER_COPY" "$NEWSYSLOG_CONF"
# The socket is not removed here: a stopped daemon removes its own, a
# stale one is replaced by the next daemon, and one still answering may
# belong to another instance (brew services). Nor is the lock file beside
# it: a lock file must never be removed while a daemon may take it, and
# /var/run is emptied at boot.
if [ "$purge" -eq 1 ]; then
	run rm -rf "$DB_DIR" "$LOG_DIR"
fi
