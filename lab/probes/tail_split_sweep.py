"""A device probe (issue 25): how rung 16's time at 5000^3 depends on how many parts its 4 tail units are cut
into (1 = rung 14's units, no split; the plan's choice is 9). The plan is swapped in this process only
(helpers.kernels.tail_split_plan, which the launcher and the model both read), every C is checked against
float64 and the model on the GPU, and each is timed with helpers.timing.benchmark (cold L2, CUDA events).

    python3 lab/probes/tail_split_sweep.py OUT.json          (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPE = (5000, 5000, 5000)
PARTS = (1, 2, 3, 5, 9, 16)


def main(argv) -> int:
    if not hopper_here():
        return 2
    import math

    import cupy

    import helpers.kernels as K
    from helpers.launch import launcher
    from helpers.timing import benchmark

    M, N, Kd = SHAPE
    planned = K.tail_split_plan(M, N, Kd)
    ktiles = math.ceil(Kd / 64)
    r = K.ALL_RUNGS[16]
    rng = cupy.random.default_rng(5)
    A = rng.standard_normal((M, Kd), dtype=cupy.float32).astype(cupy.float16)
    B = rng.standard_normal((Kd, N), dtype=cupy.float32).astype(cupy.float16)
    rows, bad = [], 0
    for s in PARTS:
        per = math.ceil(ktiles / s)
        plan = (planned[0], math.ceil(ktiles / per), per) if s > 1 else (planned[0], 1, ktiles)
        K.tail_split_plan = lambda M_, N_, K_, plan=plan: plan
        run, C, _ = launcher(r, A, B)
        C.fill(cupy.nan)
        run()
        chk = r.check(C[:M, :N], A, B, backend="GPU")
        t = benchmark(run, flops=2.0 * M * N * Kd)
        row = {"parts": plan[1], "per": plan[2], "whole_units": plan[0], "passed": bool(chk.passed),
               "model": chk.model, "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
               "tflops": t.tflops, "clocks": t.clocks}
        bad += not chk.passed
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    Path(argv[0]).write_text(json.dumps({"shape": SHAPE, "planned": planned, "rows": rows}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
