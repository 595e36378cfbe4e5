"""cuBLASLt's FP8 GEMM by both of the course's paths, on one GPU run: nvmath-python's public API
(helpers.fp8_gemm.nvmath_fp8) and PyTorch's private torch._scaled_mm (helpers.fp8_gemm.torch_scaled_mm),
on one seeded N x N x N E4M3 product (N(0,1) rounded to E4M3, scales 1, FP32 result), with and without
cuBLASLt's fast accumulation.

    python lab/probes/nvmath_fp8_probe.py OUT.json [--n 4096] [--seed 4096]

One line per path and mode: what ran (library, version, call), its speed (helpers.timing.benchmark: cold
L2, CUDA events, median), how many of the N^2 elements differ from the other path's, bit for bit (both
call the same cuBLASLt routine with the same descriptors, so they should agree), and how many elements
of a seeded 64 x 64 sample differ from the course's CPU model (helpers.emulate): promotion to FP32 every
128 products for the default mode, wgmma without promotion for fast accumulation. That last count is an
observation, not a pass or fail: lesson 07 shows cuBLASLt's default with the error statistics of
promote-128, not that its bits are the model's. A last line gives the verdict.

Exit status: 0 when both paths ran in both modes and agree bit for bit; 1 when they differ or one
failed; 2 without a Hopper GPU, or without one of the two paths. OUT.json gets the lines' data.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)

SAMPLE = 64
MODEL = {False: "fp8_promote_128", True: "fp8_wgmma"}     # the CPU model each mode is compared with


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="write the lines' data to this file")
    ap.add_argument("--n", type=int, default=4096, help="M = N = K (a multiple of 16; default 4096)")
    ap.add_argument("--seed", type=int, default=4096)
    args = ap.parse_args(argv)
    if not hopper_here():
        return 2

    import numpy as np

    from helpers.device import backend
    from helpers.experiments.fp8 import random_inputs
    from helpers.fp8_gemm import CUBLASLT_PATHS, cpu_model, encode_e4m3, path_name
    from helpers.timing import benchmark, gemm_flops

    b = backend()
    if not b.is_gpu or tuple(b.gpu.cc) < (8, 9):
        print(f"SKIPPED: cuBLASLt's FP8 GEMM needs a GPU of compute capability 8.9 or newer ({b.label}: {b.reason})")
        return 2
    import cupy

    n = args.n
    A, B = random_inputs(n, n, n, "normal", args.seed)
    A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
    rng = np.random.default_rng(args.seed)
    rows, cols = np.sort(rng.choice(n, SAMPLE, replace=False)), np.sort(rng.choice(n, SAMPLE, replace=False))
    models = {fast: cpu_model(MODEL[fast])(A[rows], B[:, cols]) for fast in (False, True)}
    print(f"GPU {b.gpu.name} ({b.gpu.sm}); {n}^3 E4M3 x E4M3 -> FP32, scales 1, N(0,1) inputs, seed {args.seed}")

    out, results, ok = [], {}, True
    for fast in (False, True):
        for p in CUBLASLT_PATHS:
            try:
                got = CUBLASLT_PATHS[p](A8, Bt8, fast)
            except Exception as exc:  # noqa: BLE001 - a line, not a traceback
                got, err = None, f"{type(exc).__name__}: {exc}"[:300]
            else:
                err = None if got is not None else "not installed"
            if got is None:
                results[(p, fast)] = None
                out.append({"path": p, "fast_accum": fast, "error": err})
                continue
            go, C = got
            C = cupy.ascontiguousarray(cupy.from_dlpack(C.contiguous()))
            t = benchmark(go, flops=gemm_flops(n, n, n))
            sample = cupy.asnumpy(C[cupy.asarray(rows)][:, cupy.asarray(cols)])
            results[(p, fast)] = C
            out.append({"path": p, "fast_accum": fast, "ran": path_name(p), "tflops": t.tflops,
                        "median_ms": t.median_ms, "clocks": t.clocks or {},
                        "model": MODEL[fast], "model_differ": int((sample != models[fast]).sum()),
                        "sample": SAMPLE * SAMPLE})
        first, second = (results[(p, fast)] for p in CUBLASLT_PATHS)
        differ = None if first is None or second is None else int((first.view(cupy.uint32) != second.view(cupy.uint32)).sum())
        for row in out[-2:]:
            row["differ_from_other_path"] = differ
        ok = ok and differ == 0
        del first, second

    names = list(CUBLASLT_PATHS)
    for row in out:
        mode = f"fast_accum={'on ' if row['fast_accum'] else 'off'}"
        if "error" in row:
            print(f"{row['path']:<6} {mode}: did not run ({row['error']})")
            continue
        other = names[1 - names.index(row["path"])]
        agree = ("the other path did not run" if row["differ_from_other_path"] is None
                 else f"{row['differ_from_other_path']} of {n * n} elements differ from {other}'s, bit for bit")
        print(f"{row['path']:<6} {mode}: {row['ran']} | {row['tflops']:.1f} TFLOP/s (median {row['median_ms']:.4f} ms, "
              f"SM {row['clocks'].get('sm_mhz', '?')} MHz) | {agree} | {row['model_differ']} of {row['sample']} "
              f"sampled elements differ from the CPU model {row['model']}")
    missing = [r for r in out if "error" in r]
    if missing and all(r["error"] == "not installed" for r in missing):
        verdict, rc = "SKIPPED: one of the two paths is not installed here", 2
    elif ok:
        verdict, rc = "verdict: both paths ran in both modes and agree bit for bit", 0
    else:
        verdict, rc = "verdict: FAILED (a path failed, or the two paths differ)", 1
    print(verdict)
    Path(args.json).write_text(json.dumps({"gpu": b.gpu.name, "cc": list(b.gpu.cc), "n": n, "seed": args.seed,
                                           "rows": out, "verdict": verdict}, indent=1))
    return rc


if __name__ == "__main__":
    run(main, __doc__)
