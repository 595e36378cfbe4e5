"""The CPU backend's emulations against exact arithmetic and hand-derived cases."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from conftest import to_f32_exact
from helpers import check, emulate, numerics
from helpers.emulate import DEFAULT_TC_MODEL, TensorCoreModel, fp32_fma_chain, tensor_core_gemm


# --------------------------------------------------------------------------- FP32 FMA chain
def exact_fma_chain(A, B):
    """Sequential FMA chain per element: exact product + exact sum, one correct FP32 rounding per step."""
    M, K = A.shape
    N = B.shape[1]
    C = np.empty((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            acc = Fraction(0)
            for k in range(K):
                acc = Fraction(float(to_f32_exact(acc + Fraction(float(A[i, k])) * Fraction(float(B[k, j])))))
            C[i, j] = np.float32(float(acc))
    return C


def _cases():
    rng = np.random.default_rng(2024)
    out = []
    for s in range(3):
        out.append((rng.standard_normal((3, 40)).astype(np.float32),
                    rng.standard_normal((40, 3)).astype(np.float32)))
    # wide exponent range: the float64 sums are inexact and rounding matters
    for s in range(2):
        A = (rng.standard_normal((3, 40)) * np.exp2(rng.integers(-20, 20, (3, 40)))).astype(np.float32)
        B = (rng.standard_normal((40, 3)) * np.exp2(rng.integers(-20, 20, (40, 3)))).astype(np.float32)
        out.append((A, B))
    return out


@pytest.mark.parametrize("case", range(5))
def test_fp32_fma_chain_is_exact_sequential_fma(case):
    A, B = _cases()[case]
    got = fp32_fma_chain(A, B)
    want = exact_fma_chain(A, B)
    assert got.dtype == np.float32 and got.shape == (3, 3)
    np.testing.assert_array_equal(got, want)


def _tie_cases():
    e = 2.0**-23
    return [
        # exact sum just below a tie; float64 rounds it up onto the tie
        (np.array([[1 + e, 2.0**-24 * (1 + e)]], np.float32), np.array([[1.0], [1 - e]], np.float32)),
        # exact sum just above a tie; float64 rounds it down onto the tie
        (np.array([[1 + e, -(2.0**-24) * (1 + e)]], np.float32), np.array([[1.0], [1 - e]], np.float32)),
    ]


def test_double_rounding_tie_case():
    A, B = _tie_cases()[0]
    C = fp32_fma_chain(A, B)
    assert C[0, 0] == np.float32(1 + 2.0**-23)
    # the naive float64-then-float32 path gets it wrong, so the case is meaningful
    naive = np.float32(np.float64(A[0, 0]) * np.float64(B[0, 0]) + np.float64(A[0, 1]) * np.float64(B[1, 0]))
    assert naive != C[0, 0]


@pytest.mark.parametrize("case", [0, 1])
def test_double_rounding_ties_match_exact(case):
    A, B = _tie_cases()[case]
    C = fp32_fma_chain(A, B)
    np.testing.assert_array_equal(C, exact_fma_chain(A, B))
    naive = np.float32(np.float64(A[0, 0]) * np.float64(B[0, 0]) + np.float64(A[0, 1]) * np.float64(B[1, 0]))
    assert naive != C[0, 0]


def test_exact_ties_still_round_to_even():
    # 1 + 2^-24 is an exact tie (float64 sum exact): ties-to-even gives 1
    A = np.array([[1.0, 2.0**-12]], np.float32)
    B = np.array([[1.0], [2.0**-12]], np.float32)
    assert fp32_fma_chain(A, B)[0, 0] == np.float32(1.0)
    A = np.array([[1 + 2.0**-23, 2.0**-12]], np.float32)
    assert fp32_fma_chain(A, B)[0, 0] == np.float32(1 + 2.0**-22)


def test_fp32_fma_chain_order_matters():
    # sequential: (1e8 + 1) - 1e8 loses the 1 in FP32; a different order would not
    A = np.array([[1e8, 1.0, -1e8]], np.float32)
    B = np.ones((3, 1), np.float32)
    assert fp32_fma_chain(A, B)[0, 0] == 0.0
    assert fp32_fma_chain(A[:, ::-1].copy(), B)[0, 0] == 0.0
    A2 = np.array([[1e8, -1e8, 1.0]], np.float32)
    assert fp32_fma_chain(A2, B)[0, 0] == 1.0


# --------------------------------------------------------------------------- tensor-core model, FP32 accumulation
def _fp16_inputs(m, n, k, seed, dist="normal"):
    A = numerics.random_matrix(m, k, seed=seed, dist=dist).astype(np.float16)
    B = numerics.random_matrix(k, n, seed=seed + 1, dist=dist).astype(np.float16)
    return A, B


@pytest.mark.parametrize("k", [16, 40, 128])
def test_tensor_core_fp32_within_tolerance(k):
    A, B = _fp16_inputs(32, 24, k, seed=k)
    C = tensor_core_gemm(A, B, inputs="fp16", acc="fp32")
    assert C.dtype == np.float32 and C.shape == (32, 24)
    chk = check.check_gemm(C, A, B, inputs="fp16", acc="fp32", acc_rounding="truncate", block=16,
                              backend="test")
    assert chk.passed, str(chk)
    assert chk.comp_err > 0          # it is not the float64 product


def test_tensor_core_fp32_truncates_positive_data():
    A, B = _fp16_inputs(32, 32, 128, seed=9, dist="uniform")
    C = tensor_core_gemm(A, B, inputs="fp16", acc="fp32")
    # exact product of the FP16 inputs in integers: every FP16 value in [0, 1] is a multiple of 2^-24
    Ai = (A.astype(np.float64) * 2.0**24).astype(np.int64)
    Bi = (B.astype(np.float64) * 2.0**24).astype(np.int64)
    assert np.array_equal(Ai.astype(np.float64) * 2.0**-24, A.astype(np.float64))
    exact = Ai @ Bi                                  # units of 2^-48, exact in int64
    Ci = C.astype(np.float64) * 2.0**48
    assert np.array_equal(Ci, np.trunc(Ci))
    Ci = Ci.astype(np.int64)
    assert (Ci <= exact).all()
    assert (Ci < exact).any()                        # truncation actually lost something
    # and the loss stays within the worst-case truncation bound
    rel = (exact - Ci) / exact
    assert rel.max() <= numerics.tolerance(128, "fp16", "fp32", acc_rounding="truncate", block=16,
                                           inputs_rounded_in_reference=True).value


def test_tensor_core_rounds_inputs_first():
    A = numerics.random_matrix(16, 32, seed=3)
    B = numerics.random_matrix(32, 16, seed=4)
    np.testing.assert_array_equal(tensor_core_gemm(A, B), tensor_core_gemm(A.astype(np.float16),
                                                                         B.astype(np.float16)))


def test_tensor_core_exact_on_small_integers():
    rng = np.random.default_rng(0)
    A = rng.integers(-4, 5, (16, 48)).astype(np.float16)
    B = rng.integers(-4, 5, (48, 16)).astype(np.float16)
    exact = A.astype(np.int64) @ B.astype(np.int64)
    for acc in ("fp32", "fp16"):
        np.testing.assert_array_equal(tensor_core_gemm(A, B, acc=acc).astype(np.int64), exact)


def test_tensor_core_bad_acc():
    with pytest.raises(ValueError):
        tensor_core_gemm(np.ones((2, 2)), np.ones((2, 2)), acc="fp8")


def test_tensor_core_row_chunking_does_not_change_result():
    A, B = _fp16_inputs(40, 8, 48, seed=21)
    full = tensor_core_gemm(A, B)
    chunked = tensor_core_gemm(A, B, max_temp_bytes=1)      # one row at a time
    np.testing.assert_array_equal(full, chunked)


# --------------------------------------------------------------------------- model parameters
def _tiny_tail_case(k=32):
    """Row [1, 2^-12, ...] times column [1, 2^-13, ...]: products 1 then k-1 copies of 2^-25."""
    A = np.full((1, k), 2.0**-12, np.float16)
    B = np.full((k, 1), 2.0**-13, np.float16)
    A[0, 0] = 1
    B[0, 0] = 1
    return A, B


def test_model_block_and_alignment_bits_change_results():
    A, B = _tiny_tail_case(32)
    u = 2.0**-23
    # block 16, 2 extra bits: block 1 gives trunc(1 + 15*2^-25) = 1 + 3u; block 2 adds 16*2^-25 = 4u
    got = tensor_core_gemm(A, B, model=TensorCoreModel(16, 2, "test"))[0, 0]
    assert got == np.float32(1 + 7 * u)
    # one rounding per product: 1 + 2^-25 truncates back to 1 every time
    assert tensor_core_gemm(A, B, model=TensorCoreModel(1, 2, "test"))[0, 0] == np.float32(1.0)
    # no extra alignment bits: each 2^-25 is shifted out entirely
    assert tensor_core_gemm(A, B, model=TensorCoreModel(16, 0, "test"))[0, 0] == np.float32(1.0)
    # exact value for comparison
    assert (A.astype(np.float64) @ B.astype(np.float64))[0, 0] == 1 + 31 * 2.0**-25


def test_default_model_is_block16_two_bits():
    A, B = _tiny_tail_case(32)
    assert DEFAULT_TC_MODEL.block == 16 and DEFAULT_TC_MODEL.extra_bits == 2
    np.testing.assert_array_equal(tensor_core_gemm(A, B), tensor_core_gemm(A, B, model=TensorCoreModel(16, 2, "x")))
    assert "block-FMA 16" in str(DEFAULT_TC_MODEL)


def test_k_not_multiple_of_block_is_zero_padded():
    A, B = _fp16_inputs(8, 8, 20, seed=30)
    Ap = np.zeros((8, 32), np.float16)
    Bp = np.zeros((32, 8), np.float16)
    Ap[:, :20] = A
    Bp[:20] = B
    np.testing.assert_array_equal(tensor_core_gemm(A, B), tensor_core_gemm(Ap, Bp))


# --------------------------------------------------------------------------- FP16 accumulation
def test_fp16_accumulation_block1_stagnates_at_2048():
    # with one rounding per product, 2048 + 1 is a tie between 2048 (even) and 2050: stays 2048
    A = np.ones((1, 4096), np.float16)
    B = np.ones((4096, 1), np.float16)
    C = tensor_core_gemm(A, B, acc="fp16", model=TensorCoreModel(1, 2, "test"))
    assert C.dtype == np.float16
    assert C[0, 0] == 2048


def test_fp16_accumulation_block16_on_4096_ones_is_exact():
    # blocks of 16: partial sums are multiples of 16, exactly representable in FP16 below 2^15
    A = np.ones((1, 4096), np.float16)
    B = np.ones((4096, 1), np.float16)
    assert tensor_core_gemm(A, B, acc="fp16")[0, 0] == 4096


def test_fp16_accumulation_block16_stagnates_at_32768():
    # at 2^15 the FP16 spacing is 32: 32768 + 16 is a tie, rounded to even 32768
    A = np.ones((1, 40000), np.float16)
    B = np.ones((40000, 1), np.float16)
    C = tensor_core_gemm(A, B, acc="fp16")
    assert C[0, 0] == 32768
    # numpy's float16 matmul does not accumulate in FP16: it gets the exact 40000 (representable)
    np_result = (A @ B)[0, 0]
    assert np_result == 40000
    assert np_result != C[0, 0]


def test_fp16_accumulation_within_tolerance_and_worse_than_fp32():
    A, B = _fp16_inputs(32, 32, 128, seed=40)
    C16 = tensor_core_gemm(A, B, acc="fp16")
    C32 = tensor_core_gemm(A, B, acc="fp32")
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(C16 - ref).max() > np.abs(C32 - ref).max()
    chk = check.check_gemm(C16, A, B, inputs="fp16", acc="fp16", block=16,
                              backend="test")
    assert chk.passed, str(chk)


def test_fp16_block_rounding_differs_from_numpy_float16_matmul():
    # numpy rounds once at the end; the FP16 accumulator rounds after every block
    rng = np.random.default_rng(8)
    A = (rng.random((4, 256)) + 1).astype(np.float16)
    B = (rng.random((256, 4)) + 1).astype(np.float16)
    emu = tensor_core_gemm(A, B, acc="fp16")
    once = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float16)
    assert (emu != once).any()
    assert (emu != A @ B).any()


# --------------------------------------------------------------------------- helpers
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_round_f32_toward_zero():
    x = np.array([1 + 2.0**-24, -(1 + 2.0**-24), 1 + 3 * 2.0**-24, 1.0, 1e39, -1e39])
    r = emulate._round_f32_toward_zero(x)
    assert r.dtype == np.float32
    assert list(r[:4]) == [1.0, -1.0, np.float32(1 + 2.0**-23), 1.0]
    assert r[4] == np.finfo(np.float32).max and r[5] == -np.finfo(np.float32).max


# --------------------------------------------------------------------------- lesson 4: the fitted H200 model
def test_products_aligned_before_normalisation():
    # 1.5 x 1.5 = 2.25 sets the window as 2^0 (e(a) + e(b)), so 1.5 x 2^-24 terms keep a bit at 2^-25
    T = 2.0 ** -24
    A = np.array([[1.5] + [T] * 7], np.float16)
    B = np.array([[1.5]] + [[1.5]] * 7, np.float16)
    got = tensor_core_gemm(A, B)[0, 0]
    textbook = tensor_core_gemm(A, B, model=TensorCoreModel(16, 2, "t", normalised_products=True))[0, 0]
    assert got == np.float32(2.25 + 2.0 ** -21)
    assert textbook == np.float32(2.25 + 2.0 ** -22)


def test_tensor_core_mma_with_c_and_threads():
    A, B = _fp16_inputs(40, 24, 64, seed=50)
    C0 = numerics.random_matrix(40, 24, seed=52)
    D = emulate.tensor_core_mma(A, B, C0)
    # one block per 16: feeding C0 as the first accumulator equals an extra leading product row
    assert D.dtype == np.float32
    np.testing.assert_array_equal(emulate.tensor_core_gemm(A, B, threads=3, max_temp_bytes=1),
                                  emulate.tensor_core_gemm(A, B, threads=1))
    assert not np.array_equal(D, emulate.tensor_core_gemm(A, B))


def test_truncation_sign_and_fp32_rounding_options():
    A = np.array([[1, 1]], np.float16)
    B = np.array([[-2], [-(2.0 ** -23 + 2.0 ** -24)]], np.float16)
    assert tensor_core_gemm(A, B)[0, 0] == -2.0
    assert tensor_core_gemm(A, B, model=TensorCoreModel(16, 2, "t", fp32_rounding="nearest"))[0, 0] \
        == np.float32(-(2 + 2.0 ** -22))
    with pytest.raises(ValueError):
        TensorCoreModel(16, 2, "t", truncation="sideways")


def test_subnormal_fp16_inputs_are_kept():
    A = np.array([[2.0 ** -24]], np.float16)
    B = np.array([[4.0]], np.float16)
    assert tensor_core_gemm(A, B)[0, 0] == np.float32(2.0 ** -22)


def test_fp16_overflow_gives_inf_without_numpy_warnings():
    """An FP16 accumulator past 65504 becomes Inf, as on the GPU, and numpy's 'overflow encountered in
    cast' does not leak into the learner's cell (the check says so instead)."""
    import warnings

    A = np.full((4, 64), 200, np.float16)
    B = np.full((64, 4), 200, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C = tensor_core_gemm(A, B, inputs="fp16", acc="fp16")
    assert np.all(np.isinf(C))
    from helpers.check import check_gemm

    chk = check_gemm(C, A, B, inputs="fp16", acc="fp16", block=16, backend="test")
    assert not chk.passed and "overflowed" in str(chk)


def test_arithmetic_is_the_cpu_model_and_its_memo_returns_copies():
    """helpers.emulate.Arithmetic called on numpy arrays is the kernel's CPU model; a second call on the
    same numbers answers from its memo with an independent copy (a learner may change the first)."""
    from helpers.formats import from_bf16_bits, to_bf16_bits

    A = numerics.random_matrix(20, 70, seed=1)
    B = numerics.random_matrix(70, 30, seed=2)
    ar = emulate.Arithmetic("bf16", "fp32", emulate.DEFAULT_TC_MODEL, takes="bf16_bits")
    Ab, Bb = to_bf16_bits(A), to_bf16_bits(B)
    C1 = ar(Ab, Bb)
    assert np.array_equal(C1, tensor_core_gemm(from_bf16_bits(Ab), from_bf16_bits(Bb), inputs="bf16"))
    C1[0, 0] = 12345.0
    C2 = ar(Ab, Bb)
    assert C2[0, 0] != 12345.0 and C2 is not C1
    Bb2 = Bb.copy()
    Bb2[0, 0] ^= 1                                # one bit of one input changed: computed anew
    assert not np.array_equal(ar(Ab, Bb2), C2)
    assert np.array_equal(emulate.Arithmetic("fp32")(A, B), fp32_fma_chain(A, B))
