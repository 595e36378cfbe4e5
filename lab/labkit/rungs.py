"""Lesson 6's kernel code outside the ladder: rungs 27-28 (a 256-row tile whose width is chosen per shape) and rung 31
(the C^T tile 152 rows high, in pairs along N sharing A), kernels of the lab's frozen research file
(lab/kernels/hopper_sm90a_research.cu, RESEARCH_FILE) that measured slower than the rungs they were built to beat
(lab/README.md; their reasoning and predictions are the kernels' comments), and the Hilbert tile order of the
TILE_ORDER switch.

Importing this module registers them in helpers.kernels.PENDING (helpers.kernels.rung_entry reaches them) and rungs
27-28's per-shape build in helpers.launch.PER_SHAPE, so that the probes build and launch them as the course launches
its rungs. A child process gets them too through run_isolated("lab.labkit.rungs:rung_rows")."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

from helpers import kernels as K
from helpers import launch
from helpers.analysis import tile_order
from helpers.experiments.hopper import rung_rows  # noqa: F401  (for run_isolated: the child registers the rungs)

# The templated file rungs 8-31 were built from until 2026-12-07, frozen; as the course's helpers name a kernel file:
# relative to kernels/. Rungs 27, 28 and 31 are built from it (as every probe that sets a research switch builds the
# others): their code there is what kernels/hopper_sm90a.cu held until 2026-12-07 (the same SASS, nvcc 13, sm_90a).
RESEARCH_FILE = "../lab/kernels/hopper_sm90a_research.cu"

# Rungs 27-28: a 256-row tile whose width is chosen per problem (TALL_M, TALL_N in RESEARCH_FILE). Widths:
# multiples of 8 from 128 to 192 (two 64-row slices of 192 columns are 192 accumulators a consumer thread; ptxas fits
# them in setmaxnreg's 232 without spilling).
TALL_WIDTHS = tuple(range(128, 193, 8))
TALL_GAIN = 0.9


def tall_stages(width: int) -> int:
    """Pipeline stages of the 256-row tile `width` wide (TALL_STAGES): 4 where B is two boxes of 64 columns, else 3
    (56 KB each: 4 would not fit in 227 KB beside the epilogue's 32 KB)."""
    return 4 if width <= 128 else 3


def tall_smem(width: int, stages: int | None = None) -> int:
    """Dynamic shared memory of rungs 27-28 with a 256 x `width` tile: per stage A (256 x 64) and B's boxes of 64
    columns (width / 64 rounded up), plus the epilogue's buffers, slack and barriers as rungs 13-16."""
    stages = tall_stages(width) if stages is None else stages
    return stages * (256 * 64 + math.ceil(width / 64) * 64 * 64) * 2 + (K.HOPPER_STORE_SMEM - 4 * K.HOPPER_STAGE)


def tall_waves(M: int, N: int, width: int, fit: int) -> int:
    """Waves of the 256 x `width` tile in clusters of 2 stacked along M, `fit` clusters resident at once."""
    units = -(-math.ceil(M / 256) // 2) * math.ceil(N / width)
    return -(-units // fit)


def tall_choice(M: int, N: int, fits: Callable[[], tuple[int, int]]) -> tuple[int, int]:
    """Rungs 27-28's tile for an M x N problem, (256, width) or (128, 256): the cost of a tile shape is its waves
    times its area (the Tensor Core work the chip spends, useful or not); the 256-row tile, at its cheapest width
    (the widest on a tie), is built where it costs under TALL_GAIN of rung 14's 128 x 256 in clusters of 2, else rung
    14's (13's) tile. The margin pays for what the tall tile asks of L2: 256 + 96 box rows per K-tile for 256 x 152
    outputs against 128 + 128 for 128 x 256. fits() gives how many clusters of 2 of each are resident at once."""
    fit_tall, fit_wide = fits()
    wide = K.cluster_waves(M, N, 2, fit_wide) * 128 * 256
    width = min(TALL_WIDTHS, key=lambda w: (tall_waves(M, N, w, fit_tall) * w, -w))
    return (256, width) if tall_waves(M, N, width, fit_tall) * 256 * width < TALL_GAIN * wide else (128, 256)


def tall_tile(spec, rows: int, width: int, options: tuple = (), stages: int | None = None) -> tuple:
    """(entry, NVRTC options) of rung 27 or 28 built with a rows x width tile (256 x 128 .. 192, or 128 x 256: rung
    14's or 13's): the entry carries that tile's shared memory, block tile and box of A, the options -DTALL_M, -DTALL_N
    (and -DTALL_STAGES where `stages` is given, else the kernel's own count) after `options`."""
    if rows == 128:
        smem = K.HOPPER_STORE_SMEM + ((stages or 4) - 4) * K.HOPPER_STAGE
    else:
        smem = tall_smem(width, stages)
    extra = (f"-DTALL_STAGES={stages}",) if stages is not None else ()
    return (dataclasses.replace(spec, dyn_smem=smem, block_tile=(rows, width), tma_boxes=((rows, 64), (64, 64))),
            (*tuple(options), f"-DTALL_M={rows}", f"-DTALL_N={width}", *extra))


def tall_build(spec, M: int, N: int, a_row_bytes: int = 0, b_row_bytes: int = 0, source: str | None = None,
               options: tuple = ()) -> tuple:
    """(entry, NVRTC options) of rung 27 or 28 for an M x N problem: the tile tall_choice picks from how many clusters
    of 2 of the tall tile (as built) and of rung 14's (13's) the driver lets run at once (the row strides: unused)."""
    wide = tall_tile(spec, 128, 256, options)
    fits = lambda: (launch.resident_blocks(spec, source, options)[0] // 2,                    # noqa: E731
                    launch.resident_blocks(wide[0], source, wide[1])[0] // 2)
    rows, width = tall_choice(M, N, fits)
    return wide if rows == 128 else tall_tile(spec, rows, width, options)


def ct_gain(M: int, N: int, fits: Callable[[], tuple[int, int]], rows: int = K.CT_M) -> float:
    """helpers.kernels.ct_waves_ratio for a square FP16 problem (rows of A and of B N halves wide), with fits() giving
    the clusters of 4 and of 2 resident at once (rung 29's clusters of 2 as many as rung 25's, as on the H200)."""
    fit4, fit2 = fits()
    return K.ct_waves_ratio(M, N, 2 * N, 2 * N, lambda: (fit4, fit2, fit2), rows)


CTN_M = 152         # rung 31's tile rows (cuBLAS's at 5000^3); a stage holds 2 x 80 rows of A, as rung 29's 160
_fp16c = K.ALL_RUNGS[14].emulate      # FP16 in, FP32 accumulators, FP16 C: rung 14's arithmetic
PENDING: dict[int, K.GemmKernel] = {
    27: K._hopper_rung(27, "hopper_tall_tile", "a 256-row tile, its width chosen per shape", 1.05, output="fp16",
                       emulate=_fp16c, persistent=True, cluster=(2, 1, 1), block_tile=(256, 152),
                       tma_boxes=((256, 64), (64, 64)), c_box=(64, 64), dyn_smem=tall_smem(152), base=25,
                       per_shape="tile", file=RESEARCH_FILE),
    28: K._hopper_rung(28, "hopper_tall_tile_f32c", "rung 27 writing FP32 C (rung 13's epilogue)", 1.05,
                       persistent=True, cluster=(2, 1, 1), block_tile=(256, 152), tma_boxes=((256, 64), (64, 64)),
                       c_box=(64, 32), dyn_smem=tall_smem(152), base=26, per_shape="tile", file=RESEARCH_FILE),
    31: K._hopper_rung(31, "hopper_ct_pair_n", "the C^T tile 152 rows high, in pairs along N sharing A", 1.03,
                       output="fp16", emulate=_fp16c, persistent=True, cluster=(2, 1, 1), block_tile=(CTN_M, 256),
                       tma_boxes=((80, 64), (64, 64)), c_box=(8, 64), dyn_smem=K.ct_smem(160), base=29,
                       file=RESEARCH_FILE),
}
assert not set(PENDING) & set(K.ALL_RUNGS) and all(k.name not in K.KERNELS for k in PENDING.values())


def hilbert_point(n: int, d: int) -> tuple[int, int]:
    """Point d (0 <= d < n * n) of the Hilbert curve that fills an n x n grid, n a power of two, as (x, y): the
    arithmetic of hilbert_unit in RESEARCH_FILE (built with TILE_ORDER=1). Consecutive points are
    neighbours, and every quarter of the curve fills one quadrant."""
    if n < 1 or n & (n - 1) or not 0 <= d < n * n:
        raise ValueError(f"hilbert_point needs a power-of-two n and 0 <= d < n * n (got n={n}, d={d})")
    x = y = 0
    s = 1
    while s < n:
        qx = (d // 2) & 1
        qy = (d ^ qx) & 1
        if qy == 0:
            if qx == 1:
                x, y = s - 1 - x, s - 1 - y
            x, y = y, x
        x, y = x + s * qx, y + s * qy
        s, d = 2 * s, d // 4
    return x, y



def hilbert_order(tiles_m: int, tiles_n: int, group_m: int = 8, cluster: int = 1) -> list:
    """The tiles in the order of TILE_ORDER=1 (RESEARCH_FILE's hilbert_tile): the units (columns of
    `cluster` tiles) along a Hilbert curve where their grid is square with a power-of-two side, else
    helpers.analysis.tile_order's grouped order."""
    units_m = -(-tiles_m // cluster)
    if units_m != tiles_n or units_m & (units_m - 1):
        return tile_order(tiles_m, tiles_n, "grouped", group_m, cluster)
    out = []
    for t in range(units_m * tiles_n):
        un, um = hilbert_point(units_m, t)
        out += [(um * cluster + r, un) for r in range(cluster)]
    return out


K.PENDING.update(PENDING)
launch.PER_SHAPE["tile"] = (("-DTALL_M=", "-DTALL_N="), tall_build)
