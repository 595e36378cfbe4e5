"""DeepSeek-V3's recipe: fp8_block_scaled (kernels/fp8_block_scaled_sm90a.cu) and its front ends in
helpers.fp8_scaled, on the CPU. The model against a direct re-implementation and against float64 within a bound
derived from E4M3's precision; the check rejecting wrong results; block scaling against per-tensor scaling;
bad input; and the lesson's readers of the recorded rows. (On a GPU: tests/gpu/test_gpu_fp8.py.)"""
import math

import numpy as np
import pytest

from helpers import emulate as E
from helpers import fp8_gemm as F
from helpers import fp8_scaled as S
from helpers.errors import CourseError, InputError, NoGPUError, ResultsError
from helpers.experiments import fp8_scaled as X
from helpers.fp8 import facts, quantize_blocks, quantize_tiles

ODD = [(40, 24, 200), (130, 136, 264)]          # M, N not multiples of 16; K not a multiple of 128


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    from helpers import device
    if hasattr(device, "_BACKEND"):
        monkeypatch.setattr(device, "_BACKEND", None, raising=False)


def operands(kind, shape, seed=3):
    M, N, K = shape
    return S.block_scaled_operands(*S.scaling_inputs(kind, M, N, K, seed))


# --------------------------------------------------------------------------- a direct re-implementation
def _frexp_exp(x):
    return np.frexp(x)[1]


def _wgmma_partial(a, b):
    """One K-block's partial sum as the FP8 wgmma forms it, written out step by step in float64 (the model of
    helpers.emulate, re-implemented here without its code): from a zero accumulator, for each group of 32
    products: every product exact; a product's exponent e(a) + e(b) - 1 (frexp exponents, an E4M3 subnormal
    counted with the smallest normal's, -5), the accumulator's its own; every term cut toward zero to a
    multiple of 2^(emax - 14); the exact sum cut toward zero to 14 significant bits."""
    M, N = a.shape[0], b.shape[1]
    acc = np.zeros((M, N))
    for k0 in range(0, a.shape[1], 32):
        ak, bk = a[:, k0:k0 + 32], b[k0:k0 + 32]
        p = ak[:, :, None] * bk[None, :, :]                                     # exact (4 x 4 bits)
        ea = np.where(ak == 0, -(10 ** 6), np.maximum(_frexp_exp(ak), -5))
        eb = np.where(bk == 0, -(10 ** 6), np.maximum(_frexp_exp(bk), -5))
        e = ea[:, :, None] + eb[None, :, :] - 1
        emax = np.maximum(e.max(axis=1), np.where(acc == 0, -(10 ** 6), _frexp_exp(acc)))
        unit = np.ldexp(1.0, np.maximum(emax, -1000) - 14)
        s = (np.trunc(p / unit[:, None, :]) * unit[:, None, :]).sum(axis=1) + np.trunc(acc / unit) * unit
        ulp = np.ldexp(1.0, _frexp_exp(s) - 14)
        acc = np.where(s == 0, 0.0, np.trunc(s / ulp) * ulp)
    return acc


