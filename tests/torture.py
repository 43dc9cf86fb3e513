"""Crash torture: a seeded workload of about 50 detached jobs (short, long,
breaching, cancelled while queued or running, ending with their own codes or
signals, failing to start) while the daemon is killed with SIGKILL at random
moments and started again on the same database and state directory.

Every job appends "<id> <name>" to a start file when it starts, so runs can
be counted. At the end every job must be accounted for: exit codes and
signals as the job produced them (also when it ended while no daemon ran:
its monitor recorded the status), breaching jobs killed for their budget,
cancelled ones never started, no job started twice, and the database must
pass PRAGMA integrity_check, also right after each kill. Submits cut off by
a kill are looked up by name after the restart: a job the daemon did not
take must never run.

Then the monitor of a detached job is killed while the job runs: the daemon
keeps enforcing it, and when the job ends it is `lost` (nobody recorded its
status; docs/jobs.md, "Restart and shutdown").

The seed comes from SL_TORTURE_SEED or is random; it is printed at the start
and on failure: SL_TORTURE_SEED=N tests/torture.sh replays the same choices
(the timing of the machine still varies).

Orphans are not always reaped here (PID 1 may not wait for them): a process
is treated as gone when it is a zombie.
"""

import os
import random
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon, RpcError, kill_leftovers, poll, write_meminfo  # noqa: E402

GIB_KB = 1 << 20
TOTAL_KB = 16 * GIB_KB
SWAP_TOTAL_KB = 4096 * GIB_KB
GRACE_MS = 300
BUDGET = 1 << 30
MIN_KILLS = 10
PHASE_S = 45.0

# kind -> how many; about 50 in all.
MIX = [("short", 14), ("long", 8), ("signal", 3), ("breach", 8),
       ("cancel_queued", 6), ("cancel_running", 6), ("spawnfail", 3),
       ("slow_start", 2)]


