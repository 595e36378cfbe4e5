"""Lesson 2 (Tensor Cores and the WMMA API): its experiments and their CPU counterparts.

Experiments: ``wmma_fragment_maps`` (which lane holds which fragment element), ``wmma_edge_corruption``
(wmma_gemm_naive on sizes not multiples of 16, on NaN-filled slack buffers), ``wmma_variants_speed`` and
``wmma_nvrtc_ptx``. On the CPU: the documented PTX fragment layout, the lesson's GEMM variants (emulated) and
a replay of the naive kernel's loads and stores.
"""
from __future__ import annotations

import math

import numpy as np

from . import experiment
from .. import emulate
from ..device import backend
from ..errors import InputError

LESSON_FILE = "wmma_lesson.cu"


# --------------------------------------------------------------------------- documented PTX layout
def ptx_fragment_layout(kind: str) -> list[list[tuple[int, int]]]:
    """(row, col) of each element each lane holds for PTX mma.sync.m16n8k16 with .f16 inputs (PTX ISA,
    "Matrix Fragments for mma.m16n8k16 with floating point type"): kind 'a' (A, 16x16, a0..a7),
    'b' (B, 16x8, b0..b3) or 'c' (C/D, 16x8, c0..c3)."""
    # g = groupID = lane >> 2, t = threadID_in_group = lane % 4; element i of the lane's fragment
    cells = {"a": lambda g, t: [(g + 8 * (i % 4 >= 2), 2 * t + i % 2 + 8 * (i >= 4)) for i in range(8)],
             "b": lambda g, t: [(2 * t + i % 2 + 8 * (i >= 2), g) for i in range(4)],
             "c": lambda g, t: [(g + 8 * (i >= 2), 2 * t + i % 2) for i in range(4)]}
    if kind not in cells:
        raise ValueError("kind must be 'a', 'b' or 'c'")
    return [cells[kind](lane >> 2, lane % 4) for lane in range(32)]


def owner_grid(held, shape=(16, 16)) -> np.ndarray:
    """From held[lane] = [(row, col), ...], a grid of the lowest lane holding each element (-1: none)."""
    grid = np.full(shape, -1, dtype=int)
    for lane in range(len(held) - 1, -1, -1):
        for r, c in held[lane]:
            grid[r, c] = lane
    return grid


def holders_grid(held, shape=(16, 16)) -> np.ndarray:
    """How many different lanes hold each matrix element (a lane holding it twice counts once)."""
    n = np.zeros(shape, dtype=int)
    for cells in held:
        for r, c in {tuple(x) for x in cells}:
            n[r, c] += 1
    return n


def _two_halves(kind: str) -> list[list[tuple[int, int]]]:
    """A 16x16 operand as two m16n8k16 operands of `kind` side by side (columns 0-7, then 8-15)."""
    return [cells + [(r, col + 8) for r, col in cells] for cells in ptx_fragment_layout(kind)]


def ptx_wmma_accumulator_layout() -> list[list[tuple[int, int]]]:
    """The 16x16 accumulator if WMMA were two m16n8k16 side by side."""
    return _two_halves("c")


def ptx_wmma_b_layout() -> list[list[tuple[int, int]]]:
    """B (16x16) as two m16n8k16 B operands side by side."""
    return _two_halves("b")


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


def nvrtc_ptx(filename: str = "wmma.cu", arch: str | None = None) -> dict:
    """PTX for kernels/<filename> from NVRTC on this GPU, and its wmma lines (NVRTC called directly with
    -arch=compute_XY: CuPy's own path asks for a cubin, which holds no PTX text)."""
    from cupy_backends.cuda.libs import nvrtc

    from ..compile import KERNEL_DIR, find_cuda_include_dirs
    from ..device import require_gpu

    gpu = require_gpu("NVRTC PTX")
    arch = arch or f"compute_{gpu.cc[0]}{gpu.cc[1]}"
    src = (KERNEL_DIR / filename).read_text()
    opts = ["-std=c++17", f"-arch={arch}"] + [f"-I{d}" for d in find_cuda_include_dirs()]
    prog = nvrtc.createProgram(src, filename, [], [])
    try:
        nvrtc.compileProgram(prog, opts)
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    if isinstance(ptx, bytes):
        ptx = ptx.decode()
    ptx = ptx.rstrip("\x00")
    lines = [ln.strip() for ln in ptx.splitlines()]
    return {"arch": arch, "nvrtc": gpu.nvrtc, "n_lines": len(lines),
            "wmma_lines": [ln for ln in lines if ln.startswith("wmma.")],
            "header": [ln for ln in lines[:12] if ln.startswith(".") or ln.startswith("//")]}


