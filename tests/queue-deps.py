"""The queue's own controls through the fixture proc root: dependencies
(submit's after and after_any), holds, and what they show. The jobs are
real processes; docs/jobs.md, "Dependencies and holds", states the rules.

Run one scenario with: queue-deps.py NAME...
"""

import os
import select
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, RpcError, client_as, poll, scenarios  # noqa: E402

js = scenarios()
submit, show, wait_state, samples, read, events_of = (
    js.submit, js.show, js.wait_state, js.samples, js.read, js.events_of)

CTL = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def ctl(d, *args):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=30)


def queued(c, jid):
    j = show(c, jid)
    return j if j["state"] == "queued" else None


def sc_chain(d, m, c):
    """A -> B -> C run in order; each waits with `after ID` meanwhile."""
    log = d.dir + "/chain.log"
    go = d.dir + "/chain.go"
    a = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done; echo A >> %s"
               % (go, log), name="A")
    b = submit(c, d, "echo B >> %s" % log, after=[a], name="B")
    cc = submit(c, d, "echo C >> %s" % log, after=[b], name="C")
    wait_state(c, a, "running")
    samples(d, 3)
    jb, jc = show(c, b), show(c, cc)
    assert jb["state"] == "queued" and jb["waiting_for"] == "after %d" % a, jb
    assert jc["state"] == "queued" and jc["waiting_for"] == "after %d" % b, jc
    assert jb["after"] == [a] and jb["after_any"] is False, jb
    assert c.call("info")["waiting_for"].get("after") == 2, c.call("info")
    # the CLI says it in words
    out = ctl(d, "status")
    row = [line for line in out.stdout.splitlines() if line.split()[0] == str(b)]
    assert row and "after %d" % a in row[0], out.stdout
    out = ctl(d, "show", str(b))
    assert "job %d, which it starts after (--after), has not ended" % a in out.stdout, out.stdout
    # Passed over, not blocking: a job behind them starts meanwhile.
    other = submit(c, d, "exit 0", name="other")
    wait_state(c, other, "exited")
    assert show(c, b)["state"] == "queued"
    open(go, "w").close()
    for jid in (a, b, cc):
        j = wait_state(c, jid, "exited")
        assert j["exit_code"] == 0, j
    assert read(log).split() == ["A", "B", "C"], read(log)
    sa, sb = (show(c, x) for x in (a, b))
    assert show(c, b)["started_at_ms"] >= sa["ended_at_ms"], (sa, sb)
    assert show(c, cc)["started_at_ms"] >= show(c, b)["ended_at_ms"]


def sc_chain_failed(d, m, c):
    """A fails: B and C (after) end cancelled with reason dependency; D
    (after_any) runs; nothing of B or C ever starts."""
    log = d.dir + "/fail.log"
    go = d.dir + "/fail.go"
    a = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done; exit 3" % go,
               name="A")
    b = submit(c, d, "echo B >> %s" % log, after=[a], name="B")
    cc = submit(c, d, "echo C >> %s" % log, after=[b], name="C")
    dd = submit(c, d, "echo D >> %s" % log, after=[a], after_any=True,
                name="D")
    wait_state(c, a, "running")
    open(go, "w").close()
    assert wait_state(c, a, "exited")["exit_code"] == 3
    for jid in (b, cc):
        j = wait_state(c, jid, "cancelled")
        assert j["end_reason"] == "dependency", j
        assert "started_at_ms" not in j or j["started_at_ms"] is None, j
    jb = show(c, b)
    assert "job %d" % a in jb["end_detail"] and "exited 3" in jb["end_detail"], jb
    assert "job %d" % b in show(c, cc)["end_detail"], show(c, cc)
    assert wait_state(c, dd, "exited")["exit_code"] == 0
    assert read(log).split() == ["D"], read(log)
    kinds = [e["kind"] for e in events_of(c, b)]
    assert kinds == ["submitted", "cancelled"], kinds
    ended = c.call("info")["counters"]["jobs_ended"]
    assert {"state": "cancelled", "reason": "dependency", "count": 2} in ended, ended


def sc_cancelled_dep(d, m, c):
    """A cancelled (or killed) dependency cancels its dependents too."""
    m.set(free_pct=20)
    a = submit(c, d, "exit 0", wait_free_pct=50, name="A")
    b = submit(c, d, "exit 0", after=[a], name="B")
    c.call("cancel", {"id": a})
    j = wait_state(c, b, "cancelled")
    assert j["end_reason"] == "dependency" and "cancelled" in j["end_detail"], j


