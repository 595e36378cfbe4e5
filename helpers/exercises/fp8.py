"""Lesson 7 exercises: E4M3 from its bits, casts past the largest number, per-tensor scaling, the bits
wgmma keeps, and the promotion interval N_C as a knob. Each checker computes its answer itself and prints
one verdict line (helpers/exercises/__init__.py).
"""
from __future__ import annotations

import math

from . import _report, _short, as_number, check_number, checker, not_a_number, number_answer
from .. import fp8


def zero_threshold(amax: float, fmt: str = "fp8_e4m3") -> float:
    """With per-tensor scaling for a tensor whose largest magnitude is amax: the magnitude at and below
    which a value becomes 0 (half the smallest subnormal after scaling; the tie rounds to 0, the even one)."""
    f = fp8.facts(fmt)
    return f.smallest_subnormal / 2 / fp8.amax_scale(amax, fmt)


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
    a = number_answer(name, answer, "a number: a value, float('nan') or float('inf')")
    if a is None:
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
    check_number(f"per-tensor scale for amax = {amax:g} ({fmt})", answer, fp8.amax_scale(amax, fmt), rel=1e-9,
                 hint=f"the scale multiplies the data before the cast, so amax x scale must equal "
                      f"{fp8.facts(fmt).max:g}, the largest {fmt} number.")


@checker
def check_zero_threshold(answer, amax: float = 1e4, fmt: str = "fp8_e4m3") -> None:
    f = fp8.facts(fmt)
    check_number(f"values lost to zero, amax = {amax:g} ({fmt})", answer, zero_threshold(amax, fmt), rel=1e-6,
                 hint=f"after scaling by {f.max:g} / {amax:g}, a value rounds to 0 when it is at most half the "
                      f"smallest subnormal, {f.smallest_subnormal:g} / 2; divide that by the scale.")


# --------------------------------------------------------------------------- the measured half
def wgmma_sum(a, b, c: float = 0.0) -> float:
    """c plus the products a_k b_k (at most 32) in one block of FP8 wgmma, by its fitted model."""
    import numpy as np

    from ..emulate import FP8_WGMMA_MODEL, tensor_core_mma

    a = np.asarray(a, dtype=np.float64).reshape(1, -1)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 1)
    return float(tensor_core_mma(a, b, np.array([[c]]), inputs="fp8_e4m3", acc="fp32", model=FP8_WGMMA_MODEL)[0, 0])


def smallest_kept(data: dict, large: float = 448.0) -> float:
    """The smallest power of two a product can be and still be kept whole beside large x large in one block of
    wgmma, from the bits the record shows it keeps."""
    from ..experiments.fp8 import bits_kept

    return 2.0 ** (math.floor(math.log2(large * large)) - bits_kept(data, "fp8_wgmma") + 1)


def _not_the_record(name: str, answer, data, key: str = "probes", kind: type = dict) -> bool:
    """True, after a verdict saying what to pass, when `data` is not the recorded fp8 experiment."""
    if isinstance(data, dict) and isinstance(data.get(key), kind):
        return False
    _report(name, answer, False,
            f"`data` ({type(data).__name__} {_short(data)}) is not the recorded fp8 experiment: set "
            "data = rec.meta['experiments']['fp8'] (the cell near the top of this section) and run this again.")
    return True


@checker
def check_smallest_kept(answer, data: dict, large: float = 448.0) -> None:
    """The smallest power of two kept beside large x large in one block of wgmma (smallest_kept)."""
    name = f"smallest power of two kept beside {large:g} x {large:g}"
    if number_answer(name, answer, "a number: a power of two, e.g. 2.0 ** -3") is None:
        return
    if _not_the_record(name, answer, data, "probes"):
        return
    top = math.floor(math.log2(large * large))
    check_number(name, answer, smallest_kept(data, large), rel=0,
                 hint=f"{large:g} x {large:g} = {large * large:g} lies between 2^{top} and 2^{top + 1}: the kept "
                      f"bits start at its leading bit, 2^{top}, not at 2^16 as in the probe. Count the bits the probe "
                      "table shows wgmma keeps down from there; the last of them is the smallest product kept.")


@checker
def check_swamped_sum(answer) -> None:
    """2^16 plus 31 terms of 2^2 = 4, in one wgmma block of 32 products: what does the accumulator hold?"""
    expected = wgmma_sum([256.0] + [2.0] * 31, [256.0] + [2.0] * 31)
    check_number("2^16 + 31 x 4 in one block of wgmma", answer, expected, rel=0,
                 hint="each 4 = 2^2 lies 14 bits below 2^16, one bit past the 14 kept: every one of them is cut "
                      "to 0 before the sum, however many there are.")


