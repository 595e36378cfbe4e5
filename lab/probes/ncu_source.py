"""A device probe (issues 25, 26): where a kernel's warps wait, instruction by instruction.

Nsight Compute's warp-state sampling (sections SourceCounters, WarpStateStats, SchedulerStats) on one launch of each
target, clocks not locked; each report's SASS page (every instruction with its stall samples by reason) and details
page are written as CSV to OUT_DIR, for reading without a GPU; `summary` keeps what the lessons use (the listings of
cuBLAS's kernels stay out of the repository). Set m128 (128 x 8192 x 8192, lesson 6, Appendix D): rung 17 with the
wait hint (WAIT_HINT=1), cuBLAS's FP16-C kernel, rung 19 (one consumer warpgroup: --only rung19). Set fp8 (4096^3, lesson 7):
fp8_promote_128, fp8_wgmma and cuBLASLt's FP8 kernel with default accumulation (and fp8_promote_2acc, fp8_lean,
fp8_lean_flow, fp8_lean_flow2, fp8_lean_uniform, fp8_store, fp8_store_uniform, fp8_promote_256 (F8_PERIOD=2, the
default) and fp8_promote_256_first (F8_PERIOD=0): --only. Session 26 also sampled F8_PERIOD=1's build as
fp8_promote_256_period (it left with its code: commit 17ad692) and F8_PERIOD=2's as fp8_promote_256_period2, which is
fp8_promote_256 now).

    python3 lab/probes/ncu_source.py OUT_DIR [--set m128|fp8] [--only T1,T2]   (a Hopper GPU, COURSE_DEVICE=gpu, ncu)
    python3 lab/probes/ncu_source.py launch TARGET              (what ncu runs)
    python3 lab/probes/ncu_source.py summary DIR                (each TARGET.source.csv in DIR, summarised as JSON)"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import fp8_research_source, hopper_here, run  # noqa: E402  (run as a script: ROOT first)
# target -> (the kernel ncu samples, the shape); --set fp8: the FP8 kernels of issue 26 at 4096^3
SETS = {"m128": {"rung17_hint": ("hopper_skinny", (128, 8192, 8192)), "cublas_fp16c": ("regex:nvjet", (128, 8192, 8192)),
                 "rung19": ("hopper_skinny_one", (128, 8192, 8192))},
        "fp8": {"fp8_promote_128": ("fp8_promote_128", (4096,) * 3), "fp8_wgmma": ("fp8_wgmma", (4096,) * 3),
                "cublaslt_fp8_default": ("regex:nvjet", (4096,) * 3),
                "fp8_promote_2acc": ("fp8_promote_2acc", (4096,) * 3),
                "fp8_lean": ("fp8_promote_2acc_lean", (4096,) * 3),          # session 19: the registry's build (128
                "fp8_lean_flow": ("fp8_promote_2acc_lean", (4096,) * 3),     # CTAs) and its F8_FLOW=1 build: --only
                "fp8_lean_flow2": ("fp8_promote_2acc_lean", (4096,) * 3),    # session 20: F8_FLOW=2 (commit 3c26c11)
                "fp8_lean_uniform": ("fp8_promote_2acc_lean", (4096,) * 3),  # session 20: F8_UNIFORM=1 (run at
                "fp8_store": ("fp8_wgmma_store", (4096,) * 3),               # e3397d3; both kernels pass UNIFORM since:
                # fp8_lean and fp8_store are now the same code as their _uniform builds)
                "fp8_store_uniform": ("fp8_wgmma_store", (4096,) * 3),
                # session 26: fp8_promote_256 as built (F8_PERIOD=2) and as first recorded (F8_PERIOD=0: the wait
                # ptxas injects, C7517)
                "fp8_promote_256": ("fp8_promote_256", (4096,) * 3),
                "fp8_promote_256_first": ("fp8_promote_256", (4096,) * 3)}}
# NVRTC switches of a target's build (the probe switch F8_FLOW of lab/kernels/fp8_sm90a_research.cu)
OPTIONS = {"fp8_lean_flow": ("-DF8_FLOW=1",), "fp8_lean_flow2": ("-DF8_FLOW=2",), "fp8_lean_uniform": ("-DF8_UNIFORM=1",),
           "fp8_store_uniform": ("-DF8_UNIFORM=1",), "fp8_promote_256_first": ("-DF8_PERIOD=0",)}
TARGETS = {t: v for s in SETS.values() for t, v in s.items()}
SECTIONS = ("SourceCounters", "WarpStateStats", "SchedulerStats")


def launch(target: str) -> None:
    """Two launches of `target` at its shape (the first compiles and warms up; ncu profiles the second)."""
    import cupy

    M, N, K = TARGETS[target][1]
    if target.startswith(("fp8", "cublaslt")):
        import lab.labkit.fp8  # noqa: F401  (registers the kernels that lost, e.g. fp8_promote_pingpong, fp8_promote_2acc)
        from helpers.experiments.fp8 import random_inputs
        from helpers.fp8_gemm import cublaslt_fp8, encode_e4m3, launcher as fp8_launcher

        A, B = random_inputs(M, N, K, "normal", M)
        A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
        run = (cublaslt_fp8(A8, Bt8, False)[0] if target.startswith("cublaslt")
               else fp8_launcher(TARGETS[target][0], A8, Bt8, options=OPTIONS.get(target, ()),
                                 source=fp8_research_source(TARGETS[target][0], OPTIONS.get(target, ())))[0])
    else:
        from helpers.experiments.ladder import _inputs

        A, B = _inputs(0, M, N, K)
        if target == "cublas_fp16c":
            from helpers.cublas import same_c

            C, cub = cupy.empty((M, N), dtype=cupy.float16), same_c("float16")
            run = lambda: cub.run(A, B, C)    # noqa: E731
        else:
            from helpers.kernels import rung_entry
            from helpers.launch import launcher

            rung = {"rung17_hint": 17, "rung19": 19}[target]
            run, _, _ = launcher(rung_entry(rung), A, B, options=("-DSKINNY_WAIT=1",) if rung == 17 else ())
    for _ in range(2):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    print(f"launched {target} at {M}x{N}x{K}", flush=True)


def summary(source_csv: str) -> dict:
    """What one report's SASS page says, without the listing: warp-level instructions executed, in all and by opcode
    (the twelve most executed, by the opcode's first word: FADD, QGMMA, ...), the wgmma instructions (HGMMA for FP16
    inputs, QGMMA for FP8: distinct addresses, executions of each, their shapes), and the share of stall samples by
    reason, overall and at the five addresses with the most samples (each with its opcode)."""
    import csv
    import io
    from collections import Counter

    rows = list(csv.reader(io.StringIO(source_csv)))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    cols = rows[head]
    data = [dict(zip(cols, r)) for r in rows[head + 1:] if len(r) == len(cols)]

    def num(v):
        v = (v or "").replace(",", "").strip()
        return float(v) if v not in ("", "-") else 0.0

    def words(r):                      # the instruction past a predicate (@P0 ...): opcode, then operands
        w = r["Source"].split()
        return w[1:] if w and w[0].startswith("@") else w

    def opcode(r):                     # the opcode with its suffixes
        return (words(r) or [""])[0]

    def opcode_args(r):                # what follows the opcode
        return " ".join(words(r)[1:])

    stalls = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    samples = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in data) or 1.0
    gm = [r for r in data if opcode(r).split(".")[0] in ("HGMMA", "QGMMA")]
    by_reason = {c[6:]: sum(num(r[c]) for r in data) / samples for c in stalls}
    ops = Counter()
    for r in data:
        ops[opcode(r).split(".")[0]] += num(r["Instructions Executed"])
    top = sorted(data, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[:5]
    # mbarrier waits: each SYNCS.PHASECHK ... TRYWAIT that runs (executions > 0) and is followed by its branch (the
    # spin: a warp that finds the phase not yet complete is sampled on that branch, waiting for the TRYWAIT's
    # predicate): its operand, executions and the share of samples on the pair. In the FP8 kernels the one
    # executed most is the consumers' wait for a full stage, the next the producer's wait for an empty one.
    waits = []
    for i, r in enumerate(data[:-1]):
        if opcode(r).startswith("SYNCS.PHASECHK") and num(r["Instructions Executed"]) > 0 \
                and opcode(data[i + 1]).startswith("BRA"):
            pair = num(r["Warp Stall Sampling (All Samples)"]) + num(data[i + 1]["Warp Stall Sampling (All Samples)"])
            waits.append({"operand": opcode_args(r).split(",")[1].strip(), "executions": num(r["Instructions Executed"]),
                          "share": round(pair / samples, 4)})
    waits.sort(key=lambda w: -w["executions"])
    return {"warp_instructions": sum(num(r["Instructions Executed"]) for r in data),
            "opcodes": {k: v for k, v in ops.most_common(12) if v > 0},
            "gmma_addresses": len(gm), "gmma_executions": sorted({num(r["Instructions Executed"]) for r in gm}),
            "gmma_shapes": sorted({opcode(r).split(".", 1)[1] for r in gm}),
            "stall_share": {k: round(v, 3) for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1]) if v > 0.01},
            "mbarrier_waits": waits,
            # every wgmma wait (WARPGROUP.DEPBAR.LE gsb0, N): its N, executions and share of the stall samples
            "wgmma_waits": [{"le": opcode_args(r).split(",")[-1].strip().rstrip(";").strip(),
                             "executions": num(r["Instructions Executed"]),
                             "share": round(num(r["Warp Stall Sampling (All Samples)"]) / samples, 4)}
                            for r in data if opcode(r).startswith("WARPGROUP.DEPBAR")],
            "top_addresses": [{"opcode": opcode(r), "share": round(num(r["Warp Stall Sampling (All Samples)"]) / samples, 3),
                               "executions": num(r["Instructions Executed"])} for r in top]}


def kernel_name(ncu_log: str) -> str | None:
    """The kernel ncu profiled, from its log ('==PROF== Profiling "NAME": ...')."""
    m = re.search(r'==PROF== Profiling "([^"]+)"', ncu_log)
    return m.group(1) if m else None


def main(argv) -> int:
    sys.path.insert(0, str(ROOT))
    if argv and argv[0] == "launch":
        launch(argv[1])
        return 0
    if argv and argv[0] == "summary":
        import json

        d = Path(argv[1])
        out = {}
        for t in TARGETS:
            if (d / f"{t}.source.csv").is_file():
                log = d / f"{t}.ncu.log"
                out[t] = dict(kernel=kernel_name(log.read_text()) if log.is_file() else None,
                              **summary((d / f"{t}.source.csv").read_text()))
        print(json.dumps(out, indent=1))
        return 0
    if not hopper_here():
        return 2
    from tools.ncu_counters import find_ncu

    ncu = find_ncu()
    if ncu is None:
        print("no ncu on this machine: install Nsight Compute or set $NCU", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COURSE_DEVICE="gpu")
    failed = False
    which = argv[argv.index("--set") + 1] if "--set" in argv else "m128"
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else list(SETS[which])
    for target in only:
        kernel = TARGETS[target][0]
        rep = out / target
        cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", kernel,
               "--launch-skip", "1", "--launch-count", "1", "--import-source", "no", "--force-overwrite",
               *[a for s in SECTIONS for a in ("--section", s)], "--export", str(rep),
               sys.executable, str(Path(__file__).resolve()), "launch", target]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            print(target, "ncu timed out after 90 s", file=sys.stderr)
            failed = True
            continue
        (out / f"{target}.ncu.log").write_text(p.stdout + p.stderr)
        report = out / f"{target}.ncu-rep"
        if p.returncode != 0 or not report.is_file():
            print(target, "ncu failed:", (p.stdout + p.stderr)[-600:], file=sys.stderr)
            failed = True
            continue
        ok = True
        for page, extra in (("source", ["--print-source", "sass"]), ("details", [])):
            q = subprocess.run([ncu, "--import", str(report), "--csv", "--page", page, *extra], capture_output=True,
                               text=True, timeout=90)
            (out / f"{target}.{page}.csv").write_text(q.stdout if q.returncode == 0 else q.stdout + q.stderr)
            print(target, page, "rc", q.returncode, len(q.stdout), "characters", file=sys.stderr)
            ok &= q.returncode == 0 and len(q.stdout) > 1000
        if ok:
            report.unlink()                # the CSV pages are what comes back; the report is large
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
