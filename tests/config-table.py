"""The settings' table is the one list of settings.

`stageloadd --print-config` prints every row of the table in
daemon/config-settings.c
(with a line of help each). This test holds the documentation to it: every
setting it prints is an `.It Ic` entry of stageload.conf(5) and is named in
docs/daemon.md, and neither names a setting the table does not have. A
printed config read back as a config file prints the same (the printer and
the parser agree, defaults included), and info reports each setting that
has a key there with the printed value.
"""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon  # noqa: E402

BIN = os.environ.get("SL_BIN", os.path.join(ROOT, "build", "bin"))
NOT_SETTINGS = {"group"}  # group.NAME.max_running: a key per group


def print_config(*extra):
    env = dict(os.environ, STAGELOAD_CONFIG="")
    out = subprocess.run([os.path.join(BIN, "stageloadd"), "--print-config",
                          "--db", "/nonexistent/sl.db"] + list(extra),
                         env=env, capture_output=True, text=True, check=True).stdout
    return out


def names_of(printed):
    return [m.group(1) for m in re.finditer(r"^#?([a-z_]+) = ", printed, re.M)]


def man_names():
    text = open(os.path.join(ROOT, "man", "stageload.conf.5")).read()
    names = set()
    for line in text.splitlines():
        if line.startswith(".It Ic "):
            for tok in re.findall(r"(?:Ic|,)\s+([a-z_]+)", line):
                names.add(tok)
    return names - NOT_SETTINGS


def main():
    printed = print_config()
    table = names_of(printed)
    assert len(table) == len(set(table)), table
    table = set(table)
    man = man_names()
    daemon_md = open(os.path.join(ROOT, "docs", "daemon.md")).read()
    bad = []
    for n in sorted(table - man):
        bad.append("stageload.conf(5) has no entry for %s" % n)
    for n in sorted(man - table):
        bad.append("stageload.conf(5) names %s, which is no setting" % n)
    for n in sorted(table):
        if "`%s`" % n not in daemon_md and "--%s" % n.replace("_", "-") not in daemon_md:
            bad.append("docs/daemon.md does not name %s" % n)
    for b in bad:
        print(b)
    assert not bad, "%d differences between the table and the docs" % len(bad)
    print("ok   %d settings: each in stageload.conf(5) and docs/daemon.md" % len(table))

    # The printer and the parser agree: what it prints, read back, prints
    # the same; a changed value comes back changed.
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        conf = os.path.join(d, "sl.conf")
        lines = [ln for ln in printed.splitlines()
                 if ln and not ln.startswith("#") and
                 not ln.startswith(("socket ", "db ", "state_dir "))]
        lines = [("max_clients = 123" if ln.startswith("max_clients =") else ln)
                 for ln in lines]
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        again = print_config("--config", conf)
        want = printed.replace("max_clients = 4096", "max_clients = 123")
        assert again == want, "\n".join(
            "%s | %s" % (a, b) for a, b in zip(again.splitlines(), want.splitlines()) if a != b)
    print("ok   a printed config read back prints the same")

    # info's defaults and limits are the table's values.
    with Daemon(interval="0.5") as dm:
        info = Client(dm.socket).call("info")
        lim, de = info["limits"], info["defaults"]
        assert lim["max_clients"] == 4096 and lim["max_input_bytes_per_uid"] == 8 << 20, lim
        assert lim["max_unread_bytes_per_uid"] == 16 << 20, lim
        assert lim["min_free_disk"] == "auto", lim
        assert de["hol_bound_ms"] == 600000 and de["max_wait_free_pct"] == 95, de
        assert dm.stop() == 0
    print("ok   info's defaults and limits come from the table")
    print("PASS")


if __name__ == "__main__":
    main()
