"""Block-scaled FP8 GEMM (lesson 7): DeepSeek-V3's recipe (arXiv:2412.19437, sec. 3.3.2) in one kernel.

Activations are scaled per 1 x 128 tile (sa), weights per 128 x 128 block (sb); fp8_block_scaled
(kernels/fp8_block_scaled_sm90a.cu) applies both where fp8_promote_128 promotes each K-tile's partial sum (one K-tile of
128 is one scale block). Here: its launcher, its bit-exact models (CPU and GPU), its check, and front ends
that take real data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .fp8_gemm import (Fp8Kernel, _operand_shape, _real_values, decode_e4m3, encode_e4m3, matmul, persistent_grid,
                       require_runs_here, why_not_here)

SCALE_BLOCK = 128              # K per scale block = K per promotion = F8_BK; N per weight block = BN
BLOCK_SCALED = Fp8Kernel("fp8_block_scaled", "fp8_block_scaled_sm90a.cu", 128, 128, (9, 0),
                         "fp8_promote_128 with DeepSeek-V3's scales at promotion: 1 x 128 activation tiles, "
                         "128 x 128 weight blocks")
SCALED_KERNELS = {BLOCK_SCALED.name: BLOCK_SCALED}
TABLE_SHAPE = (256, 256, 1024)     # the error table's product (M, N, K): 8 K-blocks, 8 x 2 weight blocks


def _blocks(n: int) -> int:
    return -(-int(n) // SCALE_BLOCK)


def check_scales(sa, sb, M: int, N: int, K: int):
    """sa (M x ceil(K/128)) and sb (ceil(N/128) x ceil(K/128)) unchanged, or an InputError with the fix:
    float32 numpy or CuPy arrays, every value finite and > 0."""
    kb, nb = _blocks(K), _blocks(N)
    for X, what, shape, layout in ((sa, "sa", (M, kb), "[row][k // 128]"),
                                   (sb, "sb", (nb, kb), "[n // 128][k // 128]")):
        if not (isinstance(X, np.ndarray) or type(X).__module__.startswith("cupy")):
            raise InputError(f"{what} is {type(X).__name__}, not an array of scales.",
                             f"pass {what} as a float32 numpy or CuPy array of shape {shape} ({layout}); "
                             "helpers.fp8_scaled.kernel_scales makes both from helpers.fp8's quantize_tiles and "
                             "quantize_blocks.")
        if X.dtype != np.float32:
            raise InputError(f"{what} is {X.dtype}; the kernel reads float32 scales.",
                             f"pass {what}.astype(np.float32) (the model then rounds exactly as the kernel reads).")
        if tuple(X.shape) != shape:
            hint = ""
            if what == "sb" and tuple(X.shape) == (kb, nb):
                hint = (" It has the layout [k // 128][n // 128] of helpers.fp8.quantize_blocks(B).scale for B"
                        " (K x N); the kernel indexes its weight blocks as Bt's, [n // 128][k // 128].")
                fix = "pass np.ascontiguousarray(sb.T) (helpers.fp8_scaled.kernel_scales does it)."
            elif what == "sa" and tuple(X.shape) == (kb, M):
                hint = " It looks transposed."
                fix = "pass np.ascontiguousarray(sa.T): one row of scales per row of A."
            else:
                per = "1 x 128 tile of A" if what == "sa" else "128 x 128 block of B"
                fix = (f"pass {what} of shape {shape}: one scale per {per}"
                       f" ({layout}); a last tile or block that is partial (K = {K}, N = {N}) still has its scale.")
            raise InputError(f"{what} has shape {tuple(X.shape)}, but A is {M} x {K} and B is {K} x {N}: "
                             f"{what} must be {shape[0]} x {shape[1]}.{hint}", fix)
        xp = np if isinstance(X, np.ndarray) else __import__("cupy")
        finite = xp.isfinite(X)
        if not bool(finite.all()):
            raise InputError(f"{what} holds {int((~finite).sum())} inf/NaN scale(s).",
                             "compute each scale as amax / 448 of a finite tile or block (an all-zero one gets 1).")
        if not bool((X > 0).all()):
            raise InputError(f"{what} holds {int((X <= 0).sum())} scale(s) <= 0: a scale multiplies a partial sum, "
                             "so 0 erases its block and a negative one flips its sign.",
                             "use amax / 448 for each tile or block, and 1 for a block of zeros.")
    return sa, sb


def kernel_scales(a, b):
    """The kernel's float32 (sa, sb) from a = quantize_tiles(A) and b = quantize_blocks(B): 1 / scale
    (helpers.fp8 multiplies by its scale before the cast), and b's transposed to the kernel's
    [n // 128][k // 128] (it reads Bt)."""
    from .fp8 import ACTIVATION_TILE, WEIGHT_BLOCK, Scaled

    for s, what, group, fn in ((a, "a", ACTIVATION_TILE, "quantize_tiles(A)"),
                               (b, "b", WEIGHT_BLOCK, "quantize_blocks(B)")):
        if not isinstance(s, Scaled) or tuple(s.group) != tuple(group):
            raise InputError(f"{what} is not scaled in {group[0]} x {group[1]} groups.",
                             f"make it with helpers.fp8.{fn}.")
    sa = (1.0 / a.scale).astype(np.float32)
    sb = np.ascontiguousarray((1.0 / b.scale).T).astype(np.float32)
    return sa, sb


def block_scaled_launcher(A8, Bt8, sa, sb):
    """(run, C) for fp8_block_scaled, as fp8_gemm.launcher: A8 (M x K) and Bt8 (N x K) E4M3 bytes and the
    float32 scales sa, sb (check_scales), numpy or CuPy, checked before anything touches a GPU."""
    from .compile import get_arch_kernel
    from .device import require_gpu

    spec = BLOCK_SCALED
    M, N, K = _operand_shape(A8, Bt8)
    if M == 0 or N == 0 or K == 0:
        raise InputError(f"A is {M} x {K} and Bt is {N} x {K}: an empty product.", "pass non-empty matrices.")
    check_scales(sa, sb, M, N, K)
    gpu = require_gpu(f"FP8 kernel {spec.name}")
    require_runs_here(spec, gpu)
    import cupy

    from .hopper import tensor_map_2d

    Kp, Np = -(-K // 16) * 16, -(-N // 8) * 8
    A8, Bt8 = cupy.ascontiguousarray(cupy.asarray(A8)), cupy.ascontiguousarray(cupy.asarray(Bt8))
    if Kp != K or Np != N:
        A8 = cupy.pad(A8, ((0, 0), (0, Kp - K)))
        Bt8 = cupy.pad(Bt8, ((0, Np - N), (0, Kp - K)))
    sa_d = cupy.ascontiguousarray(cupy.asarray(sa, dtype=cupy.float32))
    sb_d = cupy.ascontiguousarray(cupy.asarray(sb, dtype=cupy.float32))
    C = cupy.full((M, Np), np.nan, dtype=cupy.float32)
    kern = get_arch_kernel(spec.file, spec.name, (9, 0))
    if kern.max_dynamic_shared_size_bytes < spec.smem:
        kern.max_dynamic_shared_size_bytes = spec.smem
    args = (tensor_map_2d(A8, 128, 128), tensor_map_2d(Bt8, spec.bn, 128), C, np.int32(M), np.int32(Np),
            np.int32(Kp), sa_d, sb_d)
    grid = (persistent_grid(spec, M, Np, gpu.sms),)

    def run(keep=(A8, Bt8, sa_d, sb_d)):
        kern(grid, (384,), args, shared_mem=spec.smem)
    return run, C


def gemm_block_scaled(A8, Bt8, sa, sb):
    """C (M x N float32, CuPy) of one launch of fp8_block_scaled (block_scaled_launcher)."""
    run, C = block_scaled_launcher(A8, Bt8, sa, sb)
    run()
    return C if C.shape[1] == Bt8.shape[0] else C[:, :Bt8.shape[0]]


def _model_operands(A, B, sa, sb):
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs A's columns == B's rows.",
                         "pass A (M x K) and B (K x N): the model takes B itself, the kernel its transpose.")
    M, K = A.shape
    N = B.shape[1]
    check_scales(sa, sb, M, N, K)
    return M, N, K


def block_scaled_model(A, B, sa, sb, *, threads: int | None = None) -> np.ndarray:
    """fp8_block_scaled's arithmetic on the CPU, bit for bit (A: M x K, B: K x N, E4M3 values; sa, sb the
    kernel's float32 scales). For each K-block of 128: its partial sum P from a zero accumulator as the FP8
    wgmma computes it (FP8_WGMMA_MODEL), s = f32(sa * sb), then total = f32(total + f32(P * s)) in K-block
    order: numpy's float32 multiply and add each round to nearest once, as __fmul_rn and __fadd_rn do."""
    from . import emulate as E

    A = E._as_fp8_values(A, "A")
    B = E._as_fp8_values(B, "B")
    M, N, K = _model_operands(A, B, sa, sb)
    sa, sb = np.asarray(sa, dtype=np.float32), np.asarray(sb, dtype=np.float32)
    col_block = np.arange(N) // SCALE_BLOCK
    total = np.zeros((M, N), dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for kb in range(_blocks(K)):
            k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
            part = E.tensor_core_mma(A[:, k0:k1], B[k0:k1], None, inputs="fp8_e4m3", acc="fp32",
                                     model=E.FP8_WGMMA_MODEL, threads=threads).astype(np.float32)
            s = sa[:, kb][:, None] * sb[:, kb][None, :]            # float32 x float32: M x ceil(N/128), rounded
            total = total + part * s[:, col_block]                 # two float32 operations, two roundings
    return total


def block_scaled_model_gpu(A, B, sa, sb):
    """block_scaled_model on the GPU for CuPy arrays: each partial sum by helpers.model_gpu.tc_model, then
    the float32 multiply and add, each its own CuPy kernel (no FMA). Returns a CuPy float32 array."""
    import cupy

    from .emulate import FP8_WGMMA_MODEL
    from .model_gpu import tc_model

    Av, Bv = cupy.asarray(A, dtype=cupy.float64), cupy.asarray(B, dtype=cupy.float64)
    M, N, K = _model_operands(Av, Bv, sa, sb)
    sa, sb = cupy.asarray(sa, dtype=cupy.float32), cupy.asarray(sb, dtype=cupy.float32)
    col_block = cupy.arange(N) // SCALE_BLOCK
    total = cupy.zeros((M, N), dtype=cupy.float32)
    term = cupy.empty((M, N), dtype=cupy.float32)
    for kb in range(_blocks(K)):
        k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
        part = tc_model(cupy.ascontiguousarray(Av[:, k0:k1]), cupy.ascontiguousarray(Bv[k0:k1]), FP8_WGMMA_MODEL,
                        inputs="fp8_e4m3", acc="fp32").astype(cupy.float32)
        s = sa[:, kb][:, None] * sb[:, kb][None, :]
        cupy.multiply(part, s[:, col_block], out=term)
        cupy.add(total, term, out=total)
        del part
    return total


# ------------------------------------------------------------------ the check of a block-scaled product
E4M3_TINY = 2.0 ** -6          # E4M3's smallest normal number (frexp exponent -5: what a subnormal counts as)
_F32_U, _F32_ETA = 2.0 ** -24, 2.0 ** -149   # FP32: unit roundoff (to nearest); an absolute error below normal


def _partial_bound(Ab, Bb, xp):
    """(P, E): the exact partial sum of one K-block (128 products of E4M3 numbers add exactly in float64)
    and a worst-case bound E on the FP8 wgmma's error on it, for any data: per step of 32 products each
    aligned term loses less than 2^(emax - 14), 2^emax <= 2 max(|a||b| with subnormals counted as 2^-6,
    |accumulator|), and the 14-bit cut of the sum less than 2^-13 of it."""
    M, Kb = Ab.shape
    N = Bb.shape[1]
    P = xp.zeros((M, N))
    E = xp.zeros((M, N))
    w = 2.0 ** -13
    for k0 in range(0, Kb, 32):
        a, b = Ab[:, k0:k0 + 32], Bb[k0:k0 + 32]
        n = a.shape[1]
        am = xp.where(a != 0, xp.maximum(xp.abs(a), E4M3_TINY), 0.0).max(axis=1)
        bm = xp.where(b != 0, xp.maximum(xp.abs(b), E4M3_TINY), 0.0).max(axis=0)
        unit = w * xp.maximum(am[:, None] * bm[None, :], xp.abs(P) + E)
        P += a @ b
        E += (n + 1) * unit
        E += w * (xp.abs(P) + E)
    return P, E


@dataclass
class BlockScaledCheck:
    """check_block_scaled's verdict: no NaN, every element within the bound, and (where compared) bit for
    bit the model's."""
    name: str
    shape: tuple
    n_nan: int
    n_over: int                   # elements over the bound (NaN not counted)
    bound_ratio: float            # max |C - R| / bound (<= 1 passes)
    first_over: tuple | None      # (i, j, got, exact) of the worst element
    model: str                    # 'identical', 'differs' or 'none' (not compared)
    model_cells: int = 0
    model_mismatch: int = 0
    model_first: tuple | None = None   # (i, j, got, model)
    model_where: str = ""

    @property
    def passed(self) -> bool:
        return self.n_nan == 0 and self.n_over == 0 and self.model != "differs"

    def __bool__(self):
        return self.passed

    def verdict(self) -> str:
        """One line without measured numbers when it passes."""
        M, N, K = self.shape
        head = f"{self.name} M={M} N={N} K={K}"
        model = (f"; bit-identical to the model (all {self.model_cells} elements, {self.model_where})"
                 if self.model == "identical" else "")
        if self.passed:
            return f"PASS {head}: every element within the worst-case bound{model}"
        why = []
        if self.n_nan:
            why.append(f"{self.n_nan} NaN (unwritten?)")
        if self.n_over:
            i, j, got, exact = self.first_over
            why.append(f"{self.n_over} elements over the bound (worst at ({i}, {j}): {got!r}, exact {exact!r})")
        if self.model == "differs":
            i, j, got, mod = self.model_first
            why.append(f"{self.model_mismatch} of {self.model_cells} elements unlike the model (first at ({i}, {j}): "
                       f"{got!r}, model {mod!r})")
        return f"FAIL {head}: " + "; ".join(why) + model


def block_scaled_bound(A, B, sa, sb):
    """(R, bound), float64 M x N: the exact product R = sum over K-blocks of sa sb P of what fp8_block_scaled
    multiplies, and a worst-case bound on |C - R| for any data: the wgmma's error on each P
    (_partial_bound), the float32 roundings of s, of P s and of each add, propagated in K-block order, and
    R's own float64 rounding. numpy or CuPy (then on the GPU)."""
    xp = np if isinstance(A, np.ndarray) else __import__("cupy")
    A64, B64 = xp.asarray(A, dtype=xp.float64), xp.asarray(B, dtype=xp.float64)
    M, N, K = _model_operands(A64, B64, sa, sb)
    s_a, s_b = xp.asarray(sa, dtype=xp.float64), xp.asarray(sb, dtype=xp.float64)
    col_block = xp.arange(N) // SCALE_BLOCK
    u, eta = _F32_U, _F32_ETA
    R = xp.zeros((M, N))
    absR = xp.zeros((M, N))                    # sum of |s P|: what R's own float64 rounding scales with
    Et = xp.zeros((M, N))
    for kb in range(_blocks(K)):
        k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
        P, eP = _partial_bound(A64[:, k0:k1], B64[k0:k1], xp)
        s = (s_a[:, kb][:, None] * s_b[:, kb][None, :])[:, col_block]      # exact: 24 x 24 bits
        s_hat = s * (1 + u) + eta                                            # |f32(s)| at most
        Et += eP * s_hat + xp.abs(P) * (u * s + eta) + u * (xp.abs(P) + eP) * s_hat + eta   # f32(P^ f32(s))
        R += s * P
        absR += xp.abs(s * P)
        Et += u * (xp.abs(R) + Et) + eta                                     # the add to the total
        del P, eP, s, s_hat
    Et += 4.0 * (_blocks(K) + 2) * 2.0 ** -53 * absR
    return R, Et


def check_block_scaled(C, A, B, sa, sb, *, model: bool = True, name: str = "fp8_block_scaled") -> BlockScaledCheck:
    """Is C a right answer of fp8_block_scaled for A (M x K), B (K x N) (E4M3 values) and its scales sa, sb?
    No NaN and every element within block_scaled_bound (wrong scales and wrong sums leave it); with
    model=True also bit for bit the model's (which catches one element one unit off). CuPy arrays: every
    step runs on the GPU."""
    if not (isinstance(C, np.ndarray) or type(C).__module__.startswith("cupy")) or C.dtype.kind != "f":
        raise InputError(f"C is {type(C).__name__} {getattr(C, 'dtype', '')}, not the kernel's float output.",
                         "pass the float32 array gemm_block_scaled (or block_scaled_model) returned.")
    xp = np if isinstance(C, np.ndarray) else __import__("cupy")
    A64, B64 = xp.asarray(A, dtype=xp.float64), xp.asarray(B, dtype=xp.float64)
    M, N, K = _model_operands(A64, B64, sa, sb)
    if tuple(C.shape) != (M, N):
        raise InputError(f"C has shape {tuple(C.shape)}, but A B is {M} x {N}.",
                         "pass the kernel's output cropped to M x N (gemm_block_scaled returns it so).")
    R, Et = block_scaled_bound(A64, B64, sa, sb)
    C64 = C.astype(xp.float64)
    n_nan = int(xp.isnan(C64).sum())
    diff = xp.abs(C64 - R)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = xp.where(Et > 0, diff / xp.where(Et > 0, Et, 1.0), xp.where(diff > 0, xp.inf, 0.0))
    ratio = xp.where(xp.isnan(C64), 0.0, ratio)
    over = ratio > 1.0
    n_over = int(over.sum())
    worst = int(xp.argmax(ratio.ravel()))
    i, j = divmod(worst, N)
    first = (i, j, float(C64[i, j]), float(R[i, j])) if n_over else None
    chk = BlockScaledCheck(name, (M, N, K), n_nan, n_over, float(ratio.max()) if ratio.size else 0.0, first, "none")
    if model:
        Em = (block_scaled_model(A64, B64, sa, sb) if xp is np else block_scaled_model_gpu(A64, B64, sa, sb))
        Em = Em.astype(xp.float64)
        differ = ~((C64 == Em) | (xp.isnan(C64) & xp.isnan(Em)))
        chk.model_cells, chk.model_mismatch = int(C64.size), int(differ.sum())
        chk.model, chk.model_where = ("differs" if chk.model_mismatch else "identical"), ("CPU" if xp is np else "GPU")
        if chk.model_mismatch:
            r, c = divmod(int(xp.argmax(differ.ravel())), N)
            chk.model_first = (r, c, float(C64[r, c]), float(Em[r, c]))
    return chk


# ------------------------------------------------------------------ front ends: real data in, real units out
def block_scaled_operands(A, B):
    """A scaled per 1 x 128 tile and B per 128 x 128 block (zero-padded to multiples of 128 for it):
    (Aq, Bq, sa, sb), the E4M3 values (float64, A's and B's shapes) and the kernel's scales."""
    from .fp8 import quantize_blocks, quantize_tiles

    A, B = _real_values(A, "A"), _real_values(B, "B")
    _matmul_shapes(A, B)
    M, K = A.shape
    N = B.shape[1]
    Kp, Np = _blocks(K) * SCALE_BLOCK, _blocks(N) * SCALE_BLOCK
    a = quantize_tiles(np.pad(A, ((0, 0), (0, Kp - K))))
    b = quantize_blocks(np.pad(B, ((0, Kp - K), (0, Np - N))))
    sa, sb = kernel_scales(a, b)
    return a.q.astype(np.float64)[:, :K], b.q.astype(np.float64)[:K, :N], sa, sb


def per_tensor_operands(A, B):
    """A and B with one scale each: (Aq, Bq, sa, sb), sa and sb float32 numbers, A B ~ (Aq Bq) sa sb."""
    from .fp8 import quantize_per_tensor

    A, B = _real_values(A, "A"), _real_values(B, "B")
    _matmul_shapes(A, B)
    a, b = quantize_per_tensor(A), quantize_per_tensor(B)
    return (a.q.astype(np.float64), b.q.astype(np.float64), np.float32(1.0 / a.scale.flat[0]),
            np.float32(1.0 / b.scale.flat[0]))


def _matmul_shapes(A, B):
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0] or 0 in A.shape or 0 in B.shape:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs non-empty matrices, A's columns == "
                         "B's rows.", "pass A (M x K) and B (K x N); the kernels' transposed B is made here.")