# --------------------------------------------------------------------------- the promotion interval (a knob)
PROMOTION_K = 4096                 # the exercise's K: the sweep's row the lesson's table shows
PROMOTION_DIST = "normal"          # N(0,1) inputs: the table shows U[0,1) only, so the ratio must be predicted
PROMOTION_TOLERANCE = 2 ** 0.5     # a prediction within a factor sqrt(2) of the measured ratio counts
_DIST_NAME = {"normal": "N(0,1)", "uniform01": "U[0,1)"}


def promotion_ratio(data: dict, nc: int = 64, base: int = 128, K: int = PROMOTION_K,
                    dist: str = PROMOTION_DIST) -> float:
    """Median relative error of fp8_promote_<nc> over fp8_promote_<base>'s, at K on `dist` inputs (the record)."""
    med = {r["kernel"]: r["med_rel"] for r in data["sweep"] if r["K"] == K and r["dist"] == dist and "med_rel" in r}
    return med[f"fp8_promote_{nc}"] / med[f"fp8_promote_{base}"]


@checker
def check_promotion_ratio(answer, data: dict) -> None:
    """The predicted error of promoting every 64 products over every 128's, at K = 4096 on N(0,1) inputs
    (the lesson's table shows U[0,1) only), within a factor sqrt(2) of the recorded ratio."""
    name = f"error every 64 / every 128, K = {PROMOTION_K}, {_DIST_NAME[PROMOTION_DIST]} inputs"
    a = number_answer(name, answer, "a number: the ratio of two median errors, e.g. 0.5 for 'half the error'")
    if a is None or _not_the_record(name, answer, data, "sweep", list):
        return
    truth, seen = promotion_ratio(data), promotion_ratio(data, dist="uniform01")
    ok = math.isfinite(a) and a > 0 and abs(math.log(a / truth)) <= math.log(PROMOTION_TOLERANCE)
    if ok:
        print(f"[{name}] Correct: the H200 measured {truth:.2f} (U[0,1) inputs: {seen:.2f}; accepted within a factor "
              f"{PROMOTION_TOLERANCE:.2f}).")
        _count(ok)
        return
    _report(name, answer, False,
            "on U[0,1) inputs (the table) every product is positive: the partial sum grows in proportion to N_C and "
            "every cut goes the same way. N(0,1) products have both signs: a sum of n of them grows like sqrt(n), "
            "and so does the spacing of its last kept bit, while cuts of both signs partly cancel. What does halving "
            "N_C do to sqrt(N_C)? The N(0,1) panel of the error-against-K plot has the measured lines.")


def _count(ok: bool) -> None:
    """Record a verdict printed here directly (a 'Correct' line with the measured value beside it)."""
    from .. import exercises

    exercises._verdicts += 1
    exercises.last_result = ok


def _promote_nc_of(C, A, B, first: int | None = None):
    """The promotion interval whose CPU model gives C for A B (`first` tried first), 0 for none, or None."""
    import numpy as np

    from ..fp8_gemm import PROMOTE_NC, cpu_model, decode_e4m3, encode_e4m3

    A8, B8 = decode_e4m3(encode_e4m3(A)), decode_e4m3(encode_e4m3(B))
    order = ([first] if first in PROMOTE_NC else []) + [n for n in PROMOTE_NC if n != first] + [0]
    for nc in order:
        want = np.asarray(cpu_model(f"fp8_promote_{nc}" if nc else "fp8_wgmma_n128")(A8, B8), dtype=np.float32)
        if want.shape == C.shape and np.array_equal(want, C):
            return nc
    return None


