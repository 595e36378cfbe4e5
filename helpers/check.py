"""The result check: is C a right answer for A B, computed in the kernel's formats?

``check_gemm`` (and every kernel's ``spec.check``) passes C only when no element is NaN and all three hold:

1. **The a-priori bound** (lessons 0 and 4): |C - A B| <= tol |A||B| element by element (numerics.tolerance).
   A guarantee for any correct kernel, but on zero-mean data the answer is about |A||B| / sqrt(K): at large
   K the bound exceeds it, and C = 0 would pass.
2. **The answer-scaled bound**: the same worst case with the partial sums the accumulator really holds. At
   each rounding (every product of an FMA chain, every `block` products on a Tensor Core) the error is at
   most u |s| (2u |s| when it truncates), plus on a Tensor Core the alignment's (block + 1) 2^-23 times the
   largest term (Fasi, Higham, Mikaitis & Pranesh, PeerJ CS 2021). The partial sums are computed in
   float64, so the bound follows the answer and rejects zeros, sign flips, transposes and permutations.
3. **The model**: the CPU model of the kernel's arithmetic (helpers.emulate) computes the same products in
   the same order; where it is exact (the CPU backend, GPUs in MODEL_FITTED_CC, and an FP32 FMA chain on every
   GPU: IEEE's fused multiply-add) C must equal it on every
   element: numpy for numpy arrays, the GPU's CUDA cores for CuPy arrays (helpers.model_gpu), so 8192^3
   products are compared in full too. It catches one wrong element, a copied row, a wrong edge tile or the
   wrong format, which no bound can tell from rounding. (A model given as a plain function is compared on a
   seeded sample of a large CuPy product.)

A and B may be what the kernel takes (float16, BF16 bits as uint16, float32) or the original float32/float64
data; anything else is an InputError that names the fix.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import device
from .errors import InputError, wrap
from .formats import from_bf16_bits, to_bf16_bits
from .mutations import local_mutations, wrong_results  # noqa: F401  (helpers.check.wrong_results: lesson 0)
from .numerics import (FORMATS, Tolerance, _xp, abs_product, align_unit, componentwise_error, fmt, rel_fro_error,
                       tolerance)

# Compute capabilities on which the models are bit-exact for every course kernel: the H200
# (results/nvidia-h200.json, experiment emulator_match).
MODEL_FITTED_CC = ((9, 0),)
MODEL_FULL_PRODUCTS = 1 << 26     # a model without a GPU version, on CuPy arrays of more products than this:
MODEL_SAMPLE = 64                 # compared on MODEL_SAMPLE rows x MODEL_SAMPLE columns (seeded by the shape)
SMALLEST_BLOCK = 4                # the smallest published accumulation block (V100 FP16, A100/H200 TF32)

# what a kernel takes for each input format (BF16 travels as uint16 bit patterns: CuPy has no bfloat16)
KERNEL_DTYPES = {"fp16": "float16", "bf16": "uint16", "tf32": "float32", "fp32": "float32"}
ORIGINAL_DTYPES = ("float32", "float64")


def _decode(X, inputs: str):
    """What the kernel takes -> float values (BF16 bits decoded), on the same side (numpy/CuPy)."""
    if inputs == "bf16" and X.dtype == np.uint16:
        return from_bf16_bits(X)
    return X


def encode_inputs(X, inputs: str):
    """Original FP32/float64 data -> what a kernel with this input format takes (rounded to nearest
    even for FP16 and BF16; TF32 kernels take FP32 and round on the device)."""
    xp = _xp(X)
    if inputs == "fp16":
        with np.errstate(over="ignore"):
            return X.astype(xp.float16)
    if inputs == "bf16":
        return to_bf16_bits(X)
    return X.astype(xp.float32)


def suspicious_bf16(values) -> str | None:
    """Why decoded BF16 inputs look like reinterpreted bits rather than numbers (astype(np.uint16) of floats
    gives small integers, whose bits are subnormal BF16), or None."""
    xp = _xp(values)
    v = xp.asarray(values, dtype=xp.float32)
    a = xp.abs(v)
    odd = ~xp.isfinite(v) | ((a < 2.0 ** -100) & (v != 0)) | (a > 2.0 ** 100)
    n = int(odd.sum())
    if n == 0:
        return None
    example = float(v.ravel()[int(xp.argmax(odd.ravel()))])
    return f"{n} of {v.size} decode to NaN, Inf or magnitudes beyond 1e+-30 (e.g. {example:.3g})"


def _is_array(X) -> bool:
    return isinstance(X, np.ndarray) or type(X).__module__.startswith("cupy")


def _validate(C, A, B, inputs: str, output: str, name: str):
    """Refuse what the check cannot judge, with the fix; returns (M, N, K)."""
    kdt = KERNEL_DTYPES.get(inputs)
    for nm, X in (("A", A), ("B", B)):
        if not _is_array(X):
            raise InputError(f"{nm} is {type(X).__name__}, not an array.",
                             f"pass the numpy or CuPy arrays you gave the kernel (or the original FP32 data) as {nm}.")
        if X.ndim != 2 or 0 in X.shape:
            raise InputError(f"{nm} has shape {X.shape}; the check needs a non-empty 2-D matrix.",
                             f"pass {nm} as you passed it to the kernel: a 2-D (rows, cols) array.")
        ok = {kdt, *ORIGINAL_DTYPES} if inputs != "fp32" else {"float32", "float64"}
        if X.dtype.name not in ok:
            if X.dtype == np.uint16:
                fix = (f"{name} takes {inputs} inputs: pass the float16 arrays you gave it, or the original FP32 data. "
                       f"uint16 arrays are BF16 bit patterns, for BF16 kernels only.")
            elif inputs == "bf16" and X.dtype == np.float16:
                fix = ("BF16 inputs travel as uint16 bit patterns (helpers.formats.to_bf16_bits(A32)); pass those, "
                       "or the original FP32 data. A float16 array is FP16, a different format.")
            else:
                fix = (f"pass what {name} takes ({kdt}" + (", BF16 bit patterns from helpers.formats.to_bf16_bits"
                       if inputs == "bf16" else "") + ") or the original float32/float64 data.")
            raise InputError(f"{nm} is {X.dtype}, which the check of {name} ({inputs} inputs) does not accept.", fix)
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise InputError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows.",
                         "pass A and B in the order and shapes you gave the kernel.")
    if C is None or not _is_array(C):
        raise InputError(f"C is {type(C).__name__}, not the kernel's output.",
                         "pass the array the kernel (helpers.gemm) returned; a function that returns nothing gives None.")
    if C.shape != (M, N):
        hint = " (it looks transposed)" if C.shape == (N, M) else ""
        raise InputError(f"C has shape {C.shape}, but A B is {M}x{N}{hint}.",
                         "pass the kernel's output for these A and B, cropped to M x N if it was padded (C[:M, :N]).")
    if C.dtype.kind != "f":
        raise InputError(f"C is {C.dtype}: a product of floats must be a float array.",
                         f"pass the kernel's output unchanged ({output} values, in a float array).")
    return M, N, K


def _representable(C, output: str) -> tuple[bool, tuple | None]:
    """Whether every finite element of C is a number of the output format; else the first that is not."""
    xp = _xp(C)
    f = FORMATS[output]
    if C.dtype.itemsize * 8 <= f.bits and C.dtype.kind == "f":
        return True, None
    C64 = C.astype(xp.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if output == "fp16":
            R = C64.astype(xp.float16).astype(xp.float64)
        elif output == "fp32":
            R = C64.astype(xp.float32).astype(xp.float64)
        else:
            return True, None
    bad = xp.isfinite(C64) & (R != C64)
    if not bool(bad.any()):
        return True, None
    i, j = divmod(int(xp.argmax(bad.ravel())), C.shape[1])
    return False, (i, j, float(C64[i, j]))


# --------------------------------------------------------------------------- part 2: the answer-scaled bound
def answer_scaled_bound(Av, Bv, *, acc: str, acc_rounding: str, block: int, output: str | None = None,
                        abs_ab=None):
    """Per-element worst-case error bound of an accumulation in `acc` that rounds every `block`
    products (block 1: an FMA chain), from the exact partial sums at every rounding point.

    Av, Bv: the values the hardware multiplies (float64-convertible numpy or CuPy arrays); abs_ab:
    |Av||Bv| when the caller has it already. Returns (bound, |Av||Bv|), float64 arrays of shape M x N.
    """
    xp = _xp(Av)
    A = xp.asarray(Av, dtype=xp.float64)
    B = xp.asarray(Bv, dtype=xp.float64)
    M, K = A.shape
    N = B.shape[1]
    fa = fmt(acc)
    u = fa.unit_roundoff * (2.0 if acc_rounding == "truncate" else 1.0)
    # below the smallest normal number, rounding errors are absolute: half (or a whole) subnormal step
    tiny = 2.0 ** ({"fp16": -14, "bf16": -126, "fp32": -126, "e8m13": -126}.get(fa.name, -1022) - fa.frac_bits) \
        * (1.0 if acc_rounding == "truncate" else 0.5)
    absA, absB = xp.abs(A), xp.abs(B)
    S = xp.zeros((M, N))
    tot = xp.zeros((M, N))
    if block > 1:                 # Tensor Core: align block + 1 terms, add exactly, round once
        align = (block + 1) * align_unit(fa)
        for k0 in range(0, K, block):
            sl = slice(k0, min(K, k0 + block))
            big = xp.maximum(xp.abs(S), absA[:, sl].max(axis=1)[:, None] * absB[sl].max(axis=0)[None, :])
            S += A[:, sl] @ B[sl]
            # the accumulator holds S + E (|E| <= tot): its terms and its rounding see that value
            tot = (tot * (1.0 + align) + align * big + u * xp.abs(S) + tiny) / (1.0 - u)
    else:                         # FMA chain: a rounding after every product; partial sums read every 16
        g = 16
        for k0 in range(0, K, g):
            sl = slice(k0, min(K, k0 + g))
            n = sl.stop - k0
            Pc = absA[:, sl] @ absB[sl]
            # every partial sum inside the chunk is at most |S_k0| + (|A||B| of the chunk) + tot
            tot = (tot * (1.0 + n * u) + n * (u * (xp.abs(S) + Pc) + tiny)) / (1.0 - n * u)
            S += A[:, sl] @ B[sl]
    bound = tot
    if output is not None and fmt(output).precision < fa.precision:   # a narrower output rounds once more
        bound = bound + fmt(output).unit_roundoff * (xp.abs(S) + bound)
    # float64 slack: the reference and the partial sums are themselves rounded in float64
    P = absA @ absB if abs_ab is None else abs_ab
    bound = bound + 4.0 * K * 2.0 ** -53 * P
    return bound, P


# --------------------------------------------------------------------------- part 3: the model
def _model_cells(M: int, N: int, K: int):
    """(rows, cols) compared with a model that has no GPU version, for CuPy arrays: all, or a sample
    seeded by the shape."""
    if M * N * K <= MODEL_FULL_PRODUCTS:
        return None, None
    rng = np.random.default_rng([M, N, K])
    rows = np.sort(rng.choice(M, min(M, MODEL_SAMPLE), replace=False))
    cols = np.sort(rng.choice(N, min(N, MODEL_SAMPLE), replace=False))
    return rows, cols


def _to_host(X):
    return X.get() if type(X).__module__.startswith("cupy") else np.asarray(X)


def _model_values(model, p, xp, M: int, N: int, K: int):
    """(model's C, the kernel's C, rows, cols, where the model ran) for the elements compared: every
    element, with the model on the GPU for CuPy arrays (helpers.model_gpu) and on the CPU for numpy.
    Only a model the GPU cannot run (a plain function), given CuPy arrays of more than
    MODEL_FULL_PRODUCTS products, is compared on a seeded sample (rows, cols not None)."""
    on_gpu = xp is not np
    if on_gpu and callable(getattr(model, "gpu", None)):
        Em = xp.asarray(model.gpu(p["Ak"], p["Bk"]), dtype=xp.float64)
        return Em, p["C64"], None, None, "GPU"
    rows, cols = _model_cells(M, N, K) if on_gpu else (None, None)
    Ah, Bh, Ch = _to_host(p["Ak"]), _to_host(p["Bk"]), _to_host(p["C64"])
    if rows is None:
        return np.asarray(model(Ah, Bh), dtype=np.float64), Ch, None, None, "CPU"
    Em = np.asarray(model(np.ascontiguousarray(Ah[rows]), np.ascontiguousarray(Bh[:, cols])), dtype=np.float64)
    return Em, Ch[np.ix_(rows, cols)], rows, cols, "CPU"


# --------------------------------------------------------------------------- the verdict
@dataclass
class Check:
    """The outcome of comparing a computed product with the float64 reference (and the model)."""

    name: str
    shape: tuple
    rel_err: float
    comp_err: float
    tol: Tolerance
    n_nan: int
    first_bad: tuple | None       # (i, j, got, expected) of the worst element for the bound
    backend: str
    n_bad: int = 0                # elements NaN, or over the bound or the answer-scaled bound
    first_wrong: tuple | None = None   # (i, j, got, expected) of the first of them, row-major
    size_ratio: float = 0.0       # max |C - C^| / answer-scaled bound (<= 1 passes)
    size_applies: bool = True     # False when the summation order is unknown (cuBLAS)
    model: str = "none"           # 'identical', 'differs', 'skipped', 'none' (no model for this product)
    model_reason: str = ""
    model_cells: int = 0          # elements compared with the model
    model_mismatch: int = 0
    model_first: tuple | None = None   # (i, j, got, model)
    notes: list = field(default_factory=list)
    model_where: str = ""         # 'CPU' (numpy) or 'GPU' (helpers.model_gpu): where the model ran

    @property
    def bound_ok(self) -> bool:
        return self.comp_err <= self.tol.value

    @property
    def size_ok(self) -> bool:
        return self.size_ratio <= 1.0

    @property
    def model_ok(self) -> bool:
        return self.model != "differs"

    @property
    def passed(self) -> bool:
        return self.n_nan == 0 and self.bound_ok and self.size_ok and self.model_ok

    def __bool__(self):
        return self.passed

    def model_phrase(self) -> str:
        """What the comparison with the model found, as the verdict's phrase ("; bit-identical to the model ...")."""
        if self.model == "identical":
            what = f"all {self.model_cells}" if self.model_cells == self.shape[0] * self.shape[1] \
                else f"a sample of {self.model_cells}"
            return f"; bit-identical to the model ({what} elements)"
        if self.model == "skipped":
            return f"; model not compared ({self.model_reason})"
        return ""

    def verdict(self) -> str:
        """One line without measured numbers: identical on every backend where the check passes (a lesson prints
        it through helpers.wrap)."""
        M, N, K = self.shape
        if self.passed:
            size = " and the answer-scaled bound" if self.size_applies else ""
            return (f"PASS {self.name} M={M} N={N} K={K}: error within tolerance {self.tol.value:.2e}{size}"
                    f"{self.model_phrase()}")
        why = []
        if self.n_nan:
            why.append(f"{self.n_nan} NaN")
        if not self.bound_ok:
            why.append(f"componentwise error > tolerance {self.tol.value:.2e}")
        if not self.size_ok:
            why.append("error > the answer-scaled bound")
        if not self.model_ok:
            why.append(f"{self.model_mismatch} of {self.model_cells} elements differ from the model")
        return f"FAIL {self.name} M={M} N={N} K={K}: " + "; ".join(why)

    def mismatch_summary(self) -> str:
        """Lines a learner can act on when the check fails."""
        if self.passed:
            return ""
        M, N, _ = self.shape
        lines = []
        if self.n_bad:
            lines.append(f"{self.n_bad} of {M * N} elements wrong ({self.n_nan} of them NaN: never written, or "
                         "NaN/Inf in the inputs)")
        if self.first_wrong is not None:
            i, j, got, exp = self.first_wrong
            lines.append(f"first wrong element C[{i}, {j}] = {got!r}, expected {exp!r}")
        if self.first_bad is not None and self.first_bad[:2] != (self.first_wrong or (None, None))[:2]:
            i, j, got, exp = self.first_bad
            lines.append(f"worst element C[{i}, {j}] = {got!r}, expected {exp!r}")
        if self.model == "differs" and self.model_first is not None:
            i, j, got, mod = self.model_first
            lines.append(f"first element that differs from the model of the kernel's arithmetic: C[{i}, {j}] = {got!r}, "
                         f"model {mod!r}")
        lines += self.notes
        return "\n".join(lines)

    def fields(self) -> dict:
        """The verdict and its three parts, for a row of recorded results."""
        return {"passed": bool(self.passed), "rel_err": float(f"{self.rel_err:.4e}"),
                "comp_err": float(f"{self.comp_err:.4e}"), "tol": float(f"{self.tol.value:.4e}"),
                "size_ratio": float(f"{self.size_ratio:.4g}") if self.size_applies else None,
                "model": self.model, "model_cells": self.model_cells, "n_nan": int(self.n_nan)}

    def __str__(self):
        s = (f"{self.verdict()}\n  measured ({self.backend}): componentwise {self.comp_err:.2e}, "
             f"relative Frobenius {self.rel_err:.2e}")
        if self.size_applies:
            s += f", error / answer-scaled bound {self.size_ratio:.2g}"
        if not self.passed:
            s += "".join(f"\n  {ln}" for ln in self.mismatch_summary().splitlines())
        return wrap(s)

    __repr__ = __str__


