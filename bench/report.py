#!/usr/bin/env python3
"""How long `report` takes over 100,000 ended jobs, and how long it holds
the daemon's loop (docs/benchmarks.md, "Accounting").

A fixture daemon's accounting rollup (job_days, docs/storage.md) is seeded
beside it, as the daemon would have written it, with N ended jobs (default
100,000) over 90 days of 20 users and 50 names each: outcomes 80 % exit 0,
8 % another exit, 5 % killed (swap_budget, cancel), 4 % cancelled, 2 %
failed, 1 % lost; run times log-normal around 10 minutes. Then each form
of report is asked for N times on an otherwise idle daemon and its round
trip measured (the daemon reads and writes it a slice at a time), while
another process sends `info` every 2 ms on a connection of its own: the
slowest of those is what another user waits, the loop's longest hold
while the reports are answered. Last, `stageloadctl report --db` with the
daemon stopped reads the same database itself.

usage: bench/report.py [-b BUILD] [-n N] [--jobs N]
Needs a build (default build-bench next to this tree); prints Markdown.
"""

import argparse
import math
import os
import random
import select
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jobs import fixture_daemon, running, set_memory  # noqa: E402
from sltest import Client  # noqa: E402

DAY_MS = 24 * 3600 * 1000
DAYS, USERS, NAMES = 90, 20, 50


def bucket(run_ms):
    """daemon/store-report.h's histogram bucket."""
    if run_ms < 1000:
        return 0
    return min(199, max(1, 1 + int(math.floor(8 * math.log2(run_ms / 1000.0)))))


def seed(db, njobs, today):
    """njobs ended jobs summed into job_days rows, written beside the
    running daemon (WAL). Returns the number of rows."""
    rnd = random.Random(42)
    rows = {}
    outcomes = (["exited_0"] * 80 + ["exited_nonzero"] * 8 + ["killed"] * 5 +
                ["cancelled"] * 4 + ["failed"] * 2 + ["lost"])
    for _ in range(njobs):
        day = today - rnd.randrange(DAYS)
        uid = 1000 + rnd.randrange(USERS)
        name = "gen-%02d" % rnd.randrange(NAMES)
        out = rnd.choice(outcomes)
        k = (day, uid, name)
        r = rows.get(k)
        if r is None:
            r = rows[k] = {"runs": 0, "exited_0": 0, "exited_nonzero": 0, "failed": 0,
                           "killed": 0, "cancelled": 0, "lost": 0, "killed_by": {},
                           "ran": 0, "run_ms": 0, "hist": {}, "waited_ms": 0,
                           "fp": 0, "swap": 0}
        r["runs"] += 1
        r[out] += 1
        if out == "killed":
            why = rnd.choice(("swap_budget", "swap_budget", "cancel"))
            r["killed_by"][why] = r["killed_by"].get(why, 0) + 1
        if out not in ("cancelled", "failed"):
            run = int(rnd.lognormvariate(math.log(600000), 1.0))
            r["ran"] += 1
            r["run_ms"] += run
            b = bucket(run)
            r["hist"][b] = r["hist"].get(b, 0) + 1
        r["waited_ms"] += int(rnd.expovariate(1 / 120000.0))
        r["fp"] = max(r["fp"], rnd.randrange(1 << 30, 40 << 30))
        r["swap"] = max(r["swap"], rnd.randrange(0, 4 << 30) if out != "killed" else 9 << 30)
    con = sqlite3.connect(db, timeout=30)
    con.executemany(
        "INSERT INTO job_days (day, uid, name, user, runs, exited_0, exited_nonzero,"
        " failed, killed, cancelled, lost, killed_by, ran, run_ms, run_hist, waited_ms,"
        " footprint_peak_bytes, swap_growth_peak_bytes)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(d, u, n, "user%d" % u, r["runs"], r["exited_0"], r["exited_nonzero"],
          r["failed"], r["killed"], r["cancelled"], r["lost"],
          "{%s}" % ",".join('"%s":%d' % kv for kv in sorted(r["killed_by"].items())),
          r["ran"], r["run_ms"],
          ",".join("%d:%d" % kv for kv in sorted(r["hist"].items())),
          r["waited_ms"], r["fp"], r["swap"])
         for (d, u, n), r in rows.items()])
    con.commit()
    con.close()
    return len(rows)


