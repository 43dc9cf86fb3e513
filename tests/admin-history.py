"""history with the daemon stopped (docs/cli.md, "history"): stageloadctl
reads the database itself, read-only, and prints the same buckets it
printed while the daemon ran (table, CSV and JSON, a raw and a rollup
tier), saying on stderr that the daemon is down and which file it read; it
creates nothing beside the database; a job's history too, with its stages;
a user who may not read the database gets 77 and is told to use sudo.
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, poll, users_bin, write_meminfo  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def run(sock, *args, user=None, env=None):
    """stageloadctl; as user, a copy every user can run (the build may be
    under /root, 0700)."""
    if user is None:
        return subprocess.run([BIN, "--socket", sock] + list(args), capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL, env=env)
    ubin = users_bin(os.path.dirname(BIN))
    try:
        env = dict(env if env is not None else os.environ, LD_LIBRARY_PATH=ubin)
        argv = [os.path.join(ubin, "stageloadctl")] + (["--socket", sock] if sock else [])
        return subprocess.run(["setpriv", "--reuid", str(user), "--regid", str(user),
                               "--clear-groups"] + argv + list(args), capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL, env=env)
    finally:
        shutil.rmtree(ubin, ignore_errors=True)


def main():
    with Daemon(interval="0.1") as d:
        c = Client(d.socket)
        t0 = int(time.time() * 1000)
        # Samples that differ: free % steps down and up again.
        for i, pct in enumerate((60, 40, 20, 45)):
            write_meminfo(d.proc_root, avail_kb=(16 << 20) * pct // 100,
                          swap_free_kb=(4 << 20) - i * 1000)
            poll(lambda: abs(c.call("info")["sample"]["free_pct"] - pct) < 0.01,
                 what="a sample at %d%%" % pct)
            time.sleep(0.3)
        # A job with two stages, to be read back by --job.
        # (a stage is taken only once the job is running: the script
        # waits for that, at most 10 s)
        script = ('i=0; until "$CTL" --json show "$STAGELOAD_JOB_ID" | '
                  'grep -q \'"state":"running"\'; do i=$((i+1)); '
                  '[ $i -lt 200 ] || exit 3; sleep 0.05; done; '
                  '"$CTL" stage encode; sleep 0.6; "$CTL" stage decode; '
                  'sleep 0.6')
        jid = c.call("submit", {"argv": ["sh", "-c", script], "cwd": "/",
                                "env": ["PATH=/usr/bin:/bin", "CTL=" + os.path.abspath(BIN),
                                        "STAGELOAD_SOCKET=" + d.socket]})["id"]
        assert c.call("wait", {"id": jid}, timeout=30)["state"] == "exited"
        until = int(time.time() * 1000)
        # A rollup row holds its whole 10 s, later samples too: the 10 s
        # query ends at a boundary the clock has passed, so what it reads
        # no longer changes while the daemon runs on.
        until10 = -(-until // 10000) * 10000
        poll(lambda: time.time() * 1000 > until10 + 300, timeout=15,
             what="the next 10 s boundary")
        c.close()
        queries = [
            ("--job", str(jid), "--since", str(t0 - 2000), "--step", "200ms"),
            ("--job", str(jid), "--since", str(t0 - 2000), "--until", str(until),
             "--step", "1s"),
            ("--since", str(t0 - 2000), "--until", str(until), "--step", "500ms"),
            ("--since", str(t0 - 60000), "--until", str(until10), "--step", "10s"),
        ]
        before = {}
        for q in queries:
            for fmt in ("table", "csv", "json"):
                out = run(d.socket, "history", "--format", fmt, *q)
                assert out.returncode == 0 and out.stderr == "", out
                before[(q, fmt)] = out.stdout
        assert before[(queries[2], "json")].count('"ts_ms"') >= 3, before
        assert json.loads(before[(queries[3], "json")])["tier"] == "10s"
        stages = [b["stage"] for b in json.loads(before[(queries[0], "json")])["buckets"]]
        assert "encode" in stages and "decode" in stages, stages
        assert d.stop() == 0
        files = sorted(os.listdir(d.dir))

        # The test daemon's database is not the default one: --db names it.
        for q in queries:
            for fmt in ("table", "csv", "json"):
                out = run(d.socket, "history", "--db", d.db, "--format", fmt, *q)
                assert out.returncode == 0, out
                assert ("the daemon is down: read %s directly, read-only" % d.db) \
                    in out.stderr, out.stderr
                if fmt == "json":
                    got = json.loads(out.stdout)
                    assert got.pop("read_from") == d.db, got
                    assert got == json.loads(before[(q, fmt)]), (got, before[(q, fmt)])
                else:
                    assert out.stdout == before[(q, fmt)], (q, fmt, out.stdout,
                                                            before[(q, fmt)])
        # Without --db: the default database of a per-user daemon, which
        # is not there.
        env_home = dict(os.environ, HOME=d.dir, XDG_STATE_HOME=os.path.join(d.dir, "st"))
        out = subprocess.run([BIN, "--socket", d.socket, "history"], capture_output=True,
                             text=True, timeout=30, env=env_home)
        assert out.returncode == 69 and ("cannot read its database: %s/st/stageload/"
                                         "stageload.db: No such file" % d.dir) \
            in out.stderr, out
        out = run(d.socket, "history", "--db", d.db, "--job", "999")
        assert out.returncode == 1 and "no job 999" in out.stderr, out
        assert sorted(os.listdir(d.dir)) == files, (files, os.listdir(d.dir))
        print("ok   history with the daemon stopped prints the same buckets (table, "
              "csv, json; raw and 10s; a job's, with its stages), read-only, and "
              "says so")

        if os.geteuid() == 0 and not os.path.exists("/var/run/stageload.sock"):
            # No socket named and no database of this user's: the system
            # daemon's (down: its socket is gone), which nobody may read.
            env = dict(os.environ, HOME=d.dir, XDG_STATE_HOME=os.path.join(d.dir, "st"),
                       XDG_RUNTIME_DIR=d.dir)
            env.pop("STAGELOAD_SOCKET", None)
            out = run(None, "history", user=65534, env=env)
            assert out.returncode in (69, 77) and "/var/lib/stageload/stageload.db" in out.stderr \
                and "/st/stageload" not in out.stderr, out
            print("ok   no socket named, no database of one's own: the system daemon's")
        if os.geteuid() == 0:
            out = run(d.socket, "history", "--db", d.db, user=65534)
            assert out.returncode == 77, out
            assert "Permission denied" in out.stderr and "sudo stageloadctl history" \
                in out.stderr, out.stderr
            print("ok   a user who may not read the database is told so (77), "
                  "nothing elevated")
        else:
            print("skip the check as another user needs root")
    print("PASS")


if __name__ == "__main__":
    main()
