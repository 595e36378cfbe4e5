"""GPU tests for issue 9 (run with COURSE_DEVICE=gpu on a CUDA machine; skipped elsewhere).

With the real NVRTC and driver: a compile error's message points at the learner's line; a wrong
kernel gets a mismatch summary; an out-of-bounds write poisons the CUDA context and the helpers
say to restart (in a child process, so this one keeps its context); free memory is read.
"""
import os
import subprocess
import sys

import pytest

import helpers
import helpers.device
from conftest import ROOT

gpu = pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu",
                         reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")



SOLUTION = "#define TILE 16\n" + helpers.display.kernel_source("fp32_variants.cu", "gemm_fp32_tiled").replace(
    "gemm_fp32_tiled", "gemm_tiled")


@gpu
def test_real_nvrtc_log_points_at_the_learners_line():
    lines = SOLUTION.split("\n")
    i = next(k for k, ln in enumerate(lines) if "float acc = 0.0f;" in ln)
    broken = "\n".join(lines[:i] + [lines[i].replace("float acc = 0.0f;", "float acc = 0.0f")] + lines[i + 1:])
    with pytest.raises(helpers.KernelCompileError) as ei:
        helpers.compile.load_module("exercise_tiled.cu", source=broken)
    msg = str(ei.value)
    assert "exercise_tiled.cu, line" in msg and "/tmp/" not in msg, msg
    assert f"> {i + 2:>{len(str(len(lines)))}} |" in msg or f"> {i + 1:>{len(str(len(lines)))}} |" in msg, msg


@gpu
def test_wrong_indexing_gets_a_mismatch_summary(capsys):
    from helpers.exercises import baseline as ex

    wrong = SOLUTION.replace("C[(size_t)row * N + col] = acc;", "C[(size_t)row * N + col] = acc + (row == 2);")
    if wrong == SOLUTION:
        pytest.skip("the solution's store line changed; update this test")
    ex.check_tiled_kernel(wrong, time_sizes=())
    out = capsys.readouterr().out
    assert "Not quite" in out and "elements wrong" in out and "first wrong element C[2, 0]" in out, out


CHILD = r"""
import helpers
from helpers.exercises import baseline as ex
src = '''#define TILE 16
extern "C" __global__ void gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float t[TILE];
    __syncthreads(); __syncthreads();
    C[(size_t)1 << 40] = 1.0f;     // far outside any allocation: an illegal address
}
'''
try:
    ex.check_tiled_kernel(src, time_sizes=())
    print("NO ERROR")
except helpers.GPUContextLostError as exc:
    print("CONTEXT LOST:", str(exc).replace(chr(10), " | "))
    try:
        helpers.gemm_fp32(helpers.random_matrix(16, 16, seed=1), helpers.random_matrix(16, 16, seed=2))
        print("SECOND CALL WORKED")
    except helpers.GPUContextLostError:
        print("SECOND CALL: CONTEXT LOST AGAIN")
"""


@gpu
def test_illegal_address_says_restart_the_kernel():
    p = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, COURSE_DEVICE="gpu"))
    out = p.stdout + p.stderr
    assert "CONTEXT LOST:" in out and "Kernel > Restart" in out, out
    assert "SECOND CALL: CONTEXT LOST AGAIN" in out, out


@gpu
def test_free_memory_and_caps():
    from helpers import memory

    free = memory.free_bytes()
    assert 0 < free <= helpers.backend().gpu.mem_bytes
    kept, note = memory.cap_sizes([256, 1024], what="sweep")
    assert kept == [256, 1024] and note == ""
    memory.release()
