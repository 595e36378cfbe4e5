"""The check's GPU model (kernels/check_model.cu) at small and odd sizes against the CPU model, in one short
process for compute-sanitizer: `compute-sanitizer --tool memcheck python3 tools/check_model_probe.py` (GPU)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np, cupy, helpers
from helpers import emulate
from helpers.fp8_gemm import cpu_model, decode_e4m3, encode_e4m3
bad = 0
for M, N, K in ((16, 16, 16), (33, 17, 49)):
    A = helpers.random_matrix(M, K, seed=1); B = helpers.random_matrix(K, N, seed=2)
    A8 = decode_e4m3(encode_e4m3(A)).astype(np.float32); B8 = decode_e4m3(encode_e4m3(B)).astype(np.float32)
    cases = [(emulate.Arithmetic("fp32"), A, B), (helpers.KERNELS["wmma_fp16acc_gemm_kernel"].emulate, A.astype(np.float16), B.astype(np.float16))]
    cases += [(cpu_model(k), A8, B8) for k in ("fp8_wgmma", "fp8_promote_32", "fp8_mma_sync")]
    for ar, X, Y in cases:
        same = np.array_equal(cupy.asnumpy(ar.gpu(cupy.asarray(X), cupy.asarray(Y))), ar(X, Y))
        bad += not same
        print(M, N, K, ar.inputs, ar.acc, ar.nc, ar.pairs, "equal" if same else "DIFFER")
print("all equal" if not bad else f"{bad} differ")
