"""A device probe (issue 26): the check of lesson 7's FP8 kernels (helpers.experiments.fp8.check_fp8: worst-case
bounds and bit equality with the CPU model, every element, on the GPU) passes a kernel's C and rejects wrong results
at the sizes lesson 7 times (4096^3, 8192^3) and at an odd size whose tiles reuse the store buffers (2000 x 2600 x 300).
Each wrong result goes through the bounds alone (the model left out) and through the whole check. Wrong results:
zeros, C x 1.003, C x 1.1, -C, C's rows reversed, C rounded to FP16 (the wrong format), the C of the other
accumulator (fp8_promote_128 for a kernel without promotion, fp8_wgmma for a promoting one), and
helpers.check.local_mutations (one element one unit up, one element 1% off, a row copied, an edge tile).
tests/test_fp8_gemm.py does the same on the CPU at small odd shapes.

    python3 lab/probes/reject_wrong_fp8.py OUT.json [KERNEL ...]     (a Hopper GPU; default fp8_wgmma_store)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPES = [(2000, 2600, 300), (4096, 4096, 4096), (8192, 8192, 8192)]


def wrong_results(C, other_C, xp) -> dict:
    """The wrong results of one kernel's C (CuPy or numpy), each C's shape and dtype."""
    from helpers.check import local_mutations

    out = {"zeros": xp.zeros_like(C), "x1.003": C * C.dtype.type(1.003), "x1.1": C * C.dtype.type(1.1), "sign": -C,
           "rows reversed": xp.ascontiguousarray(C[::-1]), "rounded to FP16": C.astype(xp.float16).astype(C.dtype),
           "the other accumulator": other_C}
    out.update(local_mutations(C))
    return out


def one(kernel: str, shape) -> dict:
    import cupy

    from helpers.experiments.fp8 import check_fp8, random_inputs
    from helpers.fp8_gemm import encode_e4m3, launcher

    def bounds_alone(W):                  # check_fp8's bounds without its model (part 3)
        return check_fp8(kernel, W, gA, gB, backend="GPU", model=False)

    M, N, K = shape
    A, B = random_inputs(M, N, K, "normal", M + K)
    A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
    gA, gB = cupy.asarray(A), cupy.asarray(B)
    del A, B
    other = "fp8_wgmma" if "promote" in kernel else "fp8_promote_128"
    run_k, C = launcher(kernel, A8, Bt8)
    run_k()
    run_o, O = launcher(other, A8, Bt8)
    run_o()
    C, O = C[:, :N].copy(), O[:, :N].copy()
    good = check_fp8(kernel, C, gA, gB, backend="GPU")
    row = {"kernel": kernel, "shape": list(shape), "correct": bool(good.passed), "model": good.model,
           "verdict": good.verdict()[:300], "tolerance": f"{good.tol.value:.2e}",
           "other": other, "rejected": {}, "rejected_by_bounds": {}, "equal_to_C": []}
    print(kernel, shape, good.verdict()[:160], file=sys.stderr, flush=True)
    for what, W in wrong_results(C, O, cupy).items():
        if bool(cupy.array_equal(W, C)):
            row["equal_to_C"].append(what)                       # not a wrong result at this shape: say so, skip it
            continue
        chk = check_fp8(kernel, W, gA, gB, backend="GPU")
        row["rejected"][what] = not chk.passed
        row["rejected_by_bounds"][what] = not bounds_alone(W).passed
        print("  ", what, "rejected" if not chk.passed else "PASSED (a hole in the check)",
              "| bounds alone:", "rejected" if row["rejected_by_bounds"][what] else "passed", file=sys.stderr, flush=True)
    return row


def main(argv) -> int:
    if not hopper_here():
        return 2
    kernels = argv[1:] or ["fp8_wgmma_store"]
    rows = [one(k, s) for k in kernels for s in SHAPES]
    ok = all(r["correct"] and r["model"] == "identical" and all(r["rejected"].values()) for r in rows)
    Path(argv[0]).write_text(json.dumps({"rows": rows, "all_rejected_and_correct": ok}, indent=1))
    print("all correct, every wrong result rejected" if ok else "FAILED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
