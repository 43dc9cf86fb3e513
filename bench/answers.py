#!/usr/bin/env python3
"""How long the daemon's largest answers hold its loop (docs/benchmarks.md,
"Large answers").

A fixture daemon is given the largest data its limits allow one user to
make it answer with: 1,000 queued jobs with a 200 KiB argv and a 900 KiB
env each, 10,000 events and 100,000 samples (raw history at 0.5 s). Then,
one request at a time on an otherwise idle daemon, each of the list and
history answers is asked for N times and its round trip measured: the
daemon answers on its loop, so the round trip bounds how long the loop was
held (it also holds the client's own reading and decoding). While they
run, another process sends `info` every 2 ms on a connection of its own
and the slowest of those is reported too: that is what another user
waits.

usage: bench/answers.py [-b BUILD] [-n N] [--jobs N]
Needs a build (default build-bench next to this tree); prints Markdown.
"""

import argparse
import os
import select
import sqlite3
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jobs import fixture_daemon, running, set_memory  # noqa: E402
from sltest import Client, RpcError, poll  # noqa: E402

SAMPLES = 100000


def fill_samples(db, t_end_ms):
    """SAMPLES raw samples every 500 ms up to t_end_ms, written beside the
    daemon (WAL: it keeps running)."""
    con = sqlite3.connect(db, timeout=30)
    t0 = (t_end_ms - SAMPLES * 500) // 500 * 500  # bucket-aligned
    rows = [(t0 + i * 500, 5000 + i % 3000, 8 << 30, (i % 1000) << 20, 1,
             None, 16 << 30, 64 << 30, 0, 0) for i in range(SAMPLES)]
    con.executemany("INSERT OR IGNORE INTO samples VALUES (?,?,?,?,?,?,?,?,?,?)",
                    rows)
    con.commit()
    con.close()
    return t0


def timed(c, method, params, n):
    """n round trips; and the error code when the daemon refused."""
    xs, refused = [], None
    for _ in range(n):
        t = time.monotonic()
        try:
            c.call(method, params)
        except RpcError as e:
            refused = e.code
        xs.append((time.monotonic() - t) * 1000)
    return xs, refused


def pages(c, params, key):
    """Every page of a version 2 list; the round trip of each."""
    xs, cursor, total = [], None, 0
    while True:
        p = dict(params)
        if cursor is not None:
            p["cursor"] = cursor
        t = time.monotonic()
        r = c.call(key, p)
        xs.append((time.monotonic() - t) * 1000)
        total += len(r["jobs" if key == "status" else "events"])
        cursor = r.get("next_cursor")
        if cursor is None:
            return xs, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1000)
    a = ap.parse_args()
    d = fixture_daemon(os.path.abspath(a.build), "0.5",
                       "max_stored_bytes_per_uid = 4G\nmax_queued_per_uid = 100000\n")
    rows = []
    with running(d):
        set_memory(d, free_pct=80.0)
        c = Client(d.socket)
        big = {"argv": ["/bin/true", "a" * (200 << 10)], "cwd": "/",
               "env": ["BIG=" + "e" * (900 << 10)], "wait_free_pct": 95}
        for _ in range(a.jobs):
            c.call("submit", big)
        # Events: each submit made one; cancel-and-resubmit small jobs for
        # the rest (they end, so they do not hold the queue).
        small = {"argv": ["/bin/true"], "cwd": "/", "env": [], "wait_free_pct": 95}
        for _ in range(max(0, (10000 - a.jobs) // 2)):
            jid = c.call("submit", small)["id"]
            c.call("cancel", {"id": jid})
        now = int(time.time() * 1000)
        t0 = fill_samples(d.db, now - 60000)
        poll(lambda: c.call("history", {"since_ms": t0, "until_ms": t0 + 5000,
                                        "step_ms": 500})["buckets"],
             what="the samples to be seen")

        # The prober is a process of its own: in this one, decoding a
        # 25 MiB answer would hold the interpreter's lock for the prober
        # too, and it would time this script, not the daemon.
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
            v1 = Client(d.socket, version=1)
            c = Client(d.socket, version=2)
            cases = [
                ("status, version 1 (refused past 4 MiB)", v1, "status", {"all": True}),
                ("events, version 1, limit 10000", v1, "events", {"limit": 10000}),
                ("history, 100,000 raw buckets", c, "history",
                 {"since_ms": t0, "until_ms": t0 + SAMPLES * 500 - 1, "step_ms": 500}),
                ("show with env (1.1 MiB)", c, "show", {"id": 1, "env": True}),
            ]
            for label, cl, m, p in cases:
                xs, refused = timed(cl, m, p, a.n)
                if refused is not None:
                    label += " (refused: %d)" % refused
                rows.append((label, statistics.median(xs), max(xs), len(xs)))
            for label, m, p in [
                    ("status, version 2, every page of 1000", "status",
                     {"all": True, "limit": 1000}),
                    ("events, version 2, every page of 10000", "events",
                     {"limit": 10000})]:
                xs = []
                for _ in range(a.n):
                    px, total = pages(c, p, m)
                    xs += px
                rows.append(("%s (%d entries, %d pages)" % (label, total, len(px)),
                             statistics.median(xs), max(xs), len(xs)))
        finally:
            os.close(stop_w)
            slowest = float(os.read(res_r, 64) or b"0")
            os.waitpid(prober, 0)
    print("| answer | median ms | max ms | answers |")
    print("|---|---|---|---|")
    for label, med, mx, n in rows:
        print("| %s | %.1f | %.1f | %d |" % (label, med, mx, n))
    print()
    print("slowest `info` of another connection meanwhile: %.1f ms" % slowest)


if __name__ == "__main__":
    main()
