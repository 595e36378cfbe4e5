"""Lesson 7's FP8 kernels on a GPU: each correct (the course's check, bit-identical to its model on
the H200) at sizes that are not tile multiples, and NaN-poisoned outputs fully written."""
import os

import numpy as np
import pytest

from helpers.device import backend

pytestmark = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                                reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


@pytest.mark.parametrize("shape", [(40, 24, 56), (257, 520, 136), (1000, 1064, 1000)])
@pytest.mark.parametrize("kernel", ["fp8_mma_sync", "fp8_wgmma", "fp8_wgmma_n128", "fp8_promote_32",
                                    "fp8_promote_128", "fp8_promote_pingpong", "fp8_promote_512"])
def test_fp8_kernel_correct(kernel, shape):
    from helpers import fp8_gemm as F
    from helpers.experiments import fp8 as X

    spec = F.FP8_KERNELS[kernel]
    cc = backend().gpu.cc
    if cc < spec.min_cc or (spec.wgmma and cc != (9, 0)):
        pytest.skip(f"{kernel} does not run on sm_{cc[0]}{cc[1]}")
    m, n, k = shape
    A, B = X.random_inputs(m, n, k, "normal", 5)
    C, where = F.matmul(kernel, A, B)
    assert "ran on" in where
    assert not np.isnan(C).any()
    chk = X.check_fp8(kernel, C, A, B, backend="GPU")
    assert chk.passed, chk.verdict()
    if cc == (9, 0):
        assert chk.model == "identical", chk.verdict()
