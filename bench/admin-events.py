"""How long `stageloadctl events -n 20` takes (it reads the event log newest first,
docs/cli.md "events") and what memory it needs, for a log of N events, and
`history` read from the database with the daemon stopped against the same
range answered by the daemon. Numbers go in docs/benchmarks.md, "events -n
and history without the daemon".

    python3 bench/admin-events.py [--events N] [--runs R]   # SL_BIN=build/bin

Needs GNU time (/usr/bin/time, Debian's `time`).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "tests", "lib"))
from sltest import Client, Daemon, poll, write_meminfo  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
ENV = ["PATH=/usr/bin:/bin"]


def timed(args, runs):
    """Median wall time (ms) of runs, and the largest max RSS (KiB) as GNU
    time measures it (a child forked from this Python would count its
    parent's pages)."""
    times, rss = [], 0
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sl-bench-rss.%d" % os.getpid())
    try:
        for _ in range(runs):
            t = time.monotonic()
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out, BIN] + args,
                           check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times.append((time.monotonic() - t) * 1000)
            with open(out) as f:
                rss = max(rss, int(f.read().split()[-1]))
    finally:
        if os.path.exists(out):
            os.unlink(out)
    return statistics.median(times), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with Daemon(interval="0.1", env={"STAGELOAD_CONFIG": ""}) as d:
        write_meminfo(d.proc_root, avail_kb=(16 << 20) // 10)
        c = Client(d.socket)
        poll(lambda: c.call("info")["sample"]["free_pct"] < 20, what="10 % free")
        t0 = time.monotonic()
        n = len(c.call("events", {"limit": 10000})["events"])
        first = None
        while n < a.events:
            jid = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ENV,
                                    "wait_free_pct": 90})["id"]
            c.call("cancel", {"id": jid})
            first = first or jid
            n += 2
        print("# %d events made in %.1f s" % (n, time.monotonic() - t0))
        since = str(int(time.time() * 1000) - 3600 * 1000)
        for label, args in (
                ("events -n 20", ["events", "-n", "20"]),
                ("events -n 20 --job (the newest job)",
                 ["events", "-n", "20", "--job", str(jid)]),
                ("events -n 20 --job (the oldest job)",
                 ["events", "-n", "20", "--job", str(first)]),
                ("events --limit 20 (the first page only)", ["events", "--limit", "20"]),
                ("history --since 1h (daemon)", ["history", "--since", since])):
            ms, rss = timed(["--socket", d.socket] + args, a.runs)
            print("%-45s %8.1f ms  max RSS %6d KiB" % (label, ms, rss))
        c.close()
        d.stop()
        ms, rss = timed(["--socket", d.socket, "history", "--db", d.db, "--since", since],
                        a.runs)
        print("%-45s %8.1f ms  max RSS %6d KiB" % ("history --since 1h (database, daemon down)",
                                                    ms, rss))


if __name__ == "__main__":
    main()
