#!/usr/bin/env bash
# Detached jobs through stageloadctl: submit, status/ps, show, logs -f,
# wait (exit statuses), cancel of queued and running jobs, events and
# history --job, against the real daemon with a fixture proc root; names
# shown escaped, output errors, and a daemon that goes away under logs.
. "$(dirname "$0")/lib/cli.sh"
sl_setup
sl_start_daemon -v # -v: client names in the log, where they must be escaped

cd "$SL_TMP/work"

# --- submit, logs -f, wait: cwd, environment, exit code ---
id=$(SL_MARK=hello-env ctl submit --name envjob --swap-budget 1G -- \
	sh -c 'echo "job=$STAGELOAD_JOB_ID mark=$SL_MARK cwd=$(pwd)"; echo $$ >>../pids; sleep 0.3; echo done; exit 3')
case $id in '' | *[!0-9]*) fail "submit printed '$id', want a job id" ;; esac
ctl logs -f "$id" >"$SL_TMP/log.txt"
grep -qx "job=$id mark=hello-env cwd=$SL_TMP/work" "$SL_TMP/log.txt" || fail "job output: $(cat "$SL_TMP/log.txt")"
tail -1 "$SL_TMP/log.txt" | grep -qx done || fail "logs -f stopped before the end"
rc=0; out=$(ctl wait "$id") || rc=$?
[ "$rc" = 3 ] || fail "wait exited $rc, want the job's 3"
[ "$out" = "job $id: exited 3" ] || fail "wait said '$out'"
ctl logs "$id" -f >"$SL_TMP/log2.txt" || fail "logs ID -f (as the docs write it) refused"
cmp -s "$SL_TMP/log.txt" "$SL_TMP/log2.txt" || fail "logs ID -f differs from logs -f ID"
ok "submit, logs -f, wait pass cwd, environment and exit code"

# --- the job's umask is its submitter's; a client that does not say gets
# the most private one, never the daemon's ---
for m in 0027 0002; do
	u=$( (umask "$m" && ctl submit -- sh -c 'umask; touch made') )
	ctl wait "$u" >/dev/null || fail "umask job $u failed"
	[ "$(ctl logs "$u")" = "$m" ] || fail "job of a $m shell ran with umask $(ctl logs "$u")"
	[ "$(stat -c %a made)" = "$(printf '%o' $((0666 & ~0$m)))" ] || fail "file mode $(stat -c %a made) under $m"
	rm -f made
done
u=$(PYTHONPATH=$SL_LIB python3 - "$SOCK" "$PWD" <<'EOF'
import sys
from sltest import Client
c = Client(sys.argv[1])
print(c.call("submit", {"argv": ["sh", "-c", "umask"], "cwd": sys.argv[2], "env": []})["id"])
EOF
)
ctl wait "$u" >/dev/null || fail "umask job $u failed"
[ "$(ctl logs "$u")" = 0077 ] || fail "no umask given: the job ran with $(ctl logs "$u")"
ok "a detached job has its submitter's umask (077 when the client does not say)"

# --- a log larger than a client's queue limit (16 MiB), read slowly: it
# comes at the reader's pace, whole, and the reader is not dropped ---
big=$(ctl submit -- sh -c 'head -c 25000000 /dev/zero | tr "\0" a')
ctl wait "$big" >/dev/null || fail "big log job failed"
rc=0
n=$(ctl logs "$big" | { sleep 2; wc -c; }) || rc=$?
[ "$rc" = 0 ] && [ "$n" = 25000000 ] || fail "slow reader of a 25 MB log got $n bytes (exit $rc)"
ok "a big log read slowly arrives whole"

# --- show and status --all ---
ctl show "$id" >"$SL_TMP/show.txt"
grep -q "^Job $id \"envjob\" of .* has exited\.$" "$SL_TMP/show.txt" || fail "show header: $(cat "$SL_TMP/show.txt")"
grep -q "^Directory: $SL_TMP/work$" "$SL_TMP/show.txt" || fail "show directory"
grep -q "swap budget 1.0G" "$SL_TMP/show.txt" || fail "show budget"
grep -q "exited with code 3; stageloadctl wait gives 3" "$SL_TMP/show.txt" || fail "show end"
j=$(ctl show --json "$id")
[ "$(jget "$j" 'j["exit_code"]')" = 3 ] || fail "show --json exit_code"
ctl status --all | grep -Eq "^ *$id +[^ ]+ +exited 3 +envjob " || fail "status --all row: $(ctl status --all)"
ctl ps | grep -q "no jobs queued or running" || fail "ps with nothing running"
# --json carries the daemon's integers exactly, even past cJSON's %.15g.
big=$(ctl submit --wait-free 100 --swap-budget 8192T -- true)
ctl show --json "$big" | grep -q '"swap_budget_bytes":9007199254740992[,}]' ||
	fail "show --json rounded 2^53: $(ctl show --json "$big")"