def block_scaled_matmul(A, B):
    """C ~ A B (real numbers) block-scaled (block_scaled_operands) by fp8_block_scaled on a Hopper GPU,
    else its CPU model. Returns (C as numpy float32 in A B's units, where it ran: one line)."""
    Aq, Bq, sa, sb = block_scaled_operands(A, B)
    why, b = why_not_here(BLOCK_SCALED)
    if why is None:
        import cupy

        C = gemm_block_scaled(cupy.asarray(encode_e4m3(Aq)), cupy.asarray(encode_e4m3(Bq.T.copy())), sa, sb)
        return cupy.asnumpy(C), f"ran on the {b.gpu.name}"
    return block_scaled_model(Aq, Bq, sa, sb), f"CPU model of the H200's arithmetic ({why})"


def per_tensor_matmul(A, B):
    """block_scaled_matmul with one scale for A and one for B: fp8_promote_128, then C = f32(Aq Bq) x
    f32(sa sb). Returns (C as numpy float32 in A B's units, where it ran)."""
    Aq, Bq, sa, sb = per_tensor_operands(A, B)
    C, where = matmul("fp8_promote_128", Aq, Bq)
    return np.asarray(C, dtype=np.float32) * (sa * sb), where      # float32 x float32, rounded to nearest


# ------------------------------------------------------------------ the error table
SCALING_INPUTS = ("normal", "outlier activations", "varied weight blocks")
MASSIVE_ROWS, OUTLIERS = 4, 8       # 'outlier activations': rows x 2^16, single entries +-2^17
SCALINGS = ("per tensor", "1x128 tiles, 128x128 blocks")


