"""A device probe (issue 25, session 22): rung 29, cuBLAS's orientation, before its first GPU run.
Rung 29 (hopper_ct_tile, then in the templated file lab/kernels/hopper_sm90a_research.cu keeps, and in
helpers.kernels.PENDING[29]; kernels/hopper_rung29_sm90a.cu since 2026-12-07) computes a 160 x 256 tile of C as its
transpose, D' = B^T A^T, so that 4 stages fit in shared memory (the tall-tile probe found a ring of 3 stages costing
14-16%). Here:

1. rung 29 checked against float64 and, bit for bit, against its CPU model (rung 14's arithmetic: the same products
   in the same K order) at sizes that are no tile multiples, C poisoned with NaN first;
2. at each timed size, rung 29 and rung 25 (as the launcher builds it there) checked, then timed in alternating
   rounds (lab.probes.common.round_rows: cold L2, CUDA events, clocks) with cuBLAS writing FP16 C.

Predicted before any run (session 22), over rung 25: x1.08 at 5000^3 (5 waves of 1.25 tile-times against 7, less
some for the box rows), x0.80 at 4096^3 (4 waves of 1.25 against rung 14's 4 waves). CT_PREDICTED holds them.
First run (session 22 call 2, lab/logs/ct-tile-probe-nvidia-h200.json): x1.052 and x0.820. Predicted after it,
before the second run, at three more sizes where the wave count favours rung 29 (waves x tile rows / 128 against rung
25's waves): the waves' ratio times 0.94 where rung 25 builds clusters of 4 (5000^3's shortfall: 1.052 / 1.12), times
1.00 where it builds clusters of 2 (both then share B in pairs): x1.13 at 3000^3, x1.07 at 5500^3 and 6750^3.
Second run (session 22 call 3, lab/logs/ct-tile-sizes-nvidia-h200.json): x1.136, x1.188, x1.107; but rows of 5500
and 6750 halves are no 16-byte multiples, so the rungs ran zero-padded copies while cuBLAS ran a slow kernel on the
matrices as they are. Predicted by the same rule before the third run, at the nearest sizes whose rows are 16-byte
multiples (and still start inside a 128-byte line): x1.07 at 5496^3 and 6744^3.

With --f32c (session 22): rung 30 (rung 29 writing FP32 C) against rung 26, beside cuBLAS writing FP32 C. Predicted
before its first run: x1.05 over rung 26 at 5000^3 (F32C_PREDICTED).

With --pair-n (session 23): rung 31 (the C^T tile 152 rows high, in pairs along N sharing A; pending) against rung 29
with its C^T tile forced, beside cuBLAS writing FP16 C, at 5000, 4096 and 5496 unless --sizes says otherwise.
Predicted before its first run (PAIR_N_PREDICTED, from the waves less some for the box rows): x1.03 at 5000^3 and
4096^3, x0.88 at 5496^3 (7 waves against 6). Its odd sizes include 3 tile columns (257 x 520: the second CTA of the
last pair has no tile) and 9 tile rows (1304).

With --ct-m 128 (session 24, not yet run): rung 29 with CT_M=128, rung 14's tile and ring computed as C^T (the kernel
cuBLAS runs at 4096^3: nvjet_sm90_hsh_256x128_64x4_1x2, columns x rows of C), against rung 25 as the launcher builds
it (rung 14's kernel at these sizes), at 4096 and 2048 unless --sizes says otherwise: the orientation alone, with the
same waves and bytes. Predicted before its first run (CT128_PREDICTED): x1.00 at both (nothing in the wave or byte
models differs; the wgmma operands swap and the epilogue transposes with stmatrix, which rung 29 showed costs little).

    python3 lab/probes/ct_tile.py OUT.json [--rounds N] [--sizes 5000,4096] [--checks-only] [--f32c | --pair-n |
                                                                                          --ct-m 128]
                                                                        (a Hopper GPU, COURSE_DEVICE=gpu)
--checks-only: step 1 alone (for compute-sanitizer)."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import (hopper_here, int_option, knob_variant, round_rows,  # noqa: E402  (run as a
                                 run)                                                  # script: ROOT first)

ODD = [(1000, 1064, 1000), (257, 520, 136), (40, 24, 56), (1304, 3000, 1000), (328, 264, 72)]
F32C_PREDICTED = {5000: 1.05}
PAIR_N_PREDICTED = {5000: 1.03, 4096: 1.03, 5496: 0.88}
CT128_PREDICTED = {4096: 1.00, 2048: 1.00}
CT_PREDICTED = {5000: 1.08, 4096: 0.80, 3000: 1.13, 5500: 1.07, 6750: 1.07, 5496: 1.07, 6744: 1.07}


def main(argv) -> int:
    if not hopper_here():
        return 2
    pair_n = "--pair-n" in argv
    rounds = int_option(argv, "--rounds", 7, one=True)
    ct_m = int_option(argv, "--ct-m", None, one=True)
    sizes = int_option(argv, "--sizes", (5000, 4096, 5496) if pair_n else (4096, 2048) if ct_m else (5000, 4096))
    sizes = () if "--checks-only" in argv else sizes
    new, base, c_dtype = (30, 26, "float32") if "--f32c" in argv else (31, 29, "float16") if pair_n else \
        (29, 25, "float16")
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops

    out = {"predicted": CT128_PREDICTED if ct_m else {30: F32C_PREDICTED, 31: PAIR_N_PREDICTED}.get(new, CT_PREDICTED),
           "ct_m": ct_m or 160, "checks": [], "timed": []}
    ok = True

    def check(k, M, N, K, A, B, ref):
        nonlocal ok
        spec = rung_entry(k)
        force = ("-DCT_M=160",) if k in (29, 30) else ()     # the C^T tile at every size (no orientation choice)
        if ct_m and k in (29, 30):                           # the variant try_kernel builds with CT_M given
            spec, force, _ = knob_variant(k, {"CT_M": ct_m})
        fn, C, _ = launcher(spec, A, B, pad=True, options=force)
        C.fill(cupy.nan)
        fn()
        chk = spec.check(C[:M, :N], A, B, reference=ref, backend="GPU")
        ok &= bool(chk.passed) and chk.model == "identical"
        out["checks"].append({"rung": k, "shape": [M, N, K], "passed": bool(chk.passed), "model": chk.model,
                              "verdict": chk.verdict()[:300]})
        print(k, (M, N, K), chk.verdict()[:160], file=sys.stderr, flush=True)
        return fn

    for i, (M, N, K) in enumerate(ODD):
        A, B = _inputs(100 + i, M, N, K)
        check(new, M, N, K, A, B, reference_gemm(A, B))
    for n in sizes:
        A, B = _inputs(105, n, n, n)
        ref = reference_gemm(A, B)
        timed = {f"rung {k}": check(k, n, n, n, A, B, ref) for k in (new, base)}
        Cc, cub = cupy.empty((n, n), dtype=c_dtype), same_c(c_dtype)
        timed["cuBLAS"] = lambda: cub.run(A, B, Cc)
        del ref
        out["timed"] += round_rows(timed, gemm_flops(n, n, n), rounds, lambda key: {"n": n, "what": key})
        cupy.get_default_memory_pool().free_all_blocks()
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
