"""Lesson 3 on the CPU: the experiments' helpers that need no GPU, and the exercise checkers (helpers/experiments/
mixed.py, helpers/exercises/mixed.py); formats and training: tests/test_formats.py, tests/test_training.py."""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from helpers import exercises
from helpers.exercises import mixed as ex
from helpers.experiments import mixed as exp


# --------------------------------------------------------------------------- experiments (no GPU)
def test_tf32_threshold_between_unit_roundoffs():
    t = exp.tf32_threshold()
    assert 2.0 ** -24 < t < 2.0 ** -11
    assert exp.verdict(3e-4) == "TF32" and exp.verdict(5e-7) == "FP32"
    assert len(exp.TF32_ENV_CASES) == 6


def test_child_env_sets_and_unsets(monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "1")
    env = exp._child_env(None, "0")
    assert "CUPY_TF32" not in env and env["NVIDIA_TF32_OVERRIDE"] == "0"


# --------------------------------------------------------------------------- exercises
def test_exercise_answers():
    assert ex.spacing(1000.0, "fp16") == 0.5
    assert ex.spacing(1.0, "bf16") == 2.0 ** -7
    assert ex.largest_exact_integer_run("bf16") == 256 and ex.largest_exact_integer_run("fp16") == 2048
    assert ex.smallest_scale(1e-9, "fp16") == 2.0 ** 16
    # cross-check against the formats themselves
    assert np.float16(2048) + np.float16(1) == np.float16(2048)
    assert float(ml_dtypes.bfloat16(257)) != 257
    assert Fraction(float(np.float16(1e-9 * 2.0 ** 16))) >= Fraction(2) ** -14


@pytest.mark.parametrize("fn,good,bad", [(ex.spacing_exercise, 0.5, 1.0), (ex.integer_run_exercise, 256, 255),
                                         (ex.loss_scale_exercise, 65536, 32768)])
def test_exercise_checkers(fn, good, bad, capsys):
    fn(None)
    assert exercises.last_result is None and "Not answered" in capsys.readouterr().out
    fn(good)
    assert exercises.last_result is True and "Correct." in capsys.readouterr().out
    fn(bad)
    assert exercises.last_result is False and "Hint" in capsys.readouterr().out
