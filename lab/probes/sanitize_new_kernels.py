"""compute-sanitizer cases for the kernels added on 2026-12-01 (lesson 6's rungs 14-17 and any rung still pending, lesson 7's
fp8_promote_pingpong and fp8_block_scaled), with tools/sanitize_driver.py's own case functions, at small and odd sizes and split-K at
2 parts (rung 16 also after two whole waves, with a tile below M); `make sanitize` runs every kernel, this runs
four in seconds (`--pending`: only the kernels still pending their first run; `--rungs 23 24`: those rungs; `--tile-n`:
rungs 25-26 with TILE_N 152 in clusters of 4 and 200 in clusters of 2; `--tall`: rungs 27-28 with the 256-row tile
152, 128 and 192 wide; `--fp8 NAME ...`: those FP8 kernels; `--uniform`: fp8_wgmma_store and fp8_promote_2acc_lean built with F8_UNIFORM=1 (run at e3397d3; both have passed UNIFORM = true since, so it now checks their recorded build); `--flow2`: fp8_promote_2acc_lean built with F8_FLOW=2, in a checkout of commit 3c26c11 (`--primed`: one small shape where CTAs prime a next tile); `--desc`: fp8_promote_128 and fp8_wgmma
and rungs 13, 14, 16, 19 and 21 built with the probe switches F8_DESC_ADD=1 and DESC_ADD=1; `--hilbert`: rungs 13, 14,
29 and 30 built with TILE_ORDER=1, also at 512^2 and 1024^2, where the Hilbert order applies). Under each tool:

    compute-sanitizer --tool memcheck --padding 64 --report-api-errors no python3 lab/probes/sanitize_new_kernels.py
    (and --tool racecheck, --tool synccheck; a Hopper GPU, COURSE_DEVICE=gpu)

Exit status 0 when every case passed its check (the tool's own summary says whether it found errors)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import fp8_research_source, hopper_here, research_source  # noqa: E402  (run as a script: ROOT first)
SPLIT_SIZES = ((40, 24, 1000), (136, 264, 1000))      # one and four tiles, K in 2 parts
TAIL_SIZES = ((264, 17152, 1000),)                    # rung 16: 132 whole units, then 2 units in 2 parts
SKINNY_SIZES = ((64, 264, 200), (72, 8200, 136))      # rung 17: a cluster's tile below M; 2 x 65 tiles, the last 8 wide
TALL_SIZES = ((264, 520, 136), (1304, 400, 200))      # rungs 27-28: a tile of 8 rows beside a full one; 6 x 3 tiles
HILBERT_SIZES = ((512, 512, 200), (1024, 1024, 136))  # TILE_ORDER=1: 2 x 2 and 4 x 4 units of 2 tiles of 128 x 256


def _rung_cases(spec, options: tuple = (), extra: tuple = ()) -> int:
    """Rung `spec` (built with NVRTC `options`) at tools/sanitize_driver.py's sizes and its own (the skinny rungs'
    from rung 17 on, the tall tile's from 27, split-K's below) and `extra`, each checked and printed as one @@end line;
    returns how many failed."""
    from sanitize_driver import SIZES, _course_kernel

    bad, tag = 0, "".join(f" {o}" for o in options)
    for M, N, K in SIZES + (TALL_SIZES if spec.rung >= 27 else SKINNY_SIZES if spec.rung >= 17 else SPLIT_SIZES) + extra:
        v = _course_kernel(spec, M, N, K, options=options, source=research_source(spec.rung, options))
        bad += not v.startswith("PASS")
        print(f"@@end {spec.name}{tag} | M={M} N={N} K={K} | {v[:160]}", flush=True)
    return bad


def _fp8_option(name: str, M: int, N: int, K: int, options: tuple) -> str:
    """FP8 kernel `name` compiled with NVRTC `options`, on N(0,1) inputs, checked as the record checks it."""
    import cupy

    from helpers.experiments.fp8 import check_fp8, random_inputs
    from helpers.fp8_gemm import encode_e4m3, launcher

    A, B = random_inputs(M, N, K, "normal", 7)
    run, C = launcher(name, cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())), options=options,
                      source=fp8_research_source(name, options))
    run()
    from sanitize_driver import _verdict

    return _verdict(check_fp8(name, C[:, :N], cupy.asarray(A), cupy.asarray(B), backend="GPU"))


def main() -> int:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tools"))
    if not hopper_here():
        return 2
    import cupy
    from sanitize_driver import SIZES, _course_kernel, _fp8

    from helpers.kernels import KERNELS, PENDING, rung_entry, split_k_plan, tail_split_plan

    cupy.cuda.set_allocator(None)             # one allocation per array: exact bounds for memcheck
    bad = 0
    if "--desc" in sys.argv:                  # rungs and FP8 kernels built with the probe switches DESC_ADD=1
        for k in (13, 14, 16, 19, 21):
            bad += _rung_cases(rung_entry(k), ("-DDESC_ADD=1",))
        for name in ("fp8_promote_128", "fp8_wgmma"):
            for M, N, K in SIZES + SPLIT_SIZES[1:]:
                v = _fp8_option(name, M, N, K, ("-DF8_DESC_ADD=1",))
                bad += not v.startswith("PASS")
                print(f"@@end {name} -DF8_DESC_ADD=1 | M={M} N={N} K={K} | {v[:160]}", flush=True)
        return 1 if bad else 0
    if "--hilbert" in sys.argv:               # rungs built with the probe switch TILE_ORDER=1 (issue 25, session 31): the
        for k in (13, 14, 29, 30):            # Hilbert order where the units' grid is square (HILBERT_SIZES), else grouped
            bad += _rung_cases(rung_entry(k), ("-DTILE_ORDER=1",), HILBERT_SIZES)
        return 1 if bad else 0
    if "--uniform" in sys.argv:               # both kernels of the record with the probe switch F8_UNIFORM=1, on 128 CTAs
        for name in ("fp8_wgmma_store", "fp8_promote_2acc_lean"):
            for M, N, K in SIZES + SPLIT_SIZES[1:] + ((72, 136, 300), (1300, 3900, 100)):
                v = _fp8_option(name, M, N, K, ("-DF8_UNIFORM=1",))
                bad += not v.startswith("PASS")
                print(f"@@end {name} -DF8_UNIFORM=1 | M={M} N={N} K={K} | {v[:160]}", flush=True)
        return 1 if bad else 0
    if "--flow2" in sys.argv:                 # fp8_promote_2acc_lean with the probe switch F8_FLOW=2, on 128 CTAs: 1300 x 3900
        cases = SIZES + SPLIT_SIZES[1:] + ((72, 136, 300), (1300, 3900, 100), (1300, 3900, 256))    # (341 tiles):
        if "--primed" in sys.argv:            # only a small shape where CTAs issue a next tile's K-tile 0 early (144
            cases = ((1100, 2000, 256),)      # tiles of 2 K-tiles on 128 CTAs; racecheck ran out of time on 1300 x 3900)
        for M, N, K in cases:
            v = _fp8_option("fp8_promote_2acc_lean", M, N, K, ("-DF8_FLOW=2",))       # 1 and 2 K-tiles a tile
            bad += not v.startswith("PASS")
            print(f"@@end fp8_promote_2acc_lean -DF8_FLOW=2 | M={M} N={N} K={K} | {v[:160]}", flush=True)
        return 1 if bad else 0
    if "--tall" in sys.argv:                  # rungs 27-28 with the 256-row tile forced, 152, 128 and 192 wide
        from lab.labkit.rungs import tall_tile  # (at these sizes the launcher would build rung 14's tile)
        for k in (27, 28):
            for width in (152, 128, 192):
                bad += _rung_cases(*tall_tile(rung_entry(k), 256, width))
        return 1 if bad else 0
    if "--rungs" in sys.argv:                 # named rungs (e.g. just promoted): --rungs 23 24
        for k in map(int, sys.argv[sys.argv.index("--rungs") + 1:]):
            bad += _rung_cases(rung_entry(k))
        return 1 if bad else 0
    if "--tile-n" in sys.argv:                # rungs 25-26's TILE_N knob: a last box of B and of C partly outside the tile,
        for k in (25, 26):                    # B's boxes shared unevenly by a cluster (3 boxes in clusters of 4)
            for opts in (("-DTILE_N=152", "-DQUAD_CLUSTER=4"), ("-DTILE_N=200", "-DQUAD_CLUSTER=2")):
                bad += _rung_cases(rung_entry(k), opts)
        return 1 if bad else 0
    if "--pending" in sys.argv or "--fp8" in sys.argv:    # --fp8 NAME ...: named FP8 kernels (e.g. a new grid)
        import lab.labkit.fp8  # noqa: F401  (registers the kernels that lost)

        names = sys.argv[sys.argv.index("--fp8") + 1:] if "--fp8" in sys.argv else []
        for name in names:                    # K-tile counts 1 (K = 16, 49, 100), 8 (K = 1000) and 3 (K = 300); 1300 x 3900:
            for M, N, K in SIZES + SPLIT_SIZES[1:] + ((72, 136, 300), (1300, 3900, 100)):   # more tiles than SMs
                v = _fp8(name, M, N, K)
                bad += not v.startswith("PASS")
                print(f"@@end {name} | M={M} N={N} K={K} | {v[:160]}", flush=True)
        for spec in PENDING.values() if "--pending" in sys.argv else ():
            bad += _rung_cases(spec)
        return 1 if bad else 0
    for name in ("hopper_fp16_store", "hopper_split_k"):
        for M, N, K in SIZES + SPLIT_SIZES:
            v = _course_kernel(KERNELS[name], M, N, K)
            bad += not v.startswith("PASS")
            print(f"@@end {name} | M={M} N={N} K={K} parts={split_k_plan(M, N, K)[0]} | {v[:160]}", flush=True)
    for M, N, K in SIZES + SPLIT_SIZES + TAIL_SIZES:
        v = _course_kernel(KERNELS["hopper_tail_split"], M, N, K)
        bad += not v.startswith("PASS")
        dp, s, _ = tail_split_plan(M, N, K)
        print(f"@@end hopper_tail_split | M={M} N={N} K={K} whole={dp} parts={s} | {v[:160]}", flush=True)
    for spec in (KERNELS["hopper_skinny"], KERNELS["hopper_skinny_f32c"], *PENDING.values()):   # rungs 17-18, any pending
        bad += _rung_cases(spec)
    for M, N, K in SIZES + SPLIT_SIZES[1:]:
        v = _fp8("fp8_promote_pingpong", M, N, K)
        bad += not v.startswith("PASS")
        print(f"@@end fp8_promote_pingpong | M={M} N={N} K={K} | {v[:160]}", flush=True)
    from helpers.experiments.fp8_scaled import block_scaled_verdict

    for M, N, K in SIZES + SPLIT_SIZES[1:]:
        v = block_scaled_verdict(M, N, K)
        v = v if v.startswith(("PASS", "FAIL")) else ("PASS " if "error within" in v else "FAIL ") + v
        bad += not v.startswith("PASS")
        print(f"@@end fp8_block_scaled | M={M} N={N} K={K} | {v[:160]}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
