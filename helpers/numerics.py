"""Floating-point formats, a float64 reference, error measures and the tolerance (numpy, or CuPy where noted).

The tolerance: the computed C^ of C = A B (inner dimension K) is compared with the float64 product of the
inputs, element by element, against |A| |B|: err_ij = |C^_ij - C_ij| / (|A| |B|)_ij. Three things move C^:

1. input rounding to a format of unit roundoff u_in: at most (1 + u_in)^2 - 1 per product (0 when the inputs
   already are in that format);
2. accumulation with unit roundoff u per rounding: Higham's worst case gamma_n = n u / (1 - n u) (Accuracy and
   Stability of Numerical Algorithms, 2nd ed., sec. 3.1) grows like n. With independent, mean-zero rounding
   errors, Higham & Mary (SIAM J. Sci. Comput. 41(5), 2019, Thm 2.4) bound it by
   gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1 with probability at least
   1 - 2n exp(-lambda^2 (1-u)^2 / 2): lambda is chosen so that a false alarm over all elements checked has
   probability below 1e-6, and the smaller bound is used. Truncation (Tensor Cores cut the FP32 sum, Fasi et
   al. 2021) is not mean-zero: only the worst case applies, with u doubled. A Tensor Core adds `block`
   products in a wide sum and rounds once per block, so n = ceil(K / block); the alignment inside the block
   adds at most gamma_K(2^-23);
3. output rounding: u_out.

    tol = (1 + in_term) (1 + acc_term) (1 + u_out) - 1

Against |A||B| this bound can exceed the answer itself at large K on zero-mean data, so helpers.check adds a
bound scaled to the answer and a comparison with the model of the kernel's arithmetic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes   # bfloat16 and the FP8 formats for numpy
import numpy as np

from .errors import InputError, UnknownFormatError, wrap


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: sign, `exp_bits`, `frac_bits` stored fraction bits."""

    name: str
    exp_bits: int
    frac_bits: int
    numpy_dtype: object | None  # a numpy dtype that stores it exactly, or None (tf32)

    @property
    def precision(self) -> int:
        """t: significant bits including the hidden bit."""
        return self.frac_bits + 1

    @property
    def unit_roundoff(self) -> float:
        """u = 2^-t: the largest relative error of round-to-nearest."""
        return 2.0 ** -self.precision

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.frac_bits


FORMATS = {
    "fp64": Format("fp64", 11, 52, np.float64),
    "fp32": Format("fp32", 8, 23, np.float32),
    "tf32": Format("tf32", 8, 10, None),  # stored in an FP32 register; 10 fraction bits used
    "fp16": Format("fp16", 5, 10, np.float16),
    "bf16": Format("bf16", 8, 7, ml_dtypes.bfloat16),
    "fp8_e4m3": Format("fp8_e4m3", 4, 3, ml_dtypes.float8_e4m3fn),
    "fp8_e5m2": Format("fp8_e5m2", 5, 2, ml_dtypes.float8_e5m2),
    # Hopper's FP8 wgmma accumulator, measured in lesson 7: an FP32 register whose value keeps 14
    # significant bits (8 exponent, 13 fraction bits), cut toward zero; not a storage format
    "e8m13": Format("e8m13", 8, 13, None),
}

# The alignment window of a Tensor Core block sum, as the unit of the bits it drops relative to the
# block's largest term: 2^-23 for the FP16/BF16/TF32 paths (26 bits kept, counted conservatively as
# 24), 2^-13 for FP8 wgmma (14 bits kept, lesson 7). Keyed by accumulator format.
ALIGN_UNIT = {"e8m13": 2.0 ** -13}
DEFAULT_ALIGN_UNIT = 2.0 ** -23


def align_unit(acc) -> float:
    """The alignment unit of a block sum that accumulates in `acc` (see ALIGN_UNIT)."""
    return ALIGN_UNIT.get(fmt(acc).name, DEFAULT_ALIGN_UNIT)