def sc_submit_checks(d, m, c):
    """What can never hold is refused at submit: an unknown job, a job
    that already failed (after), a job listed twice; after_any on a failed
    job and after on a job that exited 0 are accepted and run at once."""
    bad = submit(c, d, "exit 1")
    good = submit(c, d, "exit 0")
    wait_state(c, bad, "exited")
    wait_state(c, good, "exited")
    for params, code, words in (
            ({"after": [999999]}, -32003, "no job 999999"),
            ({"after": [bad]}, -32005, "already ended exited 1"),
            ({"after": [good, good]}, -32602, "listed twice"),
            ({"after": [0]}, -32602, "after"),
            ({"after": [True]}, -32602, "array of job ids"),
            ({"after": ["x1"]}, -32602, "not a job id"),
            ({"after": list(range(1, 66))}, -32602, "more than 64")):
        try:
            submit(c, d, "exit 0", **params)
        except RpcError as e:
            assert e.code == code and words in str(e), (params, e.code, str(e))
        else:
            raise AssertionError("accepted %r" % params)
    x = submit(c, d, "exit 0", after=[bad], after_any=True)
    y = submit(c, d, "exit 0", after=[good])
    wait_state(c, x, "exited")
    wait_state(c, y, "exited")


def sc_hold_release(d, m, c):
    """A held job keeps its place and is passed over; once released it runs.
    Only a queued job can be held. hold and release answer the Job as it is
    after the call (its waiting_for held, then what it waits for next)."""
    h = submit(c, d, "exit 0", held=True, name="H")
    samples(d, 3)
    j = show(c, h)
    assert j["state"] == "queued" and j["waiting_for"] == "held", j
    assert j["held"] is True and j["position"] == 1, j
    assert c.call("info")["waiting_for"] == {"held": 1}, c.call("info")
    out = ctl(d, "status")
    row = [line for line in out.stdout.splitlines() if line.split()[0] == str(h)]
    assert row and " held" in row[0], out.stdout
    other = submit(c, d, "exit 0", name="other")
    wait_state(c, other, "exited")
    samples(d, 3)
    assert queued(c, h), show(c, h)
    r = c.call("release", {"id": h})
    assert r["id"] == h and r["held"] is False, r
    # the Job as it is after the call: no longer held, and nothing that
    # is not in the Job's list ("none")
    assert r["state"] != "queued" or r["waiting_for"] not in ("held", "none"), r
    wait_state(c, h, "exited")
    # hold a queued one through the CLI, then release it
    m.set(free_pct=20)
    q = submit(c, d, "exit 0", wait_free_pct=50)
    poll(lambda: show(c, q).get("waiting_for") == "free", what="job %d to wait for free" % q)
    # hold and release answer the Job as it is after the call
    r = c.call("hold", {"id": q})
    assert r["held"] is True and r["waiting_for"] == "held", r
    r = c.call("release", {"id": q})
    assert r["held"] is False and r["waiting_for"] == "free", r
    out = ctl(d, "hold", str(q))
    assert out.returncode == 0 and "job %d: held" % q in out.stdout, out
    assert show(c, q)["waiting_for"] == "held"
    m.set(free_pct=80)
    samples(d, 3)
    assert queued(c, q), show(c, q)
    out = ctl(d, "release", str(q))
    assert out.returncode == 0 and "released" in out.stdout, out
    wait_state(c, q, "exited")
    try:
        c.call("hold", {"id": q})
    except RpcError as e:
        assert e.code == -32005 and "not queued" in str(e), str(e)
    else:
        raise AssertionError("held an ended job")
    kinds = [e["kind"] for e in events_of(c, q)]
    assert "held" in kinds and "released" in kinds, kinds


def sc_cli_after(d, m, c):
    """stageloadctl submit --after / --after-any / --hold."""
    go = d.dir + "/cli.go"
    out = ctl(d, "submit", "--", "bash", "-c",
              "while [ ! -e %s ]; do sleep 0.05; done; exit 2" % go)
    assert out.returncode == 0, out
    a = int(out.stdout)
    out = ctl(d, "submit", "--after", "#%d" % a, "--", "true")
    assert out.returncode == 0, out
    b = int(out.stdout)
    out = ctl(d, "submit", "--after-any", str(a), "--hold", "--", "true")
    assert out.returncode == 0, out
    h = int(out.stdout)
    jh = show(c, h)
    assert jh["after"] == [a] and jh["after_any"] and jh["held"], jh
    out = ctl(d, "submit", "--after", "x", "--", "true")
    assert out.returncode == 2 and "bad job id" in out.stderr, out
    out = ctl(d, "submit", "--after", "1", "--after-any", "1", "--", "true")
    assert out.returncode == 2, out
    open(go, "w").close()
    assert wait_state(c, b, "cancelled")["end_reason"] == "dependency"
    samples(d, 3)
    assert show(c, h)["waiting_for"] == "held", show(c, h)
    ctl(d, "release", str(h))
    wait_state(c, h, "exited")


def sc_dep_failed_while_down(d, m, c):
    """A dependency that fails while no daemon runs: the restarted daemon
    cancels its dependents (and never starts them)."""
    go = d.dir + "/down.go"
    log = d.dir + "/down.log"
    a = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done; exit 4" % go)
    b = submit(c, d, "echo B >> %s" % log, after=[a])
    ok = submit(c, d, "echo OK >> %s" % log, after=[a], after_any=True)
    wait_state(c, a, "running")
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    open(go, "w").close()
    # Wait for A's process to end (it is left to its monitor).
    poll(lambda: js.monitor_ended(d, a), what="job A to end while the daemon is down")
    d.start()
    c = Client(d.socket)
    assert wait_state(c, a, "exited")["exit_code"] == 4
    j = wait_state(c, b, "cancelled")
    assert j["end_reason"] == "dependency", j
    wait_state(c, ok, "exited")
    assert read(log).split() == ["OK"], read(log)
    c.close()


