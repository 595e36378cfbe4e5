"""A device probe (issue 25): rung 17 (hopper_skinny: a 64 x 128 tile, 8 stages, 2-CTA clusters, no split) checked at
odd sizes and timed beside cuBLAS (both C types) at skinny and full-chip shapes, each rung in its own child process
(helpers.experiments.hopper.rung_rows, as the `hopper` experiment runs it; rung 16 beside it at the skinny shapes);
then its knobs at M = 128, N = K = 8192, each variant checked (float64 and the model on the GPU) and timed in
alternating rounds with the rung as recorded. With RUNG 18 (hopper_skinny_f32c, rung 17 writing FP32 C; its first
run, lab/logs/rung18-probe-nvidia-h200.json): the same checks and timings, rung 17 beside it, no knobs. With
RUNG 19 (hopper_skinny_one, one consumer warpgroup) or 20 (its FP32-C twin), 21-22 (19-20 with the wait hint) and
23-24 (21-22 with added descriptors): the same, the rung its gain is over (its base) beside it at the skinny shapes
and 4096^3. With RUNG 25 or 26 (rungs 14 and 13 in clusters of 4): the full-chip shapes the record judges (4096^3,
5000^3, 8192^3, 2048^3, 8192 x 8192 x 1024), its base (14 or 13) beside it at each. With RUNG 27 or 28 (the 256-row
tile chosen per shape): the same shapes, rung 25 or 26 beside it, and two more odd sizes where it builds the tall
tile (1304 x 3000 x 1000, 3000 x 3000 x 136). With RUNG 29 or 30 (the C^T tile or rung 25's (26's) build, chosen per
shape): the same shapes and odd sizes, and 5496^3 (rows TMA reads as they are, starting inside a line), rung 25 or 26
beside it. Predicted before rung 29's run so (session 22): x1.00 where the launcher builds rung 25's kernel (4096^3,
8192^3, 2048^3, 8192 x 8192 x 1024), x1.05 at 5000^3 and x1.07 at 5496^3 (the C^T tile's probe runs: x1.052, x1.084).
With --knobs: only the knob rounds at M = 128 (rungs 19-20: the wait hint, 6 stages, no cluster).

    python3 lab/probes/rung17.py OUT.json [RUNG] [--knobs]   (a Hopper GPU, COURSE_DEVICE=gpu; RUNG 17 to 30)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, knob_variant, run  # noqa: E402  (run as a script: ROOT first)
SKINNY = [[128, 8192, 8192], [256, 8192, 8192], [64, 8192, 8192], [128, 28672, 4096]]
FULL = [[4096] * 3, [5000] * 3]
BIG = [[4096] * 3, [5000] * 3, [8192] * 3, [2048] * 3, [8192, 8192, 1024]]   # rungs 25-26
ODD = [[1000, 1064, 1000], [257, 520, 136], [40, 24, 56], [72, 8200, 1000]]
TALL_ODD = [[1304, 3000, 1000], [3000, 3000, 136]]    # rungs 27-28: sizes where the launcher builds the 256-row tile
# (and where it builds rungs 29-30's C^T tile: helpers.kernels.ct_waves_ratio 1.6 and 1.2 there on the H200)
CT_BIG = BIG + [[5496] * 3]                           # rungs 29-30: + a size whose rows TMA reads as they are
VARIANTS = [{"STAGES": 4}, {"STAGES": 6}, {"CLUSTER_M": 1}, {"PRODUCER_REGS": 24}]   # helpers.tryout.KNOBS[17]
VARIANTS_19 = [{"WAIT_HINT": 1}, {"STAGES": 6}, {"CLUSTER_M": 1}]                    # helpers.tryout.KNOBS[19]
KNOB_SHAPE = (128, 8192, 8192)


def knob_rows(shape=KNOB_SHAPE, variants=VARIANTS, rounds: int = 3, rung: int = 17) -> list[dict]:
    """GPU, in a child: rung `rung` and each variant at `shape`, checked, then timed in `rounds` alternating rounds
    (lab.probes.common.alternating) with cuBLAS writing the rung's C type (its row: knobs None)."""
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops
    from lab.probes.common import alternating

    M, N, K = shape
    A, B = _inputs(0, M, N, K)
    ref = reference_gemm(A, B)
    runs, timed = [], {}
    for i, knobs in enumerate([{}] + list(variants)):
        entry, opts, defs = knob_variant(rung, knobs)
        run, C, _ = launcher(entry, A, B, options=opts)
        C.fill(cupy.nan)
        run()
        chk = rung_entry(rung).check(C[:M, :N], A, B, reference=ref, backend="GPU")
        runs.append({"knobs": defs, "passed": bool(chk.passed), "model": chk.model})
        timed[i] = run
    c_dtype = rung_entry(rung).out_dtype
    Cc, cub = cupy.empty((M, N), dtype=c_dtype), same_c(c_dtype)
    timed["cublas"] = lambda: cub.run(A, B, Cc)
    runs.append({"knobs": None, "what": f"cuBLAS, {c_dtype} C", "passed": None, "model": None})
    fl = gemm_flops(M, N, K)
    out = []
    for r, v in zip(runs, alternating(timed, fl, rounds).values()):
        ms = sorted(v["ms"])[len(v["ms"]) // 2]
        out.append(dict(r, shape=list(shape), median_ms=ms, tflops=fl / ms / 1e9, round_ms=v["ms"], sm_mhz=v["sm_mhz"],
                        power_w=v["power_w"]))
    return out


def main(argv) -> int:
    if not hopper_here():
        return 2
    from lab.labkit.hopper import probe_rung

    rung = int(argv[1]) if len(argv) > 1 else 17
    if rung not in range(17, 31):
        sys.exit(__doc__)
    out, failed = {}, False
    if "--knobs" in argv:                                    # rung 19's knobs alone, beside it as recorded
        return _knobs(out, argv[0], rung, VARIANTS_19 if rung in (19, 20) else VARIANTS)
    big = CT_BIG if rung >= 29 else BIG
    out[str(rung)], bad = probe_rung(rung, big if rung >= 25 else SKINNY + FULL, ODD + (TALL_ODD if rung >= 27 else []))
    failed |= bad
    from helpers.kernels import rung_entry

    base = rung_entry(rung).base or rung - 1                        # the rung its gain is measured over
    out[str(base)], bad = probe_rung(base, big if rung >= 25 else SKINNY + (FULL[:1] if rung >= 19 else []), [])
    failed |= bad
    if rung >= 18:
        Path(argv[0]).write_text(json.dumps(out, indent=1))
        return 1 if failed else 0
    return _knobs(out, argv[0], 17, VARIANTS, failed)


def _knobs(out: dict, path: str, rung: int, variants: list, failed: bool = False) -> int:
    from helpers.isolate import run_isolated

    knobs = run_isolated("lab.probes.rung17:knob_rows", KNOB_SHAPE, variants, 3, rung, timeout=300)
    out["knobs"] = knobs
    if isinstance(knobs, dict):
        print("knobs:", knobs, file=sys.stderr)
        failed = True
    else:
        for r in knobs:
            print("knobs", r["knobs"] if r["knobs"] is not None else r["what"], "passed", r["passed"], r["model"],
                  "TFLOP/s", round(r["tflops"]), "rounds ms", [round(x, 4) for x in r["round_ms"]], "MHz", r["sm_mhz"],
                  file=sys.stderr)
            failed |= r["passed"] is False
    Path(path).write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
