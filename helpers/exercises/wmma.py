"""Lesson 2 exercises. The kernel exercises compile the learner's source, run it on sizes that are not
multiples of 16 (zero-padded), check it and time it against wmma_gemm_naive; without a GPU, exercise 6's load
of B is replayed with numpy (bcol_replay) and exercise 7 says it needs one.
"""
from __future__ import annotations

import numpy as np

from . import _report, check_number, checker, judge_guess

KERNEL_SIZES = [(200, 136, 72), (96, 160, 1000)]   # (M, N, K): none is a multiple of 32 in every dim
TIME_SIZE = 2048

BCOL_STARTER = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// B is K x N but stored column-major: element (k, n) is at Bt[n * K + k].
extern "C" __global__ void wmma_gemm_bcol(const half* A, const half* Bt, float* C,
                                          int M, int N, int K)
{
    const int tile_row = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int tile_col = blockIdx.x * 16;
    if (tile_row >= M || tile_col >= N) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    // TODO 1: the B fragment's layout tag
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        // TODO 2: where does the tile (rows k.., columns tile_col..) start, and what is ldm?
        wmma::load_matrix_sync(b, Bt + (size_t)k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
}
'''

TWO_BY_TWO_STARTER = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// Each warp computes the 32x32 tile of C at (tile_row, tile_col) from 2x2 accumulators.
// Launched with block dim3(32, 4), grid (N / 32, ceil(M / 128)); M, N multiples of 32.
extern "C" __global__ void wmma_gemm_2x2(const half* A, const half* B, float* C,
                                         int M, int N, int K)
{
    const int tile_row = (blockIdx.y * blockDim.y + threadIdx.y) * 32;
    const int tile_col = blockIdx.x * 32;
    if (tile_row >= M || tile_col >= N) return;
    // TODO: two A fragments, two B fragments, four accumulators (zeroed);
    // per K step load a[0], a[1], b[0], b[1] and issue the four mma_sync;
    // at the end store acc[i][j] at rows tile_row + 16 i, columns tile_col + 16 j.
}
'''


def _needs_gpu(name: str) -> bool:
    from ..device import backend

    if backend().is_gpu:
        return False
    print(f"[{name}] This exercise compiles and runs your kernel, so it needs a CUDA GPU; this notebook "
          "runs on the CPU backend. Run the notebook on a GPU to check it (the reference solution "
          "is in kernels/wmma_lesson.cu).")
    return True


@checker
def check_kernel(name: str, kernel: str, source) -> None:
    """Compile `source`, check kernel `kernel` at KERNEL_SIZES, time it against wmma_gemm_naive."""
    from .. import exercises

    if source is None or source is Ellipsis:
        _report(name, None, False, "")
        return
    if not isinstance(source, str):
        _report(name, source, False, "pass the kernel's CUDA source as a Python string.")
        return
    if _needs_gpu(name):
        exercises.last_result = None
        return
    import cupy

    from ..errors import CourseError
    from ..experiments.wmma import variant_launcher
    from ..check import check_gemm
    from ..numerics import random_matrix
    from ..timing import benchmark, gemm_flops

    if f"void {kernel}" not in source.replace("\n", " ").replace("  ", " "):
        _report(name, source, False, f'the kernel must be declared as extern "C" __global__ void {kernel}(...).')
        return
    try:
        for i, (M, N, K) in enumerate(KERNEL_SIZES):
            A = random_matrix(M, K, seed=40 + i).astype(np.float16)
            B = random_matrix(K, N, seed=50 + i).astype(np.float16)
            run, C, _ = variant_launcher(kernel, A, B, source=source)
            run()
            chk = check_gemm(C[:M, :N], cupy.asarray(A), cupy.asarray(B), inputs="fp16", acc="fp32",
                             acc_rounding="truncate", block=16, name=kernel, backend="GPU")
            if not chk.passed:
                _report(name, source, False, f"wrong result at M={M}, N={N}, K={K}:\n  "
                        + chk.mismatch_summary().replace("\n", "\n  ")
                        + "\nCheck the tile pointers and ldm.")
                return
    except CourseError as exc:
        _report(name, source, False, str(exc))
        return
    except Exception as exc:   # a CUDA error in the learner's kernel
        from .baseline import _gpu_failure

        _gpu_failure(name, source, exc, f"your kernel {kernel}")
        return
    _report(name, source, True, "")
    A = random_matrix(TIME_SIZE, TIME_SIZE, seed=7).astype(np.float16)
    B = random_matrix(TIME_SIZE, TIME_SIZE, seed=8).astype(np.float16)
    flops = gemm_flops(TIME_SIZE, TIME_SIZE, TIME_SIZE)
    from ..errors import gpu_errors

    with gpu_errors(f"timing your kernel {kernel}"):
        mine = benchmark(variant_launcher(kernel, A, B, source=source)[0], flops=flops)
        base = benchmark(variant_launcher("wmma_gemm_naive", A, B)[0], flops=flops)
    print(f"  at {TIME_SIZE}^3: yours {mine.tflops:.1f} TFLOP/s, wmma_gemm_naive {base.tflops:.1f} TFLOP/s "
          f"({mine.tflops / base.tflops:.2f}x)")


REPLAY_SIZES = [(48, 64, 80), (32, 16, 48)]     # (M, N, K) the CPU replay of exercise 6's B load walks


_CAST = (r"\bstatic_cast\s*<[^<>]*>"                                          # static_cast<T>(x) -> (x)
         r"|\(\s*(?:const\s+)?(?:(?:unsigned|signed|long|short)\s+)*"             # (T) for an integer type T
         r"(?:size_t|ptrdiff_t|u?int(?:8|16|32|64)_t|int|long|unsigned|char|short)\s*\)")


class Unreadable(ValueError):
    """The replay cannot read an expression of the learner's source (only a GPU run can judge it)."""


def _int_expr(text: str, names: dict) -> int:
    """A C integer expression of the kernel's names (casts dropped, / as C's integer division), evaluated."""
    import re

    expr = re.sub(_CAST, "", text)
    if not re.fullmatch(r"[\w\s+*()/%-]*", expr) or "**" in expr or not expr.strip():
        raise Unreadable(f"cannot read {text.strip()!r}")
    try:
        return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(names)))   # noqa: S307 (names only)
    except Exception as exc:
        raise Unreadable(f"cannot read {text.strip()!r} ({type(exc).__name__}: {exc})") from None


