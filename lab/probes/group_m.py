"""A device probe (issue 60): does the order of a wave's tiles decide rung 25's time where rows start inside a
128-byte line? On the H100 at 7000^3 (rows of 14000 bytes), Nsight Compute found the kernel rung 29 builds there
(rung 25's, hopper_quad_cluster) reading 2.60 GB from DRAM against 0.98 GB with 128-byte aligned rows, while cuBLAS
read 0.78 GB at both (lab/logs/ncu-row-alignment-7000-nvidia-h100.log). GROUP_M sets how many tile rows a wave
walks before the next column: it trades rows of A against columns of B that a wave touches.

Rung 25 with GROUP_M in GROUPS (clusters of 4 forced; at 7000^3 the launcher builds clusters of 2), rung 25 as its launcher
builds it and the rungs --beside names (default 14: clusters of 2), each checked (float64 and the model where the
knobs are forced) and then timed in alternating rounds (lab.probes.common.alternating: cold L2, CUDA events, clocks)
beside cuBLAS writing FP16 C, at each shape.

Predicted before the run (H100): GROUP_M=16 (a wave of 132 tiles of 128x256 covers about 2048 rows of A + 2112 columns
of B, against 1024 + 4224 at GROUP_M=8) at least 8% faster at 7000^3; GROUP_M=4 (512 + 8448) at least 5% slower.

Second run, predicted before it (H100): where rows start inside a line and the wave model makes the launcher build
clusters of 2 (7000^3, 6000^3, 6008^3, 4104 x 8200 x 2056: 14, 10, 10 and 10 waves of clusters of 4 against 12, 9, 9
and 9 of clusters of 2), clusters of 4 forced run at least 1.05x faster than the build; at 3000^3, where the build is
clusters of 4 already, within 2% of it. (Measured: x1.08-1.10 at 7000^3, x1.06-1.09 at 6008^3, x1.03 at 4104 x 8200
x 2056, x0.98-1.00 at 6000^3, the same at 3000^3: lab/README.md.)

--ct adds rung 29 (with --rung 26: rung 30) with its C^T tile forced (CT_M=160): the rule for clusters of 4 also
decides what rungs 29-30 weigh their C^T tile against (helpers.kernels.ct_waves_ratio: at 7000^3 the wave model gives
the C^T tile x0.96 over rung 25's clusters of 2 and x1.12 over its clusters of 4), so a new rule needs all three timed.

For the H200, predicted before its run (same four shapes, --groups 8): clusters of 4 forced at least 3% slower than the
build at 7000^3 (14 waves against 12, and the H200's 1.4x DRAM bandwidth hides most of what clusters of 2 cost the
H100 where rows start inside a sector: its record has x0.98 of cuBLAS there), within 3% of it at 6008^3 and
4104 x 8200 x 2056 (10 waves against 9). (Measured, FP16 C: x0.91 at 7000^3, held; x0.96 at 6008^3, missed by
0.6%; x0.97 at 4104 x 8200 x 2056, held; x0.98 at 6000^3. The C^T tile forced: x0.97, x1.03, x1.05 and x1.04 of the
build; FP32 C (rung 30 over rung 26's build): x0.98, x1.02, x1.03, x1.01: logs/group-m-ct-*-nvidia-h200.*; each
the quotient of two median ratios to cuBLAS. Round by round against the build: clusters of 4 x0.94, x0.93 (the miss then 3.6%),
x0.99, x0.97; the C^T tile x0.99, x1.03, x1.05, x1.04.)

For the H100's --ct run, predicted before it (same four shapes): the C^T tile forced at least 2% faster than the
build at 6008^3, 4104 x 8200 x 2056 and 6000^3, as on the H200, and slower than clusters of 4 forced at 7000^3 (its
clusters of 2 ask for rows that start inside a sector as rung 25's pairs do).
(Measured, 2026-12-08, with the course's tensor maps asking L2 for 128 bytes per miss rather than the 256 the
prediction was written for: logs/group-m-ct-128b-nvidia-h100.*. The C^T tile x1.03 of the build at 6008^3, x1.01 at
4104 x 8200 x 2056, x1.06 at 6000^3: held at two of three; at 7000^3 x0.99 of the build and faster than clusters of 4,
which lost everywhere with 128-byte maps (x0.91-0.94 of the build): wrong. See lab/README.md, "The H100".)

    python3 lab/probes/group_m.py OUT.json [--shapes 7000x7000x7000,...] [--groups 4,8,16] [--rounds 5] [--rung 25]
                                   [--beside 14] [--ct]   (--rung 26: FP32 C, beside rung 13 by default)
                                                                            (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, knob_variant, round_rows, run  # noqa: E402  (run as a script: ROOT first)
from lab.probes.row_alignment import _option  # noqa: E402


def main(argv) -> int:
    if not hopper_here():
        return 2
    args = list(argv)
    shapes = [[int(v) for v in s.split("x")] for s in _option(args, "--shapes", "7000x7000x7000").split(",")]
    groups = [int(v) for v in _option(args, "--groups", "4,8,16").split(",")]
    rounds = int(_option(args, "--rounds", "5"))
    rung = int(_option(args, "--rung", "25"))             # 25 (FP16 C) or 26 (FP32 C)
    beside = [int(v) for v in _option(args, "--beside", "14" if rung == 25 else "13").split(",") if v]
    ct = [rung + 4] if "--ct" in args else []            # rung 29 (30) with its C^T tile forced (CT_M=160)
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import build_for, launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops, round_ratio

    spec = rung_entry(rung)
    forced = [(f"G{g}", rung, {"GROUP_M": g, "CLUSTER_M": 4}) for g in groups] + [(f"ct{r}", r, {"CT_M": 160})
                                                                                  for r in ct]
    out, bad = [], 0
    for shape in shapes:
        M, N, K = shape
        A, B = _inputs(70, M, N, K)
        ref = reference_gemm(A, B)
        timed, heads = {}, {}
        for key, r, knobs in forced:
            entry, opts, _ = knob_variant(r, knobs)
            fn, C, _ = launcher(entry, A, B, options=opts)
            C.fill(cupy.nan)
            fn()
            chk = rung_entry(r).check(C[:M, :N], A, B, reference=ref, backend="GPU")
            bad += not (chk.passed and chk.model == "identical")
            said = " ".join(f"{k}={v}" for k, v in knobs.items())
            heads[key] = {"what": f"rung {r} {said} ({entry.name})", "passed": bool(chk.passed), "model": chk.model}
            timed[key] = fn
        for r in (rung, *beside):               # the rung as its launcher builds it, and the rungs asked for beside it
            fn, C, _ = launcher(rung_entry(r), A, B)
            built = build_for(rung_entry(r), M, N, 2 * K, 2 * N)[0]
            heads[f"r{r}"] = {"what": f"rung {r} as built: {built.name}, clusters of {(built.cluster or (1,))[0]}"}
            timed[f"r{r}"] = fn
        Cc, cub = cupy.empty((M, N), dtype=spec.out_dtype), same_c(spec.out_dtype)
        heads["cublas"] = {"what": f"cuBLAS, {'FP16' if spec.out_dtype == 'float16' else 'FP32'} C"}
        timed["cublas"] = lambda cub=cub, A=A, B=B, Cc=Cc: cub.run(A, B, Cc)
        rows = round_rows(timed, gemm_flops(M, N, K), rounds, lambda k: {"shape": shape, **heads[k]})
        cb = next(r for r in rows if r["what"].startswith("cuBLAS"))["round_ms"]
        for r in rows:
            r["vs_cublas"] = round_ratio(r["round_ms"], cb)["ratio"]     # the median of round-by-round ratios
            print(shape, r["what"], f"{r['median_ms']:.4f} ms", f"x{r['vs_cublas']:.3f} of cuBLAS",
                  r.get("passed", ""), r.get("model", ""), file=sys.stderr, flush=True)
        out += rows
        Path(argv[0]).write_text(json.dumps({"rows": out}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
