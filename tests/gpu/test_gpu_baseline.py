"""GPU tests for lesson 1 (run with COURSE_DEVICE=gpu on a CUDA machine; skipped elsewhere).

gemm_fp32_kernel with other block shapes, the tiled worked solution in
kernels/fp32_variants.cu, the exercise checker on a good and on broken kernels,
and the two lesson experiments on reduced sizes.
"""
import json
import os

import numpy as np
import pytest

import helpers
import helpers.device
from helpers.exercises import baseline as ex
from helpers.experiments import baseline as exp

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")



SOLUTION = helpers.display.kernel_source("fp32_variants.cu", "gemm_fp32_tiled")
TILE_DEFINE = "#define TILE 16\n"

# broken on purpose: no bounds check along K on the loads of A. The products are still right (the
# matching B elements are zeroed), but the last row reads up to TILE - 1 floats past the end of A,
# where the checker puts NaN: the check must fail, every time.
BROKEN_EDGES = SOLUTION.replace("(row < M && t + tx < K) ?", "(row < M) ?")
assert BROKEN_EDGES != SOLUTION
# broken on purpose: the store is not guarded; rows M..M+TILE-1 write past the end of C
NO_STORE_GUARD = SOLUTION.replace("if (row < M && col < N)\n        C[", "C[")
assert NO_STORE_GUARD != SOLUTION
# broken on purpose: the second __syncthreads() is gone (a race; may or may not show) and the
# first one too (the static check catches it)
NO_SYNC = SOLUTION.replace("__syncthreads();", "")
# correct, but in another order: a partial sum per tile, added to the total after the tile
PARTIAL_SUMS = SOLUTION.replace("float acc = 0.0f;", "float acc = 0.0f, part;").replace(
    "        __syncthreads();                       // the tiles are complete",
    "        __syncthreads();                       // the tiles are complete\n        part = 0.0f;").replace(
    "            acc = fmaf(As[ty][k], Bs[k][tx], acc);\n",
    "            part = fmaf(As[ty][k], Bs[k][tx], part);\n        acc += part;\n")
assert PARTIAL_SUMS != SOLUTION


def _inputs(m, n, k, seed):
    import cupy

    return (cupy.asarray(helpers.random_matrix(m, k, seed=seed)),
            cupy.asarray(helpers.random_matrix(k, n, seed=seed + 1)))


@gpu
def test_backend_is_gpu():
    assert helpers.backend().is_gpu


@gpu
@pytest.mark.parametrize("shape", exp.BLOCK_SHAPES)
@pytest.mark.parametrize("size", [(1000, 1000, 1000), (33, 17, 49), (200, 136, 72)])
def test_block_shapes_compute_the_same_bits(shape, size):
    import cupy

    kern = helpers.compile.get_kernel(*exp.NAIVE)
    m, n, k = size
    A, B = _inputs(m, n, k, 3)
    run, C = exp.fp32_launcher(kern, A, B, shape)
    run()
    chk = exp._check(C, A, B, f"shape {shape}")
    assert chk.passed, str(chk)
    ref = helpers.gemm_fp32(A, B)
    assert bool(cupy.array_equal(C, ref))


@gpu
@pytest.mark.parametrize("tile", [16, 32])
@pytest.mark.parametrize("size", [(1000, 1000, 1000), (33, 17, 49), (1, 1, 1), (64, 48, 200)])
def test_tiled_solution_correct_and_bit_identical(tile, size):
    import cupy

    m, n, k = size
    A, B = _inputs(m, n, k, 7)
    run, C = exp.fp32_launcher(exp.tiled_kernel(tile), A, B, (tile, tile), tile=tile)
    run()
    chk = exp._check(C, A, B, f"tiled {tile}")
    assert chk.passed, str(chk)
    assert bool(cupy.array_equal(C, helpers.gemm_fp32(A, B)))


@gpu
def test_exercise_checker_accepts_the_solution(capsys):
    src = SOLUTION.replace("gemm_fp32_tiled", "gemm_tiled")
    ex.check_tiled_kernel(TILE_DEFINE + src, time_sizes=(512,))
    out = capsys.readouterr().out
    assert "Correct." in out, out
    assert helpers.exercises.last_result is True
    assert ex.last_tiled and len(ex.last_tiled["timings"]) == 1


@gpu
def test_exercise_checker_rejects_missing_edge_checks(capsys):
    ex.check_tiled_kernel(TILE_DEFINE + BROKEN_EDGES, name="gemm_fp32_tiled", time_sizes=())
    out = capsys.readouterr().out
    assert "Not quite" in out and "past the end of A or B" in out, out
    assert helpers.exercises.last_result is False


@gpu
def test_exercise_checker_rejects_unguarded_store(capsys):
    ex.check_tiled_kernel(TILE_DEFINE + NO_STORE_GUARD, name="gemm_fp32_tiled", time_sizes=())
    out = capsys.readouterr().out
    assert "Not quite" in out and "past the end of C" in out, out
    assert helpers.exercises.last_result is False


@gpu
def test_exercise_checker_tells_another_summation_order_from_wrong_values(capsys):
    ex.check_tiled_kernel(TILE_DEFINE + PARTIAL_SUMS, name="gemm_fp32_tiled", time_sizes=())
    out = capsys.readouterr().out
    assert "Not quite" in out and "another order" in out and "wrong values" not in out, out


@gpu
def test_exercise_checker_reports_compile_errors(capsys):
    ex.check_tiled_kernel(TILE_DEFINE + SOLUTION.replace("float acc = 0.0f;", "float acc = 0.0f"),
                          name="gemm_fp32_tiled", time_sizes=())
    out = capsys.readouterr().out
    assert "Not quite" in out and "compile" in out, out


@gpu
def test_exercise_checker_static_check(capsys):
    ex.check_tiled_kernel(TILE_DEFINE + NO_SYNC, name="gemm_fp32_tiled")
    out = capsys.readouterr().out
    assert "Not quite" in out and "__syncthreads" in out, out


@gpu
def test_block_shapes_experiment_small():
    data = exp.block_shapes(sizes=(512,), shapes=[(16, 16), (32, 8), (1, 256)], check_size=(200, 136, 72))
    json.dumps(data)
    assert all(c["passed"] and c["identical_to_first"] for c in data["checks"])
    assert {r["shape"] for r in data["rows"]} == {"16x16", "32x8", "1x256"}
    assert all(r["tflops"] > 0 for r in data["rows"])


@gpu
def test_tiled_experiment_small():
    data = exp.tiled_solution(sizes=(512,), tiles=(16,), check_sizes=((33, 17, 49),))
    json.dumps(data)
    assert all(c["passed"] and c["identical_to_naive"] for c in data["checks"])
    assert len(data["rows"]) == 2
    assert np.isfinite([r["tflops"] for r in data["rows"]]).all()


@gpu
def test_timing_method_experiment_small():
    data = exp.timing_method(sizes=(256,), reps=10)
    json.dumps(data)
    assert [r["l2"] for r in data["rows"]] == ["flushed", "warm"]
    assert all(r["median_ms"] > 0 and r["mean_ms"] > 0 for r in data["rows"])