def rpc_error(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except RpcError as e:
        return e
    raise AssertionError("no error from %r" % (args,))


def sc_resubmit(d, m, c):
    """resubmit runs the same argv, cwd and environment (options too) as a
    new job; an attached job cannot be."""
    sub = d.dir + "/sub"
    os.mkdir(sub)
    p = {"argv": ["bash", "-c", 'echo "$PWD $SL_MARK $#" >> ../rs.out', "x"],
         "cwd": sub, "env": js.env_list(SL_MARK="mark-1"),
         "swap_budget_bytes": 1 << 30, "name": "again", "retry_on_breach": 2}
    a = c.call("submit", p)["id"]
    wait_state(c, a, "exited")
    r = c.call("resubmit", {"id": a})
    b = r["id"]
    assert b != a and r["resubmitted"] == a, r
    jb = wait_state(c, b, "exited")
    out = read(d.dir + "/rs.out").splitlines()
    assert out == ["%s mark-1 0" % sub] * 2, out
    ja = show(c, a)
    for k in ("name", "swap_budget_bytes", "retry_on_breach", "cwd", "argv",
              "wait_free_pct", "priority"):
        assert ja[k] == jb[k], (k, ja[k], jb[k])
    env_a = c.call("show", {"id": a, "env": True})["env"]
    env_b = c.call("show", {"id": b, "env": True})["env"]
    strip = [e for e in env_b if not e.startswith("STAGELOAD_JOB_ID=")]
    assert strip == [e for e in env_a if not e.startswith("STAGELOAD_JOB_ID=")]
    # The CLI prints the new id.
    out = ctl(d, "resubmit", str(a))
    assert out.returncode == 0, out
    wait_state(c, int(out.stdout), "exited")
    # An attached job's command ran in its client: not the daemon's to run.
    at = c.call("submit", {"argv": ["true"], "cwd": "/", "attached": True})["id"]
    e = rpc_error(c.call, "resubmit", {"id": at})
    assert e.code == -32005 and "attached" in e.message, e
    e = rpc_error(c.call, "resubmit", {"id": 424242})
    assert e.code == -32003, e


def sc_update(d, m, c):
    """update changes a queued job's options and so the order; submit's
    checks apply; only queued jobs."""
    m.set(free_pct=20)
    a = submit(c, d, "exec sleep 60", wait_free_pct=50, name="a")
    b = submit(c, d, "exec sleep 60", wait_free_pct=50, name="b")
    samples(d, 2)
    order = [j["id"] for j in c.call("status")["jobs"] if j["state"] == "queued"]
    assert order == [a, b], order
    j = c.call("update", {"id": b, "priority": 5})
    assert j["priority"] == 5 and j["position"] == 1, j
    order = [j["id"] for j in c.call("status")["jobs"] if j["state"] == "queued"]
    assert order == [b, a], order
    # the CLI: a lower wait-free lets a start now (it is behind b: b too)
    out = ctl(d, "update", str(b), "--wait-free", "10", "--swap-budget", "2G",
              "--expect", "1G")
    assert out.returncode == 0 and "updated" in out.stdout, out
    jb = wait_state(c, b, "running")
    assert jb["wait_free_pct"] == 10 and jb["swap_budget_bytes"] == 2 << 30, jb
    assert jb["expect_bytes"] == 1 << 30, jb
    assert show(c, a)["state"] == "queued"
    e = rpc_error(c.call, "update", {"id": b, "priority": 1})
    assert e.code == -32005 and "not queued" in e.message, e
    e = rpc_error(c.call, "update", {"id": a})
    assert e.code == -32602 and "nothing to update" in e.message, e
    e = rpc_error(c.call, "update", {"id": a, "wait_free_pct": 101})
    assert e.code == -32602, e
    out = ctl(d, "update", str(a))
    assert out.returncode == 2, out
    kinds = [e["kind"] for e in events_of(c, b)]
    assert kinds.count("updated") == 2, kinds
    for jid in (a, b):
        c.call("cancel", {"id": jid})


def sc_other_user(d, m, c):
    """Dependencies, holds, updates and resubmits are the owner's (root's
    for all but resubmit); submit's rules apply to another user."""
    if os.geteuid() != 0:
        print("note: not root, the other-user checks need a second uid")
        return
    os.chmod(d.dir, 0o755)
    m.set(free_pct=10)
    mine = submit(c, d, "exit 0", wait_free_pct=50)
    o = client_as(65534, d.socket)
    theirs = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                               "wait_free_pct": 50})["id"]
    e = rpc_error(o.call, "submit", {"argv": ["true"], "cwd": "/", "env": [],
                                     "after": [mine]})
    assert e.code == -32002 and "not yours" in e.message, e
    for method in ("hold", "release", "resubmit"):
        e = rpc_error(o.call, method, {"id": mine})
        assert e.code == -32002, (method, e)
    e = rpc_error(o.call, "update", {"id": mine, "priority": -1})
    assert e.code == -32002, e
    # their own: a priority above 0 is refused them, as at submit
    e = rpc_error(o.call, "update", {"id": theirs, "priority": 1})
    assert e.code == -32602 and "only root" in e.message, e
    assert o.call("update", {"id": theirs, "priority": -3})["priority"] == -3
    assert o.call("hold", {"id": theirs})["held"] is True
    # root may hold, release and update anyone's, but runs only its own
    assert c.call("release", {"id": theirs})["held"] is False
    assert c.call("update", {"id": theirs, "priority": 7})["priority"] == 7
    e = rpc_error(c.call, "resubmit", {"id": theirs})
    assert e.code == -32002 and "only its owner" in e.message, e
    # root may start after anyone's job
    after = submit(c, d, "exit 0", after=[theirs])
    assert show(c, after)["after"] == [theirs]
    # their on-end command runs as them
    for jid in (mine, theirs):  # and so `after`, by its dependency
        c.call("cancel", {"id": jid})
    assert wait_state(c, after, "cancelled")["end_reason"] == "dependency"
    hooked = o.call("submit", {"argv": ["true"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
                               "on_end": "echo hook-uid $(id -u)"})["id"]
    wait_state(c, hooked, "exited")
    poll(lambda: on_end_events(c, hooked), what="their on-end command")
    assert read_log(d, c, hooked) == "hook-uid 65534\n", read_log(d, c, hooked)
    o.close()
    os.chmod(d.dir, 0o700)


def sc_submit_command(d, m, c):
    """submit of a command that cannot start fails at once, as run does,
    and queues nothing; a found one (PATH, or a path from the current
    directory) is queued."""
    before = c.call("status", {"all": True})["jobs"]
    for argv, code, words in ((["/nonexistent"], 127, "command not found"),
                              (["no-such-command-xyz", "a"], 127, "command not found"),
                              (["./here"], 127, "command not found")):
        out = ctl(d, "submit", "--", *argv)
        assert out.returncode == code and words in out.stderr, (argv, out)
        assert "no job was queued" in out.stderr and out.stdout == "", out
    noexec = d.dir + "/noexec"
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(noexec, 0o644)
    out = ctl(d, "submit", "--", noexec)
    assert out.returncode == 126 and "permission denied" in out.stderr, out
    assert c.call("status", {"all": True})["jobs"] == before
    # found from the current directory, and along a relative PATH element
    here = d.dir + "/here"
    with open(here, "w") as f:
        f.write("#!/bin/sh\necho here-ran\n")
    os.chmod(here, 0o755)
    for argv, path in ((["./here"], os.environ["PATH"]),
                       (["here"], "bin-none:.:" + os.environ["PATH"])):
        out = subprocess.run([CTL, "--socket", d.socket, "submit", "--"] + argv,
                             capture_output=True, text=True, timeout=30,
                             cwd=d.dir, env=dict(os.environ, PATH=path))
        assert out.returncode == 0, out
        wait_state(c, int(out.stdout), "exited")
        assert "here-ran" in read_log(d, c, int(out.stdout))


def read_log(d, c, jid):
    out = ctl(d, "logs", str(jid))
    assert out.returncode == 0, out
    return out.stdout


def sc_shell(d, m, c):
    """submit --shell runs the words as one /bin/sh -c script."""
    out = ctl(d, "submit", "--shell", "--", "echo abc | tr a-c x-z;", "echo", "$((1+2))")
    assert out.returncode == 0, out
    jid = int(out.stdout)
    j = wait_state(c, jid, "exited")
    assert j["argv"] == ["/bin/sh", "-c", "echo abc | tr a-c x-z; echo $((1+2))"], j
    assert read_log(d, c, jid).split() == ["xyz", "3"], read_log(d, c, jid)


def sc_python_unbuffered(d, m, c):
    """A detached Python job's print reaches logs -f while it runs: the CLI
    (libstageload) sends PYTHONUNBUFFERED=1 unless the submitter set it."""
    go = d.dir + "/py.go"
    prog = ("import os, time\nprint('first line')\n"
            "while not os.path.exists(%r): time.sleep(0.05)\nprint('last')\n" % go)
    # Whatever the environment running this test sets.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run([CTL, "--socket", d.socket, "submit", "--",
                          sys.executable, "-c", prog],
                         capture_output=True, text=True, timeout=30, env=clean)
    assert out.returncode == 0, out
    jid = int(out.stdout)
    f = subprocess.Popen([CTL, "--socket", d.socket, "logs", "-f", str(jid)],
                         stdout=subprocess.PIPE, text=True)
    try:
        # Bounded: a buffered print would come only once the job ends,
        # and it ends only after the line is seen.
        ready, _, _ = select.select([f.stdout], [], [], 10)
        assert ready, "no output from logs -f within 10 s while the job runs"
        line = f.stdout.readline()
        assert line == "first line\n", line
        assert show(c, jid)["state"] == "running", show(c, jid)
        open(go, "w").close()
        assert f.stdout.readline() == "last\n"
        assert f.wait(timeout=20) == 0
    finally:
        if f.poll() is None:
            f.kill()
            f.wait()
        f.stdout.close()
    env = c.call("show", {"id": jid, "env": True})["env"]
    assert "PYTHONUNBUFFERED=1" in env, env
    # The submitter's own setting is kept.
    out = subprocess.run([CTL, "--socket", d.socket, "submit", "--", "true"],
                         capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, PYTHONUNBUFFERED=""))
    env = c.call("show", {"id": int(out.stdout), "env": True})["env"]
    assert "PYTHONUNBUFFERED=" in env and "PYTHONUNBUFFERED=1" not in env, env


