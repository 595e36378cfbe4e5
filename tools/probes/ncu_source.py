"""A device probe (issue 25): where rung 17's warps and cuBLAS's wait, instruction by instruction, at 128 x 8192 x 8192.

Nsight Compute's warp-state sampling (sections SourceCounters, WarpStateStats, SchedulerStats) on one launch of rung 17
with the wait hint (WAIT_HINT=1: -DSKINNY_WAIT=1) and on cuBLAS's own kernel (FP16 C), clocks not locked; each
report's SASS page (every instruction with its stall samples by reason) and details page are written as CSV to OUT_DIR,
for reading without a GPU (lesson 6, Appendix D, 'Taking rung 17 apart').

    python3 tools/probes/ncu_source.py OUT_DIR                    (a Hopper GPU, COURSE_DEVICE=gpu, ncu)
    python3 tools/probes/ncu_source.py launch TARGET              (what ncu runs)
    python3 tools/probes/ncu_source.py summary DIR                (each TARGET.source.csv in DIR, summarised as JSON)"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPE = (128, 8192, 8192)
TARGETS = {"rung17_hint": "hopper_skinny", "cublas_fp16c": "regex:nvjet"}
SECTIONS = ("SourceCounters", "WarpStateStats", "SchedulerStats")


def launch(target: str) -> None:
    """Two launches of `target` at SHAPE (the first compiles and warms up; ncu profiles the second)."""
    import cupy

    from helpers.experiments.ladder import _inputs

    M, N, K = SHAPE
    A, B = _inputs(0, M, N, K)
    if target == "cublas_fp16c":
        from helpers.cublas import same_c

        C, cub = cupy.empty((M, N), dtype=cupy.float16), same_c("float16")
        run = lambda: cub.run(A, B, C)    # noqa: E731
    else:
        from helpers.kernels import rung_entry
        from helpers.launch import launcher

        run, _, _ = launcher(rung_entry(17), A, B, options=("-DSKINNY_WAIT=1",))
    for _ in range(2):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    print(f"launched {target} at {M}x{N}x{K}", flush=True)


def summary(source_csv: str) -> dict:
    """What one report's SASS page says, without the listing: warp-level instructions executed, the wgmma
    instructions (HGMMA: distinct addresses, executions of each, their shapes), and the share of stall samples by
    reason, overall and at the five addresses with the most samples (each with its opcode)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(source_csv)))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    cols = rows[head]
    data = [dict(zip(cols, r)) for r in rows[head + 1:] if len(r) == len(cols)]

    def num(v):
        v = (v or "").replace(",", "").strip()
        return float(v) if v not in ("", "-") else 0.0

    stalls = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    samples = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in data) or 1.0
    hg = [r for r in data if r["Source"].strip().split(" ")[0] == "HGMMA" or " HGMMA." in r["Source"]]
    by_reason = {c[6:]: sum(num(r[c]) for r in data) / samples for c in stalls}
    top = sorted(data, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[:5]
    return {"warp_instructions": sum(num(r["Instructions Executed"]) for r in data),
            "hgmma_addresses": len(hg), "hgmma_executions": sorted({num(r["Instructions Executed"]) for r in hg}),
            "hgmma_shapes": sorted({r["Source"].split("HGMMA.")[1].split(" ")[0] for r in hg}),
            "stall_share": {k: round(v, 3) for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1]) if v > 0.01},
            "top_addresses": [{"opcode": r["Source"].split()[0] if not r["Source"].strip().startswith("@")
                               else r["Source"].split()[1],
                               "share": round(num(r["Warp Stall Sampling (All Samples)"]) / samples, 3),
                               "executions": num(r["Instructions Executed"])} for r in top]}


def main(argv) -> int:
    sys.path.insert(0, str(ROOT))
    if argv and argv[0] == "launch":
        launch(argv[1])
        return 0
    if argv and argv[0] == "summary":
        import json

        print(json.dumps({t: summary((Path(argv[1]) / f"{t}.source.csv").read_text()) for t in TARGETS}, indent=1))
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
    for target, kernel in TARGETS.items():
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
