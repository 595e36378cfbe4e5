"""The check's model on the GPU: helpers.emulate's arithmetic on CUDA cores, bit for bit.

The course's check compares every element of a kernel's C with the model of its arithmetic
(helpers.emulate). For the products a GPU runs (4096^3 and 8192^3 before every timing) numpy would
take hours, so ``run(arithmetic, A, B)`` computes the same numbers with kernels/check_model.cu in
float64 on the GPU, in the same order and with the same roundings (tests/test_gpu_check_model.py
shows it equal to helpers.emulate, and to the kernels, bit for bit). It takes what the kernel took,
as CuPy arrays, and returns a CuPy array of the kernel's output type.
"""
from __future__ import annotations

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

    from .compile import get_kernel

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

    from .compile import get_kernel

    A32 = cupy.ascontiguousarray(A, dtype=cupy.float32)
    B32 = cupy.ascontiguousarray(B, dtype=cupy.float32)
    M, K = A32.shape
    N = B32.shape[1]
    C = cupy.empty((M, N), dtype=cupy.float32)
    grid, block = _grid(M, N)
    get_kernel(FILE, "fma_chain_model")(grid, block, (A32, B32, C, cupy.int32(M), cupy.int32(N), cupy.int32(K)))
    return C


def run(ar, A, B):
    """helpers.emulate.Arithmetic `ar` applied to CuPy arrays A, B (what the kernel took)."""
    import cupy

    from .emulate import DEFAULT_TC_MODEL

    if ar.model is None:
        return fma_chain(A, B)
    if ar.inputs == "fp16" and (A.dtype != cupy.float16 or B.dtype != cupy.float16):
        raise InputError(f"the GPU model of FP16 arithmetic takes the float16 arrays the kernel took, not "
                         f"{A.dtype} and {B.dtype}.", "pass A.astype(cupy.float16) and B.astype(cupy.float16).")
    Av = cupy.asarray(ar.values(A), dtype=cupy.float64)
    Bv = cupy.asarray(ar.values(B), dtype=cupy.float64)
    out = cupy.float32 if ar.acc == "fp32" else cupy.float16
    if ar.inputs != "fp8_e4m3" and ar.split is not None:    # split-K: parts from zero, added in order
        C = None
        for k0, k1 in ar.split(Av.shape[0], Bv.shape[1], Av.shape[1]):
            part = tc_model(cupy.ascontiguousarray(Av[:, k0:k1]), cupy.ascontiguousarray(Bv[k0:k1]), ar.model,
                            inputs=ar.inputs, acc=ar.acc).astype(out)
            C = part if C is None else C + part
        return C.astype(cupy.float16) if ar.output == "fp16" else C
    if ar.inputs != "fp8_e4m3":
        C = tc_model(Av, Bv, ar.model, inputs=ar.inputs, acc=ar.acc).astype(out)
        if ar.split_tiles is not None:                      # rung 16: these tiles split, parts added in order
            blocks, ranges = ar.split_tiles(Av.shape[0], Bv.shape[1], Av.shape[1])
            for r0, r1, c0, c1 in blocks:
                T = None
                for k0, k1 in ranges:
                    part = tc_model(cupy.ascontiguousarray(Av[r0:r1, k0:k1]), cupy.ascontiguousarray(Bv[k0:k1, c0:c1]),
                                    ar.model, inputs=ar.inputs, acc=ar.acc).astype(out)
                    T = part if T is None else T + part
                C[r0:r1, c0:c1] = T
        return C.astype(cupy.float16) if ar.output == "fp16" else C
    from .emulate import FP8_WGMMA_MODEL, _mma_sync_halves

    if not ar.pairs and not ar.nc:           # fp8_wgmma: the Tensor Cores accumulate all of K; that is C
        return tc_model(Av, Bv, FP8_WGMMA_MODEL, inputs="fp8_e4m3", acc="fp32").astype(cupy.float32)
    if ar.pairs:                             # mma.sync k32: the FP16 Tensor Core path, pairs reordered
        Kp = -(-Av.shape[1] // 32) * 32
        Av = cupy.pad(Av, ((0, 0), (0, Kp - Av.shape[1])))
        Bv = cupy.pad(Bv, ((0, Kp - Bv.shape[0]), (0, 0)))
        p = cupy.asarray(_mma_sync_halves(Kp))
        Av, Bv = Av[:, p], Bv[p]
        step, model, fmt_in = 32, DEFAULT_TC_MODEL, "fp16"
    else:                                    # promotion every nc products
        step, model, fmt_in = ar.nc, FP8_WGMMA_MODEL, "fp8_e4m3"
    # each part from a zero accumulator, added to an FP32 total that starts at zero, to nearest (as the
    # kernels do; a part of -0.0 becomes +0.0 there too)
    total = cupy.zeros((Av.shape[0], Bv.shape[1]), dtype=cupy.float32)
    for k0 in range(0, Av.shape[1], step):
        part = tc_model(cupy.ascontiguousarray(Av[:, k0:k0 + step]), cupy.ascontiguousarray(Bv[k0:k0 + step]),
                        model, inputs=fmt_in, acc="fp32")
        total = total + part.astype(cupy.float32)
    return total
