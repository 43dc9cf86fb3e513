#!/usr/bin/env python3
"""Make the pictures of docs/dashboards.md: docs/img/dashboard.png (the page
in headless Chromium) and docs/img/plot.svg (`stageloadctl plot`), from a
private daemon on a fixture proc root driven through a short made-up night
(free memory falling, swap growing, a job killed for its budget, jobs
queued). Nothing is drawn by hand; rerun after changing the page:

    python3 scripts/dashboard-screenshots.py [BUILD_DIR]

Needs a build (default build/) and chromium.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
os.environ.setdefault("SL_BIN", os.path.join(sys.argv[1] if len(sys.argv) > 1 else
                                             os.path.join(ROOT, "build"), "bin"))
from sltest import Client, kill_leftovers, poll, write_psi  # noqa: E402
from webtest import Web, cleanup_jobs, daemon, env_list, set_memory  # noqa: E402


def submit(c, d, name, budget_gib, **kw):
    p = {"argv": ["sleep", "600"], "cwd": d.dir, "env": env_list(), "name": name,
         "swap_budget_bytes": int(budget_gib * (1 << 30))}
    p.update(kw)
    return c.call("submit", p)["id"]


def main():
    out = os.path.join(ROOT, "docs", "img")
    os.makedirs(out, exist_ok=True)
    d = daemon()
    try:
        d.start()
        c = Client(d.socket)
        set_memory(d, 72, 0.5)
        a = submit(c, d, "sdxl-batch", 6)
        poll(lambda: c.call("show", {"id": a})["state"] == "running")
        # A minute of a machine filling up, in 60 steps of a second.
        b = None
        for i in range(60):
            free = 72 - i * 0.7
            swap = 0.5 + (0 if i < 20 else (i - 20) * 0.06)
            if i in (38, 52):  # PSI some avg10: warn, then critical
                write_psi(d.proc_root, 25.0 if i == 38 else 45.0)
            set_memory(d, free, swap)
            if i == 12:
                b = submit(c, d, "qwen-1024", 1.5)
            if i == 30:
                submit(c, d, "flux-dev", 4, wait_free_pct=60)
                submit(c, d, "whisper", 2, wait_free_pct=50)
            time.sleep(1)
        poll(lambda: c.call("show", {"id": b})["state"] in ("killed", "running"))
        with Web(d.socket) as w:
            shot = os.path.join(out, "dashboard.png")
            subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", "--window-size=1100,1150",
                            "--screenshot=" + shot, "http://%s/" % w.host()],
                           check=True, capture_output=True, timeout=120)
            ctl = os.path.join(os.environ["SL_BIN"], "stageloadctl")
            subprocess.run([ctl, "--socket", d.socket, "plot", "--since", "3m", "-o",
                            os.path.join(out, "plot.svg")], check=True, timeout=60)
        print("wrote docs/img/dashboard.png and docs/img/plot.svg")
    finally:
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
