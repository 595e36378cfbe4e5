"""Lesson 4 exercises: each checker computes the expected answer itself (with the CPU model)."""
from __future__ import annotations

import numpy as np

from . import check_number, checker, judge_guess


@checker
def fp16_block_stagnation_exercise(answer) -> None:
    """Summing halves through WMMA with an FP16 accumulator (16 products per rounding): where does it stop?"""
    from ..emulate import tensor_core_gemm

    K = 1 << 16
    expected = float(tensor_core_gemm(np.full((1, K), 0.5), np.ones((K, 1)), acc="fp16")[0, 0])
    check_number("FP16 accumulator, blocks of 16 halves", answer, expected,
                 hint="each mma_sync adds 16 x 0.5 = 8 to an FP16 sum: find the first value whose FP16 spacing "
                      "is 16, where x + 8 is a tie that rounds to even.")


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


# --------------------------------------------------------------------------- predictions, revealed from the record
def _recorded_curves(dist: str = "uniform"):
    from ..errors import ResultsError
    from ..experiments.precision import curves, recorded

    meas = recorded("error_vs_k")
    if meas is None:
        raise ResultsError("the record holds no error_vs_k experiment.", "run `make record` on a GPU.")
    return curves(meas.data, dist)


@checker
def reveal_k_growth(guess, lo: int = 1024, hi: int = 16384, arithmetic: str = "fp16 in, fp32 acc") -> None:
    """Prediction: by what factor does the median accumulation error on U[0,1) grow from K = lo to K = hi
    (the H200 record of the error study)?"""
    Ks, cur = _recorded_curves()
    a, b = cur[arithmetic][Ks.index(lo)], cur[arithmetic][Ks.index(hi)]
    judge_guess(f"{arithmetic}: error growth, K = {lo} to {hi}", guess, b / a, within=1.5, fmt=".1f",
                what=f"H200 record, {a:.2e} at K = {lo} and {b:.2e} at K = {hi}, a growth", why=(
                    f"K grows {hi // lo}-fold. Errors of random sign grow like sqrt(K); errors that all have the "
                    "same sign (truncation toward zero, positive data) grow like K."))


@checker
def reveal_acc16_over_acc32(guess, K: int = 16384) -> None:
    """Prediction: at K, how many times larger is the FP16 accumulator's median error than the FP32 accumulator's
    (both with FP16 inputs, U[0,1), the H200 record)?"""
    Ks, cur = _recorded_curves()
    a16, a32 = cur["fp16 in, fp16 acc"][Ks.index(K)], cur["fp16 in, fp32 acc"][Ks.index(K)]
    judge_guess(f"FP16 acc. / FP32 acc. error at K = {K}", guess, a16 / a32, within=2.0, fmt=".1f",
                what=f"H200 record, {a16:.2e} / {a32:.2e}", why=(
                    "FP16's unit roundoff is 2^13 times FP32's, but the FP16 sum rounds to nearest (its errors "
                    "partly cancel) while the FP32 sum is truncated toward zero (its errors add up)."))
