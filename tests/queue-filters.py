"""Job filters and bulk actions through the fixture proc root: status and
events with user, mine, state and name (daemon-side, paged with small
pages over more than a page, live and ended jobs), status's time
columns, cancel_matching (cancel --all, --all-users, --name, --state) as
root and as another user, and wait --all. PROTOCOL.md, "Job filters".

Run one scenario with: queue-filters.py NAME...
"""

import os
import re
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, RpcError, client_as, poll, scenarios, users_bin  # noqa: E402

js = scenarios()
submit, show, wait_state = js.submit, js.show, js.wait_state

BIN = os.environ.get("SL_BIN", "build/bin")
CTL = os.path.join(BIN, "stageloadctl")
NOBODY = 65534


def ctl(d, *args, user=None):
    """stageloadctl; as user, a copy every user can run (users_bin)."""
    if user is None:
        return subprocess.run([CTL, "--socket", d.socket] + list(args),
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    ubin = users_bin(BIN)
    try:
        env = dict(os.environ, LD_LIBRARY_PATH=ubin)
        return subprocess.run(
            ["setpriv", "--reuid", str(user), "--regid", str(user),
             "--clear-groups", os.path.join(ubin, "stageloadctl"),
             "--socket", d.socket] + list(args),
            capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL, env=env)
    finally:
        shutil.rmtree(ubin, ignore_errors=True)


def rpc_error(fn, *args):
    try:
        fn(*args)
    except RpcError as e:
        return e
    raise AssertionError("no error from %r" % (args,))


def pages(c, method, params, member):
    """Every page of a version 2 list, by its cursors; (items, pages)."""
    items, n, cursor = [], 0, None
    while True:
        p = dict(params)
        if cursor is not None:  # the cursor says where, alone
            p.pop("after_id", None)
            p.pop("before_id", None)
            p["cursor"] = cursor
        r = c.call(method, p)
        items += r[member]
        n += 1
        cursor = r["next_cursor"]
        if cursor is None:
            return items, n
        assert n < 10000, "no end to the pages"


def ids(jobs):
    return sorted(j["id"] for j in jobs)


def need_other_user(d):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("note: not root or no setpriv: the other-user checks are "
              "skipped")
        return False
    os.chmod(d.dir, 0o755)
    return True


def queue(c, d, name, n):
    """n jobs named name-I, held in the queue by their wait_free_pct."""
    return [submit(c, d, "exit 0", name="%s-%d" % (name, i),
                   wait_free_pct=50) for i in range(n)]


def sc_status_filters(d, m, c):
    """Each filter, and together, over live and ended jobs, paged 3 at a
    time through many more that the filter passes over."""
    m.set(free_pct=10)
    other = need_other_user(d)
    sweep = queue(c, d, "sweep", 20)
    rest = queue(c, d, "rest", 90)
    theirs = []
    if other:
        o = client_as(NOBODY, d.socket)
        theirs = [o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                    "name": "sweep-x", "wait_free_pct": 50})["id"]]
    c2 = Client(d.socket, version=2)
    got, n = pages(c2, "status", {"name": "sweep-*", "limit": 3}, "jobs")
    assert ids(got) == sorted(sweep + theirs), got
    assert n >= 7, n
    got, _ = pages(c2, "status", {"name": "sweep-1?", "limit": 3}, "jobs")
    assert ids(got) == sorted(sweep[10:]), ids(got)
    got, _ = pages(c2, "status", {"name": "sweep-[12]", "limit": 1}, "jobs")
    assert ids(got) == sweep[1:3], ids(got)
    got, _ = pages(c2, "status", {"mine": True, "limit": 7}, "jobs")
    assert ids(got) == sorted(sweep + rest), len(got)
    got, _ = pages(c2, "status", {"state": ["running", "admitted"]}, "jobs")
    assert got == [], got
    if other:
        got, _ = pages(c2, "status", {"user": "nobody", "limit": 2}, "jobs")
        assert ids(got) == theirs, got
        got, _ = pages(c2, "status", {"user": str(NOBODY)}, "jobs")
        assert ids(got) == theirs, got
    # Ended jobs: 90 cancelled "rest" and 5 cancelled "sweep", read from
    # the database, the filter passing over more than a chunk of them.
    r = c.call("cancel_matching", {"name": "rest-*"})
    assert r["cancelled"] == 90 and sorted(r["ids"]) == sorted(rest), r
    r = c.call("cancel_matching", {"name": "sweep-1[0-4]"})
    assert sorted(r["ids"]) == sweep[10:15], r
    poll(lambda: all(show(c, j)["state"] == "cancelled" for j in sweep[10:15]))
    got, n = pages(c2, "status", {"name": "sweep-*", "state": ["cancelled"],
                                  "limit": 2}, "jobs")
    assert ids(got) == sweep[10:15] and n >= 3, (ids(got), n)
    # A state that is an end reads the ended jobs without all.
    got, _ = pages(c2, "status", {"state": ["cancelled"], "limit": 25}, "jobs")
    assert ids(got) == sorted(rest + sweep[10:15]), len(got)
    # Live and ended together, newest ended first after the live ones.
    got, _ = pages(c2, "status", {"name": "sweep-*", "all": True, "limit": 4},
                   "jobs")
    assert ids(got) == sorted(sweep + theirs), ids(got)
    live = [j["id"] for j in got if j["state"] == "queued"]
    assert [j["id"] for j in got[:len(live)]] == live, got
    if other:
        got, _ = pages(c2, "status", {"user": "nobody", "all": True}, "jobs")
        assert ids(got) == theirs, got
    # Version 1 takes them too: one answer.
    got = c.call("status", {"name": "sweep-1*", "all": True})["jobs"]
    assert ids(got) == sorted([sweep[1]] + sweep[10:]), ids(got)
    # Refusals.
    for params, words in (({"user": "nosuchuser-sl"}, "no such user"),
                          ({"state": ["sleeping"]}, "no state 'sleeping'"),
                          ({"user": "root", "mine": True}, "cannot go together"),
                          ({"state": "queued"}, "")):
        e = rpc_error(c2.call, "status", params)
        assert e.code == -32602 and words in e.message, (params, e)
    # The CLI: the same filters, and exit 2 for a user nobody has.
    out = ctl(d, "status", "--name", "sweep-1*", "--state", "cancelled,queued",
              "-o", "id,name,submitted,ended,group,priority,state")
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["ID", "NAME", "SUBMITTED", "ENDED",
                                "GROUP", "PRIORITY", "STATE"], lines[0]
    assert sorted(int(x.split()[0]) for x in lines[1:]) == sorted(
        [sweep[1]] + sweep[10:]), lines
    for line in lines[1:]:
        f = line.split()
        assert re.fullmatch(r"\d\d:\d\d:\d\d", f[2]), line  # today's
        assert f[4] == "-" and f[5] == "0", line
        if f[6] == "cancelled":
            assert re.fullmatch(r"\d\d:\d\d:\d\d", f[3]), line
        else:
            assert f[3] == "-", line
    out = ctl(d, "--json", "status", "--mine", "--state", "queued")
    assert out.returncode == 0, out
    import json
    got = json.loads(out.stdout)["jobs"]
    assert ids(got) == sorted(sweep[:10] + sweep[15:]), ids(got)
    assert all(isinstance(j["submitted_at_ms"], int) for j in got)
    for cmd in ("status", "events"):
        out = ctl(d, cmd, "--user", "nosuchuser-sl")
        assert out.returncode == 2 and "no such user" in out.stderr, out
    out = ctl(d, "status", "--state", "sleeping")
    assert out.returncode == 2 and "no state 'sleeping'" in out.stderr, out
    out = ctl(d, "status", "--name", "nothing-*")
    assert out.returncode == 0 and out.stdout == "no jobs match\n", out
    if other:
        out = ctl(d, "status", "-u", "nobody", "-o", "id,user")
        assert out.stdout.split()[2:] == [str(theirs[0]), "nobody"], out


