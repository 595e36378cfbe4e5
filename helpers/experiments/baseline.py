"""Lesson 1 (FP32 CUDA-core baseline): its experiments, and the traffic model (no GPU) behind its predictions.

``fp32_block_shapes`` launches gemm_fp32_kernel with different block shapes (same FLOPs, different cache lines
per warp load), ``fp32_timing_method`` times it two ways, ``fp32_tiled_solution`` times the exercise's worked
solution (kernels/fp32_variants.cu).
"""
from __future__ import annotations

import math

import numpy as np

from . import experiment

NAIVE = ("fp32_baseline.cu", "gemm_fp32_kernel")
TILED = ("fp32_variants.cu", "gemm_fp32_tiled")

# (blockDim.x, blockDim.y): x runs along the columns of C (and of B), y along its rows.
BLOCK_SHAPES = [(16, 16), (32, 8), (64, 4), (32, 32), (8, 32), (4, 64), (1, 256)]
SHAPE_SIZES = (2048, 4096)
CHECK_SIZE = (1000, 1000, 1000)       # M, N, K: not multiples of 16
TILED_SIZES = (1000, 2048, 4096)
LINE = 128                            # bytes in an L1/L2 cache line
SECTOR = 32                           # bytes in a sector (the unit DRAM and L2 move)


def shape_name(bx: int, by: int) -> str:
    return f"{bx}x{by}"


# --------------------------------------------------------------------------- model (no GPU)
def warp_footprint(bx: int, by: int, elem: int = 4) -> dict:
    """What one warp's two loads touch in one step k of gemm_fp32_kernel: a warp holds min(bx, 32)
    consecutive columns of C in 32 / min(bx, 32) rows; its A load touches one line per row, its B load the
    warp's consecutive columns (rows assumed to start on a line boundary)."""
    cols = min(bx, 32)
    rows = 32 // cols
    b_bytes = cols * elem
    a_lines, a_sectors = rows, rows
    b_lines = max(1, math.ceil(b_bytes / LINE))
    b_sectors = max(1, math.ceil(b_bytes / SECTOR))
    return {"shape": shape_name(bx, by), "warp_rows": rows, "warp_cols": cols,
            "a_lines": a_lines, "b_lines": b_lines, "lines": a_lines + b_lines,
            "a_sectors": a_sectors, "b_sectors": b_sectors, "sectors": a_sectors + b_sectors,
            "useful_bytes": rows * elem + b_bytes, "fmas": 32}


def lines_per_warp_step(n: int, bx: int = 16, by: int = 16, elem: int = 4) -> float:
    """Mean cache lines one warp's two loads touch per step k on an n^3 GEMM, with rows as they lie: unless
    n * elem is a multiple of LINE, a warp's piece of a row of B sometimes straddles two lines. Counts the
    warps with a thread inside C; equals warp_footprint's "lines" when rows are whole lines."""
    cols = min(bx, 32)
    rows = 32 // cols
    row_warps = math.ceil(n / rows)                  # warps down a column strip; their active rows sum to n
    c0 = np.arange(0, n, cols, dtype=np.int64)       # the first column of each warp's strip
    c1 = np.minimum(c0 + cols, n)                    # one past its last column inside C
    k = np.arange(n, dtype=np.int64)[:, None] * n * elem
    b_lines = (k + (c1 - 1) * elem) // LINE - (k + c0 * elem) // LINE + 1       # [k, strip]
    total = float(b_lines.sum()) * row_warps + n * len(c0) * n                  # B lines + A lines (one per row)
    return total / (row_warps * len(c0) * n)


def block_intensity(bx: int, by: int, elem: int = 4) -> float:
    """FLOP per byte if each block fetched its by rows of A and bx columns of B exactly once."""
    return 2.0 * bx * by / ((bx + by) * elem)


def intensity(n: int, elem: int = 4) -> dict:
    """Arithmetic intensities (FLOP/byte) of an n^3 FP32 GEMM: ideal (A, B read and C written once) and
    requested (gemm_fp32_kernel: two loads per FMA, plus the store of C)."""
    flops = 2.0 * n ** 3
    ideal_bytes = 3.0 * n * n * elem
    requested_bytes = 2.0 * n ** 3 * elem + n * n * elem
    return {"n": n, "flops": flops, "ideal_bytes": ideal_bytes, "requested_bytes": requested_bytes,
            "ideal": flops / ideal_bytes, "requested": flops / requested_bytes}


