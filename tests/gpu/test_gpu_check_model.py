"""GPU tests of the check's model on CUDA cores (helpers.model_gpu, kernels/check_model.cu), run with
COURSE_DEVICE=gpu; skipped elsewhere.

The GPU model must equal the CPU model (helpers.emulate) bit for bit for every kernel's arithmetic,
on ordinary data, on data with subnormal inputs and FP16 overflow, at sizes off every tile grid; the
check must then compare every element of a 4096^3 product on the GPU and reject one element, one row
or one edge tile changed there; and the model must be fast enough to run before every timing.
"""
import os
import time

import numpy as np
import pytest

import helpers
from helpers import emulate
from helpers.check import encode_inputs, local_mutations
from helpers.fp8_gemm import cpu_model
from helpers.kernels import KERNELS

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")

ARITHMETIC = {
    "fp32 FMA chain": (emulate.Arithmetic("fp32"), "fp32"),
    "fp16 -> fp32": (KERNELS["wmma_mixed_gemm_kernel"].emulate, "fp16"),
    "fp16 -> fp16": (KERNELS["wmma_fp16acc_gemm_kernel"].emulate, "fp16"),
    "bf16 -> fp32": (KERNELS["wmma_bf16_gemm_kernel"].emulate, "bf16"),
    "tf32 -> fp32": (KERNELS["wmma_tf32_gemm_kernel"].emulate, "tf32"),
    "V100 model": (emulate.Arithmetic("fp16", "fp32", emulate.V100_MODEL), "fp16"),
    "A100 model, fp16 acc": (emulate.Arithmetic("fp16", "fp16", emulate.A100_MODEL), "fp16"),
    "round to nearest, floor cut": (emulate.Arithmetic("fp16", "fp32", emulate.TensorCoreModel(
        16, 2, "test", truncation="toward-minus-inf", fp32_rounding="nearest")), "fp16"),
    "fp8 wgmma": (cpu_model("fp8_wgmma"), "fp8"),
    "fp8 promote 128": (cpu_model("fp8_promote_128"), "fp8"),
    "fp8 promote 32": (cpu_model("fp8_promote_32"), "fp8"),
    "fp8 mma.sync": (cpu_model("fp8_mma_sync"), "fp8"),
}
SHAPES = [(37, 45, 300, "normal", 1.0), (130, 77, 1000, "uniform", 1.0), (33, 17, 96, "normal", 2.0 ** -12),
          (24, 40, 2000, "uniform", 64.0)]


def _inputs(kind, m, n, k, dist, scale, seed):
    A = helpers.random_matrix(m, k, seed=seed, dist=dist) * np.float32(scale)
    B = helpers.random_matrix(k, n, seed=seed + 1, dist=dist) * np.float32(scale)
    if kind == "fp8":
        from helpers.fp8_gemm import decode_e4m3, encode_e4m3

        A = decode_e4m3(encode_e4m3(np.clip(A, -448, 448))).astype(np.float32)
        B = decode_e4m3(encode_e4m3(np.clip(B, -448, 448))).astype(np.float32)
        return A, B
    return encode_inputs(A, kind), encode_inputs(B, kind)


@gpu
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{s[0]}x{s[1]}x{s[2]}-{s[3]}-x{s[4]:g}" for s in SHAPES])
@pytest.mark.parametrize("what", list(ARITHMETIC))
def test_gpu_model_equals_the_cpu_model_bit_for_bit(what, shape):
    import cupy

    ar, kind = ARITHMETIC[what]
    m, n, k, dist, scale = shape
    A, B = _inputs(kind, m, n, k, dist, scale, seed=m * n + k)
    cpu = np.asarray(ar(A, B))
    dev = cupy.asnumpy(ar.gpu(cupy.asarray(A), cupy.asarray(B)))
    assert dev.dtype == cpu.dtype and dev.shape == cpu.shape
    same = (dev.view(np.uint8).reshape(m, n, -1) == cpu.view(np.uint8).reshape(m, n, -1)).all(axis=2)
    assert same.all(), (f"{int((~same).sum())} of {same.size} differ; first at "
                        f"{np.argwhere(~same)[0].tolist()}: GPU {dev[~same][0]!r}, CPU {cpu[~same][0]!r}")


@gpu
@pytest.mark.parametrize("name", ["wmma_fp16acc_gemm_kernel", "ladder_mma_sync", "wmma_bf16_gemm_kernel"])
def test_check_compares_every_element_of_a_4096_cube_and_rejects_local_mutations(name):
    import cupy

    spec = KERNELS[name]
    if spec.skip_message(helpers.backend().gpu.cc):
        pytest.skip(spec.skip_message(helpers.backend().gpu.cc))
    n = 4096
    A = cupy.asarray(encode_inputs(helpers.random_matrix(n, n, seed=5, dist="uniform"), spec.inputs))
    B = cupy.asarray(encode_inputs(helpers.random_matrix(n, n, seed=6, dist="uniform"), spec.inputs))
    C = helpers.gemm(spec, A, B, pad=True)
    chk = spec.check(C, A, B)
    assert chk.passed and chk.model == "identical", str(chk)
    assert chk.model_cells == n * n and chk.model_where == "GPU"
    assert f"all {n * n} elements" in chk.verdict()
    for what, W in local_mutations(C, seed=1).items():
        bad = spec.check(W, A, B)
        assert not bad.passed and bad.model == "differs", what


@gpu
def test_gpu_model_is_fast_enough_to_run_before_every_timing():
    import cupy

    ar = KERNELS["wmma_mixed_gemm_kernel"].emulate
    n = 8192
    A = cupy.asarray(helpers.random_matrix(n, n, seed=1).astype(np.float16))
    B = cupy.asarray(helpers.random_matrix(n, n, seed=2).astype(np.float16))
    ar.gpu(A[:256], B[:, :256])                 # compile
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    ar.gpu(A, B)
    cupy.cuda.Device().synchronize()
    secs = time.perf_counter() - t0
    print(f"GPU model of an 8192^3 FP16 -> FP32 product: {secs:.2f} s")
    assert secs < 60