def sc_events_filters(d, m, c):
    """events by user, name and state (the kinds by which jobs entered
    it), paged, and followed: a follow sends only what passes."""
    m.set(free_pct=10)
    other = need_other_user(d)
    sweep = queue(c, d, "sweep", 4)
    rest = queue(c, d, "rest", 40)
    c.call("cancel_matching", {"name": "rest-*"})
    c.call("cancel_matching", {"name": "sweep-[01]"})
    theirs = None
    if other:
        o = client_as(NOBODY, d.socket)
        theirs = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                   "name": "theirs"})["id"]
    m.set(free_pct=80)
    for j in sweep[2:]:
        wait_state(c, j, "exited")
    c2 = Client(d.socket, version=2)
    got, n = pages(c2, "events", {"name": "sweep-*", "limit": 2}, "events")
    assert {e["job_id"] for e in got} == set(sweep), got
    assert n > 2, n
    kinds = sorted(e["kind"] for e in got)
    assert kinds.count("submitted") == 4 and kinds.count("cancelled") == 2, kinds
    got, _ = pages(c2, "events", {"name": "sweep-*", "state": ["cancelled"],
                                  "limit": 1}, "events")
    assert sorted(e["job_id"] for e in got) == sweep[:2], got
    assert {e["kind"] for e in got} == {"cancelled"}, got
    got, _ = pages(c2, "events", {"state": ["running", "exited"], "name": "sweep-*"},
                   "events")
    assert sorted((e["job_id"], e["kind"]) for e in got) == sorted(
        [(j, "started") for j in sweep[2:]] + [(j, "exited") for j in sweep[2:]]), got
    # newest first, the same events in the other order
    new, _ = pages(c2, "events", {"name": "sweep-*", "before_id": 1 << 53,
                                  "limit": 3}, "events")
    old, _ = pages(c2, "events", {"name": "sweep-*"}, "events")
    assert [e["id"] for e in new] == [e["id"] for e in reversed(old)], (new, old)
    if other:
        got, _ = pages(c2, "events", {"user": "nobody", "limit": 1}, "events")
        assert got and {e["job_id"] for e in got} == {theirs}, got
        got, _ = pages(c2, "events", {"mine": True}, "events")
        assert theirs not in {e["job_id"] for e in got}, got
        assert None not in {e["job_id"] for e in got}  # daemon's own: no user
    # version 1: one answer, up to limit of those that pass
    got = c.call("events", {"name": "rest-*", "state": ["cancelled"],
                            "limit": 30})["events"]
    assert len(got) == 30 and {e["kind"] for e in got} == {"cancelled"}, got
    # A follow sends what passes alone.
    f = Client(d.socket, version=2)
    last = c2.call("events", {"before_id": 1 << 53, "limit": 1})["events"][0]["id"]
    f.call("events", {"after_id": last, "follow": True, "name": "keep-*"})
    drop = submit(c, d, "exit 0", name="drop-1")
    keep = submit(c, d, "exit 0", name="keep-1")
    wait_state(c, keep, "exited")
    wait_state(c, drop, "exited")
    seen = []
    while not any(e["kind"] == "exited" for e in seen):
        seen.append(f.notification("event", timeout=5)["params"])
    assert {e["job_id"] for e in seen} == {keep}, seen
    # The CLI passes them to the daemon.
    out = ctl(d, "events", "-n", "100", "--name", "sweep-*", "--state", "cancelled")
    assert out.returncode == 0, out
    lines = [x for x in out.stdout.splitlines() if x.strip()]
    assert len(lines) == 2 and all("cancelled" in x for x in lines), out.stdout
    out = ctl(d, "events", "--after", "0", "--limit", "3", "--name", "sweep-*")
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 3, out


