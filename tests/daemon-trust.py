"""Root's daemon trusts only files it made (docs/security.md, "Files the
daemon trusts").

The attack: with --db in a directory a user can write, the user plants a
database, or a -wal beside root's database that sqlite replays at open,
holding a queued job with uid 0, and root's daemon runs it as root. Here a
user made for this run (useradd) plants them for real from a process of
its own; the planted job would touch a marker file as root. Each time the
root daemon must refuse to start (exit 1) with a message naming the file
and why, leave every planted file as it was, and run nothing. A database in
a root-owned 0700 directory under /tmp still works.

Usage: daemon-trust.py         run the test (root only)
       (the user is named like auth.py's, so auth.py --reap removes it if
       this run is killed)
"""

import hashlib
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, HERE)
from sltest import Client, Daemon, poll, skip, write_meminfo, write_psi  # noqa: E402
import auth  # noqa: E402  (its users: useradd, userdel, reaping)


def log(msg):
    print(msg, flush=True)


def snapshot(top):
    """Everything under top as it is: kinds, owners, modes, sizes, times
    and contents, to show a refused start changed nothing."""
    out = {}
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            digest = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, top)] = (stat.S_IFMT(st.st_mode), st.st_uid,
                                            st.st_mode & 0o7777, st.st_size,
                                            st.st_mtime_ns, digest)
    return out


class Case:
    """One start of root's daemon on paths of the test's choosing."""

    def __init__(self, base, name):
        self.dir = os.path.join(base, name)
        os.mkdir(self.dir, 0o700)
        # Root's own socket and fixture proc root: only the database and
        # state paths are under test.
        self.run = tempfile.mkdtemp(prefix="run-", dir=base)
        self.proc_root = os.path.join(self.run, "proc")
        os.makedirs(self.proc_root)
        write_meminfo(self.proc_root)
        write_psi(self.proc_root)
        # What the planted job touches, as root, if it ever runs.
        self.marker = os.path.join(base, "ran-as-root")

    def args(self, db, socket_dir=None, state_dir=None):
        a = [os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadd"),
             "--socket", os.path.join(socket_dir or self.run, "sl.sock"),
             "--db", db, "--proc-root", self.proc_root, "--interval", "0.1"]
        if state_dir:
            a += ["--state-dir", state_dir]
        return a

    def refused(self, args, *words):
        """Start the daemon; it must exit 1 saying all of words, with
        nothing under self.dir changed and nothing run."""
        before = snapshot(self.dir)
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            # It started: say what the planted job did meanwhile.
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=15)
            raise AssertionError("the daemon started on planted files (%s); the "
                                 "planted job ran as root: %s\n%s" %
                                 (" ".join(args), os.path.exists(self.marker),
                                  err[-3000:]))
        assert p.returncode == 1, (p.returncode, err)
        # Refused before the socket exists: no client ever reached it.
        assert "listening on" not in err, err
        for w in words:
            assert w in err, "%r not in the daemon's error:\n%s" % (w, err)
        assert not os.path.exists(self.marker), "a planted job ran as root"
        after = snapshot(self.dir)
        assert after == before, "a refused start changed files:\n%r\n%r" % (before, after)
        log("ok: refused: " + err.strip().splitlines()[-1])


def make_template(base, marker_dir):
    """A database as root's daemon writes it, holding a queued job of uid 0
    that waits for 100 % free memory, so it never starts (the fixture shows
    50 %). Returns its path and the job's id. An attacker needs no more than
    the public schema (docs/storage.md) to write one."""
    d = Daemon(interval="0.1")
    try:
        d.start()
        c = Client(d.socket)
        jid = c.call("submit", {
            "argv": ["/bin/sh", "-c", 'touch "$0"', os.path.join(marker_dir, "ran-as-root")],
            "cwd": "/", "env": ["PATH=/usr/bin:/bin"], "wait_free_pct": 100})["id"]
        assert c.call("show", {"id": jid})["state"] == "queued"
        c.close()
        assert d.stop() == 0, d.log_text()
        tpl = os.path.join(base, "template.db")
        shutil.copyfile(d.db, tpl)
        os.chmod(tpl, 0o644)  # the user reads it to plant copies
        return tpl, jid
    finally:
        d.cleanup()