def scaling_inputs(kind: str, M: int = TABLE_SHAPE[0], N: int = TABLE_SHAPE[1], K: int = TABLE_SHAPE[2],
                   seed: int = 0):
    """Seeded float64 A (M x K, activations) and B (K x N, weights) of one kind:
    'normal': both N(0,1);
    'outlier activations': A as LLM activations can be: N(0,1), with a few massive tokens (MASSIVE_ROWS rows
      x 2^16) and a few single outliers (OUTLIERS entries of +-2^17, helpers.fp8.outlier_matrix); B N(0,1).
      One scale for all of A maps the ordinary values below E4M3's normal range (2^-6 .. 448: about 15
      binades), where they keep few bits or none;
    'varied weight blocks': A N(0,1); B N(0,1) with each 128 x 128 block multiplied by a power of two: the
      column blocks 2^0 down to 2^-16 (evenly spaced), each block a further 2^-2 .. 2^2 (seeded): output
      channels whose weights are 16 binades apart."""
    from .fp8 import outlier_matrix

    if kind not in SCALING_INPUTS:
        raise InputError(f"no input kind {kind!r}.", f"use one of {', '.join(SCALING_INPUTS)}.")
    rng = np.random.default_rng([seed, SCALING_INPUTS.index(kind)])
    if kind == "outlier activations":
        A = outlier_matrix(M, K, outliers=min(OUTLIERS, M * K), magnitude=2.0 ** 17, seed=seed)
        A[rng.choice(M, size=min(MASSIVE_ROWS, M), replace=False)] *= 2.0 ** 16
    else:
        A = rng.standard_normal((M, K))
    B = rng.standard_normal((K, N))
    if kind == "varied weight blocks":
        kb, nb = _blocks(K), _blocks(N)
        e = np.round(np.linspace(0, -16, nb))[None, :] + rng.integers(-2, 3, size=(kb, nb))
        B *= np.kron(2.0 ** e, np.ones((SCALE_BLOCK, SCALE_BLOCK)))[:K, :N]
    return A, B


