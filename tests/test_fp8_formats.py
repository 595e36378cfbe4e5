"""helpers.fp8 (lesson 7): the FP8 facts against an independent decoder and the FP8 paper's Table 1, numpy's
cast against exact rounding, the saturating cast against the PTX ISA's definition of .satfinite, per-tensor /
tile / block scaling (amax lands on the largest number, the round trip stays within u), the grouped product,
and every error a learner can provoke."""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import helpers
from helpers import fp8

E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
LAYOUT = {"fp8_e4m3": (4, 3, 7), "fp8_e5m2": (5, 2, 15)}     # exponent bits, fraction bits, bias


def decode(pattern: int, name: str) -> float:
    """Value of an FP8 bit pattern from the encoding rules alone (Micikevicius et al. 2022, Table 1)."""
    e_bits, f_bits, bias = LAYOUT[name]
    s, e, f = pattern >> 7, (pattern >> f_bits) & (2 ** e_bits - 1), pattern & (2 ** f_bits - 1)
    sign = -1.0 if s else 1.0
    if name == "fp8_e4m3" and e == 15 and f == 7:
        return math.nan                                  # the only NaN pattern per sign; no infinity
    if name == "fp8_e5m2" and e == 31:
        return sign * math.inf if f == 0 else math.nan   # IEEE-like
    if e == 0:
        return sign * f / 2 ** f_bits * 2.0 ** (1 - bias)
    return sign * (1 + f / 2 ** f_bits) * 2.0 ** (e - bias)


def exact_round(x: float, name: str) -> float:
    """Round x to the nearest finite FP8 value, ties to the even pattern, in exact rational arithmetic; values
    past max + half a spacing give inf (the caller decides what that becomes)."""
    vals = sorted({decode(p, name) for p in range(128) if math.isfinite(decode(p, name))})
    mx = vals[-1]
    vals = vals + [mx + (mx - vals[-2])]                 # the next number the format would have
    a, sign = abs(Fraction(x)), math.copysign(1.0, x)
    if a > Fraction(vals[-1]):
        return sign * math.inf
    lo = max(v for v in vals if Fraction(v) <= a)
    if Fraction(lo) == a:
        r = lo
    else:
        hi = min(v for v in vals if Fraction(v) > a)
        d_lo, d_hi = a - Fraction(lo), Fraction(hi) - a
        if d_lo != d_hi:
            r = lo if d_lo < d_hi else hi
        else:       # a tie: the neighbour whose last fraction bit is 0 (vals[i] is bit pattern i)
            idx = vals.index(lo)
            r = lo if idx % 2 == 0 else hi
    return sign * (math.inf if r > mx else r)


# --------------------------------------------------------------------------- facts
@pytest.mark.parametrize("name", fp8.FP8)
def test_patterns_match_the_encoding_rules(name):
    bits, vals = fp8.patterns(name)
    assert bits.dtype == np.uint8 and list(bits) == list(range(256))
    for p in range(256):
        want = decode(p, name)
        assert (math.isnan(want) and math.isnan(vals[p])) or vals[p] == want, (name, hex(p), vals[p], want)


def test_facts_match_table_1_of_the_fp8_paper():
    e4, e5 = fp8.facts("fp8_e4m3"), fp8.facts("fp8_e5m2")
    assert (e4.max, e4.tiny, e4.smallest_subnormal, e4.bias) == (1.75 * 2 ** 8, 2.0 ** -6, 2.0 ** -9, 7)
    assert (e5.max, e5.tiny, e5.smallest_subnormal, e5.bias) == (1.75 * 2 ** 15, 2.0 ** -14, 2.0 ** -16, 15)
    assert (e4.u, e5.u) == (2.0 ** -4, 2.0 ** -3) and (e4.eps, e5.eps) == (2.0 ** -3, 2.0 ** -2)
    assert e4.nan_patterns == (0x7F, 0xFF) and e4.inf_patterns == ()
    assert e5.nan_patterns == (0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF) and e5.inf_patterns == (0x7C, 0xFC)
    assert (e4.positive_finite, e5.positive_finite) == (126, 123)     # 0x01..0x7E, 0x01..0x7B
    assert (e4.finite, e5.finite) == (254, 248)
    assert (e4.positive_subnormal, e5.positive_subnormal) == (7, 3)
    assert e4.ieee_max == 240 and e5.ieee_max == e5.max                # E4M3 bends the IEEE rule, E5M2 does not
    assert round(e4.binades, 1) == 17.8 and round(e5.binades, 1) == 31.8
    assert e4.dtype_name == "float8_e4m3fn" and e5.dtype_name == "float8_e5m2"


