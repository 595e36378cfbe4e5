"""Wrong results a check must reject, made from a correct one: what helpers.check is tested against."""
from __future__ import annotations

import numpy as np

from . import emulate
from .numerics import _xp, round_tf32


def wrong_results(C, A, B, *, inputs: str, acc: str, block: int, originals=None, seed: int = 0) -> dict:
    """The classic mistakes, made from a correct result C of A B (numpy; A, B: the values multiplied), each
    with C's dtype and shape: zeros, sign, scale, transpose, permuted rows, one element off, a copied row, the
    last 16 x 16 tile without its last K block, the wrong accumulator (FP16 for FP32 and vice versa; a float64
    sum for an FMA chain) and the wrong input format (from `originals`, the data before rounding, if given)."""
    C = np.asarray(C)
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    C64 = A @ B
    out = {"zeros": np.zeros_like(C), "sign flipped": -C,
           "scaled by 1.003": (C.astype(np.float64) * 1.003).astype(C.dtype)}
    if C.shape[0] == C.shape[1]:
        out["transposed"] = np.ascontiguousarray(C.T)
    out["rows permuted"] = C[np.roll(np.arange(C.shape[0]), 1)]
    rng = np.random.default_rng(seed)
    i, j = int(rng.integers(C.shape[0])), int(rng.integers(C.shape[1]))
    one = C.copy()
    err = abs(float(C[i, j]) - C64[i, j])
    ulp = float(np.spacing(np.abs(C[i, j]).astype(C.dtype)))
    one[i, j] = C.dtype.type(C64[i, j] + 10 * max(err, ulp) * (1 if rng.random() < 0.5 else -1))
    out["one element off by 10x its error"] = one
    pct = C.copy()
    pct[i, j] = C.dtype.type(float(C[i, j]) * 1.01)
    out["one element 1% off"] = pct
    if C.shape[0] > 1:
        cp = C.copy()
        r = int(rng.integers(1, C.shape[0]))
        cp[r] = C[r - 1]
        out["a row copied from the row above"] = cp

    def tc(X, Y, fmt_in, acc_):
        return emulate.tensor_core_gemm(X, Y, inputs=fmt_in, acc=acc_, model=emulate.model_for(inputs))

    # the last (bottom-right) 16 x 16 tile computed without its last K block: a bug in the edge code
    K = A.shape[1]
    cut = K - (K % 16 or 16)
    if cut > 0:
        r0, c0 = max(0, C.shape[0] - 16), max(0, C.shape[1] - 16)
        edge = C.copy()
        if block == 1:
            part = emulate.fp32_fma_chain(A[r0:, :cut], B[:cut, c0:])
        else:
            part = tc(A[r0:, :cut], B[:cut, c0:], inputs, acc)
        edge[r0:, c0:] = part.astype(C.dtype)
        if not np.array_equal(edge, C):
            out["edge tile missing its last K block"] = edge

    if block == 1:     # FP32 FMA chain
        out["wrong accumulator"] = C64.astype(np.float32)
        A0, B0 = (A, B) if originals is None else (np.asarray(x, dtype=np.float32) for x in originals)
        out["wrong input format"] = emulate.fp32_fma_chain(round_tf32(A0.astype(np.float32)),
                                                           round_tf32(B0.astype(np.float32)))
    else:
        other = "fp16" if acc == "fp32" else "fp32"
        out["wrong accumulator"] = tc(A, B, inputs, other).astype(C.dtype)
        wrong_in = {"fp16": "bf16", "bf16": "fp16", "tf32": "bf16"}[inputs]
        A0, B0 = (A, B) if originals is None else (np.asarray(x, dtype=np.float64) for x in originals)
        out["wrong input format"] = tc(A0, B0, wrong_in, acc).astype(C.dtype)
    return out


def local_mutations(C, seed: int = 0) -> dict:
    """Results that differ from a correct C (numpy or CuPy) in a few elements, as a bug in one thread, row or
    edge tile makes them: one element one ulp up, one 1% off, a row copied from the row above, the last 16 x 16
    tile copied from its left (or upper) neighbour."""
    xp = _xp(C)
    M, N = C.shape
    rng = np.random.default_rng(seed)
    i, j = int(rng.integers(M)), int(rng.integers(N))
    out = {}
    up = C.copy()
    up[i, j] = xp.nextafter(C[i, j], xp.asarray(np.inf, dtype=C.dtype))
    out["one element one ulp up"] = up
    pct = C.copy()
    pct[i, j] = C[i, j] * C.dtype.type(1.01) if float(C[i, j]) != 0 else C.dtype.type(1.0)
    out["one element 1% off"] = pct
    if M > 1:
        r = int(rng.integers(1, M))
        cp = C.copy()
        cp[r] = C[r - 1]
        out["a row copied from the row above"] = cp
    r0, c0 = max(0, M - 16), max(0, N - 16)
    tile = C.copy()
    if N > 16:
        w = N - c0
        tile[r0:, c0:] = C[r0:, c0 - w:c0]
    elif M > 16:
        h = M - r0
        tile[r0:, c0:] = C[r0 - h:r0, c0:]
    if not bool((tile == C).all()):
        out["edge tile copied from its neighbour"] = tile
    return out
