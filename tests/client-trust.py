"""The socket a client trusts (docs/security.md), with real users: another
user who made /tmp/stageload-UID first and listens there gets nothing from
the victim's stageloadctl or Python client; both refuse, naming that user
and the way out. The victim's own daemon refuses that directory too, and
with a home of its own the victim never looks there. Root only: it makes
two users with useradd (auth.py's naming, so with-users.sh removes them
whatever happens).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, HERE)
from sltest import poll, skip  # noqa: E402
import auth  # noqa: E402

SRC = os.environ.get("SL_SRC", os.path.join(HERE, ".."))
BIN = os.environ.get("SL_BIN", "build/bin")

# The other user's listener: it takes every connection and reports what
# arrives; a "daemon" that says hello as anyone it likes.
LISTENER = r"""
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
os.chmod(os.path.dirname(path), 0o777)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    print("connection", flush=True)
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    print("got %r" % (data[:200],), flush=True)
    c.close()
"""

# A socket root made (so its path passes every check) on which a process
# of the other user listens: bound as root, then listen() after setuid, so
# the kernel records the other user as the listener.
HANDED = r"""
import os, socket, sys
path, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    print("got %r" % (data[:200],), flush=True)
    c.close()
"""

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def as_user(u, argv, env, **kw):
    argv = ["setpriv", "--reuid=%d" % u.uid, "--regid=%d" % u.gid, "--init-groups",
            "--"] + argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/",
                          env=env, **kw)


def check_handed(victim, mallory, env, ctl, pyenv, code):
    top = tempfile.mkdtemp(prefix="sl-handed-")
    os.chmod(top, 0o755)
    path = os.path.join(top, "sl.sock")
    proc = subprocess.Popen([auth.PYTHON, "-c", HANDED, path, str(mallory.uid),
                             str(mallory.gid)], stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        assert proc.stdout.readline().strip() == "listening"
        r = as_user(victim, [ctl, "--socket", path, "submit", "--", "true"], env)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and "runs as uid %d (%s)" % (mallory.uid, mallory.name) in out,
              "stageloadctl refuses a daemon running as the other user: %s" % out.strip())
        line = proc.stdout.readline().strip()
        check(line == "got b''", "it was sent nothing: %s" % line)
        r = as_user(victim, [auth.PYTHON, "-c", code.replace("Client()", "Client(%r)" % path)],
                    pyenv)
        check(r.stdout.startswith("refused:") and mallory.name in r.stdout,
              "Python refuses it too: %s" % (r.stdout + r.stderr).strip())
        line = proc.stdout.readline().strip()
        check(line == "got b''", "Python sent it nothing: %s" % line)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        shutil.rmtree(top, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        skip("needs root: it creates two users with useradd", root_only=True)
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setpriv"):
        if shutil.which(tool) is None:
            skip("%s is not installed" % tool, root_only=True)
    if os.path.exists("/var/run/stageload.sock"):
        skip("a system daemon's socket exists: clients would use it, not the per-user one")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    auth.reap_stale()
    names, bin_dir, listener, spoof, home_dir = [], None, None, None, None
    try:
        victim, mallory, _, names = auth.make_users()
        bin_dir = auth.users_bin(BIN, victim)
        spoof = "/tmp/stageload-%d" % victim.uid
        shutil.rmtree(spoof, ignore_errors=True)
        # Mallory makes the victim's per-user directory first and listens.
        r = as_user(mallory, ["mkdir", "-m", "0700", spoof], {"PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr
        sock = spoof + "/stageload.sock"
        listener = subprocess.Popen(
            ["setpriv", "--reuid=%d" % mallory.uid, "--regid=%d" % mallory.gid,
             "--init-groups", "--", auth.PYTHON, "-c", LISTENER, sock],
            stdout=subprocess.PIPE, text=True, cwd="/")
        assert listener.stdout.readline().strip() == "listening"
        # The victim: no system socket, no XDG_RUNTIME_DIR, no usable home.
        env = {"PATH": "/usr/bin:/bin", "LANG": "C", "HOME": "/nonexistent",
               "LD_LIBRARY_PATH": bin_dir, "SECRET_TOKEN": "hunter2"}
        ctl = os.path.join(bin_dir, "stageloadctl")
        r = as_user(victim, [ctl, "submit", "--", "true"], env)
        out = r.stdout + r.stderr
        check(r.returncode != 0, "stageloadctl submit is refused (exit %d)" % r.returncode)
        check(sock in out and mallory.name in out and "uid %d" % mallory.uid in out,
              "the refusal names the socket and its owner: %s" % out.strip())
        check("XDG_RUNTIME_DIR" in out, "the refusal says the way out")
        r = as_user(victim, [ctl, "--socket", sock, "logs", "1"], env)
        check(r.returncode != 0 and mallory.name in r.stdout + r.stderr,
              "--socket naming it is refused too: %s" % (r.stdout + r.stderr).strip())
        # The Python package, from the source tree.
        pyenv = dict(env, PYTHONPATH=os.path.join(os.path.abspath(SRC), "python"))
        code = ("import stageload\n"
                "try:\n"
                "    stageload.Client()\n"
                "except stageload.UntrustedSocket as e:\n"
                "    print('refused:', e.message)\n"
                "else:\n"
                "    print('connected')\n")
        r = as_user(victim, [auth.PYTHON, "-c", code], pyenv)
        check(r.stdout.startswith("refused:") and mallory.name in r.stdout
              and "XDG_RUNTIME_DIR" in r.stdout,
              "Python's Client() is refused: %s" % (r.stdout + r.stderr).strip())
        # Nothing reached the listener: a marker connection of ours is
        # the first it reports (connections are accepted in order).
        m = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        m.connect(sock)
        m.sendall(b"marker")
        heard = []
        poll(lambda: heard.extend((listener.stdout.readline() or "").splitlines()) or
             any("marker" in h for h in heard), what="the marker at the listener")
        m.close()
        check(heard[:1] == ["connection"] and "marker" in heard[1],
              "the listener heard nothing before the marker: %r" % heard)
        # The victim's own daemon refuses that directory, naming its owner.
        state = tempfile.mkdtemp(prefix="sl-trust-")
        os.chown(state, victim.uid, victim.gid)
        daemon = os.path.join(os.path.abspath(BIN), "stageloadd")
        r = as_user(victim, [daemon, "--db", state + "/sl.db", "--state-dir", state + "/st"],
                    env)
        shutil.rmtree(state, ignore_errors=True)
        check(r.returncode != 0 and mallory.name in r.stdout + r.stderr,
              "the victim's daemon refuses to listen there: %s"
              % (r.stdout + r.stderr).strip()[-300:])
        # A root-made socket in root's directory with the other user's
        # process listening: refused once connected, before hello.
        check_handed(victim, mallory, env, ctl, pyenv, code)
        # With a home of its own, the victim's default is under it: the
        # spoofed directory is never looked at.
        home_env = dict(env, HOME=victim.home)
        r = as_user(victim, [ctl, "status"], home_env)
        want = victim.home + "/.stageload/stageload.sock"
        check(r.returncode != 0 and want in r.stderr and "not running" in r.stderr,
              "with a home, the default is %s: %s" % (want, r.stderr.strip()))
    finally:
        if listener is not None:
            listener.kill()
            listener.wait()
            listener.stdout.close()
        if spoof is not None:
            shutil.rmtree(spoof, ignore_errors=True)
        if bin_dir is not None:
            shutil.rmtree(bin_dir, ignore_errors=True)
        auth.remove_users(names)
    if failures:
        print("%d failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
