"""Time through the fixture proc root: time limits (--time, summed over
attempts, and --time-per-attempt), delayed starts (--begin), and the
records of each attempt (what WAITED and show say of a retried job). The
jobs are real processes; docs/jobs.md, "Time limits" and "Delayed start",
states the rules. Times are read from the daemon's own records, never
from sleeps.

Run one scenario with: queue-time.py NAME...
"""

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, RpcError, poll, scenarios  # noqa: E402

js = scenarios()
submit, show, wait_state, samples, read, events_of = (
    js.submit, js.show, js.wait_state, js.samples, js.read, js.events_of)
GRACE_MS = js.GRACE_MS
# A kill is decided at a sample (every 0.1 s here) and a TERMed sleep
# ends at once; what a loaded machine adds on top.
SLACK_MS = 1500

CTL = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
PRODUCT_DIRS = ("daemon", "client", "web", "proto", "python", "scripts")
MAX_TIME_LIMIT_FILES = 6


def ctl(d, *args, timeout=30):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def now_ms():
    return int(time.time() * 1000)


def ran(a):
    return a["ended_at_ms"] - a["started_at_ms"]


def sc_time_limit(d, m, c):
    """--time 2s: killed, reason time_limit, 2 s after it started plus at
    most a sample and the grace; kill says which limit; a job within its
    limit is untouched."""
    jid = submit(c, d, "exec sleep 30", time_limit_ms=2000, name="slow")
    ok = submit(c, d, "sleep 0.5", time_limit_ms=60000, name="quick")
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["end_reason"] == "time_limit", j
    took = j["ended_at_ms"] - j["started_at_ms"]
    assert 2000 <= took <= 2000 + GRACE_MS + SLACK_MS, (took, j)
    k = j["kill"]
    assert k["limit"] == "total" and k["limit_ms"] == 2000, k
    assert k["ran_ms"] >= 2000 and k["attempt"] == 1, k
    assert k["at_ms"] - j["started_at_ms"] >= 2000, (k, j)
    assert "its time limit (--time 2.0s)" in j["end_detail"], j
    assert j["time_limit_ms"] == 2000 and j["time_limit_per_attempt_ms"] == 0
    assert wait_state(c, ok, "exited")["exit_code"] == 0
    # public: another user's list shows the limit and the reason
    ended = c.call("info")["counters"]["jobs_ended"]
    assert {"state": "killed", "reason": "time_limit", "count": 1} in ended, ended
    # CLI: show says why, wait exits 124 as timeout(1)
    out = ctl(d, "show", str(jid))
    assert "killed because it ran past its time limit" in out.stdout, out.stdout
    assert "stageloadctl wait gives 124" in out.stdout, out.stdout
    assert ctl(d, "wait", str(jid)).returncode == 124


def sc_time_ignores_term(d, m, c):
    """A job that ignores SIGTERM is KILLed after the grace."""
    jid = submit(c, d, "trap '' TERM; sleep 30 & wait; sleep 30",
                 time_limit_ms=1000)
    j = wait_state(c, jid, "killed", timeout=15)
    took = j["ended_at_ms"] - j["started_at_ms"]
    assert j["end_reason"] == "time_limit", j
    assert 1000 + GRACE_MS <= took <= 1000 + GRACE_MS + SLACK_MS, (took, j)


def sc_queued_time_not_counted(d, m, c):
    """The limit counts running time only: a job that waited 2 s in the
    queue still runs its whole --time."""
    m.set(free_pct=20)
    jid = submit(c, d, "exec sleep 30", time_limit_ms=1500, wait_free_pct=50)
    samples(d, 20)  # 2 s queued
    assert show(c, jid)["state"] == "queued"
    m.set(free_pct=80)
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["admitted_at_ms"] - j["submitted_at_ms"] >= 2000, j
    took = j["ended_at_ms"] - j["started_at_ms"]
    assert 1500 <= took <= 1500 + SLACK_MS, (took, j)


