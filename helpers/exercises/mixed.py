"""Lesson 3 exercises: reading a format's definition, and choosing a loss scale (answers from helpers.formats)."""
from __future__ import annotations

import math

from . import as_number, check_number, checker, judge_guess
from ..formats import format_info


def spacing(value: float, fmt: str) -> float:
    """Distance from |value| (a normal number of `fmt`) to the next larger number of `fmt`."""
    info = format_info(fmt)
    e = math.floor(math.log2(abs(value)))
    return 2.0 ** (max(e, info.emin) - info.frac_bits)


def largest_exact_integer_run(fmt: str) -> int:
    """The largest N such that every integer 0, 1, ..., N is exactly representable in `fmt`."""
    return 2 ** format_info(fmt).precision


def smallest_scale(g: float, fmt: str = "fp16") -> float:
    """The smallest power of two S such that S * g is a normal number of `fmt`."""
    return 2.0 ** math.ceil(math.log2(format_info(fmt).tiny / g))


@checker
def spacing_exercise(answer, value: float = 1000.0, fmt: str = "fp16") -> None:
    """Spacing of `fmt` numbers just above `value`."""
    check_number(f"{fmt} spacing at {value:g}", answer, spacing(value, fmt), rel=1e-12,
                 hint=f"find the power of two 2^e <= {value:g} < 2^(e+1); {fmt} keeps "
                      f"{format_info(fmt).frac_bits} fraction bits, so the spacing is 2^(e - fraction bits).")


@checker
def integer_run_exercise(answer, fmt: str = "bf16") -> None:
    """Largest N with all of 0..N exact in `fmt`."""
    check_number(f"{fmt} exact integers", answer, largest_exact_integer_run(fmt), rel=0,
                 hint=f"{fmt} has {format_info(fmt).frac_bits} fraction bits plus the hidden bit: integers are "
                      "exact while the spacing is at most 1; above 2^(fraction bits + 1) it is 2.")


@checker
def loss_scale_exercise(answer, g: float = 1e-9, fmt: str = "fp16") -> None:
    """Smallest power-of-two loss scale that makes a gradient g a normal `fmt` number."""
    check_number(f"loss scale for g = {g:g}", answer, smallest_scale(g, fmt), rel=1e-12,
                 hint=f"the smallest normal {fmt} number is 2^{format_info(fmt).emin}; "
                      "solve S g >= 2^emin for the smallest power of two S.")



# --------------------------------------------------------------------------- predictions, revealed from the record
def _recorded(kernel: str, n: int) -> dict:
    from ..results import load_latest

    return load_latest().select(kernel=kernel, m=n, n=n, k=n)[0]


@checker
def reveal_acc16_speed(guess, n: int = 4096) -> None:
    """Prediction: cuBLAS FP16 with an FP16 accumulator, its speed over the FP32-accumulator call's at n (the H200
    record; the clocks they ran at are printed too)."""
    from ..clocks import clock_text

    a16, a32 = _recorded("cublas_fp16_acc16", n), _recorded("cublas_fp16", n)
    ratio = a16["tflops"] / a32["tflops"]
    judge_guess(f"cuBLAS FP16 acc. / FP32 acc. at n = {n}", guess, ratio, within=1.1, fmt=".3f",
                what=f"H200 record, {a16['tflops']:.1f} / {a32['tflops']:.1f} TFLOP/s", why=(
                    "The datasheet's FP16-accumulate and FP32-accumulate peaks: the slide 'Peak speed per format'."))
    g = as_number(guess)
    if g is not None and math.isfinite(g) and g > 0:                 # the verdict showed the value: now the clocks
        per_clock = ratio * a32["sm_mhz"] / a16["sm_mhz"]
        print(f"  SM clocks while timed: {clock_text(a16)} and {clock_text(a32)}; per clock the ratio is "
              f"{per_clock:.3f}")


@checker
def reveal_fp16acc_error_growth(guess, lo: int = 256, hi: int = 8192, kernel: str = "wmma_fp16acc_gemm_kernel") -> None:
    """Prediction: by what factor does the kernel's relative error grow from n = lo to n = hi (the H200 record)?"""
    a, b = _recorded(kernel, lo)["rel_err"], _recorded(kernel, hi)["rel_err"]
    judge_guess(f"{kernel} error growth, n = {lo} to {hi}", guess, b / a, within=1.5, fmt=".2f",
                what=f"H200 record, {a:.2e} at n = {lo} and {b:.2e} at n = {hi}, a growth",
                why="An FP16 accumulator rounds once per mma_sync, after every 16 products: K / 16 roundings; errors "
                    "of random sign grow like the square root of their number.")
