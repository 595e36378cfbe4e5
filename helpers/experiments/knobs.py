"""Lessons 5 and 6: what each compile-time knob of a rung does.

Experiment ``knobs`` (``make record``): every rung with knobs measured as recorded, then with each other value of
each knob, one knob at a time: compiled with ``-D<macro>=<value>``, checked at a size that is no tile multiple and at
the timed size, then timed at 4096^3 next to cuBLAS FP16. The Hopper rungs run in one child process per rung.
Reader (no GPU): ``knob_sweep`` (one knob's recorded sweep as a table).
"""
from __future__ import annotations

import os

from ..tryout import DEFAULT_SIZE, KNOBS, SEED
from . import experiment

RUNGS_SWEPT = tuple(KNOBS)         # 2-6: kernels/ladder.cu; 8-30: kernels/hopper_rungNN_sm90a.cu
TIMING_SIZE = 4096


def variants(rung: int) -> list[tuple]:
    """(knob, value) pairs of the sweep of `rung`: (None, None), the rung as recorded, first; then each knob's other
    values, one knob at a time (a knob that forces a build, CT_M, also at its default)."""
    from ..kernels import ALL_RUNGS
    from ..tryout import _resolve

    defaults = _resolve(ALL_RUNGS[rung], {})
    out: list[tuple] = [(None, None)]
    for name, k in KNOBS[rung].items():
        out += [(name, v) for v in k.allowed(defaults) if v != defaults[name] or k.forces]
    return out


def _head(spec, knob, value, n) -> dict:
    return {"rung": spec.rung, "kernel": spec.name, "knob": knob, "value": value, "default": knob is None,
            "m": n, "n": n, "k": n}


