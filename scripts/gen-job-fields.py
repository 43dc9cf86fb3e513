#!/usr/bin/env python3
"""Write python/stageload/job_fields.py from proto/job-fields.h.

The C table is the one declaration of a job's fields; Python's list of
the Job's members and of submit's and update's parameters is read from
it here, checked in, and compared with the table by the job_fields test
(--check). Run it after changing the table:

    scripts/gen-job-fields.py            # rewrite the file
    scripts/gen-job-fields.py --check    # exit 1 when it is stale
"""
import argparse
import os
import re
import sys
from typing import Dict, List, NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "proto", "job-fields.h")
OUT = os.path.join(ROOT, "python", "stageload", "job_fields.py")

ROW = re.compile(r"^X\((.*)\)\s*\\?\s*$")
C_LIMITS = {"INT64_MAX": 2**63 - 1, "UINT32_MAX": 2**32 - 1}


class Field(NamedTuple):
    member: str
    wire: str
    store: str
    column: str
    job: str
    vis: str
    submit: str
    update: bool
    lo: int
    hi: int
    unit: str
    web: str


def c_int(text: str) -> int:
    text = text.strip()
    if text in C_LIMITS:
        return C_LIMITS[text]
    neg = text.startswith("-")
    digits = text.lstrip("-")
    if len(digits) > 1 and digits.startswith("0") and digits.isdigit():
        v = int(digits, 8)
    else:
        v = int(digits, 0)
    return -v if neg else v


def read_table(path: str) -> List[Field]:
    fields = []
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            # JOB_FIELDS' rows only: the macro ends at a line without "\\"
            if line.startswith("#define JOB_FIELDS(X)"):
                inside = True
                continue
            if not inside:
                continue
            if not line.rstrip().endswith("\\"):
                inside = False
            m = ROW.match(line.strip())
            if m is None:
                continue
            cells = [c.strip() for c in m.group(1).split(",")]
            if len(cells) != 12:
                raise SystemExit("%s: a row of %d cells, not 12: %s"
                                 % (path, len(cells), line.strip()))
            fields.append(Field(
                member=cells[0], wire=cells[1].strip('"'), store=cells[2],
                column=cells[3].strip('"'), job=cells[4], vis=cells[5],
                submit=cells[6], update=cells[7] == "1", lo=c_int(cells[8]),
                hi=c_int(cells[9]), unit=cells[10], web=cells[11]))
    if not fields:
        raise SystemExit("%s: no rows" % path)
    return fields


PARAM_TYPES: Dict[str, str] = {
    "P_INT": "int", "P_NUM": "number", "P_BOOL": "bool",
    "P_STRING": "string", "P_STRING_REQ": "string",
    "P_STRV": "strv", "P_STRV_REQ": "strv", "P_INTV": "intv",
}
UNITS: Dict[str, str] = {
    "U_SIZE": "size", "U_DURATION": "duration", "U_TIME": "time",
    "U_PERCENT": "percent", "U_COUNT": "count", "U_NONE": "",
}


def param_line(f: Field) -> str:
    ranged = f.submit in ("P_INT", "P_NUM", "P_INTV")
    return "    %r: Param(%r, %s, %r, %r, %r),\n" % (
        f.wire, PARAM_TYPES[f.submit], f.submit.endswith("_REQ"),
        f.lo if ranged else None, f.hi if ranged else None, UNITS[f.unit])


def render(fields: List[Field]) -> str:
    out = ['"""The job fields of proto/job-fields.h, for Python.\n\n'
           "Written by scripts/gen-job-fields.py from the C table; do not "
           "edit.\n"
           "The job_fields test fails when it differs from the table.\n"
           '"""\n',
           "from typing import Dict, NamedTuple, Optional, Tuple\n\n\n",
           "class Param(NamedTuple):\n",
           "    type: str  # int number bool string strv intv\n",
           "    required: bool\n",
           "    lo: Optional[int]  # int, number and intv: the range\n",
           "    hi: Optional[int]\n",
           "    unit: str  # size duration time percent count, or ''\n\n\n",
           "# The Job's members (PROTOCOL.md, Job), in its order.\n",
           "JOB_MEMBERS: Tuple[str, ...] = (\n"]
    out += ["    %r,\n" % f.wire for f in fields if f.job != "J_NO"]
    out.append(")\n\n# Those only the job's owner and root see.\n"
               "OWNER_MEMBERS: Tuple[str, ...] = (\n")
    out += ["    %r,\n" % f.wire for f in fields
            if f.job != "J_NO" and f.vis == "OWNER"]
    out.append(")\n\n# submit's parameters.\n"
               "SUBMIT_PARAMS: Dict[str, Param] = {\n")
    out += [param_line(f) for f in fields if f.submit != "P_NO"]
    out.append("}\n\n# update's, besides id.\n"
               "UPDATE_PARAMS: Dict[str, Param] = {\n")
    out += [param_line(f) for f in fields if f.submit != "P_NO" and f.update]
    out.append("}\n")
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the checked-in file, write nothing")
    ap.add_argument("--table", default=TABLE)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    text = render(read_table(a.table))
    if a.check:
        try:
            with open(a.out, encoding="utf-8") as f:
                had = f.read()
        except FileNotFoundError:
            had = ""
        if had != text:
            print("%s is not what %s gives: run scripts/gen-job-fields.py"
                  % (os.path.relpath(a.out, ROOT),
                     os.path.relpath(a.table, ROOT)), file=sys.stderr)
            return 1
        print("%s matches %s" % (os.path.relpath(a.out, ROOT),
                                 os.path.relpath(a.table, ROOT)))
        return 0
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
