"""Formats, rounding, gamma, the tolerance formula and check_gemm."""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from conftest import round_fraction
from helpers import numerics as nm
from helpers.check import check_gemm


# --------------------------------------------------------------------------- unit roundoffs
@pytest.mark.parametrize("name,u", [("fp16", 2.0**-11), ("bf16", 2.0**-8), ("tf32", 2.0**-11),
                                    ("fp32", 2.0**-24), ("fp64", 2.0**-53)])
def test_unit_roundoff(name, u):
    assert nm.FORMATS[name].unit_roundoff == u
    assert nm.unit_roundoff(name) == u


def test_unit_roundoff_matches_finfo():
    assert nm.unit_roundoff("fp16") == float(np.finfo(np.float16).eps) / 2
    assert nm.unit_roundoff("fp32") == float(np.finfo(np.float32).eps) / 2
    assert nm.unit_roundoff("bf16") == float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) / 2
    assert nm.unit_roundoff("fp8_e4m3") == float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).eps) / 2
    assert nm.unit_roundoff("fp8_e5m2") == float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).eps) / 2


def test_format_bits_match_dtypes():
    for name in ("fp16", "fp32", "fp64", "bf16"):
        f = nm.FORMATS[name]
        assert f.bits == 8 * np.dtype(f.numpy_dtype).itemsize
    assert nm.FORMATS["tf32"].bits == 19


def test_fmt_lookup():
    assert nm.fmt(np.float16) is nm.FORMATS["fp16"]
    assert nm.fmt(np.dtype(np.float32)) is nm.FORMATS["fp32"]
    assert nm.fmt(ml_dtypes.bfloat16) is nm.FORMATS["bf16"]
    assert nm.fmt("float16") is nm.FORMATS["fp16"]
    with pytest.raises(KeyError):
        nm.fmt("fp12")


# --------------------------------------------------------------------------- TF32 rounding
def _tf32_reference(x: float) -> float:
    """Independent TF32 rounding of one float32 value: exact rational, 11 significant bits, RNE."""
    if math.isnan(x) or math.isinf(x):
        return x
    r = round_fraction(Fraction(x), 11, emax=127)
    return float(r)


def _f32_from_bits(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def _tf32_cases():
    rng = np.random.default_rng(123)
    # normal float32 bit patterns with exponents well inside the normal range
    exps = rng.integers(1 + 20, 254 - 20, size=3000).astype(np.uint32)
    fracs = rng.integers(0, 1 << 23, size=3000).astype(np.uint32)
    signs = rng.integers(0, 2, size=3000).astype(np.uint32)
    bits = (signs << 31) | (exps << 23) | fracs
    ties = (bits & ~np.uint32(0x1FFF)) | np.uint32(0x1000)       # exactly halfway
    near = [(bits & ~np.uint32(0x1FFF)) | np.uint32(v) for v in (0x0FFF, 0x1001, 0x1FFF, 0x0001)]
    return _f32_from_bits(np.concatenate([bits, ties] + near))


def test_round_tf32_matches_exact_reference():
    x = _tf32_cases()
    got = nm.round_tf32(x)
    assert got.dtype == np.float32
    want = np.array([_tf32_reference(float(v)) for v in x], dtype=np.float32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} mismatches, e.g. x={x[bad[0]]!r} got={got[bad[0]]!r} want={want[bad[0]]!r}"


def test_round_tf32_ties_go_to_even_both_ways():
    one = np.float32(1.0)
    ulp = 2.0**-10
    # 1 + ulp/2: tie between 1 (even) and 1+ulp (odd) -> 1
    assert nm.round_tf32(np.float32(1 + ulp / 2)) == one
    # 1 + 3ulp/2: tie between 1+ulp (odd) and 1+2ulp (even) -> 1+2ulp
    assert nm.round_tf32(np.float32(1 + 3 * ulp / 2)) == np.float32(1 + 2 * ulp)
    assert nm.round_tf32(np.float32(-(1 + 3 * ulp / 2))) == np.float32(-(1 + 2 * ulp))
    # just above a tie rounds up
    assert nm.round_tf32(np.float32(1 + ulp / 2 + 2.0**-23)) == np.float32(1 + ulp)


def test_round_tf32_result_has_10_fraction_bits():
    x = _tf32_cases()
    r = nm.round_tf32(x)
    assert not (r.view(np.uint32) & np.uint32(0x1FFF)).any()


def test_round_tf32_specials():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=np.float32)
    r = nm.round_tf32(x)
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])
    assert r[3] == 0 and r[4] == 0 and np.signbit(r[4])
    # the largest float32 rounds up to infinity in TF32 (RNE overflow), with its sign
    big = np.array([np.finfo(np.float32).max, -np.finfo(np.float32).max], dtype=np.float32)
    r = nm.round_tf32(big)
    assert r[0] == np.inf and r[1] == -np.inf


