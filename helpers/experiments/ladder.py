"""Lesson 5 (closing the gap to cuBLAS): the ``ladder`` experiment, and reading its rows.

Experiment ``ladder``: every rung (helpers.kernels.RUNGS, one idea each with its predicted gain) checked at
4096, 8192 and two sizes off every tile, then timed at 4096 and 8192 beside cuBLAS FP16; rungs marked
``isolate`` run in a child process, so a fault cannot take the others' results with it. Reading the rows
needs no GPU: ``timed_rows``, ``gains``, ``roofline_points``, ``errors`` and ``MISS_NOTES``; the lesson's rung
slides call ``measure_or_load`` (once), ``rung_line``, ``counter_line`` and ``prediction_points`` (its chart), which
format their lines and points with ``say_run``, ``slide_line`` and ``chart_points`` (lesson 6's rung slides too).
"""
from __future__ import annotations

import numpy as np

from ..errors import wrap
from ..kernels import ALL_RUNGS, RUNGS, WGMMA_SMEM
from . import experiment

TIMED_SIZES = (4096, 8192)
ODD_SIZES = ((1000, 1064, 1000), (2000, 1000, 3000))   # (M, N, K): not multiples of 16 or of 128


# --------------------------------------------------------------------------- the experiment
def _inputs(i: int, M: int, N: int, K: int):
    """Shape i's FP16 inputs, N(0,1) drawn on the GPU (seeds 500 + i and 600 + i): quick for the largest shapes."""
    import cupy

    A = cupy.random.RandomState(500 + i).standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
    B = cupy.random.RandomState(600 + i).standard_normal((K, N), dtype=cupy.float32).astype(cupy.float16)
    return A, B


def shape_key(M: int, N: int, K: int) -> str:
    """'MxNxK': how a shape names its cuBLAS timing (cub_ms) in a child process's JSON."""
    return f"{M}x{N}x{K}"


def _shape(s) -> tuple:
    """A timed size: n (square) or (M, N, K)."""
    return (s, s, s) if isinstance(s, int) else tuple(s)


def _sizes(timed_sizes, odd_sizes):
    timed = [_shape(n) for n in timed_sizes]
    return timed + [tuple(s) for s in odd_sizes], timed


