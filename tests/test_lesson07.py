"""Lesson 7's first half on the CPU: the exercise checkers (helpers/exercises/fp8.py), and every claim the
lesson's prose makes about its own data (notebooks/07_fp8.py), recomputed, so that a change of data or of
ml_dtypes that would make the prose wrong fails here. helpers/fp8.py itself: tests/test_fp8_formats.py."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import helpers

ROOT = Path(helpers.__file__).parents[1]
from helpers import exercises, fp8
from helpers.exercises import fp8 as ex


# --------------------------------------------------------------------------- exercises
def test_exercise_answers_from_first_principles():
    assert ex.e4m3_max() == 448.0 == (1 + 6 / 8) * 2 ** (15 - 7)
    assert math.isnan(ex.cast_result(500.0, "fp8_e4m3", False)) and ex.cast_result(500.0, "fp8_e4m3", True) == 448.0
    assert ex.cast_result(1e5, "fp8_e5m2", False) == math.inf and ex.cast_result(1e5, "fp8_e5m2", True) == 57344.0
    assert ex.per_tensor_scale(1e4) == 448 / 1e4
    t = ex.zero_threshold(1e4)
    assert t == 2.0 ** -10 * 1e4 / 448
    # the threshold really is where values start to vanish: at it -> 0 (tie to even), just above -> not 0
    s = ex.per_tensor_scale(1e4)
    x = np.array([[1e4, t, np.nextafter(t, 1.0), t / 2]])
    q = fp8.quantize_per_tensor(x).q.astype(np.float64)
    assert q[0, 0] == 448 and q[0, 1] == 0 and q[0, 2] > 0 and q[0, 3] == 0
    assert math.isclose(float(q[0, 2]), 2.0 ** -9) and s > 0


@pytest.mark.parametrize("fn,good,bad", [
    (ex.check_e4m3_max, 448, 240),
    (lambda a: ex.check_cast(a, 500.0, "fp8_e4m3", False), float("nan"), 448.0),
    (lambda a: ex.check_cast(a, 500.0, "fp8_e4m3", True), 448.0, float("nan")),
    (lambda a: ex.check_cast(a, 1e5, "fp8_e5m2", False), float("inf"), 57344),
    (lambda a: ex.check_cast(a, 1e5, "fp8_e5m2", True), 57344, float("inf")),
    (lambda a: ex.check_cast(a, 300.0, "fp8_e4m3", False), 288, 300),
    (ex.check_scale, 0.448, 1000 / 448),
    (lambda a: ex.check_scale(a, amax=1e4), 448 / 1e4, 1e4 / 448),
    (lambda a: ex.check_zero_threshold(a, amax=1e4), 2.0 ** -9 / 2 / (448 / 1e4), 2.0 ** -9 / (448 / 1e4)),
    (ex.check_two_sum_registers, 384, 256),                                   # 3 x 128, not 2 x 128
    (lambda a: ex.check_two_sum_registers(a, bn=128), 192, 168),              # fp8_promote_2acc's 192
])
def test_exercise_checkers(fn, good, bad, capsys):
    fn(None)
    assert exercises.last_result is None and "Not answered" in capsys.readouterr().out
    fn(...)
    assert exercises.last_result is None and "Not answered" in capsys.readouterr().out
    fn(good)
    assert exercises.last_result is True and "Correct." in capsys.readouterr().out
    fn(bad)
    out = capsys.readouterr().out
    assert exercises.last_result is False and "Hint" in out


@pytest.mark.parametrize("fn", [ex.check_e4m3_max, ex.check_cast, ex.check_scale, ex.check_zero_threshold,
                                ex.check_two_sum_registers])
@pytest.mark.parametrize("answer", ["four hundred", [448], {"x": 1}, object(), True, 1 + 2j])
def test_checkers_never_raise_on_a_wrong_type(fn, answer, capsys):
    fn(answer)
    out = capsys.readouterr().out
    assert exercises.last_result is False and "expects a number" in out


def test_cast_checker_hints_depend_on_the_value(capsys):
    ex.check_cast(1.0, 500.0, "fp8_e5m2", False)       # 500 is inside E5M2's range: rounds to 512
    out = capsys.readouterr().out
    assert "Not quite" in out and "round it to the nearest" in out
    ex.check_cast(512, 500.0, "fp8_e5m2", False)
    assert exercises.last_result is True


def test_demo_values():
    d = ex.demo_values()
    assert d["largest E4M3"] == 448 and math.isnan(d["500 -> E4M3, numpy"]) and d["500 -> E4M3, satfinite"] == 448
    assert d["scale for amax 1000"] == 0.448 and d["zero below, amax 1e4"] == ex.zero_threshold(1e4)


# --------------------------------------------------------------------------- the prose's claims, recomputed
def test_claims_about_the_formats():
    e4, e5 = fp8.facts("fp8_e4m3"), fp8.facts("fp8_e5m2")
    i16 = helpers.formats.format_info("fp16")
    assert e4.u / i16.u == 2 ** 7                                           # "2^7 times smaller"
    for name, per_binade in (("fp8_e4m3", 8), ("fp8_e5m2", 4)):                 # "8 / 4 numbers per power of two"
        _, vals = fp8.patterns(name)
        assert np.sum((vals >= 1) & (vals < 2)) == per_binade
    assert round(math.log10(e4.max / e4.tiny), 1) == 4.5                     # "about 4.5 decades"
    assert e5.tiny == i16.tiny and e5.binades > 31 and e4.binades < 18      # E5M2 has FP16's exponent
    # "the midpoint itself rounds down in E4M3 (448's last fraction bit is 0) and up in E5M2 (57344's is 1)"
    assert fp8.bit_fields(0x7E, "fp8_e4m3").endswith("0") and fp8.bit_fields(0x7B, "fp8_e5m2").endswith("11")
    assert e4.midpoint_to == e4.max and math.isinf(e5.midpoint_to)
    assert math.isnan(float(fp8.cast(np.array([np.inf]), "fp8_e4m3")[0]))   # "E4M3 turns infinity into NaN"


def test_claims_about_scaling_small_values():
    g = 1e-3 * helpers.random_matrix(256, 1024, seed=3, dtype=np.float64)
    raw = fp8.cast(g, "fp8_e4m3").astype(np.float64)
    t = fp8.quantize_per_tensor(g, "fp8_e4m3")
    assert np.mean(raw == 0) > 0.5                                          # "most of these values become 0"
    rest = raw != 0
    assert np.all(np.abs(raw[rest]) < fp8.facts("fp8_e4m3").tiny)           # "the rest keep a bit or two"
    assert np.median(fp8.relative_errors(g, t.dequantize())) < fp8.facts("fp8_e4m3").u / 2   # "well under u"


def test_claims_about_outliers():
    X = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)
    r = {(row["format"], row["scheme"]): row for f in fp8.FP8 for row in fp8.scaling_report(X, fmt=f)}
    pt, bl, ti = (r["fp8_e4m3", s] for s in ("per tensor", "128x128 blocks", "1x128 tiles"))
    assert pt["flushed to zero"] >= 1000 and 0.2 < pt["subnormal"] / X.size < 0.3   # thousands; about a quarter
    assert pt["tiles within u"] == 0                                         # "no 1x128 tile keeps all to u"
    assert ti["tiles within u"] >= ti["tiles"] - 3 * 16                      # only tiles with an outlier (and few)
    assert pt["flushed to zero"] > 50 * ti["flushed to zero"] and ti["small error"] < fp8.facts("fp8_e4m3").u
    assert ti["tiles within u"] > bl["tiles within u"] > pt["tiles within u"]           # blocks in between
    blocks_with_outlier = int(np.sum((np.abs(X) == 1e4).reshape(2, 128, 8, 128).any(axis=(1, 3))))
    assert blocks_with_outlier > 16 // 2                                     # "most blocks hold an outlier"
    errs = [row["matrix error"] for row in (pt, bl, ti)]
    assert max(errs) / min(errs) < 1.2                                       # "the matrix error hardly moves"
    e5 = r["fp8_e5m2", "per tensor"]
    assert e5["flushed to zero"] == 0 and e5["tiles within u"] >= e5["tiles"] - 1        # E5M2 has the range
    assert e5["median error"] > ti["median error"]                           # at twice the u


def test_the_summary_says_which_scales_keep_the_small_values():
    """The Summary's scaling bullet, against the outlier table's rows: 1x128 tiles keep the small values (under 1% of
    per-tensor's zeros and subnormals); 128x128 blocks (DeepSeek-V3's scales for weights) lost over two thirds as many
    (and under three quarters) of both, so the Summary must not say blocks keep them."""
    X = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)
    r = {row["scheme"]: row for row in fp8.scaling_report(X, fmt="fp8_e4m3")}
    pt, bl, ti = r["per tensor"], r["128x128 blocks"], r["1x128 tiles"]
    for col in ("flushed to zero", "subnormal"):
        assert 2 / 3 < bl[col] / pt[col] < 3 / 4, col                          # "lost over two thirds as many"
        assert ti[col] < pt[col] / 100, col                                     # "one per 1x128 tile keeps them"
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    assert ("one scale per tensor lets a few outliers push the small values to zero; one per 1x128 tile keeps them "
            "(128x128 blocks, DeepSeek-V3's for weights, lost over two thirds as many here)") in src
    assert "1x128 tile or 128x128 block keeps them" not in src
    assert "each 128x128 block of weights" in src                               # where DeepSeek-V3 uses blocks


def test_claims_about_the_grouped_product():
    X = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)
    W = helpers.random_matrix(1024, 512, seed=1, dtype=np.float64) / 32
    R = X @ W
    med = []
    for ga, gb in ((None, None), ((1, 128), (128, 128))):
        a, w = fp8.quantize(X, ga), fp8.quantize(W, gb)
        C = fp8.grouped_matmul(a, w)
        assert np.abs(C - a.dequantize() @ w.dequantize()).max() / np.abs(C).max() < 1e-13
        med.append(np.median(np.linalg.norm(C - R, axis=1) / np.linalg.norm(R, axis=1)))
    assert abs(med[0] - med[1]) / med[1] < 0.15                              # "barely depends on the scheme"


# --------------------------------------------------------------------------- exercise 6: the promotion interval
from helpers import fp8_gemm  # noqa: E402
from helpers.experiments import fp8 as fp8x  # noqa: E402
from helpers.timing import round_ratio, verdict  # noqa: E402


def _flat7() -> str:
    """Lesson 7's source with its markdown lines joined: a sentence reads the same wherever its lines break."""
    return " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())


def _rounds(log: str, n: int, kernel: str, options=(), stages=None) -> list:
    """The round_ms of one build in a lab/probes/fp8_stages.py log (results/logs/<log>-nvidia-h200.json): `options`
    as the probe passed them, without -D."""
    rows = [r for r in fp8x.probe_log(log)["stages"]["rows"] if "round_ms" in r and r["n"] == n and r["kernel"] == kernel
            and tuple(o.removeprefix("-D") for o in r.get("options", ())) == tuple(options)
            and stages in (None, r["stages"])]
    assert len(rows) == 1, (log, n, kernel, options, stages)
    return rows[0]["round_ms"]


def _judged(predicted: float, mine_ms, base_ms, **words) -> str:
    """The course's rule (helpers.timing.verdict, stated on Appendix H's first slide as in lessons 5 and 6) on the
    spread of alternating rounds: mine over base, round by round (helpers.timing.round_ratio), above 1 faster."""
    rr = round_ratio(mine_ms, base_ms)
    return verdict(predicted, rr["low"], rr["high"], **words)


@pytest.fixture(scope="module")
def fp8_data():
    return helpers.results.load_latest().meta["experiments"]["fp8"]


@pytest.fixture(scope="module")
def small_product():
    A, B = fp8x.random_inputs(32, 24, 1024, "uniform", seed=6)     # small: the CPU model in a fraction of a second
    return A, B, {nc: fp8_gemm.matmul(f"fp8_promote_{nc}", A, B)[0] for nc in fp8_gemm.PROMOTE_NC}


def test_promotion_ratio_is_the_recorded_one(fp8_data):
    """Exercise 6 asks for a ratio the lesson does not print: every 64 over every 128 at K = 4096 on N(0,1) inputs
    (the table at K = 4096 is U[0,1)'s, whose ratio would be a wrong answer); the solution's sqrt argument lands
    inside the tolerance, and the learner's run (the CPU model, 64 x 64) shows about the recorded ratio."""
    med = {r["kernel"]: r["med_rel"] for r in fp8_data["sweep"] if r["K"] == 4096 and r["dist"] == "normal"}
    truth = ex.promotion_ratio(fp8_data)
    assert ex.PROMOTION_DIST == "normal" and truth == med["fp8_promote_64"] / med["fp8_promote_128"]
    assert 0.5 < truth < 0.7
    shown = ex.promotion_ratio(fp8_data, dist="uniform01")                   # the table's U[0,1) rows
    assert abs(math.log(shown / truth)) > math.log(ex.PROMOTION_TOLERANCE)   # copying it is rejected
    assert abs(math.log(2 ** -0.5 / truth)) <= math.log(ex.PROMOTION_TOLERANCE)   # the solution's 1/sqrt(2)
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    main = src[:src.index("## Appendix")]
    assert 'sweep_rows(data, 4096, "uniform01")' in main and 'sweep_rows(data, 4096, "normal")' not in src
    assert "ratio = 2 ** -0.5" in src and "*Predict* the median relative error at K = 4096 on N(0,1) inputs" in \
        " ".join(src.replace("\n# ", " ").split())
    # and the CPU model of a small product gives the same ratio (what the learner's run shows)
    A, B = fp8x.random_inputs(64, 64, 4096, "normal", seed=6)
    assert 'A6, B6 = fp8x.random_inputs(64, 64, 4096, "normal", seed=6)' in src
    R = A @ B
    err = {nc: np.median(np.abs(fp8_gemm.matmul(f"fp8_promote_{nc}", A, B)[0] - R) / np.abs(R)) for nc in (64, 128)}
    assert abs(math.log(err[64] / err[128] / truth)) < 0.1


@pytest.mark.parametrize("answer,ok", [(None, None), (..., None), (0.59, True), ("0.59", True), (2 ** -0.5, True),
                                       (0.5, True), (0.27, False), (0.2, False), (1, False), (2.0, False), (0, False),
                                       (-0.59, False), (float("nan"), False), (float("inf"), False)])
def test_promotion_ratio_checker(fp8_data, answer, ok, capsys):
    ex.check_promotion_ratio(answer, fp8_data)
    out = capsys.readouterr().out
    assert exercises.last_result is ok
    assert {None: "Not answered", True: "Correct", False: "Hint"}[ok] in out


@pytest.mark.parametrize("answer", ["a quarter", [0.27], {"r": 0.27}, object(), True, 1 + 2j])
def test_promotion_ratio_checker_wrong_type(fp8_data, answer, capsys):
    ex.check_promotion_ratio(answer, fp8_data)
    assert exercises.last_result is False and "expects a number" in capsys.readouterr().out


@pytest.mark.parametrize("data", [None, {}, [], "fp8"])
def test_promotion_ratio_checker_without_the_record(data, capsys):
    ex.check_promotion_ratio(0.59, data)
    assert exercises.last_result is False and "not the recorded fp8 experiment" in capsys.readouterr().out


def test_promotion_run_accepts_the_kernels_result(small_product, capsys):
    A, B, C = small_product
    for nc in fp8_gemm.PROMOTE_NC:
        ex.check_promotion_run(C[nc], nc, A, B)
        out = capsys.readouterr().out
        assert exercises.last_result is True and "Correct" in out and f"every {nc} products" in out
    ex.check_promotion_run(C[64], "64", A, B)                           # a number in a string is still one
    assert exercises.last_result is True


def test_promotion_run_rejects_a_C_from_another_interval(small_product, capsys):
    A, B, C = small_product
    for nc in fp8_gemm.PROMOTE_NC:
        for other in fp8_gemm.PROMOTE_NC:
            if other == nc or np.array_equal(C[other], C[nc]):
                continue
            ex.check_promotion_run(C[other], nc, A, B)
            out = capsys.readouterr().out
            assert exercises.last_result is False and f"fp8_promote_{other}" in out, (nc, other, out)
    C0 = fp8_gemm.matmul("fp8_wgmma_n128", A, B)[0]                    # no promotion at all
    ex.check_promotion_run(C0, 64, A, B)
    assert exercises.last_result is False and "never promoting" in capsys.readouterr().out
    off = C[64].copy()
    off[3, 5] = np.nextafter(off[3, 5], np.inf)                         # one element one ulp off
    ex.check_promotion_run(off, 64, A, B)
    assert exercises.last_result is False and "no kernel's result" in capsys.readouterr().out


def test_promotion_run_placeholders_and_wrong_types(small_product, capsys):
    A, B, C = small_product
    for c, nc in ((None, 64), (C[64], ...), (C[64], None), (..., 64)):
        ex.check_promotion_run(c, nc, A, B)
        assert exercises.last_result is None and "Not answered" in capsys.readouterr().out
    for nc in (100, 0, 48, "sixty-four", [64], True):
        ex.check_promotion_run(C[64], nc, A, B)
        assert exercises.last_result is False and "expects one of the intervals" in capsys.readouterr().out
    for c in ("C", [[1.0]], 3.0, C[64].astype(np.int64)):
        ex.check_promotion_run(c, 64, A, B)
        assert exercises.last_result is False and "expects C" in capsys.readouterr().out
    ex.check_promotion_run(C[64][:5], 64, A, B)                        # the wrong shape
    assert exercises.last_result is False and "pass the A and B" in capsys.readouterr().out
    ex.check_promotion_run(C[64], 64, "A", B)                          # never raises
    assert exercises.last_result is False and "Not accepted" in capsys.readouterr().out


def test_exercise_4_asks_for_what_no_cell_prints(fp8_data, capsys):
    """Exercise 4: beside 448 x 448 (not the probe's 2^16), the smallest power of two a product can be and still be
    kept. 448^2 = 200704 has its leading bit at 2^17, so the 14 kept bits reach 2^4 = 16 (the fitted model agrees:
    16 survives, 8 is cut); 8, the answer for 2^16 the slide shows, is rejected, as is every other power of two."""
    assert fp8x.bits_kept(fp8_data, "fp8_wgmma") == 14 and ex.smallest_kept(fp8_data) == 16.0
    big = 448.0 * 448.0
    assert ex.wgmma_sum([448.0, 4.0], [448.0, 4.0]) == big + 16                 # 16 kept whole
    assert ex.wgmma_sum([448.0, 2.0], [448.0, 4.0]) == big                      # 8 cut to 0
    for answer, ok in ((None, None), (..., None), (16, True), ("16", True), (2.0 ** 4, True), (8, False),
                       (2.0 ** 3, False), (32, False), (4, False), (14, False), (-16, False)):
        ex.check_smallest_kept(answer, fp8_data, large=448.0)
        out = capsys.readouterr().out
        assert exercises.last_result is ok, (answer, out)
        assert {None: "Not answered", True: "Correct", False: "Hint"}[ok] in out
    ex.check_smallest_kept(8, fp8_data)
    assert "2^17" in capsys.readouterr().out                                    # the hint names the leading bit
    for data in (None, {}, [], "fp8", 16):
        ex.check_smallest_kept(16, data)
        assert exercises.last_result is False and "not the recorded fp8 experiment" in capsys.readouterr().out
    ex.check_swamped_sum(65536.0)
    assert exercises.last_result is True
    ex.check_swamped_sum(65536.0 + 31 * 4)
    assert exercises.last_result is False
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    assert ("4. **Beside a larger term.** Next to 448 x 448 in one `wgmma` block, what is the smallest power of two a "
            "product can be and still be kept?") in src
    assert "ex.check_smallest_kept(answer, data, large=448.0)" in src and "ex.check_bits_kept(" not in src
    assert "$2^{16}$ keeps $2^{3}$ and drops $2^{2}$" in src                    # what the slide shows: 2^16's case


