"""Floating-point formats: facts, bits, number lines and underflow, all computed from each format's definition
(numpy / ml_dtypes ``finfo``; TF32, which has no storage type, from FP32's exponent and 10 fraction bits in a
32-bit word). Also the BF16 bit patterns the BF16 kernels take (CuPy has no bfloat16) and the GPU's TF32 rounding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .numerics import fmt, round_tf32, round_to

LESSON_FORMATS = ["fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"]


# --------------------------------------------------------------------------- format facts
@dataclass(frozen=True)
class FormatInfo:
    name: str
    bits: int             # bits in the format (TF32: 19 used of a 32-bit word)
    storage_bits: int     # bits it occupies in memory / registers
    exp_bits: int
    frac_bits: int
    max: float            # largest finite value
    tiny: float           # smallest positive normal, 2^emin
    smallest_subnormal: float
    eps: float            # spacing just above 1 = 2^-frac_bits (numpy's finfo.eps)
    u: float              # unit roundoff 2^-(frac_bits+1): worst relative error of round-to-nearest
    emin: int
    emax: int
    has_inf: bool

    @property
    def precision(self) -> int:
        return self.frac_bits + 1

    @property
    def decimal_digits(self) -> float:
        """-log10(u): about how many decimal digits survive one rounding."""
        return -math.log10(self.u)


def ieee_like(exp_bits: int, frac_bits: int) -> dict:
    """Range of an IEEE-754-style binary format from its bit counts alone (the all-ones exponent reserved for
    inf/NaN: emax = 2^(e-1) - 1, emin = 1 - emax). FP8 E4M3 breaks this rule on purpose."""
    emax = 2 ** (exp_bits - 1) - 1
    emin = 1 - emax
    return {"emax": emax, "emin": emin, "max": (2.0 - 2.0 ** -frac_bits) * 2.0 ** emax,
            "tiny": 2.0 ** emin, "smallest_subnormal": 2.0 ** (emin - frac_bits)}


def format_info(name: str) -> FormatInfo:
    """The facts of one format: from finfo where a numpy dtype exists, else from the bit counts."""
    f = fmt(name)
    if f.numpy_dtype is not None:
        fi = ml_dtypes.finfo(f.numpy_dtype)
        assert fi.nmant == f.frac_bits and fi.nexp == f.exp_bits, (name, fi)
        has_inf = bool(np.isinf(np.array(float("inf")).astype(f.numpy_dtype)))
        return FormatInfo(f.name, f.bits, f.bits, f.exp_bits, f.frac_bits, float(fi.max),
                          float(fi.smallest_normal), float(fi.smallest_subnormal), float(fi.eps),
                          float(fi.eps) / 2, int(fi.minexp), int(fi.maxexp) - 1, has_inf)
    # TF32: FP32's exponent (from FP32's finfo) with 10 fraction bits
    fi32 = ml_dtypes.finfo(np.float32)
    emax, emin = int(fi32.maxexp) - 1, int(fi32.minexp)
    return FormatInfo(f.name, f.bits, 32, f.exp_bits, f.frac_bits,
                      (2.0 - 2.0 ** -f.frac_bits) * 2.0 ** emax, 2.0 ** emin, 2.0 ** (emin - f.frac_bits),
                      2.0 ** -f.frac_bits, 2.0 ** -(f.frac_bits + 1), emin, emax, True)


def format_table(names=LESSON_FORMATS) -> list[dict]:
    """Rows for helpers.display.table: one per format."""
    rows = []
    for n in names:
        i = format_info(n)
        rows.append({"format": n, "bits": i.bits if i.bits == i.storage_bits else f"{i.bits} (in {i.storage_bits})",
                     "sign/exp/frac": f"1/{i.exp_bits}/{i.frac_bits}", "max": i.max, "tiny": i.tiny,
                     "subnormal": i.smallest_subnormal, "u": i.u, "eps": i.eps,
                     "digits": i.decimal_digits,
                     "range": f"10^{math.log10(i.smallest_subnormal):.1f} .. 10^{math.log10(i.max):.1f}",
                     "inf": "yes" if i.has_inf else "no (NaN only)"})
    return rows


# --------------------------------------------------------------------------- bits
def bit_layout(name: str) -> list[tuple[str, int]]:
    """[(field, width), ...] from the most significant bit: sign, exponent, fraction."""
    f = fmt(name)
    return [("sign", 1), ("exponent", f.exp_bits), ("fraction", f.frac_bits)]


def bit_string(x: float, name: str) -> str:
    """The bits of x rounded to nearest even in format `name` (sign, exponent, fraction) as a string of 0/1;
    for TF32 the top 19 bits of the rounded FP32 word."""
    f = fmt(name)
    if f.name == "tf32":
        w = int(np.asarray(round_tf32(np.float32(x))).reshape(1).view(np.uint32)[0])
        return format(w, "032b")[:19]
    arr = np.array([x], dtype=np.float64)
    if f.name not in ("fp64", "fp32", "fp16"):
        arr = round_to(arr, f.name)          # one rounding from float64
    v = arr.astype(f.numpy_dtype)
    uint = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[f.bits]
    return format(int(v.view(uint)[0]), f"0{f.bits}b")


def decode_bits(bits: str, name: str) -> float:
    """Value of a bit string of format `name` (inverse of bit_string for finite values)."""
    f = fmt(name)
    s, e, m = bits[0], bits[1:1 + f.exp_bits], bits[1 + f.exp_bits:]
    E, M = int(e, 2), int(m, 2)
    bias = 2 ** (f.exp_bits - 1) - 1
    sign = -1.0 if s == "1" else 1.0
    if E == 0:
        return sign * M * 2.0 ** (1 - bias - f.frac_bits)
    return sign * (1 + M / 2 ** f.frac_bits) * 2.0 ** (E - bias)


# --------------------------------------------------------------------------- BF16 bits for the kernels
def _xp(a):
    return __import__("cupy") if type(a).__module__.startswith("cupy") else np


def to_bf16_bits(x):
    """FP32 (or float64) array -> uint16 BF16 bit patterns, rounded to nearest even (NaN stays NaN), numpy
    or CuPy: what the BF16 kernels take."""
    xp = _xp(x)
    if xp is np:
        x = np.asarray(x)
        if x.dtype == np.float64:
            x = round_to(x, "bf16")                   # one rounding from float64
        return np.ascontiguousarray(x.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
    return _bf16_bits_bitwise(x, xp)


def _bf16_bits_bitwise(x, xp=np):
    """The same rounding on the FP32 word (the CuPy path): add 0x7FFF plus the lowest kept bit, keep 16 bits."""
    x32 = xp.ascontiguousarray(x, dtype=xp.float32)
    u = x32.view(xp.uint32)
    out = ((u + xp.uint32(0x7FFF) + ((u >> 16) & xp.uint32(1))) >> 16).astype(xp.uint16)
    out[xp.isnan(x32)] = 0x7FC0
    return out


def from_bf16_bits(bits):
    """uint16 BF16 bit patterns -> float32 values (exact), numpy or CuPy."""
    xp = _xp(bits)
    b = xp.asarray(bits)
    if b.dtype != xp.uint16:
        raise TypeError(f"expected uint16 BF16 bit patterns, got {b.dtype}")
    return (b.astype(xp.uint32) << 16).view(xp.float32)


def round_tf32_rna(x):
    """FP32 -> TF32 as the GPU's cvt.rna.tf32.f32 does it (to nearest, ties away from zero), numpy or CuPy."""
    xp = _xp(x)
    x = xp.ascontiguousarray(x, dtype=xp.float32)
    u = x.view(xp.uint32).astype(xp.uint64)
    rounded = ((u + 0x1000) & 0xFFFFE000).astype(xp.uint32)   # add half an ulp to the magnitude bits
    return xp.where(xp.isfinite(x), rounded.view(xp.float32), x)