@experiment("wmma_nvrtc_ptx")
def wmma_nvrtc_ptx():
    return nvrtc_ptx("wmma.cu")


# --------------------------------------------------------------------------- recorded compiler output
def build_dir():
    from ..results import RESULTS_DIR

    return RESULTS_DIR / "build-nvidia-h200"


def ptx_lines() -> list[str]:
    """The wmma instructions of the recorded PTX of kernels/wmma.cu."""
    return [ln.strip() for ln in open(build_dir() / "wmma.sm_90.ptx") if ln.strip().startswith("wmma.")]


def sass_lines(opcode="HMMA") -> list[str]:
    """The recorded SASS instructions of kernels/wmma.cu (address and text) whose opcode starts with `opcode`."""
    from ..analysis import sass_instructions

    return [f"{addr}  {text}" for _, addr, text, op in sass_instructions(build_dir() / "wmma.sm_90.sass")
            if op.startswith(opcode)]


def warp_tile(name: str = "wmma_gemm_naive") -> tuple[int, int, int]:
    """(rows, columns, K step) of the tile of C one warp computes, from the kernel's launch configuration: its block
    tile shared by the block's warps (threadIdx.y), and the K it needs a multiple of."""
    from ..kernels import KERNELS

    spec = KERNELS[name]
    return spec.block_tile[0] // spec.block[1], spec.block_tile[1], spec.tile_k


# 32-bit registers per lane of each operand of mma.m16n8k16 with .f16 inputs and .f32 accumulators (PTX ISA,
# "Matrix Fragments for mma.m16n8k16 with floating point type": A 8 halves, B 4 halves, C and D 4 floats)
HMMA_16816_REGS = {"a": 4, "b": 2, "c": 4, "d": 4}


def hmma_split(kernel: str = "wmma_gemm_naive") -> list[dict]:
    """The HMMA instructions of the first mma_sync in the recorded SASS of `kernel`, with their registers (D, A, B,
    C: each operand's registers, as ranges) and the columns of the tile each one's D holds, read from the
    kernel's final 64-bit stores of D (STG.E.64 [addr + offset]: offset / 4 bytes = the first column)."""
    import re

    from ..analysis import sass_instructions

    ins = [(text, op) for k, _, text, op in sass_instructions(build_dir() / "wmma.sm_90.sass") if k == kernel]
    hmma = [text for text, op in ins if op.startswith("HMMA")]
    stores = {}                                     # register -> byte offset of its store
    for text, op in ins:
        m = re.match(r"STG\.E\.64 .*\[R\d+\.64(?:\+(0x[0-9a-f]+))?\], (R\d+)", text)
        if m:
            stores[m.group(2)] = int(m.group(1) or "0", 16)
    out = []
    for text in hmma[:2]:
        op, regs = text.split(None, 1)
        d, a, b, c = [r.strip().removesuffix(".reuse") for r in regs.split(",")]
        # D's four registers hold 2 columns x 2 row halves (PTX ISA, m16n8k16 C/D fragment): its first pair's
        # store gives the first column of this instruction's 8
        reg = int(d[1:])
        first = min(stores.get(f"R{reg + i}", 1 << 30) for i in range(4)) // 4
        out.append({"text": text, "opcode": op, "cols": (first, first + 8),
                    **{name: f"{r}-R{int(r[1:]) + HMMA_16816_REGS[name] - 1}"
                       for name, r in (("d", d), ("a", a), ("b", b), ("c", c))}})
    return out


# --------------------------------------------------------------------------- pictures
def _lane_colors():
    import matplotlib.pyplot as plt

    # 32 lanes: 8 groups of 4 (PTX groupID) -> 8 hues, 4 shades each
    base = plt.get_cmap("tab20b").colors + plt.get_cmap("tab20c").colors
    return [base[(g % 10) * 4 + t] for g in range(8) for t in range(4)]


