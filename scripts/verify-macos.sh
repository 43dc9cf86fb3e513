#!/bin/bash
# Verify a stageload install on a Mac, on day one: does each number the
# daemon shows agree with what macOS itself says, is what root runs safe,
# and does a job run the way docs/macos.md says it does? Prints one line
# per check, in the order of docs/macos.md's checklist:
#
#   [PASS] / [FAIL] / [WARN] / [SKIP]  N  what was compared: what was seen
#
# and exits 0 when nothing failed, 1 otherwise, 2 for a bad argument.
#
#   scripts/verify-macos.sh [--dry-run] [--quick] [--socket PATH]
#                           [--python PATH] [--other-user NAME]
#
# --dry-run          list the checks (with their tolerances) and run
#                    nothing; works on any OS
# --quick            only the checks that start no job (what a doctor
#                    would do): 1-10
# --socket PATH      the daemon's socket (default: stageloadctl's rule)
# --python PATH      the Python with torch for the GPU checks (default
#                    python3 on PATH)
# --other-user NAME  a second account to check that another user cannot
#                    read or cancel your job (uses sudo -u NAME; asks for
#                    your password if sudo needs it)
#
# The jobs it starts are small (a sleep, a groups printer, cat of one
# file, a 200 MB perl process, a small matmul, a Metal device probe) and
# are cancelled or waited for before it exits. The groups and Metal
# probes are compiled here with cc (the Command Line Tools); without it
# those checks are skipped with a message. Written for macOS's /bin/bash
# 3.2: no associative arrays, no mapfile.

# Functions run through trap and wait_for look unreachable to shellcheck.
# shellcheck disable=SC2317
set -u

# The labels the daemon may run under: launchd/install.sh's, and brew
# services' (`sudo brew services start stageload`).
LABELS="org.stageload.stageloadd homebrew.mxcl.stageload"
SOCKET_DEFAULT=/var/run/stageload.sock
# Tolerances, stated once (docs/macos.md, "Checklist").
FREE_TOL_PCT=3          # free % read by the daemon and sysctl moments apart
SWAP_TOL_MIB=64         # swap used read moments apart: plus 5 % of it
FOOTPRINT_TOL_PCT=10    # our footprint against top/footprint: plus 16 MiB
FOOTPRINT_TOL_MIB=16
GPU_SLOW_FACTOR=3       # a detached matmul this much slower: "slowed"
QUEUED_WAIT_FREE=95     # a job that waits for this much free memory

dry_run=0
quick=0
socket=
python=python3
other_user=
failures=0

usage() {
	sed -n '/^#   scripts\/verify-macos.sh/,/^# *your password/p' "$0" |
		sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--dry-run | -n) dry_run=1 ;;
	--quick) quick=1 ;;
	--socket)
		[ $# -ge 2 ] || usage
		socket=$2
		shift
		;;
	--python)
		[ $# -ge 2 ] || usage
		python=$2
		shift
		;;
	--other-user)
		[ $# -ge 2 ] || usage
		other_user=$2
		shift
		;;
	-h | --help) usage ;;
	*)
		echo "$0: unknown argument: $1" >&2
		usage
		;;
	esac
	shift
done

# --- output -------------------------------------------------------------

result() { # STATUS N TEXT
	printf '[%s] %2s  %s\n' "$1" "$2" "$3"
	[ "$1" = FAIL ] && failures=$((failures + 1))
	return 0
}
pass() { result PASS "$@"; }
fail() { result FAIL "$@"; }
warn() { result WARN "$@"; }
skip() { result SKIP "$@"; }

# --- the checks, as listed by --dry-run ----------------------------------