def _resolve(expr: str, code: str) -> str:
    """`expr`, or if it is one local name assigned once in `code` (const half* bt = Bt + ...;), what it holds."""
    import re

    name = expr.strip()
    if re.fullmatch(r"\w+", name) and name != "Bt":
        hits = re.findall(r"\b" + name + r"\s*=\s*([^;=][^;]*);", code)
        if len(hits) == 1:
            return "(" + hits[0].strip() + ")"
    return expr


def bcol_replay(source: str) -> tuple[str, str | None]:
    """Exercise 6 without a GPU: read the source's B fragment (its layout tag) and its load of B (pointer and
    ldm), and replay that load with numpy for every tile and k of REPLAY_SIZES, against the 16 x 16 tile of B
    the kernel needs (rows k.., columns tile_col.., B[k][n] = Bt[n * K + k]). ("ok", None) when every load reads
    the right elements; ("wrong", what went wrong first); ("unreadable", why) when the source is written in a way
    the replay cannot follow (then only a GPU run can judge it)."""
    import re

    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S).replace("nvcuda::wmma::", "wmma::")
    frag = re.search(r"fragment\s*<\s*wmma::matrix_b\s*,[^>]*?wmma::(row_major|col_major)\s*>\s*(\w+)", code)
    if not frag:
        return "unreadable", "no `wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::..._major>` found"
    layout, bname = frag.groups()
    load = re.search(r"load_matrix_sync\s*\(\s*" + re.escape(bname) + r"\s*,\s*(.+?)\s*,\s*([^,;]+?)\s*\)\s*;", code)
    if not load:
        return "unreadable", f"no `wmma::load_matrix_sync({bname}, <pointer>, <ldm>);` found"
    ptr = _resolve(load.group(1), code)
    ldm_text = _resolve(load.group(2), code)
    ptr = re.sub(r"&\s*Bt\s*\[(.+)\]", r"Bt + (\1)", ptr.strip(), flags=re.S)   # &Bt[i] is Bt + i
    if len(re.findall(r"\bBt\b", ptr)) != 1:
        return "unreadable", f"the pointer of B's load, {load.group(1).strip()!r}, does not name Bt once"
    r, c = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    for M, N, K in REPLAY_SIZES:
        for tile_row in range(0, M, 16):
            for tile_col in range(0, N, 16):
                for k in range(0, K, 16):
                    names = dict(M=M, N=N, K=K, tile_row=tile_row, tile_col=tile_col, k=k)
                    try:                                   # Bt as 0: the pointer's value is its offset
                        off, ldm = _int_expr(ptr, dict(names, Bt=0)), _int_expr(ldm_text, names)
                    except Unreadable as exc:
                        return "unreadable", f"{exc} (the replay knows M, N, K, tile_row, tile_col and k)"
                    got = off + (r + c * ldm if layout == "col_major" else r * ldm + c)
                    want = (tile_col + c) * K + (k + r)              # Bt's index of B[k + r][tile_col + c]
                    if not np.array_equal(got, want):
                        i, j = (int(x[0]) for x in np.nonzero(got != want))
                        return "wrong", (f"at M={M} N={N} K={K}, tile_col={tile_col}, k={k}: element ({i}, {j}) of "
                                         f"the {layout} fragment is read from Bt[{got[i, j]}], but B[{k + i}]"
                                         f"[{tile_col + j}] is Bt[{want[i, j]}]. Check the layout tag, the pointer "
                                         "and ldm.")
    return "ok", None


