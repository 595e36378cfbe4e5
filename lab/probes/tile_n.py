"""A device probe (issue 25): rungs 25-26 with the TILE_N knob (the tile's width, a multiple of 8 from 128 to 256),
first written as rungs 27-28 (hopper_tile_n / hopper_tile_n_f32c at commit dabad09: rung 25's and 26's template calls
with TILE_N, the width chosen per problem so that the tiles fill whole waves).

1. widths forced (TILE_N, CLUSTER_M): each checked against float64 and the model (bit for bit) at sizes that are no
   tile multiples;
2. the width sweep at 5000^3 (clusters of 2 and of 4, widths 128 .. 256) and at 8192^3, each checked, then timed in
   alternating rounds (lab.probes.common.alternating: cold L2, CUDA events, clocks) with rung 25 as the launcher
   builds it and cuBLAS writing FP16 C.

Its runs (session 16, 2026-12-03, H200): lab/logs/tile-n-probe-nvidia-h200.json (commit dabad09, with a third
part: rungs 27-28 as their launcher built them, 128 x 152 in clusters of 2 at 5000^3, beside rungs 25-26; its first
two parts failed on a bug since fixed) and lab/logs/tile-n-sweep-nvidia-h200.json (parts 1 and 2). As refactored,
it ran in session 18 (tree d79f7f5, lab/logs/tile-n-s18-nvidia-h200.json): every forced check and every sweep build
bit-identical to the model; its timings ran after four minutes of GPU tests at SM clocks of 1200-1965 MHz and decide
nothing.

    python3 lab/probes/tile_n.py OUT.json           (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)

ODD = [[1000, 1064, 1000], [257, 520, 136], [40, 24, 56], [72, 8200, 1000]]
FORCED = [(152, 2), (152, 4), (200, 2), (136, 4), (248, 4)]          # (width, cluster) checked at ODD
SWEEP = {(5000, 5000, 5000): [(w, c) for c in (2, 4) for w in (128, 152, 160, 176, 192, 200, 224, 256)],
         (8192, 8192, 8192): [(192, 2), (200, 2), (256, 2)]}


def variant(rung: int, width: int, cluster: int):
    """(entry, options) of rung 25 or 26 with the width and cluster forced, as helpers.tryout builds a knob variant
    (its launch settings: shared memory, block tile, cluster), for any width the kernel takes (the TILE_N knob offers
    five of them, and validate_knobs refuses the others)."""
    from helpers.kernels import rung_entry
    from helpers.tryout import _resolve, defines, options, variant_entry

    spec = rung_entry(rung)
    given = {"TILE_N": width, "CLUSTER_M": cluster}
    return variant_entry(spec, {**_resolve(spec, {}), **given}), options(defines(spec, given))


def forced_rows(rounds: int = 3) -> dict:
    """GPU, in a child: parts 1 and 2."""
    import cupy

    from helpers.compile import arch_target
    from helpers.cublas import same_c
    from helpers.experiments.knobs import _precompile
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import build_for, launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops
    from lab.probes.common import alternating

    jobs = {(rung_entry(25).file, variant(r, w, c)[1], arch_target((9, 0)))
            for r, pairs in ((25, [p for ps in SWEEP.values() for p in ps] + FORCED), (26, FORCED)) for w, c in pairs}
    _precompile(sorted(jobs), log=lambda m: print(m, file=sys.stderr))
    out = {"checks": [], "sweeps": []}
    for i, shape in enumerate(ODD):
        M, N, K = shape
        A, B = _inputs(40 + i, M, N, K)
        ref = reference_gemm(A, B)
        for rung in (25, 26):
            for w, c in FORCED:
                entry, opts = variant(rung, w, c)
                fn, C, _ = launcher(entry, A, B, pad=True, options=opts)
                C.fill(cupy.nan)
                fn()
                chk = rung_entry(rung).check(C[:M, :N], A, B, reference=ref, backend="GPU")
                out["checks"].append({"rung": rung, "shape": shape, "width": w, "cluster": c, "passed": bool(chk.passed),
                                      "model": chk.model})
                print(rung, shape, w, c, chk.passed, chk.model, file=sys.stderr)
    rung = 25                                # the sweep: rung 25's widths, beside rung 25 as built and cuBLAS
    for shape, pairs in SWEEP.items():
        M, N, K = shape
        A, B = _inputs(60, M, N, K)
        ref = reference_gemm(A, B)
        timed, rows = {}, []
        for w, c in pairs:
            entry, opts = variant(rung, w, c)
            fn, C, _ = launcher(entry, A, B, options=opts)
            C.fill(cupy.nan)
            fn()
            chk = rung_entry(rung).check(C[:M, :N], A, B, reference=ref, backend="GPU")
            rows.append({"rung": rung, "width": w, "cluster": c, "passed": bool(chk.passed), "model": chk.model})
            timed[len(timed)] = fn
        built, _ = build_for(rung_entry(rung), M, N, 2 * K, 2 * N)
        fn, C, _ = launcher(rung_entry(rung), A, B)
        rows.append({"rung": rung, "width": 256, "cluster": built.cluster[0], "as_built": True})
        timed[len(timed)] = fn
        c_dtype = rung_entry(rung).out_dtype
        Cc, cub = cupy.empty((M, N), dtype=c_dtype), same_c(c_dtype)
        timed["cublas"] = lambda cub=cub, A=A, B=B, Cc=Cc: cub.run(A, B, Cc)
        rows.append({"what": f"cuBLAS, {c_dtype} C"})
        fl = gemm_flops(M, N, K)
        for r, v in zip(rows, alternating(timed, fl, rounds).values()):
            ms = sorted(v["ms"])[len(v["ms"]) // 2]
            r.update(shape=list(shape), median_ms=ms, tflops=fl / ms / 1e9, round_ms=v["ms"], sm_mhz=v["sm_mhz"],
                     power_w=v["power_w"])
            print(json.dumps(r), file=sys.stderr)
            out["sweeps"].append(r)
    return out


def main(argv) -> int:
    if not hopper_here():
        return 2
    forced = run_isolated_forced()
    Path(argv[0]).write_text(json.dumps({"forced": forced}, indent=1))
    if isinstance(forced, dict) and "error" in forced:
        print("forced:", str(forced)[:2000], file=sys.stderr)
        return 1
    ok = all(c["passed"] and c["model"] == "identical" for c in forced["checks"])
    return 0 if ok and all(r.get("passed", True) for r in forced["sweeps"]) else 1


def run_isolated_forced():
    from helpers.isolate import run_isolated

    return run_isolated("lab.probes.tile_n:forced_rows", 3, timeout=420)


if __name__ == "__main__":
    run(main, __doc__)
