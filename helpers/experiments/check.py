"""The result check on the GPU (issue 12): does it pass every kernel's correct results, and fail wrong ones?

Experiment ``check_false_alarms`` (``make record``): for every kernel in the registry, seeded random
shapes (sizes not multiples of 16, K up to 4096, N(0,1) and U[0,1) data) run on the GPU and
checked there (the check's float64 work runs on the GPU with CuPy; the model on the CPU). Every
correct result must pass, bit-identical to the CPU model where it is fitted; and with an FP16
accumulator at K = 65536, the kernel's result must pass while C = 0 fails.
"""
from __future__ import annotations

import math

import numpy as np

from . import experiment

SEEDS = 24
MAX_K = 4096


def kernel_rows(name: str, seeds: int = SEEDS, max_k: int = MAX_K) -> dict:
    """One kernel over `seeds` seeded shapes: how many passed, how many were bit-identical to the model."""
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
    return out


@experiment("check_false_alarms")
def false_alarms(seeds: int = SEEDS, max_k: int = MAX_K):
    """Every kernel's correct results over seeded shapes pass; FP16 accumulation at K = 65536: the
    kernel's result passes and C = 0 fails."""
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
            r = run_isolated("helpers.experiments.check:kernel_rows", name, seeds, max_k, timeout=600)
            rows.append(r if "error" not in r else {"kernel": name, **r})
        else:
            rows.append(kernel_rows(name, seeds, max_k))
    spec = KERNELS["wmma_fp16acc_gemm_kernel"]
    A = cupy.asarray(random_matrix(64, 65536, seed=11).astype(np.float16))
    B = cupy.asarray(random_matrix(65536, 64, seed=12).astype(np.float16))
    C = gemm(spec, A, B)
    good, zero = spec.check(C, A, B, backend="GPU"), spec.check(cupy.zeros_like(C), A, B, backend="GPU")
    long_k = {"kernel": spec.name, "m": 64, "n": 64, "k": 65536, "dist": "normal",
              "correct": good.fields(), "zeros": zero.fields(), "zeros_verdict": zero.verdict()}
    return {"seeds": seeds, "max_k": max_k, "kernels": rows, "long_k": long_k}
