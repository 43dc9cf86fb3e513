#!/usr/bin/env bash
# Learned peaks on the real kernel (Linux, root): the real stageloadd on
# the real /proc, a swapfile and one memory cgroup shared by the jobs
# (tests/lib/swap.sh), as in kernel-swap.sh.
#
# A job named "loader" takes LOAD_MIB over about three seconds (swaphog,
# 16 MiB every 50 ms) and holds it. The cgroup holds one loader (its limit
# is 1.5 times LOAD_MIB) but not two: two loading at once would swap
# about half a loader, past the 64 MiB budgets. A first run teaches the
# daemon the name's peak. Then run 1 is submitted and, while it loads, run
# 2, whose wait_free sits half a loader's share of memory below the free
# % measured just before: on free % alone run 2 would start at once and
# both would swap. With the learned reservation run 2 waits (`expect`)
# until run 1 has taken its peak, then, as free % now shows run 1's
# memory, until run 1 has ended (`free`); neither run swaps past its
# budget and both exit 0. The margin is half a loader of the machine's
# free memory: an attempt in which other processes freed more than a
# quarter loader and run 2 started early is told apart by the admitted
# event and made again (below), up to 3 times.
#
# Holds the ctest RESOURCE_LOCK "swap" (swap growth is system-wide).
# shellcheck disable=SC2015,SC2016
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/swap.sh"
. "$here/lib/kernel.sh"

BIN=${SL_BIN:-$here/../build/bin}
HOG=$BIN/swaphog
LOAD_MIB=1024
LIMIT_MIB=1536
SWAPFILE_MIB=768
BUDGET=64M

kernel_setup sl-klearn
sock=$tmp/sl.sock

# submit_loader TAG HOLD_MS [OPTIONS...]: a loader in the cgroup; its id.
submit_loader() {
	local tag=$1 hold=$2
	shift 2
	ctl submit --name loader --swap-budget $BUDGET "$@" -- \
		bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$SWAP_CGROUP" \
		"$HOG" -s 16 -i 50 -H "$hold" -r "$tmp/$tag.ready" -t "$tmp/$tag.term" \
		$LOAD_MIB
}

state_is() {
	[ "$(jget "$(ctl show --json "$1")" 'j["state"]')" = "$2" ]
}

waiting_for() {
	[ "$(jget "$(ctl show --json "$1")" 'j.get("waiting_for")')" = "$2" ]
}

mtime_ms() {
	python3 -c 'import os,sys; print(int(os.stat(sys.argv[1]).st_mtime * 1000))' "$1"
}

swap_file_create $SWAPFILE_MIB || die "cannot create a swapfile"
swap_cgroup_create "sl-klearn-$$" $LIMIT_MIB || die "cannot create a memory cgroup"
echo "cgroup v$SWAP_CG_VERSION at $SWAP_CGROUP, limit $LIMIT_MIB MiB; loaders of $LOAD_MIB MiB"

daemon_log=$tmp/daemon.log
# The default interval and fast interval; settle 0, so that only the
# reservation holds run 2 back while run 1 loads.
"$BIN/stageloadd" --socket "$sock" --db "$tmp/sl.db" --grace 1s --settle 0 -v \
	>"$daemon_log" 2>&1 &
daemon_pid=$!
poll 10 ctl info || die "stageloadd did not answer within 10 s"

# --- the first run: what the name learns ---
id0=$(submit_loader r0 500) || die "submit failed"
track_job "$id0" || die "job $id0 never got a pid"
ctl wait "$id0" >/dev/null 2>&1 && ok "the first run exited 0" || die "the first run failed"
js=$(ctl show --json "$id0")
peak=$(jget "$js" 'j["footprint_peak_bytes"]')
[ "$peak" -ge $(((LOAD_MIB - 64) << 20)) ] && ok "its peak footprint: $((peak >> 20)) MiB" ||
	die "its peak footprint is $((peak >> 20)) MiB, not about $LOAD_MIB"

# --- run 1, and run 2 while run 1 loads ---
# The daemon decides on the machine's free %, and this machine may be
# shared: between the free % read here and run 2's admission, other
# processes may free memory, and run 2's margin is half a loader. An
# attempt in which they freed more than a quarter loader and run 2 was
# admitted early tests nothing (the daemon decided right on what it
# measured) and is made again, up to 3 times. The admitted event tells the
# two apart: reserved_bytes is what run 1 had still to take (0 would mean
# the reservation had ended early: a failure, never retried), so run 1's
# footprint then was peak - reserved_bytes.
sampled_after() {
	[ "$(jget "$(ctl info --json)" 'j["sample"]["sampled_at_ms"] > '"$1")" = True ]
}
ended() {
	case $(jget "$(ctl show --json "$1")" 'j["state"]') in
	exited | killed | failed | cancelled | lost) return 0 ;;
	esac
	return 1
}
# admitted_event ID: the detail of the job's last admitted event.
admitted_event() {
	ctl events --json --limit 10000 | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e["job_id"] == int(sys.argv[1]) and e["kind"] == "admitted":
        last = e["detail"]
print(json.dumps(last))' "$1" 2>/dev/null
}
# neighbours_freed DETAIL: MiB other processes freed between the reference
# and the decision: free % then, less what the reference and run 1's
# footprint imply (0 when the reservation had ended).
neighbours_freed() {
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
peak, free, total = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
if d.get("reserved_bytes", 0) <= 0:
    print(0)
else:
    fp1 = peak - d["reserved_bytes"]
    implied = free - fp1 * 100.0 / total
    print(int((d["free_pct"] - implied) * total / 100 / 2**20))' "$1" "$peak" "$free" "$total"
}

