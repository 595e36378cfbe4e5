"""Thin wrappers that check inputs, launch a course kernel, and return C.

``gemm(name, A, B)`` takes numpy or CuPy arrays. It validates dtype, shape,
contiguity, alignment and the kernel's size multiple, poisons the output with
NaN (so an element the kernel never writes cannot pass a check), launches with
the seed article's grid/block mapping, and returns C (numpy in, numpy out). On
the CPU backend it runs the kernel's numpy emulation instead, after the same
validation, so a mistake gives the same message everywhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import emulate
from .device import backend
from .errors import InputError, gpu_errors


@dataclass(frozen=True)
class GemmKernel:
    name: str
    file: str
    inputs: str            # input format: 'fp32' or 'fp16'
    acc: str               # accumulator format: 'fp32' or 'fp16'
    out_dtype: str         # numpy dtype name of C
    block: tuple[int, int]
    multiple: int          # M, N, K must be multiples of this (1: any size)
    min_cc: tuple[int, int]
    acc_rounding: str      # 'nearest' or 'truncate': what the tolerance assumes
    acc_block: int         # products per accumulator rounding (tolerance's `block`)
    emulate: Callable
    grid: Callable         # (M, N, block) -> grid tuple
    teaches: str

    @property
    def in_dtype(self) -> str:
        # bf16: CuPy has no bfloat16 dtype, so BF16 matrices travel as uint16 bit patterns
        # (helpers.formats.to_bf16_bits); tf32: FP32 in memory, rounded on the device
        return {"fp32": "float32", "fp16": "float16", "tf32": "float32", "bf16": "uint16"}[self.inputs]

    def check(self, C, A, B, **kw):
        """helpers.check.check_gemm with this kernel's formats, rounding, block and CPU model.
        A, B: what the kernel took (BF16 as uint16 bits) or the original FP32 data."""
        from .check import check_gemm

        kw.setdefault("values", _tf32_rna if self.inputs == "tf32" else None)
        kw.setdefault("model", self.emulate)
        return check_gemm(C, A, B, inputs=self.inputs, acc=self.acc, output=self.acc,
                          acc_rounding=self.acc_rounding, block=self.acc_block, name=self.name, **kw)


def _bf16_values(bits):
    from .formats import from_bf16_bits

    return from_bf16_bits(bits)


def _tf32_rna(x):
    from .formats import round_tf32_rna

    return round_tf32_rna(x)


def _grid_one_thread_per_element(M, N, block):
    return (math.ceil(N / block[0]), math.ceil(M / block[1]))


def _grid_one_warp_per_tile(M, N, block):
    # block = (32, warps): blockIdx.x walks 16-column tiles, each block stacks `warps` tiles in M
    return (math.ceil(N / 16), math.ceil(M / (16 * block[1])))


KERNELS: dict[str, GemmKernel] = {k.name: k for k in [
    GemmKernel("gemm_fp32_kernel", "fp32_baseline.cu", "fp32", "fp32", "float32", (16, 16), 1, (0, 0),
               "nearest", 1, emulate.fp32_fma_chain, _grid_one_thread_per_element,
               "FP32 CUDA-core baseline: one thread per C element, FMA chain over K"),
    GemmKernel("wmma_gemm_naive", "wmma.cu", "fp16", "fp32", "float32", (32, 8), 16, (7, 0),
               "truncate", 16, lambda A, B: emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32"),
               _grid_one_warp_per_tile, "naive WMMA: one warp per 16x16 tile, loads from global memory"),
    GemmKernel("wmma_mixed_gemm_kernel", "mixed_precision.cu", "fp16", "fp32", "float32", (32, 8), 16, (7, 0),
               "truncate", 16, lambda A, B: emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32"),
               _grid_one_warp_per_tile, "mixed precision: FP16 inputs, FP32 accumulator"),
    GemmKernel("wmma_fp16acc_gemm_kernel", "mixed_precision.cu", "fp16", "fp16", "float16", (32, 8), 16, (7, 0),
               "nearest", 16, lambda A, B: emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp16"),
               _grid_one_warp_per_tile, "FP16 inputs, FP16 accumulator"),
    # Lesson 3 (mixed): BF16 and TF32 inputs on the same loop, sm_80+. The BF16 kernel takes uint16
    # BF16 bit patterns (helpers.formats.to_bf16_bits); the TF32 kernel takes FP32 and rounds each
    # fragment element with __float_to_tf32 (ties away from zero, helpers.formats.round_tf32_rna).
    # Emulation models: emulate.model_for(inputs): BF16 as FP16 (block 16, 2 extra bits); TF32 block 4
    # (2 extra bits), both reproduced bit for bit on the H200 by experiment "mixed_emulator_probe".
    GemmKernel("wmma_bf16_gemm_kernel", "mixed_precision.cu", "bf16", "fp32", "float32", (32, 8), 16, (8, 0),
               "truncate", 16,
               lambda A, B: emulate.tensor_core_gemm(_bf16_values(A), _bf16_values(B), inputs="bf16", acc="fp32"),
               _grid_one_warp_per_tile, "BF16 inputs (uint16 bits), FP32 accumulator: FP32's range, 8-bit precision"),
    GemmKernel("wmma_tf32_gemm_kernel", "mixed_precision.cu", "tf32", "fp32", "float32", (32, 8), 16, (8, 0),
               "truncate", 4,
               lambda A, B: emulate.tensor_core_gemm(_tf32_rna(A), _tf32_rna(B), inputs="tf32", acc="fp32",
                                                     model=emulate.model_for("tf32")),
               _grid_one_warp_per_tile, "TF32 WMMA m16n16k8: FP32 in memory, 10 fraction bits on the Tensor Core"),
]}


def _is_cupy(x) -> bool:
    return type(x).__module__.startswith("cupy")


def _describe(x) -> str:
    return f"{type(x).__module__.split('.')[0]} {getattr(x, 'dtype', '?')} array of shape {getattr(x, 'shape', '?')}"


def validate(spec: GemmKernel, A, B, pad: bool) -> tuple[int, int, int]:
    """Check A and B for `spec`; return (M, N, K) or raise InputError saying what to do."""
    for nm, X in (("A", A), ("B", B)):
        if not (isinstance(X, np.ndarray) or _is_cupy(X)):
            raise InputError(f"{nm} is a {type(X).__name__}, not an array.",
                             f"pass a numpy or CuPy array, e.g. np.asarray({nm}, dtype=np.{spec.in_dtype}).")
        if X.ndim != 2:
            raise InputError(f"{nm} has {X.ndim} dimensions; {spec.name} multiplies 2-D matrices.",
                             f"reshape {nm} to (rows, cols).")
        if X.dtype != np.dtype(spec.in_dtype) and spec.inputs == "bf16":
            raise InputError(f"{nm} is {X.dtype}, but {spec.name} takes BF16 inputs, passed as uint16 arrays "
                             "holding the BF16 bit patterns (CuPy has no bfloat16 dtype).",
                             f"from helpers.formats import to_bf16_bits; {nm} = to_bf16_bits({nm}) rounds FP32 "
                             "to BF16 (nearest even; numpy or CuPy); an ml_dtypes.bfloat16 array can be passed as "
                             f"{nm}.view(np.uint16). Never {nm}.astype(np.uint16): that makes integers.")
        if X.dtype != np.dtype(spec.in_dtype):
            raise InputError(f"{nm} is {X.dtype}, but {spec.name} takes {spec.in_dtype} ({spec.inputs}) inputs.",
                             f"convert explicitly: {nm} = {nm}.astype(np.{spec.in_dtype}) "
                             "(this rounds; the course never converts silently).")
        if not X.flags.c_contiguous:
            raise InputError(f"{nm} is not C-contiguous (row-major); strides {X.strides} for shape {X.shape}. "
                             f"{spec.name} reads rows with a fixed leading dimension.",
                             f"pass a row-major copy: {nm} = np.ascontiguousarray({nm}) "
                             "(cupy.ascontiguousarray for CuPy arrays).")
        if 0 in X.shape:
            raise InputError(f"{nm} is empty (shape {X.shape}).", "use matrices with at least one row and column.")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise InputError(f"inner dimensions differ: A is {M}x{K} (M x K) but B is {K2}x{N}; "
                         "C = A B needs A's columns == B's rows.",
                         "check the order of the arguments, or transpose B (B.T copied to row-major).")
    if max(M, N, K) >= 2**31:
        raise InputError(f"sizes {M}x{N}x{K} overflow the kernels' 32-bit int arguments.",
                         "split the product into blocks smaller than 2^31 in every dimension.")
    m = spec.multiple
    if m > 1 and not pad:
        bad = [f"{d}={v}" for d, v in (("M", M), ("N", N), ("K", K)) if v % m]
        if bad:
            fix = ", ".join(f"{d.split('=')[0]}->{math.ceil(int(d.split('=')[1]) / m) * m}" for d in bad)
            raise InputError(f"{', '.join(bad)} not a multiple of {m}: {spec.name} moves whole {m}x{m} tiles "
                             "and would read and write past the matrices' edges.",
                             f"call with pad=True to zero-pad ({fix}) and crop the result, or pad the "
                             "matrices yourself.")
    for nm, X in (("A", A), ("B", B)):
        if _is_cupy(X) and m > 1 and X.data.ptr % 32:
            raise InputError(f"{nm} starts at address 0x{X.data.ptr:x}, not 32-byte aligned: "
                             "wmma::load_matrix_sync needs 256-bit aligned tile pointers.",
                             f"pass a fresh copy ({nm} = {nm}.copy()); views that start mid-row are not aligned.")
    return M, N, K


def _pad_to(X, rows: int, cols: int):
    if X.shape == (rows, cols):
        return X
    xp = __import__("cupy") if _is_cupy(X) else np
    out = xp.zeros((rows, cols), dtype=X.dtype)
    out[:X.shape[0], :X.shape[1]] = X
    return out


def prepare(name: str, A, B, pad: bool = False):
    """Validate and pad for kernel `name`: returns (spec, A, B, (M, N, K), padded (Mp, Np, Kp))."""
    spec = KERNELS[name] if isinstance(name, str) else name
    M, N, K = validate(spec, A, B, pad)
    m = spec.multiple
    Mp, Np, Kp = (math.ceil(v / m) * m for v in (M, N, K))
    A = _pad_to(A, Mp, Kp)
    B = _pad_to(B, Kp, Np)
    return spec, A, B, (M, N, K), (Mp, Np, Kp)


def launcher(name: str, A, B, pad: bool = False):
    """For timing: returns (run, C) where run() launches once on device arrays and C is the output.

    A and B must already be CuPy arrays. C is poisoned with NaN once; call
    ``poison(C)`` before a launch whose output you check.
    """
    import cupy

    from .compile import get_kernel

    spec, A, B, (M, N, K), (Mp, Np, Kp) = prepare(name, A, B, pad)
    kern = get_kernel(spec.file, spec.name, spec.min_cc)
    C = cupy.full((Mp, Np), np.nan, dtype=spec.out_dtype)
    grid = spec.grid(Mp, Np, spec.block)
    args = (A, B, C, np.int32(Mp), np.int32(Np), np.int32(Kp))

    def run():
        kern(grid, spec.block, args)

    return run, C, (M, N)


def gemm(name: str, A, B, *, pad: bool = False):
    """C = A B with course kernel `name` on the current backend; see the module docstring."""
    spec, Ap, Bp, (M, N, K), _ = prepare(name, A, B, pad)
    if not backend().is_gpu:
        if _is_cupy(A) or _is_cupy(B):  # pragma: no cover - needs CuPy without a GPU
            raise InputError("CuPy arrays were passed but the CPU backend is active.",
                             "pass numpy arrays (cupy.asnumpy(A)), or run on a GPU.")
        return spec.emulate(np.asarray(A), np.asarray(B))
    import cupy

    back_to_numpy = not (_is_cupy(A) or _is_cupy(B))
    with gpu_errors(f"{spec.name} at M={M} N={N} K={K}"):
        run, C, _ = launcher(spec, cupy.asarray(Ap), cupy.asarray(Bp))
        run()
        C = C[:M, :N]
        return cupy.asnumpy(C) if back_to_numpy else C


def gemm_fp32(A, B):
    """gemm_fp32_kernel: FP32 in, FP32 FMA chain, FP32 out."""
    return gemm("gemm_fp32_kernel", A, B)


def wmma_gemm_naive(A, B, *, pad=False):
    """wmma_gemm_naive: FP16 in, FP32 accumulator, FP32 out."""
    return gemm("wmma_gemm_naive", A, B, pad=pad)


def wmma_mixed(A, B, *, pad=False):
    """wmma_mixed_gemm_kernel: FP16 in, FP32 accumulator, FP32 out."""
    return gemm("wmma_mixed_gemm_kernel", A, B, pad=pad)


def wmma_fp16acc(A, B, *, pad=False):
    """wmma_fp16acc_gemm_kernel: FP16 in, FP16 accumulator, FP16 out."""
    return gemm("wmma_fp16acc_gemm_kernel", A, B, pad=pad)