def _precompile(jobs, log=None) -> int:
    """Compile the variants in a few threads (NVRTC runs outside the GIL) so that the serial measurement finds them
    compiled: jobs are (file, options, arch), arch None or 'sm_90a'. A failure is left for the serial path to report;
    returns the number of failures."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from ..compile import arch_cubin, load_module

    def one(job):
        file, opts, arch = job
        try:
            arch_cubin(file, arch, None, opts) if arch else load_module(file, opts)
            return 0
        except Exception:
            return 1

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) - 1))) as pool:
        failed = sum(pool.map(one, jobs))
    if log:
        log(f"compiled {len(jobs)} variants in {time.time() - t0:.1f} s ({failed} left to the serial path)")
    return failed


def _jobs(rungs) -> list:
    from ..compile import arch_target
    from ..tryout import defines, options, validate_knobs

    jobs = []
    for r in rungs:
        for knob, value in variants(r):
            spec, _, given = validate_knobs(r, {knob: value} if knob else {})
            jobs.append((spec.file, options(defines(spec, given)), arch_target(spec.only_cc) if spec.only_cc else None))
    return list(dict.fromkeys(jobs))


def rung_rows(rung: int, A, B, ref, Ao, Bo, ref_o, cublas_ms=None, log=None) -> list[dict]:
    """GPU: the sweep of one rung on timed inputs A, B (ref: their float64 product) and odd-sized Ao, Bo."""
    from ..clocks import clock_text
    from ..device import require_gpu
    from ..errors import KernelCompileError
    from ..launch import _variant, build_for, kernel_resources, launch_path, launcher, resident_blocks
    from ..timing import benchmark, gemm_flops
    from ..tryout import _smem_limit, check_variant, defines, defines_text, options, validate_knobs, variant_entry

    gpu = require_gpu("knobs")
    n = A.shape[0]
    flops = gemm_flops(n, n, A.shape[1])
    rows, default_ms = [], None
    for knob, value in variants(rung):
        spec, settings, given = validate_knobs(rung, {knob: value} if knob else {})
        entry = variant_entry(spec, settings)
        defs = defines(spec, given)
        var = _variant(None, options(defs))
        row = dict(_head(spec, knob, value, n), defines=defines_text(defs), settings=settings,
                   dyn_smem=entry.dyn_smem, smem_static=entry.smem_static, tile_k=entry.tile_k)
        if entry.dyn_smem > _smem_limit():
            rows.append(dict(row, skipped=f"needs {entry.dyn_smem} bytes of shared memory per block; {gpu.name} "
                                          f"allows {_smem_limit()}"))
            continue
        if log:
            log(f"rung {rung} {row['defines'] or '(as recorded)'}")
        try:
            row.update(kernel_resources(entry, **var))
        except KernelCompileError as exc:
            rows.append(dict(row, passed=False, verdict="does not compile", error=str(exc)[-2000:]))
            continue
        b = entry
        if entry.persistent:                   # the build the launcher uses at n (rungs 25-26 choose it per shape)
            b, opts = build_for(entry, n, n, A.shape[1] * A.itemsize, B.strides[0], None, var.get("options", ()))
            row["resident"] = resident_blocks(b, options=opts)[1]
        odd = check_variant(entry, var, Ao, Bo, ref_o)
        big = check_variant(entry, var, A, B, ref) if odd["passed"] else None
        failed = odd if not odd["passed"] else (big if not big["passed"] else None)
        row.update(passed=failed is None, verdict=(failed or big)["verdict"], check_odd=odd["check"],
                   check=(big or odd)["check"], odd_size=odd["size"])
        if failed is not None:
            row.update(where=failed.get("where", ""), mismatch=failed.get("details", ""))
        else:
            t = benchmark(launcher(entry, A, B, pad=True, **var)[0], flops=flops)
            ms = t.median_ms
            default_ms = ms if knob is None else default_ms
            row.update(ms=round(ms, 6), p10_ms=round(t.p10_ms, 6), p90_ms=round(t.p90_ms, 6), reps=t.n,
                       tflops=round(flops / (ms * 1e-3) / 1e12, 4), **(t.clocks or {}),
                       vs_default=round(default_ms / ms, 4) if default_ms else None,
                       vs_cublas=round(cublas_ms / ms, 4) if cublas_ms else None)
            if log:
                log(f"  {row['tflops']:.1f} TFLOP/s, {clock_text(row)}")
        if entry.cluster is not None:
            row["launch_path"] = launch_path(b)    # the kernel launched: rung 25's where rung 29 builds it
        rows.append(row)
    return rows


def _cublas_ms(A, B) -> tuple[float, dict]:
    import cupy

    from ..cublas import BASELINES
    from ..timing import benchmark, gemm_flops

    (M, K), N = A.shape, B.shape[1]
    cub = BASELINES["cublas_fp16"]
    Cc = cupy.empty((M, N), dtype=cupy.float16)
    t = benchmark(lambda: cub.run(A, B, Cc), flops=gemm_flops(M, N, K))
    return t, cub


def _shared_inputs(spec, n, odd_size):
    from ..numerics import reference_gemm
    from ..tryout import _inputs

    A, B = _inputs(spec, n, n, n, SEED + 1)
    M, N, K = odd_size
    Ao, Bo = _inputs(spec, M, N, K, SEED)
    return A, B, reference_gemm(A, B), Ao, Bo, reference_gemm(Ao, Bo)


def isolated_rung_rows(rung: int, timing_size: int = TIMING_SIZE, odd_size=DEFAULT_SIZE) -> list[dict]:
    """The child-process side for an isolated rung: the same inputs as the parent's, cuBLAS timed here, rung_rows."""
    import sys

    from ..kernels import ALL_RUNGS
    from ..tryout import _plain

    def log(msg):
        print(msg, file=sys.stderr, flush=True)   # what a hung child was doing is in the parent's error

    _precompile(_jobs([rung]), log)
    A, B, ref, Ao, Bo, ref_o = _shared_inputs(ALL_RUNGS[rung], int(timing_size), tuple(odd_size))
    t, _ = _cublas_ms(A, B)
    return _plain(rung_rows(rung, A, B, ref, Ao, Bo, ref_o, cublas_ms=t.median_ms, log=log))


