"""Why a job waits, said everywhere: each waiting_for the daemon gives
(free, head, expect, exclusive, settle, max_running, storage) appears in
status's REASON column, in top's on a pseudo-terminal and in show's
sentence; wait and logs -f print the progress line while the job is
queued (a line per change into a pipe, in place on a terminal). 39.7 %
free against 40 % never reads "40% < 40%". A Japanese and an emoji name
keep status's table aligned, measured in terminal cells (East Asian Width,
computed here by Python's unicodedata, not by the code under test), and a
long name is cut with an ellipsis. show's command line, given back to
sh -c, runs the same argv; -o id,user,reason prints those columns. A job
that waits for a size (--wait-free 12G) has its reason said as a size in
status, top, show and run's line.

The daemons read a fixture proc root: free % is what the test writes.
"""

import fcntl
import os
import re
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, kill_leftovers, poll, write_meminfo  # noqa: E402
from ptyjob import PtyJob  # noqa: E402

BIN = os.environ.get("SL_BIN", "build/bin")
CTL = os.path.join(BIN, "stageloadctl")
TOTAL_KB = 16 << 20
JA = "日本語のジョブ名"            # 8 characters, 16 cells
EMOJI = "rocket \U0001F680 job"      # the rocket takes 2 cells
LONG = "長" * 30                     # 60 cells: cut


def cells(s):
    return sum(0 if unicodedata.category(ch) in ("Mn", "Me", "Cf")
               else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
               for ch in s)


def set_free(d, pct, swap_kb=4 << 20):
    """Write the fixture and return once the daemon has sampled it."""
    t = int(time.time() * 1000)
    write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=int(TOTAL_KB * pct / 100),
                  swap_total_kb=swap_kb, swap_free_kb=swap_kb)
    c = Client(d.socket)
    try:
        poll(lambda: (lambda s: s is not None and s["sampled_at_ms"] > t and
                      s["swap_total_bytes"] == swap_kb * 1024 and
                      abs(s["free_pct"] - pct) < 0.01)(c.call("info")["sample"]),
             what="the daemon to sample %g%% free" % pct)
    finally:
        c.close()


