"""Rung 7 on the shared header (kernels/ladder_sm90a.cu) and lesson 7's FP8 kernels in their own files
(kernels/fp8_wgmma_sm90a.cu, kernels/fp8_promote_sm90a.cu) against the builds they replace: the files
they were built from until 2026-12-07 (lab/kernels/ladder_sm90a_research.cu, lab/kernels/fp8_sm90a_research.cu),
compiled from their own source as separate modules under the same extern "C" names and launch ABI.

    python3 lab/probes/clean_fp8.py check      each new kernel bit-identical to its CPU model and to the old build, off-grid
    python3 lab/probes/clean_fp8.py sanitize   each new kernel once at a small off-grid size (run under compute-sanitizer)
    python3 lab/probes/clean_fp8.py time       new against old, alternating rounds, L2 flushed, median of round ratios
    python3 lab/probes/clean_fp8.py dry-run    no GPU: the imports, the files, the plan, the CPU models at a check size
"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OLD7 = (ROOT / "lab" / "kernels" / "ladder_sm90a_research.cu").read_text()
OLD8 = (ROOT / "lab" / "kernels" / "fp8_sm90a_research.cu").read_text()
FP8 = ["fp8_wgmma", "fp8_wgmma_n128", "fp8_promote_32", "fp8_promote_64", "fp8_promote_128", "fp8_promote_256",
       "fp8_promote_512"]
KERNELS = ["ladder_wgmma_tma"] + FP8
PERIOD0 = ["fp8_promote_256", "fp8_promote_512"]   # also checked in the F8_PERIOD=0 build (lesson 7's trap), new vs old
CHECK = [(257, 520, 136), (300, 776, 1040)]        # off the grid; K = 1040: 9 K-tiles (promote_512: periods 4, 4, 1)
CHECK7 = [(257, 520, 136), (1000, 1064, 1000)]
SANITIZE = (136, 264, 200)
TIMED = [(4096, 4096, 4096), (8192, 8192, 8192)]
ROUNDS = 5


# --------------------------------------------------------------------------- rung 7 (helpers.launch)
def rung7_inputs(M, N, K, seed):
    from helpers.numerics import random_matrix
    return (random_matrix(M, K, seed=seed).astype(np.float16), random_matrix(K, N, seed=seed + 1).astype(np.float16))


def rung7_launch(A, B, old):
    """(run, C): run() transposes B and launches rung 7 (new file, or old source) on CuPy A, B; run.kernel_only()."""
    import cupy
    from helpers.launch import launcher
    run, C, _ = launcher(7, cupy.asarray(A), cupy.asarray(B), pad=True, source=OLD7 if old else None)
    return run, C


# --------------------------------------------------------------------------- FP8 (helpers.fp8_gemm)
def fp8_inputs(M, N, K, seed):
    from helpers.experiments.fp8 import random_inputs
    return random_inputs(M, N, K, "normal", seed)          # E4M3 values, float64; B is K x N


_MODEL = {}


def fp8_model(name, A, B):
    """FP8 kernel `name`'s CPU model of A @ B as float32 (kernels with the same promotion interval share it: computed
    once per shape and interval, the emulation takes seconds)."""
    from helpers.fp8_gemm import FP8_KERNELS, cpu_model
    key = (FP8_KERNELS[name].nc, A.shape, B.shape, float(A[0, 0]))
    if key not in _MODEL:
        _MODEL[key] = np.asarray(cpu_model(name)(A, B), dtype=np.float32)
    return _MODEL[key]


def fp8_launch(name, A8, Bt8, old, options=()):
    """(run, C) of FP8 kernel `name` (new file, or the old source) on CuPy E4M3 bytes. The old source goes by the old
    file's name for every kernel (its registry entry swapped for the call), so NVRTC compiles it once per build."""
    import dataclasses

    from helpers.fp8_gemm import FP8_KERNELS, launcher
    spec = FP8_KERNELS[name]
    if not old:
        return launcher(name, A8, Bt8, options=options)
    FP8_KERNELS[name] = dataclasses.replace(spec, file="fp8_sm90a.cu")
    try:
        return launcher(name, A8, Bt8, options=options, source=OLD8)
    finally:
        FP8_KERNELS[name] = spec