# --------------------------------------------------------------------------- GPU helpers
def _inputs(M, N, K, seed):
    import cupy

    rng = cupy.random.default_rng(seed)
    return (rng.standard_normal((M, K), dtype=cupy.float32),
            rng.standard_normal((K, N), dtype=cupy.float32))


def fp32_launcher(kern, A, B, block, tile=None):
    """(run, C) for any kernel with gemm_fp32_kernel's arguments; C starts as NaN. The grid covers C with
    one thread per element (tile=None) or one block per tile x tile piece."""
    import cupy

    M, K = A.shape
    N = B.shape[1]
    C = cupy.full((M, N), np.nan, dtype=cupy.float32)
    tx, ty = (tile, tile) if tile else block
    grid = (math.ceil(N / tx), math.ceil(M / ty))
    args = (A, B, C, np.int32(M), np.int32(N), np.int32(K))

    def run():
        kern(grid, tuple(block), args)

    return run, C


def _time(run, n, **kw):
    from ..timing import benchmark, gemm_flops, gemm_min_bytes

    t = benchmark(run, flops=gemm_flops(n, n, n), bytes_moved=gemm_min_bytes(n, n, n, 4, 4), **kw)
    return {"median_ms": round(t.median_ms, 5), "p10_ms": round(t.p10_ms, 5), "p90_ms": round(t.p90_ms, 5),
            "reps": t.n, "tflops": round(t.tflops, 4), "gbs": round(t.gbs, 3), **(t.clocks or {})}


def _check(C, A, B, name):
    """check_gemm with gemm_fp32_kernel's formats (FP32 in, FP32 FMA chain, round to nearest)."""
    from .. import emulate
    from ..check import check_gemm

    return check_gemm(C, A, B, inputs="fp32", acc="fp32", acc_rounding="nearest", block=1,
                      name=name, backend="GPU", model=emulate.Arithmetic("fp32"))


# --------------------------------------------------------------------------- experiments
@experiment("fp32_block_shapes")
def block_shapes(sizes=SHAPE_SIZES, shapes=BLOCK_SHAPES, check_size=CHECK_SIZE, seed=101):
    """gemm_fp32_kernel with each block shape: checked at check_size, timed at each n^3."""
    import cupy

    from ..compile import get_kernel

    kern = get_kernel(*NAIVE)
    M, N, K = check_size
    A, B = _inputs(M, N, K, seed)
    checks, ref_out = [], None
    for bx, by in shapes:
        run, C = fp32_launcher(kern, A, B, (bx, by))
        run()
        chk = _check(C, A, B, f"gemm_fp32_kernel {shape_name(bx, by)}")
        if ref_out is None:
            ref_out = C.copy()
        checks.append({"shape": shape_name(bx, by), **chk.fields(), "verdict": chk.verdict(),
                       "identical_to_first": bool(cupy.array_equal(C, ref_out))})
    del A, B, C, ref_out
    rows = []
    for i, n in enumerate(sizes):
        A, B = _inputs(n, n, n, seed + 1 + i)
        for bx, by in shapes:
            run, C = fp32_launcher(kern, A, B, (bx, by))
            row = {"shape": shape_name(bx, by), "bx": bx, "by": by, "n": n}
            row.update(_time(run, n, warmup=2, target_s=0.3, min_reps=5, max_reps=50))
            rows.append(row)
        del A, B, C
        cupy.get_default_memory_pool().free_all_blocks()
    return {"check_size": list(check_size), "checks": checks, "rows": rows,
            "first_shape": shape_name(*shapes[0]),
            "model": [warp_footprint(bx, by) for bx, by in shapes]}


@experiment("fp32_timing_method")
def timing_method(sizes=(1024, 4096), reps=100, seed=303):
    """gemm_fp32_kernel timed the course's way (L2 flushed before each launch, median) and the seed's
    way (back-to-back launches with warm L2, mean), to separate method from hardware."""
    import cupy

    from ..compile import get_kernel
    from ..timing import benchmark, gemm_flops

    kern = get_kernel(*NAIVE)
    rows = []
    for i, n in enumerate(sizes):
        A, B = _inputs(n, n, n, seed + i)
        run, _ = fp32_launcher(kern, A, B, (16, 16))
        r = min(reps, 100 if n <= 2048 else 20)
        for flush in (True, False):
            t = benchmark(run, flops=gemm_flops(n, n, n), warmup=3, reps=r, flush_l2=flush)
            mean_ms = float(np.mean(t.times_ms))
            rows.append({"n": n, "l2": "flushed" if flush else "warm", "reps": t.n,
                         "median_ms": round(t.median_ms, 5), "mean_ms": round(mean_ms, 5),
                         "tflops_median": round(gemm_flops(n, n, n) / (t.median_ms * 1e-3) / 1e12, 4),
                         "tflops_mean": round(gemm_flops(n, n, n) / (mean_ms * 1e-3) / 1e12, 4),
                         **(t.clocks or {})})
        del A, B
        cupy.get_default_memory_pool().free_all_blocks()
    return {"rows": rows}