def test_exercise_3_and_its_speaker_note_ask_the_same_question():
    """The outlier slide's speaker note points at exercise 3: both ask, for amax 10^4 and per-tensor scaling to E4M3,
    where values become 0 (check_zero_threshold with amax=1e4)."""
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    assert "Ask: with amax $10^4$, which values does per-tensor scaling flush to zero? (Exercise 3.)" in src
    assert "3. **Scale and loss.** A tensor's largest magnitude is $10^4$." in src
    assert "at or below which magnitude does a value become 0?" in src
    assert "ex.check_zero_threshold(answer, amax=1e4)" in src
    assert "flushes 0.01 to zero" not in src


def test_the_promotion_loop_is_fp8_promote_128s():
    """The slide 'The promotion loop' shows fp8x.promotion_loop("fp8_promote_128"): lines of kernels/fp8_sm90a.cu in
    the file's order, only those fp8_gemm<128, 128> compiles: the interval's constants, one declaration each of d and
    total (the plain consumers', not the OVERLAP branch's `float d[NREG], total[NREG];`), fresh and promote, the wait
    for all and the promotion adds; none of SCALED's scale loads and multiply-adds, nor the NC < 128 branch."""
    from helpers.compile import KERNEL_DIR

    text = fp8x.promotion_loop("fp8_promote_128")
    shown = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert len(shown) <= 40
    src = [ln.strip() for ln in (KERNEL_DIR / "fp8_sm90a.cu").read_text().splitlines()]
    at = 0
    for ln in shown[4:]:                                                      # after the constants and declarations
        at = src.index(ln, at) + 1 if ln != "}" else at                      # each a line of the file, in order
    assert all(ln in src for ln in shown)
    assert shown[:2] == ["constexpr int EVERY = NC / 32;                             // k-steps per promotion (0: never)",
                         "constexpr int PSTAGES = EVERY >= KSTEPS ? EVERY / KSTEPS : 1; // NC >= 128: stages per "
                         "promotion"]
    assert sum(ln.startswith("float d[NREG]") for ln in shown) == 1 and sum("float total[" in ln for ln in shown) == 1
    assert "float d[NREG], total[NREG];" not in text
    for needed in ("wgmma_wait<0>();", "for (int i = 0; i < (NC ? NREG : 1); ++i) total[i] += d[i];", "const bool fresh",
                   "const bool promote", "release(s);", "wgmma_e4m3(d, desc_a(a, s, ks), desc_b(b, s, ks), !fresh);"):
        assert needed in text, needed
    for absent in ("SCALED", "__ldg", "__fmul_rn", "__fadd_rn", "EVERY ? EVERY", "F8_PERIOD", "} else\n"):
        assert absent not in text, absent
    assert text.count("{") == text.count("}")                                 # whole blocks
    for kernel in ("fp8_promote_256", "fp8_promote_pingpong", "fp8_block_scaled", "fp8_wgmma"):
        with pytest.raises(ValueError):
            fp8x.promotion_loop(kernel)
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    main = lesson[:lesson.index("## Appendix")]
    assert 'fp8x.promotion_loop("fp8_promote_128")' in main and "device_functions" not in main and "re.search" not in main
    assert "Below 128 (not shown) it promotes\n# inside a K-tile." in lesson


def test_promotion_figure_uses_the_kernels_intervals():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ncs = sorted({k.nc for k in fp8_gemm.FP8_KERNELS.values() if k.wgmma and k.bn == 128})
    assert ncs == [0, *fp8_gemm.PROMOTE_NC]
    a, b = fp8x.random_inputs(1, 1, 1024, "uniform", seed=7)
    fig = helpers.plots.fp8_promotion(ncs, a[0], b[:, 0])
    lanes, bars = fig.axes
    assert len(bars.patches) == len(ncs)
    widths = [p.get_width() for p in bars.patches]                     # mean spacing grows with N_C
    assert widths[1:] == sorted(widths[1:]) and widths[0] == max(widths)
    plt.close(fig)


def test_claims_about_the_outlier_tiles():
    X = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)
    e4 = fp8.facts("fp8_e4m3")
    t = fp8.quantize(X, (1, 128))
    tiles = lambda m: m.reshape(256, 8, 128)                            # noqa: E731
    miss = ~fp8.tiles_within_u(X, t.dequantize(), e4.u)
    big = tiles(np.abs(X) == 1e4).any(axis=2)
    q = np.abs(t.q.astype(np.float64))
    zero = tiles((X != 0) & (q == 0)).sum(axis=2)
    low = tiles((X != 0) & (q < e4.tiny)).any(axis=2)
    assert big.sum() == 16 and (miss & big).sum() == 16                 # "every tile with an outlier misses"
    assert (miss & ~big).sum() > 0 and low[miss & ~big].all()           # the others: a value subnormal or 0
    amax = tiles(np.abs(X)).max(axis=2)
    smallest = tiles(np.where(X == 0, np.inf, np.abs(X))).min(axis=2)
    assert np.all(amax[miss & ~big] / smallest[miss & ~big] > 1e4)       # "more than four powers of ten below"
    assert math.log2(e4.max / e4.tiny) < 15 and round(math.log10(e4.max / e4.tiny), 1) == 4.5
    assert zero[big].sum() > 0.9 * zero.sum()                           # "36 of the 37 zeros"


def test_claims_about_the_promote_256_timings(fp8_data):
    spd = {(r["n"], r["kernel"]): r for r in fp8_data["speed"]}
    for n in (4096, 8192):                                              # "slower than 128 and 512 at both sizes"
        t = {nc: spd[n, f"fp8_promote_{nc}"]["median_ms"] for nc in (128, 256, 512)}
        assert t[256] > t[128] and t[256] > t[512]
    r = {nc: spd[4096, f"fp8_promote_{nc}"] for nc in (128, 256, 512)}
    assert r[256]["p10_ms"] > max(r[128]["p90_ms"], r[512]["p90_ms"])   # "at 4096 ... lies apart from theirs"
    r = {nc: spd[8192, f"fp8_promote_{nc}"] for nc in (128, 256, 512)}
    assert r[256]["p10_ms"] < min(r[128]["p90_ms"], r[512]["p90_ms"])   # "at 8192 the three overlap"
    res = {(v["regs"], v["spills"], v["smem"]) for k, v in fp8_data["resources"].items()
           if k in {f"fp8_promote_{nc}" for nc in (32, 64, 128, 256, 512)}}
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()                 # the lesson prints those five only
    assert 'for nc in (32, 64, 128, 256, 512)\n        for v in [data["resources"][f"fp8_promote_{nc}"]]}' in src
    assert len(res) == 1                                                # "share registers, spills, shared memory"
    from helpers.experiments import fp8 as fp8x

    c = {r["kernel"]: r for r in fp8x.promote_counters()}
    assert set(c) == {"fp8_wgmma", "fp8_promote_128", "fp8_promote_256", "fp8_promote_512"}
    t = {nc: c[f"fp8_promote_{nc}"] for nc in (128, 256, 512)}
    assert t[256]["tensor_pipe_pct"] < min(t[128]["tensor_pipe_pct"], t[512]["tensor_pipe_pct"])   # "least busy"
    assert t[256]["duration_ns"] > max(t[128]["duration_ns"], t[512]["duration_ns"])       # "slowest under ncu too"
    rec_gap = r[256]["median_ms"] / min(r[128]["median_ms"], r[512]["median_ms"])          # (8192's rows above)
    spd4 = {nc: spd[4096, f"fp8_promote_{nc}"]["median_ms"] for nc in (128, 256, 512)}
    assert t[256]["duration_ns"] / max(t[128]["duration_ns"], t[512]["duration_ns"]) < spd4[256] / max(
        spd4[128], spd4[512]) and rec_gap > 1                                                 # "by less than in the timings"
    assert t[128]["fma_pipe_pct"] > t[256]["fma_pipe_pct"] > t[512]["fma_pipe_pct"]        # "follows the promotions"
    for k in ("stall_wait", "stall_long_scoreboard", "stall_barrier"):                    # "grow steadily 128 -> 512"
        assert t[128][k] < t[256][k] < t[512][k]
    # the prose: "the recorded rows were made with PyTorch's `_scaled_mm`" (rows from nvmath-python carry a path)
    assert not {r.get("path") for r in fp8_data["sweep"] + fp8_data["speed"] if "cublaslt" in r["kernel"]} - {None}


def test_cost_plot_labels_do_not_print_on_each_other():
    """The two points of the speed-vs-error plot that lie on each other (cublaslt_fast, wgmma_n128) get one
    label above and one below; labels near the right edge go to the left of their points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_xscale("log")
    pts = {"a": (1e-4, 800.0), "b": (6e-2, 1290.0), "c": (6.1e-2, 1292.0)}
    for k, (x, y) in pts.items():
        ax.scatter(x, y)
        ax.annotate(k, (x, y), textcoords="offset points", xytext=(5, 4))
    ax.set_xlim(5e-5, 8e-2)
    helpers.plots.separate_point_labels(ax)
    t = {a.get_text(): a for a in ax.texts}
    assert t["a"].xyann == (5, 4) and t["a"].get_horizontalalignment() == "left"
    assert t["b"].xyann[1] < 0 < t["c"].xyann[1]                  # one below, one above
    assert t["b"].get_horizontalalignment() == "right" and t["b"].xyann[0] < 0
    plt.close(fig)


def test_claims_of_the_pingpong_appendix(fp8_data):
    """Appendix G: fp8_promote_pingpong's sums are fp8_promote_128's bit for bit (the same CPU model, and 0
    mismatches against it on the GPU). In its one run, x0.97 of fp8_promote_128 at 4096^3 at the same clock, and 5%
    faster at 8192^3 at a 15% lower clock (1680 against 1980 MHz); Appendix H's run: x0.964 and x0.984 (the gain at
    8192^3 not stable). The barrier cost is a guess to test, not a finding. (The prose no longer says two accumulator
    sets cannot fit: fp8_promote_2acc runs them.)"""
    from helpers import fp8_gemm as F

    assert F.FP8_KERNELS["fp8_promote_pingpong"].nc == F.FP8_KERNELS["fp8_promote_128"].nc == 128
    assert fp8_data["probes"]["model_mismatches"]["fp8_promote_pingpong"] == 0
    assert all(r["mismatches"] == 0 for r in fp8_data["random"] + fp8_data["match_1024"]
               if r["kernel"] == "fp8_promote_pingpong")
    assert "ptxas allocates 168 here" not in (ROOT / "notebooks" / "07_fp8.py").read_text()
    rows = {(r["n"], r["kernel"]): r for r in fp8_data["speed_pingpong"]["rows"]}
    ratio = {n: rows[n, "fp8_promote_pingpong"]["tflops"] / rows[n, "fp8_promote_128"]["tflops"] for n in (4096, 8192)}
    assert round(ratio[4096], 2) == 0.97 and rows[4096, "fp8_promote_pingpong"]["sm_mhz"] == \
        rows[4096, "fp8_promote_128"]["sm_mhz"]
    clocks = (rows[8192, "fp8_promote_pingpong"]["sm_mhz"], rows[8192, "fp8_promote_128"]["sm_mhz"])
    assert round(100 * (ratio[8192] - 1)) == 5 and clocks == (1680, 1980) and round(100 * (1 - 1680 / 1980)) == 15
    h = {(r["n"], r["kernel"]): r for r in fp8x.block_scaled_speed_rows(fp8_data)}
    assert [h[n, "fp8_promote_pingpong"]["x promote_128"] for n in (4096, 8192)] == [0.964, 0.984]
    assert all(rows[n, k]["check_passed"] for n in (4096, 8192) for k in ("fp8_promote_pingpong", "fp8_promote_128"))
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("At $4096^3$ taking turns was slower than `fp8_promote_128` (x0.97) at the same clock; at $8192^3$ it "
               "was 5% faster at a 15% lower clock (1680 against 1980 MHz).", "x0.964 and x0.984, so the gain at "
               "$8192^3$ is not stable", "a guess to test: the named barriers add a wait to every stage."):
        assert s_ in src, s_
    assert "did not pay in both sizes" not in src


def test_nvml_power_is_labelled_as_the_lagging_average_it_is(fp8_data):
    """The W columns of the cold-L2 timings are NVML's power reading (helpers.clocks.read: nvmlDeviceGetPowerUsage),
    on Hopper a 1-second average: a timing of 100 launches lasts a fraction of that, so the reading lags. In the
    pingpong run (one round, rows in the order they ran: cuBLAS first, then the kernels) it climbs from 124 W for the
    first kernel timed at 4096^3 to 426 W for the last, every clock 1980 MHz; at 8192^3 cuBLASLt's rows read 206 and
    268 W while the driver reported its power cap. Every table of such readings says so (fp8x.NVML_POWER); the energy
    probe's power (joules over time) is labelled apart (fp8x.ENERGY_POWER); no table in the lesson has a bare 'W'."""
    import inspect

    from helpers import clocks

    assert "nvmlDeviceGetPowerUsage" in inspect.getsource(clocks.read)
    four = [r for r in fp8_data["speed_pingpong"]["rows"] if r["n"] == 4096]
    assert [r["kernel"] for r in four] == ["cublas_fp16", "cublaslt_fp8", "cublaslt_fp8_fast", "fp8_wgmma",
                                           "fp8_wgmma_n128", "fp8_promote_128", "fp8_promote_pingpong"]
    watts = [r["power_w"] for r in four]
    assert (round(watts[0]), round(watts[-1])) == (124, 426) and max(watts) == watts[-1]
    assert {r["sm_mhz"] for r in four} == {1980}
    assert all(r["median_ms"] * r["reps"] < 100 for r in four)        # ms of launches: under a tenth of NVML's second
    lt = {r["kernel"]: r for r in fp8_data["speed_pingpong"]["rows"] if r["n"] == 8192}
    assert [round(lt[k]["power_w"]) for k in ("cublaslt_fp8", "cublaslt_fp8_fast")] == [206, 268]
    assert all("sw power cap" in lt[k]["throttle"] for k in ("cublaslt_fp8", "cublaslt_fp8_fast"))
    assert fp8x.NVML_POWER == "W, NVML 1-s average (lags)" and fp8x.ENERGY_POWER == "W, energy / time"
    assert all(fp8x.NVML_POWER in r for r in fp8x.speed_rows({"speed": fp8_data["speed_pingpong"]["rows"]}))
    assert all(fp8x.NVML_POWER in r for r in fp8x.block_scaled_speed_rows(fp8_data))
    text = (ROOT / "notebooks" / "07_fp8.py").read_text()
    code = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))
    assert '"W"' not in code and "power W" not in code and "(NVML, W)" not in code
    for table in ("fp8x.wait_rows()", "fp8x.wide_rows()"):
        cell = text[text.index(table):text.index("# %%", text.index(table))]
        assert "fp8x.NVML_POWER" in cell, table
    cell = text[text.index("energy = fp8x.energy_rows"):]
    assert "fp8x.ENERGY_POWER" in cell[:cell.index("# %%")]
    assert '"W (cold L2: NVML 1-s average, lags; at the cap: "' in text
    src = " ".join(text.replace("\n# ", " ").split())
    for s_ in ("The W column is NVML's power reading (`nvmlDeviceGetPowerUsage`), on Hopper an average over the last "
               "second.", "it climbs from 124 W for the first kernel timed to 426 W for the last, and at $8192^3$ "
               "cuBLASLt's rows read 206 and 268 W while the driver reported its power cap."):
        assert s_ in src, s_


def test_claims_of_the_block_scaled_appendix(fp8_data):
    """Appendix H: every H200 check of fp8_block_scaled passed with 0 elements unlike the model, no spills; by the
    course's rule (stated there, helpers.timing.verdict on the p10-p90 spread of the two timings) it missed its
    prediction (x0.9 over fp8_promote_128) at 4096^3, slower; at 8192^3 its wide spread holds x0.9 (as predicted),
    fp8_promote_128 at 1425 MHz and it at 1980, shown; it lies further from cuBLASLt than fp8_promote_128 at both sizes; per tensor and block-scaled agree on
    normal data, per tensor loses on the outlier and varied-block inputs, and the normwise error hides most of that."""
    from helpers.experiments import fp8 as X

    chk = X.block_scaled_check_rows(fp8_data)
    assert chk and all(r["check"] == "pass" and r["differ from model"] == 0 for r in chk)
    assert fp8_data["block_scaled"]["resources"]["fp8_block_scaled"]["spills"] == 0
    sp = {(r["n"], r["kernel"]): r for r in X.block_scaled_speed_rows(fp8_data)}
    for n in (4096, 8192):
        b, p = sp[n, "fp8_block_scaled"], sp[n, "fp8_promote_128"]
        assert b["x promote_128"] < 0.9 and b["check"] == "pass"                       # "slower than predicted"
        assert b["x cuBLASLt FP8"] < p["x cuBLASLt FP8"]                                # "further from cuBLASLt"
    b4, b8 = sp[4096, "fp8_block_scaled"], sp[8192, "fp8_block_scaled"]
    assert round(b4["x promote_128"], 2) == 0.75 and round(b8["x promote_128"], 2) == 0.84
    t = {r["kernel"]: r for r in fp8_data["block_scaled"]["speed"] if r["n"] == 4096 and "tflops" in r}
    mine, base = t["fp8_block_scaled"], t["fp8_promote_128"]
    assert verdict(0.9, base["p10_ms"] / mine["p90_ms"], base["p90_ms"] / mine["p10_ms"]) == "missed: worse than predicted"
    t8 = {r["kernel"]: r for r in fp8_data["block_scaled"]["speed"] if r["n"] == 8192 and "tflops" in r}
    lo8, hi8 = (t8["fp8_promote_128"][a] / t8["fp8_block_scaled"][b] for a, b in (("p10_ms", "p90_ms"), ("p90_ms", "p10_ms")))
    assert verdict(0.9, lo8, hi8) == "as predicted" and (f"{lo8:.2f}", f"{hi8:.2f}") == ("0.72", "0.91")
    assert (sp[8192, "fp8_promote_128"]["SM MHz"], b8["SM MHz"]) == (1425, 1980)
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("Every prediction here is judged by the rule of lessons 5 and 6 (`helpers.timing.verdict`): **as "
               "predicted** when the predicted ratio lies inside the measured one's spread (p10 to p90 of the timings, "
               "or the lowest to the highest of alternating rounds), **missed** outside it; a predicted change inside "
               "the spread is **unresolved** when the spread also holds x1.00.", "Clocks are shown beside each ratio, "
               "not corrected for, as in lesson 6: under the power limit a kernel's own draw sets its clock.",
               "**Missed at $4096^3$: slower than predicted**, x0.75 (the column \"x promote_128\") where x0.9 was "
               "predicted.", "At $8192^3$ x0.84 is as predicted, its p10-p90 spread wide (x0.72 to x0.91), though "
               "`fp8_promote_128` ran at 1425 MHz and this kernel at 1980."):
        assert s_ in src, s_
    err = {(r["inputs"], r["scaling"] == "per tensor"): r for r in X.block_scaled_error_rows(fp8_data)}
    med = {k: r["median rel. error"] for k, r in err.items()}
    assert 0.9 < med["normal", True] / med["normal", False] < 1.1                        # "the two agree"
    for kind in ("outlier activations", "varied weight blocks"):
        assert med[kind, True] > 2 * med[kind, False]                                     # per tensor loses
        norm = err[kind, True]["normwise error"] / err[kind, False]["normwise error"]
        assert norm < med[kind, True] / med[kind, False]                                  # "hides this"


