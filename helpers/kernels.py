"""The registry of every GEMM kernel the course launches: one entry per kernel, nothing else.

An entry (``GemmKernel``) holds what the rest of the helpers need to know about a kernel; it
launches nothing (``helpers.launch`` validates, pads and launches every entry the same way):

* where it is: ``name`` (the ``extern "C"`` function) and ``file`` (in kernels/);
* its arithmetic: the ``inputs``, ``acc`` and ``output`` formats, ``acc_rounding`` and
  ``acc_block`` (what the tolerance assumes), and ``emulate(A, B)``, its numpy reproduction
  (the CPU backend), which takes exactly what ``helpers.gemm`` takes. ``check(C, A, B)`` is
  ``helpers.check_gemm`` with all of these filled in;
* what it accepts: ``in_dtype`` (BF16 travels as uint16 bit patterns: CuPy has no bfloat16),
  and the multiples ``tile_mn`` (M and N) and ``tile_k`` (K) that ``pad=True`` pads to;
* how it is launched: ``block``; one block per ``block_tile`` (rows, columns of C) sets the grid,
  or, for a ``persistent`` kernel, one block per SM (as many as fit at once) that loops over the
  tiles itself; ``dyn_smem`` (bytes of dynamic shared memory; above 48 KB the launcher opts in);
  ``b_transposed`` (it reads B^T, N x K row-major: the launcher transposes B, inside the timed
  run); ``tma_boxes`` (it takes TMA tensor maps of A and of B (or B^T) with these boxes instead
  of pointers, built by helpers.hopper); ``c_box`` (it also takes a tensor map of C, FP32, with
  this box, for TMA stores; passed after B's); ``cluster`` (blocks per cluster: the kernel
  declares them with ``__cluster_dims__``, so a plain launch forms them; the launcher checks the
  grid, and falls back to cuLaunchKernelEx with the cluster named should a plain launch refuse);
* where it runs: ``min_cc``, or ``only_cc`` for arch-specific code (sm_90a: compiled with NVRTC
  for exactly that GPU); ``isolate``: on a GPU, ``helpers.gemm`` runs it in a child process
  (helpers.isolate), so that a fault or a hang cannot take the notebook's CUDA context with it;
* lesson data: ``teaches``; ``sweep`` (``make record`` measures it at every size; the ladders'
  own kernels are measured by the ``ladder`` and ``hopper`` experiments instead); ``smem_static``
  (the static shared memory its tiles declare, where modelled); and for the rungs of a ladder,
  ``rung``, ``lesson`` (5: lesson 5's ladder, rungs 1-7; 6: lesson 6's, rungs 8 on, which starts
  from rung 7), ``idea``, ``predicted_gain`` (over the rung before, stated before measuring) and
  ``why``.

Adding a kernel (a lesson 7 FP8 one, a new rung) is the kernel in kernels/*.cu plus one entry in
``KERNELS``; an entry with ``rung=`` set is a rung, and ``RUNGS`` (lesson 5's rung numbers ->
entries), ``HOPPER_RUNGS`` (lesson 6's) and ``ALL_RUNGS`` follow from the registry. A format the
tables below do not know yet (FP8's bit patterns, for instance) is one line in ``IN_DTYPES`` /
``OUT_DTYPES``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from . import emulate as _emu
from .errors import UnknownKernelError

# numpy dtype of the arrays a format travels in: tf32 is FP32 in memory (rounded on the device);
# bf16 travels as uint16 bit patterns (helpers.formats.to_bf16_bits)
IN_DTYPES = {"fp32": "float32", "fp16": "float16", "tf32": "float32", "bf16": "uint16"}
OUT_DTYPES = {"fp32": "float32", "fp16": "float16"}

# Kernels taken out of the lessons after a failed GPU run: {kernel name: reason}. A withdrawn kernel
# is skipped everywhere (CPU and GPU alike) with its reason, so that the notebooks' outputs stay
# backend independent.
WITHDRAWN: dict[str, str] = {}


def _arch_name(cc) -> str:
    return f"sm_{cc[0]}{cc[1]}"


@dataclass(frozen=True, kw_only=True)
class GemmKernel:
    name: str                      # extern "C" kernel name
    file: str                      # kernels/<file>
    inputs: str                    # input format: fp32, fp16, bf16, tf32
    acc: str                       # accumulator format: fp32 or fp16
    acc_rounding: str              # 'nearest' or 'truncate': what the tolerance assumes
    acc_block: int                 # products per accumulator rounding (the tolerance's `block`)
    emulate: Callable              # emulate(A, B) -> C on the CPU, A and B as helpers.gemm takes them
    block: tuple                   # threads per block
    block_tile: tuple              # (rows, cols) of C per block: the grid
    teaches: str
    output: str = ""               # C's format ("": the accumulator's)
    load_tile: tuple | None = None  # (rows, cols) of C whose A rows and B columns are loaded once and shared:
                                    # the traffic model (helpers.analysis); None: the block tile
    tile_mn: int = 1               # M and N must be multiples of this (pad=True pads to it)
    tile_k: int = 1                # K must be a multiple of this
    min_cc: tuple = (0, 0)
    only_cc: tuple | None = None   # arch-specific code: runs on this compute capability only (sm_90a: 9.0)
    dyn_smem: int = 0              # bytes of dynamic shared memory per block
    smem_static: int | None = None  # bytes of static shared memory its tiles declare (None: not modelled)
    b_transposed: bool = False     # reads B^T (N x K row-major); the launcher transposes
    tma_boxes: tuple | None = None  # ((rows, cols) of A's box, (rows, cols) of B's): takes TMA tensor maps
    c_box: tuple | None = None     # (rows, cols) of C's box: it takes a tensor map of C too (TMA stores)
    cluster: tuple | None = None   # (x, y, z) blocks per cluster, declared by the kernel (__cluster_dims__)
    persistent: bool = False       # one block per SM (as many as fit at once), looping over the tiles
    split_k: bool = False          # K cut into parts (helpers.kernels.split_k_plan): it also takes a workspace,
                                   # flags and the number of parts (lesson 6, rung 15)
    tail_split: bool = False       # with split_k: only the last, partial wave is split (rung 16,
                                   # helpers.kernels.tail_split_plan); it also takes the whole units, dp
    isolate: bool = False          # on a GPU, helpers.gemm runs it in a child process
    sweep: bool = False            # measured at every size by `make record`
    rung: int | None = None        # its rung on a ladder
    lesson: int = 5                # a rung's ladder: 5 (rungs 1-7) or 6 (rungs 8 on, starting from rung 7)
    idea: str = ""                 # the one idea the rung adds
    predicted_gain: float | None = None   # predicted speed-up over the rung before (or over `base`)
    base: int | None = None        # the rung its gain is predicted over, where that is not the rung before
    why: str = ""                  # the reasoning behind the prediction
    timed_shapes: tuple | None = None   # (M, N, K) shapes lesson 6's record times it at; None: every timed shape
    per_shape: str = ""            # the launcher builds it per problem: "cluster" (rungs 25-26: clusters of 4 or
                                   # of 2, helpers.kernels.quad_choice), "tile" (rungs 27-28: helpers.kernels.tall_choice),
                                   # "orientation" (rungs 29-30: the C^T tile or rung 25's (26's) build, ct_waves_ratio)

    def __post_init__(self):
        if not self.output:
            object.__setattr__(self, "output", self.acc)

    @property
    def in_dtype(self) -> str:
        """numpy dtype name of A and B."""
        return IN_DTYPES[self.inputs]

    @property
    def out_dtype(self) -> str:
        """numpy dtype name of C."""
        return OUT_DTYPES[self.output]

    @property
    def traffic_tile(self) -> tuple:
        """The tile of C that loads its rows of A and columns of B once (helpers.analysis.traffic_bytes):
        the block's when its warps share tiles through shared memory, one warp's (or one thread's) when
        each loads its own."""
        return tuple(self.load_tile or self.block_tile)

    @property
    def multiple(self) -> int:
        """The largest size multiple it needs (1: any size)."""
        return max(self.tile_mn, self.tile_k)

    def padded(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        """(M, N, K) zero-padded to the kernel's tile multiples."""
        def up(v, m):
            return math.ceil(v / m) * m

        return up(M, self.tile_mn), up(N, self.tile_mn), up(K, self.tile_k)

    def grid(self, M: int, N: int) -> tuple[int, int]:
        """Blocks for an M x N output: one per block tile (blockIdx.x along N, blockIdx.y along M).
        A persistent kernel is launched with fewer (helpers.launch); this is still its tile count."""
        rows, cols = self.block_tile
        return math.ceil(N / cols), math.ceil(M / rows)

    def unsupported(self, cc) -> str | None:
        """Why a GPU of compute capability `cc` cannot run it (a sentence starting 'it needs'), or None."""
        cc = tuple(cc)
        if self.only_cc is not None and cc != tuple(self.only_cc):
            need = tuple(self.only_cc)
            which = ("a Hopper GPU (compute capability 9.0: wgmma exists on no other)" if need == (9, 0)
                     else f"a GPU of compute capability {need[0]}.{need[1]} exactly")
            return f"it needs {_arch_name(need)}a, i.e. {which}; this GPU is {cc[0]}.{cc[1]}."
        if cc >= tuple(self.min_cc):
            return None
        return (f"it needs compute capability {self.min_cc[0]}.{self.min_cc[1]} ({_arch_name(self.min_cc)}), "
                f"this GPU is {cc[0]}.{cc[1]}.")

    def skip_message(self, cc=None) -> str | None:
        """Why it is skipped: withdrawn (on every backend), or not runnable on a GPU of compute
        capability `cc` (None: the CPU backend, where only a withdrawal skips it); None to run it."""
        who = f"rung {self.rung} ({self.name})" if self.rung is not None else f"kernel {self.name}"
        if self.name in WITHDRAWN:
            return f"{who} withdrawn: {WITHDRAWN[self.name]}"
        problem = None if cc is None else self.unsupported(cc)
        return None if problem is None else f"{who} skipped: {problem}"

    def check(self, C, A, B, **kw):
        """helpers.check.check_gemm with this kernel's formats, rounding, block and CPU model (its
        emulation). A, B: what the kernel took (BF16 as uint16 bits) or the original FP32 data."""
        from .check import check_gemm
        from .formats import round_tf32_rna

        kw.setdefault("values", round_tf32_rna if self.inputs == "tf32" else None)
        kw.setdefault("model", self.emulate)
        return check_gemm(C, A, B, inputs=self.inputs, acc=self.acc, output=self.output,
                          acc_rounding=self.acc_rounding, block=self.acc_block, name=self.name, **kw)


# --------------------------------------------------------------------------- emulations
# Each kernel's arithmetic as data (helpers.emulate.Arithmetic): called with what helpers.gemm takes, it is
# the CPU model; the check runs the same arithmetic on the GPU for CuPy arrays (every element).
_fp16_fp32acc = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL)
_fp16_fp16acc = _emu.Arithmetic("fp16", "fp16", _emu.DEFAULT_TC_MODEL)
_bf16_fp32acc = _emu.Arithmetic("bf16", "fp32", _emu.DEFAULT_TC_MODEL, takes="bf16_bits")
_tf32_fp32acc = _emu.Arithmetic("tf32", "fp32", _emu.model_for("tf32"), takes="tf32_rna")
_fp32_fma = _emu.Arithmetic("fp32")


