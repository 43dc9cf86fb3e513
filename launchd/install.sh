#!/bin/sh
# Install stageloadd as a macOS LaunchDaemon and start it.
#
#   sudo launchd/install.sh [--prefix DIR] [--copy] [--dry-run]
#
# --prefix DIR  where stageloadd is installed (DIR/bin/stageloadd);
#               default /usr/local, Homebrew on Apple Silicon: /opt/homebrew
# --copy        run a root-owned copy of the binary, installed as
#               /Library/PrivilegedHelperTools/org.stageload.stageloadd,
#               instead of DIR/bin/stageloadd itself; needed when anyone
#               but root could replace that file or a directory above it
#               (a Homebrew prefix belongs to the Homebrew user). Run
#               install.sh --copy again after each upgrade.
# --dry-run     print each command it would run, one per line prefixed
#               with "+ ", and change nothing
#
# A root LaunchDaemon runs its binary as root: install.sh refuses one that
# a user other than root could replace (the file, or any directory above
# it, not owned by root or writable by group or others) unless --copy, and
# one that loads a library someone else could replace, --copy or not
# (otool -L; skipped with a warning without the Command Line Tools).
#
# Safe to run again: a loaded daemon is booted out, and once launchd has
# let it go, enabled and bootstrapped with the new plist (bootstrap is
# retried a few times: right after a bootout it can fail with "5:
# Input/output error"); directories and data already there are kept.
# Plain POSIX sh: macOS's /bin/sh is bash 3.2 in sh mode.
set -eu

DEFAULT_PREFIX=/usr/local

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launchd/common.sh
. "$here/common.sh"
HELPER_DIR=$(dirname "$HELPER_COPY")
prefix=$DEFAULT_PREFIX
dry_run=0
copy=0

usage() {
	echo "usage: $0 [--prefix DIR] [--copy] [--dry-run]" >&2
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
	--copy)
		copy=1
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

bin=$prefix/bin/stageloadd
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

# What the program loads, by the same rule (a library someone else could
# replace runs as root too): stageloadd built with STAGELOAD_STATIC_DEPS
# loads only the system's. Checked with --copy as well, since the copy
# loads the same libraries.
if [ -e "$bin" ]; then
	rc=0
	why=$(libs_unsafe "$bin") || rc=$?
	if [ "$rc" -eq 2 ]; then
		echo "$0: warning: otool does not run here, so the libraries $bin loads are not checked (install the Command Line Tools: xcode-select --install)" >&2
	elif [ -n "$why" ]; then
		echo "$0: refusing: a root LaunchDaemon would run $bin, which loads a $why." >&2
		echo "$0: build it with -DSTAGELOAD_STATIC_DEPS=ON (the default on macOS), so it loads only the system's libraries" >&2
		exit 1
	fi
fi

daemon_bin=$bin
if [ "$copy" -eq 1 ]; then
	daemon_bin=$HELPER_COPY
elif [ -e "$bin" ]; then
	why=$(path_unsafe "$bin")
	if [ -n "$why" ]; then
		echo "$0: refusing: a root LaunchDaemon would run $bin, which a user other than root could replace ($why)." >&2
		echo "$0: install a root-owned copy instead: $0 --prefix $prefix --copy" >&2
		exit 1
	fi
fi

run install -d -m 0755 -o root -g wheel "$DB_DIR"
run install -d -m 0755 -o root -g wheel "$LOG_DIR"
if [ "$copy" -eq 1 ]; then
	# Created only when missing: macOS ships it root:wheel 1755.
	if [ ! -d "$HELPER_DIR" ]; then
		run install -d -m 1755 -o root -g wheel "$HELPER_DIR"
	fi
	run install -m 0755 -o root -g wheel "$bin" "$daemon_bin"
	if [ "$dry_run" -eq 0 ]; then
		why=$(path_unsafe "$daemon_bin")
		if [ -n "$why" ]; then
			echo "$0: refusing: the copy $daemon_bin could be replaced ($why)" >&2
			exit 1
		fi
	fi
fi
run install -m 0644 -o root -g wheel "$src" "$dst"
# The log's rotation: newsyslog moves it away and signals the daemon.
run install -m 0644 -o root -g wheel "$here/$LABEL.newsyslog" "$NEWSYSLOG_CONF"
if [ "$daemon_bin" != "$DEFAULT_PREFIX/bin/stageloadd" ]; then
	run plutil -replace ProgramArguments.0 -string "$daemon_bin" "$dst"
fi
run plutil -lint "$dst"
reload "$LABEL" "$dst"