_DTYPE_NAMES = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def fmt(f) -> Format:
    """Look up a format by name ('fp16'), by Format, or by numpy dtype."""
    if isinstance(f, Format):
        return f
    if isinstance(f, str) and f in FORMATS:
        return FORMATS[f]
    try:
        name = _DTYPE_NAMES.get(np.dtype(f).name) if not isinstance(f, str) or f in _DTYPE_NAMES else None
    except TypeError:
        name = None
    if name is None:
        raise UnknownFormatError(f"unknown format {f!r}.", f"use one of: {', '.join(FORMATS)}.")
    return FORMATS[name]


def unit_roundoff(f) -> float:
    return fmt(f).unit_roundoff


# --------------------------------------------------------------------------- rounding
def round_tf32(x) -> np.ndarray:
    """Round float32 values to TF32 (10 fraction bits), to nearest, ties to even, on the FP32 bit pattern: add
    half a TF32 ulp (0xFFF plus the lowest kept bit), clear the 13 dropped bits; Inf and NaN pass unchanged.
    (PTX cvt.rna.tf32.f32 rounds ties away from zero instead.)"""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isfinite(x), out, x)


# smallest normal exponent of each format (2^emin is the smallest normal number)
_EMIN = {"fp32": -126, "tf32": -126, "e8m13": -126, "fp16": -14, "bf16": -126, "fp8_e4m3": -6, "fp8_e5m2": -14}


def _round_precision(x: np.ndarray, precision: int, emin: int) -> np.ndarray:
    """Round float64 values to `precision` significant bits (to nearest even, subnormals below 2^emin included):
    scaled by a power of two so that the last kept bit is the units digit, rint, scaled back."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(x)                                 # |x| in [2^(e-1), 2^e)
        q = np.maximum(e - 1, emin) - (precision - 1)      # exponent of the last kept bit
        out = np.ldexp(np.rint(np.ldexp(x, -q)), q)
    return np.where(np.isfinite(x), out, x)


def round_to(x, f) -> np.ndarray:
    """Round to format `f` (to nearest even, one rounding), as float32 (float64 for fp64). Values beyond the range
    become inf (NaN for fp8_e4m3, which has no infinity)."""
    f = fmt(f)
    x = np.asarray(x)
    if f.name == "fp64":
        return x.astype(np.float64)
    if x.dtype == np.float64 and f.name not in ("fp32", "fp16"):
        # float64 -> float32 -> narrow format would round twice; round once here instead
        # (numpy converts float64 to float16 and float32 directly, correctly).
        x = _round_precision(x, f.precision, _EMIN[f.name])
    if f.name == "tf32":
        return round_tf32(x.astype(np.float32))            # exact when x was pre-rounded
    if f.numpy_dtype is None:
        raise RuntimeError(f"no numpy dtype stores {f.name}: values cannot be rounded to it here")
    return x.astype(f.numpy_dtype).astype(np.float32)


# --------------------------------------------------------------------------- reference and errors
def _xp(a):
    """The array module of `a`: cupy for CuPy arrays, else numpy."""
    mod = type(a).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np


def reference_gemm(A, B):
    """C = A B in float64 (on the GPU for CuPy inputs, on the CPU for numpy)."""
    xp = _xp(A)
    return xp.asarray(A, dtype=xp.float64) @ xp.asarray(B, dtype=xp.float64)


def rel_fro_error(C, C_ref) -> float:
    """||C - C_ref||_F / ||C_ref||_F, in float64."""
    xp = _xp(C_ref)
    C = xp.asarray(C, dtype=xp.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        num, den = float(xp.linalg.norm(C - C_ref)), float(xp.linalg.norm(C_ref))
    if den == 0.0:                      # a zero reference: exact only if C is zero too
        return 0.0 if num == 0.0 else math.inf
    return num / den


def abs_product(A, B):
    """|A| |B| in float64: the scale each element's error is measured against."""
    xp = _xp(A)
    return xp.abs(xp.asarray(A, dtype=xp.float64)) @ xp.abs(xp.asarray(B, dtype=xp.float64))