# --------------------------------------------------------------------------- split-K (lesson 6, rung 15)
SPLIT_K_UNITS = 132          # work units a split-K launch aims for: the SMs of an H200 (and an H100 SXM)
SPLIT_K_MIN_KTILES = 8       # K-tiles of 64 per part at least: a shorter part barely fills the 4-stage ring


def split_k_plan(M: int, N: int, K: int) -> tuple[int, int]:
    """Rung 15's split of K for an M x N x K problem: (splits, K-tiles of 64 per part). A problem with fewer
    128 x 256 tiles than SPLIT_K_UNITS is cut into as many parts as keep the tiles x parts within it (and
    each part at least SPLIT_K_MIN_KTILES deep); one that fills the chip is not split. A pure function of
    the shape, so the CPU model and the GPU kernel always agree on it. Every part holds at least one K-tile:
    part p covers K-tiles [p * per, min(ktiles, (p + 1) * per)), as the kernel computes them."""
    tiles = math.ceil(M / 128) * math.ceil(N / 256)
    ktiles = math.ceil(K / 64)
    s = max(1, min(SPLIT_K_UNITS // max(tiles, 1), ktiles // SPLIT_K_MIN_KTILES))
    per = math.ceil(ktiles / s)
    s = math.ceil(ktiles / per)                   # no empty part (per is unchanged: ceil(ktiles / s) == per)
    assert math.ceil(ktiles / s) == per and (s - 1) * per < ktiles
    return s, per


def split_k_ranges(M: int, N: int, K: int) -> list[tuple[int, int]]:
    """The K ranges (in elements) of rung 15's parts for this shape, in the order their sums are added."""
    s, per = split_k_plan(M, N, K)
    return [(p * per * 64, min(K, (p + 1) * per * 64)) for p in range(s)]


TAIL_SPLIT_CLUSTER = 2       # rung 16 keeps rung 14's clusters: a work unit is a column of 2 tiles


def tail_split_plan(M: int, N: int, K: int) -> tuple[int, int, int]:
    """Rung 16's plan for an M x N x K problem: (dp, splits, per). A work unit is a cluster's 2 tiles of
    128 x 256 (rows 2u, 2u + 1); with G = SPLIT_K_UNITS / 2 clusters, the first dp = (units // G) * G units
    are whole (all of K, as rung 14), and each of the units - dp left over is cut into `splits` parts of
    `per` K-tiles of 64 (the last part may be shorter), chosen as rung 15 chooses for a problem of that many
    units. No split (dp = units, splits = 1) where the last wave is full, or more than half full. A pure
    function of the shape, as split_k_plan."""
    ktiles = math.ceil(K / 64)
    units = math.ceil(math.ceil(M / 128) / TAIL_SPLIT_CLUSTER) * math.ceil(N / 256)
    groups = SPLIT_K_UNITS // TAIL_SPLIT_CLUSTER
    waves, tail = divmod(units, groups)
    s = max(1, min(groups // tail, ktiles // SPLIT_K_MIN_KTILES)) if tail else 1
    if s == 1:
        return units, 1, ktiles
    per = math.ceil(ktiles / s)
    s = math.ceil(ktiles / per)                   # no empty part, as split_k_plan
    return waves * groups, s, per


def tail_split_tiles(M: int, N: int, K: int) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int]]]:
    """The blocks of C (r0, r1, c0, c1) that rung 16 splits, and the K ranges (in elements) of their parts, in
    the order their sums are added: the tiles of units dp, dp + 1, ... in the kernel's grouped order
    (helpers.analysis.tile_order, the kernel's tile_of), clipped to C; a tile below M is left out (it stores
    nothing)."""
    from .analysis import tile_order

    dp, s, per = tail_split_plan(M, N, K)
    if s == 1:
        return [], [(0, K)]
    order = tile_order(math.ceil(M / 128), math.ceil(N / 256), "grouped", group_m=8, cluster=TAIL_SPLIT_CLUSTER)
    blocks = [(tm * 128, min(M, tm * 128 + 128), tn * 256, min(N, tn * 256 + 256))
              for tm, tn in order[dp * TAIL_SPLIT_CLUSTER:] if tm * 128 < M]
    return blocks, [(p * per * 64, min(K, (p + 1) * per * 64)) for p in range(s)]


def cluster_waves(M: int, N: int, cluster: int, fit: int, width: int = 256) -> int:
    """Waves of a persistent 128 x `width`-tile kernel whose work unit is `cluster` tiles stacked along M, with `fit`
    clusters resident at once: ceil(units / fit)."""
    units = -(-math.ceil(M / 128) // cluster) * math.ceil(N / width)
    return -(-units // fit)


def starts_inside_line(a_row_bytes: int, b_row_bytes: int) -> bool:
    """Whether a row of A or of B starts inside a 128-byte line (its stride is no multiple of 128 bytes)."""
    return a_row_bytes % 128 != 0 or b_row_bytes % 128 != 0


def quad_choice(M: int, N: int, a_row_bytes: int, b_row_bytes: int, fits: Callable[[], tuple[int, int]],
                width: int = 256) -> int:
    """Rungs 25-26's cluster for an M x N problem: 4 where a row of A or of B starts inside a 128-byte line (every
    TMA box row then costs two L2 requests, and a CTA of a cluster of 4 asks for a quarter of B instead of half) and
    clusters of 4 take no more waves than clusters of 2; else 2 (rung 14's or 13's build). fits() gives how many
    clusters of 4 and of 2 are resident at once (the driver's counts; asked only where rows start inside a line).
    A pure function of the shape, the row strides and those counts (width: the tile's, the TILE_N knob)."""
    if not starts_inside_line(a_row_bytes, b_row_bytes):
        return 2
    fit4, fit2 = fits()
    return 4 if cluster_waves(M, N, 4, fit4, width) <= cluster_waves(M, N, 2, fit2, width) else 2


# Rungs 25-26's TILE_N knob: the tile's width, a multiple of 8 from 128 to 256 (kernels/wgmma_widths.cuh)
TILE_N_WIDTHS = tuple(range(128, 257, 8))


def tile_n_smem(width: int, stages: int = 4) -> int:
    """Dynamic shared memory of rungs 25-26 with a tile `width` wide (TILE_N): per stage A (128 x 64) and B's boxes of 64
    columns (width / 64 rounded up), plus the epilogue's buffers, slack and barriers as rungs 13-16."""
    return stages * (128 * 64 + math.ceil(width / 64) * 64 * 64) * 2 + (HOPPER_STORE_SMEM - 4 * HOPPER_STAGE)


# Rungs 27-28 (not in the ladder): a 256-row tile whose width is chosen per problem (TALL_M, TALL_N in
# kernels/hopper_sm90a.cu). Widths: multiples of 8 from 128 to 192 (two 64-row slices of 192 columns are 192
# accumulators a consumer thread; ptxas fits them in setmaxnreg's 232 without spilling).
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
    return stages * (256 * 64 + math.ceil(width / 64) * 64 * 64) * 2 + (HOPPER_STORE_SMEM - 4 * HOPPER_STAGE)


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
    wide = cluster_waves(M, N, 2, fit_wide) * 128 * 256
    width = min(TALL_WIDTHS, key=lambda w: (tall_waves(M, N, w, fit_tall) * w, -w))
    return (256, width) if tall_waves(M, N, width, fit_tall) * 256 * width < TALL_GAIN * wide else (128, 256)


# Rung 29: cuBLAS's orientation, a CT_M x 256 tile computed as C^T (CT_M in
# kernels/hopper_sm90a.cu); its epilogue stores boxes of 32 rows x 64 FP16 columns, two 4 KB buffers per consumer.
CT_M = 160
CT_EPI_BYTES = 2 * 2 * 32 * 128


def ct_smem(rows: int = CT_M, stages: int = 4) -> int:
    """Dynamic shared memory of rung 29 with `rows` rows of C per tile: per stage A (rows x 64, no padding: K is the
    swizzled dimension) and B's 4 boxes, plus the 16 KB epilogue, slack and barriers (CT_SMEM in the kernel)."""
    return stages * (rows * 64 * 2 + 64 * 256 * 2) + CT_EPI_BYTES + (HOPPER_SMEM - 4 * HOPPER_STAGE)


def ct_waves(M: int, N: int, fit: int, rows: int = CT_M) -> int:
    """Waves of rung 29's `rows` x 256 tile in clusters of 2 stacked along M, `fit` clusters resident at once."""
    units = -(-math.ceil(M / rows) // 2) * math.ceil(N / 256)
    return -(-units // fit)


CT_GAIN = 1.05      # rungs 29-30 build the C^T tile where the wave model gives it at least this over rung 25 (26)


def ct_waves_ratio(M: int, N: int, a_row_bytes: int, b_row_bytes: int, fits: Callable[[], tuple[int, int, int]],
                   rows: int = CT_M) -> float:
    """The wave model's speed of rung 29 over rung 25 for an M x N problem whose rows of A and B are a_row_bytes and
    b_row_bytes apart: rung 25's waves (its cluster of 4 or of 2, as quad_choice builds it) over rung 29's tile-times
    (its waves times rows / 128: each tile `rows` / 128 of a 128 x 256 one). fits() gives how many clusters are
    resident at once: of 4 and of 2 for rung 25's builds, of 2 for rung 29's (the driver's counts); of 4 None where
    rung 25 cannot be built in clusters of 4 (a variant's GROUP_M below 4)."""
    fit4, fit2, fit_ct = fits()
    four = fit4 is not None and quad_choice(M, N, a_row_bytes, b_row_bytes, lambda: (fit4, fit2)) == 4
    waves25 = cluster_waves(M, N, 4, fit4) if four else cluster_waves(M, N, 2, fit2)
    return waves25 / (ct_waves(M, N, fit_ct, rows) * rows / 128)


def ct_gain(M: int, N: int, fits: Callable[[], tuple[int, int]], rows: int = CT_M) -> float:
    """ct_waves_ratio for a square FP16 problem (rows of A and of B N halves wide), with fits() giving the clusters of
    4 and of 2 resident at once (rung 29's clusters of 2 as many as rung 25's, as on the H200)."""
    fit4, fit2 = fits()
    return ct_waves_ratio(M, N, 2 * N, 2 * N, lambda: (fit4, fit2, fit2), rows)


_fp16_fp32acc_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16")
_fp16_tail_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16", split_tiles=tail_split_tiles)
_fp16_split_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16", split=split_k_ranges)


# --------------------------------------------------------------------------- lesson 5's tiles
LADDER_FILE = "ladder.cu"
WGMMA_FILE = "ladder_sm90a.cu"


def ladder_smem_bytes(stages: int = 1, pad: int = 8, bk: int = 32, bm: int = 128, bn: int = 128) -> int:
    """Shared memory of kernels/ladder.cu's tiles: `stages` x (As[bm][bk + pad] + Bs[bk][bn + pad]),
    FP16, in bytes."""
    return stages * (bm * (bk + pad) + bk * (bn + pad)) * 2


PIPE_SMEM = ladder_smem_bytes(stages=4)                   # rungs 5-6: STAGES = 4 padded stages
WGMMA_SMEM = 4 * (128 * 64 + 256 * 64) * 2 + 1024 + 64    # LADDER7_SMEM in kernels/ladder_sm90a.cu


HOPPER_FILE = "hopper_sm90a.cu"
HOPPER_STAGE = (128 * 64 + 64 * 256) * 2                  # bytes of A and B per pipeline stage (48 KB)
HOPPER_SMEM = 4 * HOPPER_STAGE + 1024 + 128               # HOPPER_SMEM in kernels/hopper_sm90a.cu: 4 stages
HOPPER_STORE_SMEM = HOPPER_SMEM + 2 * 2 * 64 * 32 * 4     # HOPPER_STORE_SMEM: + 2 x 2 C boxes of 64 x 32 FP32
SKINNY_STAGE = (64 * 64 + 64 * 128) * 2                   # rung 17: A and B per stage of a 64 x 128 tile (24 KB)
SKINNY_STAGES = 8                                        # SKINNY_STAGES in kernels/hopper_sm90a.cu


def skinny_smem(stages: int = SKINNY_STAGES) -> int:
    """SKINNY_SMEM in kernels/hopper_sm90a.cu for `stages` stages: the ring, rung 13's epilogue buffers, slack
    and barriers."""
    return stages * SKINNY_STAGE + (HOPPER_STORE_SMEM - 4 * HOPPER_STAGE)


SKINNY_SMEM = skinny_smem()
# The skinny rungs (17 on) are timed where they were made for (M = 128, N = K = 8192) and where the chip is full
# (4096^3, 8192^3: their gains and the price of the small tile); the record's other shapes are the big-tile rungs'.
SKINNY_TIMED = ((128, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 8192))


def _seed_wmma(name: str, file: str, inputs: str, acc: str, acc_rounding: str, acc_block: int, emulate: Callable,
               min_cc: tuple, teaches: str, **kw) -> GemmKernel:
    """Lessons 2-3 (the seed's WMMA loop): one warp per 16x16 tile of C, 8 warps stacked in M per block;
    M, N, K multiples of 16; measured at every size by `make record`. Every warp loads its own A and B
    tiles from global memory (nothing is shared through shared memory): the traffic model's tile is
    the warp's 16 x 16."""
    return GemmKernel(name=name, file=file, inputs=inputs, acc=acc, acc_rounding=acc_rounding, acc_block=acc_block,
                      emulate=emulate, block=(32, 8), block_tile=(128, 16), load_tile=(16, 16), tile_mn=16, tile_k=16,
                      min_cc=min_cc,
                      sweep=True, teaches=teaches, **kw)


def _classic_rung(rung: int, name: str, idea: str, gain: float, why: str, **kw) -> GemmKernel:
    """Rungs 2-6 (kernels/ladder.cu): 256 threads, a 128 x 128 block tile, BK = 32, FP16 in, FP32 acc."""
    return GemmKernel(name=name, file=LADDER_FILE, inputs="fp16", acc="fp32", acc_rounding="truncate",
                      acc_block=16, emulate=_fp16_fp32acc, block=(256, 1), block_tile=(128, 128),
                      tile_mn=128, tile_k=32, teaches=f"lesson 5, rung {rung}: {idea}", rung=rung, idea=idea,
                      predicted_gain=gain, why=why, **kw)


def _hopper_rung(rung: int, name: str, idea: str, gain: float, why: str, threads: int = 384,
                 dyn_smem: int = HOPPER_SMEM, emulate: Callable = _fp16_fp32acc, block_tile: tuple = (128, 256),
                 tma_boxes: tuple = ((128, 64), (64, 64)), **kw) -> GemmKernel:
    """Rungs 8 on (kernels/hopper_sm90a.cu, lesson 6): a 128 x 256 block tile (rung 17: 64 x 128, A's box 64 x 64),
    K-tiles of 64, 4 stages (rung 17: 8); A and
    row-major B through TMA tensor maps (boxes 128 x 64 and 64 x 64; TMA fills what lies outside the matrices
    with zeros, so M, N, K need only be multiples of 8: 16-byte rows); FP16 in, FP32 accumulators walking K in
    order 16 at a time (rung 7's arithmetic and emulation); sm_90a only, in a child process."""
    return GemmKernel(name=name, file=HOPPER_FILE, inputs="fp16", acc="fp32", acc_rounding="truncate",
                      acc_block=16, emulate=emulate, block=(threads, 1), block_tile=block_tile, tile_mn=8,
                      tile_k=8, min_cc=(9, 0), only_cc=(9, 0), dyn_smem=dyn_smem, tma_boxes=tma_boxes,
                      isolate=True, teaches=f"lesson 6, rung {rung}: {idea}", rung=rung, lesson=6, idea=idea,
                      predicted_gain=gain, why=why, **kw)


def _registry(entries: list[GemmKernel]) -> dict[str, GemmKernel]:
    out: dict[str, GemmKernel] = {}
    for k in entries:
        if k.name in out:
            raise ValueError(f"kernel {k.name!r} registered twice")
        out[k.name] = k
    rungs = [k.rung for k in entries if k.rung is not None]
    if len(rungs) != len(set(rungs)):
        raise ValueError(f"a rung number is used twice: {sorted(rungs)}")
    return out


# Rungs 25-26: rungs 14 and 13 in clusters of 4 where rows start inside a 128-byte line (helpers.kernels.quad_choice).
_QUAD_WHY = ("four CTAs on tiles stacked along M share B, and each loads one of its four boxes for all of them: a CTA "
             "asks L2 for 128 + 64 box rows of 128 bytes per K-tile instead of 128 + 128. Where rows start inside a "
             "128-byte line (5000^3: rows of 10000 bytes) every box row costs two L2 requests. Fewer CTAs run at once in "
             "clusters of 4 than of 2 (not every GPC's SMs divide into fours), which can add a wave, so the launcher "
             "chooses per problem (helpers.kernels.quad_choice): clusters of 4 only where a row starts inside a line "
             "and no wave is added, else rung 14's (13's) own build. Predicted: x1.00 where it builds rung 14 (13), "
             "x1.12 at 5000^3")

# Rungs 29-30: cuBLAS's orientation, the C^T tile where the wave model says it pays (helpers.launch.orientation_build).
_CT_WHY = ("wgmma's M is 64 rows per instruction, its N any multiple of 8: a 160 x 256 tile computed as C^T = B^T A^T "
           "(wgmma's A a box of B read MN-major, its B the tile's 160 rows of A) needs no padding, so 4 stages of 52 KB "
           "fit beside a 16 KB epilogue, where rung 27's 256 x 152 fitted 3. At 5000^3 its 320 units of 2 make 5 waves "
           "of 66 clusters (4.85 of work), each tile 1.25 of rung 14's: 6.25 tile-times where rung 25 takes 7, x1.12; "
           "a CTA asks L2 for 142 outputs per box row against rung 25's 171, so some of it goes: predicted x1.08 over "
           "rung 25 at 5000^3 where forced. Built only where the wave model gives it x1.05 or more "
           "(helpers.launch.orientation_build), else rung 25's own build: predicted x1.00 there, x1.05 at 5000^3")

KERNELS: dict[str, GemmKernel] = _registry([
    # Lessons 1-3: the seed article's kernels and the mixed-precision family; one thread per C element
    # (FP32), or one warp per 16x16 tile with 8 warps stacked in M (WMMA)
    GemmKernel(name="gemm_fp32_kernel", file="fp32_baseline.cu", inputs="fp32", acc="fp32",
               acc_rounding="nearest", acc_block=1, emulate=_fp32_fma, block=(16, 16),
               block_tile=(16, 16), load_tile=(1, 1), sweep=True,
               teaches="FP32 CUDA-core baseline: one thread per C element, FMA chain over K"),
    _seed_wmma("wmma_gemm_naive", "wmma.cu", "fp16", "fp32", "truncate", 16, _fp16_fp32acc, (7, 0),
               "naive WMMA: one warp per 16x16 tile, loads from global memory",
               rung=1, idea="naive WMMA (lesson 2)", predicted_gain=1.0,
               why="the starting point: every warp reloads its A and B tiles from global memory at every K step"),
    _seed_wmma("wmma_mixed_gemm_kernel", "mixed_precision.cu", "fp16", "fp32", "truncate", 16, _fp16_fp32acc, (7, 0),
               "mixed precision: FP16 inputs, FP32 accumulator"),
    _seed_wmma("wmma_fp16acc_gemm_kernel", "mixed_precision.cu", "fp16", "fp16", "nearest", 16, _fp16_fp16acc, (7, 0),
               "FP16 inputs, FP16 accumulator"),
    # BF16 and TF32 inputs on the same loop, sm_80+. The BF16 kernel takes uint16 BF16 bit patterns; the
    # TF32 kernel takes FP32 and rounds each fragment element with __float_to_tf32 (ties away from zero,
    # helpers.formats.round_tf32_rna). Emulation models (emulate.model_for): BF16 as FP16 (block 16, 2 extra
    # bits); TF32 block 4 (2 extra bits), both reproduced bit for bit on the H200 (experiment
    # "mixed_emulator_probe").
    _seed_wmma("wmma_bf16_gemm_kernel", "mixed_precision.cu", "bf16", "fp32", "truncate", 16, _bf16_fp32acc, (8, 0),
               "BF16 inputs (uint16 bits), FP32 accumulator: FP32's range, 8-bit precision"),
    _seed_wmma("wmma_tf32_gemm_kernel", "mixed_precision.cu", "tf32", "fp32", "truncate", 4, _tf32_fp32acc, (8, 0),
               "TF32 WMMA m16n16k8: FP32 in memory, 10 fraction bits on the Tensor Core"),
    # Lesson 5: the ladder. Rung 1 is wmma_gemm_naive above; rungs 2-6 are in kernels/ladder.cu. Every rung
    # keeps one FP32 accumulator per output and walks K in order, 16 at a time, so one emulation fits all.
    _classic_rung(2, "ladder_smem_tiled", "shared-memory block tiling", 3.0,
                  "a 128x128 block tile reuses each loaded element 8x more; bank conflicts and 2-byte copies remain",
                  min_cc=(7, 0), smem_static=ladder_smem_bytes(pad=0)),
    _classic_rung(3, "ladder_smem_padded", "padding against bank conflicts", 1.5,
                  "16 bytes of skew per row remove the 4-8-way conflicts of the fragment loads",
                  min_cc=(7, 0), smem_static=ladder_smem_bytes(pad=8)),
    _classic_rung(4, "ladder_vec16", "16-byte vectorized copies", 1.3,
                  "8x fewer load and store instructions for the same bytes",
                  min_cc=(7, 0), smem_static=ladder_smem_bytes(pad=8)),
    _classic_rung(5, "ladder_cp_async", "cp.async 4-stage pipeline", 1.6,
                  "copies of the next 3 K-tiles fly while the Tensor Cores work on this one",
                  min_cc=(8, 0), dyn_smem=PIPE_SMEM),
    _classic_rung(6, "ladder_mma_sync", "ldmatrix + mma.sync m16n8k16", 1.3,
                  "one ldmatrix.x4 replaces four fragment loads; fragments reused from registers",
                  min_cc=(8, 0), dyn_smem=PIPE_SMEM),
    # Rung 7 (kernels/ladder_sm90a.cu, Hopper only): wgmma fed by TMA through mbarriers; a 128 x 256 block
    # tile, K-tiles of 64; it reads B^T through a tensor map. Whether wgmma rounds inside each 16-deep step
    # as mma.sync does is assumed by the emulation and checked on the GPU (tests/test_gpu_ladder.py).
    GemmKernel(name="ladder_wgmma_tma", file=WGMMA_FILE, inputs="fp16", acc="fp32", acc_rounding="truncate",
               acc_block=16, emulate=_fp16_fp32acc, block=(256, 1), block_tile=(128, 256), tile_mn=256, tile_k=64,
               min_cc=(9, 0), only_cc=(9, 0), dyn_smem=WGMMA_SMEM, b_transposed=True,
               tma_boxes=((128, 64), (256, 64)), isolate=True,
               teaches="lesson 5, rung 7: wgmma + TMA + mbarriers (sm_90a)",
               rung=7, idea="wgmma + TMA + mbarriers (sm_90a)", predicted_gain=2.0,
               why="Hopper's warpgroup MMA reads A and B from shared memory at a rate mma.sync cannot reach; "
                   "the copy engine fills a 128x256 tile (bytes per FLOP scale with 1/BM + 1/BN: 3/4 of "
                   "128x128's) with one thread"),
    # Lesson 6: from rung 7 to cuBLAS (kernels/hopper_sm90a.cu, Hopper only), one idea per rung, each gain predicted
    # before the rung was measured, from lesson 5's H200 record and the published steps of pranjalssh/fast.cu on an
    # H100 (results/reference).
    _hopper_rung(8, "hopper_b_rowmajor", "B read as stored (wgmma transpose bit)", 1.3,
                 "rung 7 spent a third of its time at 4096 (an eighth at 8192) transposing B; wgmma reads "
                 "row-major B through its transpose bit at the same rate, so rung 8 should run at rung 7's "
                 "kernel-alone speed (lesson 5's record)", threads=256),
    _hopper_rung(9, "hopper_warp_specialized", "warp specialisation: producer + 2 consumers, mbarrier ring", 1.2,
                 "rung 8 drains the Tensor Cores at every K-tile (wait_group 0, then a __syncthreads before the "
                 "next copy is asked for); a producer warpgroup that only copies and consumers that keep one wgmma "
                 "group in flight remove that bubble (fast.cu: +30% for this step on an H100, from a worse start)"),
    _hopper_rung(10, "hopper_persistent", "persistent grid, tile scheduler (plain order)", 1.04,
                 "one CTA per SM: the producer loads the next tile while the consumers store this one, and no "
                 "CTA is set up per tile (fast.cu, H100, BF16, 8192^3: 635 -> 658 TFLOP/s, +3.6%)", persistent=True),
    _hopper_rung(11, "hopper_grouped", "L2-aware tile order (groups of 8 tile rows)", 1.02,
                 "the 132 tiles in flight share 8 rows of A and ~17 columns of B instead of ~5 rows and all of B "
                 "(at 8192): "
                 "more L2 hits at 8192 (A and B 128 MiB each, L2 60 MiB), little change at 4096 (32 MiB each)",
                 persistent=True),
    _hopper_rung(12, "hopper_cluster", "2-CTA clusters, TMA multicast of B", 1.03,
                 "two CTAs on tiles that share B each load half of it and multicast it to both: a third fewer "
                 "bytes requested from L2 per tile pair (fast.cu: +3% with a larger tile)",
                 persistent=True, cluster=(2, 1, 1)),
    _hopper_rung(13, "hopper_tma_store", "epilogue through shared memory + TMA store", 1.02,
                 "C is FP32 (twice cuBLAS's FP16 bytes): 128-byte rows stored by the copy engine instead of "
                 "32-byte pieces from registers, and the warps return to the Tensor Cores sooner (fast.cu: +1% "
                 "with the Hilbert order)", persistent=True, cluster=(2, 1, 1), c_box=(64, 32),
                 dyn_smem=HOPPER_STORE_SMEM),
    # Rungs 14-15: like for like with cupy.matmul, which writes FP16 C, and the shapes with fewer tiles than SMs.
    _hopper_rung(14, "hopper_fp16_store", "FP16 C: cvt + stmatrix + TMA store", 1.03,
                 "C as FP16, what cupy.matmul writes: half of rung 13's bytes of C, one stmatrix per 16 x 16 piece instead of four float2 stores per "
                 "thread, half as many TMA boxes", output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1),
                 c_box=(64, 64), dyn_smem=HOPPER_STORE_SMEM),
    _hopper_rung(15, "hopper_split_k", "split-K for problems with fewer tiles than SMs", 0.98,
                 "unchanged work where the chip is full (no split; no clusters either, which pair tiles along M: "
                 "a little more L2 traffic for B); at M = 128, N = K = 8192 its 32 tiles become 4 x 32 = 128 work "
                 "units, and the gain there is predicted separately (x1.8, bounded by streaming 128 MiB of B)",
                 output="fp16", emulate=_fp16_split_h, persistent=True, split_k=True, c_box=(64, 64),
                 dyn_smem=HOPPER_STORE_SMEM),
    # Rung 16: at 5000^3 rung 14 runs 7 waves of which the last holds 4 of 66 cluster units.
    _hopper_rung(16, "hopper_tail_split", "split-K for the last, partial wave only (clusters kept)", 0.98,
                 "where the plan does not split (4096, 8192: the last wave is more than half full) it is rung 14, "
                 "clusters back: x1.00 over rung 14. At "
                 "5000^3 (predicted separately: x1.11 over rung 14) rung 14 runs 400 units of 2 tiles on 66 "
                 "clusters: 6 whole waves, then 4 units with 62 clusters idle; cutting those 4 into 9 parts of 9 "
                 "K-tiles gives each CTA 6 x 79 + 9 = 483 K-tiles instead of 7 x 79 = 553, and the last part reads "
                 "9 parts x 128 KB from L2 and stores its own (about 16 K-tiles' time): 553 / 499 = 1.11",
                 output="fp16", emulate=_fp16_tail_h, persistent=True, cluster=(2, 1, 1), split_k=True,
                 tail_split=True, c_box=(64, 64), dyn_smem=HOPPER_STORE_SMEM),
    # Rung 17: at M = 128, N = K = 8192 cuBLAS runs a 64 x 128 tile (ours: M x N) over all of K in 2-CTA clusters,
    # 8 stages, 128 CTAs, and no split-K (its kernel's name, read with Nsight Compute).
    _hopper_rung(
        17, "hopper_skinny", "a 64 x 128 tile for skinny problems (8 stages, no split)", 0.6,
        "where the chip is full (4096^3) the same work with half the reuse: each CTA's K-tile is 1 MFLOP for 16 KB from "
        "L2 (B halved by multicast) against rung 14's 4 MFLOP for 32 KB, so L2 bandwidth limits it. At M = 128, "
        "N = K = 8192 (predicted separately: x1.25 over rung 16) its 2 x 64 = 128 tiles each walk all of K, as cuBLAS's "
        "kernel there does: no workspace, no fixup, B streamed once",
        output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128),
        tma_boxes=((64, 64), (64, 64)), c_box=(64, 64), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED),
    # Rung 18: rung 17's design for the comparison with cuBLAS writing FP32 C at M = 128.
    _hopper_rung(
        18, "hopper_skinny_f32c", "the skinny tile writing FP32 C (rung 13's epilogue)", 0.98,
        "rung 17's mainloop, B streamed once at M = 128; C in FP32 doubles C's bytes (4 MB against 2 MB at M = 128, "
        "beside 134 MB of B; at 4096^3 64 MB against 32 MB, beside rung 17's L2 traffic), and rung 13's 64 x 32 boxes "
        "take two TMA stores per slice where rung 17 takes one",
        persistent=True, cluster=(2, 1, 1), block_tile=(64, 128), tma_boxes=((64, 64), (64, 64)), c_box=(64, 32),
        dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED),
    # Rungs 19-20: one consumer warpgroup per tile, as cuBLAS's kernel at M = 128 runs. Rung 19's gain is over rung
    # 17 (its FP16 C), not over rung 18.
    _hopper_rung(
        19, "hopper_skinny_one", "one consumer warpgroup on the skinny tile (m64n128k16)", 1.0,
        "cuBLAS's kernel at M = 128 has one warpgroup issue all of a stage's MMAs; rung 17's two consumers split the "
        "tile's columns, so every stage waits for 8 warps of each CTA and each warp computes its descriptors for half "
        "the work. One warpgroup of m64n128k16 keeps the Tensor Cores at their peak (hopper_wgmma_rate). Where the chip "
        "is full (4096^3) the same bytes per FLOP as rung 17: x1.0. At M = 128, N = K = 8192 (predicted separately: "
        "x1.10 over rung 17, 0.81x cuBLAS) the loads alone run at cuBLAS's speed, so what one consumer saves "
        "in releases and issue work is what the whole kernel gains",
        threads=256, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128),
        tma_boxes=((64, 64), (64, 64)), c_box=(64, 64), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED, base=17),
    _hopper_rung(
        20, "hopper_skinny_one_f32c", "rung 19 writing FP32 C (rung 13's epilogue)", 0.98,
        "rung 19's mainloop with rung 18's FP32 epilogue (four 64 x 32 boxes per slice): at M = 128 C's 4 MB beside "
        "134 MB of B, where rung 18 measured x1.00 over rung 17",
        threads=256, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128), tma_boxes=((64, 64), (64, 64)),
        c_box=(64, 32), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED),
    # Rungs 21-22: rungs 19-20 with lesson 6's WAIT_HINT knob set. Their gains are over rungs 19 and 20.
    _hopper_rung(
        21, "hopper_skinny_hint", "rung 19 waiting with a suspend-time hint (try_wait, 10 ms)", 1.05,
        "a thread of rung 19 waits for a stage once per 1 MFLOP K-tile; without a hint the hardware decides how long "
        "it sleeps before it looks again, with one it sleeps until the phase completes. Where the chip is full "
        "(4096^3) the same waits per FLOP, but more of the time is L2's: x1.05. At M = 128, N = K = 8192 (predicted "
        "separately: x1.10 over rung 19, about 0.91x cuBLAS) the knob measured x1.10 on rung 19",
        threads=256, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128),
        tma_boxes=((64, 64), (64, 64)), c_box=(64, 64), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED, base=19),
    _hopper_rung(
        22, "hopper_skinny_hint_f32c", "rung 20 waiting with the hint (rung 21 writing FP32 C)", 1.05,
        "rung 20 with rung 21's waits: x1.05 at 4096^3; at M = 128 (predicted separately) x1.08 over rung 20, what "
        "the knob measured on rung 20 there",
        threads=256, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128), tma_boxes=((64, 64), (64, 64)),
        c_box=(64, 32), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED, base=20),
    # Rungs 23-24: rungs 21-22 with their descriptors built once and advanced by adds (the build option DESC_ADD of
    # the other rungs).
    _hopper_rung(
        23, "hopper_skinny_desc", "rung 21 with descriptors built once and advanced by adds", 1.03,
        "before every wgmma rung 21 rebuilds both shared-memory descriptors from their addresses (mask, shift, OR, "
        "then moves into uniform registers: among rung 19's most executed instructions in Nsight Compute); built once "
        "and advanced by adds, as cuBLAS's kernel does, the same wgmmas issue with fewer instructions. DESC_ADD "
        "measured x1.03 on rung 21 at M = 128; the skinny tile issues as many wgmma per FLOP "
        "where the chip is full: x1.03 at both shapes",
        threads=256, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128),
        tma_boxes=((64, 64), (64, 64)), c_box=(64, 64), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED, base=21),
    _hopper_rung(
        24, "hopper_skinny_desc_f32c", "rung 22 with added descriptors (rung 23 writing FP32 C)", 1.03,
        "rung 22 with rung 23's descriptors: x1.03 at both shapes (DESC_ADD measured about that on rung 20 at "
        "M = 128)",
        threads=256, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128), tma_boxes=((64, 64), (64, 64)),
        c_box=(64, 32), dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED, base=22),
    _hopper_rung(25, "hopper_quad_cluster", "clusters of 4 where rows start inside a line (chosen per shape)", 1.0,
                 _QUAD_WHY, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(4, 1, 1),
                 c_box=(64, 64), dyn_smem=HOPPER_STORE_SMEM, base=14, per_shape="cluster"),
    _hopper_rung(26, "hopper_quad_cluster_f32c", "rung 25 writing FP32 C (rung 13 with clusters of 4 by shape)",
                 1.0, _QUAD_WHY.replace("rung 14 (13)", "rung 13"), persistent=True, cluster=(4, 1, 1),
                 c_box=(64, 32), dyn_smem=HOPPER_STORE_SMEM, base=13, per_shape="cluster"),
    _hopper_rung(29, "hopper_ct_tile", "cuBLAS's orientation: a 160 x 256 tile computed as C^T (chosen per shape)",
                 1.0, _CT_WHY, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1),
                 block_tile=(CT_M, 256), tma_boxes=((CT_M, 64), (64, 64)), c_box=(32, 64), dyn_smem=ct_smem(), base=25,
                 per_shape="orientation"),
    _hopper_rung(30, "hopper_ct_tile_f32c", "rung 29 writing FP32 C (rung 26 where its own tile is built)", 1.0,
                 "rung 29's mainloop and waves with an FP32 epilogue (single floats into boxes of 16 rows x 32 "
                 "columns, two per step, in the same 16 KB); both FP32 epilogues write twice the bytes, so predicted "
                 "as rung 29: x1.05 over rung 26 at 5000^3, x1.00 where the launcher builds rung 26's kernel",
                 persistent=True, cluster=(2, 1, 1), block_tile=(CT_M, 256), tma_boxes=((CT_M, 64), (64, 64)),
                 c_box=(16, 32), dyn_smem=ct_smem(), base=26, per_shape="orientation"),
])

