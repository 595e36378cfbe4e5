"""The compile-time knobs of the ladder's rungs, as data, and the registry entry a setting of them builds.

``KNOBS`` lists the knobs of rungs 2-6 (kernels/ladder.cu) and 8-30 (kernels/hopper_rungNN_sm90a.cu): the macro each
sets,
its allowed values, its default (the rung as recorded) and what changing it teaches (``knob_table()``: as rows).
``validate_knobs`` checks a setting before anything is compiled, and ``variant_entry`` derives the variant's registry
entry (its shared memory, K multiple, cluster and tile). helpers.tryout compiles and times a variant.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import InputError
from .kernels import (ALL_RUNGS, CT_GAIN, HOPPER_SMEM, HOPPER_STAGE, HOPPER_STORE_SMEM, GemmKernel, ct_smem,
                      ladder_smem_bytes, lookup, skinny_smem, tile_n_smem)

# the most dynamic shared memory a block may opt in to on any GPU the course runs (sm_90: 227 KB; a GPU's own,
# lower limit is checked before a launch)
MAX_SMEM_OPTIN = 227 * 1024
STATIC_SMEM_LIMIT = 48 * 1024       # static __shared__ arrays may not exceed this


@dataclass(frozen=True)
class Knob:
    """One compile-time knob of a rung: what try_kernel takes (`name`), the macro it sets (`define`), the allowed
    values and the default (either may depend on the knobs resolved before it), and what changing it teaches."""
    name: str
    define: str
    values: tuple | Callable
    default: int | Callable
    teaches: str
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
                "gives 2-way conflicts again (helpers.analysis.pad_options)")


_BK = Knob("BK", "BK", (16, 32, 64), 32,
           "K-depth of a tile: 64 halves the barriers and the loop overhead per K and moves twice the bytes per "
           "copy round; 16 doubles them (the same bytes from global memory either way: BM and BN set the reuse)")
_STAGES = Knob("STAGES", "STAGES", (2, 3, 4, 5, 6), 4,
               "shared-memory buffers of the cp.async pipeline: STAGES - 1 K-tiles are in flight while one is "
               "multiplied; 2 overlaps one copy with the math, more hide more latency and take more shared memory "
               "(fewer blocks per SM)")
_WAIT = Knob("WAIT_GROUP", "WAIT_GROUP", lambda s: tuple(range(s["STAGES"] - 1)), lambda s: s["STAGES"] - 2,
             "N of cp.async.wait_group N: how many of its newest copy groups a thread leaves in flight when it "
             "waits for K-tile kt; STAGES - 2 waits for tile kt only, 0 drains the pipeline every step (the copies "
             "of later tiles are waited for too); more than STAGES - 2 would read a tile still in flight (refused)",
             depends="STAGES", rule="0 .. STAGES - 2")
_LDMATRIX = Knob("LDMATRIX", "LDMATRIX", (0, 1), 1,
                 "1: ldmatrix.x4 (x4.trans for B) loads four 8x8 matrices per instruction in the fragment layout; "
                 "0: every thread loads its own fragment registers (A: 4 32-bit loads per m16 tile, B: 2 16-bit "
                 "loads per register, along a column of Bs)")

# Lesson 6 (sm_90a): each macro is a knob of every rung file that defines it (kernels/hopper_rungNN_sm90a.cu, rungs
# 8-30). Not knobs: the K-tile (64 halves: one 128-byte swizzle row, which
# the boxes, descriptors and swizzle follow), the two consumer warpgroups, the tile order and the epilogue (what a
# rung's own code does).
_HSTAGES = Knob("STAGES", "HSTAGES", (2, 3, 4), 4,
                "stages of the TMA/mbarrier ring (48 KB of shared memory each): with fewer, the producer can run "
                "fewer K-tiles ahead of the Tensor Cores")
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
                "to all; 1: no cluster, every CTA loads all of B")

# rungs 17-24 (the skinny tile): their ring and cluster have macros of their own, so that rung 14's stay as they are
_SKINNY_STAGES = Knob("STAGES", "SKINNY_STAGES", (2, 4, 6, 8), 8,
                      "stages of the skinny rungs' ring (24 KB each: a 64 x 128 tile's A and B): the K-tiles the "
                      "producer can have in flight; 8 is the most that fits beside the epilogue buffers")
_SKINNY_CLUSTER = Knob("CLUSTER_M", "SKINNY_CLUSTER", (1, 2), 2,
                       "CTAs per cluster along M sharing the B tile (each loads one of its 2 boxes and multicasts it); "
                       "1: every CTA loads all of B")
_SKINNY_WAIT = Knob("WAIT_HINT", "SKINNY_WAIT", (0, 1, 2), 0,
                    "how a thread waits for a stage (kernels/hopper_primitives.cuh, mbar_try): 0 mbarrier.try_wait "
                    "with no time hint (suspended until the phase completes or a time limit the hardware chooses "
                    "passes); 1 try_wait with a suspend-time hint of 10 ms; 2 mbarrier.test_wait, a spin that never "
                    "suspends. A 64 x 128 tile waits four times as often per FLOP as rung 14's")
_SKINNY_HINT_WAIT = dataclasses.replace(_SKINNY_WAIT, define="SKINNY_HINT_WAIT", default=1)   # rungs 21-24: set
_SKINNY_DESC = Knob("DESC_ADD", "SKINNY_DESC", (0, 1), 1,
                    "how a consumer names a stage's tiles to wgmma: 1 builds the two shared-memory descriptors once "
                    "and advances them by adding to their address field, as cuBLAS's kernel does; 0 rebuilds both "
                    "from their addresses before every wgmma, as rungs 21-22 do")


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
             chosen=_cluster_built)
_TILE_N = Knob("TILE_N", "TILE_N", (128, 152, 192, 224, 256), 256,
               "columns of the 128-row tile, a multiple of 8 up to 256 (wgmma's widths; here five of them): a narrower "
               "tile makes more, smaller tiles, which can fill the last wave, but asks L2 for more box rows per FLOP, "
               "and a width that is no multiple of 64 loads B's last box of 64 columns whole")

# rungs 29-30: the C^T tile's ring (CT_M rows of A and 4 boxes of B a stage) and its height, which forces the tile
_CT_STAGES = dataclasses.replace(
    _HSTAGES, teaches="stages of the TMA/mbarrier ring: with fewer, the producer can run fewer K-tiles ahead of the "
    "Tensor Cores")
_CT_M = Knob("CT_M", "CT_M", lambda s: (128, 160, 192) if s["STAGES"] <= 3 else (128, 160), 160,
             "rows of C per C^T tile, a multiple of 32 (the epilogue's boxes) from 128: 192 makes fewer, taller tiles "
             "but only 3 stages fit beside the epilogue; 128 is rung 14's tile and ring computed as C^T (the "
             "orientation alone). Left out, the launcher chooses per problem (helpers.launch.orientation_build): the "
             f"160-row C^T tile where the wave model gives it x{CT_GAIN} or more over rung 25 (26), else rung 25's "
             "(26's) own build; given, the C^T tile is used at every size",
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
    """Rungs 8-16: HSTAGES stages of 48 KB (+ the epilogue's buffers from rung 13 on), and the cluster."""
    out = {"dyn_smem": s["STAGES"] * HOPPER_STAGE + (HOPPER_SMEM - 4 * HOPPER_STAGE)
           + (HOPPER_STORE_SMEM - HOPPER_SMEM if spec.c_box else 0)}
    if "CLUSTER_M" in s:
        out["cluster"] = None if s["CLUSTER_M"] == 1 else (s["CLUSTER_M"], 1, 1)
    return out


def _quad_launch(spec: GemmKernel, s: dict) -> dict:
    """Rungs 25-26: rung 14's (13's) stages and cluster, and the tile TILE_N wide (its shared memory and block tile)."""
    return {**_hopper_launch(spec, s), "dyn_smem": tile_n_smem(s["TILE_N"], s["STAGES"]), "block_tile": (128, s["TILE_N"])}


def _ct_launch(spec: GemmKernel, s: dict) -> dict:
    """Rungs 29-30: the C^T tile CT_M x 256, A's box CT_M rows, STAGES stages of it (helpers.kernels.ct_smem)."""
    return {"dyn_smem": ct_smem(s["CT_M"], s["STAGES"]), "block_tile": (s["CT_M"], 256),
            "tma_boxes": ((s["CT_M"], 64), (64, 64))}


def _skinny_launch(spec: GemmKernel, s: dict) -> dict:
    """Rungs 17-24: SKINNY_STAGES stages of 24 KB plus the epilogue buffers, and their cluster."""
    return {"dyn_smem": skinny_smem(s["STAGES"]), "cluster": None if s["CLUSTER_M"] == 1 else (s["CLUSTER_M"], 1, 1)}


# rung -> f(entry, settings) -> the entry's fields that the settings change
LAUNCH: dict[int, Callable] = {**{r: _ladder_launch for r in (2, 3, 4, 5, 6)},
                               **{r: _hopper_launch for r in (8, 9, 10, 11, 12, 13, 14, 15, 16)},
                               **{r: _skinny_launch for r in range(17, 25)}, 25: _quad_launch, 26: _quad_launch,
                               29: _ct_launch, 30: _ct_launch}


def knob_table(like=None) -> list[dict]:
    """One row per rung and knob (all rungs, or the one `like` names): what try_kernel takes, the macro, the allowed
    values, the default (the rung as recorded) and what it teaches."""
    rungs = list(KNOBS) if like is None else [_table_rung(lookup(like))]
    rows = []
    for r in rungs:
        defaults = _resolve(ALL_RUNGS[r], {})
        for k in KNOBS[r].values():
            vals = k.allowed(defaults)
            rows.append({"rung": r, "kernel": ALL_RUNGS[r].name, "knob": k.name, "define": k.define,
                         "values": ", ".join(map(str, vals)) + (f" ({k.rule})" if k.rule else ""),
                         "default": k.default_for(defaults) if not callable(k.default) else "STAGES - 2",
                         "teaches": k.teaches})
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
    """Registry entry `spec` as NVRTC builds it with `options` (the -D<macro>=<value> of its own knobs, the others at
    their defaults); `spec` itself when none is among them. For a variant built as another rung's kernel."""
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
