"""CPU unit tests of lesson 1's helpers: the traffic model and the exercise checkers."""
import numpy as np
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


def test_warp_footprint():
    for shape, lines, sectors in [((16, 16), 3, 4), ((32, 8), 2, 5), ((64, 4), 2, 5), ((8, 32), 5, 5), ((4, 64), 9, 9),
                                  ((1, 256), 33, 33)]:
        f = exp.warp_footprint(*shape)
        assert (f["lines"], f["sectors"]) == (lines, sectors), shape
        assert f["warp_rows"] * f["warp_cols"] == 32


def test_block_intensity():
    assert exp.block_intensity(16, 16) == pytest.approx(4.0)
    assert exp.block_intensity(32, 32) == pytest.approx(8.0)


def test_every_experiment_registered():
    reg = helpers.experiments.load_all()
    assert {"fp32_block_shapes", "fp32_tiled_solution", "fp32_timing_method"} <= set(reg)


def test_intensity_checkers(capsys):
    for fn, args, good, bad in [
        (ex.ai_ideal_exercise, (4096,), 4096 / 6, 4096 / 4),
        (ex.ai_ideal_exercise, (3000,), 500.0, 4096 / 6),          # the lesson's: 682.7 (printed for 4096) rejected
        (ex.ai_naive_exercise, (), 0.25, 0.5),
        (ex.ai_naive_exercise, (8,), 0.125, 0.25),                 # the lesson's (FP64): the printed 0.25 rejected
        (ex.ai_tiled_exercise, (16,), 4.0, 16.0),
        (ex.lines_exercise, (2, 128), 17, 9),                      # the lesson's: 4 x 64's 9 lines rejected
    ]:
        for answer, expected in [(None, None), (good, True), (bad, False)]:
            fn(answer, *args)
            assert helpers.exercises.last_result is expected, (fn.__name__, args, answer)
        out = capsys.readouterr().out
        assert "Not answered yet" in out and "Correct." in out and "Hint" in out


def test_solution_passes_static_checks():
    assert ex.static_problems(SOLUTION, "gemm_fp32_tiled") == []


def test_static_problems_found():
    for edit, needle in [(lambda s: s.replace("__shared__", ""), "__shared__"),
                         (lambda s: s.replace("__syncthreads();", "", 1), "__syncthreads"),
                         (lambda s: s.replace('extern "C" ', ""), "extern"),
                         (lambda s: s.replace("gemm_fp32_tiled", "other"), "gemm_fp32_tiled")]:
        probs = ex.static_problems(edit(SOLUTION), "gemm_fp32_tiled")
        assert probs and any(needle in p for p in probs), needle


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
    for an entry without clock readings."""
    c = {"sm_mhz": 1980, "sm_mhz_min": 1980, "throttle": ["none"]}
    entry = {"size": 4096, "op": "cupy.matmul float16", "harness_median_ms": [0.1795, 0.1794],
             "do_bench_median_ms": 0.1806, "ratio": 0.9937, "independent_timer": "do_bench",
             "harness_clocks": [c, dict(c, sm_mhz=1965)], "do_bench_clocks": c}
    text = "\n".join(exp.timing_agreement_lines(entry))
    assert text.count("1980 MHz") == 2 and "1965 MHz" in text
    assert "run 1 x0.994, run 2 x0.993; the median of the runs x0.994" in text     # 0.1795 / 0.1806, 0.1794 / 0.1806
    no_clocks = {k: v for k, v in entry.items() if not k.endswith("_clocks")}
    lines = exp.timing_agreement_lines(no_clocks)
    assert sum("clock not recorded" in ln for ln in lines) == 3
    recorded = helpers.results.load_latest().meta["extras"]["timing_agreement"]
    assert len(exp.timing_agreement_lines(recorded)) == 5               # the committed record
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


def test_the_measured_error_is_far_below_the_tolerance():
    """'First: is it correct?': the FP32 tolerance is the probabilistic bound, lambda sqrt(K) u; the measured
    error, divided by |A||B|, is a few u, because on zero-mean data the answer is about sqrt(K) smaller than
    |A||B|. Checked on a smaller M x N, same K."""
    import math

    import numpy as np

    M, N, K = 257, 391, 1000                       # the lesson's sizes: the tolerance and lambda
    tol = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N, inputs_rounded_in_reference=True)
    lam = helpers.numerics.confidence_lambda(K, M * N)
    u = helpers.numerics.fmt("fp32").unit_roundoff
    assert tol.acc_bound == "probabilistic"
    assert tol.value == pytest.approx(lam * math.sqrt(K) * u, rel=1e-3)
    A = helpers.random_matrix(32, K, seed=11)
    B = helpers.random_matrix(K, 48, seed=12)
    chk = helpers.KERNELS["gemm_fp32_kernel"].check(helpers.gemm_fp32(A, B), A, B)
    assert chk.passed and chk.comp_err < 10 * u < tol.value / 20
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    ratio = np.mean(np.abs(exact)) / np.mean(scale)
    assert 0.5 / math.sqrt(K) < ratio < 2 / math.sqrt(K)


def test_lines_per_warp_step_is_the_footprint_model_at_aligned_rows():
    """With rows a whole number of 128-byte lines, the count with rows as they lie is the footprint model's."""
    for n in (256, 1024, 4096):
        for bx, by in exp.BLOCK_SHAPES:
            assert exp.lines_per_warp_step(n, bx, by) == pytest.approx(exp.warp_footprint(bx, by)["lines"])


