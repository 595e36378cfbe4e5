"""Rungs 8-26, 29 and 30, one kernel file each (kernels/hopper_rungNN_sm90a.cu), against the build they replace: the
templated research file (lab/kernels/hopper_sm90a_research.cu), compiled from its own source as a separate module
under the same extern "C" name and launch ABI. A GPU run of this probe is what says the clean files are as correct
and as fast as the builds the record measured (their SASS was compared with nvcc only).

    python3 lab/probes/clean_rungs.py check      each new rung bit-identical to its CPU model (and to the old build) off the grid
    python3 lab/probes/clean_rungs.py sanitize   each new rung launched once at a small off-grid size (run under compute-sanitizer)
    python3 lab/probes/clean_rungs.py time       new against old, alternating rounds, L2 flushed, median of round ratios
    python3 lab/probes/clean_rungs.py dry-run    no GPU: the imports, the files, the plan
A second argument picks rungs: "8-16", or "17,19,25".
"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OLD = (ROOT / "lab" / "kernels" / "hopper_sm90a_research.cu").read_text()
RUNGS = [r for r in range(8, 31) if r not in (27, 28)]
SPLIT = (15, 16)
CHECK = [(264, 520, 136), (1000, 1032, 264)]     # off the tile grid; rungs 8-30 take multiples of 8 only
CHECK_SPLIT = [(128, 1024, 2048), (72, 520, 1000)]
CHECK_TAIL = [(264, 8456, 1000)]          # rung 16: 68 units on 66 clusters, a whole wave then a split tail
CPU_MODEL_MAX = 100e6                     # M N K up to which the NumPy model runs too (it takes seconds)
SANITIZE = {r: (136, 264, 200) for r in RUNGS} | {15: (72, 520, 1000), 16: (72, 520, 1000)}
TIMED = [(4096, 4096, 4096), (8192, 8192, 8192)]
TIMED_SPLIT = [(128, 8192, 8192)]
CONTROL = (17,)                           # timed there too: its SASS is the old build's, so its ratio is the noise
ROUNDS = 5


def entry(r):
    from helpers.kernels import ALL_RUNGS
    return ALL_RUNGS[r]


def inputs(M, N, K, seed):
    from helpers.numerics import random_matrix
    return (random_matrix(M, K, seed=seed).astype(np.float16), random_matrix(K, N, seed=seed + 1).astype(np.float16))


_MODEL = {}


def model(r, A, B):
    """Rung r's CPU model of A @ B (rungs sharing a model compute it once per shape: the emulation is slow)."""
    key = (id(entry(r).emulate), A.shape, B.shape, float(A[0, 0]))
    if key not in _MODEL:
        _MODEL[key] = entry(r).emulate(A, B)
    return _MODEL[key]


def launch(r, A, B, old):
    """(run, C) for rung r's new file or (old) the old source, on A and B (NumPy or CuPy). The old source goes by the
    research file's name (lab.labkit.rungs.RESEARCH_FILE) for every rung, so NVRTC compiles it once (the cubin cache
    keys on file name and text)."""
    import dataclasses

    import cupy
    from helpers.launch import launcher
    from lab.labkit.rungs import RESEARCH_FILE
    spec = dataclasses.replace(entry(r), file=RESEARCH_FILE) if old else entry(r)
    run, C, _ = launcher(spec, cupy.asarray(A), cupy.asarray(B), source=OLD if old else None)
    return run, C


def check() -> int:
    import cupy
    bad = 0
    for r in RUNGS:
        spec = entry(r)
        sizes = CHECK + (CHECK_SPLIT if r in SPLIT else []) + (CHECK_TAIL if r == 16 else [])
        for i, (M, N, K) in enumerate(sizes):
            A, B = inputs(M, N, K, 100 + i)
            out = {}
            try:
                for old in (False, True):
                    run, C = launch(r, A, B, old)
                    C.fill(cupy.nan)
                    run()
                    out[old] = cupy.asnumpy(C[:M, :N])
            except Exception as exc:            # a refused size or a fault: say so and go on to the next case
                bad += 1
                print(f"check rung {r:2d} {spec.name:24s} {M}x{N}x{K}: FAIL ({type(exc).__name__}: {exc})", flush=True)
                continue
            # the check: float64's bound, and the model's arithmetic run on the GPU (helpers.check), every element
            chk = spec.check(cupy.asarray(out[False]), cupy.asarray(A), cupy.asarray(B), backend="GPU")
            cpu = np.array_equal(out[False], model(r, A, B).astype(out[False].dtype)) if M * N * K <= CPU_MODEL_MAX \
                else "not run (large)"
            same_old = np.array_equal(out[False], out[True])
            ok = chk.passed and chk.model != "differs" and cpu is not False and same_old   # (a model not fitted
            # to this GPU says "skipped": then the NumPy model and the old build decide)
            bad += not ok
            print(f"check rung {r:2d} {spec.name:24s} {M}x{N}x{K}: {'PASS' if ok else 'FAIL'} (model on the GPU: "
                  f"{chk.model}; NumPy model: {cpu}; old build: {'identical' if same_old else 'differs'})", flush=True)
    return 1 if bad else 0


