"""One GPU run for lesson 6's kernels (kernels/hopper_rungNN_sm90a.cu): compile, check and time every rung next to
cuBLAS FP16, each rung in its own child process, and say clearly what failed.

    python3 lab/probes/hopper_try.py OUT.json [--rungs 7 8 9 10 11 12 13] [--timeout 60] [--budget 330]
                                         [--ncu [SECONDS]]

Run from the repository root (or anywhere: the script puts the repository on sys.path) with a Python that
has CuPy, on a Hopper GPU (sm_90a). Steps, all in child processes (helpers.isolate), so that a fault or a
hang in one loses nothing else:

1. the GPU, its driver and versions, and its clocks before the run;
2. the cluster probe: does a plain launch (cuLaunchKernel, as CuPy launches) of a kernel that declares
   __cluster_dims__(2, 1, 1) form clusters of two? (rungs 12-13 rely on it; the launcher falls back to
   cuLaunchKernelEx with the cluster named if the plain launch is refused);
3. for each rung (rung 7, where lesson 6 starts, then 8-15): compile (NVRTC, sm_90a) and print what the
   driver reports (registers, shared memory, local memory = spills); check against float64 and the CPU
   model of its arithmetic at three sizes that are not multiples of any tile (1000x1064x1000,
   257x520x136, 40x24x56), then at 4096^3 and 8192^3, each followed by a timing (helpers.timing.benchmark:
   CUDA events, L2 flushed before every launch, NVML clocks and power) right after cuBLAS FP16 is timed on
   the same matrices in the same process;
4. a table: rung, idea, predicted gain, TFLOP/s and the ratio to cuBLAS at 4096 and 8192, measured gain,
   SM clock, power, throttle reasons, and whether every check passed;
5. with --ncu: Nsight Compute counters for the rungs that ran (tools/ncu_counters.py at 4096^3), in the time
   left of the budget, written next to OUT.json (ncu-<gpu>.json in OUT's folder + '/ncu').

Everything goes to OUT.json (written after every step, so a run cut short keeps what it measured). A rung
whose child failed (compile error, illegal address, a trap from a wait that lasted 10 s, a timeout) gets one
line starting with 'FAILED'; a wrong result, a line starting with 'WRONG' and the check's summary.
Exit status: 0 when every rung compiled, ran and passed every check; 1 otherwise; 2 without a Hopper GPU.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from helpers.experiments.hopper import ODD_SIZES, TARGETS, TRY_TIMED  # noqa: E402
from helpers.isolate import run_isolated  # noqa: E402
from helpers.kernels import ALL_RUNGS, hopper_ladder  # noqa: E402


def _say(msg: str = "") -> None:
    print(msg, flush=True)


def _shape(s) -> str:
    return "x".join(map(str, s))


def _fmt(v, spec: str, dash: str = "-") -> str:
    return dash if v is None else format(v, spec)


def report_rung(k: int, rows, seconds: float) -> dict:
    """Print one rung's outcome; return a summary {ok, wrong, failed, ...} for the table."""
    r = ALL_RUNGS[k]
    _say(f"\n== rung {k} {r.name}: {r.idea} (predicted x{r.predicted_gain:g})  [{seconds:.1f} s]")
    summary = {"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "failed": [],
               "wrong": [], "checked": 0, "timed": {}}
    if isinstance(rows, dict):                         # the child died, hung, or could not start
        summary["failed"].append(rows.get("error", "?"))
        _say(f"FAILED rung {k} ({r.name}): its child process did not return:\n"
             + "\n".join("   " + ln for ln in str(rows.get("error", "?")).strip().splitlines()[-25:]))
        return summary
    first = next((x for x in rows if "regs" in x), None)
    if first:
        note = " at entry (setmaxnreg moves them later)" if r.block[0] > 256 else ""
        _say(f"   resources: {first['regs']} registers/thread{note}, "
             f"{first['smem_static']} B static + {first['smem_dynamic']} B dynamic shared memory, "
             f"{first['spills']} B local memory (spills)")
    facts = next((x for x in rows if "resident" in x or "launch_path" in x), None)
    if facts:
        _say(f"   grid: {facts.get('resident', 'one block per tile')}; clusters: {facts.get('launch_path', '-')}")
    for x in rows:
        size = _shape((x["m"], x["n"], x["k"]))
        if "skipped" in x:
            summary["failed"].append(x["skipped"])
            _say(f"   SKIPPED {size}: {x['skipped']}")
            continue
        if "error" in x:
            summary["failed"].append(f"{size}: {x['error']}")
            _say(f"FAILED rung {k} ({r.name}) at {size}:\n"
                 + "\n".join("   " + ln for ln in str(x["error"]).strip().splitlines()[-25:]))
            continue
        summary["checked"] += 1
        if x.get("passed"):
            _say(f"   {x.get('verdict', 'PASS')}")
        else:
            summary["wrong"].append(size)
            _say(f"WRONG rung {k} ({r.name}) at {size}: {x.get('verdict', '')}")
            for ln in str(x.get("mismatch", "")).splitlines():
                _say(f"      {ln}")
        if x.get("tflops") is not None:
            summary["timed"][size] = x
            thr = ",".join(x.get("throttle") or ["?"])
            _say(f"   {size}: {x['tflops']:.1f} TFLOP/s ({x['median_ms']:.4f} ms, p10-p90 {x['p10_ms']:.4f}-"
                 f"{x['p90_ms']:.4f}, n={x['reps']}); cuBLAS side by side {_fmt(x.get('cublas_tflops'), '.1f')} "
                 f"TFLOP/s: {_fmt(x.get('frac_cublas'), '.3f')}x; SM {x.get('sm_mhz', '?')} MHz "
                 f"(min {x.get('sm_mhz_min', '?')}), {x.get('power_w', '?')} W (max {x.get('power_w_max', '?')}), "
                 f"throttle {thr}")
            if x.get("tflops_kernel_only") is not None:
                _say(f"   {size}: the kernel alone (B^T given): {x['tflops_kernel_only']:.1f} TFLOP/s, "
                     f"{_fmt(x.get('frac_cublas_kernel_only'), '.3f')}x cuBLAS")
    return summary


