"""GPU tests for lesson 2 (kernels/wmma_lesson.cu, helpers/experiments/wmma.py and wmma_ptx.py, exercises).

Run with COURSE_DEVICE=gpu on a machine with a CUDA GPU; skipped elsewhere.
"""
import os

import numpy as np
import pytest

import helpers
import helpers.device
from helpers import exercises
from helpers.exercises import wmma as ex
from helpers.experiments import wmma as w

_SESSION_DEVICE = os.environ.get("COURSE_DEVICE")
gpu = pytest.mark.skipif(_SESSION_DEVICE != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


@gpu
def test_fragment_maps_cover_every_element():
    d = w.wmma_fragment_maps()
    assert d["num_elements"]["accumulator"] * 32 == 256
    for kind in ("matrix_a", "matrix_b", "matrix_b_col"):
        held = d[kind]
        assert len(held) == 32
        assert (w.holders_grid(held) >= 1).all(), f"{kind}: some element held by no lane"
    acc = w.holders_grid(d["accumulator"])
    assert (acc == 1).all(), "every accumulator element is held by exactly one lane"
    # the column-major load of the same logical B gives the same ownership
    assert (w.owner_grid(d["matrix_b"]) == w.owner_grid(d["matrix_b_col"])).all()


@gpu
@pytest.mark.parametrize("name", list(w.VARIANTS))
@pytest.mark.parametrize("size", [(200, 136, 72), (33, 17, 49), (1000, 1000, 1000)])
def test_variants_correct(name, size):
    import cupy

    M, N, K = size
    A = helpers.random_matrix(M, K, seed=1).astype(np.float16)
    B = helpers.random_matrix(K, N, seed=2).astype(np.float16)
    C = w.run_variant(name, A, B)
    chk = helpers.check_gemm(cupy.asarray(C), cupy.asarray(A), cupy.asarray(B), inputs="fp16", acc="fp32",
                             acc_rounding="truncate", block=16, name=name)
    assert chk.passed, str(chk)


@gpu
@pytest.mark.parametrize("name", list(w.VARIANTS))
def test_variants_match_emulation(name):
    A = helpers.random_matrix(64, 300, seed=3).astype(np.float16)
    B = helpers.random_matrix(300, 96, seed=4).astype(np.float16)
    C = w.run_variant(name, A, B)
    E = helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")
    # the recorded emulator probe finds ~95% bit-identical elements for the best model
    assert np.mean(C == E) > 0.8


@gpu
def test_variants_bitwise_identical():
    """Same mma_sync sequence per element in the same K order: identical bits."""
    A = helpers.random_matrix(96, 200, seed=5).astype(np.float16)
    B = helpers.random_matrix(200, 64, seed=6).astype(np.float16)
    outs = [w.run_variant(name, A, B) for name in w.VARIANTS]
    for C in outs[1:]:
        assert np.array_equal(C, outs[0])


@gpu
def test_edge_corruption_runs_and_writes_past_end():
    out = w.wmma_edge_corruption()
    assert isinstance(out, list), out
    for case in out:
        assert case["writes_past_end"] > 0
        assert case["n_nan"] + case["n_wrong"] > 0
    assert out[1]["n_correct"] == 0      # K not a multiple of 16: every dot product reads garbage


@gpu
def test_nvrtc_ptx_has_wmma_mma():
    d = w.nvrtc_ptx("wmma.cu")
    assert any(ln.startswith("wmma.mma.sync") for ln in d["wmma_lines"])


@gpu
def test_variants_speed_experiment_small():
    rows = w.wmma_variants_speed(sizes=(512,))
    assert {r["kernel"] for r in rows} == set(w.VARIANTS)
    assert all(r["passed"] for r in rows)


@gpu
@pytest.mark.parametrize("checker,kernel", [(ex.check_bcol_kernel, "wmma_gemm_bcol"),
                                            (ex.check_2x2_kernel, "wmma_gemm_2x2")])
def test_exercise_solutions_pass(checker, kernel, capsys):

    src = ex.solution_source(kernel)
    checker(src)
    assert exercises.last_result is True, capsys.readouterr().out


@gpu
def test_exercise_starter_bcol_fails():
    ex.check_bcol_kernel(ex.BCOL_STARTER)
    assert exercises.last_result is False