# One line each: number, whether it starts a job (job/quiet), what it does.
CHECKS="1|quiet|the daemon answers: stageloadctl info (version, interval, a sample under 5 s old)
2|quiet|the socket /var/run/stageload.sock is root's and mode 0666, and launchd runs the daemon: system/org.stageload.stageloadd, system/homebrew.mxcl.stageload (brew services), or else the socket's owner is named
3|quiet|the daemon's binary and every directory above it are root's and not writable by group or others
4|quiet|the libraries the daemon's binary loads (otool -L): each one outside /usr/lib and /System by the same rule (none, when built with STAGELOAD_STATIC_DEPS); without the Command Line Tools, a warning
5|quiet|the config file, when the daemon was given one, by the same rule
6|quiet|free % against sysctl kern.memorystatus_level, within $FREE_TOL_PCT points
7|quiet|free % against memory_pressure -Q (System-wide memory free percentage), within $FREE_TOL_PCT points
8|quiet|total memory equals sysctl hw.memsize_usable (the base of kern.memorystatus_level) exactly
9|quiet|swap used against sysctl vm.swapusage used, within $SWAP_TOL_MIB MiB + 5 %; total equal unless a swap file came or went
10|quiet|pressure against sysctl kern.memorystatus_vm_pressure_level (1 normal, 2 warn, 4 critical)
11|job|footprint of a 200 MB perl process (stageloadctl meter --pid) against top -stats mem and footprint, within $FOOTPRINT_TOL_PCT % + $FOOTPRINT_TOL_MIB MiB
12|job|the job's real groups: a helper printing getgroups() (the kernel's list, the legacy 16-entry call) in a detached job and in this shell print the same; and the login name (logname: getlogin, set by setlogin)
13|job|another account (--other-user) sees your job but not its command, and cannot cancel it (exit 77)
14|job|keep-awake while a job runs: pmset -g assertions shows caffeinate holding PreventUserIdleSystemSleep; after it ends, not
15|job|keep-awake while a job is queued (--wait-free $QUEUED_WAIT_FREE): info says held for the queue, and on AC power pmset -g assertions shows caffeinate holding PreventSystemSleep; after it is cancelled, not
16|job|privacy (TCC): a detached job reading a file in ~/Documents either reads it (stageloadd has Full Disk Access) or fails with show naming Full Disk Access
17|job|the GPU from an attached job (stageloadctl run) and a detached one (submit): torch.backends.mps.is_available() and a 2048x2048 float32 matmul, timed; says which way jobs should run
18|job|the Metal default device from an attached and a detached job: MTLCreateSystemDefaultDevice() and MTLCopyAllDevices(), printed as found (tools such as ggml and candle use the first)"

if [ "$dry_run" -eq 1 ]; then
	echo "verify-macos.sh: the checks (--dry-run: nothing is run)"
	echo "$CHECKS" | while IFS='|' read -r n kind text; do
		if [ "$quick" -eq 1 ] && [ "$kind" = job ]; then
			continue
		fi
		printf '  %2s  %-5s  %s\n' "$n" "$kind" "$text"
	done
	echo "job: starts a small job; quiet: only reads (also run by --quick)"
	exit 0
fi

if [ "$(uname -s)" != Darwin ]; then
	echo "$0: this checks a Mac; on $(uname -s) only --dry-run works" >&2
	exit 2
fi

# --- helpers ---------------------------------------------------------------

ctl() {
	if [ -n "$socket" ]; then
		stageloadctl --socket "$socket" "$@"
	else
		stageloadctl "$@"
	fi
}

# The first number (or "string") after "KEY": in JSON on stdin.
json_num() { sed -n "s/.*\"$1\":[[:space:]]*\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p" | head -n 1; }
json_str() { sed -n "s/.*\"$1\":[[:space:]]*\"\([^\"]*\)\".*/\1/p" | head -n 1; }

# awk does the arithmetic bash 3.2 cannot (floats, 64-bit).
calc() { awk "BEGIN { print $1 }"; }
abs_diff_le() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# "123.45M" / "2G" / "812K" (top, vm.swapusage) to bytes.
to_bytes() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = substr(v, length(v), 1)
		if (u == "+" || u == "-") { v = substr(v, 1, length(v) - 1); u = substr(v, length(v), 1) }
		m = 1
		if (u == "K" || u == "k") m = 1024
		else if (u == "M") m = 1024 * 1024
		else if (u == "G") m = 1024 * 1024 * 1024
		else if (u == "T") m = 1024 * 1024 * 1024 * 1024
		printf "%.0f\n", n * m }'
}
mib() { calc "$1 / 1048576" | awk '{ printf "%.1f", $1 }'; }

