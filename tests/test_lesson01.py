"""CPU unit tests of lesson 1's helpers: the traffic model and the exercise checkers."""
import re
from pathlib import Path

import pytest

import helpers
from helpers.exercises import baseline as ex
from helpers.experiments import baseline as exp

SOLUTION = helpers.display.kernel_source("fp32_variants.cu", "gemm_fp32_tiled")


def test_intensity_formulas():
    d = exp.intensity(1024)
    assert d["ideal"] == pytest.approx(1024 / 6)
    assert d["requested"] == pytest.approx(0.25, rel=1e-3)
    assert d["ideal_bytes"] == 3 * 1024 ** 2 * 4


@pytest.mark.parametrize("shape,lines,sectors", [((16, 16), 3, 4), ((32, 8), 2, 5), ((64, 4), 2, 5),
                                                 ((8, 32), 5, 5), ((4, 64), 9, 9), ((1, 256), 33, 33)])
def test_warp_footprint(shape, lines, sectors):
    f = exp.warp_footprint(*shape)
    assert (f["lines"], f["sectors"]) == (lines, sectors)
    assert f["warp_rows"] * f["warp_cols"] == 32


def test_block_intensity():
    assert exp.block_intensity(16, 16) == pytest.approx(4.0)
    assert exp.block_intensity(32, 32) == pytest.approx(8.0)


def test_every_experiment_registered():
    reg = helpers.experiments.load_all()
    assert {"fp32_block_shapes", "fp32_tiled_solution", "fp32_timing_method"} <= set(reg)


@pytest.mark.parametrize("fn,args,good,bad", [
    (ex.ai_ideal_exercise, (4096,), 4096 / 6, 4096 / 4),
    (ex.ai_ideal_exercise, (3000,), 500.0, 4096 / 6),          # the lesson's: 682.7 (printed for 4096) is rejected
    (ex.ai_naive_exercise, (), 0.25, 0.5),
    (ex.ai_naive_exercise, (8,), 0.125, 0.25),                 # the lesson's (FP64): the printed 0.25 is rejected
    (ex.ai_tiled_exercise, (16,), 4.0, 16.0),
    (ex.lines_exercise, (2, 128), 17, 9),                      # the lesson's: 4 x 64's 9 lines (in the table) rejected
])
def test_intensity_checkers(fn, args, good, bad, capsys):
    fn(None, *args)
    assert helpers.exercises.last_result is None
    fn(good, *args)
    assert helpers.exercises.last_result is True
    fn(bad, *args)
    assert helpers.exercises.last_result is False
    out = capsys.readouterr().out
    assert "Not answered yet" in out and "Correct." in out and "Hint" in out


def test_solution_passes_static_checks():
    assert ex.static_problems(SOLUTION, "gemm_fp32_tiled") == []


@pytest.mark.parametrize("edit,needle", [
    (lambda s: s.replace("__shared__", ""), "__shared__"),
    (lambda s: s.replace("__syncthreads();", "", 1), "__syncthreads"),
    (lambda s: s.replace('extern "C" ', ""), "extern"),
    (lambda s: s.replace("gemm_fp32_tiled", "other"), "gemm_fp32_tiled"),
])
def test_static_problems_found(edit, needle):
    probs = ex.static_problems(edit(SOLUTION), "gemm_fp32_tiled")
    assert probs and any(needle in p for p in probs)


def test_tiled_checker_on_cpu(capsys):
    ex.check_tiled_kernel(None)
    assert "Not answered yet" in capsys.readouterr().out
    ex.check_tiled_kernel(SOLUTION, name="gemm_fp32_tiled")
    out = capsys.readouterr().out
    assert "needs a CUDA GPU" in out and helpers.exercises.last_result is None
    ex.check_tiled_kernel(SOLUTION.replace("__shared__", ""), name="gemm_fp32_tiled")
    assert "Not quite" in capsys.readouterr().out
    ex.check_tiled_kernel(42)
    assert "string" in capsys.readouterr().out


def test_timing_agreement_lines_show_each_clock():
    """The record's harness-vs-do_bench entry, each timing beside its SM clock; 'clock not recorded'
    for an entry recorded before the clocks were stored."""
    c = {"sm_mhz": 1980, "sm_mhz_min": 1980, "throttle": ["none"]}
    entry = {"size": 4096, "op": "cupy.matmul float16", "harness_median_ms": [0.1795, 0.1794],
             "do_bench_median_ms": 0.1806, "ratio": 0.9937, "independent_timer": "do_bench",
             "harness_clocks": [c, dict(c, sm_mhz=1965)], "do_bench_clocks": c}
    text = "\n".join(exp.timing_agreement_lines(entry))
    assert text.count("1980 MHz") == 2 and "1965 MHz" in text and "0.994" in text
    old = {k: v for k, v in entry.items() if not k.endswith("_clocks")}
    lines = exp.timing_agreement_lines(old)
    assert sum("clock not recorded" in ln for ln in lines) == 3
    recorded = helpers.results.load_latest().meta["extras"]["timing_agreement"]
    assert len(exp.timing_agreement_lines(recorded)) == 5               # the committed record, whatever its age
    assert exp.timing_agreement_lines({"skipped": "no triton"}) == ["timing agreement not measured: no triton"]