ALL_RUNGS: dict[int, GemmKernel] = {k.rung: k for k in sorted((k for k in KERNELS.values() if k.rung is not None),
                                                              key=lambda k: k.rung)}
RUNGS: dict[int, GemmKernel] = {r: k for r, k in ALL_RUNGS.items() if k.lesson == 5}         # lesson 5's ladder
HOPPER_RUNGS: dict[int, GemmKernel] = {r: k for r, k in ALL_RUNGS.items() if k.lesson == 6}  # lesson 6's new rungs


# --------------------------------------------------------------------------- rungs outside the ladder
# Kernels of kernels/hopper_sm90a.cu that are checked, modelled and launched like the rungs but are not on lesson 6's
# ladder (no lesson, experiment or record shows them; the lab's probes run them through rung_entry): rungs 27-28, a
# 256-row tile whose width is chosen per shape, and rung 31, the C^T tile in pairs along N. Both measured slower than
# the rungs they were built to beat (lab/README.md).
_TALL_WHY = ("where 128 x 256 tiles leave the last wave mostly empty, a 256-row tile whose width makes whole waves: at "
             "5000^3 rung 14's 400 units of 2 tiles take 7 waves of 66 clusters for 6.06 waves of work, 256 x 152 "
             "tiles 5 whole waves (the tile cuBLAS picks there). Each consumer owns two 64-row slices, 152 "
             "accumulators a thread. The waves give x1.18 over rung 14; the tall tile asks L2 for 110 outputs per "
             "box row against rung 14's 128, so some of it goes: predicted x1.05 over rung 25 at 5000^3, x1.00 where "
             "the launcher builds rung 14's tile (helpers.kernels.tall_choice)")