def draw_owner_grid(ax, held, title: str, shape=(16, 16)):
    """One grid: each element coloured by the lowest lane holding it, with its number (bold where more
    than one lane holds it)."""
    from matplotlib.colors import ListedColormap

    owners = owner_grid(held, shape)
    count = holders_grid(held, shape)
    cmap = ListedColormap(["#ffffff"] + _lane_colors())
    ax.imshow(owners + 1, cmap=cmap, vmin=0, vmax=32, interpolation="nearest")
    for r in range(shape[0]):
        for c in range(shape[1]):
            if owners[r, c] >= 0:
                ax.text(c, r, str(owners[r, c]), ha="center", va="center", fontsize=6.5,
                        fontweight="bold" if count[r, c] > 1 else "normal")
    ax.set_xticks(range(0, shape[1], 4))
    ax.set_yticks(range(0, shape[0], 4))
    ax.set_xticks(np.arange(-0.5, shape[1], 1), minor=True)
    ax.set_yticks(np.arange(-0.5, shape[0], 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)
    ax.grid(which="major", visible=False)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("column")
    ax.set_ylabel("row")


def plot_fragment_maps(panels: dict, suptitle: str, source: str):
    """panels: {title: held-lists}; one grid per panel, side by side."""
    import matplotlib.pyplot as plt

    from ..plots import apply_style

    apply_style()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 5.0))
    for ax, (title, held) in zip(np.atleast_1d(axes), panels.items()):
        draw_owner_grid(ax, held, title)
    fig.suptitle(f"{suptitle}\n{source}", fontsize=12, x=0.01, ha="left")
    fig.tight_layout()
    return fig


def plot_tile_mapping(M: int, N: int, name: str = "wmma_gemm_naive"):
    """C (M x N) cut into 16x16 tiles, coloured by thread block, each labelled with the warp that computes it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..kernels import KERNELS
    from ..plots import COLORS, apply_style

    spec = KERNELS[name]
    block = spec.block
    grid = spec.grid(M, N)
    apply_style()
    fig, ax = plt.subplots(figsize=(10, 6.4))
    for by in range(grid[1]):
        for bx in range(grid[0]):
            color = COLORS[(bx + 3 * by) % 6]
            for wy in range(block[1]):
                r0, c0 = (by * block[1] + wy) * 16, bx * 16
                if r0 >= M or c0 >= N:
                    continue
                ax.add_patch(Rectangle((c0, r0), 16, 16, facecolor=color, alpha=0.30 + 0.25 * (wy % 2),
                                       edgecolor="white", linewidth=0.8))
                ax.text(c0 + 8, r0 + 8, f"w{wy}", ha="center", va="center", fontsize=7.5)
            ax.add_patch(Rectangle((bx * 16, by * block[1] * 16), 16, block[1] * 16, fill=False,
                                   edgecolor="black", linewidth=1.6))
    ax.set_xticks([16 * bx + 8 for bx in range(grid[0])], [str(bx) for bx in range(grid[0])], fontsize=9)
    ax.set_yticks([block[1] * 16 * (by + 0.5) for by in range(grid[1])], [str(by) for by in range(grid[1])])
    ax.xaxis.set_ticks_position("top")
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(f"blockIdx.x (one 16-column strip of C each; N = {N})", fontsize=11)
    ax.set_ylabel(f"blockIdx.y (128 rows of C each; M = {M})", fontsize=11)
    ax.set_xlim(0, N)
    ax.set_ylim(M, 0)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_title(f"{name}: block dim3{block}, grid dim3{grid}\nblack box = one thread block "
                 f"({block[0] * block[1]} threads); tile wY = the warp with threadIdx.y = Y",
                 loc="left", fontsize=11, pad=12)
    fig.tight_layout()
    return fig


def _grid_box(ax, x, y, w, h, label, color, alpha=0.25, cells=None, fontsize=12):
    """A matrix as a box at (x, y) (top left) of w x h, its label inside; cells=(rows, cols) draws its grid."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, alpha=alpha, edgecolor="black", linewidth=1.4))
    if cells:
        for i in range(1, cells[0]):
            ax.plot([x, x + w], [y + i * h / cells[0]] * 2, color="white", linewidth=0.6)
        for j in range(1, cells[1]):
            ax.plot([x + j * w / cells[1]] * 2, [y, y + h], color="white", linewidth=0.6)
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=fontsize)


