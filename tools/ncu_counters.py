"""Nsight Compute counters for lesson 1's FP32 kernel and every rung of lessons 5 and 6 (GPU only).

    python tools/ncu_counters.py [--size 4096] [--out results] [--only TARGET ...]   # profile; write results/ncu-<gpu>.json
    python tools/ncu_counters.py list                                                # the targets (no GPU needed)
    python tools/ncu_counters.py launch TARGET [--size N]                            # one launch: what ncu profiles

The targets: gemm_fp32_kernel with each of lesson 1's block shapes (helpers.experiments.baseline.BLOCK_SHAPES),
the tiled solution (kernels/fp32_variants.cu, TILE 16 and 32), and every rung (helpers.kernels.ALL_RUNGS: lesson
5's ladder, then lesson 6's) this GPU can run, each launched once at M = N = K = size on standard-normal inputs. Each target is profiled in its own
``ncu`` run (a fault or a hang there cannot stop the others), with the clocks left alone
(``--clock-control none``) and only the one kernel's first launch profiled:

    ncu --clock-control none --kernel-name <kernel> --launch-count 1 --metrics <METRICS> --export build/ncu/<target>
        <python> tools/ncu_counters.py launch <target> --size N

then read back with ``ncu --import build/ncu/<target>.ncu-rep --csv --page raw --print-units base``.
Collected: DRAM bytes read and written; L2 sectors read and written and the L2 hit rate; L1 sectors and requests
of the global loads; shared-memory wavefronts and bank conflicts (loads and stores); tensor-pipe utilisation;
FMA-pipe utilisation; achieved and theoretical occupancy; the warp-stall reasons (cycles per issued
instruction, ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``), of which the top five
are listed per kernel. Metric names are Nsight Compute's; names that this ncu or GPU does not know are
found first (by bisection, on a small launch), left out, and listed in the output (``not_collected``)
instead of failing the run. Written: results/ncu-<gpu>.json (GPU, date, ncu version, command, the metric
names, per-kernel counters); the reports stay in build/ncu/. Exit status: 0 when every target was
profiled, 1 when some were not, 2 when there is no GPU or no ncu.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REPORTS = ROOT / "build" / "ncu"

# short name -> Nsight Compute metric
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_read_sectors": "lts__t_sectors_op_read.sum",
    "l2_write_sectors": "lts__t_sectors_op_write.sum",
    "l2_requests": "lts__t_requests.sum",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    # (session 25) read sectors whose L2 lookup missed, and sectors whose source unit is the fabric between the two
    # halves of the L2 (GA100 and GH100 split their L2 in two): to see where the rungs' extra DRAM bytes come from
    "l2_read_miss_sectors": "lts__t_sectors_op_read_lookup_miss.sum",
    "l2_fabric_sectors": "lts__t_sectors_srcunit_ltcfabric.sum",
    "l1_global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1_global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
    "smem_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smem_load_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_store_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smem_load_instructions": "smsp__sass_inst_executed_op_shared_ld.sum",
    "smem_store_instructions": "smsp__sass_inst_executed_op_shared_st.sum",
    "ldsm_instructions": "smsp__sass_inst_executed_op_ldsm.sum",
    "tensor_pipe_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_hmma_pipe_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_gmma_pipe_pct": "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "fma_pipe_pct": "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers_per_thread": "launch__registers_per_thread",
    "warp_cycles_per_issued_instruction": "smsp__average_warp_latency_per_inst_issued.ratio",
    # (session 27) warp instructions executed, all units: with the bytes above, what a kernel does per GEMM besides
    # the Tensor Cores' work (lesson 7: at the power limit the promoting kernel draws more energy per cycle than
    # cuBLASLt's for the same work per cycle)
    "instructions": "smsp__inst_executed.sum",
    # (session 28) the SM clock over the launch, so that a duration here sits beside the clock it ran at
    "sm_clock_hz": "sm__cycles_elapsed.avg.per_second",
}
# warp-stall reasons (Nsight Compute's "Warp State Statistics"); 'gmma' exists on sm_90 only, 'selected' is
# the cycle a warp issues (not a stall)
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
          "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
          "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


ALL_METRICS = list(METRICS.values()) + [stall_metric(r) for r in STALLS]
CANARY = METRICS["duration_ns"]          # a metric every ncu knows: if it fails, nothing else will work


# --------------------------------------------------------------------------- targets
def targets() -> dict[str, dict]:
    """{target id: {kernel, lesson, what, ...}}: every launch this script profiles."""
    from helpers.experiments.baseline import BLOCK_SHAPES
    from helpers.kernels import ALL_RUNGS

    out = {}
    for bx, by in BLOCK_SHAPES:
        out[f"fp32_{bx}x{by}"] = {"kernel": "gemm_fp32_kernel", "lesson": 1, "what": f"block {bx}x{by}",
                                  "block": [bx, by]}
    for tile in (16, 32):
        out[f"fp32_tiled_{tile}"] = {"kernel": "gemm_fp32_tiled", "lesson": 1, "what": f"tiled solution, TILE={tile}",
                                     "tile": tile}
    for r in ALL_RUNGS.values():
        out[f"rung{r.rung}"] = {"kernel": r.name, "lesson": r.lesson, "what": f"rung {r.rung}: {r.idea}",
                                "rung": r.rung}
    for r in (15, 26):      # session 26: the tile order's knob (GROUP_M 16, not 8), to see whether it moves DRAM bytes
        e = ALL_RUNGS[r]
        out[f"rung{r}_group16"] = {"kernel": e.name, "lesson": e.lesson, "rung": r, "options": ["-DGROUP_M=16"],
                                   "what": f"rung {r} built with -DGROUP_M=16 (lab/probes/wait_hint.py --order)"}
    from helpers.fp8_gemm import FP8_KERNELS

    for k in FP8_KERNELS.values():                # lesson 7's wgmma kernels (FP8 E4M3 inputs)
        if k.wgmma:
            out[k.name] = {"kernel": k.name, "lesson": 7, "what": k.what, "fp8": True}
    from helpers.fp8_scaled import SCALED_KERNELS

    for k in SCALED_KERNELS.values():             # lesson 7's block-scaled kernel: E4M3 bytes and two scale arrays
        out[k.name] = {"kernel": k.name, "lesson": 7, "what": k.what, "fp8_scaled": True}
    for fast, tag in ((False, "default"), (True, "fast")):     # lesson 7's yardsticks: cuBLASLt's FP8 nvjet kernels
        out[f"cublaslt_fp8_{tag}"] = {"kernel": "regex:nvjet", "lesson": 7, "cublaslt_fast": fast,
                                      "what": f"cuBLASLt FP8 (E4M3 in, FP32 C), {tag} accumulation"}
    for c, tag in (("float16", "fp16c"), ("float32", "fp32c")):  # lesson 6's yardsticks: cuBLAS's nvjet kernel
        out[f"cublas_{tag}"] = {"kernel": "regex:nvjet", "lesson": 6, "cublas": c,
                                "what": f"cuBLAS, FP16 in, {c[5:]}-bit C (helpers.cublas.same_c)"}
    return out


def launch(target: str, n) -> None:
    """One launch of `target` at n^3, or at n = (M, N, K) (what ncu profiles); the other kernels it runs have
    other names."""
    import cupy

    from helpers.device import require_gpu

    require_gpu("tools/ncu_counters.py launch")
    t = targets()[target]
    M, N, K = (n, n, n) if isinstance(n, int) else tuple(n)
    rng = np.random.default_rng(4096)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    if t["lesson"] == 1:
        from helpers.compile import get_kernel
        from helpers.experiments.baseline import NAIVE, fp32_launcher, tiled_kernel

        if "tile" in t:
            run, _ = fp32_launcher(tiled_kernel(t["tile"]), cupy.asarray(A), cupy.asarray(B), (t["tile"],) * 2,
                                   tile=t["tile"])
        else:
            run, _ = fp32_launcher(get_kernel(*NAIVE), cupy.asarray(A), cupy.asarray(B), tuple(t["block"]))
    elif t.get("cublas"):
        from helpers.cublas import same_c

        A16, B16 = cupy.asarray(A.astype(np.float16)), cupy.asarray(B.astype(np.float16))
        C, cub = cupy.empty((M, N), dtype=t["cublas"]), same_c(t["cublas"])
        run = lambda: cub.run(A16, B16, C)    # noqa: E731
    elif "cublaslt_fast" in t:
        from helpers.fp8_gemm import cublaslt_fp8, encode_e4m3

        got = cublaslt_fp8(cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())), t["cublaslt_fast"])
        if got is None:
            raise SystemExit("cuBLASLt's FP8 GEMM needs nvmath-python or PyTorch here (helpers.fp8_gemm.cublaslt_fp8)")
        run = got[0]
    elif t.get("fp8_scaled"):
        from helpers.fp8_scaled import block_scaled_launcher, gpu_block_scaled_inputs

        run, _ = block_scaled_launcher(*gpu_block_scaled_inputs(M, N, K, seed=4096)[:4])
    elif t.get("fp8"):
        from helpers.fp8_gemm import encode_e4m3, launcher as fp8_launcher

        run, _ = fp8_launcher(t["kernel"], cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())),
                              stages=t.get("stages"), options=tuple(t.get("options", ())))
    else:
        from helpers.kernels import ALL_RUNGS
        from helpers.launch import launcher

        r = ALL_RUNGS[t["rung"]]
        run, _, _ = launcher(r, cupy.asarray(A.astype(r.in_dtype)), cupy.asarray(B.astype(r.in_dtype)), pad=True,
                             options=tuple(t.get("options", ())))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    print(f"launched {t['kernel']} ({t['what']}) at {M}x{N}x{K}", flush=True)


# --------------------------------------------------------------------------- running ncu
def find_ncu() -> str | None:
    """$NCU, ncu on PATH, or where the CUDA toolkit and the Nsight Compute installer put it."""
    import glob

    cands = [os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"]
    cands += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/ncu"), reverse=True)
    cands += sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
    for cand in cands:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def ncu_version(ncu: str) -> str:
    try:
        p = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = [ln.strip() for ln in p.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown"


def parse_raw_csv(text: str) -> tuple[list[dict], dict]:
    """Rows ({column: value}) and units ({column: unit}) of `ncu --import ... --csv --page raw`."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    table = list(csv.reader(lines))
    head = next((i for i, row in enumerate(table) if "Kernel Name" in row), None)
    if head is None:
        return [], {}
    cols = table[head]
    rows, units = [], {}
    for row in table[head + 1:]:
        rec = dict(zip(cols, row))
        if not rec.get("Kernel Name", "").strip():      # the units row names no kernel
            units.update({k: v for k, v in rec.items() if v})
            continue
        rows.append(rec)
    return rows, units