def check() -> int:
    import cupy
    from helpers.experiments.fp8 import check_fp8
    from helpers.fp8_gemm import encode_e4m3
    from helpers.kernels import ALL_RUNGS
    bad = 0
    spec = ALL_RUNGS[7]
    for i, (M, N, K) in enumerate(CHECK7):
        A, B = rung7_inputs(M, N, K, 100 + i)
        out = {}
        for old in (False, True):
            run, C = rung7_launch(A, B, old)
            C.fill(cupy.nan)
            run()
            out[old] = cupy.asnumpy(C[:M, :N])
        chk = spec.check(cupy.asarray(out[False]), cupy.asarray(A), cupy.asarray(B), backend="GPU")
        cpu = np.array_equal(out[False], spec.emulate(A, B).astype(out[False].dtype))
        same_old = np.array_equal(out[False], out[True], equal_nan=True)
        ok = chk.passed and chk.model != "differs" and cpu and same_old
        bad += not ok
        print(f"check rung 7 {spec.name:22s} {M}x{N}x{K}: {'PASS' if ok else 'FAIL'} (model on the GPU: {chk.model}; "
              f"NumPy model: {cpu}; old build: {'identical' if same_old else 'differs'})", flush=True)
    for i, (M, N, K) in enumerate(CHECK):
        A, B = fp8_inputs(M, N, K, 200 + i)
        A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
        for name in FP8:
            for options in [()] + ([("-DF8_PERIOD=0",)] if name in PERIOD0 else []):
                out = {}
                try:
                    for old in (False, True):
                        run, C = fp8_launch(name, A8, Bt8, old, options)
                        run()
                        out[old] = cupy.asnumpy(C[:, :N])
                except Exception as exc:  # noqa: BLE001 - report it, go on with the next kernel
                    bad += 1
                    print(f"check {name} {options} {M}x{N}x{K}: FAIL ({type(exc).__name__}: {str(exc)[:300]})",
                          flush=True)
                    continue
                chk = check_fp8(name, out[False], A, B, backend="GPU", model=False)   # the bounds (model: below)
                cpu = np.array_equal(out[False], fp8_model(name, A, B))
                same_old = np.array_equal(out[False], out[True], equal_nan=True)
                ok = chk.passed and cpu and same_old
                bad += not ok
                print(f"check {name:22s}{' ' + options[0] if options else ''} {M}x{N}x{K}: {'PASS' if ok else 'FAIL'} "
                      f"(check: {chk.verdict()[:90]}; NumPy model: {cpu}; old build: "
                      f"{'identical' if same_old else 'differs'})", flush=True)
    return 1 if bad else 0


def sanitize() -> int:
    import cupy
    from helpers.fp8_gemm import encode_e4m3
    from helpers.kernels import ALL_RUNGS
    bad = 0
    M, N, K = SANITIZE
    A, B = rung7_inputs(M, N, K, 7)
    run, C = rung7_launch(A, B, False)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    ok = np.array_equal(cupy.asnumpy(C[:M, :N]), ALL_RUNGS[7].emulate(A, B).astype(C.dtype))
    bad += not ok
    print(f"@@case rung 7 ladder_wgmma_tma {M}x{N}x{K}: {'PASS' if ok else 'FAIL'}", flush=True)
    A, B = fp8_inputs(M, N, K, 7)
    A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
    for name in FP8:
        run, C = fp8_launch(name, A8, Bt8, False)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        ok = np.array_equal(cupy.asnumpy(C[:, :N]), fp8_model(name, A, B))
        bad += not ok
        print(f"@@case {name} {M}x{N}x{K}: {'PASS' if ok else 'FAIL'}", flush=True)
    return 1 if bad else 0


def _e4m3_bytes(rows, cols, seed):
    """N(0,1) rounded to E4M3, as uint8 bytes, on the GPU (for timing: values drawn fast, all inside E4M3's range)."""
    import cupy
    import ml_dtypes
    x = np.random.default_rng(seed).standard_normal((rows, cols), dtype=np.float32)
    return cupy.asarray(x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))


