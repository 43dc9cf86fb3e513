#!/usr/bin/env python3
"""Print the C sources of the project's CMake targets as CMake sees them on
macOS, one target per line: NAME SRC... (paths relative to the source root).

The cross build reads the lists from CMakeLists.txt instead of keeping its
own copy, so a source added to a target is cross-built without anyone
remembering to tell it. Only the forms the project uses are understood:
set(VAR ...), file(GLOB VAR [CONFIGURE_DEPENDS] [RELATIVE dir] patterns...)
relative to the source root, add_library(NAME [STATIC|SHARED] ...),
add_executable(NAME ...) with ${VAR} references; the platform is fixed to
the APPLE branch.
"""
import glob
import os
import re
import sys

# What the if(APPLE) branch of CMakeLists.txt sets.
APPLE = {"SL_PLATFORM_SRC": ["daemon/platform-darwin.c"],
         "SL_DOCTOR_SRC": ["client/doctor-darwin.c", "client/desktop-darwin.c"],
         "SL_OS": ["darwin"]}
KEYWORDS = {"STATIC", "SHARED", "MODULE", "OBJECT", "EXCLUDE_FROM_ALL"}


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(root + "/CMakeLists.txt", encoding="utf-8") as f:
        text = strip_comments(f.read())
    variables = dict(APPLE)
    targets = {}
    for m in re.finditer(
            r"\b(set|add_library|add_executable|file)\s*\(([^)]*)\)",
            text, re.IGNORECASE):
        words = m.group(2).split()
        if not words:
            continue
        if m.group(1).lower() == "file":
            if words[0] != "GLOB" or len(words) < 2:
                continue
            patterns = words[2:]
            if patterns[:1] == ["CONFIGURE_DEPENDS"]:
                patterns = patterns[1:]
            if patterns[:1] == ["RELATIVE"]:
                patterns = patterns[2:]
            variables[words[1]] = sorted(
                os.path.relpath(path, root)
                for p in patterns for path in glob.glob(os.path.join(root, p)))
            continue
        name, args = words[0], words[1:]
        expanded = []
        for w in args:
            ref = re.fullmatch(r"\$\{(\w+)\}", w)
            if ref:
                expanded.extend(variables.get(ref.group(1), []))
            else:
                expanded.append(w)
        if m.group(1).lower() == "set":
            if name not in APPLE:
                variables[name] = expanded
            continue
        targets[name] = [w for w in expanded
                         if w not in KEYWORDS and w.endswith(".c")]
    if not targets:
        sys.exit("no targets found in %s/CMakeLists.txt" % root)
    for name, sources in targets.items():
        print(name, *sources)


if __name__ == "__main__":
    main()
