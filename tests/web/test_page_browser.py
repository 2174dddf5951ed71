"""The page at / in a real browser (headless Chromium through Selenium) against a real
hone-controller (admin key and worker enrolment token set) and a real hone-worker training real
small jobs with hone-train on the CPU (Fashion-MNIST subsets; its epochs held by
paced_trainer.py so that a job runs long enough to be watched, paused and cancelled without more
CPU). Through the page only:

- the token typed in reaches the API (a 401 is shown before); the job list shows the jobs;
- a running train job: status, progress line with epoch, val_accuracy and ETA (as `hone job wait`),
  the progress bar, live curves that grow, its log lines live from the log stream, the workers'
  GPU section (admin); screenshot job-running.png; pause, then resume, it;
- cancel asks first ("Keep it" keeps the job queued), then cancels; an action the API refuses
  (evaluate of an AutoML job with no best model yet: 409 parent_job_id) shows the API's message;
- a job whose trainer fails (its dataset's file broken after the check) shows its error text;
  screenshot job-failed.png;
- the done train job (screenshot job-done.png): download its model (the artifact's bytes),
  evaluate (the new job's page shows its accuracy and confusion matrix), export and download the
  ONNX file;
- the AutoML job: its trials' curves, parallel-coordinates lines and table dots share one colour
  per trial, nothing drawn off the plot; the trials table sorts by any column; two trials compared
  overlaid and side by side, the results table sorted; screenshot compare.png; two jobs compared
  from the job list, which sorts too;
- the datasets with their stats;
- a user's login token: no workers section (GET /workers is for admins), no error;
- the browser logs no Content-Security-Policy violation.

Screenshots go to HONE_SCREENSHOTS (default: screenshots/ in the working folder). Exit 77 (skipped)
without chromium, chromedriver, python3-selenium or Fashion-MNIST. Run with /usr/bin/python3
(Debian's selenium). usage: test_page_browser.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import shutil
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from hone_test import Controller, tempdir, write_idx  # noqa: E402
from honeproc import WorkerProcess  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    print("skip: python3-selenium is not installed")
    sys.exit(77)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FMNIST = os.environ.get("HONE_FMNIST", "/usr/share/datasets/fashion-mnist")
TOKEN = "page-test-admin-key"
ENROL = "page-test-enrolment"
SPEC = {"data": {"train_limit": 1000, "val_size": 200, "test_limit": 200}}


def wait_for(what, fn, timeout=60):
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


class Page:
    def __init__(self, browser, base, shots):
        self.b = browser
        self.base = base
        self.shots = shots

    def el(self, css):
        return self.b.find_element(By.CSS_SELECTOR, css)

    def text(self, css):
        return self.el(css).text

    def click(self, css):
        wait_for("%s clickable" % css,
                 lambda: self.el(css).is_enabled() and (self.el(css).click() or True))

    def go(self, hash_):
        self.b.get(self.base + "/" + hash_)
        # a new hash on the same page is no reload: wait for the view of this one
        wait_for("the view of " + hash_, lambda: self.b.execute_script(
            "return document.body.dataset.view") == hash_.lstrip("#"))

    def open_new_job(self):
        """Follows the link an action's notice gives to the job it started; returns its id once
        its page (not the one before) is shown."""
        jid = wait_for("the new job's link", lambda: self.attr("#newjob", "href").rsplit("/", 1)[1])
        self.click("#newjob")
        wait_for("the page of " + jid, lambda: jid in self.text("#main h2"))
        return jid

    def status(self):
        return self.text("#jobstatus")

    def attr(self, css, name):
        return self.el(css).get_attribute(name)

    def shot(self, name):
        path = os.path.join(self.shots, name)
        self.b.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.4)  # a frame or two of drawing
        self.b.save_screenshot(path)
        assert os.path.getsize(path) > 10000, path
        print("screenshot:", path)


def api(c, method, path, body=None, want=(200, 201)):
    return c.ok(method, path, body, want=want, headers={"Authorization": "Bearer " + TOKEN})


def job_status(c, jid):
    return api(c, "GET", "/api/v1/jobs/" + jid)["status"]


def wait_status(c, jid, want, timeout=120):
    return wait_for("job %s %s" % (jid, want), lambda: job_status(c, jid) in want and job_status(c, jid),
                    timeout=timeout)


def artifact(c, jid, name):
    st, body = c.req("GET", "/api/v1/jobs/%s/artifacts/%s" % (jid, name),
                     headers={"Authorization": "Bearer " + TOKEN})
    assert st == 200, (st, body)
    return body


def downloaded(dl, name, want):
    path = os.path.join(dl, name)
    wait_for("the download of " + name,
             lambda: os.path.exists(path) and os.path.getsize(path) == len(want))
    with open(path, "rb") as f:
        assert f.read() == want, name


def setup(c, d, trainer):
    """Datasets, experiments; a broken dataset (its train images cut after the check)."""
    fm = api(c, "POST", "/api/v1/datasets", {"name": "fmnist", "path": FMNIST})
    bad_root = os.path.join(d, "broken")
    write_idx(bad_root, n_train=300, n_test=50)
    bad = api(c, "POST", "/api/v1/datasets", {"name": "broken", "path": bad_root})
    with open(os.path.join(bad_root, "train-images-idx3-ubyte.gz"), "r+b") as f:
        f.truncate(40)
    mk = lambda name, ds, extra: api(c, "POST", "/api/v1/experiments", dict(
        {"name": name, "network_arch": "mlp", "train_datasets": [ds["id"]]}, **extra))
    e_train = mk("fmnist-mlp", fm, {"specs": dict(SPEC, train={"epochs": 40})})
    e_auto = mk("fmnist-search", fm, {
        "specs": dict(SPEC, train={"epochs": 3}),
        "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                            "automl_max_recommendations": 3, "automl_max_parallel": 1}})
    e_bad = mk("broken-data", bad, {"specs": {"data": {"val_size": 50}, "train": {"epochs": 2}}})
    return fm, e_train, e_auto, e_bad


def new_job(c, exp, action="train"):
    return api(c, "POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": action})["id"]


def colours_agree(p):
    """The trials' colours in the curves, the parallel coordinates and the table's dots."""
    curves = json.loads(p.attr("#curves", "data-colors"))
    par = json.loads(p.attr("#parallel", "data-colors"))
    assert curves and curves == {k: par[k] for k in curves}, (curves, par)
    dots = p.b.execute_script("""
        const out = {};
        for (const tr of document.querySelectorAll('#trials tbody tr')) {
          const probe = document.createElement('span');
          probe.style.color = arguments[0][tr.dataset.id] || '';
          out[tr.dataset.id] = [tr.querySelector('span.dot').style.color, probe.style.color];
        }
        return out;""", par)
    assert dots and all(a == b and a for a, b in dots.values()), dots
    return curves


def run(c, p, d, dl):
    fm, e_train, e_auto, e_bad = setup(c, d, None)
    b = p.b
    t1 = new_job(c, e_train)

    # the token: refused without it, the job listed with it
    p.go("#/")
    wait_for("the 401 shown", lambda: "401" in p.text("#error"))
    tok = p.el("#token")
    tok.send_keys(TOKEN)
    b.execute_script("arguments[0].dispatchEvent(new Event('change'))", tok)
    wait_for("the job in the list", lambda: t1 in p.text("#jobs"))
    p.click('a[href="#/jobs/%s"]' % t1)

    # running: progress, ETA, curves growing, the log live, the workers' GPUs
    wait_for("running", lambda: p.status() == "running")
    pts = lambda: int(p.attr("#curves", "data-points") or 0)
    first = wait_for("the first points", lambda: pts() >= 2 and pts())
    wait_for("the curves to grow", lambda: pts() > first)
    prog = wait_for("the progress line", lambda: "ETA " in p.text("#progress") and
                    "ETA ?" not in p.text("#progress") and p.text("#progress"))
    assert "running | epoch " in prog and "/40 | val_accuracy 0." in prog, prog
    assert p.el("#bar").size["width"] > 0
    wait_for("log lines", lambda: int(p.attr("#logs", "data-lines") or 0) > 0)
    wait_for("the workers", lambda: p.attr("#workers", "data-workers") == "1" and
             "none (CPU)" in p.text("#workers"))
    assert p.attr("#act-pause", "disabled") is None and p.attr("#act-resume", "disabled")
    p.shot("job-running.png")

    # pause, then resume, the running job
    p.click("#act-pause")
    wait_for("paused", lambda: p.status() == "paused", timeout=60)
    assert job_status(c, t1) == "paused"
    paused_at = api(c, "GET", "/api/v1/jobs/" + t1)["epoch"]
    assert 0 < paused_at < 40, paused_at
    p.click("#act-resume")
    wait_for("running again", lambda: p.status() == "running")
    assert job_status(c, t1) == "running"

    # more jobs queue behind it (one worker)
    t2 = new_job(c, e_train)
    auto = new_job(c, e_auto, "automl")
    bad = new_job(c, e_bad)

    # cancel asks first
    p.go("#/jobs/" + t2)
    wait_for("queued", lambda: p.status() == "queued")
    p.click("#act-cancel")
    wait_for("the confirmation", lambda: p.el("#confirm").is_displayed())
    assert "Cancel train job " + t2 in p.text("#confirm-text")
    p.click("#confirm-no")
    time.sleep(0.5)
    assert job_status(c, t2) == "queued"
    p.click("#act-cancel")
    p.click("#confirm-ok")
    wait_for("canceled", lambda: p.status() == "canceled")
    assert job_status(c, t2) == "canceled"
    assert p.attr("#act-cancel", "disabled")

    # the API's refusal shown: the AutoML job has no best model yet
    p.go("#/jobs/" + auto)
    p.click("#act-evaluate")
    err = wait_for("the refusal", lambda: "error" in p.attr("#notice", "class") and p.text("#notice"))
    assert "409" in err and "parent_job_id" in err, err

    # the failed job's error
    wait_status(c, bad, ("failed",), timeout=180)
    p.go("#/jobs/" + bad)
    err = wait_for("the error", lambda: p.el("#joberror").is_displayed() and p.text("#joberror"))
    assert err.strip() == api(c, "GET", "/api/v1/jobs/" + bad)["error"].strip(), err
    wait_for("failed", lambda: p.status() == "failed")
    wait_for("its log", lambda: "(complete)" in p.text("#loginfo"))
    p.shot("job-failed.png")

    # the done job: download, evaluate, export
    wait_status(c, t1, ("done",), timeout=180)
    p.go("#/jobs/" + t1)
    wait_for("done", lambda: p.status() == "done")
    wait_for("the whole run", lambda: pts() == 40 and "epoch 40/40" in p.text("#progress"))
    wait_for("the log's tail", lambda: "(complete)" in p.text("#loginfo"))
    p.shot("job-done.png")
    p.click("#act-download")
    downloaded(dl, t1 + "-model.bin", artifact(c, t1, "model.bin"))
    p.click("#act-evaluate")
    ev = p.open_new_job()
    wait_for("evaluate done", lambda: p.status() == "done", timeout=120)
    res = wait_for("its result", lambda: p.text("#resulttable"))
    acc = api(c, "GET", "/api/v1/jobs/" + ev)["result"]["accuracy"]
    assert "accuracy" in res and ("%.4g" % acc) in res, (res, acc)
    # the confusion matrix: its diagonal over its total is the accuracy
    cells = [[int(td.text) for td in tr.find_elements(By.TAG_NAME, "td")[:-1]]
             for tr in b.find_elements(By.CSS_SELECTOR, "#confusion tr")[1:]]
    assert len(cells) == 10 and all(len(r) == 10 for r in cells), cells
    total = sum(map(sum, cells))
    assert total == 200 and abs(sum(cells[i][i] for i in range(10)) / total - acc) < 1e-6, cells
    p.shot("evaluate.png")
    p.go("#/jobs/" + t1)
    p.click("#act-export")
    ex = p.open_new_job()
    wait_for("export done", lambda: p.status() == "done", timeout=120)
    p.click("#act-download")
    downloaded(dl, ex + "-model.onnx", artifact(c, ex, "model.onnx"))

    # the AutoML job: colours, the sortable trials table, comparing trials
    wait_status(c, auto, ("done",), timeout=180)
    p.go("#/jobs/" + auto)
    wait_for("three curves", lambda: p.attr("#curves", "data-series") == "3")
    wait_for("three lines", lambda: p.attr("#parallel", "data-lines") == "3")
    colours = colours_agree(p)
    assert len(set(colours.values())) == 3, colours
    assert p.attr("#parallel", "data-offplot") == "0"
    assert p.attr("#parallel", "data-missing") == "0"
    p.shot("automl.png")
    # a trial with no metric yet (or no value for an axis) is drawn in the strip inside the plot
    strip = b.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/ui/draw.js').then((m) => {
          const cv = document.createElement('canvas');
          cv.width = 600; cv.height = 300;
          Object.assign(cv.style, {width: '600px', height: '300px'});
          document.body.appendChild(cv);
          m.drawParallel(cv, [{id: 'a', config: {lr: 0.1, opt: 'sgd'}, metric: 0.9, color: 'red'},
                              {id: 'b', config: {lr: 0.01, opt: 'adam'}, metric: null, color: 'blue'},
                              {id: 'c', config: {lr: 0.001}, metric: 0.5, color: 'green'}], 'val_accuracy');
          const g = cv.getContext('2d');
          let outside = 0;  // coloured pixels in the 20 rows below the plot's foot
          const px = g.getImageData(0, 300 - 20, 600, 20).data;
          for (let i = 0; i < px.length; i += 4)
            if (px[i + 3] && (px[i] > 150 || px[i + 2] > 150) && px[i + 1] < 100) outside++;
          done([cv.dataset.missing, cv.dataset.offplot, cv.dataset.lines, outside]);
          cv.remove();
        }, (e) => done(String(e)));""")
    assert strip == ["2", "0", "3", 0], strip
    best_col = [th for th in b.find_elements(By.CSS_SELECTOR, "#trials th.sortable")
                if th.text.startswith("best")][0]
    best_col.click()
    vals = lambda: [float(tr.find_elements(By.TAG_NAME, "td")[4].text)
                    for tr in b.find_elements(By.CSS_SELECTOR, "#trials tbody tr")]
    wait_for("sorted up", lambda: p.attr("#trials", "data-sort") == "best:asc")
    assert vals() == sorted(vals()), vals()
    p.click("#trials th[data-key=best]")
    wait_for("sorted down", lambda: p.attr("#trials", "data-sort") == "best:desc")
    assert vals() == sorted(vals(), reverse=True), vals()
    ids = [tr.get_attribute("data-id") for tr in b.find_elements(By.CSS_SELECTOR, "#trials tbody tr")]
    for tid in ids[:2]:
        p.click('#trials input[data-id="%s"]' % tid)
    p.click("#compare")
    wait_for("two curves overlaid", lambda: p.attr("#cmp-curves", "data-series") == "2")
    # each trial in the colour its job page gave it
    assert json.loads(p.attr("#cmp-curves", "data-colors")) == {t: colours[t] for t in ids[:2]}
    p.click("#mode-side")
    wait_for("side by side", lambda: [cv.get_attribute("data-series") for cv in
                                      b.find_elements(By.CSS_SELECTOR, "#cmp-multi canvas")] == ["1", "1"])
    p.click("#mode-overlay")
    p.click("#cmp-table th[data-key=trial]")
    p.click("#cmp-table th[data-key=trial]")
    wait_for("sorted by trial, down", lambda: p.attr("#cmp-table", "data-sort") == "trial:desc")
    trials = [int(tr.find_elements(By.TAG_NAME, "td")[3].text)
              for tr in b.find_elements(By.CSS_SELECTOR, "#cmp-table tbody tr")]
    assert len(trials) == 2 and trials == sorted(trials, reverse=True), trials
    p.shot("compare.png")
    p.click("#clear-compare")

    # comparing jobs from the list, which sorts by any column
    wait_for("the list", lambda: p.el("#jobs"))
    p.click("#jobs th[data-key=status]")
    wait_for("sorted by status", lambda: p.attr("#jobs", "data-sort") == "status:asc")
    st = [tr.find_elements(By.TAG_NAME, "td")[4].text
          for tr in b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")]
    assert st == sorted(st) and "canceled" in st and "failed" in st, st
    for jid in (t1, auto):
        p.click('#jobs input[data-id="%s"]' % jid)
    p.click("#compare")
    wait_for("two jobs compared", lambda: p.attr("#cmp-curves", "data-series") == "2")
    assert set(json.loads(p.attr("#cmp-curves", "data-colors"))) == {t1, auto}
    assert "automl" in p.text("#cmp-table") and "train" in p.text("#cmp-table")

    # the datasets with their stats
    p.go("#/datasets")
    wait_for("the datasets", lambda: "fmnist" in p.text("#datasets") and "broken" in p.text("#datasets"))
    assert "60000 train" in p.text("#datasets"), p.text("#datasets")
    p.click('a[href="#/datasets/%s"]' % fm["id"])
    wait_for("its stats",
             lambda: "train_images" in p.text("#dsdetail") and "60000" in p.text("#dsdetail"))

    # a user's login token: the page works, and hides the admins' worker list
    user = api(c, "POST", "/api/v1/users", {"name": "alice", "role": "user"})
    key = api(c, "POST", "/api/v1/users/%s/keys" % user["id"], {})["key"]
    login = c.ok("POST", "/api/v1/login", {"key": key})["token"]
    p.go("#/")
    tok = p.el("#token")
    tok.clear()
    tok.send_keys(login)
    b.execute_script("arguments[0].dispatchEvent(new Event('change'))", tok)
    wait_for("the user's empty list", lambda: p.el("#jobs") and t1 not in p.text("#jobs"))
    wait_for("no workers", lambda: p.attr("#workersec", "data-denied") == "1")
    assert not p.el("#workersec").is_displayed() and not p.el("#error").is_displayed()


def main():
    if not CHROMIUM or not DRIVER:
        print("skip: chromium or chromedriver is not installed")
        sys.exit(77)
    if not os.path.exists(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")):
        print("skip: no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist)" % FMNIST)
        sys.exit(77)
    ctl_bin, wrk_bin, trn_bin = (os.path.abspath(a) for a in sys.argv[1:4])
    shots = os.environ.get("HONE_SCREENSHOTS", os.path.abspath("screenshots"))
    os.makedirs(shots, exist_ok=True)
    d = tempdir()
    dl = os.path.join(d, "downloads")
    os.makedirs(dl)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nauth:\n  admin_key: %s\n  worker_token: %s\n"
                "data_roots:\n  - %s\n  - %s\n" % (TOKEN, ENROL, json.dumps(d), json.dumps(FMNIST)))
    # the worker's trainer: the real hone-train, its epochs held 0.5 s each
    shim = os.path.join(d, "hone-train-paced")
    with open(shim, "w") as f:
        f.write("#!/bin/sh\nexec %s %s %s \"$@\"\n" % (
            sys.executable, json.dumps(os.path.join(HERE, "paced_trainer.py")), json.dumps(trn_bin)))
    os.chmod(shim, os.stat(shim).st_mode | stat.S_IXUSR)
    os.environ["HONE_TEST_EPOCH_PACE"] = "0.5"
    os.environ["HONE_TOKEN"] = ENROL
    c = Controller(ctl_bin, d, config=cfg).start()
    w = WorkerProcess(wrk_bin, shim, d, "w1", c.base).start()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,1300", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", {"download.default_directory": dl,
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, CSP reports too
    browser = None
    try:
        browser = webdriver.Chrome(service=Service(DRIVER), options=opts)
        browser.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": dl})
        run(c, Page(browser, c.base, shots), d, dl)
        csp = [e["message"] for e in browser.get_log("browser")
               if "Content Security Policy" in e.get("message", "")]
        assert not csp, csp
    except BaseException:
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (c.tail(), w.text()[-4000:]))
        if browser:
            try:
                browser.save_screenshot(os.path.join(shots, "failure.png"))
                sys.stderr.write("---- browser console\n%s\n" % "\n".join(
                    e["message"] for e in browser.get_log("browser")))
            except Exception:
                pass
        raise
    finally:
        if browser:
            browser.quit()
        w.stop()
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
