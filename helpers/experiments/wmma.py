"""Lesson 2 (Tensor Cores and the WMMA API): its experiments and their CPU counterparts.

Experiments: ``wmma_fragment_maps`` (which lane holds which fragment element), ``wmma_edge_corruption``
(wmma_gemm_naive on sizes not multiples of 16, on NaN-filled slack buffers) and ``wmma_variants_speed``. On
the CPU: the lesson's GEMM variants (emulated) and a replay of the naive kernel's loads and stores.
The documented PTX layout, the experiment ``wmma_nvrtc_ptx`` and the recorded compiler output are in
``wmma_ptx``, the pictures in ``wmma_plots``; this module offers their names too (``wmma.plot_k_loop``).
"""
from __future__ import annotations

import math

import numpy as np

from . import experiment
from .. import emulate
from ..device import backend
from ..errors import InputError
from .wmma_plots import (draw_owner_grid, plot_edge_masks, plot_error_vs_size, plot_fragment_maps,  # noqa: F401
                         plot_hmma_split, plot_k_loop, plot_mma_tile, plot_tile_mapping)
from .wmma_ptx import (HMMA_16816_REGS, build_dir, compare_with_ptx, hmma_split, holders_grid,  # noqa: F401
                       nvrtc_ptx, owner_grid, ptx_fragment_layout, ptx_lines, ptx_wmma_accumulator_layout,
                       ptx_wmma_b_layout, sass_lines, warp_tile, wmma_nvrtc_ptx)

LESSON_FILE = "wmma_lesson.cu"


# --------------------------------------------------------------------------- launching the variants
VARIANTS = {
    "wmma_gemm_naive": {"file": "wmma.cu", "block": (32, 8), "tile": 16, "b_layout": "row"},
    "wmma_gemm_bcol": {"file": LESSON_FILE, "block": (32, 8), "tile": 16, "b_layout": "col"},
    "wmma_gemm_2x2": {"file": LESSON_FILE, "block": (32, 4), "tile": 32, "b_layout": "row"},
}


