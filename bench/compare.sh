#!/usr/bin/env bash
# Before/after comparison of docs/benchmarks.md's whole-daemon figures, for a
# change that must not make them worse. Two builds (each configured like
# build-bench: `cmake -S TREE -B TREE/build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo
# && cmake --build TREE/build-bench -j2`, or at least the targets stageloadd,
# bench_wake and sl-load) are measured in the same window, benchmark by
# benchmark, in RUNS rounds; each round runs both builds one after the other,
# the before build first in odd rounds and the after build first in even
# ones, so the host's drift falls on both alike. The existing scripts run
# unchanged:
#
#   sampling  bench/daemon.sh -w 65 -d 60 0.5: the daemon alone on the real
#             /proc, CPU per sample (schedstat) over a 60 s window opened
#             after the first retention prune; the floor bench_wake
#             measures beside it is shown for reading the noise.
#   breach    bench/jobs.py breach (30 trials at 0.5 s, then at 0.1 s):
#             breach-to-SIGTERM latency p50 and p95 per interval; the
#             reaction (sample to TERM) beside it.
#   load      bench/load.sh BUILD 0.5: 1,000 clients x 100 requests while 10
#             breaches are enforced: first-round req/s and p50/p99 latency,
#             daemon CPU per request, breach-to-SIGTERM max under load.
#
# For each benchmark, one Markdown table: metric, before median [min-max],
# after median [min-max], change %, verdict. The verdict is "regression"
# when the after median is worse than the before median by more than
# max(10 % of the before median, the before runs' spread max-min), else
# "ok"; rows marked "(info)" are context and get no verdict. Every run's
# raw output is kept in the output directory (printed), and the tables can
# be printed again from it with -r.
#
# usage: bench/compare.sh BEFORE_BUILD AFTER_BUILD [-n RUNS] [-q] [-o DIR]
#                         [-t sampling,breach,load] [-S SRC]
#        bench/compare.sh -r DIR           (tables again from a kept DIR)
#   -n RUNS  rounds per benchmark (default 5)
#   -q       quick check of this script: 1 round, shortest settings
#            (daemon.sh -w 3 -d 6, 3 breach trials, load.py with 3
#            breaches); about 1 minute, the figures mean little
#   -o DIR   keep raw outputs there (default: a new mktemp directory)
#   -t LIST  only these benchmarks
#   -S SRC   run the bench scripts of this tree for both builds; by default
#            each build runs those of the tree it was configured from
#            (CMAKE_HOME_DIRECTORY), so a daemon whose options changed is
#            still driven by matching helpers; a warning says when the two
#            trees' scripts differ.
#
# Time with the defaults (5 rounds, 2 builds), on a 2 vCPU VM: sampling
# 10 x ~128 s (65 s warm-up + 60 s window) ~ 21.5 min; breach 10 x ~57 s
# ~ 9.5 min; load 10 x ~16 s ~ 3 min (longer on a slower machine: ~40 s a
# run at 29,000 req/s); about 34 minutes in all. Keep the machine otherwise
# idle: a compile beside it moves these figures by more than 10 %.
#
# Only Unix sockets and files under /tmp are used (the benchmarks' own).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
usage() {
	sed -n '/^# usage:/,/^#            trees. scripts differ\./p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

runs=5
quick=0
out=
only=sampling,breach,load
src_all=
report_only=
pos=()
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=${2:?}; shift 2 ;;
	-q) quick=1; shift ;;
	-o) out=${2:?}; shift 2 ;;
	-t) only=${2:?}; shift 2 ;;
	-S) src_all=${2:?}; shift 2 ;;
	-r) report_only=${2:?}; shift 2 ;;
	-h|--help) usage ;;
	-*) echo "unknown option $1" >&2; usage ;;
	*) pos+=("$1"); shift ;;
	esac
done