@checker
def check_promotion_run(C, nc, A, B) -> None:
    """C from fp8_gemm.matmul(f"fp8_promote_{nc}", A, B): correct when it is bit for bit the result of
    promoting every `nc` products; a C of another interval, or of none, is rejected and named."""
    import numpy as np

    from ..fp8_gemm import PROMOTE_NC

    name = f"C of fp8_promote_{nc}" if nc is not None and nc is not Ellipsis else "C of fp8_promote_<nc>"
    if nc is None or nc is Ellipsis or C is None or C is Ellipsis:
        _report(name, None, False, "")
        return
    n = as_number(nc)
    if n is None or n not in PROMOTE_NC:
        not_a_number("promotion interval nc", nc, f"one of the intervals the kernels exist for, {PROMOTE_NC}")
        return
    nc = int(n)
    if not isinstance(C, np.ndarray) or C.ndim != 2 or C.dtype.kind != "f":
        not_a_number(name, C, "C as matmul returns it: a 2-D numpy float array (C, where = fp8_gemm.matmul(...))")
        return
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or C.shape != (A.shape[0], B.shape[1]):
        _report(name, C, False, f"C is {C.shape}, but A B is {A.shape[0]} x {B.shape[1] if B.ndim == 2 else '?'}: "
                                "pass the A and B the cell multiplied.")
        return
    got = _promote_nc_of(np.asarray(C, dtype=np.float32), A, B, first=nc)
    if got == nc:
        from ..fp8_gemm import cpu_model, decode_e4m3, encode_e4m3

        R = A @ B
        err = lambda X: float(np.median(np.abs(X - R) / np.abs(R)))       # noqa: E731
        line = f"median relative error {err(C):.1e}"
        if nc != 128:
            A8, B8 = decode_e4m3(encode_e4m3(A)), decode_e4m3(encode_e4m3(B))
            e128 = err(cpu_model("fp8_promote_128")(A8, B8))
            line += f"; every 128 on the same A, B: {e128:.1e} (ratio {err(C) / e128:.2f})"
        print(f"[{name}] Correct: bit for bit the result of promoting every {nc} products; {line}.")
        _count(True)
        return
    what = ("no kernel's result (did C come from these A and B?)" if got is None else
            "the result of never promoting (fp8_wgmma_n128)" if got == 0 else f"the result of fp8_promote_{got}")
    _report(name, C, False, f"this C is {what}. Set nc, rerun the matmul with f\"fp8_promote_{{nc}}\", and pass "
                            "the C it returned.")


# --------------------------------------------------------------------------- the reveals of the learner's guesses
@checker
def reveal_fp8_speed(guess, n: int = 4096) -> None:
    """Prediction: cuBLASLt's FP8 GEMM over cuBLAS FP16 at n^3, timed in the same rounds (the record's ``fp8``
    experiment, helpers.experiments.fp8.speed_rows); right within 10% either way."""
    from ..device import peaks_for
    from ..experiments.fp8 import speed_rows
    from ..results import load_latest
    from . import judge_guess

    rec = load_latest()
    tf = {r["kernel"]: r["TFLOP/s"] for r in speed_rows(rec.meta["experiments"]["fp8"]) if r["n"] == n}
    peaks = peaks_for(rec.gpu_name)
    judge_guess("FP8 over FP16", guess, tf["cublaslt_fp8"] / tf["cublas_fp16"], within=1.10, fmt=".2f",
                what=f"{rec.label}: cuBLASLt FP8 ({tf['cublaslt_fp8']:.0f} TFLOP/s) over cuBLAS FP16 "
                     f"({tf['cublas_fp16']:.0f} TFLOP/s) at {n}^3, timed in the same rounds (the datasheet's peaks: "
                     f"x{peaks.fp8 / peaks.fp16:.2f})",
                why="A datasheet's rate is a peak of the Tensor Cores alone; a whole GEMM also loads, stores and "
                    "waits (the table below gives each kernel's clock).")


@checker
def reveal_promotion_gain(guess, K: int = 4096, dist: str = "uniform01", nc: int = 128) -> None:
    """Prediction: how many times larger `wgmma`'s median relative error without promotion (fp8_wgmma) is than
    with promotion every `nc` products, at K on `dist` inputs (the record's error sweep); right within a
    factor of 2 either way."""
    from ..experiments.fp8 import sweep_rows
    from ..results import load_latest
    from . import judge_guess

    rec = load_latest()
    med = {r["kernel"]: r["median rel. error"] for r in sweep_rows(rec.meta["experiments"]["fp8"], K, dist)}
    a, b = med["fp8_wgmma"], med[f"fp8_promote_{nc}"]
    judge_guess("error without promotion", guess, a / b, within=2.0, fmt=".3g",
                what=f"{rec.label}: median relative error at K = {K} on {dist} inputs, fp8_wgmma {a:.2g} over "
                     f"fp8_promote_{nc} {b:.2g}",
                why="On positive data every cut toward zero goes the same way, and without promotion the sum "
                    "being cut grows with K.")