ctl cancel "$big" >/dev/null
ok "show and status"

# --- a queued job waits for free memory; cancel removes it ---
sl_meminfo 4194304 # 25% free
below() { [ "$(jget "$(ctl info --json)" 'j["free_pct"]')" = 25 ]; }
poll 5 below || fail "daemon did not see 25% free"
q=$(ctl submit --wait-free 40 --name waiter -- sh -c 'echo $$ >>../pids; echo ran >ran.txt')
ctl status | grep -Eq "^ *$q +[^ ]+ +queued #1 +waiter " || fail "queued row: $(ctl status)"
[ "$(jget "$(ctl status --json)" "[x['state'] for x in j['jobs'] if x['id']==$q][0]")" = queued ] || fail "status --json"
# stageloadctl speaks protocol version 2: the list has command, not argv.
cmd=$(jget "$(ctl status --json)" "[x.get('command') for x in j['jobs'] if x['id']==$q and 'argv' not in x][0]")
[ "$cmd" = "sh -c 'echo \$\$ >>../pids; echo ran >ran.txt'" ] || fail "status --json command: $cmd"
out=$(ctl cancel "$q")
[ "$out" = "job $q: cancelled" ] || fail "cancel said '$out'"
rc=0; ctl wait "$q" >/dev/null || rc=$?
[ "$rc" = 125 ] || fail "wait on a cancelled job exited $rc, want 125"
[ ! -e ran.txt ] || fail "a cancelled job ran"
rc=0; ctl cancel "$q" 2>"$SL_TMP/err" || rc=$?
[ "$rc" = 1 ] || fail "cancel of an ended job exited $rc, want 1"
grep -q "job $q[: ]" "$SL_TMP/err" || fail "cancel error names the job"
ok "queued job waits, cancel removes it, wait gives 125"

# --- a running job: cancel terminates it ---
sl_meminfo 8388608 # 50% free again
r=$(ctl submit --name sleeper -- sh -c 'echo $$ >>../pids; echo started; exec sleep 60')
started() { ctl logs "$r" | grep -q started; }
poll 5 started || fail "sleeper did not start"
out=$(ctl cancel "$r")
case $out in "job $r: terminating"*) ;; *) fail "cancel of running said '$out'" ;; esac
rc=0; ctl wait "$r" >/dev/null || rc=$?
[ "$rc" = 143 ] || [ "$rc" = 137 ] || fail "wait on a cancelled running job exited $rc, want 143 or 137"
ctl show "$r" | grep -q "killed because it was cancelled" || fail "show of a cancelled run: $(ctl show "$r")"
ok "cancel of a running job terminates it"

# --- errors: unknown job, bad id ---
rc=0; ctl show 99999 2>"$SL_TMP/err" || rc=$?
[ "$rc" = 1 ] || fail "show of an unknown job exited $rc"
rc=0; ctl wait abc 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "wait abc exited $rc, want 2"
rc=0; ctl submit 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "submit without a command exited $rc, want 2"
ok "errors"

# --- events and history --job ---
ctl events -n 10000 >"$SL_TMP/events.txt"
grep -Eq "job $id +[^ ]+ +submitted" "$SL_TMP/events.txt" || fail "events: $(cat "$SL_TMP/events.txt")"
grep -Eq "job $q +[^ ]+ +cancelled" "$SL_TMP/events.txt" || fail "cancelled event"
ctl events -n 10000 --json | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
assert ev and all(k in ev[0] for k in ("id", "ts_ms", "job_id", "user", "kind", "detail")), ev[:1]
assert [e["id"] for e in ev] == sorted(e["id"] for e in ev)
# events of the daemon itself have no user: null, as in the protocol
own = [e for e in ev if e["job_id"] is None]
assert own and all(e["user"] is None for e in own), own[:2]
assert all(isinstance(e["user"], str) and e["user"] for e in ev if e["job_id"] is not None)
' || fail "events --json"
last=$(jget "$(ctl events --json | tail -1)" 'j["id"]')
"$SL_BIN/stageloadctl" --socket "$SOCK" events -f --after "$last" >"$SL_TMP/follow.txt" &
follower=$!
SL_KILL_PIDS+=("$follower")
f=$(ctl submit --name followed -- true)
seen() { grep -Eq "job $f +[^ ]+ +submitted" "$SL_TMP/follow.txt"; }
poll 5 seen || fail "events -f did not show the new job"
kill "$follower"
# Following from the start with small pages: the whole backlog, each event
# once, then new ones.
ids() { python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["id"]) for l in sys.stdin))'; }
"$SL_BIN/stageloadctl" --socket "$SOCK" events -f --limit 2 --json >"$SL_TMP/paged.json" &
follower=$!
SL_KILL_PIDS+=("$follower")
g=$(ctl submit --name paged -- true)
ctl wait "$g" >/dev/null || true
want=$(ctl events --limit 10000 --json | ids)
caught_up() { [ "$(ids <"$SL_TMP/paged.json")" = "$want" ]; }
poll 5 caught_up || fail "events -f --limit 2 printed $(ids <"$SL_TMP/paged.json"), want $want"
kill "$follower"
ctl history --job "$r" --since 5m --json >"$SL_TMP/hj.json"
[ "$(jget "$(cat "$SL_TMP/hj.json")" 'j["job_id"]')" = "$r" ] || fail "history --job: $(cat "$SL_TMP/hj.json")"
ok "events, events -f and history --job"