# Poll CMD (a function name) every 0.2 s for up to SECS seconds.
wait_for() {
	local secs=$1 i=0
	shift
	while [ "$i" -lt $((secs * 5)) ]; do
		"$@" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

JOBS=""
tcc_file=
cleanup() {
	local id
	for id in $JOBS; do
		ctl cancel "$id" >/dev/null 2>&1
	done
	[ -n "${hog_pid:-}" ] && kill "$hog_pid" 2>/dev/null
	[ -n "$tcc_file" ] && rm -f "$tcc_file"
	[ -n "${work:-}" ] && rm -rf "$work"
}
trap cleanup EXIT
work=$(mktemp -d "${TMPDIR:-/tmp}/sl-verify.XXXXXX") || exit 1

submit() { # submit ARGS... -> prints the id, remembers it for cleanup
	local id
	id=$(ctl submit "$@") || return 1
	JOBS="$JOBS $id"
	echo "$id"
}
state_of() { ctl --json show "$1" 2>/dev/null | json_str state; }
is_running() { [ "$(state_of "$1")" = running ]; }
is_ended() {
	case $(state_of "$1") in
	exited | killed | failed | cancelled | lost) return 0 ;;
	esac
	return 1
}
# run_both PROG ARGS...: PROG in an attached job (stageloadctl run) into
# $att and in a detached one (submit, waited for) into $det; the last
# line each printed.
run_both() {
	local id
	att=$(ctl run -- "$@" 2>/dev/null | tail -n 1)
	det=
	id=$(cd "$work" && submit -- "$@") || id=
	if [ -n "$id" ] && wait_for 120 is_ended "$id"; then
		det=$(ctl logs "$id" 2>/dev/null | tail -n 1)
	fi
}

# A C or Objective-C probe compiled with cc into $work (the Command Line
# Tools); fails, printing nothing, without a compiler.
have_cc() { command -v cc >/dev/null 2>&1 && cc --version >/dev/null 2>&1; }

# --- 1: the daemon answers --------------------------------------------------

info=$(ctl --json info 2>"$work/err")
if [ -z "$info" ]; then
	fail 1 "stageloadctl info: $(cat "$work/err")"
	echo "The daemon does not answer; the other checks need it." >&2
	exit 1
fi
version=$(echo "$info" | json_str daemon_version)
interval=$(echo "$info" | json_num interval_ms)
sampled=$(echo "$info" | json_num sampled_at_ms)
now_ms=$(calc "$(date +%s) * 1000")
if [ -n "$sampled" ] && abs_diff_le "$now_ms" "$sampled" 5000; then
	pass 1 "stageloadd $version answers, interval $interval ms, sample $(calc "($now_ms - $sampled) / 1000")s old"
else
	fail 1 "stageloadd $version answers but its latest sample is not recent (sampled_at_ms $sampled)"
fi

# --- 2: the socket, and what runs the daemon -------------------------------------

sock=${socket:-$SOCKET_DEFAULT}
# Whatever installed it: the first label launchd knows in the system
# domain, else the process that has the socket open.
dlabel=
lp=
for l in $LABELS; do
	if lp=$(launchctl print "system/$l" 2>/dev/null) && [ -n "$lp" ]; then
		dlabel=$l
		break
	fi
done
program=
owner_pid=
if [ -n "$dlabel" ]; then
	program=$(echo "$lp" | sed -n 's/^[[:space:]]*program = \(.*\)/\1/p' | head -n 1)
	[ -n "$program" ] || program=$(echo "$lp" | sed -n '/arguments = {/,/}/p' | sed -n '2s/^[[:space:]]*//p')
else
	owner_pid=$(lsof -t "$sock" 2>/dev/null | head -n 1)
	[ -n "$owner_pid" ] && program=$(ps -o comm= -p "$owner_pid" 2>/dev/null)
