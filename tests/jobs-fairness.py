"""Queue fairness with two unprivileged users and root (docs/jobs.md,
"Queue order"): who may ask for what would hold the queue, the order at
equal priority, and the head's claim (hol_bound).

The daemon runs as root on a fixture proc root (free memory is what this
test writes). Users A and B are two uids no account uses (no useradd: the
daemon decides on the uid and gid the kernel reports for the socket, and
the jobs here are attached, so nothing runs as them but the relays this
test starts and stops). Root only.

Run one part with: jobs-fairness.py NAME...
"""

import grp
import os
import pwd
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import (Client, Daemon, RELAY, RelayClient, RpcError, poll, skip,  # noqa: E402
                    write_meminfo)

E_PARAMS = -32602
TOTAL_KB = 16 << 20
INTERVAL_MS = 100
HOL_MS = 2000
# Scheduling slack for "within one interval of the bound" on a loaded
# machine; the lower bounds are exact.
SLACK_MS = 1500
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable



def free_ids(n):
    """n ids free as both uid and gid: no account or group uses them."""
    out = []
    for i in range(61000, 65000):
        try:
            pwd.getpwuid(i)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(i)
            continue
        except KeyError:
            pass
        out.append(i)
        if len(out) == n:
            return out
    skip("no free uid in 61000-64999", root_only=True)


class UserClient(RelayClient):
    """A connection made by a process running as uid (through RELAY)."""

    def __init__(self, path, uid):
        def drop():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        RelayClient.__init__(self, subprocess.Popen(
            [PYTHON, "-c", RELAY, path], cwd="/", stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, preexec_fn=drop))
        self.uid = uid
        assert self.call("hello", {"version": 1})["uid"] == uid


def set_free(d, pct):
    """Write the fixture and return once the daemon has sampled it."""
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=int(TOTAL_KB * pct / 100))
    t = int(time.time() * 1000)
    c = Client(d.socket)

    def seen():
        s = c.call("info")["sample"]
        return s is not None and s["sampled_at_ms"] > t and abs(s["free_pct"] - pct) < 0.01
    poll(seen, what="the daemon to sample %g%% free" % pct)
    c.close()


def samples(d, n):
    """Let n samples pass: the daemon's own clock, not a sleep."""
    s = Client(d.socket)
    s.call("subscribe", {"samples": True})
    for _ in range(n):
        s.notification("sample", timeout=5)
    s.close()


def attached(c, **opts):
    p = {"argv": ["true"], "cwd": "/", "attached": True}
    p.update(opts)
    return c.call("submit", p)["id"]


def refused(c, params, *words):
    p = {"argv": ["true"], "cwd": "/", "attached": True}
    p.update(params)
    try:
        r = c.call("submit", p)
    except RpcError as e:
        assert e.code == E_PARAMS, (params, e)
        for w in words:
            assert w in e.message, (params, e.message, w)
        return e.message
    raise AssertionError("submit %r was accepted: %r" % (params, r))


def show(c, jid):
    return c.call("show", {"id": jid})


def queued_order(c):
    return [j["id"] for j in c.call("status")["jobs"] if j["state"] == "queued"]


def wait_state(c, jid, *states, timeout=10.0):
    return poll(lambda: (lambda j: j if j["state"] in states else None)(show(c, jid)),
                timeout=timeout, what="job %d to be %s" % (jid, "/".join(states)))


# ---- the parts ----

def part_submit_rules(d, R, A, B, ua, ub):
    """Priorities above 0 only for root and the admin group; a wait_free
    above max_wait_free or an expect above total memory is refused, root
    (trusted) excepted. The config here makes B's group the admin group."""
    set_free(d, 50)
    msg = refused(A, {"priority": 5}, "priority 5", "root", "admin_group")
    assert show(R, attached(R, priority=5, wait_free_pct=90))["priority"] == 5
    # B's primary group is the admin group.
    assert show(R, attached(B, priority=5, wait_free_pct=90))["priority"] == 5
    # Below 0 is anyone's to ask.
    assert show(R, attached(A, priority=-5, wait_free_pct=90))["priority"] == -5
    msg2 = refused(A, {"wait_free_pct": 99}, "wait_free_pct 99", "max_wait_free (95)")
    attached(A, wait_free_pct=95)
    attached(R, wait_free_pct=99)
    msg3 = refused(A, {"expect_bytes": TOTAL_KB * 1024 + 1}, "total memory")
    attached(A, expect_bytes=TOTAL_KB * 1024, wait_free_pct=90)
    print("ok   refused: %s; %s; %s" % (msg, msg2, msg3))

    # The config is checked at start.
    for conf, word in (("admin_group = slfa-no-such-group\n", "admin_group"),
                       ("wait_free = 96\n", "max_wait_free")):
        bad = Daemon(config=conf)
        try:
            out = subprocess.run(bad.args, capture_output=True, text=True, timeout=10)
            assert out.returncode == 2 and word in out.stderr, (conf, out.returncode,
                                                                out.stderr)
        finally:
            bad.cleanup()


