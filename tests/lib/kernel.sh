# What the real-kernel tests (kernel-swap.sh, kernel-learn.sh and, for its
# results, test_swap_infra.sh) share, on top of tests/lib/swap.sh: their
# results (ok, bad, die, kernel_done), the checks before anything is made,
# a temp directory, the cleanup of their jobs and daemon, and
# ctl/jget/poll. Source swap.sh first, set BIN, then call kernel_setup
# PREFIX; ctl talks to the daemon at $sock.
# shellcheck shell=bash

passed=0
failed=0
daemon_pid=
daemon_log=
job_pgids=()

# ok and bad always succeed, so "A && ok || bad" is an if-else.
ok() {
	echo "ok: $*"
	passed=$((passed + 1))
}
bad() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}
# A failure that makes the rest meaningless: report and stop (the trap
# cleans up).
die() {
	echo "FAIL: $*" >&2
	[ -n "${daemon_log:-}" ] && [ -f "$daemon_log" ] &&
		{ echo "--- daemon log (last 30 lines) ---" >&2; tail -n 30 "$daemon_log" >&2; }
	exit 1
}

# Jobs first (their process groups), then the daemon; swap.sh then empties
# and removes the cgroup and the swapfile.
stop_everything() {
	local g
	for g in "${job_pgids[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null
	done
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}

# kernel_setup PREFIX: root, Linux and the binaries, or skip (77; a failure
# under CI=true); then $tmp, removed at exit with everything else.
kernel_setup() {
	local b
	swap_require_root
	if [ "$(uname -s)" != Linux ]; then
		[ "${CI:-}" = true ] && die "the real-kernel test needs Linux"
		echo "SKIP: the real-kernel test needs Linux" >&2
		exit 77
	fi
	for b in stageloadd stageloadctl swaphog; do
		[ -x "$BIN/$b" ] || die "$BIN/$b not built"
	done
	command -v python3 >/dev/null || die "python3 is needed"
	tmp=$(mktemp -d "/tmp/$1.XXXXXX")
	swap_on_exit stop_everything
	swap_on_exit 'rm -rf "$tmp"'
}

ctl() {
	"$BIN/stageloadctl" --socket "$sock" "$@"
}

# jget JSON EXPR: a Python expression over the parsed JSON `j`.
jget() {
	python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# poll SECONDS CMD...: until CMD succeeds; 1 after SECONDS.
poll() {
	local end=$((SECONDS + $1))
	shift
	while [ $SECONDS -lt $end ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# track_job ID: note the job's process group for cleanup as soon as it
# has one.
track_job() {
	local id=$1 js pid i
	for i in $(seq 1 100); do
		js=$(ctl show --json "$id" 2>/dev/null) &&
			pid=$(jget "$js" 'j.get("pid") or ""') && [ -n "$pid" ] &&
			{ job_pgids+=("$pid"); return 0; }
		sleep 0.05
	done
	return 1
}

# kernel_done: the summary line, and the exit status.
kernel_done() {
	echo "$passed passed, $failed failed"
	[ $failed -eq 0 ]
}
