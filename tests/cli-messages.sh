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

echo PASS
