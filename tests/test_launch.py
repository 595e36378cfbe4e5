"""helpers.launch on the CPU backend: validation (every learner mistake gives a specific Fix) and padding."""
from __future__ import annotations

import numpy as np
import pytest

import helpers
import helpers.launch
from helpers import CourseError, InputError


def f16(m, n, seed=0):
    return np.random.default_rng(seed).standard_normal((m, n)).astype(np.float16)


def f32(m, n, seed=0):
    return np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)


def raises_input_error(fn, *hints):
    with pytest.raises(InputError) as ei:
        fn()
    msg = str(ei.value)
    assert "Fix:" in msg, msg
    for h in hints:
        assert h in msg, f"{h!r} not in message:\n{msg}"
    return msg


# --------------------------------------------------------------------------- dtype
def test_float64_to_gemm_fp32_mentions_astype():
    A = np.ones((16, 16))
    msg = raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "astype", "float32")
    assert "float64" in msg


def test_float32_to_wmma_mixed_mentions_astype():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(16, 16), f32(16, 16)), "astype", "float16")
    assert msg.startswith("B ")          # names the offending argument


def test_float16_to_gemm_fp32_rejected():
    raises_input_error(lambda: helpers.gemm_fp32(f16(16, 16), f16(16, 16)), "astype(np.float32)")


# --------------------------------------------------------------------------- layout
@pytest.mark.parametrize("view", ["stride", "transpose"])
def test_non_contiguous_mentions_ascontiguousarray(view):
    base = f16(32, 64)
    A = base[:, ::2] if view == "stride" else f16(32, 32).T
    assert not A.flags.c_contiguous
    raises_input_error(lambda: helpers.wmma_mixed(A, f16(32, 16)), "ascontiguousarray")
    # the fix works
    C = helpers.wmma_mixed(np.ascontiguousarray(A), f16(32, 16))
    assert C.shape == (32, 16)


def test_non_contiguous_fp32():
    A = f32(16, 32)[:, ::2]
    raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "ascontiguousarray")


# --------------------------------------------------------------------------- shapes
def test_mismatched_inner_dims_mention_both_shapes():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(16, 48), f16(32, 16)), "16x48", "32x16")
    assert "inner" in msg


def test_mismatched_inner_dims_fp32():
    raises_input_error(lambda: helpers.gemm_fp32(f32(3, 5), f32(4, 2)), "3x5", "4x2")


@pytest.mark.parametrize("fn", [helpers.gemm_fp32, helpers.wmma_mixed])
def test_one_dimensional_input(fn):
    dt = np.float32 if fn is helpers.gemm_fp32 else np.float16
    a = np.ones(16, dtype=dt)
    msg = raises_input_error(lambda: fn(a, np.ones((16, 16), dtype=dt)), "reshape")
    assert "1 dimensions" in msg


def test_three_dimensional_input():
    raises_input_error(lambda: helpers.gemm_fp32(np.ones((2, 4, 4), np.float32), f32(4, 4)), "3 dimensions")


@pytest.mark.parametrize("shape_a,shape_b", [((0, 16), (16, 16)), ((16, 16), (16, 0)), ((16, 0), (0, 16))])
def test_empty(shape_a, shape_b):
    A = np.zeros(shape_a, np.float16)
    B = np.zeros(shape_b, np.float16)
    raises_input_error(lambda: helpers.wmma_mixed(A, B), "empty")


def test_size_not_multiple_of_16_suggests_pad_and_padded_size():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(20, 16), f16(16, 16)), "pad=True", "32", "M=20")
    assert "M->32" in msg
    assert "N=" not in msg.split("\n")[0] and "K=" not in msg.split("\n")[0]   # only M is wrong


def test_several_bad_sizes_listed():
    msg = raises_input_error(lambda: helpers.gemm("wmma_gemm_naive", f16(20, 24), f16(24, 18)),
                             "M=20", "N=18", "K=24", "M->32", "N->32", "K->32")


def test_plain_list_rejected():
    A = [[1.0] * 16] * 16
    msg = raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "np.asarray")
    assert "list" in msg


def test_fp32_kernel_accepts_any_size():
    A, B = f32(5, 7), f32(7, 3)
    C = helpers.gemm_fp32(A, B)
    assert C.shape == (5, 3) and C.dtype == np.float32
    assert helpers.KERNELS["gemm_fp32_kernel"].check(C, A, B).passed


def test_input_error_is_value_error_and_course_error():
    with pytest.raises(ValueError):
        helpers.gemm_fp32(np.ones(3, np.float32), f32(3, 3))
    with pytest.raises(CourseError):
        helpers.gemm_fp32(np.ones(3, np.float32), f32(3, 3))


# --------------------------------------------------------------------------- padding
def test_pad_true_product_works():
    A = np.random.default_rng(1).standard_normal((20, 24)).astype(np.float16)
    B = np.random.default_rng(2).standard_normal((24, 18)).astype(np.float16)
    C = helpers.gemm("wmma_mixed_gemm_kernel", A, B, pad=True)
    assert C.shape == (20, 18)
    assert C.dtype == np.float32
    assert not np.isnan(C).any()
    chk = helpers.KERNELS["wmma_mixed_gemm_kernel"].check(C, A, B)
    assert chk.passed, str(chk)
    # same answer as the product of explicitly zero-padded matrices, cropped
    Ap = np.zeros((32, 32), np.float16)
    Bp = np.zeros((32, 32), np.float16)
    Ap[:20, :24] = A
    Bp[:24, :18] = B
    np.testing.assert_array_equal(helpers.wmma_mixed(Ap, Bp)[:20, :18], C)


def test_pad_true_fp16acc():
    A = np.random.default_rng(3).standard_normal((20, 24)).astype(np.float16)
    B = np.random.default_rng(4).standard_normal((24, 18)).astype(np.float16)
    C = helpers.wmma_fp16acc(A, B, pad=True)
    assert C.shape == (20, 18) and C.dtype == np.float16
    chk = helpers.KERNELS["wmma_fp16acc_gemm_kernel"].check(C, A, B)
    assert chk.passed, str(chk)


def test_prepare_pads_with_zeros():
    A = f16(20, 24)
    B = f16(24, 18)
    spec, Ap, Bp, (M, N, K), padded = helpers.launch.prepare("wmma_mixed_gemm_kernel", A, B, pad=True)
    assert (M, N, K) == (20, 18, 24)
    assert padded == (32, 32, 32)
    assert Ap.shape == (32, 32) and Bp.shape == (32, 32)
    np.testing.assert_array_equal(Ap[:20, :24], A)
    assert not Ap[20:].any() and not Ap[:, 24:].any()
    assert not Bp[24:].any() and not Bp[:, 18:].any()
