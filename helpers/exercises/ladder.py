"""Lesson 5 exercises: a block tile's traffic, a pipeline's shared memory, blocks per SM, and rung 5 with fewer
stages (predict, edit, run, compare: live on a GPU, against the recorded knob sweep elsewhere); and the reveals of
the learner's guesses, each judged against the record (reveal_gain for a rung, reveal_knob for a knob's value).
"""
from __future__ import annotations

import re

from . import check_number, checker
from ..analysis import tile_traffic_bytes
from ..kernels import PIPE_SMEM, ladder_smem_bytes


@checker
def check_tile_traffic(answer, bm: int = 128, bn: int = 256, n: int = 4096) -> None:
    """Bytes the blocks request for an n^3 GEMM with a bm x bn block tile (FP16 in, FP32 out)."""
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
    """Resident blocks per SM, limited by registers and shared memory (H100/H200 limits, 1 KB reserved per
    block)."""
    by_regs = reg_file // (regs * threads)
    by_smem = smem_per_sm // (smem + 1024)
    check_number("blocks per SM", answer, min(by_regs, by_smem, 32), rel=1e-9,
                 hint="registers: 65536 per SM / (registers per thread x threads); shared memory: "
                      "228 KB per SM / (bytes per block + 1 KB reserved); the smaller wins.")


# --------------------------------------------------------------------------- the knobs, recorded and live
def recorded_knob(rung: int, knob: str | None = None) -> tuple[list[dict], str]:
    """(rows, label): the recorded ``knobs`` rows of `rung`, the rung as recorded first, then the values of
    `knob` (all knobs when None) in order; ([], why) without a recording."""
    from ..kernels import ALL_RUNGS
    from ..tryout import recorded_sweep

    rows, label = recorded_sweep(ALL_RUNGS[rung], {knob: None} if knob else None)
    if not rows:
        return [], label
    rows = sorted(rows, key=lambda r: (r.get("knob") is not None, str(r.get("knob") or ""), r.get("value") or 0))
    return rows, label


def _speed_range(row: dict, default: dict) -> tuple[float, float, float]:
    """(speed, low, high) of `row` over `default`: the ratio of their median times and its p10-p90 spread."""
    speed = default["ms"] / row["ms"]
    lo = default.get("p10_ms", default["ms"]) / row.get("p90_ms", row["ms"])
    hi = default.get("p90_ms", default["ms"]) / row.get("p10_ms", row["ms"])
    return speed, min(lo, speed), max(hi, speed)


STAGES_TOL = 0.05       # a prediction may miss the measured p10-p90 range of the speed by this much


@checker
def check_stages_prediction(prediction, source=None, stages: int = 2) -> None:
    """Predict, edit, run, compare: `prediction` is the speed of rung 5 with `stages` stages as a fraction of
    rung 5 as recorded (0.5 = half as fast); `source` the learner's edit of kernels/ladder.cu, or None for
    the STAGES knob. On a GPU that runs rung 5 it is tried live (helpers.try_kernel), elsewhere compared with
    the recorded knob sweep; right within STAGES_TOL of the p10-p90 range of the speed."""
    from .. import tryout
    from ..device import backend
    from ..kernels import ALL_RUNGS
    from . import _report, number_answer

    spec = ALL_RUNGS[5]
    name = f"rung 5 with STAGES={stages}"
    p = number_answer(name, prediction, "your predicted speed as a fraction of rung 5 as recorded (a number, "
                                        "e.g. 0.5 for half as fast)")
    if p is None:
        return
    tryout.validate_knobs(spec, {"STAGES": stages})          # an allowed value (else "Not accepted")
    if source is not None:
        tryout._check_source(spec, source)
        if source == tryout.source_of(spec):
            _report(name, p, False, "your source is kernels/ladder.cu unchanged: in the cell, change the new "
                                    "text of source_of(5, replace={...}) (the second string) from `#define STAGES 4` "
                                    f"to `#define STAGES {stages}`, and leave the file itself as it is.")
            return
    b = backend()
    runs_here = b.is_gpu and tryout.variant_entry(spec, tryout.validate_knobs(spec, {"STAGES": stages})[1]) \
        .skip_message(b.gpu.cc) is None
    if runs_here:
        r = tryout.try_kernel(spec.name, source=source) if source is not None else \
            tryout.try_kernel(spec.name, STAGES=stages)
        if not r.live:                                      # this GPU could not run it after all
            print(f"[{name}] {r.message}")
        elif not r.passed:
            _report(name, p, False, f"your kernel does not pass the check, so there is no speed to compare: "
                                    f"{r.verdict[:300]}")
            return
        else:
            v, o = r.timing["variant"], r.timing["original"]
            speed, lo, hi = _speed_range(v, o)
            _judge(f"{name}, measured {speed:.2f}x", p, speed, lo, hi, "live")
            return
    elif source is not None:
        m = re.search(r"^#define\s+STAGES\s+(\d+)", source, re.M)
        if m and int(m.group(1)) != stages and int(m.group(1)) in tryout.KNOBS[5]["STAGES"].allowed({}):
            stages, name = int(m.group(1)), f"rung 5 with STAGES={m.group(1)}"
    rows, label = recorded_knob(5, "STAGES")
    if source is not None and not runs_here:
        where = "This GPU cannot run rung 5" if b.is_gpu else "No GPU here"
        print(f"[{name}] {where}, so your edited kernel cannot be compiled or run: your prediction is "
              f"compared with the recorded STAGES={stages} run ({label}) instead.")
    default = next((r for r in rows if r.get("knob") is None), None)
    row = default if stages == tryout.KNOBS[5]["STAGES"].default_for({}) else \
        next((r for r in rows if r.get("knob") == "STAGES" and r.get("value") == stages and r.get("ms")), None)
    if default is None or row is None:
        print(f"[{name}] There is no recorded STAGES={stages} run to compare with ({label}).")
        return
    speed, lo, hi = _speed_range(row, default)
    _judge(f"{name}, recorded {speed:.2f}x", p, speed, lo, hi, "recorded")


