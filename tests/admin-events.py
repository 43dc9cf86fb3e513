"""journalctl-style events and logs (docs/cli.md, "events", "logs"):
- `events -n 3` prints the 3 newest events, each with its id, oldest of
  the three first; with no -n, the newest 20;
- `--job` and `--user` keep that job's or user's events; `--since` and
  `--until` cut by time;
- `events -f -n 2` starts at the tail: the 2 newest, then new ones live,
  never the older backlog;
- `logs -n 2` prints a job's last two lines; `logs -n 2 -f` too, then
  follows to the end.
Runs as any user.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, poll, write_meminfo  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
ENV = ["PATH=/usr/bin:/bin"]


def ctl(sock, *args):
    out = subprocess.run([BIN, "--socket", sock] + list(args), capture_output=True,
                         text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def ids_of(text):
    return [int(ln.split()[0]) for ln in text.splitlines()]


def all_events(c):
    return c.call("events", {"limit": 10000})["events"]


def main():
    with Daemon() as d:
        c = Client(d.socket)
        jobs = []
        for i in range(12):
            r = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ENV,
                                  "name": "j%d" % i})
            jobs.append(r["id"])
        for j in jobs:
            c.call("wait", {"id": j}, timeout=30)
        ev = all_events(c)
        assert len(ev) > 30, len(ev)

        out = ctl(d.socket, "events", "-n", "3")
        assert ids_of(out) == [e["id"] for e in ev[-3:]], (out, ev[-3:])
        last = ev[-1]
        assert ("job %d" % last["job_id"]) in out.splitlines()[-1], out
        assert ids_of(ctl(d.socket, "events")) == [e["id"] for e in ev[-20:]]
        js = [l for l in ctl(d.socket, "events", "-n", "3", "--json").splitlines()]
        assert len(js) == 3 and '"id":%d' % last["id"] in js[-1], js
        print("ok   events -n 3: the 3 newest with their ids; 20 by default")

        j = jobs[4]
        mine = [e["id"] for e in ev if e["job_id"] == j]
        out = ctl(d.socket, "events", "--job", str(j), "-n", "100")
        assert ids_of(out) == mine and len(mine) >= 3, (out, mine)
        user = ev[-1]["user"]
        out = ctl(d.socket, "events", "--user", user, "-n", "1000")
        assert ids_of(out) == [e["id"] for e in ev if e["user"] == user], out
        # A user the system does not know is a usage error (exit 2), not
        # an empty list that reads as "no events".
        out = subprocess.run([BIN, "--socket", d.socket, "events", "--user",
                              "nobody-here"], capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL)
        assert out.returncode == 2 and "no such user" in out.stderr, out
        # --since: a cut between two events a moment apart.
        time.sleep(0.05)
        cut = int(time.time() * 1000)
        time.sleep(0.05)
        late = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ENV})["id"]
        c.call("wait", {"id": late}, timeout=30)
        after = [e for e in all_events(c) if e["ts_ms"] >= cut]
        assert after and all(e["job_id"] == late for e in after), after
        out = ctl(d.socket, "events", "--since", str(cut), "-n", "1000")
        assert ids_of(out) == [e["id"] for e in after], (out, after)
        out = ctl(d.socket, "events", "--until", str(cut), "-n", "1000")
        assert ids_of(out) == [e["id"] for e in ev], out
        print("ok   events --job, --user, --since and --until filter")

        # -f starts at the tail: the 2 newest, then what comes.
        before = all_events(c)
        f = subprocess.Popen([BIN, "--socket", d.socket, "events", "-f", "-n", "2"],
                             stdout=subprocess.PIPE, text=True)
        try:
            got = [f.stdout.readline(), f.stdout.readline()]
            assert ids_of("".join(got)) == [e["id"] for e in before[-2:]], got
            new = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ENV})["id"]
            ln = f.stdout.readline()
            assert ("job %d" % new) in ln and "submitted" in ln, ln
            assert int(ln.split()[0]) > before[-1]["id"], ln
        finally:
            f.kill()
            f.wait()
            f.stdout.close()
        print("ok   events -f -n 2 starts at the tail and follows")

        # logs -n
        lines = "".join("line %d\n" % i for i in range(1, 8))
        r = c.call("submit", {"argv": ["printf", lines + "tail"], "cwd": "/",
                              "env": ENV})["id"]
        c.call("wait", {"id": r}, timeout=30)
        assert ctl(d.socket, "logs", "-n", "2", str(r)) == "line 7\ntail"
        assert ctl(d.socket, "logs", "-n", "1", str(r)) == "tail"
        assert ctl(d.socket, "logs", "-n", "100", str(r)) == lines + "tail"
        r = c.call("submit", {"argv": ["sh", "-c", "printf 'a\\nb\\nc\\n'; "
                              "while [ ! -e %s/go ]; do sleep 0.02; done; "
                              "echo d" % d.dir], "cwd": "/", "env": ENV})["id"]
        poll(lambda: ctl(d.socket, "logs", str(r)) == "a\nb\nc\n", what="the log")
        assert ctl(d.socket, "logs", "-n", "2", str(r)) == "b\nc\n"
        f = subprocess.Popen([BIN, "--socket", d.socket, "logs", "-f", "-n", "2",
                              str(r)], stdout=subprocess.PIPE, text=True)
        try:
            assert f.stdout.readline() == "b\n"
            assert f.stdout.readline() == "c\n"
            open(os.path.join(d.dir, "go"), "w").close()
            assert f.stdout.read() == "d\n"
            assert f.wait(timeout=30) == 0
        finally:
            if f.poll() is None:
                f.kill()
                f.wait()
            f.stdout.close()
        print("ok   logs -n 2 prints the last two lines; logs -f -n 2 then follows")

        # Past the daemon's pages (10000 events, or less when a page's
        # time is up): still the newest.
        write_meminfo(d.proc_root, avail_kb=(16 << 20) // 10)
        poll(lambda: c.call("info")["sample"]["free_pct"] < 20, what="10 % free")
        n = len(all_events(c))
        while n < 10100:
            q = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ENV,
                                  "wait_free_pct": 90})["id"]
            c.call("cancel", {"id": q})
            n += 2
        out = ctl(d.socket, "events", "-n", "3")
        last = c.call("events", {"after_id": n - 10, "limit": 100})["events"]
        assert ids_of(out) == [e["id"] for e in last[-3:]], (out, last[-3:])
        assert ("job %d" % q) in out.splitlines()[-1], out
        print("ok   events -n 3 past the daemon's first page (%d events)" % n)
        c.close()
        assert d.stop() == 0
    print("PASS")


if __name__ == "__main__":
    main()
