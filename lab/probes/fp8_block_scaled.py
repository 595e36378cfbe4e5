"""A device probe (issue 26): fp8_block_scaled, DeepSeek-V3's fine-grained scales (1 x 128 activation tiles,
128 x 128 weight blocks) applied where fp8_promote_128 promotes its partial sums. On a Hopper GPU it compiles the
kernel and reports its registers and spills; checks it against its bound and its model, every element, at odd
shapes (40x24x256, 40x24x200, 257x520x136, 1000x1064x1000), at 1024^3 and at 4096^3 (the model on the GPU; the
numpy model too at the small shapes); times it at 4096^3 and 8192^3 (cold L2, CUDA events, median of many, clocks
beside each) beside cuBLASLt's FP8 GEMM (default accumulation, per-tensor), fp8_promote_128 and
fp8_promote_pingpong on the same bytes; and computes the error table of per-tensor against block scaling on the
GPU (helpers.fp8_scaled.scaling_error_table). helpers.experiments.fp8_scaled.run_block_scaled does the work; its output
goes to OUT.json (store it with labkit.fp8.store_block_scaled) and a summary to stderr.

    python3 lab/probes/fp8_block_scaled.py OUT.json          (a Hopper GPU)"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
KERNEL = "fp8_block_scaled"


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.experiments import fp8_scaled as X

    t0 = time.time()
    out = X.run_block_scaled()
    res = out["resources"][KERNEL]
    print(f"{KERNEL}: {res['regs']} registers, {res['spills']} bytes of local memory (spills)", file=sys.stderr)
    for r in out["checks"]:
        print(f"check {r['M']}x{r['N']}x{r['K']} {r['inputs']}: {'pass' if r['check_passed'] else 'FAIL'}, "
              f"{r['mismatches']} of {r['elements']} unlike the model ({r['model_where']})"
              + (f", {r['cpu_model_mismatches']} unlike the numpy model" if "cpu_model_mismatches" in r else "")
              + f", {r['seconds']} s", file=sys.stderr)
    for r in out["speed"]:
        print(r["n"], r["kernel"], round(r.get("tflops") or 0), "TFLOP/s", r.get("sm_mhz"), "MHz",
              r.get("check_passed", ""), r.get("path", r.get("skipped", "")), file=sys.stderr)
    for key in ("errors", "errors_large"):
        for r in out[key]:
            print(f"{key} {r['M']}x{r['N']}x{r['K']} {r['inputs']:22s} {r['scaling']:28s} median rel. "
                  f"{r['median rel. error']:.3g}, median |err|/(|A||B|) {r['median |err|/(|A||B|)']:.3g}",
                  file=sys.stderr)
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    print(f"wrote {argv[0]} ({time.time() - t0:.0f} s)", file=sys.stderr)
    ok = res["spills"] == 0 and all(r["check_passed"] and r.get("cpu_model_mismatches", 0) == 0 for r in out["checks"])
    ok = ok and all(r.get("check_passed", True) and not r.get("nan") for r in out["speed"])
    return 0 if ok else 1


if __name__ == "__main__":
    run(main, __doc__)
