#!/usr/bin/env python3
"""stageload-web benchmarks (docs/benchmarks.md, "The web program").

With 1,000 queued and 10 running jobs on a daemon with a fixture proc
root:

  metrics   GET /metrics over one keep-alive connection, N times; the
            time from sending the request to the last byte. Target < 5 ms.
  page      GET / (the 1 h window), the time to the first byte of the
            answer. Target < 50 ms.
  rss       the web program's peak RSS (VmHWM) after all of it, and its
            RSS then. Target < 8 MiB.

usage: bench/web.py [-b BUILD] [--trials N] [--queued N] [--running N]
Needs a build (default build-bench next to this tree, else build); prints
Markdown rows.
"""

import argparse
import http.client
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
from sltest import Client, Daemon, kill_leftovers, poll, write_meminfo  # noqa: E402
from webtest import Web, cleanup_jobs, env_list  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def timed_get(conn, host, path, first_byte=False):
    t0 = time.perf_counter()
    conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host)
    conn.endheaders()
    r = conn.getresponse()
    if first_byte:
        r.fp.peek(1)
        t1 = time.perf_counter()
        body = r.read()
    else:
        body = r.read()
        t1 = time.perf_counter()
    assert r.status == 200, r.status
    return (t1 - t0) * 1000.0, len(body)


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    build = os.path.join(HERE, "..", "build-bench")
    if not os.path.isdir(build):
        build = os.path.join(HERE, "..", "build")
    ap.add_argument("-b", "--build", default=build)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--queued", type=int, default=1000)
    ap.add_argument("--running", type=int, default=10)
    a = ap.parse_args()
    os.environ["SL_BIN"] = os.path.join(os.path.abspath(a.build), "bin")
    d = Daemon(interval="0.5s", config="settle = 0\nmax_queued_per_uid = %d\n"
               % (a.queued + a.running + 10))
    d.start()
    try:
        c = Client(d.socket)
        write_meminfo(d.proc_root, avail_kb=13 << 20)  # 81 % free
        for i in range(a.running):
            jid = c.call("submit", {"argv": ["sleep", "600"], "cwd": d.dir,
                                    "env": env_list(), "name": "run-%d" % i,
                                    "swap_budget_bytes": 8 << 30})["id"]
            poll(lambda: c.call("show", {"id": jid})["state"] == "running",
                 what="job %d to run" % jid)
        for i in range(a.queued):
            c.call("submit", {"argv": ["sleep", "600"], "cwd": d.dir,
                              "env": env_list(), "name": "queued-%d" % i,
                              "wait_free_pct": 95})
        info = c.call("info")["jobs"]
        assert info["queued"] == a.queued and info["running"] == a.running, info
        c.close()
        with Web(d.socket) as w:
            conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=30)
            for _ in range(10):  # warm up
                timed_get(conn, w.host(), "/metrics")
            ms = []
            size = 0
            for _ in range(a.trials):
                t, size = timed_get(conn, w.host(), "/metrics")
                ms.append(t)
            print("| /metrics, %d queued + %d running (%d KiB) | %.2f | %.2f | %.2f |" % (
                a.queued, a.running, size // 1024, statistics.median(ms),
                pct(ms, 95), max(ms)))
            fb = []
            for _ in range(max(20, a.trials // 10)):
                t, size = timed_get(conn, w.host(), "/", first_byte=True)
                fb.append(t)
            print("| page first byte (1 h window, %d KiB) | %.2f | %.2f | %.2f |" % (
                size // 1024, statistics.median(fb), pct(fb, 95), max(fb)))
            conn.close()
            pid = w.proc.pid
            print("| stageload-web RSS: peak (VmHWM) %.1f MiB, now %.1f MiB |" % (
                status_kib(pid, "VmHWM") / 1024.0, status_kib(pid, "VmRSS") / 1024.0))
    finally:
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
