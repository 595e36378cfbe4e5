"""Lesson 6 exercises: the register budget setmaxnreg shares out, the bytes a stage's mbarrier expects,
and the waves of a persistent grid.

Each checker computes the expected answer itself (from the tile sizes in helpers.kernels and the
Hopper limits) and prints one verdict line ("Not answered yet", "Correct.", or "Not quite" with a
hint); see helpers/exercises/__init__.py.
"""
from __future__ import annotations

import math

from . import check_number, checker

REG_FILE = 65536          # 32-bit registers per SM (compute capability 9.0)
THREADS = 384             # one producer and two consumer warpgroups: __launch_bounds__(384, 1)
# setmaxnreg moves registers inside the CTA's own pool: what the launch gave it, 168 per thread (65536 / 384
# rounded down to setmaxnreg's unit of 8) times 384 threads = 64,512, not the SM's 65,536. A split that asks
# for more than the pool makes setmaxnreg.inc wait forever.
CTA_POOL = REG_FILE // THREADS // 8 * 8 * THREADS


def consumer_registers(producer: int = 40, consumers: int = 2, pool: int = CTA_POOL) -> int:
    """The most registers per thread two (or `consumers`) consumer warpgroups can take with setmaxnreg.inc
    when the producer warpgroup keeps `producer`: what is left of the CTA's pool, in multiples of 8
    (kernels/hopper_sm90a.cu's CONSUMER_REGS)."""
    return (pool - 128 * producer) // (128 * consumers) // 8 * 8


def stage_bytes(N: int, tn: int, a_in: bool = True, bm: int = 128, bn: int = 256, bk: int = 64, box_n: int = 64) -> int:
    """Bytes TMA delivers to one stage of tile column tn (kernels/hopper_sm90a.cu: A's box unless the tile
    lies below M, and each 64-column box of B that starts left of N)."""
    boxes = min(bn // box_n, math.ceil((N - tn * bn) / box_n))
    return (bm * bk * 2 if a_in else 0) + boxes * bk * box_n * 2


def waves(M: int, N: int | None = None, sms: int = 132, bm: int = 128, bn: int = 256) -> tuple[int, float]:
    """(waves, busy fraction) of a persistent grid of `sms` CTAs over the tiles of an M x N output (N
    defaults to M)."""
    tiles = math.ceil(M / bm) * math.ceil((M if N is None else N) / bn)
    w = math.ceil(tiles / sms)
    return w, tiles / (w * sms)


@checker
def check_consumer_registers(answer, producer: int = 40) -> None:
    check_number(f"registers per consumer thread (producer keeps {producer})", answer, consumer_registers(producer),
                 hint="the CTA's pool is 168 registers x 384 threads = 64512 (what the launch gave it, not the "
                      "SM's 65536); the producer warpgroup keeps 128 x its count; the two consumer warpgroups "
                      "(256 threads) share the rest; setmaxnreg takes multiples of 8.")


@checker
def check_stage_bytes(answer, N: int = 520, tn: int = 2) -> None:
    check_number(f"bytes expected per stage, N = {N}, tile column {tn}", answer, stage_bytes(N, tn),
                 hint="A's box is 128 x 64 halves; B comes in boxes of 64 k-rows x 64 columns, and only boxes "
                      "that start left of N are loaded (TMA fills the rest of a box that crosses N with zeros).")


@checker
def check_waves(answer, n: int = 4096) -> None:
    check_number(f"waves of 132 CTAs at n = {n}", answer, waves(n)[0],
                 hint="tiles = (n / 128) x (n / 256); each of the 132 CTAs takes one tile per wave.")
