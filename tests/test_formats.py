"""helpers.formats (lesson 3): format facts from their definitions, bit strings, BF16/TF32 bit handling,
representable values and the figures."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import helpers
from helpers import formats as F


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
def test_bit_string_round_trips(name):
    from helpers.numerics import round_to

    for x in [-1 / 3, 0.1, 3.14159, 1e-3, 300.0]:
        bits = F.bit_string(x, name)
        assert len(bits) == helpers.numerics.fmt(name).bits
        assert F.decode_bits(bits, name) == float(round_to(np.array([x]), name)[0]), x


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

    for fig in (helpers.plots.bit_layouts(), helpers.plots.number_lines(),
                helpers.plots.range_histogram(F.gradient_like(5000), scales=[1.0, 1.0])):
        assert fig.axes
        plt.close(fig)
