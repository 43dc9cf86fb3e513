#!/usr/bin/env python3
"""What stageload.release() gives back, and what it costs
(docs/benchmarks.md, "Staging models").

For each parameter size (4 MiB, 256 KiB, 64 KiB), in a fresh process: a
module of --mib MiB (7/8 parameters, 1/8 buffers) held by a second object,
then release(), with the heap trim and without it (the module's tensors
still go to meta and are freed, but malloc_trim is not called), to show
what the trim adds. Prints the module's size, the anonymous RSS given back
(RssAnon before minus after) as a share of the module in each run, and the
time release() took. Linux only (RssAnon).

usage: bench/python_release.py [--python PY] [--mib N] [--rounds N]
PY defaults to /usr/bin/python3 (with python3-torch) and the package from
this checkout.
"""

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import sys, time, types
import torch, torch.nn as nn
import stageload
from stageload import staging

def anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024

pbytes, total, trim = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if not trim:
    staging._trim_heap = lambda: None
side = int((pbytes // 4) ** 0.5)
m = nn.Module()
m.layers = nn.ModuleList([nn.Linear(side, side, bias=False)
                          for _ in range((total * 7 // 8) // pbytes)])
for i in range((total // 8) // pbytes):
    m.register_buffer("b%d" % i, torch.ones(pbytes // 4))
holder = types.SimpleNamespace(model=m)
before = anon()
t = time.perf_counter()
n = stageload.release(m)
ms = (time.perf_counter() - t) * 1000
print(n, before - anon(), ms)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "..", "python") + os.pathsep + env.get(
        "PYTHONPATH", "")
    print("| parameters | heap trim | module | RSS given back, each run | release() ms "
          "(median, max) |")
    print("|---|---|---|---|---|")
    for pbytes in (4 << 20, 256 << 10, 64 << 10):
        for trim in ("1", "0"):
            got, ms, size = [], [], 0
            for _ in range(a.rounds):
                out = subprocess.run([a.python, "-c", CHILD, str(pbytes), str(a.mib << 20),
                                      trim], capture_output=True, text=True, env=env,
                                     check=True).stdout.split()
                size = int(out[0])
                got.append(100.0 * int(out[1]) / size)
                ms.append(float(out[2]))
            print("| %s | %s | %d MiB | %s %% | %.0f, %.0f |" % (
                "%d KiB" % (pbytes >> 10) if pbytes < 1 << 20 else "%d MiB" % (pbytes >> 20),
                "malloc_trim" if trim == "1" else "none", size >> 20,
                ", ".join("%.0f" % max(0.0, g) for g in got),
                statistics.median(ms), max(ms)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
