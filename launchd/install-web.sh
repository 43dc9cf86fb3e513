#!/bin/sh
# Install stageload-web (the dashboard and /metrics, docs/dashboards.md) as
# a macOS LaunchDaemon running as nobody, and start it. Install the daemon
# first (install.sh): the web program is its client.
#
#   sudo launchd/install-web.sh [--prefix DIR] [--dry-run]
#
# --prefix DIR  where stageload-web is installed (DIR/bin/stageload-web);
#               default /usr/local, Homebrew on Apple Silicon: /opt/homebrew
# --dry-run     print each command it would run, one per line prefixed
#               with "+ ", and change nothing
#
# Safe to run again: a loaded one is booted out and, once launchd has let
# it go, enabled and bootstrapped with the new plist (bootstrap retried, as
# install.sh does: launchd/common.sh). Remove it with uninstall-web.sh.
set -eu

DEFAULT_PREFIX=/usr/local

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launchd/common.sh
. "$here/common.sh"
LABEL=$WEB_LABEL
prefix=$DEFAULT_PREFIX
dry_run=0

usage() {
	echo "usage: $0 [--prefix DIR] [--dry-run]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--prefix)
		[ $# -ge 2 ] || usage
		prefix=$2
		shift 2
		;;
	--prefix=*)
		prefix=${1#--prefix=}
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
case $prefix in
/*) prefix=${prefix%/} ;;
*)
	echo "$0: --prefix must be an absolute path" >&2
	exit 2
	;;
esac

bin=$prefix/bin/stageload-web
src=$here/$LABEL.plist
dst=$PLIST_DIR/$LABEL.plist

[ -f "$src" ] || {
	echo "$0: $src is missing" >&2
	exit 1
}
if [ ! -x "$bin" ]; then
	if [ "$dry_run" -eq 0 ]; then
		echo "$0: $bin not found; install stageload first or pass --prefix" >&2
		exit 1
	fi
	echo "note: $bin does not exist yet" >&2
fi
if [ "$dry_run" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
	echo "$0: must run as root (sudo $0)" >&2
	exit 1
fi

run install -m 0644 -o root -g wheel "$src" "$dst"
if [ "$bin" != "$DEFAULT_PREFIX/bin/stageload-web" ]; then
	run plutil -replace ProgramArguments.0 -string "$bin" "$dst"
fi
run plutil -lint "$dst"
reload "$LABEL" "$dst"
