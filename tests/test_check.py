"""helpers.check: what the result check accepts, what it refuses (with the fix), and its three parts."""
import numpy as np
import pytest

import helpers
from helpers import numerics
from helpers.check import answer_scaled_bound, check_gemm, encode_inputs
from helpers.errors import CourseError, InputError, UnknownFormatError
from helpers.formats import to_bf16_bits


def _fp16(m, n, k, seed=0):
    A = helpers.random_matrix(m, k, seed=seed).astype(np.float16)
    B = helpers.random_matrix(k, n, seed=seed + 1).astype(np.float16)
    return A, B


SPEC = helpers.KERNELS["wmma_mixed_gemm_kernel"]


def test_bf16_check_takes_the_bits_gemm_takes():
    """The check reads uint16 BF16 bits as BF16 numbers (it once read them as integers and failed a
    correct result, expecting 3.7e10)."""
    spec = helpers.KERNELS["wmma_bf16_gemm_kernel"]
    A32, B32 = helpers.random_matrix(40, 72, seed=1), helpers.random_matrix(72, 24, seed=2)
    A, B = to_bf16_bits(A32), to_bf16_bits(B32)
    C = helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
    chk = spec.check(C, A, B)
    assert chk.passed, str(chk)
    assert chk.tol.in_term == 0                 # BF16 inputs: nothing left to round
    orig = spec.check(C, A32, B32)              # the original FP32 data: the input term is charged
    assert orig.passed and orig.tol.in_term > 0


def test_no_input_term_when_inputs_already_in_format():
    A, B = _fp16(24, 24, 200)
    C = SPEC.emulate(A, B)
    chk = SPEC.check(C, A, B)
    assert chk.passed and chk.tol.in_term == 0
    chk32 = SPEC.check(C, A.astype(np.float32), B.astype(np.float32))    # FP16 values held in FP32
    assert chk32.tol.in_term == 0
    A32 = helpers.random_matrix(24, 200, seed=5)
    chk_orig = SPEC.check(SPEC.emulate(A32.astype(np.float16), B), A32, B)
    assert chk_orig.passed and chk_orig.tol.in_term > 0


def test_tf32_check_uses_the_kernels_rounding():
    spec = helpers.KERNELS["wmma_tf32_gemm_kernel"]
    A, B = helpers.random_matrix(32, 40, seed=3), helpers.random_matrix(40, 32, seed=4)
    C = helpers.gemm("wmma_tf32_gemm_kernel", A, B, pad=True)
    chk = spec.check(C, A, B)
    assert chk.passed and chk.model == "identical", str(chk)


@pytest.mark.parametrize("bad,words", [
    (None, "None"),
    ("zeros-transposed", "transposed"),
    ("int", "float array"),
    ("float64", "not a fp32 number"),
])
def test_check_refuses_a_wrong_c_with_the_fix(bad, words):
    A, B = _fp16(24, 40, 32)
    C = SPEC.emulate(A, B)
    C = {None: None, "zeros-transposed": np.zeros((40, 24), np.float32), "int": C.astype(np.int32),
         "float64": C.astype(np.float64) + 1e-12}[bad]
    with pytest.raises(InputError) as e:
        SPEC.check(C, A, B)
    assert words in str(e.value) and "Fix:" in str(e.value)


def test_check_refuses_inputs_that_do_not_fit():
    A, B = _fp16(24, 40, 32)
    C = SPEC.emulate(A, B)
    with pytest.raises(InputError, match="A's columns must equal B's rows"):
        SPEC.check(C, A, B[:16])
    with pytest.raises(InputError, match="does not accept"):
        SPEC.check(C, A.view(np.uint16), B)
    with pytest.raises(InputError, match="2-D"):
        SPEC.check(C, A[0], B)
    with pytest.raises(InputError, match="not an array"):
        SPEC.check(C, A.tolist(), B)


def test_reinterpreted_bf16_bits_are_named():
    spec = helpers.KERNELS["wmma_bf16_gemm_kernel"]
    A32, B32 = helpers.random_matrix(16, 32, seed=1), helpers.random_matrix(32, 16, seed=2)
    A, B = to_bf16_bits(A32), to_bf16_bits(B32)
    C = helpers.gemm("wmma_bf16_gemm_kernel", A, B)
    with pytest.raises(InputError, match=r"astype\(np.uint16\)"):
        spec.check(C, (A32 * 1000).astype(np.uint16), B)           # integers, not bit patterns
    with pytest.raises(InputError, match="FP16, a different format"):
        spec.check(C, A32.astype(np.float16), B)


