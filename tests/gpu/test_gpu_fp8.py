"""Lesson 7's FP8 kernels on a GPU: each correct (the course's check, bit-identical to its model on
the H200) at sizes that are not tile multiples, and NaN-poisoned outputs fully written."""
import os

import numpy as np
import pytest

from helpers.device import backend

pytestmark = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                                reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


@pytest.mark.parametrize("shape", [(40, 24, 56), (257, 520, 136), (1000, 1064, 1000)])
@pytest.mark.parametrize("kernel", ["fp8_mma_sync", "fp8_wgmma", "fp8_wgmma_store", "fp8_wgmma_n128", "fp8_promote_32",
                                    "fp8_promote_128", "fp8_promote_2acc_lean", "fp8_promote_512"])
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


@pytest.mark.parametrize("shape", [(40, 24, 100), (264, 136, 840), (520, 264, 1100), (1000, 1064, 1000)])
@pytest.mark.parametrize("kernel", ["fp8_promote_256", "fp8_promote_512"])
def test_the_period_switch_leaves_the_sums_bit_for_bit(kernel, shape):
    """F8_PERIOD=2 (kernels/fp8_promote_sm90a.cu: the adds at a period's end only, the default) writes the first record's
    build's (F8_PERIOD=0) C bit for bit (F8_PERIOD=1, which also did, left the file: commit 17ad692), with 1, 7, 9 and 8 K-tiles (whole periods, and a last, shorter one), each
    output NaN-poisoned first."""
    import cupy

    from helpers import fp8_gemm as F
    from helpers.experiments import fp8 as X

    if tuple(backend().gpu.cc) != (9, 0):
        pytest.skip("the wgmma kernels are sm_90a code")
    m, n, k = shape
    A, B = X.random_inputs(m, n, k, "normal", 7)
    A8, Bt8 = cupy.asarray(F.encode_e4m3(A)), cupy.asarray(F.encode_e4m3(B.T.copy()))
    out = []
    for opts in (("-DF8_PERIOD=0",), ()):           # () : the default, F8_PERIOD=2
        run, C = F.launcher(kernel, A8, Bt8, options=opts)
        run()
        out.append(cupy.asnumpy(C[:, :n]))
    assert not np.isnan(out[0]).any() and not np.isnan(out[1]).any()
    assert np.array_equal(out[0].view(np.uint32), out[1].view(np.uint32))
    chk = X.check_fp8(kernel, out[1], A, B, backend="GPU")
    assert chk.passed and chk.model == "identical", chk.verdict()


# --------------------------------------------------------------------------- fp8_block_scaled
def _need_hopper():
    cc = backend().gpu.cc
    if tuple(cc) != (9, 0):
        pytest.skip(f"fp8_block_scaled is sm_90a code; this GPU is sm_{cc[0]}{cc[1]}")


BLOCK_CASES = ([((40, 24, 256), k) for k in ("normal", "outlier activations", "varied weight blocks")]
               + [((40, 24, 200), "outlier activations")]
               + [((257, 520, 136), k) for k in ("normal", "outlier activations", "varied weight blocks")]
               + [((1000, 1064, 1000), "normal"), ((1000, 1064, 1000), "outlier activations"),
                  ((1024, 1024, 1024), "normal"), ((1024, 1024, 1024), "gpu random")])


@pytest.mark.parametrize("shape,kind", BLOCK_CASES, ids=[f"{m}x{n}x{k}-{w}" for (m, n, k), w in BLOCK_CASES])
def test_fp8_block_scaled_identical_to_its_model(shape, kind):
    """Every element within the bound and equal to the GPU model (and, up to 2^25 products, the numpy model)."""
    from helpers.experiments import fp8_scaled as X

    _need_hopper()
    row = X.run_block_scaled_checks([(shape, (kind,))])[0]
    assert row["check_passed"] and row["model"] == "identical" and row["mismatches"] == 0, row["check"]
    assert row["nan"] == 0 and row.get("cpu_model_mismatches", 0) == 0, row


def test_fp8_block_scaled_output_poisoned_then_fully_written():
    import cupy

    from helpers import fp8_scaled as F

    _need_hopper()
    A8, Bt8, sa, sb, Aq, Bq = F.gpu_block_scaled_inputs(257, 520, 136, 1)
    run, C = F.block_scaled_launcher(A8, Bt8, sa, sb)
    assert bool(cupy.isnan(C).all())                       # NaN before the launch
    run()
    assert not bool(cupy.isnan(C[:, :520]).any())
    assert F.check_block_scaled(C[:, :520], Aq, Bq, sa, sb).passed


def test_block_scaled_front_ends_on_the_gpu():
    from helpers import fp8_scaled as F

    _need_hopper()
    A, B = F.scaling_inputs("outlier activations", 40, 24, 200, 1)
    C, where = F.block_scaled_matmul(A, B)
    assert "ran on" in where
    assert np.array_equal(C, F.block_scaled_model(*F.block_scaled_operands(A, B)))
    rows = {(r["inputs"], r["scaling"]): r for r in F.scaling_error_table()}
    assert all("ran on" in r["ran"] for r in rows.values())
    for kind in ("outlier activations", "varied weight blocks"):
        assert rows[kind, "per tensor"]["median rel. error"] > 3 * rows[kind, F.SCALINGS[1]]["median rel. error"]


def test_launcher_refuses_more_ctas_than_sms():
    """fp8_gemm.launcher(ctas=): more CTAs than SMs is refused with the fix named (a persistent grid is one CTA per SM
    at most); as many as the SMs runs and is correct."""
    from helpers import fp8_gemm as F
    from helpers.errors import InputError
    from helpers.experiments import fp8 as X

    _need_hopper()
    import cupy

    sms = backend().gpu.sms
    A, B = X.random_inputs(1000, 1064, 1000, "normal", 6)
    A8, Bt8 = cupy.asarray(F.encode_e4m3(A)), cupy.asarray(F.encode_e4m3(B.T.copy()))
    with pytest.raises(InputError, match=f"pass at most ctas={sms}"):
        F.launcher("fp8_wgmma_store", A8, Bt8, ctas=sms + 1)
    run, C = F.launcher("fp8_wgmma_store", A8, Bt8, ctas=sms - 4)
    run()
    assert X.check_fp8("fp8_wgmma_store", cupy.asnumpy(C[:, :1064]), A, B, backend="GPU").passed
