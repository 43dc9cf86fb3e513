#!/usr/bin/env python3
"""The Python package's costs (docs/benchmarks.md, "Python package").

  import    `import stageload` in a fresh interpreter, minus the same
            interpreter doing nothing (-X importtime's total for the package
            too); target < 50 ms.
  guard     a guarded no-op block (`with stageload.guard(): pass`) against
            a private daemon, and the same protocol exchanges made with a
            bare Client (connect, hello, submit attached, admitted, job_pid
            with tree, job_exit): the difference is what guard adds beyond
            the daemon's answers; target < 20 ms.

usage: bench/python_guard.py [-b BUILD] [--python PY] [--rounds N] [import|guard ...]
BUILD (default build) has bin/stageloadd; PY (default: BUILD/python-venv's,
which ctest's python_setup makes) has the package installed. Prints
Markdown rows.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
from sltest import Daemon, kill_leftovers  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def row(name, v, unit="ms"):
    print("| %s | %d | %.1f | %.1f | %.1f | %.1f %s |" % (
        name, len(v), min(v), statistics.median(v), pct(v, 95), max(v), unit))


def bench_import(py, rounds):
    def timed(code):
        out = subprocess.run([py, "-c", "import time; t = time.perf_counter(); " + code +
                              "; print((time.perf_counter() - t) * 1000)"],
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[-1])

    imp = [timed("import stageload") for _ in range(rounds)]
    row("import stageload (in-process, ms)", imp)
    it = []
    for _ in range(rounds):
        r = subprocess.run([py, "-X", "importtime", "-c", "import stageload"],
                           capture_output=True, text=True, check=True)
        for line in r.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == "stageload":
                it.append(int(parts[1]) / 1000)
    row("-X importtime cumulative for stageload (ms)", it)


GUARD = textwrap.dedent("""
    import os, sys, time, stageload
    from stageload.client import Client
    rounds = int(sys.argv[1])
    g, raw = [], []
    for i in range(rounds):
        t = time.perf_counter()
        with stageload.guard(quiet=True):
            pass
        g.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        c = Client()
        jid = c.submit([sys.executable], attached=True)["id"]
        while True:
            n = c.next_notification()
            if n["method"] == "admitted":
                break
        c.job_pid(jid, os.getpid(), tree=True)
        c.job_exit(jid, exit_code=0)
        c.close()
        raw.append((time.perf_counter() - t) * 1000)
    print(" ".join("%.3f" % x for x in g))
    print(" ".join("%.3f" % x for x in raw))
""")


def bench_guard(py, rounds):
    d = Daemon(interval="0.5", config="settle = 0\n")
    d.start()
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(GUARD)
        env = dict(os.environ, STAGELOAD_SOCKET=d.socket)
        env.pop("STAGELOAD_JOB_ID", None)
        out = subprocess.run([py, f.name, str(rounds)], capture_output=True, text=True,
                             env=env, check=True).stdout.splitlines()
        os.unlink(f.name)
        g = [float(x) for x in out[0].split()]
        raw = [float(x) for x in out[1].split()]
        row("guarded no-op block (ms)", g)
        row("the same exchanges with a bare Client (ms)", raw)
        diff = [a - b for a, b in zip(g, raw)]
        row("guard beyond the daemon's answers (ms)", diff)
    finally:
        kill_leftovers(d)
        d.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--python")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("what", nargs="*", default=["import", "guard"])
    a = ap.parse_args()
    os.environ["SL_BIN"] = os.path.join(os.path.abspath(a.build), "bin")
    py = a.python or os.path.join(os.path.abspath(a.build), "python-venv", "bin", "python")
    print("| measure | n | min | median | p95 | max |")
    print("|---|---|---|---|---|---|")
    for w in a.what:
        {"import": bench_import, "guard": bench_guard}[w](py, a.rounds)


if __name__ == "__main__":
    main()