def sc_bulk_cancel(d, m, c):
    """cancel_matching: a user's touches only theirs; all_users is root's;
    state queued leaves running jobs; the CLI says how many and asks
    nothing."""
    m.set(free_pct=10)
    other = need_other_user(d)
    run = submit(c, d, "sleep 60", name="runner")
    wait_state(c, run, "running")
    mine = queue(c, d, "mine", 3)
    if other:
        o = client_as(NOBODY, d.socket)
        theirs = [o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                    "name": "theirs-%d" % i,
                                    "wait_free_pct": 50})["id"] for i in range(3)]
        # theirs alone, whatever the filter says
        e = rpc_error(o.call, "cancel_matching", {"all_users": True})
        assert e.code == -32002 and "root only" in e.message, e
        e = rpc_error(o.call, "cancel_matching", {"user": "root"})
        assert e.code == -32002, e
        r = o.call("cancel_matching", {"name": "theirs-0"})
        assert r == {"cancelled": 1, "ids": [theirs[0]]}, r
        r = o.call("cancel_matching", {})
        assert r["cancelled"] == 2 and sorted(r["ids"]) == theirs[1:], r
        assert all(show(c, j)["state"] == "queued" for j in mine)
        assert show(c, run)["state"] == "running"
        # The CLI as them: --all-users is refused (77).
        again = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                  "name": "again", "wait_free_pct": 50})["id"]
        out = ctl(d, "cancel", "--all-users", user=NOBODY)
        assert out.returncode == 77 and "root only" in out.stderr, out
        out = ctl(d, "cancel", "--all", user=NOBODY)
        assert out.returncode == 0 and out.stdout == "cancelled 1 job\n", out
        assert show(c, again)["state"] == "cancelled"
    # root: --state queued leaves the running one
    out = ctl(d, "cancel", "--state", "queued")
    assert out.returncode == 0 and out.stdout == "cancelled 3 jobs\n", out
    for j in mine:
        assert show(c, j)["state"] == "cancelled", j
    assert show(c, run)["state"] == "running"
    out = ctl(d, "cancel", "--name", "nothing-*")
    assert out.returncode == 0 and out.stdout == "cancelled 0 jobs\n", out
    # usage: ids and a filter are not both; bare cancel asks which
    for args in (("cancel",), ("cancel", "--all", str(run)),
                 ("cancel", "--all-users", "--user", "root")):
        out = ctl(d, *args)
        assert out.returncode == 2, (args, out)
    if other:
        theirs = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                   "name": "late", "wait_free_pct": 50})["id"]
        # root's --all is root's own; --all-users everyone's
        out = ctl(d, "--json", "cancel", "--all")
        import json
        r = json.loads(out.stdout)
        assert r == {"cancelled": 1, "ids": [run]}, out
        assert show(c, theirs)["state"] == "queued"
        r = c.call("cancel_matching", {"all_users": True})
        assert r == {"cancelled": 1, "ids": [theirs]}, r
    else:
        r = c.call("cancel_matching", {"all_users": True})
        assert r["ids"] == [run], r
    wait_state(c, run, "killed")