def sanitize() -> int:
    import cupy
    bad = 0
    for r, (M, N, K) in SANITIZE.items():
        A, B = inputs(M, N, K, 7)
        run, C = launch(r, A, B, False)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        ok = np.array_equal(cupy.asnumpy(C[:M, :N]), model(r, A, B).astype(C.dtype))
        bad += not ok
        print(f"@@case rung {r} {entry(r).name} {M}x{N}x{K}: {'PASS' if ok else 'FAIL'}", flush=True)
    return 1 if bad else 0


def timing() -> int:
    import cupy
    from helpers.timing import alternating, gemm_flops, round_ratio
    for M, N, K in TIMED + TIMED_SPLIT:
        A, B = (cupy.asarray(x) for x in inputs(M, N, K, 5))          # made once per shape
        for r in (RUNGS if (M, N, K) in TIMED else SPLIT + CONTROL):
            runs = {old: launch(r, A, B, old)[0] for old in (False, True)}
            got = alternating({"new": runs[False], "old": runs[True]}, gemm_flops(M, N, K), ROUNDS)
            rr = round_ratio(got["new"]["ms"], got["old"]["ms"])      # old / new per round: above 1, new faster
            mhz = {k: statistics.median([x for x in got[k]["sm_mhz"] if x] or [0]) for k in got}
            tf = {k: gemm_flops(M, N, K) / statistics.median(got[k]["ms"]) / 1e9 for k in got}
            print(f"time rung {r:2d} {entry(r).name:24s} {M}x{N}x{K}: new/old speed x{rr['ratio']:.3f} "
                  f"(rounds {rr['low']:.3f}..{rr['high']:.3f}, new faster in {rr['won']}/{rr['rounds']}); "
                  f"new {tf['new']:.0f} TFLOP/s at {mhz['new']:.0f} MHz, old {tf['old']:.0f} TFLOP/s at "
                  f"{mhz['old']:.0f} MHz", flush=True)
    return 0


def dry_run() -> int:
    """No GPU: every name the GPU run uses exists, and each new file and the old source hold each rung's kernel."""
    import helpers.launch  # noqa: F401
    import helpers.timing  # noqa: F401
    from helpers.display import kernel_source
    for r in RUNGS:
        spec = entry(r)
        assert spec.file == f"hopper_rung{r:02d}_sm90a.cu", spec.file
        assert f" {spec.name}(" in kernel_source(spec.file, spec.name)
        assert f'extern "C" __global__ void {spec.name}(' in OLD
        sizes = CHECK + (CHECK_SPLIT if r in SPLIT else []) + (CHECK_TAIL if r == 16 else [])
        A, B = inputs(16, 16, 16, 1)
        assert spec.emulate(A, B).shape == (16, 16)
        print(f"rung {r:2d}: {spec.name} in kernels/{spec.file}; checks at {sizes}; sanitize at {SANITIZE[r]}; "
              f"timed at {TIMED + (TIMED_SPLIT if r in SPLIT else [])}, {ROUNDS} rounds")
    return 0


if __name__ == "__main__":
    t0 = time.time()
    mode = sys.argv[1] if len(sys.argv) > 1 else "dry-run"
    if mode != "dry-run":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import common
        if not common.hopper_here():          # one line on stderr: no Hopper GPU here
            sys.exit(2)
        if mode not in ("check", "sanitize", "time"):
            sys.exit(__doc__)
    if len(sys.argv) > 2:
        pick = {int(x) for part in sys.argv[2].split(",") for x in
                (range(int(part.split("-")[0]), int(part.split("-")[1]) + 1) if "-" in part else [part])}
        RUNGS = [r for r in RUNGS if r in pick]
        SANITIZE = {r: s for r, s in SANITIZE.items() if r in pick}
    rc = {"check": check, "sanitize": sanitize, "time": timing, "dry-run": dry_run}[mode]()
    print(f"{mode}: exit {rc}, {time.time() - t0:.0f} s", flush=True)
    sys.exit(rc)
