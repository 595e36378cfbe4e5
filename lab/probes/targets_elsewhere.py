"""Experiment hopper_targets on a Hopper GPU that has no record of experiment `hopper` to choose the rungs from
(an H100, say): the rungs are chosen from the H200 record's `hopper` rows, as `make record` chooses them, and three
shapes off the 128 grid whose rows start 16 bytes into a 32-byte sector are added (goal 0.97):

    python3 lab/probes/targets_elsewhere.py OUT.json          (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402

OFF_GRID = ((3000, 3000, 3000), (6008, 6008, 6008), (4104, 8200, 2056))


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.experiments import hopper as HH, like_for_like as H
    from helpers.isolate import run_isolated
    from helpers.results import load_record

    rows = load_record(ROOT / "results" / "nvidia-h200.json").meta["experiments"]["hopper"]
    plan = [[list(s), c, g, H.target_candidates(rows, s, c)] for s, g in HH.TARGETS.items() for c in ("float16", "float32")]
    off = {c: sorted({k for s in ((5000,) * 3, (7000,) * 3) for k in H.target_candidates(rows, s, c)})
           for c in ("float16", "float32")}
    plan += [[list(s), c, 0.97, off[c]] for s in OFF_GRID for c in ("float16", "float32")]
    t = time.time()
    cells = run_isolated("helpers.experiments.like_for_like:target_rounds", plan, H.TARGET_ROUNDS, timeout=300)
    res = {"rounds": H.TARGET_ROUNDS, "rule": "met: the median of the round-by-round ratios reaches the goal",
           "candidates_from": "results/nvidia-h200.json experiments.hopper", "cells": cells,
           "seconds": round(time.time() - t, 1)}
    Path(argv[0]).write_text(json.dumps(res, indent=1))
    for r in H.head_to_head(res):
        print(r["shape"], r["C"], r["goal"], r["rung"], r["ratio"], r["won"], r["tflops"], r["cublas"], r["mhz"],
              r["checked"], r["error"][:200])
    return 0


if __name__ == "__main__":
    run(main, __doc__)