fi
# The mode and owner as ls prints them, split into fields on purpose.
# shellcheck disable=SC2012,SC2046
set -- $(ls -ln "$sock" 2>/dev/null)
if [ $# -lt 3 ]; then
	fail 2 "no socket at $sock"
elif [ "$1" != srw-rw-rw- ] || [ "$3" != 0 ]; then
	fail 2 "$sock is $1 owned by uid $3: expected srw-rw-rw- root"
elif [ -n "$dlabel" ]; then
	lstate=$(echo "$lp" | sed -n 's/^[[:space:]]*state = \(.*\)/\1/p' | head -n 1)
	if [ "$lstate" = running ]; then
		pass 2 "$sock is srw-rw-rw- root; launchd: system/$dlabel running $program"
	else
		fail 2 "$sock is srw-rw-rw- root, but launchd says system/$dlabel state = $lstate"
	fi
elif [ -n "$program" ]; then
	warn 2 "$sock is srw-rw-rw- root, served by pid $owner_pid ($program), but launchd lists neither $LABELS in the system domain (installed another way? or run this with sudo)"
else
	warn 2 "$sock is srw-rw-rw- root; launchctl print showed none of $LABELS and lsof no owner (try with sudo)"
fi

# --- 3-5: what root runs and reads ----------------------------------------------

here=$(cd "$(dirname "$0")" && pwd)
common=$here/../launchd/common.sh
# install.sh's rules (launchd/common.sh), in a shell of their own.
# shellcheck disable=SC2016 # expanded by the inner sh
unsafe() { sh -c '. "$1" && path_unsafe "$2"' sh "$common" "$1"; }
# shellcheck disable=SC2016 # expanded by the inner sh
libs_unsafe() { sh -c '. "$1" && libs_unsafe "$2"' sh "$common" "$1"; }
if [ ! -f "$common" ]; then
	skip 3 "launchd/common.sh not found beside this script (run it from the source tree)"
	skip 4 "launchd/common.sh not found beside this script"
elif [ -z "$program" ]; then
	skip 3 "could not learn the daemon's binary from launchd or the socket (try with sudo)"
	skip 4 "could not learn the daemon's binary (try with sudo)"
else
	why=$(unsafe "$program")
	if [ -z "$why" ]; then
		pass 3 "$program and the directories above it are root's"
	else
		fail 3 "$program: $why (sudo launchd/install.sh --copy installs a root-owned copy)"
	fi
	rc=0
	why=$(libs_unsafe "$program") || rc=$?
	if [ "$rc" -eq 2 ]; then
		warn 4 "otool does not run here, so the libraries $program loads were not checked: install the Command Line Tools (xcode-select --install) and run this again"
	elif [ -n "$why" ]; then
		fail 4 "$program loads a $why: build it with -DSTAGELOAD_STATIC_DEPS=ON (docs/macos.md, \"Libraries a root program loads\")"
	else
		pass 4 "$program loads only root's libraries: $(otool -L "$program" 2>/dev/null | sed -n '2,$p' | awk '{ print $1 }' | tr '\n' ' ')"
	fi
fi
conf=
[ -n "$dlabel" ] && conf=$(echo "$lp" | sed -n '/arguments = {/,/}/p' | awk 'p { print; exit } /--config/ { p = 1 }' | tr -d '[:space:]')
if [ -z "$conf" ]; then
	skip 5 "the daemon was given no --config (or launchctl print needs sudo)"
elif [ -f "$common" ]; then
	why=$(unsafe "$conf")
	if [ -z "$why" ]; then
		pass 5 "config $conf is root's"
	else
		fail 5 "config $conf: $why (the daemon refuses it at start and at SIGHUP)"
	fi
fi

# --- 6-10: the numbers ---------------------------------------------------------

free=$(echo "$info" | json_num free_pct)
level=$(sysctl -n kern.memorystatus_level 2>/dev/null)
if [ -z "$level" ]; then
	skip 6 "sysctl kern.memorystatus_level unreadable"
elif abs_diff_le "$free" "$level" "$FREE_TOL_PCT"; then
	pass 6 "free $free % against kern.memorystatus_level $level"
else
	fail 6 "free $free % against kern.memorystatus_level $level: more than $FREE_TOL_PCT points apart"
fi

mp=$(memory_pressure -Q 2>/dev/null | sed -n 's/.*free percentage: *\([0-9]*\)%.*/\1/p')
if [ -z "$mp" ]; then
	skip 7 "memory_pressure -Q printed no free percentage"
elif abs_diff_le "$free" "$mp" "$FREE_TOL_PCT"; then
	pass 7 "free $free % against memory_pressure $mp %"
else
	fail 7 "free $free % against memory_pressure $mp %: more than $FREE_TOL_PCT points apart"
fi

total=$(echo "$info" | json_num total_bytes)
memname=hw.memsize_usable
memsize=$(sysctl -n "$memname" 2>/dev/null)
if [ -z "$memsize" ]; then
	memname=hw.memsize # a kernel without it: the daemon takes this too
	memsize=$(sysctl -n "$memname" 2>/dev/null)
fi
if [ "$total" = "$memsize" ]; then
	pass 8 "total $total bytes = $memname"
else
	fail 8 "total $total bytes, $memname $memsize"
fi

swap_used=$(echo "$info" | json_num swap_used_bytes)
swap_total=$(echo "$info" | json_num swap_total_bytes)
su=$(sysctl -n vm.swapusage 2>/dev/null)
k_used=$(echo "$su" | sed -n 's/.*used = *\([0-9.]*[KMGT]\).*/\1/p')
k_total=$(echo "$su" | sed -n 's/.*total = *\([0-9.]*[KMGT]\).*/\1/p')
if [ -z "$k_used" ]; then
	skip 9 "sysctl vm.swapusage: could not read '$su'"
else
	kb=$(to_bytes "$k_used")
	tb=$(to_bytes "$k_total")
	tol=$(calc "$SWAP_TOL_MIB * 1048576 + $kb * 0.05")
	if abs_diff_le "$swap_used" "$kb" "$tol"; then
		msg="swap used $(mib "$swap_used") MiB against vm.swapusage $k_used"
		if abs_diff_le "$swap_total" "$tb" 1048576; then
			pass 9 "$msg; total $(mib "$swap_total") MiB = $k_total"
		else
			warn 9 "$msg; total $(mib "$swap_total") MiB against $k_total (a swap file came or went between the reads? run again)"
		fi
	else
		fail 9 "swap used $(mib "$swap_used") MiB against vm.swapusage $k_used: further apart than $SWAP_TOL_MIB MiB + 5 %"
	fi
fi

pressure=$(echo "$info" | json_str pressure)
pl=$(sysctl -n kern.memorystatus_vm_pressure_level 2>/dev/null)
case $pl in
1) want=normal ;;
2) want=warn ;;
4) want=critical ;;
*) want="unknown" ;;
esac
if [ -z "$pl" ]; then
	skip 10 "sysctl kern.memorystatus_vm_pressure_level unreadable"