@checker
def check_bcol_kernel(source) -> None:
    """Exercise: wmma_gemm_bcol, B stored column-major (B^T row-major, N x K). Without a GPU, a numpy replay of the
    kernel's load of B (bcol_replay) checks the layout tag, the pointer and ldm; where it cannot read the source it
    says so and gives no verdict."""
    from .. import exercises
    from ..device import backend
    from ..errors import wrap

    name = "column-major B kernel"
    if isinstance(source, str) and not backend().is_gpu:
        status, why = bcol_replay(source)
        if status == "wrong":
            _report(name, source, False, why)
            return
        print(wrap(f"[{name}] Your load of B reads the right 16 x 16 tile of B at every k and tile (a numpy replay "
                   "on the CPU backend). On a GPU the checker also compiles, runs, checks and times the whole kernel."
                   if status == "ok" else
                   f"[{name}] No verdict on the CPU backend: the numpy replay of your load of B cannot follow the "
                   f"source ({why}). Run the notebook on a GPU to check the whole kernel."))
        exercises.last_result = None
        return
    check_kernel(name, "wmma_gemm_bcol", source)


@checker
def check_2x2_kernel(source) -> None:
    """Exercise: wmma_gemm_2x2, each warp a 32x32 tile from 2x2 fragments."""
    check_kernel("2x2 fragments per warp", "wmma_gemm_2x2", source)


# --------------------------------------------------------------------------- questions with numbers
@checker
def lane_of_a_exercise(answer, row: int = 9, col: int = 6) -> None:
    """Which lane holds A[row][col] in the documented PTX mma.m16n8k16 A fragment?"""
    from ..experiments.wmma_ptx import ptx_fragment_layout

    lanes = [lane for lane, cells in enumerate(ptx_fragment_layout("a")) if (row, col) in cells]
    check_number(f"lane holding A[{row}][{col}]", answer, lanes[0],
                 hint="groupID = lane >> 2 picks the row (row = groupID, or groupID + 8); "
                      "threadID_in_group = lane % 4 picks the column pair (col = 2*threadID_in_group "
                      "+ 0 or 1, + 8 for a4..a7). lane = 4*groupID + threadID_in_group.")


@checker
def naive_bytes_per_flop_exercise(answer, m: int = 16, n: int = 16, k: int = 16,
                                  elem_bytes: int = 2) -> None:
    """Bytes a naive WMMA kernel loads from global memory per FLOP: one m x k A tile and one k x n B tile
    per m x n x k mma_sync (defaults: wmma_gemm_naive)."""
    loaded = (m * k + k * n) * elem_bytes
    check_number(f"naive WMMA bytes per FLOP ({m}x{n}x{k}, {elem_bytes}-byte elements)", answer,
                 loaded / (2 * m * n * k),
                 hint=f"per mma_sync the warp loads one {m}x{k} A tile and one {k}x{n} B tile ({elem_bytes} bytes "
                      f"each element) and performs 2*{m}*{n}*{k} FLOPs.")