def error_stats(C, R, absAB) -> dict:
    """Errors of C against the float64 product R: |C - R| / |R| (median, 99th percentile), |C - R| /
    (|A| |B|) (absAB; median, max) and the normwise error."""
    C = np.asarray(C, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    err = np.abs(C - R)
    nz = R != 0
    rel = err[nz] / np.abs(R[nz])
    comp = err / np.where(absAB > 0, absAB, 1.0)
    return {"median rel. error": float(np.median(rel)), "p99 rel. error": float(np.percentile(rel, 99)),
            "median |err|/(|A||B|)": float(np.median(comp)), "max |err|/(|A||B|)": float(comp.max()),
            "normwise error": float(np.linalg.norm(C - R) / np.linalg.norm(R)), "nan": int(np.isnan(C).sum())}


def scaling_error_table(kinds=SCALING_INPUTS, shape=TABLE_SHAPE, seed: int = 0) -> list[dict]:
    """One row per (input kind, scaling): per_tensor_matmul and block_scaled_matmul on the same seeded
    inputs, each against the float64 product of the unquantized A and B (error_stats)."""
    M, N, K = shape
    rows = []
    for kind in kinds:
        A, B = scaling_inputs(kind, M, N, K, seed)
        R, absAB = A @ B, np.abs(A) @ np.abs(B)
        for label, fn in zip(SCALINGS, (per_tensor_matmul, block_scaled_matmul)):
            C, where = fn(A, B)
            rows.append({"inputs": kind, "scaling": label, "M": M, "N": N, "K": K, **error_stats(C, R, absAB),
                         "ran": where})
    return rows


# ------------------------------------------------------------------ inputs made on the GPU
def gpu_block_scaled_inputs(M: int, N: int, K: int, seed: int):
    """Seeded inputs made on the GPU (numpy would take a minute at 8192^2): (A8, Bt8, sa, sb, Aq, Bq), CuPy.
    A8 (M x K) and Bt8 (N x K): E4M3 bytes of 64 x N(0,1) clipped to +-448 (ties round down), sa and sb:
    float32 2^U(-8, 0); Aq (M x K) and Bq (K x N) the values in float64."""
    import cupy

    table = decode_e4m3(np.arange(127, dtype=np.uint8))          # the finite positive codes 0 .. 126, ascending
    mids = cupy.asarray((table[1:] + table[:-1]) / 2)
    values = cupy.asarray(np.concatenate([table, np.full(1, np.nan), -table, np.full(1, np.nan)]))
    rng = cupy.random.default_rng(seed)

    def e4m3_bytes(rows, cols):
        x = cupy.clip(64.0 * rng.standard_normal((rows, cols)), -448.0, 448.0)
        code = cupy.searchsorted(mids, cupy.abs(x)).astype(cupy.uint8)          # 0 .. 126: +0 .. 448
        return code + cupy.where(cupy.signbit(x), 128, 0).astype(cupy.uint8)      # the sign bit

    A8, Bt8 = e4m3_bytes(M, K), e4m3_bytes(N, K)
    sa = cupy.exp2(rng.uniform(-8, 0, (M, _blocks(K)))).astype(cupy.float32)
    sb = cupy.exp2(rng.uniform(-8, 0, (_blocks(N), _blocks(K)))).astype(cupy.float32)
    return A8, Bt8, sa, sb, values[A8.astype(cupy.int32)], cupy.ascontiguousarray(values[Bt8.astype(cupy.int32)].T)
