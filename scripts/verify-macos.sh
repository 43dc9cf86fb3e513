#!/bin/bash
# Verify a stageload install on a Mac, on day one: does each number the
# daemon shows agree with what macOS itself says, and does a job run the
# way docs/macos.md says it does? Prints one line per check:
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
#                    would do): 1-7, 13, 14
# --socket PATH      the daemon's socket (default: stageloadctl's rule)
# --python PATH      the Python with torch for the GPU checks (default
#                    python3 on PATH)
# --other-user NAME  a second account to check that another user cannot
#                    read or cancel your job (uses sudo -u NAME; asks for
#                    your password if sudo needs it)
#
# The jobs it starts are small (a sleep, id -G, a 200 MB perl process, a
# small matmul) and are cancelled or waited for before it exits. Written
# for macOS's /bin/bash 3.2: no associative arrays, no mapfile.

# Functions run through trap and wait_for look unreachable to shellcheck.
# shellcheck disable=SC2317
set -u

LABEL=org.stageload.stageloadd
SOCKET_DEFAULT=/var/run/stageload.sock
# Tolerances, stated once (docs/macos.md, "Checklist").
FREE_TOL_PCT=3          # free % read by the daemon and sysctl moments apart
SWAP_TOL_MIB=64         # swap used read moments apart: plus 5 % of it
FOOTPRINT_TOL_PCT=10    # our footprint against top/footprint: plus 16 MiB
FOOTPRINT_TOL_MIB=16
GPU_SLOW_FACTOR=3       # a detached matmul this much slower: "slowed"

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
2|quiet|free % against sysctl kern.memorystatus_level, within $FREE_TOL_PCT points
3|quiet|free % against memory_pressure -Q (System-wide memory free percentage), within $FREE_TOL_PCT points
4|quiet|total memory equals sysctl hw.memsize_usable (the base of kern.memorystatus_level) exactly
5|quiet|swap used against sysctl vm.swapusage used, within $SWAP_TOL_MIB MiB + 5 %; total equal unless a swap file came or went
6|quiet|pressure against sysctl kern.memorystatus_vm_pressure_level (1 normal, 2 warn, 4 critical)
7|quiet|the socket /var/run/stageload.sock is root's and mode 0666, and launchd runs the daemon (launchctl print system/$LABEL)
8|job|footprint of a 200 MB perl process (stageloadctl meter --pid) against top -stats mem and footprint, within $FOOTPRINT_TOL_PCT % + $FOOTPRINT_TOL_MIB MiB
9|job|a detached job has your groups (id -G, at most the first 16) and your login name (logname: getlogin, set by setlogin)
10|job|another account (--other-user) sees your job but not its command, and cannot cancel it (exit 77)
11|job|while a job runs, pmset -g assertions shows caffeinate holding PreventUserIdleSystemSleep; after it ends, not
12|job|a detached job in ~/Documents (privacy-protected, TCC) fails naming Full Disk Access, or runs if stageloadd has it
13|quiet|the daemon's binary and every directory above it are root's and not writable by group or others
14|quiet|the config file, when the daemon was given one, by the same rule
15|job|the GPU from an attached job (stageloadctl run) and a detached one (submit): torch.backends.mps.is_available() and a 2048x2048 float32 matmul, timed; says which way jobs should run"

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
cleanup() {
	local id
	for id in $JOBS; do
		ctl cancel "$id" >/dev/null 2>&1
	done
	[ -n "${hog_pid:-}" ] && kill "$hog_pid" 2>/dev/null
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

# --- 1-7: the numbers ---------------------------------------------------------

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

free=$(echo "$info" | json_num free_pct)
level=$(sysctl -n kern.memorystatus_level 2>/dev/null)
if [ -z "$level" ]; then
	skip 2 "sysctl kern.memorystatus_level unreadable"
elif abs_diff_le "$free" "$level" "$FREE_TOL_PCT"; then
	pass 2 "free $free % against kern.memorystatus_level $level"
else
	fail 2 "free $free % against kern.memorystatus_level $level: more than $FREE_TOL_PCT points apart"
fi

mp=$(memory_pressure -Q 2>/dev/null | sed -n 's/.*free percentage: *\([0-9]*\)%.*/\1/p')
if [ -z "$mp" ]; then
	skip 3 "memory_pressure -Q printed no free percentage"
elif abs_diff_le "$free" "$mp" "$FREE_TOL_PCT"; then
	pass 3 "free $free % against memory_pressure $mp %"
else
	fail 3 "free $free % against memory_pressure $mp %: more than $FREE_TOL_PCT points apart"
fi

total=$(echo "$info" | json_num total_bytes)
memname=hw.memsize_usable
memsize=$(sysctl -n "$memname" 2>/dev/null)
if [ -z "$memsize" ]; then
	memname=hw.memsize # a kernel without it: the daemon takes this too
	memsize=$(sysctl -n "$memname" 2>/dev/null)
fi
if [ "$total" = "$memsize" ]; then
	pass 4 "total $total bytes = $memname"
else
	fail 4 "total $total bytes, $memname $memsize"
fi

swap_used=$(echo "$info" | json_num swap_used_bytes)
swap_total=$(echo "$info" | json_num swap_total_bytes)
su=$(sysctl -n vm.swapusage 2>/dev/null)
k_used=$(echo "$su" | sed -n 's/.*used = *\([0-9.]*[KMGT]\).*/\1/p')
k_total=$(echo "$su" | sed -n 's/.*total = *\([0-9.]*[KMGT]\).*/\1/p')
if [ -z "$k_used" ]; then
	skip 5 "sysctl vm.swapusage: could not read '$su'"
else
	kb=$(to_bytes "$k_used")
	tb=$(to_bytes "$k_total")
	tol=$(calc "$SWAP_TOL_MIB * 1048576 + $kb * 0.05")
	if abs_diff_le "$swap_used" "$kb" "$tol"; then
		msg="swap used $(mib "$swap_used") MiB against vm.swapusage $k_used"
		if abs_diff_le "$swap_total" "$tb" 1048576; then
			pass 5 "$msg; total $(mib "$swap_total") MiB = $k_total"
		else
			warn 5 "$msg; total $(mib "$swap_total") MiB against $k_total (a swap file came or went between the reads? run again)"
		fi
	else
		fail 5 "swap used $(mib "$swap_used") MiB against vm.swapusage $k_used: further apart than $SWAP_TOL_MIB MiB + 5 %"
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
	skip 6 "sysctl kern.memorystatus_vm_pressure_level unreadable"
elif [ "$pressure" = "$want" ]; then
	pass 6 "pressure $pressure for kern.memorystatus_vm_pressure_level $pl"
else
	fail 6 "pressure $pressure, but kern.memorystatus_vm_pressure_level $pl means $want (it may have changed between the reads: run again)"
fi

sock=${socket:-$SOCKET_DEFAULT}
# The mode and owner as ls prints them, split into fields on purpose.
# shellcheck disable=SC2012,SC2046
set -- $(ls -ln "$sock" 2>/dev/null)
if [ $# -lt 3 ]; then
	fail 7 "no socket at $sock"
elif [ "$1" != srw-rw-rw- ] || [ "$3" != 0 ]; then
	fail 7 "$sock is $1 owned by uid $3: expected srw-rw-rw- root"
else
	lp=$(launchctl print "system/$LABEL" 2>/dev/null)
	lstate=$(echo "$lp" | sed -n 's/^[[:space:]]*state = \(.*\)/\1/p' | head -n 1)
	if [ "$lstate" = running ]; then
		pass 7 "$sock is srw-rw-rw- root; launchd: system/$LABEL running"
	elif [ -z "$lp" ]; then
		warn 7 "$sock is srw-rw-rw- root; launchctl print system/$LABEL showed nothing (brew services uses homebrew.mxcl.stageload; or try with sudo)"
	else
		fail 7 "$sock is srw-rw-rw- root, but launchd says state = $lstate"
	fi
fi

# --- 13, 14: what root runs and reads (no job) ---------------------------------

here=$(cd "$(dirname "$0")" && pwd)
common=$here/../launchd/common.sh
# install.sh's rule (launchd/common.sh), in a shell of its own.
# shellcheck disable=SC2016 # expanded by the inner sh
unsafe() { sh -c '. "$1" && path_unsafe "$2"' sh "$common" "$1"; }
program=$(launchctl print "system/$LABEL" 2>/dev/null | sed -n 's/^[[:space:]]*program = \(.*\)/\1/p' | head -n 1)
[ -n "$program" ] || program=$(defaults read "/Library/LaunchDaemons/$LABEL.plist" ProgramArguments 2>/dev/null | sed -n '2s/^ *"\{0,1\}\([^",]*\)"\{0,1\},\{0,1\}$/\1/p')
if [ ! -f "$common" ]; then
	skip 13 "launchd/common.sh not found beside this script (run it from the source tree)"
elif [ -z "$program" ]; then
	skip 13 "could not learn the daemon's binary from launchd (try with sudo)"
else
	why=$(unsafe "$program")
	if [ -z "$why" ]; then
		pass 13 "$program and the directories above it are root's"
	else
		fail 13 "$program: $why (sudo launchd/install.sh --copy installs a root-owned copy)"
	fi
fi
conf=$(launchctl print "system/$LABEL" 2>/dev/null | sed -n '/arguments = {/,/}/p' | awk 'p { print; exit } /--config/ { p = 1 }' | tr -d '[:space:]')
if [ -z "$conf" ]; then
	skip 14 "the daemon was given no --config (or launchctl print needs sudo)"
elif [ -f "$common" ]; then
	why=$(unsafe "$conf")
	if [ -z "$why" ]; then
		pass 14 "config $conf is root's"
	else
		fail 14 "config $conf: $why (the daemon refuses it at start and at SIGHUP)"
	fi
fi

if [ "$quick" -eq 1 ]; then
	echo "--quick: the checks that start jobs (8-12, 15) were not run"
	[ "$failures" -eq 0 ]
	exit $?
fi

# --- 8: footprint --------------------------------------------------------------

/usr/bin/perl -e '$x = "a" x (200 * 1024 * 1024); sleep 60' &
hog_pid=$!
sleep 2 # let it fill its 200 MB: the one fixed wait, for perl's allocation
ours=$(ctl --json meter --count 2 --pid "$hog_pid" 2>/dev/null | tail -n 1 | json_num footprint_bytes)
top_mem=$(top -l 1 -pid "$hog_pid" -stats mem 2>/dev/null | tail -n 1 | tr -d ' ')
fp_line=$(footprint "$hog_pid" 2>/dev/null | sed -n 's/.*Footprint: *\([0-9.]*\) *\([KMGT]\)B.*/\1\2/p' | head -n 1)
if [ -z "$ours" ]; then
	fail 8 "stageloadctl meter --pid $hog_pid gave no footprint"
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
		skip 8 "$line; neither top nor footprint gave a number to compare"
	elif [ "$bad" -eq 0 ]; then
		pass 8 "$line"
	else
		fail 8 "$line: further apart than $FOOTPRINT_TOL_PCT % + $FOOTPRINT_TOL_MIB MiB"
	fi
fi
kill "$hog_pid" 2>/dev/null
hog_pid=

# --- 9: the job's groups and login name ------------------------------------------

id9=$(submit -- /bin/sh -c 'id -G; logname') || id9=
if [ -z "$id9" ] || ! wait_for 20 is_ended "$id9"; then
	fail 9 "a detached job (id -G; logname) did not end in 20 s"
else
	out=$(ctl logs "$id9" 2>/dev/null)
	got_groups=$(echo "$out" | sed -n 1p)
	got_login=$(echo "$out" | sed -n 2p)
	want_groups=$(id -G | tr ' ' '\n' | head -n 16 | tr '\n' ' ' | sed 's/ $//')
	if [ "$got_groups" != "$want_groups" ]; then
		fail 9 "the job's groups '$got_groups', yours (first 16) '$want_groups'"
	elif [ "$got_login" != "$(id -un)" ]; then
		fail 9 "groups match, but the job's login name is '$got_login', not $(id -un)"
	else
		pass 9 "the job has your groups and login name $got_login"
	fi
fi

# --- 10: another account ------------------------------------------------------------

if [ -z "$other_user" ]; then
	skip 10 "no --other-user NAME given"
elif ! id "$other_user" >/dev/null 2>&1; then
	fail 10 "no user $other_user"
else
	id10=$(submit -- /bin/sleep 30)
	as_other() { sudo -u "$other_user" stageloadctl ${socket:+--socket "$socket"} "$@"; }
	seen=$(as_other --json show "$id10" 2>/dev/null)
	as_other cancel "$id10" >/dev/null 2>&1
	rc=$?
	if [ -z "$seen" ]; then
		fail 10 "$other_user could not see job $id10 at all"
	elif echo "$seen" | grep -q '"argv":[[:space:]]*\['; then
		fail 10 "$other_user sees job $id10's command line"
	elif [ "$rc" -ne 77 ]; then
		fail 10 "$other_user's cancel of job $id10 exited $rc, not 77 (permission denied)"
	else
		pass 10 "$other_user sees job $id10 without its command and cannot cancel it"
	fi
	ctl cancel "$id10" >/dev/null 2>&1
fi

# --- 11: the power assertion ----------------------------------------------------------

held() { pmset -g assertions 2>/dev/null | grep -i caffeinate | grep -q PreventUserIdleSystemSleep; }
id11=$(submit -- /bin/sleep 60)
if [ -z "$id11" ] || ! wait_for 20 is_running "$id11"; then
	fail 11 "a detached sleep did not start in 20 s"
elif ! wait_for 5 held; then
	fail 11 "job $id11 runs, but pmset -g assertions shows no caffeinate PreventUserIdleSystemSleep (keep_awake = 0 in the config? the daemon's log says why)"
else
	ctl cancel "$id11" >/dev/null 2>&1
	if wait_for 10 is_ended "$id11" && wait_for 5 eval '! held'; then
		pass 11 "caffeinate held PreventUserIdleSystemSleep while job $id11 ran, and let go after"
	else
		fail 11 "the assertion was held while job $id11 ran, but still is after it ended (another job running?)"
	fi
fi

# --- 12: privacy (TCC) --------------------------------------------------------------------

if [ ! -d "$HOME/Documents" ]; then
	skip 12 "no ~/Documents"
else
	id12=$(cd "$HOME/Documents" && submit -- /usr/bin/true)
	if [ -z "$id12" ] || ! wait_for 20 is_ended "$id12"; then
		fail 12 "a detached job in ~/Documents did not end in 20 s"
	else
		show=$(ctl --json show "$id12")
		st=$(echo "$show" | json_str state)
		if [ "$st" = exited ]; then
			pass 12 "a detached job ran in ~/Documents: stageloadd has Full Disk Access"
		elif [ "$st" = failed ] && echo "$show" | grep -q "Full Disk Access"; then
			pass 12 "a detached job in ~/Documents fails as expected, naming Full Disk Access and stageloadctl run"
		else
			fail 12 "a detached job in ~/Documents ended $st: $(echo "$show" | json_str end_detail)"
		fi
	fi
fi

# --- 15: the GPU -----------------------------------------------------------------------------

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
	skip 15 "no $python (give --python PATH of a Python with torch)"
else
	att=$(ctl run -- "$pyexe" -c "$PY" 2>/dev/null | tail -n 1)
	id15=$(submit -- "$pyexe" -c "$PY")
	det=
	if [ -n "$id15" ] && wait_for 120 is_ended "$id15"; then
		det=$(ctl logs "$id15" 2>/dev/null | tail -n 1)
	fi
	if [ "$att" = notorch ]; then
		skip 15 "torch is not installed in $pyexe"
	elif [ -z "$att" ] || [ -z "$det" ]; then
		fail 15 "no answer: attached '$att', detached '$det' (stageloadctl logs $id15)"
	else
		a_mps=${att#mps=}
		a_mps=${a_mps%% *}
		d_mps=${det#mps=}
		d_mps=${d_mps%% *}
		a_ms=${att##*ms=}
		d_ms=${det##*ms=}
		if [ "$a_mps" = 1 ] && [ "$d_mps" != 1 ]; then
			warn 15 "the GPU works from stageloadctl run ($a_ms ms) but not from a detached job: run GPU jobs with stageloadctl run/guard"
		elif [ "$a_mps" != 1 ]; then
			warn 15 "MPS is not available even from your own session (attached: $att)"
		elif awk -v d="$d_ms" -v a="$a_ms" -v f="$GPU_SLOW_FACTOR" 'BEGIN { exit !(d > a * f) }'; then
			warn 15 "both see the GPU, but a detached job's matmul took $d_ms ms against $a_ms ms attached: run GPU jobs with stageloadctl run/guard"
		else
			pass 15 "both see the GPU: a matmul took $a_ms ms attached, $d_ms ms detached"
		fi
	fi
fi

echo
if [ "$failures" -eq 0 ]; then
	echo "verify-macos.sh: no check failed"
	exit 0
fi
echo "verify-macos.sh: $failures check(s) failed; docs/macos.md explains each number"
exit 1
