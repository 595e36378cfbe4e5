"""Lesson 7 exercises: reading E4M3 from its bits, what a cast does past the largest number, and the
scale that per-tensor scaling picks and the small values it loses.

Each checker computes the expected answer itself (from ml_dtypes through helpers.fp8) and prints one
verdict line ("Not answered yet", "Correct.", or "Not quite" with a hint); see
helpers/exercises/__init__.py. None of them raises, whatever the answer's type.
"""
from __future__ import annotations

import math

from . import _report, _short, as_number, check_number, checker, not_a_number
from .. import fp8


def e4m3_max() -> float:
    """The largest E4M3 number, decoded from its bits S.1111.110 with bias 7."""
    f = fp8.facts("fp8_e4m3")
    exponent = 2 ** f.exp_bits - 1 - f.bias                 # all-ones exponent field: it holds numbers in E4M3
    fraction = (2 ** f.frac_bits - 2) / 2 ** f.frac_bits    # 110: the all-ones fraction is NaN
    return (1 + fraction) * 2.0 ** exponent


def per_tensor_scale(amax: float, fmt: str = "fp8_e4m3") -> float:
    """The scale that maps amax onto the format's largest number."""
    return fp8.amax_scale(amax, fmt)


def zero_threshold(amax: float, fmt: str = "fp8_e4m3") -> float:
    """With per-tensor scaling for a tensor whose largest magnitude is amax: the magnitude at and below
    which a value becomes 0 (half the smallest subnormal after scaling; the tie rounds to 0, the even one)."""
    f = fp8.facts(fmt)
    return f.smallest_subnormal / 2 / per_tensor_scale(amax, fmt)


def cast_result(value: float, fmt: str, saturate: bool) -> float:
    import numpy as np

    conv = fp8.saturating_cast if saturate else fp8.cast
    return float(conv(np.array([value], dtype=np.float64), fmt)[0])


@checker
def check_e4m3_max(answer) -> None:
    check_number("largest E4M3 number", answer, fp8.facts("fp8_e4m3").max, rel=0,
                 hint="its bits are S.1111.110: exponent field 15 minus the bias 7, fraction 1.110 in binary "
                      "(1 + 6/8). E4M3 keeps the all-ones exponent for numbers; only S.1111.111 is NaN.")


@checker
def check_cast(answer, value: float = 500.0, fmt: str = "fp8_e4m3", saturate: bool = False) -> None:
    """What `value` becomes in `fmt`: numpy's cast (saturate=False) or the GPU's cvt .satfinite (True).
    Answers may be numbers, float('nan'), float('inf') or -float('inf')."""
    how = "the GPU's cvt.rn.satfinite" if saturate else "numpy's cast (ml_dtypes)"
    name = f"{value:g} -> {fmt}, {how}"
    if answer is None or answer is Ellipsis:
        _report(name, answer, False, "")
        return
    a = as_number(answer)
    if a is None:
        not_a_number(name, answer, "a number: a value, float('nan') or float('inf')")
        return
    want = cast_result(value, fmt, saturate)
    ok = (math.isnan(a) and math.isnan(want)) or a == want
    f = fp8.facts(fmt)
    if abs(value) <= f.max:
        hint = (f"{value:g} lies inside {fmt}'s range (largest {f.max:g}): both conversions round it to the nearest "
                f"{fmt} number, ties to even; fp8.patterns('{fmt}') lists them all.")
    elif saturate:
        hint = (f"{value:g} is larger than {fmt}'s largest number, {f.max:g}. .satfinite turns anything larger "
                "than the largest finite number into that number, keeping the sign.")
    elif abs(value) <= f.midpoint:
        hint = (f"{value:g} is past {f.max:g} but not past {f.max:g} + half a spacing = {f.midpoint:g}: "
                "numpy's cast rounds it to the nearest number, as it would any other value.")
    else:
        hint = (f"{value:g} is past {f.max:g} + half a spacing = {f.midpoint:g}, where rounding to nearest leaves "
                f"the finite numbers; numpy then gives {f.overflow_to}"
                + (" (E4M3 has no infinity)." if not f.inf_patterns else "."))
    _report(name, answer, ok, hint)


@checker
def check_scale(answer, amax: float = 1000.0, fmt: str = "fp8_e4m3") -> None:
    check_number(f"per-tensor scale for amax = {amax:g} ({fmt})", answer, per_tensor_scale(amax, fmt), rel=1e-9,
                 hint=f"the scale multiplies the data before the cast, so amax x scale must equal "
                      f"{fp8.facts(fmt).max:g}, the largest {fmt} number.")


@checker
def check_zero_threshold(answer, amax: float = 1e4, fmt: str = "fp8_e4m3") -> None:
    f = fp8.facts(fmt)
    check_number(f"values lost to zero, amax = {amax:g} ({fmt})", answer, zero_threshold(amax, fmt), rel=1e-6,
                 hint=f"after scaling by {f.max:g} / {amax:g}, a value rounds to 0 when it is at most half the "
                      f"smallest subnormal, {f.smallest_subnormal:g} / 2; divide that by the scale.")


def demo_values() -> dict:
    """The answers, for an instructor (all computed)."""
    return {"largest E4M3": e4m3_max(), "500 -> E4M3, numpy": cast_result(500.0, "fp8_e4m3", False),
            "500 -> E4M3, satfinite": cast_result(500.0, "fp8_e4m3", True),
            "scale for amax 1000": per_tensor_scale(1000.0), "zero below, amax 1e4": zero_threshold(1e4)}


# --------------------------------------------------------------------------- the measured half
def wgmma_sum(a, b, c: float = 0.0) -> float:
    """One block of FP8 wgmma (lesson 7's fitted model): c plus the products a_k b_k (at most 32),
    each term cut to the 14 bits that start at the largest term's leading bit, the sum cut to 14 significant bits."""
    import numpy as np

    from ..emulate import FP8_WGMMA_MODEL, tensor_core_mma

    a = np.asarray(a, dtype=np.float64).reshape(1, -1)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 1)
    return float(tensor_core_mma(a, b, np.array([[c]]), inputs="fp8_e4m3", acc="fp32", model=FP8_WGMMA_MODEL)[0, 0])


@checker
def check_bits_kept(answer, data: dict) -> None:
    """How many bits, counted from the large term's leading bit (that bit included), does wgmma keep (from the
    recorded probes)?"""
    from ..experiments.fp8 import bits_kept

    if not isinstance(data, dict) or not isinstance(data.get("probes"), dict):
        _report("bits wgmma keeps next to a large term", answer, False,
                f"`data` ({type(data).__name__} {_short(data)}) is not the recorded fp8 experiment: set "
                "data = rec.meta['experiments']['fp8'] (the cell near the top of this section) and run this again.")
        return
    check_number("bits wgmma keeps next to a large term", answer, bits_kept(data, "fp8_wgmma"), rel=0,
                 hint="find the first gap g at which the fp8_wgmma column drops the small term to 0: "
                      "the terms 2^16 ... 2^(16-g+1) survived, that is g bits.")


@checker
def check_swamped_sum(answer) -> None:
    """2^16 plus 31 terms of 2^2 = 4, in one wgmma block of 32 products: what does the accumulator hold?"""
    expected = wgmma_sum([256.0] + [2.0] * 31, [256.0] + [2.0] * 31)
    check_number("2^16 + 31 x 4 in one block of wgmma", answer, expected, rel=0,
                 hint="each 4 = 2^2 lies 14 bits below 2^16, one bit past the 14 kept: every one of them is cut "
                      "to 0 before the sum, however many there are.")
