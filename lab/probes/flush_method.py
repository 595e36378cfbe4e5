"""A device probe: does the way the harness empties L2 change the comparison with cuBLAS? helpers.timing.benchmark
empties L2 before every run with a memset over 4x L2 (flush="write"), which leaves L2 full of dirty lines that the
timed kernel's first misses must write back to DRAM; flush="read" reads the same buffer instead and leaves clean
lines. Under Nsight Compute (its own cache flush) cuBLAS took 36.5 us at 128 x 8192 x 8192 and rung 17 49 us,
against 44 and 54 us in the course's timing: a memory-bound shape, where write-backs cost most. Here cuBLAS (FP16 C
and FP32 C) and rungs 14, 16 and 17 are timed with both flushes in alternating rounds, with the SM clock of each
timing, at 128 x 8192 x 8192 and 4096^3, each rung's C checked first (float64 and the model, on the GPU).

    python3 lab/probes/flush_method.py OUT.json           (a Hopper GPU, COURSE_DEVICE=gpu; in a child process)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPES = ((128, 8192, 8192), (4096, 4096, 4096))
RUNGS = (14, 16, 17)
ROUNDS = 3


def rows(shapes=SHAPES, rungs=RUNGS, rounds: int = ROUNDS) -> list[dict]:
    """GPU, in a child: every kernel at every shape, checked, then timed with each flush in `rounds` rounds."""
    import cupy
    import numpy as np

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import ALL_RUNGS
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import FLUSHES, benchmark, gemm_flops

    out = []
    for M, N, K in shapes:
        A, B = _inputs(0, M, N, K)
        ref = reference_gemm(A, B)
        runs = {}
        for dt, label in (("float16", "cuBLAS FP16 C"), ("float32", "cuBLAS FP32 C")):   # as the experiment times them
            cub, Cc = same_c(dt), cupy.empty((M, N), dtype=dt)
            runs[label] = (lambda cub=cub, Cc=Cc: cub.run(A, B, Cc), True)
        for k in rungs:
            run, C, _ = launcher(ALL_RUNGS[k], A, B)
            C.fill(cupy.nan)
            run()
            chk = ALL_RUNGS[k].check(C[:M, :N], A, B, reference=ref, backend="GPU")
            runs[f"rung {k}"] = (run, bool(chk.passed))
        ms = {(name, f): [] for name in runs for f in FLUSHES}
        mhz = {key: [] for key in ms}
        watts = {key: [] for key in ms}
        for _ in range(rounds):
            for name, (fn, _ok) in runs.items():
                for f in FLUSHES:
                    t = benchmark(fn, flops=gemm_flops(M, N, K), flush=f)
                    ms[name, f].append(t.median_ms)
                    mhz[name, f].append((t.clocks or {}).get("sm_mhz"))
                    watts[name, f].append((t.clocks or {}).get("power_w"))
        for (name, f), v in ms.items():
            med = float(np.median(v))
            out.append({"shape": [M, N, K], "kernel": name, "flush": f, "passed": runs[name][1], "median_ms": med,
                        "tflops": gemm_flops(M, N, K) / med / 1e9, "round_ms": v, "sm_mhz": mhz[name, f],
                        "power_w": watts[name, f]})
        del A, B, ref
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.isolate import run_isolated

    got = run_isolated("lab.probes.flush_method:rows", timeout=400)
    Path(argv[0]).write_text(json.dumps(got, indent=1))
    if isinstance(got, dict):
        print(got, file=sys.stderr)
        return 1
    for r in got:
        print(r["shape"], r["kernel"], r["flush"], "passed" if r["passed"] else "FAILED", round(r["tflops"]),
              "TFLOP/s", [round(x, 4) for x in r["round_ms"]], r["sm_mhz"], file=sys.stderr)
    return 0 if all(r["passed"] for r in got) else 1


if __name__ == "__main__":
    run(main, __doc__)
