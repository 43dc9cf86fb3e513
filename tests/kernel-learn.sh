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
# budget and both exit 0.
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
# Free % from a sample a second after the first run ended: what it held
# has been given back by then.
end0=$(jget "$js" 'j["ended_at_ms"]')
sampled_after() {
	[ "$(jget "$(ctl info --json)" 'j["sample"]["sampled_at_ms"] > '"$1")" = True ]
}
poll 10 sampled_after $((end0 + 1000)) || die "no sample a second after the first run ended"
info=$(ctl info --json)
total=$(jget "$info" 'j["sample"]["total_bytes"]')
free=$(jget "$info" 'j["sample"]["free_pct"]')
# Half a loader's share below what is free now: met on free % alone,
# not with run 1's reservation counted.
wait_free=$(python3 -c "print(round($free - 50.0 * $peak / $total, 2))")
echo "free ${free}%, total $((total >> 20)) MiB: run 2 waits for ${wait_free}% free"
id1=$(submit_loader r1 2000) || die "submit failed"
track_job "$id1" || die "job $id1 never got a pid"
js=$(ctl show --json "$id1")
[ "$(jget "$js" 'j["expect_source"]')" = learned ] &&
	[ "$(jget "$js" 'j["expect_bytes"]')" = "$peak" ] &&
	ok "run 1 reserves the learned $((peak >> 20)) MiB" ||
	bad "run 1 reserves $(jget "$js" 'j["expect_bytes"]') ($(jget "$js" 'j["expect_source"]'))"
id2=$(submit_loader r2 500 --wait-free "$wait_free") || die "submit failed"
[ ! -e "$tmp/r1.ready" ] && ok "run 2 was submitted while run 1 loads" ||
	bad "run 1 had loaded before run 2 was submitted: the test means nothing"
poll 10 waiting_for "$id2" expect && ok "run 2 waits for the reservation (expect)" ||
	bad "run 2 never waited for expect: $(ctl show --json "$id2")"
poll 30 state_is "$id1" exited || bad "run 1 did not exit"
poll 30 state_is "$id2" running || bad "run 2 was not admitted after run 1"
track_job "$id2" || bad "job $id2 never got a pid"
ready1=$(mtime_ms "$tmp/r1.ready" 2>/dev/null || echo 0)
js2=$(ctl show --json "$id2")
adm2=$(jget "$js2" 'j["admitted_at_ms"]')
[ "$ready1" -gt 0 ] && [ "$adm2" -ge "$ready1" ] &&
	ok "run 2 admitted $((adm2 - ready1)) ms after run 1 had loaded" ||
	bad "run 2 admitted at $adm2, run 1 loaded at $ready1"
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
ev=$(ctl events --json --limit 1000) || die "events failed"
[ "$(printf '%s\n' "$ev" | grep -c '"kind":"\(breach\|killed\)"')" = 0 ] &&
	ok "no breach or kill" || bad "breach or kill events: $ev"
js=$(ctl show --json "$id2")
[ "$(jget "$js" 'j["learned"]["runs"]')" = 3 ] && ok "show: learned from the 3 runs" ||
	bad "show: learned $(jget "$js" 'j["learned"]')"

kernel_done
