"""The registry of every GEMM kernel the course launches: one entry per kernel, nothing else.

An entry (``GemmKernel``) says where the kernel is (``name``, ``file`` in kernels/), its arithmetic (formats,
accumulator rounding and block, and ``emulate(A, B)``, its numpy reproduction on the CPU backend; ``check`` is
``helpers.check_gemm`` with all of these filled in), what sizes it accepts (``tile_mn``, ``tile_k``: what ``pad=True``
pads to), how it is launched (block, grid tile, shared memory, TMA boxes, cluster, persistent grid, child process)
and, for a rung of a ladder, its one idea and predicted gain. It launches nothing: ``helpers.launch`` validates, pads
and launches every entry the same way.

Adding a kernel is the kernel in kernels/*.cu plus one entry in ``KERNELS``; an entry with ``rung=`` is a rung, and
``RUNGS`` (lesson 5's), ``HOPPER_RUNGS`` (lesson 6's) and ``ALL_RUNGS`` follow from the registry.
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

# Kernels taken out of the lessons: {kernel name: reason}. A withdrawn kernel is skipped on every backend with
# its reason, so that the notebooks' outputs stay backend independent.
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
    output: str = ""               # C's format ("": the accumulator's)
    load_tile: tuple | None = None  # (rows, cols) of C whose rows of A and columns of B are loaded once and shared
    #                                 (the traffic model, helpers.analysis); None: the block tile
    tile_mn: int = 1               # M and N must be multiples of this (pad=True pads to it)
    tile_k: int = 1                # K must be a multiple of this
    min_cc: tuple = (0, 0)
    only_cc: tuple | None = None   # arch-specific code (sm_90a): runs on this compute capability only
    dyn_smem: int = 0              # bytes of dynamic shared memory per block (above 48 KB the launcher opts in)
    smem_static: int | None = None  # bytes of static shared memory its tiles declare (None: not modelled)
    b_transposed: bool = False     # reads B^T (N x K row-major); the launcher transposes B inside the timed run
    tma_boxes: tuple | None = None  # ((rows, cols) of A's box, (rows, cols) of B's): takes TMA tensor maps
    c_box: tuple | None = None     # (rows, cols) of C's box: it takes a tensor map of C too (TMA stores)
    cluster: tuple | None = None   # (x, y, z) blocks per cluster, declared by the kernel (__cluster_dims__)
    persistent: bool = False       # one block per SM (as many as fit at once), looping over the tiles
    split_k: bool = False          # K cut into parts (split_k_plan): it also takes a workspace, flags and the parts
    tail_split: bool = False       # with split_k: only the last, partial wave is split (tail_split_plan)
    isolate: bool = False          # on a GPU, helpers.gemm runs it in a child process (helpers.isolate)
    sweep: bool = False            # measured at every size by `make record`
    rung: int | None = None        # its rung on a ladder
    lesson: int = 5                # a rung's ladder: 5 (rungs 1-7) or 6 (rungs 8 on, starting from rung 7)
    idea: str = ""                 # the one idea the rung adds
    predicted_gain: float | None = None   # predicted speed-up over the rung before (or over `base`)
    base: int | None = None        # the rung its gain is predicted over, where that is not the rung before
    why: str = ""                  # the reasoning behind the prediction (lesson 6's: the kernels' comments)
    timed_shapes: tuple | None = None   # (M, N, K) shapes lesson 6's record times it at; None: every timed shape
    per_shape: str = ""            # the launcher chooses its build per problem (helpers.launch.PER_SHAPE):
    #                                "cluster" (rungs 25-26), "orientation" (rungs 29-30)

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
    def cluster_ctas(self) -> int:
        """CTAs per cluster (1 without clusters)."""
        return math.prod(self.cluster) if self.cluster else 1

    @property
    def traffic_tile(self) -> tuple:
        """The tile of C that loads its rows of A and columns of B once (helpers.analysis.traffic_bytes)."""
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
        """Blocks for an M x N output: one per block tile (blockIdx.x along N, blockIdx.y along M); a persistent
        kernel's tile count."""
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


# --------------------------------------------------------------------------- split-K (lesson 6, rungs 15-16)
SPLIT_K_UNITS = 132          # work units a split-K launch aims for: the SMs of an H200 (and an H100 SXM)
SPLIT_K_MIN_KTILES = 8       # K-tiles of 64 per part at least: a shorter part barely fills the 4-stage ring