def _judge(name: str, p: float, speed: float, lo: float, hi: float, how: str) -> None:
    from . import _report

    ok = lo - STAGES_TOL <= p <= hi + STAGES_TOL
    way = "slower" if p < lo else "faster"
    _report(name, p, ok, f"you predicted {p:.2f}x; the {how} run went at {speed:.2f}x (p10-p90 {lo:.2f}-{hi:.2f}), "
                         f"so it was not as much {way} as you thought: how many copies must be in flight to hide "
                         "their latency (rung 5's pipeline picture)?")


# --------------------------------------------------------------------------- the reveals of the learner's guesses
GUESS_WITHIN = 1.05     # a guess within 5% of the recorded ratio, either way, counts as right (lessons 5 and 6)


@checker
def reveal_gain(guess, rung: int, n: int = 4096) -> None:
    """Prediction: rung `rung`'s speed-up over the rung before it at n^3, as recorded (the ``ladder`` experiment,
    helpers.experiments.ladder.rung_gain); right within GUESS_WITHIN either way."""
    from ..experiments.ladder import rung_gain
    from ..results import load_latest

    rec = load_latest()
    judge_gain(guess, rung, rung_gain(rec.meta["experiments"]["ladder"], rung, n), rec.label)


def judge_gain(guess, rung: int, g: dict, label: str) -> None:
    """A guess of rung `rung`'s speed-up judged against its recorded gain `g` (a rung_gain of lesson 5 or 6), right
    within GUESS_WITHIN either way; says what was measured, its spread and the lesson's own prediction."""
    from . import judge_guess

    judge_guess(f"rung {rung}", guess, g["measured"], within=GUESS_WITHIN, fmt=".2f",
                what=f"{label}: rung {rung} over rung {g['over']} at {g['shape']}, the median launch's gain "
                     f"(p10-p90: {g['low']:.2f} to {g['high']:.2f}; the prediction was {g['predicted']:g})")


@checker
def reveal_knob(guess, rung: int, knob: str, value: int) -> None:
    """Prediction: the speed of rung `rung` with `knob`=`value` over the rung as recorded (the ``knobs``
    experiment at 4096^3); right within GUESS_WITHIN either way."""
    from . import judge_guess

    rows, label = recorded_knob(rung, knob)
    default = next((r for r in rows if r.get("knob") is None), None)
    row = next((r for r in rows if r.get("knob") == knob and r.get("value") == value and r.get("ms")), None)
    if default is None or row is None:
        raise LookupError(f"the record has no run of rung {rung} with {knob}={value} ({label})")
    speed, lo, hi = _speed_range(row, default)
    judge_guess(f"rung {rung}, {knob}={value}", guess, speed, within=GUESS_WITHIN, fmt=".2f",
                what=f"{label}: rung {rung} with {knob}={value} over the rung as it is, the median launch's "
                     f"ratio (p10-p90: {lo:.2f} to {hi:.2f})")
