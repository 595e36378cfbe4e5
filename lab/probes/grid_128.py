"""A device probe (issue 25): lesson 6's rungs on a persistent grid of 128 CTAs (64 clusters of 2) instead of as many
as fit at once (132 on the H200). Lesson 7's fp8_wgmma_store ran x1.014 faster on 128 CTAs at 4096^3 (session 18,
lab/logs/fp8-ctas-probe-nvidia-h200.json); the FP16 rungs walk the same L2-aware order (groups of GROUP_M = 8 tile
rows, 4 units of 2 tile rows in clusters of 2, x 16 tile columns at 4096: 64 units, one per cluster of 128 CTAs).

1. each rung with ctas=128 checked against float64 and its model (bit for bit) at sizes that are no tile multiples,
   C poisoned with NaN first;
2. at each timed size, both grids checked, then timed in alternating rounds (lab.probes.common.alternating: cold L2,
   CUDA events, clocks) beside cuBLAS writing the rung's C type (helpers.cublas.same_c).

With --switch NAME=V (session 20): instead of 128 CTAs, each rung as recorded and built with the NVRTC option -DNAME=V
(a research switch of lab/kernels/hopper_sm90a_research.cu, e.g. DESC_ADD=1), checked and timed the same way; rows carry `switch`.

    python3 lab/probes/grid_128.py OUT.json [--rounds N] [--sizes 4096,8192] [--switch NAME=V] [RUNG ...]
                                                                                        (a Hopper GPU; default 13 14)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, int_option, research_source, round_rows, run  # noqa: E402  (run as a script: ROOT first)

ODD = [(1000, 1064, 1000), (257, 520, 136)]
CTAS = 128


def main(argv) -> int:
    switch = argv[argv.index("--switch") + 1] if "--switch" in argv[:-1] else None
    if ("--switch" in argv and switch is None) or (switch is not None and (
            switch.count("=") != 1 or not switch.split("=")[0].isidentifier())):
        print(f"--switch {switch!r}: give NAME=VALUE, e.g. --switch DESC_ADD=1", file=sys.stderr)
        return 2
    if not hopper_here():
        return 2
    rounds, sizes = int_option(argv, "--rounds", 7, one=True), int_option(argv, "--sizes", (4096,))
    skip = {i + 1 for i, a in enumerate(argv) if a in ("--rounds", "--sizes", "--switch")}
    # the second build of each rung: 128 CTAs, or (--switch) the rung built with -DNAME=V on its usual grid
    variants = [({}, None), ({"ctas": CTAS}, None)] if switch is None else \
        [({}, None), ({"options": (f"-D{switch}",)}, switch)]
    rungs = [int(a) for i, a in enumerate(argv[1:], 1) if a.isdigit() and i not in skip] or [13, 14]
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops

    out = {"ctas": CTAS if switch is None else None, "switch": switch, "checks": [], "timed": []}
    ok = True
    for i, (M, N, K) in enumerate(ODD):
        A, B = _inputs(70 + i, M, N, K)
        ref = reference_gemm(A, B)
        for r in rungs:
            kw, sw = variants[1]
            fn, C, _ = launcher(rung_entry(r), A, B, pad=True, source=research_source(r, kw.get("options", ())),
                                **kw)
            C.fill(cupy.nan)
            fn()
            chk = rung_entry(r).check(C[:M, :N], A, B, reference=ref, backend="GPU")
            ok &= bool(chk.passed) and chk.model == "identical"
            out["checks"].append({"rung": r, "shape": [M, N, K], "ctas": kw.get("ctas"), "switch": sw,
                                  "passed": bool(chk.passed), "model": chk.model})
            print(r, (M, N, K), kw, chk.verdict()[:160], file=sys.stderr, flush=True)
    for n in sizes:
        A, B = _inputs(80, n, n, n)
        ref = reference_gemm(A, B)
        timed = {}
        for r in rungs:
            for kw, sw in variants:
                fn, C, _ = launcher(rung_entry(r), A, B, source=research_source(r, kw.get("options", ())), **kw)
                C.fill(cupy.nan)
                fn()
                chk = rung_entry(r).check(C[:n, :n], A, B, reference=ref, backend="GPU")
                ok &= bool(chk.passed) and chk.model == "identical"
                out["checks"].append({"rung": r, "shape": [n] * 3, "ctas": kw.get("ctas"), "switch": sw,
                                      "passed": bool(chk.passed), "model": chk.model})
                print(r, n, kw, chk.verdict()[:160], file=sys.stderr, flush=True)
                timed[(f"rung {r}", kw.get("ctas"), str(cupy.dtype(rung_entry(r).out_dtype)), sw)] = fn
        for dt in sorted({str(cupy.dtype(rung_entry(r).out_dtype)) for r in rungs}):
            Cc, cub = cupy.empty((n, n), dtype=dt), same_c(dt)
            timed[("cuBLAS", None, dt, None)] = lambda cub=cub, A=A, B=B, Cc=Cc: cub.run(A, B, Cc)
        del ref
        fl = gemm_flops(n, n, n)
        out["timed"] += round_rows(timed, fl, rounds, lambda key: {"n": n, "what": key[0], "ctas": key[1],
                                                                   "c_dtype": key[2], "switch": key[3]})
        cupy.get_default_memory_pool().free_all_blocks()
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
