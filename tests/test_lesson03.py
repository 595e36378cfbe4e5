"""Lesson 3 on the CPU: format facts, BF16/TF32 bit handling, the BF16/TF32 kernels' emulation
and validation, the FP16 training model with loss scaling, and the exercise checkers."""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import helpers
from helpers import exercises, formats as F, training as T
from helpers.exercises import mixed as ex
from helpers.experiments import mixed as exp


# --------------------------------------------------------------------------- formats
@pytest.mark.parametrize("name,exp_bits,frac_bits", [("fp32", 8, 23), ("fp16", 5, 10), ("bf16", 8, 7),
                                                     ("fp8_e5m2", 5, 2)])
def test_ieee_formats_match_their_bit_counts(name, exp_bits, frac_bits):
    i, d = F.format_info(name), F.ieee_like(exp_bits, frac_bits)
    assert (i.max, i.tiny, i.smallest_subnormal, i.emin, i.emax) == (d["max"], d["tiny"], d["smallest_subnormal"],
                                                                     d["emin"], d["emax"])
    assert i.u == 2.0 ** -(frac_bits + 1) and i.eps == 2 * i.u


def test_fp16_facts_from_first_principles():
    i = F.format_info("fp16")
    assert i.max == (2 - 2 ** -10) * 2 ** 15 == 65504
    assert i.tiny == 2.0 ** -14 and i.smallest_subnormal == 2.0 ** -24
    # the seed's "dynamic range ~10^+-8" is wrong: 10^-7.2 .. 10^4.8
    assert math.log10(i.max) < 5 and math.log10(i.smallest_subnormal) > -8


def test_e4m3fn_is_not_ieee_like():
    i = F.format_info("fp8_e4m3")
    assert i.max == 448 and not i.has_inf
    assert F.ieee_like(4, 3)["max"] == 240


def test_tf32_from_fp32_exponent():
    i = F.format_info("tf32")
    f32 = F.format_info("fp32")
    assert i.bits == 19 and i.storage_bits == 32
    assert i.tiny == f32.tiny and i.emax == f32.emax and i.u == F.format_info("fp16").u
    assert i.max == (2 - 2 ** -10) * 2.0 ** 127


def test_format_table_has_every_format():
    rows = F.format_table()
    assert [r["format"] for r in rows] == F.LESSON_FORMATS
    assert rows[1]["bits"] == "19 (in 32)"


@pytest.mark.parametrize("name", F.LESSON_FORMATS)
@pytest.mark.parametrize("x", [-1 / 3, 0.1, 3.14159, 1e-3, 300.0])
def test_bit_string_round_trips(name, x):
    bits = F.bit_string(x, name)
    assert len(bits) == helpers.numerics.fmt(name).bits
    from helpers.numerics import round_to

    assert F.decode_bits(bits, name) == float(round_to(np.array([x]), name)[0])


def test_bit_string_known_patterns():
    assert F.bit_string(1.0, "fp16") == "0" + "01111" + "0" * 10
    assert F.bit_string(-2.0, "bf16") == "1" + "10000000" + "0" * 7
    assert F.bit_string(1.0, "tf32") == "0" + "01111111" + "0" * 10


def test_bf16_bits_match_ml_dtypes_and_bitwise_path():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(50_000) * 10.0 ** rng.uniform(-30, 30, 50_000)).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    bits = F.to_bf16_bits(x)
    assert bits.dtype == np.uint16
    assert np.array_equal(bits, F._bf16_bits_bitwise(x))
    back = F.from_bf16_bits(bits)
    ref = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert np.array_equal(back[4:], ref[4:]) and np.isnan(back[0])


def test_bf16_bits_from_float64_round_once():
    # 1 + 2^-8 + 2^-30 is just above a tie: one rounding goes up, float64 -> float32 -> bf16 goes to even
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30])
    assert F.from_bf16_bits(F.to_bf16_bits(x))[0] == 1 + 2.0 ** -7


def test_from_bf16_bits_rejects_floats():
    with pytest.raises(TypeError):
        F.from_bf16_bits(np.zeros(3, np.float32))