def breach_retry(d, m, c, jid, swap_gib):
    """Push swap up so that the running job breaches; returns once it is
    running again as attempt 2."""
    m.set(swap_used_gib=swap_gib)
    poll(lambda: show(c, jid)["attempt"] == 2, what="attempt 2")
    return wait_state(c, jid, "running")


def sc_per_attempt(d, m, c):
    """--time-per-attempt 2s on a retried job: attempt 1 is requeued by a
    breach after about 1 s; attempt 2 gets its own 2 s, counted from its
    own start, then is killed (time_limit, never retried)."""
    m.set(free_pct=80, swap_used_gib=0)
    jid = submit(c, d, "exec sleep 30", swap_budget_bytes=1 << 30,
                 retry_on_breach=1, time_limit_per_attempt_ms=2000)
    wait_state(c, jid, "running")
    samples(d, 10)
    breach_retry(d, m, c, jid, 2)
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["end_reason"] == "time_limit" and j["attempt"] == 2, j
    a1, a2 = j["attempts"]
    assert a1["attempt"] == 1 and a1["end_reason"] == "swap_budget", a1
    assert a2["attempt"] == 2 and a2["end_reason"] == "time_limit", a2
    assert 2000 <= ran(a2) <= 2000 + SLACK_MS, (ran(a2), j)
    assert j["kill"]["limit"] == "per_attempt", j["kill"]
    assert "(--time-per-attempt 2.0s)" in j["end_detail"], j["end_detail"]
    assert "in attempt 2" in j["end_detail"], j["end_detail"]


def sc_total_over_attempts(d, m, c):
    """--time 3s is summed over attempts: attempt 1 ran about 1.5 s before
    a breach requeued it, so attempt 2 is killed once the two runs add up
    to 3 s; the time between attempts does not count."""
    m.set(free_pct=80, swap_used_gib=0)
    jid = submit(c, d, "exec sleep 30", swap_budget_bytes=1 << 30,
                 retry_on_breach=1, time_limit_ms=3000)
    wait_state(c, jid, "running")
    samples(d, 15)
    breach_retry(d, m, c, jid, 2)
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["end_reason"] == "time_limit", j
    a1, a2 = j["attempts"]
    total = ran(a1) + ran(a2)
    assert ran(a1) >= 1000 and ran(a2) < 3000 - 500, (a1, a2)
    assert 3000 <= total <= 3000 + SLACK_MS, (total, a1, a2)
    assert j["kill"]["limit"] == "total" and j["kill"]["ran_ms"] >= 3000, j
    assert "over 2 attempts" in j["end_detail"], j["end_detail"]


def sc_attempts_waited(d, m, c):
    """A retried job's records: each attempt's queued, admitted, started,
    ended times and end reason, in show and in the store (after a
    restart); WAITED counts the time queued only, never attempt 1's run;
    show lists each attempt's wait and run."""
    m.set(free_pct=80, swap_used_gib=0)
    jid = submit(c, d, "exec sleep 30", swap_budget_bytes=1 << 30,
                 retry_on_breach=1, wait_free_pct=50)
    wait_state(c, jid, "running")
    samples(d, 20)  # attempt 1 runs 2 s
    # attempt 2 waits about 1 s in the queue: not free enough
    m.set(free_pct=20, sync=True)
    m.set(swap_used_gib=2)
    poll(lambda: show(c, jid)["attempt"] == 2, what="attempt 2")
    samples(d, 10)
    assert show(c, jid)["state"] == "queued"
    m.set(free_pct=80)
    wait_state(c, jid, "running")
    c.call("cancel", {"id": jid})
    j = wait_state(c, jid, "killed")
    a1, a2 = j["attempts"]
    assert a1["queued_at_ms"] == j["submitted_at_ms"], (a1, j)
    assert a1["admitted_at_ms"] <= a1["started_at_ms"] <= a1["ended_at_ms"], a1
    assert a1["end_reason"] == "swap_budget" and a1["attempt"] == 1, a1
    assert a2["queued_at_ms"] == a1["ended_at_ms"], (a1, a2)
    assert a2["admitted_at_ms"] == j["admitted_at_ms"], (a2, j)
    assert a2["end_reason"] == "cancel" and a2["ended_at_ms"] == j["ended_at_ms"]
    assert ran(a1) >= 2000, a1
    waited = sum(a["admitted_at_ms"] - a["queued_at_ms"] for a in (a1, a2))
    assert waited < ran(a1), (waited, a1, a2)
    # the store keeps them across a restart
    d.stop()
    d.start()
    c2 = Client(d.socket)
    assert c2.call("show", {"id": jid})["attempts"] == j["attempts"]
    # CLI: WAITED is the queued time; show lists each attempt
    out = ctl(d, "status", "--all", "-o", "id,waited")
    row = [ln.split() for ln in out.stdout.splitlines() if ln.split()[:1] == [str(jid)]]
    assert row, out.stdout
    w = row[0][1]
    assert re.fullmatch(r"[0-9.]+s", w) and float(w[:-1]) * 1000 < ran(a1), (w, a1, out.stdout)
    assert abs(float(w[:-1]) * 1000 - waited) <= 100, (w, waited)
    out = ctl(d, "show", str(jid))
    assert re.search(r"Attempt 1: waited \S+, ran \S+, requeued: the system's swap grew past its budget while it ran",
                     out.stdout), out.stdout
    assert re.search(r"Attempt 2: waited \S+, ran \S+, killed because it was cancelled",
                     out.stdout), out.stdout
    c2.close()