elif [ "$pressure" = "$want" ]; then
	pass 10 "pressure $pressure for kern.memorystatus_vm_pressure_level $pl"
else
	fail 10 "pressure $pressure, but kern.memorystatus_vm_pressure_level $pl means $want (it may have changed between the reads: run again)"
fi

if [ "$quick" -eq 1 ]; then
	echo "--quick: the checks that start jobs (11-18) were not run"
	[ "$failures" -eq 0 ]
	exit $?
fi

# --- 11: footprint --------------------------------------------------------------

/usr/bin/perl -e '$x = "a" x (200 * 1024 * 1024); sleep 60' &
hog_pid=$!
sleep 2 # let it fill its 200 MB: the one fixed wait, for perl's allocation
ours=$(ctl --json meter --count 2 --pid "$hog_pid" 2>/dev/null | tail -n 1 | json_num footprint_bytes)
top_mem=$(top -l 1 -pid "$hog_pid" -stats mem 2>/dev/null | tail -n 1 | tr -d ' ')
fp_line=$(footprint "$hog_pid" 2>/dev/null | sed -n 's/.*Footprint: *\([0-9.]*\) *\([KMGT]\)B.*/\1\2/p' | head -n 1)
if [ -z "$ours" ]; then
	fail 11 "stageloadctl meter --pid $hog_pid gave no footprint"
else
	tol=$(calc "$FOOTPRINT_TOL_MIB * 1048576 + $ours * $FOOTPRINT_TOL_PCT / 100")
	line="footprint $(mib "$ours") MiB"
	bad=0
	if [ -n "$top_mem" ]; then
		line="$line, top $top_mem"
		abs_diff_le "$ours" "$(to_bytes "$top_mem")" "$tol" || bad=1
	fi
	if [ -n "$fp_line" ]; then
		line="$line, footprint(1) $fp_line"
		abs_diff_le "$ours" "$(to_bytes "$fp_line")" "$tol" || bad=1
	fi
	if [ -z "$top_mem" ] && [ -z "$fp_line" ]; then
		skip 11 "$line; neither top nor footprint gave a number to compare"
	elif [ "$bad" -eq 0 ]; then
		pass 11 "$line"
	else
		fail 11 "$line: further apart than $FOOTPRINT_TOL_PCT % + $FOOTPRINT_TOL_MIB MiB"
	fi
