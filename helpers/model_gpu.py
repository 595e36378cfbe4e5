"""The check's model on the GPU: helpers.emulate's arithmetic on CUDA cores (kernels/check_model.cu), bit for
bit, for products numpy would take hours over; helpers.emulate.Arithmetic.gpu calls it."""
from __future__ import annotations

from .compile import get_kernel
from .errors import InputError

FILE = "check_model.cu"
TS, TK = 16, 32                      # the kernels' output tile and staged K (check_model.cu)
# frexp exponent of the smallest normal number of each input format (helpers.emulate._EMIN_FREXP)
EMIN = {"fp16": -13, "bf16": -125, "tf32": -125, "fp8_e4m3": -5}


def _grid(M: int, N: int):
    return ((N + TS - 1) // TS, (M + TS - 1) // TS), (TS, TS)


def tc_model(A64, B64, model, *, inputs: str, acc: str):
    """D = A B from a zero accumulator as helpers.emulate.tensor_core_mma computes it; A64, B64: CuPy
    float64 arrays of the numbers multiplied. Returns float64 values of the accumulator's format."""
    import cupy

    if TK % model.block:
        raise InputError(f"block {model.block}: the GPU model stages {TK} K elements at a time.",
                         f"use a block that divides {TK} (4, 8, 16 or 32), or the CPU model (helpers.emulate).")
    M, K = A64.shape
    N = B64.shape[1]
    D = cupy.empty((M, N), dtype=cupy.float64)
    kern = get_kernel(FILE, "tc_model_gemm")
    grid, block = _grid(M, N)
    args = (cupy.ascontiguousarray(A64), cupy.ascontiguousarray(B64), D, cupy.int32(M), cupy.int32(N), cupy.int32(K),
            cupy.int32(model.block), cupy.int32(24 + model.extra_bits), cupy.int32(EMIN.get(inputs, -1021)),
            cupy.int32(acc == "fp16"), cupy.int32(model.truncation == "toward-minus-inf"),
            cupy.int32(model.fp32_rounding == "nearest"), cupy.int32(model.result_bits if acc == "fp32" else 24),
            cupy.int32(bool(model.normalised_products)))
    kern(grid, block, args)
    return D


def fma_chain(A, B):
    """C = A B as an FP32 FMA chain in K order (helpers.emulate.fp32_fma_chain), on the GPU."""
    import cupy

    A32 = cupy.ascontiguousarray(A, dtype=cupy.float32)
    B32 = cupy.ascontiguousarray(B, dtype=cupy.float32)
    M, K = A32.shape
    N = B32.shape[1]
    C = cupy.empty((M, N), dtype=cupy.float32)
    grid, block = _grid(M, N)
    get_kernel(FILE, "fma_chain_model")(grid, block, (A32, B32, C, cupy.int32(M), cupy.int32(N), cupy.int32(K)))
    return C
