#!/usr/bin/env bash
# Re-run the error-vs-K experiment live and compare with the committed record (same seeds and
# arithmetic: the rows must be identical).
B=$1
COURSE_DEVICE=gpu python3 - <<'PY'
import json
from helpers.experiments import precision as P
rec = json.load(open("results/nvidia-h200.json"))["experiments"]["error_vs_k"]
live = P.error_vs_k()
rows_r = rec["rows"] if isinstance(rec, dict) else rec
rows_l = live["rows"] if isinstance(live, dict) else live
same = json.dumps(rows_r, sort_keys=True) == json.dumps(rows_l, sort_keys=True)
print("error_vs_k live == recorded:", same, f"({len(rows_l)} rows)")
if not same:
    for a, b in zip(rows_r, rows_l):
        if a != b:
            print("recorded", a); print("live    ", b); break
PY