def tiled_kernel(tile: int = 16):
    """The worked solution, compiled for tile x tile blocks."""
    from ..compile import get_kernel

    return get_kernel(*TILED, options=(f"-DTILE={tile}",))


@experiment("fp32_tiled_solution")
def tiled_solution(sizes=TILED_SIZES, tiles=(16, 32), check_sizes=(CHECK_SIZE, (33, 17, 49)), seed=202):
    """The exercise's worked solution (shared-memory tiles) vs gemm_fp32_kernel."""
    import cupy

    from ..compile import get_kernel

    naive = get_kernel(*NAIVE)
    checks = []
    for M, N, K in check_sizes:
        A, B = _inputs(M, N, K, seed)
        run, C0 = fp32_launcher(naive, A, B, (16, 16))
        run()
        for tile in tiles:
            run, C = fp32_launcher(tiled_kernel(tile), A, B, (tile, tile), tile=tile)
            run()
            chk = _check(C, A, B, f"gemm_fp32_tiled TILE={tile}")
            checks.append({"tile": tile, "size": [M, N, K], "passed": bool(chk.passed), "verdict": chk.verdict(),
                           "identical_to_naive": bool(cupy.array_equal(C, C0))})
    rows = []
    for i, n in enumerate(sizes):
        A, B = _inputs(n, n, n, seed + 1 + i)
        run, _ = fp32_launcher(naive, A, B, (16, 16))
        rows.append({"kernel": "gemm_fp32_kernel", "tile": None, "n": n,
                     **_time(run, n, warmup=2, target_s=0.3, min_reps=5, max_reps=50)})
        for tile in tiles:
            run, _ = fp32_launcher(tiled_kernel(tile), A, B, (tile, tile), tile=tile)
            rows.append({"kernel": "gemm_fp32_tiled", "tile": tile, "n": n,
                         **_time(run, n, warmup=2, target_s=0.3, min_reps=5, max_reps=50)})
        del A, B
        cupy.get_default_memory_pool().free_all_blocks()
    return {"checks": checks, "rows": rows}


# --------------------------------------------------------------------------- notebook helpers (no GPU)
def sass_counts(sass_file: str, kernel: str) -> dict:
    """Count instructions of one kernel in a recorded SASS listing (results/build-nvidia-h200/)."""
    from ..analysis import sass_instructions
    from ..results import RESULTS_DIR

    path = RESULTS_DIR / "build-nvidia-h200"
    ops = [op for k, _, _, op in sass_instructions(path / sass_file) if k == kernel]
    if not ops:
        raise KeyError(f"no function {kernel} in {path / sass_file}")
    base = [o.split(".")[0] for o in ops]
    return {"file": f"{path.name}/{sass_file}", "LDG": base.count("LDG"), "FFMA": base.count("FFMA"),
            "LDS": base.count("LDS"), "LDS.128": sum(o.startswith("LDS.128") for o in ops),
            "STS": base.count("STS"), "instructions": len(ops)}


def implied_clock_hz(fp32_peak_tflops: float | None, sms: int, lanes: int = 128) -> float | None:
    """The clock a datasheet FP32 peak assumes: peak = SMs x lanes x 2 FLOP x clock (None without a peak)."""
    return fp32_peak_tflops * 1e12 / (sms * lanes * 2) if fp32_peak_tflops else None


def timed_clock_hz(data: dict, fallback: float | None = None) -> float | None:
    """The median SM clock recorded beside the block-shape timings, in Hz; `fallback` where none was read."""
    mhz = [r["sm_mhz"] for r in data.get("rows", []) if r.get("sm_mhz")]
    return float(np.median(mhz)) * 1e6 if mhz else fallback


def lines_per_sm_clock(lines: float, n: int, ms: float, sms: int, clock_hz: float) -> float:
    """Cache lines the warps' loads touched, per SM per clock: lines per warp-step x n^3 / 32 warp-steps."""
    return lines * n ** 3 / 32 / (ms * 1e-3 * sms * clock_hz)


