#!/usr/bin/env python3
"""Write python/stageload/job_fields.py from proto/job-fields.h.

The C table is the one declaration of a job's fields; Python's list of
the Job's members, of submit's and update's parameters and of
stageloadctl's job options (JOB_CLI) is read from it here, checked in, and compared with the table by the job_fields test
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


class CliOption(NamedTuple):
    member: str
    option: str
    metavar: str  # "" for a flag
    value: str    # CLI_SIZE ... without its prefix, lower case
    also: str
    run: bool     # run and guard take it too (cmds JOB), else submit only
    update: bool
    help: str


def c_cells(text: str) -> List[str]:
    """A row's cells: split at commas outside string literals, adjacent
    literals joined, each literal's escapes read."""
    cells, cur, i = [], "", 0
    strs: List[str] = []
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j, lit = i + 1, ""
            while text[j] != '"':
                if text[j] == "\\":
                    lit += {"n": "\n", "t": "\t"}.get(text[j + 1], text[j + 1])
                    j += 2
                else:
                    lit += text[j]
                    j += 1
            strs.append(lit)
            cur += "\0"  # a literal goes here
            i = j + 1
        elif ch == ",":
            cells.append((cur, strs))
            cur, strs = "", []
            i += 1
        else:
            cur += ch
            i += 1
    cells.append((cur, strs))
    out = []
    for raw, lits in cells:
        out.append("".join(lits) if "\0" in raw else raw.strip())
    return out


def read_cli(path: str) -> List[CliOption]:
    """JOB_CLI's rows: each option of stageloadctl's job options."""
    body, inside = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#define JOB_CLI(X)"):
                inside = True
                continue
            if not inside:
                continue
            body.append(line.rstrip().rstrip("\\"))
            if not line.rstrip().endswith("\\"):
                break
    rows = re.split(r"(?m)^X\(", "\n".join(body))[1:]
    opts = []
    for row in rows:
        row = row.strip()
        if not row.endswith(")"):
            raise SystemExit("%s: a JOB_CLI row not closed: %s" % (path, row))
        cells = c_cells(row[:-1])
        if len(cells) != 11:
            raise SystemExit("%s: a JOB_CLI row of %d cells, not 11: %s"
                             % (path, len(cells), row))
        opts.append(CliOption(
            member=cells[0], option=cells[1],
            metavar="" if cells[3] == "NULL" else cells[3],
            value=cells[4][len("CLI_"):].lower(), also=cells[7],
            run=cells[8] == "JOB", update=cells[9] == "1", help=cells[10]))
    return opts


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


def render(fields: List[Field], opts: List[CliOption]) -> str:
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
           "class Option(NamedTuple):\n",
           "    param: str  # the parameter it sets\n",
           "    value: str  # how it is read: flag text int size duration "
           "limit begin pct free\n",
           "    metavar: str  # '' for a flag\n",
           "    run: bool  # run and guard take it too, not submit alone\n",
           "    update: bool\n",
           "    help: str\n\n\n",
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
    out.append("}\n\n# stageloadctl's job options (JOB_CLI), by long "
               "option.\nCLI_OPTIONS: Dict[str, Option] = {\n")
    wire = {f.member: f.wire for f in fields}
    out += ["    %r: Option(%r, %r, %r, %s, %s,\n           %r),\n" % (
        o.option, wire[o.member], o.value, o.metavar, o.run, o.update,
        o.help) for o in opts]
    out.append("}\n")
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the checked-in file, write nothing")
    ap.add_argument("--table", default=TABLE)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    text = render(read_table(a.table), read_cli(a.table))
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
