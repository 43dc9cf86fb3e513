#!/usr/bin/env python3
"""The shape of the C code: files over 800 and 1,000 lines and functions
over 80 lines in daemon/, client/, proto/ and web/ (docs/benchmarks.md,
"Code shape"). A function is what clang-format lays out in this tree: its
name at the start of a line, its body from a "{" to a "}" alone at the
start of a line.

usage: scripts/code-shape.py [--list] [REV]   (REV: read that commit's tree)
"""

import re
import subprocess
import sys

DIRS = ("daemon", "client", "proto", "web")


def files_at(rev):
    if rev is None:
        out = subprocess.run(["git", "ls-files"] + list(DIRS), capture_output=True,
                             text=True, check=True).stdout.split()
        return {f: open(f, encoding="utf-8", errors="replace").read()
                for f in out if f.endswith((".c", ".h"))}
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev] + list(DIRS),
                         capture_output=True, text=True, check=True).stdout.split()
    return {f: subprocess.run(["git", "show", "%s:%s" % (rev, f)], capture_output=True,
                              text=True, errors="replace", check=True).stdout
            for f in out if f.endswith((".c", ".h"))}


def functions(text):
    lines = text.split("\n")
    name = None
    start = None
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\(", line)
        if m:
            name = m.group(1)
        elif line == "{" and name is not None:
            start = i
        elif line == "}" and start is not None:
            yield name, i - start + 1
            name, start = None, None


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    rev = args[0] if args else None
    files = files_at(rev)
    sizes = {f: t.count("\n") for f, t in files.items() if f.endswith(".c")}
    long_fns = sorted(((n, f, fn) for f, t in files.items() for fn, n in functions(t)
                       if n > 80), reverse=True)
    over800 = sorted((n, f) for f, n in sizes.items() if n > 800)
    over1000 = [f for n, f in over800 if n > 1000]
    print("%s: %d C files; over 800 lines: %d; over 1,000: %d; functions over 80 "
          "lines: %d" % (rev or "work tree", len(sizes), len(over800), len(over1000),
                         len(long_fns)))
    if "--list" in sys.argv:
        for n, f in reversed(over800):
            print("  file %5d %s" % (n, f))
        for n, f, fn in long_fns:
            print("  function %4d %s %s" % (n, f, fn))


if __name__ == "__main__":
    main()