def test_lines_per_warp_step_at_unaligned_rows():
    """At 1000 and 3000 a row is not a whole number of lines: the 64 bytes of B a warp reads straddle two
    lines at one step in four (row bytes mod 128 = 32 or 96), so a 16 x 16 warp touches about 3.25 lines."""
    for n in (1000, 3000):
        assert (4 * n) % 128 in (32, 96)
        assert exp.lines_per_warp_step(n) == pytest.approx(3.25, abs=0.01)


def test_reveals_judge_a_guess_against_the_record(capsys):
    from helpers import exercises

    rec = helpers.results.load_latest()
    ratio = rec.value("cublas_fp32", 4096) / rec.value("gemm_fp32_kernel", 4096)
    ex.reveal_cublas_ratio(...)
    out = capsys.readouterr().out
    assert exercises.last_result is None and "No guess yet" in out and f"{ratio:.2f}" not in out
    ex.reveal_cublas_ratio(ratio * 1.4)
    assert exercises.last_result is True and f"{ratio:.2f}" in capsys.readouterr().out
    ex.reveal_cublas_ratio(ratio * 2)
    assert exercises.last_result is False and "off by a factor of 2.00 (too high" in capsys.readouterr().out
    rows = {r["shape"]: r for r in exp.shape_table(rec.meta["experiments"]["fp32_block_shapes"], 4096)}
    slow = rows["1x256"]["median_ms"] / rows["16x16"]["median_ms"]
    ex.reveal_shape_slowdown(33 / 3)                                        # the line-count model's answer
    assert exercises.last_result is (max(11 / slow, slow / 11) <= 1.5)
    assert f"{slow:.2f}" in capsys.readouterr().out
    ex.reveal_shape_slowdown(slow * 1.6)
    assert exercises.last_result is False and "too high" in capsys.readouterr().out
    for absurd in (0, -2, float("nan"), "slow", [3]):
        for reveal in (ex.reveal_cublas_ratio, ex.reveal_shape_slowdown):
            reveal(absurd)                                                  # a verdict, never an exception
            out = capsys.readouterr().out
            one = sum(not ln.startswith(" ") for ln in out.splitlines()) == 1      # one verdict, perhaps wrapped
            assert exercises.last_result is False and out.startswith("[") and one


def test_tiled_problem_tells_another_summation_order_from_a_wrong_value():
    """A tiled kernel that adds a partial sum per tile is within the tolerance but not bit-identical to the
    sequential FMA chain: the learner is told so, not sent hunting for wrong indices; a wrong element gets the
    'wrong values' advice, a clean run no problem, a write past C or a NaN their own advice."""
    from helpers.experiments.baseline import _check

    M, N, K, T = 33, 17, 49, 16
    rng = np.random.default_rng(7)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    chain = helpers.emulate.Arithmetic("fp32")(A, B)      # gemm_fp32_kernel's: one fmaf per product, K in order
    tiles = np.zeros((M, N), np.float32)
    for t in range(0, K, T):                              # a partial sum per tile, then added
        part = np.zeros((M, N), np.float32)
        for k in range(t, min(K, t + T)):
            part = (part.astype(np.float64) + np.outer(A[:, k], B[k]).astype(np.float64)).astype(np.float32)
        tiles = tiles + part
    ok, reordered = _check(chain, A, B, "chain"), _check(tiles, A, B, "tiles")
    assert ok.passed and ex.tiled_problem(ok) is None
    assert not reordered.passed and reordered.bound_ok and reordered.size_ok
    assert "another order" in ex.tiled_problem(reordered)
    wrong = chain.copy()
    wrong[5, 3] += 0.5
    assert "wrong values" in ex.tiled_problem(_check(wrong, A, B, "wrong"))
    nan = chain.copy()
    nan[0, 0] = np.nan
    assert "NaN" in ex.tiled_problem(_check(nan, A, B, "nan"))
    assert "past the end of C" in ex.tiled_problem(ok, wrote_past_c=True)
