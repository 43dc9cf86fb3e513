#!/usr/bin/env python3
"""What a whole array's submit, show, hold, release and cancel cost, and
how long they hold the daemon's loop (docs/benchmarks.md, "Whole arrays").

A fixture daemon gets one array of N elements (default 1000, the default
max_queued_per_uid) that never starts (wait_free_pct 100). Then hold,
release, show and cancel each name the whole array (A42) once. Each
round trip, the submit's too, is measured while another connection sends
`info` back to back: the slowest of those is what another user waits,
the loop's longest hold while the array's elements are stored (one
transaction, and their `submitted` events), changed (one commit each) and
answered.

usage: bench/arrays.py [-b BUILD] [-n N] [--rounds R]
Needs a build (default build-bench next to this tree); prints Markdown.
"""

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jobs import fixture_daemon, running  # noqa: E402
from sltest import Client  # noqa: E402

METHODS = ("submit", "hold", "release", "show", "cancel")


def one_round(d, n):
    c = Client(d.socket)
    worst, stop = [0.0], [False]
    aid = None

    def ping():
        p = Client(d.socket)
        while not stop[0]:
            t = time.monotonic()
            p.call("info")
            worst[0] = max(worst[0], time.monotonic() - t)
        p.close()

    th = threading.Thread(target=ping)
    th.start()
    out = {}
    try:
        time.sleep(0.3)  # the pinger connected and running
        for m in METHODS:
            worst[0] = 0.0
            t = time.monotonic()
            if m == "submit":
                r = c.call("submit", {"argv": ["true"], "cwd": "/",
                                      "env": [], "wait_free_pct": 100,
                                      "array": "1-%d" % n})
                aid = r["array_id"]
                assert len(r["ids"]) == n, len(r["ids"])
            else:
                r = c.call(m, {"id": "A%d" % aid})
                assert len(r["jobs"]) == n, (m, len(r["jobs"]))
            took = time.monotonic() - t
            time.sleep(0.2)  # what the pinger saw after the answer too
            out[m] = (took * 1000, worst[0] * 1000)
    finally:
        stop[0] = True
        th.join()
        c.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rows = {m: [] for m in METHODS}
    for _ in range(a.rounds):
        with running(fixture_daemon(os.path.abspath(a.build), "0.5")) as d:
            for m, v in one_round(d, a.n).items():
                rows[m].append(v)
    print("| `%s A42` of %d elements | request | another client's slowest `info` |" % ("METHOD", a.n))
    print("|---|---|---|")
    for m in METHODS:
        req = [r for r, _ in rows[m]]
        info = [i for _, i in rows[m]]
        print("| %s | %.0f-%.0f ms | %.1f-%.1f ms |" % (m, min(req), max(req), min(info), max(info)))


if __name__ == "__main__":
    main()
