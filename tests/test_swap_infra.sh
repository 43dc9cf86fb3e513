#!/usr/bin/env bash
# The swap test infrastructure really produces swap: swaphog, in a memory
# cgroup limited below its size, pushes SwapTotal-SwapFree up by at least
# the excess; its SIGTERM trap records the arrival time; and everything the
# test made (swapfile, cgroup) is gone afterwards.
# Cleanup commands are quoted to expand when they run.
# shellcheck disable=SC2015,SC2016
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/swap.sh"
. "$here/lib/kernel.sh"

HOG=${SL_BIN:-}/swaphog
LIMIT_MIB=64
HOG_MIB=192
SWAPFILE_MIB=256
now_ms() {
	date +%s%3N
}

swap_require_root
if [ ! -x "$HOG" ]; then
	echo "FAIL: $HOG not built (build the swaphog target)" >&2
	exit 1
fi

tmp=$(mktemp -d /tmp/sl-swapinfra.XXXXXX)
swap_on_exit 'rm -rf "$tmp"'

base=$(swap_used_bytes)
swap_file_create $SWAPFILE_MIB || { echo "FAIL: cannot create a swapfile" >&2; exit 1; }
grep -q "^$SWAP_FILE " /proc/swaps && ok "swapfile is active" || bad "swapfile not in /proc/swaps"
swap_cgroup_create "sl-swapinfra-$$" $LIMIT_MIB || { echo "FAIL: cannot create a memory cgroup" >&2; exit 1; }
cg=$SWAP_CGROUP
swapfile=$SWAP_FILE

# A watcher notes when growth first passes 32 MiB, as a budget test would.
started=$(swap_now_ms)
swap_watch "$base" $((32 * 1024 * 1024)) "$tmp/passed"

# Grow to HOG_MIB and hold it long enough for the test to watch.
swap_cgroup_run "$HOG" -s 16 -i 20 -H 60000 -t "$tmp/term" -r "$tmp/ready" $HOG_MIB
hog=$SWAP_PID
swap_on_exit "kill -KILL $hog 2>/dev/null"

# Poll (bounded) until it is fully allocated; track the swap it causes.
want=$(((HOG_MIB - LIMIT_MIB) * 1024 * 1024 / 2)) # at least half the excess
peak=0
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ] && kill -0 "$hog" 2>/dev/null; do
	used=$(($(swap_used_bytes) - base))
	[ $used -gt $peak ] && peak=$used
	[ -f "$tmp/ready" ] && [ $peak -ge $want ] && break
	sleep 0.05
done
echo "swap growth: $((peak / 1048576)) MiB (hog $HOG_MIB MiB, limit $LIMIT_MIB MiB)"
[ -f "$tmp/ready" ] && ok "swaphog allocated $HOG_MIB MiB" || bad "swaphog did not finish allocating"
[ $peak -ge $want ] && ok "SwapTotal-SwapFree grew by $((peak / 1048576)) MiB" ||
	bad "swap grew only $((peak / 1048576)) MiB, wanted >= $((want / 1048576)) MiB"

seen=$(swap_now_ms)
passed_ms=$(cat "$tmp/passed" 2>/dev/null)
if [ -n "$passed_ms" ] && [ "$passed_ms" -ge "$started" ] && [ "$passed_ms" -le "$seen" ]; then
	ok "swap_watch saw 32 MiB of growth $((passed_ms - started)) ms after the start"
else
	bad "swap_watch time '${passed_ms}' not within [$started, $seen]"
fi

grep -qx "$hog" "$cg/cgroup.procs" && ok "swaphog runs in the cgroup" || bad "swaphog not in $cg"
vmswap=$(awk '/^VmSwap:/ { print $2 }' "/proc/$hog/status" 2>/dev/null)
[ "${vmswap:-0}" -gt 0 ] && ok "swaphog's own VmSwap is ${vmswap} kB" || bad "swaphog VmSwap is ${vmswap:-missing}"

# SIGTERM: the trap writes when it arrived, between send and now.
sent=$(now_ms)
kill -TERM "$hog"
wait "$hog"
rc=$?
after=$(now_ms)
[ $rc -eq 143 ] && ok "swaphog exited 143 on SIGTERM" || bad "swaphog exit status $rc"
arrived=$(cat "$tmp/term" 2>/dev/null)
if [ -n "$arrived" ] && [ "$arrived" -ge "$sent" ] && [ "$arrived" -le "$after" ]; then
	ok "SIGTERM arrival recorded: $((arrived - sent)) ms after sending"
else
	bad "SIGTERM arrival '${arrived}' not within [$sent, $after]"
fi

# Cleanup leaves nothing behind.
swap_cleanup
grep -q "^$swapfile " /proc/swaps && bad "swapfile still active" || ok "swapfile off"
[ -e "$swapfile" ] && bad "swapfile still exists" || ok "swapfile removed"
[ -d "$cg" ] && bad "cgroup $cg still exists" || ok "cgroup removed"

kernel_done