class Torture:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        conf = "grace = %dms\nsettle = 0\n" % GRACE_MS
        self.d = Daemon(interval="0.1s", config=conf)
        self.starts = os.path.join(self.d.dir, "starts")
        self.swap_used_kb = 0
        self.kills = 0
        self.midcall_kills = 0
        self.jobs = []      # dicts: name, kind, code, id (None until known)
        self.unsure = []    # submits cut off by a kill: resolved by name
        self.c = None
        self.write_mem()

    # ---- fixture and daemon ----

    def write_mem(self):
        write_meminfo(self.d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB * 8 // 10,
                      swap_total_kb=SWAP_TOTAL_KB,
                      swap_free_kb=SWAP_TOTAL_KB - self.swap_used_kb)

    def raise_swap(self):
        self.swap_used_kb += 2 * GIB_KB
        self.write_mem()

    def connect(self):
        if self.c is not None:
            self.c.close()
        self.c = Client(self.d.socket)

    def crash(self):
        """SIGKILL the daemon (if a timer did not already), check the
        database as the crash left it, start a new daemon."""
        if self.d.alive():
            self.d.proc.kill()
        self.d.proc.wait()
        self.kills += 1
        if self.c is not None:
            self.c.close()
            self.c = None
        ic = self.d.integrity()
        assert ic == "ok", "integrity after kill %d: %s" % (self.kills, ic)
        self.d.start()
        self.connect()

    def call(self, method, params=None):
        """An RPC; when the daemon died under it, restart and return
        the exception instead of a result."""
        try:
            return self.c.call(method, params)
        except (ConnectionError, OSError, AssertionError) as e:
            # The socket closes before the process is a zombie that
            # wait() can see: give a killed daemon a moment to be dead.
            try:
                self.d.proc.wait(2)
            except Exception:
                raise e
            self.crash()
            return e

    def ensure_up(self):
        if not self.d.alive():
            self.crash()

    # ---- the workload ----

    def make_jobs(self):
        n = 0
        for kind, count in MIX:
            for _ in range(count):
                n += 1
                self.jobs.append({"name": "t%d-%02d-%s" % (self.seed, n, kind),
                                  "kind": kind, "id": None,
                                  "code": self.rng.randrange(0, 6)})
        self.rng.shuffle(self.jobs)

    def params(self, job):
        k = job["kind"]
        mark = 'echo "$STAGELOAD_JOB_ID %s" >> %s; ' % (job["name"], self.starts)
        p = {"cwd": self.d.dir, "env": ["PATH=" + os.environ.get("PATH", "/usr/bin:/bin")],
             "name": job["name"]}
        if k == "short":
            script = mark + "sleep 0.%d; exit %d" % (self.rng.randrange(1, 9), job["code"])
        elif k == "long":
            script = mark + "sleep %.1f; exit %d" % (self.rng.uniform(2, 6), job["code"])
        elif k == "signal":
            script = mark + "sleep 0.%d; kill -KILL $$" % self.rng.randrange(1, 9)
        elif k == "breach":
            script = mark + "exec sleep 120"
            p["swap_budget_bytes"] = BUDGET
        elif k == "cancel_queued":
            # Never admitted at 80 % free; last in the queue, so it holds
            # nothing up.
            script = mark + "exit 0"
            p["wait_free_pct"] = 99
            p["priority"] = -1000
        elif k == "cancel_running":
            script = mark + "exec sleep 120"
        elif k == "slow_start":
            # Ends a good while after admission: often while no daemon runs.
            script = mark + "sleep %.1f; exit %d" % (self.rng.uniform(0.5, 1.5), job["code"])
        elif k == "spawnfail":
            p["argv"] = ["/nonexistent/stageload-torture-%s" % job["name"]]
            return p
        p["argv"] = ["bash", "-c", script]
        return p

    def submit(self, job):
        p = self.params(job)
        timer = None
        if self.rng.random() < 0.12 and self.kills < MIN_KILLS + 6:
            # Kill while the request is in flight: the job may or may not
            # have been taken; resolved by name after the restart.
            timer = threading.Timer(self.rng.uniform(0, 0.01), self.d.proc.kill)
            timer.start()
        r = self.call("submit", p)
        if isinstance(r, dict):
            job["id"] = r["id"]
        else:
            self.unsure.append(job)
        if timer is not None:
            timer.join()
            self.midcall_kills += 1
            if not self.d.alive():
                self.crash()  # the kill came just after the answer

    def resolve_unsure(self):
        """Submits whose answer a kill swallowed: taken or not?"""
        if not self.unsure:
            return
        st = self.call("status", {"all": True, "limit": 1000})
        if isinstance(st, Exception):
            return
        byname = {j.get("name"): j["id"] for j in st["jobs"]}
        for job in self.unsure:
            job["id"] = byname.get(job["name"])
            if job["id"] is None:
                job["kind"] = "not_taken"
        self.unsure = []

    def show(self, jid):
        r = self.call("show", {"id": jid})
        return None if isinstance(r, Exception) else r

    def cancel(self, job):
        r = self.call("cancel", {"id": job["id"]})
        if isinstance(r, RpcError) and r.code != -32005:
            raise r
        if isinstance(r, dict) or isinstance(r, RpcError):
            job["cancelled"] = True

    def cancel_candidates(self):
        out = []
        for job in self.jobs:
            if job["id"] is None or job.get("cancelled"):
                continue
            if job["kind"] == "cancel_queued":
                out.append(job)
            elif job["kind"] == "cancel_running":
                j = self.show(job["id"])
                if j is not None and j["state"] == "running":
                    out.append(job)
        return out

    def breachers_left(self):
        for job in self.jobs:
            if job["kind"] == "breach" and job["id"] is not None:
                j = self.show(job["id"])
                if j is not None and j["state"] in ("queued", "admitted", "running"):
                    return True
        return False

    def run(self):
        self.make_jobs()
        self.d.start()
        self.connect()
        todo = list(self.jobs)
        t0 = time.monotonic()
        next_kill = t0 + self.rng.uniform(0.5, 3.0)
        while todo or self.kills < MIN_KILLS:
            self.ensure_up()
            now = time.monotonic()
            if now >= next_kill:
                self.crash()
                next_kill = now + self.rng.uniform(0.5, PHASE_S / (MIN_KILLS + 2))
                continue
            a = self.rng.random()
            if todo and a < 0.45:
                for _ in range(self.rng.randrange(1, 4)):
                    if todo:
                        self.submit(todo.pop())
            elif a < 0.6:
                cands = self.cancel_candidates()
                if cands:
                    self.cancel(self.rng.choice(cands))
            elif a < 0.75:
                self.raise_swap()
            self.resolve_unsure()
            time.sleep(self.rng.uniform(0.02, 0.3))
            if time.monotonic() - t0 > PHASE_S * 2:
                raise AssertionError("workload phase overran")
        self.resolve_unsure()
        print("workload submitted in %.1fs with %d kills (%d during a submit)" %
              (time.monotonic() - t0, self.kills, self.midcall_kills))
        self.drain()

    def drain(self):
        """Cancel what is left to cancel, push swap until every breaching
        job is gone, and wait for every job to end."""
        deadline = time.monotonic() + 60
        while True:
            self.ensure_up()
            self.resolve_unsure()
            for job in self.jobs:
                if job["kind"] in ("cancel_queued", "cancel_running") and \
                        job["id"] is not None and not job.get("cancelled"):
                    j = self.show(job["id"])
                    if j is not None and (job["kind"] == "cancel_queued" or
                                          j["state"] == "running"):
                        self.cancel(job)
            if self.breachers_left():
                self.raise_swap()
            live = [job for job in self.jobs if job["id"] is not None and
                    (self.show(job["id"]) or {"state": "?"})["state"] in
                    ("queued", "admitted", "running", "?")]
            if not live:
                break
            if time.monotonic() > deadline:
                raise AssertionError("jobs never ended: %s" % [
                    (j["name"], j["id"]) for j in live])
            time.sleep(0.15)

    # ---- the verdict ----

    def verify(self):
        starts = {}
        names = {}
        with open(self.starts) if os.path.exists(self.starts) else open(os.devnull) as f:
            for line in f:
                jid, name = line.split()
                starts[int(jid)] = starts.get(int(jid), 0) + 1
                names[name] = names.get(name, 0) + 1
        problems = []
        summary = {}
        lost_unstarted = 0
        for job in self.jobs:
            k = job["kind"]
            if k == "not_taken":
                if names.get(job["name"]):
                    problems.append("%s was not taken but ran" % job["name"])
                summary["not_taken"] = summary.get("not_taken", 0) + 1
                continue
            j = self.c.call("show", {"id": job["id"]})
            n = starts.get(job["id"], 0)
            if names.get(job["name"], 0) != n:
                problems.append("%s: start lines by id and by name disagree" % job["name"])
            got = (j["state"], j["end_reason"])
            summary[got] = summary.get(got, 0) + 1
            ok = n <= 1
            if got == ("lost", "lost") and n == 0 and \
                    "process 0 (started 0)" in (j.get("end_detail") or ""):
                # A kill between committing the admission and hearing of
                # the monitor: the job never ran and, as jobs run at most
                # once, never will (docs/jobs.md, "Restart and shutdown").
                lost_unstarted += 1
                continue
            if k in ("short", "long", "slow_start"):
                ok = ok and n == 1 and j["state"] == "exited" and \
                    j["exit_code"] == job["code"] and j["signal"] is None
            elif k == "signal":
                ok = ok and n == 1 and j["state"] == "exited" and j["signal"] == 9
            elif k == "breach":
                ok = ok and got == ("killed", "swap_budget")
            elif k == "cancel_queued":
                # Its wait_free of 99 % is never met: it can only end
                # cancelled, before it ever ran.
                ok = ok and n == 0 and got == ("cancelled", "cancel")
            elif k == "cancel_running":
                ok = ok and got == ("killed", "cancel")
            elif k == "spawnfail":
                ok = ok and n == 0 and got == ("failed", "spawn")
            if not ok:
                problems.append("%s (id %d, %d starts, exit code wanted %d): %s %s "
                                "exit_code=%s signal=%s detail=%r" % (
                                    job["name"], job["id"], n, job["code"], j["state"],
                                    j["end_reason"], j["exit_code"], j["signal"],
                                    j.get("end_detail")))
        for jid, n in starts.items():
            if n > 1:
                problems.append("job %d started %d times" % (jid, n))
        known = {job["id"] for job in self.jobs}
        for jid in starts:
            if jid not in known:
                problems.append("job %d ran but was never submitted here" % jid)
        print("outcomes: " + ", ".join("%s=%d" % (k if isinstance(k, str) else "/".join(
            str(x) for x in k), v) for k, v in sorted(summary.items(), key=str)))
        print("%d jobs lost before they started (admission cut off by a kill)" %
              lost_unstarted)
        assert not problems, "\n  ".join(["jobs not accounted for:"] + problems)
        self.c.close()
        self.c = None
        assert self.d.stop(signal.SIGTERM) == 0
        ic = self.d.integrity()
        assert ic == "ok", ic