def split_k_plan(M: int, N: int, K: int) -> tuple[int, int]:
    """Rung 15's split of K: (parts, K-tiles of 64 per part). A problem with fewer 128 x 256 tiles than SPLIT_K_UNITS
    is cut into as many parts as keep tiles x parts within it (each at least SPLIT_K_MIN_KTILES deep); one that fills
    the chip is not split. A pure function of the shape, so the CPU model and the kernel agree; part p covers K-tiles
    [p * per, min(ktiles, (p + 1) * per)), none empty."""
    tiles = math.ceil(M / 128) * math.ceil(N / 256)
    ktiles = math.ceil(K / 64)
    s = max(1, min(SPLIT_K_UNITS // max(tiles, 1), ktiles // SPLIT_K_MIN_KTILES))
    per = math.ceil(ktiles / s)
    s = math.ceil(ktiles / per)                   # no empty part (per is unchanged: ceil(ktiles / s) == per)
    assert math.ceil(ktiles / s) == per and (s - 1) * per < ktiles
    return s, per


def split_k_ranges(M: int, N: int, K: int) -> list[tuple[int, int]]:
    """The K ranges (in elements) of rung 15's parts, in the order their sums are added."""
    s, per = split_k_plan(M, N, K)
    return [(p * per * 64, min(K, (p + 1) * per * 64)) for p in range(s)]


TAIL_SPLIT_CLUSTER = 2       # rung 16 keeps rung 14's clusters: a work unit is a column of 2 tiles


def tail_split_plan(M: int, N: int, K: int) -> tuple[int, int, int]:
    """Rung 16's plan: (dp, parts, per). A work unit is a cluster's 2 tiles of 128 x 256; with G = SPLIT_K_UNITS / 2
    clusters, the first dp = (units // G) * G units are whole (all of K, as rung 14), and each unit left over is cut
    into `parts` parts of `per` K-tiles (the last may be shorter), chosen as split_k_plan chooses for that many units.
    No split (dp = units, parts = 1) where the last wave is full, or more than half full."""
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
    """The blocks of C (r0, r1, c0, c1) that rung 16 splits, and the K ranges of their parts, in the order their sums
    are added: the tiles of units dp, dp + 1, ... in the kernel's grouped order (helpers.analysis.tile_order), clipped
    to C; a tile below M is left out (it stores nothing)."""
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
    clusters of 4 and of 2 are resident at once (asked only where rows start inside a line); width: the TILE_N knob."""
    if not starts_inside_line(a_row_bytes, b_row_bytes):
        return 2
    fit4, fit2 = fits()
    return 4 if cluster_waves(M, N, 4, fit4, width) <= cluster_waves(M, N, 2, fit2, width) else 2


def tile_n_smem(width: int, stages: int = 4) -> int:
    """Dynamic shared memory of rungs 25-26 with a tile `width` wide (TILE_N): per stage A (128 x 64) and B's boxes of
    64 columns, plus the epilogue's buffers, slack and barriers."""
    return stages * (128 * 64 + math.ceil(width / 64) * 64 * 64) * 2 + (HOPPER_STORE_SMEM - 4 * HOPPER_STAGE)


# Rung 29: cuBLAS's orientation, a CT_M x 256 tile computed as C^T; its epilogue stores boxes of 32 rows x 64 FP16
# columns, two 4 KB buffers per consumer.
CT_M = 160
CT_EPI_BYTES = 2 * 2 * 32 * 128


def ct_smem(rows: int = CT_M, stages: int = 4) -> int:
    """Dynamic shared memory of rung 29 with `rows` rows of C per tile (CT_SMEM): per stage A (rows x 64) and B's 4
    boxes, plus the 16 KB epilogue, slack and barriers."""
    return stages * (rows * 64 * 2 + 64 * 256 * 2) + CT_EPI_BYTES + (HOPPER_SMEM - 4 * HOPPER_STAGE)


def ct_waves(M: int, N: int, fit: int, rows: int = CT_M) -> int:
    """Waves of rung 29's `rows` x 256 tile in clusters of 2 stacked along M, `fit` clusters resident at once."""
    units = -(-math.ceil(M / rows) // 2) * math.ceil(N / 256)
    return -(-units // fit)


# Rungs 29-30 build the C^T tile where the wave model gives it at least this over rung 25 (26). On both Hopper GPUs
# the tile, forced, beat the per-shape build where the model gives it x1.029 (6008^3, 6000^3, 4104 x 8200 x 2056) and
# lost where it gives x0.96 (7000^3); 8928^3, at x1.013, stays with rung 25 (26).
CT_GAIN = 1.02


def ct_waves_ratio(M: int, N: int, a_row_bytes: int, b_row_bytes: int, fits: Callable[[], tuple[int, int, int]],
                   rows: int = CT_M) -> float:
    """The wave model's speed of rung 29 over rung 25 for an M x N problem: rung 25's waves (in clusters of 4 or of 2,
    as quad_choice builds it) over rung 29's tile-times (its waves times rows / 128). fits() gives the clusters
    resident at once: of 4 and of 2 for rung 25's builds, of 2 for rung 29's; of 4 None where rung 25 cannot be built
    in clusters of 4 (a variant's GROUP_M below 4)."""
    fit4, fit2, fit_ct = fits()
    four = fit4 is not None and quad_choice(M, N, a_row_bytes, b_row_bytes, lambda: (fit4, fit2)) == 4
    waves25 = cluster_waves(M, N, 4, fit4) if four else cluster_waves(M, N, 2, fit2)
    return waves25 / (ct_waves(M, N, fit_ct, rows) * rows / 128)


_fp16_fp32acc_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16")
_fp16_tail_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16", split_tiles=tail_split_tiles)
_fp16_split_h = _emu.Arithmetic("fp16", "fp32", _emu.DEFAULT_TC_MODEL, output="fp16", split=split_k_ranges)


# --------------------------------------------------------------------------- lesson 5's tiles
LADDER_FILE = "ladder.cu"
WGMMA_FILE = "ladder_sm90a.cu"


def ladder_smem_bytes(stages: int = 1, pad: int = 8, bk: int = 32, bm: int = 128, bn: int = 128) -> int:
    """Bytes of shared memory of kernels/ladder.cu's tiles: `stages` x (As[bm][bk + pad] + Bs[bk][bn + pad]), FP16."""
    return stages * (bm * (bk + pad) + bk * (bn + pad)) * 2


PIPE_SMEM = ladder_smem_bytes(stages=4)                   # rungs 5-6: STAGES = 4 padded stages
WGMMA_SMEM = 4 * (128 * 64 + 256 * 64) * 2 + 1024 + 64    # LADDER7_SMEM in kernels/ladder_sm90a.cu


HOPPER_STAGE = (128 * 64 + 64 * 256) * 2                  # bytes of A and B per pipeline stage (48 KB)
HOPPER_SMEM = 4 * HOPPER_STAGE + 1024 + 128               # rungs 8-12: 4 stages, slack and barriers
HOPPER_STORE_SMEM = HOPPER_SMEM + 2 * 2 * 64 * 32 * 4     # rungs 13 on: + 2 x 2 C boxes of 64 x 32 FP32
SKINNY_STAGE = (64 * 64 + 64 * 128) * 2                   # rung 17: A and B per stage of a 64 x 128 tile (24 KB)
SKINNY_STAGES = 8                                        # SKINNY_STAGES in kernels/hopper_rung17_sm90a.cu ..


def skinny_smem(stages: int = SKINNY_STAGES) -> int:
    """Dynamic shared memory of rungs 17-24 with `stages` stages: the ring, rung 13's epilogue buffers, slack and
    barriers."""
    return stages * SKINNY_STAGE + (HOPPER_STORE_SMEM - 4 * HOPPER_STAGE)


SKINNY_SMEM = skinny_smem()
# The skinny rungs (17-24) are timed where they were made for (M = 128) and where the chip is full (4096^3, 8192^3)
SKINNY_TIMED = ((128, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 8192))


def _seed_wmma(name: str, file: str, inputs: str, acc: str, acc_rounding: str, acc_block: int, emulate: Callable,
               min_cc: tuple, **kw) -> GemmKernel:
    """Lessons 2-3 (the seed's WMMA loop): one warp per 16x16 tile of C, 8 warps stacked in M per block, each
    loading its own A and B tiles from global memory (the traffic model's tile: 16 x 16); M, N, K multiples of 16."""
    return GemmKernel(name=name, file=file, inputs=inputs, acc=acc, acc_rounding=acc_rounding, acc_block=acc_block,
                      emulate=emulate, block=(32, 8), block_tile=(128, 16), load_tile=(16, 16), tile_mn=16, tile_k=16,
                      min_cc=min_cc, sweep=True, **kw)


def _classic_rung(rung: int, name: str, idea: str, gain: float, why: str, **kw) -> GemmKernel:
    """Rungs 2-6 (kernels/ladder.cu): 256 threads, a 128 x 128 block tile, BK = 32, FP16 in, FP32 acc."""
    return GemmKernel(name=name, file=LADDER_FILE, inputs="fp16", acc="fp32", acc_rounding="truncate",
                      acc_block=16, emulate=_fp16_fp32acc, block=(256, 1), block_tile=(128, 128),
                      tile_mn=128, tile_k=32, rung=rung, idea=idea,
                      predicted_gain=gain, why=why, **kw)


# Lesson 6's rungs, one complete kernel per file (kernels/hopper_rungNN_sm90a.cu)
RUNG_FILES = (*range(8, 27), 29, 30)


def hopper_rung_file(rung: int) -> str:
    """The file of one of lesson 6's rungs (RUNG_FILES): one complete kernel per file."""
    return f"hopper_rung{rung:02d}_sm90a.cu"


def _hopper_rung(rung: int, name: str, idea: str, gain: float, threads: int = 384, dyn_smem: int = HOPPER_SMEM,
                 emulate: Callable = _fp16_fp32acc, block_tile: tuple = (128, 256),
                 tma_boxes: tuple = ((128, 64), (64, 64)), file: str = "", **kw) -> GemmKernel:
    """Rungs 8 on (lesson 6; each rung in its own kernels/hopper_rungNN_sm90a.cu, or `file`, relative to kernels/):
    a 128 x 256 block tile, K-tiles of 64; A and row-major B through TMA tensor maps (TMA fills what lies outside the
    matrices with zeros, so M, N, K need only be multiples of 8: 16-byte rows); FP16 in, FP32 accumulators walking K
    in order 16 at a time (rung 7's arithmetic); sm_90a only, in a child process."""
    return GemmKernel(name=name, file=file or hopper_rung_file(rung), inputs="fp16", acc="fp32",
                      acc_rounding="truncate", acc_block=16, emulate=emulate, block=(threads, 1),
                      block_tile=block_tile, tile_mn=8, tile_k=8, min_cc=(9, 0), only_cc=(9, 0), dyn_smem=dyn_smem,
                      tma_boxes=tma_boxes, isolate=True, rung=rung, lesson=6, idea=idea, predicted_gain=gain, **kw)


def _skinny_rung(rung: int, name: str, idea: str, gain: float, c_box: tuple = (64, 32), **kw) -> GemmKernel:
    """Rungs 17-24: a persistent 64 x 128 tile in 2-CTA clusters, 8 stages, timed at SKINNY_TIMED."""
    return _hopper_rung(rung, name, idea, gain, persistent=True, cluster=(2, 1, 1), block_tile=(64, 128),
                        tma_boxes=((64, 64), (64, 64)), c_box=c_box, dyn_smem=SKINNY_SMEM, timed_shapes=SKINNY_TIMED,
                        **kw)


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


KERNELS: dict[str, GemmKernel] = _registry([
    # Lessons 1-3: the seed article's kernels and the mixed-precision family; one thread per C element
    # (FP32), or one warp per 16x16 tile with 8 warps stacked in M (WMMA)
    GemmKernel(name="gemm_fp32_kernel", file="fp32_baseline.cu", inputs="fp32", acc="fp32",
               acc_rounding="nearest", acc_block=1, emulate=_fp32_fma, block=(16, 16),
               block_tile=(16, 16), load_tile=(1, 1), sweep=True),
    _seed_wmma("wmma_gemm_naive", "wmma.cu", "fp16", "fp32", "truncate", 16, _fp16_fp32acc, (7, 0),
               rung=1, idea="naive WMMA (lesson 2)", predicted_gain=1.0,
               why="the starting point: every warp reloads its A and B tiles from global memory at every K step"),
    _seed_wmma("wmma_mixed_gemm_kernel", "mixed_precision.cu", "fp16", "fp32", "truncate", 16, _fp16_fp32acc, (7, 0)),
    _seed_wmma("wmma_fp16acc_gemm_kernel", "mixed_precision.cu", "fp16", "fp16", "nearest", 16, _fp16_fp16acc, (7, 0)),
    # BF16 and TF32 inputs on the same loop, sm_80+. The BF16 kernel takes uint16 BF16 bit patterns; the TF32
    # kernel takes FP32 and rounds each fragment element with __float_to_tf32 (ties away from zero,
    # helpers.formats.round_tf32_rna). Emulation models (emulate.model_for): BF16 as FP16, TF32 block 4.
    _seed_wmma("wmma_bf16_gemm_kernel", "mixed_precision.cu", "bf16", "fp32", "truncate", 16, _bf16_fp32acc, (8, 0)),
    _seed_wmma("wmma_tf32_gemm_kernel", "mixed_precision.cu", "tf32", "fp32", "truncate", 4, _tf32_fp32acc, (8, 0)),
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
    # Rung 7 (kernels/ladder_sm90a.cu, Hopper only): wgmma fed by TMA through mbarriers, a 128 x 256 block tile,
    # K-tiles of 64, B^T read through a tensor map; its emulation assumes mma.sync's rounding (checked on the GPU).
    GemmKernel(name="ladder_wgmma_tma", file=WGMMA_FILE, inputs="fp16", acc="fp32", acc_rounding="truncate",
               acc_block=16, emulate=_fp16_fp32acc, block=(256, 1), block_tile=(128, 256), tile_mn=256, tile_k=64,
               min_cc=(9, 0), only_cc=(9, 0), dyn_smem=WGMMA_SMEM, b_transposed=True,
               tma_boxes=((128, 64), (256, 64)), isolate=True, rung=7, idea="wgmma + TMA + mbarriers (sm_90a)",
               predicted_gain=2.0,
               why="Hopper's warpgroup MMA reads A and B from shared memory at a rate mma.sync cannot reach; "
                   "the copy engine fills a 128x256 tile (bytes per FLOP scale with 1/BM + 1/BN: 3/4 of "
                   "128x128's) with one thread"),
    # Lesson 6: from rung 7 to cuBLAS (Hopper only), one idea per rung, one file each
    # (kernels/hopper_rungNN_sm90a.cu); each kernel's comment gives the
    # reasoning behind its predicted gain.
    _hopper_rung(8, "hopper_b_rowmajor", "B read as stored (wgmma transpose bit)", 1.3, threads=256),
    _hopper_rung(9, "hopper_warp_specialized", "warp specialisation: producer + 2 consumers, mbarrier ring", 1.2),
    _hopper_rung(10, "hopper_persistent", "persistent grid, tile scheduler (plain order)", 1.04, persistent=True),
    _hopper_rung(11, "hopper_grouped", "L2-aware tile order (groups of 8 tile rows)", 1.02, persistent=True),
    _hopper_rung(12, "hopper_cluster", "2-CTA clusters, TMA multicast of B", 1.03, persistent=True, cluster=(2, 1, 1)),
    _hopper_rung(13, "hopper_tma_store", "epilogue through shared memory + TMA store", 1.02, persistent=True,
                 cluster=(2, 1, 1), c_box=(64, 32), dyn_smem=HOPPER_STORE_SMEM),
    # Rungs 14-16: like for like with cupy.matmul, which writes FP16 C, and the shapes with fewer tiles than SMs.
    _hopper_rung(14, "hopper_fp16_store", "FP16 C: cvt + stmatrix + TMA store", 1.03, output="fp16",
                 emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1), c_box=(64, 64),
                 dyn_smem=HOPPER_STORE_SMEM),
    _hopper_rung(15, "hopper_split_k", "split-K for problems with fewer tiles than SMs", 0.98, output="fp16",
                 emulate=_fp16_split_h, persistent=True, split_k=True, c_box=(64, 64), dyn_smem=HOPPER_STORE_SMEM),
    _hopper_rung(16, "hopper_tail_split", "split-K for the last, partial wave only (clusters kept)", 0.98,
                 output="fp16", emulate=_fp16_tail_h, persistent=True, cluster=(2, 1, 1), split_k=True,
                 tail_split=True, c_box=(64, 64), dyn_smem=HOPPER_STORE_SMEM),
    # Rungs 17-24: a 64 x 128 tile for skinny problems (M = 128), as cuBLAS runs there; each even rung writes FP32 C.
    # Rungs 19 on: one consumer warpgroup; 21 on: the wait hint (WAIT_HINT); 23 on: descriptors advanced by adds.
    _skinny_rung(17, "hopper_skinny", "a 64 x 128 tile for skinny problems (8 stages, no split)", 0.6, output="fp16",
                 emulate=_fp16_fp32acc_h, c_box=(64, 64)),
    _skinny_rung(18, "hopper_skinny_f32c", "the skinny tile writing FP32 C (rung 13's epilogue)", 0.98),
    _skinny_rung(19, "hopper_skinny_one", "one consumer warpgroup on the skinny tile (m64n128k16)", 1.0, threads=256,
                 output="fp16", emulate=_fp16_fp32acc_h, c_box=(64, 64), base=17),
    _skinny_rung(20, "hopper_skinny_one_f32c", "rung 19 writing FP32 C (rung 13's epilogue)", 0.98, threads=256),
    _skinny_rung(21, "hopper_skinny_hint", "rung 19 waiting with a suspend-time hint (try_wait, 10 ms)", 1.05,
                 threads=256, output="fp16", emulate=_fp16_fp32acc_h, c_box=(64, 64), base=19),
    _skinny_rung(22, "hopper_skinny_hint_f32c", "rung 20 waiting with the hint (rung 21 writing FP32 C)", 1.05,
                 threads=256, base=20),
    _skinny_rung(23, "hopper_skinny_desc", "rung 21 with descriptors built once and advanced by adds", 1.03,
                 threads=256, output="fp16", emulate=_fp16_fp32acc_h, c_box=(64, 64), base=21),
    _skinny_rung(24, "hopper_skinny_desc_f32c", "rung 22 with added descriptors (rung 23 writing FP32 C)", 1.03,
                 threads=256, base=22),
    # Rungs 25-26: rungs 14 and 13 in clusters of 4 where rows start inside a 128-byte line (quad_choice); rungs
    # 29-30: cuBLAS's orientation, a 160 x 256 tile computed as C^T, where the wave model says it pays.
    _hopper_rung(25, "hopper_quad_cluster", "clusters of 4 where rows start inside a line (chosen per shape)", 1.0,
                 output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(4, 1, 1), c_box=(64, 64),
                 dyn_smem=HOPPER_STORE_SMEM, base=14, per_shape="cluster"),
    _hopper_rung(26, "hopper_quad_cluster_f32c", "rung 25 writing FP32 C (rung 13 with clusters of 4 by shape)", 1.0,
                 persistent=True, cluster=(4, 1, 1), c_box=(64, 32), dyn_smem=HOPPER_STORE_SMEM, base=13,
                 per_shape="cluster"),
    _hopper_rung(29, "hopper_ct_tile", "cuBLAS's orientation: a 160 x 256 tile computed as C^T (chosen per shape)",
                 1.0, output="fp16", emulate=_fp16_fp32acc_h, persistent=True, cluster=(2, 1, 1),
                 block_tile=(CT_M, 256), tma_boxes=((CT_M, 64), (64, 64)), c_box=(32, 64), dyn_smem=ct_smem(), base=25,
                 per_shape="orientation"),
    _hopper_rung(30, "hopper_ct_tile_f32c", "rung 29 writing FP32 C (rung 26 where its own tile is built)", 1.0,
                 persistent=True, cluster=(2, 1, 1), block_tile=(CT_M, 256), tma_boxes=((CT_M, 64), (64, 64)),
                 c_box=(16, 32), dyn_smem=ct_smem(), base=26, per_shape="orientation"),
])

ALL_RUNGS: dict[int, GemmKernel] = {k.rung: k for k in sorted((k for k in KERNELS.values() if k.rung is not None),
                                                              key=lambda k: k.rung)}
RUNGS: dict[int, GemmKernel] = {r: k for r, k in ALL_RUNGS.items() if k.lesson == 5}         # lesson 5's ladder
HOPPER_RUNGS: dict[int, GemmKernel] = {r: k for r, k in ALL_RUNGS.items() if k.lesson == 6}  # lesson 6's new rungs

# Rungs outside the ladder, which no lesson, experiment or record shows: the lab registers its own here
# (lab/labkit/rungs.py) so that its probes reach them through rung_entry.
PENDING: dict[int, GemmKernel] = {}


def rung_entry(k: int) -> GemmKernel:
    """Rung k's entry: the registry's, or one outside the ladder (PENDING)."""
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