CTN_M = 152         # rung 31's tile rows (cuBLAS's at 5000^3); a stage holds 2 x 80 rows of A, as rung 29's 160
_CTN_WHY = ("cuBLAS's tile at 5000^3: 152 x 256 computed as C^T, a cluster's two tiles side by side along N sharing A "
            "(each CTA loads 80 of its rows and multicasts them; each loads its own B). 330 units of 2 make 5 whole waves "
            "of 66 clusters, each tile 1.19 of rung 14's: 5.94 tile-times where rung 29 takes 6.25 (x1.05), but a CTA "
            "asks L2 for 116 outputs per box row against rung 29's 142: predicted x1.03 over rung 29 (its C^T tile "
            "forced) at 5000^3 and 4096^3, x0.88 at 5496^3 (7 waves against 6)")
PENDING: dict[int, GemmKernel] = {
    27: _hopper_rung(27, "hopper_tall_tile", "a 256-row tile, its width chosen per shape", 1.05, _TALL_WHY,
                     output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), block_tile=(256, 152),
                     tma_boxes=((256, 64), (64, 64)), c_box=(64, 64), dyn_smem=tall_smem(152), base=25,
                     per_shape="tile"),
    28: _hopper_rung(28, "hopper_tall_tile_f32c", "rung 27 writing FP32 C (rung 13's epilogue)", 1.05,
                     _TALL_WHY.replace("rung 14's tile", "rung 13's tile").replace("over rung 25", "over rung 26"),
                     persistent=True, cluster=(2, 1, 1), block_tile=(256, 152), tma_boxes=((256, 64), (64, 64)),
                     c_box=(64, 32), dyn_smem=tall_smem(152), base=26, per_shape="tile"),
    31: _hopper_rung(31, "hopper_ct_pair_n", "the C^T tile 152 rows high, in pairs along N sharing A", 1.03, _CTN_WHY,
                     output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1),
                     block_tile=(CTN_M, 256), tma_boxes=((80, 64), (64, 64)), c_box=(8, 64), dyn_smem=ct_smem(160),
                     base=29),
}
assert not set(PENDING) & set(ALL_RUNGS) and all(k.name not in KERNELS for k in PENDING.values())


