"""The sweep of lessons 1-3 (``helpers.sweep``, ``helpers.series``): each kernel and cuBLAS baseline checked
against float64 and timed at square sizes, live on a GPU or read from the newest record. Sizes off a kernel's
tile run it zero-padded (``padded``); TFLOP/s count only the useful 2 M N K.
"""
from __future__ import annotations

import numpy as np

from .. import device, memory, results
from ..cublas import BASELINES
from ..errors import InputError, ResultsError, UnknownKernelError, gpu_errors
from ..formats import from_bf16_bits, round_tf32_rna, to_bf16_bits
from ..kernels import KERNELS, GemmKernel, lookup
from ..launch import launcher
from ..numerics import rel_fro_error, reference_gemm
from ..timing import benchmark, gemm_flops, gemm_min_bytes
from . import Outcome


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
    cc = device.backend().gpu.cc
    for spec in KERNELS.values():
        if not spec.sweep or (names is not None and spec.name not in names) or spec.skip_message(cc):
            continue                              # left_out() says which this GPU cannot run
        if spec.in_dtype == "uint16":
            if bf16 is None:
                Abf, Bbf = to_bf16_bits(A32), to_bf16_bits(B32)
                bf16 = (Abf, Bbf, reference_gemm(from_bf16_bits(Abf), from_bf16_bits(Bbf)))
            A, B, ref_acc = bf16
        elif spec.in_dtype == "float32":          # fp32, and tf32 (rounded on the device)
            A, B, ref_acc = A32, B32, ref
            if spec.inputs == "tf32":
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
        if device.backend().gpu.cc < b.min_cc or (names is not None and b.name not in names):
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
    """(those of `names` that `gpu` can measure, one line naming the others and why, or None)."""
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
    """`names` for sweep() (a name, rung number or registry entry, or a list of them) as a list of names."""
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
    """`sizes` for sweep() (one size or a list of whole numbers >= 1) as a list of ints."""
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
    """Rows for kernels or baselines `names` (or rung numbers) at square `sizes`, measured live on a GPU, else
    recorded: an experiments.Outcome (rows, source)."""
    names, sizes = sweep_names(names), sweep_sizes(sizes)
    if not _whole(seed):
        raise InputError(f"seed={seed!r} is not a whole number.", "pass an integer seed, e.g. seed=2024.")
    b = device.backend()
    if b.is_gpu:
        names, skipped = left_out(names, b.gpu)
        if skipped:
            print(skipped)
        kept, note = memory.cap_sizes(sizes, what="sweep")
        if note:
            print(note)
        rows = []
        for n in kept:
            i = list(sizes).index(n)
            with gpu_errors(f"the sweep at size {n}"):
                rows += measure_size(n, n, n, seed + i, log=log or (lambda *a, **k: None), names=names)
            memory.release()
        source = f"measured live on {b.gpu.name}"
        if len(kept) < len(list(sizes)):
            source += f" (sizes {', '.join(str(n) for n in sizes if n not in kept)} skipped: GPU memory)"
        return Outcome(rows, True, source)
    rec = results.load_latest()
    square = [r for r in rec.rows if r["m"] == r["n"] == r["k"]]
    _recorded_or_refuse(rec, square, names, sizes)
    rows = [r for r in square if r["kernel"] in names and r["m"] in sizes]
    return Outcome(rows, False, f"{rec.label} (no GPU here: CPU backend)")


def _recorded_or_refuse(rec, square, names, sizes) -> None:
    """ResultsError naming what the record has when a kernel or size of the sweep has no row in it."""
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
    """(sizes, values) of one kernel (a name or rung number) from sweep rows or their Outcome, sorted by size."""
    rows = getattr(rows, "data", rows)              # the Outcome itself: its rows
    if _whole(kernel):
        kernel = sweep_names([kernel])[0]
    rs = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["m"])
    lack = [r for r in rs if y not in r]
    if lack:
        raise InputError(f"the sweep's rows have no field {y!r}; they have {', '.join(lack[0])}.",
                         "pass y= one of those, e.g. y='tflops', y='median_ms' or y='gbs'.")
    return [r["m"] for r in rs], [r[y] for r in rs]