def sc_begin(d, m, c):
    """--begin: not admitted before its time, passed over meanwhile
    (waiting_for begin) without holding up the job behind it, then
    admitted at the next sample. The checks while it waits have a minute
    (a slow build must not see it admitted first); then its begin is
    moved to 1.5 s ahead, and its admission is measured against that."""
    t = now_ms()
    late = submit(c, d, "exit 0", begin_ms=t + 60000, name="late")
    behind = submit(c, d, "exit 0", name="behind")
    assert wait_state(c, behind, "exited")["exit_code"] == 0
    j = show(c, late)
    assert j["state"] == "queued" and j["waiting_for"] == "begin", j
    assert j["begin_ms"] == t + 60000, j
    assert c.call("info")["waiting_for"].get("begin") == 1
    out = ctl(d, "status")
    row = [ln for ln in out.stdout.splitlines() if ln.split() and ln.split()[0] == str(late)]
    hhmm = time.strftime("%H:%M:%S", time.localtime((t + 60000) // 1000))
    assert row and ("begin " + hhmm) in row[0], (hhmm, out.stdout)
    out = ctl(d, "show", str(late))
    assert "it starts no earlier than %s (--begin)" % hhmm in out.stdout, out.stdout
    begin = now_ms() + 1500
    c.call("update", {"id": late, "begin_ms": begin})
    j = wait_state(c, late, "exited", timeout=10)
    assert j["admitted_at_ms"] >= begin, j
    assert j["admitted_at_ms"] <= begin + SLACK_MS, j
    # a begin in the past is no wait at all
    past = submit(c, d, "exit 0", begin_ms=t - 60000)
    wait_state(c, past, "exited")


def sc_update(d, m, c):
    """update takes the time limits and begin: a held job gets them, the
    Job and the updated event show them; 0 clears a limit."""
    jid = submit(c, d, "exec sleep 30", held=True)
    t = now_ms() + 3600 * 1000
    j = c.call("update", {"id": jid, "time_limit_ms": 5000,
                          "time_limit_per_attempt_ms": 4000, "begin_ms": t})
    assert (j["time_limit_ms"], j["time_limit_per_attempt_ms"], j["begin_ms"]) == \
        (5000, 4000, t), j
    det = [e["detail"] for e in events_of(c, jid) if e["kind"] == "updated"][-1]
    assert det["time_limit_ms"] == 5000 and det["begin_ms"] == t, det
    try:
        c.call("update", {"id": jid, "time_limit_ms": -1})
        raise AssertionError("time_limit_ms -1 was taken")
    except RpcError as e:
        assert e.code == -32602 and "time_limit_ms" in e.message, e
    # the CLI: --time, --begin; released, it waits for its begin
    out = ctl(d, "update", str(jid), "--time", "1s", "--time-per-attempt", "0",
              "--begin", "+1s")
    assert out.returncode == 0, out.stderr
    j = show(c, jid)
    assert j["time_limit_ms"] == 1000 and j["time_limit_per_attempt_ms"] == 0, j
    assert now_ms() - 1000 < j["begin_ms"] <= now_ms() + 1000, j
    c.call("release", {"id": jid})
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["end_reason"] == "time_limit" and j["admitted_at_ms"] >= j["begin_ms"], j


def sc_cli(d, m, c):
    """The CLI's forms: --time with a unit (a bare number refused with
    the hint, exit 2), --begin +DURATION, HH:MM and ISO (an unsigned
    duration refused); run --time 1s -- sleep 10 exits 124 and says which
    limit."""
    bad = ctl(d, "submit", "--time", "90", "--", "true")
    assert bad.returncode == 2 and "did you mean 90m?" in bad.stderr, bad
    bad = ctl(d, "submit", "--begin", "3s", "--", "true")
    assert bad.returncode == 2 and "did you mean +3s?" in bad.stderr, bad
    bad = ctl(d, "submit", "--begin", "25:00", "--", "true")
    assert bad.returncode == 2 and "--begin takes" in bad.stderr, bad
    out = ctl(d, "submit", "--hold", "--time", "2h", "--time-per-attempt", "90m",
              "--begin", "23:10", "--", "true")
    assert out.returncode == 0, out.stderr
    jid = int(out.stdout.split()[-1]) if out.stdout.split()[-1].isdigit() else \
        int(re.search(r"\d+", out.stdout).group())
    j = show(c, jid)
    assert j["time_limit_ms"] == 2 * 3600000, j
    assert j["time_limit_per_attempt_ms"] == 90 * 60000, j
    lt = time.localtime(j["begin_ms"] / 1000)
    assert (lt.tm_hour, lt.tm_min, lt.tm_sec) == (23, 10, 0), j
    assert now_ms() < j["begin_ms"] <= now_ms() + 86400 * 1000, j
    out = ctl(d, "show", str(jid))
    assert re.search(r"time limit 2h00m, 1h30m an attempt, begins at "
                     r"(23:10:00|\d{4}-\d\d-\d\d 23:10)\.", out.stdout), out.stdout
    out = ctl(d, "submit", "--hold", "--begin", "2030-01-02T03:04", "--", "true")
    assert out.returncode == 0, out.stderr
    jid = int(re.search(r"\d+", out.stdout).group())
    assert show(c, jid)["begin_ms"] == int(time.mktime(
        (2030, 1, 2, 3, 4, 0, 0, 0, -1))) * 1000
    t0 = time.monotonic()
    r = ctl(d, "run", "--time", "1s", "--", "sleep", "10")
    assert r.returncode == 124, (r.returncode, r.stderr)
    assert "its time limit (--time 1.0s)" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 8, time.monotonic() - t0


def sc_named_files(d, m, c):
    """time_limit_ms is named in at most 6 product files: one declaration
    in proto/job-fields.h reaches every consumer."""
    named = []
    for top in PRODUCT_DIRS:
        for root, _dirs, files in os.walk(os.path.join(SRC, top)):
            for f in files:
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        if b"time_limit_ms" in fh.read():
                            named.append(os.path.relpath(p, SRC))
                except OSError:
                    pass
    print("product files naming time_limit_ms (%d): %s" % (len(named), " ".join(sorted(named))))
    assert len(named) <= MAX_TIME_LIMIT_FILES, named


SCENARIOS = [
    ("time_limit", sc_time_limit, {}),
    ("time_ignores_term", sc_time_ignores_term, {}),
    ("queued_time_not_counted", sc_queued_time_not_counted, {}),
    ("per_attempt", sc_per_attempt, {}),
    ("total_over_attempts", sc_total_over_attempts, {}),
    ("attempts_waited", sc_attempts_waited, {}),
    ("begin", sc_begin, {}),
    ("update", sc_update, {}),
    ("cli", sc_cli, {}),
    ("named_files", sc_named_files, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
