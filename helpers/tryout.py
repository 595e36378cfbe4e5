"""Try a changed kernel in one call: compile it, check it, time it beside the original and cuBLAS.

``try_kernel(like, source=None, **knobs)`` takes a registered kernel (a name or a rung number,
helpers.kernels.lookup) and either compile-time knobs for its file (``try_kernel(5, STAGES=2)``:
the file compiled with ``-DSTAGES=2``; ``KNOBS`` below lists the knobs of rungs 2-6 (kernels/ladder.cu)
and 8-15 (kernels/hopper_sm90a.cu), their allowed values, their defaults (the rungs as recorded) and
what each teaches; ``knob_table()`` gives them as rows) or an edited copy of the file (``source=``, a string from a cell; ``source_of``
gives the file's text to start from, ``source_of(like, replace={old: new})`` a copy with a few
lines changed), or both. It

1. validates the knobs before anything is compiled (an unknown knob or value is an InputError that
   names the allowed ones; the same on every backend) and derives the variant's registry entry
   (``variant_entry``: dataclasses.replace of the entry, with the shared memory, the K multiple and
   the cluster the knobs imply);
2. on a GPU that runs it, compiles the variant with NVRTC (helpers.compile, the path lesson 2 uses
   for a learner's WMMA string), launches it with the entry's launch settings (helpers.launch:
   grid, block, shared memory, tensor maps, clusters) on a NaN-poisoned C, checks it with the
   course's check (``spec.check``) at a size that is not a tile multiple (zero-padded), checks and
   times it at ``timing_size`` (CUDA events, cold L2, clocks: helpers.timing) beside the original
   kernel and cuBLAS, timed in the same process on the same matrices; an edited source (and every
   kernel marked ``isolate``) runs in a child process (helpers.isolate), so a fault leaves the
   notebook's GPU context intact;
3. returns a ``TryResult``: ``.row`` (variant, defines, passed, verdict, ms, tflops, vs_original,
   vs_cublas, clocks), shown in a notebook as one table row and one small bar plot. A compile error
   comes back as the readable NVRTC log (the error and its source line), a fault as one verdict, a
   wrong result as the check's verdict and the first wrong block tile; never a CuPy traceback.

Without a GPU, or on one that cannot run the kernel, it says so in one line and shows the sweep of
those knobs recorded by the ``knobs`` experiment (helpers.experiments.knobs), naming the size it was timed at
(and saying so when ``timing_size`` asks for another), or says that no recording exists yet.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import InputError
from .kernels import (ALL_RUNGS, HOPPER_SMEM, HOPPER_STAGE, HOPPER_STORE_SMEM, GemmKernel, ct_smem, ladder_smem_bytes,
                      lookup, skinny_smem, tile_n_smem)

DEFAULT_SIZE = (1000, 1064, 1000)   # (M, N, K) of the check: a multiple of no block tile (128, 256) nor of BK
TIMING_SIZE = 4096
SEED = 2311
# the most dynamic shared memory a block may opt in to on any GPU the course runs (sm_90: 227 KB;
# sm_80 163 KB, sm_86/89 99 KB, sm_75 64 KB: the GPU's own limit is checked before a launch)
MAX_SMEM_OPTIN = 227 * 1024
STATIC_SMEM_LIMIT = 48 * 1024       # static __shared__ arrays may not exceed this
RECORD_FIX = "python -m helpers.record --update-experiments knobs"


# --------------------------------------------------------------------------- the knobs
@dataclass(frozen=True)
class Knob:
    """One compile-time knob of a rung: what try_kernel takes (`name`), the macro it sets in the kernel's
    file (`define`), the allowed values and the default (the rung as recorded; either may depend on the
    other knobs' settings), what changing it teaches, and how it changes the launch settings."""
    name: str
    define: str
    values: tuple | Callable
    default: int | Callable
    teaches: str
    launch: str = ""
    depends: str = ""              # the knob the allowed values depend on (resolved before this one)
    rule: str = ""                 # the allowed values in words, when they depend on it
    forces: bool = False           # given at its default it still changes the build (CT_M: the C^T tile at every size)
    chosen: Callable | None = None  # left out, the launcher chooses per problem: the value a recorded row was built
    #                                 with, read from the row (rungs 25-26's CLUSTER_M: its grid), or None if unknown

    def allowed(self, settings: dict) -> tuple:
        return tuple(self.values(settings) if callable(self.values) else self.values)

    def default_for(self, settings: dict) -> int:
        return int(self.default(settings) if callable(self.default) else self.default)


def _pad(define: str, default: int) -> Knob:
    return Knob("PAD", define, (0, 8, 16), default,
                "halves of padding per shared-memory row: 0 puts 8 rows of a fragment load in the same banks "
                "(4-way conflicts on As, 8-way on Bs), 8 (16 bytes) spreads them over all 32 banks, 16 (32 bytes) "
                "gives 2-way conflicts again (helpers.analysis.pad_options)",
                "shared memory per stage: (BM (BK + PAD) + BK (BN + PAD)) x 2 bytes")


_BK = Knob("BK", "BK", (16, 32, 64), 32,
           "K-depth of a tile: 64 halves the barriers and the loop overhead per K and moves twice the bytes per "
           "copy round; 16 doubles them (the same bytes from global memory either way: BM and BN set the reuse)",
           "K is zero-padded to a multiple of BK (tile_k); shared memory per stage grows with BK")
_STAGES = Knob("STAGES", "STAGES", (2, 3, 4, 5, 6), 4,
               "shared-memory buffers of the cp.async pipeline: STAGES - 1 K-tiles are in flight while one is "
               "multiplied; 2 overlaps one copy with the math, more hide more latency and take more shared memory "
               "(fewer blocks per SM)",
               "dynamic shared memory: STAGES x (BM (BK + PAD) + BK (BN + PAD)) x 2 bytes")
_WAIT = Knob("WAIT_GROUP", "WAIT_GROUP", lambda s: tuple(range(s["STAGES"] - 1)), lambda s: s["STAGES"] - 2,
             "N of cp.async.wait_group N: how many of its newest copy groups a thread leaves in flight when it "
             "waits for K-tile kt; STAGES - 2 waits for tile kt only, 0 drains the pipeline every step (the copies "
             "of later tiles are waited for too); more than STAGES - 2 would read a tile still in flight (refused)",
             depends="STAGES", rule="0 .. STAGES - 2")
_LDMATRIX = Knob("LDMATRIX", "LDMATRIX", (0, 1), 1,
                 "1: ldmatrix.x4 (x4.trans for B) loads four 8x8 matrices per instruction in the fragment layout; "
                 "0: every thread loads its own fragment registers (A: 4 32-bit loads per m16 tile, B: 2 16-bit "
                 "loads per register, along a column of Bs)")

# kernels/hopper_sm90a.cu (lesson 6, sm_90a). Not knobs: the K-tile (HBK = 64 halves is one 128-byte swizzle
# row: the TMA boxes, the descriptors and the swizzle all follow from it), the number of consumer warpgroups
# (two of 64 rows make the 128-row tile), the tile order and the epilogue path (template switches, one per rung).
_HSTAGES = Knob("STAGES", "HSTAGES", (2, 3, 4), 4,
                "stages of the TMA/mbarrier ring (48 KB of shared memory each): with fewer, the producer can run "
                "fewer K-tiles ahead of the Tensor Cores",
                "dynamic shared memory: HSTAGES x 48 KB + 1152 bytes (+ 32 KB of epilogue buffers on rungs 13-15)")
_REGS = Knob("PRODUCER_REGS", "PRODUCER_REGS", (24, 40, 56), 40,
             "registers the producer warpgroup keeps after setmaxnreg.dec; the consumers share the rest of the CTA's "
             "168 x 384 (CONSUMER_REGS = (504 - PRODUCER_REGS) / 2, in steps of 8: 240, 232, 224): at 24 the "
             "producer's own code spills to local memory")
_GROUP11 = Knob("GROUP_M", "GROUP_M", (2, 4, 8, 16), 8,
                "tile rows per group of the L2-aware order: the tiles in flight at one moment span GROUP_M rows of "
                "A tiles and ~132 / GROUP_M columns of B tiles")
_GROUP = dataclasses.replace(_GROUP11, values=lambda s: tuple(g for g in (2, 4, 8, 16) if g % s["CLUSTER_M"] == 0),
                             depends="CLUSTER_M", rule="2, 4, 8 or 16, a multiple of CLUSTER_M")
_CLUSTER = Knob("CLUSTER_M", "CLUSTER_M", (1, 2, 4), 2,
                "CTAs per cluster along M, each loading 4 / CLUSTER_M of the B tile they share and multicasting it "
                "to all; 1: no cluster, every CTA loads all of B",
                "cluster = (CLUSTER_M, 1, 1), or none for 1; the persistent grid is whole clusters")

# rung 17 (hopper_skinny): its ring and cluster have macros of their own, so that rung 14's CLUSTER_M = 4 still builds
_SKINNY_STAGES = Knob("STAGES", "SKINNY_STAGES", (2, 4, 6, 8), 8,
                      "stages of the skinny rungs' ring (17-24) (24 KB each: a 64 x 128 tile's A and B): the K-tiles the producer can "
                      "have in flight; at M = 128, where rung 17 streams B, fewer stages ran slower "
                      "(lab/probes/rung17.py); 8 is the most that fits beside the epilogue buffers",
                      "dynamic shared memory: SKINNY_STAGES x 24 KB + 33920 bytes (epilogue buffers, slack, barriers)")
_SKINNY_CLUSTER = Knob("CLUSTER_M", "SKINNY_CLUSTER", (1, 2), 2,
                       "CTAs per cluster along M sharing the B tile (each loads one of its 2 boxes and multicasts it); "
                       "1: every CTA loads all of B",
                       "cluster = (2, 1, 1), or none for 1")

_SKINNY_WAIT = Knob("WAIT_HINT", "SKINNY_WAIT", (0, 1, 2), 0,
                    "how a thread waits for a stage (kernels/hopper_primitives.cuh, mbar_try): 0 mbarrier.try_wait with "
                    "no time hint: the waiting thread is suspended until the phase completes or a time limit the "
                    "hardware chooses passes, then asks again; 1 try_wait with a suspend-time hint of 10 ms: the same, "
                    "with that limit instead of the hardware's; 2 mbarrier.test_wait, a spin that never suspends. At "
                    "M = 128 a 64 x 128 tile waits twice per 1 MFLOP K-tile, four times as often per FLOP as rung 14's "
                    "tile (lab/probes/wait_hint.py)")

_SKINNY_HINT_WAIT = dataclasses.replace(_SKINNY_WAIT, define="SKINNY_HINT_WAIT", default=1)   # rungs 21-24: set
_SKINNY_DESC = Knob("DESC_ADD", "SKINNY_DESC", (0, 1), 1,
                    "how a consumer names a stage's tiles to wgmma (kernels/hopper_sm90a.cu, ws_gemm's DESC): 1 builds "
                    "the two shared-memory descriptors once and advances them by adding to their address field, as "
                    "cuBLAS's kernel does; 0 rebuilds both from their addresses before every wgmma (mask, shift, OR), "
                    "as rungs 21-22 do")

def _cluster_built(row: dict):
    """The CTAs per cluster a recorded row ran with, from its grid ('66 clusters of 2 (the driver: ...)'), or None."""
    m = re.search(r"clusters of (\d+)", str(row.get("resident") or ""))
    return int(m.group(1)) if m else None


# rungs 25-26: the cluster has a macro of its own (QUAD_CLUSTER), so that rung 14's CLUSTER_M stays as it is
_QUAD = Knob("CLUSTER_M", "QUAD_CLUSTER", (2, 4), 4,
             "CTAs per cluster along M sharing the B tile, each loading 4 / CLUSTER_M of its boxes and multicasting "
             "them: with 4 a CTA asks L2 for 192 box rows per K-tile instead of 256. Left out, the launcher chooses "
             "per problem (helpers.kernels.quad_choice): 4 only where a row starts inside a 128-byte line and "
             "clusters of 4 add no wave, else 2 (rung 14's or 13's build); given, it is used at every size",
             "cluster = (CLUSTER_M, 1, 1); the persistent grid is the whole clusters the driver fits at once, fewer "
             "CTAs in clusters of 4 (helpers.launch.resident_blocks)", chosen=_cluster_built)

_TILE_N = Knob("TILE_N", "TILE_N", (128, 152, 192, 224, 256), 256,
               "columns of the 128-row tile, a multiple of 8 up to 256 (wgmma's widths; here five of them): a narrower "
               "tile makes more, smaller tiles, which can fill the last wave (at 5000^3 152 makes 10 whole waves of 66 "
               "clusters of 2, as cuBLAS's 256 x 152 tiles make 5 of 132), but asks L2 for more box rows per FLOP, and "
               "a width that is no multiple of 64 loads B's last box of 64 columns whole (lesson 6, Appendix D)",
               "dynamic shared memory: HSTAGES x (16 KB of A + 8 KB per box of 64 columns of B) + 33920 bytes; the "
               "launcher's cluster choice counts the waves of this width")

# rungs 29-30: the C^T tile's ring (52 KB a stage: 160 rows of A and 4 boxes of B) and its height, which forces the tile
_CT_STAGES = dataclasses.replace(
    _HSTAGES, teaches="stages of the TMA/mbarrier ring: with fewer, the producer can run fewer K-tiles ahead of the "
    "Tensor Cores (the tall-tile probe: 3 instead of 4 cost 14-16% at 4096^3 and 6144^3); left out, 4",
    launch="dynamic shared memory: STAGES x (CT_M x 128 + 32768) bytes + the 16 KB epilogue + 1152 "
           "(helpers.kernels.ct_smem); where the launcher builds rung 25's (26's) kernel, its 48 KB stages")
_CT_M = Knob("CT_M", "CT_M", lambda s: (128, 160, 192) if s["STAGES"] <= 3 else (128, 160), 160,
             "rows of C per C^T tile, a multiple of 32 (the epilogue's boxes) from 128: 192 makes fewer, taller tiles "
             "(at 5000^3 27 rows of tiles instead of 32) but only 3 stages fit beside the epilogue; 128 is rung 14's "
             "tile and ring computed as C^T (cuBLAS's kernel at 4096^3): the orientation alone, bit-identical and x0.99 "
             "(4096^3) / x1.01 (2048^3) over rung 25 (lab/probes/ct_tile.py --ct-m 128). Left out, the "
             "launcher chooses per problem (helpers.launch.orientation_build): the 160-row C^T tile where the wave "
             "model gives it x1.05 or more over rung 25 (26), else rung 25's (26's) own build; given, the C^T tile is "
             "used at every size (at 4096^3 it wastes a wave: x0.83 measured, forced)",
             "block tile CT_M x 256, A's TMA box CT_M x 64, shared memory per stage CT_M x 128 + 32768 bytes",
             depends="STAGES", rule="128 or 160, or 192 with STAGES 2 or 3", forces=True)

# rung -> {knob name: Knob}, in the order they are resolved (WAIT_GROUP after STAGES, GROUP_M after CLUSTER_M)
KNOBS: dict[int, dict[str, Knob]] = {
    2: {"PAD": _pad("RUNG2_PAD", 0), "BK": _BK},
    3: {"PAD": _pad("SMEM_PAD", 8), "BK": _BK},
    4: {"PAD": _pad("SMEM_PAD", 8), "BK": _BK},
    5: {"PAD": _pad("SMEM_PAD", 8), "BK": _BK, "STAGES": _STAGES, "WAIT_GROUP": _WAIT},
    6: {"PAD": _pad("SMEM_PAD", 8), "BK": _BK, "STAGES": _STAGES, "WAIT_GROUP": _WAIT, "LDMATRIX": _LDMATRIX},
    8: {"STAGES": _HSTAGES},
    9: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS},
    10: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS},
    11: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "GROUP_M": _GROUP11},
    12: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _CLUSTER, "GROUP_M": _GROUP},
    13: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _CLUSTER, "GROUP_M": _GROUP},
    14: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _CLUSTER, "GROUP_M": _GROUP},
    15: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "GROUP_M": _GROUP11},
    # rung 16: CLUSTER_M and GROUP_M decide which tiles form the last wave, and so which are split: its plan and
    # model assume the defaults (helpers.kernels.tail_split_plan), so they are not knobs here
    16: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS},
    17: {"STAGES": _SKINNY_STAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_WAIT},
    18: {"STAGES": _SKINNY_STAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _SKINNY_CLUSTER,       # rung 17's, FP32 C
         "WAIT_HINT": _SKINNY_WAIT},
    # rungs 19-20: rung 17's ring, cluster and wait; 256 threads and no setmaxnreg, so no PRODUCER_REGS
    19: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_WAIT},
    20: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_WAIT},
    # rungs 21-22: rungs 19-20 with the hint set (WAIT_HINT = 0 gives back rungs 19-20)
    21: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_HINT_WAIT},
    22: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_HINT_WAIT},
    # rungs 23-24: rungs 21-22 with added descriptors (DESC_ADD = 0 gives back rungs 21-22)
    23: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_HINT_WAIT, "DESC_ADD": _SKINNY_DESC},
    24: {"STAGES": _SKINNY_STAGES, "CLUSTER_M": _SKINNY_CLUSTER, "WAIT_HINT": _SKINNY_HINT_WAIT, "DESC_ADD": _SKINNY_DESC},
    # rungs 25-26: rungs 14 and 13 with QUAD_CLUSTER (CLUSTER_M = 2 gives them back); GROUP_M a multiple of it; TILE_N
    25: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _QUAD, "GROUP_M": _GROUP, "TILE_N": _TILE_N},
    26: {"STAGES": _HSTAGES, "PRODUCER_REGS": _REGS, "CLUSTER_M": _QUAD, "GROUP_M": _GROUP, "TILE_N": _TILE_N},
    # rungs 29-30: clusters of 2 (GROUP_M any of rung 11's, all multiples of 2); CT_M after STAGES, which bounds it
    29: {"STAGES": _CT_STAGES, "PRODUCER_REGS": _REGS, "GROUP_M": _GROUP11, "CT_M": _CT_M},
    30: {"STAGES": _CT_STAGES, "PRODUCER_REGS": _REGS, "GROUP_M": _GROUP11, "CT_M": _CT_M},
}