def _blank_axes(fig_size):
    import matplotlib.pyplot as plt

    from ..plots import apply_style

    apply_style()
    fig, ax = plt.subplots(figsize=fig_size)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def plot_mma_tile(name: str = "wmma_gemm_naive"):
    """D = A x B + C for one mma_sync of `name`: the four tiles with their shapes and formats, and one element of D
    as the dot product of a row of A and a column of B, plus C's element."""
    from matplotlib.patches import Rectangle

    from ..kernels import KERNELS
    from ..plots import COLORS

    m, n, k = warp_tile(name)
    fig, ax = _blank_axes((12.5, 4.4))
    gap = 5
    xs = [0, k + 2 * gap, k + n + 4 * gap, k + 2 * n + 6 * gap]        # D = A x B + C, left to right
    y = 2
    _grid_box(ax, xs[0], y, n, m, "", COLORS[5], cells=(m, n))
    _grid_box(ax, xs[1], y, k, m, "", COLORS[0], cells=(m, k))
    _grid_box(ax, xs[2], y, n, k, "", COLORS[2], cells=(k, n))
    _grid_box(ax, xs[3], y, n, m, "", COLORS[5], cells=(m, n))
    i, j = 3, 10                                              # one element of D, and what it is made of
    for x0, (r, c, w, h) in zip(xs, [(i, j, 1, 1), (i, 0, k, 1), (0, j, 1, k), (i, j, 1, 1)]):
        ax.add_patch(Rectangle((x0 + c, y + r), w, h, facecolor=COLORS[1], alpha=0.85, edgecolor="black"))
    spec = KERNELS[name]
    ab, cd = spec.inputs.upper(), spec.acc.upper()
    labels = [f"D: {m}×{n}, {cd}", f"A: {m}×{k}, {ab}", f"B: {k}×{n}, {ab}", f"C: {m}×{n}, {cd}"]
    for x0, w, lab in zip(xs, [n, k, n, n], labels):
        ax.text(x0 + w / 2, y + max(m, k) + 2.2, lab, ha="center", va="center", fontsize=13)
    for x0, sym in zip([xs[0] + n + gap, xs[1] + k + gap, xs[2] + n + gap], ["=", "×", "+"]):
        ax.text(x0, y + m / 2, sym, ha="center", va="center", fontsize=26)
    ax.set_xlim(-1, xs[3] + n + 1)
    ax.set_ylim(y + max(m, k) + 4, -3.5)
    ax.set_title(f"One mma_sync (m{m}n{n}k{k}) of one warp: D[{i}][{j}] = row {i} of A · column {j} of B "
                 f"+ C[{i}][{j}]: {k} multiply-adds", loc="left", fontsize=13)
    fig.tight_layout()
    return fig


def plot_k_loop(M: int = 64, N: int = 64, K: int = 64, warp: tuple = (1, 2), name: str = "wmma_gemm_naive"):
    """The naive kernel's K loop for one warp: its tile of C (row block, column block = `warp`), the strip of A
    (its 16 rows, all of K) and of B (all of K, its 16 columns) it walks, one 16-wide step per mma_sync."""
    from matplotlib.patches import Rectangle

    from ..plots import COLORS

    tm, tn, tk = warp_tile(name)
    r0, c0 = warp[0] * tm, warp[1] * tn
    steps = K // tk
    fig, ax = _blank_axes((10, 7.8))
    gap = 6
    ax_b, ay_c = K + gap, K + gap                            # B above C, A left of C (the textbook picture)
    _grid_box(ax, 0, ay_c, K, M, "", "0.85", alpha=0.5)             # A: M x K
    _grid_box(ax, ax_b, 0, N, K, "", "0.85", alpha=0.5)             # B: K x N
    _grid_box(ax, ax_b, ay_c, N, M, "", "0.85", alpha=0.5)          # C: M x N
    shades = [0.35 + 0.5 * s / max(steps - 1, 1) for s in range(steps)]
    for s in range(steps):
        ax.add_patch(Rectangle((s * tk, ay_c + r0), tk, tm, facecolor=COLORS[0], alpha=shades[s], edgecolor="black"))
        ax.text(s * tk + tk / 2, ay_c + r0 + tm / 2, f"k={s * tk}", ha="center", va="center", fontsize=10,
                color="white")
        ax.add_patch(Rectangle((ax_b + c0, s * tk), tn, tk, facecolor=COLORS[2], alpha=shades[s], edgecolor="black"))
        ax.text(ax_b + c0 + tn / 2, s * tk + tk / 2, f"k={s * tk}", ha="center", va="center", fontsize=10,
                color="white")
    ax.add_patch(Rectangle((ax_b + c0, ay_c + r0), tn, tm, facecolor=COLORS[1], alpha=0.9, edgecolor="black"))
    ax.text(ax_b + c0 + tn / 2, ay_c + r0 + tm / 2, "acc", ha="center", va="center", fontsize=10, color="white")
    ax.text(K / 2, ay_c + M + 3, f"A: {M}×{K}", ha="center", va="center", fontsize=13)
    ax.text(ax_b + N + 2, K / 2, f"B: {K}×{N}", ha="left", va="center", fontsize=13)
    ax.text(ax_b + N / 2, ay_c + M + 3, f"C: {M}×{N}", ha="center", va="center", fontsize=13)
    ax.set_xlim(-1, ax_b + N + 12)
    ax.set_ylim(ay_c + M + 5, -1)
    ax.set_title(f"{name}: the warp computing C[{r0}:{r0 + tm}, {c0}:{c0 + tn}] walks K = {K} in {steps} steps "
                 f"of {tk}.\nStep k loads A[{r0}:{r0 + tm}, k:k+{tk}] and B[k:k+{tk}, {c0}:{c0 + tn}] from global "
                 f"memory;\nmma_sync adds their product to acc, held in the warp's registers", loc="left",
                 fontsize=12)
    fig.tight_layout()
    return fig