def as_user(u, *argv):
    p = u.popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, (argv, p.returncode, err)
    return out


def main():
    if os.geteuid() != 0:
        skip("needs root: a user made with useradd plants files for root's daemon",
             root_only=True)
    for tool in ("useradd", "userdel", "groupdel"):
        if shutil.which(tool) is None:
            skip("%s is not installed" % tool, root_only=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    auth.reap_stale()
    name = "%s%da" % (auth.PREFIX, os.getpid())
    base = None
    try:
        auth.run_tool(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh",
                       name])
        u = auth.User(name)
        # Resolved, as the daemon names paths in its messages.
        base = os.path.realpath(tempfile.mkdtemp(prefix="sltest-trust-"))
        os.chmod(base, 0o711)  # the user may reach what is made for it below
        log("user %s (uid %d); base %s" % (name, u.uid, base))
        tpl, jid = make_template(base, base)

        # 1. A directory the user owns: it copies the database in.
        c = Case(base, "userdir")
        ud = os.path.join(c.dir, "db")
        os.mkdir(ud, 0o755)
        os.chown(ud, u.uid, u.gid)
        os.chmod(c.dir, 0o711)
        db = os.path.join(ud, "sl.db")
        as_user(u, "cp", tpl, db)
        runnable_as_user(u, db, jid)
        c.refused(c.args(db), "refusing the database " + db, "directory " + ud,
                  "owned by uid %d" % u.uid)

        # 2. A world-writable sticky directory, like /tmp (the docs' old
        #    --db /tmp/sl.db): root owns it, the user's database is in it.
        c = Case(base, "sticky")
        sd = os.path.join(c.dir, "tmp")
        os.mkdir(sd)
        os.chmod(sd, 0o1777)
        os.chmod(c.dir, 0o711)
        db = os.path.join(sd, "sl.db")
        as_user(u, "cp", tpl, db)
        runnable_as_user(u, db, jid)
        c.refused(c.args(db), "refusing the database " + db, "directory " + sd,
                  "mode 1777", "sticky or not")

        # 3. The directory was open when the user planted the database, and
        #    root has closed it since: the file is still the user's.
        c = Case(base, "tightened")
        td = os.path.join(c.dir, "db")
        os.mkdir(td)
        os.chmod(td, 0o1777)
        os.chmod(c.dir, 0o711)
        db = os.path.join(td, "sl.db")
        as_user(u, "cp", tpl, db)
        runnable_as_user(u, db, jid)
        os.chmod(td, 0o755)
        c.refused(c.args(db), "refusing the database " + db,
                  db + " is owned by uid %d" % u.uid)

        # 4. Root's own database, and a -wal the user planted beside it
        #    while the directory was open: sqlite would replay the job in.
        c = Case(base, "wal")
        wd = os.path.join(c.dir, "db")
        os.mkdir(wd)
        os.chmod(wd, 0o1777)
        os.chmod(c.dir, 0o711)
        db = os.path.join(wd, "sl.db")
        shutil.copyfile(tpl, db)
        os.chmod(db, 0o600)
        evil = os.path.join(base, "evil")  # the user's own workshop
        os.mkdir(evil, 0o700)
        os.chown(evil, u.uid, u.gid)
        as_user(u, auth.PYTHON, "-c", MAKE_WAL, tpl, os.path.join(evil, "w.db"),
                str(jid), os.path.join(wd, "sl.db-wal"))
        os.chmod(wd, 0o755)
        assert os.stat(db + "-wal").st_uid == u.uid
        assert wal_makes_runnable(db, jid), "the planted -wal does not carry the job"
        c.refused(c.args(db), "refusing " + db + "-wal beside the database",
                  db + "-wal is owned by uid %d" % u.uid)

        # 5. The socket's lock file, planted the same way: the user could
        #    hold it and keep root's daemon from ever starting.
        c = Case(base, "lock")
        ld = os.path.join(c.dir, "run")
        os.mkdir(ld)
        os.chmod(ld, 0o1777)
        os.chmod(c.dir, 0o711)
        as_user(u, "touch", os.path.join(ld, "sl.sock.lock"))
        os.chmod(ld, 0o755)
        c.refused(c.args(os.path.join(c.run, "sl.db"), socket_dir=ld),
                  "refusing the socket's lock file " + os.path.join(ld, "sl.sock.lock"),
                  "owned by uid %d" % u.uid)

        # 6. A state directory of the user's (job logs and status files).
        c = Case(base, "state")
        st = os.path.join(c.dir, "state")
        os.mkdir(st, 0o700)
        os.chown(st, u.uid, u.gid)
        c.refused(c.args(os.path.join(c.run, "sl.db"), state_dir=st),
                  "refusing the state directory " + st, "owned by uid %d" % u.uid)

        # 7. Root's own 0700 directory under /tmp: /tmp is sticky and
        #    root's, so nobody can move the directory away. The daemon
        #    starts on a copy of the same database (its job still waits).
        c = Case(base, "good")
        db = os.path.join(c.dir, "sl.db")
        shutil.copyfile(tpl, db)
        os.chmod(db, 0o600)
        args = c.args(db)
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        try:
            sock = args[args.index("--socket") + 1]
            cl = poll(lambda: try_client(sock, p), what="the daemon to answer")
            assert cl.call("show", {"id": jid})["state"] == "queued"
            cl.close()
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=15)
        assert p.returncode == 0, (p.returncode, err)
        log("ok: a root-owned 0700 directory under /tmp works")
        log("PASS")
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
        auth.remove_users([name])