def test_claims_of_the_block_scaled_counters():
    """Appendix H: under Nsight Compute at 4096^3 fp8_block_scaled keeps its Tensor Cores busy a smaller share of
    the time and its FMA pipe a larger one than fp8_promote_128, and takes longer."""
    from helpers.experiments import fp8 as X

    c = {r["kernel"]: r for r in X.promote_counters(("fp8_promote_128", "fp8_block_scaled"))}
    b, p = c["fp8_block_scaled"], c["fp8_promote_128"]
    assert b["tensor_pipe_pct"] < p["tensor_pipe_pct"] and b["fma_pipe_pct"] > p["fma_pipe_pct"]
    assert b["duration_ns"] > p["duration_ns"]


def test_block_scaled_promotion_is_not_overlapped_by_design_only():
    """Appendix H: fp8_promote_128 and fp8_block_scaled have two consumer warpgroups (F8_THREADS = 1 producer + 2
    consumers, each with its own slice and its own waits), so one's adds can run while the other's wgmmas do: their
    promotion is not overlapped within a warpgroup, and across the two only as they happen to fall. The prose says
    that, not that nothing overlaps it."""
    import re

    kern = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert re.search(r"^#define F8_THREADS 384\b", kern, re.M) and "fp8_gemm<128, 128, false, true>" in kern
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("its promotion is not overlapped by design (within a warpgroup it waits for the Tensor Cores; across the "
               "two consumer warpgroups only as they happen to fall)", "not overlapped within a warpgroup, and across "
               "the two warpgroups only as they happen to fall."):
        assert s_ in src, s_
    assert "nothing overlaps it here" not in src and "its promotion is not overlapped, and" not in src
    assert "**Predicted, before it ran: x0.9 over `fp8_promote_128`** at both sizes" in src      # the prediction kept


def test_claims_of_the_reject_and_cublaslt_slides(fp8_data):
    """Appendix H's last two slides, from the record: at 4096^3 the kernel's C passes and every wrong result is
    rejected by the whole check, and only 'one element one unit up' passes the bound alone; cuBLASLt runs a
    different kernel per accumulation and size, all in clusters of 2, each name's ring within 16-28 KB of its
    shared memory; the FP8 kernels in the record use 128-row tiles and no clusters, and 4 stages but for
    fp8_promote_2acc_lean's 6 (the clustered kernel is pending)."""
    import re
    from pathlib import Path

    from helpers.experiments import hopper as H6

    rows = fp8x.block_scaled_reject_rows(fp8_data)
    assert rows[0]["C"] == "the kernel's" and rows[0]["whole check"] == "pass" and len(rows) == 9
    assert all(r["whole check"] == "rejects" for r in rows[1:])
    assert [r["C"] for r in rows[1:] if r["bound alone"] == "passes"] == ["one element one unit up"]
    lt = H6.cublas_kernel_rows(fp8_data["cublaslt_kernels"], 132)
    assert len(lt) == 4 and len({r["kernel"] for r in lt}) == 4 and all(r["cluster"] == 2 for r in lt)
    assert all(r["k_tile"] == 128 and 16 <= r["smem_kb"] - r["ring_kb"] <= 28.5 for r in lt)
    assert {r["C"] for r in lt} == {"FP8, default accumulation", "FP8, fast accumulation"}
    src = (Path(helpers.__file__).parents[1] / "kernels" / "fp8_sm90a.cu").read_text()
    assert re.search(r"^#define F8_BM 128\b", src, re.M) and re.search(r"^#define F8_STAGES 4\b", src, re.M)
    from helpers.fp8_gemm import FP8_KERNELS, PENDING

    recorded = {k: v for k, v in FP8_KERNELS.items() if k not in PENDING and v.wgmma}
    assert recorded and set(recorded) <= set(fp8_data["kernels"])
    assert {k for k, v in recorded.items() if v.stages != 4} == {"fp8_promote_2acc_lean"}
    assert "__cluster_dims__" not in src and "multicast" not in src          # no FP8 kernel runs in clusters
    lesson = (Path(helpers.__file__).parents[1] / "notebooks" / "07_fp8.py").read_text()
    assert "The FP8 kernels\n# in the record use one 128-row tile, no clusters and 4 stages, but for `fp8_promote_2acc_lean`'s 6" in lesson


def test_claims_of_the_deeper_ring_slide(fp8_data):
    """Appendix H, "A deeper ring?" (experiments.fp8.stages): every build correct; cuBLASLt's default kernel at
    4096^3 is a 128 x 128 tile in 6 stages; there a fifth and a sixth stage lift fp8_wgmma_n128 "by about 4%"
    (3-5% over 4 stages, rounds not overlapping), and fp8_promote_128 is no faster at any depth than at 4; at 8192^3
    every round of the course's kernels ran under 1600 MHz; the default stays at 4 stages."""
    import re
    from pathlib import Path

    from helpers.experiments import hopper as H6

    rows = fp8x.stage_rows(fp8_data)
    assert rows and all(r["passed"] for r in rows)
    assert all(x["check_passed"] for x in fp8_data["stages"]["rows"] if "check_passed" in x)
    at = {(r["n"], r["kernel"], r["stages"]): r for r in rows}
    raw = {(r["n"], r["kernel"], r["stages"]): r for r in fp8_data["stages"]["rows"] if "tflops" in r}
    for st in (5, 6):
        gain = at[4096, "fp8_wgmma_n128", st]["tflops"] / at[4096, "fp8_wgmma_n128", 4]["tflops"]
        assert 1.03 <= gain <= 1.05
        assert min(raw[4096, "fp8_wgmma_n128", 4]["round_ms"]) > max(raw[4096, "fp8_wgmma_n128", st]["round_ms"])
    four = at[4096, "fp8_promote_128", 4]["tflops"]
    assert all(at[4096, "fp8_promote_128", st]["tflops"] <= four for st in (5, 6, 7))
    assert all(max(m for m in r["sm_mhz"] if m) < 1600 for r in fp8_data["stages"]["rows"]
               if r.get("n") == 8192 and r["kernel"].startswith("fp8_"))
    lt = {(r["shape"], r["C"]): r for r in H6.cublas_kernel_rows(fp8_data["cublaslt_kernels"], 132)}
    d = lt["4096x4096x4096", "FP8, default accumulation"]
    assert d["tile"] == "128x128" and d["stages"] == 6
    src = (Path(helpers.__file__).parents[1] / "kernels" / "fp8_sm90a.cu").read_text()
    assert re.search(r"^#define F8_STAGES 4\b", src, re.M)


