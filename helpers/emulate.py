"""The CPU backend: numpy reproductions of each kernel's arithmetic.

Without a GPU the course still runs: each kernel has a function here that
performs the same roundings in the same order, vectorised over the output
matrix (a Python loop over K or over K blocks, numpy over M x N).

* ``fp32_fma_chain``: gemm_fp32_kernel. acc = fma(a_k, b_k, acc) for k = 0..K-1,
  one rounding to FP32 per step. The product of two FP32 numbers is exact in
  float64; the float64 sum may round once more, so a TwoSum correction detects
  the rare case where that double rounding would differ from one FP32 rounding.
* ``tensor_core_gemm``: WMMA kernels. The model of Fasi, Higham, Mikaitis and
  Pranesh (PeerJ Comput. Sci. 7:e330, 2021), refined by Khattak & Mikaitis
  (2025): within one block of `block` products plus the accumulator, every
  product is exact; the terms are aligned to the largest exponent keeping
  24 + `extra_bits` significant bits (the bits shifted out are dropped); the
  aligned sum is exact; the result is rounded once to the accumulator format:
  toward zero for FP32, to nearest for FP16. The parameters for the H200 are
  measured in lesson 4; ``DEFAULT_TC_MODEL`` says where the current ones come from.

numpy's own float16 matmul accumulates in float32 and rounds once at the end,
so it cannot stand in for an FP16 accumulator: ``tensor_core_gemm`` rounds after
every block explicitly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .numerics import round_to


@dataclass(frozen=True)
class TensorCoreModel:
    block: int          # products summed before each rounding (block-FMA size)
    extra_bits: int     # alignment bits kept beyond the 24 of FP32
    source: str         # where these numbers come from

    def __str__(self):
        return f"block-FMA {self.block}, {self.extra_bits} extra alignment bits ({self.source})"


# Khattak & Mikaitis (2025) report block 16 and 2 extra bits for FP16/BF16 on
# Blackwell (B200) and use the same model for Hopper; lesson 4 measures the H200.
DEFAULT_TC_MODEL = TensorCoreModel(16, 2, "published B200/Hopper model, Khattak & Mikaitis 2025")


def _round_f32_toward_zero(s: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding toward zero (exact input assumed)."""
    r = s.astype(np.float32)
    too_big = np.abs(r.astype(np.float64)) > np.abs(s)
    if too_big.any():
        r = np.where(too_big, np.nextafter(r, np.float32(0)), r)
    return r


def fp32_fma_chain(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C = A B as gemm_fp32_kernel computes it: a sequential FP32 FMA chain per element.

    The FP32 values live in a float64 array. Each step forms s = acc + a_k b_k in
    float64 (the product is exact: 24 x 24 bits < 53) and rounds s to FP32. That
    is one correct FP32 rounding unless s itself was rounded *and* landed exactly
    halfway between two FP32 numbers; those rare ties are found from the bits of
    s and settled with the exact error of the float64 addition (TwoSum).
    FP32 subnormal results are outside this check (they do not occur in the
    course's tests).
    """
    A64 = np.asarray(A, dtype=np.float32).astype(np.float64)
    B64 = np.asarray(B, dtype=np.float32).astype(np.float64)
    M, K = A64.shape
    N = B64.shape[1]
    acc = np.zeros((M, N))
    p = np.empty((M, N))
    s = np.empty((M, N))
    low = np.uint64((1 << 29) - 1)        # float64 fraction bits below FP32's 23
    half = np.uint64(1 << 28)             # exactly half an FP32 ulp
    for k in range(K):
        np.multiply(A64[:, k:k + 1], B64[k:k + 1, :], out=p)
        np.add(acc, p, out=s)
        tie = (s.view(np.uint64) & low) == half
        if tie.any():
            a, q, t = acc[tie], p[tie], s[tie]
            bb = t - a
            err = (a - (t - bb)) + (q - bb)             # TwoSum: t + err == a + q exactly
            # nudge the tie toward the side the exact sum lies on, then round once
            s[tie] = np.where(err != 0, np.nextafter(t, np.copysign(np.inf, err)), t)
        acc[...] = s.astype(np.float32)
    return acc.astype(np.float32)


def _block_sum(terms: np.ndarray, extra_bits: int) -> np.ndarray:
    """Exact sum of terms (axis 1) after aligning each to the largest one's exponent.

    Keeps 24 + extra_bits significant bits measured from the leading bit of the
    largest term; lower bits are dropped (truncated toward zero).
    """
    biggest = np.abs(terms).max(axis=1, keepdims=True)
    _, emax = np.frexp(biggest)              # biggest in [2^(emax-1), 2^emax); 0 -> emax 0
    q = np.ldexp(1.0, emax - 24 - extra_bits)   # the weight of the last kept bit
    aligned = np.trunc(terms / q) * q            # power-of-two scaling: exact
    return aligned.sum(axis=1)                   # integers times q: exact in float64


def tensor_core_gemm(A, B, *, inputs: str = "fp16", acc: str = "fp32",
                     model: TensorCoreModel = DEFAULT_TC_MODEL,
                     max_temp_bytes: int = 256 << 20) -> np.ndarray:
    """C = A B as a WMMA kernel computes it (FP32 result, or FP16 for acc='fp16').

    A and B are rounded to `inputs` first (a no-op for arrays already in it).
    The K dimension is zero-padded to a multiple of the block, as the GPU
    helpers do. Rows are processed in chunks to bound memory.
    """
    if acc not in ("fp32", "fp16"):
        raise ValueError("acc must be 'fp32' or 'fp16'")
    A = round_to(np.asarray(A), inputs).astype(np.float64)
    B = round_to(np.asarray(B), inputs).astype(np.float64)
    M, K = A.shape
    N = B.shape[1]
    b = model.block
    Kp = -(-K // b) * b
    if Kp != K:
        A = np.pad(A, ((0, 0), (0, Kp - K)))
        B = np.pad(B, ((0, Kp - K), (0, 0)))
    out_dtype = np.float32 if acc == "fp32" else np.float16
    C = np.empty((M, N), dtype=out_dtype)
    rows = max(1, int(max_temp_bytes // (8 * (b + 1) * N * 3)))
    for r0 in range(0, M, rows):
        Ar = A[r0:r0 + rows]
        accv = np.zeros((Ar.shape[0], N), dtype=np.float64)
        terms = np.empty((Ar.shape[0], b + 1, N))
        for k0 in range(0, Kp, b):
            terms[:, 0, :] = accv
            np.multiply(Ar[:, k0:k0 + b, None], B[None, k0:k0 + b, :], out=terms[:, 1:, :])  # exact
            s = _block_sum(terms, model.extra_bits)
            if acc == "fp32":
                accv = _round_f32_toward_zero(s).astype(np.float64)
            else:
                accv = s.astype(np.float16).astype(np.float64)   # round to nearest even
        C[r0:r0 + rows] = accv.astype(out_dtype)
    return C
