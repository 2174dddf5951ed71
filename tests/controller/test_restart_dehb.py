"""Crash safety of a DEHB search (issue 31): test_restart.py's run (two fake workers, the controller
killed with SIGKILL at least 5 times and restarted on the same SQLite file) with automl_algorithm
dehb. The search is rebuilt from its stored events each time (search/dehb.c's state is a function of
the seed and the events), so it completes with exactly one pass of Hyperband's brackets for R 9,
eta 3: 9 + 5 + 3 = 17 trials (6 stop at epoch 1, 6 at 3, 5 reach 9), every acknowledged metric
stored once. On the old code the controller refused the algorithm."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["HONE_TEST_ALGO"] = "dehb"
import test_restart  # noqa: E402

if __name__ == "__main__":
    trials = test_restart.main()
    assert len(trials) == 17, [(t["trial"], t["status"], t["epoch"]) for t in trials]
    assert sorted(t["epoch"] for t in trials) == [1] * 6 + [3] * 6 + [9] * 5, \
        sorted(t["epoch"] for t in trials)
