"""Self-checking exercises: each checker computes the expected answer itself (the common ones here, each lesson
family's in helpers/exercises/<family>.py).

A checker prints one line, "Not answered yet", "Correct." or "Not quite" with a hint, and returns None; through
``@checker`` anything it is given becomes a verdict, never an exception, so Restart & Run All keeps going. The
one exception: a learner's kernel that makes the GPU fault raises GPUContextLostError (restart the kernel).
``last_result`` holds the last verdict (True, False, or None when unanswered).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import wrap

last_result: bool | None = None
_verdicts = 0                    # verdict lines printed so far (a checker that fails after its verdict adds none)


def _report(name: str, answer, ok: bool, hint: str) -> None:
    global last_result, _verdicts
    _verdicts += 1
    if answer is None or answer is Ellipsis:
        print(wrap(f"[{name}] Not answered yet: replace the placeholder with your answer and run the cell."))
        last_result = None
        return
    print(wrap(f"[{name}] Correct." if ok else f"[{name}] Not quite. Hint: {hint}"))
    last_result = ok


def _short(value, width: int = 60) -> str:
    """repr(value), cut to `width` characters (an answer may be a huge list or number)."""
    try:
        text = repr(value)
    except Exception:                       # a repr that fails is no reason to raise
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def not_a_number(name: str, answer, expects: str = "a number (a Python expression such as 2 * 16**3 works)") -> None:
    """The verdict for an answer that is not a number: says what the checker expects."""
    global last_result, _verdicts
    _verdicts += 1
    print(wrap(f"[{name}] This checker expects {expects}, not {type(answer).__name__} {_short(answer)}."))
    last_result = False


def as_number(answer) -> float | None:
    """The answer as a float ("128" too; an integer too large for a float is +-inf), or None when it is not a
    number (a bool, a list, an array, a complex number, other text)."""
    if isinstance(answer, (bool, np.bool_)) or (isinstance(answer, np.ndarray) and answer.ndim):
        return None
    try:
        return float(answer)
    except OverflowError:
        try:
            return math.inf if answer > 0 else -math.inf
        except Exception:
            return None
    except Exception:                       # TypeError, ValueError, or whatever a strange object raises
        return None


def number_answer(name: str, answer, expects: str | None = None) -> float | None:
    """The answer as a float, or None after printing the verdict for a placeholder or a non-number."""
    if answer is None or answer is Ellipsis:
        _report(name, answer, False, "")
        return None
    a = as_number(answer)
    if a is None:
        not_a_number(name, answer, *([expects] if expects else []))
    return a


def check_number(name: str, answer, expected: float, rel: float = 1e-9, hint: str = "") -> None:
    a = number_answer(name, answer)
    if a is not None:
        _report(name, answer, math.isclose(a, expected, rel_tol=rel), hint)


def checker(fn):
    """Decorator for every checker: an exception inside it is printed as its verdict ("Not accepted" with what
    went wrong); GPUContextLostError passes (the GPU is gone: Run All must stop)."""
    label = fn.__name__.removeprefix("check_").removesuffix("_exercise").replace("_", " ")

    @functools.wraps(fn)
    def run(*args, **kwargs):
        global last_result, _verdicts
        from ..errors import CourseError, GPUContextLostError

        before = _verdicts
        try:
            return fn(*args, **kwargs)
        except GPUContextLostError:
            raise
        except Exception as exc:
            why = f"{exc.problem} Fix: {exc.fix}" if isinstance(exc, CourseError) else f"{type(exc).__name__}: {exc}"
            why = " ".join(why.split())
            if len(why) > 300:
                why = why[:297] + "..."
            if _verdicts > before:              # the verdict was given; something after it failed
                print(wrap(f"[{label}] (after the verdict) the checker stopped: {why}"))
                return None
            _verdicts += 1
            print(wrap(f"[{label}] Not accepted: the checker could not use what it was given ({why}). "
                       "Hint: pass your answer first (a number), and the cell's other arguments as the notebook has "
                       "them."))
            last_result = False
            return None

    run.checker = True
    return run


@checker
def gemm_flops_exercise(answer, M: int, N: int, K: int) -> None:
    """FLOPs of C = A B with A M x K and B K x N (multiply and add counted separately)."""
    check_number("GEMM FLOPs", answer, 2.0 * M * N * K,
                        hint="each of the M*N outputs is a dot product of length K: K multiplies and K adds.")


@checker
def mma_flops_exercise(answer, m: int = 16, n: int = 16, k: int = 16) -> None:
    """FLOPs of one wmma::mma_sync of shape m x n x k (16x16x16 unless given)."""
    check_number(f"mma_sync FLOPs ({m}x{n}x{k})", answer, 2.0 * m * n * k,
                 hint=f"one {m}x{n}x{k} mma_sync is a GEMM with M = {m}, N = {n}, K = {k}; count multiply and add.")


def judge_guess(name: str, guess, actual: float, *, within: float, what: str, fmt: str = ".3g",
                why: str = "") -> None:
    """The reveal of a prediction: `guess` against `actual` (a positive number, from the record), right when
    within a factor `within` of it either way; says how far off it was. A placeholder gets what to do, and the
    value stays hidden until there is a guess; a guess that is not a positive number gets why not."""
    global last_result, _verdicts
    if guess is None or guess is Ellipsis:
        _verdicts += 1
        last_result = None
        print(wrap(f"[{name}] No guess yet: replace the ... in `guess = ...` above with a number, run that cell, "
                   "then this one: it shows the measured value and how far your guess was from it."))
        return
    g = number_answer(name, guess, "a number: your guess (a Python expression such as 3 * 2 works)")
    if g is None:
        return
    if not (math.isfinite(g) and g > 0):
        _report(name, guess, False, f"{_short(guess)} cannot be it: the answer is a positive, finite number. {why}")
        return
    off = max(g / actual, actual / g)
    ok = off <= within
    told = f"{what}: {actual:{fmt}}. Your guess, {g:{fmt}}, " + (
        "is exactly it." if g == actual else
        f"matches it to the digits shown (within {within:g} counts as right)." if f"{off:.2f}" == "1.00" else
        f"is off by a factor of {off:.2f} (too {'high' if g > actual else 'low'}; within {within:g} counts as right).")
    _verdicts += 1
    last_result = ok
    print(wrap(f"[{name}] Correct. {told}" if ok else f"[{name}] Not quite. {told}" + (f" {why}" if why else "")))
