"""Wrong results a check must reject, made from a correct one: what helpers.check is tested against.

``wrong_results`` makes the classic mistakes (zeros, a sign, a transpose, a row copied, an edge tile, the wrong
accumulator or input format) from a correct C; ``local_mutations`` changes a few elements only, what a bug in
one thread, row or tile produces.
"""
from __future__ import annotations

import numpy as np

from . import emulate
from .numerics import _xp, round_tf32


def wrong_results(C, A, B, *, inputs: str, acc: str, block: int, originals=None, seed: int = 0) -> dict:
    """Wrong answers a check must reject, made from a correct result C of A B (numpy; A, B: the
    values multiplied, as floats). Each keeps C's dtype and shape:

    zeros; sign flipped; scaled by 1.003; transposed (square C); rows permuted; one element off by
    ten times its error (at least ten units in its last place); one element 1% off; a row copied from
    the row above; the bottom-right 16 x 16 tile without its last K block (an edge-tile bug; left out
    when K <= 16 or it changes nothing); the wrong accumulator (FP16 for an
    FP32 one and vice versa; for an FP32 FMA chain, a float64 sum rounded once); inputs in the wrong
    format (BF16 for FP16 and TF32 inputs, FP16 for BF16, TF32 for FP32), same arithmetic otherwise,
    made from `originals` (the data before rounding, (A0, B0)) when given.
    """
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
    """Wrong results that differ from a correct C in a few elements only (numpy or CuPy, any size): what
    a bug in one thread, one row or one edge tile produces, and what only a comparison of every element
    with the model can see at large K. Each keeps C's dtype and shape:

    one element one unit in the last place up; one element 1% off; a row copied from the row above; the
    bottom-right 16 x 16 tile copied from the tile to its left (or above, for a C 16 columns wide or less)."""
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
