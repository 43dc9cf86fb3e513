#!/usr/bin/env python3
"""Load on the control socket while a breach is being enforced.

One stageloadd on a fixture proc root. A probe job with a 1 GiB swap budget
runs; sl-load (bench/load.c) drives CLIENTS concurrent clients x REQUESTS
requests each, round after round, and while a round is running the fixture
swap used jumps past the budget: the time until the probe job sees SIGTERM is
the enforcement latency under load. Then a crowd of IDLE connections stays
open while a newcomer is timed. The daemon's CPU and RSS are read from /proc.

usage: bench/load.py [-b BUILD] [-c CLIENTS] [-n REQUESTS] [-i IDLE]
                     [--interval S] [--check-breach-ms MS]
Prints one JSON object; exits 1 if any request failed, the breach was not
enforced within --check-breach-ms, or the newcomer was not served.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jobs import BreachProbe, cpu_ns, fixture_daemon, running, status_kb  # noqa: E402
from sltest import Client  # noqa: E402


def run_load(sl_load, sock, clients, requests, idle=0, min_secs=0):
    t0 = time.time()
    p = subprocess.run([sl_load, sock, "-c", str(clients), "-n", str(requests),
                        "-i", str(idle), "-d", str(min_secs)],
                       capture_output=True, text=True, timeout=600)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {"errors": -1, "completed": 0}
    r["exit"] = p.returncode
    r["t_start"], r["t_end"] = t0, time.time()
    r["stderr"] = p.stderr.strip()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("-c", "--clients", type=int, default=1000)
    ap.add_argument("-n", "--requests", type=int, default=100)
    ap.add_argument("-i", "--idle", type=int, default=1000)
    ap.add_argument("--interval", default="0.5")
    ap.add_argument("--min-seconds", type=float, default=0,
                    help="each sl-load round lasts at least this long")
    ap.add_argument("--breaches", type=int, default=5,
                    help="breaches enforced one after another under load")
    ap.add_argument("--check-breach-ms", type=float, default=0,
                    help="fail when TERM took longer (0: report only)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sl_load = os.path.join(build, "bin", "sl-load")
    # Enough connections for the crowd even when not run as root (root is
    # exempt from the per-uid cap anyway).
    d = fixture_daemon(build, a.interval, "max_clients_per_uid = %d\n" %
                       (a.clients + a.idle + 100))
    out = {"interval_s": float(a.interval), "clients": a.clients,
           "requests_each": a.requests, "idle": a.idle}
    ok = True
    with running(d):
        c = Client(d.socket)
        rounds = []
        breach_done = threading.Event()

        def load_rounds():
            # Back to back until the breach has been enforced, so it
            # happens under load whatever the speed of this machine.
            while True:
                rounds.append(run_load(sl_load, d.socket, a.clients,
                                       a.requests, 0, a.min_seconds))
                if breach_done.is_set():
                    return

        pid = d.proc.pid
        cpu0, t0 = cpu_ns(pid), time.monotonic()
        th = threading.Thread(target=load_rounds)
        th.start()
        # Let the clients connect and get going first.
        time.sleep(min(2.0, 0.2 + a.clients * a.requests / 50000.0,
                       0.2 + a.min_seconds / 4))
        probes = []
        try:
            for k in range(a.breaches):
                p = BreachProbe(d, c, "load%d" % k)
                p.start()
                time.sleep(random.uniform(0, float(a.interval)))
                p.lat = p.breach(timeout=120)
                p.finish(timeout=60)
                probes.append(p)
        finally:
            breach_done.set()
            th.join()
        cpu1, t1 = cpu_ns(pid), time.monotonic()
        # A breach counts as under load when the fixture changed and the
        # TERM arrived while one sl-load run was going on.
        lats = [p.lat for p in probes if any(
            r["t_start"] < p.t_breach and p.t_term < r["t_end"] for r in rounds)]
        out["breaches"] = len(probes)
        out["breaches_under_load"] = len(lats)
        out["breach_term_ms"] = [round(x, 1) for x in sorted(lats)]
        out["breach_term_p50_ms"] = round(statistics.median(lats), 1) if lats else None
        lat = max(lats) if lats else float("inf")
        out["rounds"] = len(rounds)
        out["requests"] = sum(r.get("completed", 0) for r in rounds)
        out["errors"] = sum(abs(r.get("errors", 1)) for r in rounds) + \
            sum(1 for r in rounds if r["exit"] != 0)
        # The first round is exactly CLIENTS x REQUESTS; later ones keep
        # the load on until the last breach is done.
        first = rounds[0]
        for k in ("seconds", "requests_per_s", "p50_ms", "p99_ms", "max_ms",
                  "connect_retries"):
            out["first_round_" + k] = first.get(k)
        out["rounds_p50_ms"] = [r.get("p50_ms") for r in rounds]
        out["rounds_p99_ms"] = [r.get("p99_ms") for r in rounds]
        out["requests_per_s"] = round(out["requests"] / max(
            1e-9, sum(r.get("seconds", 0) for r in rounds)))
        wall = t1 - t0
        out["daemon_cpu_pct"] = round((cpu1 - cpu0) / 1e9 / wall * 100, 1)
        out["daemon_cpu_us_per_request"] = round(
            (cpu1 - cpu0) / 1e3 / max(1, out["requests"]), 1)
        out["daemon_vmhwm_mib"] = round(status_kb(pid, "VmHWM") / 1024.0, 1)
        errs = [r["stderr"] for r in rounds if r["stderr"]]
        if errs:
            out["load_stderr"] = errs[:3]

        if a.idle > 0:
            r = run_load(sl_load, d.socket, 20, 10, a.idle)
            out["idle_new_client_ms"] = r.get("new_client_ms")
            out["idle_new_client_after_ms"] = r.get("new_client_after_ms")
            out["idle_busy_p99_ms"] = r.get("p99_ms")
            out["idle_errors"] = abs(r.get("errors", 1)) + (r["exit"] != 0)
            if r["stderr"]:
                out["idle_stderr"] = r["stderr"]
            ok = ok and out["idle_errors"] == 0
            out["daemon_vmhwm_mib"] = round(status_kb(pid, "VmHWM") / 1024.0, 1)
        out["daemon_vmrss_mib"] = round(status_kb(pid, "VmRSS") / 1024.0, 1)
        # Still serving, still alive.
        c2 = Client(d.socket)
        c2.call("info")
        c2.close()
        c.close()
        rc = d.stop()
        out["daemon_exit"] = rc
        # A sanitizer build reports errors and leaks at exit.
        if "Sanitizer" in d.log_text():
            out["sanitizer"] = d.log_text()[-4000:]
            rc = -1
        ok = ok and rc == 0
    ok = ok and out["errors"] == 0 and out["breaches_under_load"] > 0
    if a.check_breach_ms > 0 and lat > a.check_breach_ms:
        ok = False
    out["ok"] = ok
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
