# Shared by install.sh and uninstall.sh: where things live, and how a
# command is shown (and, unless --dry-run, run). Sourced, not run.
# shellcheck shell=sh

LABEL=org.stageload.stageloadd
# stageload-web's (install-web.sh, uninstall-web.sh)
WEB_LABEL=org.stageload.web
PLIST_DIR=/Library/LaunchDaemons
DB_DIR=/var/db/stageload
LOG_DIR=/var/log/stageload

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
