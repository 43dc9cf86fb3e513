#!/usr/bin/env python3
"""Read the command entries of stageloadctl from its sources, for
tests/cli-entries.sh: one line per command,

    NAME ALIAS|- FLAGS OPERANDS|- OPTION...

FLAGS is "json" or "nojson", with ",cmdline" when its options end at the
first operand; an OPTION is "name" for a flag and "name=" for one that
takes a value. The tables are read from client/*.c as they are written
(struct cli_option NAME[] = {...}; const struct cli_entry cmd_X_entry =
{...}), the job options of proto/job-fields.h's JOB_CLI where a table
names JOB_CLI(OPT_JOB), JOB_CLI(OPT_SUBMIT) or JOB_CLI(OPT_UPDATE), so the
test compares what the code declares with what the program shows. Exits 1, saying why, when a command file parses options itself.
"""
import glob
import os
import re
import sys


def read_job_cli(path):
    """JOB_CLI's rows: (option as in a table, cmds, update)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"#define JOB_CLI\(X\)(.*?[^\\])\n", text, re.S)
    rows = []
    for m in re.finditer(r'X\(\s*\w+\s*,\s*"([a-z][a-z0-9-]*)"\s*,\s*[^,]+,'
                         r'\s*(?:NULL|"[^"]*")\s*,\s*(CLI_\w+)\s*,[^,]+,[^,]+,'
                         r'\s*\w+\s*,\s*(\w+)\s*,\s*([01])\s*,',
                         body.group(1) if body else ""):
        rows.append((m.group(1) + ("" if m.group(2) == "CLI_FLAG" else "="),
                     m.group(3), m.group(4)))
    return rows


def main():
    src = sys.argv[1]
    text = {}
    for path in sorted(glob.glob(os.path.join(src, "client", "*.c"))):
        with open(path, encoding="utf-8") as f:
            text[os.path.basename(path)] = f.read()
    bad = [name for name, t in text.items() if name.startswith("cmd-")
           and re.search(r"\bgetopt\w*\s*\(|struct\s+option\b|\boptind\b", t)]
    if bad:
        sys.exit("these command files parse options themselves instead of "
                 "declaring them in their entry: " + ", ".join(bad))
    job_cli = read_job_cli(os.path.join(src, "proto", "job-fields.h"))
    tables = {}
    for t in text.values():
        for m in re.finditer(r"struct\s+cli_option\s+(\w+)\s*\[\]\s*=\s*\{(.*?)\n\};",
                             t, re.S):
            opts = []
            for use in re.findall(r"\bJOB_CLI\((OPT_\w+)\)", m.group(2)):
                opts += [o for o, cmds, upd in job_cli
                         if {"OPT_JOB": cmds == "JOB",
                             "OPT_SUBMIT": cmds == "SUBMIT",
                             "OPT_UPDATE": upd == "1"}[use]]
            for row in re.finditer(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*([^,]+),\s*(CLI_\w+)',
                                   m.group(2)):
                opts.append(row.group(1) + ("" if row.group(3) == "CLI_FLAG" else "="))
            tables[m.group(1)] = opts
    with open(os.path.join(src, "client", "cmd-list.h"), encoding="utf-8") as f:
        listed = re.findall(r"^CLI_COMMAND\((\w+)\)", f.read(), re.M)
    entries = {}
    for name, t in text.items():
        for m in re.finditer(r"const\s+struct\s+cli_entry\s+cmd_(\w+)_entry\s*=\s*\{(.*?)\n\};",
                             t, re.S):
            body = m.group(2)

            def field(key):
                f = re.search(r"\." + key + r"\s*=\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+|\w+)", body)
                return f.group(1) if f else None

            opts = []
            for key in ("options", "more_options"):
                tab = field(key)
                if tab is not None:
                    if tab not in tables:
                        sys.exit("%s: cmd_%s_entry names the table %s, not found"
                                 % (name, m.group(1), tab))
                    opts += tables[tab]
            operands = field("operands")
            # operands a command runs without (min_operands 0) are shown
            # optional in its usage line, man page and docs: [ID...]
            if (operands and field("min_operands") in (None, "0")
                    and not operands.strip('"').startswith("[")):
                sys.exit("%s: cmd_%s_entry takes no operand at least, but "
                         "its usage shows %s as required (write [%s])"
                         % (name, m.group(1), operands, operands.strip('"')))
            flags = "json" if field("json") else "nojson"
            if field("flags") and "CLI_COMMAND_LINE" in field("flags"):
                flags += ",cmdline"
            alias = field("alias")
            entries[m.group(1)] = " ".join(
                [field("name").strip('"'),
                 alias.strip('"') if alias else "-", flags,
                 operands.strip('"').replace(" ", "_") if operands else "-"] + opts)
    missing = [c for c in listed if c not in entries]
    unlisted = [c for c in entries if c not in listed]
    if missing or unlisted:
        sys.exit("cmd-list.h and the entries differ: no entry for %s; not "
                 "listed: %s" % (missing, unlisted))
    for c in listed:
        print(entries[c])


if __name__ == "__main__":
    main()
