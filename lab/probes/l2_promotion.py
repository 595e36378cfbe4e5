"""A device probe (issue 60): does the L2 promotion written into the TMA tensor maps decide what rows that start 16
bytes into a 32-byte sector cost the H100? When it was written, every tensor map the course built
(helpers.hopper.tensor_map_2d) asked L2 to fetch 256 bytes around each miss (CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
CUTLASS's TMA copies ask for 128 (cute's make_tma_copy_desc), and after its run so does the course. The map's
promotion changes only how much L2 fetches from DRAM around a miss, never which bytes the kernel reads, so every C
is the same; only the time can differ.

Why it might matter where rows start inside a line: a CTA of rung 25 reads 512 bytes of each row of B per K-tile
(its 256 columns) and 128 bytes of each row of A. With rows of 14080 bytes (7040 halves, 55 x 256) every such piece
lies in whole 256-byte chunks. With rows of 14000 bytes (7000^3) row r starts 176 r mod 256 bytes into a chunk,
every multiple of 16 in turn, so the 512 bytes of B touch three chunks in 15 rows of 16 (768 bytes fetched at
256-byte promotion, against 512 or 544 at sector granularity), and the 128 bytes of A cross into a second chunk in 7
of 16 pairs of a row and a K-tile. Where L2 holds what a wave reads (aligned rows, or the H200's bandwidth), the
extra bytes are the next K-tile's or the neighbouring CTA's and are used; where a persistent kernel's CTAs drift
apart in K and the rows and columns in flight exceed L2 (7000^3: about 14 MB of A and 59 MB of B for a wave of 128 x
256 tiles in GROUP_M=8 order, against 50 MB of L2), what was fetched around a miss may be evicted before it is read.
Nsight Compute found rung 25's kernel (in clusters of 2, as built there) reading 2.60 GB from DRAM at 7000^3 against
0.98 GB with rows of 14080 bytes, while cuBLAS read 0.78 GB at both (lab/logs/ncu-row-alignment-7000-quad-
nvidia-h100.*).

Each shape: the rung as its launcher builds it (default 25, FP16 C; --rung 26: FP32 C) with each promotion in
--promotions (NONE, L2_64B, L2_128B, L2_256B), each checked against float64 and the model (C poisoned with NaN
first), then all timed in alternating rounds beside cuBLAS writing the same C (lab.probes.common.round_rows: cold
L2, CUDA events, clocks and power beside each round).

Predicted before any run (H100, rung 25, FP16 C): at 7000^3 and 6008^3 (rows of 14000 and 12016 bytes, 16 bytes
into a sector) L2_128B at least 5% faster than L2_256B, and NONE within 3% of L2_128B; at 5000^3 (rows of 10000
bytes; a wave's rows and columns, about 10 + 42 MB, just over L2) L2_128B at least 3% faster; at 4096^3 (rows in
whole lines) every promotion within 2% of L2_256B. On the H200, every promotion within 3% of L2_256B at every shape
(its record has 7000^3 at x0.99 of cuBLAS, both C types, with L2_256B).

Measured on the H100 (2026-12-08, logs/l2-promotion-*nvidia-h100.*; speed over L2_256B, median of round-by-round
ratios): L2_128B x1.22 at 7000^3 and x1.11 at 6008^3 (held), NONE within 0.6% of L2_128B in median time (held),
x1.01 at 5000^3 (missed), every promotion within 2% at 4096^3 (held) and within 2.3% at 8192^3, 6144^3 and 2048^3;
rung 26 (FP32 C) x1.16 at 7000^3, x1.00 at 5000^3. The course now encodes L2_128B (helpers.hopper.L2_PROMOTION).
The H200 is not yet timed.

    python3 lab/probes/l2_promotion.py OUT.json [--shapes 7000x7000x7000,...] [--promotions NONE,L2_128B,L2_256B]
                                                [--rounds 5] [--rung 25]   (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, round_rows, run  # noqa: E402  (run as a script: ROOT first)
from lab.probes.row_alignment import _option  # noqa: E402

PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")
SHAPES = "7000x7000x7000,6008x6008x6008,5000x5000x5000,4096x4096x4096"


def promotion_in(args, index: int, promotion: str) -> tuple:
    """cuTensorMapEncodeTiled's positional arguments `args` with its l2Promotion (at `index`) replaced by the
    enum member named CU_TENSOR_MAP_L2_PROMOTION_<promotion>, taken from the type of the one it replaces."""
    args = list(args)
    kind = type(args[index])
    if kind.__name__ != "CUtensorMapL2promotion":       # the call's arguments moved: rewrite nothing
        raise TypeError(f"argument {index} of cuTensorMapEncodeTiled is a {kind.__name__}, not its l2Promotion")
    args[index] = getattr(kind, f"CU_TENSOR_MAP_L2_PROMOTION_{promotion}")
    return tuple(args)


class Promoting:
    """Within `with Promoting(d, promotion):`, every tensor map the driver module `d` encodes asks for `promotion`
    (one of PROMOTIONS); the driver's function is restored on leaving. Counts the maps it rewrote in .maps."""
    INDEX = 9          # l2Promotion: cuda-bindings' cuTensorMapEncodeTiled has no tensorMap out-argument

    def __init__(self, d, promotion: str):
        if promotion not in PROMOTIONS:
            raise ValueError(f"promotion {promotion!r}: one of {', '.join(PROMOTIONS)}")
        self.d, self.promotion, self.maps = d, promotion, 0

    def __enter__(self):
        self.plain = self.d.cuTensorMapEncodeTiled

        def encode(*args):
            self.maps += 1
            return self.plain(*promotion_in(args, self.INDEX, self.promotion))

        self.d.cuTensorMapEncodeTiled = encode
        return self

    def __exit__(self, *exc):
        self.d.cuTensorMapEncodeTiled = self.plain
        return False


