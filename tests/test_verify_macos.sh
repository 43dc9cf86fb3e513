#!/usr/bin/env bash
# scripts/verify-macos.sh, the Mac verification script, checked on any OS:
# it passes shellcheck, --dry-run lists every check and runs nothing (exit 0),
# --quick lists only the ones that start no job, and without --dry-run off
# a Mac it refuses (exit 2) instead of half-running.
set -euo pipefail

SRC=${SL_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SCRIPT=$SRC/scripts/verify-macos.sh
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

if command -v shellcheck >/dev/null; then
	if shellcheck -x "$SCRIPT"; then
		pass "shellcheck verify-macos.sh"
	else
		fail "shellcheck verify-macos.sh"
	fi
else
	echo "SKIP: shellcheck not installed (apt-get install shellcheck)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi

# Nothing but the script's own words may run in a dry run: a PATH of
# stand-ins that record any call.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sl-verify-test.XXXXXX")
# shellcheck disable=SC2317 # called by the trap
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT
mkdir "$TMP/bin"
for cmd in stageloadctl sysctl memory_pressure pmset launchctl top footprint sudo perl \
	cc otool lsof; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\nexit 1\n' "$cmd" "$TMP" >"$TMP/bin/$cmd"
	chmod +x "$TMP/bin/$cmd"
done

out=$(PATH="$TMP/bin:$PATH" bash "$SCRIPT" --dry-run)
n=$(echo "$out" | grep -cE '^ +[0-9]+ +(quiet|job) ' || true)
if [ "$n" -eq 18 ] && [ ! -e "$TMP/calls" ]; then
	pass "--dry-run lists 18 checks and runs nothing"
else
	fail "--dry-run listed $n checks; calls: $(cat "$TMP/calls" 2>/dev/null)"
fi
# The checks docs/macos.md's checklist lists, the newer ones among them:
# the libraries root runs, the queue's keep-awake, the Metal default
# device, the job's real (kernel) groups, whatever label installed it.
for want in "kern.memorystatus_level, within 3 points" "vm.swapusage" \
	"memory_pressure -Q" "pmset -g assertions" "Full Disk Access" \
	"torch.backends.mps.is_available()" "footprint" "--other-user" \
	"hw.memsize_usable" "libraries the daemon's binary loads (otool -L)" \
	"keep-awake while a job is queued" "PreventSystemSleep" \
	"MTLCreateSystemDefaultDevice()" "getgroups()" "reading a file in ~/Documents" \
	"homebrew.mxcl.stageload"; do
	if echo "$out" | grep -qF -- "$want"; then
		pass "--dry-run mentions $want"
	else
		fail "--dry-run does not mention $want"
	fi
done

q=$(PATH="$TMP/bin:$PATH" bash "$SCRIPT" --dry-run --quick)
if echo "$q" | grep -qE '^ +[0-9]+ +job ' ||
	[ "$(echo "$q" | grep -cE '^ +[0-9]+ +quiet ')" -ne 10 ]; then
	fail "--dry-run --quick should list the 10 quiet checks only: $q"
else
	pass "--dry-run --quick lists the 10 checks that start no job"
fi
# Numbered 1 to 18 in order: docs/macos.md's checklist follows them.
nums=$(echo "$out" | sed -n 's/^ *\([0-9][0-9]*\) .*/\1/p' | tr '\n' ' ')
if [ "$nums" = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 " ]; then
	pass "the checks are numbered 1 to 18 in order"
else
	fail "the checks are numbered: $nums"
fi

rc=0
PATH="$TMP/bin:$PATH" bash "$SCRIPT" >"$TMP/out" 2>"$TMP/err" || rc=$?
if [ "$(uname -s)" = Darwin ]; then
	echo "note: on a Mac; not checking the refusal off a Mac"
elif [ "$rc" -eq 2 ] && grep -q "only --dry-run works" "$TMP/err" && [ ! -e "$TMP/calls" ]; then
	pass "off a Mac, without --dry-run: exit 2, nothing run"
else
	fail "off a Mac: exit $rc, $(cat "$TMP/err")"
fi

rc=0
bash "$SCRIPT" --bogus >/dev/null 2>"$TMP/err" || rc=$?
if [ "$rc" -eq 2 ] && grep -q "unknown argument" "$TMP/err"; then
	pass "an unknown argument: exit 2"
else
	fail "--bogus: exit $rc"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "all verify-macos checks passed"
