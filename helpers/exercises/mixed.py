"""Lesson 3 exercises: reading a format's definition, and choosing a loss scale (answers from helpers.formats)."""
from __future__ import annotations

import math

from . import check_number, checker
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