# --- names are text from other users: shown escaped, one row per job ---
e=$(ctl submit --name "$(printf 'evil\033[2J\033]0;pwned\007\nfake')" -- sh -c 'exit 0 # $(printf "\033[31m")')
ctl wait "$e" >/dev/null || true
ctl status --all >"$SL_TMP/st.txt"
ctl show "$e" >"$SL_TMP/show.txt"
ctl events >"$SL_TMP/ev.txt"
for f in st show ev; do
	if LC_ALL=C grep -q "$(printf '[\033\007]')" "$SL_TMP/$f.txt"; then
		fail "$f printed a control byte: $(cat -v "$SL_TMP/$f.txt")"
	fi
done
grep -q '^ *'"$e"'  .*evil\\e\[2J\\e\]0;pwned\\x07\\nfake' "$SL_TMP/st.txt" ||
	fail "status row: $(cat -v "$SL_TMP/st.txt")"
grep -q '^fake' "$SL_TMP/st.txt" && fail "the name's newline began a row: $(cat "$SL_TMP/st.txt")"
grep -q 'evil\\e' "$SL_TMP/show.txt" || fail "show: $(cat -v "$SL_TMP/show.txt")"
ok "a name with escape sequences and a newline is shown escaped"

# --- every output path escapes text from users: an OSC 52 clipboard write
# (ESC ] 52 ; c ; ... BEL), a C1 CSI (U+009B in UTF-8), U+202E and U+2066
# in a job's name, argv and environment and in a client's name never reach
# the terminal or the daemon's log raw (proto/text.h) ---
osc=$(printf '\033]52;c;cm0gLXJmIH4=\007') # sets the clipboard to "rm -rf ~"
evil="x${osc}$(printf '\302\233')31m$(printf '\342\200\256')gpj.exe$(printf '\342\201\246')"
shown='x\e]52;c;cm0gLXJmIH4=\x07\u{009B}31m\u{202E}gpj.exe\u{2066}'
shown_json='x\u001b]52;c;cm0gLXJmIH4=\u0007\u009b31m\u202egpj.exe\u2066'
# raw FILE: true when FILE holds ESC, BEL, the C1 CSI, U+202E or U+2066
raw() {
	LC_ALL=C grep -q -e "$(printf '\033')" -e "$(printf '\007')" -e "$(printf '\302\233')" \
		-e "$(printf '\342\200\256')" -e "$(printf '\342\201\246')" "$1"
}
x=$(SL_EVIL="$evil" ctl submit --name "n$evil" -- sh -c 'exit 0' sh "a$evil")
ctl wait "$x" >/dev/null || fail "job $x failed"
PYTHONPATH=$SL_LIB python3 - "$SOCK" "$evil" <<'PY'
import sys
from sltest import Client
c = Client(sys.argv[1], hello=False)
c.call("hello", {"version": 1, "client": "c" + sys.argv[2]})
c.close()
PY
ctl status --all >"$SL_TMP/e-status.txt"
ctl show "$x" >"$SL_TMP/e-show.txt"
ctl show --env "$x" >"$SL_TMP/e-env.txt"
ctl events --limit 10000 >"$SL_TMP/e-events.txt"
ctl status --all --json >"$SL_TMP/e-status-json.txt"
ctl show --env --json "$x" >"$SL_TMP/e-show-json.txt"
ctl wait --json "$x" >"$SL_TMP/e-wait-json.txt"
ctl events --limit 10000 --json >"$SL_TMP/e-events-json.txt"
poll 5 grep -qF "is c$shown" "$SL_TMP/daemon.log" ||
	fail "the client's name is not in the log, escaped: $(grep 'is c' "$SL_TMP/daemon.log" | cat -v)"
cp "$SL_TMP/daemon.log" "$SL_TMP/e-daemon.txt"
for f in "$SL_TMP"/e-*.txt; do
	if raw "$f"; then fail "$(basename "$f") holds raw control bytes: $(cat -v "$f")"; fi