def test_claims_of_the_same_adds_fewer_instructions_slide():
    """Appendix H, 'The same adds, fewer instructions' (results/logs/ncu-source-fp8-nvidia-h200.json): cuBLASLt's
    default kernel executes exactly fp8_promote_128's QGMMA (m64n128k32) and FADD counts, one add per output per 128
    products; the most sampled instruction of both is the wait for wgmma (WARPGROUP.DEPBAR); cuBLASLt's most executed
    opcode after FADD is UIADD3 and it has no R2UR among its top opcodes where fp8_promote_128 has; fp8_promote_128
    executes "about a third more" instructions."""
    import json
    from pathlib import Path

    from helpers.profile import load_sampling

    ROOT = Path(helpers.__file__).parents[1]
    t = load_sampling("fp8")["targets"]
    ours, lt = t["fp8_promote_128"], t["cublaslt_fp8_default"]
    n = 4096
    assert ours["opcodes"]["QGMMA"] == lt["opcodes"]["QGMMA"] and ours["gmma_shapes"] == lt["gmma_shapes"]
    assert ours["opcodes"]["FADD"] == lt["opcodes"]["FADD"] == n ** 3 // 128 // 32
    assert ours["top_addresses"][0]["opcode"].startswith("WARPGROUP.DEPBAR")
    assert lt["top_addresses"][0]["opcode"].startswith("WARPGROUP.DEPBAR")
    assert list(lt["opcodes"])[:2] == ["FADD", "UIADD3"] and "R2UR" not in lt["opcodes"] and "R2UR" in ours["opcodes"]
    assert round(ours["warp_instructions"] / lt["warp_instructions"], 1) == 1.3
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "### The same adds, fewer instructions" in src and 'load_sampling("fp8")' in src
    assert "`-DF8_DESC_ADD=1`" in src and "#ifndef F8_DESC_ADD" in (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert json.loads((ROOT / "results" / "logs" / "ncu-source-fp8-nvidia-h200.json").read_text())["shape"] == [n] * 3


def test_claims_of_the_two_partial_sums_slide():
    """Appendix H, 'Two partial sums in one warpgroup': the register budget printed (40 x 128 + 232 x 256 within
    65536, 192 needed) is what the kernel asks of setmaxnreg; ptxas compiled it without spills (the kernel-check's
    claim, from the probe's clean run: every check bit-identical); "less than predicted: x1.05" (the x1.08 of the
    slide and of the kernel's comment) at 4096^3, missed by the course's rule (its rounds x1.048 to x1.052), yet more than
    half the predicted gain; "within 5% of cuBLASLt's
    default accumulation" with 6 stages and F8_DESC_ADD; in the sampling, WARPGROUP.DEPBAR is fp8_promote_128's top
    address (a quarter of its samples) and not among fp8_promote_2acc's, whose tensor pipe share is higher."""
    from helpers.experiments import fp8 as X
    from helpers.profile import load_sampling

    ksrc = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    two = ksrc[ksrc.index("} else if (TWO) {"):ksrc.index("} else {", ksrc.index("} else if (TWO) {"))]
    assert "regs_inc<232>();" in two and "regs_dec<40>();" in ksrc and 40 * 128 + 232 * 256 <= 65536
    assert "float d0[NREG], d1[NREG], total[NREG];" in two and "wgmma_wait<1>();" in two
    assert "Predicted before any GPU ran it (2026-12-02, session 12): x1.08 over fp8_promote_128 at 4096^3" in ksrc
    rows = {(r["n"], r["kernel"], r["stages"], r["options"]): r
            for r in X.stage_rows(X.probe_log("fp8-2acc-probe"), base="fp8_promote_128")}
    assert all(r["passed"] for r in rows.values())
    assert round(rows[4096, "fp8_promote_2acc", 4, "-"]["vs_base"], 2) == 1.05 < 1.08
    assert 0.95 <= rows[4096, "fp8_promote_2acc", 6, "F8_DESC_ADD=1"]["vs_default"] < 1.0
    t = load_sampling("fp8-2acc")["targets"]
    old, new = t["fp8_promote_128"], t["fp8_promote_2acc"]
    assert old["top_addresses"][0]["opcode"].startswith("WARPGROUP.DEPBAR") and old["top_addresses"][0]["share"] > 0.25
    assert not any(a["opcode"].startswith("WARPGROUP.DEPBAR") for a in new["top_addresses"])
    pipe = X.pipe_shares("ncu-pipe-fp8-2acc")
    assert pipe["fp8_promote_2acc"] > pipe["fp8_promote_128"]
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "**Predicted before it ran: x1.08 over `fp8_promote_128` at $4096^3$.**" in src
    mine, base = (_rounds("fp8-2acc-probe", 4096, k, stages=4) for k in ("fp8_promote_2acc", "fp8_promote_128"))
    rr = round_ratio(mine, base)
    assert _judged(1.08, mine, base) == "missed: worse than predicted" and (rr["low"] - 1) > (1.08 - 1) / 2
    assert (f"{rr['low']:.3f}", f"{rr['high']:.3f}") == ("1.048", "1.052")
    flat = " ".join(src.replace("\n# ", " ").split())
    assert ("**Missed: less than predicted**, x1.05 (x1.048 to x1.052 round by round), though more than half the "
            "predicted gain came.") in flat
    assert "within 5% of cuBLASLt's default accumulation" in flat


def test_claims_of_the_recorded_two_sum_kernels():
    """Appendix H: the record's run of fp8_promote_2acc and fp8_promote_2acc_lean (experiments.fp8.speed_2acc): every
    check passed; at 4096^3 the lean build is "again within 5% of cuBLASLt's default accumulation" (and below it);
    at 8192^3 cuBLASLt's SM clock was below both of ours ("read the clocks before that ratio"). The kernels joined the
    record's probes with no element unlike the model."""
    from helpers.experiments import fp8 as X
    from helpers.fp8_gemm import PENDING

    data = helpers.results.load_latest().meta["experiments"]["fp8"]
    rows = {(r["n"], r["kernel"]): r for r in X.speed_rows({"speed": data["speed_2acc"]["rows"]}, 1.0)}
    assert all(r["check"] == "pass" for r in rows.values() if r["kernel"].startswith("fp8_"))
    assert 0.95 <= rows[4096, "fp8_promote_2acc_lean"]["x cuBLASLt FP8"] < 1.0
    lt = rows[8192, "cublaslt_fp8"]["SM MHz"]
    assert lt < rows[8192, "fp8_promote_2acc_lean"]["SM MHz"] and lt < rows[8192, "fp8_promote_2acc"]["SM MHz"]
    for k in ("fp8_promote_2acc", "fp8_promote_2acc_lean"):
        assert k in data["kernels"] and data["probes"]["model_mismatches"][k] == 0 and k not in PENDING
        assert all(r["mismatches"] == 0 for r in data["random"] + data["match_1024"] if r["kernel"] == k)
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "At $4096^3$ the lean build is again within 5% of cuBLASLt's default accumulation. At $8192^3$\n# cuBLASLt ran at a lower clock than our kernels" in src
    assert "The record does not hold it yet" not in src and "not yet in the record" not in src



def test_claims_of_the_cluster_slide():
    """Appendix H, 'Two CTAs sharing B? Tried, no faster' (results/logs/fp8-cluster-probe and ncu-fp8-cluster):
    every check of every build passed; the clustered kernel was slower than the lean kernel at both sizes, its x1.02
    predicted at 4096^3 only (missed there, slower); Nsight Compute: fewer L2 sectors but by less than a tenth
    ("only slightly fewer", where the design asks for a quarter fewer bytes: 24 KB of 32 per K-tile), more DRAM
    read, a smaller tensor-pipe share, and `barrier` the top stall; the kernel is gone from the file and the registry."""
    from helpers.experiments import fp8 as X
    from helpers.fp8_gemm import FP8_KERNELS

    t = X.CLUSTER_TRIED
    rows = X.stage_rows(X.probe_log(t["log"]), base=t["over"])
    assert all(r["passed"] for r in rows) and {r["n"] for r in rows} == {4096, 8192}
    ours = [r for r in rows if r["kernel"] == t["kernel"]]
    assert len(ours) == 2 and all(r["vs_base"] < 1.0 < t["predicted"] for r in ours)
    nc = X.ncu_summary(t["ncu"])
    c, lean = nc[t["kernel"]], nc[t["over"]]
    assert 0.9 < c["l2_sectors_m"] / lean["l2_sectors_m"] < 1.0 and 128 * 128 + 64 * 128 == 0.75 * 2 * 128 * 128
    assert c["dram_read_mb"] > lean["dram_read_mb"] and c["tensor_pct"] < lean["tensor_pct"]
    assert c["top_stalls"].startswith("barrier") and not lean["top_stalls"].startswith("barrier")
    assert t["kernel"] not in FP8_KERNELS and t["kernel"] not in (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert ("**Missed at $4096^3$: slower than predicted**, x0.95 where x1.02 was predicted, though correct bit for "
            "bit; at $8192^3$, with no prediction, slower too, at a clock 11% lower.") in _flat7()
    assert _judged(1.02, _rounds("fp8-cluster-probe", 4096, "fp8_promote_2acc_cluster"),
                   _rounds("fp8-cluster-probe", 4096, "fp8_promote_2acc_lean")) == "missed: worse than predicted"
    assert "(its code is in commit\n# 6596698)" in src and t["commit"] == "6596698"

def test_fp8_probe_readers_name_what_is_missing(tmp_path):
    """probe_log and pipe_shares on a folder without the log: the error says what to run (and can fail: a present
    log is read)."""
    from helpers.experiments import fp8 as X

    with pytest.raises(helpers.errors.ResultsError, match="lab/probes/fp8_stages.py"):
        X.probe_log("fp8-2acc-probe", directory=tmp_path)
    with pytest.raises(helpers.errors.ResultsError, match="sm__pipe_tensor_cycles_active"):
        X.pipe_shares("ncu-pipe-fp8-2acc", directory=tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "p-nvidia-h200.json").write_text(json.dumps({"kernels": {"k": {
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 50.0}}}))
    assert X.pipe_shares("p", directory=tmp_path) == {"k": 50.0}


def test_the_two_sum_register_exercise_agrees_with_the_kernel():
    """Appendix H's Try it: two partial sums and the total of a 64 x 128 slice are the 192 registers the slide
    prints (3 x 128 / 2) and fit the consumers' 232; of a 64 x 256 slice (fp8_wgmma's tile) they would need 384."""
    from helpers.exercises import fp8 as exf

    assert exf.two_sum_registers(128) == 3 * 128 // 2 == 192 <= 232 < exf.two_sum_registers(256) == 384
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "ex.check_two_sum_registers(answer, bn=256)" in src and "{3 * 128 // 2} for two partial sums" in src


def test_ncu_summary_names_what_is_missing(tmp_path):
    """ncu_summary without its log: the error says what to run (and can fail: the committed log is read)."""
    from helpers.experiments import fp8 as X

    (tmp_path / "logs").mkdir()
    with pytest.raises(helpers.errors.ResultsError, match="tools/ncu_counters.py"):
        X.ncu_summary("ncu-fp8-cluster", directory=tmp_path)
    assert set(X.ncu_summary("ncu-fp8-cluster")) == {"fp8_promote_2acc_lean", "fp8_promote_2acc_cluster"}


def test_claims_of_the_tma_store_slide():
    """Appendix H, 'C through shared memory' (results/logs/fp8-store-probe, ncu-fp8-store, experiments.fp8.speed_store):
    every check of both pairs passed; predicted x1.03 (the kernel comments, written before the run, say so); at 4096^3
    fp8_wgmma_store ran x1.04 over fp8_wgmma at equal clocks ("Hit") and "within half a percent of cuBLASLt's fast
    accumulation, not past it"; fp8_promote_2acc_store ran slower than the lean kernel at both sizes (x0.98 at 4096^3);
    at 8192^3 every kernel's clock stayed below 1550 MHz in every round. Nsight Compute: the tensor pipe busier in
    fp8_wgmma_store and less busy in fp8_promote_2acc_store than in their register-path kernels, more L2 sectors for the
    latter, bank conflicts in both *_store kernels and none without. The record's run: fp8_wgmma_store within 1% of
    cuBLASLt fast at 4096^3 and below it, and at 8192^3 fp8_wgmma and fp8_wgmma_store at 1980 MHz (fp8_wgmma_n128 at
    1575) while cuBLASLt's clock fell. The
    promoting kernel is gone from the file and the registry; fp8_wgmma_store is recorded and out of PENDING."""
    from helpers.experiments import fp8 as X
    from helpers.fp8_gemm import FP8_KERNELS, PENDING

    t = X.STORE_TRIED
    rows = {(r["n"], r["kernel"]): r for r in X.store_rows(X.probe_log(t["log"]))}
    assert all(r["both_passed"] for r in rows.values()) and len(rows) == 4
    w, p = rows[4096, "fp8_wgmma_store"], rows[4096, t["kernel"]]
    assert round(w["vs_over"], 2) == 1.04 > X.STORE_PREDICTED and w["mhz"] == w["over_mhz"]
    assert 0.995 <= w["vs_fast"] < 1.0
    assert round(p["vs_over"], 2) == 0.98 and rows[8192, t["kernel"]]["vs_over"] < 1.0
    raw = X.probe_log(t["log"])["stages"]["rows"]
    assert all(max(r["sm_mhz"]) < 1550 for r in raw if r.get("n") == 8192 and "sm_mhz" in r and not
               r["kernel"].startswith("cublaslt"))
    nc = X.ncu_summary(t["ncu"])
    assert nc["fp8_wgmma_store"]["tensor_pct"] > nc["fp8_wgmma"]["tensor_pct"]
    assert nc[t["kernel"]]["tensor_pct"] < nc[t["over"]]["tensor_pct"]
    assert nc[t["kernel"]]["l2_sectors_m"] > nc[t["over"]]["l2_sectors_m"]
    assert nc["fp8_wgmma_store"]["conflicts_m"] > 0 and nc[t["kernel"]]["conflicts_m"] > 0
    assert nc["fp8_wgmma"]["conflicts_m"] == 0 == nc[t["over"]]["conflicts_m"]
    data = helpers.results.load_latest().meta["experiments"]["fp8"]
    rec = {(r["n"], r["kernel"]): r for r in data["speed_store"]["rows"]}
    ratio = rec[4096, "fp8_wgmma_store"]["tflops"] / rec[4096, "cublaslt_fp8_fast"]["tflops"]
    assert 0.99 <= ratio < 1.0 and rec[4096, "fp8_wgmma_store"]["check_passed"]
    ours = [rec[8192, k]["sm_mhz"] for k in ("fp8_wgmma", "fp8_wgmma_store")]
    assert ours == [1980, 1980] and max(rec[8192, k]["sm_mhz"] for k in ("cublaslt_fp8", "cublaslt_fp8_fast")) < 1980
    assert rec[8192, "fp8_wgmma_n128"]["sm_mhz"] == 1575
    assert "fp8_wgmma_store" not in PENDING and "fp8_wgmma_store" in data["kernels"]
    assert data["probes"]["model_mismatches"]["fp8_wgmma_store"] == 0
    assert t["kernel"] not in FP8_KERNELS and f"void __launch_bounds__(F8_THREADS, 1) {t['kernel']}" not in \
        (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    kern = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert "Predicted (session 17, before any GPU ran it): x1.03 over fp8_wgmma at 4096^3" in kern
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "**Predicted before it ran: x1.03\n# over `fp8_wgmma` at $4096^3$**" in src
    assert ("**Missed, better than predicted, for `fp8_wgmma`** at $4096^3$: x1.04 in every round, within half a\n"
            "# percent of cuBLASLt's fast accumulation, not past it. **Missed for the promoting kernel**: slower\n"
            "# (x0.98).") in src
    assert ("Again within 1% of cuBLASLt's fast accumulation at $4096^3$, below it. At $8192^3$ `fp8_wgmma` and\n"
            "# `fp8_wgmma_store` kept 1980 MHz in this run (`fp8_wgmma_n128` fell to 1575) while cuBLASLt's clock\n"
            "# fell") in src
    assert "our kernels kept\n# 1980 MHz" not in src


def test_claims_of_the_bank_conflict_slide():
    """Appendix H, 'Bank conflicts in the store': as built, each half-warp writes four of the row's eight chunks (two
    lanes of a half per 4-byte bank: 32 passes per warp and box), spread it writes all eight (16 passes), and the same
    values land in the same places (the placement below is the kernel's: lane (g, tq) holds d[4 j + 2 h], d[4 j + 2 h
    + 1] of 8-column block j); the prediction's figures: a CTA's 8 warps x 8 boxes of a 128 x 256 tile take 2048
    passes as built and 1024 spread, 1024 cycles at 1980 MHz about 0.5 us, and a tile at 4096^3 takes about 26 us in
    the store probe's run (512 tiles on 132 SMs)."""
    from helpers.experiments import fp8 as X

    built, spread = X.store_chunks(False), X.store_chunks(True)
    assert all(sorted(set(h)) in ([0, 1, 2, 3], [4, 5, 6, 7]) for h in built)
    assert all(sorted(set(h)) == list(range(8)) for h in spread)
    assert (X.store_wavefronts(False), X.store_wavefronts(True)) == (32, 16)

    def placement(spread):                 # (row, chunk, half) -> (row, column) of C, over one box's 4 steps x 2 rows
        out = {}
        for jj in range(4):
            for h in range(2):
                for lane in range(32):
                    g, tq = lane // 4, lane % 4
                    jl = jj ^ 2 if spread and tq & 2 else jj
                    out[g + 8 * h, (2 * jl + tq // 2) ^ g, tq % 2] = (g + 8 * h, 8 * jl + 2 * tq)
        return out
    assert placement(False) == placement(True) and len(placement(True)) == 16 * 8 * 2
    saved = 8 * 8 * (X.store_wavefronts(False) - X.store_wavefronts(True))
    assert saved == 1024 and round(saved / 1980e6 * 1e6, 1) == 0.5
    rows = {(r["n"], r["kernel"]): r for r in X.stage_rows(X.probe_log("fp8-store-probe"))}
    ms = 2 * 4096 ** 3 / rows[4096, "fp8_wgmma_store"]["tflops"] / 1e9
    assert round(ms * 1e3 / (32 * 16 / 132)) == 26
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    kern = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert "**Predicted before it ran: x1.015 over\n# `fp8_wgmma_store` at $4096^3$** (about 0.5 us of the 26 us a tile takes there)" in src
    assert "Predicted (session 17, before any GPU ran it): x1.015 over fp8_wgmma_store at 4096^3" in kern


def test_claims_of_the_spread_run():
    """Appendix H, the F8_STORE_SPREAD run (results/logs/fp8-spread-probe): every check passed; at 4096^3 the spread
    build ran x1.006 over fp8_wgmma_store as built (missed x1.015), and one of its three rounds was slower than all
    three of the built kernel's ("not told apart"); the kernel comment quotes the same figures."""
    from helpers.experiments import fp8 as X

    data = X.probe_log("fp8-spread-probe")
    rows = X.stage_rows(data, base="fp8_wgmma_store")
    assert all(r["passed"] for r in rows)
    sp = next(r for r in rows if r["n"] == 4096 and r["options"] == "F8_STORE_SPREAD=1")
    built = next(r for r in rows if r["n"] == 4096 and r["kernel"] == "fp8_wgmma_store" and r["options"] == "-")
    assert round(sp["vs_base"], 3) == 1.006 < 1.015
    rounds = {tuple(r["options"]): r["round_ms"] for r in data["stages"]["rows"]
              if r.get("n") == 4096 and r["kernel"] == "fp8_wgmma_store" and "round_ms" in r}
    assert sum(t > max(rounds[()]) for t in rounds[("-DF8_STORE_SPREAD=1",)]) == 1
    kern = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert f"x1.006 at 4096^3 ({sp['tflops']:.0f} against {built['tflops']:.0f} TFLOP/s), one of its three rounds" in kern
    assert "#define F8_STORE_SPREAD 0" in kern
    src = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert ("**Missed: less gain than predicted**, x1.006 at $4096^3$ (x0.996 to x1.008 round by round), a spread that "
            "holds no gain but not the x1.015 predicted; correct bit for bit.") in _flat7()
    rr = round_ratio(*(_rounds("fp8-spread-probe", 4096, "fp8_wgmma_store", o) for o in (("F8_STORE_SPREAD=1",), ())))
    assert (f"{rr['low']:.3f}", f"{rr['high']:.3f}") == ("0.996", "1.008") and verdict(1.015, rr["low"], rr["high"]) \
        == "missed: worse than predicted"


def test_claims_of_the_store_counters_slide():
    """Appendix H, 'Bank conflicts in the store: the counters' (results/logs/ncu-fp8-spread, one launch each at 4096^3):
    both builds issue the same M N / 64 store instructions; spread, the wavefronts per store halve (within 10%) as the
    half-warp model says (4 built, 2 spread), each measured above the model by about 0.5 a store as built and 0.3
    spread (the remainder the model does not explain); the bank conflicts fall from 2.5 a store to 0.3; the tensor
    pipe's share is the same within half a point. Lesson 6's rung 13 cites it, and
    its stores have the same addresses (chunk q = 2 jj + tq / 2 of row r at q ^ (r % 8), r % 8 = g)."""
    import re

    from helpers.experiments import fp8 as X

    b, s = X.store_counter_rows()
    assert b["switch"] == "as built" and s["switch"] == "F8_STORE_SPREAD=1"
    assert b["stores_m"] == s["stores_m"] == 4096 * 4096 / 64 / 1e6
    assert (b["model"], s["model"]) == (4, 2)
    assert 0.45 < s["wavefronts"] / b["wavefronts"] < 0.55
    assert 0 <= b["wavefronts"] - b["model"] < 0.6 and 0 <= s["wavefronts"] - s["model"] < 0.6
    assert b["conflicts"] > 2 and s["conflicts"] < 1 / 3
    assert (round(b["wavefronts"] - b["model"], 1), round(s["wavefronts"] - s["model"], 1)) == (0.5, 0.3)
    assert (f"{b['conflicts']:.1f}", f"{s['conflicts']:.1f}") == ("2.5", "0.3")
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("spread, the same stores take about half the wavefronts, and the bank conflicts fall from 2.5 per "
               "store to 0.3.", "Both builds take more wavefronts than the model says, about 0.5 per store as built "
               "and 0.3 spread: a remainder the model does not explain."):
        assert s_ in src, s_
    assert "one in three stores" not in src
    assert abs(b["tensor_pct"] - s["tensor_pct"]) < 0.5
    ws = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    f8 = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert "const int q = 2 * jj + tq / 2;" in ws and "const int r = warp * 16 + g + 8 * h;" in ws
    assert "((q ^ (r & 7)) * 4) + (tq & 1) * 2" in ws
    assert re.search(r"const int q = 2 \* \(other \? jj \^ 2 : jj\) \+ tq / 2;", f8) and "(q ^ g) * 16" in f8
    assert "### Bank conflicts in the store" in (ROOT / "notebooks" / "07_fp8.py").read_text()


def test_claims_of_the_infinite_bound_slide():
    """Appendix H, 'And where the bound is infinite?' (results/logs/reject-wrong-fp8-store, lab/probes/
    reject_wrong_fp8.py on the H200): the worst-case tolerance is finite at K = 300 and 4096 and infinite at 8192 (as
    helpers.numerics computes it, and as the probe's check reported); fp8_wgmma_store's C passes at every size; the
    bounds alone reject zeros, -C and moved rows everywhere, pass x1.1 at 8192^3 only, and pass FP16 rounding, the
    other accumulator and one element 1% off at every size; the whole check rejects every wrong result everywhere.
    The bound on the cuts, K u / (1 - K u) with u = 2^-13, is 1 at K = 2^12 and infinite at 2^13; the tolerance at
    K = 4096, 1.02, is above 1, so C = 0 (error: the answer itself, at most sum |a||b|) passes the worst-case bound
    there and the answer-scaled bound is what rejects zeros at 4096^3."""
    from helpers.experiments import fp8 as X
    from helpers.numerics import align_unit, gamma, tolerance

    u = align_unit("e8m13")
    assert u == 2.0 ** -13 and gamma(2 ** 12, u) == 1.0 and gamma(2 ** 13, u) == float("inf")

    rows = {r["C"]: r for r in X.reject_rows()}
    sizes = ["2000 x 2600 x 300", "4096^3", "8192^3"]
    tol = {s: tolerance(k, "fp8_e4m3", "e8m13", acc_rounding="truncate", block=32, inputs_rounded_in_reference=True)
           for s, k in zip(sizes, (300, 4096, 8192))}
    assert [f"{tol[s].value:.2e}" for s in sizes] == [rows["(worst-case tolerance)"][s] for s in sizes]
    assert tol["4096^3"].value < float("inf") == tol["8192^3"].value
    assert all(rows["fp8_wgmma_store's"][s] == "- / pass" for s in sizes)
    wrong = [r for k, r in rows.items() if not k.startswith(("fp8_wgmma_store", "(worst"))]
    assert len(wrong) == 11 and all(r[s].endswith("/ rejects") for r in wrong for s in sizes)
    for what in ("zeros", "sign", "rows reversed", "a row copied from the row above"):
        assert all(rows[what][s] == "rejects / rejects" for s in sizes), what
    assert [rows["x1.1"][s] for s in sizes] == ["rejects / rejects"] * 2 + ["passes / rejects"]
    for what in ("rounded to FP16", "the other accumulator", "one element 1% off"):
        assert all(rows[what][s] == "passes / rejects" for s in sizes), what
    log = helpers.results.load_log("reject-wrong-fp8-store", "lab/probes/reject_wrong_fp8.py")
    assert {r["other"] for r in log["rows"]} == {"fp8_promote_128"}            # "the other accumulator"
    assert f"{tol['4096^3'].value:.3g}" == "1.02" and tol["4096^3"].value > 1      # zeros pass the worst-case bound
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("by up to $u = 2^{-13}$ of the running sum, and the bound on all the cuts, $Ku / (1 - Ku)$, is 1 at "
               "$K = 2^{12}$ and infinite at $K = 2^{13}$", "At $K = 4096$ the tolerance, 1.02 of $\\sum |a||b|$, is "
               "already larger than C = 0's error", "the worst-case bound passes zeros there.",
               "and at $4096^3$ it is what rejects zeros"):
        assert s_ in src, s_
    assert "the cuts can add up to the whole sum" not in src


def test_claims_of_the_128_ctas_slide():
    """Appendix H, '128 CTAs instead of 132' (results/logs/fp8-ctas-probe, lab/probes/fp8_stages.py --ctas, nine
    alternating rounds at 4096^3): 512 tiles of 128 x 256 on 132 CTAs are 116 x 4 + 16 x 3, on 128 CTAs 128 x 4; every
    check passed; 128 CTAs ran x1.013 over one per SM (predicted x1.00, in the probe's doc before the run), faster in
    all nine rounds, and x1.009 over cuBLASLt's fast accumulation ("past it by 0.9%"), faster in eight of nine rounds;
    a group of the L2-aware order is F8_GROUP_M = 8 tile rows x 16 tile columns = 128 tiles."""
    import re

    from helpers.experiments import fp8 as X

    tiles = (4096 // 128) * (4096 // 256)
    assert tiles == 512 and divmod(tiles, 132) == (3, 116) and tiles == 4 * 128
    rows = {r["options"]: r for r in X.stage_rows(X.probe_log("fp8-ctas-probe"), base="fp8_wgmma_store")
            if r["kernel"] == "fp8_wgmma_store"}
    assert all(r["passed"] for r in rows.values())
    c128 = rows["ctas=128"]
    assert round(c128["vs_base"], 3) == 1.013 and round(c128["vs_fast"] - 1, 3) == 0.009
    raw = X.probe_log("fp8-ctas-probe")["stages"]["rows"]
    ms = {(r["kernel"], tuple(r.get("options", ()))): r["round_ms"] for r in raw if "round_ms" in r}
    mine, one, fast = ms["fp8_wgmma_store", ("ctas=128",)], ms["fp8_wgmma_store", ()], ms["cublaslt_fp8_fast", ()]
    assert len(mine) == 9 and all(a < b for a, b in zip(mine, one))
    assert sum(a < b for a, b in zip(mine, fast)) == 8
    src = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert re.search(r"^#define F8_GROUP_M 8\b", src, re.M) and 8 * (4096 // 256) == 128
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "**Predicted before it ran: x1.00 (within half a percent).**" in lesson and "past it by 0.9%" in lesson


def test_claims_of_the_128_ctas_both_kernels_slide():
    """Appendix H, '128 CTAs: both kernels, both sizes' (results/logs/fp8-ctas-lean-probe, nine alternating rounds):
    both kernels checked bit for bit on both grids; 128 CTAs faster than one per SM at both sizes ("about 1%": the
    round-by-round median ratio 1.005-1.02); after the first round at 8192^3 the SM clock stays within 1215-1515 MHz
    and the power within 666-701 W for every build, cuBLASLt's included; the registry now holds 128 CTAs for both."""
    import json

    from helpers import fp8_gemm as F
    from helpers.experiments import fp8 as X

    rows = X.ctas_rows()
    assert {(r["kernel"], r["n"]) for r in rows} == set(X.CTAS_PREDICTED) and all(r["passed"] for r in rows)
    assert all(1.005 <= r["x128"] <= 1.02 for r in rows)
    raw = json.loads((ROOT / "results" / "logs" / "fp8-ctas-lean-probe-nvidia-h200.json").read_text())
    big = [r for r in raw if r.get("n") == 8192]
    assert {r["kernel"] for r in big} >= {"cublaslt_fp8", "cublaslt_fp8_fast"}
    mhz = [x for r in big for x in r["sm_mhz"][1:]]
    watts = [x for r in big for x in r["power_w"][1:]]
    assert min(mhz) == 1215 and max(mhz) == 1515 and 666 <= min(watts) < 667 and 700 < max(watts) <= 701
    weak = {(r["n"], r["kernel"]): r for r in rows}[8192, "fp8_promote_2acc_lean"]
    assert weak["won"] == "5 of 9" and round(weak["one_tflops"]) == round(weak["tflops"])
    assert sorted(r["won"] for r in rows)[0] == "5 of 9"            # the weakest case of the four
    assert all(F.FP8_KERNELS[k].ctas == 128 for k in X.YARDSTICK)
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    flat = " ".join(lesson.replace("\n# ", " ").split())
    assert "between 1215 and 1515 MHz" in flat and "between 666 and 701 W" in flat
    assert "NVML's power reading (a 1-s average) stays between 666 and 701 W" in flat
    assert ("the promoting kernel's x1.009 (x0.994 to x1.020), where x1.005 was predicted, is unresolved: the spread also "
            "holds no change. At $8192^3$ `fp8_wgmma_store`'s x1.012 (x0.980 to x1.037) is unresolved too, and the "
            "promoting kernel's x1.010 (x0.968 to x1.032) is as predicted (x1.00), faster in only 5 of 9 rounds at a "
            "median 1320 MHz against 1425") in flat
    import statistics

    got = {}
    for n in (4096, 8192):
        for k in X.YARDSTICK:
            a, b = (next(r for r in X.probe_log("fp8-ctas-lean-probe")["stages"]["rows"] if "round_ms" in r and
                         r["n"] == n and r["kernel"] == k and tuple(r.get("options", ())) == o) for o in (("ctas=128",), ()))
            rr = round_ratio(a["round_ms"], b["round_ms"])
            got[k, n] = verdict(X.CTAS_PREDICTED[k, n], rr["low"], rr["high"])
            if (k, n) == ("fp8_promote_2acc_lean", 8192):
                assert (statistics.median(a["sm_mhz"]), statistics.median(b["sm_mhz"])) == (1320, 1425)
    assert got == {("fp8_wgmma_store", 4096): "as predicted",
                   ("fp8_promote_2acc_lean", 4096): "unresolved: the spread holds no gain too",
                   ("fp8_wgmma_store", 8192): "unresolved: the spread holds no gain too",
                   ("fp8_promote_2acc_lean", 8192): "as predicted"}
    lean = F.FP8_KERNELS["fp8_promote_2acc_lean"]
    assert 8 * (4096 // lean.bn) == 256 == 2 * 128 and "8 x 32 = 256 tiles, two rounds" in flat


def test_claims_of_the_record_on_128_ctas_slide():
    """Appendix H, 'The record on 128 CTAs: the goals' (experiments.fp8.speed_128, five alternating rounds) beside the
    probe (results/logs/fp8-ctas-lean-probe): the plain kernel x1.022 at 4096^3 (faster in most rounds) and x1.023 in
    the probe; at 8192^3 x1.043 with cuBLASLt at a lower clock, and x0.983 in the probe; the promoting kernel x0.988
    and x0.968, goals missed (ratios: medians of the round-by-round ratios); every check passed. Can fail: any other record, log or wording."""
    from helpers.experiments import fp8 as X

    data = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())["experiments"]["fp8"]
    t = {(r["n"], r["kernel"]): r for r in X.target_rows(data["speed_128"]["rows"])}
    store, lean = "fp8_wgmma_store", "fp8_promote_2acc_lean"
    assert all(r["passed"] for r in t.values())
    assert round(t[4096, store]["ratio"], 3) == 1.022 and t[4096, store]["met"]
    assert round(t[8192, store]["ratio"], 3) == 1.043 and t[8192, store]["met"] is None     # not judged: the clock
    mine, theirs = (int(x) for x in t[8192, store]["mhz"].split(" / "))
    assert theirs < 0.98 * mine and str(theirs) in t[8192, store]["why"]
    assert round(t[4096, lean]["ratio"], 3) == 0.988 and round(t[8192, lean]["ratio"], 3) == 0.968
    assert t[4096, lean]["met"] is False and t[8192, lean]["met"] is False
    assert t[4096, lean]["won"] == t[8192, lean]["won"] == "1 of 5"
    probe = {(r["n"], r["kernel"]): r for r in X.ctas_rows()}
    assert round(probe[4096, store]["vs_lt"], 3) == 1.023 and round(probe[8192, store]["vs_lt"], 3) == 0.983
    # the probe's ratios are shown: its table (the slide before) has the column, and its output the values
    nb = json.loads((ROOT / "notebooks" / "07_fp8.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and "cl = fp8x.ctas_rows()" in "".join(c["source"]))
    shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell["outputs"])
    assert "| 128 CTAs, x against |" in shown
    assert f"| {store} | " in shown and "| cublaslt_fp8_fast | 1.023 |" in shown and "| cublaslt_fp8_fast | 0.983 |" in shown
    lesson = _flat7()
    assert 'x1.023 round by round in the probe above, its column "128 CTAs, x against")' in lesson
    for s in ("x1.022 here, x1.023 round by round", "this run says x1.043", "said x0.983",
              "With promotion, **goal not met**: x0.988 at $4096^3$, x0.968 at $8192^3$, each faster in one round of five"):
        assert s in lesson, s


def test_claims_of_the_k_tile_stream_slide():
    """Appendix H, 'Tried: the next tile's first K-tile during the store' (results/logs/fp8-flow-probe, seven
    alternating rounds): the prediction in the kernel's comment (x1.02 / x1.01, written before the run), both builds
    bit-identical to the model at every shape, and the F8_FLOW=1 build x0.89 at 4096^3 and x0.86 at 8192^3; the switch
    stays 0 in the file."""
    import re

    from helpers.experiments import fp8 as X

    src = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert "x1.02 over fp8_promote_2acc_lean at 4096^3" in src and "x1.01 at 8192^3" in src
    assert re.search(r"^#define F8_FLOW 0\b", src, re.M)
    rows = X.stage_rows(X.probe_log("fp8-flow-probe"))
    assert all(r["passed"] for r in rows) and len(rows) == 4
    t = {(r["n"], r["options"]): r["tflops"] for r in rows}
    assert round(t[4096, "ctas=128 F8_FLOW=1"] / t[4096, "ctas=128"], 2) == 0.89
    assert round(t[8192, "ctas=128 F8_FLOW=1"] / t[8192, "ctas=128"], 2) == 0.86
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "**Predicted before it ran: x1.02 at $4096^3$, x1.01 at $8192^3$**" in lesson
    assert ("**Missed, the other way: x0.90 at $4096^3$ and x0.88 at $8192^3$** (there at a clock 9% lower), with the "
            "same C bit for bit.") in _flat7()
    flow = {r["n"]: r["vs_built"] for r in X.switch_rows("fp8-flow-probe") if r["options"] == "ctas=128 F8_FLOW=1"}
    assert (f"{flow[4096]:.2f}", f"{flow[8192]:.2f}") == ("0.90", "0.88")
    c0, c1 = X.sass_counts("sass-fp8-flow0"), X.sass_counts("sass-fp8-flow1")
    assert c1["instructions"] > 2 * c0["instructions"] and "more than twice the code" in lesson
    assert c1["waits (WARPGROUP.DEPBAR)"] == c0["waits (WARPGROUP.DEPBAR)"] == 3       # two <1> in the loop, one <0>
    assert c0["wgmma (QGMMA)"] == 8 and c1["wgmma (QGMMA)"] == 12                      # 4 per issue site: 2, and 3
    assert c1["global stores (STG)"] == 4 * c0["global stores (STG)"]                  # the store copied
    src1 = (ROOT / "results" / "logs" / "sass-fp8-flow1-nvidia-h200.txt").read_text()
    assert src1.count("WARPGROUP.DEPBAR.LE gsb0, 0x1") == 2 and "-DF8_FLOW=1" in src1.splitlines()[0]


def test_claims_of_the_stream_sampling_slide():
    """Appendix H, 'Where the stream's time goes' (results/logs/ncu-source-fp8-flow, Nsight Compute's sampling of
    both builds at 4096^3): the same QGMMA and FADD counts, 18% more warp instructions, IMAD more than doubled, BRA up
    by more than half, 'no instruction' stalls 6.8% of the samples against 1.1%."""
    from helpers.profile import load_sampling, sampling_counts

    built, flow = sampling_counts(load_sampling("fp8-flow"), {"fp8_lean": "as built", "fp8_lean_flow": "F8_FLOW=1"},
                                  ["QGMMA", "FADD", "IMAD", "BRA"], ["no_inst"])
    assert (built["build"], flow["build"]) == ("as built", "F8_FLOW=1")
    assert built["QGMMA"] == flow["QGMMA"] and built["FADD"] == flow["FADD"]
    assert round(100 * (flow["minstr"] / built["minstr"] - 1)) == 18
    assert flow["IMAD"] > 2 * built["IMAD"] and flow["BRA"] > 1.5 * built["BRA"]
    assert (f"{flow['no_inst']:.1%}", f"{built['no_inst']:.1%}") == ("6.8%", "1.1%")
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    for claim in ("The same `QGMMA` and `FADD` counts, but 18% more instructions", "`IMAD` more than doubles, `BRA`",
                  "rises by more\n# than half", "in 6.8% of the samples\n# against 1.1%"):
        assert claim in lesson, claim
    with pytest.raises(KeyError, match="MOV"):        # MOV is not among the as-built kernel's 12 most executed
        sampling_counts(load_sampling("fp8-flow"), {"fp8_lean": "as built"}, ["MOV"])


def test_claims_of_the_next_k_tile_slide():
    """Appendix H, 'Tried again: only the next tile's first K-tile' (results/logs/fp8-flow2-probe, seven alternating
    rounds): the prediction in the kernel's comment, both builds bit-identical to the model at every shape (eight
    shapes, six off the tile grid), F8_FLOW=2 x0.98 at 4096^3, slower in every round at the same clocks; at 8192^3 its
    clocks lower (not judged); the switch stays 0."""
    import re

    from helpers.experiments import fp8 as X

    src = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert re.search(r"^#define F8_FLOW 0\b", src, re.M)
    assert "Predicted (session 19, before any GPU ran\n// it): x1.02 at 4096^3, x1.01 at 8192^3" in src
    # its code left the file: a build asking for it stops at an #error naming the commit that has it
    assert re.search(r'^#if F8_FLOW == 2\n#error "F8_FLOW=2 left .* commit 3c26c11"\n#endif', src, re.M)
    assert "#elif F8_FLOW == 2" not in src
    log = X.probe_log("fp8-flow2-probe")["stages"]["rows"]
    shapes = {tuple(r["shape"]) for r in log if "check_passed" in r}
    assert all(r["check_passed"] for r in log if "check_passed" in r) and len(shapes) == 8
    assert all("bit-identical" in r["check"] for r in log if "check_passed" in r)
    rows = {(r["n"], r["options"]): r for r in X.switch_rows("fp8-flow2-probe")}
    four, eight = rows[4096, "ctas=128 F8_FLOW=2"], rows[8192, "ctas=128 F8_FLOW=2"]
    assert round(four["vs_built"], 2) == 0.98 and four["faster"] == "0 of 7"
    assert four["mhz"] == rows[4096, "ctas=128"]["mhz"]
    low, high = (int(x) for x in rows[8192, "ctas=128"]["mhz"].split("-"))
    assert int(eight["mhz"].split("-")[1]) < high and int(eight["mhz"].split("-")[0]) < low
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    for claim in ("**x1.02 at $4096^3$, x1.01 at $8192^3$**. Its run\n# (`lab/probes/fp8_stages.py --flow2`",
                  "**Missed again: x0.98 at $4096^3$**, slower in every round at the same clocks"):
        assert claim in lesson, claim


def test_claims_of_the_next_k_tile_sampling_slide():
    """Appendix H, 'What the sampling says of F8_FLOW=2' (results/logs/ncu-source-fp8-flow2): slightly fewer warp
    instructions, no more 'no instruction' stalls, the same share of global-result stalls (within half a point),
    'another warp issued' 9.0% against 11.8%."""
    from helpers.profile import load_sampling, sampling_counts

    built, flow2 = sampling_counts(load_sampling("fp8-flow2"), {"fp8_lean": "as built", "fp8_lean_flow2": "F8_FLOW=2"},
                                   ["QGMMA", "FADD"], ["no_inst", "long_sb", "not_selected"])
    assert flow2["minstr"] < built["minstr"] and (flow2["QGMMA"], flow2["FADD"]) == (built["QGMMA"], built["FADD"])
    assert flow2["no_inst"] <= built["no_inst"] and abs(flow2["long_sb"] - built["long_sb"]) < 0.005
    assert (f"{built['not_selected']:.1%}", f"{flow2['not_selected']:.1%}") == ("9.0%", "11.8%")
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    assert "(9.0% of the samples as built, 11.8% with the switch)" in lesson


def test_claims_of_the_lean_ring_slide():
    """Appendix H, 'The promoting kernel's ring on 128 CTAs' (results/logs/fp8-lean-stages-probe, five alternating
    rounds): the prediction written in the probe before its run; at 4096^3 x1.005 (5 stages) and x0.994 (7), medians
    of round ratios, each faster in some rounds and slower in others, both spreads holding the x1.00 judged (x0.995 to
    x1.014, x0.991 to x1.006); at 8192^3 the 6-stage build's clock fell lowest (1170 MHz); the registry keeps 6."""
    from helpers.experiments import fp8 as X
    from helpers.fp8_gemm import FP8_KERNELS

    probe = (ROOT / "tools" / "probes" / "fp8_stages.py").read_text()
    assert "Predicted (session 20, before its first run): 5 and 7 within 0.5% of 6 at both sizes" in probe
    rows = {(r["n"], r["stages"]): r for r in X.switch_rows("fp8-lean-stages-probe", (6, "ctas=128"))}
    assert all(r["passed"] for r in rows.values()) and len(rows) == 6
    five, seven = rows[4096, 5], rows[4096, 7]
    assert (round(five["vs_built"], 3), round(seven["vs_built"], 3)) == (1.005, 0.994)   # medians of round ratios
    spreads = [round_ratio(_rounds("fp8-lean-stages-probe", 4096, "fp8_promote_2acc_lean", ("ctas=128",), st),
                           _rounds("fp8-lean-stages-probe", 4096, "fp8_promote_2acc_lean", ("ctas=128",), 6))
               for st in (5, 7)]
    assert [(f"{r['low']:.3f}", f"{r['high']:.3f}") for r in spreads] == [("0.995", "1.014"), ("0.991", "1.006")]
    assert all(verdict(1.00, r["low"], r["high"]) == "as predicted" for r in spreads)
    for r in (five, seven):
        assert r["faster"] not in ("0 of 5", "5 of 5")
    lows = {st: int(rows[8192, st]["mhz"].split("-")[0]) for st in (5, 6, 7)}
    assert min(lows, key=lows.get) == 6 and lows[6] == 1170
    assert FP8_KERNELS["fp8_promote_2acc_lean"].stages == 6
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    for claim in ("**Predicted\n# before it ran: within 0.5% of 6 at both sizes**",
                  "x1.005 with 5 stages and x0.994 with 7"):
        assert claim in lesson, claim
    assert ("others: as predicted (the x1.00 written lies inside both spreads, x0.995 to x1.014 and x0.991 to x1.006), "
            "and neither beats 6. At $8192^3$ the power limit set each build's clock (the 6-stage build's fell lowest, "
            "to 1170 MHz): its rounds spread widely, and both builds are as predicted.") in _flat7()


def test_claims_of_the_uniform_descriptor_slides():
    """Appendix H, 'Kept: descriptors in uniform registers' and 'Why it paid' (results/logs/fp8-uniform-probe, seven
    alternating rounds; results/logs/ncu-source-fp8-uniform): the prediction in the kernel's comment, written before
    the run; every build bit-identical to the model; at 4096^3 x1.020 (fp8_wgmma_store) and x1.027
    (fp8_promote_2acc_lean), faster in all seven rounds at the same clocks; 20% and 6% fewer warp instructions, the
    same QGMMA; the promotion's FADD nearly half of what the promoting kernel executes; the two record kernels pass
    UNIFORM = true, every other kernel keeps the switch's 0."""
    import re

    from helpers.experiments import fp8 as X
    from helpers.profile import load_sampling

    src = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    assert "Predicted (session 20, before any GPU ran it): x1.01 at\n// 4096^3, x1.00 at 8192^3" in src
    assert re.search(r"^#define F8_UNIFORM 0\b", src, re.M)
    assert "const int wg = UNIFORM ? __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) : threadIdx.x / 128;" in src
    calls = re.findall(r"fp8_gemm<([^>]*)>\(", src)
    uniform = [c for c in calls if c.replace(" ", "").split(",")[7:8] == ["true"]]
    assert sorted(uniform) == sorted(["256, 0, false, false, false, F8_DESC_ADD, true, true",
                                      "128, 128, false, false, true, 1, false, true"])
    log = X.probe_log("fp8-uniform-probe")["stages"]["rows"]
    assert all(r["check_passed"] and "bit-identical" in r["check"] for r in log if "check_passed" in r)
    rows = {(r["n"], r["kernel"], r["options"]): r for r in X.switch_rows("fp8-uniform-probe")}
    store, lean = (rows[4096, k, "ctas=128 F8_UNIFORM=1"] for k in ("fp8_wgmma_store", "fp8_promote_2acc_lean"))
    assert (round(store["vs_built"], 3), round(lean["vs_built"], 3)) == (1.016, 1.027)   # medians of round ratios
    assert store["faster"] == lean["faster"] == "7 of 7"
    assert store["mhz"] == rows[4096, "fp8_wgmma_store", "ctas=128"]["mhz"] == lean["mhz"]
    s = load_sampling("fp8-uniform")["targets"]
    fewer = {k: 1 - s[f"{k}_uniform"]["warp_instructions"] / s[k]["warp_instructions"] for k in ("fp8_store", "fp8_lean")}
    assert (round(100 * fewer["fp8_store"]), round(100 * fewer["fp8_lean"])) == (20, 6)
    assert all(s[f"{k}_uniform"]["opcodes"]["QGMMA"] == s[k]["opcodes"]["QGMMA"] for k in ("fp8_store", "fp8_lean"))
    assert 0.4 < s["fp8_lean"]["opcodes"]["FADD"] / s["fp8_lean"]["warp_instructions"] < 0.5
    # '21 in the listing': the promoting kernel's SASS as the H200's nvcc built it before the change (session 19)
    sass = (ROOT / "results" / "logs" / "sass-fp8-flow0-nvidia-h200.txt").read_text()
    assert len(re.findall(r"[^A-Z.]R2UR[ .;]", sass)) == 21 and "(`R2UR`, 21 in the listing)" in \
        (ROOT / "notebooks" / "07_fp8.py").read_text()
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    lesson = _flat7()
    for claim in ("**Predicted before it ran: x1.01 at $4096^3$, x1.00 at $8192^3$** (a few instructions",
                  "**At $4096^3$ x1.016 and x1.027: as predicted for `fp8_wgmma_store`, better than predicted for the "
                  "promoting kernel** (its worst round x1.016), each faster in all seven rounds at the same "
                  "clocks, C the same bit for bit", "(at $8192^3$, where x1.00 was predicted, both as predicted, the "
                  "promoting kernel's rounds spreading from x0.96 to x1.05)", "20% fewer instructions in the plain kernel, 6% fewer",
                  "are nearly half of what it executes"):
        assert claim in lesson, claim


def test_claims_of_the_uniform_record_slide():
    """Appendix H, 'The record with uniform descriptors: the goals' (experiments.fp8.speed_uniform, five alternating
    rounds): the predictions in fp8x.UNIFORM_PREDICTED (committed before the run, f31f45b); at 4096^3 both goals met
    (x1.011 in five rounds of five; x1.001 in three of five); at 8192^3 the plain kernel not judged (cuBLASLt's clock
    lower), the promoting one missed at 0.992 at 1470 MHz against 1635; NVML's lagging 1-s average read about the cap
    for both (690 and 685 W), which would make it about 2% less work per joule (the energy probe measures it); both
    gains less than half the predicted lead (the predictions missed); the 128-CTA goals slide reads the same helper."""
    from helpers.experiments import fp8 as X

    data = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())["experiments"]["fp8"]
    assert X.UNIFORM_PREDICTED == {("fp8_wgmma_store", 4096): 1.04, ("fp8_wgmma_store", 8192): 1.04,
                                   ("fp8_promote_2acc_lean", 4096): 1.02, ("fp8_promote_2acc_lean", 8192): 0.97}
    g = {(r["kernel"], r["n"]): r for r in X.goal_rows(data["speed_uniform"]["rows"], X.UNIFORM_PREDICTED)}
    st4, le4 = g["fp8_wgmma_store", 4096], g["fp8_promote_2acc_lean", 4096]
    assert (st4["met"], round(st4["ratio"], 3), st4["won"]) == ("yes", 1.011, "5 of 5")
    assert (le4["met"], round(le4["ratio"], 3), le4["won"]) == ("yes", 1.001, "3 of 5")
    st8, le8 = g["fp8_wgmma_store", 8192], g["fp8_promote_2acc_lean", 8192]
    assert (st8["met"], round(st8["ratio"], 3)) == ("not judged", 1.038)
    assert (le8["met"], round(le8["ratio"], 3), le8["mhz"]) == ("no", 0.992, "1470 / 1635")
    rows = {r["kernel"]: r for r in data["speed_uniform"]["rows"] if r["n"] == 8192}
    lean, lt = rows["fp8_promote_2acc_lean"], rows["cublaslt_fp8"]
    assert (round(lean["power_w"]), round(lt["power_w"])) == (690, 685)
    assert round(1 - 1470 / 1635, 1) == 0.1 and round(1 - le8["ratio"], 2) == 0.01
    per_joule = (lean["tflops"] / lean["power_w"]) / (lt["tflops"] / lt["power_w"])
    assert round(1 - per_joule, 2) == 0.02
    for k in ("fp8_wgmma_store", "fp8_promote_2acc_lean"):                  # "less than half the predicted lead"
        assert g[k, 4096]["ratio"] - 1 < (X.UNIFORM_PREDICTED[k, 4096] - 1) / 2
        rr = next(r for r in X.round_goal_rows(data["speed_uniform"]["rows"]) if (r["kernel"], r["n"]) == (k, 4096))
        assert verdict(X.UNIFORM_PREDICTED[k, 4096], rr["low"], rr["high"]) == "missed: worse than predicted"
    lesson = (ROOT / "notebooks" / "07_fp8.py").read_text()
    # 'the same build ran at 1221 to 1232 TFLOP/s in this appendix's four probes' (session 20's logs, 4096^3, as built)
    as_built = [r["tflops"] for name in ("fp8-flow2-probe", "fp8-lean-stages-probe", "fp8-uniform-probe", "fp8-flow-probe")
                for r in X.stage_rows(X.probe_log(name)) if r["n"] == 4096 and r["kernel"] == "fp8_promote_2acc_lean"
                and (r["stages"], r["options"]) == (6, "ctas=128")]
    assert len(as_built) == 4 and (round(min(as_built)), round(max(as_built))) == (1221, 1232)
    assert max(as_built) / min(as_built) - 1 > le4["ratio"] - 1
    assert round(100 * (le4["ratio"] - 1), 1) == 0.1 and "a spread wider than its 0.1%" in _flat7()
    lesson = _flat7()
    for claim in ("without promotion x1.011 (faster in every round; predicted x1.04)",
                  "with promotion x1.001 of cuBLASLt's default accumulation (faster in three rounds of five; "
                  "predicted x1.02)", "ran at 1221 to 1232 TFLOP/s in this appendix's four probes",
                  "plain kernel's x1.038 is not judged as a goal (cuBLASLt's clock was lower) but is as predicted (x1.04)",
                  "ran at 1470 MHz against cuBLASLt's 1635: goal not met, x0.992, its prediction (x0.97) unresolved (x0.82 "
                  "to x1.005)",
                  "NVML's 1-s average read about the cap's power for both (690 and 685 W), which would make it "
                  "about 2% less per joule; but that reading lags timings this short",
                  "less than half the predicted lead: the goals met, the predictions missed",
                  'fp8x.goal_rows(data["speed_128"]["rows"])'):
        assert claim in lesson, claim


def test_claims_of_the_speed_slide_and_the_trap(fp8_data):
    """'What accuracy costs: speed' (session 26's run, F8_PERIOD=2 the default): fewer promotions, more speed, in the
    order predicted before the run, at both sizes, each kernel checked; 'every 512 comes within 5% of the same tile
    without promotion at 4096^3'. 'A common trap': the first record's build (F8_PERIOD=0) is the one ptxas injects a
    wait into (fp8_promote_256 and _512, C7517, in the committed report); the predictions and outcomes quoted
    (x1.035 / x1.025 predicted, x1.048 / x1.063 measured, every round faster) are PERIOD2_PREDICTED and the probe's
    rows; 'removing only the injected wait (F8_PERIOD=1) ran no faster' at both sizes in both runs (slower in every
    round at 4096^3; at 8192^3 at most x1.001, in 4 of 7 rounds); every check passed."""
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    rows = fp8_data["speed_period"]["rows"]
    assert all(r.get("check_passed", True) for r in rows)
    for n in (4096, 8192):
        t = {r["kernel"]: r["tflops"] for r in rows if r["n"] == n}
        order = [t[k] for k in fp8x.SPEED_PERIOD_PREDICTED]
        assert order == sorted(order), n
    t = {r["kernel"]: r["tflops"] for r in rows if r["n"] == 4096}
    assert 0.95 <= t["fp8_promote_512"] / t["fp8_wgmma_n128"] < 1
    assert "at $4096^3$ every 512 comes within 5% of the same tile without promotion (`fp8_wgmma_n128`)" in src
    rep = (ROOT / "results" / "logs" / "fp8-period0-ptxas.txt").read_text()
    assert rep.startswith("# nvcc") and "-DF8_PERIOD=0" in rep.splitlines()[0]
    assert sorted(re.findall(r"\(C7517\).*function '(\w+)'", rep)) == ["fp8_promote_256", "fp8_promote_512"]
    p = {(r["n"], r["kernel"], r["build"]): r for r in fp8x.period_rows()}
    assert all(r["passed"] for r in p.values())
    for k, meas in (("fp8_promote_256", "1.048"), ("fp8_promote_512", "1.063")):
        r = p[4096, k, 2]
        assert f"{r['vs_first']:.3f}" == meas and r["faster"] == "7 of 7"
    assert (fp8x.PERIOD2_PREDICTED["fp8_promote_256", 4096], fp8x.PERIOD2_PREDICTED["fp8_promote_512", 4096]) == (1.035, 1.025)
    assert ("**Predicted x1.035 and x1.025 at $4096^3$ (256, 512); measured x1.048 and x1.063**, every round faster, "
            "same sums bit for bit.") in src
    first = {(r["n"], r["kernel"], r["build"]): r for r in fp8x.period_rows("fp8-period-probe")}
    for rr in (p, first):
        assert all(r["vs_first"] < 1.002 for (n, k, b), r in rr.items() if b == 1)
        assert all(r["vs_first"] < 1 and r["faster"] == "0 of 7" for (n, k, b), r in rr.items() if b == 1 and n == 4096)
    assert "### A common trap: the compiler's clue" in src and "pointed at a wait it added:" in src
    assert ("Removing only that wait (`F8_PERIOD=1`, below) ran no faster: the clue pointed the wrong way. The cost was "
            "each stage holding its shared memory a K-tile too long. Now (`F8_PERIOD=2`) each stage still waits for "
            "all but lets go at once; only a period's last adds:") in src
    assert "said why" not in src and "can cost more" not in src
    # "still waits for all": the F8_PERIOD=2 loop the slide prints waits for every group, then lets the stage go
    k8 = helpers.display.kernel_source("fp8_sm90a.cu")
    i = k8.index("            if constexpr (F8_PERIOD == 2")
    loop = " ".join(k8[i:k8.index("            } else\n", i)].split())
    assert "issue_stage(d, s, phase, cw, kt % PSTAGES == 0); // stage s into d, from zero at a period's start " \
        "wgmma_wait<0>(); release(s);" in loop and "wgmma_wait<1>" not in loop
    fn = helpers.display.device_functions("fp8_sm90a.cu")["fp8_gemm"]                 # issue_stage commits, waits not
    body = " ".join(fn[fn.index("auto issue_stage"):fn.index("};", fn.index("auto issue_stage"))].split())
    assert body.endswith("wgmma_commit();") and "wgmma_wait" not in body and "mbar_wait(&full[s], phase);" in body
    # "holding its shared memory a K-tile too long": the first build's stages that end no period (its loop is the
    # promotion loop's slide) keep a group in flight and let only the stage before go
    assert "if (!promote) { wgmma_wait<1>(); if (prev >= 0) release(prev); prev = s; }" in " ".join(
        fp8x.promotion_loop().split())
    # the Summary's lesson: the wait ptxas named was not the cost (removing it: no faster, at both sizes); releasing
    # each stage at once was (faster in every round at 4096^3)
    assert all(r["vs_first"] > 1 and r["faster"] == "7 of 7" for (n, k, b), r in p.items() if b == 2 and n == 4096)
    assert ("ptxas's C7517 was a clue, not the cause: removing its wait ran no faster, releasing each shared-memory "
            "stage at once faster.") in src


def test_claims_of_the_counted_waits():
    """Appendix F, 'What the injected wait changed, counted': the first build (F8_PERIOD=0) runs 1.5x
    fp8_promote_128's waits for all groups and its warps wait most at both of the ring's barriers; the default build
    runs as many waits as fp8_promote_128 and waits least at both. The prediction was written before the run."""
    rows = {r["build"]: r for r in fp8x.period_waits()}
    a, first, now = rows["fp8_promote_128"], rows["fp8_promote_256, F8_PERIOD=0"], rows["fp8_promote_256, F8_PERIOD=2"]
    assert first["waits_all"] == 1.5 * a["waits_all"] and now["waits"] == a["waits"] == now["waits_all"]
    for k in ("wait_full", "wait_empty"):
        assert first[k] > max(a[k], now[k]) and now[k] < a[k]
    assert "producer" in fp8x.WAITS_PREDICTED and "empty" in fp8x.WAITS_PREDICTED
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    assert ("The first build runs half again as many waits for all groups as `fp8_promote_128` (the injected one at "
            "every stage and its own at every promotion), and its warps wait most on both sides of the ring") in src


def test_claims_of_the_goals_in_nine_rounds(fp8_data):
    """'The goals in nine rounds, judged as lesson 6 judges': round_goal_rows is helpers.timing.round_ratio on the
    stored rounds (the rule lesson 6's head_to_head uses); three of four met with the ratios quoted; the promoting
    kernel at 8192^3 missed, x0.963, slower in every round; NVML's lagging average read both at the power limit
    (within 1% of the same watts), cuBLASLt's median clock 11% higher, ours more TFLOP/s per MHz in these cold-L2 rounds
    and fewer per (NVML) watt. The table is shown (wrapped in display: a print follows it)."""
    import statistics

    from helpers.timing import round_ratio

    g = fp8_data["speed_goals"]["rows"]
    rows = {(r["n"], r["kernel"]): r for r in fp8x.round_goal_rows(g, fp8x.GOALS_PREDICTED)}
    by = {(r["n"], r["kernel"]): r for r in g}
    for (n, k), r in rows.items():
        rr = round_ratio(by[n, k]["round_ms"], by[n, fp8x.YARDSTICK[k]]["round_ms"])
        assert r["ratio"] == rr["ratio"] and r["passed"]
    got = {key: (f"{r['ratio']:.3f}", r["met"]) for key, r in rows.items()}
    assert got == {(4096, "fp8_wgmma_store"): ("1.013", "yes"), (8192, "fp8_wgmma_store"): ("1.035", "yes"),
                   (4096, "fp8_promote_2acc_lean"): ("1.009", "yes"), (8192, "fp8_promote_2acc_lean"): ("0.963", "no")}
    assert rows[8192, "fp8_promote_2acc_lean"]["won"] == "0 of 9"
    a, y = by[8192, "fp8_promote_2acc_lean"], by[8192, "cublaslt_fp8"]
    assert abs(a["power_w"] / y["power_w"] - 1) < 0.01 and "sw power cap" in a["throttle"] + y["throttle"]
    ma, my = statistics.median(a["round_mhz"]), statistics.median(y["round_mhz"])
    assert round(100 * (my / ma - 1)) == 11
    assert a["tflops"] / ma > y["tflops"] / my and a["tflops"] / a["power_w"] < y["tflops"] / y["power_w"]
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("**Three of the four goals met**: without promotion x1.013 and x1.035, with promotion x1.009 at $4096^3$.",
               "**Goal not met with promotion at $8192^3$: x0.963**, slower in every round. The predictions: at $4096^3$ "
               "unresolved without promotion (x0.979 to x1.030 holds x1.00 as well as the x1.01 predicted), as "
               "predicted with it; at $8192^3$ better than predicted without promotion (x1.014 to x1.061 for x1.00) and as "
               "predicted with it.",
               "cuBLASLt's kernel kept a clock 11% higher (median rounds): in these cold-L2 rounds per cycle ours does "
               "more.", "NVML's lagging 1-s average read the power limit's watts for both (printed above), which would "
               "make ours do less per joule. The next slide measures both back to back."):
        assert s_ in src, s_
    assert "What is left at $8192^3$ is energy, not the schedule." not in src


def test_energy_rows_read_the_rounds():
    """energy_rows: medians of the probe's rounds; vs_base is helpers.timing.round_ratio of the joules (the same
    round), 'more' the rounds above the base; per_ghz TFLOP/s per GHz; a made-up run checks the arithmetic."""
    rows = [{"kernel": "a", "n": 8, "check_passed": True}]
    for r, (ja, jb) in enumerate(((1.0, 0.9), (1.0, 1.2), (2.0, 1.9))):
        rows += [{"kernel": "a", "n": 8, "round": r, "joules": ja, "tflops": 100.0, "sm_mhz": 1000, "power_w": 700,
                  "tflop_per_j": 1.0},
                 {"kernel": "b", "n": 8, "round": r, "joules": jb, "tflops": 90.0 + r, "sm_mhz": 900 + r, "power_w": 690,
                  "tflop_per_j": 1.0}]
    got = {r["kernel"]: r for r in fp8x.energy_rows(rows, base="a")}
    assert got["b"]["vs_base"] == pytest.approx(0.95) and got["b"]["more"] == "1 of 3"
    assert got["a"]["vs_base"] == 1.0 and got["a"]["passed"] is True and got["b"]["passed"] is None
    assert (got["b"]["joules"], got["b"]["j_low"], got["b"]["j_high"]) == (1.2, 0.9, 1.9)
    assert got["b"]["per_ghz"] == pytest.approx(91 / 0.901) and got["a"]["per_ghz"] == 100.0


def test_claims_of_per_joule_measured():
    """'Per joule, measured' (session 27, results/logs/fp8-energy): the prediction as written before the run; the
    kernels checked; cuBLASLt's default x0.954 of our joules at 8192^3, less in every round, x1.013 at 4096^3; every
    kernel between 678 and 713 W (medians), about the 700 W limit in the log's header; per cycle 0.99 of cuBLASLt's at 8192^3, the
    clock 2% lower. The cold-L2 runs' view (cuBLASLt's clock 11% higher in both: speed_uniform and the nine rounds'
    median rounds; ours more per cycle) did not survive, and the slide says so."""
    assert fp8x.ENERGY_PREDICTED == {8192: 0.97, 4096: 1.00}
    log = fp8x.energy_log("fp8-energy")
    assert all(r["check_passed"] for r in log if "check_passed" in r)
    e = {(r["n"], r["kernel"]): r for r in fp8x.energy_rows(log, base="fp8_promote_2acc_lean")}
    d8, d4, ours = e[8192, "cublaslt_fp8"], e[4096, "cublaslt_fp8"], e[8192, "fp8_promote_2acc_lean"]
    assert f"{d8['vs_base']:.3f}" == "0.954" and d8["more"] == "0 of 5" and f"{d4['vs_base']:.3f}" == "1.013"
    assert abs(d8["vs_base"] - fp8x.ENERGY_PREDICTED[8192]) > 0 and d8["vs_base"] < fp8x.ENERGY_PREDICTED[8192]
    assert abs(d4["vs_base"] - 1) < 0.02
    watts = [r["power_w"] for r in log if "round" in r]
    assert round(min(e_["power_w"] for e_ in e.values())) == 678 and round(max(e_["power_w"] for e_ in e.values())) == 713
    assert 0.94 < min(watts) / 700 and max(watts) / 700 < 1.05     # single rounds: 658 to 729 W
    head = (ROOT / "results" / "logs" / "fp8-energy-nvidia-h200.log").read_text().splitlines()[0]
    assert "power limit 700.00 W" in head
    assert f"{ours['per_ghz'] / d8['per_ghz']:.2f}" == "0.99" and round(100 * (1 - ours["sm_mhz"] / d8["sm_mhz"])) == 2
    import statistics

    data = helpers.results.load_latest().meta["experiments"]["fp8"]
    u = {r["kernel"]: r for r in data["speed_uniform"]["rows"] if r["n"] == 8192}
    g = {r["kernel"]: r for r in data["speed_goals"]["rows"] if r["n"] == 8192}
    ahead = [u["cublaslt_fp8"]["sm_mhz"] / u["fp8_promote_2acc_lean"]["sm_mhz"],
             statistics.median(g["cublaslt_fp8"]["round_mhz"]) / statistics.median(g["fp8_promote_2acc_lean"]["round_mhz"])]
    assert [round(100 * (a - 1)) for a in ahead] == [11, 11]
    cold = fp8x.target_rows(data["speed_uniform"]["rows"])
    lean = next(r for r in cold if r["n"] == 8192 and r["kernel"] == "fp8_promote_2acc_lean")
    assert lean["ratio"] > 1470 / 1635                     # cold L2: ours more per cycle; back to back: the same
    assert abs(ours["per_ghz"] / d8["per_ghz"] - 1) < 0.01
    src = _flat7()
    assert ("What the cold-L2 rounds of the two slides before suggested did not survive this steady measurement: there "
            "cuBLASLt's clock ran 11% higher in both runs and ours seemed to do more per cycle; here the clocks are 2% "
            "apart and the work per cycle the same.") in src
    assert ("The slide above infers \"per joule less\" from NVML's lagging watts and the time.") in src
    for s_ in ("**As predicted at $8192^3$**: cuBLASLt's default took x0.954 our energy per GEMM (x0.898 to x0.972 "
               "round by round), less in every round. At $4096^3$ x1.013, more in every round (x1.004 to x1.046): "
               "**missed, more than the x1.00 predicted** (the 2% written beside it was a margin, not the value "
               "judged).", "every kernel drew 678 to 713 W (medians of its rounds) at both sizes, about the power limit (700 W,",
               "(0.99 of its TFLOP/s per GHz), at a clock 2% lower"):
        assert s_ in src, s_


def test_claims_of_where_the_joules_go():
    """'Where the joules go' (results/logs/fp8-energy-split, 8192^3): the predictions as written; by the course's rule
    (helpers.timing.verdict on the rounds' spread) the overlapped promotion x1.04 (1.06) as predicted, promotion x1.16
    (predicted 1.23) less than predicted though the predicted way, the 128 x 128 tile x0.99 (1.06) the other way; n128 4% slower than fp8_wgmma at less power; fp8_promote_128 the highest clock of the
    course's four and the least TFLOP/s per GHz; ours and cuBLASLt's default within 1% per cycle, ours at a clock 3%
    lower."""
    assert fp8x.SPLIT_PREDICTED == {"fp8_wgmma_n128": 1.06, "fp8_promote_128": 1.23, "fp8_promote_2acc_lean": 1.06}
    log = fp8x.energy_log("fp8-energy-split")
    assert all(r["check_passed"] for r in log if "check_passed" in r)
    e = {r["kernel"]: r for r in fp8x.energy_rows(log, base="fp8_wgmma")}
    assert {k: f"{e[k]['vs_base']:.2f}" for k in fp8x.SPLIT_PREDICTED} == {
        "fp8_wgmma_n128": "0.99", "fp8_promote_128": "1.16", "fp8_promote_2acc_lean": "1.04"}
    judged = {k: verdict(p, e[k]["low"], e[k]["high"], above="more", below="less")
              for k, p in fp8x.SPLIT_PREDICTED.items()}
    assert judged == {"fp8_wgmma_n128": "missed: less than predicted", "fp8_promote_128": "missed: less than predicted",
                      "fp8_promote_2acc_lean": "as predicted"}
    assert e["fp8_wgmma_n128"]["vs_base"] < 1 < e["fp8_promote_128"]["vs_base"]       # the other way; the predicted way
    lo_hi = [(f"{e[k]['low']:.2f}", f"{e[k]['high']:.2f}") for k in ("fp8_promote_2acc_lean", "fp8_promote_128")]
    assert lo_hi == [("1.01", "1.09"), ("1.16", "1.22")]
    n128, w = e["fp8_wgmma_n128"], e["fp8_wgmma"]
    assert round(100 * (1 - n128["tflops"] / w["tflops"])) == 4 and n128["power_w"] < w["power_w"]
    ours4 = ("fp8_wgmma", "fp8_wgmma_n128", "fp8_promote_128", "fp8_promote_2acc_lean")
    assert max(ours4, key=lambda k: e[k]["sm_mhz"]) == "fp8_promote_128"
    assert min(e, key=lambda k: e[k]["per_ghz"]) == "fp8_promote_128"
    lean, lt = e["fp8_promote_2acc_lean"], e["cublaslt_fp8"]
    assert abs(lean["per_ghz"] / lt["per_ghz"] - 1) < 0.01 and round(100 * (1 - lean["sm_mhz"] / lt["sm_mhz"])) == 3
    src = _flat7()
    for s_ in ("**One of three as predicted**: the overlapped promotion cost x1.04 (x1.01 to x1.09 round by round; "
               "predicted x1.06).", "Promotion at every K-tile cost less than predicted, x1.16 (its rounds x1.16 to "
               "x1.22; predicted x1.23), though the predicted way.",
               "The 128 x 128 tile missed, less than predicted: x0.99 (x0.97 to x1.04), no dearer than 128 x 256, where "
               "x1.06 was predicted; it was 4% slower and drew less",
               "`fp8_promote_128` held the highest clock of the four and did the least per cycle",
               "(TFLOP/s per GHz within 1%), ours at a clock 3% lower."):
        assert s_ in src, s_


def test_claims_of_waits_that_sleep():
    """'Tried: a time limit for the waits' (results/logs/fp8-wait-probe): the prediction as written before the run; both
    builds bit-identical everywhere; MBAR_WAIT=1 x0.989 at 4096^3 and x0.963 at 8192^3, faster in 1 and 0 of 5 rounds,
    its clock at 8192^3 no higher; the kernel file keeps 0. The premise as the primitives have it: MBAR_WAIT=0 already
    waits with mbarrier.try_wait (which suspends the thread until the phase completes or a system time limit), and
    MBAR_WAIT=1 only adds a suspend-time hint of 10 ms; the slide no longer says the waits as built poll."""
    assert fp8x.WAIT_PREDICTED == {4096: 1.00, 8192: 1.01}
    rows = {(r["n"], r["build"]): r for r in fp8x.wait_rows()}
    assert all(r["passed"] for r in rows.values())
    got = {n: (f"{rows[n, 'MBAR_WAIT=1']['vs_0']:.3f}", rows[n, "MBAR_WAIT=1"]["faster"]) for n in (4096, 8192)}
    assert got == {4096: ("0.989", "1 of 5"), 8192: ("0.963", "0 of 5")}
    assert all(rows[n, "MBAR_WAIT=1"]["vs_0"] < fp8x.WAIT_PREDICTED[n] for n in (4096, 8192))
    assert (rows[8192, "MBAR_WAIT=1"]["mhz"], rows[8192, "MBAR_WAIT=0"]["mhz"]) == ("1290-1365", "1305-1515")
    prim = (ROOT / "kernels" / "hopper_primitives.cuh").read_text()
    assert re.search(r"#ifndef MBAR_WAIT\s*\n#define MBAR_WAIT 0", prim)
    body = prim[prim.index("__device__ __forceinline__ bool mbar_try"):prim.index("__device__ __forceinline__ u64 globaltimer_ns")]
    one, rest = body.split("} else if constexpr (HOW == 2)")
    assert "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;" in one and '"r"(10000000u)' in one  # 10 ms
    assert rest.split("} else {")[1].count("mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;") == 1  # HOW == 0
    judged = [_judged(fp8x.WAIT_PREDICTED[n], _rounds("fp8-wait-probe", n, "fp8_promote_2acc_lean", ("ctas=128", "MBAR_WAIT=1")),
                      _rounds("fp8-wait-probe", n, "fp8_promote_2acc_lean", ("ctas=128", "MBAR_WAIT=0"))) for n in (4096, 8192)]
    assert judged == ["as predicted", "missed: worse than predicted"] and rows[4096, "MBAR_WAIT=1"]["vs_0"] < 1
    import statistics

    w8 = [statistics.median(next(r for r in fp8x.probe_log("fp8-wait-probe")["stages"]["rows"] if "round_ms" in r and
                                 r["n"] == 8192 and tuple(r["options"]) == ("ctas=128", o))["sm_mhz"])
          for o in ("-DMBAR_WAIT=1", "-DMBAR_WAIT=0")]
    assert w8 == [1350, 1455]                                         # "at a lower clock (median 1350 MHz against 1455)"
    src = _flat7()
    for s_ in ("### Tried: a time limit for the waits", "Our waits do not spin: as built (`MBAR_WAIT=0`) each is "
               "`mbarrier.try_wait`, which suspends the thread until the phase completes or a time limit the system "
               "chooses runs out", "only sets that limit, to 10 ms (a suspend-time hint)",
               'a time limit for the waits ("Tried: a time limit for the waits")'):
        assert s_ in src, s_
    assert "waits that sleep" not in src and "poll an mbarrier" not in src and "the thread sleeps" not in src
    for s_ in ("**No gain**: x0.989 at $4096^3$ (faster in 1 of 5 rounds; as predicted, its rounds' spread holds x1.00) "
               "and x0.963 at $8192^3$ (0 of 5; missed, slower than the x1.01 predicted) at a lower clock (median 1350 MHz "
               "against 1455).",):
        assert s_ in src, s_


def test_claims_of_the_wide_tile_slide(fp8_data):
    """'Tried: cuBLASLt's width, 128 x 144' (results/logs/fp8-wide-probe and fp8-goals-wide, WIDE_TRIED): cuBLASLt's
    default kernel at 8192^3 is 144 wide in the record's table; the prediction as written; both runs checked bit for
    bit; x1.012 / x0.967 over the lean kernel at 8192^3, x0.911 / x0.928 at 4096^3; at 8192^3 8-9% more TFLOP/s per GHz
    at a clock 8-10% lower; the lean kernel's goal ratios in the nine rounds, and session 26's 0.963 beside them."""
    rows = {(r["run"][0], r["n"], r["kernel"]): r for r in fp8x.wide_rows()}
    w, lean = fp8x.WIDE_TRIED["kernel"], fp8x.WIDE_TRIED["over"]
    assert all(r["passed"] for r in rows.values())
    assert {(run, n): f"{rows[run, n, w]['vs_lean']:.3f}" for run in "59" for n in (4096, 8192)} == {
        ("5", 4096): "0.911", ("5", 8192): "1.012", ("9", 4096): "0.928", ("9", 8192): "0.967"}
    per = sorted(round(100 * (rows[run, 8192, w]["per_ghz"] / rows[run, 8192, lean]["per_ghz"] - 1)) for run in "59")
    clock = sorted(round(100 * (1 - rows[run, 8192, w]["mhz"] / rows[run, 8192, lean]["mhz"])) for run in "59")
    assert per == [8, 9] and clock == [8, 10]
    assert (f"{rows['9', 4096, lean]['vs_default']:.3f}", f"{rows['9', 8192, lean]['vs_default']:.3f}") == ("1.017", "0.930")
    assert fp8x.WIDE_GOALS_PREDICTED[8192] == 0.975 and f"{rows['9', 8192, w]['vs_default']:.3f}" == "0.905"
    # the course's rule on each run's rounds: unresolved at 8192^3 in both runs, a smaller loss than predicted at 4096^3
    # in both (missed, better), and against cuBLASLt's default at 8192^3 missed, worse
    from helpers.results import load_log

    nine = {(r["n"], r["kernel"]): r["round_ms"] for r in load_log(fp8x.WIDE_TRIED["goals"], "-")["speed"] if "round_ms" in r}
    for n, said in ((8192, "unresolved: the spread holds no gain too"), (4096, "missed: better than predicted")):
        assert _judged(fp8x.FP8_WIDE_PREDICTED[n], _rounds(fp8x.WIDE_TRIED["log"], n, w),
                       _rounds(fp8x.WIDE_TRIED["log"], n, lean, ("ctas=128",))) == said
        assert _judged(fp8x.FP8_WIDE_PREDICTED[n], nine[n, w], nine[n, lean]) == said
    assert _judged(fp8x.WIDE_GOALS_PREDICTED[8192], nine[8192, w], nine[8192, "cublaslt_fp8"]) == \
        "missed: worse than predicted"
    import statistics

    mhz = {r["kernel"]: statistics.median(m for m in r["round_mhz"] if m)
           for r in load_log(fp8x.WIDE_TRIED["goals"], "-")["speed"] if "round_ms" in r and r["n"] == 8192}
    assert (mhz[w], mhz["cublaslt_fp8"]) == (1290, 1620)                           # "at 1290 MHz against 1620"
    g4 = round_ratio(nine[4096, w], nine[4096, "cublaslt_fp8"])
    assert f"{g4['ratio']:.3f}" == "0.944" and verdict(fp8x.WIDE_GOALS_PREDICTED[4096], g4["low"], g4["high"]) == \
        "missed: better than predicted"
    assert all(abs(rows[run, 8192, w]["power_w"] / rows[run, 8192, lean]["power_w"] - 1) < 0.01 for run in "59")
    assert "fewer energy" not in _flat7() and "the wider tile costs\nmore energy" not in _flat7()
    g = {(r["n"], r["kernel"]): r for r in fp8x.round_goal_rows(fp8_data["speed_goals"]["rows"])}
    assert f"{g[8192, lean]['ratio']:.3f}" == "0.963"
    calls = fp8_data["cublaslt_kernels"]["calls"]
    names = [k["name"] for c in calls if c["shape"] == [8192] * 3 and c["c"] == "fp8default" for k in c["kernels"]]
    assert names and all("_144x128_" in k for k in names)
    src = _flat7()
    for s_ in ("`fp8_promote_2acc_144` was the lean kernel with that tile, on one CTA per SM",
               "Predicted before it ran (`fp8x.FP8_WIDE_PREDICTED`): x1.02 over the lean kernel at $8192^3$, x0.89 at $4096^3$",
               "**No gain where it was to gain.**", "but x1.012 over the lean kernel in five rounds and x0.967 in nine at "
               "$8192^3$, each run's rounds spread across x1.00 (unresolved), at clocks 8-10% lower; x0.911 and x0.928 at "
               "$4096^3$, a smaller loss than the "
               "x0.89 predicted (missed, on the better side).",
               "it did 8-9% more per cycle than the lean kernel, at a clock 8-10% lower.",
               "NVML's lagging 1-s average read the two within 1% of each other, so the wider tile likely costs more "
               "energy per cycle, which at the power limit is what binds; no energy probe ran it.",
               "Against cuBLASLt's default at $8192^3$, predicted x0.975 (`fp8x.WIDE_GOALS_PREDICTED`), it ran x0.905, at "
               "1290 MHz against cuBLASLt's 1620: missed, worse than predicted; at $4096^3$ x0.944 where x0.92 was "
               "predicted: missed, better than predicted.",
               "commit 3a670f9). The nine rounds also judged the goals again: the lean kernel x1.017 of cuBLASLt's default "
               "at $4096^3$ and x0.930 at $8192^3$, where the earlier nine rounds gave x0.963."):
        assert s_ in src, s_


def test_passed_by_needs_every_check_of_a_key():
    """passed_by (stage_rows, wait_rows, wide_rows): a key passes only if every one of its checks did; a yardstick's
    None is left out; the median power of a run kept per round, or as one reading."""
    rows = [{"k": "a", "check_passed": True}, {"k": "a", "check_passed": False}, {"k": "b", "check_passed": True},
            {"k": "c", "check_passed": None}, {"k": "d"}]
    assert fp8x.passed_by(rows, lambda r: r["k"]) == {"a": False, "b": True}
    assert (fp8x._median_of([3.0, None, 1.0, 2.0]), fp8x._median_of(5.0), fp8x._median_of([None])) == (2.0, 5.0, None)
    assert all(r["power_w"] for r in fp8x.wait_rows()) and all(r["power_w"] for r in fp8x.wide_rows())


def test_claims_of_counted_beside_cublaslt():
    """'Counted beside cuBLASLt at 8192^3' (results/logs/ncu-fp8-lt-8192): the prediction as committed before the run
    (more instructions and L2 read sectors than cuBLASLt's default) held both; the slide's ratios, pipe shares and
    kernel names come from the log; 128 x 128 tiles ask L2 for more bytes per product than 144 x 128 even without a
    cluster's multicast; and the verdicts can fail (the same rows with the counts swapped miss)."""
    assert fp8x.NCU_LT["predicted"] == {"fp8_promote_2acc_lean": {"instructions": "more", "l2_read_sectors": "more"}}
    rows = fp8x.ncu_pair_rows()
    assert [r["kernel"] for r in rows] == ["fp8_promote_2acc_lean", "cublaslt_fp8_default", "fp8_wgmma_store",
                                           "cublaslt_fp8_fast"]
    assert fp8x.ncu_pair_verdicts(rows) == {"fp8_promote_2acc_lean": {"instructions": "as predicted",
                                                                      "l2_read_sectors": "as predicted"}}
    swapped = [dict(r, x_inst=1 / r["x_inst"], x_l2=1 / r["x_l2"]) if "x_inst" in r else r for r in rows]
    assert fp8x.ncu_pair_verdicts(swapped) == {"fp8_promote_2acc_lean": {"instructions": "missed",
                                                                         "l2_read_sectors": "missed"}}
    lean, lt, store, fast = rows
    assert (f"{lean['x_inst']:.2f}", f"{lean['x_l2']:.2f}", round(lean["tensor_pct"]), round(lt["tensor_pct"])) == \
        ("1.17", "1.16", 92, 91)
    assert round(100 * (lean["x_ms"] - 1)) == 3
    assert (f"{store['x_inst']:.2f}", f"{store['x_l2']:.2f}", f"{store['x_ms']:.2f}") == ("0.87", "1.42", "0.99")
    assert "_144x128_" in lt["runs"] and "_1x2_" in lt["runs"] and "_1x2_" in fast["runs"]
    assert (128 + 128) / (128 * 128) > (144 + 128) / (144 * 128)
    log = json.loads((ROOT / "results" / "logs" / "ncu-fp8-lt-8192-nvidia-h200.json").read_text())
    assert log["size"] == [8192, 8192, 8192] and "--clock-control none" in log["ncu_options"]
    src = _flat7()
    for s_ in ("**As predicted, both**: x1.17 the warp instructions and x1.16 the L2 read sectors of cuBLASLt's default, with "
               "the tensor pipe busy the same share of active cycles (92% and 91%) and the launch 3% longer (one "
               "launch each under the profiler, no clock read",
               "cuBLASLt's default runs tiles of 144 x 128 in clusters of two (`1x2` in its name)",
               "instructions than cuBLASLt's fast kernel (x0.87), reads x1.42 its L2 sectors, and took no longer (x0.99).",
               "(commit 79269dc, `fp8x.NCU_LT`)"):
        assert s_ in src, s_
    assert "commit 79269dc" in (ROOT / "helpers" / "experiments" / "fp8.py").read_text()
    energy = fp8x.energy_log("fp8-energy")
    store_j = next(r for r in fp8x.energy_rows(energy, base="cublaslt_fp8_fast")
                   if r["n"] == 8192 and r["kernel"] == "fp8_wgmma_store")
    lean_j = next(r for r in fp8x.energy_rows(energy, base="cublaslt_fp8")
                  if r["n"] == 8192 and r["kernel"] == "fp8_promote_2acc_lean")
    assert (f"{store_j['vs_base']:.3f}", f"{lean_j['vs_base']:.3f}") == ("1.002", "1.048")
    for s_ in ("`fp8_wgmma_store` took x1.002 the joules per GEMM of cuBLASLt's fast kernel with x1.42 its L2 sectors,",
               "the promoting kernel took x1.048 those of cuBLASLt's default with x1.16 its L2 sectors and x1.17 its "
               "instructions.", "a suspicion for the next kernel to test, not a measurement."):
        assert s_ in src, s_


def test_ncu_summary_reads_the_instruction_column():
    """ncu_summary on a log with the 'inst M' column (since session 28) keeps the stalls apart from the count."""
    nc = fp8x.ncu_summary("ncu-fp8-lt-8192")
    assert nc["fp8_promote_2acc_lean"]["inst_m"] == 268.2
    assert nc["fp8_promote_2acc_lean"]["top_stalls"].startswith("wait 0.93")
    assert "inst_m" not in fp8x.ncu_summary("ncu-fp8-cluster")["fp8_promote_2acc_lean"]


def test_the_race_in_one_list_names_real_slides_and_true_states():
    """'The race with cuBLASLt, in one list': every slide it quotes is a heading of the lesson; what it calls kept is in
    the record's kernels (the registry, the 128-CTA grid, UNIFORM and DESC in the lean kernel's call, its 6 stages);
    what it calls left is gone from the registry or a switch whose default is off."""
    from conftest import quoted_slides

    quoted, headings = quoted_slides("07_fp8", "The race with cuBLASLt, in one list")
    assert len(quoted) == 14
    for q in quoted:
        assert q in headings, q
    from helpers import fp8_gemm

    reg = fp8_gemm.FP8_KERNELS
    assert {"fp8_promote_2acc_lean", "fp8_wgmma_store", "fp8_promote_2acc"} <= set(reg)
    assert not set(reg) & {"fp8_promote_2acc_cluster", "fp8_promote_2acc_store", "fp8_promote_2acc_144"}
    assert (reg["fp8_promote_2acc_lean"].stages, reg["fp8_promote_2acc_lean"].ctas, reg["fp8_wgmma_store"].ctas) == \
        (6, 128, 128)
    kernels = (ROOT / "kernels" / "fp8_sm90a.cu").read_text()
    primitives = (ROOT / "kernels" / "hopper_primitives.cuh").read_text()
    for switch in ("F8_STORE_SPREAD", "F8_FLOW"):
        assert re.search(rf"#ifndef {switch}\s*\n#define {switch} 0\b", kernels), switch
    assert re.search(r"#ifndef MBAR_WAIT\s*\n#define MBAR_WAIT 0\b", primitives)
    assert re.search(r"#if defined\(F8_PAIR\) && F8_PAIR != 0\n#error", kernels)      # left: building it stops
    assert "fp8_gemm<128, 128, false, false, true, 1, false, true>" in kernels     # TWO, DESC = 1, UNIFORM = true
    assert "fp8_gemm<256, 0, false, false, false, F8_DESC_ADD, true, true>" in kernels   # the store kernel: UNIFORM


def test_two_k_tiles_per_stage_slide_says_what_its_runs_measured():
    """Lesson 7, 'Tried: two K-tiles per stage' (issue 26, session 29): every number of its prose from the runs
    (results/logs/fp8-pair-probe, fp8-energy-pair, ncu-fp8-pair-8192; fp8x.pair_rows) or the predictions written before
    them (PAIR_PREDICTED, PAIR_ENERGY_PREDICTED); every check passed; the offline count (221 and 204 instructions per
    two K-tiles) gives the predicted instruction ratio with the recorded build's count of the session-28 run."""
    rows = {(r["run"].split(" (")[0], r["n"]): r for r in fp8x.pair_rows()}
    cold4, cold8 = rows["cold L2", 4096], rows["cold L2", 8192]
    cap4, cap8 = rows["back to back at the power cap", 4096], rows["back to back at the power cap", 8192]
    assert all(r["passed"] for r in rows.values()) and len(rows) == 4
    pn, rec = fp8x.ncu_pair_rows(fp8x.PAIR_TRIED["ncu"], {"fp8_promote_2acc_lean_pair": "fp8_promote_2acc_lean"})
    before = fp8x.ncu_pair_rows()[0]
    assert before["kernel"] == rec["kernel"] == "fp8_promote_2acc_lean"
    from helpers.timing import round_ratio

    probe = {(r["n"], " ".join(r["options"])): r for r in fp8x.probe_log(fp8x.PAIR_TRIED["log"])["stages"]["rows"]
             if "round_ms" in r and r["kernel"] == "fp8_promote_2acc_lean"}
    spread = round_ratio(probe[8192, "ctas=128 -DF8_PAIR=1"]["round_ms"], probe[8192, "ctas=128 -DF8_PAIR=0"]["round_ms"])
    said = {
        "**The count missed by 0.002; the speed hardly moved.** x0.933 the instructions where x0.935 was predicted "
        "(fewer)": f"{pn['x_inst']:.3f}" == "0.933" and
        fp8x.PAIR_PREDICTED["instructions_8192"] == 0.935,
        "x0.999 at $4096^3$ (as predicted) and x0.970 at $8192^3$": (f"{cold4['speed']:.3f}", f"{cold8['speed']:.3f}") == ("0.999",
                                                                                                          "0.970"),
        "(a spread from 0.94 to 1.04: unresolved)":
        (f"{spread['low']:.2f}", f"{spread['high']:.2f}") == ("0.94", "1.04")
        and [r["verdict"] for r in fp8x.pair_rows()] == ["speed: as predicted", "speed: unresolved: the spread holds "
                                                         "no gain too", "joules: unresolved: the spread holds no change too",
                                                         "joules: unresolved: the spread holds no change too"],
        "faster at $8192^3$ in 7 of 7 rounds, by 1.3%": cap8["faster"] == "7 of 7" and
        round(100 * (cap8["speed"] - 1), 1) == 1.3,
        "NVML's energy counter left the predicted saving unresolved: x1.009 at $8192^3$ (x0.966 to x1.026) and x1.000 "
        "at $4096^3$, each spread holding both x0.986 and no change": f"{cap8['joules']:.3f}" == "1.009" and
        f"{cap4['joules']:.3f}" == "1.000" and fp8x.PAIR_ENERGY_PREDICTED[8192] == 0.986,
        "Seven percent fewer instructions buy about one percent at most": round(100 * (1 - pn["x_inst"])) == 7 and
        max(r["speed"] for r in rows.values()) < 1.015,
        "(x0.84), which nobody predicted": f"{pn['x_l2']:.2f}" == "0.84",
        "moved by 5% between two sessions (208 M on the slide before, 218 M here)":
            (round(before["l2_sectors_m"]), round(rec["l2_sectors_m"])) == (208, 218) and
            round(100 * (rec["l2_sectors_m"] / before["l2_sectors_m"] - 1)) == 5,
        "the steady loop loses 17 of its 221 instructions per two K-tiles": 221 - 204 == 17,
        "both are below the 268 M sectors its TMA boxes ask for (4096 tiles x 64 K-tiles x 32 KB)":
            round((8192 // 128) ** 2 * (8192 // 128) * 2 * 128 * 128 / 32 / 1e6) == 268 and
            (8192 // 128) ** 2 == 4096 and max(before["l2_sectors_m"], rec["l2_sectors_m"]) < 268,
        "x0.935 the warp instructions at $8192^3$": fp8x.PAIR_PREDICTED["instructions_8192"] == 0.935,
        "x1.01 the speed at $8192^3$ and x1.00 at $4096^3$": (fp8x.PAIR_PREDICTED[8192], fp8x.PAIR_PREDICTED[4096]) ==
        (1.01, 1.00),
        "(its code is in commit 2a049e0)": fp8x.PAIR_TRIED["commit"] == "2a049e0",
        "(x0.979 of it at the cap, timed in the same rounds)": f"{cap8['vs_default']:.3f}" == "0.979",
    }
    src = _flat7()
    for claim, true in said.items():
        assert claim in src and true, claim
    # "about 0.2% of energy on each 1% of instructions": the store kernel's and the promoting kernel's energy, instruction
    # and L2 ratios to their cuBLASLt kernels (the slide before) as two linear equations, solved for the instruction term
    lean, _, store, _ = fp8x.ncu_pair_rows()
    energy = fp8x.energy_log("fp8-energy")
    j = {k: next(r["vs_base"] for r in fp8x.energy_rows(energy, base=b) if r["n"] == 8192 and r["kernel"] == k)
         for k, b in (("fp8_wgmma_store", "cublaslt_fp8_fast"), ("fp8_promote_2acc_lean", "cublaslt_fp8"))}
    pct = lambda x: 100 * (round(x, 2) - 1)           # the slide's ratios, as printed          # noqa: E731
    a = np.array([[pct(store["x_inst"]), pct(store["x_l2"])], [pct(lean["x_inst"]), pct(lean["x_l2"])]])
    e_inst, _ = np.linalg.solve(a, [100 * (j["fp8_wgmma_store"] - 1), 100 * (j["fp8_promote_2acc_lean"] - 1)])
    assert round(e_inst, 1) == 0.2 and "put about 0.2% of energy on each 1% of instructions" in _flat7()
    helper = " ".join((ROOT / "helpers" / "experiments" / "fp8.py").read_text().replace("\n# ", " ").split())
    assert "221 instructions a warp with 0, of them 128 FADDs; 204 with 1 (17 fewer, 8.5 a K-tile)" in helper
    # the prediction's arithmetic: 8 consumer warps x 262144 CTA K-tiles of 128 x 128 x 128 at 8192^3 x 8.5 fewer, over
    # the 268 M of session 28: 250 M, x0.934 (the prediction was written as x0.935, within that rounding)
    fewer = 8 * (8192 // 128) ** 3 * 8.5
    assert (round(fewer / 1e6, 1), round(before["inst_m"] - fewer / 1e6)) == (17.8, 250)
    assert abs(1 - fewer / (before["inst_m"] * 1e6) - fp8x.PAIR_PREDICTED["instructions_8192"]) < 0.002


def test_switched_build_rows_reads_any_probe_switch(tmp_path):
    """fp8x.switched_build_rows serves F8_PAIR's runs (pair_rows) and will read F8_EXTRA_L2's, pending (EXTRA_L2_TRIED): F8_PAIR's
    two logs rewritten as if F8_EXTRA_L2 had made them give the same speeds, clocks and joules, with EXTRA_L2_PREDICTED's
    figures where pair_rows has PAIR_PREDICTED's; a log whose switched rows are missing is an error, not a table of the
    recorded build against itself."""
    import json

    logs = Path(helpers.results.RESULTS_DIR) / "logs"
    for src, dst in (("log", "log"), ("energy", "energy")):
        text = (logs / f"{fp8x.PAIR_TRIED[src]}-nvidia-h200.json").read_text().replace("F8_PAIR", "F8_EXTRA_L2")
        (tmp_path / "logs").mkdir(exist_ok=True)
        (tmp_path / "logs" / f"{fp8x.EXTRA_L2_TRIED[dst]}-nvidia-h200.json").write_text(text)
    predicted = {"cap": fp8x.EXTRA_L2_PREDICTED["speed_at_cap"], "joules": fp8x.EXTRA_L2_PREDICTED["joules"]}
    new = fp8x.switched_build_rows(fp8x.EXTRA_L2_TRIED, predicted, directory=tmp_path)
    old = fp8x.pair_rows()
    assert len(new) == len(old) == 4
    for a, b in zip(new, old):
        for key in ("n", "speed", "faster", "vs_default", "mhz", "power_w", "passed", "joules", "more"):
            assert a[key] == b[key], key
    cold = [r for r in new if r["run"].startswith("cold L2 (fp8_stages.py --extra-l2)")]
    cap = [r for r in new if r["run"].startswith("back to back")]
    assert len(cold) == len(cap) == 2 and all(r["predicted_speed"] == "-" for r in cold)
    assert [(r["predicted_speed"], r["predicted_joules"]) for r in cap] == [(0.97, 1.035), (0.97, 1.035)]
    # the switched build's rows gone: no table
    probe = tmp_path / "logs" / "fp8-extra-l2-probe-nvidia-h200.json"
    kept = [r for r in json.loads(probe.read_text()) if "-DF8_EXTRA_L2=1" not in r.get("options", ())]
    probe.write_text(json.dumps(kept))
    said = r"(?s)no timing of the F8_EXTRA_L2=1 build at 4096\^3, .*--extra-l2"
    with pytest.raises(helpers.errors.ResultsError, match=said):
        fp8x.switched_build_rows(fp8x.EXTRA_L2_TRIED, predicted, directory=tmp_path)


def test_the_verdicts_follow_one_rule():
    """The rule stated on Appendix H's first slide is the course's (helpers.timing.verdict, lessons 5 and 6) on the
    spread of the alternating rounds, and it gives every verdict the lesson words: C through shared memory better than
    predicted for fp8_wgmma (x1.04 in every round for x1.03) and worse for the promoting kernel; the spread store a
    miss (x1.006 for x1.015); 128 CTAs a miss on the fast side (x1.013 for x1.00); on both kernels as predicted for
    fp8_wgmma_store at 4096^3 and unresolved for the promoting kernel; 5 and 7 stages as predicted at 4096^3; uniform
    descriptors as predicted for fp8_wgmma_store and better than predicted for the promoting kernel; the energy at
    8192^3 as predicted, at 4096^3 missed though within 2%; F8_PAIR's count 0.002 short of x0.935. Each verdict is
    quoted from the lesson, and the factor-of-two rule it replaced is gone."""
    c = ("ctas=128",)
    got = {
        "store, plain": _judged(fp8x.STORE_PREDICTED, _rounds("fp8-store-probe", 4096, "fp8_wgmma_store"),
                                _rounds("fp8-store-probe", 4096, "fp8_wgmma")),
        "store, promoting": _judged(fp8x.STORE_PREDICTED, _rounds("fp8-store-probe", 4096, fp8x.STORE_TRIED["kernel"]),
                                    _rounds("fp8-store-probe", 4096, fp8x.STORE_TRIED["over"])),
        "spread": _judged(1.015, _rounds("fp8-spread-probe", 4096, "fp8_wgmma_store", ("F8_STORE_SPREAD=1",)),
                          _rounds("fp8-spread-probe", 4096, "fp8_wgmma_store")),
        "128 CTAs": _judged(1.00, _rounds("fp8-ctas-probe", 4096, "fp8_wgmma_store", c),
                            _rounds("fp8-ctas-probe", 4096, "fp8_wgmma_store")),
        **{f"128 CTAs, {k}": _judged(fp8x.CTAS_PREDICTED[k, 4096], _rounds("fp8-ctas-lean-probe", 4096, k, c),
                                     _rounds("fp8-ctas-lean-probe", 4096, k)) for k in fp8x.YARDSTICK},
        **{f"{st} stages": _judged(1.00, _rounds("fp8-lean-stages-probe", 4096, "fp8_promote_2acc_lean", c, st),
                                   _rounds("fp8-lean-stages-probe", 4096, "fp8_promote_2acc_lean", c, 6))
           for st in (5, 7)},
        **{f"uniform, {k}": _judged(1.01, _rounds("fp8-uniform-probe", 4096, k, c + ("F8_UNIFORM=1",)),
                                    _rounds("fp8-uniform-probe", 4096, k, c)) for k in fp8x.YARDSTICK},
    }
    assert got == {"store, plain": "missed: better than predicted", "store, promoting": "missed: worse than predicted",
                   "spread": "missed: worse than predicted", "128 CTAs": "missed: better than predicted",
                   "128 CTAs, fp8_wgmma_store": "as predicted",
                   "128 CTAs, fp8_promote_2acc_lean": "unresolved: the spread holds no gain too",
                   "5 stages": "as predicted", "7 stages": "as predicted", "uniform, fp8_wgmma_store": "as predicted",
                   "uniform, fp8_promote_2acc_lean": "missed: better than predicted"}
    uni = round_ratio(_rounds("fp8-uniform-probe", 4096, "fp8_promote_2acc_lean", c + ("F8_UNIFORM=1",)),
                      _rounds("fp8-uniform-probe", 4096, "fp8_promote_2acc_lean", c))
    assert f"{uni['low']:.3f}" == "1.016"                                               # "its worst round x1.016"
    e = {(r["n"], r["kernel"]): r for r in fp8x.energy_rows(fp8x.energy_log("fp8-energy"), base="fp8_promote_2acc_lean")}
    e8, e4 = e[8192, "cublaslt_fp8"], e[4096, "cublaslt_fp8"]
    assert verdict(fp8x.ENERGY_PREDICTED[8192], e8["low"], e8["high"], "more", "less") == "as predicted"
    assert (f"{e8['low']:.3f}", f"{e8['high']:.3f}") == ("0.898", "0.972")
    assert verdict(fp8x.ENERGY_PREDICTED[4096], e4["low"], e4["high"], "more", "less") == "missed: more than predicted"
    assert e4["more"] == "5 of 5" and abs(e4["vs_base"] - 1) < 0.02                    # "its median ... within 2%"
    assert (f"{e4['low']:.3f}", f"{e4['high']:.3f}") == ("1.004", "1.046")
    pn = fp8x.ncu_pair_rows(fp8x.PAIR_TRIED["ncu"], {"fp8_promote_2acc_lean_pair": "fp8_promote_2acc_lean"})[0]
    assert round(fp8x.PAIR_PREDICTED["instructions_8192"] - pn["x_inst"], 3) == 0.002
    src = " ".join((ROOT / "notebooks" / "07_fp8.py").read_text().replace("\n# ", " ").split())
    for s_ in ("**Missed, better than predicted, for `fp8_wgmma`** at $4096^3$: x1.04 in every round",
               "**Missed for the promoting kernel**", "**Missed: less gain than predicted**, x1.006 at $4096^3$",
               "**Missed, on the fast side: x1.013**", "At $4096^3$ as predicted for `fp8_wgmma_store`; the promoting "
               "kernel's x1.009 (x0.994 to x1.020), where x1.005 was predicted, is unresolved",
               "others: as predicted (the x1.00 written lies inside both spreads", "as predicted for `fp8_wgmma_store`, better than "
               "predicted for the promoting kernel** (its worst round x1.016)", "**As predicted at $8192^3$**",
               "**The count missed by 0.002; the speed hardly moved.**",
               "Every prediction here is judged by the rule of lessons 5 and 6"):
        assert s_ in src, s_
    for gone in ("factor of two", "**Held", "so it held", "loss held", "count held", "of three held", "Hit for",
                 "within the rule"):                                                   # the words of the old rule
        assert gone not in src[src.index("## Appendix H"):], gone

def test_every_speed_prediction_beside_its_outcome(tmp_path):
    """Appendix H's table of every speed prediction (fp8x.prediction_rows): one row per idea and predicted size, the
    prediction as its slide states it, the measured ratio and spread from the same rounds as the slide's own check, and
    the verdicts the slides' prose gives (a few spot-checked here against the sentences tested above); a log without
    one of the two builds is a ResultsError naming it."""
    import json

    rows = {(r["idea"], r["n"]): r for r in fp8x.prediction_rows()}
    assert len(rows) == sum(len(p) for *_, p in fp8x.PREDICTIONS) == 32
    said = {("two partial sums", 4096): (1.08, "missed: worse than predicted"),
            ("C through shared memory", 4096): (1.03, "missed: better than predicted"),
            ("store conflicts spread", 4096): (1.015, "missed: worse than predicted"),
            ("128 CTAs", 4096): (1.00, "missed: better than predicted"),
            ("a ring of 7 stages", 8192): (1.00, "as predicted"),
            ("uniform descriptors, fp8_promote_2acc_lean", 4096): (1.01, "missed: better than predicted"),
            ("a time limit for the waits", 8192): (1.01, "missed: worse than predicted"),
            ("cuBLASLt's width, 128 x 144", 8192): (1.02, "unresolved: the spread holds no gain too"),
            ("two K-tiles per stage", 4096): (1.00, "as predicted")}
    for key, (p, v) in said.items():
        assert (rows[key]["predicted"], rows[key]["verdict"]) == (p, v), key
        assert rows[key]["low"] <= rows[key]["measured"] <= rows[key]["high"]
    assert rows["two partial sums", 4096]["measured"] == round_ratio(
        _rounds("fp8-2acc-probe", 4096, "fp8_promote_2acc", stages=4),
        _rounds("fp8-2acc-probe", 4096, "fp8_promote_128", stages=4))["ratio"]
    logs = Path(helpers.results.RESULTS_DIR) / "logs"
    (tmp_path / "logs").mkdir()
    for log in {e[1] for e in fp8x.PREDICTIONS}:
        src = logs / f"{log}-nvidia-h200.json"
        (tmp_path / "logs" / src.name).write_text(src.read_text())
    two = tmp_path / "logs" / "fp8-2acc-probe-nvidia-h200.json"
    two.write_text(json.dumps([r for r in json.loads(two.read_text()) if r.get("kernel") != "fp8_promote_128"]))
    with pytest.raises(helpers.errors.ResultsError, match="0 timings of fp8_promote_128"):
        fp8x.prediction_rows(directory=tmp_path)
