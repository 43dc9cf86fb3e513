"""The database's filesystem fills up: the daemon keeps sampling, shows the
error in `info`, logs it once, writes the samples it kept once space returns
(and logs that once), and the database stays intact. Meanwhile `history`
does not answer short: a range reaching the samples not yet written is
-32006 naming the cause, one before them is answered from the database.
Needs root for a small tmpfs.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError, poll, require_tools, skip, fill_fs  # noqa: E402


def history_while_full(c, before):
    """PROTOCOL.md, history: while the commit fails, the last second is
    -32006 with the cause, not an answer without those samples; a range
    that ends before the samples still waiting is answered, as it was
    before the disk filled."""
    now = int(time.time() * 1000)
    try:
        h = c.call("history", {"since_ms": now - 1000})
        raise AssertionError("history of the last second while the disk is "
                             "full answered %d buckets" % len(h["buckets"]))
    except RpcError as e:
        assert e.code == -32006, e
        assert "full" in e.message and "not in the database yet" in e.message, e
    h = c.call("history", before[0])
    assert h["buckets"] == before[1]["buckets"], (h, before[1])


def main():
    if os.geteuid() != 0:
        skip("needs root to mount a small tmpfs for the database", root_only=True)
    require_tools("mount", "umount", "sqlite3")
    d = Daemon(interval="0.1")
    mnt = os.path.join(d.dir, "dbfs")
    os.makedirs(mnt)
    # mode=0700: a tmpfs is 1777 by default, which is no place for root's
    # database (docs/security.md).
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        d.cleanup()
        skip("cannot mount a tmpfs here: " + r.stderr.strip(), root_only=True)
    try:
        d.db = os.path.join(mnt, "sl.db")
        d.args[d.args.index("--db") + 1] = d.db
        with d:
            c = Client(d.socket)
            poll(lambda: c.call("info")["sample"], what="a first sample")
            assert c.call("info")["storage_error"] is None

            # Everything up to here is committed (history commits first).
            # On a fresh database the first rows may still be read from a
            # tier with none yet (history picks the tier by its first row):
            # wait for an answer with buckets.
            def answered():
                now = int(time.time() * 1000)
                q = {"since_ms": now - 60000, "until_ms": now, "step_ms": 1000}
                h = c.call("history", q)
                return (q, h) if h["buckets"] else None
            before = poll(answered, timeout=10, what="history with buckets")

            filler = os.path.join(mnt, "filler")
            full_from = int(time.time() * 1000)
            fill_fs(filler)
            err = poll(lambda: c.call("info")["storage_error"], timeout=15,
                       what="info to report the storage error")
            assert "full" in err, err
            history_while_full(c, before)
            # Sampling goes on while storage fails.
            a = c.call("info")["sample"]["sampled_at_ms"]
            poll(lambda: c.call("info")["sample"]["sampled_at_ms"] > a, timeout=5,
                 what="samples to go on while the disk is full")
            assert d.alive()

            os.unlink(filler)
            full_until = int(time.time() * 1000)
            poll(lambda: c.call("info")["storage_error"] is None, timeout=15,
                 what="the storage error to clear once space returns")
            log = d.log_text()
            assert log.count("sampling goes on") == 1, log
            assert log.count("storage works again") == 1, log

            # The samples taken while the disk was full were kept and written.
            h = c.call("history", {"since_ms": full_from, "until_ms": full_until,
                                   "step_ms": 1000})
            n = sum(b["n"] for b in h["buckets"])
            span_s = (full_until - full_from) / 1000.0
            assert n >= span_s * 10 * 0.5, (n, span_s, h["buckets"])
            c.close()
            assert d.stop() == 0
            assert d.integrity() == "ok", d.integrity()
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        d.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
