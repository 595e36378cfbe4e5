"""Lesson 1 exercises: arithmetic intensity, and a shared-memory tiled FP32 kernel of your own.

``check_tiled_kernel(src)`` compiles a kernel written in a notebook cell, runs it at sizes that are not multiples
of 16 with NaN guards right after A, B and C (a read or write past an end is seen every time), checks it and times
it against gemm_fp32_kernel; on the CPU backend it checks what it can read in the source and says so.
"""
from __future__ import annotations

import re
import sys

import numpy as np

from ..errors import wrap
from . import _report, check_number, checker, judge_guess

# sizes the tiled-kernel check runs: an odd cube, and a small lopsided problem for the edges
TILED_CHECK_SIZES = ((1000, 1000, 1000), (33, 17, 49))
TILED_TIME_SIZES = (1000, 2048)

last_tiled = None          # the last check_tiled_kernel run on a GPU (checks and timings)


# --------------------------------------------------------------------------- arithmetic intensity
@checker
def ai_ideal_exercise(answer, n: int) -> None:
    """Ideal arithmetic intensity (FLOP/byte) of an n x n x n FP32 GEMM: A, B read once, C written once."""
    check_number("ideal intensity", answer, 2.0 * n ** 3 / (3.0 * n * n * 4), rel=1e-3,
                 hint="FLOPs = 2 n^3; the least traffic is three n x n FP32 matrices (A, B read, C "
                      "written) at 4 bytes per element.")


@checker
def ai_naive_exercise(answer, elem_bytes: int = 4) -> None:
    """FLOP per byte one thread of gemm_fp32_kernel requests in its loop, with elem_bytes-byte elements."""
    check_number(f"naive kernel intensity ({elem_bytes}-byte elements)", answer, 2.0 / (2.0 * elem_bytes), rel=1e-3,
                 hint=f"one step of the loop is one FMA (2 FLOPs) and loads one element of A and one of B, "
                      f"{elem_bytes} bytes each.")


@checker
def ai_tiled_exercise(answer, tile: int) -> None:
    """FLOP per byte of global loads for a shared-memory kernel with tile x tile tiles."""
    check_number(f"tiled intensity (TILE={tile})", answer, tile / 4.0, rel=1e-3,
                 hint=f"per tile step a block loads {tile}x{tile} floats of A and of B once, and its "
                      f"{tile}x{tile} threads each do {tile} FMAs with them.")


@checker
def lines_exercise(answer, bx: int, by: int) -> None:
    """Cache lines one warp of gemm_fp32_kernel touches per step k with block shape bx x by."""
    from ..experiments.baseline import warp_footprint

    f = warp_footprint(bx, by)
    check_number(f"lines per warp ({bx}x{by})", answer, f["lines"], rel=0,
                 hint=f"a warp covers {f['warp_rows']} row(s) x {f['warp_cols']} column(s) of C: one line of A "
                      "per row (rows are K floats apart), and the columns' B elements are contiguous.")


# --------------------------------------------------------------------------- predictions, revealed from the record
@checker
def reveal_cublas_ratio(guess, n: int = 4096) -> None:
    """Prediction: how many times faster than gemm_fp32_kernel is cuBLAS's FP32 GEMM at n (the H200 record)?"""
    from ..results import load_latest

    rec = load_latest()
    naive, sgemm = rec.value("gemm_fp32_kernel", n), rec.value("cublas_fp32", n)
    judge_guess(f"cuBLAS FP32 / gemm_fp32_kernel at n = {n}", guess, sgemm / naive, within=1.5, fmt=".2f",
                what=f"H200 record, {sgemm:.1f} / {naive:.2f} TFLOP/s", why=(
                    "Both run FP32 FMAs on the same CUDA cores; the naive kernel loads two values from memory per "
                    "FMA, cuBLAS reuses each loaded value many times from shared memory and registers."))