def _ladder_launch(spec: GemmKernel, s: dict) -> dict:
    """kernels/ladder.cu: K padded to BK; rungs 2-4 declare their tiles statically, rungs 5-6 ask for
    STAGES of them as dynamic shared memory."""
    out = {"tile_k": s["BK"]}
    if "STAGES" in s:
        out["dyn_smem"] = ladder_smem_bytes(stages=s["STAGES"], pad=s["PAD"], bk=s["BK"])
    else:
        out["smem_static"] = ladder_smem_bytes(stages=1, pad=s["PAD"], bk=s["BK"])
    return out


def _hopper_launch(spec: GemmKernel, s: dict) -> dict:
    """kernels/hopper_sm90a.cu: HSTAGES stages of 48 KB (+ the epilogue's buffers on rungs 13-15), and the
    cluster of rungs 12-13."""
    out = {"dyn_smem": s["STAGES"] * HOPPER_STAGE + (HOPPER_SMEM - 4 * HOPPER_STAGE)
           + (HOPPER_STORE_SMEM - HOPPER_SMEM if spec.c_box else 0)}
    if "CLUSTER_M" in s:
        out["cluster"] = None if s["CLUSTER_M"] == 1 else (s["CLUSTER_M"], 1, 1)
    return out


def _quad_launch(spec: GemmKernel, s: dict) -> dict:
    """Rungs 25-26: rung 14's (13's) stages and cluster, and the tile TILE_N wide: its B boxes per stage (shared memory,
    helpers.kernels.tile_n_smem) and its block tile."""
    return {**_hopper_launch(spec, s), "dyn_smem": tile_n_smem(s["TILE_N"], s["STAGES"]), "block_tile": (128, s["TILE_N"])}