# The tables, from a directory of raw outputs.
report() {
	python3 - "$1" <<'EOF'
import json, os, re, statistics, sys

out = sys.argv[1]
info = {}
try:
    with open(os.path.join(out, "info")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            info[k] = v
except FileNotFoundError:
    pass


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def num(s):
    m = re.search(r"[-+]?[0-9]+(?:\.[0-9]+)?", s)
    return float(m.group(0)) if m else None


# Each parser: text of one run -> {metric key: value}.
def p_sampling(text):
    r = {}
    for line in text.splitlines():
        c = cells(line)
        if len(c) >= 13 and c[0] == "0.5 s":
            r["cpu"] = num(c[3])
            r["idle"] = num(c[5])
            r["floor"] = num(c[6])
            r["net"] = num(c[7])
            r["hwm"] = num(c[8])
            r["samples"] = num(c[2])
    return r


def p_breach(text):
    r = {}
    for line in text.splitlines():
        c = cells(line)
        if len(c) >= 9 and c[0] in ("0.5 s", "0.1 s"):
            iv = c[0].split()[0]
            r["p50_" + iv] = num(c[2])
            r["p95_" + iv] = num(c[3])
            react = c[8].split("/")
            if len(react) == 2:
                r["react50_" + iv] = num(react[0])
                r["react95_" + iv] = num(react[1])
    return r


def p_load(text):
    js = [l for l in text.splitlines() if l.startswith("{")]
    if not js:
        return {}
    try:
        d = json.loads(js[-1])
    except ValueError:
        return {}
    r = {}
    for key, k in (("rps1", "first_round_requests_per_s"),
                   ("p50", "first_round_p50_ms"), ("p99", "first_round_p99_ms"),
                   ("rps", "requests_per_s"),
                   ("cpureq", "daemon_cpu_us_per_request"),
                   ("bp50", "breach_term_p50_ms"),
                   ("nbreach", "breaches_under_load"),
                   ("newc", "idle_new_client_ms"),
                   ("errors", "errors"), ("hwm", "daemon_vmhwm_mib")):
        if d.get(k) is not None:
            r[key] = float(d[k])
    if d.get("breach_term_ms"):
        r["bmax"] = max(d["breach_term_ms"])
    return r


# (key, label, direction: -1 lower is better, +1 higher is better,
#  verdict: False for context rows)
BENCH = {
    "sampling": ("Daemon sampling cost, 0.5 s (bench/daemon.sh)", p_sampling, [
        ("cpu", "CPU per sample (schedstat), µs", -1, True),
        ("floor", "floor: timer + platform_sys_sample, same window, µs (info)", -1, False),
        ("idle", "idle timer, same window, µs (info)", -1, False),
        ("net", "the daemon less that floor, µs (info)", -1, False),
        ("hwm", "peak RSS, MiB (info)", -1, False),
    ]),
    "breach": ("Breach to SIGTERM (bench/jobs.py breach)", p_breach, [
        ("p50_0.5", "0.5 s: p50, ms", -1, True),
        ("p95_0.5", "0.5 s: p95, ms", -1, True),
        ("p50_0.1", "0.1 s: p50, ms", -1, True),
        ("p95_0.1", "0.1 s: p95, ms", -1, True),
        ("react50_0.5", "0.5 s: sample to TERM p50, ms (info)", -1, False),
        ("react95_0.5", "0.5 s: sample to TERM p95, ms (info)", -1, False),
        ("react50_0.1", "0.1 s: sample to TERM p50, ms (info)", -1, False),
        ("react95_0.1", "0.1 s: sample to TERM p95, ms (info)", -1, False),
    ]),
    "load": ("Load, 0.5 s (bench/load.sh)", p_load, [
        ("rps1", "throughput, first round, req/s", +1, True),
        ("p50", "latency p50, first round, ms", -1, True),
        ("p99", "latency p99, first round, ms", -1, True),
        ("cpureq", "daemon CPU per request, µs", -1, True),
        ("bmax", "breach to SIGTERM under load, max, ms", -1, True),
        ("bp50", "breach to SIGTERM under load, p50, ms (info)", -1, False),
        ("nbreach", "breaches under load (info)", +1, False),
        ("rps", "throughput, all rounds, req/s (info)", +1, False),
        ("newc", "newcomer among the idle connections, ms (info)", -1, False),
        ("hwm", "peak RSS, MiB (info)", -1, False),
        ("errors", "request errors (info; must be 0)", -1, False),
    ]),
}


COUNTS = ("nbreach", "errors")


def fmt(v, key=""):
    if key in COUNTS:
        return "%d" % v
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def cell(xs, want, key):
    if not xs:
        return "no data"
    s = "%s [%s–%s]" % (fmt(statistics.median(xs), key), fmt(min(xs), key),
                        fmt(max(xs), key))
    if len(xs) < want:
        s += " (%d of %d runs)" % (len(xs), want)
    return s


want = int(info.get("runs", "0") or 0)
print("# bench/compare.sh: %s" % out)
print()
for k in ("before", "after"):
    if k in info:
        print("- %s: %s (%s)" % (k, info[k], info.get(k + "_desc", "")))
for k in ("settings", "started", "finished"):
    if k in info:
        print("- %s: %s" % (k, info[k]))
print("- regression: after's median worse by more than "
      "max(10 %, before's max-min)")
if want == 1:
    print("- one round: no spread to judge against, so a verdict is only "
          "a check that the table prints (the figures move by 20-30 % "
          "from run to run)")
regressions = []
missing = []
failed = []
for name, (title, parse, metrics) in BENCH.items():
    bdir = os.path.join(out, name)
    if not os.path.isdir(bdir):
        continue
    vals = {"before": {}, "after": {}}
    nrounds = 0
    for f in sorted(os.listdir(bdir)):
        m = re.match(r"r(\d+)-(before|after)\.out$", f)
        if not m:
            continue
        nrounds = max(nrounds, int(m.group(1)))
        path = os.path.join(bdir, f)
        with open(path, errors="replace") as fh:
            r = parse(fh.read())
        rc = None
        try:
            with open(path[:-4] + ".rc") as fh:
                rc = fh.read().strip()
        except FileNotFoundError:
            pass
        if rc not in ("0",) or not r:
            failed.append("%s/%s (exit %s%s)" % (name, f, rc,
                          "" if r else ", nothing parsed"))
        for key, v in r.items():
            if v is not None:
                vals[m.group(2)].setdefault(key, []).append(v)
    print()
    print("## %s" % title)
    print()
    print("| metric | before median [min–max] | after median [min–max] | change | verdict |")
    print("|---|---|---|---|---|")
    n = want or nrounds
    for key, label, sign, verdict in metrics:
        b = vals["before"].get(key, [])
        a = vals["after"].get(key, [])
        if not b and not a:
            continue
        change, v = "", ""
        if b and a:
            bm, am = statistics.median(b), statistics.median(a)
            if bm > 0 and am >= 0:
                change = "%+.1f %%" % ((am - bm) / bm * 100)
            elif am != bm:
                # A percentage of a figure near or below zero means nothing.
                change = "%+.1f" % (am - bm)
            if verdict:
                thr = max(0.10 * abs(bm), max(b) - min(b))
                worse = (am - bm) if sign < 0 else (bm - am)
                if worse > thr:
                    v = "**regression**"
                    regressions.append("%s: %s" % (name, label))
                else:
                    v = "ok"
        elif verdict:
            v = "no data"
            missing.append("%s: %s" % (name, label))
        print("| %s | %s | %s | %s | %s |" % (label, cell(b, n, key), cell(a, n, key), change, v))
print()
if failed:
    print("Runs that failed or printed nothing usable: " + "; ".join(failed))
    print()
if missing:
    print("Not judged, a build has no figure: " + "; ".join(missing))
    print()
if regressions:
    print("Regressions: " + "; ".join(regressions))
elif missing:
    print("No regression among the figures judged; the comparison is incomplete.")
else:
    print("No regression.")
EOF
}

if [ -n "$report_only" ]; then
	[ -d "$report_only" ] || { echo "no directory $report_only" >&2; exit 2; }
	report "$report_only"
	exit 0
fi

[ ${#pos[@]} -eq 2 ] || usage
case $runs in '' | *[!0-9]* | 0) echo "-n wants a positive number" >&2; exit 2 ;; esac
[ "$quick" = 1 ] && runs=1

for b in "${pos[@]}"; do
	[ -d "$b" ] || { echo "no build directory $b" >&2; exit 2; }
done
build_before=$(cd "${pos[0]}" && pwd)
build_after=$(cd "${pos[1]}" && pwd)
for b in "$build_before" "$build_after"; do
	for t in stageloadd bench_wake sl-load; do
		[ -x "$b/bin/$t" ] || { echo "no $b/bin/$t: build it first" >&2; exit 2; }
	done
done

# The tree whose bench scripts drive a build.
src_of() {
	local s=
	if [ -n "$src_all" ]; then
		s=$src_all
	elif [ -f "$1/CMakeCache.txt" ]; then
		s=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt")
	fi
	[ -n "$s" ] && [ -x "$s/bench/daemon.sh" ] || s=$here/..
	(cd "$s" && pwd)
}
src_before=$(src_of "$build_before")
src_after=$(src_of "$build_after")
desc() {
	local rev type
	rev=$(git -C "$2" describe --always --dirty 2>/dev/null || echo "?")
	type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$1/CMakeCache.txt" 2>/dev/null)
	echo "scripts of $2 at $rev, ${type:-unknown} build"
}
if [ "$src_before" != "$src_after" ]; then
	for f in bench/daemon.sh bench/jobs.py bench/load.sh bench/load.py tests/lib/sltest.py; do
		cmp -s "$src_before/$f" "$src_after/$f" ||
		    echo "warning: $f differs between $src_before and $src_after" >&2
	done
fi
tb=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_before/CMakeCache.txt" 2>/dev/null || true)
ta=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_after/CMakeCache.txt" 2>/dev/null || true)
[ "$tb" = "$ta" ] || echo "warning: build types differ: before '$tb', after '$ta'" >&2

if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/sl-compare.XXXXXX)
else
	mkdir -p "$out"
fi
out=$(cd "$out" && pwd)
echo "raw outputs in $out" >&2

if [ "$quick" = 1 ]; then
	s_warm=3 s_dur=6 trials=3
	settings="quick (-q): daemon.sh -w 3 -d 6 0.5; jobs.py --trials 3 breach; load.py -c 1000 -n 100 -i 1000 --breaches 3 --interval 0.5"
else
	s_warm=65 s_dur=60 trials=30
	settings="daemon.sh -w 65 -d 60 0.5; jobs.py --trials 30 breach; load.sh BUILD 0.5"
fi
{
	echo "before=$build_before"
	echo "before_desc=$(desc "$build_before" "$src_before")"
	echo "after=$build_after"
	echo "after_desc=$(desc "$build_after" "$src_after")"
	echo "runs=$runs"
	echo "settings=$settings; $runs round(s), before first in odd rounds, after first in even ones"
	echo "started=$(date '+%F %T %z'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/info"

# run BENCH SIDE ROUND: one benchmark on one build, output kept.
run() {
	local bench=$1 side=$2 round=$3 build src f t0 t1 rc=0
	if [ "$side" = before ]; then build=$build_before src=$src_before
	else build=$build_after src=$src_after; fi
	f="$out/$bench/r$round-$side"
	mkdir -p "$out/$bench"
	t0=$(date +%s)
	case $bench in
	sampling)
		"$src/bench/daemon.sh" -b "$build" -w "$s_warm" -d "$s_dur" 0.5 \
		    >"$f.out" 2>"$f.err" || rc=$? ;;
	breach)
		python3 "$src/bench/jobs.py" -b "$build" --trials "$trials" breach \
		    >"$f.out" 2>"$f.err" || rc=$? ;;
	load)
		if [ "$quick" = 1 ]; then
			(ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
			 exec python3 "$src/bench/load.py" -b "$build" -c 1000 -n 100 \
			    -i 1000 --breaches 3 --interval 0.5) >"$f.out" 2>"$f.err" || rc=$?
		else
			"$src/bench/load.sh" "$build" 0.5 >"$f.out" 2>"$f.err" || rc=$?
		fi ;;
	esac
	t1=$(date +%s)
	echo "$rc" >"$f.rc"
	echo "$((t1 - t0))" >"$f.seconds"
	printf '%s round %d/%d %-6s %4d s%s\n' "$bench" "$round" "$runs" "$side" \
	    "$((t1 - t0))" "$([ "$rc" = 0 ] || echo ", exit $rc (see $f.err)")" >&2
}

start=$(date +%s)
IFS=, read -r -a benches <<<"$only"
for bench in "${benches[@]}"; do
	case $bench in sampling | breach | load) ;; *) echo "unknown benchmark $bench" >&2; exit 2 ;; esac
	for round in $(seq "$runs"); do
		if [ $((round % 2)) = 1 ]; then
			run "$bench" before "$round"
			run "$bench" after "$round"
		else
			run "$bench" after "$round"
			run "$bench" before "$round"
		fi
	done
done
echo "finished=$(date '+%F %T %z'), $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/info"
echo "total $(( $(date +%s) - start )) s" >&2

report "$out"