def print_table(summaries: list[dict]) -> None:
    sizes = [_shape(s) for s in TRY_TIMED]
    _say("\n" + "=" * 118)
    head = f"{'rung':>4} {'idea':<48} {'pred':>5}"
    for s in sizes:
        head += f" | {s.split('x')[0] + '^3':>6} TF/s  xcuBLAS  gain"
    head += " | SM MHz  W    throttle      ok"
    _say(head)
    prev = {}
    for sm in summaries:
        line = f"{sm['rung']:>4} {sm['idea'][:48]:<48} {'x' + format(sm['predicted'], 'g'):>5}"
        last = None
        for s in sizes:
            x = sm["timed"].get(s)
            if x is None:
                line += f" | {'-':>11} {'-':>8} {'-':>5}"
                continue
            gain = x["tflops"] / prev[s] if prev.get(s) else None
            line += f" | {x['tflops']:>11.1f} {_fmt(x.get('frac_cublas'), '.3f'):>8} {_fmt(gain, '.2f'):>5}"
            prev[s] = x["tflops"]
            last = x
        ok = "FAILED" if sm["failed"] else ("WRONG" if sm["wrong"] else ("yes" if sm["checked"] else "-"))
        if last is not None:
            line += (f" | {last.get('sm_mhz', '?'):>6} {_fmt(last.get('power_w'), '.0f'):>4} "
                     f"{','.join(last.get('throttle') or ['?'])[:12]:<12} {ok}")
        else:
            line += f" | {'':>6} {'':>4} {'':<12} {ok}"
        _say(line)
    _say("(gain: over the rung above in this table; x cuBLAS: against cuBLAS writing the same C type (FP16 or FP32),"
         " timed just before, same process; SM MHz / W / throttle: the largest size)")
    for shape, want in TARGETS.items():
        s = _shape(shape)
        if tuple(shape) not in TRY_TIMED:
            continue
        got = [(sm["timed"][s].get("frac_cublas") or 0, sm["rung"]) for sm in summaries
               if s in sm["timed"] and sm["rung"] >= 8 and not sm["wrong"] and not sm["failed"]]
        if got:
            best, k = max(got)
            _say(f"target at {s}: {want:.2f}x cuBLAS; best correct rung {k}: {best:.3f}x -> "
                 f"{'met' if best >= want else 'missed'}")
        else:
            _say(f"target at {s}: {want:.2f}x cuBLAS; no correct lesson-6 rung was timed")


