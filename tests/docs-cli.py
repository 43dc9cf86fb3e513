"""The console blocks of docs/cli.md and docs/units.md marked
`<!-- runnable -->` (or `<!-- runnable: SETUP -->`, shell run first) are
run against a test daemon with a fixture proc root, and each command's
output (stdout and stderr) is held to the documented shape: as many lines,
the same words where the shape is (shape(): a message's first two words
and its last, a table's header, a row's first word; numbers, sizes and
paths as they come), and
the exit code of its `# exit N` comment (0 without one). A block whose
output drifted from the code fails here, naming the line."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, poll  # noqa: E402

SRC = os.environ.get("SL_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(os.environ.get("SL_BIN", "build/bin"))
DOCS = ("docs/cli.md", "docs/units.md")

MARK = re.compile(r"^<!-- runnable(?::\s*(.*?))?\s*-->$")
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
# a number, with a fraction and a unit or a percent sign; a path
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[KMGTPE]i?B?|%|ms|s|B)?")
PATH = re.compile(r"(?<![\w.])/[^\s)'\"]*")


def blocks(path):
    """(line number, setup, [(command, exit, [expected lines])]) for each
    runnable block of the file."""
    with open(os.path.join(SRC, path)) as f:
        text = f.read().splitlines()
    out = []
    i = 0
    while i < len(text):
        m = MARK.match(text[i].strip())
        if not m:
            i += 1
            continue
        start = i + 1
        assert i + 1 < len(text) and text[i + 1].startswith("```"), \
            "%s:%d: runnable mark without a block after it" % (path, start)
        i += 2
        cmds = []
        while i < len(text) and not text[i].startswith("```"):
            line = text[i]
            if line.startswith("$ "):
                cmd = line[2:]
                code = 0
                e = EXIT.search(cmd)
                if e:
                    code = int(e.group(1))
                    cmd = cmd[:e.start()]
                cmds.append((cmd.strip(), code, []))
            else:
                assert cmds, "%s:%d: output before a command" % (path, i + 1)
                cmds[-1][2].append(line)
            i += 1
        assert cmds, "%s:%d: a runnable block without a command" % (path, start)
        out.append((start, m.group(1) or "", cmds))
    return out


def shape(line):
    """What must match, numbers and paths made generic: a table's header
    whole; a message ("stageloadctl: show: missing ID") its first two
    words and its last; any other line (a table's row) its first word."""
    words = PATH.sub("PATH", NUMBER.sub("N", line)).split()
    if not words:
        return []
    if len(words) > 1 and all(w.isupper() or w == "N" for w in words if w.isalpha()) \
            and any(w.isalpha() for w in words) and all(not w.islower() for w in words):
        return words
    if words[0].endswith(":"):
        return words[:2] + words[-1:]
    return words[:1]


def main():
    tmp = tempfile.mkdtemp(prefix="sl-docs-")
    # `stageloadctl` in the blocks is this build's; the daemon is the
    # test's, through $STAGELOAD_SOCKET as a user would point at it.
    shutil.copy(os.path.join(BIN, "stageloadctl"), os.path.join(tmp, "stageloadctl"))
    nblocks = 0
    try:
        with Daemon() as d:
            c = Client(d.socket)
            poll(lambda: c.call("info")["sample"] is not None, what="a first sample")
            c.close()
            env = dict(os.environ, STAGELOAD_SOCKET=d.socket,
                       PATH=tmp + os.pathsep + os.environ.get("PATH", ""))
            work = os.path.join(tmp, "work")
            os.makedirs(work)
            for doc in DOCS:
                for start, setup, cmds in blocks(doc):
                    nblocks += 1
                    if setup:
                        r = subprocess.run(["sh", "-c", setup], env=env, cwd=work,
                                           capture_output=True, text=True, timeout=60)
                        assert r.returncode == 0, "%s:%d: setup: %r" % (doc, start, r)
                    for cmd, code, want in cmds:
                        r = subprocess.run(["sh", "-c", cmd + " 2>&1"], env=env, cwd=work,
                                           capture_output=True, text=True, timeout=60,
                                           stdin=subprocess.DEVNULL)
                        got = r.stdout.splitlines()
                        where = "%s:%d: $ %s" % (doc, start, cmd)
                        assert r.returncode == code, "%s: exit %d, the doc says %d:\n%s" % (
                            where, r.returncode, code, r.stdout)
                        assert len(got) == len(want), "%s: %d lines, the doc shows %d:\n%s" % (
                            where, len(got), len(want), r.stdout)
                        for g, w in zip(got, want):
                            assert shape(g) == shape(w), "%s:\n  doc:  %s\n  real: %s" % (
                                where, w, g)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert nblocks >= 3, "only %d runnable blocks found" % nblocks
    print("ok - %d runnable blocks of %s match the real output's shape"
          % (nblocks, ", ".join(DOCS)))
    print("PASS")


if __name__ == "__main__":
    main()
