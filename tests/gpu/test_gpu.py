"""GPU tests: run with COURSE_DEVICE=gpu on a machine with a CUDA GPU (skipped elsewhere).

They compile every kernel through the helpers, check each against float64 at
sizes that are and are not multiples of 16, and check the GPU against the CPU
emulation of the same arithmetic.
"""
import os

import numpy as np
import pytest

import helpers
from helpers import emulate
from helpers.cublas import BASELINES
from helpers.kernels import KERNELS
from helpers.launch import launcher

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")
SEED = [name for name, k in KERNELS.items() if k.sweep]     # lessons 1-3 (the ladder: test_gpu_ladder.py)


def _inputs(m, n, k, seed, dtype):
    A = helpers.random_matrix(m, k, seed=seed)
    B = helpers.random_matrix(k, n, seed=seed + 1)
    if dtype == "uint16":   # BF16 kernels take BF16 bit patterns (CuPy has no bfloat16 dtype)
        from helpers.formats import to_bf16_bits

        return A, B, to_bf16_bits(A), to_bf16_bits(B)
    return A, B, A.astype(dtype), B.astype(dtype)


@gpu
def test_backend_is_gpu():
    assert helpers.backend().is_gpu
    assert helpers.backend().gpu.cc >= (7, 0)


@gpu
@pytest.mark.parametrize("name", SEED)
def test_kernel_compiles(name):
    spec = KERNELS[name]
    assert helpers.compile.get_kernel(spec.file, spec.name, spec.min_cc) is not None


@gpu
@pytest.mark.parametrize("name", SEED)
@pytest.mark.parametrize("size", [(1000, 1000, 1000), (1024, 1024, 1024), (4096, 4096, 4096),
                                  (200, 136, 72), (33, 17, 49)])
def test_kernel_correct(name, size):
    spec = KERNELS[name]
    m, n, k = size
    A, B, Ai, Bi = _inputs(m, n, k, 5, spec.in_dtype)
    import cupy

    Ad, Bd = cupy.asarray(Ai), cupy.asarray(Bi)
    C = helpers.gemm(name, Ad, Bd, pad=True)
    assert isinstance(C, cupy.ndarray) and C.shape == (m, n)
    chk = spec.check(C, cupy.asarray(A), cupy.asarray(B))
    assert chk.passed, str(chk)


@gpu
def test_numpy_in_numpy_out():
    A, B, _, _ = _inputs(64, 48, 32, 1, np.float32)
    C = helpers.gemm_fp32(A, B)
    assert isinstance(C, np.ndarray)


@gpu
@pytest.mark.parametrize("name", list(BASELINES))
def test_cublas_baselines(name):
    import cupy

    b = BASELINES[name]
    A, B, Ai, Bi = _inputs(1024, 768, 1000, 9, b.in_dtype)
    C = cupy.full((1024, 768), np.nan, dtype=b.out_dtype)
    b.run(cupy.asarray(Ai), cupy.asarray(Bi), C)
    chk = b.check(C, cupy.asarray(A), cupy.asarray(B))
    assert chk.passed, str(chk)


@gpu
def test_misaligned_view_is_rejected():
    import cupy

    A = cupy.zeros((16 * 17,), dtype=cupy.float16)[1:257].reshape(16, 16)
    B = cupy.zeros((16, 16), dtype=cupy.float16)
    with pytest.raises(helpers.InputError, match="aligned"):
        helpers.wmma_mixed(A, B)


@gpu
def test_output_is_poisoned_before_launch():
    import cupy

    A = cupy.ones((32, 32), dtype=cupy.float16)
    run, C, _ = launcher("wmma_mixed_gemm_kernel", A, A)
    assert bool(cupy.isnan(C).all())
    run()
    assert not bool(cupy.isnan(C).any())


@gpu
def test_fp32_kernel_matches_emulation_bit_for_bit():
    A, B, _, _ = _inputs(96, 80, 300, 3, np.float32)
    C = helpers.gemm_fp32(A, B)
    same = np.mean(C == emulate.fp32_fma_chain(A, B))
    assert same == 1.0, f"only {same:.4%} identical"


@gpu
def test_timing_agreement_carries_clocks():
    """extras.timing_agreement: each timing (both harness runs, do_bench) with the clocks read while it ran."""
    from helpers import clocks, record

    out = record.timing_agreement(n=1024, log=lambda *a: None)
    if "skipped" in out:
        pytest.skip(out["skipped"])
    assert 0.5 < out["ratio"] < 2.0
    if clocks.read() is not None:
        for c in out["harness_clocks"] + [out["do_bench_clocks"]]:
            assert tuple(c) == clocks.FIELDS and c["sm_mhz"] > 0


@gpu
def test_both_l2_flushes_time_a_memory_bound_copy():
    """helpers.timing.benchmark with flush="write" (the default) and flush="read": both time a copy of 256 MB
    (past 4x the L2 of any GPU the course names) at a positive, finite rate below 10 TB/s, and the read flush
    leaves the copied data unchanged (it writes nothing)."""
    import cupy

    from helpers.timing import FLUSHES, benchmark

    x = cupy.arange(64 << 20, dtype=cupy.float32)
    y = cupy.empty_like(x)
    for f in FLUSHES:
        t = benchmark(lambda: cupy.copyto(y, x), bytes_moved=2 * x.nbytes, flush=f)
        assert t.n >= 10 and np.isfinite(t.median_ms) and 0 < t.gbs < 10_000, (f, t)
    assert bool((y == x).all())
