"""FP8 for lesson 7: the two formats E4M3 and E5M2, casts past the largest number, and scaling.

The formats' facts are read from ml_dtypes (``finfo`` and the 256 decoded bit patterns), never typed in.
``cast`` is numpy's conversion (NaN or inf past the largest number); ``saturating_cast`` is the GPU's
``cvt.rn.satfinite`` as the PTX ISA defines it (PTX has no FP8 ``cvt`` without ``.satfinite``).
Scaling follows DeepSeek-V3 (arXiv:2412.19437 sec. 3.3.2): one scale per tensor, per 1x128 tile or
per 128x128 block, chosen so that the group's largest magnitude (amax) lands on the format's largest
number. Convention: ``q = fp8(x * scale)`` with ``scale = max / amax``; x comes back as ``q / scale``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from .errors import InputError, UnknownFormatError
from .formats import format_info, ieee_like
from .numerics import round_to

FP8 = ("fp8_e4m3", "fp8_e5m2")
_ALIASES = {"fp8_e4m3": "fp8_e4m3", "e4m3": "fp8_e4m3", "float8_e4m3fn": "fp8_e4m3", "e4m3fn": "fp8_e4m3",
            "fp8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2", "float8_e5m2": "fp8_e5m2"}
ACTIVATION_TILE = (1, 128)      # DeepSeek-V3 sec. 3.3.2: activations per token per 128 channels
WEIGHT_BLOCK = (128, 128)       # and weights per 128 input channels per 128 output channels
_FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")


def fp8_name(name) -> str:
    """The course's name of an FP8 format ('fp8_e4m3' / 'fp8_e5m2'), from it, an alias ('e4m3',
    'float8_e4m3fn') or the ml_dtypes type."""
    try:
        key = name.lower() if isinstance(name, str) else np.dtype(name).name
    except (TypeError, ValueError):
        key = None
    if key in _ALIASES:
        return _ALIASES[key]
    raise UnknownFormatError(f"{name!r} is not an FP8 format the course knows.",
                             "use 'fp8_e4m3' (ml_dtypes.float8_e4m3fn) or 'fp8_e5m2' (ml_dtypes.float8_e5m2).")


def dtype(name):
    """The ml_dtypes type that stores format `name`."""
    name = fp8_name(name)
    return {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}[name]


# --------------------------------------------------------------------------- the 256 patterns
def patterns(name) -> tuple[np.ndarray, np.ndarray]:
    """(bits, values): every one of the 256 bit patterns of the format (uint8, 0..255) and the value
    numpy decodes it to (float64; NaN and +-inf where the format has them)."""
    bits = np.arange(256, dtype=np.uint16).astype(np.uint8)
    return bits, bits.view(dtype(name)).astype(np.float64)


def bit_fields(pattern: int, name) -> str:
    """'S.EEEE.MMM': a pattern's sign, exponent and fraction bits, as in Micikevicius et al.'s Table 1."""
    info = format_info(fp8_name(name))
    s = format(int(pattern), "08b")
    return f"{s[0]}.{s[1:1 + info.exp_bits]}.{s[1 + info.exp_bits:]}"


@dataclass(frozen=True)
class Fp8Facts:
    name: str
    dtype_name: str
    exp_bits: int
    frac_bits: int
    bias: int
    max: float                 # largest finite value
    ieee_max: float            # what the IEEE rule (top exponent reserved) would give with these bits
    tiny: float                # smallest positive normal
    smallest_subnormal: float
    u: float                   # unit roundoff: worst relative error of one rounding (normal range)
    eps: float                 # spacing just above 1
    finite: int                # finite bit patterns (both zeros included)
    positive_finite: int       # finite values > 0
    positive_subnormal: int    # subnormal values > 0
    nan_patterns: tuple        # bit patterns numpy decodes to NaN
    inf_patterns: tuple        # bit patterns of +inf and -inf (none for E4M3)
    spacing_at_max: float      # distance from the largest number to the one below it
    midpoint: float            # max + spacing_at_max / 2: where round-to-nearest leaves the finite numbers
    midpoint_to: float         # what numpy's cast makes of the midpoint itself (ties to even)
    overflow_to: str           # what numpy's cast makes of anything above the midpoint: 'NaN' or 'inf'

    @property
    def binades(self) -> float:
        """log2(max / smallest subnormal): powers of two the format spans, subnormals included."""
        return math.log2(self.max / self.smallest_subnormal)


def facts(name) -> Fp8Facts:
    """Everything lesson 7 says about one FP8 format, computed from finfo, the decoded patterns and casts."""
    return _facts(fp8_name(name))


@functools.lru_cache(maxsize=None)
def _facts(name: str) -> Fp8Facts:
    t = dtype(name)
    fi = ml_dtypes.finfo(t)
    info = format_info(name)
    bits, vals = patterns(name)
    finite = np.isfinite(vals)
    pos = finite & (vals > 0)
    mx = float(fi.max)
    below = float(np.max(vals[finite & (vals < mx)]))
    spacing = mx - below
    midpoint = mx + spacing / 2
    with np.errstate(over="ignore", invalid="ignore"):
        mid_to = float(cast(np.array([midpoint]), name)[0].astype(np.float64))
        above = float(cast(np.array([np.nextafter(midpoint, np.inf)]), name)[0].astype(np.float64))
    return Fp8Facts(
        name=name, dtype_name=np.dtype(t).name, exp_bits=info.exp_bits, frac_bits=info.frac_bits,
        bias=1 - int(fi.minexp), max=mx, ieee_max=ieee_like(info.exp_bits, info.frac_bits)["max"],
        tiny=float(fi.smallest_normal), smallest_subnormal=float(fi.smallest_subnormal),
        u=float(fi.eps) / 2, eps=float(fi.eps), finite=int(finite.sum()), positive_finite=int(pos.sum()),
        positive_subnormal=int((pos & (vals < float(fi.smallest_normal))).sum()),
        nan_patterns=tuple(int(b) for b in bits[np.isnan(vals)]),
        inf_patterns=tuple(int(b) for b in bits[np.isinf(vals)]),
        spacing_at_max=spacing, midpoint=midpoint, midpoint_to=mid_to,
        overflow_to="NaN" if math.isnan(above) else ("inf" if math.isinf(above) else repr(above)))


def facts_table(names=FP8) -> list[dict]:
    """Rows for helpers.display.table: one per FP8 format."""
    rows = []
    for n in names:
        f = facts(n)
        rows.append({"format": f"{n} ({f.dtype_name})", "sign/exp/frac": f"1/{f.exp_bits}/{f.frac_bits}",
                     "bias": f.bias, "max": f.max, "ieee max": f.ieee_max, "tiny": f.tiny,
                     "subnormal": f.smallest_subnormal, "u": f.u, "binades": f.binades,
                     "finite": f.finite, "subnormals": f.positive_subnormal,
                     "inf": "yes" if f.inf_patterns else "no",
                     "nan": f"{len(f.nan_patterns)} ({', '.join(hex(b) for b in f.nan_patterns)})"})
    return rows


def special_values(names=FP8) -> list[dict]:
    """One row per special value (zeros, largest, smallest normal and subnormal, inf, NaN): its bit
    patterns in each format."""
    rows = {}
    for n in names:
        f = facts(n)
        bits, vals = patterns(n)

        def find(v, sign=0):
            return [int(np.flatnonzero((vals == v) & ((bits >> 7) == sign))[0])]

        pats = {"+0": find(0.0), "-0": find(0.0, 1), "largest": find(f.max), "smallest normal": find(f.tiny),
                "smallest subnormal": find(f.smallest_subnormal), "+inf / -inf": list(f.inf_patterns),
                "NaN": list(f.nan_patterns)}
        for what, ps in pats.items():
            shown = [f"`{bit_fields(p, n)}` ({vals[p]:g})" for p in ps]
            rows.setdefault(what, {"value": what})[n] = (
                "none" if not shown else ", ".join(shown) if len(shown) <= 2
                else f"{', '.join(shown[:2])} ... ({len(shown)} patterns)")
    return list(rows.values())


# --------------------------------------------------------------------------- casts
def _as_real(x, what: str = "x") -> np.ndarray:
    if type(x).__module__.startswith("cupy"):
        raise InputError(f"{what} is a CuPy array; these helpers work on the CPU.",
                         f"pass {what}.get() (a numpy copy).")
    a = np.asarray(x)
    if a.dtype.name not in _FLOAT_DTYPES:
        raise InputError(f"{what} has dtype {a.dtype}; FP8 conversion and scaling take real floating-point data.",
                         f"convert it first, e.g. {what}.astype(np.float32).")
    return a


def cast(x, name) -> np.ndarray:
    """x -> FP8 as numpy (ml_dtypes) converts: round to nearest even, no saturation, so values past the
    largest number become NaN (E4M3) or +-inf (E5M2). float64 is rounded once (numerics.round_to), not
    twice through float32 as ml_dtypes' own cast does."""
    name = fp8_name(name)
    a = _as_real(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(round_to(a, name)).astype(dtype(name))


def saturating_cast(x, name) -> np.ndarray:
    """x -> FP8 as PTX ``cvt.rn.satfinite`` defines it: NaN stays NaN; |x| above the largest finite
    number (infinity included) gives that number with x's sign; everything else rounds to nearest even."""
    name = fp8_name(name)
    a = _as_real(x)
    m = facts(name).max
    wide = a.astype(np.float64) if a.dtype.name != "float32" else a
    return cast(np.clip(wide, -m, m), name)       # np.clip keeps NaN


def overflow_rows(values, names=FP8) -> list[dict]:
    """What each value becomes: numpy's cast and the saturating cast, in each format."""
    rows = []
    for v in values:
        r = {"x": v}
        for n in names:
            r[f"{n} numpy"] = float(cast(np.array([v], dtype=np.float64), n)[0])
            r[f"{n} satfinite"] = float(saturating_cast(np.array([v], dtype=np.float64), n)[0])
        rows.append(r)
    return rows


# --------------------------------------------------------------------------- scaling
def amax_scale(amax, name="fp8_e4m3"):
    """scale = max / amax (elementwise); an amax of 0 (a group of zeros) gets scale 1."""
    m = facts(name).max
    a = np.asarray(amax, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any(a < 0):
        raise InputError("amax must be finite and >= 0.",
                         "compute it from finite data: np.abs(x).max(); look for inf/NaN in x first.")
    with np.errstate(divide="ignore"):
        s = np.where(a > 0, m / np.where(a > 0, a, 1.0), 1.0)
    return float(s) if s.ndim == 0 else s


@dataclass(frozen=True)
class Scaled:
    """FP8 values with one scale per group: x is approximately q / scale, group by group."""

    q: np.ndarray            # FP8 values (ml_dtypes dtype), the shape of x
    scale: np.ndarray        # float64, one per group: shape (rows // group[0], cols // group[1])
    group: tuple             # (rows, cols) of one group; x.shape for per-tensor scaling
    fmt: str
    saturate: bool = True
    amax: np.ndarray = field(default=None, repr=False)   # each group's largest magnitude before scaling

    def scale_per_element(self) -> np.ndarray:
        """The scale each element was multiplied by (the groups' scales spread over their elements)."""
        return np.kron(self.scale, np.ones(self.group))

    def dequantize(self) -> np.ndarray:
        """q / scale in float64: the values the FP8 numbers stand for."""
        return self.q.astype(np.float64) / self.scale_per_element()

    @property
    def inverse(self) -> np.ndarray:
        """1 / scale: what a GEMM multiplies each group's partial products by."""
        return 1.0 / self.scale


def _check_group(x: np.ndarray, group) -> tuple:
    if x.ndim != 2:
        raise InputError(f"x has shape {x.shape}; tile and block scaling take a matrix (2-D).",
                         "reshape it to rows x columns (x.reshape(-1, x.shape[-1])), or use quantize_per_tensor.")
    if x.size == 0:
        raise InputError("x is empty.", "pass a matrix with at least one element.")
    try:
        gr, gc = (int(g) for g in group)
        ok = len(tuple(group)) == 2 and all(float(g) == int(g) for g in group)
    except (TypeError, ValueError):
        ok = False
    if not ok or gr < 1 or gc < 1:
        raise InputError(f"group {group!r} is not a (rows, columns) pair of positive whole numbers.",
                         "pass e.g. (1, 128) for activation tiles or (128, 128) for weight blocks.")
    rows, cols = x.shape
    if rows % gr or cols % gc:
        pr, pc = -rows % gr, -cols % gc
        raise InputError(f"a {gr}x{gc} group does not divide a {rows}x{cols} matrix "
                         f"({rows} % {gr} = {rows % gr}, {cols} % {gc} = {cols % gc}).",
                         f"pad it with zeros to {rows + pr}x{cols + pc}: np.pad(x, ((0, {pr}), (0, {pc}))) "
                         "(zeros do not change any group's amax), or choose a group whose sides divide the matrix.")
    return gr, gc


def quantize(x, group=None, fmt="fp8_e4m3", *, saturate: bool = True) -> Scaled:
    """Scale x group by group so that each group's amax maps to the format's largest number, then cast.
    group: None (one scale for the tensor) or (rows, cols), e.g. ACTIVATION_TILE or WEIGHT_BLOCK.
    saturate: saturating_cast (as the GPU) or numpy's cast; after amax scaling both agree."""
    fmt = fp8_name(fmt)
    a = _as_real(x)
    if a.size == 0:
        raise InputError("x is empty.", "pass an array with at least one element.")
    bad = int(np.sum(~np.isfinite(a.astype(np.float64))))
    if bad:
        raise InputError(f"x holds {bad} inf/NaN value(s): no scale maps them into FP8.",
                         "find them with np.argwhere(~np.isfinite(x)) and fix the data first.")
    a64 = a.astype(np.float64)
    conv = saturating_cast if saturate else cast
    if group is None:
        if a.ndim == 0:
            raise InputError("x is a single number.", "pass an array (np.atleast_1d(x)).")
        amax = np.full((1,) * a.ndim, np.abs(a64).max())
        scale = np.full(amax.shape, amax_scale(float(amax.flat[0]), fmt))
        return Scaled(conv(a64 * scale.flat[0], fmt), scale, tuple(a.shape), fmt, saturate, amax)
    gr, gc = _check_group(a64, group)
    rows, cols = a64.shape
    blocks = np.abs(a64).reshape(rows // gr, gr, cols // gc, gc)
    amax = blocks.max(axis=(1, 3))
    scale = np.asarray(amax_scale(amax, fmt), dtype=np.float64).reshape(amax.shape)
    return Scaled(conv(a64 * np.kron(scale, np.ones((gr, gc))), fmt), scale, (gr, gc), fmt, saturate, amax)


def quantize_per_tensor(x, fmt="fp8_e4m3", *, saturate: bool = True) -> Scaled:
    """One scale for the whole tensor (the standard practice DeepSeek-V3 moves away from)."""
    return quantize(x, None, fmt, saturate=saturate)


def quantize_tiles(x, tile=ACTIVATION_TILE, fmt="fp8_e4m3", *, saturate: bool = True) -> Scaled:
    """One scale per 1x128 tile (activations: per token, per 128 channels)."""
    return quantize(x, tile, fmt, saturate=saturate)


def quantize_blocks(w, block=WEIGHT_BLOCK, fmt="fp8_e4m3", *, saturate: bool = True) -> Scaled:
    """One scale per 128x128 block (weights)."""
    return quantize(w, block, fmt, saturate=saturate)


def grouped_matmul(a: Scaled, b: Scaled) -> np.ndarray:
    """The exact (float64) product of two scaled operands (a: M x K, b: K x N), one K-group at a time:
    each group's partial sum of FP8 products is multiplied by 1/scale of a's tile and b's block before it
    joins the rest, as the scales change along K. Arithmetic, not a model of a Tensor Core's rounding."""
    for s, what in ((a, "a"), (b, "b")):
        if not isinstance(s, Scaled) or s.q.ndim != 2:
            raise InputError(f"{what} is not a scaled matrix.", "make it with helpers.fp8.quantize(x, group).")
    M, K = a.q.shape
    K2, N = b.q.shape
    if K != K2:
        raise InputError(f"a is {M}x{K} and b is {K2}x{N}: inner dimensions differ.", "pass a (M x K) and b (K x N).")
    ga, gb = a.group[1], b.group[0]
    G = math.gcd(ga, gb)
    qa, qb = a.q.astype(np.float64), b.q.astype(np.float64)
    ia, ib = np.kron(a.inverse, np.ones((a.group[0], 1))), np.kron(b.inverse, np.ones((1, b.group[1])))
    C = np.zeros((M, N))
    for k0 in range(0, K, G):
        part = qa[:, k0:k0 + G] @ qb[k0:k0 + G, :]
        C += part * ia[:, k0 // ga][:, None] * ib[k0 // gb, :][None, :]
    return C


# --------------------------------------------------------------------------- the outlier demonstration
def outlier_matrix(rows: int = 256, cols: int = 1024, *, outliers: int = 16, magnitude: float = 1e4,
                   seed: int = 0) -> np.ndarray:
    """Standard-normal float64 data with `outliers` entries of +-`magnitude` at random places (seeded)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    where = rng.choice(x.size, size=outliers, replace=False)
    x.flat[where] = magnitude * np.where(rng.random(outliers) < 0.5, -1.0, 1.0)
    return x


SCHEMES = {"per tensor": None, "128x128 blocks": WEIGHT_BLOCK, "1x128 tiles": ACTIVATION_TILE}


def relative_errors(x, deq) -> np.ndarray:
    """|deq - x| / |x| element by element (float64; 0 where x is 0 and deq is too, inf where only x is)."""
    x = np.asarray(x, dtype=np.float64)
    diff = np.abs(np.asarray(deq, dtype=np.float64) - x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x != 0, diff / np.where(x != 0, np.abs(x), 1.0), np.where(diff > 0, np.inf, 0.0))


def tiles_within_u(x, deq, u: float, tile=ACTIVATION_TILE) -> np.ndarray:
    """Per tile of x: True when every value in it came back with a relative error of at most u."""
    x = np.asarray(x, dtype=np.float64)
    gr, gc = _check_group(x, tile)
    rows, cols = x.shape
    ok = relative_errors(x, deq) <= u * (1 + 1e-12)       # float64 arithmetic of q / scale: 1e-16 relative
    return ok.reshape(rows // gr, gr, cols // gc, gc).all(axis=(1, 3))


def scaling_report(x, schemes=None, fmt="fp8_e4m3", small_quantile: float = 0.1) -> list[dict]:
    """One row per scaling scheme: nonzero values that became 0 or subnormal, the median relative error
    of the smallest values (below the `small_quantile` quantile of |x|) and of all, the 1x128 tiles that
    kept every value within u, and the normwise error of the whole matrix."""
    x = np.asarray(x, dtype=np.float64)
    schemes = SCHEMES if schemes is None else schemes
    f = facts(fmt)
    small = np.abs(x) < np.quantile(np.abs(x), small_quantile)
    rows = []
    for label, group in schemes.items():
        s = quantize(x, group, fmt)
        deq = s.dequantize()
        qa = np.abs(s.q.astype(np.float64))
        nz = x != 0
        rel = relative_errors(x, deq)
        tiles = tiles_within_u(x, deq, f.u)
        rows.append({"scheme": label, "format": fmt, "scales": int(s.scale.size),
                     "flushed to zero": int(np.sum(nz & (qa == 0))),
                     "subnormal": int(np.sum(nz & (qa > 0) & (qa < f.tiny))),
                     "small error": float(np.median(rel[small & nz])), "median error": float(np.median(rel[nz])),
                     "tiles within u": int(tiles.sum()), "tiles": int(tiles.size),
                     "matrix error": float(np.linalg.norm(deq - x) / np.linalg.norm(x))})
    return rows
