#!/usr/bin/env bash
# What stageloadctl tells a user, against the real daemon with a fixture
# proc root: a command that cannot start is refused before it is queued,
# a size without a unit is questioned, progress lines when stderr is not a
# terminal, and the wording of errors and hints.
. "$(dirname "$0")/lib/cli.sh"
sl_setup
sl_start_daemon
cd "$SL_TMP/work"

njobs() { jget "$(ctl status --all --json)" 'len(j["jobs"])'; }
free_is() { [ "$(jget "$(ctl info --json)" 'j["free_pct"]')" = "$1" ]; }

# --- run/guard resolve the command before queueing: 127/126 at once ---
before=$(njobs)
sl_meminfo 4194304 # 25% free: a job waiting for 40% would wait
poll 5 free_is 25 || fail "25% not seen"
rc=0; ctl run --wait-free 40 -- ./no-such-command 2>"$SL_TMP/nf.err" || rc=$?
[ "$rc" = 127 ] || fail "run of a missing command gave $rc, want 127"
grep -q "cannot run ./no-such-command: command not found (no job was queued)" "$SL_TMP/nf.err" ||
	fail "missing command message: $(cat "$SL_TMP/nf.err")"
rc=0; ctl guard --wait-free 40 -- no-such-command-sl 2>/dev/null || rc=$?
[ "$rc" = 127 ] || fail "guard of a missing command along PATH gave $rc, want 127"
printf '#!/bin/sh\nexit 0\n' >noexec.sh
chmod 644 noexec.sh
rc=0; ctl run --wait-free 40 -- ./noexec.sh 2>"$SL_TMP/ne.err" || rc=$?
[ "$rc" = 126 ] || fail "run of a file without x bit gave $rc, want 126"
grep -q "permission denied" "$SL_TMP/ne.err" || fail "no-x message: $(cat "$SL_TMP/ne.err")"
[ "$(njobs)" = "$before" ] || fail "a command that cannot start left a job: $(ctl status --all)"
sl_meminfo 8388608
poll 5 free_is 50 || fail "50% not seen"
ok "run/guard: 127/126 at once, nothing recorded"

# --- a size without a unit below 1M is questioned: exit 2 and the hint ---
before=$(njobs)
rc=0; ctl submit --swap-budget 8 -- true 2>"$SL_TMP/s.err" || rc=$?
[ "$rc" = 2 ] || fail "--swap-budget 8 gave $rc, want 2"
grep -q "^stageloadctl: submit: --swap-budget 8 is 8 bytes: did you mean 8G? (write 8B for bytes)$" "$SL_TMP/s.err" ||
	fail "--swap-budget 8 message: $(cat "$SL_TMP/s.err")"
rc=0; ctl run --expect 4096 -- true 2>"$SL_TMP/s.err" || rc=$?
[ "$rc" = 2 ] || fail "--expect 4096 gave $rc, want 2"
grep -q "did you mean 4096M?" "$SL_TMP/s.err" || fail "--expect 4096 message: $(cat "$SL_TMP/s.err")"
[ "$(njobs)" = "$before" ] || fail "a refused size queued a job"
id=$(ctl submit --hold --swap-budget 0 -- true)
[ "$(jget "$(ctl show --json "$id")" 'j["swap_budget_bytes"]')" = 0 ] || fail "--swap-budget 0 is not none"
ctl cancel "$id" >/dev/null
id=$(ctl submit --hold --swap-budget 8B --expect 1048576 -- true)
j=$(ctl show --json "$id")
[ "$(jget "$j" 'j["swap_budget_bytes"], j["expect_bytes"]')" = "(8, 1048576)" ] || fail "8B / 1048576: $j"
rc=0; ctl update "$id" --swap-budget 100 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "update --swap-budget 100 gave $rc, want 2"
ctl cancel "$id" >/dev/null
ok "a bare size below 1M: exit 2 with did-you-mean; 0, 8B and 1048576 as written"

# --- progress lines when stderr is not a terminal: a line when the kind of
# wait changes, not one per point of free % (at most one a minute) ---
free_near() { [ "$(jget "$(ctl info --json)" 'round(j["free_pct"])')" = "$1" ]; }
set_pct() { sl_meminfo $((16777216 * $1 / 100)); poll 5 free_near "$1" || fail "$1% not seen"; }
set_pct 25
ctl_exec run --wait-free 40 -- true 2>"$SL_TMP/p-run.err" &
runner=$!
SL_KILL_PIDS+=("$runner")
poll 5 grep -q "^queued:" "$SL_TMP/p-run.err" || fail "no queue line from run"
rid=$(jget "$(ctl status --json)" 'max(x["id"] for x in j["jobs"])')
wid=$(ctl submit --wait-free 40 -- true)
ctl wait "$wid" >/dev/null 2>"$SL_TMP/p-wait.err" &
waiter=$!
SL_KILL_PIDS+=("$waiter")
poll 5 grep -q "^queued:" "$SL_TMP/p-wait.err" || fail "no queue line from wait"
for pct in 26 27 28 29 30 31; do
	set_pct "$pct"
	# wait looks again each second: give it time to see some steps
	sleep 0.3
