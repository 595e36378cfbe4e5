"""CPU tests of what lesson 00 uses: the tolerances of its first run and the exercise checkers
(helpers/exercises/__init__.py)."""
import helpers
from helpers import exercises

M, N, K = 200, 136, 72                        # the lesson's first run


def test_tolerance_slide_reproduces_the_checks_tolerances():
    """'Where each tolerance comes from': its first two lines are the tolerances the FP32 and the WMMA
    checks of the first run used. FP32 inputs already are the FP32 kernel's format: no input term; without
    inputs_rounded_in_reference the tolerance is larger."""
    A = helpers.random_matrix(M, K, seed=0)
    B = helpers.random_matrix(K, N, seed=1)
    used = {}
    for name in ("gemm_fp32_kernel", "wmma_mixed_gemm_kernel"):
        spec = helpers.KERNELS[name]
        C = helpers.gemm(name, A.astype(spec.in_dtype), B.astype(spec.in_dtype), pad=True)
        used[name] = spec.check(C, A, B).tol
    fp32 = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N, inputs_rounded_in_reference=True)
    wmma = helpers.tolerance(K, "fp16", "fp32", acc_rounding="truncate", block=16, n_checked=M * N)
    assert f"{fp32.value:.2e}" == f"{used['gemm_fp32_kernel'].value:.2e}" and fp32.in_term == 0.0
    assert f"{wmma.value:.2e}" == f"{used['wmma_mixed_gemm_kernel'].value:.2e}" and wmma.in_term > 0
    plain = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N)
    assert plain.value > fp32.value and plain.in_term > 0


def test_truncating_accumulation_gets_the_worst_case_bound():
    """Tensor Cores truncate, truncation errors do not cancel: the worst-case bound; rounding to nearest
    gets the probabilistic one."""
    t = helpers.tolerance(K, "fp16", "fp32", acc_rounding="truncate", block=16, n_checked=M * N)
    assert t.acc_bound == "worst-case" and t.block == 16
    assert helpers.tolerance(K, "fp32", "fp32", n_checked=M * N).acc_bound == "probabilistic"


def test_exercise_checkers():
    """Lesson 00's exercises: the 1024^3 GEMM's FLOPs and one 16x16x16 mma_sync's; wrong answers rejected."""
    exercises.gemm_flops_exercise(None, 1024, 1024, 1024)
    assert exercises.last_result is None
    exercises.gemm_flops_exercise(2 * 1024**3, 1024, 1024, 1024)
    assert exercises.last_result is True
    exercises.gemm_flops_exercise(1024**3, 1024, 1024, 1024)          # multiply-adds, not FLOPs
    assert exercises.last_result is False
    exercises.mma_flops_exercise(8192)
    assert exercises.last_result is True
    exercises.mma_flops_exercise(4096)
    assert exercises.last_result is False
    exercises.mma_flops_exercise(512, 8, 8, 4)                         # another shape (lesson 02)
    assert exercises.last_result is True
    exercises.mma_flops_exercise(8192, 8, 8, 4)
    assert exercises.last_result is False