fi
kill "$hog_pid" 2>/dev/null
hog_pid=

# --- 12: the job's real groups and login name ------------------------------------

# id -G asks the directory for the user's groups, not the kernel for the
# process's: it would pass with a job's groups wrong. getgroups() without
# _DARWIN_UNLIMITED_GETGROUPS is the kernel's list, at most 16.
cat >"$work/groups16.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>

int
main(void)
{
	gid_t g[16];
	int n = getgroups(16, g), i;

	if (n < 0)
		return 1;
	for (i = 0; i < n; i++)
		printf("%u\n", (unsigned)g[i]);
	return 0;
}
EOF
if ! have_cc || ! cc -o "$work/groups16" "$work/groups16.c" 2>"$work/cc.err"; then
	skip 12 "no C compiler to build the groups probe (xcode-select --install): $(head -n 1 "$work/cc.err" 2>/dev/null)"
else
	chmod 0755 "$work" "$work/groups16"
	want_groups=$("$work/groups16" | sort -n | tr '\n' ' ')
	id12=$(cd "$work" && submit -- /bin/sh -c "$work/groups16 | sort -n | tr '\\n' ' '; echo; logname") || id12=
	if [ -z "$id12" ] || ! wait_for 20 is_ended "$id12"; then
		fail 12 "a detached job (groups probe; logname) did not end in 20 s"
	else
		out=$(ctl logs "$id12" 2>/dev/null)
		got_groups=$(echo "$out" | sed -n 1p)
		got_login=$(echo "$out" | sed -n 2p)
		if [ "$got_groups" != "$want_groups" ]; then
			fail 12 "the job's kernel groups '$got_groups', this shell's '$want_groups'"
		elif [ "$got_login" != "$(id -un)" ]; then
			fail 12 "groups match, but the job's login name is '$got_login', not $(id -un)"
		else
			n=$(echo "$want_groups" | wc -w | tr -d ' ')
			note=
			[ "$n" -ge 16 ] && note=" (16, the most macOS passes on: submit warns that more are left out)"
			pass 12 "the job has this shell's $n kernel groups$note and login name $got_login"
		fi
	fi
fi

# --- 13: another account ------------------------------------------------------------

if [ -z "$other_user" ]; then
	skip 13 "no --other-user NAME given"
elif ! id "$other_user" >/dev/null 2>&1; then
	fail 13 "no user $other_user"
else
	id13=$(submit -- /bin/sleep 30)
	as_other() { sudo -u "$other_user" stageloadctl ${socket:+--socket "$socket"} "$@"; }
	seen=$(as_other --json show "$id13" 2>/dev/null)
	as_other cancel "$id13" >/dev/null 2>&1
	rc=$?
	if [ -z "$seen" ]; then
		fail 13 "$other_user could not see job $id13 at all"
	elif echo "$seen" | grep -q '"argv":[[:space:]]*\['; then
		fail 13 "$other_user sees job $id13's command line"
	elif [ "$rc" -ne 77 ]; then
		fail 13 "$other_user's cancel of job $id13 exited $rc, not 77 (permission denied)"
	else
		pass 13 "$other_user sees job $id13 without its command and cannot cancel it"
	fi
	ctl cancel "$id13" >/dev/null 2>&1
fi

# --- 14, 15: keeping the Mac awake ----------------------------------------------------

# held ASSERTION: caffeinate holds it now.
held() { pmset -g assertions 2>/dev/null | grep -i caffeinate | grep -q "$1"; }
not_held() { ! held "$1"; }
awake_hold() { ctl --json info 2>/dev/null | json_str hold; }
id14=$(submit -- /bin/sleep 60)
if [ -z "$id14" ] || ! wait_for 20 is_running "$id14"; then
	fail 14 "a detached sleep did not start in 20 s"
elif ! wait_for 5 held PreventUserIdleSystemSleep; then
	fail 14 "job $id14 runs, but pmset -g assertions shows no caffeinate PreventUserIdleSystemSleep (keep_awake = 0 in the config? the daemon's log says why)"