@checker
def reveal_shape_slowdown(guess, shape: str = "1x256", n: int = 4096) -> None:
    """Prediction: how many times longer than with 16 x 16 blocks does gemm_fp32_kernel take with `shape` blocks
    at n (the H200 record of the block-shape experiment)?"""
    from ..experiments.baseline import shape_table
    from ..results import load_latest

    data = load_latest().meta["experiments"]["fp32_block_shapes"]
    rows = {r["shape"]: r for r in shape_table(data, n)}
    r, base = rows[shape], rows[data["first_shape"]]
    judge_guess(f"time with {shape} blocks / {data['first_shape']} at n = {n}", guess, r["median_ms"] / base["median_ms"],
                within=1.5, fmt=".2f", what=f"H200 record, {r['median_ms']:.1f} / {base['median_ms']:.1f} ms",
                why=f"The table's lines per step: {r['lines']} for {shape}, {base['lines']} for "
                    f"{data['first_shape']}; if the load path serves a fixed number of lines per clock, the time "
                    "follows their ratio.")


# --------------------------------------------------------------------------- the tiled kernel
def static_problems(src: str, name: str) -> list[str]:
    """What the source lacks, as read without compiling it (empty when it looks complete)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", src, flags=re.S)   # ignore comments
    problems = []
    if not re.search(r'extern\s+"C"', code):
        problems.append('declare the kernel extern "C" so it can be found by its name')
    if not re.search(r"__global__\s+void\s+" + re.escape(name) + r"\s*\(", code):
        problems.append(f"there is no `__global__ void {name}(...)`; name the kernel {name!r} "
                        "or pass name=... to the checker")
    if "__shared__" not in code:
        problems.append("no __shared__ array: the point is to stage tiles of A and B in shared memory")
    if code.count("__syncthreads") < 2:
        problems.append("a tiled loop needs two __syncthreads() per step: after filling the tiles, "
                        "and before overwriting them")
    return problems


@checker
def check_tiled_kernel(src, name: str = "gemm_tiled", tile: int = 16, check_sizes=TILED_CHECK_SIZES,
                       time_sizes=TILED_TIME_SIZES) -> None:
    """Compile, check and time a tiled FP32 GEMM kernel given as CUDA source: ``extern "C" __global__ void
    <name>(const float* A, const float* B, float* C, int M, int N, int K)``, row-major, any M, N, K, launched
    with block (tile, tile) and grid (ceil(N / tile), ceil(M / tile))."""
    global last_tiled
    from ..device import backend

    label = "tiled kernel"
    last_tiled = None
    if src is None or src is Ellipsis:
        _report(label, src, False, "")
        return
    if not isinstance(src, str):
        _report(label, src, False, "pass the kernel's CUDA source as a Python string.")
        return
    problems = static_problems(src, name)
    if problems:
        _report(label, src, False, "; ".join(problems) + ".")
        return
    b = backend()
    if not b.is_gpu:
        print(f"[{label}] The source has what a tiled kernel needs (extern \"C\" {name}, __shared__ tiles, "
              "two __syncthreads()), but compiling, running and checking it needs a CUDA GPU: this "
              f"notebook runs on the CPU backend ({b.reason}). Run this cell on a GPU machine (for "
              "example a free Colab T4) for the verdict; the recorded H200 run of the worked solution "
              "is shown below.")
        sys.modules[__package__].last_result = None
        return
    _check_on_gpu(src, name, tile, check_sizes, time_sizes, label)


def _guarded(X, guard: int):
    """(view, buffer): a copy of X followed by `guard` NaNs, so reads past its end reach C as NaN and writes
    past its end overwrite NaNs."""
    import cupy

    buf = cupy.full(X.size + guard, np.nan, dtype=cupy.float32)
    view = buf[:X.size].reshape(X.shape)
    view[...] = X
    return view, buf


def _run_checked(kern, M, N, K, tile, seed, name):
    """Launch on guarded, NaN-poisoned buffers; returns (Check, problem or None)."""
    import cupy

    from ..experiments.baseline import _check, _inputs

    A0, B0 = _inputs(M, N, K, seed)
    guard = tile * (max(M, N, K) + tile)
    A, _ = _guarded(A0, guard)
    B, _ = _guarded(B0, guard)
    C, cbuf = _guarded(cupy.full((M, N), np.nan, dtype=cupy.float32), guard)
    grid = (-(-N // tile), -(-M // tile))
    kern(grid, (tile, tile), (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
    cupy.cuda.get_current_stream().synchronize()
    chk = _check(C, A0, B0, f"{name} TILE={tile}")
    return chk, tiled_problem(chk, wrote_past_c=not bool(cupy.isnan(cbuf[M * N:]).all()))


def tiled_problem(chk, wrote_past_c: bool = False) -> str | None:
    """What to tell the learner about a checked run of their tiled kernel (None: nothing wrong)."""
    if wrote_past_c:
        return "it wrote past the end of C: guard the store with `if (row < M && col < N)`."
    if chk.n_nan:
        return (f"{chk.n_nan} elements of C are NaN. The checker places NaN right after A, B and C: "
                "your kernel read past the end of A or B (the loads of the last, partial tile need "
                "`row < M && t + tx < K` for A and `t + ty < K && col < N` for B, else 0.0f), or it "
                "never wrote those elements.")
    if chk.passed:
        return None
    if chk.bound_ok and chk.size_ok:          # within the tolerance: only the model disagrees
        return ("every element is within the tolerance, but not bit-identical to gemm_fp32_kernel's arithmetic: "
                "your kernel adds the products in another order (a partial sum per tile, say). The exercise "
                "asks for one fmaf per product into one accumulator, K in order, as gemm_fp32_kernel does.")
    return ("wrong values. Check the indices of the tile loads and both __syncthreads() "
            "(one after filling the tiles, one before overwriting them).")


def _gpu_failure(label, src, exc, what):
    """A launch of the learner's kernel failed: raise a lost GPU context (Run All must stop), report any other
    CUDA error as the verdict."""
    from ..errors import translate_gpu_error

    err = translate_gpu_error(exc, what)
    if err is not None and type(err).__name__ == "GPUContextLostError":
        _report(label, src, False, "the GPU stopped with an error (see below).")
        raise err from None
    _report(label, src, False, f"the launch failed: {err or f'{type(exc).__name__}: {exc}'}")


def _check_on_gpu(src, name, tile, check_sizes, time_sizes, label):
    global last_tiled
    import cupy

    from ..compile import get_kernel, load_module
    from ..errors import KernelCompileError, gpu_errors
    from ..experiments.baseline import NAIVE, _inputs, _time, fp32_launcher

    try:
        kern = load_module(filename="exercise_tiled.cu", source=src).get_function(name)
    except KernelCompileError as exc:
        _report(label, src, False, f"it does not compile:\n{exc.problem}")
        return
    naive = get_kernel(*NAIVE)
    checks = []
    for i, (M, N, K) in enumerate(check_sizes):
        try:
            chk, problem = _run_checked(kern, M, N, K, tile, 900 + i, name)
        except Exception as exc:
            _gpu_failure(label, src, exc, f"your kernel {name} at M={M} N={N} K={K}")
            return
        if problem:
            _report(label, src, False, f"at M={M} N={N} K={K}, {problem}\n{chk}")
            return
        checks.append(chk)
    timings = []
    with gpu_errors(f"timing your kernel {name}"):
        for n in time_sizes:
            A, B = _inputs(n, n, n, 950 + n)
            run_mine, _ = fp32_launcher(kern, A, B, (tile, tile), tile=tile)
            run_naive, _ = fp32_launcher(naive, A, B, (16, 16))
            timings.append({"n": n, "yours": _time(run_mine, n), "gemm_fp32_kernel": _time(run_naive, n)})
            del A, B, run_mine, run_naive
            cupy.get_default_memory_pool().free_all_blocks()
    last_tiled = {"checks": [c.verdict() for c in checks], "timings": timings}
    _report(label, src, True, "")
    for c in checks:
        print(wrap("  " + c.verdict()))
    for t in timings:
        y, r = t["yours"], t["gemm_fp32_kernel"]
        print(f"  n={t['n']}: yours {y['median_ms']:.4g} ms ({y['tflops']:.3g} TFLOP/s), gemm_fp32_kernel "
              f"{r['median_ms']:.4g} ms ({r['tflops']:.3g} TFLOP/s): {r['median_ms'] / y['median_ms']:.2f}x")