def queued_ids(c):
    return [j["id"] for j in c.call("status")["jobs"] if j["state"] == "queued"]


def sc_groups(d, m, c):
    """A group at its limit holds its jobs (waiting_for group, keeping
    their places) while another group's run; a SIGHUP'd limit applies."""
    g1 = submit(c, d, "exec sleep 60", group="gpu", name="g1")
    wait_state(c, g1, "running")
    g2 = submit(c, d, "exec sleep 60", group="gpu", name="g2")
    c1 = submit(c, d, "exec sleep 60", group="cpu", name="c1")
    c2 = submit(c, d, "exec sleep 60", group="cpu", name="c2")
    c3 = submit(c, d, "exec sleep 60", group="cpu", name="c3")
    free = submit(c, d, "exec sleep 60", group="other", name="free")
    for jid in (c1, c2, free):
        wait_state(c, jid, "running")
    samples(d, 3)
    j = show(c, g2)
    assert j["state"] == "queued" and j["waiting_for"] == "group", j
    assert j["group"] == "gpu" and j["position"] == 1, j
    assert show(c, c3)["waiting_for"] == "group", show(c, c3)
    assert queued_ids(c) == [g2, c3], queued_ids(c)
    assert c.call("info")["waiting_for"] == {"group": 2}, c.call("info")
    out = ctl(d, "show", str(g2))
    assert "its group already has as many jobs running" in out.stdout, out.stdout
    # stageloadctl status --group
    out = ctl(d, "status", "--group", "gpu")
    assert out.returncode == 0, out
    ids = [int(line.split()[0]) for line in out.stdout.splitlines()[1:]]
    assert ids == [g1, g2], out.stdout
    out = ctl(d, "--json", "status", "-g", "cpu")
    import json
    assert [j["id"] for j in json.loads(out.stdout)["jobs"]] == [c1, c2, c3], out
    # one gpu job ends: the next one starts
    c.call("cancel", {"id": g1})
    wait_state(c, g2, "running")
    assert show(c, c3)["state"] == "queued"
    # a higher limit, read again at SIGHUP, lets c3 start
    with open(os.path.join(d.dir, "stageload.conf"), "a") as f:
        f.write("group.cpu.max_running = 3\n")
    d.proc.send_signal(signal.SIGHUP)
    wait_state(c, c3, "running")
    for jid in (g2, c1, c2, c3, free):
        c.call("cancel", {"id": jid})
    for bad in ("", "a b", "x" * 33, "é"):
        e = rpc_error(submit, c, d, "true", group=bad)
        assert e.code == -32602 and "group" in e.message, (bad, e)
    # A bad group key stops the daemon at start, naming it.
    bad_conf = os.path.join(d.dir, "bad.conf")
    for line, words in (("group.gpu.max_jobs = 1", "group.NAME.max_running"),
                        ("group.a b.max_running = 1", "letters, digits"),
                        ("group.gpu.max_running = -1", "group.gpu.max_running")):
        with open(bad_conf, "w") as f:
            f.write(line + "\n")
        out = subprocess.run([os.path.join(os.path.dirname(CTL), "stageloadd"),
                              "--config", bad_conf, "--socket",
                              os.path.join(d.dir, "bad.sock"), "--db",
                              os.path.join(d.dir, "bad.db")],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 2 and words in out.stderr, (line, out)


def hold_rows(c, jid):
    return [e for e in c.call("events", {"job_id": jid, "limit": 10000})["events"]
            if e["kind"] in ("held", "released")]


def sc_hold_spam(d, m, c):
    """Holds and releases past 60 in a uid's minute still act, but are
    written as one event, counted, when the minute ends (here: at the
    daemon's stop); another uid's keep their own events."""
    q = submit(c, d, "exit 0", wait_free_pct=95)
    for i in range(200):
        r = c.call("release" if i % 2 else "hold", {"id": q})
        assert r["held"] is (i % 2 == 0), (i, r)
    assert show(c, q)["held"] is False
    rows = hold_rows(c, q)
    assert len(rows) == 60 and all(e["detail"] is None for e in rows), len(rows)
    if os.geteuid() == 0:
        os.chmod(d.dir, 0o755)
        o = client_as(65534, d.socket)
        theirs = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                   "wait_free_pct": 95})["id"]
        assert o.call("hold", {"id": theirs})["held"] is True
        assert [e["kind"] for e in hold_rows(c, theirs)] == ["held"]
        o.close()
        os.chmod(d.dir, 0o700)
    c.close()
    assert d.stop() == 0
    d.start()
    c = Client(d.socket)
    rows = hold_rows(c, q)
    assert len(rows) == 61, len(rows)
    last = rows[-1]
    assert last["kind"] == "released", last
    det = last["detail"]
    assert det["count"] == 140 and det["held"] == 70 and det["released"] == 70, det
    assert det["since_ms"] <= det["until_ms"], det
    assert show(c, q)["held"] is False
    c.call("cancel", {"id": q})
    c.close()


