#!/usr/bin/env python3
"""proto/job-fields.h against what is written from it or about it:
Python's generated list is current (scripts/gen-job-fields.py --check),
and PROTOCOL.md names every member of the Job and every parameter of
submit and update that the table declares, in their sections."""
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
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("ok: %d Job members, %d submit and %d update parameters"
              % (len(job_fields.JOB_MEMBERS), len(job_fields.SUBMIT_PARAMS),
                 len(job_fields.UPDATE_PARAMS)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