def plot_hmma_split(kernel: str = "wmma_gemm_naive"):
    """One mma_sync as ptxas compiled it: the tile's two HMMA instructions from the recorded SASS, each one the
    whole A, half of B's columns and the same half of C/D's, with the registers each reads and writes."""
    from matplotlib.patches import Rectangle

    from ..plots import COLORS

    m, n, k = warp_tile(kernel)
    parts = hmma_split(kernel)
    fig, ax = _blank_axes((12.5, 5.2))
    gap = 5
    xs = [0, n + 2 * gap, n + k + 4 * gap]                   # D = A x B (+ C, same registers as D here)
    y = 3
    _grid_box(ax, xs[1], y, k, m, f"A: {m}×{k}\nwhole, in both", COLORS[0], alpha=0.35, fontsize=11)
    for p, color in zip(parts, (COLORS[2], COLORS[4])):
        c0, c1 = p["cols"]
        ax.add_patch(Rectangle((xs[0] + c0, y), c1 - c0, m, facecolor=color, alpha=0.55, edgecolor="black"))
        ax.add_patch(Rectangle((xs[2] + c0, y), c1 - c0, k, facecolor=color, alpha=0.55, edgecolor="black"))
        ax.text(xs[0] + (c0 + c1) / 2, y + m / 2, f"cols\n{c0}-{c1 - 1}", ha="center", va="center", fontsize=10)
        ax.text(xs[2] + (c0 + c1) / 2, y + k / 2, f"cols\n{c0}-{c1 - 1}", ha="center", va="center", fontsize=10)
    ax.text(xs[0] + n / 2, y - 1.5, f"D (and C): {m}×{n}", ha="center", fontsize=12)
    ax.text(xs[2] + n / 2, y - 1.5, f"B: {k}×{n}", ha="center", fontsize=12)
    ax.text(xs[0] + n + gap, y + m / 2, "=", ha="center", va="center", fontsize=24)
    ax.text(xs[1] + k + gap, y + m / 2, "×", ha="center", va="center", fontsize=24)
    for i, (p, color) in enumerate(zip(parts, (COLORS[2], COLORS[4]))):
        ax.text(0, y + max(m, k) + 2.5 + 2.6 * i,
                f"{p['text']}:  D {p['d']} = A {p['a']} × B {p['b']} + C {p['c']}  -> columns "
                f"{p['cols'][0]}-{p['cols'][1] - 1}", fontsize=11.5, va="center", family="monospace",
                bbox=dict(facecolor=color, alpha=0.35, edgecolor="none"))
    ax.set_xlim(-1, xs[2] + n + 1)
    ax.set_ylim(y + max(m, k) + 2.5 + 2.6 * len(parts), -1.5)
    ax.set_title(f"One m{m}n{n}k{k} mma_sync in the SASS of {kernel} (sm_90, recorded): "
                 f"{len(parts)} × {parts[0]['opcode']}", loc="left", fontsize=13)
    fig.tight_layout()
    return fig


