"""A device probe (issue 26): new FP8 kernels (default fp8_promote_pingpong) checked against their CPU model (the
probes, 20 random products, 1024^3) and timed in one run beside cuBLASLt (default and fast accumulation),
fp8_promote_128 and the kernels without promotion (helpers.experiments.fp8's run_* functions). Its output of
2026-12-01 is in results/nvidia-h200.json: experiments.fp8 (probes, random, match_1024, resources) and
experiments.fp8.speed_pingpong; that of 2026-12-02 (fp8_promote_2acc and fp8_promote_2acc_lean) in
experiments.fp8.speed_2acc, stored with labkit.fp8.store_new_kernels.

With --speed-only (session 19): the speed run alone, for kernels the record holds (timed again after a registry change),
in `--rounds N` alternating rounds (default 1); stored with labkit.fp8.store_speed.

    python3 lab/probes/fp8_pingpong.py OUT.json [--speed-only [--rounds N]] [KERNEL ...]          (a Hopper GPU)"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, int_option, run  # noqa: E402  (run as a script: ROOT first)
KERNELS = ["fp8_promote_pingpong"]
TIMED = ["fp8_wgmma", "fp8_wgmma_n128", "fp8_promote_128"]


def main(argv) -> int:
    if not hopper_here():
        return 2
    import lab.labkit.fp8  # noqa: F401  (registers the kernels that lost, e.g. fp8_promote_pingpong, fp8_promote_2acc)
    from helpers.compile import get_arch_kernel
    from helpers.experiments import fp8 as X
    from helpers.fp8_gemm import FP8_KERNELS

    rounds = int_option(argv, "--rounds", 1, one=True)
    skip = {i + 1 for i, a in enumerate(argv) if a == "--rounds"}
    names = [a for i, a in enumerate(argv[1:], 1) if not a.startswith("--") and i not in skip] or KERNELS
    if "--speed-only" in argv:
        out = {"kernels": names, "rounds": rounds, "speed": X.run_speed(TIMED + names, rounds=rounds)}
        for r in out["speed"]:
            print(r["n"], r["kernel"], round(r.get("tflops") or 0), r.get("sm_mhz"), r.get("round_mhz"),
                  r.get("check_passed"), file=sys.stderr, flush=True)
        Path(argv[0]).write_text(json.dumps(out, indent=1))
        return 0 if all(r.get("check_passed", True) for r in out["speed"]) else 1
    t0 = time.time()
    out = {"kernels": names, "resources": {}}
    for k in names:
        kern = get_arch_kernel(FP8_KERNELS[k].file, k, (9, 0), options=FP8_KERNELS[k].build_options())
        out["resources"][k] = {"regs": int(kern.num_regs), "spills": int(kern.local_size_bytes), "smem": FP8_KERNELS[k].smem}
    out["probes"] = X.run_probes(names)
    out["match_1024"] = X.run_match_1024(names)
    out["random"] = X.run_random(names)
    wrong = sum(out["probes"]["model_mismatches"][k] for k in names) + sum(
        r["mismatches"] for r in out["match_1024"] + out["random"])
    print(f"elements unlike the model: {wrong} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    out["speed"] = X.run_speed(TIMED + names)
    for r in out["speed"]:
        print(r["n"], r["kernel"], round(r.get("tflops") or 0), r.get("sm_mhz"), r.get("check_passed"), r.get("path"),
              file=sys.stderr, flush=True)
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 1 if wrong or not all(r.get("check_passed", True) for r in out["speed"]) else 0


if __name__ == "__main__":
    run(main, __doc__)
