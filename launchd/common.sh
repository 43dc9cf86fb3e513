# Shared by the install and uninstall scripts of the daemon and of
# stageload-web: where things live, how a command is shown (and, unless
# --dry-run, run), and how a LaunchDaemon is loaded again. Sourced, not run.
# shellcheck shell=sh

LABEL=org.stageload.stageloadd
# stageload-web's (install-web.sh, uninstall-web.sh)
WEB_LABEL=org.stageload.web
PLIST_DIR=/Library/LaunchDaemons
DB_DIR=/var/db/stageload
LOG_DIR=/var/log/stageload
# newsyslog's entry for the daemon's log (org.stageload.stageloadd.newsyslog)
NEWSYSLOG_CONF=/etc/newsyslog.d/$LABEL.conf
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

# Read-only: is LABEL ($LABEL when not given) loaded in the system
# domain? Without launchctl (a dry run on another OS) it cannot be, as far
# as anyone can tell.
loaded() {
	command -v launchctl >/dev/null 2>&1 &&
		launchctl print "system/${1:-$LABEL}" >/dev/null 2>&1
}

# bootout can return before launchd has let the job go; bootstrapping it
# again then fails. Wait (up to 20 s) until LABEL is gone.
wait_gone() {
	[ "$dry_run" -eq 0 ] || return 0
	tries=0
	while loaded "$1"; do
		tries=$((tries + 1))
		if [ "$tries" -gt 100 ]; then
			echo "$0: system/$1 is still loaded 20 s after bootout" >&2
			exit 1
		fi
		sleep 0.2
	done
}

# Right after a bootout, bootstrap intermittently fails with "5:
# Input/output error"; it works a moment later. Tries BOOTSTRAP_TRIES
# times, a second apart.
BOOTSTRAP_TRIES=5
bootstrap() {
	show launchctl bootstrap system "$1"
	[ "$dry_run" -eq 0 ] || return 0
	tries=1
	until launchctl bootstrap system "$1"; do
		if [ "$tries" -ge "$BOOTSTRAP_TRIES" ]; then
			echo "$0: launchctl bootstrap system $1 failed $tries times" >&2
			exit 1
		fi
		tries=$((tries + 1))
		echo "$0: bootstrap failed; trying again ($tries of $BOOTSTRAP_TRIES)" >&2
		sleep 1
	done
}

# (Re)load LABEL from PLIST: a loaded one is booted out and waited for,
# then the label is enabled (one disabled by launchctl disable, or by an
# earlier failed load, would make bootstrap fail; brew services enables
# it the same way) and bootstrapped.
reload() {
	if loaded "$1"; then
		run launchctl bootout "system/$1"
		wait_gone "$1"
	fi
	run launchctl enable "system/$1"
	bootstrap "$2"
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

# The libraries the Mach-O program BIN loads, one path a line, as otool -L
# lists them, with @executable_path, @loader_path and @rpath resolved
# (@rpath against the program's LC_RPATH entries; the first that exists).
# Exits 2 when otool does not run (the Command Line Tools: xcode-select
# --install).
libs_of() {
	# Without the Command Line Tools, /usr/bin/otool is a stand-in that
	# only offers to install them: it must run, not only exist.
	command -v otool >/dev/null 2>&1 && otool -L "$1" >/dev/null 2>&1 ||
		return 2
	bin_dir=$(cd -P "$(dirname "$1")" 2>/dev/null && pwd -P) || return 1
	rpaths=$(otool -l "$1" 2>/dev/null |
		awk '$1 == "cmd" && $2 == "LC_RPATH" { r = 1; next }
		     r && $1 == "path" { print $2; r = 0 }' |
		sed "s|^@loader_path|$bin_dir|; s|^@executable_path|$bin_dir|")
	# The first line names the file; each next one is a library and
	# its versions in parentheses.
	otool -L "$1" 2>/dev/null | sed -n '2,$p' |
		sed 's/^[[:space:]]*//; s/ (compatibility version.*//; s/ (current version.*//' |
		while IFS= read -r lib; do
			case $lib in
			@loader_path/* | @executable_path/*)
				echo "$bin_dir/${lib#*/}"
				;;
			@rpath/*)
				found=
				for r in $rpaths; do
					if [ -e "$r/${lib#@rpath/}" ]; then
						found=$r/${lib#@rpath/}
						break
					fi
				done
				echo "${found:-$lib}"
				;;
			*) echo "$lib" ;;
			esac
		done
}

# Why a root program BIN must not be run for a library it loads: the
# first one (outside /usr/lib and /System, which are the sealed system
# volume's or the dyld shared cache's) that someone other than root could
# replace, by path_unsafe's rule, or nothing. Exits 2, printing nothing,
# without otool: the caller says the libraries were not checked.
libs_unsafe() {
	libs=$(libs_of "$1") || return $?
	# A name may hold spaces: one a line.
	printf '%s\n' "$libs" | while IFS= read -r lib; do
		case $lib in
		"" | /usr/lib/* | /System/*) continue ;;
		@*)
			echo "library $lib: cannot tell where it is"
			break
			;;
		esac
		why=$(path_unsafe "$lib")
		if [ -n "$why" ]; then
			echo "library $lib: $why"
			break
		fi
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
