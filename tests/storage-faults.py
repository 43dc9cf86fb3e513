"""Storage faults under running jobs, for what jobs-storage.py and
daemon-storage.py leave out:

- full: the database's tmpfs fills up. A breach kill must come as fast as
  with working storage (kills never wait on storage); a job that ends on
  its own during the outage gets its exit code in the database once space
  returns; the log says when storage failed and when it works again; the
  database passes PRAGMA integrity_check.
- readonly: the database's file system turns read-only under the daemon
  (an ext4 image mounted errors=remount-ro, then an ext4 error forced with
  /sys/fs/ext4/DEV/trigger_fs_error, as a failing disk would). The daemon
  keeps enforcing, refuses submits, holds admissions and reports the error
  in `info` and the log. A file system in that state only comes back through
  umount and fsck, so the daemon is stopped (SIGTERM, exit 0) and started
  again on the repaired file system: every job is accounted for.

- freed: the disk fills while a job waits for memory; memory frees, its
  admission cannot be written and is undone; the disk is freed and nothing
  else is asked of the daemon (no submit, no client write): the job is
  admitted within FREED_BOUND_S of the space coming back, by the daemon's
  own record of its admission.

Root only (mount). The jobs' state directory stays off the faulty file
system so that monitors can record statuses (docs/jobs.md).
"""

import errno
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import (Client, RpcError, fill_fs, missing_tools, poll, require_tools, scenarios, skip)  # noqa: E402

scen = scenarios()

# From the meminfo write to the job's death: a sample (100 ms), SIGTERM,
# and the scheduling of a loaded machine. Storage must add nothing.
KILL_BOUND_S = 1.5
# From freed space to the admission: the probe of a failing area comes
# every 2 s (PROBE_EVERY_MS in tick.c), the admission on the next sample.
FREED_BOUND_S = 5.0


def run_cmd(*argv):
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("%s: %s" % (" ".join(argv), (r.stderr or r.stdout).strip()))
    return r.stdout


class Setup:
    """A daemon whose database lives on mnt, its job state elsewhere."""

    def __init__(self):
        self.d = scen.start_daemon(extra_conf="state_dir = %s\n" % "STATE")
        self.state = os.path.join(self.d.dir, "state")
        os.mkdir(self.state)
        conf = self.d.args[self.d.args.index("--config") + 1]
        text = open(conf).read().replace("STATE", self.state)
        open(conf, "w").write(text)
        self.mnt = os.path.join(self.d.dir, "dbfs")
        os.mkdir(self.mnt)
        self.d.args[self.d.args.index("--db") + 1] = os.path.join(self.mnt, "sl.db")
        self.d.db = os.path.join(self.mnt, "sl.db")
        self.m = scen.Memory(self.d)
        self.mounted = False
        self.loopdev = None


def start_jobs(s):
    """A guarded job to breach, one that ends on a flag, one held back."""
    d, m = s.d, s.m
    m.set(free_pct=80, swap_used_gib=0)
    c = Client(d.socket)
    flag = os.path.join(d.dir, "end-now")
    guarded = scen.submit(c, d, "exec sleep 60", swap_budget_bytes=1 << 30)
    ender = scen.submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done; exit 5" % flag)
    g = scen.wait_state(c, guarded, "running")
    e = scen.wait_state(c, ender, "running")
    held = scen.submit(c, d, "echo ran > %s/held.ran; exit 0" % d.dir, wait_free_pct=90)
    scen.samples(d, 2)
    assert scen.show(c, held)["state"] == "queued"
    return c, {"guarded": guarded, "ender": ender, "held": held, "flag": flag,
               "guarded_pid": g["pid"], "ender_pid": e["pid"]}