def number(value: str):
    """A CSV cell as a number (thousands separators dropped), or None for 'n/a' and the like."""
    v = (value or "").strip().replace(",", "")
    try:
        return float(v)
    except ValueError:
        return None


def _shape3(n) -> list:
    return [n] * 3 if isinstance(n, int) else list(n)


def profile(ncu: str, py: str, target: str, kernel: str, metrics: list[str], n, timeout: int, log) -> dict:
    """One ncu run of one target; returns {'values': {metric: number or None}, 'units', 'kernel_name'} or
    {'error': ...}."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    rep = REPORTS / target
    (REPORTS / f"{target}.ncu-rep").unlink(missing_ok=True)
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", kernel,
           "--launch-count", "1", "--metrics", ",".join(metrics), "--force-overwrite", "--export", str(rep),
           py, str(Path(__file__).resolve()), "launch", target, "--shape", *map(str, _shape3(n))]
    env = dict(os.environ, COURSE_DEVICE="gpu")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"ncu timed out after {timeout} s"}
    log(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    report = REPORTS / f"{target}.ncu-rep"
    if p.returncode != 0 or not report.is_file():
        errs = [ln for ln in (p.stdout + p.stderr).splitlines() if "ERR" in ln or "rror" in ln]
        return {"error": " | ".join(errs[-5:]) or f"ncu exited with status {p.returncode} and no report"}
    rows, said = [], ""
    for units_opt in (["--print-units", "base"], []):      # base units (bytes, ns); an older ncu: its own
        try:
            q = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", *units_opt],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"ncu --import {report.name} timed out after {timeout} s"}
        rows, units = parse_raw_csv(q.stdout)
        said = (q.stdout + q.stderr)[-300:]
        if rows:
            break
    if not rows:
        return {"error": f"no profiled kernel in {report.name} (ncu --import said: {said})"}
    row = rows[0]
    return {"values": {m: number(row[m]) if m in row else None for m in metrics},
            "units": {m: units.get(m, "") for m in metrics}, "kernel_name": row.get("Kernel Name", "")}


def canary_target(todo: dict, rungs: dict) -> str:
    """The target whose small (256^3) launches find which metrics this ncu knows: the first of `todo` that runs its
    kernel under its own name at that size. Rungs 29-30 choose their orientation per problem and build rung 25's
    (26's) kernel there, so ncu would find no kernel of theirs to profile (session 25: every metric then counted as
    unknown). None when every target is such a rung."""
    return next((tid for tid, t in todo.items()
                 if "rung" not in t or rungs[t["rung"]].per_shape != "orientation"), None)


def usable_metrics(ncu, py, target, kernel, metrics, timeout, log) -> tuple[list[str], list[str]]:
    """(known, unknown): ncu refuses a whole run for one name it does not know, so bisect on a small launch."""
    if not metrics:
        return [], []
    if "error" not in profile(ncu, py, target, kernel, metrics, 256, timeout, log):
        return list(metrics), []
    if len(metrics) == 1:
        return [], list(metrics)
    half = len(metrics) // 2
    k1, u1 = usable_metrics(ncu, py, target, kernel, metrics[:half], timeout, log)
    k2, u2 = usable_metrics(ncu, py, target, kernel, metrics[half:], timeout, log)
    return k1 + k2, u1 + u2


def counters(values: dict) -> dict:
    """Short names and the stall table from one target's metric values."""
    c = {short: values.get(m) for short, m in METRICS.items()}
    stalls = {r: values.get(stall_metric(r)) for r in STALLS}
    ranked = sorted(((r, v) for r, v in stalls.items() if v is not None and r != "selected"),
                    key=lambda rv: -rv[1])
    if c.get("smem_load_wavefronts") and c.get("smem_load_bank_conflicts") is not None:
        c["smem_load_conflicts_per_wavefront"] = round(c["smem_load_bank_conflicts"] / c["smem_load_wavefronts"], 4)
    return {"counters": c, "stalls": stalls, "top_stalls": [[r, round(v, 3)] for r, v in ranked[:5]]}