def test_unknown_format_and_bad_tolerance_arguments_are_course_errors():
    with pytest.raises(UnknownFormatError) as e:
        numerics.tolerance(100, "fp12", "fp32")
    assert isinstance(e.value, KeyError) and "fp16" in str(e.value) and "Fix:" in str(e.value)
    for kw in ({"K": 0}, {"K": -3}, {"K": 2.5}):
        with pytest.raises(InputError, match="K"):
            numerics.tolerance(kw["K"], "fp16", "fp32")
    with pytest.raises(CourseError, match="nearest"):
        numerics.tolerance(10, "fp16", "fp32", acc_rounding="up")
    A, B = _fp16(8, 8, 16)
    with pytest.raises(InputError, match="not a format"):
        check_gemm(SPEC.emulate(A, B), A, B, inputs="half", acc="fp32")


def test_answer_scaled_bound_follows_the_answer_not_abs_a_abs_b():
    """On zero-mean data the partial sums grow like sqrt(K), |A||B| like K: the bound of part 2 is
    far below part 1's at large K, and still above the real error."""
    A, B = _fp16(8, 8, 16384, seed=7)
    bound, P = answer_scaled_bound(A, B, acc="fp16", acc_rounding="nearest", block=16)
    tol = numerics.tolerance(16384, "fp16", "fp16", block=16, inputs_rounded_in_reference=True)
    assert np.median(bound / (tol.value * P)) < 0.2
    C = helpers.emulate.tensor_core_gemm(A, B, acc="fp16").astype(np.float64)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    assert np.all(np.abs(C - exact) <= bound)


def test_large_products_compare_every_element_with_the_model():
    """Above the old sample threshold (2^26 products) every element is still compared: a single element
    one unit in the last place off, in a cell no 64 x 64 sample was sure to hold, fails the check."""
    A, B = _fp16(512, 520, 300, seed=9)          # 512*520*300 > MODEL_FULL_PRODUCTS
    C = SPEC.emulate(A, B)
    chk = SPEC.check(C, A, B)
    assert chk.passed and chk.model == "identical" and chk.model_cells == 512 * 520
    assert "all 266240 elements" in chk.verdict() and chk.model_where == "CPU"
    for i, j in ((0, 0), (511, 519), (300, 7), (5, 400)):
        W = C.copy()
        W[i, j] = np.nextafter(W[i, j], np.float32(np.inf))
        bad = SPEC.check(W, A, B)
        assert not bad.passed and bad.model_mismatch == 1 and bad.model_first[:2] == (i, j)


def test_a_model_without_a_gpu_version_says_it_compared_a_sample(monkeypatch):
    """Only a plain-function model given CuPy-like arrays above the threshold falls back to a sample,
    and the verdict says so (numpy stands in for CuPy: helpers.check treats it as the GPU side)."""
    import helpers.check as chk_mod

    A, B = _fp16(512, 520, 300, seed=9)
    C = SPEC.emulate(A, B)
    plain = lambda X, Y: helpers.emulate.tensor_core_gemm(X, Y, inputs="fp16", acc="fp32")  # noqa: E731
    p = {"Ak": A, "Bk": B, "C64": C.astype(np.float64)}
    Em, Cs, rows, cols, where = chk_mod._model_values(plain, p, object(), 512, 520, 300)
    assert rows is not None and len(rows) == 64 and len(cols) == 64 and where == "CPU"
    assert np.array_equal(Em, Cs)


def test_order_unknown_skips_the_answer_scaled_bound():
    A, B = _fp16(16, 16, 64)
    C = (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float16)
    chk = check_gemm(C, A, B, inputs="fp16", acc="fp32", output="fp16", acc_rounding="truncate", block=16,
                     order="unknown")
    assert chk.passed and not chk.size_applies and "answer-scaled" not in chk.verdict()


def test_encode_inputs_matches_what_the_kernels_take():
    X = helpers.random_matrix(4, 4, seed=0)
    assert encode_inputs(X, "fp16").dtype == np.float16
    assert encode_inputs(X, "bf16").dtype == np.uint16
    assert encode_inputs(X, "tf32").dtype == np.float32


def test_gemm_refuses_integers_passed_as_bf16_bits():
    A32 = helpers.random_matrix(16, 32, seed=1)
    B = to_bf16_bits(helpers.random_matrix(32, 16, seed=2))
    with pytest.raises(InputError, match=r"astype\(np.uint16\)"):
        helpers.gemm("wmma_bf16_gemm_kernel", (A32 * 100).astype(np.uint16), B)