def run_ncu(rungs: list[int], out_dir: Path, seconds: float, log: dict) -> None:
    """tools/ncu_counters.py for these rungs at 4096^3, within `seconds` (it writes after every target)."""
    if seconds < 60:
        _say(f"\nncu: skipped, only {seconds:.0f} s of the budget left")
        log["ncu"] = {"skipped": f"{seconds:.0f} s left"}
        return
    cmd = [sys.executable, str(ROOT / "tools" / "ncu_counters.py"), "--size", "4096", "--out", str(out_dir),
           "--timeout", "60", "--only", *[f"rung{k}" for k in rungs]]
    _say(f"\nncu ({seconds:.0f} s at most): {' '.join(cmd)}")
    try:
        p = subprocess.run(cmd, cwd=ROOT, timeout=seconds, capture_output=True, text=True)
        _say(p.stdout[-6000:] + p.stderr[-2000:])
        log["ncu"] = {"returncode": p.returncode, "out": str(out_dir)}
    except subprocess.TimeoutExpired as exc:
        said = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        _say(said[-4000:] + f"\nncu: stopped after {seconds:.0f} s (what it profiled by then is in {out_dir})")
        log["ncu"] = {"timed_out": seconds, "out": str(out_dir)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the JSON file to write")
    ap.add_argument("--rungs", type=int, nargs="+", default=list(hopper_ladder()))
    ap.add_argument("--timeout", type=int, default=60, help="seconds per rung's child process (default 60)")
    ap.add_argument("--budget", type=int, default=330,
                    help="seconds for the whole run: rungs not started by then are skipped (default 330)")
    ap.add_argument("--ncu", type=float, nargs="?", const=150.0, default=None, metavar="SECONDS",
                    help="then Nsight Compute counters for the rungs that ran, in at most SECONDS (default 150) "
                         "and never past the budget + 20 s")
    args = ap.parse_args(argv)
    t0 = time.time()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = {"kind": "hopper-try", "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "command": "python3 lab/probes/hopper_try.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "odd_sizes": [list(s) for s in ODD_SIZES], "timed": [list(s) for s in TRY_TIMED], "rungs": {}}

    def save():
        log["seconds"] = round(time.time() - t0, 1)
        out.write_text(json.dumps(log, indent=1, default=str))

    try:
        import subprocess as _sp

        git = _sp.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        log["commit"] = git.stdout.strip() or None
    except Exception:
        log["commit"] = None
    facts = run_isolated("lab.labkit.hopper:gpu_facts", timeout=120)
    log["gpu"] = facts
    if "error" in facts or "cc" not in facts:
        last = [ln for ln in str(facts.get("error", facts)).strip().splitlines() if ln.strip()][-2:]
        _say("SKIPPED: no GPU works here: " + " ".join(last))
        print("lab/probes/hopper_try.py needs a Hopper GPU: no GPU works here", file=sys.stderr)
        save()
        return 2
    _say(f"GPU {facts['name']} (cc {facts['cc'][0]}.{facts['cc'][1]}, {facts['sms']} SMs, L2 "
         f"{facts['l2_bytes'] / 2**20:.0f} MiB), driver CUDA {facts['driver_cuda']}, NVRTC {facts['nvrtc']}, "
         f"CuPy {facts['cupy']}; commit {log['commit']}; idle clocks {facts.get('clocks_idle')}")
    if tuple(facts["cc"]) != (9, 0):
        _say(f"SKIPPED: lesson 6's kernels are sm_90a code (wgmma, setmaxnreg): they need a Hopper GPU "
             f"(compute capability 9.0); this one is {facts['cc'][0]}.{facts['cc'][1]}.")
        print(f"lab/probes/hopper_try.py needs a Hopper GPU; this one is {facts['cc'][0]}.{facts['cc'][1]}",
              file=sys.stderr)
        save()
        return 2
    save()

    probe = run_isolated("helpers.experiments.hopper:cluster_probe", timeout=90)
    log["cluster_probe"] = probe
    if "error" in probe:
        _say(f"FAILED cluster probe: {str(probe['error']).strip().splitlines()[-10:]}")
    else:
        _say(f"cluster probe: launched by {probe['path']}; forms clusters of 2: {probe['forms_clusters']} "
             f"(blocks: {[(b['cluster_size'], b['rank'], b['cluster']) for b in probe['blocks']]})"
             + (f"; the plain launch failed: {probe['plain_error']}" if "plain_error" in probe else ""))
    save()

    summaries = []
    for k in args.rungs:
        left = args.budget - (time.time() - t0)
        if left < 20:
            _say(f"\nSKIPPED rung {k}: the time budget ({args.budget} s) is spent")
            summaries.append({"rung": k, "kernel": ALL_RUNGS[k].name, "idea": ALL_RUNGS[k].idea,
                              "predicted": ALL_RUNGS[k].predicted_gain, "failed": ["time budget spent"],
                              "wrong": [], "checked": 0, "timed": {}})
            continue
        t1 = time.time()
        rows = run_isolated("helpers.experiments.hopper:rung_rows", k, [list(s) for s in TRY_TIMED],
                            [list(s) for s in ODD_SIZES], timeout=int(min(args.timeout, left)))
        log["rungs"][str(k)] = {"seconds": round(time.time() - t1, 1), "rows": rows}
        summaries.append(report_rung(k, rows, time.time() - t1))
        save()

    print_table(summaries)
    bad = [s for s in summaries if s["failed"] or s["wrong"]]
    log["summary"] = [{key: v for key, v in s.items() if key != "timed"} for s in summaries]
    if not bad:
        _say("\nALL RUNGS CORRECT: every check passed at every size.")
    else:
        for s in bad:
            what = "; ".join(s["failed"])[:400] if s["failed"] else f"wrong at {', '.join(s['wrong'])}"
            _say(f"PROBLEM rung {s['rung']} ({s['kernel']}): {what}")
    save()

    if args.ncu is not None:
        ran = [s["rung"] for s in summaries if s["checked"]]
        left = min(args.ncu, args.budget + 20 - (time.time() - t0))
        run_ncu(ran, out.parent / "ncu", left, log)
        save()
    _say(f"\nwrote {out} ({time.time() - t0:.0f} s in all)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