def test_overflow_facts_are_what_numpy_does():
    e4, e5 = fp8.facts("fp8_e4m3"), fp8.facts("fp8_e5m2")
    assert (e4.midpoint, e4.midpoint_to, e4.overflow_to) == (464.0, 448.0, "NaN")
    assert (e5.midpoint, e5.overflow_to) == (61440.0, "inf") and math.isinf(e5.midpoint_to)
    # brute force around the top: finite exactly up to the midpoint (E4M3, tie to 448) / below it (E5M2)
    x = np.linspace(400, 600, 20001)
    fin = np.isfinite(np.asarray(fp8.cast(x, "fp8_e4m3"), dtype=np.float64))
    assert np.array_equal(fin, x <= 464)
    y = np.linspace(50000, 70000, 20001)
    fin = np.isfinite(np.asarray(fp8.cast(y, "fp8_e5m2"), dtype=np.float64))
    assert np.array_equal(fin, y < 61440)


def test_special_values_table_names_the_patterns():
    rows = {r["value"]: r for r in fp8.special_values()}
    assert rows["largest"]["fp8_e4m3"] == "`0.1111.110` (448)"
    assert rows["largest"]["fp8_e5m2"] == "`0.11110.11` (57344)"
    assert rows["+inf / -inf"]["fp8_e4m3"] == "none" and "`0.11111.00` (inf)" in rows["+inf / -inf"]["fp8_e5m2"]
    assert rows["NaN"]["fp8_e4m3"] == "`0.1111.111` (nan), `1.1111.111` (nan)"
    assert "6 patterns" in rows["NaN"]["fp8_e5m2"]
    assert rows["-0"]["fp8_e4m3"].startswith("`1.0000.000`")


def test_names_and_aliases():
    assert fp8.fp8_name("E4M3") == fp8.fp8_name(E4M3) == fp8.fp8_name("float8_e4m3fn") == "fp8_e4m3"
    assert fp8.fp8_name("e5m2") == fp8.fp8_name(E5M2) == "fp8_e5m2"
    for bad in ("fp16", "e4m3fnuz", None, np.float16, 3):
        with pytest.raises(helpers.CourseError, match="Fix: use 'fp8_e4m3'"):
            fp8.fp8_name(bad)


# --------------------------------------------------------------------------- casts
def _probe_values(name, n=3000, seed=0):
    f = fp8.facts(name)
    rng = np.random.default_rng(seed)
    mag = 2.0 ** rng.uniform(math.log2(f.smallest_subnormal) - 2, math.log2(f.max) + 1, n)
    _, vals = fp8.patterns(name)
    fin = np.unique(np.abs(vals[np.isfinite(vals)]))
    ties = (fin[1:] + fin[:-1]) / 2                                     # every exact tie
    x = np.concatenate([mag, ties, np.nextafter(ties, 0), np.nextafter(ties, np.inf), fin])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name", fp8.FP8)
def test_cast_rounds_once_to_nearest_even(name):
    x = _probe_values(name)
    got = np.asarray(fp8.cast(x, name), dtype=np.float64)
    nan_on_overflow = name == "fp8_e4m3"
    for xi, gi in zip(x, got):
        want = exact_round(float(xi), name)
        if math.isinf(want) and nan_on_overflow:
            assert math.isnan(gi), (xi, gi)
        else:
            assert gi == want, (name, repr(xi), gi, want)


def test_ml_dtypes_astype_from_float64_rounds_twice_and_cast_does_not():
    """What the lesson's appendix B shows: if ml_dtypes changes, the appendix must change."""
    v = np.array([1 + 2.0 ** -4 + 2.0 ** -30])
    assert float(v.astype(E4M3)[0]) == 1.0
    assert float(fp8.cast(v, "fp8_e4m3")[0]) == 1.125 == exact_round(float(v[0]), "fp8_e4m3")