def monitor_killed(d):
    """SIGKILL the monitor of a running detached job, with a budget: the
    daemon keeps following the job and ends it `lost` once it is gone;
    likewise when the monitor dies while no daemon runs."""
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB * 8 // 10,
                  swap_total_kb=SWAP_TOTAL_KB, swap_free_kb=SWAP_TOTAL_KB)
    c = Client(d.socket)
    base = {"cwd": d.dir, "env": ["PATH=" + os.environ.get("PATH", "/usr/bin:/bin")]}
    flag = os.path.join(d.dir, "mk-go")
    script = "while [ ! -e %s ]; do sleep 0.05; done; exit 6" % flag
    a = c.call("submit", dict(base, argv=["bash", "-c", script], name="mk-a"))["id"]
    b = c.call("submit", dict(base, argv=["bash", "-c", script], name="mk-b"))["id"]
    pids = {}
    for jid in (a, b):
        pids[jid] = poll(lambda: (lambda j: j["pid"] if j["state"] == "running" else None)(
            c.call("show", {"id": jid})), what="job %d to run" % jid)
    monitors = {jid: proc_ppid(pid) for jid, pid in pids.items()}
    for jid, m in monitors.items():
        # The monitor was re-parented here: its job will be too.
        assert proc_ppid(m) == os.getpid(), (jid, m, proc_ppid(m))
    for jid, m in monitors.items():
        assert m > 1 and m != d.proc.pid, (jid, m)

    os.kill(monitors[a], signal.SIGKILL)
    # Job a's process is untouched and still followed.
    time.sleep(0.5)
    j = c.call("show", {"id": a})
    assert j["state"] == "running" and pid_alive(pids[a]), j
    c.close()
    # Job b loses its monitor while no daemon runs.
    d.proc.kill()
    d.proc.wait()
    os.kill(monitors[b], signal.SIGKILL)
    d.start()
    c = Client(d.socket)
    j = c.call("show", {"id": b})
    assert j["state"] == "running", j
    open(flag, "w").close()
    # Accounted for within a few samples of its end, even while its
    # process lingers as an unreaped zombie.
    for jid in (a, b):
        poll(lambda: not pid_alive(pids[jid]), what="job %d to end" % jid)
        j = poll(lambda: (lambda j: j if j["state"] not in ("running", "admitted") else None)(
            c.call("show", {"id": jid})), timeout=1.5, what="job %d to be accounted for" % jid)
        assert j["state"] == "lost" and j["end_reason"] == "lost", j
        assert "no status" in (j.get("end_detail") or ""), j
    c.close()
    print("monitor killed: the job ends lost (its status had no one to record it)")