def test_tf32_rna_ties_away_from_zero():
    tie = np.float32(1 + 2.0 ** -11)          # exactly halfway between 1 and 1 + 2^-10
    assert F.round_tf32_rna(tie) == np.float32(1 + 2.0 ** -10)
    assert helpers.numerics.round_tf32(tie) == np.float32(1.0)      # ties to even
    assert F.round_tf32_rna(-tie) == -np.float32(1 + 2.0 ** -10)
    x = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    r = F.round_tf32_rna(x)
    assert np.all(r.view(np.uint32) & 0x1FFF == 0)
    assert np.max(np.abs(r - x) / np.abs(x)) <= 2.0 ** -11


def test_representable_counts():
    assert F.representable("fp16", 1.0, 2.0).size == 2 ** 10 + 1
    assert F.representable("bf16", 1.0, 2.0).size == 2 ** 7 + 1
    assert F.representable("tf32", 1.0, 2.0).size == 2 ** 10 + 1
    sub = F.representable("fp8_e4m3", 0.0, 2.0 ** -6)
    assert sub.size == 2 ** 3 + 1 and np.allclose(np.diff(sub), 2.0 ** -9)
    with pytest.raises(ValueError):
        F.representable("fp32", 1.0, 2.0)


def test_classify_categories():
    i = F.format_info("fp16")
    x = np.array([1e-10, i.tiny / 4, 1.0, 1e6])
    assert list(F.classify(x, "fp16")) == [0, 1, 2, 3]
    assert list(F.classify(x, "bf16")) == [2, 2, 2, 2]
    assert list(F.classify(x, "fp16", scale=2.0 ** 16)) == [1, 2, 3, 3]     # 1 * 2^16 > 65504
    fr = F.category_fractions(F.gradient_like(10_000), "fp16")
    assert math.isclose(sum(fr.values()), 1.0)


def test_figures_build():
    import matplotlib.pyplot as plt

    for fig in (F.plot_bit_layouts(), F.plot_number_lines(),
                F.plot_range_histogram(F.gradient_like(5000), scales=[1.0, 1.0])):
        assert fig.axes
        plt.close(fig)


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


# --------------------------------------------------------------------------- training
def test_scaler_rule():
    s = T.DynamicLossScaler()
    assert s.scale == 2.0 ** 16
    assert s.update(True) is True and s.scale == 2.0 ** 15
    for _ in range(1999):
        assert s.update(False) is False
    assert s.scale == 2.0 ** 15
    s.update(False)
    assert s.scale == 2.0 ** 16 and s.clean_steps == 0
    s.update(False)
    s.update(True)
    assert s.scale == 2.0 ** 15 and s.clean_steps == 0


@pytest.fixture(scope="module")
def runs():
    steps = 1200
    return {"fp32": T.train("fp32", steps=steps), "fp16": T.train("fp16", steps=steps),
            "fp16 static": T.train("fp16", "static", scale=2.0 ** 12, steps=steps),
            "fp16 too big": T.train("fp16", "static", scale=2.0 ** 36, steps=50),
            "fp16 dynamic": T.train("fp16", "dynamic", steps=steps),
            "fp16 dynamic 2^40": T.train("fp16", "dynamic", steps=50,
                                         scaler=T.DynamicLossScaler(init_scale=2.0 ** 40)),
            "bf16": T.train("bf16", steps=steps)}


def test_unscaled_fp16_stalls(runs):
    assert runs["fp16"].final_loss > 10 * runs["fp32"].final_loss
    assert runs["fp16"].zero_grad_frac[-100:].mean() > 0.5


def test_scaled_fp16_and_bf16_train(runs):
    ref = runs["fp32"].final_loss
    assert runs["fp16 static"].final_loss < 1.5 * ref
    assert runs["fp16 dynamic"].final_loss < 1.5 * ref
    assert runs["bf16"].final_loss < 5 * ref
    assert runs["fp16 dynamic"].skipped.sum() == 0


def test_too_large_static_scale_diverges(runs):
    assert runs["fp16 too big"].diverged and runs["fp16 too big"].nonfinite.all()


def test_dynamic_scale_backs_off(runs):
    r = runs["fp16 dynamic 2^40"]
    k = int(r.skipped.sum())
    assert k >= 1 and np.all(r.skipped[:k]) and not r.skipped[k:].any()
    assert r.scale[k] == 2.0 ** (40 - k) and not r.diverged


def test_training_is_deterministic():
    a, b = T.train("fp16", steps=30), T.train("fp16", steps=30)
    assert np.array_equal(a.loss, b.loss)


def test_train_rejects_bad_args():
    with pytest.raises(ValueError):
        T.train("fp8")
    with pytest.raises(ValueError):
        T.train("fp16", "sometimes")


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