@pytest.mark.parametrize("name", fp8.FP8)
def test_saturating_cast_follows_the_ptx_definition(name):
    f = fp8.facts(name)
    x = np.concatenate([_probe_values(name), [np.inf, -np.inf, 1e30, -1e30, np.nan, 0.0, -0.0]])
    sat = fp8.saturating_cast(x, name)
    plain = fp8.cast(x, name)
    s64, p64 = np.asarray(sat, dtype=np.float64), np.asarray(plain, dtype=np.float64)
    assert sat.dtype == np.dtype(fp8.dtype(name))
    big = np.abs(x) > f.max
    assert np.array_equal(s64[big], np.sign(x[big]) * f.max)                  # sign-preserved MAX_NORM
    assert np.isnan(s64[np.isnan(x)]).all()
    inside = ~big & ~np.isnan(x)
    assert np.array_equal(sat[inside].view(np.uint8), plain[inside].view(np.uint8))   # bit for bit, -0 included
    # the two disagree exactly on the finite values past the midpoint, and on infinities
    differ = ~((s64 == p64) | (np.isnan(s64) & np.isnan(p64)))
    assert np.array_equal(differ, np.abs(x) > f.midpoint if f.midpoint_to == f.max else np.abs(x) >= f.midpoint)
    # float32 input goes the same way
    x32 = x[np.isfinite(x)].astype(np.float32)
    assert np.array_equal(fp8.saturating_cast(x32, name).view(np.uint8),
                          fp8.saturating_cast(x32.astype(np.float64), name).view(np.uint8))


def test_overflow_rows():
    rows = fp8.overflow_rows([1000.0, np.inf, -np.inf])
    assert math.isnan(rows[0]["fp8_e4m3 numpy"]) and rows[0]["fp8_e4m3 satfinite"] == 448.0
    assert rows[0]["fp8_e5m2 numpy"] == 1024.0 == rows[0]["fp8_e5m2 satfinite"]
    assert rows[1]["fp8_e5m2 numpy"] == math.inf and rows[1]["fp8_e5m2 satfinite"] == 57344.0
    assert rows[2]["fp8_e4m3 satfinite"] == -448.0 and math.isnan(rows[2]["fp8_e4m3 numpy"])


# --------------------------------------------------------------------------- scaling
@pytest.mark.parametrize("name", fp8.FP8)
def test_scale_maps_amax_exactly_to_the_largest_number(name):
    f = fp8.facts(name)
    rng = np.random.default_rng(5)
    for amax in 10.0 ** rng.uniform(-8, 8, 300):
        s = fp8.amax_scale(amax, name)
        assert abs(amax * s - f.max) <= f.max * 2.0 ** -52
        for sat in (True, False):
            q = fp8.quantize_per_tensor(np.array([[amax, -amax / 3, amax / 1e3]]), name, saturate=sat)
            assert float(q.q[0, 0]) == f.max and q.scale.shape == (1, 1) and q.scale.item() == s
    assert fp8.amax_scale(0.0) == 1.0
    assert np.array_equal(fp8.amax_scale(np.array([0.0, 448.0])), [1.0, 1.0])
    with pytest.raises(helpers.CourseError, match="Fix:"):
        fp8.amax_scale(np.inf)


def _check_round_trip(x, s):
    f = fp8.facts(s.fmt)
    deq = s.dequantize()
    scale = s.scale_per_element()
    err = np.abs(deq - x)
    normal = np.abs(x * scale) >= f.tiny
    # normal after scaling: at most u relative (plus float64's own rounding of q / scale)
    assert np.all(err[normal] <= f.u * np.abs(x[normal]) * (1 + 1e-12))
    # subnormal after scaling: at most half the subnormal spacing, scaled back
    assert np.all(err[~normal] <= f.smallest_subnormal / 2 / scale[~normal] * (1 + 1e-12))
    return normal


