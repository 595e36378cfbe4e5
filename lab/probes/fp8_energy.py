"""A device probe (issue 26): energy per GEMM of lesson 7's goal kernels and their cuBLASLt yardsticks at the power
limit. At 8192^3 every one of them draws the H200's power cap (about 690 W, NVML) and the clock is what gives: lesson 7
infers from power x time that fp8_promote_2acc_lean does less per joule than cuBLASLt's default accumulation. This
measures it: each kernel runs back to back for a window of about `--seconds` (default 2) on fixed inputs, between two
readings of NVML's energy counter (energy_j), the window timed by CUDA events and its clocks sampled
(helpers.clocks.while_running); the kernels take turns, `--rounds` times (default 5). Each of the course's kernels is
checked first (helpers.experiments.fp8.check_fp8). Rows: kernel, n, round, launches, ms per GEMM, joules per GEMM,
TFLOP per joule (= TFLOP/s / W), the window's mean power (energy / time) and median SM clock.

Not cold-L2 timing (the launches follow each other on the same inputs): for energy, not for the speed record.

Predicted before its first run (session 26, `ENERGY_PREDICTED`, now in lab/labkit/fp8.py): at 8192^3
cuBLASLt's default accumulation takes about 3% less energy per GEMM than fp8_promote_2acc_lean (the goals' nine
rounds: the same watts, x0.963 the speed); at 4096^3 below the cap, within 2% of each other. First run (session 27, results/logs/fp8-energy-nvidia-h200): 0.954 at
8192^3, 1.013 at 4096^3 (medians of the round-by-round ratios); back to back, every kernel drew the cap at both sizes.

`--kernels NAME,...` measures those of the course's FP8 kernels instead of the goal kernels (cuBLASLt's two beside
them, as always). Session 27's second run takes lesson 7's kernels that differ in one thing each: the tile (fp8_wgmma
128 x 256, fp8_wgmma_n128 128 x 128, neither promoting), promotion (fp8_promote_128: fp8_wgmma_n128 promoting every
K-tile) and the overlapped promotion (fp8_promote_2acc_lean). Predicted before it ran (`SPLIT_PREDICTED`): joules per
GEMM over fp8_wgmma's at 8192^3, each the inverse of its speed ratio in the record (every kernel at the cap: joules =
watts x time).

A name may carry probe switches (those of lab/kernels/fp8_sm90a_research.cu) and a ring size after colons, built for
that entry alone (`NAME:-DF8_EXTRA_L2=1`, the energy probe of L2 reads, predicted in EXTRA_L2_PREDICTED; `NAME:stages=7`, a deeper
ring). First (session 29:
`--kernels fp8_promote_2acc_lean,fp8_promote_2acc_lean:-DF8_PAIR=1`, the lean kernel with two K-tiles per stage beside
it as recorded; predicted before it ran, `PAIR_ENERGY_PREDICTED` in lab/labkit/fp8.py: x0.986 the joules per
GEMM at both sizes, from Nsight Compute's x0.933 the warp instructions and lesson 7's hint of about 0.2% energy per 1%).

    python3 lab/probes/fp8_energy.py OUT.json [--sizes 4096,8192] [--rounds N] [--seconds S] [--kernels A,B[:-DX=v][:stages=N]]
    (a Hopper GPU)"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import fp8_research_source, hopper_here, int_option, run  # noqa: E402  (run as a script: ROOT first)
KERNELS = ("fp8_promote_2acc_lean", "fp8_wgmma_store")        # lesson 7's goal kernels; cuBLASLt's two beside them
from lab.labkit.fp8 import (ENERGY_PREDICTED, EXTRA_L2_PREDICTED, PAIR_ENERGY_PREDICTED,  # noqa: E402,F401
                            SPLIT_PREDICTED)
SIZES = (4096, 8192)
ROUNDS = 5


def energy_j() -> float | None:
    """NVML's energy counter (joules since the driver loaded; Volta and later), or None without NVML or the counter.
    Two readings around a window of launches give its energy."""
    from helpers.clocks import _handle

    h = _handle()
    if h is None:
        return None
    import pynvml

    try:
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0
    except Exception:      # NVML_ERROR_NOT_SUPPORTED and the like
        return None


def window(fn, seconds: float) -> dict:
    """fn launched back to back for about `seconds`, between two readings of the energy counter: launches, ms per
    launch (CUDA events), joules per launch, mean power (W) and the clocks sampled meanwhile."""
    import cupy

    from helpers.clocks import while_running

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(3):
        fn()
    end.record()
    end.synchronize()
    n = max(3, int(seconds * 1e3 / (cupy.cuda.get_elapsed_time(start, end) / 3)))

    def go():
        cupy.cuda.runtime.deviceSynchronize()
        e0 = energy_j()
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return e0, energy_j(), cupy.cuda.get_elapsed_time(start, end)

    (e0, e1, ms), clocks = while_running(go, 0.02)
    joules = None if e0 is None or e1 is None else (e1 - e0) / n
    return {"launches": n, "ms": ms / n, "joules": joules, "power_w": None if joules is None else joules / (ms / n / 1e3),
            "sm_mhz": clocks.get("sm_mhz"), "throttle": clocks.get("throttle")}


def kernel_option(argv) -> tuple:
    """The kernels after --kernels (comma-separated names of helpers.fp8_gemm.FP8_KERNELS, each perhaps followed by
    ':-DNAME=value' probe switches and ':stages=N', a ring other than the entry's), or KERNELS without it; SystemExit(2)
    with the names to use for one that is not there, or a part after a colon that is neither."""
    if "--kernels" not in argv:
        return KERNELS
    from helpers.fp8_gemm import FP8_KERNELS

    given = argv[argv.index("--kernels") + 1:argv.index("--kernels") + 2]
    names = tuple(given[0].split(",")) if given else ()
    bad = [k for k in names if k.split(":")[0] not in FP8_KERNELS or not all(
        re.fullmatch(r"-D\w+(=\w+)?|stages=\d+", part) for part in k.split(":")[1:])] or ([] if names else ["(none)"])
    if bad:
        print(f"--kernels: no FP8 kernel {', '.join(bad)}; use names from {', '.join(FP8_KERNELS)}", file=sys.stderr)
        raise SystemExit(2)
    return names


def build_of(label: str) -> tuple:
    """'NAME[:-DX=v]...[:stages=N]' -> (NAME, options, stages) for helpers.fp8_gemm.launcher (stages None: the
    entry's own ring)."""
    name, *parts = label.split(":")
    stages = [int(p[7:]) for p in parts if p.startswith("stages=")]
    return name, tuple(p for p in parts if not p.startswith("stages=")), (stages[-1] if stages else None)


def main(argv) -> int:
    if not hopper_here():
        return 2
    import cupy

    from helpers.experiments.fp8 import _torch_fp8, check_fp8, random_inputs
    from helpers.fp8_gemm import encode_e4m3, launcher
    from helpers.timing import gemm_flops

    if energy_j() is None:
        print("NVML's energy counter is not readable here (pynvml missing, or the GPU has none)", file=sys.stderr)
        return 2
    rounds, sizes = int_option(argv, "--rounds", ROUNDS, one=True), int_option(argv, "--sizes", SIZES)
    kernels = kernel_option(argv)
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 2.0
    rows, failed = [], False
    for n in sizes:
        A, B = random_inputs(n, n, n, "normal", n)
        A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
        fns = {}
        for fast, name in ((False, "cublaslt_fp8"), (True, "cublaslt_fp8_fast")):
            t, err = _torch_fp8(A8, Bt8, fast)
            if t is None:
                print("cuBLASLt FP8:", err, file=sys.stderr)
                return 1
            fns[name] = t[0]
        gA, gB = cupy.asarray(A), cupy.asarray(B)
        for k in kernels:
            name, opts, stages = build_of(k)
            fn, C = launcher(name, A8, Bt8, stages=stages, options=opts, source=fp8_research_source(name, opts))
            fn()
            chk = check_fp8(name, C, gA, gB, backend="GPU")
            failed |= not chk.passed
            rows.append({"kernel": k, "n": n, "check_passed": bool(chk.passed), "check": chk.verdict()[:300]})
            fns[k] = fn
        del gA, gB
        fl = gemm_flops(n, n, n)
        for r in range(rounds):
            for k, fn in fns.items():
                w = window(fn, seconds)
                row = {"kernel": k, "n": n, "round": r, **w, "tflops": fl / w["ms"] / 1e9,
                       "tflop_per_j": None if w["joules"] is None else fl / 1e12 / w["joules"]}
                rows.append(row)
                print(n, k, r, round(row["tflops"]), "TFLOP/s", w["joules"] and round(w["joules"], 4), "J",
                      w["power_w"] and round(w["power_w"]), "W", w["sm_mhz"], file=sys.stderr, flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
    Path(argv[0]).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