def timed(c, params, n):
    xs, r = [], None
    for _ in range(n):
        t = time.monotonic()
        r = c.call("report", params, timeout=120)
        xs.append((time.monotonic() - t) * 1000)
    return xs, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=100000)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    d = fixture_daemon(build, "0.5")
    rows, offline = [], []
    with running(d):
        set_memory(d, free_pct=80.0)
        c = Client(d.socket)
        today = int(time.time() * 1000) // DAY_MS
        t = time.monotonic()
        nrows = seed(d.db, a.jobs, today)
        seed_s = time.monotonic() - t
        since = (today - DAYS + 1) * DAY_MS

        stop_r, stop_w = os.pipe()
        res_r, res_w = os.pipe()
        prober = os.fork()
        if prober == 0:
            os.close(stop_w)
            os.close(res_r)
            ic, worst = Client(d.socket), 0.0
            while not select.select([stop_r], [], [], 0.002)[0]:
                t = time.monotonic()
                ic.call("info")
                worst = max(worst, (time.monotonic() - t) * 1000)
            os.write(res_w, b"%f" % worst)
            os._exit(0)
        os.close(stop_r)
        os.close(res_w)
        try:
            for label, p in [
                    ("by user,name, 90 days", {"since_ms": since}),
                    ("by user, 90 days", {"since_ms": since, "by": "user"}),
                    ("by name, 90 days", {"since_ms": since, "by": "name"}),
                    ("by user,name, 7 days", {"since_ms": (today - 6) * DAY_MS}),
                    ("one user, names gen-1*, 90 days",
                     {"since_ms": since, "uid": 1003, "name": "gen-1*"})]:
                xs, r = timed(c, p, a.n)
                total = sum(x["runs"] for x in r["rows"])
                rows.append(("%s (%d rows, %d jobs)" % (label, len(r["rows"]), total),
                             statistics.median(xs), max(xs), len(xs)))
                if label.startswith("by user,name, 90"):
                    assert total == a.jobs, (total, a.jobs)
        finally:
            os.close(stop_w)
            slowest = float(os.read(res_r, 64) or b"0")
            os.waitpid(prober, 0)
        c.close()
        d.stop()
        ctl = os.path.join(build, "bin", "stageloadctl")
        for args in (["--since", "90d"], ["--since", "90d", "--by", "user", "--csv"]):
            xs = []
            for _ in range(a.n):
                t = time.monotonic()
                out = subprocess.run([ctl, "--socket", d.socket, "report", "--db", d.db]
                                     + args, capture_output=True, text=True)
                xs.append((time.monotonic() - t) * 1000)
                assert out.returncode == 0, out.stderr
            offline.append((" ".join(args), statistics.median(xs), max(xs), len(xs)))
        size = os.path.getsize(d.db)
    print("%d ended jobs seeded as %d job_days rows (%.1f s), database %.1f MiB"
          % (a.jobs, nrows, seed_s, size / 1048576.0))
    print()
    print("| report | median ms | max ms | answers |")
    print("|---|---|---|---|")
    for label, med, mx, n in rows:
        print("| %s | %.1f | %.1f | %d |" % (label, med, mx, n))
    print()
    print("slowest `info` of another connection meanwhile: %.1f ms" % slowest)
    print()
    print("| `stageloadctl report --db` (daemon stopped) | median ms | max ms | runs |")
    print("|---|---|---|---|")
    for label, med, mx, n in offline:
        print("| `%s` | %.1f | %.1f | %d |" % (label, med, mx, n))


if __name__ == "__main__":
    main()