def direct_block_scaled(Aq, Bq, sa, sb):
    """C as the kernel computes it, in float64 steps each rounded to float32 at once (float64 holds every
    product and sum of two float32 numbers closely enough that one rounding to float32 is the correctly
    rounded result: 53 >= 2 x 24 + 2), K-block by K-block from a total of +0."""
    M, K = Aq.shape
    N = Bq.shape[1]
    total = np.zeros((M, N), np.float32)
    for kb in range(math.ceil(K / 128)):
        part = _wgmma_partial(Aq[:, 128 * kb:128 * kb + 128], Bq[128 * kb:128 * kb + 128]).astype(np.float32)
        assert np.array_equal(part.astype(np.float64), _wgmma_partial(Aq[:, 128 * kb:128 * kb + 128],
                                                                     Bq[128 * kb:128 * kb + 128]))   # 14 bits: exact
        for j in range(N):
            s = np.float32(sa[:, kb].astype(np.float64) * np.float64(sb[j // 128, kb]))      # once per row, K-block
            term = (part[:, j].astype(np.float64) * s.astype(np.float64)).astype(np.float32)
            total[:, j] = (total[:, j].astype(np.float64) + term.astype(np.float64)).astype(np.float32)
    return total


@pytest.mark.parametrize("shape", ODD + [(16, 16, 16), (33, 17, 49)])     # and the sanitizer's sizes
@pytest.mark.parametrize("kind", S.SCALING_INPUTS)
def test_model_equals_direct_reimplementation(kind, shape):
    Aq, Bq, sa, sb = operands(kind, shape)
    assert np.array_equal(S.block_scaled_model(Aq, Bq, sa, sb), direct_block_scaled(Aq, Bq, sa, sb))


def test_model_equals_direct_reimplementation_on_zeros_subnormals_and_wide_scales():
    """Zero rows, zero tiles, E4M3 subnormals, and scales from 2^-60 to 2^60 (products of scales below FP32's
    normal range, sums that cancel to zero)."""
    rng = np.random.default_rng(9)
    M, N, K = 33, 136, 392
    Aq = F.decode_e4m3(rng.integers(0, 256, (M, K)).astype(np.uint8) & np.uint8(0xF7))   # no NaN (0x7F, 0xFF)
    Bq = F.decode_e4m3(rng.integers(0, 256, (K, N)).astype(np.uint8) & np.uint8(0xF7))
    Aq[3] = 0
    Aq[5, 128:256] = 0
    Bq[:, 7] = Bq[:, 8]
    Aq[6, :] = Aq[7, :]
    Aq[6, ::2] *= -1                                                     # sums that can cancel
    sa = np.exp2(rng.integers(-60, 61, (M, 4))).astype(np.float32) * np.float32(1.1)
    sb = np.exp2(rng.integers(-60, 61, (2, 4))).astype(np.float32) * np.float32(1.3)
    C = S.block_scaled_model(Aq, Bq, sa, sb)
    assert np.array_equal(C, direct_block_scaled(Aq, Bq, sa, sb))
    assert not np.signbit(C[3]).any()                                   # +0 + (-0) = +0, as in the kernel


def test_unit_scales_give_fp8_promote_128():
    """With every scale 1 the kernel is fp8_promote_128: total + partial x 1 = total + partial."""
    Aq, Bq, sa, sb = operands("normal", (40, 24, 520))
    one_a, one_b = np.ones_like(sa), np.ones_like(sb)
    assert np.array_equal(S.block_scaled_model(Aq, Bq, one_a, one_b), E.fp8_wgmma_gemm(Aq, Bq, nc=128))
    assert np.array_equal(S.block_scaled_model(Aq, Bq, one_a, one_b), F.cpu_model("fp8_promote_128")(Aq, Bq))


# --------------------------------------------------------------------------- against float64
def quantization_bound(A, B, sa, sb):
    """A bound on |R - A B| (R the exact product of the E4M3 values times their scales) from E4M3's precision:
    each element x of A is q sa with q = E4M3(x / sa') (sa' = amax / 448 in float64, sa = float32(sa')): in
    the normal range |q - x / sa'| <= u |x / sa'| (u = 2^-4, three fraction bits), below it at most half the
    subnormal spacing, 2^-10; sa differs from sa' by 2^-24 relative. So |q sa - x| <= max(u |x|, 2^-10 sa)
    (1 + 2^-24) + 2^-24 |x|, taken here with 2^-20 more for float64's roundings; B likewise, and
    |sum (a^ b^ - a b)| <= eA |B| + |A| eB + eA eB, summed over K."""
    f = facts("fp8_e4m3")
    u, half_sub = f.u, f.smallest_subnormal / 2
    assert u == 2.0 ** -4 and half_sub == 2.0 ** -10
    M, K = A.shape
    N = B.shape[1]
    sa_e = np.repeat(sa.astype(np.float64), 128, axis=1)[:, :K]
    sb_e = np.kron(sb.astype(np.float64).T, np.ones((128, 128)))[:K, :N]
    eA = (np.maximum(u * np.abs(A), half_sub * sa_e) * (1 + 2.0 ** -24) + 2.0 ** -24 * np.abs(A)) * (1 + 2.0 ** -20)
    eB = (np.maximum(u * np.abs(B), half_sub * sb_e) * (1 + 2.0 ** -24) + 2.0 ** -24 * np.abs(B)) * (1 + 2.0 ** -20)
    return eA @ np.abs(B) + np.abs(A) @ eB + eA @ eB


@pytest.mark.parametrize("shape", ODD + [S.TABLE_SHAPE])
@pytest.mark.parametrize("kind", S.SCALING_INPUTS)
def test_model_within_the_bound_of_float64(kind, shape):
    M, N, K = shape
    A, B = S.scaling_inputs(kind, M, N, K, 5)
    Aq, Bq, sa, sb = S.block_scaled_operands(A, B)
    C = S.block_scaled_model(Aq, Bq, sa, sb)
    R, acc_bound = S.block_scaled_bound(Aq, Bq, sa, sb)
    bound = quantization_bound(A, B, sa, sb) + acc_bound
    err = np.abs(C.astype(np.float64) - A @ B)
    assert (err <= bound).all(), float((err / bound).max())
    # what the bound says for a typical element: the inputs' two roundings, 2u + u^2 of |A||B| (more only where
    # values fall below E4M3's normal range), and far less for the accumulation (14 bits every 32 products).
    # (Where a row holds an outlier the accumulation part is loose: it counts every term of a step of 32 with
    # the row's largest |a| times the column's largest |b|, wherever they are.)
    absAB = np.abs(A) @ np.abs(B)
    u = 2.0 ** -4
    assert np.median(quantization_bound(A, B, sa, sb) / absAB) <= (2 * u + u * u) * (1 + 2.0 ** -18)
    assert np.median(acc_bound / absAB) <= 2.0 ** -9


# --------------------------------------------------------------------------- the check
@pytest.mark.parametrize("shape", ODD)
@pytest.mark.parametrize("kind", S.SCALING_INPUTS)
def test_check_passes_the_model_and_rejects_wrong_results(kind, shape):
    M, N, K = shape
    A, B = S.scaling_inputs(kind, M, N, K, 7)
    Aq, Bq, sa, sb = S.block_scaled_operands(A, B)
    model = S.block_scaled_model
    C = model(Aq, Bq, sa, sb)
    chk = S.check_block_scaled(C, Aq, Bq, sa, sb)
    assert chk.passed and chk.model == "identical" and chk.bound_ratio <= 1, chk.verdict()
    assert "PASS" in chk.verdict() and "bit-identical" in chk.verdict()
    Apt, Bpt, ia, ib = S.per_tensor_operands(A, B)
    wrong_scales = {
        "scales ignored": model(Aq, Bq, np.ones_like(sa), np.ones_like(sb)),
        "sa only": model(Aq, Bq, sa, np.ones_like(sb)),
        "sb's K-blocks reversed": model(Aq, Bq, sa, np.ascontiguousarray(sb[:, ::-1])),
        "sa's K-blocks reversed": model(Aq, Bq, np.ascontiguousarray(sa[:, ::-1]), sb),
        "sa of the next row": model(Aq, Bq, np.roll(sa, 1, axis=0), sb),
        "one scale per tensor (their means)": model(Aq, Bq, np.full_like(sa, sa.mean()), np.full_like(sb, sb.mean())),
        "per-tensor scaling (fp8_promote_128 x sa sb)": F.cpu_model("fp8_promote_128")(Apt, Bpt) * (ia * ib),
    }
    if sb.shape[0] > 1:
        wrong_scales["sb's column blocks swapped"] = model(Aq, Bq, sa, np.ascontiguousarray(sb[::-1]))
    for what, W in wrong_scales.items():
        assert not np.array_equal(W, C), what
        assert not S.check_block_scaled(W, Aq, Bq, sa, sb, model=False).passed, f"{what}: the bound alone"
        assert not S.check_block_scaled(W, Aq, Bq, sa, sb).passed, what
    one_ulp = C.copy()
    one_ulp[M // 2, N // 3] = np.nextafter(one_ulp[M // 2, N // 3], np.float32(np.inf))
    nan = C.copy()
    nan[-1, -1] = np.nan
    for what, W in {"one element one unit up": one_ulp, "one NaN (unwritten)": nan}.items():
        c = S.check_block_scaled(W, Aq, Bq, sa, sb)
        assert not c.passed and "FAIL" in c.verdict(), what
    c = S.check_block_scaled(one_ulp, Aq, Bq, sa, sb)
    assert c.n_over == 0 and c.model == "differs" and c.model_mismatch == 1        # only the model sees 1 ulp
    assert c.model_first[:2] == (M // 2, N // 3)


def test_check_of_a_transposed_sb_when_it_is_square():
    """With as many K-blocks as column blocks sb[kb][nb] has the kernel's shape too: the wrong layout can only
    be caught by its values."""
    A, B = S.scaling_inputs("varied weight blocks", 48, 256, 256, 2)
    Aq, Bq, sa, sb = S.block_scaled_operands(A, B)
    assert sb.shape == (2, 2) and not np.array_equal(sb, sb.T)
    C = S.block_scaled_model(Aq, Bq, sa, sb)
    W = S.block_scaled_model(Aq, Bq, sa, np.ascontiguousarray(sb.T))
    assert S.check_block_scaled(C, Aq, Bq, sa, sb).passed
    assert not S.check_block_scaled(W, Aq, Bq, sa, sb, model=False).passed


# --------------------------------------------------------------------------- scales and front ends
def test_kernel_scales_layout():
    """helpers.fp8 scales multiply the data (q = fp8(x scale)); the kernel's multiply the result (1 / scale,
    float32); quantize_blocks(B) of B (K x N) is indexed [k // 128][n // 128], the kernel's sb [n // 128][k // 128]."""
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((8, 384)), rng.standard_normal((384, 256)) * np.array([1.0, 100.0]).repeat(128)
    a, b = quantize_tiles(A), quantize_blocks(B)
    assert b.scale.shape == (3, 2)
    sa, sb = S.kernel_scales(a, b)
    assert sa.shape == (8, 3) and sb.shape == (2, 3) and sa.dtype == sb.dtype == np.float32
    assert np.array_equal(sb, (1 / b.scale).T.astype(np.float32))
    assert sb[1].min() > 50 * sb[0].max()                                  # column block 1 is the large one
    deq = np.asarray(b.q, np.float64) * np.kron(sb.T.astype(np.float64), np.ones((128, 128)))
    sb_e = np.kron(sb.T.astype(np.float64), np.ones((128, 128)))      # E4M3: u = 2^-4; subnormals: 2^-10 absolute
    assert (np.abs(deq - B) <= np.maximum(2.0 ** -4 * np.abs(B), 2.0 ** -10 * sb_e) * (1 + 2.0 ** -20)
            + 2.0 ** -23 * np.abs(B)).all()


def test_block_scaled_matmul_on_the_cpu():
    A, B = S.scaling_inputs("outlier activations", 40, 24, 200, 1)
    C, where = S.block_scaled_matmul(A, B)
    assert "CPU model" in where and C.dtype == np.float32 and C.shape == (40, 24)
    assert np.array_equal(C, S.block_scaled_model(*S.block_scaled_operands(A, B)))
    P, where_pt = S.per_tensor_matmul(A, B)
    Apt, Bpt, ia, ib = S.per_tensor_operands(A, B)
    assert "CPU model" in where_pt and np.array_equal(P, F.cpu_model("fp8_promote_128")(Apt, Bpt) * (ia * ib))


def test_launcher_validates_before_it_needs_a_gpu():
    A8, Bt8 = np.zeros((40, 200), np.uint8), np.zeros((24, 200), np.uint8)
    sa, sb = np.ones((40, 2), np.float32), np.ones((1, 2), np.float32)
    with pytest.raises(NoGPUError):
        S.gemm_block_scaled(A8, Bt8, sa, sb)
    with pytest.raises(InputError, match="quantize_blocks"):             # sb as [k // 128][n // 128]: 2 x 1
        S.gemm_block_scaled(A8, Bt8, sa, np.ones((2, 1), np.float32))

BAD = [
    ("sa float64", lambda sa, sb: (sa.astype(np.float64), sb), "float32"),
    ("sb float16", lambda sa, sb: (sa, sb.astype(np.float16)), "astype"),
    ("sa a list", lambda sa, sb: (sa.tolist(), sb), "not an array"),
    ("sa one column short", lambda sa, sb: (sa[:, :-1].copy(), sb), "40 x 2"),
    ("sa transposed", lambda sa, sb: (sa.T.copy(), sb), "transposed"),
    ("sb in quantize_blocks' layout", lambda sa, sb: (sa, sb.T.copy()), "[k // 128][n // 128]"),
    ("sa NaN", lambda sa, sb: (np.where(np.arange(2) == 1, np.float32(np.nan), sa), sb), "inf/NaN"),
    ("sb inf", lambda sa, sb: (sa, np.full_like(sb, np.inf)), "inf/NaN"),
    ("sa zero", lambda sa, sb: (np.where(np.arange(2) == 0, np.float32(0), sa), sb), "<= 0"),
    ("sb negative", lambda sa, sb: (sa, -sb), "<= 0"),
]


@pytest.mark.parametrize("what,bad,word", BAD, ids=[b[0] for b in BAD])
def test_bad_scales_refused_with_the_fix(what, bad, word):
    rng = np.random.default_rng(0)
    Aq = F.decode_e4m3(F.encode_e4m3(rng.standard_normal((40, 200))))     # K = 200: 2 K-blocks
    Bq = F.decode_e4m3(F.encode_e4m3(rng.standard_normal((200, 24))))     # N = 24: 1 column block
    sa, sb = np.ones((40, 2), np.float32), np.full((1, 2), 0.5, np.float32)
    sa2, sb2 = bad(sa, sb)
    calls = [lambda: S.block_scaled_model(Aq, Bq, sa2, sb2), lambda: S.check_scales(sa2, sb2, 40, Bq.shape[1], 200),
             lambda: S.gemm_block_scaled(F.encode_e4m3(Aq), F.encode_e4m3(Bq.T.copy()), sa2, sb2)]
    for call in calls:
        with pytest.raises(InputError, match=None) as e:
            call()
        assert word in str(e.value) and "Fix:" in str(e.value), str(e.value)


def test_bad_input_of_the_front_ends():
    ok = np.ones((4, 256))
    cases = [
        (lambda: S.block_scaled_matmul(ok, np.ones((128, 4))), "columns"),
        (lambda: S.block_scaled_matmul([["a"] * 256] * 4, np.ones((256, 4))), "text"),
        (lambda: S.block_scaled_matmul(np.full((4, 256), 1 + 1j), np.ones((256, 4))), "complex"),
        (lambda: S.block_scaled_matmul(np.full((4, 256), np.inf), np.ones((256, 4))), "inf/NaN"),
        (lambda: S.block_scaled_matmul(np.ones((0, 256)), np.ones((256, 4))), "non-empty"),
        (lambda: S.per_tensor_matmul(ok, np.ones((2, 4))), "columns"),
        (lambda: S.block_scaled_model(np.full((2, 128), 0.1), np.ones((128, 2)), np.ones((2, 1), np.float32),
                                      np.ones((1, 1), np.float32)), "not E4M3"),
        (lambda: S.kernel_scales(quantize_tiles(np.ones((2, 128)), tile=(1, 64)), quantize_blocks(np.ones((128, 128)))),
         "quantize_tiles"),
        (lambda: S.check_block_scaled([[1.0]], np.ones((1, 128)), np.ones((128, 1)), np.ones((1, 1), np.float32),
                                      np.ones((1, 1), np.float32)), "float32 array"),
        (lambda: S.check_block_scaled(np.ones((2, 1), np.float32), np.ones((1, 128)), np.ones((128, 1)),
                                      np.ones((1, 1), np.float32), np.ones((1, 1), np.float32)), "cropped"),
        (lambda: S.scaling_inputs("outliers"), "outlier activations"),
        (lambda: S.gemm_block_scaled(np.ones((4, 32), np.float32), np.ones((4, 32), np.uint8),
                                     np.ones((4, 1), np.float32), np.ones((1, 1), np.float32)), "uint8"),
        (lambda: S.gemm_block_scaled(np.ones((4, 32), np.uint8), np.ones((4, 48), np.uint8),
                                     np.ones((4, 1), np.float32), np.ones((1, 1), np.float32)), "K columns"),
    ]
    for call, word in cases:
        with pytest.raises(CourseError) as e:
            call()
        assert word in str(e.value) and "Fix:" in str(e.value), (word, str(e.value))


# --------------------------------------------------------------------------- per tensor against block scaling
@pytest.fixture(scope="module")
def table():
    import os
    old = os.environ.get("COURSE_DEVICE")
    os.environ["COURSE_DEVICE"] = "cpu"
    try:
        return S.scaling_error_table()
    finally:
        if old is None:
            os.environ.pop("COURSE_DEVICE")
        else:
            os.environ["COURSE_DEVICE"] = old


def _input_error_ratio(kind):
    """The ratio of the median relative error of C that the two schemes' input quantization alone predicts
    (to first order, exactly computed: dC = dA B + A dB with dA, dB each scheme's dequantization error)."""
    M, N, K = S.TABLE_SHAPE
    A, B = S.scaling_inputs(kind, M, N, K, 0)
    R = A @ B
    med = []
    for ops in (S.per_tensor_operands, S.block_scaled_operands):
        Aq, Bq, sa, sb = ops(A, B)
        if np.ndim(sa) == 0:
            Ad, Bd = Aq * float(sa), Bq * float(sb)
        else:
            Ad = Aq * np.repeat(sa.astype(np.float64), 128, axis=1)[:, :K]
            Bd = Bq * np.kron(sb.astype(np.float64).T, np.ones((128, 128)))[:K, :N]
        dC = (Ad - A) @ B + A @ (Bd - B)
        med.append(np.median(np.abs(dC) / np.abs(R)))
    return med[0] / med[1]


def test_block_scaling_beats_per_tensor_on_outliers(table):
    rows = {(r["inputs"], r["scaling"]): r for r in table}
    assert len(table) == 2 * len(S.SCALING_INPUTS) and all(r["nan"] == 0 for r in table)
    assert all("CPU model" in r["ran"] for r in table)
    for kind in S.SCALING_INPUTS:
        pt, bs = rows[kind, "per tensor"], rows[kind, S.SCALINGS[1]]
        ratio = pt["median rel. error"] / bs["median rel. error"]
        predicted = _input_error_ratio(kind)
        # block scaling keeps E4M3's relative precision everywhere: about u / sqrt(3) per element, whatever
        # the inputs (the median of |C - AB| / |AB| of a sum of such errors, measured 0.035 .. 0.037)
        assert bs["median rel. error"] < 2.0 ** -4, (kind, bs)
        if kind == "normal":                    # nothing to gain: the same to within the noise
            assert 0.8 < ratio < 1.25 and 0.8 < predicted < 1.25, (ratio, predicted)
        else:                                   # a clear margin, which the inputs' quantization predicts
            assert predicted > 3 and ratio > 0.5 * predicted and ratio > 3, (kind, ratio, predicted)
            assert pt["median |err|/(|A||B|)"] > 2 * bs["median |err|/(|A||B|)"]


def test_error_table_is_deterministic(table):
    again = S.scaling_error_table(kinds=("outlier activations",))
    assert again == [r for r in table if r["inputs"] == "outlier activations"]


# --------------------------------------------------------------------------- the recorded rows and their readers
def _fake_record():
    speed = []
    for n in (4096, 8192):
        for k, t in (("cublaslt_fp8", 1260.0), ("fp8_promote_128", 1090.0), ("fp8_promote_pingpong", 1060.0),
                     ("fp8_block_scaled", 1000.0)):
            speed.append({"kernel": k, "n": n, "tflops": t, "sm_mhz": 1980, "power_w": 400.0,
                          **({"check_passed": True} if k == "fp8_block_scaled" else {})})
    speed.append({"kernel": "cublaslt_fp8_fast", "n": 4096, "skipped": "not asked"})
    errors = [{"inputs": r["inputs"], "scaling": r["scaling"], "M": 256, "N": 256, "K": 1024, "median rel. error": e,
               "median |err|/(|A||B|)": e / 30, "max |err|/(|A||B|)": e / 5, "normwise error": 0.037}
              for r, e in zip([{"inputs": k, "scaling": s} for k in S.SCALING_INPUTS for s in S.SCALINGS],
                              (0.0372, 0.0369, 0.319, 0.0358, 0.142, 0.0366))]
    checks = [{"M": 40, "N": 24, "K": 256, "inputs": "normal", "elements": 960, "mismatches": 0,
               "cpu_model_mismatches": 0, "check_passed": True}]
    return {"block_scaled": {"speed": speed, "errors": errors, "errors_large": errors, "checks": checks}}


def test_readers_of_the_recorded_rows():
    data = _fake_record()
    sp = {(r["n"], r["kernel"]): r for r in X.block_scaled_speed_rows(data)}
    assert len(sp) == 6 and (4096, "cublaslt_fp8_fast") not in sp and (4096, "fp8_promote_pingpong") not in sp
    r = sp[4096, "fp8_block_scaled"]
    assert r["x cuBLASLt FP8"] == round(1000 / 1260, 3) and r["x promote_128"] == round(1000 / 1090, 3)
    assert r["check"] == "pass" and sp[4096, "cublaslt_fp8"]["check"] == "-" and r["SM MHz"] == 1980
    er = X.block_scaled_error_rows(data)
    assert [(e["inputs"], e["scaling"]) for e in er] == [(k, s) for k in S.SCALING_INPUTS for s in S.SCALINGS]
    assert er[2]["per tensor / this (median)"] == 1.0
    assert er[3]["per tensor / this (median)"] == round(0.319 / 0.0358, 2)
    assert er[0]["M x N x K"] == "256 x 256 x 1024" and set(X.ERROR_COLUMNS) <= set(er[0])
    assert X.block_scaled_check_rows(data)[0]["check"] == "pass"


def test_readers_say_what_to_run_when_nothing_is_recorded():
    from helpers.results import load_latest

    fp8 = load_latest().meta.get("experiments", {}).get("fp8", {})
    for reader in (X.block_scaled_speed_rows, X.block_scaled_error_rows, X.block_scaled_check_rows):
        if "block_scaled" in fp8:
            assert reader(fp8)
        with pytest.raises(ResultsError, match="--update-experiments fp8"):
            reader({})


def test_the_kernel_is_in_the_source_and_not_in_fp8_kernels():
    from helpers.paths import kernel_dir

    src = (kernel_dir() / S.BLOCK_SCALED.file).read_text()
    assert 'fp8_block_scaled(const __grid_constant__ TensorMap tmA' in src
    assert "__fmul_rn(d[4 * j], s0)" in src and "__fadd_rn(total[4 * j]" in src
    assert S.BLOCK_SCALED.name not in F.FP8_KERNELS and S.SCALED_KERNELS["fp8_block_scaled"].nc == 128
    assert S.BLOCK_SCALED.bn == S.SCALE_BLOCK == 128