def sc_group_share(d, m, c):
    """In a limited group, a user holding half its slots (rounded up) gets
    no more while another user's job in it waits: waiting_for group, passed
    over; alone in the group again, it may take the rest."""
    if os.geteuid() != 0:
        print("note: not root, the group share needs two other uids")
        return
    os.chmod(d.dir, 0o755)
    a = client_as(65534, d.socket)
    b = client_as(65533, d.socket)

    def job(cl, **opts):
        p = {"argv": ["sleep", "60"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
             "group": "gpu"}
        p.update(opts)
        return cl.call("submit", p)["id"]

    # b's job waits in the group (for free memory), behind a's by priority.
    b1 = job(b, priority=-1, wait_free_pct=90)
    a1, a2, a3 = job(a), job(a), job(a)
    for jid in (a1, a2):
        wait_state(c, jid, "running")
    samples(d, 3)
    j = show(c, a3)
    assert j["state"] == "queued" and j["waiting_for"] == "group", j
    assert show(c, b1)["waiting_for"] == "free", show(c, b1)
    assert queued_ids(c) == [a3, b1], queued_ids(c)
    # b's job starts; nobody else waits in the group: a's third may start.
    m.set(free_pct=95)
    wait_state(c, b1, "running")
    wait_state(c, a3, "running")
    # The group is full (4): a fourth of a's waits for the group as before.
    a4 = job(a)
    samples(d, 2)
    assert show(c, a4)["waiting_for"] == "group", show(c, a4)
    for jid in (a1, a2, a3, a4, b1):
        c.call("cancel", {"id": jid})
    # A job of b's that could not start anyway (held, or after a job of
    # b's still queued) keeps no one to half the group.
    bh = job(b, held=True)
    bq = job(b, group="other")
    ba = job(b, after=[bq])
    more = [job(a) for _ in range(3)]
    samples(d, 3)
    for jid in more:
        wait_state(c, jid, "running")
    assert show(c, ba)["waiting_for"] == "after %d" % bq, show(c, ba)
    # ba before bq: bq's cancel would end ba too ("dependency")
    for jid in more + [bh, ba, bq]:
        c.call("cancel", {"id": jid})
    a.close()
    b.close()
    os.chmod(d.dir, 0o700)


GIB = 1 << 30


def sc_wait_free_size(d, m, c):
    """--wait-free 6G waits until 6 GiB are available (free % x total, the
    fixture's 16 GiB), and is admitted at the first sample that shows it;
    memory promised to running jobs (--expect) counts as used."""
    m.set(free_pct=30)  # 4.8 GiB available
    samples(d, 2)
    out = ctl(d, "submit", "--wait-free", "6G", "--", "bash", "-c", "exec sleep 60")
    assert out.returncode == 0, out
    jid = int(out.stdout)
    samples(d, 3)
    j = show(c, jid)
    assert j["state"] == "queued" and j["waiting_for"] == "free", j
    assert j["wait_free_bytes"] == 6 * GIB and j["wait_free_pct"] == 0, j
    m.set(free_pct=37)  # 5.92 GiB: not yet
    samples(d, 3)
    assert show(c, jid)["state"] == "queued"
    t_rise = m.set(free_pct=40, sync=False)  # 6.4 GiB
    j = wait_state(c, jid, "running")
    adm = [e for e in events_of(c, jid) if e["kind"] == "admitted"][0]["detail"]
    assert abs(adm["free_pct"] - 40) < 0.01 and adm["wait_free_bytes"] == 6 * GIB, adm
    first = js.first_sample(c, t_rise - 2 * js.INTERVAL_MS,
                            lambda b: b["free_pct"]["max"] >= 37.5)
    assert first == adm["sampled_at_ms"], (first, adm)
    c.call("cancel", {"id": jid})
    wait_state(c, jid, "killed")
    # With a promise: 2 GiB expected by a running job count as used.
    m.set(free_pct=80)
    holder = submit(c, d, "exec sleep 60", expect_bytes=2 * GIB)
    wait_state(c, holder, "running")
    m.set(free_pct=45)  # 7.2 GiB available, 5.2 once 2 GiB are promised
    w = submit(c, d, "exec sleep 60", wait_free_bytes=6 * GIB)
    samples(d, 3)
    assert show(c, w)["waiting_for"] == "expect", show(c, w)
    m.set(free_pct=51)  # 8.16 GiB, 6.16 once promised
    wait_state(c, w, "running")
    # never: above the machine's total memory
    e = rpc_error(submit, c, d, "true", wait_free_bytes=17 * GIB)
    assert e.code == -32602 and "total memory" in e.message, e
    # the command line checks it first, in its own words: a usage error
    out = ctl(d, "submit", "--wait-free", "17G", "--", "true")
    assert out.returncode == 2 and "--wait-free 17G is above the machine's total memory " \
        "(16G)" in out.stderr, out
    # update: a size replaces a percentage and back
    m.set(free_pct=10)
    q = submit(c, d, "true", wait_free_pct=50)
    out = ctl(d, "update", str(q), "--wait-free", "8G")
    assert out.returncode == 0, out
    j = show(c, q)
    assert j["wait_free_bytes"] == 8 * GIB and j["wait_free_pct"] == 0, j
    j = c.call("update", {"id": q, "wait_free_pct": 20})
    assert j["wait_free_bytes"] == 0 and j["wait_free_pct"] == 20, j
    for jid in (holder, w, q):
        c.call("cancel", {"id": jid})


def sc_wait_notify(d, m, c):
    """wait --notify posts a desktop notification as the job ends
    (notify-send on Linux, here a stand-in on PATH that records its
    arguments); without a notifier it says so and still exits with the
    job's status."""
    fake = os.path.join(d.dir, "fakebin")
    os.mkdir(fake)
    rec = os.path.join(d.dir, "notified")
    with open(os.path.join(fake, "notify-send"), "w") as f:
        f.write('#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done >> %s\n' % rec)
    os.chmod(os.path.join(fake, "notify-send"), 0o755)
    jid = submit(c, d, "exit 3", name="gen\x1b[31m")
    env = dict(os.environ, PATH=fake + ":" + os.environ["PATH"])
    out = subprocess.run([CTL, "--socket", d.socket, "wait", "--notify", str(jid)],
                         capture_output=True, text=True, timeout=30, env=env)
    assert out.returncode == 3, out
    args = read(rec).splitlines()
    assert args[-2:] == ["stageload", "job %d (gen\\e[31m): exited 3" % jid], args
    # no notifier anywhere on PATH: a clear message, the same status
    env = dict(os.environ, PATH="/nonexistent")
    out = subprocess.run([CTL, "--socket", d.socket, "wait", "-n", str(jid)],
                         capture_output=True, text=True, timeout=30, env=env)
    assert out.returncode == 3, out
    assert "no desktop notification for job %d: notify-send not found" % jid in out.stderr, out


ON_END = ('echo "on-end $STAGELOAD_JOB_ID $STAGELOAD_JOB_STATE '
          '[$STAGELOAD_JOB_EXIT_CODE] [$STAGELOAD_JOB_END_REASON] $(pwd)"; '
          'echo ran >> %s/on-end.count')


def on_end_events(c, jid):
    return [e["detail"] for e in events_of(c, jid) if e["kind"] == "on_end"]


def sc_on_end(d, m, c):
    """--on-end runs once, as the submitter, in the job's directory with its
    environment and the job's id, state, exit code and end reason; its
    output is appended to the job's log; a cancelled job's runs too."""
    sub = d.dir + "/w"
    os.mkdir(sub)
    out = subprocess.run([CTL, "--socket", d.socket, "submit", "--on-end",
                          ON_END % d.dir, "--", "sh", "-c", "echo job-output; exit 3"],
                         capture_output=True, text=True, timeout=30, cwd=sub)
    assert out.returncode == 0, out
    jid = int(out.stdout)
    assert show(c, jid)["on_end"] == ON_END % d.dir
    wait_state(c, jid, "exited")
    poll(lambda: on_end_events(c, jid), what="the on-end command to end")
    assert on_end_events(c, jid) == [{"exit_code": 0}], on_end_events(c, jid)
    log = read_log(d, c, jid)
    assert log == "job-output\non-end %d exited [3] [] %s\n" % (jid, sub), log
    # a job cancelled in the queue
    m.set(free_pct=10)
    q = submit(c, d, "true", wait_free_pct=50, on_end=ON_END % d.dir)
    c.call("cancel", {"id": q})
    poll(lambda: on_end_events(c, q), what="the cancelled job's on-end")
    assert read_log(d, c, q) == "on-end %d cancelled [] [cancel] %s\n" % (q, d.dir)
    samples(d, 5)
    assert read(d.dir + "/on-end.count").split() == ["ran", "ran"]
    # refused: empty, attached, too long
    for p in ({"on_end": ""}, {"on_end": "x" * 4097}):
        e = rpc_error(submit, c, d, "true", **p)
        assert e.code == -32602 and "on_end" in e.message, (p, e)
    e = rpc_error(c.call, "submit", {"argv": ["true"], "cwd": "/",
                                     "attached": True, "on_end": "true"})
    assert e.code == -32602 and "detached" in e.message, e


def sc_on_end_timeout(d, m, c):
    """An on-end command past on_end_timeout is ended, with a line in the
    job's log."""
    jid = submit(c, d, "exit 0", on_end="echo hook-start; trap '' TERM; sleep 30")
    wait_state(c, jid, "exited")
    ev = poll(lambda: on_end_events(c, jid), timeout=15,
              what="the on-end command to be ended")
    assert ev == [{"signal": 9}], ev
    log = read_log(d, c, jid)
    assert log.startswith("hook-start\nstageload: on-end command still running "
                          "after 1000 ms (on_end_timeout): terminated"), log


def sc_on_end_not_while_down(d, m, c):
    """A job that ends while no daemon runs: its on-end command is not
    run, and the event says so."""
    go = d.dir + "/down.go"
    jid = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done" % go,
                 on_end=ON_END % d.dir)
    wait_state(c, jid, "running")
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    open(go, "w").close()
    import glob

    def ended():
        for f in glob.glob(d.dir + "/**/%d.status" % jid, recursive=True):
            if "ended_ms" in read(f) and "ended_ms 0" not in read(f):
                return True
        return False
    poll(ended, what="the job to end while the daemon is down")
    d.start()
    c = Client(d.socket)
    wait_state(c, jid, "exited")
    ev = poll(lambda: on_end_events(c, jid), what="the on_end event")
    assert ev == [{"not_run": "the job ended while no daemon ran"}], ev
    samples(d, 5)
    assert read(d.dir + "/on-end.count") == ""
    c.close()