done
ctl hold "$rid" >/dev/null
ctl hold "$wid" >/dev/null
poll 5 grep -q "held" "$SL_TMP/p-run.err" || fail "no line from run when held: $(cat "$SL_TMP/p-run.err")"
poll 5 grep -q "held" "$SL_TMP/p-wait.err" || fail "no line from wait when held: $(cat "$SL_TMP/p-wait.err")"
ctl release "$rid" >/dev/null
ctl release "$wid" >/dev/null
set_pct 50
rc=0; wait "$runner" || rc=$?
[ "$rc" = 0 ] || fail "run exited $rc: $(cat "$SL_TMP/p-run.err")"
rc=0; wait "$waiter" || rc=$?
[ "$rc" = 0 ] || fail "wait exited $rc: $(cat "$SL_TMP/p-wait.err")"
for f in p-run p-wait; do
	grep -q "^queued: .*held" "$SL_TMP/$f.err" || fail "$f: no held line: $(cat "$SL_TMP/$f.err")"
	# each line says a different kind of wait than the one before: none
	# for the numbers alone (the steps of free %, a position)
	same=$(grep "^queued:" "$SL_TMP/$f.err" | tr -d '0-9.' | uniq -d)
	[ -z "$same" ] || fail "$f: a line for numbers alone: $(cat "$SL_TMP/$f.err")"
done
ok "not a terminal: a queue line when the kind of wait changes, not per point of free %"

# --- a second daemon while another serves the socket clients reach by
# default says so, and how to reach it ---
"$SL_BIN/stageloadd" --socket "$SL_TMP/two.sock" --db "$SL_TMP/two.db" \
	--proc-root "$SL_TMP/proc" --interval 0.1 >"$SL_TMP/two.log" 2>&1 &
two=$!
SL_KILL_PIDS+=("$two")
poll 10 "$SL_BIN/stageloadctl" --socket "$SL_TMP/two.sock" info || fail "second daemon did not start"
! grep -q "another daemon" "$SL_TMP/two.log" || fail "a warning with no other daemon on the default socket: $(cat "$SL_TMP/two.log")"
kill -TERM "$two"
wait "$two" 2>/dev/null || true
STAGELOAD_SOCKET=$SOCK "$SL_BIN/stageloadd" --socket "$SL_TMP/two.sock" --db "$SL_TMP/two.db" \
	--proc-root "$SL_TMP/proc" --interval 0.1 >"$SL_TMP/two.log" 2>&1 &
two=$!
SL_KILL_PIDS+=("$two")
poll 10 "$SL_BIN/stageloadctl" --socket "$SL_TMP/two.sock" info || fail "second daemon did not start"
poll 5 grep -q "another daemon serves $SOCK (from \$STAGELOAD_SOCKET)" "$SL_TMP/two.log" ||
	fail "no word about the other daemon: $(cat "$SL_TMP/two.log")"
grep -q "reach this daemon use --socket $SL_TMP/two.sock, or export STAGELOAD_SOCKET=$SL_TMP/two.sock" "$SL_TMP/two.log" ||
	fail "no hint how to reach it: $(cat "$SL_TMP/two.log")"
kill -TERM "$two"
wait "$two" 2>/dev/null || true
ok "a second daemon says which one the clients reach and how to reach it"

# --- errors in the command line's words ---
before=$(njobs)
rc=0; ctl submit --wait-free 40G -- true 2>"$SL_TMP/e.err" || rc=$?
[ "$rc" = 2 ] || fail "--wait-free above total memory gave $rc, want 2"
grep -q "^stageloadctl: submit: --wait-free 40G is above the machine's total memory (16G): it could never be free$" "$SL_TMP/e.err" ||
	fail "above-total message: $(cat "$SL_TMP/e.err")"
rc=0; ctl run --wait-free 40G -- true 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "run --wait-free above total memory gave $rc, want 2"
[ "$(njobs)" = "$before" ] || fail "a refused --wait-free queued a job"
h=$(ctl submit --hold -- true)
rc=0; ctl update "$h" --wait-free 40G 2>"$SL_TMP/e.err" || rc=$?
[ "$rc" = 2 ] && grep -q "update: --wait-free 40G is above" "$SL_TMP/e.err" || fail "update above total: $rc $(cat "$SL_TMP/e.err")"
ctl cancel "$h" >/dev/null
# the id once, not "job 99: no job 99"
for c in cancel hold release; do
	rc=0; ctl "$c" 99999 2>"$SL_TMP/e.err" || rc=$?
	[ "$rc" = 1 ] || fail "$c of no job gave $rc"
	[ "$(grep -o "99999" "$SL_TMP/e.err" | wc -l)" = 1 ] || fail "$c: the id twice: $(cat "$SL_TMP/e.err")"