def _fmt(v, scale=1.0, digits=0) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def gpu_info() -> dict:
    """The GPU, as JSON (run in a child process: this script's own process never opens a CUDA context)."""
    from helpers.device import backend
    from helpers.errors import CourseError

    try:
        b = backend()
    except CourseError as exc:
        return {"error": str(exc)}
    if not b.is_gpu:
        return {"error": b.reason}
    g = b.gpu
    return {"name": g.name, "slug": g.slug, "cc": list(g.cc), "sm": g.sm, "driver_cuda": g.driver}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="profile", choices=["profile", "list", "launch", "gpu"])
    ap.add_argument("target", nargs="?")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    ap.add_argument("--shape", type=int, nargs=3, default=None, metavar=("M", "N", "K"),
                    help="a product that is not square (instead of --size)")
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--only", nargs="+", default=None, metavar="TARGET", help="profile only these targets")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per ncu run (default 600)")
    args = ap.parse_args(argv)
    shape = list(args.shape) if args.shape else [args.size] * 3
    if args.command == "list":
        for tid, t in targets().items():
            print(f"{tid:<16} {t['kernel']:<20} lesson {t['lesson']}: {t['what']}")
        return 0
    if args.command == "launch":
        launch(args.target, shape)
        return 0
    if args.command == "gpu":
        print("JSON" + json.dumps(gpu_info()))
        return 0
    return run(args, argv)


