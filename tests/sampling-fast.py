"""Adaptive sampling through the fixture proc root (docs/jobs.md,
"Sampling rate"): the daemon samples at its fast interval while a job's
swap growth nears its budget and right after a job ends while another
waits; what it stores and publishes stays at the normal interval. The
daemon runs at its default interval here (0.5 s; 5 s for the job-end
case), with the default fast interval (0.1 s).

Run one scenario with: sampling-fast.py NAME...
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon, poll, scenarios, write_meminfo  # noqa: E402

sc = scenarios()

GIB_KB = 1 << 20


def sampling(c):
    return c.call("info")["sampling"]


def stored_times(c, since_ms):
    """The times of the raw samples stored since since_ms."""
    h = c.call("history", {"since_ms": since_ms, "step_ms": 1})
    assert h["tier"] == "raw", h["tier"]
    return [b["ts_ms"] for b in h["buckets"]]


def sc_breach(d, m, c):
    """Swap rising in quarters of a budget makes the sampling fast, with
    the reason in info; the breach is decided on a fast sample (one the
    database does not hold); stored samples and sample notifications stay
    half a second apart meanwhile."""
    m.set(free_pct=80, swap_used_gib=1)
    s = sampling(c)
    assert s == {"interval_ms": 500, "fast": False, "reason": None}, s
    mark = d.dir + "/term"
    jid = sc.submit(c, d, "trap 'echo term >> %s; exit 0' TERM; echo up > %s.up; "
                    "while :; do sleep 0.02; done" % (mark, mark),
                    swap_budget_bytes=4 << 30)
    sc.wait_state(c, jid, "running")
    poll(lambda: sc.read(mark + ".up"), what="the job to set its trap")
    # A job with a budget and calm swap (the rise to 1G was before it,
    # and is more than 1.5 s old): the normal interval.
    s = poll(lambda: (lambda x: x if not x["fast"] else None)(sampling(c)),
             what="the sampling to be normal while swap is calm")
    assert s == {"interval_ms": 500, "fast": False, "reason": None}, s
    t0 = int(time.time() * 1000)
    sub = Client(d.socket)
    sub.call("subscribe", {"samples": True})
    m.set(swap_used_gib=2)  # growth 1G: a quarter, and rising
    s = poll(lambda: (lambda x: x if x["fast"] else None)(sampling(c)),
             what="the sampling to turn fast")
    assert s["interval_ms"] == 100 and s["reason"] in (
        "swap rising", "swap growth near a budget"), s
    m.set(swap_used_gib=3)  # half the budget: fast for the budget's sake
    s = poll(lambda: (lambda x: x if x["reason"] == "swap growth near a budget"
                      else None)(sampling(c)), what="the reason to be the budget")
    out = subprocess.run([os.path.join(d.bin, "stageloadctl"), "--socket", d.socket,
                          "info"], capture_output=True, text=True, timeout=10).stdout
    line = [x for x in out.splitlines() if x.startswith("interval")][0]
    assert "(now " in line and "swap growth near a budget" in line, out
    # Two seconds of fast sampling: what is stored and published meanwhile
    # stays at the normal interval.
    notes = [sub.notification("sample", timeout=5)["params"]["sampled_at_ms"]
             for _ in range(4)]
    assert sampling(c)["fast"] is True
    m.set(swap_used_gib=4)
    m.set(swap_used_gib=5.5, sync=False)  # past it
    poll(lambda: sc.read(mark), what="SIGTERM to reach the job")
    j = sc.wait_state(c, jid, "killed")
    assert j["end_reason"] == "swap_budget", j
    at = j["kill"]["at_ms"]
    stored = stored_times(c, t0)
    assert at not in stored, ("the breach was decided on a stored sample", at)
    gaps = [b - a for a, b in zip(stored, stored[1:])]
    assert gaps and min(gaps) >= 400, ("stored samples closer than the interval", gaps)
    while True:
        try:
            notes.append(sub.notification("sample", timeout=0.05)["params"]["sampled_at_ms"])
        except Exception:
            break
    sub.close()
    ngaps = [b - a for a, b in zip(notes, notes[1:])]
    assert len(notes) >= 3 and min(ngaps) >= 400, ("sample notifications", ngaps)
    # No job left: back to the normal interval.
    s = poll(lambda: (lambda x: x if not x["fast"] else None)(sampling(c)),
             what="the sampling to turn normal")
    assert s == {"interval_ms": 500, "fast": False, "reason": None}, s


def sc_ended(d, m, c):
    """A job's end is sampled at once while another waits: the waiting
    job is admitted on a sample taken right after the end (not a stored
    one), not at the next of the 5 s interval."""
    m.set(free_pct=40)
    nxt = os.path.join(d.dir, "meminfo.next")
    # What the first job's end frees, written by the job as it exits.
    write_meminfo(d.dir, total_kb=sc.TOTAL_KB, avail_kb=int(sc.TOTAL_KB * 0.6),
                  swap_total_kb=sc.SWAP_TOTAL_KB, swap_free_kb=sc.SWAP_TOTAL_KB)
    os.rename(os.path.join(d.dir, "meminfo"), nxt)
    go = os.path.join(d.dir, "go")
    a = sc.submit(c, d, "while [ ! -e %s ]; do sleep 0.02; done; mv %s %s/meminfo"
                  % (go, nxt, d.proc_root))
    sc.wait_state(c, a, "running")
    b = sc.submit(c, d, "exec sleep 60", wait_free_pct=50)
    poll(lambda: (sc.show(c, b).get("waiting_for") == "free") or None,
         what="the second job to wait for free memory")
    t0 = int(time.time() * 1000)
    open(go, "w").close()
    ja = sc.wait_state(c, a, "exited")
    jb = sc.wait_state(c, b, "running", timeout=15)
    adm = [e for e in sc.events_of(c, b) if e["kind"] == "admitted"][0]["detail"]
    assert adm["sampled_at_ms"] >= ja["ended_at_ms"], (adm, ja["ended_at_ms"])
    assert adm["sampled_at_ms"] not in stored_times(c, t0 - 6000), adm
    lag = jb["admitted_at_ms"] - ja["ended_at_ms"]
    assert lag < 2500, "admitted %d ms after the end at a 5 s interval" % lag
    print("ended: admitted %d ms after the first job ended" % lag)
    c.call("cancel", {"id": b})
    sc.wait_state(c, b, "killed")


def sc_off(d, m, c):
    """fast_interval = 0: never fast, whatever the budget."""
    m.set(free_pct=80, swap_used_gib=1)
    jid = sc.submit(c, d, "exec sleep 60", swap_budget_bytes=4 << 30)
    sc.wait_state(c, jid, "running")
    m.set(swap_used_gib=4)
    sc.samples(d, 3)
    s = sampling(c)
    assert s == {"interval_ms": 500, "fast": False, "reason": None}, s
    c.call("cancel", {"id": jid})
    sc.wait_state(c, jid, "killed")


SCENARIOS = [
    ("breach", sc_breach, "0.5", ""),
    ("ended", sc_ended, "5", ""),
    ("off", sc_off, "0.5", "fast_interval = 0\n"),
]


def main():
    sc.run_scenarios(
        [(name, fn, {"interval": interval, "conf": conf})
         for name, fn, interval, conf in SCENARIOS],
        make_daemon=lambda interval, conf: Daemon(
            interval=interval,
            config="grace = %dms\nsettle = 0\n%s" % (sc.GRACE_MS, conf)))


if __name__ == "__main__":
    main()