def _ct_launch(spec: GemmKernel, s: dict) -> dict:
    """Rungs 29-30: the C^T tile CT_M x 256, A's box CT_M rows, STAGES stages of it (helpers.kernels.ct_smem). Where
    the launcher builds rung 25's (26's) kernel instead, that rung's own entry for the same options is used
    (entry_for_options, from helpers.launch.orientation_build)."""
    return {"dyn_smem": ct_smem(s["CT_M"], s["STAGES"]), "block_tile": (s["CT_M"], 256),
            "tma_boxes": ((s["CT_M"], 64), (64, 64))}


def _skinny_launch(spec: GemmKernel, s: dict) -> dict:
    """Rung 17: SKINNY_STAGES stages of 24 KB plus the epilogue buffers (helpers.kernels.skinny_smem), and its
    cluster."""
    return {"dyn_smem": skinny_smem(s["STAGES"]), "cluster": None if s["CLUSTER_M"] == 1 else (s["CLUSTER_M"], 1, 1)}


# rung -> f(entry, settings) -> the entry's fields that the settings change
LAUNCH: dict[int, Callable] = {**{r: _ladder_launch for r in (2, 3, 4, 5, 6)},
                               **{r: _hopper_launch for r in (8, 9, 10, 11, 12, 13, 14, 15, 16)},
                               **{r: _skinny_launch for r in range(17, 25)}, 25: _quad_launch, 26: _quad_launch,
                               29: _ct_launch, 30: _ct_launch}