else
	ctl cancel "$id14" >/dev/null 2>&1
	if wait_for 10 is_ended "$id14" && wait_for 5 not_held PreventUserIdleSystemSleep; then
		pass 14 "caffeinate held PreventUserIdleSystemSleep while job $id14 ran, and let go after"
	else
		fail 14 "the assertion was held while job $id14 ran, but still is after it ended (another job running?)"
	fi
fi

free_now=$(ctl --json info 2>/dev/null | json_num free_pct)
on_ac=0
pmset -g batt 2>/dev/null | head -n 1 | grep -q "AC Power" && on_ac=1
if awk -v f="${free_now:-100}" -v w="$QUEUED_WAIT_FREE" 'BEGIN { exit !(f >= w) }'; then
	skip 15 "free memory is $free_now %, so a job waiting for $QUEUED_WAIT_FREE % would start at once"
elif [ "$(ctl --json info 2>/dev/null | json_num running)" != 0 ] ||
	[ "$(ctl --json info 2>/dev/null | json_num admitted)" != 0 ]; then
	skip 15 "a job runs: the queue's hold shows only when none does"
else
	id15=$(cd "$work" && submit --wait-free "$QUEUED_WAIT_FREE" -- /usr/bin/true) || id15=
	is_queue() { [ "$(awake_hold)" = queue ]; }
	if [ -z "$id15" ]; then
		fail 15 "could not queue a job with --wait-free $QUEUED_WAIT_FREE"
	elif ! wait_for 10 is_queue; then
		fail 15 "job $id15 waits, but info's keep_awake hold is '$(awake_hold)', not queue ($(ctl info 2>/dev/null | grep '^awake'))"
	elif [ "$on_ac" -eq 1 ] && ! wait_for 5 held PreventSystemSleep; then
		fail 15 "on AC power, with job $id15 queued, pmset -g assertions shows no caffeinate PreventSystemSleep"
	else
		ctl cancel "$id15" >/dev/null 2>&1
		is_released() { [ -z "$(awake_hold)" ] && not_held PreventSystemSleep; }
		if ! wait_for 10 is_released; then
			fail 15 "the queue's hold was taken, but not let go after job $id15 was cancelled"
		elif [ "$on_ac" -eq 1 ]; then
			pass 15 "while job $id15 waited: $(ctl info 2>/dev/null | grep '^awake' | sed 's/^awake *//'); caffeinate held PreventSystemSleep on AC power, and let go after"
		else
			warn 15 "on battery: info said held for the queue while job $id15 waited; plug in the Mac and run again to see PreventSystemSleep (it holds on AC power only)"
		fi
	fi
fi

# --- 16: privacy (TCC) -------------------------------------------------------------------

# The usual failure: a job reading a model under ~/Documents, not
# starting there. The file is made by this shell (which may itself be
# asked for consent) and removed at exit.
if [ ! -d "$HOME/Documents" ]; then
	skip 16 "no ~/Documents"
elif ! tcc_file=$(mktemp "$HOME/Documents/.stageload-verify.XXXXXX" 2>/dev/null) ||
	! echo stageload >"$tcc_file" 2>/dev/null; then
	tcc_file=
	skip 16 "this shell cannot write in ~/Documents itself (Terminal has no access there?)"
else
	id16=$(cd "$work" && submit -- /bin/cat "$tcc_file") || id16=
	if [ -z "$id16" ] || ! wait_for 20 is_ended "$id16"; then
		fail 16 "a detached job reading a file in ~/Documents did not end in 20 s"
	else
		show=$(ctl --json show "$id16")
		st=$(echo "$show" | json_str state)
		code=$(echo "$show" | json_num exit_code)
		if [ "$st" = exited ] && [ "$code" = 0 ]; then
			pass 16 "a detached job read a file in ~/Documents: stageloadd has Full Disk Access"
		elif echo "$show" | grep -q "Full Disk Access"; then
			pass 16 "a detached job could not read a file in ~/Documents, and stageloadctl show $id16 names Full Disk Access and stageloadctl run"
		else
			fail 16 "a detached job reading ~/Documents ended $st (exit $code) without the hint: $(echo "$show" | json_str end_detail); its log: $(ctl logs "$id16" 2>/dev/null | tail -n 1)"
		fi
	fi
	rm -f "$tcc_file"
	tcc_file=