def main(argv) -> int:
    if not hopper_here():
        return 2
    args = list(argv)
    shapes = [[int(v) for v in s.split("x")] for s in _option(args, "--shapes", SHAPES).split(",")]
    promotions = _option(args, "--promotions", ",".join(PROMOTIONS)).split(",")
    rounds = int(_option(args, "--rounds", "5"))
    rung = int(_option(args, "--rung", "25"))             # 25 (FP16 C) or 26 (FP32 C)
    bad_names = [p for p in promotions if p not in PROMOTIONS]
    if bad_names:
        print(f"--promotions: {', '.join(bad_names)} not among {', '.join(PROMOTIONS)}", file=sys.stderr)
        return 2
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.hopper import driver
    from helpers.kernels import rung_entry
    from helpers.launch import build_for, launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops, round_ratio

    d = driver("the L2 promotion probe")
    spec = rung_entry(rung)
    out, bad = [], 0
    for shape in shapes:
        M, N, K = shape
        A, B = _inputs(70, M, N, K)
        ref = reference_gemm(A, B)
        built = build_for(spec, M, N, 2 * K, 2 * N)[0]
        timed, heads = {}, {}
        for p in promotions:
            with Promoting(d, p) as pm:
                fn, C, _ = launcher(spec, A, B)
            if pm.maps < 2:
                print(f"{p}: the launcher encoded {pm.maps} tensor maps (A and B expected): probe invalid",
                      file=sys.stderr)
                return 1
            C.fill(cupy.nan)
            fn()
            chk = spec.check(C[:M, :N], A, B, reference=ref, backend="GPU")
            bad += not (chk.passed and chk.model == "identical")
            heads[p] = {"what": f"rung {rung} ({built.name}, clusters of {built.cluster_ctas}), {p}",
                        "promotion": p, "maps": pm.maps, "passed": bool(chk.passed), "model": chk.model}
            timed[p] = fn
        Cc, cub = cupy.empty((M, N), dtype=spec.out_dtype), same_c(spec.out_dtype)
        heads["cublas"] = {"what": f"cuBLAS, {'FP16' if spec.out_dtype == 'float16' else 'FP32'} C"}
        timed["cublas"] = lambda cub=cub, A=A, B=B, Cc=Cc: cub.run(A, B, Cc)
        rows = round_rows(timed, gemm_flops(M, N, K), rounds, lambda k: {"shape": shape, **heads[k]})
        cb = next(r for r in rows if r["what"].startswith("cuBLAS"))["round_ms"]
        base = next((r for r in rows if r.get("promotion") == "L2_256B"), None)
        for r in rows:
            r["vs_cublas"] = round_ratio(r["round_ms"], cb)["ratio"]     # the median of round-by-round ratios
            if base is not None and "promotion" in r:
                r["vs_256b"] = round_ratio(r["round_ms"], base["round_ms"])["ratio"]
            print(shape, r["what"], f"{r['median_ms']:.4f} ms", f"x{r['vs_cublas']:.3f} of cuBLAS",
                  f"x{r['vs_256b']:.3f} of L2_256B" if "vs_256b" in r else "", r.get("passed", ""),
                  r.get("model", ""), file=sys.stderr, flush=True)
        out += rows
        Path(args[0]).write_text(json.dumps({"rows": out}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
