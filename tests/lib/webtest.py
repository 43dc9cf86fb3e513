"""Helpers of the stageload-web tests: the web program on a free loopback
port, HTTP requests with a chosen Host, and a daemon on a fixture proc root
holding the jobs a dashboard shows: one killed for its budget in a stage
whose name needs escaping (EVIL_STAGE, after a stage "load"), one running
with swap growth whose argv and environment hold MARKER and whose name
needs escaping everywhere (EVIL_NAME), in a stage with a long name of
two-byte characters (LONG_STAGE, after "encode"), one queued waiting for
free memory.
"""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import Client, Daemon, poll, write_meminfo  # noqa: E402

GIB_KB = 1 << 20
TOTAL_KB = 16 * GIB_KB
SWAP_TOTAL_KB = 64 * GIB_KB
MARKER = "sl-secret-7f3a9c"
EVIL_NAME = '<script>"\n'
EVIL_STAGE = '<b>"dec\\ode'
# 240 bytes: a label cut at a byte count would split a character.
LONG_STAGE = "\u00fc" * 120


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Web:
    """A stageload-web on 127.0.0.1 and a port of its choosing."""

    def __init__(self, socket_path, extra=(), user=None):
        """user: a uid to run it as (root only), as docs/dashboards.md
        advises running it."""
        self.bin = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageload-web")
        self.args = [self.bin, "--socket", socket_path, "--listen", "127.0.0.1:0"] + list(extra)
        self.user = user
        self.proc = None
        self.port = None

    def start(self):
        kw = {"user": self.user, "group": self.user, "extra_groups": []} \
            if self.user is not None else {}
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, **kw)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            _, err = self.stop()
            raise AssertionError("stageload-web did not start: %r %s" %
                                 (line, err))
        self.port = int(m.group(1))
        return self

    def host(self):
        return "127.0.0.1:%d" % self.port

    def get(self, path, host=None, method="GET"):
        """(status, headers, body as str)"""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host if host is not None else self.host())
        c.endheaders()
        r = c.getresponse()
        body = r.read().decode("utf-8")
        c.close()
        return r.status, dict(r.getheaders()), body

    def stop(self):
        """SIGTERM; returns its exit status and stderr (a sanitizer's
        report, in a sanitizer build)."""
        err = ""
        if self.proc is None:
            return None, err
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, err

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        rc, err = self.stop()
        # A clean exit after SIGTERM: under ASan, no leak or error report.
        if exc[0] is None and rc != 0:
            raise AssertionError("stageload-web exited %s after SIGTERM:\n%s" % (rc, err))


def set_memory(d, free_pct, swap_used_gib, sync=True):
    """Write the fixture; with sync, return once the daemon sampled it."""
    used_kb = int(swap_used_gib * GIB_KB)
    write_meminfo(d.proc_root, total_kb=TOTAL_KB,
                  avail_kb=int(TOTAL_KB * free_pct / 100),
                  swap_total_kb=SWAP_TOTAL_KB, swap_free_kb=SWAP_TOTAL_KB - used_kb)
    if not sync:
        return
    t = int(time.time() * 1000)
    c = Client(d.socket)

    def seen():
        s = c.call("info")["sample"]
        return (s is not None and s["sampled_at_ms"] > t and
                s["swap_used_bytes"] == used_kb * 1024 and
                abs(s["free_pct"] - free_pct) < 0.01)
    try:
        poll(seen, what="the daemon to sample the fixture")
    finally:
        c.close()


def daemon():
    return Daemon(interval="0.1s", config="grace = 1000ms\nsettle = 0\n")


def env_list(**extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update(extra)
    return ["%s=%s" % kv for kv in env.items()]


def show(c, jid):
    return c.call("show", {"id": jid})


def make_jobs(d):
    """The jobs of the dashboard; returns their ids as a dict."""
    c = Client(d.socket)
    set_memory(d, 80, 1)
    killed = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                               "name": "hog", "swap_budget_bytes": 1 << 30})["id"]
    poll(lambda: show(c, killed)["state"] == "running", what="hog to run")
    c.call("stage", {"id": killed, "name": "load"})
    c.call("stage", {"id": killed, "name": EVIL_STAGE})
    runner = c.call("submit", {"argv": ["sh", "-c", "exec sleep 120", MARKER],
                               "cwd": d.dir, "env": env_list(SECRET=MARKER),
                               "name": EVIL_NAME, "swap_budget_bytes": 8 << 30})["id"]
    poll(lambda: show(c, runner)["state"] == "running", what="gen to run")
    c.call("stage", {"id": runner, "name": "encode"})
    c.call("stage", {"id": runner, "name": LONG_STAGE})
    # Swap grows 1.5G: past hog's 1G budget, within gen's 8G.
    set_memory(d, 80, 2.5, sync=False)
    poll(lambda: show(c, killed)["state"] == "killed", timeout=15, what="hog to be killed")
    # Once hog is gone gen's growth restarts; it grows 0.5G from there.
    set_memory(d, 80, 3)
    poll(lambda: show(c, runner)["swap_growth_bytes"] == 512 << 20, timeout=10,
         what="gen's swap growth of 512M")
    queued = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                               "name": "waiter", "wait_free_pct": 95})["id"]
    c.close()
    return {"killed": killed, "runner": runner, "queued": queued}


def cleanup_jobs(d):
    """Cancel what is left, so no job outlives the test."""
    try:
        c = Client(d.socket)
        for j in c.call("status", {"all": False})["jobs"]:
            try:
                c.call("cancel", {"id": j["id"]})
            except Exception:
                pass
        c.close()
    except OSError:
        pass


def import_selenium():
    """Debian's python3-selenium lives in the system Python's
    dist-packages, which another python3 on PATH (pyenv, a venv) does not
    search: look there too."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        try:
            import selenium  # noqa: F401
        except ImportError:
            return False
    return True


def browser(profile):
    """Headless Chromium whose get() stops the page's reload (its meta
    refresh, every 5 s) once it has loaded: on a loaded machine a check
    taking longer would read the page while it is built again. live()
    loads a page and lets it reload itself."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    class Still(webdriver.Chrome):
        def get(self, url):
            super().get(url)
            self.execute_script("window.stop()")

        def live(self, url):
            super().get(url)

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--window-size=1100,1000",
              "--user-data-dir=" + profile):
        opts.add_argument(a)
    if os.geteuid() == 0:
        opts.add_argument("--no-sandbox")  # Chromium's sandbox refuses root
    return Still(service=Service(shutil.which("chromedriver")), options=opts)


def live_text(drv, element_id):
    """The text of an element of a page that reloads itself, read in one
    script call (an element found first may be gone by the time its text
    is asked for); None while the page is being loaded again."""
    from selenium.common.exceptions import WebDriverException
    try:
        return drv.execute_script(
            "var e = document.getElementById(arguments[0]);"
            " return e ? e.textContent : null", element_id)
    except WebDriverException:
        return None


def artifacts():
    d = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("SL_BIN", "build/bin"))),
                     "artifacts")
    os.makedirs(d, exist_ok=True)
    return d