def test_round_to_tf32_from_float64():
    x = np.random.default_rng(5).standard_normal(200)
    np.testing.assert_array_equal(nm.round_to(x, "tf32"), nm.round_tf32(x.astype(np.float32)))


# --------------------------------------------------------------------------- other formats
def _bf16_bits_reference(x32: np.ndarray) -> np.ndarray:
    """float32 -> bf16 -> float32 by integer RNE on the top 16 bits (finite inputs)."""
    u = x32.view(np.uint32).astype(np.uint64)
    low = u & 0xFFFF
    base = u & 0xFFFF0000
    up = (low > 0x8000) | ((low == 0x8000) & (((u >> 16) & 1) == 1))
    return (base + up.astype(np.uint64) * np.uint64(0x10000)).astype(np.uint32).view(np.float32)


def test_round_to_bf16_float32_inputs():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(5000) * np.exp2(rng.integers(-30, 30, 5000))).astype(np.float32)
    ties = ((x.view(np.uint32) & np.uint32(0xFFFF0000)) | np.uint32(0x8000)).view(np.float32)
    x = np.concatenate([x, ties])
    got = nm.round_to(x, "bf16")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(got, _bf16_bits_reference(x))


def test_round_to_fp16_float64_is_single_rounding():
    # x just above a tie of FP16 whose excess is lost in float32: only direct rounding gets it right
    x = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11 - 2.0**-40, 1 + 3 * 2.0**-11])
    want = [float(round_fraction(Fraction(float(v)), 11)) for v in x]
    assert want == [1 + 2.0**-10, 1.0, 1 + 2 * 2.0**-10]
    np.testing.assert_array_equal(nm.round_to(x, "fp16"), np.array(want, np.float32))


def test_round_to_fp16_random_matches_exact_reference():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(500) * 8
    want = np.array([float(round_fraction(Fraction(float(v)), 11)) for v in x], np.float32)
    np.testing.assert_array_equal(nm.round_to(x, "fp16"), want)


def test_round_to_bf16_float64_is_single_rounding():
    x = np.array([1 + 2.0**-8 + 2.0**-30, -(1 + 2.0**-8 + 2.0**-30), 1 + 2.0**-8 - 2.0**-30])
    want = np.array([float(round_fraction(Fraction(float(v)), 8)) for v in x], np.float32)
    assert list(want) == [1 + 2.0**-7, -(1 + 2.0**-7), 1.0]
    np.testing.assert_array_equal(nm.round_to(x, "bf16"), want)


def test_round_to_fp64_and_fp32():
    x = np.array([1 / 3, 1e300])
    assert nm.round_to(x, "fp64").dtype == np.float64
    np.testing.assert_array_equal(nm.round_to(x, "fp64"), x)
    r = nm.round_to(np.array([1 / 3]), "fp32")
    assert r[0] == np.float32(1 / 3)


# --------------------------------------------------------------------------- gamma
def test_gamma_formula():
    u = 2.0**-11
    for n in (1, 10, 100, 1000):
        assert nm.gamma(n, u) == pytest.approx(n * u / (1 - n * u), rel=1e-15)
    assert nm.gamma(1, 2.0**-24) > 2.0**-24


@pytest.mark.parametrize("n", [2048, 2049, 10**6])
def test_gamma_infinite_when_nu_ge_1(n):
    assert nm.gamma(n, 2.0**-11) == math.inf


def test_gamma_prob_smaller_than_worst_case_for_large_n():
    u = 2.0**-24
    n = 10**6
    lam = nm.confidence_lambda(n)
    assert nm.gamma_prob(n, u, lam) < nm.gamma(n, u)
    # and it grows like sqrt(n): x100 in n gives about x10
    ratio = nm.gamma_prob(100 * n, u, lam) / nm.gamma_prob(n, u, lam)
    assert 9 < ratio < 11


def test_confidence_lambda_meets_false_alarm():
    for K, n_checked in ((16, 1), (1024, 4096), (10**5, 10**6)):
        lam = nm.confidence_lambda(K, n_checked, 1e-6)
        assert n_checked * 2 * K * math.exp(-lam**2 / 2) == pytest.approx(1e-6, rel=1e-9)


# --------------------------------------------------------------------------- tolerance
def test_tolerance_monotone_in_k():
    for inputs, acc, rnd, block in (("fp16", "fp32", "truncate", 16), ("fp32", "fp32", "nearest", 1),
                                    ("fp16", "fp16", "nearest", 16), ("tf32", "fp32", "nearest", 1)):
        vals = [nm.tolerance(K, inputs, acc, acc_rounding=rnd, block=block).value
                for K in (1, 2, 16, 17, 100, 1000, 4096, 10**5)]
        assert all(a <= b for a, b in zip(vals, vals[1:])), (inputs, acc, vals)
        assert vals[0] < vals[-1]


