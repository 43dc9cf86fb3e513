"""What the daemon asks of the platform besides samples, seen through the
fixture proc root (docs/daemon.md, "Test hooks"):

- a breach is confirmed by a second reading of swap in the same tick: one
  inconsistent reading (meminfo.once, read by one sample and removed, as a
  torn vm.swapusage is on macOS) never kills, while the same growth read
  twice does;
- the keep-awake hold (macOS: caffeinate) is taken when a job is admitted
  and held while one holds memory ("held"); while a queued job could start
  (waiting for memory, not held, not after another) the queue's hold is
  taken ("held-queue", macOS: on AC power only) for at most
  keep_awake_queue since the last admission; `info` says which and why;
  never with keep_awake = 0 (the fixture's keep-awake file records each
  change);
- a submitter whose groups are as many as the system passes on (macOS: 16;
  the fixture's peer-groups-max) is told its detached job gets no more.

Jobs are real processes. Run one scenario with: platform-hooks.py NAME...
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon, poll, scenarios, write_meminfo  # noqa: E402

# The scenario runner (run_scenarios) is jobs-scenarios.py's.
sc = scenarios()

GIB_KB = 1 << 20
TOTAL_KB = 16 * GIB_KB
SWAP_TOTAL_KB = 64 * GIB_KB
INTERVAL_MS = 100
GRACE_MS = 1000


def meminfo_text(swap_used_gib):
    used_kb = int(swap_used_gib * GIB_KB)
    return ("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n"
            "SwapTotal:      %d kB\nSwapFree:       %d kB\n") % (
                TOTAL_KB, TOTAL_KB // 2, TOTAL_KB // 2, SWAP_TOTAL_KB,
                SWAP_TOTAL_KB - used_kb)


def set_swap(d, gib):
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB // 2,
                  swap_total_kb=SWAP_TOTAL_KB,
                  swap_free_kb=SWAP_TOTAL_KB - int(gib * GIB_KB))


def samples(d, n):
    """Let n samples pass (the daemon's own ticks, not a sleep)."""
    s = Client(d.socket)
    s.call("subscribe", {"samples": True})
    for _ in range(n):
        s.notification("sample", timeout=5)
    s.close()


def sampled(d, gib):
    """Return once a sample showing gib of swap used has been taken."""
    c = Client(d.socket)
    want = int(gib * GIB_KB) * 1024

    def seen():
        s = c.call("info")["sample"]
        return s is not None and s["swap_used_bytes"] == want
    poll(seen, what="a sample with %g GiB of swap used" % gib)
    c.close()


def submit(c, d, script, **opts):
    p = {"argv": ["bash", "-c", script], "cwd": d.dir,
         "env": ["%s=%s" % kv for kv in os.environ.items()]}
    p.update(opts)
    return c.call("submit", p)["id"]


def state_of(c, jid):
    return c.call("show", {"id": jid})["state"]


def wait_state(c, jid, *states, timeout=10.0):
    return poll(lambda: state_of(c, jid) in states, timeout=timeout,
                what="job %d to be %s" % (jid, "/".join(states)))


def events_of(c, jid):
    evs = c.call("events", {"limit": 10000})["events"]
    return [e["kind"] for e in evs if e["job_id"] == jid]


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


# ---- scenarios ----

def sc_torn_swap_never_kills(d, c):
    """One reading of 60 GiB swap used (59 GiB over a 1 GiB budget) that
    the confirming read does not show: nothing killed, the log says why.
    Then real growth, read twice, kills as always."""
    set_swap(d, 1)
    sampled(d, 1)
    jid = submit(c, d, "exec sleep 60", swap_budget_bytes=1 << 30)
    wait_state(c, jid, "running")
    samples(d, 2)
    once = os.path.join(d.proc_root, "meminfo.once")
    tmp = once + ".tmp"
    with open(tmp, "w") as f:
        f.write(meminfo_text(60))
    os.rename(tmp, once)
    poll(lambda: not os.path.exists(once), what="the daemon to read meminfo.once")
    samples(d, 3)  # that tick has ended, and a few more
    assert state_of(c, jid) == "running", c.call("show", {"id": jid})
    assert "breach" not in events_of(c, jid), events_of(c, jid)
    log = d.log_text()
    assert "breach not confirmed" in log and "nothing killed" in log, log[-3000:]
    # Neither the growth nor its peak holds the reading: the breach was
    # judged on the lower of the two.
    j = c.call("show", {"id": jid})
    assert j["swap_growth_bytes"] == 0 and j["swap_growth_peak_bytes"] == 0, j

    set_swap(d, 2.5)  # 1.5 GiB of real growth, read by both
    wait_state(c, jid, "killed", timeout=GRACE_MS / 1000 + 10)
    j = c.call("show", {"id": jid})
    assert j["end_reason"] == "swap_budget", j
    assert events_of(c, jid)[-2:] == ["breach", "killed"], events_of(c, jid)


def sc_keep_awake(d, c):
    """Held from the first admission until no job holds memory."""
    awake = os.path.join(d.proc_root, "keep-awake")
    samples(d, 3)
    assert read(awake) == "", "held with no job: %r" % read(awake)
    stop = os.path.join(d.dir, "stop")
    jid = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done" % stop)
    wait_state(c, jid, "running")
    poll(lambda: read(awake) == "held", what="keep-awake held while job %d runs" % jid)
    # A second job keeps it; the first one ending does not release it.
    stop2 = os.path.join(d.dir, "stop2")
    jid2 = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done" % stop2)
    wait_state(c, jid2, "running")
    open(stop, "w").close()
    wait_state(c, jid, "exited")
    samples(d, 3)
    assert read(awake) == "held", read(awake)
    ka = c.call("info")["keep_awake"]
    assert ka["hold"] == "jobs" and "holds memory" in ka["why"], ka
    open(stop2, "w").close()
    wait_state(c, jid2, "exited")
    poll(lambda: read(awake) == "released", what="keep-awake released")
    ka = c.call("info")["keep_awake"]
    assert ka == {"hold": None, "why": None, "until_ms": None}, ka
    # A job held or after another waits on a person: nothing is held.
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB // 10,
                  swap_total_kb=SWAP_TOTAL_KB, swap_free_kb=SWAP_TOTAL_KB)
    poll(lambda: c.call("info")["sample"]["free_pct"] < 11,
         what="a sample with 10 % free")
    jid_held = submit(c, d, "exit 0", held=True)
    samples(d, 3)
    assert state_of(c, jid_held) == "queued"
    assert read(awake) == "released", read(awake)
    # A job waiting for memory could start by morning: the queue's hold,
    # until keep_awake_queue (12 h) after the last admission.
    jid3 = submit(c, d, "exit 0", wait_free_pct=50)
    poll(lambda: read(awake) == "held-queue",
         what="keep-awake held for job %d waiting for memory" % jid3)
    ka = c.call("info")["keep_awake"]
    last_admit = c.call("show", {"id": jid2})["admitted_at_ms"]
    assert ka["hold"] == "queue" and "AC power" in ka["why"], ka
    assert ka["until_ms"] == last_admit + 12 * 3600 * 1000, (ka, last_admit)
    # Its memory comes back: it runs, held as a job; then released.
    set_swap(d, 0)
    wait_state(c, jid3, "exited")
    c.call("cancel", {"id": jid_held})
    poll(lambda: read(awake) == "released", what="keep-awake released")


