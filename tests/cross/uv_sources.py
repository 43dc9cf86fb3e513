#!/usr/bin/env python3
"""Print the C sources libuv's CMakeLists.txt builds on macOS, one a line.

Reads the list from libuv's own build file (so a different libuv release
brings its own list) by evaluating its if()/elseif()/else() blocks as CMake
would with CMAKE_SYSTEM_NAME=Darwin. Only what that file needs is
understood: set(uv_sources ...), list(APPEND uv_sources ...), and
conditions over WIN32, APPLE, UNIX, NOT/AND/OR and
CMAKE_SYSTEM_NAME MATCHES/STREQUAL; any other variable counts as unset.
"""
import re
import shlex
import sys

SYSTEM = "Darwin"
DEFINED = {"APPLE": True, "UNIX": True, "WIN32": False}


def commands(text):
    """Yield (name, argument string) for every command in the file."""
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    i = 0
    pattern = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
    while True:
        m = pattern.search(text, i)
        if not m:
            return
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
            j += 1
        yield m.group(1).lower(), text[m.end():j - 1]
        i = j


def evaluate(args):
    words = shlex.split(args.replace("(", " ").replace(")", " "))
    pos = 0

    def atom():
        nonlocal pos
        w = words[pos]
        pos += 1
        if w == "NOT":
            return not atom()
        if pos < len(words) and words[pos] in ("MATCHES", "STREQUAL"):
            op, rhs = words[pos], words[pos + 1]
            pos += 2
            lhs = SYSTEM if w == "CMAKE_SYSTEM_NAME" else w
            if op == "MATCHES":
                return re.search(rhs, lhs) is not None
            return lhs == rhs
        return DEFINED.get(w, False)

    def conj():
        nonlocal pos
        value = atom()
        while pos < len(words) and words[pos] == "AND":
            pos += 1
            value = atom() and value
        return value

    value = conj()
    while pos < len(words) and words[pos] == "OR":
        pos += 1
        value = conj() or value
    return value


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    # Each frame: [this branch active, some branch already taken]
    stack = []
    sources = []

    def active():
        return all(frame[0] for frame in stack)

    for name, args in commands(text):
        if name == "if":
            taken = evaluate(args)
            stack.append([taken, taken])
        elif name == "elseif":
            frame = stack[-1]
            frame[0] = not frame[1] and evaluate(args)
            frame[1] = frame[1] or frame[0]
        elif name == "else":
            frame = stack[-1]
            frame[0] = not frame[1]
        elif name == "endif":
            stack.pop()
        elif not active():
            continue
        elif name == "set" and args.split()[:1] == ["uv_sources"]:
            sources = args.split()[1:]
        elif name == "list" and args.split()[:2] == ["APPEND", "uv_sources"]:
            sources += args.split()[2:]
    seen = []
    for s in sources:
        if s.endswith(".c") and s not in seen:
            seen.append(s)
    if not seen:
        sys.exit("no uv_sources found in " + sys.argv[1])
    print("\n".join(seen))


if __name__ == "__main__":
    main()
