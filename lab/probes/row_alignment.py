"""A device probe (issue 25): does the row stride of A and B cost a rung speed, and cuBLAS too? The same product
is run with A and B stored in wider buffers: A (M x K) in rows of K + pad elements, B (K x N) in rows of N + pad;
the kernel reads the first K (N) columns through the tensor map (helpers.hopper.tensor_map_2d's cols), cuBLAS
through its lda / ldb (cublasGemmEx, FP16 A and B, CUBLAS_COMPUTE_32F, FP16 C: what cupy.matmul calls). Same
numbers, same kernels, same launches: only the addresses of the rows change. Every C is checked (float64, and
the model on the GPU for the rungs), then timed (cold L2, CUDA events, clocks beside each).

At 5000^3 (the default) a row is 10000 bytes, 16 bytes past a 32-byte sector boundary, so each 128-byte row of a
TMA box spans 4.5 sectors on average instead of 4 (pad 8: rows of 10016 bytes, sector-aligned; pad 56: 10112
bytes, 128-byte aligned). At 128 x 8192 x 8192 a row of B is 16384 bytes, a power of two (pad 64: 16512).

With --knobs (e.g. CLUSTER_M=4), the rungs are built as helpers.try_kernel builds them with those knobs.

    python3 lab/probes/row_alignment.py OUT.json [--shape MxNxK] [--pads 0,8,56] [--rungs 14,16] [--knobs K=V,...]
                                                                            (a Hopper GPU, COURSE_DEVICE=gpu)"""
import functools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, knob_variant, run  # noqa: E402  (run as a script: ROOT first)


def _option(args: list, name: str, default: str) -> str:
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def knob_values(text: str) -> dict:
    """--knobs K=V,K2=V2 as {K: int(V)} (empty text: none)."""
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


def main(argv) -> int:
    if not hopper_here():
        return 2
    args = list(argv)
    shape = [int(v) for v in _option(args, "--shape", "5000x5000x5000").split("x")]
    pads = [int(v) for v in _option(args, "--pads", "0,8,56").split(",")]
    rungs = [int(v) for v in _option(args, "--rungs", "14,16").split(",")]
    knobs = knob_values(_option(args, "--knobs", ""))   # e.g. CLUSTER_M=4
    M, N, K = shape
    import cupy

    import helpers.launch as HL
    from helpers.cublas import CUBLAS_COMPUTE_32F, gemm_ex, same_c
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.timing import benchmark

    rng = cupy.random.default_rng(9)
    A = rng.standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
    B = rng.standard_normal((K, N), dtype=cupy.float32).astype(cupy.float16)
    plain = HL.tensor_map_2d             # the name the launcher looks up: the probe swaps it for `mapped`
    rows, bad = [], 0

    def keep(row, chk, t):
        nonlocal bad
        row.update({"m": M, "n": N, "k": K, "passed": bool(chk.passed), "model": getattr(chk, "model", None),
                    "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms, "tflops": t.tflops,
                    "clocks": t.clocks})
        bad += not chk.passed
        rows.append(row)
        print({x: row.get(x) for x in ("rung", "kernel", "built", "pad", "a_row_bytes", "b_row_bytes", "passed",
                                       "model", "median_ms", "tflops")}, (t.clocks or {}).get("sm_mhz"), file=sys.stderr,
              flush=True)

    for pad in pads:
        Aw = cupy.zeros((M, K + pad), dtype=cupy.float16)
        Aw[:, :K] = A
        Bw = cupy.zeros((K, N + pad), dtype=cupy.float16)
        Bw[:, :N] = B
        wide = {id(A): (Aw, K), id(B): (Bw, N)}
        hits = []

        def mapped(X, box_rows, box_cols, cols=None):
            if id(X) in wide:                         # A or B: the same values, rows further apart
                hits.append(id(X))
                W, c = wide[id(X)]
                return plain(W, box_rows, box_cols, cols=c)
            return plain(X, box_rows, box_cols, cols=cols)

        base = {"pad": pad, "ld": N + pad, "a_row_bytes": 2 * (K + pad), "b_row_bytes": 2 * (N + pad),
                "row_bytes": 2 * (N + pad), "row_mod_32": (2 * (N + pad)) % 32, "row_mod_128": (2 * (N + pad)) % 128}
        HL.tensor_map_2d = mapped
        try:
            for k in rungs:
                r, opts = rung_entry(k), ()
                if knobs:                              # the rung as helpers.try_kernel builds it with these knobs
                    r, opts, _ = knob_variant(k, knobs)
                hits.clear()
                run, C, _ = launcher(r, A, B, options=opts)
                if len(set(hits)) != 2:
                    print(f"rung {k}: the launcher did not map A and B themselves (copies?): probe invalid",
                          file=sys.stderr)
                    return 1
                C.fill(cupy.nan)
                run()
                chk = r.check(C[:M, :N], A, B, backend="GPU")
                built = HL.build_for(r, M, N, 2 * K, 2 * N, options=opts)[0].name   # what the launcher chose
                keep({"rung": k, "kernel": r.name, "built": built, "knobs": knobs, **base}, chk,
                     benchmark(run, flops=2.0 * M * N * K))
        finally:
            HL.tensor_map_2d = plain
        C = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
        run = functools.partial(gemm_ex, Aw[:, :K], Bw[:, :N], compute=CUBLAS_COMPUTE_32F, C=C)   # lda, ldb: wide
        run()
        chk = same_c("float16").check(C, A, B, backend="GPU")
        keep({"rung": 0, "kernel": "cublas_fp16 (gemmEx, lda/ldb)", **base}, chk, benchmark(run, flops=2.0 * M * N * K))
    Path(args[0]).write_text(json.dumps({"n": N, "shape": shape, "rows": rows}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