@experiment("knobs")
def knobs(rungs=RUNGS_SWEPT, timing_size=TIMING_SIZE, odd_size=DEFAULT_SIZE, log=None):
    """Every rung of `rungs` as recorded and with each knob changed alone (see the module docstring); a GPU measures
    the rungs it runs and gives 'skipped' rows for the others."""
    import time

    from ..device import require_gpu
    from ..isolate import run_isolated
    from ..kernels import ALL_RUNGS
    from ..timing import gemm_flops

    gpu = require_gpu("knobs")
    rungs = [int(r) for r in rungs]
    unknown = [r for r in rungs if r not in KNOBS]
    if unknown:
        from ..errors import InputError

        raise InputError(f"rungs {unknown} have no knobs; the sweep covers {', '.join(map(str, KNOBS))}.",
                         "pass rungs= a selection of those.")
    n = int(timing_size)
    t0 = time.time()
    say = (lambda msg: log(f"{time.time() - t0:6.1f} s  {msg}")) if log else None
    here = [r for r in rungs if ALL_RUNGS[r].skip_message(gpu.cc) is None and not ALL_RUNGS[r].isolate]
    _precompile(_jobs(here), say)
    A, B, ref, Ao, Bo, ref_o = _shared_inputs(ALL_RUNGS[rungs[0]], n, tuple(odd_size))
    t, cub = _cublas_ms(A, B)
    rows = [{"rung": 0, "kernel": cub.name, "knob": None, "value": None, "default": True, "m": n, "n": n, "k": n,
             "defines": "", "passed": True, "ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6),
             "p90_ms": round(t.p90_ms, 6), "reps": t.n, "tflops": round(gemm_flops(n, n, n) / (t.median_ms * 1e-3) / 1e12, 4),
             **(t.clocks or {})}]
    for r in rungs:
        spec = ALL_RUNGS[r]
        msg = spec.skip_message(gpu.cc)
        if msg:
            rows += [dict(_head(spec, knob, value, n), skipped=msg) for knob, value in variants(r)]
        elif spec.isolate:
            if say:
                say(f"rung {r}: in a child process")
            out = run_isolated("helpers.experiments.knobs:isolated_rung_rows", r, n, list(odd_size), timeout=420)
            if isinstance(out, dict):          # the child failed or hung: one row says so
                rows.append(dict(_head(spec, None, None, n), error=str(out.get("error", ""))[-3000:]))
            else:
                rows += out
        else:
            rows += rung_rows(r, A, B, ref, Ao, Bo, ref_o, cublas_ms=rows[0]["ms"], log=say)
    if say:
        say("done")
    return rows


# --------------------------------------------------------------------------- reading the record
def knob_rows(rows: list[dict], rung: int, knob: str) -> list[dict]:
    """One knob of one rung as recorded: a row per value, each with its speed over the rung as recorded (`ratio`),
    the spread both timings' p10 and p90 allow (`low`, `high`), its SM clock and whether its check passed."""
    from ..clocks import clock_text

    default = KNOBS[rung][knob].default
    mine = [r for r in rows if r["rung"] == rung and r.get("knob") in (None, knob)]
    base = next(r for r in mine if r.get("knob") is None)
    out = []
    for r in sorted(mine, key=lambda r: default if r.get("knob") is None else r["value"]):
        own = r.get("knob") is None
        spread = not own and all(x.get(k) for x in (r, base) for k in ("p10_ms", "p90_ms"))
        out.append({"value": f"{knob}={default} (as recorded)" if own else f"{knob}={r['value']}",
                    "ratio": r["vs_default"], "low": base["p10_ms"] / r["p90_ms"] if spread else None,
                    "high": base["p90_ms"] / r["p10_ms"] if spread else None, "clock": clock_text(r),
                    "passed": "yes" if r["passed"] else "NO"})
    return out


def knob_sweep(rows: list[dict], rung: int, knob: str):
    """knob_rows as a table, headed by the rung and the size it was timed at."""
    from ..display import table

    n = next(r["m"] for r in rows if r["rung"] == rung)
    shown = [{k: "" if v is None else v for k, v in r.items()} for r in knob_rows(rows, rung, knob)]
    return table(shown, ["value", "ratio", "low", "high", "clock", "passed"],
                 [f"rung {rung}, {n}^3", "x as recorded", "p10-p90 from", "to", "SM clock", "correct"],
                 {"ratio": ".2f", "low": ".2f", "high": ".2f"})
