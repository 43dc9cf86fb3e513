#!/usr/bin/env python3
"""Adaptive sampling benchmarks (docs/benchmarks.md, "Adaptive sampling").
Each runs a daemon of BUILD on a fixture proc root at the default 0.5 s
interval and the build's default fast interval (a build without adaptive
sampling gives today's figures), grace 1 s, settle 0.

  ramp     breach to SIGTERM: a job with a 4 GiB budget traps TERM and
           writes $EPOCHREALTIME; the fixture's swap used rises by a
           quarter of the budget every 0.25 s (1, 2, 3, 4 GiB: growth equal
           to the budget is no breach), then to 5 GiB, past it. Latency =
           SIGTERM in the job minus the write that first passed the budget.
           The ramp starts at a random phase of the sampling tick. Target:
           p95 <= 150 ms.
  handoff  a job's end to the next job's admission: job A holds the
           machine (the fixture's free % below job B's wait_free); A
           writes $EPOCHREALTIME, puts the fixture with more free memory in
           place and exits (as its memory being freed would show); latency
           = B's admitted_at_ms minus A's timestamp.

usage: bench/adaptive.py -b BUILD [--trials N] [ramp|handoff ...]
Prints Markdown rows.
"""

import argparse
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, HERE)
from sltest import Client, poll  # noqa: E402
from jobs import (GIB_KB, SWAP_TOTAL_KB, TOTAL_KB, env_list, fixture_daemon,  # noqa: E402
                  pctl, read_file, running, set_memory, state_of, wait_seen)
from sltest import write_meminfo  # noqa: E402

BUDGET_GIB = 4
STEP_S = 0.25


def ramp_one(d, c, i):
    base = os.path.join(d.dir, "ramp-%d" % i)
    t = set_memory(d, swap_used_kb=0)
    wait_seen(d, c, 0, t)
    script = ("trap 'echo $EPOCHREALTIME > %s.term; exit 0' TERM; "
              "echo up > %s.up; sleep 1000 & wait" % (base, base))
    jid = c.call("submit", {"argv": ["bash", "-c", script], "cwd": d.dir,
                            "env": env_list(),
                            "swap_budget_bytes": BUDGET_GIB << 30})["id"]
    poll(lambda: read_file(base + ".up"), timeout=30, what="job %d to start" % jid)
    # Calm first (the normal rate), then the ramp at a random phase.
    time.sleep(2.0 + random.uniform(0, 0.5))
    for g in range(1, BUDGET_GIB + 1):
        set_memory(d, swap_used_kb=g * GIB_KB)
        time.sleep(STEP_S)
    t_pass = set_memory(d, swap_used_kb=(BUDGET_GIB + 1) * GIB_KB)
    term = poll(lambda: read_file(base + ".term").strip(), timeout=30,
                step=0.002, what="SIGTERM to reach job %d" % jid)
    poll(lambda: state_of(c, jid) == "killed", timeout=30,
         what="job %d to end killed" % jid)
    return (float(term) - t_pass) * 1000.0


def handoff_one(d, c, i):
    base = os.path.join(d.dir, "hand-%d" % i)
    t = set_memory(d, free_pct=40)
    wait_seen(d, c, 0, t)
    nxt = base + ".meminfo"
    write_meminfo(d.dir, total_kb=TOTAL_KB, avail_kb=int(TOTAL_KB * 0.6),
                  swap_total_kb=SWAP_TOTAL_KB, swap_free_kb=SWAP_TOTAL_KB)
    os.rename(os.path.join(d.dir, "meminfo"), nxt)
    script = ("while [ ! -e %s.go ]; do sleep 0.01; done; "
              "echo $EPOCHREALTIME > %s.end; mv %s %s/meminfo"
              % (base, base, nxt, d.proc_root))
    a = c.call("submit", {"argv": ["bash", "-c", script], "cwd": d.dir,
                          "env": env_list()})["id"]
    poll(lambda: state_of(c, a) == "running", timeout=30, what="job A to run")
    b = c.call("submit", {"argv": ["sleep", "1000"], "cwd": d.dir,
                          "env": env_list(), "wait_free_pct": 50})["id"]
    poll(lambda: c.call("show", {"id": b}).get("waiting_for") == "free",
         timeout=30, what="job B to wait for free memory")
    time.sleep(random.uniform(0, 0.5))
    open(base + ".go", "w").close()
    jb = poll(lambda: (lambda j: j if j["state"] == "running" else None)(
        c.call("show", {"id": b})), timeout=30, what="job B to be admitted")
    end = float(poll(lambda: read_file(base + ".end").strip(), timeout=30,
                     what="job A's end"))
    c.call("cancel", {"id": b})
    poll(lambda: state_of(c, b) == "killed", timeout=30, what="job B to end")
    return jb["admitted_at_ms"] - end * 1000.0


def bench(build, what, trials):
    d = fixture_daemon(build, "0.5")
    fn = ramp_one if what == "ramp" else handoff_one
    with running(d):
        c = Client(d.socket)
        lats = [fn(d, c, i) for i in range(trials)]
        c.close()
    print("| %s | %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |" % (
        what, os.path.basename(os.path.dirname(os.path.abspath(build))) or build,
        trials, statistics.median(lats), pctl(lats, 95), min(lats), max(lats)))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", action="append", required=True,
                    help="a build directory (repeat: each is run in turn)")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("what", nargs="*", default=["ramp", "handoff"])
    a = ap.parse_args()
    print("| benchmark | build | trials | p50 | p95 | min | max |")
    print("|---|---|---|---|---|---|---|")
    for w in a.what:
        if w not in ("ramp", "handoff"):
            ap.error("unknown benchmark " + w)
        for b in a.build:
            bench(os.path.abspath(b), w, a.trials)


if __name__ == "__main__":
    main()
