"""Lesson 2's fragment layouts and compiler output: what PTX documents and what WMMA compiles to.

The lane-by-lane fragment layout PTX documents for mma.m16n8k16 (``ptx_fragment_layout``, the 16x16 WMMA
operands as two of them side by side) and how a layout observed on the GPU compares with it
(``compare_with_ptx``); the experiment ``wmma_nvrtc_ptx`` (NVRTC's PTX of kernels/wmma.cu on this GPU); the
recorded PTX and SASS of kernels/wmma.cu (``ptx_lines``, ``sass_lines``) and the HMMA instructions one
mma_sync becomes (``hmma_split``). Everything but the experiment runs without a GPU.
"""
from __future__ import annotations

import numpy as np

from . import experiment


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


# --------------------------------------------------------------------------- PTX from NVRTC
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
