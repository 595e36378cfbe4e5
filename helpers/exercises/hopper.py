"""Lesson 6 exercises: the register budget setmaxnreg shares out, the bytes a stage's mbarrier expects, the waves of
a persistent grid, and one that edits a kernel (check_ring_edit). Each checker computes the expected answer itself
and prints one verdict line (helpers/exercises/__init__.py).
"""
from __future__ import annotations

import math

from . import _report, as_number, check_number, checker, number_answer

REG_FILE = 65536          # 32-bit registers per SM (compute capability 9.0)
THREADS = 384             # one producer and two consumer warpgroups: __launch_bounds__(384, 1)
# setmaxnreg moves registers inside the CTA's own pool: what the launch gave it, 168 per thread (65536 / 384
# rounded down to setmaxnreg's unit of 8) times 384 threads = 64,512, not the SM's 65,536. A split that asks
# for more than the pool makes setmaxnreg.inc wait forever.
CTA_POOL = REG_FILE // THREADS // 8 * 8 * THREADS


def consumer_registers(producer: int = 40, consumers: int = 2, pool: int = CTA_POOL) -> int:
    """The most registers per thread the consumer warpgroups can take with setmaxnreg.inc when the producer keeps
    `producer`: what is left of the CTA's pool, in multiples of 8 (the kernel's CONSUMER_REGS)."""
    return (pool - 128 * producer) // (128 * consumers) // 8 * 8


def stage_bytes(N: int, tn: int, a_in: bool = True, bm: int = 128, bn: int = 256, bk: int = 64, box_n: int = 64) -> int:
    """Bytes TMA delivers to one stage of tile column tn: A's box (unless the tile lies below M) and each 64-column
    box of B that starts left of N."""
    boxes = min(bn // box_n, math.ceil((N - tn * bn) / box_n))
    return (bm * bk * 2 if a_in else 0) + boxes * bk * box_n * 2


def waves(M: int, N: int | None = None, sms: int = 132, bm: int = 128, bn: int = 256) -> tuple[int, float]:
    """(waves, busy fraction) of a persistent grid of `sms` CTAs over the tiles of an M x N output (N: M)."""
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


# --------------------------------------------------------------------------- an exercise that edits a kernel
EDIT_TOLERANCE = 0.10     # a prediction within 10% of the measured ratio counts as right


def recorded_ratio(like=11, knob: str = "STAGES", value: int = 2) -> tuple[float, float, float, str]:
    """(ratio, low, high, label): the variant's recorded speed over the rung's (the ``knobs`` experiment), the spread
    both p10-p90 timings allow, and the record's label."""
    from ..kernels import lookup
    from ..tryout import recorded_sweep

    spec = lookup(like)
    rows, label = recorded_sweep(spec, {knob: value})
    if not rows:
        raise LookupError(f"no recorded sweep of {spec.name} ({label})")
    base = next(r for r in rows if r.get("knob") is None)
    var = next((r for r in rows if r.get("knob") == knob and r.get("value") == value), None)
    if var is None:
        raise LookupError(f"the record has no row of {spec.name} with {knob}={value}")
    return base["ms"] / var["ms"], base["p10_ms"] / var["p90_ms"], base["p90_ms"] / var["p10_ms"], label


def _run_edit(like, edit):
    """The edit (a knob dict or an edited source) tried live with helpers.try_kernel; None where no GPU runs it."""
    from ..device import backend
    from ..tryout import try_kernel

    if not backend().is_gpu:
        return None
    res = try_kernel(like, source=edit, timing_size=4096) if isinstance(edit, str) else try_kernel(like, **edit)
    return res if res.live else None


@checker
def check_ring_edit(prediction, edit=..., like=11, knob: str = "STAGES", value: int = 2) -> None:
    """Exercise: predict the speed of rung `like` with a `value`-stage ring (as a fraction of the rung as recorded),
    make the edit ({knob: value}, or an edited copy of the file), run it: live on a GPU that runs it (a variant that
    fails its check is "Not quite"), elsewhere judged against the recorded sweep."""
    from ..tryout import validate_knobs

    name = f"rung {like}, {knob}={value}"
    if number_answer(name, prediction) is None:          # predict first: nothing runs before a prediction
        return
    if edit is Ellipsis or edit is None:
        _report(name + " (the edit)", None, False, "")
        return
    if isinstance(edit, dict):
        validate_knobs(like, edit)                       # an unknown knob or value: "Not accepted", naming them
        if {str(k).upper(): v for k, v in edit.items()} != {knob: value}:
            _report(name, edit, False, f"this exercise's edit is {{'{knob}': {value}}} (the ring's depth); "
                                       f"you asked for {edit}.")
            return
    elif not isinstance(edit, str):
        raise TypeError(f"edit is {type(edit).__name__}: pass {{'{knob}': {value}}} or an edited source string")
    res = _run_edit(like, edit)
    if res is None:
        ratio, low, high, label = recorded_ratio(like, knob, value)
        print(f"[{name}] The edit cannot run here (no Hopper GPU): your prediction is judged against the sweep of {label}.")
    else:
        if not res.passed:
            why = " ".join((res.verdict or res.stage).split())[:300]
            _report(name, prediction, False, f"your edited kernel did not pass its check ({why}); fix the edit, "
                                             "then predict again.")
            return
        ratio = res.row["vs_original"]
        low = high = ratio
    p = as_number(prediction)
    ok = low <= p <= high or abs(p / ratio - 1) <= EDIT_TOLERANCE
    got = (f"it ran at {ratio:.2f}x the rung as recorded" if res is not None else
           f"the H200 recorded it at {ratio:.2f}x the rung as recorded (p10-p90: {low:.2f} to {high:.2f})")
    _report(name, prediction, ok,
            f"{got}; you said {p:g}. With {value} stages the producer can be only {value - 1} K-tile(s) ahead "
            "of the consumers: does that hide the time a TMA load takes?")
    if ok:
        print(f"[{name}] {got[0].upper()}{got[1:]}.")


@checker
def reveal_gain(guess, rung: int) -> None:
    """Prediction: rung `rung`'s speed-up over the rung before it (rungs 15-16: over rung 14 at their own shape), as
    recorded (helpers.experiments.hopper.rung_gain); right within 5% either way."""
    from ..experiments.hopper import rung_gain
    from ..results import load_latest
    from .ladder import judge_gain

    rec = load_latest()
    judge_gain(guess, rung, rung_gain(rec.meta["experiments"]["hopper"], rung), rec.label)