def sc_on_end_per_uid(d, m, c):
    """At most max_on_end_per_uid on-end commands of one user run at once;
    one past it is not run, and its event says why. Root is exempt."""
    if os.geteuid() != 0:
        print("note: not root, the per-uid bound needs a second uid")
        return
    os.chmod(d.dir, 0o755)
    o = client_as(65534, d.socket)
    p = {"argv": ["true"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
         "on_end": "sleep 2"}
    a = o.call("submit", p)["id"]
    wait_state(c, a, "exited")
    b = o.call("submit", p)["id"]
    wait_state(c, b, "exited")
    ev = poll(lambda: on_end_events(c, b), what="b's on_end event")
    assert ev == [{"not_run": "too many of this user's on-end commands "
                              "running (max_on_end_per_uid)"}], ev
    assert on_end_events(c, a) == []  # still running
    # root's are not counted
    r1 = submit(c, d, "true", on_end="sleep 2")
    r2 = submit(c, d, "true", on_end="true")
    wait_state(c, r2, "exited")
    assert poll(lambda: on_end_events(c, r2)) == [{"exit_code": 0}]
    # the hooks still running end on their own: wait for them
    poll(lambda: on_end_events(c, a), what="a's on-end command to end")
    poll(lambda: on_end_events(c, r1), what="r1's on-end command to end")
    o.close()
    os.chmod(d.dir, 0o700)


def sc_attached_after(d, m, c):
    """An attached job may wait for others too: its client hears
    waiting_for "after N" in its queue notifications, and is admitted once
    N exited 0."""
    go = d.dir + "/att.go"
    a = submit(c, d, "while [ ! -e %s ]; do sleep 0.05; done" % go)
    wait_state(c, a, "running")
    r = Client(d.socket)
    jid = r.call("submit", {"argv": ["true"], "cwd": "/", "attached": True,
                            "after": [a]})["id"]
    n = r.notification("queue", timeout=5)["params"]
    assert n["id"] == jid and n["waiting_for"] == "after %d" % a, n
    open(go, "w").close()
    n = r.notification("admitted", timeout=10)["params"]
    assert n["id"] == jid, n
    r.close()


SCENARIOS = [
    ("chain", sc_chain, {}),
    ("chain_failed", sc_chain_failed, {}),
    ("cancelled_dep", sc_cancelled_dep, {}),
    ("submit_checks", sc_submit_checks, {}),
    ("hold_release", sc_hold_release, {}),
    ("cli_after", sc_cli_after, {}),
    ("dep_failed_while_down", sc_dep_failed_while_down, {}),
    ("attached_after", sc_attached_after, {}),
    ("resubmit", sc_resubmit, {}),
    ("update", sc_update, {}),
    ("other_user", sc_other_user, {}),
    ("submit_command", sc_submit_command, {}),
    ("shell", sc_shell, {}),
    ("python_unbuffered", sc_python_unbuffered, {}),
    ("wait_free_size", sc_wait_free_size, {}),
    ("wait_notify", sc_wait_notify, {}),
    ("on_end", sc_on_end, {}),
    ("on_end_timeout", sc_on_end_timeout, {"extra_conf": "on_end_timeout = 1s\n"}),
    ("on_end_not_while_down", sc_on_end_not_while_down, {}),
    ("on_end_per_uid", sc_on_end_per_uid, {"extra_conf": "max_on_end_per_uid = 1\n"}),
    ("groups", sc_groups, {"extra_conf": "group.gpu.max_running = 1\n"
                                         "group.cpu.max_running = 2\n"}),
    ("hold_spam", sc_hold_spam, {}),
    ("group_share", sc_group_share, {"extra_conf": "group.gpu.max_running = 4\n"}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