def become_subreaper():
    """Orphans below this process are re-parented to it, and it does not
    reap them while the check runs: an ended job whose monitor was killed
    stays a zombie, as under an init that does not reap (see the top)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def proc_ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def main():
    env_seed = os.environ.get("SL_TORTURE_SEED")
    seed = int(env_seed) if env_seed else random.SystemRandom().randrange(1, 1 << 31)
    print("seed %d (replay: SL_TORTURE_SEED=%d)" % (seed, seed), flush=True)
    t = Torture(seed)
    t0 = time.monotonic()
    try:
        t.run()
        t.verify()
        print("torture: %d kills, %d jobs, %.1fs" % (t.kills, len(t.jobs),
                                                    time.monotonic() - t0))
        become_subreaper()
        t.d.start()
        monitor_killed(t.d)
        assert t.d.stop(signal.SIGTERM) == 0
    except BaseException:
        traceback.print_exc()
        sys.stderr.write("--- daemon log (tail) ---\n%s\n" % t.d.log_text()[-6000:])
        print("FAIL with seed %d (replay: SL_TORTURE_SEED=%d)" % (seed, seed))
        sys.exit(1)
    finally:
        if t.c is not None:
            t.c.close()
        if t.d.alive():
            t.d.stop(signal.SIGKILL)
        kill_leftovers(t.d)
        t.d.cleanup()
        reap_all()
    print("ok   torture (%.1fs)" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
