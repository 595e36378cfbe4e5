"""GPU tests for lesson 3 (run with COURSE_DEVICE=gpu on a CUDA machine; skipped elsewhere).

The BF16 and TF32 WMMA kernels (compiled in test_gpu.py): correct against float64 at sizes that are
and are not multiples of 16, bad input rejected with a fix, agreement with the CPU
emulation; the two lesson experiments on reduced sizes.
"""
import os

import numpy as np
import pytest

import helpers
import helpers.device
from helpers.formats import from_bf16_bits, round_tf32_rna, to_bf16_bits
from helpers.kernels import KERNELS

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")

NEW = ["wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"]


def _device_inputs(name, A, B):
    import cupy

    if KERNELS[name].inputs == "bf16":
        return cupy.asarray(to_bf16_bits(A)), cupy.asarray(to_bf16_bits(B))
    return cupy.asarray(A), cupy.asarray(B)


@gpu
@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("size", [(1000, 1000, 1000), (1024, 1024, 1024), (200, 136, 72), (33, 17, 49),
                                  (16, 16, 8)])
def test_correct(name, size):
    import cupy

    m, n, k = size
    A = helpers.random_matrix(m, k, seed=5)
    B = helpers.random_matrix(k, n, seed=6)
    Ad, Bd = _device_inputs(name, A, B)
    C = helpers.gemm(name, Ad, Bd, pad=True)
    assert isinstance(C, cupy.ndarray) and C.shape == (m, n)
    chk = KERNELS[name].check(C, cupy.asarray(A), cupy.asarray(B))
    assert chk.passed, str(chk)


@gpu
def test_bf16_rejects_float_input():
    import cupy

    A = cupy.zeros((16, 16), dtype=cupy.float32)
    with pytest.raises(helpers.InputError, match="to_bf16_bits"):
        helpers.gemm("wmma_bf16_gemm_kernel", A, A)


@gpu
def test_bf16_bits_on_device_match_host():
    import cupy

    x = helpers.random_matrix(64, 64, seed=3)
    assert np.array_equal(cupy.asnumpy(to_bf16_bits(cupy.asarray(x))), to_bf16_bits(x))
    assert np.array_equal(cupy.asnumpy(from_bf16_bits(cupy.asarray(to_bf16_bits(x)))),
                          from_bf16_bits(to_bf16_bits(x)))
    assert np.array_equal(cupy.asnumpy(round_tf32_rna(cupy.asarray(x))), round_tf32_rna(x))


@gpu
@pytest.mark.parametrize("name", NEW)
def test_close_to_emulation(name):
    """The emulation reproduces the kernel: same error against float64 within 10%, and most
    elements identical (the model's block size is checked by mixed_emulator_probe)."""
    import cupy

    A = helpers.random_matrix(96, 256, seed=8)
    B = helpers.random_matrix(256, 80, seed=9)
    Ad, Bd = _device_inputs(name, A, B)
    g = cupy.asnumpy(helpers.gemm(name, Ad, Bd))
    e = KERNELS[name].emulate(cupy.asnumpy(Ad), cupy.asnumpy(Bd))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    eg = np.linalg.norm(g - ref) / np.linalg.norm(ref)
    ee = np.linalg.norm(e - ref) / np.linalg.norm(ref)
    assert 0.9 < eg / ee < 1.1, (eg, ee)
    assert np.mean(g == e) > 0.5, np.mean(g == e)


@gpu
def test_tf32_env_experiment_small():
    """What the H200 record shows (driver 580, CUDA 13, CuPy 14): CUPY_TF32=1 and
    NVIDIA_TF32_OVERRIDE=1 each turn TF32 on; =0 vetoes it everywhere; nothing set stays FP32."""
    from helpers.experiments import mixed

    rows = mixed.tf32_env(n=512)
    assert len(rows) == 3 * len(mixed.TF32_ENV_CASES)
    by = {(r["CUPY_TF32"], r["NVIDIA_TF32_OVERRIDE"], r["call"]): r["verdict"] for r in rows}
    assert by[("unset", "unset", "cupy.matmul")] == "FP32"
    assert by[("unset", "unset", "gemmEx COMPUTE_32F")] == "FP32"
    assert by[("unset", "unset", "gemmEx COMPUTE_32F_FAST_TF32")] == "TF32"
    assert by[("1", "unset", "cupy.matmul")] == "TF32"
    assert all(v == "FP32" for (c, o, call), v in by.items() if o == "0")
    assert len(mixed.tf32_conclusions(rows)) == 4
    from helpers import clocks
    if clocks.read() is not None:           # NVML works here: every timing carries its clocks
        assert all(r.get("sm_mhz") and set(clocks.FIELDS) <= set(r) for r in rows)


@gpu
def test_emulator_probe_experiment():
    from helpers.experiments import mixed

    out = mixed.mixed_emulator_probe()
    for k in NEW:
        assert 0.0 <= max(out[k]["identical"].values()) <= 1.0
        assert out[k]["best"] in out[k]["identical"]