def _model_expected_exact(fitted: bool | None, ieee_chain: bool = False) -> tuple[bool, str]:
    """Whether the model must agree bit for bit here, and if not why. An FP32 FMA chain (block 1, rounding to
    nearest) is IEEE 754's fused multiply-add in K order, the same on every GPU; a Tensor Core's addition is fitted
    to the GPUs in MODEL_FITTED_CC."""
    if fitted is not None:
        return fitted, "" if fitted else "the model is fitted to other hardware"
    b = device.backend()
    if not b.is_gpu or ieee_chain:
        return True, ""
    cc = tuple(b.gpu.cc)
    if cc in MODEL_FITTED_CC:
        return True, ""
    fitted_on = ", ".join(f"sm_{a}{c}" for a, c in MODEL_FITTED_CC)
    return False, f"the model is fitted to {fitted_on}; this GPU is sm_{cc[0]}{cc[1]}"


def _parts(C, A, B, *, inputs, acc, output, acc_rounding, input_rounding, block, name, reference, values, order,
           fitted):
    """Everything the verdict needs, as arrays (shared by check_gemm and detection_limits)."""
    if not isinstance(block, (int, np.integer)) or isinstance(block, (bool, np.bool_)) or block < 1:
        raise InputError(f"block={block!r}: products per accumulator rounding must be a whole number >= 1.",
                         "pass block=1 for an FMA chain, 16 for FP16/BF16 WMMA, 4 for TF32 on the H200.")
    for what, f in (("inputs", inputs), ("acc", acc), ("output", output)):
        if (f is not None or what != "output") and (not isinstance(f, str) or f not in FORMATS):
            raise InputError(f"{what}={f!r} is not a format the course knows.", f"use one of: {', '.join(FORMATS)}.")
    for what, r in (("acc_rounding", acc_rounding), ("input_rounding", input_rounding)):
        if r not in ("nearest", "truncate"):
            raise InputError(f"{what}={r!r}: rounding is 'nearest' or 'truncate'.",
                             f"pass {what}='nearest' or {what}='truncate'.")
    if order not in ("sequential", "unknown"):
        raise InputError(f"order={order!r}: the summation order is 'sequential' or 'unknown'.",
                         "pass order='sequential' (the course's kernels) or order='unknown' (cuBLAS).")
    output = output or acc
    M, N, K = _validate(C, A, B, inputs, output, name)
    xp = _xp(A)
    if _xp(B) is not xp or _xp(C) is not xp:
        raise InputError("A, B and C are not all on one side (numpy and CuPy arrays mixed).",
                         "convert them all with cupy.asarray(...) or all with cupy.asnumpy(...).")
    ok, bad = _representable(C, output)
    if not ok:
        i, j, v = bad
        raise InputError(f"C[{i}, {j}] = {v!r} is not a {output} number: C is not the output of a kernel that "
                         f"writes {output}.", f"pass the kernel's output unchanged (its {output} values); to compare "
                         "your own float64 result, use helpers.numerics.rel_fro_error.")

    # what the kernel took, its decoded values, and the numbers the hardware multiplies
    kdt = KERNEL_DTYPES.get(inputs)
    Ak = A if A.dtype.name == kdt else encode_inputs(A, inputs)
    Bk = B if B.dtype.name == kdt else encode_inputs(B, inputs)
    Ad, Bd = _decode(A, inputs), _decode(B, inputs)
    for nm, X, Xd in (("A", A, Ad), ("B", B, Bd)):
        why = suspicious_bf16(Xd) if inputs == "bf16" and X.dtype == np.uint16 else None
        if why:
            raise InputError(f"{nm} does not look like BF16 bit patterns of ordinary numbers: {why}.",
                             f"make the bits with helpers.formats.to_bf16_bits({nm}32) (or {nm}_bf16.view(np.uint16) "
                             f"of an ml_dtypes.bfloat16 array); {nm}.astype(np.uint16) makes integers, not bit patterns.")
    if values is not None:
        Av, Bv = values(Ak), values(Bk)
    elif inputs in ("fp16", "bf16", "fp32"):
        Av, Bv = _decode(Ak, inputs), _decode(Bk, inputs)
    else:                                   # rounded somewhere we do not know how (cuBLAS TF32)
        Av = Bv = None
    exact = Av is not None and all(bool(xp.all(xp.asarray(V, dtype=xp.float64) == xp.asarray(D, dtype=xp.float64)))
                                   for V, D in ((Av, Ad), (Bv, Bd)))
    fitted_hw, fit_reason = _model_expected_exact(
        fitted, ieee_chain=block == 1 and inputs == acc == "fp32" and acc_rounding == "nearest")
    blk = block if fitted_hw else min(block, SMALLEST_BLOCK)

    # part 1: the a-priori bound, against the product of A and B as given
    C_ref = reference if reference is not None else xp.asarray(Ad, dtype=xp.float64) @ xp.asarray(Bd, dtype=xp.float64)
    scale = abs_product(Ad, Bd)
    C64 = xp.asarray(C, dtype=xp.float64)
    tol = tolerance(K, inputs, acc, output, acc_rounding=acc_rounding, input_rounding=input_rounding,
                    block=blk, n_checked=M * N, inputs_rounded_in_reference=exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = xp.abs(C64 - C_ref) / xp.where(scale > 0, scale, 1.0)
    ratio = xp.where(xp.isnan(ratio), xp.inf, ratio)
    p = dict(M=M, N=N, K=K, xp=xp, Ak=Ak, Bk=Bk, C64=C64, C_ref=C_ref, scale=scale, ratio=ratio, tol=tol,
             exact=exact, fitted=fitted_hw, fit_reason=fit_reason, block=blk, size_applies=order == "sequential",
             bound=None, C_hat=None)

    # part 2: the answer-scaled bound, against the exact product of the numbers multiplied
    if p["size_applies"]:
        if Av is None:
            Av, Bv = Ad, Bd
        C_hat = C_ref if exact else xp.asarray(Av, dtype=xp.float64) @ xp.asarray(Bv, dtype=xp.float64)
        bound, _ = answer_scaled_bound(Av, Bv, acc=acc, acc_rounding=acc_rounding, block=blk, output=output,
                                       abs_ab=scale if exact else None)
        if Av is Ad and not exact:          # input rounding we cannot reproduce: charge it as part 1 does
            bound = bound + tol.in_term * scale
        err = xp.abs(C64 - C_hat)
        with np.errstate(divide="ignore", invalid="ignore"):
            sr = xp.where(bound > 0, err / xp.where(bound > 0, bound, 1.0), xp.where(err > 0, xp.inf, 0.0))
        p.update(bound=bound, C_hat=C_hat, size=xp.where(xp.isnan(sr), xp.inf, sr))
    return p


def check_gemm(C, A, B, *, inputs, acc, output=None, acc_rounding="nearest", input_rounding="nearest",
               block=1, name="gemm", reference=None, backend=None, model: Callable | None = None,
               values: Callable | None = None, order: str = "sequential", fitted: bool | None = None) -> Check:
    """Check C = A B computed with `inputs` -> `acc` arithmetic (see the module docstring).

    C, A, B: numpy or CuPy arrays, all on one side; A, B: what the kernel took, or the original data.
    `reference`: a precomputed float64 A B. `model(A_kernel, B_kernel)`: the kernel's model (part 3).
    `values(A_kernel)`: the numbers the hardware multiplies when the kernel rounds on the device (TF32's
    cvt.rna). `order`: 'sequential' or 'unknown' (cuBLAS: part 2 does not apply). `fitted`: whether the
    model is exact on this hardware (default: the CPU backend, or a GPU in MODEL_FITTED_CC)."""
    p = _parts(C, A, B, inputs=inputs, acc=acc, output=output, acc_rounding=acc_rounding,
               input_rounding=input_rounding, block=block, name=name, reference=reference, values=values,
               order=order, fitted=fitted)
    xp, M, N, K, C64, C_ref, tol = p["xp"], p["M"], p["N"], p["K"], p["C64"], p["C_ref"], p["tol"]
    n_nan = int(xp.isnan(C64).sum())
    comp = componentwise_error(C64, C_ref, p["scale"])
    rel = rel_fro_error(C64, C_ref)
    notes = []
    size_ratio = float(p["size"].max()) if p["size_applies"] else 0.0
    wrong = p["ratio"] > tol.value
    if p["size_applies"]:
        wrong = wrong | (p["size"] > 1.0)
    # A probabilistic tolerance assumes mean-zero rounding errors; when every addition rounds the same
    # way (stagnation) a correct result can exceed it. The worst-case bound and part 2 have no assumption.
    if comp > tol.value and tol.acc_bound == "probabilistic" and p["size_applies"] and size_ratio <= 1.0 \
            and comp <= tol.worst:
        notes.append(f"outside the probabilistic tolerance {tol.value:.2e} (it assumes mean-zero rounding errors, "
                     f"which fails when every addition rounds the same way), within the worst-case {tol.worst:.2e} "
                     "and the answer-scaled bound")
        tol = Tolerance(tol.worst, tol.K, tol.inputs, tol.acc, tol.output, tol.in_term, tol.acc_term, tol.out_term,
                        "worst-case", tol.block, tol.worst)
        wrong = p["size"] > 1.0
    if bool(xp.isinf(C64).any()):
        notes.append(f"{int(xp.isinf(C64).sum())} elements are +-Inf: the {acc} accumulator overflowed, or the "
                     "inputs hold Inf")

    # part 3: the model of the kernel's arithmetic, on every element
    mstate, mreason, mcells, mmis, mfirst, mwhere = "none", "", 0, 0, None, ""
    if model is not None:
        if not p["fitted"]:
            mstate, mreason = "skipped", p["fit_reason"]
        else:
            Em, Cs, rows, cols, mwhere = _model_values(model, p, xp, M, N, K)
            with np.errstate(invalid="ignore"):
                diff = ~((Cs == Em) | (xp.isnan(Cs) & xp.isnan(Em)))
            mcells, mmis = int(Cs.size), int(diff.sum())
            mstate = "differs" if mmis else "identical"
            if mmis:
                r, c = divmod(int(xp.argmax(diff.ravel())), Cs.shape[1])
                i, j = (r, c) if rows is None else (int(rows[r]), int(cols[c]))
                mfirst = (i, j, float(Cs[r, c]), float(Em[r, c]))

    first_bad = first_wrong = None
    n_bad = 0
    if n_nan or bool(wrong.any()):
        i, j = divmod(int(p["ratio"].argmax()), N)
        first_bad = (i, j, float(C64[i, j]), float(C_ref[i, j]))
        n_bad = int(wrong.sum())
        if n_bad:
            i, j = divmod(int(wrong.ravel().astype(xp.int8).argmax()), N)
            first_wrong = (i, j, float(C64[i, j]), float(C_ref[i, j]))
    if backend is None:
        backend = device.backend().label
    return Check(name, (M, N, K), rel, comp, tol, n_nan, first_bad, backend, n_bad, first_wrong, size_ratio,
                 p["size_applies"], mstate, mreason, mcells, mmis, mfirst, notes, mwhere)


def detection_limits(C, A, B, **kw) -> dict:
    """How large a change of one element the bounds alone (parts 1 and 2) would catch, for the most
    and the least sensitive element of this product, relative to the root-mean-square of the answer.
    (With the model, on the CPU and on the H200, any change of one element is caught.) kw: as check_gemm."""
    p = _parts(C, A, B, **{**dict(output=None, acc_rounding="nearest", input_rounding="nearest", block=1,
                                  name="gemm", reference=None, values=None, order="sequential", fitted=None), **kw})
    xp, C64 = p["xp"], p["C64"]
    slack = p["tol"].value * p["scale"] - xp.abs(C64 - p["C_ref"])
    if p["size_applies"]:
        slack = xp.minimum(slack, p["bound"] - xp.abs(C64 - p["C_hat"]))
    rms = float(xp.sqrt(xp.mean(p["C_ref"] ** 2)))
    return {"smallest": float(slack.min()) / rms, "median": float(xp.median(slack)) / rms,
            "largest": float(slack.max()) / rms, "rms_answer": rms}