def componentwise_error(C, C_ref, scale) -> float:
    """max_ij |C - C_ref|_ij / scale_ij with scale = |A||B| (0/0 counts as 0)."""
    xp = _xp(C_ref)
    diff = xp.abs(xp.asarray(C, dtype=xp.float64) - C_ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = xp.where(scale > 0, diff / xp.where(scale > 0, scale, 1.0), xp.where(diff > 0, xp.inf, 0.0))
    r = ratio.max()
    return float(r) if not bool(xp.isnan(r)) else math.inf


# --------------------------------------------------------------------------- tolerance
def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u); infinite once n u >= 1 (the bound says nothing)."""
    nu = n * u
    return nu / (1.0 - nu) if nu < 1.0 else math.inf


def gamma_prob(n: int, u: float, lam: float) -> float:
    """Higham & Mary's probabilistic gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2/(1-u)) - 1."""
    return math.expm1(lam * math.sqrt(n) * u + n * u * u / (1.0 - u))


def confidence_lambda(K: int, n_checked: int = 1, false_alarm: float = 1e-6) -> float:
    """lambda such that n_checked * 2K exp(-lambda^2 (1-u)^2/2) <= false_alarm (taking u -> 0)."""
    return math.sqrt(2.0 * math.log(2.0 * K * max(n_checked, 1) / false_alarm))


@dataclass(frozen=True)
class Tolerance:
    value: float
    K: int
    inputs: str
    acc: str
    output: str
    in_term: float
    acc_term: float
    out_term: float
    acc_bound: str  # 'worst-case' or 'probabilistic'
    block: int = 1
    worst: float = math.nan   # the value with the worst-case accumulation term (no assumption at all)

    def __float__(self):
        return self.value

    def __str__(self):
        return wrap(f"tol = {self.value:.2e} (K={self.K}, block {self.block}: inputs {self.inputs} {self.in_term:.1e}, "
                f"{self.acc} accumulation {self.acc_term:.1e} [{self.acc_bound}], "
                f"output {self.output} {self.out_term:.1e})")