def rung_entry(k: int) -> GemmKernel:
    """Rung k's entry: the registry's, or one outside the ladder (PENDING), for the probes."""
    return ALL_RUNGS[k] if k in ALL_RUNGS else PENDING[k]


def hopper_ladder() -> dict[int, GemmKernel]:
    """Lesson 6's ladder: rung 7 (where it starts) and the rungs it adds."""
    return {7: ALL_RUNGS[7], **HOPPER_RUNGS}


def _rung_list() -> str:
    return ", ".join(f"{k.rung} ({k.name})" for k in ALL_RUNGS.values())


def lookup(key) -> GemmKernel:
    """The registry entry for a kernel name, a rung number, or an entry itself."""
    if isinstance(key, GemmKernel):
        return key
    if isinstance(key, str) and key in KERNELS:
        return KERNELS[key]
    if isinstance(key, int) and not isinstance(key, bool) and key in ALL_RUNGS:
        return ALL_RUNGS[key]
    raise UnknownKernelError(f"no kernel {key!r} in the registry. Kernels: {', '.join(KERNELS)}; "
                             f"rungs: {_rung_list()}.",
                             "pass one of those names (or a rung number); a new kernel needs an entry in "
                             "helpers.kernels.KERNELS.")


def rung(key) -> GemmKernel:
    """A rung of a ladder (lesson 5's or lesson 6's) by number, kernel name, or entry."""
    try:
        k = lookup(key)
    except UnknownKernelError:
        k = None
    if k is None or k.rung is None:
        raise UnknownKernelError(f"no rung {key!r} on the ladder. Rungs: {_rung_list()}.",
                                 "pass a rung number or a rung's kernel name; a new rung is a kernel plus one "
                                 "entry with rung= in helpers.kernels.KERNELS.")
    return k