def knob_table(like=None) -> list[dict]:
    """One row per rung and knob (all rungs, or the one `like` names): what try_kernel takes, the macro,
    the allowed values, the default (the rung as recorded), what it teaches, how it changes the launch."""
    rungs = list(KNOBS) if like is None else [_table_rung(lookup(like))]
    rows = []
    for r in rungs:
        defaults = _resolve(ALL_RUNGS[r], {})
        for k in KNOBS[r].values():
            vals = k.allowed(defaults)
            rows.append({"rung": r, "kernel": ALL_RUNGS[r].name, "knob": k.name, "define": k.define,
                         "values": ", ".join(map(str, vals)) + (f" ({k.rule})" if k.rule else ""),
                         "default": k.default_for(defaults) if not callable(k.default) else "STAGES - 2",
                         "teaches": k.teaches, "launch": k.launch or "-"})
    return rows


def _table_rung(spec: GemmKernel) -> int:
    if spec.rung not in KNOBS or ALL_RUNGS[spec.rung] is not spec:
        raise InputError(f"{spec.name} has no knobs; these rungs do: {_knob_list()}.",
                         "pass source= (an edited copy of the file: helpers.tryout.source_of) to change it, or "
                         "choose one of those rungs.")
    return spec.rung


def _knob_list() -> str:
    return "; ".join(f"{r} ({ALL_RUNGS[r].name}): {', '.join(KNOBS[r])}" for r in KNOBS)


def _allowed_text(rung: int) -> str:
    settings = _resolve(ALL_RUNGS[rung], {})
    return "; ".join(f"{k.name} in {{{', '.join(map(str, k.allowed(settings)))}}} (default {k.default_for(settings)})"
                     for k in KNOBS[rung].values())


def _resolve(spec: GemmKernel, given: dict) -> dict:
    """Every knob of the rung set: the given values, the defaults for the rest (no validation)."""
    settings: dict = {}
    for name, k in KNOBS.get(spec.rung, {}).items():
        settings[name] = int(given[name]) if name in given else k.default_for(settings)
    return settings


def validate_knobs(like, knobs: dict) -> tuple[GemmKernel, dict, dict]:
    """(entry, settings, given) for `like` with `knobs`: settings has every knob of the rung (defaults
    filled in), given the ones passed (names upper-cased). InputError for a kernel without knobs, an
    unknown knob, a value not allowed, or shared memory beyond what any GPU allows; before any GPU work."""
    spec = lookup(like)
    given = {str(k).upper(): v for k, v in (knobs or {}).items()}
    if not given:
        return spec, _resolve(spec, {}) if spec.rung in KNOBS and ALL_RUNGS[spec.rung] is spec else {}, {}
    rung = _table_rung(spec)
    table = KNOBS[rung]
    unknown = [k for k in given if k not in table]
    if unknown:
        raise InputError(f"rung {rung} ({spec.name}) has no knob {', '.join(unknown)}; its knobs: "
                         f"{_allowed_text(rung)}.",
                         f"pass one of those, e.g. helpers.try_kernel({spec.name!r}, {next(iter(table))}="
                         f"{table[next(iter(table))].allowed(_resolve(spec, {}))[0]}).")
    settings: dict = {}
    for name, k in table.items():
        if name in given:
            v = given[name]
            allowed = k.allowed(settings)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) not in allowed:
                raise InputError(f"{name}={v!r} is not a value rung {rung} ({spec.name}) allows: {name} is one of "
                                 f"{', '.join(map(str, allowed))} (default {k.default_for(settings)}"
                                 + (f", with {k.depends}={settings[k.depends]}" if k.depends in settings else "")
                                 + ").",
                                 f"pass {name}= one of those integers; {name} teaches: {k.teaches}.")
            settings[name] = int(v)
        else:
            settings[name] = k.default_for(settings)
    entry = variant_entry(spec, settings)
    if entry.dyn_smem > MAX_SMEM_OPTIN or (entry.smem_static or 0) > STATIC_SMEM_LIMIT:
        need, lim = (entry.dyn_smem, MAX_SMEM_OPTIN) if entry.dyn_smem > MAX_SMEM_OPTIN else \
            (entry.smem_static, STATIC_SMEM_LIMIT)
        raise InputError(f"{_knobs_text(given)} gives rung {rung} {need} bytes of shared memory per block; no GPU "
                         f"allows more than {lim}.", "choose fewer STAGES, a smaller BK or less PAD.")
    return spec, settings, {k: int(v) for k, v in given.items()}


def variant_entry(spec: GemmKernel, settings: dict) -> GemmKernel:
    """The registry entry of a variant: `spec` with the launch settings its knobs change (shared memory,
    the K multiple); `spec` itself when nothing changes."""
    if spec.rung not in LAUNCH or not settings:
        return spec
    fields = LAUNCH[spec.rung](spec, settings)
    if all(getattr(spec, f) == v for f, v in fields.items()):
        return spec
    return dataclasses.replace(spec, **fields)


def entry_for_options(spec: GemmKernel, options) -> GemmKernel:
    """Registry entry `spec` as NVRTC builds it with `options`: the -D<macro>=<value> of its own knobs (variant_entry,
    the other knobs at their defaults); `spec` itself when none of them is among the options. The launcher asks this
    when a variant of one rung is built as another's kernel (rungs 29-30 choosing rung 25's (26's) build)."""
    by_define = {k.define: name for name, k in KNOBS.get(spec.rung, {}).items()}
    given = {}
    for o in options:
        m = re.fullmatch(r"-D(\w+)=(-?\d+)", str(o))
        if m and m.group(1) in by_define:
            given[by_define[m.group(1)]] = int(m.group(2))
    return variant_entry(spec, _resolve(spec, given)) if given else spec


def defines(spec: GemmKernel, given: dict) -> dict:
    """{macro: value} that compile the given knobs (-D<macro>=<value>)."""
    table = KNOBS.get(spec.rung, {})
    return {table[k].define: int(v) for k, v in given.items()}


def options(defs: dict) -> tuple:
    """NVRTC options for {macro: value}."""
    return tuple(f"-D{d}={v}" for d, v in defs.items())


def _knobs_text(given: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in given.items())


def defines_text(defs: dict) -> str:
    return " ".join(options(defs))


# --------------------------------------------------------------------------- sources
def source_of(like="ladder_cp_async", replace: dict | None = None) -> str:
    """The text of the file that holds kernel `like` (kernels/<file>), to edit and pass as source=. With
    replace={old: new, ...}, a copy in which each `old` (which must occur exactly once) is replaced."""
    from .compile import KERNEL_DIR

    spec = lookup(like)
    text = (KERNEL_DIR / spec.file).read_text()
    for old, new in (replace or {}).items():
        n = text.count(old)
        if n != 1:
            raise InputError(f"replace: {old[:60]!r} occurs {n} times in {spec.file}, not once.",
                             "give a longer piece of the line (with its neighbours) that occurs exactly once.")
        text = text.replace(old, new)
    return text


def _check_source(spec: GemmKernel, source) -> None:
    if not isinstance(source, str):
        raise InputError(f"source is {type(source).__name__}, not a string of CUDA code.",
                         f"pass the edited file as a string: src = helpers.tryout.source_of({spec.name!r}), then "
                         "change it and pass source=src.")
    if not re.search(r'extern\s+"C"\s+__global__\s+void\s+(__launch_bounds__\([^)]*\)\s+)?' + re.escape(spec.name)
                     + r"\s*\(", source):
        raise InputError(f"source has no kernel {spec.name}: the edited copy must keep "
                         f'extern "C" __global__ void {spec.name}(...), which is launched with {spec.name}\'s settings.',
                         f"start from helpers.tryout.source_of({spec.name!r}) and keep the kernel's name and arguments.")