def test_every_size_labelled_1000_beside_1024():
    """The sweep plot labels 1000 and 1024 both (1000 one row lower), so the 1000 point is seen."""
    import matplotlib.pyplot as plt

    sizes = [512, 1000, 1024, 2048]
    fig = helpers.plots.tflops_vs_size({"k": (sizes, [1.0, 2.0, 1.5, 1.6])}, title="t", source="s")
    helpers.plots.label_every_size(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "1000", "1024", "2048"]
    pads = [t.get_pad() for t in ax.xaxis.get_major_ticks()]
    assert pads[1] > pads[2] == pads[0]
    plt.close(fig)


LESSON = (Path(__file__).resolve().parent.parent / "notebooks" / "01_fp32_baseline.py").read_text()
FLAT = re.sub(r"\s*\n#\s*", " ", LESSON)      # the prose with its comment line breaks removed


def test_exercises_ask_what_no_slide_prints():
    """Each exercise's parameters differ from what an earlier slide prints: n = 3000 (the intensity cell
    prints 256, 1024, 4096), FP64 loads (the roofline prints FP32's 0.25), the 2 x 128 block (not a row
    of the footprint table)."""
    shown = re.search(r"for n in \(([\d, ]+)\):\n    d = lesson.intensity", LESSON).group(1).split(", ")
    assert "3000" not in shown and "ex.ai_ideal_exercise(answer, 3000)" in LESSON
    assert "ex.ai_naive_exercise(answer, 8)" in LESSON
    assert (2, 128) not in exp.BLOCK_SHAPES and "ex.lines_exercise(answer, 2, 128)" in LESSON


def test_why_the_measured_error_is_far_below_the_tolerance():
    """The notes under 'First: is it correct?': the FP32 tolerance is the probabilistic bound, lambda
    sqrt(K) u; the measured error, divided by |A||B|, is a few u, because on zero-mean data the answer
    (and the partial sums) are about sqrt(K) smaller than |A||B|. Checked on a smaller M x N, same K."""
    import math

    import numpy as np

    M, N, K = 257, 391, 1000                       # the lesson's sizes: the tolerance and lambda
    tol = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N, inputs_rounded_in_reference=True)
    lam = helpers.numerics.confidence_lambda(K, M * N)
    u = helpers.numerics.fmt("fp32").unit_roundoff
    assert tol.acc_bound == "probabilistic"
    assert tol.value == pytest.approx(lam * math.sqrt(K) * u, rel=1e-3)
    assert 7.5 < lam < 8.5                          # "lambda = 8.1", printed by the lesson
    A = helpers.random_matrix(32, K, seed=11)
    B = helpers.random_matrix(K, 48, seed=12)
    chk = helpers.KERNELS["gemm_fp32_kernel"].check(helpers.gemm_fp32(A, B), A, B)
    assert chk.passed and chk.comp_err < 10 * u < tol.value / 20
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    ratio = np.mean(np.abs(exact)) / np.mean(scale)
    assert 0.5 / math.sqrt(K) < ratio < 2 / math.sqrt(K)
    assert "Higham & Mary's probabilistic bound" in FLAT and "confidence factor lambda" in FLAT
    assert "so errors partly cancel (Higham & Mary's sqrt(K) growth)" not in FLAT


def test_the_record_holds_two_sizes_beyond_the_sweep():
    """'over all 12 recorded sizes (the sweep's 10, 6144 and 8192)': the record has the sweep's sizes and
    two more."""
    sweep = [int(n) for n in re.search(r"SIZES = \[([\d, ]+)\]", LESSON).group(1).split(", ")]
    sizes, _ = helpers.results.load_latest().series("gemm_fp32_kernel")
    assert set(sweep) <= set(sizes) and sorted(set(sizes) - set(sweep)) == [6144, 8192]
    assert (len(sizes), len(sweep)) == (12, 10)


@pytest.mark.parametrize("n", [256, 512, 1024, 2048, 4096])
def test_lines_per_warp_step_is_the_footprint_model_at_aligned_rows(n):
    """With rows a whole number of 128-byte lines, the count with rows as they lie is the footprint model's."""
    for bx, by in exp.BLOCK_SHAPES:
        assert exp.lines_per_warp_step(n, bx, by) == pytest.approx(exp.warp_footprint(bx, by)["lines"])


