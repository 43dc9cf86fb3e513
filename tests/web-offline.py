"""The dashboard with the daemon down, in a real headless Chromium
(docs/dashboards.md, "With the daemon down: --db"):

- without --db, the page says the daemon is not reachable and how to
  start it, and draws nothing;
- --db on the daemon's own database is refused at start, saying why (as
  root: it holds jobs' commands; run as nobody: it cannot be read), as is
  a file that is not there;
- with --db on the sanitised copy that docs/storage.md's own recipe makes
  (its shell block run as written, with the paths changed), run as nobody
  when the test runs as root, the page draws the copy's history: the free %
  and swap series, a lane per job, the kill's and the cancels' own end
  marks, the stages the jobs reported and the daemon's start; the
  recently ended table; none of the private markers the jobs were given;
- /job/ID of a job in the copy draws it (its fields, its attempts,
  footprint, stages and budget line); one not in it is 404;
- a copy replaced by one that is not sanitised is refused on the page.

Screenshots are kept under the build dir (artifacts/web-down.png,
artifacts/web-offline.png, artifacts/web-offline-job.png). A skip without the browser or selenium, a
failure under CI=true.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll, require_tools, skip  # noqa: E402
from webtest import (EVIL_STAGE, MARKER, Web, artifacts, browser,  # noqa: E402
                     cleanup_jobs, daemon, import_selenium, make_jobs)

PLOT = "#plot-960 svg"
HERE = os.path.dirname(os.path.abspath(__file__))


def text(e):
    return e.get_attribute("textContent")


def recipe():
    """docs/storage.md's shell block that makes the dashboard's copy."""
    with open(os.path.join(HERE, "..", "docs", "storage.md")) as f:
        doc = f.read()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", doc, re.S) if "VACUUM INTO" in b]
    assert len(blocks) == 1, "docs/storage.md: no single recipe block with VACUUM INTO"
    return blocks[0]


def sanitised_copy(db, out):
    """Run the recipe with db= and out= set to these paths."""
    script = re.sub(r"^db=\S+; out=\S+$", "db=%s; out=%s" % (db, out), recipe(),
                    count=1, flags=re.M)
    assert ("db=%s" % db) in script, script
    subprocess.run(["bash", "-c", script], check=True, timeout=60)


def web_refused(args, user=None):
    """stageload-web with args exits 2 at start; its stderr."""
    bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageload-web")
    kw = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    p = subprocess.run([bin_, "--listen", "127.0.0.1:0"] + args, capture_output=True,
                       text=True, timeout=20, **kw)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    return p.stderr.strip()


def check_down(drv, d, sock):
    from selenium.webdriver.common.by import By
    with Web(sock) as w:
        drv.get("http://%s/" % w.host())
        down = text(drv.find_element(By.ID, "daemon"))
        assert down.startswith("daemon not reachable"), down
        start = text(drv.find_element(By.ID, "start"))
        assert "stageloadd" in start and "--db PATH" in start, start
        assert not drv.find_elements(By.CSS_SELECTOR, "#plot svg")
        assert not drv.find_elements(By.ID, "offline")
        drv.save_screenshot(os.path.join(artifacts(), "web-down.png"))
    print("down: %r; %r" % (down[:40], start[:60]))


def check_refused(d, copy):
    why = web_refused(["--db", d.db])
    assert "sanitised copy" in why, why
    print("refused, root's own database: %s" % why)
    why = web_refused(["--db", copy + ".none"])
    assert "No such file" in why, why
    print("refused, no file: %s" % why)
    if os.geteuid() == 0:
        why = web_refused(["--db", d.db], user=65534)
        assert "Permission denied" in why, why
        print("refused, as nobody: %s" % why)


def check_offline(drv, d, sock, ids, copy):
    from selenium.webdriver.common.by import By
    css = drv.find_elements
    user = 65534 if os.geteuid() == 0 else None
    if user is not None:
        os.chmod(d.dir, 0o711)  # nobody reaches the socket's directory
    with Web(sock, extra=["--db", copy], user=user) as w:
        drv.get("http://%s/" % w.host())
        down = text(drv.find_element(By.ID, "daemon"))
        assert down.startswith("daemon not reachable"), down
        src = text(drv.find_element(By.ID, "offline-source"))
        assert copy in src and "last record" in src, src
        free = css(By.CSS_SELECTOR, PLOT + ' path[data-series="free_pct"]')
        assert len(free) == 1 and free[0].get_attribute("d").count("L") >= 4, \
            "no free %% series drawn from %s" % copy
        assert css(By.CSS_SELECTOR, PLOT + ' path[data-series="swap_used_bytes"]')
        assert css(By.CSS_SELECTOR, PLOT + ' [data-series="pressure"] rect')
        lanes = {int(e.get_attribute("data-job")) for e in css(By.CSS_SELECTOR, PLOT + " g.lane")}
        assert lanes == set(ids.values()), (lanes, ids)
        ends = {int(e.get_attribute("data-job")): e.get_attribute("data-mark")
                for e in css(By.CSS_SELECTOR, PLOT + " .end-marker")}
        assert ends == {ids["killed"]: "kill", ids["runner"]: "cancel",
                        ids["queued"]: "cancel"}, ends
        stages = {}
        for e in css(By.CSS_SELECTOR, PLOT + " g.slp-stage"):
            stages.setdefault(int(e.get_attribute("data-job")), []).append(
                text(e.find_element(By.TAG_NAME, "title")))
        assert stages.get(ids["killed"]) == ["load", EVIL_STAGE], stages
        assert len(stages.get(ids["runner"], [])) == 2, stages
        starts = css(By.CSS_SELECTOR, PLOT + ' g.slp-mark[data-mark="restart"]')
        assert starts, "no daemon start mark"
        row = drv.find_element(By.CSS_SELECTOR, '#ended tr[data-job="%d"]' % ids["killed"])
        cells = [text(c) for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[3] == "killed (swap_budget)", cells
        assert not css(By.ID, "queue") and not css(By.ID, "running")
        assert MARKER not in drv.page_source
        drv.save_screenshot(os.path.join(artifacts(), "web-offline.png"))
        print("offline: %s; %d lanes, ends %s, stages %s, %d daemon start(s); ended %s"
              % (src, len(lanes), sorted(ends.values()), stages.get(ids["killed"]),
                 len(starts), cells[3]))

        # Every row and mark links to /job/ID: the job as the copy has it.
        drv.get("http://%s/job/%d" % (w.host(), ids["killed"]))
        fields = {text(r.find_element(By.TAG_NAME, "th")): text(r.find_element(By.TAG_NAME, "td"))
                  for r in css(By.CSS_SELECTOR, "#fields tr")}
        assert fields["state"] == "killed (swap_budget)", fields
        assert fields["swap budget"] == "1.0G", fields
        fp = drv.find_element(By.CSS_SELECTOR, PLOT + ' path[data-series="footprint_bytes"]')
        assert re.search(r"[ML][-0-9.]+ [-0-9.]+", fp.get_attribute("d")), fp.get_attribute("d")
        jstages = [text(e.find_element(By.TAG_NAME, "title"))
                   for e in css(By.CSS_SELECTOR, PLOT + " g.slp-stage")]
        assert jstages == ["load", EVIL_STAGE], jstages
        assert css(By.CSS_SELECTOR, PLOT + " g.slp-budget")
        attempts = [[text(c) for c in r.find_elements(By.TAG_NAME, "td")]
                    for r in css(By.CSS_SELECTOR, "#attempts tbody tr")]
        assert len(attempts) == 1 and attempts[0][-1] == "swap_budget", attempts
        assert MARKER not in drv.page_source
        drv.save_screenshot(os.path.join(artifacts(), "web-offline-job.png"))
        st, _, body = w.get("/job/%d" % (max(ids.values()) + 100))
        assert st == 404 and "no job" in body, (st, body[-300:])
        print("offline: /job/%d from the copy: %s, footprint drawn, stages %s; "
              "a job not in it is 404" % (ids["killed"], fields["state"], jstages))

        # The root-made copy replaced by the database itself: refused.
        shutil.copyfile(d.db, copy + ".tmp")
        os.chmod(copy + ".tmp", 0o644)
        os.replace(copy + ".tmp", copy)
        drv.get("http://%s/" % w.host())
        err = text(drv.find_element(By.ID, "offline-error"))
        assert "sanitised copy" in err, err
        assert not css(By.CSS_SELECTOR, "#plot svg")
        print("offline: a copy that is not sanitised: %r" % err[:80])


def main():
    require_tools("chromium", "chromedriver", "sqlite3")
    if not import_selenium():
        skip("python3-selenium is not installed (apt-get install python3-selenium, "
             "or scripts/deps.sh --test)", root_only=True)
    d = daemon()
    profile = tempfile.mkdtemp(prefix="sl-chromium-")
    dash = tempfile.mkdtemp(prefix="sl-dash-")
    os.chmod(dash, 0o755)
    copy = os.path.join(dash, "stageload.db")
    drv = None
    try:
        d.start()
        ids = make_jobs(d)
        c = Client(d.socket)
        poll(lambda: len(c.call("history", {"since_ms": int(time.time() * 1000) - 60000,
                                            "step_ms": 2000})["buckets"]) >= 5,
             timeout=30, step=0.5, what="5 buckets of history")
        for key in ("runner", "queued"):
            c.call("cancel", {"id": ids[key]})
        poll(lambda: all(c.call("show", {"id": ids[k]})["state"] in ("killed", "cancelled")
                         for k in ("runner", "queued")), what="the cancels")
        c.close()
        sock = d.socket
        assert d.stop() == 0
        sanitised_copy(d.db, copy)
        drv = browser(profile)
        drv.set_page_load_timeout(30)
        check_down(drv, d, sock)
        check_refused(d, copy)
        check_offline(drv, d, sock, ids, copy)
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
        raise
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(dash, ignore_errors=True)
        if d.alive():
            cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