def _label(spec: GemmKernel, source, given: dict) -> str:
    parts = [spec.name]
    if source is not None:
        parts.append("(your source)")
    if given:
        parts.append(_knobs_text(given))
    if source is None and not given:
        parts.append("(as recorded)")
    return " ".join(parts)


# --------------------------------------------------------------------------- measuring (GPU)
def _inputs(spec: GemmKernel, M: int, N: int, K: int, seed: int):
    import cupy

    rng = cupy.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=cupy.float32)
    B = rng.standard_normal((K, N), dtype=cupy.float32)
    if spec.inputs == "fp16":
        return A.astype(cupy.float16), B.astype(cupy.float16)
    if spec.inputs == "bf16":
        from .formats import to_bf16_bits

        return to_bf16_bits(A), to_bf16_bits(B)
    return A, B


BASELINE_FOR = {"fp16": "cublas_fp16", "fp32": "cublas_fp32", "tf32": "cublas_tf32"}


def _timing_fields(t, flops: float) -> dict:
    return {"ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6), "p90_ms": round(t.p90_ms, 6), "reps": t.n,
            "tflops": round(flops / (t.median_ms * 1e-3) / 1e12, 4), **(t.clocks or {})}


def _pool(timings: list):
    """One Timing from several rounds of the same kernel: all runs, the clocks of every round."""
    from .timing import Timing

    if len(timings) == 1:
        return timings[0]
    cl = [t.clocks for t in timings if t.clocks]
    clocks = {}
    if cl:
        clocks = {"sm_mhz": int(np.median([c["sm_mhz"] for c in cl])), "mem_mhz": int(np.median([c["mem_mhz"] for c in cl])),
                  "sm_mhz_min": min(c["sm_mhz_min"] for c in cl), "power_w": float(np.median([c["power_w"] for c in cl])),
                  "power_w_max": max(c["power_w_max"] for c in cl), "temp_c": max(c["temp_c"] for c in cl),
                  "throttle": sorted({r for c in cl for r in c["throttle"]} - {"none"}) or ["none"],
                  "clock_samples": sum(c["clock_samples"] for c in cl)}
    return Timing(np.concatenate([t.times_ms for t in timings]), timings[0].flops, None, clocks)