def test_lines_per_warp_step_at_unaligned_rows():
    """At 1000 and 3000 a row is not a whole number of lines: the 64 bytes of B a warp reads straddle two
    lines at one step in four (row bytes mod 128 = 32 or 96), so a 16 x 16 warp touches about 3.25 lines."""
    for n in (1000, 3000):
        assert (4 * n) % 128 in (32, 96)
        assert exp.lines_per_warp_step(n) == pytest.approx(3.25, abs=0.01)


def _sweep_lines_per_clock():
    rec = helpers.results.load_latest()
    sms = rec.meta["gpu"]["sms"]
    out = {}
    for r in rec.select(kernel="gemm_fp32_kernel"):
        n, hz = r["m"], r["sm_mhz"] * 1e6
        out[n] = (exp.lines_per_sm_clock(3, n, r["median_ms"], sms, hz),
                  exp.lines_per_sm_clock(exp.lines_per_warp_step(n), n, r["median_ms"], sms, hz))
    return rec, out


def test_one_line_per_clock_is_a_rate_not_a_ceiling():
    """Appendix 'One line per clock is a rate, not a ceiling': the block-shape experiment ran only at
    power-of-two sizes, where 16 x 16 ran at about one line per SM per clock (below it at 1024); at 1000
    and 3000 the H200 served more than one line per clock by either count, more by the count with rows
    as they lie. The record holds no profiler counters at 1000 or 3000."""
    rec, per_clk = _sweep_lines_per_clock()
    assert tuple(exp.SHAPE_SIZES) == (2048, 4096)
    shapes = rec.meta["experiments"]["fp32_block_shapes"]
    assert sorted({r["n"] for r in shapes["rows"]}) == [2048, 4096]
    for n in (1000, 3000):
        three, laid = per_clk[n]
        assert 1.0 < three < laid
    for n in (1024, 2048, 4096):
        assert per_clk[n][0] == per_clk[n][1] < 1.0
        assert n & (n - 1) == 0
    for n in (2048, 4096):
        assert per_clk[n][0] > 0.95                           # "about one line per SM per clock"
    sizes = {tuple(k["size"]) for k in helpers.profile.load_ncu().meta["kernels"]}
    assert not any(1000 in s or 3000 in s for s in sizes)
    assert "the record cannot say (it holds no counters at 1000 or 3000)" in FLAT
    assert "at 1000 and 3000 the H200 runs faster" in FLAT      # the main-path pointer to the appendix
    assert "this gives a ceiling" not in FLAT and "line-rate ceiling" not in LESSON
    assert "of that ceiling" not in LESSON


def test_the_two_chips_at_1024():
    """'Back to the two chips at 1024': at the clock its FP32 peak assumes, the RTX 4090's figure is below
    one line per clock, and it is ahead of the H200 by less than the ratio of the two chips' line rates;
    the H200 too is below one line per clock at 1024 (its recorded clock is the one its peak assumes).
    The conclusion is drawn for the H200 only (no clock, no profiler from the seed)."""
    rec, per_clk = _sweep_lines_per_clock()
    seed = helpers.results.load_reference("seed_rtx4090")
    s_tf = seed.select(kernel="gemm_fp32_kernel", m=1024)[0]["tflops"]
    h = rec.select(kernel="gemm_fp32_kernel", m=1024, n=1024, k=1024)[0]
    rate = {}
    for name, sms, peak in [("4090", seed.meta["gpu"]["sms"], helpers.device.peaks_for(seed.gpu_name).fp32),
                            ("H200", rec.meta["gpu"]["sms"], rec.meta["gpu"]["peaks"]["fp32"])]:
        clk = exp.implied_clock_hz(peak, sms)
        rate[name] = 64 / 3 * sms * clk / 1e12
    assert h["sm_mhz"] * 1e6 == pytest.approx(exp.implied_clock_hz(rec.meta["gpu"]["peaks"]["fp32"],
                                                                   rec.meta["gpu"]["sms"]), rel=5e-3)
    assert s_tf / rate["4090"] < 1.0 and h["tflops"] / rate["H200"] < 1.0
    assert 1.0 < s_tf / h["tflops"] < rate["4090"] / rate["H200"]
    assert per_clk[1024][0] == pytest.approx(h["tflops"] / rate["H200"], rel=5e-3)
    assert "The conclusion that matters holds on both chips" not in FLAT
    assert "The conclusion holds for the H200" in FLAT
    assert "The RTX 4090's one number is consistent with a similar limit" in FLAT


def test_the_seed_kernel_already_checks_bounds():
    """The seed's gemm_fp32_kernel has `if (row < M && col < N)`: the course's rewrite adds 64-bit
    indices and __restrict__, not bounds checks."""
    assert "is its FP32 kernel, rewritten with 64-bit indices and `__restrict__`" in FLAT
    assert "rewritten with bounds checks" not in FLAT
