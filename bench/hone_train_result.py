#!/usr/bin/env python3
"""bench/hone_train_result.py: hone-train's JSON lines (stdin) as one RESULT line for the bench
tables: s/epoch = median of epochs 2..N (high median), images/s at that pace, test accuracy, the
first epoch apart (start-up and graph capture). The per-epoch seconds are printed first.
Usage: hone-train ... | hone_train_result.py arch=cnn batch=128 math=tf32"""
import json
import statistics
import sys

ep, done = [], {}
for line in sys.stdin:
    j = json.loads(line)
    if "epoch" in j:
        ep.append(j)
    elif j.get("event") == "done":
        done = j
if not ep:
    sys.exit("hone-train produced no epochs")
secs = [e["seconds"] for e in ep]
med = statistics.median_high(secs[1:]) if len(secs) > 1 else secs[0]
imgs = ep[-1]["images_per_second"] * ep[-1]["seconds"]
print("epochs (s):", " ".join("%.3f" % x for x in secs))
print("RESULT impl=hone-train %s s_per_epoch=%.4f first_epoch=%.4f img_per_s=%.0f acc=%.4f "
      "epochs=%d" % (" ".join(sys.argv[1:]), med, secs[0], imgs / med,
                     done.get("test_accuracy", 0.0), len(ep)))
