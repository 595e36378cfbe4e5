"""``make record``: measure the course's kernels, the cuBLAS baselines and every experiment on this GPU.

    python -m helpers.record [--sizes 256 512 ...] [--out results/] [--quick]

The sweep's checked and timed rows at each size, every registered experiment and two extras (an independent
timer, the emulator's bit-for-bit match) go into ``results/<gpu-slug>.json`` with the GPU, versions and date.
A record takes minutes; what it has measured is saved as it goes (``results/<gpu-slug>.partial.json``), and
``--resume`` goes on from there after a run was stopped (Ctrl-C, a time limit); so does
``--update-experiments NAME ... --resume`` (``results/<gpu-slug>.update.partial.json``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from . import clocks, emulate
from .cublas import BASELINES
from .device import require_gpu
from .experiments import load_all as load_experiments
from .experiments import RECORDING, unsupported
from .experiments.sweep import left_out, measure_size, series, sweep  # noqa: F401  (helpers.record.sweep)
from .hopper import L2_PROMOTION
from .kernels import KERNELS
from .launch import launcher
from .memory import cap_sizes, release
from .results import COURSE_RECORD, RESULTS_DIR, SCHEMA, load_record, write_json
from .timing import DEFAULT_FLUSH, FLUSH_TEXT, benchmark

DEFAULT_SIZES = [256, 384, 512, 768, 1000, 1024, 1536, 2048, 3000, 4096, 6144, 8192]
QUICK_SIZES = [256, 1000, 1024, 4096]


def timing_agreement(n=4096, log=print):
    """Our harness vs triton.testing.do_bench (torch events) on cupy.matmul float16 at n^3, each timing with
    the clocks read while it ran."""
    import cupy

    try:
        import torch  # noqa: F401
        from triton.testing import do_bench
    except Exception as exc:
        return {"skipped": f"torch/triton not available: {exc}"}
    rng = cupy.random.default_rng(7)
    A = rng.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
    B = rng.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
    C = cupy.empty((n, n), dtype=cupy.float16)
    fn = lambda: cupy.matmul(A, B, out=C)  # noqa: E731
    t1 = benchmark(fn, reps=100)
    theirs, theirs_clocks = clocks.while_running(lambda: float(do_bench(fn, warmup=25, rep=200,
                                                                          return_mode="median")))
    t2 = benchmark(fn, reps=100)
    ours, ours2 = t1.median_ms, t2.median_ms
    out = {"size": n, "op": "cupy.matmul float16 (cuBLAS, FP32 accumulate)",
           "harness_median_ms": [round(ours, 5), round(ours2, 5)],
           "harness_clocks": [t1.clocks or {}, t2.clocks or {}],
           "do_bench_median_ms": round(theirs, 5),
           "do_bench_clocks": theirs_clocks,
           "ratio": round(np.median([ours, ours2]) / theirs, 4),
           "independent_timer": "triton.testing.do_bench (torch CUDA events, 256 MB L2 flush)"}
    log(f"timing agreement at {n}: harness {ours:.4f}/{ours2:.4f} ms, do_bench {theirs:.4f} ms, "
        f"ratio {out['ratio']:.3f}")
    return out


def emulator_probe(M=128, N=128, K=1024, seed=11, log=print):
    """Bit-for-bit agreement of the CPU emulation with this GPU, for several model parameters."""
    import cupy

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    out = {"shape": [M, N, K]}
    run, C, _ = launcher("gemm_fp32_kernel", cupy.asarray(A), cupy.asarray(B))
    run()
    out["gemm_fp32_kernel"] = float(np.mean(cupy.asnumpy(C) == emulate.fp32_fma_chain(A, B)))
    A16, B16 = A.astype(np.float16), B.astype(np.float16)
    for name, acc in (("wmma_mixed_gemm_kernel", "fp32"), ("wmma_fp16acc_gemm_kernel", "fp16")):
        run, C, _ = launcher(name, cupy.asarray(A16), cupy.asarray(B16))
        run()
        g = cupy.asnumpy(C)
        res = {}
        for blk in (4, 8, 16, 32):
            for extra in (0, 1, 2, 3):
                m = emulate.TensorCoreModel(blk, extra, "probe")
                e = emulate.tensor_core_gemm(A16, B16, inputs="fp16", acc=acc, model=m)
                res[f"b{blk}_e{extra}"] = float(np.mean(g == e))
        out[name] = res
        best = max(res, key=res.get)
        log(f"emulator probe {name}: best {best} identical {res[best]:.4f}")
    log(f"emulator probe gemm_fp32_kernel: identical {out['gemm_fp32_kernel']:.4f}")
    return out


# Measurements stored under the record's "extras"; --update-experiments re-runs them by name too.
EXTRAS = {"timing_agreement": timing_agreement, "emulator_probe": emulator_probe}


def update_experiments(gpu, names, out: Path, resume: bool = False) -> int:
    """Re-run some experiments (or extras) into the existing record of this GPU (same GPU name required). Each one
    finished is saved in <gpu>.update.partial.json (a long one, rung by rung: going_on); with `resume`, a run
    stopped part way goes on from there."""
    path = out / f"{gpu.slug}.json"
    rec = load_record(path)
    if rec.gpu_name != gpu.name:
        print(f"{path} was recorded on {rec.gpu_name}, not {gpu.name}: run a full `make record`.",
              file=sys.stderr)
        return 2
    registry = load_experiments()
    unknown = [n for n in names if n not in registry and n not in EXTRAS]
    if unknown:
        print(f"unknown experiments {unknown}; known: {sorted(registry)}, extras {sorted(EXTRAS)}",
              file=sys.stderr)
        return 2
    progress = out / f"{gpu.slug}.update{PARTIAL}"
    plan = {"gpu": gpu.name, "update": list(names)}
    state = (resume_state(progress, plan) if resume else None) or {**plan, "done": {}}

    def save():
        save_progress(progress, state)

    meta = rec.meta
    for name in names:
        if name in state["done"]:
            print(f"experiment {name}: measured by the stopped run", flush=True)
        else:
            t1 = time.time()
            print(f"experiment {name}", flush=True)
            fn = EXTRAS.get(name) or registry[name]
            state["done"][name] = fn(**going_on(name, fn, state, save))
            state.get("unfinished", {}).pop(name, None)
            save()
            print(f"  done in {time.time() - t1:.1f} s", flush=True)
        if name in EXTRAS:
            meta.setdefault("extras", {})[name] = state["done"][name]
        else:
            meta.setdefault("experiments", {})[name] = RECORDING[name] = state["done"][name]
    meta.setdefault("updates", []).append({
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "experiments": names,
        "flush": DEFAULT_FLUSH,
        "l2_promotion": L2_PROMOTION,
        "versions": {"driver_cuda": gpu.driver, "cuda_runtime": gpu.runtime, "cupy": gpu.cupy,
                     "numpy": np.__version__}})
    write_json(meta, gpu.slug, out)
    progress.unlink(missing_ok=True)
    print(f"updated {path}: experiments {names}")
    return 0


PARTIAL = ".partial.json"      # a record in progress: results/<gpu>.partial.json (no lesson reads it)


def save_progress(progress: Path, state: dict) -> None:
    """A record (or update) in progress written to `progress` whole: a stop mid-write leaves the last one."""
    progress.parent.mkdir(parents=True, exist_ok=True)
    tmp = progress.with_name(progress.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    tmp.replace(progress)


def resume_state(progress: Path, plan: dict) -> dict | None:
    """The record in progress in `progress`, if it was started on this GPU with the same sizes, seed and experiments
    (`plan`); else None (said why), and the record starts over."""
    if not progress.exists():
        print(f"nothing to resume: no {progress}; starting the record from the beginning", flush=True)
        return None
    try:
        state = json.loads(progress.read_text())
    except ValueError as exc:
        print(f"{progress} is not readable JSON ({exc}); starting the record from the beginning", flush=True)
        return None
    differs = [k for k in plan if state.get(k) != plan[k]]
    if differs:
        print(f"{progress} was started with other settings ({', '.join(f'{k}={state.get(k)!r}' for k in differs)}); "
              "starting the record from the beginning", flush=True)
        return None
    return state


def going_on(name: str, fn, state: dict, save) -> dict:
    """The keyword arguments that let a long experiment save its rows part way (it takes `done` and `checkpoint`):
    its rows so far go into the record in progress under `unfinished`, and a resumed record hands them back."""
    if "checkpoint" not in inspect.signature(fn).parameters:
        return {}
    unfinished = state.setdefault("unfinished", {})

    def checkpoint(rows):
        unfinished[name] = rows
        save()

    if unfinished.get(name):
        print(f"  going on from the {len(unfinished[name])} rows a stopped run measured", flush=True)
    return {"done": unfinished.get(name), "checkpoint": checkpoint}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--quick", action="store_true", help=f"only sizes {QUICK_SIZES}")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--only-experiments", nargs="*", default=None,
                    help="run only these experiments (default: all)")
    ap.add_argument("--resume", action="store_true",
                    help=f"go on with the record that a run stopped part way left in <out>/<gpu>{PARTIAL} "
                         "(it is saved after the sizes and after each experiment); with --update-experiments, "
                         f"the update that a stopped run left in <out>/<gpu>.update{PARTIAL}")
    ap.add_argument("--update-experiments", nargs="+", default=None, metavar="NAME",
                    help="run only these experiments (or extras: timing_agreement, emulator_probe) and add "
                         "them to this GPU's existing record, leaving its other measurements as they are "
                         "(the update is logged in it)")
    args = ap.parse_args(argv)
    try:
        gpu = require_gpu("make record")
    except Exception as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.update_experiments:
        return update_experiments(gpu, args.update_experiments, Path(args.out), args.resume)
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    t0 = time.time()
    plan = {"gpu": gpu.name, "sizes": sizes, "seed": args.seed, "only_experiments": args.only_experiments}
    progress = Path(args.out) / f"{gpu.slug}{PARTIAL}"
    state = resume_state(progress, plan) if args.resume else None
    if state is None:
        state = {**plan, "rows": None, "extras": None, "experiments": {}, "seconds": 0.0}
    else:
        print(f"resuming {progress}: the sizes {'done' if state['rows'] is not None else 'to measure'}; "
              f"experiments done: {', '.join(state['experiments']) or 'none'}", flush=True)
    spent = state["seconds"]

    def save():
        """The record so far, in <gpu>.partial.json (replaced whole, never half-written): `--resume` goes on from it."""
        state["seconds"] = round(spent + time.time() - t0, 1)
        save_progress(progress, state)

    if state["rows"] is None:
        rows = []
        kept, note = cap_sizes(sizes, what="make record")
        if note:
            print(note, flush=True)
        _, skipped = left_out(list(KERNELS) + list(BASELINES), gpu)
        if skipped:
            print(skipped, flush=True)
        for i, n in enumerate(sizes):
            if n not in kept:
                continue
            print(f"n = {n}", flush=True)
            rows += measure_size(n, n, n, args.seed + i)
            release()
        state["rows"], state["extras"] = rows, {name: fn() for name, fn in EXTRAS.items()}
        save()
    rows, extras, experiments = state["rows"], state["extras"], state["experiments"]
    RECORDING.update(experiments)
    for name, fn in sorted(load_experiments().items()):
        if args.only_experiments and name not in args.only_experiments or name in experiments:
            continue
        if unsupported(name, gpu):
            print(f"{unsupported(name, gpu)}: not recorded here", flush=True)
            continue
        t1 = time.time()
        print(f"experiment {name}", flush=True)
        experiments[name] = RECORDING[name] = fn(**going_on(name, fn, state, save))
        state.get("unfinished", {}).pop(name, None)
        print(f"  done in {time.time() - t1:.1f} s", flush=True)
        save()
    experiments = {name: experiments[name] for name in sorted(experiments)}
    failed = [f"{r['kernel']}@{r['m']}" for r in rows if not r["passed"]]
    meta = {
        "schema": SCHEMA,
        "kind": "gpu-record",
        "command": "make record (python -m helpers.record " + " ".join(argv or sys.argv[1:]) + ")",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": {"name": gpu.name, "cc": list(gpu.cc), "sms": gpu.sms, "l2_bytes": gpu.l2_bytes,
                "mem_bytes": gpu.mem_bytes, "mem_bw_gbs": gpu.mem_bw_gbs,
                "peaks": gpu.peaks.__dict__ if gpu.peaks else None},
        "versions": {"driver_cuda": gpu.driver, "cuda_runtime": gpu.runtime, "nvrtc": gpu.nvrtc,
                     "cupy": gpu.cupy, "numpy": np.__version__, "python": platform.python_version()},
        "method": ("fresh standard-normal FP32 inputs per size (FP16 kernels get them rounded); NaN-poisoned "
                   "output checked against float64 with helpers.numerics.tolerance; CUDA events around each "
                   f"launch, L2 flushed before each ({DEFAULT_FLUSH!r}: {FLUSH_TEXT[DEFAULT_FLUSH]}), 3 warm-up launches, median of "
                   "10-100 launches; tflops = 2MNK / median; gbs = minimum bytes / median; rel_err against "
                   "the float64 product of the FP32 inputs, rel_err_acc against the product of the "
                   "kernel's own (rounded) inputs"),
        "flush": DEFAULT_FLUSH,
        "l2_promotion": L2_PROMOTION,           # what the Hopper kernels' tensor maps asked L2 to fetch per miss
        "seconds": round(spent + time.time() - t0, 1),
        "failed_checks": failed,
        "records": rows,
        "extras": extras,
        "experiments": experiments,
    }
    path = write_json(meta, gpu.slug, args.out)
    progress.unlink(missing_ok=True)
    print(f"wrote {path} ({len(rows)} records, {meta['seconds']} s); failed checks: {failed or 'none'}")
    if path.stem != COURSE_RECORD:
        print(f"The lessons keep reading the course's record ({COURSE_RECORD}.json); `export COURSE_RECORD="
              f"{path.stem}` before starting JupyterLab makes them read this one.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