@checker
def two_by_two_bytes_per_flop_exercise(answer) -> None:
    """The same for a warp that computes 2x2 fragments: 4 tiles loaded per 4 mma_sync."""
    check_number("2x2 WMMA bytes per FLOP", answer, (4 * 16 * 16 * 2) / (4 * 2 * 16 * 16 * 16),
                 hint="per K step: 2 A tiles + 2 B tiles loaded, 4 mma_sync issued.")


@checker
def hmma_per_tile_exercise(answer, K: int) -> None:
    """HMMA instructions one warp of wmma_gemm_naive executes for its 16x16 tile of C at K (a multiple of 16),
    counted per wmma.mma in the recorded sm_90 build."""
    from ..experiments.wmma_ptx import ptx_lines, sass_lines

    n_mma = sum(1 for ln in ptx_lines() if ln.startswith("wmma.mma"))
    n_hmma = len(sass_lines(opcode="HMMA"))
    check_number(f"HMMA per 16x16 tile at K={K}", answer, (K // 16) * n_hmma / n_mma,
                 hint="the warp issues one mma_sync per 16 values of K, and each mma_sync becomes the number of "
                      "HMMA.16816 per wmma.mma counted on the slide 'From mma_sync to the machine'.")


def solution_source(kernel: str) -> str:
    """The reference solution from kernels/wmma_lesson.cu, with the includes it needs."""
    from ..display import kernel_source

    return ("#include <mma.h>\n#include <cuda_fp16.h>\nusing namespace nvcuda;\n\n"
            + kernel_source("wmma_lesson.cu", kernel))


# --------------------------------------------------------------------------- predictions, revealed from the record
def _recorded(kernel: str, n: int) -> dict:
    from ..results import load_latest

    return load_latest().select(kernel=kernel, m=n, n=n, k=n)[0]


@checker
def reveal_speedup(guess, n: int = 4096) -> None:
    """Prediction: how many times faster than the FP32 CUDA-core kernel is wmma_gemm_naive at n (the H200 record)?"""
    w, f = _recorded("wmma_gemm_naive", n), _recorded("gemm_fp32_kernel", n)
    judge_guess(f"naive WMMA / FP32 kernel at n = {n}", guess, w["tflops"] / f["tflops"], within=1.5,
                what=f"H200 record, {w['tflops']:.1f} / {f['tflops']:.2f} TFLOP/s", fmt=".2f",
                why="The datasheet ratio compares the two peaks; this kernel reaches neither (slide 'Why naive "
                    "WMMA is far from cuBLAS').")


@checker
def reveal_error_growth(guess, lo: int = 256, hi: int = 8192, kernel: str = "wmma_gemm_naive") -> None:
    """Prediction: by what factor does the kernel's relative error (against float64 of the FP32 inputs) grow from
    n = lo to n = hi (the H200 record)?"""
    a, b = _recorded(kernel, lo)["rel_err"], _recorded(kernel, hi)["rel_err"]
    judge_guess(f"{kernel} error growth, n = {lo} to {hi}", guess, b / a, within=1.5,
                what=f"H200 record, {a:.2e} at n = {lo} and {b:.2e} at n = {hi}, a growth", fmt=".2f",
                why="Which rounding dominates: the inputs' (once per element, whatever n is) or the "
                    "accumulator's (once per addition, K of them)?")


@checker
def reveal_tensor_busy(guess, target: str = "rung1") -> None:
    """Prediction: the share of cycles (%) the Tensor Cores are busy in wmma_gemm_naive at 4096 (Nsight Compute
    on the H200)."""
    from ..profile import load_ncu

    busy = load_ncu().row(target)["tensor_pct"]
    judge_guess("Tensor pipe busy (%)", guess, busy, within=2.0, what="Nsight Compute on the H200 (%)", fmt=".1f",
                why="Per mma_sync the warp loads two tiles from global memory: how long does that take next to "
                    "one Tensor Core instruction?")
