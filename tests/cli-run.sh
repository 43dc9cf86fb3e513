#!/usr/bin/env bash
# Attached jobs: stageloadctl run/guard against the real daemon with a
# fixture proc root. Exit codes pass through (0, 7, a signal), the queue
# line while waiting, admission when memory frees up, a swap-budget kill
# (124), a requeue with --retry-on-breach, SIGINT reaching the command, and
# a daemon killed and restarted under a running command, with and without
# the job in its database.
. "$(dirname "$0")/lib/cli.sh"
sl_setup
sl_start_daemon
cd "$SL_TMP/work"

# free_is PCT: the daemon has sampled that free %
free_is() { [ "$(jget "$(ctl info --json)" 'j["free_pct"]')" = "$1" ]; }
swap_used_is() { [ "$(jget "$(ctl info --json)" 'j["swap_used_bytes"]')" = "$1" ]; }
# the state of job ID
state_of() { jget "$(ctl show --json "$1")" 'j["state"]'; }
last_id() { jget "$(ctl status --all --json)" 'max(x["id"] for x in j["jobs"])'; }

# --- exit statuses pass through ---
rc=0; ctl run -- sh -c 'exit 0' || rc=$?
[ "$rc" = 0 ] || fail "run of exit 0 gave $rc"
rc=0; ctl guard -- sh -c 'exit 7' || rc=$?
[ "$rc" = 7 ] || fail "guard of exit 7 gave $rc"
rc=0; ctl run -- sh -c 'kill -USR1 $$' || rc=$?
[ "$rc" = 138 ] || fail "run of a command killed by SIGUSR1 gave $rc, want 138"
id=$(last_id)
j=$(ctl show --json "$id")
[ "$(jget "$j" 'j["state"]')" = exited ] || fail "daemon state after a signal: $j"
[ "$(jget "$j" 'j["signal"]')" = 10 ] || fail "daemon did not record SIGUSR1: $j"
rc=0; ctl run -- ./no-such-command 2>/dev/null || rc=$?
[ "$rc" = 127 ] || fail "run of a missing command gave $rc, want 127"
out=$(ctl run -- sh -c 'echo "out $STAGELOAD_JOB_ID"; pwd')
[ "$out" = "out
$SL_TMP/work" ] || [ "$(echo "$out" | tail -1)" = "$SL_TMP/work" ] || fail "run output/cwd: $out"
# a job the daemon refuses (argv over 256 KiB in all) never runs: 125
big=()
for ((i = 0; i < 3000; i++)); do big+=("$(printf '%0100d' "$i")"); done
rc=0; ctl run -- echo "${big[@]}" >"$SL_TMP/big.out" 2>"$SL_TMP/big.err" || rc=$?
[ "$rc" = 125 ] || fail "refused run gave $rc, want 125: $(cat "$SL_TMP/big.err")"
[ ! -s "$SL_TMP/big.out" ] || fail "a refused command ran"
grep -q "argv" "$SL_TMP/big.err" || fail "refusal message: $(cat "$SL_TMP/big.err")"
ok "exit statuses pass through and the daemon's record matches"

# --- waiting: the queue line, then admission when free rises ---
sl_meminfo 4194304 # 25%
poll 5 free_is 25 || fail "25% not seen"
ctl_exec run --wait-free 40 -- sh -c 'echo ran' >"$SL_TMP/run.out" 2>"$SL_TMP/run.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
queued_line() { grep -q "^queued: position 1 of 1, free 25% < 40%$" "$SL_TMP/run.err"; }
poll 5 queued_line || fail "no queue line: $(cat "$SL_TMP/run.err")"
[ ! -s "$SL_TMP/run.out" ] || fail "the command ran while free was below 40%"
sl_meminfo 8388608 # 50%
rc=0; wait "$runner" || rc=$?
[ "$rc" = 0 ] || fail "admitted run exited $rc: $(cat "$SL_TMP/run.err")"
[ "$(cat "$SL_TMP/run.out")" = ran ] || fail "the command did not run after admission"
grep -q "admitted after" "$SL_TMP/run.err" || fail "no admission line: $(cat "$SL_TMP/run.err")"
ok "waits with a queue line, runs once free is enough"

# --- Ctrl-C while queued cancels the job ---
sl_meminfo 4194304
poll 5 free_is 25 || fail "25% not seen"
ctl_exec run --wait-free 40 -- touch never >/dev/null 2>"$SL_TMP/int.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q "^queued:" "$SL_TMP/int.err" || fail "no queue line"
q=$(last_id)
kill -INT "$runner"
rc=0; wait "$runner" || rc=$?
[ "$rc" = 130 ] || fail "SIGINT while queued gave $rc, want 130"
[ "$(state_of "$q")" = cancelled ] || fail "job $q not cancelled: $(state_of "$q")"
[ ! -e never ] || fail "a cancelled command ran"
sl_meminfo 8388608
poll 5 free_is 50 || fail "50% not seen"
ok "SIGINT while queued cancels"

# --- SIGINT reaches the running command ---
ctl_exec run -- sh -c 'trap "echo got-int; exit 5" INT; echo ready; while :; do sleep 0.05; done' \
	>"$SL_TMP/sig.out" 2>&1 &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q ready "$SL_TMP/sig.out" || fail "command did not start"
kill -INT "$runner"
rc=0; wait "$runner" || rc=$?
[ "$rc" = 5 ] || fail "command's trap exit 5 not passed through: $rc"
grep -q got-int "$SL_TMP/sig.out" || fail "SIGINT did not reach the command"
ok "SIGINT is forwarded to the command"

# --- a SIGHUP ignored when it started (nohup) stays ignored, in the CLI
# and in the command ---
(trap '' HUP; exec "$SL_BIN/stageloadctl" --socket "$SOCK" run -- sh -c 'echo ready; sleep 1; exit 5') \
	>"$SL_TMP/hup.out" 2>&1 &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q ready "$SL_TMP/hup.out" || fail "command did not start"
kill -HUP "$runner"
pkill -HUP -f "sh -c echo ready; sleep 1; exit 5" || true
rc=0; wait "$runner" || rc=$?
[ "$rc" = 5 ] || fail "an ignored SIGHUP ended the run: exit $rc, want 5 ($(cat "$SL_TMP/hup.out"))"
ok "an inherited ignored SIGHUP stays ignored (nohup)"

# --- on a terminal: the queue line is redrawn in place, and Ctrl-C typed
# at the terminal reaches the command, which owns the terminal ---
sl_meminfo 4194304 # 25%
poll 5 free_is 25 || fail "25% not seen"
PYTHONPATH=$SL_LIB python3 - "$SL_BIN/stageloadctl" "$SOCK" "$SL_TMP/proc" <<'EOF2' || fail "run on a terminal"
import os, sys
from ptyjob import PtyJob
ctl, sock, proc = sys.argv[1:4]
t = PtyJob([ctl, "--socket", sock, "run", "--wait-free", "40", "--",
            "sh", "-c", 'trap "echo got-int; exit 5" INT; echo ready; read line; echo "read-$line"; while :; do sleep 0.05; done'])
t.read_until(b"\r\x1b[Kqueued: position 1 of 1, free 25% < 40%")
tmp = os.path.join(proc, ".meminfo.tmp")
with open(tmp, "w") as f:
    f.write("MemTotal: 16777216 kB\nMemFree: 8388608 kB\nMemAvailable: 8388608 kB\n"
            "SwapTotal: 4194304 kB\nSwapFree: 4194304 kB\n")
os.rename(tmp, os.path.join(proc, "meminfo"))
t.read_until(b"ready")
t.type(b"hi\n")  # the command can read the terminal: it is in front
t.read_until(b"read-hi")
t.type(b"\x03")  # Ctrl-C at the terminal
t.read_until(b"got-int")
assert t.report() == "exit 5"
t.wait()
EOF2
ok "on a terminal: queue line in place, the command reads it and gets Ctrl-C"

# --- on a terminal, Ctrl-Z stops the command and the CLI with it, as one
# shell job; fg continues both, with the terminal back to the command ---
PYTHONPATH=$SL_LIB python3 - "$SL_BIN/stageloadctl" "$SOCK" <<'EOF2' || fail "run on a terminal: Ctrl-Z"
import sys
from ptyjob import PtyJob
ctl, sock = sys.argv[1:3]
t = PtyJob([ctl, "--socket", sock, "run", "--",
            "sh", "-c", 'trap "echo got-int; exit 5" INT; echo ready; read line; echo "read-$line"; while :; do sleep 0.05; done'])
t.read_until(b"ready")
t.type(b"\x1a")  # Ctrl-Z at the terminal
line = t.report()
assert line == "stopped", line
t.fg()
t.type(b"hi\n")  # the command reads the terminal again: it is in front
t.read_until(b"read-hi")
t.type(b"\x03")
t.read_until(b"got-int")
line = t.report()
assert line == "exit 5", line
t.wait()
EOF2
ok "on a terminal: Ctrl-Z stops the command and the CLI, fg continues both"

# --- a swap-budget breach kills it: 124 ---
sl_meminfo 8388608 4194304
poll 5 swap_used_is 0 || fail "swap 0 not seen"
ctl_exec guard --swap-budget 100M -- sh -c 'echo $$ >>../pids; echo ready; exec sleep 60' \
	>"$SL_TMP/b.out" 2>"$SL_TMP/b.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q ready "$SL_TMP/b.out" || fail "command did not start"
b=$(last_id)
sl_meminfo 8388608 3989504 # swap used 200M
rc=0; wait "$runner" || rc=$?
[ "$rc" = 124 ] || fail "breach gave $rc, want 124: $(cat "$SL_TMP/b.err")"
grep -q "the system's swap grew by 200M while it ran, past its budget of 100M" "$SL_TMP/b.err" || fail "breach message: $(cat "$SL_TMP/b.err")"
j=$(ctl show --json "$b")
[ "$(jget "$j" 'j["state"]+"/"+str(j["end_reason"])')" = killed/swap_budget ] || fail "record: $j"
ctl show "$b" | grep -q "stageloadctl wait gives 124" || fail "show of the breach"
ok "swap-budget breach exits 124 and the record says why"

# --- --retry-on-breach: requeued and run again ---
sl_meminfo 8388608 4194304
poll 5 swap_used_is 0 || fail "swap 0 not seen"
ctl_exec guard --swap-budget 100M --retry-on-breach 1 -- \
	sh -c 'echo start >>attempts; echo $$ >>../pids; n=$(wc -l <attempts); [ "$n" -ge 2 ] && exit 0; exec sleep 60' \
	>/dev/null 2>"$SL_TMP/r.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
first_attempt() { [ -f attempts ] && [ "$(wc -l <attempts)" -ge 1 ]; }
poll 5 first_attempt || fail "first attempt did not start"
sl_meminfo 8388608 3989504
poll 5 grep -q "requeued" "$SL_TMP/r.err" || fail "no requeue: $(cat "$SL_TMP/r.err")"
sl_meminfo 8388608 4194304
rc=0; wait "$runner" || rc=$?
[ "$rc" = 0 ] || fail "retried run gave $rc: $(cat "$SL_TMP/r.err")"
[ "$(wc -l <attempts)" = 2 ] || fail "attempts: $(wc -l <attempts)"
ok "--retry-on-breach runs it again"

# --- the daemon dies and comes back under a running command ---
ctl_exec run -- sh -c 'echo ready; while [ ! -e go ]; do sleep 0.05; done; exit 4' \
	>"$SL_TMP/d.out" 2>"$SL_TMP/d.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q ready "$SL_TMP/d.out" || fail "command did not start"
d=$(last_id)
kill -KILL "$SL_DPID"
wait "$SL_DPID" 2>/dev/null || true
poll 5 grep -q "lost the daemon" "$SL_TMP/d.err" || fail "CLI did not notice: $(cat "$SL_TMP/d.err")"
kill -0 "$runner" || fail "the CLI gave up without a daemon"
sl_start_daemon
poll 15 grep -q "reconnected" "$SL_TMP/d.err" || fail "CLI did not reconnect: $(cat "$SL_TMP/d.err")"
touch go
rc=0; wait "$runner" || rc=$?
[ "$rc" = 4 ] || fail "after a daemon restart the run gave $rc, want 4"
j=$(ctl show --json "$d")
[ "$(jget "$j" 'j["state"]+"/"+str(j["exit_code"])')" = exited/4 ] || fail "record after restart: $j"
ok "survives a daemon restart and reports the exit"

# --- the daemon comes back without the job (a new database): the command
# runs to its end and run exits with its status, not "never ran" ---
ctl_exec run -- sh -c 'echo ready; while [ ! -e go2 ]; do sleep 0.05; done; exit 6' \
	>"$SL_TMP/n.out" 2>"$SL_TMP/n.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q ready "$SL_TMP/n.out" || fail "command did not start"
kill -KILL "$SL_DPID"
wait "$SL_DPID" 2>/dev/null || true
poll 5 grep -q "lost the daemon" "$SL_TMP/n.err" || fail "CLI did not notice: $(cat "$SL_TMP/n.err")"
mv "$SL_TMP/sl.db" "$SL_TMP/old.db"
rm -f "$SL_TMP/sl.db-wal" "$SL_TMP/sl.db-shm"
sl_start_daemon
poll 15 grep -q "cannot resume" "$SL_TMP/n.err" || fail "CLI did not try to resume: $(cat "$SL_TMP/n.err")"
kill -0 "$runner" || fail "the CLI left its command when the daemon forgot the job"
touch go2
rc=0; wait "$runner" || rc=$?
[ "$rc" = 6 ] || fail "after the daemon forgot the job the run gave $rc, want 6: $(cat "$SL_TMP/n.err")"
ok "a daemon that forgot the job: the command runs to its end and its status passes through"

echo PASS
