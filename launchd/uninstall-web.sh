#!/bin/sh
# Stop stageload-web and remove its LaunchDaemon (it keeps no data).
#
#   sudo launchd/uninstall-web.sh [--dry-run]
#
# --dry-run  print each command it would run, one per line prefixed with
#            "+ ", and change nothing
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launchd/common.sh
. "$here/common.sh"
LABEL=$WEB_LABEL
dry_run=0

usage() {
	echo "usage: $0 [--dry-run]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
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
if loaded; then
	run launchctl bootout "system/$LABEL"
fi
run rm -f "$PLIST_DIR/$LABEL.plist"
