#!/usr/bin/env bash
# Daemon sampling cost on the real /proc: runs stageloadd alone (no clients,
# no jobs) for a fixed time at each interval and reports
#   - CPU per sample: CPU time of all the daemon's threads over the window
#     (/proc/PID/task/*/schedstat, nanoseconds; utime+stime ticks as a
#     cross-check) divided by the samples it stored in that window. This is
#     the whole daemon amortised: sampling, store commits every 120
#     samples and every minute with a checkpoint, rollups, timers.
#   - beside it over the same window, bench_wake: a libuv timer at the same
#     interval that does nothing, and one that calls platform_sys_sample
#     and nothing else: what waking up and reading meminfo cost on this
#     machine at that time, the floor under the daemon's figure, and the
#     daemon's figure less that floor: its own work;
#   - peak RSS (VmHWM) and RSS at the end;
#   - database growth per day, extrapolated from the window: the database's
#     pages (db + wal after a TRUNCATE checkpoint) and, byte-precise, the
#     bytes its b-trees use (dbstat), before and after.
#
# usage: bench/daemon.sh [-b BUILD_DIR] [-d SECONDS] [-w WARMUP] [INTERVAL...]
#   defaults: -b build-bench next to this script's tree, -d 120, -w 65,
#   intervals 0.5 0.1. Prints a Markdown table row per interval.
#   The warm-up lets the daemon's first retention prune, a minute after
#   start, pass before the window opens: it then runs hourly, and inside a
#   2-minute window it would count 30 times over.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build-bench"
dur=120
warm=65
while getopts "b:d:w:" o; do
	case $o in
	b) build=$OPTARG ;;
	d) dur=$OPTARG ;;
	w) warm=$OPTARG ;;
	*) echo "usage: $0 [-b BUILD] [-d SECONDS] [-w WARMUP] [INTERVAL...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
intervals=("$@")
[ ${#intervals[@]} -gt 0 ] || intervals=(0.5 0.1)
daemon="$build/bin/stageloadd"
wake="$build/bin/bench_wake"
[ -x "$daemon" ] && [ -x "$wake" ] || { echo "no $daemon or $wake; build first" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell" >&2; exit 2; }

tmp=$(mktemp -d /tmp/sl-bench-daemon.XXXXXX)
dpid=
widle=
wsample=
cleanup() {
	for p in $widle $wsample; do kill "$p" 2>/dev/null || true; done
	if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
		kill -KILL "$dpid" 2>/dev/null || true
		wait "$dpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# CPU nanoseconds of every thread of a process.
cpu_ns() {
	local sum=0 f v
	for f in /proc/"$1"/task/*/schedstat; do
		read -r v _ <"$f" || continue
		sum=$((sum + v))
	done
	echo "$sum"
}

# utime + stime in clock ticks (field 14 and 15, after the comm).
cpu_ticks() {
	local s
	s=$(<"/proc/$1/stat")
	s=${s##*) }
	set -- $s
	echo $((${12} + ${13}))
}

status_kb() {
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

# Bytes the database's b-trees use (all pages minus their unused space),
# and its size in pages, seen by a reader (so WAL content counts).
db_used() {
	sqlite3 -readonly "$1" \
	    "SELECT sum(pgsize - unused) FROM dbstat;" 2>/dev/null || echo 0
}
db_pages_bytes() {
	sqlite3 -readonly "$1" "PRAGMA page_count;" "PRAGMA page_size;" |
	    { read -r n; read -r sz; echo $((n * sz)); }
}

now_ms() { date +%s%3N; }

hz=$(getconf CLK_TCK)
printf '| interval | seconds | samples | CPU per sample (schedstat) | CPU per sample (utime+stime) | idle timer, same window | timer + platform_sys_sample, same window | the daemon less that floor | peak RSS (VmHWM) | RSS at end | db+wal at end | growth per day (pages) | growth per day (bytes used) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for iv in "${intervals[@]}"; do
	dir="$tmp/$iv"
	mkdir -p "$dir"
	db="$dir/sl.db"
	"$daemon" --socket "$dir/sl.sock" --db "$db" --interval "$iv" \
	    >"$dir/log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do
		[ -S "$dir/sl.sock" ] && break
		sleep 0.1
	done
	[ -S "$dir/sl.sock" ] || { cat "$dir/log" >&2; exit 1; }
	sleep "$warm"

	used0=$(db_used "$db")
	pages0=$(db_pages_bytes "$db")
	ms=$(python3 -c "print(int(round($iv * 1000)))")
	"$wake" --interval-ms "$ms" --seconds "$dur" --idle >"$dir/wake-idle" &
	widle=$!
	"$wake" --interval-ms "$ms" --seconds "$dur" >"$dir/wake-sample" &
	wsample=$!
	t0=$(now_ms)
	c0=$(cpu_ns "$dpid")
	k0=$(cpu_ticks "$dpid")
	sleep "$dur"
	c1=$(cpu_ns "$dpid")
	k1=$(cpu_ticks "$dpid")
	t1=$(now_ms)
	wait "$widle" "$wsample"
	floor_idle=$(sed -n 's/.*, \([0-9.]*\) us CPU per wake-up/\1/p' "$dir/wake-idle")
	floor_sample=$(sed -n 's/.*, \([0-9.]*\) us CPU per wake-up/\1/p' "$dir/wake-sample")
	hwm=$(status_kb "$dpid" VmHWM)
	rss=$(status_kb "$dpid" VmRSS)

	kill -TERM "$dpid"
	wait "$dpid" || { echo "daemon exited $?" >&2; cat "$dir/log" >&2; exit 1; }
	dpid=
	tstop=$(now_ms)
	sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
	files=$(( $(stat -c %s "$db") + $( [ -f "$db-wal" ] && stat -c %s "$db-wal" || echo 0) ))
	used1=$(db_used "$db")
	pages1=$(db_pages_bytes "$db")
	n=$(sqlite3 -readonly "$db" \
	    "SELECT count(*) FROM samples WHERE ts_ms >= $t0 AND ts_ms < $t1;")

	python3 - "$iv" "$t0" "$t1" "$tstop" "$n" "$c0" "$c1" "$k0" "$k1" "$hz" \
	    "$hwm" "$rss" "$files" "$pages0" "$pages1" "$used0" "$used1" \
	    "$floor_idle" "$floor_sample" <<'EOF'
import sys
(iv, t0, t1, tstop, n, c0, c1, k0, k1, hz, hwm, rss, files, p0, p1, u0,
 u1, fi, fs) = sys.argv[1:]
t0, t1, tstop, n = int(t0), int(t1), int(tstop), int(n)
secs = (t1 - t0) / 1000.0
cpu = (int(c1) - int(c0)) / 1e3 / n
ticks = (int(k1) - int(k0)) * 1e6 / int(hz) / n
day = 86400.0 / ((tstop - t0) / 1000.0)
gp = (int(p1) - int(p0)) * day / 1e6
gu = (int(u1) - int(u0)) * day / 1e6
print("| %s s | %.0f | %d | %.1f µs | %.0f µs | %s µs | %s µs | %+.1f µs "
      "| %.1f MiB | %.1f MiB | %.0f KiB | %.2f MB | %.2f MB |"
      % (iv, secs, n, cpu, ticks, fi, fs, cpu - float(fs), int(hwm) / 1024.0,
         int(rss) / 1024.0, int(files) / 1024.0, gp, gu))
EOF
done
