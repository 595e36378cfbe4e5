"""Lesson 3 on the CPU: the BF16/TF32 kernels' emulation and validation, the experiments' helpers that need no
GPU, and the exercise checkers (formats and training: tests/test_formats.py, tests/test_training.py)."""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import helpers
from helpers import exercises, formats as F
from helpers.exercises import mixed as ex
from helpers.experiments import mixed as exp


# --------------------------------------------------------------------------- kernels (CPU backend)
def test_new_kernels_registered():
    for name, inputs, dt, block in (("wmma_bf16_gemm_kernel", "bf16", "uint16", 16),
                                    ("wmma_tf32_gemm_kernel", "tf32", "float32", 4)):
        spec = helpers.KERNELS[name]
        assert spec.inputs == inputs and spec.in_dtype == dt and spec.min_cc == (8, 0)
        assert spec.acc_block == block and spec.file == "mixed_precision.cu"
        assert helpers.display.kernel_source("mixed_precision.cu", name)


@pytest.mark.parametrize("name", ["wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"])
def test_new_kernels_emulated_pass_check(name):
    A = helpers.random_matrix(40, 72, seed=2)
    B = helpers.random_matrix(72, 24, seed=3)
    spec = helpers.KERNELS[name]
    a, b = (F.to_bf16_bits(A), F.to_bf16_bits(B)) if spec.inputs == "bf16" else (A, B)
    C = helpers.gemm(name, a, b, pad=True)
    assert C.shape == (40, 24) and C.dtype == np.float32
    assert spec.check(C, A, B).passed


def test_bf16_kernel_rejects_floats_with_fix():
    A = helpers.random_matrix(16, 16, seed=0)
    with pytest.raises(helpers.InputError, match="to_bf16_bits") as e:
        helpers.gemm("wmma_bf16_gemm_kernel", A, A)
    assert "astype(np.uint16)" in str(e.value) and "Fix:" in str(e.value)


def test_tf32_kernel_takes_float32_only():
    A = helpers.random_matrix(16, 16, seed=0)
    with pytest.raises(helpers.InputError, match="float32"):
        helpers.gemm("wmma_tf32_gemm_kernel", A.astype(np.float16), A.astype(np.float16))


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