done
grep -qF "nx\e]52;c;cm0gLXJmIH4=\x07\u{009B}31m" "$SL_TMP/e-status.txt" ||
	fail "status: $(cat -v "$SL_TMP/e-status.txt")"
grep -qF "\"n$shown\" of" "$SL_TMP/e-show.txt" || fail "show's name: $(cat -v "$SL_TMP/e-show.txt")"
# quoted for the shell: the controls in $'...' with escapes, which bash
# reads back as the same bytes in any locale
grep -qxF "Command: sh -c 'exit 0' sh \$'ax\\e]52;c;cm0gLXJmIH4=\\x07\\xc2\\x9b31m\\xe2\\x80\\xaegpj.exe\\xe2\\x81\\xa6'" \
	"$SL_TMP/e-show.txt" || fail "show's command: $(cat -v "$SL_TMP/e-show.txt")"
line=$(sed -n 's/^Command: //p' "$SL_TMP/e-show.txt")
[ "$(LC_ALL=C bash -c "set -- $line; printf '%s' \"\$5\"")" = "a$evil" ] ||
	fail "show's command does not read back in bash: $line"
grep -qxF "  SL_EVIL=$shown" "$SL_TMP/e-env.txt" || fail "show --env: $(cat -v "$SL_TMP/e-env.txt")"
grep -qF "\"name\":\"n$shown_json\"" "$SL_TMP/e-events.txt" || fail "events: $(cat -v "$SL_TMP/e-events.txt")"
for f in status-json show-json wait-json events-json; do
	grep -qF "n$shown_json" "$SL_TMP/e-$f.txt" || fail "$f: $(cat -v "$SL_TMP/e-$f.txt")"
done
grep -qF "\"SL_EVIL=$shown_json\"" "$SL_TMP/e-show-json.txt" ||
	fail "show --env --json: $(cat -v "$SL_TMP/e-show-json.txt")"
ok "OSC 52, a C1 CSI and bidi controls in a name, argv, env and client name: escaped in status, show, show --env, events, --json and the daemon's log"

# --- a job's own output reaches its own user as it is (as cat would) ---
o=$(ctl submit -- sh -c 'printf "%s" "$1"' sh "$evil")
ctl wait "$o" >/dev/null || fail "job $o failed"
[ "$(ctl logs "$o")" = "$evil" ] || fail "logs of one's own job: $(ctl logs "$o" | cat -v)"
ok "logs of one's own job are its bytes (another user's: tests/auth.py)"

# --- output that cannot be written is an error, also where each line is
# flushed as it goes ---
if [ -w /dev/full ]; then
	for cmd in "logs $id" "events" "wait $e" "status --all" "show $e"; do
		rc=0
		# shellcheck disable=SC2086 # the command and its argument
		ctl $cmd >/dev/full 2>"$SL_TMP/full.err" || rc=$?
		[ "$rc" = 1 ] || fail "$cmd >/dev/full exited $rc, want 1"
		grep -q "cannot write output" "$SL_TMP/full.err" ||
			fail "$cmd >/dev/full said: $(cat "$SL_TMP/full.err")"
	done
	ok "a full disk on stdout exits 1 and says so"
fi

# --- a daemon that goes away under logs is the daemon's failure (69 and
# a message), not taken for our own output failing ---
python3 - "$SL_TMP/fake.sock" <<'PY' &
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(4)
for _ in range(2):
    c, _ = s.accept()
    f = c.makefile("rb")
    req = json.loads(f.readline())
    c.sendall((json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {
        "version": 1, "daemon_version": "fake", "os": "linux",
        "interval_ms": 500, "uid": os.getuid()}}) + "\n").encode())
    # gone before the logs request: writing it fails with EPIPE
    c.shutdown(socket.SHUT_RDWR)
    f.close()
    c.close()
PY
fake=$!
SL_KILL_PIDS+=("$fake")
poll 5 test -S "$SL_TMP/fake.sock" || fail "fake daemon did not start"
for args in "logs 1" "logs -f 1"; do
	rc=0
	# shellcheck disable=SC2086 # the command and its arguments
	"$SL_BIN/stageloadctl" --socket "$SL_TMP/fake.sock" $args >/dev/null \
		2>"$SL_TMP/fake.err" || rc=$?
	[ "$rc" = 69 ] || fail "$args against a daemon that left exited $rc: $(cat "$SL_TMP/fake.err")"
	grep -Eq "(closed|lost) the connection" "$SL_TMP/fake.err" || fail "$args said: $(cat "$SL_TMP/fake.err")"
done
wait "$fake" || true
ok "logs: a daemon that goes away exits 69 with its message"

echo PASS