def shape_table(data: dict, n: int, sms: int | None = None, clock_hz: float | None = None) -> list[dict]:
    """Rows of the block-shape experiment at size n, with the model's lines per warp-step, the time relative
    to the first shape and, given the SMs, lines per SM per clock (at the recorded SM clock, else `clock_hz`)."""
    from ..clocks import clock_text

    model = {m["shape"]: m for m in data["model"]}
    rows = [dict(r) for r in data["rows"] if r["n"] == n]
    base = next(r["median_ms"] for r in rows if r["shape"] == data["first_shape"])
    for r in rows:
        r.update(lines=model[r["shape"]]["lines"], rel_time=round(r["median_ms"] / base, 3), clock=clock_text(r))
        hz = r["sm_mhz"] * 1e6 if r.get("sm_mhz") else clock_hz
        if sms and hz:
            r["lines_per_clk"] = round(lines_per_sm_clock(r["lines"], n, r["median_ms"], sms, hz), 3)
    return rows


def plot_shapes(data: dict, source: str, sms: int | None = None, clock_hz: float | None = None):
    """TFLOP/s of each block shape against the cache lines a warp touches per step (log-log);
    with sms and clock_hz, the line 'one cache line per SM per clock' as well."""
    import matplotlib.pyplot as plt

    from ..plots import _finish, apply_style

    apply_style()
    fig, ax = plt.subplots()
    sizes = sorted({r["n"] for r in data["rows"]})
    for n in sizes:
        rows = shape_table(data, n)
        ax.plot([r["lines"] for r in rows], [r["tflops"] for r in rows], "o", label=f"n = {n}")
    groups: dict = {}
    for r in (r for n in sizes for r in shape_table(data, n)):
        groups.setdefault(r["lines"], {}).setdefault(r["shape"], []).append(r["tflops"])
    for lines, by_shape in groups.items():
        names = list(by_shape)
        low = min(t for ts in by_shape.values() for t in ts)
        if len(names) > 1:      # the 2-line shapes sit below the dashed line: names below right of them
            ax.annotate(",\n".join(names), (lines, low), textcoords="offset points", xytext=(8, -4),
                        ha="left", va="top", fontsize=11)
        else:                   # on the line: the name above right, clear of it
            ax.annotate(names[0], (lines, low), textcoords="offset points", xytext=(6, 6),
                        ha="left", va="bottom", fontsize=11)
    if sms and clock_hz:
        x = np.geomspace(1.8, 40, 50)
        ax.plot(x, 64 / x * sms * clock_hz / 1e12, "--", color="0.4", linewidth=1.6,
                label="one line per SM per clock")
    ax.set(xscale="log", yscale="log", xlabel="cache lines a warp touches per step k", ylabel="TFLOP/s")
    ax.set_xlim(1.6, 70)
    ax.set_xticks(sorted(groups))
    ax.set_xticklabels([str(v) for v in sorted(groups)])
    ax.minorticks_off()
    return _finish(ax, "gemm_fp32_kernel: same code, different block shapes", source)


def timing_agreement_lines(entry: dict | None) -> list[str]:
    """The record's ``extras.timing_agreement`` (the course's harness and triton's do_bench timing the same
    cuBLAS call) as lines of text, each timing with the SM clock read while it ran."""
    from ..clocks import clock_text

    if not entry:
        return ["the record holds no timing agreement (run `make record` on a GPU)"]
    if "skipped" in entry:
        return [f"timing agreement not measured: {entry['skipped']}"]
    n = entry["size"]
    clocks = entry.get("harness_clocks") or [{} for _ in entry["harness_median_ms"]]
    lines = [f"{entry['op']} at {n}^3:"]
    for i, (ms, c) in enumerate(zip(entry["harness_median_ms"], clocks), 1):
        lines.append(f"  course harness, run {i}: median {ms:.4f} ms ({clock_text(c)})")
    lines.append(f"  {entry['independent_timer']}: median {entry['do_bench_median_ms']:.4f} ms "
                 f"({clock_text(entry.get('do_bench_clocks') or {})})")
    runs = ", ".join(f"run {i} x{ms / entry['do_bench_median_ms']:.3f}"
                     for i, ms in enumerate(entry["harness_median_ms"], 1))
    lines.append(f"  harness / do_bench: {runs}; the median of the runs x{entry['ratio']:.3f}")
    return lines