def part_fewest_holding(d, R, A, B, ua, ub):
    """At equal priority the user with fewer jobs holding memory goes
    first, ties broken by that user's oldest queued job."""
    set_free(d, 80)
    a1 = attached(A)
    A.notification("admitted", timeout=10)  # A now holds memory
    set_free(d, 10)
    a2 = attached(A, wait_free_pct=50)
    b1 = attached(B, wait_free_pct=50)
    r1 = attached(R, wait_free_pct=50)
    # B and root hold nothing, A one job: B's and root's first, B's
    # before root's (its oldest queued job is older), A's last though
    # submitted first.
    order = poll(lambda: (lambda o: o if len(o) == 3 else None)(queued_order(R)),
                 what="three queued jobs")
    assert order == [b1, r1, a2], (order, b1, r1, a2)
    assert [show(R, j)["position"] for j in (b1, r1, a2)] == [1, 2, 3]
    set_free(d, 60)
    for j in (b1, r1, a2):
        wait_state(R, j, "admitted")
    adm = [e["job_id"] for e in R.call("events", {"limit": 10000})["events"]
           if e["kind"] == "admitted"]
    assert adm == [a1, b1, r1, a2], (adm, a1, b1, r1, a2)
    print("ok   admitted %s: B's and root's before A's, which held memory" % adm)


def part_hol_bound(d, R, A, B, ua, ub):
    """An unprivileged head that cannot start holds the queue for
    hol_bound (2 s here), then one job of another user that fits passes
    it and the claim starts again; a job of the head's own user never
    passes it; root's head is never passed."""
    set_free(d, 50)
    big = attached(A, wait_free_pct=90, name="big")
    small = attached(A, wait_free_pct=10, name="a-small")
    b1 = attached(B, wait_free_pct=10, name="b1")
    t_big = show(R, big)["submitted_at_ms"]
    poll(lambda: show(R, b1).get("waiting_for") == "head", what="b1 to wait for the head")
    j = wait_state(R, b1, "admitted", timeout=HOL_MS / 1000 + 10)
    lag = j["admitted_at_ms"] - t_big
    assert HOL_MS <= lag <= HOL_MS + SLACK_MS, lag
    j = show(R, big)
    assert j["state"] == "queued" and j["position"] == 1 and j["waiting_for"] == "free", j
    j = show(R, small)
    assert j["state"] == "queued" and j["waiting_for"] == "head", j
    assert "passes job %d" % big in d.log_text()
    print("ok   b1 passed A's head %d ms after it became the head" % lag)

    # The claim started again at that pass: B's next job waits as long.
    t_b1 = show(R, b1)["admitted_at_ms"]
    b2 = attached(B, wait_free_pct=10, name="b2")
    j = wait_state(R, b2, "admitted", timeout=HOL_MS / 1000 + 10)
    lag2 = j["admitted_at_ms"] - t_b1
    # The claim restarts when the pass is decided, a moment before b1's
    # admission is stamped.
    assert HOL_MS - 50 <= lag2 <= HOL_MS + SLACK_MS, lag2
    assert show(R, small)["state"] == "queued"
    print("ok   b2 passed %d ms after b1" % lag2)

    # Root's head: never passed, however long it waits.
    for jid in (big, small):
        A.call("cancel", {"id": jid})
    rbig = attached(R, wait_free_pct=90, name="root-big")
    b3 = attached(B, wait_free_pct=10, name="b3")
    assert queued_order(R) == [rbig, b3]
    samples(d, int(2.5 * HOL_MS / INTERVAL_MS))
    j = show(R, b3)
    assert j["state"] == "queued" and j["waiting_for"] == "head", j
    assert show(R, rbig)["waiting_for"] == "free"
    print("ok   root's head held b3 for 2.5 x hol_bound")


PARTS = [
    ("submit_rules", part_submit_rules, "settle = 0\nadmin_group = {ub}\n"),
    ("fewest_holding", part_fewest_holding, "settle = 0\n"),
    ("hol_bound", part_hol_bound, "settle = 0\nhol_bound = %dms\n" % HOL_MS),
]


def main():
    if os.geteuid() != 0:
        skip("queue fairness needs root: the daemon judges root and two other "
             "uids from the socket's credentials", root_only=True)
    want = set(sys.argv[1:])
    ua, ub = free_ids(2)
    failed = []
    for name, fn, conf in PARTS:
        if want and name not in want:
            continue
        d = Daemon(interval="%gs" % (INTERVAL_MS / 1000.0), config=conf.format(ub=ub))
        os.chmod(d.dir, 0o755)  # the socket's directory: every user may enter
        clients = []
        try:
            d.start()
            R = Client(d.socket)
            A = UserClient(d.socket, ua)
            B = UserClient(d.socket, ub)
            clients = [R, A, B]
            fn(d, R, A, B, ua, ub)
            for c in clients:
                c.close()
            clients = []
            rc = d.stop(signal.SIGTERM)
            assert rc == 0 and "Sanitizer" not in d.log_text(), (rc, d.log_text()[-4000:])
            print("ok   %s" % name)
        except Exception as e:  # report every part, then fail
            import traceback
            traceback.print_exc()
            sys.stderr.write("--- daemon log (%s) ---\n%s\n" % (name, d.log_text()[-6000:]))
            print("FAIL %s: %s" % (name, e))
            failed.append(name)
        finally:
            for c in clients:
                try:
                    c.close()
                except OSError:
                    pass
            d.cleanup()
    if failed:
        print("failed: " + " ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
