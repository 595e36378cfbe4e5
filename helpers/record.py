"""``make record``: measure the course's kernels and cuBLAS baselines on this GPU, and every experiment.

    python -m helpers.record [--sizes 256 512 ...] [--out results/] [--quick]

For each size it draws fresh standard-normal FP32 inputs, runs each kernel of the
registry marked ``sweep`` (helpers.kernels; the ladder's rungs are measured by their
own experiment) once on a NaN-poisoned output and checks it against the float64
product with the course tolerance, then times it (``timing.benchmark``: events,
warm-up, cold L2, median of many). Writes ``results/<gpu-slug>.json`` with the GPU, versions and
date. Sizes that are not multiples of 16 run the WMMA kernels zero-padded (the
row says ``padded``); the time is the kernel's on the padded problem, the
TFLOP/s counts only the useful 2 M N K.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import platform
import sys
import time
from pathlib import Path

import numpy as np

from . import clocks, emulate
from .cublas import BASELINES
from .experiments import load_all as load_experiments
from .device import backend, require_gpu
from .kernels import KERNELS
from .launch import launcher
from .numerics import rel_fro_error, reference_gemm
from .results import RESULTS_DIR, SCHEMA, write_json
from .timing import DEFAULT_FLUSH, FLUSH_TEXT, benchmark, gemm_flops, gemm_min_bytes

DEFAULT_SIZES = [256, 384, 512, 768, 1000, 1024, 1536, 2048, 3000, 4096, 6144, 8192]
QUICK_SIZES = [256, 1000, 1024, 4096]


def _row(name, M, N, K, inputs, acc, t, chk, rel_acc, padded, in_bytes, out_bytes):
    return {
        "kernel": name, "m": M, "n": N, "k": K, "dtype_in": inputs, "acc": acc,
        "median_ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6), "p90_ms": round(t.p90_ms, 6),
        "reps": t.n, **(t.clocks or {}), "tflops": round(gemm_flops(M, N, K) / (t.median_ms * 1e-3) / 1e12, 4),
        "gbs": round(gemm_min_bytes(M, N, K, in_bytes, out_bytes) / (t.median_ms * 1e-3) / 1e9, 3),
        **chk.fields(), "rel_err_acc": float(f"{rel_acc:.4e}"), "padded": padded,
    }


def measure_size(n_m, n_n, n_k, seed, log=print, names=None):
    """Check and time the course kernels and cuBLAS baselines (all, or those in `names`) at one size."""
    import cupy

    rng = cupy.random.default_rng(seed)
    A32 = rng.standard_normal((n_m, n_k), dtype=cupy.float32)
    B32 = rng.standard_normal((n_k, n_n), dtype=cupy.float32)
    A16, B16 = A32.astype(cupy.float16), B32.astype(cupy.float16)
    ref = reference_gemm(A32, B32)
    ref16 = reference_gemm(A16, B16)
    rows = []
    bf16 = None                                   # BF16 kernels take uint16 bit patterns
    cc = backend().gpu.cc
    for spec in KERNELS.values():
        if not spec.sweep or (names is not None and spec.name not in names) or spec.skip_message(cc):
            continue                              # left_out() says which this GPU cannot run
        if spec.in_dtype == "uint16":
            if bf16 is None:
                from .formats import from_bf16_bits, to_bf16_bits

                Abf, Bbf = to_bf16_bits(A32), to_bf16_bits(B32)
                bf16 = (Abf, Bbf, reference_gemm(from_bf16_bits(Abf), from_bf16_bits(Bbf)))
            A, B, ref_acc = bf16
        elif spec.in_dtype == "float32":          # fp32, and tf32 (rounded on the device)
            A, B, ref_acc = A32, B32, ref
            if spec.inputs == "tf32":
                from .formats import round_tf32_rna

                ref_acc = reference_gemm(round_tf32_rna(A32), round_tf32_rna(B32))
        else:
            A, B, ref_acc = A16, B16, ref16
        padded = spec.padded(n_m, n_n, n_k) != (n_m, n_n, n_k)
        run, C, (M, N) = launcher(spec.name, A, B, pad=padded)
        run()
        Cv = C[:M, :N]
        chk = spec.check(Cv, A32, B32, reference=ref, backend="GPU")
        t = benchmark(run)
        rows.append(_row(spec.name, n_m, n_n, n_k, spec.inputs, spec.acc, t, chk, rel_fro_error(Cv, ref_acc),
                         padded, np.dtype(spec.in_dtype).itemsize, np.dtype(spec.out_dtype).itemsize))
        log(f"  {spec.name:26s} {rows[-1]['median_ms']:9.4f} ms {rows[-1]['tflops']:8.2f} TFLOP/s "
            f"rel_err {rows[-1]['rel_err']:.2e} {'ok' if chk.passed else 'FAIL'}")
    for b in BASELINES.values():
        if backend().gpu.cc < b.min_cc or (names is not None and b.name not in names):
            continue
        A, B, ref_acc = (A32, B32, ref) if b.in_dtype == "float32" else (A16, B16, ref16)
        C = cupy.full((n_m, n_n), np.nan, dtype=b.out_dtype)
        b.run(A, B, C)
        chk = b.check(C, A32, B32, reference=ref, backend="GPU")
        t = benchmark(lambda: b.run(A, B, C))
        out_fmt = "fp16" if b.out_dtype == "float16" else "fp32"
        rows.append(_row(b.name, n_m, n_n, n_k, b.inputs, b.acc, t, chk,
                         rel_fro_error(C, ref16 if b.in_dtype == "float16" else ref), False,
                         np.dtype(b.in_dtype).itemsize, np.dtype(b.out_dtype).itemsize))
        rows[-1]["output"] = out_fmt
        log(f"  {b.name:26s} {rows[-1]['median_ms']:9.4f} ms {rows[-1]['tflops']:8.2f} TFLOP/s "
            f"rel_err {rows[-1]['rel_err']:.2e} {'ok' if chk.passed else 'FAIL'}")
    del A32, B32, A16, B16, ref, ref16, bf16
    cupy.get_default_memory_pool().free_all_blocks()
    return rows


def left_out(names, gpu) -> tuple[list[str], str | None]:
    """(those of `names` that `gpu` can measure, one line naming the others and why, or None). The sweep
    and `make record` measure kernels and cuBLAS baselines this GPU runs and leave the rest to the record
    of a GPU that runs them (a T4, compute capability 7.5: no BF16 or TF32 WMMA, no TF32 cuBLAS)."""
    keep, out = [], {}
    for name in names:
        if name in KERNELS:
            why = KERNELS[name].unsupported(gpu.cc) if KERNELS[name].sweep else None
        elif name in BASELINES and tuple(gpu.cc) < tuple(BASELINES[name].min_cc):
            c = BASELINES[name].min_cc
            why = f"it needs compute capability {c[0]}.{c[1]} (sm_{c[0]}{c[1]}), this GPU is {gpu.cc[0]}.{gpu.cc[1]}."
        else:
            why = None
        if why:
            out.setdefault(why.removeprefix("it needs ").rstrip("."), []).append(name)
        else:
            keep.append(name)
    if not out:
        return keep, None
    return keep, (f"not measured on {gpu.name}: " + "; ".join(f"{', '.join(v)} (needs {k})" for k, v in out.items())
                  + " - the record of a GPU that runs them has their numbers")


def _whole(v) -> bool:
    """A whole number: int or numpy integer, not a bool (numpy's included)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def sweep_names(names) -> list[str]:
    """`names` for sweep(): one name or a list of kernel names, baseline names, rung numbers or registry
    entries, as a list of names the sweep measures; InputError / UnknownKernelError with the fix otherwise."""
    from .errors import InputError, UnknownKernelError
    from .kernels import GemmKernel, lookup

    swept = [k for k, spec in KERNELS.items() if spec.sweep] + list(BASELINES)
    fix = f"pass a list of these names: {', '.join(swept)} (rung 1 is wmma_gemm_naive)."
    if isinstance(names, (str, GemmKernel)) or _whole(names):
        names = [names]                                 # one name: a list of one
    try:
        names = list(names)
    except TypeError:
        raise InputError(f"names={names!r} is not a list of kernel names.", fix) from None
    if not names:
        raise InputError("names is empty: the sweep would measure nothing.", fix)
    out = []
    for key in names:
        if isinstance(key, str) and key in BASELINES:
            out.append(key)
            continue
        if not isinstance(key, (str, GemmKernel)) and not _whole(key):
            raise InputError(f"{key!r} ({type(key).__name__}) in names is not a kernel name.", fix)
        try:
            spec = lookup(int(key) if _whole(key) else key)
        except UnknownKernelError:
            raise UnknownKernelError(f"the sweep knows no kernel {key!r}.", fix) from None
        if not spec.sweep:
            raise InputError(f"{spec.name}" + (f" (rung {spec.rung})" if spec.rung is not None else "")
                             + " is not measured by the sweep: its numbers come from its lesson's experiment "
                             + ("(helpers.run_or_load('ladder' or 'hopper'))." if spec.rung is not None else "."), fix)
        out.append(spec.name)
    return list(dict.fromkeys(out))


def sweep_sizes(sizes) -> list[int]:
    """`sizes` for sweep(): one size or a list of whole numbers >= 1 (numpy integers too), as Python ints."""
    from .errors import InputError

    fix = "pass square sizes as whole numbers, e.g. sizes=[256, 1024, 4096] (or one size, sizes=1024)."
    if _whole(sizes):
        sizes = [sizes]
    if isinstance(sizes, (str, bytes)):
        raise InputError(f"sizes={sizes!r} is text, not sizes.", fix)
    try:
        sizes = list(sizes)
    except TypeError:
        raise InputError(f"sizes={sizes!r} ({type(sizes).__name__}) is not a list of sizes.", fix) from None
    if not sizes:
        raise InputError("sizes is empty: the sweep would measure nothing.", fix)
    for n in sizes:
        if not _whole(n) or n < 1:
            raise InputError(f"size {n!r} ({type(n).__name__}) is not a whole number >= 1.", fix)
    return [int(n) for n in sizes]


def sweep(names, sizes, seed=2024, log=None):
    """Rows for kernels/baselines `names` at square `sizes`: measured live on a GPU, else recorded.

    names: kernel or baseline names, or rung numbers (one, or a list); sizes: one size or a list.
    Returns an experiments.Outcome (rows, live, source label for plot titles).
    """
    from .errors import InputError
    from .experiments import Outcome
    from .results import load_latest

    names, sizes = sweep_names(names), sweep_sizes(sizes)
    if not _whole(seed):
        raise InputError(f"seed={seed!r} is not a whole number.", "pass an integer seed, e.g. seed=2024.")
    b = backend()
    if b.is_gpu:
        from .errors import gpu_errors
        from .memory import cap_sizes, release

        names, skipped = left_out(names, b.gpu)
        if skipped:
            print(skipped)
        kept, note = cap_sizes(sizes, what="sweep")
        if note:
            print(note)
        rows = []
        for n in kept:
            i = list(sizes).index(n)
            with gpu_errors(f"the sweep at size {n}"):
                rows += measure_size(n, n, n, seed + i, log=log or (lambda *a, **k: None), names=names)
            release()
        source = f"measured live on {b.gpu.name}"
        if len(kept) < len(list(sizes)):
            source += f" (sizes {', '.join(str(n) for n in sizes if n not in kept)} skipped: GPU memory)"
        return Outcome(rows, True, source)
    rec = load_latest()
    square = [r for r in rec.rows if r["m"] == r["n"] == r["k"]]
    _recorded_or_refuse(rec, square, names, sizes)
    rows = [r for r in square if r["kernel"] in names and r["m"] in sizes]
    return Outcome(rows, False, f"{rec.label} (no GPU here: CPU backend)")


def _recorded_or_refuse(rec, square, names, sizes) -> None:
    """ResultsError naming what the record has when a kernel, or a size, of the sweep has no row in it."""
    from .errors import ResultsError

    fix = "sweep what the record has, or run the notebook on a GPU to measure the rest live."
    have = {r["kernel"] for r in square}
    missing = [n for n in names if n not in have]
    if missing:
        raise ResultsError(f"the newest record ({rec.path.name}) has no rows for {', '.join(missing)}; it has "
                           f"{', '.join(dict.fromkeys(r['kernel'] for r in square))}.", fix)
    recorded = sorted({r["m"] for r in square if r["kernel"] in names})
    absent = [n for n in sizes if n not in recorded]
    if absent:
        raise ResultsError(f"the newest record ({rec.path.name}) has no square size {', '.join(map(str, absent))} "
                           f"for {', '.join(names)}; its sizes are {', '.join(map(str, recorded))}.", fix)


def series(rows, kernel, y="tflops"):
    """(sizes, values) of one kernel (a name or a rung number) from sweep rows (or the sweep's Outcome),
    sorted by size; empty when the sweep has no rows for it (a kernel this GPU does not run)."""
    from .errors import InputError

    rows = getattr(rows, "data", rows)              # the Outcome itself: its rows
    if _whole(kernel):
        kernel = sweep_names([kernel])[0]
    rs = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["m"])
    lack = [r for r in rs if y not in r]
    if lack:
        raise InputError(f"the sweep's rows have no field {y!r}; they have {', '.join(lack[0])}.",
                         "pass y= one of those, e.g. y='tflops', y='median_ms' or y='gbs'.")
    return [r["m"] for r in rs], [r[y] for r in rs]