def ctl(d, *args, ok=True, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([CTL, "--socket", d.socket] + list(args), capture_output=True,
                       text=True, timeout=30, env=e)
    if ok:
        assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
    return r


def submit(d, *args):
    return int(ctl(d, "submit", *args).stdout)


def show_json(c, jid):
    return c.call("show", {"id": jid})


def waiting_for(c, jid, want):
    poll(lambda: show_json(c, jid).get("waiting_for") == want,
         what="job %d to wait for %s" % (jid, want))


def status_rows(d, *args):
    """status's table: the header and {id: line}."""
    out = ctl(d, "status", *args).stdout
    lines = out.rstrip("\n").split("\n")
    rows = {}
    for line in lines[1:]:
        rows[int(line.split()[0])] = line
    return lines[0], rows


def reason_of(d, jid):
    head, rows = status_rows(d)
    start = cells(head[:head.index("REASON")])
    line = rows[jid]
    # the REASON column starts at the same cell in every row
    i = 0
    while cells(line[:i]) < start:
        i += 1
    assert cells(line[:i]) == start, (head, line)
    return line[i:].rstrip()


def top_frame(d, want, cols=120, rows=30):
    """Run top on a pseudo-terminal until a frame shows want; that frame
    with the escape sequences taken out."""
    t = PtyJob([CTL, "--socket", d.socket, "top"], env={"NO_COLOR": "1"})
    fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    try:
        deadline = time.monotonic() + 15
        while True:
            t.drain(0.3)
            ends = [m.start() for m in re.finditer(rb"\033\[J", t.buf)]
            frames = []
            for e in ends:
                s = t.buf.rfind(b"\033[H", 0, e)
                if s >= 0:
                    frames.append(t.buf[s:e])
            text = [re.sub(r"\033\[[0-9;?]*[A-Za-z]", "",
                           f.decode(errors="replace")).replace("\r\n", "\n")
                    for f in frames]
            hit = [f for f in text if want in f]
            if hit:
                return hit[-1]
            if time.monotonic() > deadline:
                raise AssertionError("top never showed %r; last frame:\n%s"
                                     % (want, text[-1] if text else t.buf[-2000:]))
    finally:
        t.type(b"q")
        assert t.report() == "exit 0"
        t.drain()
        t.wait()


def check_reason(d, c, jid, column, sentence):
    """The reason in status, in top and in show."""
    got = reason_of(d, jid)
    assert re.fullmatch(column, got), (jid, column, got)
    frame = top_frame(d, got)
    row = [l for l in frame.split("\n") if re.match(r" *%d  " % jid, l)]
    assert row and got in row[0], (got, frame)
    text = ctl(d, "show", str(jid)).stdout
    m = re.search(r"^Waiting for \S+ so far: (.*)\.$", text, re.M)
    # The jobs it waits behind follow the words (waiting_on), when the
    # daemon names any: the first of them by its id.
    on = show_json(c, jid).get("waiting_on") or []
    behind = r"(: (promised to )?jobs? %d \(.*)" % on[0]["id"] if on else ""
    assert m and re.fullmatch(sentence + behind, m.group(1)), (sentence, behind, text)
    print("ok - %s: status %r, top, show %r" % (show_json(c, jid)["waiting_for"], got,
                                               m.group(1)))


def progress(d, c, jid):
    """wait and logs -f on a queued job: the progress line on stderr, one
    line per change into a pipe, in place on a terminal."""
    line = "queued: position 1 of 3, free 39.7% < 40%"
    w = subprocess.Popen([CTL, "--socket", d.socket, "wait", str(jid)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    f = subprocess.Popen([CTL, "--socket", d.socket, "logs", "-f", str(jid)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t = PtyJob([CTL, "--socket", d.socket, "wait", str(jid)])
    try:
        t.read_until(b"\r\033[K" + line.encode())
        samples_seen = Client(d.socket)
        samples_seen.call("subscribe", {"samples": True})
        for _ in range(3):  # a few looks of theirs: nothing changes
            samples_seen.notification("sample", timeout=5)
        samples_seen.close()
        assert c.call("show", {"id": jid})["state"] == "queued"
        set_free(d, 90)
        out, err = w.communicate(timeout=20)
        assert w.returncode == 0, (w.returncode, err)
        assert err == line + "\n", repr(err)  # once: it did not change
        assert out == "job %d: exited 0\n" % jid, out
        out, err = f.communicate(timeout=20)
        assert f.returncode == 0 and err == line + "\n", (f.returncode, err)
        assert "a b" in out, out
        assert t.report() == "exit 0"
        buf = t.drain()
        # the line is cleared once the job is admitted
        assert buf.rindex(b"\r\033[K") > buf.rindex(line.encode()), buf
        assert b"job %d: exited 0" % jid in buf, buf
        t.wait()
    finally:
        for p in (w, f):
            if p.poll() is None:
                p.kill()
                p.wait()
        t.kill()
    print("ok - wait and logs -f print the progress line while queued "
          "(a line into a pipe, in place on a terminal)")


def top_small(d):
    """top at 50x12 shows a job row before "... and N more"; its labels
    are in one column; without swap, no swap sparkline and no 0..1B."""
    frame = top_frame(d, "more", cols=50, rows=12)
    lines = frame.split("\n")
    more = [i for i, l in enumerate(lines) if re.match(r"\.\.\. and \d+ more", l)]
    rows = [i for i, l in enumerate(lines) if re.match(r" *\d+  \S", l)]
    assert more and rows and rows[0] < more[0], frame
    for label in ("free", "swap", "pressure"):
        line = [l for l in lines if l.startswith(label + " ")][0]
        assert line[:10] == label.ljust(10) and line[10] != " ", (label, frame)
    print("ok - top at 50x12: %d job row(s) before %r; labels in one column"
          % (len(rows), lines[more[0]]))
    set_free(d, 39.7, swap_kb=0)
    frame = top_frame(d, "swap      none")
    assert "0..1B" not in frame and "last 10m00s, 0..100%\n" in frame, frame
    assert len([l for l in frame.split("\n") if l.startswith("swap ")]) == 1, frame
    set_free(d, 39.7)
    print("ok - top without swap: no swap sparkline, no 0..1B scale")


def run_line(d, free=39.7, wait_free="40", want="free 39.7% < 40%"):
    """run's line while its attached job waits: 39.7 % against 40 %."""
    import select
    set_free(d, free)
    p = subprocess.Popen([CTL, "--socket", d.socket, "run", "--wait-free", wait_free, "--",
                          "true"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        buf = b""
        deadline = time.monotonic() + 15
        while b"\n" not in buf:
            assert time.monotonic() < deadline, buf
            r, _, _ = select.select([p.stderr], [], [], 0.2)
            if r:
                chunk = os.read(p.stderr.fileno(), 4096)
                assert chunk, buf
                buf += chunk
        line = buf.split(b"\n")[0].decode()
        assert line == "queued: position 1 of 1, " + want, line
        set_free(d, 90)
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print("ok - run's line at %g%% free: %r" % (free, line))


def phase_free_head(d, c):
    set_free(d, 39.7)
    argv = ["sh", "-c", 'printf "%s\\n" "$@"', "sh", "a b", "it's", "$HOME", "*",
            "back\\slash", "\"q\"", "", JA]
    j1 = submit(d, "--name", JA, "--wait-free", "40", "--", *argv)
    j2 = submit(d, "--name", EMOJI, "--wait-free", "10", "--", "true")
    j3 = submit(d, "--name", LONG, "--wait-free", "10", "--", "true")
    waiting_for(c, j1, "free")
    waiting_for(c, j2, "head")

    # 39.7 against 40: one decimal, never "40% < 40%"
    check_reason(d, c, j1, r"free 39\.7% < 40%",
                 r"free memory is 39\.7% < 40% \(its --wait-free\)")
    check_reason(d, c, j2, r"head", r"a job ahead of it holds the head of the queue")
    for out in (ctl(d, "status").stdout, ctl(d, "show", str(j1)).stdout):
        assert "40% < 40%" not in out, out

    # the table stays aligned in cells with wide names; a long one is cut
    head, rows = status_rows(d)
    for col in ("WAITED", "REASON"):
        want = cells(head[:head.index(col) + len(col)])
        for jid in (j1, j2, j3):
            line = rows[jid]
            # the cell of each row where that column's text ends
            # (WAITED: right-aligned; REASON: its start, checked below)
            if col == "WAITED":
                m = re.search(r"\d+(ms|s|m\d+s|h\d+m)\b", line)
                assert cells(line[:m.end()]) == want, (head, line)
    for jid in (j1, j2, j3):
        reason_of(d, jid)
    assert JA in rows[j1] and EMOJI in rows[j2], rows
    cut = re.search("長+…", rows[j3]).group(0)
    assert cells(cut) <= 40 and cut.endswith("…"), cut
    print("ok - a Japanese and an emoji name keep the table aligned in cells; "
          "a long name is cut with …")

    # -o chooses the columns
    out = ctl(d, "status", "-o", "id,user,reason").stdout.split("\n")
    assert re.fullmatch(r"ID +USER +REASON", out[0]), out
    assert re.fullmatch(r" *%d +\S+ +free 39\.7%% < 40%%" % j1, out[1]), out
    out = ctl(d, "status", "--format", "id,command").stdout
    assert "COMMAND" in out and "'a b'" in out, out
    r = ctl(d, "status", "-o", "id,nope", ok=False)
    assert r.returncode == 2 and "no column 'nope'" in r.stderr, r
    print("ok - status -o id,user,reason prints those columns; command on demand")

    # show's command line, given back to sh -c, runs the same argv
    text = ctl(d, "show", str(j1)).stdout
    line = re.search(r"^Command: (.*)$", text, re.M).group(1)
    r = subprocess.run(["sh", "-c", "set -- " + line + "\nfor a; do printf '%s\\0' \"$a\"; done"],
                       capture_output=True, timeout=10)
    assert r.stdout.decode().split("\0")[:-1] == argv, (line, r.stdout)
    print("ok - show's command line runs the same argv in sh: %s" % line)

    top_small(d)
    progress(d, c, j1)
    for jid in (j2, j3):
        poll(lambda: show_json(c, jid)["state"] == "exited", what="job %d to end" % jid)
    run_line(d)


def phase_expect_exclusive_settle(d, c):
    set_free(d, 60)
    # 8G of 16G promised and barely used: 60 - 50 = 10 % < 40 %
    j3 = submit(d, "--expect", "8G", "--", "sleep", "60")
    poll(lambda: show_json(c, j3)["state"] == "running", what="the expecting job to run")
    j4 = submit(d, "--wait-free", "40", "--", "sleep", "60")
    waiting_for(c, j4, "expect")
    check_reason(d, c, j4, r"expect (7\.9|8\.0)G reserved",
                 r"(7\.9|8\.0)G of memory is promised to running jobs \(--expect\), "
                 r"which leaves less than the 40% free it waits for")
    ctl(d, "cancel", str(j3))
    poll(lambda: show_json(c, j4)["state"] == "running", what="job 4 to run")
    j5 = submit(d, "--exclusive", "--", "sleep", "60")
    waiting_for(c, j5, "exclusive")
    check_reason(d, c, j5, r"exclusive", r"it or a running job has to run alone \(--exclusive\)")
    ctl(d, "cancel", str(j4), str(j5))
    poll(lambda: show_json(c, j4)["state"] == "killed", what="job 4 to end")
    # A job that keeps growing (1M every 50 ms, for 15 s at most) holds the
    # next one back until it settles (settle time 60 s).
    grow = ("import time\nb = []\nfor i in range(300):\n"
            "    b.append(bytearray(1 << 20)); b[-1][::4096] = b'x' * 256\n"
            "    time.sleep(0.05)\ntime.sleep(60)\n")
    g = submit(d, "--", sys.executable, "-c", grow)
    poll(lambda: show_json(c, g)["state"] == "running", what="the growing job to run")
    j6 = submit(d, "--", "sleep", "60")
    waiting_for(c, j6, "settle")
    check_reason(d, c, j6, r"settle", r"the job admitted before it is still growing \(settle\)")
    ctl(d, "cancel", str(g), str(j6))


def phase_max_running_storage(d, c):
    set_free(d, 80)
    j1 = submit(d, "--", "sleep", "60")
    poll(lambda: show_json(c, j1)["state"] == "running", what="job to run")
    j2 = submit(d, "--", "sleep", "60")
    waiting_for(c, j2, "max_running")
    check_reason(d, c, j2, r"max_running",
                 r"the daemon already runs as many jobs as its max_running allows")
    ctl(d, "cancel", str(j1), str(j2))
    # storage: another writer holds the database while the daemon starts
    set_free(d, 10)
    j3 = submit(d, "--wait-free", "50", "--", "true")
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    other = sqlite3.connect(d.db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        d.start()
        c = Client(d.socket)
        poll(lambda: c.call("info")["storage_error"], what="writes to fail")
        set_free(d, 80)
        waiting_for(c, j3, "storage")
        check_reason(d, c, j3, r"storage",
                     r"the daemon's database fails, so nothing is admitted \(storage\)")
    finally:
        other.execute("ROLLBACK")
        other.close()
    poll(lambda: show_json(c, j3)["state"] == "exited", what="job to run once writes work")
    c.close()


def phase_wait_free_bytes(d, c):
    """--wait-free 12G: the reason compares the available memory with 12G
    in status, top and show, never a percentage the job does not wait
    for; show's paragraph says what it waits for as a size."""
    set_free(d, 50)  # 8G of 16G available
    jid = submit(d, "--wait-free", "12G", "--", "true")
    waiting_for(c, jid, "free")
    check_reason(d, c, jid, r"free 8\.0G < 12G",
                 r"free memory is 8\.0G < 12G \(its --wait-free\)")
    text = ctl(d, "show", str(jid)).stdout
    assert "waits for 12G free" in text, text
    set_free(d, 80)  # 12.8G: enough
    poll(lambda: show_json(c, jid)["state"] == "exited", what="job %d to run" % jid)
    run_line(d, 50, "12G", "free 8.0G < 12G")
    print("ok - --wait-free 12G: status, top, show and run name 12G")


def width_table():
    """The committed table is what the script makes of the Unicode data
    (Debian's unicode-data; scripts/deps.sh --test installs it)."""
    src = os.environ.get("SL_SRC", os.path.join(os.path.dirname(__file__), ".."))
    if not os.path.exists("/usr/share/unicode/EastAsianWidth.txt"):
        print("note - /usr/share/unicode/EastAsianWidth.txt missing (apt-get install "
              "unicode-data): the width table is not compared with it")
        return
    r = subprocess.run([sys.executable, os.path.join(src, "scripts", "gen-width-table.py")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(src, "client", "cli-width-table.h")) as f:
        assert f.read() == r.stdout, "client/cli-width-table.h is not what " \
            "scripts/gen-width-table.py makes of /usr/share/unicode: run it again"
    print("ok - client/cli-width-table.h is what scripts/gen-width-table.py makes")


def main():
    width_table()
    for conf, phases in (("settle = 60s\n",
                          (phase_free_head, phase_expect_exclusive_settle)),
                         ("max_running = 1\n", (phase_max_running_storage,)),
                         ("settle = 0\n", (phase_wait_free_bytes,))):
        d = Daemon(config=conf)
        try:
            write_meminfo(d.proc_root, total_kb=TOTAL_KB, avail_kb=TOTAL_KB // 2)
            d.start()
            c = Client(d.socket)
            for phase in phases:
                phase(d, c)
            c.close()
        except BaseException:
            sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
            raise
        finally:
            d.cleanup()
            kill_leftovers(d)
    print("PASS")


if __name__ == "__main__":
    main()
