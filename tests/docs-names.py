"""Every name docs/architecture.md mentions is in the code.

A newcomer reads the architecture page to find a feature's file and a
step's function; a name that has drifted (a renamed function, a file split
or gone) sends them nowhere. Each name in backquotes that looks like a file
(foo.c, client/cmd-*.c, web/) must exist in the tree, and each that looks
like a C or Python identifier (jobs_on_sample_at, struct server_hooks,
ANSWERS_SLICE_NS) must appear as a whole word in some source file.
Also: every daemon, client, web and python/stageload source file is named
on the page (by its name or a glob that covers it), so no part of the
product is left out of the map.
"""

import fnmatch
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "architecture.md")
SOURCE_DIRS = ("daemon", "client", "proto", "web", "slurm", "python/stageload", "tests",
               "scripts", "bench")
MAPPED_DIRS = ("daemon", "client", "web", "slurm", "python/stageload")
SOURCE_EXT = (".c", ".h", ".py", ".sh", ".js")

FILE_RE = re.compile(r"^[\w./*-]+(\.(c|h|py|sh|md|js|html|css)|/)$")
IDENT_RE = re.compile(r"^(struct )?([a-z][a-z0-9]*(_[a-z0-9]+)+|[A-Z][A-Z0-9]*(_[A-Z0-9]+)+)$")


def tree_files():
    out = []
    for d in SOURCE_DIRS + ("docs", "proto"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, d)):
            for n in names:
                out.append(os.path.relpath(os.path.join(dirpath, n), ROOT))
    return out


def main():
    text = open(PAGE, encoding="utf-8").read()
    names = sorted(set(re.findall(r"`([^`\n]+)`", text)))
    files = tree_files()
    words = set()
    for f in files:
        if f.endswith(SOURCE_EXT):
            with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
                words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", fh.read()))
    missing = []
    checked = 0
    for n in names:
        if FILE_RE.match(n):
            checked += 1
            pat = n.rstrip("/")
            if n.endswith("/"):
                ok = os.path.isdir(os.path.join(ROOT, pat))
            elif "/" in pat:
                ok = any(fnmatch.fnmatch(f, pat) for f in files)
            else:
                ok = any(fnmatch.fnmatch(os.path.basename(f), pat) for f in files)
            if not ok and "foo" not in n:  # foo: the page's example
                missing.append("file %s" % n)
        elif IDENT_RE.match(n):
            checked += 1
            word = n.split()[-1]
            if word not in words:
                missing.append("name %s" % n)
    # Every product source file is on the map.
    patterns = [n for n in names if FILE_RE.match(n) and not n.endswith("/")]
    unmapped = []
    for d in MAPPED_DIRS:
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if not f.endswith((".c", ".h", ".py", ".js")):
                continue
            rel = "%s/%s" % (d, f)
            # A header goes with its module's .c file (jobs-internal.h
            # with jobs.c, platform-darwin-convert.h with its .c).
            stem = f[:-2] if f.endswith(".h") else None
            if stem is not None and any(fnmatch.fnmatch(c, p) for p in patterns
                                        for c in (stem + ".c", stem.split("-")[0] + ".c")):
                continue
            if not any(fnmatch.fnmatch(f, p) or fnmatch.fnmatch(rel, p) for p in patterns):
                unmapped.append(rel)
    for m in missing:
        print("docs/architecture.md names %s, which is not in the code" % m)
    for u in unmapped:
        print("docs/architecture.md does not name %s" % u)
    if missing or unmapped:
        print("FAIL: %d stale names, %d files not on the page" % (len(missing), len(unmapped)))
        sys.exit(1)
    print("ok   %d names on docs/architecture.md are in the code; every source file "
          "of %s is on it" % (checked, ", ".join(MAPPED_DIRS)))


if __name__ == "__main__":
    main()