def sc_keep_awake_queue_bound(d, c):
    """keep_awake_queue = 2s: a queue that has not moved for that long
    since the last admission lets the machine sleep; an admission holds
    again."""
    awake = os.path.join(d.proc_root, "keep-awake")
    jid0 = submit(c, d, "exit 0")
    wait_state(c, jid0, "exited")
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB // 10,
                  swap_total_kb=SWAP_TOTAL_KB, swap_free_kb=SWAP_TOTAL_KB)
    poll(lambda: c.call("info")["sample"]["free_pct"] < 11,
         what="a sample with 10 % free")
    jid = submit(c, d, "exit 0", wait_free_pct=50)
    admitted = c.call("show", {"id": jid0})["admitted_at_ms"]
    ka = c.call("info")["keep_awake"]
    # Held for the queue until 2 s after job jid0's admission...
    poll(lambda: read(awake) in ("held-queue", "released") and
         c.call("info")["keep_awake"]["until_ms"] == admitted + 2000,
         what="the queue's hold bounded at the last admission + 2 s")
    # ...then let go with the reason, the job still queued.
    poll(lambda: read(awake) == "released" and
         c.call("info")["keep_awake"]["hold"] is None,
         what="the queue's hold to lapse", timeout=10)
    ka = c.call("info")["keep_awake"]
    assert "keep_awake_queue" in ka["why"], ka
    assert state_of(c, jid) == "queued"
    assert "keep awake: released" in d.log_text(), d.log_text()[-2000:]
    c.call("cancel", {"id": jid})


