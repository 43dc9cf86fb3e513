"""Accounting (PROTOCOL.md "report", stageloadctl report) through the
fixture proc root: a known set of ended jobs of every outcome, summed per
user and name, checked against what each job's own record says; the same
figures once those jobs were pruned (max_ended_jobs_per_uid); the CLI's
table, --json and --csv; report --db with the daemon down, as root and
refused as a user.

Run one scenario with: jobs-report.py NAME...
"""

import csv
import io
import json
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, RpcError, client_as, poll, scenarios  # noqa: E402

js = scenarios()
submit, show, wait_state, samples, read = (
    js.submit, js.show, js.wait_state, js.samples, js.read)

CTL = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
DAY_MS = 24 * 3600 * 1000
NOBODY = 65534


def ctl(d, *args, **kw):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=30, **kw)


def bucket(run_ms):
    """store-report.h's histogram bucket of a run time."""
    import math
    if run_ms < 1000:
        return 0
    return min(199, max(1, 1 + int(math.floor(8 * math.log2(run_ms / 1000.0)))))


def expected(jobs):
    """The row of report for these ended jobs (show's records), as the
    daemon must sum them."""
    e = {"runs": len(jobs), "exited_0": 0, "exited_nonzero": 0, "failed": 0,
         "killed": 0, "cancelled": 0, "lost": 0, "killed_by": {}, "ran": 0,
         "run_time_ms": 0, "time_waited_ms": 0, "footprint_peak_bytes": 0,
         "swap_growth_peak_bytes": 0}
    runs = []
    for j in jobs:
        s = j["state"]
        if s == "exited":
            ok = j.get("exit_code") == 0 and not j.get("signal")
            e["exited_0" if ok else "exited_nonzero"] += 1
        else:
            e[s] += 1
        if s == "killed":
            e["killed_by"][j["end_reason"]] = e["killed_by"].get(j["end_reason"], 0) + 1
        started = j["started_at_ms"] or 0
        if started > 0:
            e["ran"] += 1
            run = j["ended_at_ms"] - started
            e["run_time_ms"] += run
            runs.append(run)
        waited = (started if started > 0 else j["ended_at_ms"]) - j["submitted_at_ms"]
        e["time_waited_ms"] += max(0, waited)
        e["footprint_peak_bytes"] = max(e["footprint_peak_bytes"], j["footprint_peak_bytes"])
        e["swap_growth_peak_bytes"] = max(e["swap_growth_peak_bytes"],
                                          j["swap_growth_peak_bytes"])
    runs.sort()
    return e, runs