def during_outage(s, c, jobs):
    """What must hold while nothing can be written."""
    d, m = s.d, s.m
    err = poll(lambda: c.call("info")["storage_error"], timeout=15,
               what="info to report the storage error")
    # Free memory appears, yet nothing is admitted.
    m.set(free_pct=95)
    scen.samples(d, 5)
    assert scen.show(c, jobs["held"])["state"] == "queued"
    assert not os.path.exists(d.dir + "/held.ran")
    try:
        scen.submit(c, d, "exit 0")
        raise AssertionError("submit accepted while storage fails")
    except RpcError as e:
        assert e.code == -32006, e
    # A job ends by itself.
    open(jobs["flag"], "w").close()
    poll(lambda: not scen.pid_alive(jobs["ender_pid"]), what="the ender to exit")
    # A breach is enforced as fast as ever.
    m.set(swap_used_gib=2, sync=False)
    t = time.monotonic()
    poll(lambda: not scen.pid_alive(jobs["guarded_pid"]), timeout=10, step=0.01,
         what="the breaching job to be killed")
    lag = time.monotonic() - t
    assert lag < KILL_BOUND_S, "killed %.2fs after the breach while storage failed" % lag
    assert d.alive()
    return err, lag


def after_recovery(s, c, jobs):
    d = s.d
    j = scen.wait_state(c, jobs["ender"], "exited")
    assert j["exit_code"] == 5, j
    scen.wait_state(c, jobs["held"], "exited")
    assert open(d.dir + "/held.ran").read() == "ran\n"
    assert open(d.dir + "/held.ran").read().count("ran") == 1


def mode_full(s):
    d = s.d
    # mode=0700: a tmpfs is 1777 by default, which is no place for root's
    # database (docs/security.md).
    run_cmd("mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", s.mnt)
    s.mounted = True
    d.start()
    c, jobs = start_jobs(s)
    filler = os.path.join(s.mnt, "filler")
    fill_fs(filler)
    err, lag = during_outage(s, c, jobs)
    assert "full" in err, err
    os.unlink(filler)
    poll(lambda: c.call("info")["storage_error"] is None, timeout=15,
         what="storage to recover")
    after_recovery(s, c, jobs)
    j = scen.show(c, jobs["guarded"])
    assert j["state"] == "killed" and j["end_reason"] == "swap_budget", j
    # Events of the outage are written too, in order.
    for jid, last in ((jobs["ender"], "exited"), (jobs["guarded"], "killed")):
        kinds = poll(lambda: (lambda k: k if k and k[-1] == last else None)(
            [e["kind"] for e in scen.events_of(c, jid)]), timeout=5,
            what="job %d's %s event" % (jid, last))
        assert kinds.count("started") == 1, kinds
    log = d.log_text()
    assert "full" in log.split("storage works again")[0], log[-3000:]
    assert "storage works again" in log, log[-3000:]
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    assert d.integrity() == "ok", d.integrity()
    print("ok   full: breach killed %.0f ms after the rise while storage failed" % (lag * 1000))


def freed_attempt(s, c, filler, ran):
    """Fill the disk, free memory for the queued job and see its admission
    fail. None when the admission was not what failed first (a batch of
    samples was due in that very tick: admissions then wait without
    trying), after clearing the outage again."""
    d, m = s.d, s.m
    m.set(free_pct=50)
    jid = scen.submit(c, d, "echo ran >> %s; exit 0" % ran, wait_free_pct=90)
    scen.samples(d, 2)
    assert scen.show(c, jid)["state"] == "queued"
    fill_fs(filler)
    m.set(free_pct=95)
    err = poll(lambda: c.call("info")["storage_error"], timeout=15,
               what="info to report the storage error")
    if not err.startswith("job update"):
        os.unlink(filler)
        poll(lambda: c.call("info")["storage_error"] is None, timeout=15,
             what="storage to recover from a samples failure")
        scen.wait_state(c, jid, "exited")
        return None
    assert "full" in err, err
    return jid


def mode_freed(s):
    d = s.d
    run_cmd("mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", s.mnt)
    s.mounted = True
    d.start()
    c = Client(d.socket)
    filler = os.path.join(s.mnt, "filler")
    for attempt in range(3):
        ran = os.path.join(d.dir, "freed-%d.ran" % attempt)
        jid = freed_attempt(s, c, filler, ran)
        if jid is not None:
            break
    else:
        raise AssertionError("the admission was never the write that failed")
    # The undone admission is not retried by itself: it stays queued,
    # whatever else the daemon writes meanwhile.
    scen.samples(d, 10)
    assert scen.show(c, jid)["state"] == "queued"
    os.unlink(filler)
    freed_ms = int(time.time() * 1000)
    # Only reads from here on: the daemon finds out by itself.
    j = scen.wait_state(c, jid, "admitted", "running", "exited",
                        timeout=FREED_BOUND_S + 5)
    lag = (j["admitted_at_ms"] - freed_ms) / 1000.0
    assert lag < FREED_BOUND_S, "admitted %.2fs after the disk was freed" % lag
    assert c.call("info")["storage_error"] is None
    scen.wait_state(c, jid, "exited")
    assert open(ran).read().count("ran") == 1
    log = d.log_text()
    assert "storage works again" in log.split("job update")[-1], log[-3000:]
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    assert d.integrity() == "ok", d.integrity()
    print("ok   freed: admitted %.0f ms after the disk was freed, with no submit" % (lag * 1000))


