# Shared by tests/cli-*.sh: a private stageloadd on a temp socket and
# database, reading system memory from a fixture proc root that the test
# rewrites, driven through the real stageloadctl.
#
# Source it, then: sl_setup; sl_start_daemon [daemon options]; ctl ARGS...

set -eu

SL_BIN=${SL_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
# This directory, for helpers in other languages (ptyjob.py); tests cd away.
SL_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SL_TMP=
SL_DPID=
SL_KILL_PIDS=()

fail() {
	SL_FAILED=1
	echo "FAIL: $*" >&2
	if [ -n "$SL_TMP" ] && [ -f "$SL_TMP/daemon.log" ]; then
		echo "--- daemon log (last 30 lines) ---" >&2
		tail -n 30 "$SL_TMP/daemon.log" >&2 || true
	fi
	exit 1
}

ok() {
	echo "ok - $*"
}

sl_cleanup() {
	local rc=$? p live
	# set -e can end a test without fail(): show the daemon's side too
	if [ "$rc" != 0 ] && [ -n "$SL_TMP" ] && [ -f "$SL_TMP/daemon.log" ] && [ -z "${SL_FAILED:-}" ]; then
		echo "--- exit $rc; daemon log (last 30 lines) ---" >&2
		tail -n 30 "$SL_TMP/daemon.log" >&2 || true
	fi
	# Only the ones still among this shell's jobs: a pid the test already
	# waited for may have been given to another process since.
	live=" $(jobs -p | tr '\n' ' ') "
	for p in "${SL_KILL_PIDS[@]}"; do
		case $live in *" $p "*) kill -KILL "$p" 2>/dev/null || true ;; esac
	done
	if [ -n "$SL_DPID" ]; then
		kill -TERM "$SL_DPID" 2>/dev/null || true
		wait "$SL_DPID" 2>/dev/null || true
	fi
	# jobs the daemon started live in their own sessions: end them too
	if [ -n "$SL_TMP" ] && [ -f "$SL_TMP/pids" ]; then
		while read -r p; do
			kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
		done <"$SL_TMP/pids"
	fi
	if [ -n "$SL_TMP" ] && [ -n "${SL_KEEP:-}" ]; then
		echo "kept $SL_TMP" >&2
	elif [ -n "$SL_TMP" ]; then
		rm -rf "$SL_TMP"
	fi
}

# A memory picture: available and swap free in KiB, of 16 GiB RAM and
# 4 GiB swap. Written with a rename so the daemon never reads half a file.
sl_meminfo() {
	local avail_kb=$1 swapfree_kb=${2:-4194304}
	cat >"$SL_TMP/proc/.meminfo.tmp" <<EOF
MemTotal:       16777216 kB
MemFree:        $avail_kb kB
MemAvailable:   $avail_kb kB
Buffers:               0 kB
Cached:                0 kB
SwapTotal:       4194304 kB
SwapFree:       $swapfree_kb kB
EOF
	mv "$SL_TMP/proc/.meminfo.tmp" "$SL_TMP/proc/meminfo"
}

sl_psi() {
	printf 'some avg10=%s avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' "$1" \
		>"$SL_TMP/proc/pressure/.memory.tmp"
	mv "$SL_TMP/proc/pressure/.memory.tmp" "$SL_TMP/proc/pressure/memory"
}

sl_setup() {
	[ -x "$SL_BIN/stageloadd" ] || { echo "SKIP: $SL_BIN/stageloadd not built" >&2; exit 77; }
	[ -x "$SL_BIN/stageloadctl" ] || fail "$SL_BIN/stageloadctl not built"
	command -v python3 >/dev/null || fail "python3 is needed"
	SL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sl-cli.XXXXXX")
	trap sl_cleanup EXIT
	trap 'exit 1' INT TERM
	mkdir -p "$SL_TMP/proc/pressure" "$SL_TMP/work"
	SOCK="$SL_TMP/sl.sock"
	sl_meminfo 8388608 4194304 # 50% free, no swap used
	sl_psi 0.00
}

# Run stageloadctl against the private daemon.
ctl() {
	"$SL_BIN/stageloadctl" --socket "$SOCK" "$@"
}

# poll SECONDS CMD...: until CMD succeeds, or fail after SECONDS.
poll() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 50; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.02
	done
	return 1
}

sl_start_daemon() {
	"$SL_BIN/stageloadd" --socket "$SOCK" --db "$SL_TMP/sl.db" \
		--proc-root "$SL_TMP/proc" --interval 0.1 --grace 1s "$@" \
		>>"$SL_TMP/daemon.log" 2>&1 &
	SL_DPID=$!
	poll 10 ctl info || fail "daemon did not answer within 10 s"
}

sl_stop_daemon() {
	kill -TERM "$SL_DPID"
	wait "$SL_DPID" 2>/dev/null || true
	SL_DPID=
}

# jget JSON EXPR: evaluate a Python expression over the parsed JSON `j`.
jget() {
	python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# Exit status of a command, without tripping set -e.
status_of() {
	local rc=0
	"$@" || rc=$?
	echo "$rc"
}

# For `ctl_exec ARGS... &`: the background job is stageloadctl itself, so
# $! is its pid and signals sent to it reach it (a function would leave a
# subshell in between).
ctl_exec() {
	exec "$SL_BIN/stageloadctl" --socket "$SOCK" "$@"
}
