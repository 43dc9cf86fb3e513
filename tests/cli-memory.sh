#!/usr/bin/env bash
# stageloadctl info, history, meter and top against the real daemon with a
# fixture proc root; exit codes for usage errors and an absent daemon.
. "$(dirname "$0")/lib/cli.sh"
sl_setup

# --- before the daemon runs ---
rc=0
out=$(ctl info 2>&1) || rc=$?
[ "$rc" = 69 ] || fail "info without a daemon exited $rc, want 69"
case $out in
*"daemon not running at $SOCK"*"stageloadd"*) ;;
*) fail "unhelpful message without a daemon: $out" ;;
esac
rc=0
STAGELOAD_SOCKET="$SOCK" "$SL_BIN/stageloadctl" info >/dev/null 2>&1 || rc=$?
[ "$rc" = 69 ] || fail "STAGELOAD_SOCKET not used (exit $rc)"
rc=0; ctl nosuchcommand >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "unknown command exited $rc, want 2"
rc=0; ctl history --since yesterday-ish >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad --since exited $rc, want 2"
# commands without a JSON form refuse --json, before or after the command
for a in "--json top" "top --json" "--json logs 1" "logs --json 1"; do
	rc=0
	# shellcheck disable=SC2086 # the options and the command
	ctl $a >/dev/null 2>"$SL_TMP/j.err" || rc=$?
	[ "$rc" = 2 ] && grep -q "has no --json" "$SL_TMP/j.err" ||
		fail "$a: exit $rc: $(cat "$SL_TMP/j.err")"
done
ctl --help | grep -q "guard --wait-free 40 --swap-budget 8G" || fail "--help lacks examples"
ctl --version | grep -q "^stageloadctl " || fail "--version"
ok "usage errors and an absent daemon"

sl_start_daemon

# --- info ---
j=$(ctl info --json)
for f in free_pct available_bytes total_bytes swap_used_bytes swap_total_bytes pressure sampled_at_ms; do
	[ "$(jget "$j" "'$f' in j")" = True ] || fail "info --json lacks $f"
done
[ "$(jget "$j" 'j["total_bytes"]')" = 17179869184 ] || fail "total_bytes from the fixture"
[ "$(jget "$j" 'j["free_pct"]')" = 50 ] || fail "free_pct 50 from the fixture: $j"
ctl info | grep -q "^free .*50.0% (8.0G available of 16G)" || fail "human info: $(ctl info)"
ok "info"

# --- a change in the fixture shows within a deadline ---
sl_meminfo 4194304 3145728 # 25% free, 1 GiB swap used
sl_psi 45.00
free_is_25() { [ "$(jget "$(ctl info --json)" 'j["free_pct"]')" = 25 ]; }
poll 5 free_is_25 || fail "info did not see free 25% within 5 s"
j=$(ctl info --json)
[ "$(jget "$j" 'j["swap_used_bytes"]')" = 1073741824 ] || fail "swap used 1G"
[ "$(jget "$j" 'j["pressure"]')" = critical ] || fail "PSI 45 is critical: $j"
ctl info | grep -q "^swap .*1.0G used of 4.0G" || fail "human swap line"
ok "info follows the fixture"

# --- meter ---
ctl meter --count 3 >"$SL_TMP/m1.jsonl"
python3 - "$SL_TMP/m1.jsonl" <<'EOF' || fail "meter output"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, lines
ts = []
for l in lines:
    o = json.loads(l)
    for k in ("ts_ms", "free_pct", "swap_used_bytes", "pressure"):
        assert k in o, (k, o)
    assert "footprint_bytes" not in o
    ts.append(o["ts_ms"])
assert ts == sorted(ts) and len(set(ts)) == 3, ts
EOF
sleep 30 &
hog=$!
SL_KILL_PIDS+=("$hog")
ctl meter --count 2 --pid "$hog" --out "$SL_TMP/m2.jsonl"
python3 - "$SL_TMP/m2.jsonl" "$hog" <<'EOF' || fail "meter --pid output"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for l in lines:
    o = json.loads(l)
    assert o["pid"] == int(sys.argv[2]), o
    assert o["footprint_bytes"] > 0, o
    assert "swap_bytes" in o, o
EOF
# 0.5 s over a 0.1 s daemon: about every 5th sample
ctl meter --count 4 --interval 0.5 >"$SL_TMP/m3.jsonl"
python3 - "$SL_TMP/m3.jsonl" <<'EOF' || fail "meter --interval decimation"
import json, sys
ts = [json.loads(l)["ts_ms"] for l in open(sys.argv[1])]
assert len(ts) == 4, ts
gaps = [b - a for a, b in zip(ts, ts[1:])]
assert all(400 <= g <= 1500 for g in gaps), gaps  # never every sample; stalls under load allowed
EOF
kill "$hog"
wait "$hog" 2>/dev/null || true # reaped: gone, not just signalled
rc=0
ctl meter --count 1 --pid "$hog" >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "meter of a pid that has gone should fail"
ok "meter"

# --- history ---
j=$(ctl history --since 1m --json)
[ "$(jget "$j" 'j["tier"]')" = raw ] || fail "history --json names the tier: $j"
[ "$(jget "$j" 'len(j["buckets"]) > 0')" = True ] || fail "history has buckets"
[ "$(jget "$j" 'min(b["free_pct"]["min"] for b in j["buckets"])')" = 25 ] || fail "history saw 25%"
ctl history --since 1m --step 10s --format csv >"$SL_TMP/h.csv"
head -1 "$SL_TMP/h.csv" | grep -q '^ts_ms,n,free_pct_min,free_pct_avg,free_pct_max,' || fail "csv header"
[ "$(wc -l <"$SL_TMP/h.csv")" -ge 2 ] || fail "csv rows"
ctl history --since 1m | head -1 | grep -q "FREE% MIN" || fail "history table header"
# steps under a second: times with milliseconds, each row its own
ctl history --since 5s --step 200ms | tail -n +2 | awk '{print $1" "$2}' >"$SL_TMP/t.txt"
[ "$(wc -l <"$SL_TMP/t.txt")" -gt 2 ] || fail "history --step 200ms: $(cat "$SL_TMP/t.txt")"
[ "$(sort -u "$SL_TMP/t.txt" | wc -l)" = "$(wc -l <"$SL_TMP/t.txt")" ] ||
	fail "history --step 200ms repeats a time: $(cat "$SL_TMP/t.txt")"
