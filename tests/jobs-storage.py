"""Storage failure: with the database on a small tmpfs that this test fills
up, the daemon must keep enforcing budgets from memory, hold admissions,
refuse submits with -32006, and carry on once writes succeed again. Needs
root (mount)."""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, RpcError, fill_fs, poll, require_tools, scenarios, skip  # noqa: E402

scen = scenarios()


def main():
    if os.geteuid() != 0:
        skip("mounting a tmpfs for the database needs root", root_only=True)
    require_tools("mount", "umount")
    d = scen.start_daemon()
    mnt = os.path.join(d.dir, "db")
    os.mkdir(mnt)
    # mode=0700: a tmpfs is 1777 by default, which is no place for root's
    # database (docs/security.md).
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs",
                       mnt]).returncode:
        skip("cannot mount a tmpfs here", root_only=True)
    try:
        d.args[d.args.index("--db") + 1] = os.path.join(mnt, "sl.db")
        m = scen.Memory(d)
        d.start()
        run(d, m, mnt)
        assert d.stop(signal.SIGTERM) == 0
        print("ok   storage")
    except Exception:
        sys.stderr.write("--- daemon log ---\n%s\n" % d.log_text()[-8000:])
        raise
    finally:
        if d.alive():
            d.stop(signal.SIGKILL)
        scen.kill_leftovers(d)
        subprocess.run(["umount", "-l", mnt])
        d.cleanup()


def run(d, m, mnt):
    m.set(free_pct=10, swap_used_gib=0)
    c = Client(d.socket)
    held = scen.submit(c, d, "echo ran >> %s/held.ran; exec sleep 60" % d.dir,
                       wait_free_pct=50)
    guarded = scen.submit(c, d, "exec sleep 60", wait_free_pct=5,
                          swap_budget_bytes=1 << 30, priority=1)
    waiting = scen.submit(c, d, "exit 0", wait_free_pct=95)
    j = scen.wait_state(c, guarded, "running")
    filler = os.path.join(mnt, "filler")
    fill_fs(filler)

    # Free memory appears, but nothing can be committed: nothing starts.
    m.set(free_pct=80)
    poll(lambda: c.call("info")["storage_error"], what="storage_error in info")
    scen.samples(d, 5)
    assert scen.show(c, held)["state"] == "queued"
    assert not os.path.exists(d.dir + "/held.ran")
    try:
        scen.submit(c, d, "exit 0")
        raise AssertionError("submit accepted while storage fails")
    except RpcError as e:
        assert e.code == -32006, e
    # A cancel that cannot be recorded is refused, not announced.
    try:
        c.call("cancel", {"id": waiting})
        raise AssertionError("cancel announced while storage fails")
    except RpcError as e:
        assert e.code == -32006 and "not cancelled" in e.message, e
    assert scen.show(c, waiting)["state"] == "queued"

    # Enforcement goes on from memory.
    m.set(swap_used_gib=2, sync=False)
    poll(lambda: not scen.pid_alive(j["pid"]), what="the breaching job to be killed")
    assert scen.show(c, guarded)["state"] == "killed"

    os.unlink(filler)
    poll(lambda: c.call("info")["storage_error"] is None, what="storage to recover")
    scen.wait_state(c, held, "running")
    # running means exec'd; its first line may still be on its way
    poll(lambda: os.path.exists(d.dir + "/held.ran"), what="the held job's mark")
    assert open(d.dir + "/held.ran").read() == "ran\n"
    kinds = [e["kind"] for e in c.call("events", {"limit": 10000})["events"]
             if e["job_id"] == guarded]
    assert kinds[-2:] == ["breach", "killed"], kinds
    c.call("cancel", {"id": held})
    scen.wait_state(c, held, "killed")
    j = c.call("cancel", {"id": waiting})
    assert j["state"] == "cancelled", j

    # Only a submit fails (nothing is retried, no job is running): once
    # space returns, health follows the writes by itself, the queue
    # resumes and cancel works, with no later submit needed.
    m.set(free_pct=10)
    later = scen.submit(c, d, "exec sleep 60", wait_free_pct=50)
    fill_fs(filler)
    try:
        scen.submit(c, d, "exit 0")
        raise AssertionError("submit accepted while storage fails")
    except RpcError as e:
        assert e.code == -32006, e
    assert c.call("info")["storage_error"] is not None
    m.set(free_pct=80)
    scen.samples(d, 3)
    assert scen.show(c, later)["state"] == "queued"
    os.unlink(filler)
    poll(lambda: c.call("info")["storage_error"] is None, timeout=10,
         what="storage health to follow the writes")
    scen.wait_state(c, later, "running")
    c.call("cancel", {"id": later})
    scen.wait_state(c, later, "killed")
    c.close()


if __name__ == "__main__":
    main()