def run(args, argv) -> int:
    from helpers.kernels import ALL_RUNGS as RUNGS

    shape = list(args.shape) if args.shape else [args.size] * 3

    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "gpu"], capture_output=True, text=True,
                       env=dict(os.environ, COURSE_DEVICE="gpu"), cwd=ROOT, timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("JSON")), None)
    gpu = json.loads(line[4:]) if line else {"error": (p.stderr or p.stdout)[-500:]}
    if "error" in gpu:
        print(f"no GPU: {gpu['error']}", file=sys.stderr)
        return 2
    ncu = find_ncu()
    if ncu is None:
        print("ncu (Nsight Compute) not found: looked at $NCU, PATH and /usr/local/cuda/bin", file=sys.stderr)
        return 2
    version = ncu_version(ncu)
    print(f"Nsight Compute: {ncu} ({version}); GPU {gpu['name']} ({gpu['sm']}); size {'x'.join(map(str, shape))}",
          flush=True)
    REPORTS.mkdir(parents=True, exist_ok=True)
    raw_log = open(REPORTS / "ncu.log", "w")

    def log(text):
        raw_log.write(text + "\n")
        raw_log.flush()

    todo, skipped = {}, {}
    for tid, t in targets().items():
        if args.only and tid not in args.only:
            continue
        why = RUNGS[t["rung"]].skip_message(gpu["cc"]) if "rung" in t else None
        if why:
            skipped[tid] = why
        else:
            todo[tid] = t
    if not todo:
        print("nothing to profile (unknown --only targets? see `python tools/ncu_counters.py list`)", file=sys.stderr)
        return 1
    first = canary_target(todo, RUNGS)
    if first is None:
        print("rungs 29-30 alone build another kernel at the small size that finds the metrics: add a target that "
              "does not (e.g. --only rung29 cublas_fp16c)", file=sys.stderr)
        return 1
    known, unknown = [], []
    canary = profile(ncu, sys.executable, first, todo[first]["kernel"], [CANARY], 256, args.timeout, log)
    if "error" in canary:
        print(f"ncu cannot profile here: {canary['error']}\n(ERR_NVGPUCTRPERM means that the GPU's performance "
              "counters need admin rights, or the driver option NVreg_RestrictProfilingToAdminUsers=0)", file=sys.stderr)
    else:
        print(f"checking which of the {len(ALL_METRICS)} metrics this ncu knows (small launches of {first})", flush=True)
        known, unknown = usable_metrics(ncu, sys.executable, first, todo[first]["kernel"], ALL_METRICS, args.timeout,
                                        log)
    rows, failed, values = [], [], {}

    def write(rows, not_collected):
        out = {
            "kind": "ncu-counters",
            "gpu": {k: gpu[k] for k in ("name", "cc", "sm", "driver_cuda")},
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "ncu": version,
            "command": "python tools/ncu_counters.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "ncu_options": "--clock-control none --launch-count 1 --kernel-name <kernel> (kernel replay)",
            "size": shape,
            "metrics": {**METRICS, **{f"stall_{r}": stall_metric(r) for r in STALLS}},
            "not_collected": not_collected,
            "kernels": rows,
        }
        from helpers.results import write_json

        return write_json(out, f"ncu-{gpu['slug']}", args.out)

    for tid, t in todo.items():
        t0 = time.time()
        res = (profile(ncu, sys.executable, tid, t["kernel"], known, shape, args.timeout, log) if known
               else {"error": canary.get("error", "no metric could be collected")})
        entry = {"target": tid, **t, "size": shape, "seconds": round(time.time() - t0, 1)}
        if "error" in res:
            entry["error"] = res["error"]
            failed.append(tid)
        else:
            values[tid] = res["values"]
            entry.update(counters(res["values"]), units=res["units"], profiled_kernel=res["kernel_name"])
            if "rung" in t:
                from helpers.analysis import traffic_bytes

                entry["model_requested_bytes"] = traffic_bytes(RUNGS[t["rung"]], *shape)
        rows.append(entry)
        print(f"  {tid:<16} {'FAILED: ' + entry['error'][:200] if 'error' in entry else 'ok'} "
              f"({entry['seconds']} s)", flush=True)
        write(rows, unknown)                    # after every target: a run cut short keeps what it profiled
    for tid, why in skipped.items():
        rows.append({"target": tid, **targets()[tid], "size": shape, "skipped": why})
    # not collected: names this ncu refused, and names it accepted but gave no value for, on every kernel
    not_collected = unknown + [m for m in known if values and all(v.get(m) is None for v in values.values())]
    if not values:
        not_collected = list(ALL_METRICS)
    path = write(rows, not_collected)
    print_summary(rows)
    print(f"\nmetrics not collected ({len(not_collected)}): {', '.join(not_collected) or 'none'}")
    print(f"profiled {len(values)} of {len(rows)} targets" + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; skipped: {', '.join(skipped)}" if skipped else ""))
    print(f"wrote {path} (raw reports and the ncu log in {REPORTS.relative_to(ROOT)}/)")
    return 1 if failed or not values else 0


def print_summary(rows: list[dict]) -> None:
    print(f"\n{'target':<16} {'ms':>8} {'DRAM rd MB':>10} {'DRAM wr MB':>10} {'L2 sect M':>9} {'smem wf M':>9} "
          f"{'confl M':>8} {'tensor%':>7} {'occup%':>6} {'inst M':>8}  top stalls")
    for r in rows:
        if "counters" not in r:
            print(f"{r['target']:<16} {r.get('skipped') or 'FAILED: ' + str(r.get('error'))[:100]}")
            continue
        c = r["counters"]
        l2 = None if c["l2_read_sectors"] is None else c["l2_read_sectors"] + (c["l2_write_sectors"] or 0)
        confl = None if c["smem_load_bank_conflicts"] is None else (c["smem_load_bank_conflicts"]
                                                                    + (c["smem_store_bank_conflicts"] or 0))
        stalls = ", ".join(f"{s} {v:g}" for s, v in r["top_stalls"][:3])
        print(f"{r['target']:<16} {_fmt(c['duration_ns'], 1e6, 3):>8} {_fmt(c['dram_read_bytes'], 1e6):>10} "
              f"{_fmt(c['dram_write_bytes'], 1e6):>10} {_fmt(l2, 1e6, 1):>9} {_fmt(c['smem_load_wavefronts'], 1e6, 1):>9} "
              f"{_fmt(confl, 1e6, 2):>8} {_fmt(c['tensor_pipe_pct'], 1, 1):>7} {_fmt(c['achieved_occupancy_pct'], 1, 1):>6}"
              f" {_fmt(c.get('instructions'), 1e6, 1):>8}  {stalls}")


if __name__ == "__main__":
    sys.exit(main())
