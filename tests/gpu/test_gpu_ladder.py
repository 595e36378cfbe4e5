"""GPU tests for lesson 5 (kernels/ladder*.cu: the rungs in helpers.kernels, helpers/experiments/ladder.py).

Every rung against float64 (format-derived tolerance, NaN-poisoned output) at sizes that are
not multiples of 16 or of the 128 x 128 x 32 tile (zero-padded by the launcher), agreement with
the CPU emulation, and the resources the driver reports. Run with COURSE_DEVICE=gpu; skipped
elsewhere.
"""
import os

import numpy as np
import pytest

import helpers
import helpers.device
from helpers import isolate
from helpers.kernels import RUNGS
from helpers.launch import DEFAULT_SMEM_LIMIT, kernel_resources, launcher

_SESSION_DEVICE = os.environ.get("COURSE_DEVICE")
gpu = pytest.mark.skipif(_SESSION_DEVICE != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")

ODD = [(200, 136, 72), (129, 257, 33), (1000, 1064, 1000), (130, 100, 4099)]
IN_PROCESS = [k for k, r in RUNGS.items() if not r.isolate]
ISOLATED = [k for k, r in RUNGS.items() if r.isolate]


def _inputs(m, n, k, seed):
    A = helpers.random_matrix(m, k, seed=seed).astype(np.float16)
    B = helpers.random_matrix(k, n, seed=seed + 1).astype(np.float16)
    return A, B


def _runnable(r):
    cc = helpers.backend().gpu.cc
    msg = r.skip_message(cc)
    if msg:
        pytest.skip(msg)


def _gemm(rung, size, seed):
    """Rung `rung` through helpers.gemm(pad=True) at size (M, N, K) (skipped where it cannot run): (r, A, B, C)."""
    r = RUNGS[rung]
    _runnable(r)
    A, B = _inputs(*size, seed=seed)
    return r, A, B, helpers.gemm(r, A, B, pad=True)


@gpu
@pytest.mark.parametrize("rung", IN_PROCESS)
@pytest.mark.parametrize("size", ODD, ids=lambda s: "x".join(map(str, s)))
def test_rung_correct_at_odd_sizes(rung, size):
    r, A, B, C = _gemm(rung, size, seed=rung * 10 + 1)
    assert C.shape == (size[0], size[1])
    chk = r.check(C, A, B)
    assert chk.passed, str(chk)


@gpu
@pytest.mark.parametrize("rung", IN_PROCESS)
def test_rung_matches_emulation(rung):
    """Same sums in the same order: the GPU result equals the CPU emulation (to FP32 rounding)."""
    r, A, B, C = _gemm(rung, (256, 256, 512), seed=77)
    E = r.emulate(A, B)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    assert np.max(np.abs(C.astype(np.float64) - E) / scale) < 1e-5


@gpu
@pytest.mark.parametrize("rung", IN_PROCESS)
def test_rung_poisoned_output_fully_written(rung):
    import cupy

    r = RUNGS[rung]
    _runnable(r)
    A, B = _inputs(384, 256, 96, seed=5)
    run, C, (M, N) = launcher(r, cupy.asarray(A), cupy.asarray(B), pad=True)
    run()
    assert int(cupy.isnan(C).sum()) == 0


@gpu
@pytest.mark.parametrize("rung", IN_PROCESS)
def test_resources_reported(rung):
    r = RUNGS[rung]
    _runnable(r)
    res = kernel_resources(r)
    assert 0 < res["regs"] <= 255
    assert res["spills"] == 0
    if rung in (2, 3, 4):
        assert res["smem_static"] == r.smem_static
    if rung in (5, 6):
        assert res["smem_dynamic"] == r.dyn_smem > DEFAULT_SMEM_LIMIT


@gpu
@pytest.mark.parametrize("rung", ISOLATED)
def test_isolated_rung_correct_at_odd_sizes(rung):
    """Rung 7 (sm_90a: wgmma + TMA) runs in a child process, so a fault or hang there cannot break
    the other tests: it must pass every odd size and agree with the emulation; and helpers.gemm on it
    goes through a child process too."""
    r = RUNGS[rung]
    _runnable(r)
    out = isolate.run_isolated("helpers.experiments.ladder:check_rung_sizes", rung, [list(s) for s in ODD])
    assert isinstance(out, list), out.get("error")
    for entry in out[:-1]:
        assert entry["shape_ok"] and entry["passed"], entry["text"]
    assert out[-1]["emulation_max_diff"] < 1e-5
    # helpers.gemm itself sends an isolate=True kernel to a child process: numpy in, numpy out
    r, A, B, C = _gemm(rung, ODD[0], seed=3)
    assert isinstance(C, np.ndarray) and C.shape == ODD[0][:2] and r.check(C, A, B).passed


@gpu
def test_pipeline_needs_opt_in():
    """Without raising max_dynamic_shared_size_bytes, a 74 KB launch fails: that is why the launcher sets it."""
    import cupy

    from helpers.compile import get_kernel

    r = RUNGS[5]
    _runnable(r)
    fresh = get_kernel(r.file, r.name, r.min_cc, options=("-DLADDER_OPT_IN_PROBE",))
    assert fresh.max_dynamic_shared_size_bytes <= DEFAULT_SMEM_LIMIT
    A = cupy.zeros((128, 32), dtype=cupy.float16)
    B = cupy.zeros((32, 128), dtype=cupy.float16)
    C = cupy.zeros((128, 128), dtype=cupy.float32)
    with pytest.raises(cupy.cuda.driver.CUDADriverError):
        fresh((1, 1), (256,), (A, B, C, np.int32(128), np.int32(128), np.int32(32)), shared_mem=r.dyn_smem)
        cupy.cuda.get_current_stream().synchronize()