def wrong_tiles(C, ref, scale, tol: float, tile: tuple, first=None) -> dict:
    """Where a failed result is wrong, by block tile (blockIdx.y = row // tile rows, blockIdx.x = column
    // tile columns): elements NaN or beyond the tolerance (`tol` |A||B|); `first` (i, j) names one
    when none is (a result the answer-scaled bound or the model rejects). Returns the first wrong
    tile in launch order, its first wrong element and how many tiles hold one."""
    xp = __import__("cupy") if type(C).__module__.startswith("cupy") else np
    C64 = xp.asarray(C, dtype=xp.float64)
    with np.errstate(invalid="ignore"):
        bad = xp.isnan(C64) | (xp.abs(C64 - ref) > tol * scale)
    M, N = C.shape
    tr, tc = tile
    tm, tn = math.ceil(M / tr), math.ceil(N / tc)
    out = {"tiles": tm * tn, "wrong_tiles": None, "first_tile": None, "first_element": None}
    if bool(bad.any()):
        padded = xp.zeros((tm * tr, tn * tc), dtype=bool)
        padded[:M, :N] = bad
        per_tile = padded.reshape(tm, tr, tn, tc).any(axis=(1, 3))
        ti, tj = divmod(int(xp.argmax(per_tile.ravel())), tn)
        block = bad[ti * tr:(ti + 1) * tr, tj * tc:(tj + 1) * tc]
        bi, bj = divmod(int(xp.argmax(block.ravel())), block.shape[1])
        i, j = ti * tr + bi, tj * tc + bj
        out.update(wrong_tiles=int(per_tile.sum()), first_tile=(ti, tj))
    elif first is not None:
        i, j = first
        out.update(first_tile=(i // tr, j // tc))
    else:
        return out
    out["first_element"] = (int(i), int(j), float(C64[i, j]), float(ref[i, j]))
    return out


def tile_text(w: dict, tile: tuple) -> str:
    """'first wrong tile: blockIdx.y = 1, blockIdx.x = 2 (rows 128-255, columns 256-383): C[130, 260] = ...'"""
    if not w.get("first_tile"):
        return ""
    ti, tj = w["first_tile"]
    tr, tc = tile
    s = (f"first wrong block tile: blockIdx.y = {ti}, blockIdx.x = {tj} (rows {ti * tr}-{(ti + 1) * tr - 1}, "
         f"columns {tj * tc}-{(tj + 1) * tc - 1})")
    if w.get("first_element"):
        i, j, got, want = w["first_element"]
        s += f", C[{i}, {j}] = {got:.6g}, expected {want:.6g}"
    if w.get("wrong_tiles") is not None:
        s += f"; {w['wrong_tiles']} of {w['tiles']} tiles wrong"
    return s


def check_variant(entry: GemmKernel, var: dict, A, B, ref=None) -> dict:
    """GPU: one launch of the variant (entry, var = source / options for helpers.launch) on A, B (CuPy),
    zero-padded to its tiles, C poisoned with NaN, checked with the entry's check; a dict with passed,
    verdict, the check's fields, and where it is wrong."""
    import cupy

    from .launch import launcher
    from .numerics import abs_product, reference_gemm

    run, C, (M, N) = launcher(entry, A, B, pad=True, **var)
    run()
    cupy.cuda.get_current_stream().synchronize()
    Cv = C[:M, :N]
    ref = reference_gemm(A, B) if ref is None else ref
    chk = entry.check(Cv, A, B, reference=ref, backend="GPU")
    out = {"passed": bool(chk.passed), "verdict": chk.verdict(), "check": chk.fields(), "size": [M, N, A.shape[1]]}
    if not chk.passed:
        first = chk.first_wrong or chk.model_first
        w = wrong_tiles(Cv, ref, abs_product(A, B), chk.tol.value, entry.block_tile,
                        first=None if first is None else first[:2])
        out.update(wrong=w, where=tile_text(w, entry.block_tile), details=chk.mismatch_summary())
    return out


def _smem_limit() -> int:
    """The most dynamic shared memory a block may opt in to on this GPU (cudaDevAttrMaxSharedMemoryPerBlockOptin)."""
    import cupy

    return int(cupy.cuda.runtime.deviceGetAttribute(97, cupy.cuda.Device().id))


def measure(like, source=None, knobs=None, size=DEFAULT_SIZE, timing_size=TIMING_SIZE, runs: int = 1,
            seed: int = SEED, compare: bool = True) -> dict:
    """GPU, in this process: the variant of `like` (source, knobs) compiled, checked at `size` and, when
    it passes, checked and timed at timing_size^3 (with the original and cuBLAS when `compare`). Returns a
    JSON-serialisable dict (TryResult.from_outcome reads it); 'stage' says how far it got: 'compile'
    (a compile error: 'error' holds the readable log), 'cannot' (this GPU cannot run it), 'launch' (a
    launch failed), 'fault' (the GPU context is lost: the caller must not use CUDA again), 'check' (a
    wrong result), 'done'."""
    import cupy

    from .compile import KernelCompileError
    from .cublas import BASELINES
    from .device import require_gpu
    from .errors import ArchitectureError, CourseError, translate_gpu_error
    from .launch import _variant, kernel_resources, launcher, require_runs_here
    from .numerics import reference_gemm
    from .timing import benchmark, gemm_flops

    spec, settings, given = validate_knobs(like, knobs or {})
    entry = variant_entry(spec, settings)
    defs = defines(spec, given)
    var = _variant(source, options(defs))
    gpu = require_gpu("try_kernel")
    out = {"like": spec.name, "rung": spec.rung, "variant": _label(spec, source, given), "knobs": given,
           "defines": defs, "edited": source is not None, "gpu": gpu.name, "stage": "compile", "passed": False,
           "verdict": "", "error": "", "size": list(size), "timing_size": timing_size, "timing": {}, "resources": {},
           "dyn_smem": entry.dyn_smem, "smem_static": entry.smem_static, "tile_k": entry.tile_k}
    try:
        require_runs_here(entry, gpu)
    except ArchitectureError as exc:
        return dict(out, stage="cannot", verdict=exc.problem)
    if entry.dyn_smem > _smem_limit():
        return dict(out, stage="cannot", verdict=f"{out['variant']} needs {entry.dyn_smem} bytes of shared memory per "
                                                 f"block; this GPU, {gpu.name}, allows {_smem_limit()}.")
    what = out["variant"]
    try:
        try:
            out["resources"] = kernel_resources(entry, **var)        # compiles it
        except KernelCompileError as exc:
            return dict(out, verdict=f"{what} does not compile: {_first_error(exc)}", error=str(exc))
        out["stage"] = "check"
        M, N, K = size
        A, B = _inputs(spec, M, N, K, seed)
        chk = check_variant(entry, var, A, B)
        out["check"] = chk
        if not chk["passed"]:
            return dict(out, verdict=chk["verdict"] + (f"; {chk['where']}" if chk.get("where") else ""),
                        error=chk.get("details", ""))
        if not timing_size:
            return dict(out, stage="done", passed=True, verdict=chk["verdict"])
        n = int(timing_size)
        del A, B
        A, B = _inputs(spec, n, n, n, seed + 1)
        ref = reference_gemm(A, B)
        chk_t = check_variant(entry, var, A, B, ref)
        out["check_timed"] = chk_t
        if not chk_t["passed"]:
            return dict(out, verdict=chk_t["verdict"] + (f"; {chk_t['where']}" if chk_t.get("where") else ""),
                        error=chk_t.get("details", ""))
        del ref
        flops = gemm_flops(n, n, n)
        runs_of = {"variant": launcher(entry, A, B, pad=True, **var)[0]}
        if compare:
            runs_of["original"] = launcher(spec, A, B, pad=True)[0]
            base = BASELINES.get(BASELINE_FOR.get(spec.inputs, ""))
            if base is not None and tuple(gpu.cc) >= tuple(base.min_cc):
                Cc = cupy.empty((n, n), dtype=base.out_dtype)
                runs_of[base.name] = (lambda b=base: b.run(A, B, Cc))
        timed: dict = {k: [] for k in runs_of}
        for _ in range(max(1, int(runs))):
            for k, fn in runs_of.items():          # alternating: drifting clocks touch all of them alike
                timed[k].append(benchmark(fn, flops=flops))
        out["timing"] = {("cublas" if k.startswith("cublas") else k): dict(_timing_fields(_pool(v), flops), name=k)
                         for k, v in timed.items()}
        return dict(out, stage="done", passed=True, verdict=chk["verdict"])
    except CourseError as exc:
        return dict(out, stage="launch", verdict=f"{what}: {exc.problem}", error=str(exc))
    except Exception as exc:                      # a CUDA error in the variant
        err = translate_gpu_error(exc, f"{what}")
        if err is not None and type(err).__name__ == "GPUContextLostError":
            return dict(out, stage="fault", verdict=f"{what} faulted: {type(exc).__name__}: {exc}", error=str(err))
        return dict(out, stage="launch", verdict=f"the launch of {what} failed: {type(exc).__name__}: {exc}",
                    error=str(err or f"{type(exc).__name__}: {exc}"))


def _first_error(exc) -> str:
    """The first error line of a KernelCompileError's readable log."""
    for ln in str(exc).splitlines()[1:]:
        if ": error" in ln or "catastrophic" in ln:
            return ln.strip()
    return str(exc).splitlines()[0]


def measure_json(like, source, knobs, size, timing_size, runs, seed, compare=True) -> dict:
    """The child-process side of try_kernel (helpers.isolate): measure() with JSON arguments, numbers
    made plain for JSON."""
    out = measure(like, source, knobs, tuple(size), timing_size, runs, seed, compare)
    return _plain(out)


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


# --------------------------------------------------------------------------- the result
@dataclass
class TryResult:
    """What try_kernel found: ``row`` (one table row), ``show()`` (the row and a small bar plot)."""
    like: str
    rung: int | None
    variant: str
    knobs: dict
    defines: dict
    live: bool
    stage: str                      # done | check | compile | launch | fault | cannot | no-gpu
    passed: bool | None
    verdict: str
    message: str = ""               # the one line said when nothing was measured here
    error: str = ""                 # the compile log, the fault, the check's mismatch summary
    timing: dict = field(default_factory=dict)      # {'variant'|'original'|'cublas': timing fields}
    resources: dict = field(default_factory=dict)
    recorded: list = field(default_factory=list)    # the recorded sweep shown instead (not live)
    source: str = ""                # where the numbers come from, for the plot's title
    size: tuple = DEFAULT_SIZE
    timing_size: int | None = TIMING_SIZE
    first_wrong_tile: tuple | None = None
    outcome: dict = field(default_factory=dict)

    @classmethod
    def from_outcome(cls, o: dict, source: str) -> "TryResult":
        chk = o.get("check_timed") if o.get("check_timed") and not o["check_timed"].get("passed") else o.get("check")
        tile = (chk or {}).get("wrong", {}).get("first_tile")
        return cls(like=o["like"], rung=o.get("rung"), variant=o["variant"], knobs=dict(o.get("knobs") or {}),
                   defines=dict(o.get("defines") or {}), live=True, stage=o["stage"],
                   passed=bool(o.get("passed")) if o["stage"] in ("done", "check") else False,
                   verdict=o.get("verdict", ""), error=o.get("error", ""), timing=o.get("timing") or {},
                   resources=o.get("resources") or {}, source=source, size=tuple(o.get("size") or DEFAULT_SIZE),
                   timing_size=o.get("timing_size"), first_wrong_tile=tuple(tile) if tile else None, outcome=o)

    @property
    def row(self) -> dict:
        """variant, defines, passed, verdict, ms, tflops, vs_original, vs_cublas, clocks (one table row):
        ms the variant's median at timing_size^3, vs_original / vs_cublas their median ms over the variant's
        (above 1: the variant is faster), clocks the SM clock while the variant was timed."""
        from .clocks import clock_text

        v, o, c = (self.timing.get(k) or {} for k in ("variant", "original", "cublas"))
        ms = v.get("ms")
        return {"variant": self.variant, "defines": defines_text(self.defines), "passed": self.passed,
                "verdict": self.verdict, "ms": ms, "tflops": v.get("tflops"),
                "vs_original": round(o["ms"] / ms, 4) if ms and o.get("ms") else None,
                "vs_cublas": round(c["ms"] / ms, 4) if ms and c.get("ms") else None,
                "clocks": clock_text(v) if v else None}

    # -- showing it
    def lines(self) -> list[str]:
        """What show() prints: the one line (not live), or the table row; then a compile log, a fault or
        the check's details when there is one."""
        if not self.live:
            out = [self.message]
            if self.recorded:
                knob = _shown_knob(self.recorded)
                out += _table([_recorded_cells(r, knob) for r in self.recorded],
                              ["rung", "knob", "value", "check", "ms", "TFLOP/s", "x default", "clocks"])
            return out
        r = self.row
        cells = {"variant": r["variant"], "defines": r["defines"] or "-",
                 "check": {True: "PASS", False: "FAIL"}.get(r["passed"], "-") if self.stage in ("done", "check")
                 else self.stage.upper(),
                 "ms": _fmt(r["ms"], ".4f"), "TFLOP/s": _fmt(r["tflops"], ".1f"),
                 "vs original": _fmt(r["vs_original"], ".3f", "x"), "vs cuBLAS": _fmt(r["vs_cublas"], ".3f", "x"),
                 "clocks": r["clocks"] or "-"}
        out = _table([cells], list(cells))
        out.append(self.verdict)
        if self.error and self.stage != "done":
            out.append(self.error)
        return out

    def show(self, plot: bool = True) -> None:
        """Print the row (or the one line and the recorded sweep) and draw the bar plot."""
        print("\n".join(self.lines()))
        fig = self.figure() if plot else None
        if fig is not None:
            try:
                from IPython import get_ipython
                from IPython.display import display

                if get_ipython() is not None:
                    import matplotlib.pyplot as plt

                    display(fig)
                    plt.close(fig)
            except ImportError:    # pragma: no cover - IPython comes with Jupyter
                pass

    def _ipython_display_(self):
        self.show()

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def figure(self):
        """The bar plot: TFLOP/s of the variant, the original and cuBLAS (p10-p90 whiskers); not live,
        the recorded sweep's values; None when there is nothing to draw."""
        if self.live and self.timing.get("variant"):
            bars = [("original" if k == "original" else ("cuBLAS" if k == "cublas" else "your variant"), t)
                    for k in ("original", "variant", "cublas") for t in [self.timing.get(k)] if t]
            return _bars([(lbl, t["tflops"], _tflops_range(t)) for lbl, t in bars],
                         f"{self.variant} at {self.timing_size}^3 (cold L2)", self.source,
                         highlight="your variant")
        if not self.live and self.recorded:
            timed = [r for r in self.recorded if r.get("tflops")]
            if not timed:
                return None
            knob = _shown_knob(timed)
            items = [(_value_label(r, knob), r["tflops"], _tflops_range(r)) for r in timed]
            n = timed[0].get("m", TIMING_SIZE)
            title = (f"rung {timed[0]['rung']} ({timed[0]['kernel']}): "
                     + (f"{knob}" if knob else "its knobs, one at a time") + f" at {n}^3 (recorded)")
            return _bars(items, title, self.source,
                         highlight=_value_label(next((r for r in timed if r.get("knob") is None), timed[0]), knob))
        return None


def _fmt(v, spec: str, suffix: str = "") -> str:
    return "-" if v is None else f"{format(v, spec)}{suffix}"


def _table(rows: list[dict], cols: list[str]) -> list[str]:
    w = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    return [" | ".join(f"{c:<{w[c]}}" for c in cols), "-+-".join("-" * w[c] for c in cols)] + \
        [" | ".join(f"{str(r.get(c, '')):<{w[c]}}" for c in cols) for r in rows]


def _shown_knob(rows: list[dict]):
    """The one knob a recorded sweep shows (None when it shows several)."""
    knobs = {r.get("knob") for r in rows} - {None}
    return knobs.pop() if len(knobs) == 1 else None


def _forcing(r: dict, knob) -> bool:
    """Whether `knob`, given even at its default, changes the rung's build (CT_M): its recorded row as built then
    did not use the default's value, and shows 'left out'."""
    k = KNOBS.get(r.get("rung"), {}).get(knob) if knob else None
    return bool(k and k.forces)


def _chosen(r: dict, knob) -> str | None:
    """For the row as recorded and a knob the launcher chooses per problem when it is left out (rungs 25-26's
    CLUSTER_M): what it chose for this row's shape ('2, chosen per shape'), not the knob's default; else None."""
    k = KNOBS.get(r.get("rung"), {}).get(knob) if knob else None
    if not (k and k.chosen) or r.get("knob") is not None:
        return None
    v = k.chosen(r)
    return "chosen per shape" if v is None else f"{v}, chosen per shape"


def _value_label(r: dict, knob=None) -> str:
    if r.get("knob") is None:
        if _forcing(r, knob):
            return f"{knob} left out (as recorded)"
        chosen = _chosen(r, knob)
        if chosen:
            return f"{knob}{'=' if chosen[0].isdigit() else ' '}{chosen} (as recorded)"
        v = (r.get("settings") or {}).get(knob)
        return "as recorded" if knob is None or v is None else f"{knob}={v} (as recorded)"
    return f"{r['knob']}={r['value']}"


def _recorded_cells(r: dict, knob=None) -> dict:
    from .clocks import clock_text

    value = r.get("value")
    if r.get("knob") is None and knob is not None:
        value = "left out" if _forcing(r, knob) else _chosen(r, knob) or (r.get("settings") or {}).get(knob)
    return {"rung": r.get("rung"), "knob": r.get("knob") or "(as recorded)",
            "value": "-" if value is None else value,
            "check": "skipped" if r.get("skipped") else ("PASS" if r.get("passed") else "FAIL"),
            "ms": _fmt(r.get("ms"), ".4f"), "TFLOP/s": _fmt(r.get("tflops"), ".1f"),
            "x default": _fmt(r.get("vs_default"), ".3f", "x"), "clocks": clock_text(r) if r.get("ms") else "-"}


def _tflops_range(t: dict):
    if not t.get("p10_ms") or not t.get("p90_ms") or not t.get("tflops") or not t.get("ms"):
        return None
    return t["tflops"] * t["ms"] / t["p90_ms"], t["tflops"] * t["ms"] / t["p10_ms"]


def _bars(items: list, title: str, source: str, highlight: str | None = None):
    """A small horizontal bar plot (helpers.plots style): items [(label, TFLOP/s, (low, high) or None)]."""
    import matplotlib.pyplot as plt

    from .plots import COLORS, apply_style

    apply_style()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.42 * len(items)))
    ys = np.arange(len(items))[::-1]
    for y, (lbl, v, rng) in zip(ys, items):
        color = COLORS[1] if lbl == highlight else COLORS[0] if not lbl.startswith("cuBLAS") else "0.55"
        ax.barh(y, v, color=color, height=0.65)
        if rng:
            ax.plot(rng, [y, y], color="0.15", linewidth=1.4)
        ax.annotate(f"{v:.0f}", (max(v, rng[1]) if rng else v, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=11)
    ax.set_yticks(ys, [i[0] for i in items], fontsize=11)
    ax.set_xlabel("TFLOP/s (median; whiskers p10-p90)")
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, max(max(i[1], i[2][1] if i[2] else 0) for i in items) * 1.15)
    ax.set_title(f"{title}\n{source}", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the recorded sweep
def recorded_sweep(spec: GemmKernel, given: dict | None = None):
    """(rows, label) of the ``knobs`` experiment in the newest record for spec's rung: the default row and
    the rows of the knobs in `given` (all of the rung's knobs when none is given); (None, why) without one."""
    from .errors import ResultsError
    from .results import load_latest

    try:
        rec = load_latest()
    except ResultsError as exc:
        return None, exc.problem
    data = (rec.meta.get("experiments") or {}).get("knobs")
    if not data:
        return None, f"{rec.path.name} has no knobs experiment"
    rows = [r for r in data if r.get("rung") == spec.rung and r.get("kernel") == spec.name]
    if given:
        rows = [r for r in rows if r.get("knob") is None or r.get("knob") in given]
        if rows and not any(r.get("knob") in given for r in rows):    # the rung as recorded alone shows nothing
            return None, f"{rec.path.name} has no rows of {', '.join(given)} for it"
    if not rows:
        return None, f"{rec.path.name} has no rows for it"
    return rows, f"{rec.gpu_name}, recorded {rec.written('knobs')}" if rec.meta["kind"] == "gpu-record" else rec.label


def recorded_sizes(rows: list[dict]) -> list[tuple]:
    """The (M, N, K) shapes the recorded rows were timed at (a row with only ``m`` is m^3), in order."""
    return sorted({(r["m"], r.get("n", r["m"]), r.get("k", r["m"])) for r in rows if r.get("m")})


def _size_text(shape: tuple) -> str:
    return f"{shape[0]}^3" if len(set(shape)) == 1 else " x ".join(map(str, shape))


def _not_here(spec: GemmKernel, source, given: dict, why: str, timing_size: int | None = None) -> TryResult:
    """The result without a measurement: one line (why, and what is shown instead, at the size it was recorded; a
    timing_size it was not recorded at is said so) and the recorded sweep."""
    has = spec.rung in KNOBS and ALL_RUNGS[spec.rung] is spec
    rows, label = recorded_sweep(spec, given) if has else (None, f"{spec.name} has no knobs")
    what = (f"the sweep of {', '.join(given)}" if given else "the knob sweep") + f" of {spec.name}"
    edit = "; an edited source runs only on a GPU" if source is not None else ""
    if rows:
        sizes = recorded_sizes(rows)
        at = f", at {' and '.join(map(_size_text, sizes))}" if sizes else ""
        line = f"{why}{edit}: showing {what} recorded on {label}{at}."
        if sizes and timing_size and (timing_size,) * 3 not in sizes:
            line += f" Not at your timing_size={timing_size}: no sweep was recorded at {timing_size}^3."
    else:
        line = f"{why}{edit}; no recording of {what} exists yet ({label}: `{RECORD_FIX}` on a GPU records it)."
    return TryResult(like=spec.name, rung=spec.rung, variant=_label(spec, source, given), knobs=given,
                     defines=defines(spec, given), live=False, stage="no-gpu", passed=None, verdict="",
                     message=line, recorded=rows or [], source=label if rows else "")


# --------------------------------------------------------------------------- the one call
def try_kernel(like="ladder_cp_async", source: str | None = None, *, size=DEFAULT_SIZE,
               timing_size: int | None = TIMING_SIZE, runs: int = 1, isolate: bool | None = None, seed: int = SEED,
               **knobs) -> TryResult:
    """Compile, check and time a variant of registered kernel `like` (a name or rung number): `source`, an
    edited copy of its file (helpers.tryout.source_of), and/or compile-time knobs (KNOBS: e.g. STAGES=2).
    Checked at `size` (M, N, K; not a tile multiple: zero-padded), then checked and timed at
    timing_size^3 beside the original and cuBLAS (`runs` alternating rounds; timing_size=None: check
    only). isolate: run it in a child process (default: for an edited source and for kernels marked
    isolate), so that a fault cannot take this process's GPU context. See the module docstring."""
    from .device import backend
    from .errors import GPUContextLostError

    spec, settings, given = validate_knobs(like, knobs)
    if source is not None:
        _check_source(spec, source)
    _validate_sizes(size, timing_size, runs)
    b = backend()
    if not b.is_gpu:
        return _not_here(spec, source, given, "no GPU here (CPU backend), so nothing is compiled or timed",
                         timing_size)
    entry = variant_entry(spec, settings)
    why = entry.skip_message(b.gpu.cc)
    if why:
        return _not_here(spec, source, given, why.rstrip("."), timing_size)
    iso = (spec.isolate or source is not None) if isolate is None else bool(isolate)
    from . import isolate as _iso

    args = (spec.name, source, given, list(size), timing_size, runs, seed)
    if iso and not _iso.in_child():
        o = _iso.run_isolated("helpers.tryout:measure_json", *args, timeout=300)
        if "stage" not in o:                  # the child itself failed, hung or was killed
            last = [ln for ln in str(o.get("error", "")).strip().splitlines() if ln.strip()][-3:]
            o = {"like": spec.name, "rung": spec.rung, "variant": _label(spec, source, given), "knobs": given,
                 "defines": defines(spec, given), "stage": "fault",
                 "verdict": f"{_label(spec, source, given)}: its child process failed ({' | '.join(last)[:400]}); "
                            "this notebook's GPU context is intact.", "error": str(o.get("error", ""))}
        elif o["stage"] == "fault":
            o["verdict"] += " (in a child process: this notebook's GPU context is intact)"
        elif o["stage"] == "cannot":
            return _not_here(spec, source, given, o["verdict"].rstrip("."), timing_size)
        return TryResult.from_outcome(o, f"measured live on {b.gpu.name}, in a child process")
    o = measure(spec.name, source, given, tuple(size), timing_size, runs, seed)
    if o["stage"] == "fault":
        from .errors import CONTEXT_LOST_FIX

        raise GPUContextLostError(o["verdict"] + ". The GPU context of this process is lost.", CONTEXT_LOST_FIX)
    if o["stage"] == "cannot":
        return _not_here(spec, source, given, o["verdict"].rstrip("."), timing_size)
    return TryResult.from_outcome(o, f"measured live on {b.gpu.name}")


def _validate_sizes(size, timing_size, runs) -> None:
    if not (isinstance(size, (tuple, list)) and len(size) == 3 and all(isinstance(v, (int, np.integer)) and v >= 1
                                                                      for v in size)):
        raise InputError(f"size={size!r}: the check's size is (M, N, K), three whole numbers >= 1.",
                         "pass e.g. size=(1000, 1064, 1000) (a multiple of no tile: the zero-padding is checked too).")
    if timing_size is not None and not (isinstance(timing_size, (int, np.integer)) and timing_size >= 16):
        raise InputError(f"timing_size={timing_size!r}: the timed size is one whole number n (n^3), at least 16, "
                         "or None.", "pass e.g. timing_size=4096, or timing_size=None to check only.")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise InputError(f"runs={runs!r}: the number of timing rounds is a whole number >= 1.", "pass e.g. runs=3.")