def _line(what, M, N, K, got):
    from helpers.timing import gemm_flops, round_ratio
    rr = round_ratio(got["new"]["ms"], got["old"]["ms"])              # old / new per round: above 1, new faster
    mhz = {k: statistics.median([x for x in got[k]["sm_mhz"] if x] or [0]) for k in got}
    tf = {k: gemm_flops(M, N, K) / statistics.median(got[k]["ms"]) / 1e9 for k in got}
    print(f"time {what:22s} {M}x{N}x{K}: new/old speed x{rr['ratio']:.3f} (rounds {rr['low']:.3f}..{rr['high']:.3f}, "
          f"new faster in {rr['won']}/{rr['rounds']}); new {tf['new']:.0f} TFLOP/s at {mhz['new']:.0f} MHz, "
          f"old {tf['old']:.0f} TFLOP/s at {mhz['old']:.0f} MHz", flush=True)


def timing() -> int:
    import cupy
    from helpers.timing import alternating, gemm_flops
    for M, N, K in TIMED:
        A, B = (cupy.asarray(x) for x in rung7_inputs(M, N, K, 5))
        runs = {}
        for old in (False, True):
            run, _ = rung7_launch(A, B, old)
            run()                                                    # B^T filled once: then the kernel alone
            runs["old" if old else "new"] = run.kernel_only
        _line("ladder_wgmma_tma", M, N, K, alternating(runs, gemm_flops(M, N, K), ROUNDS))
        del A, B, runs
        A8, Bt8 = _e4m3_bytes(M, K, 5), _e4m3_bytes(N, K, 6)
        for name in FP8:
            try:
                runs = {"new": fp8_launch(name, A8, Bt8, False)[0], "old": fp8_launch(name, A8, Bt8, True)[0]}
                _line(name, M, N, K, alternating(runs, gemm_flops(M, N, K), ROUNDS))
            except Exception as exc:  # noqa: BLE001 - report it, go on with the next kernel
                print(f"time {name} {M}x{N}x{K}: FAIL ({type(exc).__name__}: {str(exc)[:300]})", flush=True)
        del A8, Bt8
        cupy.get_default_memory_pool().free_all_blocks()
    return 0


def dry_run() -> int:
    """No GPU: every name the GPU run uses exists, the new files and the old sources hold each kernel, and the CPU
    models run at the check sizes."""
    import helpers.launch  # noqa: F401
    import helpers.timing  # noqa: F401
    from helpers.display import kernel_source
    from helpers.fp8_gemm import FP8_KERNELS, encode_e4m3, unknown_macros
    from helpers.kernels import ALL_RUNGS
    spec = ALL_RUNGS[7]
    assert spec.name == "ladder_wgmma_tma" and spec.file == "ladder_sm90a.cu"
    assert f" {spec.name}(" in kernel_source(spec.file, spec.name) and f" {spec.name}(" in OLD7
    A, B = rung7_inputs(*CHECK7[0], 1)
    assert spec.emulate(A, B).shape == (CHECK7[0][0], CHECK7[0][1])
    print(f"rung 7: {spec.name} in kernels/{spec.file}; checks at {CHECK7}; sanitize at {SANITIZE}; timed at {TIMED} "
          f"(kernel alone), {ROUNDS} rounds")
    for name in FP8:
        s = FP8_KERNELS[name]
        assert s.file in ("fp8_wgmma_sm90a.cu", "fp8_promote_sm90a.cu") and s.wgmma
        assert f" {name}(" in kernel_source(s.file, name) and f" {name}(" in OLD8
        assert not unknown_macros(s, ("-DF8_PERIOD=0",) if name in PERIOD0 else (), source=OLD8)
        assert not unknown_macros(s, ("-DF8_PERIOD=0",) if name in PERIOD0 else ())
        A, B = fp8_inputs(*CHECK[1], 1)
        t = time.time()
        assert fp8_model(name, A, B).shape == (CHECK[1][0], CHECK[1][1])
        print(f"{name}: kernels/{s.file}; checks at {CHECK}{' (and F8_PERIOD=0)' if name in PERIOD0 else ''}; "
              f"sanitize at {SANITIZE}; timed at {TIMED}, {ROUNDS} rounds; CPU model {time.time() - t:.1f} s here")
    x = np.random.default_rng(1).standard_normal((4, 4), dtype=np.float32)
    import ml_dtypes
    assert np.array_equal(x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8), encode_e4m3(x.astype(np.float64)))
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
    rc = {"check": check, "sanitize": sanitize, "time": timing, "dry-run": dry_run}[mode]()
    print(f"{mode}: exit {rc}, {time.time() - t0:.0f} s", flush=True)
    sys.exit(rc)