@pytest.mark.parametrize("name", fp8.FP8)
@pytest.mark.parametrize("group", [None, (1, 128), (128, 128), (2, 64)])
def test_round_trip_within_unit_roundoff(name, group):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((256, 384)) * 10.0 ** rng.uniform(-6, 6, (256, 1))   # rows of very different size
    s = fp8.quantize(x, group, name)
    assert s.q.shape == x.shape and s.q.dtype == np.dtype(fp8.dtype(name))
    g = x.shape if group is None else group
    assert s.group == tuple(g) and s.scale.shape == (x.shape[0] // g[0], x.shape[1] // g[1])
    assert np.array_equal(s.inverse, 1 / s.scale)
    assert np.array_equal(s.amax, np.abs(x).reshape(s.scale.shape[0], g[0], s.scale.shape[1], g[1]).max(axis=(1, 3)))
    # every group's amax element is exactly the largest number
    qa = np.abs(s.q.astype(np.float64)).reshape(s.scale.shape[0], g[0], s.scale.shape[1], g[1]).max(axis=(1, 3))
    assert np.all(qa == fp8.facts(name).max)
    _check_round_trip(x, s)


def test_zero_groups_stay_zero_and_float_dtypes_are_accepted():
    x = np.zeros((2, 256), dtype=np.float32)
    x[1, :128] = np.linspace(-1, 1, 128)
    s = fp8.quantize_tiles(x)
    assert s.scale[0, 0] == 1.0 and s.scale[1, 1] == 1.0 and not np.any(s.dequantize()[0])
    for dt in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16):
        fp8.quantize_blocks(np.ones((128, 128), dtype=dt))


def test_per_tensor_takes_any_shape():
    x = np.arange(1.0, 25.0).reshape(2, 3, 4)
    s = fp8.quantize_per_tensor(x)
    assert s.scale.shape == (1, 1, 1) and s.dequantize().shape == x.shape
    _check_round_trip(x, s)


def test_grouped_matmul_is_the_dequantized_product():
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((64, 512)), rng.standard_normal((512, 256))
    A[3, 7] = 1e4
    for ga, gb in [(None, None), ((1, 128), (128, 128)), ((1, 128), None), (None, (128, 128)), ((1, 64), (128, 128))]:
        a, b = fp8.quantize(A, ga), fp8.quantize(B, gb)
        C = fp8.grouped_matmul(a, b)
        D = a.dequantize() @ b.dequantize()
        assert C.shape == (64, 256)
        assert np.abs(C - D).max() <= 1e-13 * np.abs(A).max() * np.abs(B).max() * 512
    with pytest.raises(helpers.CourseError, match="inner dimensions"):
        fp8.grouped_matmul(fp8.quantize(A), fp8.quantize(B[:256]))
    with pytest.raises(helpers.CourseError, match="Fix: make it with"):
        fp8.grouped_matmul(A, fp8.quantize(B))


# --------------------------------------------------------------------------- errors a learner can provoke
class _FakeCupyArray:
    pass


_FakeCupyArray.__module__ = "cupy._core.core"


@pytest.mark.parametrize("call,match", [
    (lambda: fp8.quantize_tiles(np.ones((4, 300))), r"does not divide a 4x300.*np\.pad\(x, \(\(0, 0\), \(0, 84\)\)\)"),
    (lambda: fp8.quantize_blocks(np.ones((200, 256))), r"200 % 128 = 72.*to 256x256"),
    (lambda: fp8.quantize_tiles(np.ones(128)), r"take a matrix \(2-D\)"),
    (lambda: fp8.quantize(np.ones((4, 128)), (0, 128)), r"positive whole numbers"),
    (lambda: fp8.quantize(np.ones((4, 128)), (1,)), r"positive whole numbers"),
    (lambda: fp8.quantize(np.ones((4, 128)), "tile"), r"positive whole numbers"),
    (lambda: fp8.quantize(np.ones((4, 128)), (1.5, 128)), r"positive whole numbers"),
    (lambda: fp8.quantize_tiles(np.ones((4, 128), dtype=np.int64)), r"dtype int64.*astype\(np\.float32\)"),
    (lambda: fp8.quantize_tiles(np.ones((4, 128), dtype=np.complex64)), r"dtype complex64"),
    (lambda: fp8.quantize_tiles(np.ones((4, 128), dtype=E4M3)), r"dtype float8_e4m3fn"),
    (lambda: fp8.quantize_tiles(np.array([[np.nan] + [1.0] * 127])), r"1 inf/NaN value"),
    (lambda: fp8.quantize_per_tensor(np.array([np.inf, 1.0])), r"inf/NaN"),
    (lambda: fp8.quantize_per_tensor(np.zeros((0, 3))), r"empty"),
    (lambda: fp8.quantize_per_tensor(np.float64(3.0)), r"single number"),
    (lambda: fp8.quantize_tiles(np.ones((4, 128)), fmt="fp16"), r"not an FP8 format"),
    (lambda: fp8.cast(_FakeCupyArray(), "fp8_e4m3"), r"CuPy array.*\.get\(\)"),
    (lambda: fp8.saturating_cast(np.array([1, 2]), "fp8_e5m2"), r"dtype int64"),
])
def test_errors_say_what_to_do(call, match):
    with pytest.raises(helpers.CourseError) as info:
        call()
    text = str(info.value)
    assert "\nFix: " in text
    assert __import__("re").search(match, text, __import__("re").S), text


