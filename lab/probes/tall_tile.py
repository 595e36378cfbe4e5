"""A device probe (issue 25, session 21): the 256-row tile's speed per FLOP, apart from waves and row alignment.
Rung 27's first run lost to rung 25 at 5000^3 (x0.83), mostly to rows that start inside a 128-byte line (with rows of
10112 bytes it matched rung 25, lab/logs/tall-alignment-nvidia-h200.json), yet it still trailed cuBLAS there by
12%. Here, at sizes whose rows are 128-byte multiples, rung 14 beside rung 27 built with a forced tile
(labkit.rungs.tall_tile): 256 x 128 in 4 stages (4096^3: 4 waves, as rung 14's), 256 x 128 in 3 stages, and 256 x
152 (3 stages, the 5000^3 build). Each build is checked bit for bit against the model and float64 (C poisoned with
NaN), then timed in alternating rounds (lab.probes.common.alternating: cold L2, CUDA events, clocks) with cuBLAS
writing FP16 C.

Predicted before any run (session 21), over rung 14 at 4096^3: 256 x 128 in 4 stages x0.97 (76 box rows per MFLOP
against 61, labkit.hopper.box_rows_per_mflop, where L2 is not the limit at aligned rows), in 3 stages
x0.95, 256 x 152 x0.82 (4 waves of 66 clusters for 3.27 waves of work). TALL_PREDICTED holds them.

    python3 lab/probes/tall_tile.py OUT.json [--rounds N] [--sizes 4096,6144]   (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, int_option, round_rows, run  # noqa: E402  (run as a script: ROOT first)

ODD = [(1304, 3000, 1000), (264, 520, 136)]
BUILDS = {"256 x 128, 4 stages": (256, 128, 4), "256 x 128, 3 stages": (256, 128, 3), "256 x 152": (256, 152, None)}
TALL_PREDICTED = {"256 x 128, 4 stages": 0.97, "256 x 128, 3 stages": 0.95, "256 x 152": 0.82}


def main(argv) -> int:
    if not hopper_here():
        return 2
    rounds, sizes = int_option(argv, "--rounds", 7, one=True), int_option(argv, "--sizes", (4096,))
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import ALL_RUNGS, rung_entry
    from helpers.launch import launcher
    from lab.labkit.rungs import tall_tile
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops

    builds = {"rung 14": (ALL_RUNGS[14], ())}
    builds.update({name: tall_tile(rung_entry(27), rows, width, stages=st) for name, (rows, width, st) in BUILDS.items()})
    out = {"predicted": TALL_PREDICTED, "checks": [], "timed": []}
    ok = True

    def check(name, M, N, K, A, B, ref):
        nonlocal ok
        spec, opts = builds[name]
        fn, C, _ = launcher(spec, A, B, pad=True, options=opts)
        C.fill(cupy.nan)
        fn()
        chk = spec.check(C[:M, :N], A, B, reference=ref, backend="GPU")
        ok &= bool(chk.passed) and chk.model == "identical"
        out["checks"].append({"build": name, "shape": [M, N, K], "passed": bool(chk.passed), "model": chk.model})
        print(name, (M, N, K), chk.verdict()[:160], file=sys.stderr, flush=True)
        return fn

    for i, (M, N, K) in enumerate(ODD):
        A, B = _inputs(90 + i, M, N, K)
        ref = reference_gemm(A, B)
        for name in builds:
            check(name, M, N, K, A, B, ref)
    for n in sizes:
        A, B = _inputs(95, n, n, n)
        ref = reference_gemm(A, B)
        timed = {name: check(name, n, n, n, A, B, ref) for name in builds}
        Cc, cub = cupy.empty((n, n), dtype="float16"), same_c("float16")
        timed["cuBLAS"] = lambda: cub.run(A, B, Cc)
        del ref
        fl = gemm_flops(n, n, n)
        out["timed"] += round_rows(timed, fl, rounds, lambda key: {"n": n, "what": key})
        cupy.get_default_memory_pool().free_all_blocks()
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
