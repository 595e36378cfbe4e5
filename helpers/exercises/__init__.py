"""Self-checking exercises: each checker computes the expected answer itself.

Common checkers live here; each lesson family adds a module (helpers/exercises/<family>.py)
with its own checkers, built on check_number / _report.

A checker prints one line: "Not answered yet", "Correct", or "Not quite" with
a hint, and returns None (so a notebook cell shows only that line). It never
raises, so Restart & Run All keeps going -- with one exception: when a learner's
kernel makes the GPU fault (illegal address, launch failure), the checker prints its
verdict and raises helpers.GPUContextLostError, whose message says to restart the
notebook's kernel (nothing later in the notebook could use the GPU). ``last_result`` holds the last
verdict (True, False, or None when unanswered) for tests.
"""
from __future__ import annotations

import math


last_result: bool | None = None


def _report(name: str, answer, ok: bool, hint: str) -> None:
    global last_result
    if answer is None or answer is Ellipsis:
        print(f"[{name}] Not answered yet: replace the placeholder with your answer and run the cell.")
        last_result = None
        return
    print(f"[{name}] Correct." if ok else f"[{name}] Not quite. Hint: {hint}")
    last_result = ok


def as_number(answer) -> float | None:
    """The answer as a float, or None when it is not a number (text, a list, ...)."""
    if isinstance(answer, bool):
        return None
    try:
        return float(answer)
    except (TypeError, ValueError):
        return None


def check_number(name: str, answer, expected: float, rel: float = 1e-9, hint: str = "") -> None:
    global last_result
    if answer is not None and answer is not Ellipsis and as_number(answer) is None:
        print(f"[{name}] This checker expects a number (a Python expression such as 2 * 16**3 works), "
              f"not {type(answer).__name__} {answer!r}.")
        last_result = False
        return
    ok = answer is not None and answer is not Ellipsis and math.isclose(as_number(answer), expected, rel_tol=rel)
    _report(name, answer, ok, hint)


def gemm_flops_exercise(answer, M: int, N: int, K: int) -> None:
    """FLOPs of C = A B with A M x K and B K x N (multiply and add counted separately)."""
    check_number("GEMM FLOPs", answer, 2.0 * M * N * K,
                        hint="each of the M*N outputs is a dot product of length K: K multiplies and K adds.")


def mma_flops_exercise(answer) -> None:
    """FLOPs of one wmma::mma_sync on a 16x16x16 tile."""
    check_number("mma_sync FLOPs", answer, 2.0 * 16 * 16 * 16,
                        hint="a 16x16x16 tile is a GEMM with M = N = K = 16; count multiply and add.")
