"""A device probe (issue 25): what does a row 16 bytes into a sector change in Nsight Compute's counters? The
row-alignment probe (lab/probes/row_alignment.py) measured rung 16 13% slower at 5000^3 with rows of 10000 bytes
than with rows of 10112 (128-byte aligned), and cuBLAS 3% slower. Here each of the two (rung 16, cuBLAS writing
FP16 C) is profiled at both strides: the first launch of its kernel inside that probe (the checked launch), with
tools/ncu_counters.py's metrics (L2 sectors and requests, DRAM bytes, tensor pipe, warp stalls), clocks left alone.

With --no-cublas, the rungs alone (a rung still pending its first record, e.g. 27, too). With --shape, another
product than 5000^3 (row_alignment.py's option). A rung that chooses its build per shape is profiled as the kernel
it builds there: at 7000^3 rung 29 builds rung 25's (its C^T tile takes more waves there), hopper_quad_cluster.

On the H100 at 7000^3 (rows of 14000 bytes, 16 into a sector; pad 40: 14080 bytes, 128-byte aligned), where the
rungs reach 0.84-0.85 of cuBLAS and the H200's reach 0.98-0.99, predicted before the run: rung 29 reads about 1.1x
the L2 sectors at pad 0 that it reads at pad 40 and runs at least 8% longer; cuBLAS's time changes by at most 3%;
at pad 0 rung 29 reads at least 1.1x cuBLAS's bytes from DRAM (the H100 has 0.70x the H200's DRAM bandwidth).

With --knobs (e.g. CLUSTER_M=4), the rungs as helpers.try_kernel builds them with those knobs (row_alignment.py's
option). Predicted before its first run (H100, 7000^3, rung 25 with CLUSTER_M=4, pads 0 and 40): clusters of 4,
which ran 1.08-1.10x faster than clusters of 2 there (logs/group-m-shapes*), read at most 1.5x the DRAM bytes at pad
0 that they read at pad 40 (clusters of 2: 2.65x).

    python3 lab/probes/ncu_row_alignment.py OUT.json [--pads 0,56] [--rungs 16] [--shape MxNxK] [--no-cublas]
                                                     [--knobs K=V,...]
                                                                                        (a Hopper GPU and ncu)"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from lab.probes.common import hopper_here, knob_variant, run  # noqa: E402  (run as a script: ROOT first)
from lab.probes.row_alignment import _option, knob_values  # noqa: E402

NOT_ON_H200 = {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"}   # ncu 2025 refused it


def main(argv) -> int:
    if not hopper_here():
        return 2
    import ncu_counters as NC

    from helpers.kernels import rung_entry
    from helpers.launch import build_for

    args = list(argv)
    pads = _option(args, "--pads", "0,56")
    rungs = [int(v) for v in _option(args, "--rungs", "16").split(",")]
    shape = _option(args, "--shape", "5000x5000x5000")
    knobs = _option(args, "--knobs", "")          # e.g. CLUSTER_M=4: the rungs as helpers.try_kernel builds them
    M, N, K = (int(v) for v in shape.split("x"))
    ncu = NC.find_ncu()
    if ncu is None:
        print("no ncu", file=sys.stderr)
        return 2
    metrics = [m for m in NC.ALL_METRICS if m not in NOT_ON_H200]
    out, bad = [], 0
    work = Path(tempfile.mkdtemp())
    for pad in pads.split(","):
        cublas = [] if "--no-cublas" in args else [("regex:nvjet", "cuBLAS FP16 C")]
        # the kernel each rung's launcher builds for this shape (rungs 25-26 and 29-30 choose per shape, from the rows
        # of A and B as row_alignment.py passes them: K and N halves apart at every pad, so one build for all pads)
        built = [(knob_variant(r, knob_values(knobs))[0].name if knobs
                  else build_for(rung_entry(r), M, N, 2 * K, 2 * N)[0].name, f"rung {r}") for r in rungs]
        for kernel, what in built + cublas:
            rep = work / f"{what.replace(' ', '_')}_{pad}"
            cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", kernel,
                   "--launch-count", "1", "--metrics", ",".join(metrics), "--force-overwrite", "--export", str(rep),
                   sys.executable, str(ROOT / "lab/probes/row_alignment.py"), str(work / "probe.json"),
                   "--pads", pad, "--rungs", ",".join(map(str, rungs)), "--shape", shape,
                   *(["--knobs", knobs] if knobs else [])]
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, COURSE_DEVICE="gpu"),
                               cwd=ROOT, timeout=300)
            q = subprocess.run([ncu, "--import", f"{rep}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
                               capture_output=True, text=True, timeout=120)
            rows, _ = NC.parse_raw_csv(q.stdout)
            if not rows:
                bad += 1
                said = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("==")]   # ncu's own lines
                print(what, pad, "no report:", "\n".join(said[-12:]) or (p.stdout + p.stderr)[-400:],
                      file=sys.stderr, flush=True)
                continue
            vals = {m: NC.number(rows[0].get(m)) for m in metrics}
            entry = {"what": what, "pad": int(pad), "shape": shape, "knobs": knobs, "row_bytes": 2 * (K + int(pad)),
                     "kernel_name": rows[0].get("Kernel Name", ""), **NC.counters(vals)}
            out.append(entry)
            c = entry["counters"]
            print(what, pad, entry["kernel_name"][:60], "ns", c["duration_ns"], "L2 rd sectors", c["l2_read_sectors"],
                  "L2 req", c["l2_requests"], "DRAM rd", c["dram_read_bytes"], "tensor%", c["tensor_pipe_pct"],
                  entry["top_stalls"], file=sys.stderr, flush=True)
    Path(args[0]).write_text(json.dumps({"command": "python3 lab/probes/ncu_row_alignment.py " + " ".join(argv),
                                         "ncu": NC.ncu_version(ncu), "rows": out}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main, __doc__)