# attempt N END_MS: runs 1 and 2 after the last run ended at END_MS; sets
# id1, js1, id2, free, total, wait_free, ready1, adm2, submitted_loading,
# waited_expect. Returns 2 when neighbours freed memory under it.
attempt() {
	local det freed info
	# Free % from a sample a second after the last run ended: what it
	# held has been given back by then.
	poll 10 sampled_after $(($2 + 1000)) || die "no sample a second after the last run ended"
	info=$(ctl info --json)
	total=$(jget "$info" 'j["sample"]["total_bytes"]')
	free=$(jget "$info" 'j["sample"]["free_pct"]')
	# Half a loader's share below what is free now: met on free % alone,
	# not with run 1's reservation counted.
	wait_free=$(python3 -c "print(round($free - 50.0 * $peak / $total, 2))")
	echo "attempt $1: free ${free}%, total $((total >> 20)) MiB: run 2 waits for ${wait_free}% free"
	rm -f "$tmp/r1.ready" "$tmp/r2.ready"
	id1=$(submit_loader r1 2000) || die "submit failed"
	track_job "$id1" || die "job $id1 never got a pid"
	js1=$(ctl show --json "$id1")
	id2=$(submit_loader r2 500 --wait-free "$wait_free") || die "submit failed"
	submitted_loading=0
	[ ! -e "$tmp/r1.ready" ] && submitted_loading=1
	waited_expect=0
	poll 10 waiting_for "$id2" expect && waited_expect=1
	poll 30 ended "$id1" || die "run 1 did not end"
	poll 30 state_is "$id2" running || poll 1 ended "$id2" || die "run 2 was never admitted"
	track_job "$id2" || true
	ready1=$(mtime_ms "$tmp/r1.ready" 2>/dev/null || echo 0)
	adm2=$(jget "$(ctl show --json "$id2")" 'j["admitted_at_ms"] or 0')
	[ "$ready1" -gt 0 ] && [ "$adm2" -ge "$ready1" ] && return 0
	det=$(admitted_event "$id2")
	[ -n "$det" ] || return 0
	freed=$(neighbours_freed "$det")
	echo "run 2 admitted $((ready1 - adm2)) ms before run 1 had loaded, on $det: other processes freed about $freed MiB meanwhile"
	[ "$freed" -gt $((LOAD_MIB / 4)) ] || return 0
	# Both run to their end: each attempt adds two runs to learn from.
	ctl wait "$id1" >/dev/null 2>&1
	ctl wait "$id2" >/dev/null 2>&1
	return 2
}

end_prev=$(jget "$js" 'j["ended_at_ms"]')
attempts=0
for n in 1 2 3; do
	attempts=$n
	rc=0
	attempt "$n" "$end_prev" || rc=$?
	[ $rc -eq 2 ] || break
	end_prev=$(python3 -c 'import time; print(int(time.time() * 1000))')
done
[ "$(jget "$js1" 'j["expect_source"]')" = learned ] &&
	[ "$(jget "$js1" 'j["expect_bytes"]')" = "$peak" ] &&
	ok "run 1 reserves the learned $((peak >> 20)) MiB" ||
	bad "run 1 reserves $(jget "$js1" 'j["expect_bytes"]') ($(jget "$js1" 'j["expect_source"]'))"
[ $submitted_loading = 1 ] && ok "run 2 was submitted while run 1 loads" ||
	bad "run 1 had loaded before run 2 was submitted: the test means nothing"
[ $waited_expect = 1 ] && ok "run 2 waits for the reservation (expect)" ||
	bad "run 2 never waited for expect: $(ctl show --json "$id2")"
[ "$ready1" -gt 0 ] && [ "$adm2" -ge "$ready1" ] &&
	ok "run 2 admitted $((adm2 - ready1)) ms after run 1 had loaded" ||
	bad "run 2 admitted at $adm2, run 1 loaded at $ready1 (admitted on $(admitted_event "$id2"))"
rc=0
ctl wait "$id2" >/dev/null 2>&1 || rc=$?
[ $rc -eq 0 ] && ok "run 2 exited 0" || bad "run 2 ended with $rc"
for id in "$id1" "$id2"; do
	js=$(ctl show --json "$id")
	grew=$(jget "$js" 'j["swap_growth_peak_bytes"]')
	[ "$(jget "$js" 'j["state"]')" = exited ] && [ "$grew" -le $((64 << 20)) ] &&
		ok "job $id: exited, swap growth at most $((grew >> 20)) MiB (budget 64 MiB)" ||
		bad "job $id: $(jget "$js" 'j["state"]') $(jget "$js" 'j["end_reason"]'), swap growth $grew"
done
ev=$(ctl events --json --limit 10000) || die "events failed"
kills=$(printf '%s\n' "$ev" | python3 -c '
import json, sys
ids = {int(sys.argv[1]), int(sys.argv[2])}
print(sum(1 for l in sys.stdin if l.strip() and json.loads(l)["job_id"] in ids
          and json.loads(l)["kind"] in ("breach", "killed")))' "$id1" "$id2")
[ "$kills" = 0 ] && ok "no breach or kill of runs 1 and 2" || bad "breach or kill events: $ev"
# Every run ended sampled: the first, and two an attempt (of which the
# last learn_runs, 5, count).
want=$((1 + 2 * attempts))
[ $want -gt 5 ] && want=5
js=$(ctl show --json "$id2")
[ "$(jget "$js" 'j["learned"]["runs"]')" = $want ] && ok "show: learned from the $want runs" ||
	bad "show: learned $(jget "$js" 'j["learned"]') (want $want runs)"

kernel_done
