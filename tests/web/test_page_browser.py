"""The page at / in a real browser (headless Chromium through Selenium) against a real
hone-controller with an admin token, while an AutoML job runs (a fake worker reports its trials'
epochs slowly, from a thread): the token typed into the page reaches the API, the job shows up in
the list, and on the job's page the learning curves appear and grow as epochs arrive (the canvas
counts what it drew), several trials get curves, the parallel-coordinates view and the best config
fill in, and the end of the job is shown; the trials' colour dots are set, and the browser logs no
Content-Security-Policy violation (the page's strict policy blocks nothing it needs). Saves a screenshot (HONE_SCREENSHOT, default
page.png in the build's working folder). Exit 77 (skipped) without chromium, chromedriver or
python3-selenium. Run with /usr/bin/python3 (Debian's selenium)."""
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
from hone_test import Controller, FakeWorker, tempdir, write_idx  # noqa: E402
from test_automl import setup  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    print("skip: python3-selenium is not installed")
    sys.exit(77)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
TOKEN = "page-test-token"


def wait_for(what, fn, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # the page is re-rendering: try again
            last = e
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def run_worker(c, w, automl_id, errors):
    """Leases trials and reports each epoch slowly, until the AutoML job ends."""
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            job = w.lease(wait=1)
            if job is not None:
                w.run_job(job, on_report=lambda *a: time.sleep(0.25))
            st = c.ok("GET", "/api/v1/jobs/" + automl_id, headers=w.admin)["status"]
            if st in ("done", "failed", "canceled"):
                return
        errors.append("the AutoML job did not end")
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))


def main():
    if not CHROMIUM or not DRIVER:
        print("skip: chromium or chromedriver is not installed")
        sys.exit(77)
    ctl_bin = os.path.abspath(sys.argv[1])
    shot = os.environ.get("HONE_SCREENSHOT", os.path.abspath("page.png"))
    d = tempdir()
    root = os.path.join(d, "ds")
    write_idx(root)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nauth:\n  token: %s\n" % TOKEN)
    c = Controller(ctl_bin, d, config=cfg).start()
    admin = {"Authorization": "Bearer " + TOKEN}
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,1100"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, CSP reports too
    browser = None
    errors = []
    try:
        # The enrolment of the fake worker needs the admin token too.
        st, js = c.req("POST", "/api/v1/workers", {"name": "w", "resources": {"cpus": 1, "gpus": []}},
                       headers=admin)
        assert st == 201 or st == 200, (st, js)
        w = FakeWorker(c, "w")
        w.id, w.headers, w.admin = js["id"], {"Authorization": "Bearer " + js["token"]}, admin
        exp = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": root}, headers=admin)
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "browser", "network_arch": "mlp", "train_datasets": [exp["id"]],
                    "automl_settings": {"automl_enabled": True, "automl_algorithm": "bayesian",
                                        "automl_max_recommendations": 4,
                                        "automl_max_parallel": 1},
                    "specs": {"train": {"epochs": 5}}}, headers=admin)
        job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"},
                   headers=admin)

        browser = webdriver.Chrome(service=Service(DRIVER), options=opts)
        browser.get(c.base + "/")
        # Without the token the API refuses: the page says so; with it, the job is listed.
        wait_for("the 401 shown", lambda: "401" in browser.find_element(By.ID, "error").text)
        tok = browser.find_element(By.ID, "token")
        tok.send_keys(TOKEN)
        browser.execute_script("arguments[0].dispatchEvent(new Event('change'))", tok)
        wait_for("the job in the list",
                 lambda: job["id"] in browser.find_element(By.ID, "jobs").text)
        browser.find_element(By.CSS_SELECTOR, 'a[href="#/jobs/%s"]' % job["id"]).click()
        wait_for("the job page", lambda: browser.find_element(By.ID, "curves"))

        t = threading.Thread(target=run_worker, args=(c, w, job["id"], errors), daemon=True)
        t.start()
        pts = lambda: int(browser.find_element(By.ID, "curves").get_attribute("data-points") or 0)
        first = wait_for("the first points", lambda: pts() or None)
        grown = wait_for("the curves to grow", lambda: pts() > first + 2 and pts())
        assert grown > first, (first, grown)
        series = lambda: int(browser.find_element(By.ID, "curves").get_attribute("data-series"))
        wait_for("a second trial's curve", lambda: series() >= 2, timeout=60)
        lines = lambda: int(browser.find_element(By.ID, "parallel").get_attribute("data-lines") or 0)
        wait_for("parallel coordinates", lambda: lines() >= 2)
        wait_for("the best config", lambda: "trial" in browser.find_element(By.ID, "best").text)
        wait_for("the end", lambda: "ended: done" in browser.find_element(By.ID, "live").text,
                 timeout=90)
        # one view draws (a stale one would put its "running" back)
        wait_for("the done badge", lambda: browser.find_element(By.ID, "jobstatus").text == "done")
        t.join(10)
        assert not errors, errors
        stored = c.ok("GET", "/api/v1/jobs/%s/metrics" % job["id"], headers=admin)["trials"]
        total = sum(len(v) for v in stored.values())
        wait_for("every stored epoch drawn", lambda: pts() == total)
        assert series() == len([v for v in stored.values() if v]), (series(), stored.keys())
        dots = browser.execute_script(
            "return [...document.querySelectorAll('#trials span.dot')].map(d => d.style.color)")
        assert dots and all(dots), dots
        csp = [e["message"] for e in browser.get_log("browser")
               if "Content Security Policy" in e.get("message", "")]
        assert not csp, csp
        browser.save_screenshot(shot)
        assert os.path.getsize(shot) > 10000, shot
        print("screenshot:", shot)
    finally:
        if browser:
            browser.quit()
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