def try_client(sock, p):
    if p.poll() is not None:
        raise AssertionError("the daemon exited with %s" % p.returncode)
    try:
        return Client(sock)
    except OSError:
        return None


# Run as the user: copy the template to a workshop of its own, turn on WAL
# there with checkpoints off, make the job runnable, and copy the -wal the
# change went to beside root's database before sqlite folds it back in.
MAKE_WAL = r"""
import shutil, sqlite3, sys
tpl, work, jid, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
shutil.copyfile(tpl, work)
con = sqlite3.connect(work, isolation_level=None)
assert con.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
con.execute("PRAGMA wal_autocheckpoint = 0")
con.execute("UPDATE jobs SET wait_free_pct = 0 WHERE id = ?", (jid,))
shutil.copyfile(work + "-wal", dest)
con.close()
"""

# Run as the user: the database made runnable in place.
MAKE_RUNNABLE = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE jobs SET wait_free_pct = 0 WHERE id = ?", (int(sys.argv[2]),))
con.commit()
con.close()
"""


def runnable_as_user(u, db, jid):
    """The planted database's job may start now."""
    as_user(u, auth.PYTHON, "-c", MAKE_RUNNABLE, db, str(jid))



def wal_makes_runnable(db, jid):
    """Read a copy of db and its -wal (as sqlite would at open): is the job
    runnable there? The files themselves stay as they are."""
    tmp = tempfile.mkdtemp(prefix="walcheck-")
    try:
        shutil.copyfile(db, os.path.join(tmp, "c.db"))
        shutil.copyfile(db + "-wal", os.path.join(tmp, "c.db-wal"))
        con = sqlite3.connect(os.path.join(tmp, "c.db"))
        row = con.execute("SELECT wait_free_pct FROM jobs WHERE id = ?", (jid,)).fetchone()
        con.close()
        return row is not None and row[0] == 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
