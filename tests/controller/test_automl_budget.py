"""A budgeted AutoML job's governor against a real hone-controller driven by a fake worker, with a
restart (kill -9) in the middle: the decisions the budget made are stored with the search's events
and replayed.

Budget 0.2 min (12 s; trials must end by 11 s), random search, 4-epoch trials, one at a time, no
epoch-time hint:
  1. trial 0 reports its 4 epochs half a second apart and completes done (its test accuracy);
  2. trial 1 is launched (4 epochs of ~0.5 s fit) and reports epoch 1 at once; the worker then
     stalls until 8 s and reports epoch 2: the estimate says 2 more epochs cannot end by 11 s, so
     the answer is stop, though the search itself said continue;
  3. kill -9 and restart: the same report again is answered stop; the trial completes stopped;
  4. nothing more launches (the budget's end is past) and the job ends done with the best
     *finished* trial (trial 0, its test accuracy), and a note naming the stop the replayed events
     recorded: '1 trial stopped by the budget (trial 1 at epoch 2 of 4)';
  5. a second budgeted job with no hint is sized from the experiment's earlier epochs;
and with ASHA, promotions that cannot finish are dropped, stored, and replayed after a kill -9.
The old controller refused automl_budget_minutes (an unknown field)."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402


def main():
    binary = binary_from_argv()
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": "b", "network_arch": "mlp", "train_datasets": [ds["id"]],
                "specs": {"train": {"epochs": 4}},
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                    "automl_max_recommendations": 50, "automl_max_parallel": 1,
                                    "automl_budget_minutes": 0.2}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    t0 = time.time()
    jid = job["id"]
    a = job["automl"]
    assert a["budget_seconds"] == 12 and a["budget_plan"] is None, a
    assert a["budget_used_seconds"] >= 0 and a["budget_left_seconds"] <= 12, a
    w = FakeWorker(c)
    w.register()

    # 1. trial 0: four epochs, half a second apart, then done with its test accuracy
    first = w.lease()
    assert first and first["epochs_until"] == 4, first
    for epoch in range(1, 5):
        st, js = w.report(first, epoch, {"val_accuracy": 0.5 + epoch / 100, "seconds": 0.4})
        assert st == 200, (st, js)
        if epoch < 4:
            assert js["decision"] == "continue", (epoch, js)
            time.sleep(0.5)
    assert js["decision"] == "stop", js
    w.complete(first, "done", {"test_accuracy": 0.61})

    # 2. trial 1 fits (4 epochs of ~0.5 s before 11 s): launched; then the worker stalls
    second = w.lease()
    assert second and second["id"] != first["id"], second
    st, js = w.report(second, 1, {"val_accuracy": 0.9})
    assert st == 200 and js["decision"] == "continue", (st, js)
    time.sleep(max(0.0, 8 - (time.time() - t0)))
    st, js = w.report(second, 2, {"val_accuracy": 0.91})
    assert st == 200 and js["decision"] == "stop", ("the budget did not stop it", st, js)

    # 3. kill -9: the rebuilt search replays the stop; the repeated report is answered the same
    c.kill9()
    c.start()
    st, js = w.report(second, 2, {"val_accuracy": 0.91})
    assert st == 200 and js["decision"] == "stop", (st, js)
    w.complete(second, "stopped")

    # 4. the budget's end is past: nothing more launches, the job ends with the finished trial
    st = c.ok("GET", "/api/v1/jobs/" + jid)
    assert st["status"] == "done", st
    assert w.lease() is None
    res, a = st["result"], st["automl"]
    assert res["best_job_id"] == first["id"] and res["best_test_accuracy"] == 0.61, res
    assert res["budget"]["best_finished"] is True and res["budget"]["trials_stopped"] == 1, res
    note = a["budget_note"]
    assert note.startswith("budget 12 s, used ") and \
        "1 trial stopped by the budget (trial 1 at epoch 2 of 4)" in note, note
    assert a["budget_left_seconds"] >= 0 and a["budget_used_seconds"] <= 12 + 30, a
    st, text = c.req("GET", "/api/v1/jobs/%s/logs" % jid)
    assert st == 200 and b"trial 1 stopped by the budget at epoch 2 of 4" in text, text
    # 5. a second budgeted job without a hint is sized from this experiment's earlier epochs
    # (the trainers' 0.4 s, plus a margin)
    again = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    plan = again["automl"]["budget_plan"]
    assert plan and plan["full_epochs"] >= 1, again["automl"]
    st, text = c.req("GET", "/api/v1/jobs/%s/logs" % again["id"])
    assert b"~0.44 s an epoch (this experiment's earlier epochs)" in text, text
    c.ok("POST", "/api/v1/jobs/%s:cancel" % again["id"])
    c.stop()
    print("ok: the budget's stop survived a restart: %s" % note)


def drops_replayed(binary):
    """ASHA with rungs at 1 and 3 epochs, one trial at a time, budget 12 s (trials end by 11 s), no
    hint; each epoch takes 2.5 s and each new trial is better than those before, so ASHA promotes
    the third (2 more epochs) when it pauses at ~7.5 s: 2 epochs cannot end by 11 s, so the
    promotion is dropped (stored as an event) while a new 1-epoch trial still launches. A kill -9
    right after it rebuilds the search from the events (no replay error), and the job ends done,
    its note counting the dropped promotions."""
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": "d", "network_arch": "mlp", "train_datasets": [ds["id"]],
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "asha",
                                    "automl_R": 3, "automl_nu": 3, "automl_max_parallel": 1,
                                    "automl_budget_minutes": 0.2}})
    jid = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})["id"]
    w = FakeWorker(c)
    w.register()
    killed, leases = False, 0
    for _ in range(400):
        if c.ok("GET", "/api/v1/jobs/" + jid)["status"] != "running":
            break
        job = w.lease()
        if not job:
            time.sleep(0.05)
            continue
        leases += 1
        dec = "continue"
        for epoch in range(job["epoch"] + 1, job["epochs_until"] + 1):
            time.sleep(2.5)  # an epoch
            st, js = w.report(job, epoch, {"val_accuracy": 0.5 + leases / 100})
            assert st == 200, (st, js)
            dec = js["decision"]
            if dec != "continue":
                break
        w.complete(job, "paused" if dec == "pause" else "done" if dec == "stop" else "stopped")
        st, text = c.req("GET", "/api/v1/jobs/%s/logs" % jid)
        if not killed and b"not resumed to epoch 3: it cannot finish within the budget" in text:
            c.kill9()  # the drop is stored: the rebuilt search must replay it
            c.start()
            killed = True
    st = c.ok("GET", "/api/v1/jobs/" + jid)
    text = c.req("GET", "/api/v1/jobs/%s/logs" % jid)[1]
    assert killed, ("no promotion was dropped", st, text)
    assert st["status"] == "done", (st, text)
    b = st["result"]["budget"]
    assert b["promotions_dropped"] >= 1, b
    assert "not run (" in st["automl"]["budget_note"], st["automl"]["budget_note"]
    log = open(c.log_path, "rb").read()
    assert b"replay_failed" not in log and b"replay_mismatch" not in log, c.tail()
    c.stop()
    print("ok: dropped promotions replayed after a restart: %s" % st["automl"]["budget_note"])


def startup_then_fast_epochs(binary):
    """No hint and no earlier epochs: the first report, 3 s after the launch (start-up and an
    epoch), is the first estimate; the epochs after it take 0.1 s and must replace it. Before, an
    epoch sample under a quarter of the estimate was taken for a replayed report and dropped, so
    the estimate stayed at 3 s an epoch for the whole search (and held back every launch)."""
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": "s", "network_arch": "mlp", "train_datasets": [ds["id"]],
                "specs": {"train": {"epochs": 8}},
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                    "automl_early_stop": "none", "automl_max_parallel": 1,
                                    "automl_budget_minutes": 0.6}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    w = FakeWorker(c)
    w.register()
    t = w.lease()
    assert t and t["epochs_until"] == 8, t
    time.sleep(3)
    for epoch in range(1, 9):
        st, js = w.report(t, epoch, {"val_accuracy": 0.5 + epoch / 100, "seconds": 0.1})
        assert st == 200, (st, js)
        want = "stop" if epoch == 8 else "continue"
        assert js["decision"] == want, ("epoch %d" % epoch, js)
        time.sleep(0.1)
    w.complete(t, "done", {"test_accuracy": 0.6})
    a = c.ok("GET", "/api/v1/jobs/" + job["id"])["automl"]
    assert a["budget_epoch_seconds"] < 1, a
    c.ok("POST", "/api/v1/jobs/%s:cancel" % job["id"])
    c.stop()
    print("ok: the estimate came down to %.2f s an epoch after a 3 s start-up" %
          a["budget_epoch_seconds"])


if __name__ == "__main__":
    main()
    drops_replayed(binary_from_argv())
    startup_then_fast_epochs(binary_from_argv())
