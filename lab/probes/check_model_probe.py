"""The check's GPU model (kernels/check_model.cu) at small and odd sizes against the CPU model, in one short process
for compute-sanitizer (a Hopper GPU, where the model is fitted):

    compute-sanitizer --tool memcheck python3 lab/probes/check_model_probe.py OUT.txt"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402


def main(argv) -> int:
    if not hopper_here():
        return 2
    import cupy
    import numpy as np

    import helpers
    from helpers import emulate
    from helpers.fp8_gemm import cpu_model, decode_e4m3, encode_e4m3

    lines, bad = [], 0
    for M, N, K in ((16, 16, 16), (33, 17, 49)):
        A, B = helpers.random_matrix(M, K, seed=1), helpers.random_matrix(K, N, seed=2)
        A8, B8 = (decode_e4m3(encode_e4m3(X)).astype(np.float32) for X in (A, B))
        cases = [(emulate.Arithmetic("fp32"), A, B),
                 (helpers.KERNELS["wmma_fp16acc_gemm_kernel"].emulate, A.astype(np.float16), B.astype(np.float16))]
        cases += [(cpu_model(k), A8, B8) for k in ("fp8_wgmma", "fp8_promote_32", "fp8_mma_sync")]
        for ar, X, Y in cases:
            same = np.array_equal(cupy.asnumpy(ar.gpu(cupy.asarray(X), cupy.asarray(Y))), ar(X, Y))
            bad += not same
            lines.append(f"{M} {N} {K} {ar.inputs} {ar.acc} {ar.nc} {ar.pairs} {'equal' if same else 'DIFFER'}")
    lines.append("all equal" if not bad else f"{bad} differ")
    Path(argv[0]).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