def _row_head(r, M, N, K) -> dict:
    head = {"rung": r.rung, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": M, "n": N, "k": K}
    return dict(head, base=r.base) if r.base is not None else head


def _rung_row(r, A, B, M, N, K, C_ref, timed: bool, cub_ms, peak, cc) -> dict:
    """One checked (and, for timed sizes, timed) launch of rung r: a row of the ladder experiment."""
    import cupy

    from ..launch import kernel_resources, launcher
    from ..timing import benchmark, gemm_flops

    row = _row_head(r, M, N, K)
    msg = r.skip_message(cc)
    if msg:
        return dict(row, skipped=msg)
    row.update(kernel_resources(r))
    run, C, _ = launcher(r, A, B, pad=True)
    run()
    cupy.cuda.get_current_stream().synchronize()
    chk = r.check(C[:M, :N], A, B, reference=C_ref, backend="GPU")
    row.update(**chk.fields(), padded=list(C.shape) != [M, N] or K % r.tile_k != 0, verdict=chk.verdict())
    if not chk.passed:
        row["mismatch"] = chk.mismatch_summary()
    if timed:
        t = benchmark(run)
        tf = gemm_flops(M, N, K) / (t.median_ms * 1e-3) / 1e12
        row.update(median_ms=round(t.median_ms, 6), p10_ms=round(t.p10_ms, 6), p90_ms=round(t.p90_ms, 6),
                   reps=t.n, tflops=round(tf, 4), frac_cublas=round(cub_ms / t.median_ms, 4) if cub_ms else None,
                   frac_peak=round(tf / peak, 4) if peak else None, **(t.clocks or {}))
        if hasattr(run, "kernel_only"):   # rung 7: also without the transpose of B
            t2 = benchmark(run.kernel_only)
            tf2 = gemm_flops(M, N, K) / (t2.median_ms * 1e-3) / 1e12
            row.update(median_ms_kernel_only=round(t2.median_ms, 6), tflops_kernel_only=round(tf2, 4),
                       frac_cublas_kernel_only=round(cub_ms / t2.median_ms, 4) if cub_ms else None)
    else:
        row.update(median_ms=None, tflops=None, frac_cublas=None, frac_peak=None)
    return row


def measure_rungs(rung_numbers, timed_sizes=TIMED_SIZES, odd_sizes=ODD_SIZES, cub_ms=None) -> list[dict]:
    """Rows for the given rungs (of either ladder) at every size (cub_ms: {shape_key: cuBLAS median ms}
    for frac_cublas; timed sizes are n or (M, N, K))."""
    import cupy

    from ..device import require_gpu
    from ..numerics import reference_gemm

    gpu = require_gpu("ladder")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    sizes, timed = _sizes(timed_sizes, odd_sizes)
    rows = []
    for i, (M, N, K) in enumerate(sizes):
        A, B = _inputs(i, M, N, K)
        C_ref = reference_gemm(A, B)
        for k in rung_numbers:
            rows.append(_rung_row(ALL_RUNGS[k], A, B, M, N, K, C_ref, (M, N, K) in timed,
                                  (cub_ms or {}).get(shape_key(M, N, K)), peak, gpu.cc))
        del A, B, C_ref
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def _isolated_rows(rung_numbers, timed_sizes, odd_sizes, cub_ms) -> list[dict]:
    from ..isolate import run_isolated

    out = run_isolated("helpers.experiments.ladder:measure_rungs", list(rung_numbers), list(timed_sizes),
                       [list(s) for s in odd_sizes], cub_ms)
    if isinstance(out, dict):
        return [{"rung": k, "kernel": ALL_RUNGS[k].name, "idea": ALL_RUNGS[k].idea,
                 "predicted": ALL_RUNGS[k].predicted_gain, **out} for k in rung_numbers]
    return out


def check_rung_sizes(k: int, sizes, launch_ex: bool = False) -> list[dict]:
    """GPU (the GPU tests): rung k against float64 at each (M, N, K), then against its CPU emulation at
    256 x 256 x 512; launch_ex: a clustered rung through cuLaunchKernelEx."""
    from ..launch import force_launch_ex, gemm
    from ..numerics import random_matrix

    r = ALL_RUNGS[k]
    if launch_ex:
        force_launch_ex(r)
    out = []
    for i, (M, N, K) in enumerate(sizes):
        A = random_matrix(M, K, seed=900 + i).astype(np.float16)
        B = random_matrix(K, N, seed=950 + i).astype(np.float16)
        C = gemm(r, A, B, pad=True)
        chk = r.check(C, A, B)
        out.append({"size": [M, N, K], "shape_ok": list(C.shape) == [M, N], "passed": bool(chk.passed),
                    "text": str(chk)})
    A = random_matrix(256, 512, seed=77).astype(np.float16)
    B = random_matrix(512, 256, seed=78).astype(np.float16)
    C = gemm(r, A, B, pad=True).astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    out.append({"emulation_max_diff": float(np.max(np.abs(C - r.emulate(A, B)) / scale))})
    return out


def cublas_row(A, B, peak) -> dict:
    """cuBLAS FP16 on A, B, checked and timed with the rungs' harness: the row of rung 0."""
    import cupy

    from ..cublas import BASELINES
    from ..timing import benchmark, gemm_flops

    cub = BASELINES["cublas_fp16"]
    (M, K), N = A.shape, B.shape[1]
    Cc = cupy.empty((M, N), dtype=cupy.float16)
    t = benchmark(lambda: cub.run(A, B, Cc))
    chk = cub.check(Cc, A, B, backend="GPU")
    tf = gemm_flops(M, N, K) / (t.median_ms * 1e-3) / 1e12
    return {"rung": 0, "kernel": "cublas_fp16", "idea": "cuBLAS (cupy.matmul float16)", "predicted": None,
            "m": M, "n": N, "k": K, "c_dtype": "float16", "median_ms": round(t.median_ms, 6), "tflops": round(tf, 4),
            "frac_cublas": 1.0, "frac_peak": round(tf / peak, 4) if peak else None, **(t.clocks or {}),
            "rel_err": float(f"{chk.rel_err:.4g}"), "passed": bool(chk.passed),
            "regs": None, "smem": None, "spills": None}


@experiment("ladder", min_cc=(8, 0), needs="rungs 5 and 6, cp.async and mma.sync m16n8k16")
def ladder(timed_sizes=TIMED_SIZES, odd_sizes=ODD_SIZES):
    """Every rung: correctness (4096, 8192, odd sizes) and TFLOP/s next to cuBLAS FP16."""
    from ..device import require_gpu

    gpu = require_gpu("ladder")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    rows, cub_ms = [], {}
    for i, n in enumerate(timed_sizes):
        A, B = _inputs(i, n, n, n)
        rows.append(cublas_row(A, B, peak))
        cub_ms[shape_key(n, n, n)] = rows[-1]["median_ms"]
        del A, B
    in_process = [k for k in RUNGS if not RUNGS[k].isolate]
    rows += measure_rungs(in_process, timed_sizes, odd_sizes, cub_ms)
    isolated = [k for k in RUNGS if RUNGS[k].isolate]
    runnable = [k for k in isolated if RUNGS[k].skip_message(gpu.cc) is None]
    for k in isolated:
        if k not in runnable:
            for (M, N, K) in _sizes(timed_sizes, odd_sizes)[0]:
                rows.append(dict(_row_head(RUNGS[k], M, N, K), skipped=RUNGS[k].skip_message(gpu.cc)))
    if runnable:
        rows += _isolated_rows(runnable, timed_sizes, odd_sizes, cub_ms)
    return rows


# --------------------------------------------------------------------------- reading the record
def timed_rows(rows: list[dict], n) -> list[dict]:
    """The rows of one timed size (n: square n^3, or (M, N, K)), rungs in order, cuBLAS (rung 0) first."""
    M, N, K = _shape(n)
    out = [r for r in rows if (r.get("m"), r.get("n"), r.get("k")) == (M, N, K) and r.get("tflops") is not None]
    return sorted(out, key=lambda r: r["rung"])


def cublas_beside_rungs(rec, n) -> dict | None:
    """The cuBLAS row (rung 0) the `ladder` experiment of record `rec` timed beside the rungs at size n (what
    the lesson's verdict divides by), or None without a ladder run at n."""
    rows = timed_rows((rec.meta.get("experiments") or {}).get("ladder") or [], n)
    return rows[0] if rows and rows[0]["rung"] == 0 else None


def timed_by_size(rows: list[dict], sizes=TIMED_SIZES) -> dict[int, list[dict]]:
    """{n: timed_rows(rows, n)}: what helpers.plots.ladder draws."""
    return {n: timed_rows(rows, n) for n in sizes}


def gains(rows: list[dict], n: int) -> list[dict]:
    """Predicted and measured gain of every rung at size n over the rung before it (or its ``base``; ``over``
    says which), with the SM clock recorded while timed, judged (helpers.timing.verdict) against [low, high],
    the gains the p10 and p90 timings of both rungs allow; ``direction`` ("better", "worse" or None) is the
    key of MISS_NOTES."""
    from ..clocks import clock_text
    from ..timing import verdict

    rs = [r for r in timed_rows(rows, n) if r["rung"] >= 1]
    by_rung = {r["rung"]: r for r in rs}
    out, before = [], None
    for r in rs:
        prev = by_rung.get(r["base"]) if r.get("base") is not None else before
        measured = r["tflops"] / prev["tflops"] if prev else 1.0
        g = {"rung": r["rung"], "idea": r["idea"], "predicted": r["predicted"], "measured": round(measured, 3),
             "tflops": r["tflops"], "frac_cublas": r["frac_cublas"], "frac_peak": r["frac_peak"],
             "clock": clock_text(r), "low": None, "high": None, "verdict": "-", "direction": None,
             "over": prev["rung"] if prev else None}
        if prev is not None:
            spread = all(x.get(k) for x in (r, prev) for k in ("p10_ms", "p90_ms"))
            low = prev["p10_ms"] / r["p90_ms"] if spread else measured
            high = prev["p90_ms"] / r["p10_ms"] if spread else measured
            g.update(low=round(low, 3), high=round(high, 3), verdict=verdict(r["predicted"], low, high))
            g["direction"] = g["verdict"].split()[1] if g["verdict"].startswith("missed") else None
        out.append(g)
        before = r
    return out


def roofline_points(rows: list[dict], n: int) -> dict:
    """{label: (intensity, TFLOP/s)} of each rung at size n, for the roofline."""
    from ..analysis import intensity

    pts = {}
    for row in timed_rows(rows, n):
        if row["rung"] == 0:
            continue
        r = ALL_RUNGS[row["rung"]]
        pts[f"rung {r.rung}: {r.idea}"] = (intensity(r, n, n, n), row["tflops"])
    return pts


# The likely reason for a miss in either direction; the lesson prints the one the data calls for.
MISS_NOTES = {
    2: {"better": "rung 1 was even more load-bound than assumed: with 8x fewer requested bytes per FLOP "
                  "the waits on global memory shrink by more than the prediction allowed for.",
        "worse": "the new bottlenecks arrived early: 8-way bank conflicts on the Bs fragment loads, 2-byte "
                 "copies (16 load/store pairs per thread per tile) and two barriers per 32-deep step with no "
                 "overlap of copies and math."},
    3: {"better": "the bank conflicts were the main cost of rung 2: the fragment loads replayed up to 8 "
                  "times, and the Tensor Cores waited on them.",
        "worse": "rung 2 was limited by the copies and barriers, not by the fragment loads; or the WMMA "
                 "loads were already split in a way that softened the conflicts."},
    4: {"better": "instruction issue was a large share: 2-byte copies took most of each iteration.",
        "worse": "the copies were waiting on memory latency, not on instruction issue: the same bytes "
                 "still arrive before anyone can compute (no overlap until rung 5)."},
    5: {"better": "rung 4 spent most of its time waiting for loads; hiding them behind the math removed "
                  "most of it.",
        "worse": "74 KB of shared memory per block lowers the number of resident blocks, which was "
                 "already hiding latency; or the WMMA fragment loads from shared memory, not global "
                 "latency, are now the limit."},
    6: {"better": "the WMMA loads from shared memory were the limit: ldmatrix.x4 issues a quarter of the "
                  "instructions and the compiler schedules the mma.sync freely.",
        "worse": "WMMA already compiles to ldmatrix and HMMA.16816 on sm_90, so there was little to gain; the "
                 "profiler (Appendix D) finds the Tensor Cores no busier and fixed-latency waits the top stall. "
                 "What limits rung 6 was not measured: no mma.sync rate is in the record."},
    7: {"better": "wgmma reads A and B from shared memory with no fragment loads, and the larger tile and the copy "
                  "engine removed most of the remaining load work from the SM.",
        "worse": "the pipeline drains every K-tile (wgmma.wait_group 0 and a __syncthreads before the next "
                 f"copy is issued), the transpose of B is inside the timing, and one block per SM ({WGMMA_SMEM // 1024} KB of "
                 "shared memory) leaves nothing to hide the epilogue; warp specialisation fixes the first."},
}


def errors(rows: list[dict]) -> list[str]:
    """One line per rung whose measurement failed (an isolated rung's child process died or hung)."""
    out = {}
    for r in rows:
        if "error" in r:
            last = [ln for ln in str(r["error"]).strip().splitlines() if ln.strip()][-1:] or ["?"]
            out[r["rung"]] = f"rung {r['rung']} ({r['kernel']}) could not be measured: {last[0][:300]}"
    return list(out.values())


# --------------------------------------------------------------------------- a rung slide's lines (lessons 5 and 6)
def say_run(data: list[dict], source: str, first_rung: int, sizes: bool = False) -> None:
    """Print what a lesson's one measurement found: where the rows come from, how many checked launches of rungs
    from `first_rung` on passed (with `sizes`: at which sizes), then any skip or error."""
    checked = [r for r in data if r["rung"] >= first_rung and "passed" in r]
    at = sorted({(r["m"], r["n"], r["k"]) for r in checked})
    print(source)
    print(wrap(f"{sum(r['passed'] for r in checked)} of {len(checked)} checked launches passed"
               + (f" (sizes: {', '.join('x'.join(map(str, s)) for s in at)})" if sizes else "")))
    for msg in sorted({r["skipped"] for r in data if "skipped" in r}) + errors(data):
        print(wrap(msg))


def slide_line(rows: list[dict], rung: int, g: dict | None, name, where: str) -> str:
    """One line for a rung's slide: its checks against float64 and the CPU model (every size checked in `rows`; a
    failed check's shape named by name(row)), then from its gain `g` (a rung_gain of lesson 5 or 6, None where it was
    not timed `where`) its TFLOP/s, its gain over the rung before with the p10-p90 spread and the verdict, and the
    SM clock; wrapped at helpers.errors.LINE characters."""
    return wrap(_slide_text(rows, rung, g, name, where))


def _slide_text(rows: list[dict], rung: int, g: dict | None, name, where: str) -> str:
    mine = [r for r in rows if r.get("rung") == rung and "passed" in r]
    if not mine:
        return f"rung {rung}: not in this run"
    bad = [r for r in mine if not r["passed"]]
    model = all(r.get("model") == "identical" for r in mine)
    check = (f"PASS at {len(mine)} sizes" + (", bit-identical to the CPU model" if model else "")
             if not bad else f"FAIL at {', '.join(name(r) for r in bad)}")
    if g is None:
        return f"rung {rung}: {check}; not timed at {where} in this run"
    if g["over"] is None:
        return f"rung {rung}: {check}; at {g['shape']}: {g['tflops']:.1f} TFLOP/s, SM clock {g['clock']}"
    return (f"rung {rung}: {check}; at {g['shape']}: {g['tflops']:.0f} TFLOP/s, x{g['measured']:.2f} over rung "
            f"{g['over']} (p10-p90: x{g['low']:.2f} to x{g['high']:.2f}; predicted x{g['predicted']:g}: "
            f"{g['verdict']}), SM clock {g['clock']}")


POINT_KEYS = ("rung", "shape", "predicted", "measured", "low", "high", "verdict")


def chart_points(gs) -> list[dict]:
    """The points of a predicted-against-measured chart (helpers.plots.predicted_vs_measured): POINT_KEYS of each
    rung_gain in `gs` that was timed with a spread."""
    return [{key: g[key] for key in POINT_KEYS} for g in gs if g is not None and g.get("low") is not None]


# --------------------------------------------------------------------------- the rung slides and the lesson's chart
# The lesson's one live measurement (experiment ``ladder``: every rung checked at four sizes, timed at two beside
# cuBLAS) took 32.8 s in an nbval run of the lesson on an NVIDIA H100 80GB HBM3 (lab/logs/nbval-00-05-07-nvidia-h100-
# 80gb-hbm3.log), in which an earlier cell had compiled the rungs' kernels. The launches themselves are a few seconds
# of it (launch_seconds); the rest is the checks against float64 and rung 7's child process. A machine's first run
# also compiles the kernels (CuPy and helpers.compile keep them on disk after that).
LIVE_SECONDS = 35


def launch_seconds(rows: list[dict]) -> float:
    """Seconds the timed launches of `rows` take by their own per-launch times: each timing's median times its
    launches (3 warm-ups and the timed ones; rung 7 also timed without its transpose of B)."""
    ms = 0.0
    for r in rows:
        if r.get("median_ms") and r.get("reps"):
            ms += r["median_ms"] * (r["reps"] + 3) + (r.get("median_ms_kernel_only") or 0) * (r["reps"] + 3)
    return ms / 1e3


def measure_or_load(rec) -> tuple[list[dict], str]:
    """Lesson 5's one measurement: on a GPU that runs it, experiment ``ladder`` live (its time estimate printed
    first); elsewhere the record's run. Prints where the rows come from, how many checks passed and any skip or
    error; returns (rows, source)."""
    from ..device import backend
    from . import run_or_load, unsupported

    b = backend()
    if b.is_gpu and unsupported("ladder", b.gpu) is None:
        recorded = rec.meta["experiments"]["ladder"]
        print(f"estimated: about {LIVE_SECONDS} s, more on this machine's first run, which compiles the kernels "
              f"(7 rungs checked at 4 sizes, timed at 2 beside cuBLAS; the record's launches alone take "
              f"{launch_seconds(recorded):.0f} s)")
    out = run_or_load("ladder")
    say_run(out.data, out.source, first_rung=1, sizes=True)
    return out.data, out.source


def rung_gain(rows: list[dict], rung: int, n: int = 4096) -> dict | None:
    """Rung `rung`'s entry of gains(rows, n) (its gain over the rung before, the p10-p90 spread, the verdict),
    with `shape` added; None where it was not timed."""
    g = next((x for x in gains(rows, n) if x["rung"] == rung), None)
    return g and dict(g, shape=f"{n}^3")


def rung_line(rows: list[dict], rung: int, n: int = 4096) -> str:
    """One line for a rung's slide (slide_line): its checks, then at n^3 its gain over the rung before."""
    return slide_line(rows, rung, rung_gain(rows, rung, n), lambda r: shape_key(r["m"], r["n"], r["k"]), f"{n}^3")


def prediction_points(rows: list[dict], rungs=range(2, 8), sizes=TIMED_SIZES) -> list[dict]:
    """What the lesson's predicted-against-measured chart (helpers.plots.predicted_vs_measured) draws: each rung's
    gain over the rung before at each of `sizes` (n^3), as chart_points."""
    return chart_points(rung_gain(rows, k, n) for k in rungs for n in sizes)


# Per rung, the Nsight Compute counter that tells its change apart (its field in helpers.profile's rows, a name).
COUNTER_OF = {2: ("l2_read_gb", "L2 read (GB)"), 3: ("smem_load_wavefronts", "shared-load wavefronts"),
              4: ("l1_requests", "global load instructions (L1 requests)"),
              5: ("cycles_per_issue", "cycles per issued instruction"), 6: ("ldsm", "LDSM (ldmatrix) executed"),
              7: ("tensor_pct", "Tensor pipe busy (%)")}


def counter_line(prof, rung: int) -> str:
    """Nsight Compute on rung `rung` and the rung before it (helpers.profile.load_ncu()): the counter of COUNTER_OF,
    the Tensor pipe busy and the top stall of each; one line."""
    a, b = prof.row(f"rung{rung - 1}"), prof.row(f"rung{rung}")
    key, name = COUNTER_OF[rung]

    def num(x):
        return f"{x:.3g}" if x is not None else "-"

    parts = [f"{name}: {num(a.get(key))} -> {num(b.get(key))}"]
    if key != "tensor_pct":
        parts.append(f"Tensor pipe busy: {a['tensor_pct']:.0f}% -> {b['tensor_pct']:.0f}%")
    parts.append(f"top stall: {a['top_stalls'][0][0]} -> {b['top_stalls'][0][0]}")
    return f"rung {rung - 1} -> rung {rung}, " + "; ".join(parts)
