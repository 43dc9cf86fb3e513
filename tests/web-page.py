"""The dashboard page in a real headless Chromium (Debian's chromium and
chromium-driver, driven by python3-selenium): with a daemon on a fixture
proc root that has history and jobs (one killed), the page's SVG has the
memory series, a lane per job and the kill marker; a screenshot is kept
under the build dir (artifacts/web-page.png); the page updates itself when
the fixture changes; it fits a narrow window and turns dark in dark mode.

A skip without the browser or selenium, a failure under CI=true.
"""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll, require_tools, skip  # noqa: E402
from webtest import Web, cleanup_jobs, daemon, make_jobs, set_memory  # noqa: E402


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
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--window-size=1100,1000",
              "--user-data-dir=" + profile):
        opts.add_argument(a)
    if os.geteuid() == 0:
        opts.add_argument("--no-sandbox")  # Chromium's sandbox refuses root
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def artifacts():
    d = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("SL_BIN", "build/bin"))),
                     "artifacts")
    os.makedirs(d, exist_ok=True)
    return d


def main():
    require_tools("chromium", "chromedriver")
    if not import_selenium():
        skip("python3-selenium is not installed (apt-get install python3-selenium, "
             "or scripts/deps.sh --test)", root_only=True)
    from selenium.webdriver.common.by import By
    d = daemon()
    profile = tempfile.mkdtemp(prefix="sl-chromium-")
    drv = None
    try:
        d.start()
        ids = make_jobs(d)
        # History: the page's 15 min window has 2 s buckets; wait for a
        # few of them (the daemon's own clock, not a sleep).
        c = Client(d.socket)
        poll(lambda: len(c.call("history", {"since_ms": int(time.time() * 1000) - 60000,
                                            "step_ms": 2000})["buckets"]) >= 5,
             timeout=30, step=0.5, what="5 buckets of history")
        c.close()
        with Web(d.socket) as w:
            drv = browser(profile)
            drv.set_page_load_timeout(30)
            drv.get("http://%s/?window=15m" % w.host())
            css = drv.find_elements
            free = css(By.CSS_SELECTOR, 'svg path[data-series="free_pct"]')
            assert len(free) == 1, "no free % series in the SVG"
            pts = free[0].get_attribute("d").count("L")
            assert pts >= 4, "the free %% series has %d segments" % pts
            assert css(By.CSS_SELECTOR, 'svg path[data-series="swap_used_bytes"]')
            assert css(By.CSS_SELECTOR, 'svg [data-series="pressure"] rect')
            lanes = {int(e.get_attribute("data-job"))
                     for e in css(By.CSS_SELECTOR, "svg g.lane")}
            assert lanes == set(ids.values()), (lanes, ids)
            kill = css(By.CSS_SELECTOR, 'svg .kill-marker[data-job="%d"]' % ids["killed"])
            assert kill, "no kill marker for the killed job"
            assert css(By.CSS_SELECTOR, '#kills tr.kill[data-job="%d"]' % ids["killed"])
            assert css(By.CSS_SELECTOR, '#queue tr[data-job="%d"]' % ids["queued"])
            shot = os.path.join(artifacts(), "web-page.png")
            drv.save_screenshot(shot)
            print("page: series, %d lanes, kill marker; screenshot %s" % (len(lanes), shot))

            before = drv.find_element(By.ID, "free-pct").text
            assert before == "80.0%", before
            set_memory(d, 40, 3)
            poll(lambda: drv.find_element(By.ID, "free-pct").text == "40.0%",
                 timeout=30, step=0.5, what="the page to show free 40%")
            print("page: updated itself after the fixture changed (%s -> 40.0%%)" % before)

            drv.set_window_size(400, 900)
            drv.get("http://%s/" % w.host())
            over = drv.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert over <= 0, "the page is %d px wider than a 400 px window" % over
            drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {
                "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
            bg = drv.execute_script(
                "return getComputedStyle(document.body).backgroundColor")
            assert bg == "rgb(22, 22, 22)", bg
            drv.save_screenshot(os.path.join(artifacts(), "web-page-narrow-dark.png"))
            print("page: fits 400 px; dark background in dark mode")
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
        raise
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
