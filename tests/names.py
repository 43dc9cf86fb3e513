"""The protocol's words have one home, proto/names.h, and everything that
says them agrees with it: the Python package's queue line (guard.WAIT_LINES
is names.h's line column, word for word), proto/PROTOCOL.md's lists of
states, end reasons, pressure names, event kinds and waiting_for values,
docs/cli.md's REASON table, the words the daemon's sources pass as an end
reason, and those the CLI and the web program compare a job's state, end
reason or an event's kind with. A name added to names.h and missed by any of
them fails here; so does one they say that names.h lacks.

Reads the sources only (SL_SRC, default the tree this file is in).
"""

import os
import re
import sys
from typing import Dict, List, Tuple

SRC = os.environ.get("SL_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "python"))

failures: List[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def read(path: str) -> str:
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|-?\d+|[A-Za-z_]\w*|[(),]')


def x_list(header: str, macro: str) -> List[Tuple]:
    """The rows of #define MACRO(X) X(...) X(...): each a tuple of its
    arguments, identifiers and numbers as text, adjacent string literals
    joined into one str."""
    m = re.search(r"#define %s\(X\)((?:.*\\\n)*.*)" % macro, header)
    if m is None:
        raise SystemExit("names.py: no %s in proto/names.h" % macro)
    body = m.group(1).replace("\\\n", " ")
    toks = [t for t in TOKEN.findall(body) if not t.isspace()]
    rows: List[Tuple] = []
    i = 0
    while i < len(toks):
        if toks[i] != "X" or toks[i + 1] != "(":
            raise SystemExit("names.py: cannot read %s near %r" % (macro, toks[i:i + 3]))
        i += 2
        args: List = []
        cur = None
        while toks[i] != ")":
            t = toks[i]
            if t == ",":
                args.append(cur)
                cur = None
            elif t.startswith('"'):
                s = t[1:-1].encode().decode("unicode_escape")
                cur = s if cur is None else cur + s
            else:
                cur = t
            i += 1
        args.append(cur)
        rows.append(tuple(args))
        i += 1
    return rows


def backticked(text: str) -> List[str]:
    return re.findall(r"`([^`]+)`", text)


def sentence(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i)]


def main() -> int:
    h = read("proto/names.h")
    waits = x_list(h, "NAMES_WAIT_LIST")
    states = [r[1] for r in x_list(h, "NAMES_STATE_LIST")]
    ends = [r[1] for r in x_list(h, "NAMES_END_LIST")]
    pressures = [r[2] for r in x_list(h, "NAMES_PRESSURE_LIST")]
    events = [r[1] for r in x_list(h, "NAMES_EVENT_LIST")]
    wait_names = [r[1] for r in waits]
    check(len(waits) >= 13 and wait_names[0] == "none",
          "names.h: at least 13 waiting_for values, none first (got %s)"
          % wait_names)

    # The Python package says the same line for each, and no other.
    # stageload.guard is also the package's guard() function: the module
    # itself is in sys.modules.
    import importlib
    guard = importlib.import_module("stageload.guard")
    lines: Dict[str, str] = {r[1]: r[3] for r in waits}
    for name, line in lines.items():
        check(guard.WAIT_LINES.get(name) == line,
              "python guard.WAIT_LINES[%r] is %r, names.h says %r"
              % (name, guard.WAIT_LINES.get(name), line))
    for name in guard.WAIT_LINES:
        check(name in lines, "python guard.WAIT_LINES has %r, names.h does not" % name)
    for name in wait_names:
        arg = "after 7" if name == "after" else name
        check("other" not in guard.queue_line(1, 1, 50, 40, arg),
              "python queue_line(%r) reads as other" % arg)

    proto = read("proto/PROTOCOL.md")
    got = backticked(sentence(proto, "`state` is one of", "(docs/jobs.md"))[1:]
    check(got == states, "PROTOCOL.md states %s, names.h %s" % (got, states))
    got = backticked(sentence(proto, "`end_reason` is one of", "or null while"))[1:]
    check(got == ends, "PROTOCOL.md end reasons %s, names.h %s" % (got, ends))
    got = backticked(sentence(proto, "`pressure` is `", "."))[1:]
    check(sorted(got) == sorted(pressures),
          "PROTOCOL.md pressure %s, names.h %s" % (got, pressures))
    got = backticked(sentence(proto, "kinds: `submitted`", ". An\n"))
    check(got == events, "PROTOCOL.md event kinds %s, names.h %s" % (got, events))
    said = set(w.split()[0] for w in backticked(
        sentence(proto, "a queued job also has `waiting_for`", "The daemon may add")))
    for name in wait_names[1:]:
        check(name in said, "PROTOCOL.md, Job: waiting_for %r missing" % name)
    for name in said - {"waiting_for", "queue", "hold", "release", "job_exit",
                         "group.NAME.max_running"}:
        check(name in wait_names, "PROTOCOL.md, Job: waiting_for %r not in names.h" % name)

    cli = read("docs/cli.md")
    table = sentence(cli, "| waiting_for | REASON |", "\n\n")
    rows = set(re.findall(r"^\| `([a-z_]+)", table, re.M))
    for name in wait_names[1:]:
        check(name in rows, "docs/cli.md REASON table: %r missing" % name)

    # The daemon's own words: every end reason it passes as a literal is in
    # the list (event kinds it passes as enum names_event).
    daemon = os.path.join(SRC, "daemon")
    for fn in sorted(os.listdir(daemon)):
        if not fn.endswith(".c"):
            continue
        text = read(os.path.join("daemon", fn))
        for r in re.findall(r'jrec_end\(\s*\w+,\s*\w+,\s*JOB_\w+,\s*"([a-z_]+)"', text):
            check(r in ends, "daemon/%s: end reason %r not in names.h" % (fn, r))
        for r in re.findall(r'jobs_kill_start\(\s*\w+,\s*\w+,\s*"([a-z_]+)"', text):
            check(r in ends, "daemon/%s: end reason %r not in names.h" % (fn, r))

    # What the clients compare a job's state, end reason or an event's
    # kind with (strcmp(j->state, "queued")) is a word of the lists.
    n = 0
    for sub in ("client", "web"):
        for fn in sorted(os.listdir(os.path.join(SRC, sub))):
            # cli-generate.c's "kind" is what it generates (man, bash)
            if not fn.endswith(".c") or fn == "cli-generate.c":
                continue
            text = read(os.path.join(sub, fn))
            for field, want in (("state", states), ("end_reason", ends), ("kind", events)):
                pat = r'(?:strcmp|state_is)\(\s*[^,;]*\b%s\b[^,;]*,\s*"([a-z_]+)"\)' % field
                for w in re.findall(pat, text):
                    n += 1
                    check(w in want, "%s/%s: %s %r not in names.h" % (sub, fn, field, w))
    check(n >= 20, "found only %d comparisons of states, end reasons and kinds" % n)
    # and the Python package's (job.get("state") == "queued")
    pkg = os.path.join(SRC, "python", "stageload")
    m = 0
    for fn in sorted(os.listdir(pkg)):
        if not fn.endswith(".py"):
            continue
        text = read(os.path.join("python", "stageload", fn))
        for field, want in (("state", states), ("end_reason", ends), ("kind", events)):
            pat = r'(?:get\("%s"\)|\["%s"\])\s*[!=]=\s*"([a-z_]+)"' % (field, field)
            for w in re.findall(pat, text):
                m += 1
                check(w in want, "python/stageload/%s: %s %r not in names.h" % (fn, field, w))
    check(m >= 4, "found only %d comparisons in the Python package" % m)

    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("names: %d waiting_for, %d states, %d end reasons, %d pressure names, "
          "%d event kinds agree" % (len(waits), len(states), len(ends), len(pressures),
                                   len(events)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