done
rc=0; ctl update 99999 --priority 0 2>"$SL_TMP/e.err" || rc=$?
[ "$(grep -o "99999" "$SL_TMP/e.err" | wc -l)" = 1 ] || fail "update: the id: $(cat "$SL_TMP/e.err")"
# an ended job's paragraph: "has exited", not "is exited"
x=$(ctl submit -- true)
ctl wait "$x" >/dev/null
ctl show "$x" | head -1 | grep -q "^Job $x \"true\" of .* has exited\.$" || fail "show header: $(ctl show "$x" | head -1)"
# the start hint names the socket that was asked for
rc=0; "$SL_BIN/stageloadctl" --socket "$SL_TMP/none.sock" info 2>"$SL_TMP/e.err" || rc=$?
[ "$rc" = 69 ] || fail "no daemon gave $rc"
grep -q "^stageloadctl: daemon not running at $SL_TMP/none.sock (start it with: stageloadd --socket $SL_TMP/none.sock)$" "$SL_TMP/e.err" ||
	fail "start hint: $(cat "$SL_TMP/e.err")"
ok "errors name options and sizes, the id once, the start hint honours --socket"

# --- help: examples, completions, suggestions; --json refusals as the
# docs list them; events of an unknown user; the CSV's time column ---
for c in $(ctl --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF {sub(",", "", $1); print $1}'); do
	ctl "$c" --help >"$SL_TMP/h.out" || fail "$c --help"
	grep -q "^Examples:$" "$SL_TMP/h.out" || fail "$c --help has no examples"
	# (that each one parses is test_client_cli's test_examples_parse)
	if ctl "$c" --json 1 2>&1 | grep -q "has no --json"; then
		grep "^| \`--json\`" "$SL_SRC/docs/cli.md" | grep -q "\`$c\`" ||
			fail "docs/cli.md's list of commands refusing --json lacks $c"
	fi
done
ctl help completions | grep -q "source <(stageloadctl completions bash)" || fail "help completions"
"$SL_BIN/stageloadctl" --generate man | sed -n '/^\.Sh EXAMPLES$/,/^\.Sh /p' >"$SL_TMP/ex.man"
grep -q "^stageloadctl status --all --limit 10$" "$SL_TMP/ex.man" || fail "the man page has no EXAMPLES with status's"
rc=0; ctl stauts 2>"$SL_TMP/e.err" || rc=$?
[ "$rc" = 2 ] && grep -q "unknown command 'stauts' (did you mean status?)" "$SL_TMP/e.err" ||
	fail "stauts: $rc $(cat "$SL_TMP/e.err")"
rc=0; ctl events --user no-such-user-sl 2>"$SL_TMP/e.err" || rc=$?
[ "$rc" = 2 ] && grep -q "no such user" "$SL_TMP/e.err" || fail "events --user unknown: $rc $(cat "$SL_TMP/e.err")"
ctl events --user "$(id -un)" >/dev/null || fail "events --user of a real user"
ctl history --since 1m --step 10s --format csv >"$SL_TMP/h.csv"
head -1 "$SL_TMP/h.csv" | grep -q ',gap,time$' || fail "csv header: $(head -1 "$SL_TMP/h.csv")"
sed -n 2p "$SL_TMP/h.csv" | grep -Eq ',[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' ||
	fail "csv time column: $(sed -n 2p "$SL_TMP/h.csv")"
ctl history --job "$x" --step 10s --format csv | head -1 | grep -q ',swap_max_bytes,time,stage$' ||
	fail "job csv header: $(ctl history --job "$x" --step 10s --format csv | head -1)"
# bash completion: job ids after show and --job, of the daemon --socket names
"$SL_BIN/stageloadctl" completions bash >"$SL_TMP/c.bash"
jid=$(ctl submit --hold -- true)
offered=$(PATH="$SL_BIN:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _stageloadctl; echo "${COMPREPLY[*]}"' \
	- "$SL_TMP/c.bash" stageloadctl --socket "$SOCK" show "")
case " $offered " in *" $jid "*) ;; *) fail "no job id $jid offered after show: '$offered'" ;; esac
offered=$(PATH="$SL_BIN:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _stageloadctl; echo "${COMPREPLY[*]}"' \
	- "$SL_TMP/c.bash" stageloadctl --socket "$SOCK" history --job "$jid")
[ "$offered" = "$jid" ] || fail "--job $jid not completed: '$offered'"
ctl cancel "$jid" >/dev/null
ok "help with examples, completions with job ids, did-you-mean, --json refusals documented, events --user checked, CSV time"

echo PASS
