"""Lesson 4 exercises: each checker computes the expected answer itself (with the CPU model)."""
from __future__ import annotations

import numpy as np

from . import check_number, checker


@checker
def fp16_block_stagnation_exercise(answer) -> None:
    """Summing ones through WMMA with an FP16 accumulator (16 products per rounding): where does it stop?"""
    from ..emulate import tensor_core_gemm

    K = 1 << 16
    expected = float(tensor_core_gemm(np.ones((1, K)), np.ones((K, 1)), acc="fp16")[0, 0])
    check_number("FP16 accumulator, blocks of 16 ones", answer, expected,
                 hint="each mma_sync adds 16 to an FP16 sum: find the first value whose FP16 spacing is 32, "
                      "where x + 16 is a tie that rounds to even.")


@checker
def probe_exercise(answer) -> None:
    """Predict the H200's answer: c = 1, a = [2^-24] * 4, b = [1, 1/2, 1/4, 1/4] (FP16 inputs, FP32 acc)."""
    from ..experiments.precision import emulate_probe

    case = {"fmt": "fp16", "acc": "fp32", "a": [2.0 ** -24] * 4, "b": [1, 0.5, 0.25, 0.25], "c": 1.0}
    check_number("probe: c = 1 plus four tiny products", answer, emulate_probe(case), rel=0,
                 hint="the window keeps 24 + 2 bits below the leading bit of c = 1, i.e. down to 2^-25; "
                      "products below that are dropped before the sum, and the FP32 result is truncated.")


@checker
def tolerance_exercise(answer, tol: float = 1e-2) -> None:
    """Largest K (multiple of 16) for which FP16 accumulation (block 16) keeps tolerance() <= tol."""
    from ..errors import InputError
    from ..numerics import tolerance

    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not 0 < tol < 1:
        raise InputError(f"tol={tol!r}: the target is a tolerance between 0 and 1.", "pass e.g. tol=1e-2.")
    K = 16
    while tolerance(K + 16, "fp16", "fp16", block=16, inputs_rounded_in_reference=True).value <= tol:
        K += 16
    check_number(f"largest K with an FP16-accumulation tolerance <= {tol:g}", answer, K,
                 hint="loop K = 16, 32, ... and call helpers.tolerance(K, 'fp16', 'fp16', block=16, "
                      "inputs_rounded_in_reference=True).value until it exceeds the target.")