fi

# --- 17: the GPU through torch ------------------------------------------------------------------

PY='import time
try:
    import torch
except ImportError:
    print("notorch"); raise SystemExit(0)
ok = torch.backends.mps.is_available()
if not ok:
    print("mps=0 ms=-1"); raise SystemExit(0)
a = torch.randn(2048, 2048, device="mps"); b = torch.randn(2048, 2048, device="mps")
(a @ b).sum().item()
t = time.perf_counter()
for _ in range(10): c = a @ b
c.sum().item()
print("mps=1 ms=%.1f" % ((time.perf_counter() - t) * 100))'
pyexe=$(command -v "$python" 2>/dev/null)
if [ -z "$pyexe" ]; then
	skip 17 "no $python (give --python PATH of a Python with torch)"
else
	run_both "$pyexe" -c "$PY"
	if [ "$att" = notorch ]; then
		skip 17 "torch is not installed in $pyexe"
	elif [ -z "$att" ] || [ -z "$det" ]; then
		fail 17 "no answer: attached '$att', detached '$det'"
	else
		a_mps=${att#mps=}
		a_mps=${a_mps%% *}
		d_mps=${det#mps=}
		d_mps=${d_mps%% *}
		a_ms=${att##*ms=}
		d_ms=${det##*ms=}
		if [ "$a_mps" = 1 ] && [ "$d_mps" != 1 ]; then
			warn 17 "the GPU works from stageloadctl run ($a_ms ms) but not from a detached job: run GPU jobs with stageloadctl run/guard"
		elif [ "$a_mps" != 1 ]; then
			warn 17 "MPS is not available even from your own session (attached: $att)"
		elif awk -v d="$d_ms" -v a="$a_ms" -v f="$GPU_SLOW_FACTOR" 'BEGIN { exit !(d > a * f) }'; then
			warn 17 "both see the GPU, but a detached job's matmul took $d_ms ms against $a_ms ms attached: run GPU jobs with stageloadctl run/guard"
		else
			pass 17 "both see the GPU: a matmul took $a_ms ms attached, $d_ms ms detached"
		fi
	fi
fi

# --- 18: the Metal default device ---------------------------------------------------------------

# PyTorch finds its device with MTLCopyAllDevices(); ggml, candle and
# Swift tools call MTLCreateSystemDefaultDevice(), which may answer nil
# outside a window-server session. Whether it does for a LaunchDaemon's
# job is not documented anywhere: this prints what it found.
cat >"$work/metal.m" <<'EOF'
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <stdio.h>

int
main(void)
{
	@autoreleasepool {
		id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
		NSArray<id<MTLDevice>> *all = MTLCopyAllDevices();

		printf("all=%lu default=%s\n", (unsigned long)[all count],
		       dev != nil ? [[dev name] UTF8String] : "nil");
	}
	return 0;
}
EOF
if ! have_cc || ! cc -fobjc-arc -framework Foundation -framework Metal \
	-o "$work/metalprobe" "$work/metal.m" 2>"$work/cc.err"; then
	skip 18 "no compiler for the Metal probe (xcode-select --install): $(head -n 1 "$work/cc.err" 2>/dev/null)"
else
	chmod 0755 "$work" "$work/metalprobe"
	run_both "$work/metalprobe"
	a_def=${att#*default=}
	d_def=${det#*default=}
	line="attached: $att; detached: $det"
	if [ -z "$att" ] || [ -z "$det" ]; then
		fail 18 "no answer from the Metal probe: $line"
	elif [ "$a_def" != nil ] && [ "$d_def" = nil ]; then
		warn 18 "$line: MTLCreateSystemDefaultDevice() is nil in a detached job: run tools that use it (ggml, candle, Swift) with stageloadctl run/guard"
	elif [ "$a_def" = nil ]; then
		warn 18 "$line: no default Metal device even from your own session"
	else
		pass 18 "$line"
	fi
fi

echo
if [ "$failures" -eq 0 ]; then
	echo "verify-macos.sh: no check failed"
	exit 0
fi
echo "verify-macos.sh: $failures check(s) failed; docs/macos.md explains each number"
exit 1
