#!/usr/bin/env bash
# Raw WMMA outputs with their inputs, for fitting the CPU model of tensor-core addition offline.
B=$1
COURSE_DEVICE=gpu python3 - "$B" <<'PY'
import sys, numpy as np, cupy
from helpers.launch import launcher
out = {}
rng = np.random.default_rng(123)
for tag, (M, N, K), dist in [("n256k4096", (256, 256, 4096), "normal"), ("u256k4096", (256, 256, 4096), "uniform")]:
    A = (rng.standard_normal((M, K)) if dist == "normal" else rng.random((M, K))).astype(np.float16)
    Bm = (rng.standard_normal((K, N)) if dist == "normal" else rng.random((K, N))).astype(np.float16)
    out[f"{tag}_A"], out[f"{tag}_B"] = A, Bm
    for name in ("wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel"):
        run, C, _ = launcher(name, cupy.asarray(A), cupy.asarray(Bm))
        run(); out[f"{tag}_{name}"] = cupy.asnumpy(C)
np.savez_compressed(f"{sys.argv[1]}/raw_wmma.npz", **out)
print("raw dump:", {k: v.shape for k, v in out.items()})
PY
