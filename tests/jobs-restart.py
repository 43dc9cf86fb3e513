"""Restart: kill -9 the daemon with jobs queued and running, start it again
on the same database and state directory, and every job must reach the
right state with nothing lost or run twice (each job appends its id to a
start file; the test counts the lines). Then SIGTERM: running jobs are
left alone and re-adopted by the next daemon.

Then a queue of held jobs with about 1 MiB of environment each: after a
restart the daemon's peak RSS stays near an empty daemon's (their argv and
env stay in the store until a job starts or is shown), and `show` still
gives the whole env.
"""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, poll, scenarios  # noqa: E402

scen = scenarios()


def main():
    d = scen.start_daemon()
    m = scen.Memory(d)
    try:
        d.start()
        run(d, m)
        print("ok   restart")
    except Exception:
        sys.stderr.write("--- daemon log ---\n%s\n" % d.log_text()[-8000:])
        raise
    finally:
        if d.alive():
            d.stop(signal.SIGKILL)
        scen.kill_leftovers(d)
        d.cleanup()
    d = scen.start_daemon()
    try:
        d.start()
        queue_memory(d)
    except Exception:
        sys.stderr.write("--- daemon log ---\n%s\n" % d.log_text()[-8000:])
        raise
    finally:
        d.cleanup()


def peak_rss_kib(pid: int) -> int:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM for pid %d" % pid)


QUEUED_JOBS = 48
ENV_ITEMS = 1000  # of 1000 bytes: about 1 MiB a job, 48 MiB in all


def queue_memory(d) -> None:
    c = Client(d.socket)
    c.call("info")
    empty_kib = peak_rss_kib(d.proc.pid)
    env = ["V%04d=%s" % (i, "x" * 994) for i in range(ENV_ITEMS)]
    ids = [c.call("submit", {"argv": ["true", "a" * 100], "cwd": d.dir, "env": env,
                             "held": True}, timeout=30)["id"]
           for _ in range(QUEUED_JOBS)]
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    d.start()
    c = Client(d.socket)
    st = c.call("status")["jobs"]
    assert sorted(x["id"] for x in st if x["state"] == "queued") == ids, st
    after_kib = peak_rss_kib(d.proc.pid)
    j = c.call("show", {"id": ids[-1], "env": True})
    assert j["env"] == env and j["argv"] == ["true", "a" * 100], j["argv"]
    c.close()
    print("ok   restart with %d MiB of queued env: peak RSS %d KiB (an empty daemon's "
          "%d KiB)" % (QUEUED_JOBS * ENV_ITEMS * 1000 >> 20, after_kib, empty_kib))
    if os.environ.get("SL_SANITIZE") != "ON":
        # Read whole at load, the env alone adds its 48 MiB and more.
        assert after_kib < empty_kib + 16 * 1024, (after_kib, empty_kib)


def run(d, m):
    starts = os.path.join(d.dir, "starts")
    m.set(free_pct=80, swap_used_gib=0)
    c = Client(d.socket)

    def job(script, **opts):
        return scen.submit(c, d, 'echo "$STAGELOAD_JOB_ID" >> %s; %s' % (starts, script),
                           **opts)

    ends_soon = job("sleep 1.5; exit 5")
    survivor = job("exec sleep 60", swap_budget_bytes=1 << 30)
    scen.wait_state(c, ends_soon, "running")
    scen.wait_state(c, survivor, "running")
    # An attached job, started by this test standing in for the CLI.
    a = Client(d.socket)
    att = a.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir,
                            "attached": True})["id"]
    a.notification("admitted", timeout=5)
    cmd = subprocess.Popen(["sleep", "60"], start_new_session=True)
    a.call("job_pid", {"id": att, "pid": cmd.pid})
    # Queued behind a free % that is not there.
    q_low = job("exit 0", wait_free_pct=90, name="low")
    q_high = job("exit 0", wait_free_pct=90, priority=3, name="high")
    q_last = job("exit 0", wait_free_pct=90, name="last")
    pid_survivor = scen.show(c, survivor)["pid"]
    poll(lambda: open(starts).read().count("\n") == 2, what="two starts")
    c.close()

    d.stop(signal.SIGKILL)
    a.close()
    # ends_soon finishes while no daemon runs; its monitor records it.
    poll(lambda: os.path.exists(os.path.join(d.dir, "jobs", "%d.status" % ends_soon)),
         timeout=10, what="the monitor to record the short job's end")
    d.start()
    c = Client(d.socket)

    j = scen.wait_state(c, ends_soon, "exited")
    assert j["exit_code"] == 5, j
    j = scen.show(c, survivor)
    assert j["state"] == "running" and j["pid"] == pid_survivor, j
    assert scen.pid_alive(pid_survivor)
    st = c.call("status")["jobs"]
    order = [x["id"] for x in st if x["state"] == "queued"]
    assert order == [q_high, q_low, q_last], order
    assert scen.show(c, att)["state"] == "running"

    # The attached client reconnects and carries on.
    b = Client(d.socket)
    r = b.call("resume", {"id": att})
    assert r["state"] == "running" and r["pid"] == cmd.pid, r
    cmd.kill()
    cmd.wait()
    j = b.call("job_exit", {"id": att, "signal": 9})
    assert j["state"] == "exited" and j["signal"] == 9, j
    b.close()

    # The re-adopted job is still enforced.
    m.set(swap_used_gib=2, sync=False)
    j = scen.wait_state(c, survivor, "killed")
    assert j["end_reason"] == "swap_budget", j
    poll(lambda: not scen.pid_alive(pid_survivor), what="survivor to die")

    # The queue runs, each job once.
    m.set(free_pct=95, swap_used_gib=2)
    for q in (q_high, q_low, q_last):
        j = c.call("wait", {"id": q}, timeout=15)
        assert j["state"] == "exited" and j["exit_code"] == 0, j
    ids = open(starts).read().split()
    for jid in (ends_soon, survivor, q_low, q_high, q_last):
        assert ids.count(str(jid)) == 1, (jid, ids)
    adm = [e["job_id"] for e in c.call("events", {"limit": 10000})["events"]
           if e["kind"] == "admitted"]
    assert adm[-3:] == [q_high, q_low, q_last], adm
    kinds = [e["kind"] for e in c.call("events", {"limit": 10000})["events"]]
    assert kinds.count("daemon_start") == 2, kinds

    # SIGTERM leaves a running job alone; the next daemon re-adopts it.
    m.set(free_pct=80, swap_used_gib=0)
    keep = scen.submit(c, d, "exec sleep 60")
    j = scen.wait_state(c, keep, "running")
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    assert scen.pid_alive(j["pid"])
    d.start()
    c = Client(d.socket)
    assert scen.show(c, keep)["state"] == "running"
    os.kill(j["pid"], signal.SIGKILL)
    j = scen.wait_state(c, keep, "exited")
    assert j["signal"] == 9 and j["end_reason"] is None, j
    ids = open(starts).read().split()
    assert len(ids) == 5, ids
    c.close()


if __name__ == "__main__":
    main()