def test_fp16_accumulator_looser_than_fp32():
    for K in (16, 256, 4096):
        t16 = nm.tolerance(K, "fp16", "fp16", block=16)
        t32 = nm.tolerance(K, "fp16", "fp32", block=16)
        assert t16.value > t32.value
        assert t16.acc_term > t32.acc_term


def test_truncate_at_least_nearest():
    for K in (1, 16, 1000, 10**5):
        tn = nm.tolerance(K, "fp16", "fp32", acc_rounding="nearest").value
        tt = nm.tolerance(K, "fp16", "fp32", acc_rounding="truncate").value
        assert tt >= tn
    assert (nm.tolerance(1000, "fp16", "fp32", acc_rounding="truncate").value
            > nm.tolerance(1000, "fp16", "fp32", acc_rounding="nearest").value)


def test_truncate_uses_worst_case_with_doubled_u():
    t = nm.tolerance(1000, "fp32", "fp32", acc_rounding="truncate")
    assert t.acc_bound == "worst-case"
    assert t.acc_term == pytest.approx(1000 * 2 * 2.0**-24 / (1 - 1000 * 2 * 2.0**-24))


def test_input_truncation_doubles_input_term():
    tn = nm.tolerance(64, "tf32", "fp32")
    tt = nm.tolerance(64, "tf32", "fp32", input_rounding="truncate")
    assert tn.in_term == pytest.approx((1 + 2.0**-11) ** 2 - 1)
    assert tt.in_term == pytest.approx((1 + 2.0**-10) ** 2 - 1)


def test_inputs_rounded_in_reference_is_smaller():
    a = nm.tolerance(256, "fp16", "fp32", block=16)
    b = nm.tolerance(256, "fp16", "fp32", block=16, inputs_rounded_in_reference=True)
    assert b.value < a.value
    assert b.in_term == 0.0 and a.in_term > 0
    assert b.acc_term == a.acc_term


def test_block_16_smaller_than_block_1_for_fp16_accumulation():
    for K in (256, 1024, 4096):
        t1 = nm.tolerance(K, "fp16", "fp16", block=1)
        t16 = nm.tolerance(K, "fp16", "fp16", block=16)
        assert t16.value < t1.value
        assert t16.block == 16 and t1.block == 1


def test_block_adds_alignment_term():
    K = 64
    t1 = nm.tolerance(K, "fp32", "fp32", acc_rounding="truncate", block=1)
    t16 = nm.tolerance(K, "fp32", "fp32", acc_rounding="truncate", block=16)
    assert t16.acc_term == pytest.approx(nm.gamma(4, 2 * 2.0**-24) + nm.gamma(K, 2.0**-23))
    assert t1.acc_term == pytest.approx(nm.gamma(K, 2 * 2.0**-24))


def test_fp16_output_adds_its_unit_roundoff():
    t32 = nm.tolerance(64, "fp16", "fp32", "fp32", acc_rounding="truncate")
    t16 = nm.tolerance(64, "fp16", "fp32", "fp16", acc_rounding="truncate")
    assert t16.out_term == 2.0**-11 and t32.out_term == 0.0
    assert t16.value - t32.value == pytest.approx(2.0**-11, rel=0.05)
    # output as wide as the accumulator: no output term
    assert nm.tolerance(64, "fp16", "fp16", "fp16").out_term == 0.0


def test_tolerance_composition():
    t = nm.tolerance(100, "bf16", "fp32", "bf16")
    assert t.value == pytest.approx((1 + t.in_term) * (1 + t.acc_term) * (1 + t.out_term) - 1)
    assert float(t) == t.value
    assert "K=100" in str(t)


def test_tolerance_bad_arguments():
    with pytest.raises(ValueError):
        nm.tolerance(0, "fp16", "fp32")
    with pytest.raises(ValueError):
        nm.tolerance(16, "fp16", "fp32", acc_rounding="up")
    with pytest.raises(ValueError):
        nm.tolerance(16, "fp16", "fp32", block=0)


def test_probabilistic_bound_chosen_for_long_fp16_sums():
    t = nm.tolerance(4096, "fp16", "fp16")          # worst case gamma is infinite here
    assert math.isfinite(t.value)
    assert t.acc_bound == "probabilistic"


# --------------------------------------------------------------------------- check_gemm
def _ab(m=24, n=20, k=32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32))


def _check(C, A, B, **kw):
    return check_gemm(C, A, B, inputs="fp32", acc="fp32", backend="test", **kw)


def test_check_passes_on_correct_product():
    A, B = _ab()
    C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    chk = _check(C, A, B)
    assert chk.passed and bool(chk)
    assert chk.first_bad is None and chk.n_nan == 0
    assert chk.shape == (24, 20, 32)
    assert chk.comp_err <= 2.0**-24 * 1.0001


