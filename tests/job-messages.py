"""What the daemon tells a job's user, checked through the fixture proc
root with real jobs: the marker lines the daemon writes into a job's log
(docs/jobs.md, "Cancel, wait, logs"), swap growth worded as the system's,
the jobs a waiting job waits behind (waiting_on), the last ends under
top's table, and stage reports that reach the job's own daemon.

Run one scenario with: job-messages.py NAME...
"""

import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, poll  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "jobs_scenarios", os.path.join(HERE, "jobs-scenarios.py"))
js = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(js)
submit, show, wait_state, samples, read, events_of = (
    js.submit, js.show, js.wait_state, js.samples, js.read, js.events_of)

CTL = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def ctl(d, *args, env=None):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=30, env=env)


def log_of(d, jid):
    r = ctl(d, "logs", str(jid))
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


def sc_killed_marker(d, m, c):
    """A job killed for its budget: its log ends with a marker line that
    says when, by how much the system's swap grew and over which budget."""
    m.set(free_pct=80, swap_used_gib=1)
    jid = submit(c, d, "echo working; exec sleep 60",
                 swap_budget_bytes=1 << 30)
    wait_state(c, jid, "running")
    poll(lambda: "working" in log_of(d, jid), what="the job's first line")
    m.set(swap_used_gib=2.5)
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if "stageload:" in log_of(d, jid)
                else None, what="the marker line")
    lines = text.splitlines()
    assert lines[0] == "working", lines
    last = lines[-1]
    assert last.startswith("stageload: killed at "), last
    assert ("the system's swap grew 1.5G while it ran, over its 1.0G "
            "budget") in last, last
    print("ok - killed: %r" % last)


def sc_retry_marker(d, m, c):
    """A retried job's log: attempt 1's output, the requeue marker, then
    attempt 2's output, then the final kill's marker."""
    m.set(free_pct=80, swap_used_gib=0)
    starts = d.dir + "/retry.start"
    jid = submit(c, d, "echo attempt-start; echo go >> %s; exec sleep 60"
                 % starts, swap_budget_bytes=1 << 30, retry_on_breach=1)
    wait_state(c, jid, "running")
    poll(lambda: read(starts).count("go") == 1, what="first start")
    m.set(swap_used_gib=2)
    poll(lambda: read(starts).count("go") == 2, what="second start")
    wait_state(c, jid, "running")
    m.set(swap_used_gib=3.5)
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if log_of(d, jid).count(
        "stageload:") == 2 else None, what="two marker lines")
    lines = text.splitlines()
    assert lines[0] == "attempt-start", lines
    assert lines[1].startswith("stageload: stopped at "), lines
    assert lines[1].endswith("over its 1.0G budget; requeued for attempt 2"), lines
    assert lines[2] == "attempt-start", lines
    assert lines[3].startswith("stageload: killed at "), lines
    assert "swap grew 1.5G while it ran, over its 1.0G budget" in lines[3], lines
    assert len(lines) == 4, lines
    print("ok - retried: %r between the attempts" % lines[1])


def sc_cancel_marker(d, m, c):
    """A running job cancelled: its log says so; a job that exits on its
    own gets no marker."""
    m.set(free_pct=80)
    jid = submit(c, d, "echo up; exec sleep 60")
    wait_state(c, jid, "running")
    poll(lambda: "up" in log_of(d, jid), what="the job's line")
    c.call("cancel", {"id": jid})
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if "stageload:" in log_of(d, jid)
                else None, what="the marker line")
    last = text.splitlines()[-1]
    assert last.startswith("stageload: killed at ") and \
        last.endswith(": it was cancelled (cancel)"), last
    ok = submit(c, d, "echo fine")
    wait_state(c, ok, "exited")
    assert log_of(d, ok) == "fine\n", log_of(d, ok)
    print("ok - cancelled: %r; an exit on its own: none" % last)


SCENARIOS = [
    ("killed_marker", sc_killed_marker, {}),
    ("retry_marker", sc_retry_marker, {}),
    ("cancel_marker", sc_cancel_marker, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
