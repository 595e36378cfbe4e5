"""A device probe (issue 26): the check of fp8_block_scaled (helpers.fp8_scaled.check_block_scaled: its worst-case
bound and its model, every element, on the GPU) passes the kernel's C at the largest size lesson 7 times it
(4096^3) and rejects wrong results there: the model's C with the scales ignored, with sa only, with sb's or sa's
K-blocks reversed, with each row given the next row's sa, with one scale per tensor (their means); and the
kernel's C with one element one unit up, or one NaN. Each wrong result is checked by the bound alone and by the
full check. tests/test_fp8_block_scaled.py does the same on the CPU at odd shapes.

    python3 lab/probes/reject_wrong_block_scaled.py OUT.json          (a Hopper GPU)"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
N = 4096


def main(argv) -> int:
    if not hopper_here():
        return 2
    import cupy

    from helpers.fp8_scaled import block_scaled_launcher, block_scaled_model_gpu as model, check_block_scaled
    from helpers.fp8_scaled import gpu_block_scaled_inputs

    t0 = time.time()
    A8, Bt8, sa, sb, Aq, Bq = gpu_block_scaled_inputs(N, N, N, 4096 + N)
    run, C = block_scaled_launcher(A8, Bt8, sa, sb)
    run()
    C = C[:, :N]
    good = check_block_scaled(C, Aq, Bq, sa, sb)
    out = {"shape": [N, N, N], "correct": bool(good.passed), "verdict": good.verdict()[:300], "rejected": {}}
    print("kernel's C:", good.verdict()[:200], file=sys.stderr, flush=True)
    one = cupy.ones_like
    wrong = {
        "scales ignored": lambda: model(Aq, Bq, one(sa), one(sb)),
        "sa only": lambda: model(Aq, Bq, sa, one(sb)),
        "sb's K-blocks reversed": lambda: model(Aq, Bq, sa, cupy.ascontiguousarray(sb[:, ::-1])),
        "sa's K-blocks reversed": lambda: model(Aq, Bq, cupy.ascontiguousarray(sa[:, ::-1]), sb),
        "sa of the next row": lambda: model(Aq, Bq, cupy.roll(sa, 1, axis=0), sb),
        "one scale per tensor (their means)": lambda: model(Aq, Bq, cupy.full_like(sa, sa.mean()),
                                                            cupy.full_like(sb, sb.mean())),
    }

    def one_up():
        W = C.copy()
        W[N // 2, N // 3] = cupy.nextafter(W[N // 2, N // 3], cupy.float32(cupy.inf))
        return W

    def one_nan():
        W = C.copy()
        W[-1, -1] = cupy.nan
        return W

    wrong.update({"one element one unit up": one_up, "one NaN": one_nan})
    for what, make in wrong.items():
        W = make()
        same = bool(cupy.array_equal(W, C))
        bound = not check_block_scaled(W, Aq, Bq, sa, sb, model=False).passed
        full = not check_block_scaled(W, Aq, Bq, sa, sb).passed
        out["rejected"][what] = {"equal to the kernel's C": same, "by the bound alone": bound, "by the check": full}
        print(f"{what}: rejected by the bound {bound}, by the check {full}", file=sys.stderr, flush=True)
        del W
    out["seconds"] = round(time.time() - t0, 1)
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    ok = out["correct"] and all(v["by the check"] and not v["equal to the kernel's C"] for v in out["rejected"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