def check_row(row, e, runs):
    for k, v in e.items():
        assert row[k] == v, (k, row[k], v, row)
    if not runs:
        assert row["run_time_median_ms"] is None, row
        return
    median = runs[(len(runs) + 1) // 2 - 1]
    # the histogram's bound (store-report.h): the same bucket, and within
    # 4.5 % (0.5 s under 1 s)
    got = row["run_time_median_ms"]
    assert bucket(got) == bucket(median), (got, median)
    if median < 1000:
        assert abs(got - median) <= 500, (got, median)
    else:
        assert abs(got - median) <= 0.045 * median + 1, (got, median)


def make_jobs(d, m, c):
    """Ended jobs of each outcome under two names; returns {name: [ids]}."""
    m.set(free_pct=80, swap_used_gib=1)
    ids = {"alpha": [], "beta": []}
    for code in (0, 0, 3):
        ids["alpha"].append(submit(c, d, "sleep 0.3; exit %d" % code, name="alpha"))
    ids["alpha"].append(submit(c, d, "kill -9 $$", name="alpha"))
    # killed by its swap budget
    mark = d.dir + "/rep.up"
    big = submit(c, d, "echo > %s; exec sleep 60" % mark, name="beta",
                 swap_budget_bytes=1 << 30)
    wait_state(c, big, "running")
    poll(lambda: read(mark), what="the job to start")
    m.set(swap_used_gib=2.5)
    wait_state(c, big, "killed", timeout=10)
    m.set(swap_used_gib=1)
    ids["beta"].append(big)
    # killed by a cancel while it runs
    run = submit(c, d, "exec sleep 60", name="beta")
    wait_state(c, run, "running")
    c.call("cancel", {"id": run})
    ids["beta"].append(run)
    # cancelled before it starts
    queued = submit(c, d, "exit 0", name="beta", wait_free_pct=99)
    c.call("cancel", {"id": queued})
    ids["beta"].append(queued)
    # could not start (a cwd that is gone)
    gone = d.dir + "/gone"
    os.mkdir(gone)
    p = {"argv": ["true"], "cwd": gone, "env": js.env_list(), "name": "beta",
         "wait_free_pct": 99}
    f = c.call("submit", p)["id"]
    os.rmdir(gone)
    c.call("update", {"id": f, "wait_free_pct": 0})
    ids["beta"].append(f)
    for name in ids:
        for jid in ids[name]:
            wait_state(c, jid, "exited", "killed", "failed", "cancelled", "lost",
                       timeout=15)
    return ids


def report(c, **params):
    return c.call("report", params)


def by_key(rows):
    return {(r.get("user"), r.get("name")): r for r in rows}


def sc_figures(d, m, c):
    """Every outcome counted once, run times, waits and peaks summed as the
    jobs' records say; by user, by name, by both; filters."""
    ids = make_jobs(d, m, c)
    jobs = {n: [show(c, i) for i in v] for n, v in ids.items()}
    states = sorted(j["state"] for v in jobs.values() for j in v)
    assert states == sorted(["exited"] * 4 + ["killed"] * 2 + ["cancelled", "failed"]), states
    user = jobs["alpha"][0]["user"]
    r = report(c)
    assert r["by"] == "user,name" and r["oldest_ms"] is not None, r
    rows = by_key(r["rows"])
    assert set(rows) == {(user, "alpha"), (user, "beta")}, rows
    for n in ids:
        e, runs = expected(jobs[n])
        check_row(rows[(user, n)], e, runs)
    assert rows[(user, "beta")]["killed_by"] == {"swap_budget": 1, "cancel": 1}, rows
    # by user: both names in one row
    r = report(c, by="user")
    assert len(r["rows"]) == 1 and "name" not in r["rows"][0], r
    e, runs = expected(jobs["alpha"] + jobs["beta"])
    check_row(r["rows"][0], e, runs)
    # by name
    r = report(c, by="name")
    assert sorted(x["name"] for x in r["rows"]) == ["alpha", "beta"], r
    assert all("user" not in x for x in r["rows"]), r
    # status's filter: a name glob, a user by name or uid, mine
    r = report(c, name="al*")
    assert [x["name"] for x in r["rows"]] == ["alpha"], r
    assert report(c, user=str(os.getuid() + 12345))["rows"] == [], r
    whole = report(c)["rows"]
    assert report(c, user=user)["rows"] == whole, whole
    assert report(c, user=str(os.getuid()), name="b*")["rows"] == \
        [x for x in whole if x["name"] == "beta"], whole
    assert report(c, mine=True)["rows"] == whole, whole
    # a range of days without them
    r = report(c, since_ms=0, until_ms=DAY_MS)
    assert r["rows"] == [], r
    # bad params
    # (state means nothing to a rollup of ended jobs: refused, as is the
    # uid of before the filter; user is a name or digits)
    for p in ({"by": "host"}, {"since_ms": 5, "until_ms": 1}, {"uid": 0},
              {"state": ["exited"]}, {"user": "no-such-user-x"},
              {"user": user, "mine": True}):
        try:
            report(c, **p)
            raise AssertionError("accepted %r" % p)
        except RpcError as err:
            assert err.code == -32602, (p, err)
    return ids, jobs


def sc_pruned(d, m, c):
    """The figures outlive the ended jobs: once they are pruned past the
    per-uid bound (max_ended_jobs_per_uid; root is exempt, so as a
    user), the report is the same."""
    if os.geteuid() != 0:
        print("note: not root: pruning as another user is not tried")
        return
    os.chmod(d.dir, 0o711)
    u = client_as(NOBODY, d.socket)

    def sub(script, **opts):
        p = {"argv": ["sh", "-c", script], "cwd": "/", "env": [], "name": "delta"}
        p.update(opts)
        return u.call("submit", p)["id"]
    ids = [sub("sleep 0.2; exit 0"), sub("exit 0"), sub("exit 4")]
    q = sub("exit 0", wait_free_pct=95)
    u.call("cancel", {"id": q})
    ids.append(q)
    for jid in ids:
        wait_state(u, jid, "exited", "cancelled")
    jobs = [show(u, jid) for jid in ids]
    before = report(c, user=str(NOBODY))["rows"]
    e, runs = expected(jobs)
    assert len(before) == 1, before
    check_row(before[0], e, runs)
    # max_ended_jobs_per_uid = 2: a few more submits push them all out
    # (the oldest ended go first: each one ends before the next submit)
    for _ in range(4):
        wait_state(u, sub("exit 0", name="gamma"), "exited")
    for jid in ids:
        try:
            show(u, jid)
            raise AssertionError("job %d was not pruned" % jid)
        except RpcError:
            pass
    after = [x for x in report(c, user=str(NOBODY))["rows"] if x["name"] != "gamma"]
    assert after == before, (after, before)
    # mine: the caller's own rows, whoever calls
    mine = [x for x in report(u, mine=True)["rows"] if x["name"] != "gamma"]
    assert mine == before, (mine, before)
    u.close()


def sc_cli(d, m, c):
    """The table, --json (one object per row, killed_<reason> keys from
    names.h's reasons) and --csv (the same columns)."""
    ids, jobs = sc_figures(d, m, c)
    out = ctl(d, "report")
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert lines[0].split()[:3] == ["USER", "NAME", "RUNS"], lines
    assert any(x.split()[1] == "alpha" for x in lines[1:]), lines
    out = ctl(d, "report", "--json")
    assert out.returncode == 0, out
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    beta = [x for x in rows if x["name"] == "beta"][0]
    assert beta["killed_swap_budget"] == 1 and beta["killed_cancel"] == 1, beta
    assert beta["killed"] == 2 and beta["failed"] == 1 and beta["cancelled"] == 1, beta
    assert "killed_by" not in beta and "uid" in beta, beta
    alpha = [x for x in rows if x["name"] == "alpha"][0]
    assert alpha["exited_0"] == 2 and alpha["exited_nonzero"] == 2, alpha
    assert set(alpha) == set(beta), (alpha, beta)
    out = ctl(d, "report", "--csv", "--by", "name")
    assert out.returncode == 0, out
    got = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [x["name"] for x in got] == ["alpha", "beta"], got
    assert "user" not in got[0] and got[1]["killed_swap_budget"] == "1", got
    # --since before the oldest day: a warning on stderr, the rows all the same
    out = ctl(d, "report", "--since", "2000-01-01")
    assert out.returncode == 0 and "oldest" in out.stderr, out
    out = ctl(d, "report", "--by", "host")
    assert out.returncode == 2, out
    # status's filter options: --user (a name or a uid), --mine, --name
    user = rows[0]["user"]
    for args in (["--user", user], ["-u", str(os.getuid())], ["--mine"]):
        out = ctl(d, "report", "--json", *args)
        assert out.returncode == 0, (args, out)
        assert [json.loads(x) for x in out.stdout.splitlines()] == rows, (args, out)
    out = ctl(d, "report", "--json", "--mine", "--name", "b*")
    assert [json.loads(x)["name"] for x in out.stdout.splitlines()] == ["beta"], out
    out = ctl(d, "report", "--user", str(os.getuid() + 12345), "--json")
    assert out.returncode == 0 and out.stdout == "", out
    for args in (["--state", "exited"], ["--user", "no-such-user-x"],
                 ["--user", user, "--mine"]):
        out = ctl(d, "report", *args)
        assert out.returncode == 2, (args, out)


def sc_offline(d, m, c):
    """report --db with the daemon down reads the database itself: the
    same rows as the daemon's; as a user it is refused with 77."""
    ids, jobs = sc_figures(d, m, c)
    want = ctl(d, "report", "--json").stdout
    assert d.stop(signal.SIGTERM) == 0
    out = ctl(d, "report", "--json", "--db", d.db)
    assert out.returncode == 0, out
    assert out.stdout == want, (out.stdout, want)
    # the filter as the daemon reads it (store-filter.c): the same rows
    d.start()
    filters = (["--mine", "--name", "b*"], ["--user", str(os.getuid() + 12345)],
               ["-u", str(os.getuid()), "--name", "al*"])
    wants = [ctl(d, "report", "--json", *f).stdout for f in filters]
    assert wants[0] and not wants[1] and wants[2], wants
    assert d.stop(signal.SIGTERM) == 0
    for f, w in zip(filters, wants):
        out = ctl(d, "report", "--json", "--db", d.db, *f)
        assert out.returncode == 0 and out.stdout == w, (f, out, w)
    out = ctl(d, "report", "--db", d.db, "--user", "no-such-user-x")
    assert out.returncode == 2, out
    nobody = NOBODY
    if os.geteuid() != 0:
        print("note: not root: --db as another user is not tried")
        d.start()
        return

    def drop():
        os.setgid(nobody)
        os.setuid(nobody)
    out = subprocess.run([CTL, "report", "--db", d.db], capture_output=True,
                         text=True, timeout=30, preexec_fn=drop)
    assert out.returncode == 77, out
    d.start()


SCENARIOS = [
    ("figures", sc_figures, {}),
    ("pruned", sc_pruned, {"extra_conf": "max_ended_jobs_per_uid = 2\n"}),
    ("cli", sc_cli, {}),
    ("offline", sc_offline, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
