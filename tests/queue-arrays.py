"""Job arrays through the fixture proc root: submit's array (SPEC, %N),
each element's index ({} and STAGELOAD_ARRAY_*), the A42 and A42_3 names
that every job method takes, after on an array, the per-uid bounds, and
the CLI (--array, status folding, cancel/hold/release/wait/logs/show).
docs/jobs.md, "Arrays", states the rules.

Run one scenario with: queue-arrays.py NAME...
"""

import os
import re
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import RpcError, client_as, poll, scenarios  # noqa: E402

js = scenarios()
submit, show, wait_state, samples, read, env_list = (
    js.submit, js.show, js.wait_state, js.samples, js.read, js.env_list)

CTL = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def ctl(d, *args, timeout=30):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def submit_array(c, d, argv, spec, **opts):
    p = {"argv": argv, "cwd": d.dir, "env": env_list(), "array": spec}
    p.update(opts)
    return c.call("submit", p)


def rpc_error(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except RpcError as e:
        return e
    raise AssertionError("no error from %r" % (args,))


def elements(c, aid):
    a = c.call("show", {"id": "A%d" % aid})
    assert a["array_id"] == aid, a
    return a["jobs"]


def all_ended(c, aid):
    jobs = elements(c, aid)
    ended = ("exited", "killed", "failed", "cancelled", "lost")
    return jobs if all(j["state"] in ended for j in jobs) else None


def sc_limit(d, m, c):
    """An array of 20 with %3 never has more than 3 elements holding
    memory at once (from the daemon's own records), each sees its index
    in its env and its {}, and a job submitted behind it is not held up
    by the %3: it is passed over like a held job (waiting_for "array")."""
    go = d.dir + "/go"
    script = ("echo \"$STAGELOAD_ARRAY_ID $STAGELOAD_ARRAY_INDEX $1\" > "
              "%s/out.$STAGELOAD_ARRAY_INDEX; "
              "while [ ! -e %s ]; do sleep 0.05; done; sleep 0.2" % (d.dir, go))
    r = submit_array(c, d, ["bash", "-c", script, "x", "{}"], "0-19%3",
                     name="sweep")
    aid = r["array_id"]
    assert r["id"] == aid and len(r["ids"]) == 20 and r["ids"][0] == aid, r
    poll(lambda: sum(j["state"] == "running" for j in elements(c, aid)) == 3,
         what="3 elements running")
    samples(d, 3)
    jobs = elements(c, aid)
    assert [j["array_index"] for j in jobs] == list(range(20)), jobs
    waiting = [j for j in jobs if j["state"] == "queued"]
    assert len(waiting) == 17, jobs
    assert all(j["waiting_for"] == "array" for j in waiting), waiting
    # a given name is every element's, and learns as any job's
    assert all(j["array_limit"] == 3 and j["name"] == "sweep" and
               j["name_given"] for j in jobs)
    # a job behind the array is not held up by its %3
    other = submit(c, d, "exit 0", name="other")
    wait_state(c, other, "exited")
    assert sum(j["state"] == "queued" for j in elements(c, aid)) == 17
    # the CLI folds the array into one line, and says why it waits
    out = ctl(d, "status")
    assert out.returncode == 0, out
    rows = [line for line in out.stdout.splitlines() if line.startswith("A%d " % aid)]
    assert len(rows) == 1 and "3 running, 17 queued" in rows[0], out.stdout
    assert "sweep" in rows[0], rows
    exp = ctl(d, "status", "--expand").stdout
    assert "A%d_19" % aid in exp and "array" in exp, exp
    open(go, "w").close()
    jobs = poll(lambda: all_ended(c, aid), timeout=60, what="the array to end")
    assert all(j["state"] == "exited" and j["exit_code"] == 0 for j in jobs), jobs
    # never more than 3 at once: every admission saw at most 2 others
    for j in jobs:
        t = j["admitted_at_ms"]
        others = [k for k in jobs if k is not j and
                  k["admitted_at_ms"] <= t < k["ended_at_ms"]]
        assert len(others) <= 2, (j, others)
    for j in jobs:
        i = j["array_index"]
        assert read("%s/out.%d" % (d.dir, i)).split() == [str(aid), str(i), str(i)], i


def sc_subst(d, m, c):
    """{} becomes the index anywhere in a word; {{}} is a literal {}."""
    script = ('printf "%s|" "$@" > ' + d.dir + "/sub.$STAGELOAD_ARRAY_INDEX; "
              'echo "$STAGELOAD_JOB_ID $STAGELOAD_JOB_TOKEN" > ' + d.dir
              + "/tok.$STAGELOAD_ARRAY_INDEX")
    r = submit_array(c, d, ["bash", "-c", script, "x", "seed={}", "{{}}",
                            "a{}b{}", "{x}"], "1,5,9")
    aid = r["array_id"]
    jobs = poll(lambda: all_ended(c, aid), what="the array to end")
    assert [j["array_index"] for j in jobs] == [1, 5, 9], jobs
    for i in (1, 5, 9):
        assert read("%s/sub.%d" % (d.dir, i)) == \
            "seed=%d|{}|a%db%d|{x}|" % (i, i, i), read("%s/sub.%d" % (d.dir, i))
    # each element has a token of its own, as any job, for its stage reports
    toks = {}
    for j in jobs:
        jid, tok = read("%s/tok.%d" % (d.dir, j["array_index"])).split()
        assert int(jid) == j["id"] and re.fullmatch(r"[0-9a-f]{32}", tok), (jid, tok)
        toks[tok] = jid
    assert len(toks) == 3, toks
    # the argv is stored once: every element shows the same one (show A
    # gives each as the lists do, its command line; show A_i its argv)
    assert len({j["command"] for j in jobs}) == 1 and "seed={}" in jobs[0]["command"], jobs
    for i in (1, 5, 9):
        assert show(c, "A%d_%d" % (aid, i))["argv"] == [
            "bash", "-c", script, "x", "seed={}", "{{}}", "a{}b{}", "{x}"]
    # an element resubmitted is a job of its own running what it ran
    again = c.call("resubmit", {"id": "A%d_5" % aid})
    j = show(c, again["id"])
    assert j["array_id"] is None and j["argv"][4:] == \
        ["seed=5", "{}", "a5b5", "{x}"], j
    # a stepped range
    r = submit_array(c, d, ["true"], "0-100:25")
    assert [j["array_index"] for j in elements(c, r["array_id"])] == [0, 25, 50, 75, 100]


def sc_controls(d, m, c):
    """hold, release, cancel, wait, show and logs on A42 and on A42_3."""
    go = d.dir + "/go"
    r = submit_array(c, d, ["bash", "-c", "echo out-{}; while [ ! -e %s ]; "
                            "do sleep 0.05; done; exit {}" % go], "1-4",
                     held=True)
    aid = r["array_id"]
    a = "A%d" % aid
    jobs = elements(c, aid)
    assert all(j["state"] == "queued" and j["held"] for j in jobs), jobs
    # release one element: it alone starts
    j = c.call("release", {"id": a + "_2"})
    assert j["array_index"] == 2 and j["held"] is False, j
    wait_state(c, j["id"], "running")
    samples(d, 3)
    assert [k["state"] for k in elements(c, aid)] == \
        ["queued", "running", "queued", "queued"]
    # cancel one queued element, then hold and release the whole array
    assert c.call("cancel", {"id": a + "_4"})["state"] == "cancelled"
    held = c.call("hold", {"id": a})
    assert held["array_id"] == aid and len(held["jobs"]) == 4, held
    # the queued ones are held; the running one and the ended one as they were
    assert [k["held"] for k in held["jobs"]] == [True, False, True, True], \
        [(k["state"], k["held"]) for k in held["jobs"]]
    rel = c.call("release", {"id": a})
    assert [k["held"] for k in rel["jobs"]] == [False, False, False, True], \
        [(k["state"], k["held"]) for k in rel["jobs"]]
    poll(lambda: [k["state"] for k in elements(c, aid)] ==
         ["running", "running", "running", "cancelled"], what="3 running")
    # a whole array is refused where one job is meant
    e = rpc_error(c.call, "logs", {"id": a})
    assert e.code == -32602 and "A%d_INDEX" % aid in e.message, e
    e = rpc_error(c.call, "show", {"id": a + "_7"})
    assert e.code == -32003 and "no index 7" in e.message, e
    e = rpc_error(c.call, "show", {"id": "A999999"})
    assert e.code == -32003 and "no array A999999" in e.message, e
    e = rpc_error(c.call, "show", {"id": "B1"})
    assert e.code == -32602 and "A42_3" in e.message, e
    open(go, "w").close()
    # wait on one element, by name
    j = c.call("wait", {"id": a + "_3"})
    assert j["state"] == "exited" and j["exit_code"] == 3, j
    # the CLI: wait A.. exits as wait does for several jobs (the last
    # non-zero status), logs A.. prints each element's log under a header
    out = ctl(d, "wait", a)
    assert out.returncode != 0, out
    assert "job %d: exited 1" % aid in out.stdout, out.stdout
    out = ctl(d, "logs", a)
    assert out.returncode == 0, out
    for i in (1, 2, 3):
        assert "==> %s_%d" % (a, i) in out.stdout and "out-%d" % i in out.stdout, out.stdout
    out = ctl(d, "logs", a + "_2")
    assert out.stdout == "out-2\n", out
    # cancel on an array whose elements all ended: nothing to do, no error
    done = c.call("cancel", {"id": a})
    assert [k["state"] for k in done["jobs"]] == \
        ["exited", "exited", "exited", "cancelled"], done


def sc_cli(d, m, c):
    """submit --array, show, hold, release and cancel of the CLI."""
    go = d.dir + "/go"
    # 200 elements: the cancel below takes several slices of the loop,
    # and the first element's end frees the %1 between them
    out = ctl(d, "submit", "--array", "1-200%1", "--hold", "--", "bash",
              "-c", "while [ ! -e %s ]; do sleep 0.05; done; echo {}" % go)
    assert out.returncode == 0, out
    a = out.stdout.strip()
    assert a.startswith("A"), out.stdout
    aid = int(a[1:])
    ids = [k["id"] for k in elements(c, aid)]
    assert len(ids) == 200
    # each element's submitted event, committed together, in order
    ev = [e for e in c.call("events", {"limit": 1000})["events"]
          if e["kind"] == "submitted" and e["job_id"] in ids]
    assert [e["job_id"] for e in ev] == ids, ev[:3]
    assert [e["detail"]["array_index"] for e in ev] == list(range(1, 201))
    out = ctl(d, "release", a)
    # one line for the array; the first may start before the release's
    # walk reaches the last
    assert out.returncode == 0 and re.fullmatch(
        r"%s: (200 released|1 running, 199 released|199 released, "
        r"1 running)\n" % a, out.stdout), out.stdout
    poll(lambda: [k["state"] for k in elements(c, aid)][:3] ==
         ["running", "queued", "queued"], what="one running")
    out = ctl(d, "show", a + "_2")
    assert out.returncode == 0 and "array" in out.stdout, out
    out = ctl(d, "cancel", a)
    assert out.returncode == 0 and re.fullmatch(
        r"%s: 1 (killed|terminating \(SIGTERM, then SIGKILL after the "
        r"grace period\)), 199 cancelled\n" % a, out.stdout), out.stdout
    jobs = poll(lambda: all_ended(c, aid), what="the array to end")
    # none started once the cancel began
    late = [(k["array_index"], k["end_detail"]) for k in jobs[1:]
            if k["state"] != "cancelled"]
    assert late == [], late
    for bad in ("1-", "5-1", "1,1", "0-10:0", "1-3%0", "x"):
        out = ctl(d, "submit", "--array", bad, "--", "true")
        assert out.returncode == 2 and "1-100%4" in out.stderr, (bad, out)


def sc_follow(d, m, c):
    """logs -f A42 follows every element at once: element 2's output is
    shown while element 1 still runs (it ends only once that was seen),
    each under a header when the output passes to it."""
    go = d.dir + "/go"
    r = submit_array(c, d, ["bash", "-c",
                            "if [ {} = 1 ]; then echo one-a; "
                            "while [ ! -e %s ]; do sleep 0.05; done; "
                            "echo one-b; else echo two; fi" % go], "1-2")
    a = "A%d" % r["array_id"]
    p = subprocess.Popen([CTL, "--socket", d.socket, "logs", "-f", a],
                         stdout=subprocess.PIPE, text=True)
    seen = []
    reader = threading.Thread(target=lambda: seen.extend(p.stdout), daemon=True)
    reader.start()
    try:
        poll(lambda: "two\n" in seen and "one-a\n" in seen,
             what="both elements' output while element 1 runs")
        assert p.poll() is None, seen
        open(go, "w").close()
        assert p.wait(timeout=30) == 0, seen
        reader.join(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    heads = [ln.split()[1] for ln in seen if ln.startswith("==> ")]
    assert sorted(set(heads)) == [a + "_1", a + "_2"], seen
    # one-b came after two: its element's header again before it
    assert heads[-1] == a + "_1" and seen[-1] == "one-b\n", seen


def sc_after(d, m, c):
    """after A42 waits for every element; an element's failure cancels
    the job after it, as a failed job does."""
    go = d.dir + "/go"
    r = submit_array(c, d, ["bash", "-c", "while [ ! -e %s ]; do sleep 0.05; "
                            "done; sleep 0.{}" % go], "1-3")
    aid = r["array_id"]
    dep = submit(c, d, "exit 0", after=["A%d" % aid], name="dep")
    j = show(c, dep)
    assert sorted(j["after"]) == sorted(r["ids"]), j
    samples(d, 3)
    assert show(c, dep)["waiting_for"].startswith("after "), show(c, dep)
    open(go, "w").close()
    j = wait_state(c, dep, "exited")
    last = max(k["ended_at_ms"] for k in elements(c, aid))
    assert j["started_at_ms"] >= last, (j, last)
    # after one element, by name
    one = submit(c, d, "exit 0", after=["A%d_2" % aid])
    assert show(c, one)["after"] == [r["ids"][1]]
    # a failing element cancels what waits for the array
    r = submit_array(c, d, ["bash", "-c", "exit $(( {} == 2 ))"], "1-3",
                     held=True)
    dep = submit(c, d, "exit 0", after=["A%d" % r["array_id"]])
    c.call("release", {"id": "A%d" % r["array_id"]})
    j = wait_state(c, dep, "cancelled")
    assert j["end_reason"] == "dependency", j
    # the CLI's --after takes A42 too
    out = ctl(d, "submit", "--after", "A%d" % aid, "--", "true")
    assert out.returncode == 0, out
    wait_state(c, int(out.stdout), "exited")
    # after names at most 1024 jobs, arrays counted by element
    big = [submit_array(c, d, ["true"], "1-600", held=True)["array_id"]
           for _ in range(2)]
    e = rpc_error(c.call, "submit", {"argv": ["true"], "cwd": "/", "env": [],
                                     "after": ["A%d" % a for a in big]})
    assert e.code == -32602 and "more than 1024 jobs" in e.message, e
    for a in big:
        c.call("cancel", {"id": "A%d" % a})


def sc_bounds(d, m, c):
    """An array past the per-uid bounds is refused whole: nothing of it
    is queued. The SPEC itself is bounded by max_queued_per_uid."""
    e = rpc_error(submit_array, c, d, ["true"], "1-7")
    assert e.code == -32602 and "more than 6 elements" in e.message, e
    e = rpc_error(submit_array, c, d, ["true"], "1-3", attached=True)
    assert e.code == -32602, e
    assert c.call("status", {"all": True})["jobs"] == []
    if os.geteuid() != 0:
        print("note: not root, the per-uid checks need a second uid")
        return
    os.chmod(d.dir, 0o755)
    o = client_as(65534, d.socket)
    m.set(free_pct=10)
    o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                      "wait_free_pct": 50})
    o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                      "wait_free_pct": 50})
    e = rpc_error(o.call, "submit", {"argv": ["true"], "cwd": "/", "env": [],
                                     "array": "1-5", "wait_free_pct": 50})
    assert e.code == -32004 and "the array 5 more" in e.message, e
    assert len(o.call("status", {"all": True})["jobs"]) == 2
    # bytes: an env of 400 KiB is stored once, so 3 elements fit in the
    # 1 MiB bound where 3 jobs would not ...
    big = ["X=" + "x" * (400 << 10)]
    r = o.call("submit", {"argv": ["true"], "cwd": "/", "env": big,
                          "array": "1-3", "wait_free_pct": 50})
    assert len(r["ids"]) == 3, r
    assert len(o.call("status", {"all": True})["jobs"]) == 5
    # ... and one past the bound is refused whole
    huge = ["X=" + "x" * (700 << 10)]
    e = rpc_error(o.call, "submit", {"argv": ["true"], "cwd": "/",
                                     "env": huge, "array": "7",
                                     "wait_free_pct": 50})
    assert e.code == -32004 and "max_stored_bytes_per_uid" in e.message, e
    assert len(o.call("status", {"all": True})["jobs"]) == 5
    o.close()


def sc_restart(d, m, c):
    """The elements, their shared argv and the %N survive a restart."""
    r = submit_array(c, d, ["bash", "-c", "echo {} >> %s/r.log" % d.dir],
                     "1-3%1", held=True)
    aid = r["array_id"]
    d.stop()
    d.start()
    from sltest import Client
    c2 = Client(d.socket)
    jobs = elements(c2, aid)
    assert [j["array_limit"] for j in jobs] == [1, 1, 1], jobs
    c2.call("release", {"id": "A%d" % aid})
    poll(lambda: all_ended(c2, aid), what="the array to end")
    assert sorted(read(d.dir + "/r.log").split()) == ["1", "2", "3"]
    c2.close()


SCENARIOS = [
    ("limit", sc_limit, {}),
    ("subst", sc_subst, {}),
    ("controls", sc_controls, {}),
    ("cli", sc_cli, {}),
    ("follow", sc_follow, {}),
    ("after", sc_after, {}),
    ("bounds", sc_bounds, {"extra_conf": "max_queued_per_uid = 6\n"
                                         "max_stored_bytes_per_uid = 1M\n"}),
    ("restart", sc_restart, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
