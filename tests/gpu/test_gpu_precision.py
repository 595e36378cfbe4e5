"""GPU tests for lesson 4 (precision): run with COURSE_DEVICE=gpu on a CUDA GPU (skipped elsewhere).

The probe kernels answer the hand-derived probe questions; the GEMMs of the error
study match the CPU model bit for bit; the emulator reproduces the WMMA output.
"""
import os

import numpy as np
import pytest

import helpers
from helpers import emulate
from helpers.experiments import precision as P

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


@gpu
@pytest.mark.parametrize("kind", sorted(P._PROBE_KERNELS))
def test_probe_kernels_match_the_model(kind):
    cases = [c for c in P.probe_cases() if (c["fmt"], c["acc"]) == kind]
    if helpers.backend().gpu.cc < P._PROBE_KERNELS[kind][1]:
        pytest.skip("GPU too old for this probe")
    got = P._run_probe_batch(cases)
    bad = [(c["name"], g, P.emulate_probe(c)) for c, g in zip(cases, got) if g != P.emulate_probe(c)]
    # the model is fitted to FP16/FP32; report every disagreement for the other formats
    assert not bad, "\n".join(f"{n}: GPU {g!r}, model {m!r}" for n, g, m in bad)


@gpu
def test_probe_subnormal_and_exact_product_fp16():
    cases = [c for c in P.probe_cases() if c["fmt"] == "fp16" and c["acc"] == "fp32"][:2]
    got = P._run_probe_batch(cases)
    assert got[0] == cases[0]["expect"]["subnormals kept"]
    assert got[1] == cases[1]["expect"]["exact product"]


@gpu
@pytest.mark.parametrize("name", list(P.ARITHMETICS))
def test_error_study_gemms_match_emulation(name):
    inputs = P.ARITHMETICS[name][0]
    A, B = P.error_inputs(208, "normal", 48, 32)
    A_r = helpers.numerics.round_to(A, inputs).astype(np.float64)
    B_r = helpers.numerics.round_to(B, inputs).astype(np.float64)
    g = P._gpu_arithmetic(name, A_r, B_r)
    e = P.emulate_arithmetic(name, A_r, B_r)
    assert np.mean(g == e) >= 0.999, f"{name}: identical {np.mean(g == e):.4f}"
    chk = helpers.check_gemm(g, A_r, B_r, inputs=inputs, acc=P.ARITHMETICS[name][1],
                             acc_rounding="truncate" if inputs != "fp32" and P.ARITHMETICS[name][1] == "fp32"
                             else "nearest", block=1 if inputs == "fp32" else 4 if inputs == "tf32" else 16)
    assert chk.passed, str(chk)


@gpu
def test_emulator_matches_wmma_fp32_accumulator_bit_for_bit():
    import cupy

    from helpers.launch import launcher

    A, B = P.match_inputs(256, seed=5)
    run, C, _ = launcher("wmma_mixed_gemm_kernel", cupy.asarray(A), cupy.asarray(B))
    run()
    st = P.match_stats(cupy.asnumpy(C), emulate.tensor_core_gemm(A, B))
    assert st["identical"] >= 0.999, st


@gpu
def test_fp16_accumulator_stagnation_on_gpu():
    A, B = P.stagnation_inputs(4096 * 16)
    g = P._gpu_arithmetic("fp16 in, fp16 acc", A, B)
    e = emulate.tensor_core_gemm(A, B, acc="fp16")
    assert g[0, 0] == e[0, 0] < 4096 * 16


@gpu
@pytest.mark.parametrize("name", ["wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel"])
def test_error_study_kernels_on_odd_sizes(name):
    # sizes that are neither powers of two nor multiples of 16, zero-padded by the helper
    A = helpers.random_matrix(100, 1000, seed=61, dist="uniform")
    B = helpers.random_matrix(1000, 52, seed=62, dist="uniform")
    spec = helpers.KERNELS[name]
    C = helpers.gemm(name, A.astype(np.float16), B.astype(np.float16), pad=True)
    assert spec.check(C, A, B).passed
    np.testing.assert_array_equal(C, spec.emulate(A.astype(np.float16), B.astype(np.float16)))