def test_check_fails_on_one_corrupted_element():
    A, B = _ab()
    C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    C[7, 3] += np.float32(1e-3) * abs(C[7, 3]) + np.float32(1e-3)
    chk = _check(C, A, B)
    assert not chk.passed
    assert chk.first_bad[:2] == (7, 3)
    assert chk.first_bad[2] == float(C[7, 3])
    assert chk.first_bad[3] == pytest.approx(float(A[7].astype(np.float64) @ B[:, 3].astype(np.float64)))
    assert "C[7, 3]" in str(chk)


@pytest.mark.parametrize("how", ["transpose", "permute_rows"])
def test_check_fails_on_transposed_or_permuted_result(how):
    A, B = _ab(32, 32, 32, seed=1)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C = ref.astype(np.float32)
    C = np.ascontiguousarray(C.T) if how == "transpose" else C[np.roll(np.arange(32), 1)]
    chk = _check(C, A, B)
    assert not chk.passed
    i, j, got, exp = chk.first_bad
    assert got == float(C[i, j]) and exp == pytest.approx(ref[i, j])
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    ratio = np.abs(C - ref) / scale
    assert ratio[i, j] == pytest.approx(ratio.max())
    assert ratio[i, j] > chk.tol.value


def test_check_nan_fails():
    A, B = _ab()
    C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    C[2, 5] = np.nan
    chk = _check(C, A, B)
    assert chk.n_nan == 1
    assert not chk.passed
    assert chk.first_bad[:2] == (2, 5)
    assert "NaN" in str(chk)


def test_check_uses_k_and_element_count_for_tolerance():
    A, B = _ab(8, 4, 100)
    C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    chk = _check(C, A, B)
    assert chk.tol.K == 100
    # the inputs already are FP32 numbers: nothing to round, so no input term
    assert chk.tol.value == nm.tolerance(100, "fp32", "fp32", n_checked=32, inputs_rounded_in_reference=True).value
    chk64 = _check(C, A.astype(np.float64) + 1e-9, B)       # float64 originals that FP32 must round
    assert chk64.tol.value == nm.tolerance(100, "fp32", "fp32", n_checked=32).value


def test_verdict_has_no_measured_numbers():
    A, B = _ab()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C1 = ref.astype(np.float32)
    C2 = (ref * (1 + 1e-7)).astype(np.float32)
    c1, c2 = _check(C1, A, B), _check(C2, A, B)
    assert c1.passed and c2.passed
    assert c1.comp_err != c2.comp_err
    assert c1.verdict() == c2.verdict()
    assert str(c1) != str(c2)                     # the measured numbers live in str()
    assert c1.verdict().startswith("PASS")
    bad = C1.copy()
    bad[0, 0] += 1
    assert _check(bad, A, B).verdict().startswith("FAIL")


def test_random_matrix_seeded_and_typed():
    a = nm.random_matrix(5, 7, seed=3)
    b = nm.random_matrix(5, 7, seed=3)
    c = nm.random_matrix(5, 7, seed=4)
    assert a.dtype == np.float32 and a.shape == (5, 7)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    u = nm.random_matrix(50, 50, seed=1, dist="uniform", dtype=np.float16)
    assert u.dtype == np.float16 and u.min() >= 0 and u.max() <= 1
    with pytest.raises(ValueError):
        nm.random_matrix(2, 2, seed=0, dist="cauchy")


def test_componentwise_error_zero_scale():
    ref = np.zeros((1, 2))
    scale = np.zeros((1, 2))
    assert nm.componentwise_error(np.zeros((1, 2)), ref, scale) == 0.0
    assert nm.componentwise_error(np.array([[0.0, 1e-30]]), ref, scale) == math.inf


def test_round_to_float64_single_rounding_fp8_and_tf32():
    x = np.array([1 + 2.0**-4 + 2.0**-40, 1 + 2.0**-11 + 2.0**-40])
    # e4m3 keeps 3 fraction bits: just above the tie between 1 and 1.125 -> 1.125
    assert nm.round_to(x[:1], "fp8_e4m3")[0] == 1.125
    # tf32 keeps 10 fraction bits: just above the tie between 1 and 1 + 2^-10 -> 1 + 2^-10
    assert nm.round_to(x[1:], "tf32")[0] == np.float32(1 + 2.0**-10)


def test_round_to_subnormal_bf16_and_fp16_from_float64():
    tiny = np.array([2.0**-133 * 1.5, 2.0**-25 * 3])   # bf16 subnormal tie; fp16 subnormal tie
    assert nm.round_to(tiny[:1], "bf16")[0] == np.float32(2.0**-132)      # 1.5 ulp -> 2 ulp (even)
    assert nm.round_to(tiny[1:], "fp16")[0] == np.float32(2.0**-23)       # 1.5 ulp -> 2 ulp (even)