# --------------------------------------------------------------------------- the outlier demonstration
def test_outlier_matrix_is_seeded_and_has_the_outliers():
    x = fp8.outlier_matrix(64, 256, outliers=5, magnitude=1e3, seed=4)
    assert np.array_equal(x, fp8.outlier_matrix(64, 256, outliers=5, magnitude=1e3, seed=4))
    assert np.sum(np.abs(x) == 1e3) == 5 and np.abs(x[np.abs(x) != 1e3]).max() < 10


def _independent_counts(x, group, name):
    """Flushed / subnormal counts and tiles within u, recomputed with plain numpy and ml_dtypes, group by group."""
    f = fp8.facts(name)
    t = fp8.dtype(name)
    rows, cols = x.shape
    gr, gc = (rows, cols) if group is None else group
    deq = np.empty_like(x)
    qv = np.empty_like(x)
    for i in range(0, rows, gr):
        for j in range(0, cols, gc):
            blk = x[i:i + gr, j:j + gc]
            amax = np.abs(blk).max()
            s = f.max / amax if amax > 0 else 1.0
            q = np.clip(blk * s, -f.max, f.max).astype(np.float32).astype(t).astype(np.float64)
            qv[i:i + gr, j:j + gc] = q
            deq[i:i + gr, j:j + gc] = q / s
    nz = x != 0
    rel = np.abs(deq - x) / np.abs(x)
    ok = (rel <= f.u * (1 + 1e-12)).reshape(rows, cols // 128, 128).all(axis=2)
    return (int(np.sum(nz & (qv == 0))), int(np.sum(nz & (qv != 0) & (np.abs(qv) < f.tiny))), int(ok.sum()),
            float(np.linalg.norm(deq - x) / np.linalg.norm(x)))


@pytest.mark.parametrize("name", fp8.FP8)
def test_scaling_report_counts_are_what_numpy_says(name):
    x = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)     # the lesson's data
    for row in fp8.scaling_report(x, fmt=name):
        zero, sub, within, merr = _independent_counts(x, fp8.SCHEMES[row["scheme"]], name)
        assert (row["flushed to zero"], row["subnormal"], row["tiles within u"]) == (zero, sub, within), row
        assert math.isclose(row["matrix error"], merr, rel_tol=1e-9)
        assert row["tiles"] == 256 * 1024 // 128
        assert row["scales"] == {"per tensor": 1, "128x128 blocks": 16, "1x128 tiles": 2048}[row["scheme"]]


def test_relative_errors_and_tiles_within_u():
    x = np.array([[1.0, 0.0, 2.0, -4.0]])
    assert np.array_equal(fp8.relative_errors(x, np.array([[1.5, 0.0, 0.0, -4.0]])), [[0.5, 0.0, 1.0, 0.0]])
    assert np.isinf(fp8.relative_errors(np.array([0.0]), np.array([1e-9]))[0])
    assert fp8.tiles_within_u(x, x * (1 + 0.06), 0.0625, tile=(1, 2)).tolist() == [[True, True]]
    assert list(fp8.tiles_within_u(x, x * np.array([1, 1, 1.07, 1]), 0.0625, tile=(1, 2))[0]) == [True, False]


@pytest.mark.parametrize("plot", ["fp8_values", "fp8_overflow", "fp8_scaling", "fp8_error_vs_magnitude"])
def test_figures_draw_and_carry_their_source(plot):
    import matplotlib.pyplot as plt

    fn = getattr(helpers.plots, plot)
    x = fp8.outlier_matrix(128, 256, outliers=4, seed=1)
    fig = fn(x) if plot in ("fp8_scaling", "fp8_error_vs_magnitude") else fn()
    texts = [fig._suptitle.get_text() if fig._suptitle else ""] + [a.get_title(loc="left") for a in fig.axes]
    assert any("ml_dtypes" in t for t in texts)
    plt.close(fig)
