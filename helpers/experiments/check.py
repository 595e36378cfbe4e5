"""Experiment ``check_false_alarms``: does the result check pass every kernel's correct results on the GPU
(seeded shapes off the tile grid, K up to 4096), bit-identical to the model where it is fitted, and fail
each local mutation above 2^26 products, and C = 0 with an FP16 accumulator at K = 65536?
"""
from __future__ import annotations

import math

import numpy as np

from . import experiment

SEEDS = 24
MAX_K = 4096
# products above 2^26 (helpers.check.MODEL_FULL_PRODUCTS, where a model without a GPU version is compared on a
# sample) as (M, N, K, distribution): a K just past a tile, sizes off every tile grid, and the timed size itself
LARGE = ((128, 128, 4112, "uniform"), (400, 400, 512, "normal"), (1000, 1064, 1000, "normal"),
         (4096, 4096, 4096, "uniform"))


def kernel_rows(name: str, seeds: int = SEEDS, max_k: int = MAX_K, large: bool = True) -> dict:
    """One kernel over `seeds` seeded shapes (passed, bit-identical to the model), then the LARGE products."""
    import cupy

    from ..check import encode_inputs
    from ..kernels import KERNELS
    from ..launch import gemm
    from ..numerics import random_matrix

    spec = KERNELS[name]
    rng = np.random.default_rng(list(name.encode()))
    out = {"kernel": name, "products": 0, "passed": 0, "model_identical": 0, "max_size_ratio": 0.0,
           "failures": []}
    for s in range(seeds):
        m, n = (int(v) for v in rng.integers(1, 97, 2))
        k = max(1, int(math.exp(rng.uniform(0, math.log(max_k)))))
        dist = ("normal", "uniform")[s % 2]
        A = encode_inputs(random_matrix(m, k, seed=3000 + s, dist=dist), spec.inputs)
        B = encode_inputs(random_matrix(k, n, seed=4000 + s, dist=dist), spec.inputs)
        Ad, Bd = cupy.asarray(A), cupy.asarray(B)
        C = gemm(spec, Ad, Bd, pad=True)
        chk = spec.check(C, Ad, Bd, backend="GPU")
        out["products"] += 1
        out["passed"] += int(chk.passed)
        out["model_identical"] += int(chk.model == "identical")
        out["max_size_ratio"] = max(out["max_size_ratio"], round(chk.size_ratio, 4))
        if not chk.passed:
            out["failures"].append({"m": m, "n": n, "k": k, "dist": dist, "check": str(chk)})
    out["large"] = [large_row(spec, *shape) for shape in (LARGE if large else ())]
    return out


def large_row(spec, m: int, n: int, k: int, dist: str) -> dict:
    """One product above 2^26: the correct result must pass (every element against the model), every local
    mutation of it must fail."""
    import time

    import cupy

    from ..check import encode_inputs, local_mutations
    from ..launch import gemm
    from ..numerics import random_matrix

    A = cupy.asarray(encode_inputs(random_matrix(m, k, seed=m + k, dist=dist), spec.inputs))
    B = cupy.asarray(encode_inputs(random_matrix(k, n, seed=n + k + 1, dist=dist), spec.inputs))
    C = gemm(spec, A, B, pad=True)
    t0 = time.perf_counter()
    chk = spec.check(C, A, B, backend="GPU")
    cupy.cuda.Device().synchronize()
    secs = time.perf_counter() - t0
    muts = local_mutations(C, seed=k)
    rejected = [what for what, W in muts.items() if not spec.check(W, A, B, backend="GPU").passed]
    return {"m": m, "n": n, "k": k, "dist": dist, "passed": bool(chk.passed), "model": chk.model,
            "model_cells": chk.model_cells, "model_where": chk.model_where, "check_s": round(secs, 3),
            "mutations": sorted(muts), "rejected": sorted(rejected)}


@experiment("check_false_alarms")
def false_alarms(seeds: int = SEEDS, max_k: int = MAX_K, large: bool = True):
    """Every kernel's rows (kernel_rows), then FP16 accumulation at K = 65536: the result passes, C = 0 fails."""
    import cupy

    from ..device import require_gpu
    from ..isolate import in_child, run_isolated
    from ..kernels import KERNELS
    from ..launch import gemm
    from ..numerics import random_matrix

    gpu = require_gpu("check_false_alarms")
    rows = []
    for name, spec in KERNELS.items():
        msg = spec.skip_message(gpu.cc)
        if msg:
            rows.append({"kernel": name, "skipped": msg})
        elif spec.isolate and not in_child():
            r = run_isolated("helpers.experiments.check:kernel_rows", name, seeds, max_k, large, timeout=600)
            rows.append(r if "error" not in r else {"kernel": name, **r})
        else:
            rows.append(kernel_rows(name, seeds, max_k, large))
    spec = KERNELS["wmma_fp16acc_gemm_kernel"]
    A = cupy.asarray(random_matrix(64, 65536, seed=11).astype(np.float16))
    B = cupy.asarray(random_matrix(65536, 64, seed=12).astype(np.float16))
    C = gemm(spec, A, B)
    good, zero = spec.check(C, A, B, backend="GPU"), spec.check(cupy.zeros_like(C), A, B, backend="GPU")
    long_k = {"kernel": spec.name, "m": 64, "n": 64, "k": 65536, "dist": "normal",
              "correct": good.fields(), "zeros": zero.fields(), "zeros_verdict": zero.verdict()}
    return {"seeds": seeds, "max_k": max_k, "kernels": rows, "long_k": long_k}