def sc_keep_awake_off(d, c):
    """keep_awake = 0: never held."""
    awake = os.path.join(d.proc_root, "keep-awake")
    stop = os.path.join(d.dir, "stop")
    jid = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done" % stop)
    wait_state(c, jid, "running")
    samples(d, 5)
    assert read(awake) == "", read(awake)
    open(stop, "w").close()
    wait_state(c, jid, "exited")


def sc_groups_capped(d, c):
    """A detached job's submitter is told when its connection's groups are
    as many as the system passes on (macOS: 16; here the fixture's
    peer-groups-max), since the job gets no more; an attached job keeps
    the shell's own groups and is not."""
    import subprocess
    cap = os.path.join(d.proc_root, "peer-groups-max")
    saved = os.getgroups()
    if not saved and os.geteuid() == 0:
        # Root with no supplementary groups (a container): two for this
        # scenario, given back at its end.
        os.setgroups([0, 100])
    try:
        groups_capped_with(d, c, cap, len(os.getgroups()))
    finally:
        if os.geteuid() == 0:
            os.setgroups(saved)


def groups_capped_with(d, c, cap, n):
    import subprocess

    def write_cap(v):
        with open(cap + ".tmp", "w") as f:
            f.write("%d\n" % v)
        os.rename(cap + ".tmp", cap)

    def submit_answer(**opts):
        # A connection of its own: the groups are read when it connects.
        c2 = Client(d.socket)
        p = {"argv": ["true"], "cwd": d.dir, "env": ["A=1"]}
        p.update(opts)
        r = c2.call("submit", p)
        c2.close()
        return r

    r = submit_answer()
    assert "groups_capped" not in r, r  # no cap (Linux)
    write_cap(n + 1)
    r = submit_answer()
    assert "groups_capped" not in r, (n, r)
    if n == 0:
        print("     (this process has no supplementary groups: the capped "
              "case is not shown)")
        return
    write_cap(n)
    r = submit_answer()
    assert r.get("groups_capped") is True, (n, r)
    r = submit_answer(attached=True)
    assert "groups_capped" not in r, r
    c.call("cancel", {"id": r["id"]})
    # stageloadctl submit warns, and --json carries it.
    ctl = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
    p = subprocess.run([ctl, "--socket", d.socket, "--json", "submit", "--",
                        "true"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert '"groups_capped":true' in p.stdout, p.stdout
    assert "warning:" in p.stderr and "groups" in p.stderr, p.stderr
    os.unlink(cap)
    p = subprocess.run([ctl, "--socket", d.socket, "submit", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)


SCENARIOS = [
    ("torn_swap_never_kills", sc_torn_swap_never_kills, ""),
    ("keep_awake", sc_keep_awake, ""),
    ("keep_awake_queue_bound", sc_keep_awake_queue_bound,
     "keep_awake_queue = 2s\n"),
    ("keep_awake_off", sc_keep_awake_off, "keep_awake = 0\n"),
    ("groups_capped", sc_groups_capped, ""),
]


def main():
    sc.run_scenarios(
        [(name, fn, {"conf": conf}) for name, fn, conf in SCENARIOS],
        make_daemon=lambda conf: Daemon(
            interval="%gs" % (INTERVAL_MS / 1000.0),
            config="grace = %dms\nsettle = 0\n%s" % (GRACE_MS, conf)),
        memory=False)


if __name__ == "__main__":
    main()
