# Shared by install.sh and uninstall.sh: where things live, and how a
# command is shown (and, unless --dry-run, run). Sourced, not run.
# shellcheck shell=sh

LABEL=org.stageload.stageloadd
# stageload-web's (install-web.sh, uninstall-web.sh)
WEB_LABEL=org.stageload.web
PLIST_DIR=/Library/LaunchDaemons
DB_DIR=/var/db/stageload
LOG_DIR=/var/log/stageload
# The root-owned copy of the binary install.sh --copy makes.
HELPER_COPY=/Library/PrivilegedHelperTools/$LABEL

# Print a command the way a shell would read it back.
show() {
	line="+"
	for arg in "$@"; do
		case $arg in
		*[!A-Za-z0-9_./:=@%+,-]* | "")
			arg="'$(printf '%s' "$arg" | sed "s/'/'\\\\''/g")'"
			;;
		esac
		line="$line $arg"
	done
	printf '%s\n' "$line"
}

# dry_run is set by the script that sources this file.
run() {
	show "$@"
	[ "$dry_run" -eq 1 ] || "$@"
}

# Read-only: is the daemon loaded in the system domain? Without launchctl
# (a dry run on another OS) it cannot be, as far as anyone can tell.
loaded() {
	command -v launchctl >/dev/null 2>&1 &&
		launchctl print "system/$LABEL" >/dev/null 2>&1
}

# Why a root LaunchDaemon must not run PATH: prints the first component
# that someone other than root could replace (not owned by root, or
# writable by group or others), or nothing when there is none. Every
# directory from / down is checked, links followed (each link's directory
# too), so neither the file nor a directory above it can be swapped.
# Portable: ls -ldn prints the mode and the numeric owner on BSD and GNU.
path_unsafe() {
	p=$1
	hops=0
	while :; do
		hops=$((hops + 1))
		if [ "$hops" -gt 40 ]; then
			echo "$1: too many symbolic links"
			return 0
		fi
		dir=$(cd -P "$(dirname "$p")" 2>/dev/null && pwd -P) || {
			echo "$(dirname "$p"): no such directory"
			return 0
		}
		d=$dir
		while :; do
			why=$(component_unsafe "$d")
			[ -z "$why" ] || {
				echo "$why"
				return 0
			}
			[ "$d" = / ] && break
			d=$(dirname "$d")
		done
		p=${dir%/}/$(basename "$p")
		if [ -L "$p" ]; then
			t=$(readlink "$p")
			case $t in
			/*) p=$t ;;
			*) p=${dir%/}/$t ;;
			esac
			continue
		fi
		component_unsafe "$p"
		return 0
	done
}

# One file or directory: owned by root, not writable by group or others.
component_unsafe() {
	# ls -ldn is the portable way to the mode and the numeric owner; its
	# fields are split on purpose.
	# shellcheck disable=SC2012,SC2046
	set -- "$1" $(ls -ldn "$1" 2>/dev/null)
	if [ $# -lt 4 ]; then
		echo "$1: does not exist"
		return 0
	fi
	case $2 in
	?????w* | ????????w*)
		echo "$1 is writable by group or others (mode $2)"
		return 0
		;;
	esac
	if [ "$4" != 0 ]; then
		echo "$1 is owned by uid $4, not root"
	fi
}
