"""GPU tests of the result check (helpers.check), run with COURSE_DEVICE=gpu; skipped elsewhere.

Every kernel's correct results pass over seeded shapes, bit-identical to the CPU model (the H200),
with the check's float64 work done on the GPU; an FP16-accumulated result at K = 65536 passes while
C = 0 fails; a wrong result made from a kernel's output fails.
"""
import os

import numpy as np
import pytest

import helpers
from helpers.experiments import check as X
from helpers.kernels import KERNELS

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


@gpu
def test_correct_results_pass_over_seeds_and_long_k():
    out = X.false_alarms(seeds=8, max_k=20000, large=False)    # the large products: the recorded experiment
    fitted = tuple(helpers.backend().gpu.cc) in helpers.check.MODEL_FITTED_CC
    for r in out["kernels"]:
        if "skipped" in r:
            continue
        assert "error" not in r, r
        assert r["passed"] == r["products"] == 8, r["failures"]
        if fitted:
            assert r["model_identical"] == r["products"], r
    lk = out["long_k"]
    assert lk["correct"]["passed"] and not lk["zeros"]["passed"]


@gpu
@pytest.mark.parametrize("name", ["gemm_fp32_kernel", "wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel",
                                  "ladder_mma_sync"])
def test_wrong_results_of_a_gpu_kernel_fail(name):
    import cupy

    spec = KERNELS[name]
    if spec.skip_message(helpers.backend().gpu.cc):
        pytest.skip(spec.skip_message(helpers.backend().gpu.cc))
    A32, B32 = helpers.random_matrix(72, 1000, seed=1), helpers.random_matrix(1000, 72, seed=2)
    A, B = (helpers.check.encode_inputs(x, spec.inputs) for x in (A32, B32))
    C = cupy.asnumpy(helpers.gemm(spec, cupy.asarray(A), cupy.asarray(B), pad=True))
    assert spec.check(C, A, B).passed
    Av, Bv = A.astype(np.float64), B.astype(np.float64)
    for what, W in helpers.check.wrong_results(C, Av, Bv, inputs=spec.inputs, acc=spec.acc, block=spec.acc_block,
                                               originals=(A32, B32)).items():
        assert not spec.check(W, A, B).passed, what