def tolerance(K: int, inputs, acc, output=None, *, acc_rounding: str = "nearest",
              input_rounding: str = "nearest", block: int = 1,
              inputs_rounded_in_reference: bool = False, n_checked: int = 1,
              false_alarm: float = 1e-6) -> Tolerance:
    """The componentwise tolerance for a length-K dot product (the module docstring derives it).

    inputs, acc, output: format names (output defaults to acc). acc_rounding: 'nearest' (FMA chains, FP16
    accumulators) or 'truncate' (Tensor Core FP32 accumulation, also assumed for cuBLAS). input_rounding
    'truncate' doubles u_in (cuBLAS's FP32 -> TF32 is not documented to round to nearest). block: products
    per accumulator rounding (1 for an FMA chain, 16 for WMMA). n_checked: elements checked (sets lambda)."""
    if not _whole(K) or K < 1:
        raise InputError(f"K={K!r}: a dot product needs a whole number K >= 1 of products.",
                         "pass the inner dimension of the product (A's columns), e.g. tolerance(1024, 'fp16', 'fp32').")
    if not _whole(block) or block < 1:
        raise InputError(f"block={block!r}: products per accumulator rounding must be a whole number >= 1.",
                         "pass block=1 for an FMA chain, 16 for FP16/BF16 WMMA, 4 for TF32 on the H200.")
    K, block = int(K), int(block)
    for what, f in (("inputs", inputs), ("acc", acc)):
        if f is None:
            raise InputError(f"{what}=None: the {what} format must be named (None is not a format).",
                             f"pass a format name, e.g. tolerance({K}, 'fp16', 'fp32'): one of {', '.join(FORMATS)}.")
    for r in (acc_rounding, input_rounding):
        if not isinstance(r, str) or r not in ("nearest", "truncate"):
            raise InputError(f"rounding {r!r} is not one the course models.",
                             "pass acc_rounding / input_rounding as 'nearest' or 'truncate'.")
    if not _whole(n_checked) or n_checked < 1:
        raise InputError(f"n_checked={n_checked!r}: the number of elements checked is a whole number >= 1.",
                         "pass the number of elements of C the check looks at, e.g. n_checked=M * N.")
    if isinstance(false_alarm, (bool, np.bool_)) or not isinstance(false_alarm, (int, float, np.floating)) \
            or not 0 < false_alarm < 1:
        raise InputError(f"false_alarm={false_alarm!r}: a probability between 0 and 1 (exclusive).",
                         "pass e.g. false_alarm=1e-6, or leave it out.")
    fi, fa = fmt(inputs), fmt(acc)
    fo = fmt(output) if output is not None else fa
    u_in, u_acc = fi.unit_roundoff, fa.unit_roundoff
    if input_rounding == "truncate":
        u_in *= 2
    in_term = 0.0 if inputs_rounded_in_reference else (1 + u_in) ** 2 - 1
    n = -(-K // block)                      # accumulator roundings per dot product
    if acc_rounding == "truncate":
        worst = gamma(n, 2 * u_acc)
        acc_term, kind = worst, "worst-case"
    else:
        worst = gamma(n, u_acc)
        prob = gamma_prob(n, u_acc, confidence_lambda(n, n_checked, false_alarm))
        acc_term, kind = (worst, "worst-case") if worst <= prob else (prob, "probabilistic")
    align = gamma(K, align_unit(fa)) if block > 1 else 0.0   # alignment inside the wide block sum
    # output rounding: none when the output format is at least as wide as the accumulator
    out_term = fo.unit_roundoff if fo.precision < fa.precision else 0.0

    def total(acc_t):
        return (1 + in_term) * (1 + acc_t + align) * (1 + out_term) - 1

    return Tolerance(total(acc_term), K, fi.name, fa.name, fo.name, in_term, acc_term + align, out_term, kind,
                     block, total(worst))


# --------------------------------------------------------------------------- inputs
def random_matrix(rows: int, cols: int, *, seed: int, dist: str = "normal", dtype=np.float32) -> np.ndarray:
    """Seeded random test matrix (numpy): 'normal' (zero mean) or 'uniform' U[0,1). Not integers on purpose: small
    integers are exact in FP16 and hide its rounding error."""
    for what, n in (("rows", rows), ("cols", cols)):
        if not _whole(n) or n < 1:
            raise InputError(f"{what}={n!r}: a matrix dimension is a whole number >= 1.",
                             "pass the sizes as integers, e.g. random_matrix(1024, 512, seed=1) (int(x) of a float).")
    if not _whole(seed) or seed < 0:
        raise InputError(f"seed={seed!r}: the seed is a whole number >= 0 (the same seed gives the same matrix).",
                         "pass an integer, e.g. seed=1.")
    if not isinstance(dist, str) or dist not in ("normal", "uniform"):
        raise InputError(f"dist={dist!r} is not a distribution random_matrix draws from.",
                         "pass dist='normal' (zero mean, the default) or dist='uniform' (U[0,1)).")
    try:
        dt = np.dtype(dtype) if dtype is not None else None     # np.dtype(None) would be float64
    except TypeError:
        dt = None
    if dt is None or not (dt.kind == "f" or dt.name in _ML_FLOAT_NAMES):
        raise InputError(f"dtype={dtype!r} is not a floating-point dtype.",
                         "pass a numpy float dtype, e.g. dtype=np.float32 (the default), np.float16 or np.float64.")
    rng = np.random.default_rng(int(seed))
    if dist == "normal":
        x = rng.standard_normal((int(rows), int(cols)))
    else:
        x = rng.random((int(rows), int(cols)))
    return x.astype(dt)


_ML_FLOAT_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _whole(v) -> bool:
    """A whole number: int or numpy integer, not a bool (numpy's included)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

