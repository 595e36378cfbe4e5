"""cuBLAS baselines, the yardstick every kernel in the course is measured against (BASELINES; ``same_c`` gives
the one that writes the same C as a kernel). Row-major C = A B is computed as the column-major C^T = B^T A^T,
so no transposes are needed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .check import check_gemm
from .errors import InputError

# cuBLAS / CUDA enum values (cublas_api.h, library_types.h)
CUBLAS_COMPUTE_16F = 64
CUBLAS_COMPUTE_32F = 68
CUBLAS_COMPUTE_32F_FAST_TF32 = 77
CUDA_R_32F = 0
CUDA_R_16F = 2
CUBLAS_OP_N = 0
CUBLAS_GEMM_DEFAULT = -1


def leading_dim(X, what: str = "X") -> int:
    """The leading dimension (BLAS's lda) of a row-major 2-D array or view: elements from one row to the next.
    Its columns must be adjacent (a view of the first columns of a wider matrix is fine, a transpose is not)."""
    rows, cols = X.shape
    item = X.dtype.itemsize
    if (cols > 1 and X.strides[1] != item) or X.strides[0] % item or (rows > 1 and X.strides[0] < cols * item):
        raise InputError(f"{what} has strides {X.strides}: its rows are not rows of adjacent elements.",
                         "pass a C-contiguous matrix, or a view of the first columns of one (X[:, :n]).")
    return X.strides[0] // item if rows > 1 else cols


def gemm_ex(A, B, *, compute: int, out_dtype=None, C=None):
    """C = A B (row-major CuPy arrays, or views of the first columns of wider ones: their row strides are the
    leading dimensions) through cublasGemmEx with the given compute type."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    types = {np.dtype(np.float32): CUDA_R_32F, np.dtype(np.float16): CUDA_R_16F}
    M, K = A.shape
    N = B.shape[1]
    if C is None:
        C = cupy.empty((M, N), dtype=out_dtype or A.dtype)
    scale_dtype = np.float16 if compute == CUBLAS_COMPUTE_16F else np.float32
    alpha = np.array(1, dtype=scale_dtype)
    beta = np.array(0, dtype=scale_dtype)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                  alpha.ctypes.data, B.data.ptr, types[B.dtype], leading_dim(B, "B"),
                  A.data.ptr, types[A.dtype], leading_dim(A, "A"),
                  beta.ctypes.data, C.data.ptr, types[C.dtype], leading_dim(C, "C"),
                  compute, CUBLAS_GEMM_DEFAULT)
    return C


def _matmul_fp32(A, B, C):
    import cupy

    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        raise RuntimeError("CUPY_TF32 is set: cupy.matmul on float32 would use TF32. "
                           "Unset it for the FP32 baseline (cublas_tf32 measures TF32).")
    if os.environ.get("NVIDIA_TF32_OVERRIDE", "") not in ("", "0"):
        # measured on the H200 (lesson 3, experiment tf32_env): =1 makes cuBLAS use TF32 even for
        # CUBLAS_COMPUTE_32F, so the "FP32" baseline would silently be TF32
        raise RuntimeError("NVIDIA_TF32_OVERRIDE is set to a non-zero value: cuBLAS would use TF32 for "
                           "float32 products. Unset it (or set it to 0) for the FP32 baseline.")
    return cupy.matmul(A, B, out=C)


def _matmul_fp16(A, B, C):
    import cupy

    return cupy.matmul(A, B, out=C)


@dataclass(frozen=True)
class Baseline:
    name: str
    inputs: str
    acc: str
    in_dtype: str
    out_dtype: str
    acc_rounding: str
    run: Callable  # run(A, B, C) -> C, CuPy arrays
    what: str
    min_cc: tuple[int, int] = (0, 0)

    @property
    def output(self) -> str:
        return "fp16" if self.out_dtype == "float16" else "fp32"

    def check(self, C, A, B, **kw):
        """helpers.check.check_gemm for this baseline. cuBLAS picks its own algorithm, so the summation order is
        unknown: only the a-priori bound applies. Its undocumented TF32 rounding is charged as truncation."""
        return check_gemm(C, A, B, inputs=self.inputs, acc=self.acc, output=self.output,
                          acc_rounding=self.acc_rounding,
                          input_rounding="truncate" if self.inputs == "tf32" else "nearest",
                          name=self.name, order="unknown", **kw)


def _gemm_fp16_f32c(A, B, C):
    return gemm_ex(A, B, compute=CUBLAS_COMPUTE_32F, C=C)


BASELINES = {b.name: b for b in [
    Baseline("cublas_fp32", "fp32", "fp32", "float32", "float32", "nearest", _matmul_fp32,
             "cupy.matmul float32, TF32 off"),
    Baseline("cublas_tf32", "tf32", "fp32", "float32", "float32", "truncate",
             lambda A, B, C: gemm_ex(A, B, compute=CUBLAS_COMPUTE_32F_FAST_TF32, C=C),
             "cublasGemmEx CUBLAS_COMPUTE_32F_FAST_TF32 (= cupy.matmul with CUPY_TF32=1)", (8, 0)),
    Baseline("cublas_fp16", "fp16", "fp32", "float16", "float16", "truncate", _matmul_fp16,
             "cupy.matmul float16: FP32 accumulate, FP16 output"),
    Baseline("cublas_fp16_acc16", "fp16", "fp16", "float16", "float16", "nearest",
             lambda A, B, C: gemm_ex(A, B, compute=CUBLAS_COMPUTE_16F, C=C),
             "cublasGemmEx CUBLAS_COMPUTE_16F: FP16 accumulate", (7, 0)),
]}

# FP16 in, FP32 accumulation, FP32 C (not swept by make record): the bytes lesson 6's FP32-C rungs write.
CUBLAS_FP16_F32C = Baseline("cublas_fp16_f32c", "fp16", "fp32", "float16", "float32", "truncate", _gemm_fp16_f32c,
                            "cublasGemmEx FP16 A, B, CUBLAS_COMPUTE_32F, FP32 C")
SAME_C = {"float16": BASELINES["cublas_fp16"], "float32": CUBLAS_FP16_F32C}


def same_c(c_dtype) -> Baseline:
    """The cuBLAS baseline that writes C in `c_dtype` ('float16' or 'float32') from FP16 A and B."""
    key = np.dtype(c_dtype).name
    if key not in SAME_C:
        raise InputError(f"no cuBLAS baseline writes a {key} C from FP16 inputs here.",
                         "use c_dtype 'float16' (cupy.matmul) or 'float32' (cublasGemmEx).")
    return SAME_C[key]