def mode_readonly(s):
    d = s.d
    why = missing_tools("mkfs.ext4", "losetup", "e2fsck")
    if why:
        return why
    img = os.path.join(d.dir, "db.img")
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    run_cmd("mkfs.ext4", "-q", "-F", img)
    r = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True)
    if r.returncode != 0:
        return "no loop device: " + r.stderr.strip()
    s.loopdev = r.stdout.strip()
    run_cmd("mount", "-o", "errors=remount-ro", s.loopdev, s.mnt)
    s.mounted = True
    trigger = "/sys/fs/ext4/%s/trigger_fs_error" % os.path.basename(s.loopdev)
    if not os.path.exists(trigger):
        return "no %s in this kernel" % trigger
    d.start()
    c, jobs = start_jobs(s)
    # What was committed so far reaches the disk first: with synchronous =
    # NORMAL (docs/storage.md) an ext4 error, like a power loss, drops WAL
    # pages not yet synced, and this test is about the fault, not that.
    run_cmd("sync", "-f", s.d.db)
    with open(trigger, "w") as f:
        f.write("1")
    try:
        open(os.path.join(s.mnt, "probe"), "w").close()
        raise AssertionError("the file system is still writable")
    except OSError as e:
        assert e.errno == errno.EROFS, e
    err, lag = during_outage(s, c, jobs)
    assert "read-only" in err or "readonly" in err or "I/O" in err, err
    assert err.split(":")[0] in d.log_text(), d.log_text()[-3000:]
    c.close()
    # Repair: stop, fsck, mount again, start.
    assert d.stop(signal.SIGTERM) == 0, d.log_text()[-3000:]
    run_cmd("umount", s.mnt)
    subprocess.run(["e2fsck", "-fy", s.loopdev], capture_output=True)
    run_cmd("mount", "-o", "errors=remount-ro", s.loopdev, s.mnt)
    d.start()
    c = Client(d.socket)
    assert c.call("info")["storage_error"] is None
    s.m.set(free_pct=95)
    after_recovery(s, c, jobs)
    # The kill could not be written; the job's status, recorded by its
    # monitor, is what the next daemon finds.
    j = scen.show(c, jobs["guarded"])
    assert j["state"] in ("exited", "killed") and (j["signal"] == 15 or
                                                  j["end_reason"] == "swap_budget"), j
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    assert d.integrity() == "ok", d.integrity()
    print("ok   readonly: breach killed %.0f ms after the rise on a read-only "
          "file system; after repair the guarded job reads %s" % (
              lag * 1000, j["state"] if j["state"] != "exited" else "exited, signal 15"))
    return None


def main():
    if os.geteuid() != 0:
        skip("mounting file systems for the database needs root", root_only=True)
    require_tools("mount", "umount", "sync")
    skipped = []
    modes = (("full", mode_full), ("freed", mode_freed), ("readonly", mode_readonly))
    only = sys.argv[1:]
    for name, fn in modes:
        if only and name not in only:
            continue
        s = Setup()
        try:
            why = fn(s)
            if why:
                skipped.append("%s: %s" % (name, why))
        except Exception:
            sys.stderr.write("--- daemon log (%s) ---\n%s\n" % (name, s.d.log_text()[-8000:]))
            raise
        finally:
            if s.d.alive():
                s.d.stop(signal.SIGKILL)
            scen.kill_leftovers(s.d)
            if s.mounted:
                subprocess.run(["umount", "-l", s.mnt], capture_output=True)
            if s.loopdev:
                subprocess.run(["losetup", "-d", s.loopdev], capture_output=True)
            s.d.cleanup()
    if skipped:
        skip("; ".join(skipped), root_only=True)


if __name__ == "__main__":
    main()