def _ceil(v, m):
    return -(-v // m) * m


def variant_grid(name: str, M: int, N: int) -> tuple[int, int]:
    v = VARIANTS[name]
    t, warps = v["tile"], v["block"][1]
    return (math.ceil(N / t), math.ceil(M / (t * warps)))


def prepare_variant(name: str, A: np.ndarray, B: np.ndarray):
    """Validate numpy FP16 A and B and pad them to the variant's tile: (A_padded, B_padded, (M, N, K),
    (Mp, Np, Kp)), B stored as B^T (Np x Kp) for the column-major variant."""
    v = VARIANTS[name]
    for nm, X in (("A", A), ("B", B)):
        if not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype != np.float16:
            raise InputError(f"{nm} must be a 2-D numpy float16 array (got {type(X).__name__} "
                             f"{getattr(X, 'dtype', '?')} {getattr(X, 'shape', '?')}).",
                             f"convert explicitly: {nm} = np.asarray({nm}, dtype=np.float16).")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise InputError(f"inner dimensions differ: A is {M}x{K}, B is {K2}x{N}.",
                         "C = A B needs A's columns == B's rows.")
    t = v["tile"]
    Mp, Np, Kp = _ceil(M, t), _ceil(N, t), _ceil(K, 16)
    Ap = np.zeros((Mp, Kp), np.float16)
    Ap[:M, :K] = A
    Bp = np.zeros((Kp, Np), np.float16)
    Bp[:K, :N] = B
    if v["b_layout"] == "col":
        Bp = np.ascontiguousarray(Bp.T)
    return Ap, Bp, (M, N, K), (Mp, Np, Kp)


def variant_launcher(name: str, A: np.ndarray, B: np.ndarray, source: str | None = None):
    """GPU: (run, C, (M, N)) for a variant on padded device copies, C NaN-poisoned; `source`: a learner's
    kernel (named `name`) instead of the course's file."""
    import cupy

    from ..compile import get_kernel, load_module

    v = VARIANTS[name]
    Ap, Bp, (M, N, K), (Mp, Np, Kp) = prepare_variant(name, A, B)
    if source is None:
        kern = get_kernel(v["file"], name, (7, 0))
    else:
        kern = load_module(f"exercise_{name}.cu", source=source).get_function(name)
    Ad, Bd = cupy.asarray(Ap), cupy.asarray(Bp)
    C = cupy.full((Mp, Np), np.nan, dtype=np.float32)
    grid = variant_grid(name, Mp, Np)
    args = (Ad, Bd, C, np.int32(Mp), np.int32(Np), np.int32(Kp))

    def run():
        kern(grid, v["block"], args)

    return run, C, (M, N)


def run_variant(name: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C = A B (FP32) with a lesson variant on the GPU, or on the CPU backend its emulation (the three
    variants do the same arithmetic per element)."""
    Ap, Bp, (M, N, K), _ = prepare_variant(name, A, B)
    if not backend().is_gpu:
        return emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")
    import cupy

    run, C, _ = variant_launcher(name, A, B)
    run()
    return cupy.asnumpy(C[:M, :N])


# --------------------------------------------------------------------------- unpadded launches
def flat_buffers(A: np.ndarray, B: np.ndarray, M: int, N: int, K: int):
    """Flat A, B (FP16) and C (FP32) buffers for an unpadded naive launch, with enough slack that every
    access stays inside: NaN after A and B (garbage), the sentinel -7777 after C (to count writes)."""
    Mp, Np, Kp = _ceil(M, 16), _ceil(N, 16), _ceil(K, 16)
    a_len = (Mp - 1) * K + Kp            # largest index the loads of A touch, + 1
    b_len = (Kp - 1) * N + Np
    c_len = (Mp - 1) * N + Np
    Ab = np.full(max(a_len, M * K), np.nan, np.float16)
    Ab[:M * K] = A.ravel()
    Bb = np.full(max(b_len, K * N), np.nan, np.float16)
    Bb[:K * N] = B.ravel()
    Cb = np.full(max(c_len, M * N), -7777.0, np.float32)
    Cb[:M * N] = np.nan
    return Ab, Bb, Cb


def emulate_unpadded_naive(Ab, Bb, Cb, M, N, K, block=(32, 8)):
    """Replay wmma_gemm_naive's whole-tile loads (ldm K and N) and stores (ldm N) on flat buffers with M, N, K
    not multiples of 16, in launch order (on the GPU overlapping stores race). Returns the new C buffer."""
    Cb = Cb.copy()
    r = np.arange(16)[:, None]
    c = np.arange(16)[None, :]
    gx, gy = math.ceil(N / 16), math.ceil(M / (16 * block[1]))
    for by in range(gy):
        for bx in range(gx):
            for w in range(block[1]):
                tr, tc = (by * block[1] + w) * 16, bx * 16
                if tr >= M or tc >= N:
                    continue
                acc = np.zeros((16, 16))
                for k in range(0, K, 16):
                    a = Ab[(tr + r) * K + k + c].astype(np.float64)
                    b = Bb[(k + r) * N + tc + c].astype(np.float64)
                    with np.errstate(invalid="ignore", over="ignore"):
                        acc = acc + a @ b
                Cb[(tr + r) * N + tc + c] = acc.astype(np.float32)
    return Cb


EDGE_CASES = [(40, 40, 48), (40, 48, 40)]


def edge_case_inputs(M, N, K, seed=3):
    from ..numerics import random_matrix

    A = random_matrix(M, K, seed=seed).astype(np.float16)
    B = random_matrix(K, N, seed=seed + 1).astype(np.float16)
    return A, B


def summarize_edge(Cb, M, N, A, B) -> dict:
    ref = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    C = Cb[:M * N].reshape(M, N).astype(np.float64)
    mask = np.where(np.isfinite(C), np.where(np.abs(C - ref) <= 1e-3 * scale + 1e-6, 0, 1), 2)  # 2: NaN/inf
    past = int(np.sum(Cb[M * N:] != np.float32(-7777.0)))
    return {"m": M, "n": N, "k": A.shape[1], "mask": mask.tolist(), "n_correct": int((mask == 0).sum()),
            "n_wrong": int((mask == 1).sum()), "n_nan": int((mask == 2).sum()),
            "writes_past_end": past, "slack_elements": int(Cb.size - M * N)}


def edge_corruption_cpu() -> list[dict]:
    """The emulated version of the wmma_edge_corruption experiment (CPU, deterministic order)."""
    out = []
    for M, N, K in EDGE_CASES:
        A, B = edge_case_inputs(M, N, K)
        Ab, Bb, Cb = flat_buffers(A, B, M, N, K)
        out.append(summarize_edge(emulate_unpadded_naive(Ab, Bb, Cb, M, N, K), M, N, A, B))
    return out


def edge_store_sources(M: int, N: int, K: int) -> dict:
    """Where wmma_gemm_naive's whole-tile stores land when launched unpadded (element (row, col) at
    row * N + col): distinct addresses past C's end (past_end), those reached from rows >= M
    (past_end_rows) or only by columns >= N wrapping (past_end_wrap_only), addresses inside C a column
    >= N reaches (wrapped_inside), and the rows of B the last K step reads past B's end."""
    mp, np_, kp = _ceil(M, 16), _ceil(N, 16), _ceil(K, 16)
    rows = np.arange(0, M, 16)[:, None] + np.arange(16)[None, :]          # [tile row, r]
    cols = np.arange(0, N, 16)[:, None] + np.arange(16)[None, :]          # [tile col, c]
    row = np.broadcast_to(rows.reshape(-1, 1), (rows.size, cols.size)).ravel()
    col = np.broadcast_to(cols.reshape(1, -1), (rows.size, cols.size)).ravel()
    addr = row * N + col
    past = set(addr[addr >= M * N].tolist())
    from_rows = set(addr[(addr >= M * N) & (row >= M) & (col < N)].tolist())
    wrapped_in = set(addr[(addr < M * N) & (col >= N)].tolist())
    return {"m": M, "n": N, "k": K, "mp": mp, "np": np_, "kp": kp, "past_end": len(past),
            "past_end_rows": len(from_rows), "past_end_wrap_only": len(past - from_rows),
            "wrapped_inside": len(wrapped_in), "b_rows_past_end": kp - K}


# --------------------------------------------------------------------------- experiments
@experiment("wmma_fragment_maps")
def wmma_fragment_maps():
    """Each lane's fragment elements, decoded to (row, col), for this GPU."""
    import cupy

    from ..compile import get_kernel
    from ..device import require_gpu

    gpu = require_gpu("wmma_fragment_maps")
    kern = get_kernel(LESSON_FILE, "wmma_fragment_probe", (7, 0))
    idx = np.arange(256, dtype=np.float32).reshape(16, 16)        # value = row*16 + col, exact in half
    A = cupy.asarray(idx.astype(np.float16))
    B = cupy.asarray(idx.astype(np.float16))
    Bc = cupy.asarray(np.ascontiguousarray(idx.T).astype(np.float16))   # col-major storage of B
    outs = [cupy.full(32 * 64, -1.0, dtype=cupy.float32) for _ in range(3)]
    acc = cupy.full(256, -1.0, dtype=cupy.float32)
    counts = cupy.zeros(3, dtype=cupy.int32)
    kern((1,), (32,), (A, B, Bc, outs[0], outs[1], outs[2], acc, counts))
    n_a, n_b, n_c = (int(v) for v in cupy.asnumpy(counts))

    def decode(buf, n):
        v = cupy.asnumpy(buf).reshape(32, 64)[:, :n]
        return [[[int(x) // 16, int(x) % 16] for x in row] for row in v]

    accv = cupy.asnumpy(acc).reshape(16, 16).astype(int)
    acc_held = [[] for _ in range(32)]
    for r in range(16):
        for c in range(16):
            lane, i = divmod(int(accv[r, c]), 64)
            acc_held[lane].append([i, r, c])
    acc_lists = [[[r, c] for i, r, c in sorted(h)] for h in acc_held]
    return {"gpu": gpu.name, "sm": gpu.sm,
            "num_elements": {"matrix_a": n_a, "matrix_b": n_b, "accumulator": n_c},
            "matrix_a": decode(outs[0], n_a), "matrix_b": decode(outs[1], n_b),
            "matrix_b_col": decode(outs[2], n_b), "accumulator": acc_lists,
            "accumulator_store": accv.tolist()}


@experiment("wmma_edge_corruption")
def wmma_edge_corruption():
    """wmma_gemm_naive launched on M, N, K that are not multiples of 16 (slack buffers), in a child process:
    the launch breaks the kernel's alignment contract, and a fault must not poison this CUDA context."""
    import json
    import os
    import subprocess
    import sys

    from ..paths import IMPORT_ROOT as root, child_env

    code = "import json, helpers.experiments.wmma as w; print('JSON' + json.dumps(w._edge_gpu()))"
    env = child_env(dict(os.environ, COURSE_DEVICE="gpu"))
    p = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                       text=True, timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("JSON")), None)
    if p.returncode != 0 or line is None:
        return {"error": (p.stderr or p.stdout)[-2000:], "returncode": p.returncode}
    return json.loads(line[4:])


def _edge_gpu():
    import cupy

    from ..compile import get_kernel

    kern = get_kernel("wmma.cu", "wmma_gemm_naive", (7, 0))
    out = []
    for M, N, K in EDGE_CASES:
        A, B = edge_case_inputs(M, N, K)
        Ab, Bb, Cb = (cupy.asarray(x) for x in flat_buffers(A, B, M, N, K))
        grid = (math.ceil(N / 16), math.ceil(M / 128))
        kern(grid, (32, 8), (Ab, Bb, Cb, np.int32(M), np.int32(N), np.int32(K)))
        cupy.cuda.get_current_stream().synchronize()
        out.append(summarize_edge(cupy.asnumpy(Cb), M, N, A, B))
    return out


@experiment("wmma_variants_speed")
def wmma_variants_speed(sizes=(1024, 2048, 4096, 8192)):
    """TFLOP/s of wmma_gemm_naive, wmma_gemm_bcol and wmma_gemm_2x2, each checked first."""
    from ..memory import cap_sizes, release
    from ..check import check_gemm
    from ..numerics import random_matrix
    from ..timing import benchmark, gemm_flops

    # device bytes per element: FP16 A, B (4) and FP32 C (4); checked sizes add check_gemm's float64 work
    kept, note = cap_sizes(sizes, lambda n: (72 if n <= 2048 else 8) * n * n, what="wmma_variants_speed")
    if note:
        print(note)
    rows = []
    for i, n in enumerate(sizes):
        if n not in kept:
            continue
        release()
        A = random_matrix(n, n, seed=100 + i).astype(np.float16)
        B = random_matrix(n, n, seed=200 + i).astype(np.float16)
        for name in VARIANTS:
            run, C, _ = variant_launcher(name, A, B)
            run()
            ok = True
            if n <= 2048:
                import cupy

                chk = check_gemm(C, cupy.asarray(A), cupy.asarray(B), inputs="fp16", acc="fp32",
                                 acc_rounding="truncate", block=16, name=name, backend="GPU")
                ok = bool(chk.passed)
            t = benchmark(run)
            rows.append({"kernel": name, "m": n, "n": n, "k": n, "median_ms": round(t.median_ms, 6),
                         "tflops": round(gemm_flops(n, n, n) / (t.median_ms * 1e-3) / 1e12, 4),
                         "passed": ok, **(t.clocks or {})})
    return rows