def plot_error_vs_size(rows, source: str = ""):
    """Relative error against square size n (log-log) from sweep rows: wmma_gemm_naive against float64 of the FP32
    inputs and of its own FP16 inputs, the FP32 kernel and cuBLAS FP16, beside FP16's and FP32's unit roundoff."""
    import matplotlib.pyplot as plt

    from ..formats import format_info
    from ..plot_style import _finish, apply_style, size_tick_labels
    from .sweep import series

    apply_style()
    fig, ax = plt.subplots(figsize=(12.5, 5.6))
    sizes = set()
    for k, y, label, style in [("wmma_gemm_naive", "rel_err", "naive WMMA, against the FP32 inputs", "-"),
                               ("wmma_gemm_naive", "rel_err_acc", "naive WMMA, against its own FP16 inputs", "--"),
                               ("gemm_fp32_kernel", "rel_err", "FP32 CUDA-core kernel", "-"),
                               ("cublas_fp16", "rel_err", "cuBLAS FP16 (writes an FP16 C)", ":")]:
        n, e = series(rows, k, y)
        sizes |= set(n)
        if n:
            ax.plot(n, e, marker="o", linestyle=style, label=label)
    for fmt in ("fp16", "fp32"):
        u = format_info(fmt).u
        ax.axhline(u, color="0.4", linestyle=":", linewidth=1.2)
        ax.annotate(f"{fmt.upper()} unit roundoff $2^{{{math.log2(u):.0f}}}$", (0.01, u), xycoords=("axes fraction", "data"),
                    va="bottom", fontsize=10, color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(sizes), size_tick_labels(sorted(sizes)))
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (M = N = K = n)")
    ax.set_ylabel("relative error against float64")
    return _finish(ax, "Error of each kernel against size", source, legend_outside=True)


def plot_edge_masks(rows: dict):
    """rows: {row label: [case dicts with 'mask', 'm', 'n', 'k']}; one image per case."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..plots import apply_style

    apply_style()
    colors = ["#009E73", "#E69F00", "#B2182B"]
    ncol = max(len(v) for v in rows.values())
    fig, axes = plt.subplots(len(rows), ncol, figsize=(4.6 * ncol, 4.3 * len(rows)), squeeze=False)
    for i, (label, cases) in enumerate(rows.items()):
        for j, case in enumerate(cases):
            ax = axes[i][j]
            ax.imshow(np.array(case["mask"]), cmap=ListedColormap(colors), vmin=0, vmax=2,
                      interpolation="nearest")
            ax.set_title(f"{label}\nM={case['m']}, N={case['n']}, K={case['k']}", fontsize=10, loc="left")
            ax.grid(False)
    fig.legend(handles=[Patch(color=c, label=lab) for c, lab in zip(colors, ["correct", "wrong (finite)", "NaN"])],
               loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


# --------------------------------------------------------------------------- comparing with PTX
def compare_with_ptx(observed: dict) -> list[dict]:
    """For each fragment kind, how the observed WMMA ownership relates to the documented PTX m16n8k16
    layout (B and the accumulator as two n=8 halves)."""
    ptx = {"matrix_a": ptx_fragment_layout("a"), "matrix_b": ptx_wmma_b_layout(),
           "matrix_b_col": ptx_wmma_b_layout(), "accumulator": ptx_wmma_accumulator_layout()}
    rows = []
    for kind, expected in ptx.items():
        obs = [[tuple(x) for x in lane] for lane in observed[kind]]
        n = len(obs[0])
        distinct = len(set(obs[0]))
        same_sets = all(set(o) == set(e) for o, e in zip(obs, expected))
        same_order = all(o[:len(e)] == e for o, e in zip(obs, expected))
        repeats = n > len(expected[0]) and all(o[len(e):] == o[:len(e)] for o, e in zip(obs, expected))
        rows.append({"fragment": kind, "elements_per_lane": n, "distinct_per_lane": distinct,
                     "same_elements_as_ptx": same_sets, "same_order_as_ptx": same_order,
                     "second_half_repeats_first": repeats})
    return rows
