"""A device probe: the check of lesson 6's FP16-C rungs (14, 15) rejects wrong results at the largest sizes the
course times them at, with the model on the GPU comparing every element: rung 14 at 8192^3, rung 15 at
128 x 8192 x 8192 (K in 4 parts), rung 16 at 5000^3 (its last wave's 4 units in 9 parts); and the skinny rungs at
8192^3: 17, 19 and 21 (FP16 C), 18, 20 and 22 (FP32 C); rungs 25-26 and 29-30 (the C^T tile, where the launcher builds
it) at 5000^3. Wrong results: zeros, C x 1.003, another rung's C where it sums in another
order (at 8192^3 rung 15 does not split K, and its C equals rung 14's; rungs 17, 19 and 21 sum as 14 does, 18, 20 and 22 as 13),
for FP32 C the same C rounded to FP16 (the wrong format), and helpers.check.local_mutations (one element one unit
up, one element 1% off, a row copied, an edge tile).

    python3 lab/probes/reject_wrong_fp16c.py OUT.json [RUNG ...]    (a Hopper GPU; each rung in a child process)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
CASES = [(14, (8192, 8192, 8192)), (15, (128, 8192, 8192)), (16, (5000, 5000, 5000)), (17, (8192, 8192, 8192)),
         (18, (8192, 8192, 8192)), (19, (8192, 8192, 8192)), (20, (8192, 8192, 8192)), (21, (8192, 8192, 8192)),
         (22, (8192, 8192, 8192)), (23, (8192, 8192, 8192)), (24, (8192, 8192, 8192)), (25, (5000, 5000, 5000)),
         (26, (5000, 5000, 5000)), (29, (5000, 5000, 5000)), (30, (5000, 5000, 5000))]
OTHER = {14: 15, 15: 14, 16: 14, 17: 14, 18: 13, 19: 14, 20: 13, 21: 14, 22: 13, 23: 14, 24: 13, 25: 15, 26: 13,
         29: 15, 30: 13}     # the rung whose C is the wrong result of another summation order


def one(k: int, shape) -> dict:
    """GPU, in a child: rung k's C at `shape`, checked, then every wrong result checked."""
    import cupy

    from helpers.check import local_mutations
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm

    M, N, K = shape
    r, other = rung_entry(k), rung_entry(OTHER[k])
    A, B = _inputs(0, M, N, K)
    ref = reference_gemm(A, B)
    Cs = {}
    for spec in (r, other):
        run, C, _ = launcher(spec, A, B)
        run()
        cupy.cuda.get_current_stream().synchronize()
        Cs[spec.rung] = C
    good = Cs[k]
    out = {"rung": k, "shape": list(shape), "correct": bool(r.check(good, A, B, reference=ref, backend="GPU").passed)}
    wrong = {"zeros": cupy.zeros_like(good), "x1.003": (good.astype(cupy.float32) * 1.003).astype(good.dtype),
             **local_mutations(good)}
    if good.dtype == cupy.float32:
        wrong["rounded to FP16"] = good.astype(cupy.float16).astype(cupy.float32)
    # the other rung's C is a wrong result only where it sums in another order (rung 15 splits K here)
    bits = cupy.uint16 if good.dtype == cupy.float16 else cupy.uint32
    same = bool(good.shape == Cs[other.rung].shape and cupy.array_equal(good.view(bits), Cs[other.rung].view(bits)))
    out[f"rung {other.rung}'s C bit-identical"] = same
    if not same:
        wrong[f"rung {other.rung}'s C"] = Cs[other.rung]
    out["rejected"] = {w: not bool(r.check(C, A, B, reference=ref, backend="GPU").passed) for w, C in wrong.items()}
    return out


def main(argv) -> int:
    only = {int(x) for x in argv[1:]}
    if only - {k for k, _ in CASES}:                # a rung with no case would pass with nothing checked
        print(f"no case for rung(s) {sorted(only - {k for k, _ in CASES})}: add them to CASES", file=sys.stderr)
        return 1
    if not hopper_here():
        return 2
    from helpers.isolate import run_isolated
    rows = [run_isolated("lab.probes.reject_wrong_fp16c:one", k, list(s), timeout=300) for k, s in CASES
            if not only or k in only]
    for row in rows:
        print(row, file=sys.stderr)
    Path(argv[0]).write_text(json.dumps(rows, indent=1))
    ok = all(isinstance(x, dict) and x.get("correct") and all(x.get("rejected", {}).values()) and x["rejected"]
             for x in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
