"""Experiment hopper_targets on a Hopper GPU that has no record of experiment `hopper` to choose the rungs from
(an H100, say): the rungs are chosen from the H200 record's `hopper` rows, as `make record` chooses them, and three
shapes off the 128 grid whose rows start 16 bytes into a 32-byte sector are added (goal 0.97):

    python3 lab/probes/targets_elsewhere.py OUT.json          (a Hopper GPU, COURSE_DEVICE=gpu)
    python3 lab/probes/targets_elsewhere.py OUT.json --add-rungs 25,26 --misaligned-only

--add-rungs adds rungs to the candidates of every goal whose rows start inside a 128-byte line (5000^3, 7000^3 and
the three shapes off the grid), each where it writes that goal's C type; --misaligned-only leaves the other goals out.

Idea (for the H100, where the rungs fall to 0.82-0.86 of cuBLAS at those shapes while the H200 reaches 0.95-1.05):
the H200's record never makes rungs 25-26 (clusters of 4 where rows start inside a line: each CTA asks L2 for a
quarter of B's boxes instead of half) a candidate at 7000^3, so the H100 has only been timed with rungs 13, 16, 29
and 30 there. Predicted before the run (PREDICTED): rung 25 (FP16 C) and 26 (FP32 C) at least 1.05x the best of those
at 7000^3 and 6008^3, where the H100's smaller DRAM bandwidth is what differs from the H200 and a cluster of 4 halves
B's L2 requests per CTA; at 3000^3 (A and B fit in L2, 2.2 waves of 128 x 256 tiles) no gain (within 1.02x); still
short of 0.97 of cuBLAS everywhere (about 0.88 at 7000^3).
"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, int_option, run  # noqa: E402

OFF_GRID = ((3000, 3000, 3000), (6008, 6008, 6008), (4104, 8200, 2056))
PREDICTED = {"gain over the best other candidate": {(7000, 7000, 7000): 1.05, (6008, 6008, 6008): 1.05,
                                                    (3000, 3000, 3000): 1.0},
             "ratio to cuBLAS at 7000^3": 0.88}


def misaligned(shape) -> bool:
    """Rows of A (K halves) or of B (N halves) start inside a 128-byte line: helpers.kernels.starts_inside_line."""
    from helpers.kernels import starts_inside_line

    M, N, K = shape
    return starts_inside_line(2 * K, 2 * N)


def add_rungs(plan: list, extra: tuple, only_misaligned: bool) -> list:
    """`plan` ([shape, c_dtype, goal, rungs] cells) with the rungs of `extra` that write a cell's C type added to the
    cells whose rows start inside a line; with `only_misaligned`, only those cells."""
    from helpers.kernels import rung_entry

    out = []
    for shape, c, goal, rungs in plan:
        if not misaligned(shape):
            if not only_misaligned:
                out.append([shape, c, goal, rungs])
            continue
        more = [k for k in extra if rung_entry(k).out_dtype == c and k not in rungs]
        out.append([shape, c, goal, list(rungs) + more])
    return out


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
    extra = int_option(argv, "--add-rungs", ())
    if extra or "--misaligned-only" in argv:
        plan = add_rungs(plan, extra, "--misaligned-only" in argv)
    t = time.time()
    cells = run_isolated("helpers.experiments.like_for_like:target_rounds", plan, H.TARGET_ROUNDS, timeout=300)
    predicted = {k: {"x".join(map(str, s)): v for s, v in d.items()} if isinstance(d, dict) else d
                 for k, d in PREDICTED.items()}
    res = {"rounds": H.TARGET_ROUNDS, "plan": plan, "predicted": predicted,
           "rule": "met: the median of the round-by-round ratios reaches the goal",
           "candidates_from": "results/nvidia-h200.json experiments.hopper", "cells": cells,
           "seconds": round(time.time() - t, 1)}
    Path(argv[0]).write_text(json.dumps(res, indent=1))
    for r in H.head_to_head(res):
        print(r["shape"], r["C"], r["goal"], r["rung"], r["ratio"], r["won"], r["tflops"], r["cublas"], r["mhz"],
              r["checked"], r["error"][:200])
    return 0


if __name__ == "__main__":
    run(main, __doc__)