def sc_wait_all(d, m, c):
    """wait --all waits for every live job of the caller's, and exits as
    wait does for several; a bare wait stays a usage error."""
    # Both held: wait --all lists the live jobs first, then says on
    # stderr that the first it waits for is held (a line, its output not
    # being a terminal), so both are on its list before either can end.
    a = submit(c, d, "exit 0", held=True)
    b = submit(c, d, "exit 3", held=True)
    out = ctl(d, "wait")
    assert out.returncode == 2, out
    out = ctl(d, "wait", "--all", str(a))
    assert out.returncode == 2, out
    p = subprocess.Popen([CTL, "--socket", d.socket, "wait", "--all"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    errs = []
    reader = threading.Thread(target=lambda: errs.extend(p.stderr),
                              daemon=True)
    reader.start()
    try:
        poll(lambda: any("held" in e for e in errs),
             what="wait --all to say a job is held")
        for j in (a, b):
            c.call("release", {"id": j})
        out = p.stdout.read()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, (p.returncode, out, errs)
    assert "job %d: exited 0" % a in out and "job %d: exited 3" % b in out, out
    out = ctl(d, "wait", "--all")
    assert out.returncode == 0 and "no jobs" in out.stdout, out


SCENARIOS = [
    ("status_filters", sc_status_filters, {}),
    ("events_filters", sc_events_filters, {}),
    ("bulk_cancel", sc_bulk_cancel, {}),
    ("wait_all", sc_wait_all, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
