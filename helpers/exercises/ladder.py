"""Lesson 5 exercises: the traffic of a block tile, a pipeline's shared memory, blocks per SM.

Each checker computes the expected answer itself (from the traffic model in helpers.analysis and
the tile sizes in helpers.kernels) and prints one verdict line ("Not answered yet", "Correct.",
or "Not quite" with a hint); see helpers/exercises/__init__.py.
"""
from __future__ import annotations

from . import check_number, checker
from ..analysis import tile_traffic_bytes
from ..kernels import PIPE_SMEM, ladder_smem_bytes


@checker
def check_tile_traffic(answer, bm: int = 128, bn: int = 256, n: int = 4096) -> None:
    """Bytes the blocks request (helpers.analysis.traffic_bytes) for an n^3 GEMM with a bm x bn block
    tile, FP16 inputs and FP32 output."""
    check_number(f"traffic of a {bm}x{bn} tile", answer, tile_traffic_bytes(n, n, n, bm, bn), rel=1e-6,
                 hint="A is read once per column of blocks (N / bn times), B once per row of blocks "
                      "(M / bm times), 2 bytes per element; C written once, 4 bytes per element.")


@checker
def check_pipeline_smem(answer, stages: int = 3, bk: int = 32, pad: int = 8) -> None:
    """Dynamic shared memory of the cp.async rung with `stages` stages of BK = bk."""
    check_number(f"shared memory, {stages} stages, BK={bk}", answer, ladder_smem_bytes(stages, pad, bk), rel=1e-9,
                 hint="per stage: a 128 x (BK + pad) tile of A and a BK x (128 + pad) tile of B, 2 bytes each.")


@checker
def check_blocks_per_sm(answer, regs: int = 128, threads: int = 256, smem: int = PIPE_SMEM,
                        reg_file: int = 65536, smem_per_sm: int = 228 * 1024) -> None:
    """Resident blocks per SM, limited by registers and shared memory (H100/H200 limits).
    The 1 KB the driver reserves per block is counted in smem."""
    by_regs = reg_file // (regs * threads)
    by_smem = smem_per_sm // (smem + 1024)
    check_number("blocks per SM", answer, min(by_regs, by_smem, 32), rel=1e-9,
                 hint="registers: 65536 per SM / (registers per thread x threads); shared memory: "
                      "228 KB per SM / (bytes per block + 1 KB reserved); the smaller wins.")
