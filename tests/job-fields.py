#!/usr/bin/env python3
"""proto/job-fields.h against what is written from it or about it:
Python's generated list is current (scripts/gen-job-fields.py --check),
PROTOCOL.md names every member of the Job and every parameter of submit
and update that the table declares, in their sections, and every member
only the owner and root see in the status and show rows of "Who may
call what", and Python's
Client.submit sends every submit parameter of the table, which a real
daemon then shows in the Job."""
import os
import re
import subprocess
import sys
from typing import Dict, List

SRC = os.environ.get("SL_SRC") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "python"))
sys.path.insert(0, os.path.join(SRC, "scripts"))


def sections(path: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    name = ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^###? (.*)$", line)
            if m:
                name = m.group(1).strip()
            out[name] = out.get(name, "") + line
    return out


def missing(text: str, names: List[str]) -> List[str]:
    return [n for n in names
            if not re.search(r'[`"]%s[`"]' % re.escape(n), text)]


# Client.submit's keywords that take a size ("8G") for a *_bytes param.
SIZE_KEYWORDS = {"swap_budget_bytes": "swap_budget", "expect_bytes": "expect",
                 "wait_free_bytes": "wait_free"}
SAMPLE = {"int": 1, "number": 1.5, "bool": True, "string": "x",
          "strv": ["A=1"], "intv": [1]}


def python_submit_sends_all(fails: List[str]) -> None:
    from stageload import job_fields
    from stageload.client import Client
    sent: Dict[str, object] = {}

    def capture(method: str, timeout: object = -1.0, **params: object) -> object:
        sent.clear()
        sent.update({k: v for k, v in params.items() if v is not None})
        return {"id": 1}

    c = Client.__new__(Client)
    c.call = capture  # type: ignore[method-assign]
    base = {"argv": ["x"], "cwd": "/", "env": ["A=1"], "umask": 0}
    for name, p in job_fields.SUBMIT_PARAMS.items():
        kw = dict((k, v) for k, v in base.items())
        if name not in base:
            kw[SIZE_KEYWORDS.get(name, name)] = SAMPLE[p.type]
        try:
            c.submit(**kw)  # type: ignore[arg-type]
        except TypeError as e:
            fails.append("Client.submit does not take %s: %s" % (name, e))
            continue
        if name not in sent:
            fails.append("Client.submit does not send %s" % name)


def python_submit_daemon(fails: List[str]) -> None:
    """The new options of Client.submit, through a real daemon."""
    sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
    from sltest import Daemon
    from stageload.client import Client, WrongState
    with Daemon() as d:
        c = Client(d.socket)
        first = c.submit(["/bin/true"], held=True)["id"]
        jid = c.submit(["/bin/true"], after=[first], after_any=True, held=True,
                       group="g1", wait_free="1M", on_end="true")["id"]
        job = c.show(jid)
        want = {"after": [first], "after_any": True, "held": True, "group": "g1",
                "wait_free_bytes": 1 << 20, "on_end": "true"}
        for k, v in want.items():
            if job.get(k) != v:
                fails.append("submit(%s=...): the Job has %r, not %r"
                             % (k, job.get(k), v))
        # resubmit carries the options, not the queue's controls of the
        # old job (its hold, the jobs it starts after)
        again = c.call("resubmit", id=jid)["id"]
        job = c.show(again)
        want = {"after": [], "after_any": False, "held": False, "group": "g1",
                "wait_free_bytes": 1 << 20, "on_end": "true"}
        for k, v in want.items():
            if job.get(k) != v:
                fails.append("resubmit: the Job has %s %r, not %r"
                             % (k, job.get(k), v))
        # the resubmitted job is neither held nor after anything: it may
        # have run and ended by now
        try:
            c.cancel(again)
        except WrongState:
            pass
        for i in (jid, first):
            c.cancel(i)
        c.close()


def main() -> int:
    fails = []
    rc = subprocess.run([sys.executable,
                         os.path.join(SRC, "scripts", "gen-job-fields.py"),
                         "--check"]).returncode
    if rc != 0:
        fails.append("python/stageload/job_fields.py is stale")
    from stageload import job_fields  # the checked-in file
    doc = sections(os.path.join(SRC, "proto", "PROTOCOL.md"))
    for sec, names in (("Job", list(job_fields.JOB_MEMBERS)),
                       ("submit", list(job_fields.SUBMIT_PARAMS)),
                       ("update", list(job_fields.UPDATE_PARAMS))):
        for n in missing(doc.get(sec, ""), names):
            fails.append("PROTOCOL.md, %s: %s is not named" % (sec, n))
    # "Who may call what": the status and show rows name every member
    # only the owner and root see (env: show's alone, asked for)
    with open(os.path.join(SRC, "proto", "PROTOCOL.md"), encoding="utf-8") as f:
        rows = {m.group(1): m.group(2) for m in
                re.finditer(r"^\| `(status|show)` \| (.*)$", f.read(), re.M)}
    for method in ("status", "show"):
        names = [n for n in job_fields.OWNER_MEMBERS
                 if method == "show" or n != "env"]
        for n in missing(rows.get(method, ""), names):
            fails.append("PROTOCOL.md, Who may call what, %s: the owner's %s "
                         "is not named" % (method, n))
    python_submit_sends_all(fails)
    if os.environ.get("SL_BIN"):
        python_submit_daemon(fails)
    else:
        print("no SL_BIN: Client.submit not tried against a daemon")
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("ok: %d Job members, %d submit and %d update parameters"
              % (len(job_fields.JOB_MEMBERS), len(job_fields.SUBMIT_PARAMS),
                 len(job_fields.UPDATE_PARAMS)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