# --------------------------------------------------------------------------- number lines
def representable(name: str, lo: float, hi: float, limit: int = 200_000) -> np.ndarray:
    """All non-negative finite values of format `name` in [lo, hi], ascending, enumerated from its bit
    patterns (TF32 / FP32: every exponent and fraction in the window)."""
    f = fmt(name)
    if f.bits <= 16:
        uint = np.uint8 if f.bits == 8 else np.uint16
        with np.errstate(invalid="ignore"):     # the NaN patterns
            v = np.arange(2 ** (f.bits - 1), dtype=np.uint32).astype(uint).view(f.numpy_dtype).astype(np.float64)
        v = v[np.isfinite(v)]
        return np.unique(v[(v >= lo) & (v <= hi)])
    info = format_info(name)
    vals = []
    count = 0
    e_lo = max(info.emin, math.floor(math.log2(max(lo, info.tiny))) - 1)
    e_hi = min(info.emax, math.floor(math.log2(max(hi, info.tiny))) + 1)
    step = 2 ** f.frac_bits
    if lo <= info.tiny:   # subnormals and zero
        sub = np.arange(step) * info.smallest_subnormal
        vals.append(sub)
        count += sub.size
    for e in range(e_lo, e_hi + 1):
        if count > limit:
            raise ValueError(f"window [{lo}, {hi}] holds more than {limit} {name} values; narrow it")
        b = (1 + np.arange(step) / step) * 2.0 ** e
        vals.append(b)
        count += b.size
    v = np.concatenate(vals)
    return np.unique(v[(v >= lo) & (v <= hi)])


# --------------------------------------------------------------------------- underflow / overflow
CATEGORIES = ["zero (underflow)", "subnormal", "normal", "overflow (inf/NaN)"]


def gradient_like(n: int = 200_000, seed: int = 0, lo_decade: float = -14.0, hi_decade: float = 6.0) -> np.ndarray:
    """Seeded values with random signs and magnitudes log-uniform over 10^lo_decade .. 10^hi_decade: like
    gradients, they span many decades, so every region of a format is visible."""
    rng = np.random.default_rng(seed)
    mag = 10.0 ** rng.uniform(lo_decade, hi_decade, n)
    return np.where(rng.random(n) < 0.5, -mag, mag)


def classify(x, name: str, scale: float = 1.0) -> np.ndarray:
    """Category index (into CATEGORIES) of each value of x*scale after rounding to `name`."""
    info = format_info(name)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.abs(round_to(np.asarray(x, dtype=np.float64) * scale, name).astype(np.float64))
    cat = np.full(r.shape, 2, dtype=np.int8)
    cat[r < info.tiny] = 1
    cat[r == 0] = 0
    cat[~np.isfinite(r)] = 3
    return cat


def category_fractions(x, name: str, scale: float = 1.0) -> dict:
    """{category: fraction of values} after rounding x*scale to `name`."""
    c = classify(x, name, scale)
    return {CATEGORIES[i]: float(np.mean(c == i)) for i in range(len(CATEGORIES))}