grep -Eq '[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}$' "$SL_TMP/t.txt" || fail "no milliseconds: $(cat "$SL_TMP/t.txt")"
# a --since in the future is a bad value (2), not the daemon's refusal
rc=0; ctl history --since "$(($(date +%s) + 86400))" >/dev/null 2>"$SL_TMP/f.err" || rc=$?
[ "$rc" = 2 ] && grep -q "in the future" "$SL_TMP/f.err" || fail "future --since: $rc $(cat "$SL_TMP/f.err")"
ok "history"

# --- top without a terminal: one plain line per sample ---
top_lines() {
	[ "$(grep -c ' free 25.0% available 4.0G swap 1.0G/4.0G pressure critical' "$SL_TMP/top.txt")" -ge 3 ]
}
"$SL_BIN/stageloadctl" --socket "$SOCK" top >"$SL_TMP/top.txt" &
top_pid=$!
poll 10 top_lines || { kill "$top_pid"; fail "top plain lines: $(head -3 "$SL_TMP/top.txt")"; }
kill "$top_pid"
wait "$top_pid" 2>/dev/null || true
if grep -q $'\033' "$SL_TMP/top.txt"; then fail "escape codes when not a TTY"; fi
ok "top without a TTY"

# --- top on a terminal, when python can give it one ---
if python3 -c 'import pty' 2>/dev/null; then
	PYTHONPATH=$SL_LIB python3 - "$SL_BIN/stageloadctl" "$SOCK" <<'EOF' || fail "top on a pty"
import sys
from ptyjob import PtyJob
top = [sys.argv[1], "--socket", sys.argv[2], "top"]
t = PtyJob(top, env={"NO_COLOR": "1"})
t.read_until(b"pressure  critical")
t.read_until(b"\xe2\x96")  # a sparkline block, U+2581..U+2588
assert b"\033[31" not in t.buf, "NO_COLOR ignored"
t.type(b"q")
assert t.report() == "exit 0"
assert b"\033[?1049l" in t.drain(), "alternate screen not left"
t.wait()
EOF
	ok "top on a terminal quits on q and restores the screen"
	PYTHONPATH=$SL_LIB python3 - "$SL_BIN/stageloadctl" "$SOCK" <<'EOF' || fail "top on a pty: Ctrl-Z and Ctrl-backslash"
import os, signal, sys
from ptyjob import PtyJob
top = [sys.argv[1], "--socket", sys.argv[2], "top"]
# Ctrl-Z: stops with the screen restored, draws again when continued.
t = PtyJob(top, env={"NO_COLOR": "1"})
t.read_until(b"pressure  critical")
t.type(b"\x1a")
line = t.report()
assert line == "stopped", line
buf = t.read_until(b"\033[?1049l")
assert buf.rindex(b"\033[?25h") > buf.rindex(b"\033[?25l"), "cursor left hidden"
t.buf = b""
t.fg()
t.read_until(b"\033[?1049h")
t.read_until(b"pressure  critical")
t.type(b"\x1c")  # Ctrl-\: quits like q
line = t.report()
assert line == "exit 0", line
t.read_until(b"\033[?1049l", timeout=2)
t.wait()
EOF
	ok "top on a terminal: Ctrl-Z gives the screen back and redraws on continue, Ctrl-backslash quits cleanly"

	# A small terminal: sparklines as wide as it, as many job rows as fit
	# (16 rows: 3), the rest counted; autowrap off while it runs.
	queued=()
	for _ in 1 2 3 4 5 6 7 8; do
		queued+=("$(ctl submit --wait-free 100 -- true)")
	done
	PYTHONPATH=$SL_LIB python3 - "$SL_BIN/stageloadctl" "$SOCK" <<'EOF' || fail "top on a small terminal"
import fcntl, re, struct, sys, termios
from ptyjob import PtyJob
top = [sys.argv[1], "--socket", sys.argv[2], "top"]
t = PtyJob(top, env={"NO_COLOR": "1"})
fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 16, 40, 0, 0))
t.read_until(b"... and 5 more")
frame = t.buf[t.buf.rindex(b"\033[H", 0, t.buf.rindex(b"... and 5 more")):]
assert b"\033[?7l" in t.buf, "autowrap left on"
m = re.search(rb"free %    ((?:\xe2\x96[\x81-\x88]| )+)\033\[K", frame)
assert m and len(m.group(1).decode()) == 30, frame
rows = re.findall(rb"\n *\d+  ", frame)
assert len(rows) == 3, frame
t.type(b"q")
assert t.report() == "exit 0"
assert b"\033[?7h" in t.drain(), "autowrap not restored"
t.wait()
EOF
	ctl cancel "${queued[@]}" >/dev/null
	ok "top on a small terminal: sparklines fit, job rows fit, the rest counted"
fi

# --- the database the daemon wrote stays sound ---
sl_stop_daemon
if command -v sqlite3 >/dev/null; then
	[ "$(sqlite3 "$SL_TMP/sl.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
	ok "database integrity"
fi
echo "PASS"