def timing_agreement(n=4096, log=print):
    """Our harness vs triton.testing.do_bench (torch events) on cupy.matmul float16 at n^3, each
    timing with the clocks read while it ran (helpers.clocks: ``harness_clocks``, one per harness
    run, and ``do_bench_clocks``, sampled by a thread while do_bench ran)."""
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


# Measurements stored under the record's "extras" rather than "experiments"; --update-experiments
# re-runs them by name too.
EXTRAS = {"timing_agreement": timing_agreement, "emulator_probe": emulator_probe}


def update_experiments(gpu, names, out: Path) -> int:
    """Re-run some experiments (or extras) into the existing record of this GPU (same GPU name required)."""
    from .results import load_record

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
    meta = rec.meta
    for name in names:
        t1 = time.time()
        print(f"experiment {name}", flush=True)
        if name in EXTRAS:
            meta.setdefault("extras", {})[name] = EXTRAS[name]()
        else:
            meta.setdefault("experiments", {})[name] = registry[name]()
        print(f"  done in {time.time() - t1:.1f} s", flush=True)
    meta.setdefault("updates", []).append({
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "experiments": names,
        "flush": DEFAULT_FLUSH,
        "versions": {"driver_cuda": gpu.driver, "cuda_runtime": gpu.runtime, "cupy": gpu.cupy,
                     "numpy": np.__version__}})
    write_json(meta, gpu.slug, out)
    print(f"updated {path}: experiments {names}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--quick", action="store_true", help=f"only sizes {QUICK_SIZES}")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--only-experiments", nargs="*", default=None,
                    help="run only these experiments (default: all)")
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
        return update_experiments(gpu, args.update_experiments, Path(args.out))
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    import cupy

    t0 = time.time()
    rows = []
    from .memory import cap_sizes, release

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
    extras = {name: fn() for name, fn in EXTRAS.items()}
    experiments = {}
    from .experiments import unsupported

    for name, fn in sorted(load_experiments().items()):
        if args.only_experiments and name not in args.only_experiments:
            continue
        if unsupported(name, gpu):
            print(f"{unsupported(name, gpu)}: not recorded here", flush=True)
            continue
        t1 = time.time()
        print(f"experiment {name}", flush=True)
        experiments[name] = fn()
        print(f"  done in {time.time() - t1:.1f} s", flush=True)
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
        "seconds": round(time.time() - t0, 1),
        "failed_checks": failed,
        "records": rows,
        "extras": extras,
        "experiments": experiments,
    }
    path = write_json(meta, gpu.slug, args.out)
    print(f"wrote {path} ({len(rows)} records, {meta['seconds']} s); failed checks: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
