"""CPU tests of lesson 4 (precision): probes, summation helpers, exercises, the error study's plumbing."""
import math

import numpy as np
import pytest

import helpers
import helpers.exercises.precision as ex
from helpers import emulate
from helpers.experiments import precision as P


def test_experiments_registered():
    assert {"error_vs_k", "tc_probes", "emulator_match"} <= set(helpers.experiments.load_all())


def test_stagnation_points():
    assert P.stagnation_point("fp16") == 2048
    assert P.stagnation_point("bf16") == 256
    assert P.stagnation_point("fp16", 0.1) == 256


def test_large_eats_small_and_fixes():
    xs = [2048.0] + [1.0] * 1000
    assert P.sum_sequential(xs, "fp16") == 2048
    assert P.sum_kahan(xs, "fp16") == 3048
    assert P.sum_pairwise(xs, "fp16") == 3048
    assert P.sum_sequential(xs, "fp32") == 3048


def test_every_probe_answer_is_one_of_its_hypotheses_or_monotonicity():
    for c in P.probe_cases():
        v = P.emulate_probe(c)
        if "monotonicity" in c["name"]:
            continue
        assert v in c["expect"].values(), (c["name"], v, c["expect"])


def test_probes_distinguish_the_textbook_model():
    textbook = emulate.TensorCoreModel(16, 2, "t", normalised_products=True)
    c = [x for x in P.probe_cases() if x["name"] == "fp16: products aligned before normalisation"][0]
    assert P.emulate_probe(c) == c["expect"]["unnormalised exponent"]
    assert P.emulate_probe(c, textbook) == c["expect"]["normalised product"]


def test_probes_see_v100_and_a100_parameters():
    cases = P.probe_cases()
    ext = {c["name"]: c for c in cases if c["fmt"] == "fp16"}
    # V100: no extra bit; A100: one; H200: two
    assert P.emulate_probe(ext["fp16: >= 1 extra bits"], emulate.V100_MODEL) == 1.0
    assert P.emulate_probe(ext["fp16: >= 2 extra bits"], emulate.A100_MODEL) == 1.0
    assert P.emulate_probe(ext["fp16: >= 1 extra bits"], emulate.A100_MODEL) == 1 + 2.0 ** -23
    blk = [P.emulate_probe(ext[f"fp16: block size, small product at k={j}"], emulate.A100_MODEL)
           for j in range(1, 16)]
    assert blk.index(2.0) == 7            # block of 8: the product at k = 8 is in the next block


def test_monotonicity_violation():
    cs = [c for c in P.probe_cases() if c["name"].startswith("fp16: monotonicity") and "1.49e-08" in c["name"]]
    lo, hi = (P.emulate_probe(c) for c in cs)
    assert cs[0]["c"] < cs[1]["c"] and lo > hi


def test_error_inputs_are_deterministic_and_stats():
    A, B = P.error_inputs(32, "uniform", 8, 8)
    A2, B2 = P.error_inputs(32, "uniform", 8, 8)
    assert np.array_equal(A, A2) and (A >= 0).all()
    A_r = helpers.numerics.round_to(A, "fp16").astype(float)
    B_r = helpers.numerics.round_to(B, "fp16").astype(float)
    s = P.error_stats(A_r @ B_r, A, B, A_r, B_r)
    assert s["acc_max"] == 0 and s["total_max"] > 0


def test_emulated_error_vs_k_orders_the_arithmetics():
    rows = P.emulated_error_vs_k([1024], M=8, dists=("uniform",))
    e = {r["arithmetic"]: r["acc_median"] for r in rows}
    assert e["fp16 in, fp16 acc"] > e["fp16 in, fp32 acc"] > e["fp32 FMA chain"]
    Ks, cur = P.curves(rows, "uniform")
    assert Ks == [1024] and set(cur) == set(P.ARITHMETICS)


def test_match_stats_and_ulps():
    x = np.array([1.0, -1.0, 2.0], np.float32)
    y = np.array([np.nextafter(np.float32(1), np.float32(2)), -1.0, 2.0], np.float32)
    s = P.match_stats(x, y)
    assert s["max_ulp"] == 1 and math.isclose(s["identical"], 2 / 3)
    assert P.ulp_diff_f32(np.float32(-0.0), np.float32(0.0)) == 0


def test_exercises():
    for fn, good, bad in [(ex.fp16_block_stagnation_exercise, 16384, 32768), (ex.probe_exercise, 1.0, 1 + 2.0 ** -23)]:
        for answer, expected in [(None, None), (bad, False), (good, True)]:
            fn(answer)
            assert helpers.exercises.last_result is expected, (fn.__name__, answer)


def test_tolerance_exercise():
    K = 16
    while helpers.tolerance(K + 16, "fp16", "fp16", block=16, inputs_rounded_in_reference=True).value <= 1e-2:
        K += 16
    ex.tolerance_exercise(K)
    assert helpers.exercises.last_result is True
    ex.tolerance_exercise(K + 16)
    assert helpers.exercises.last_result is False


def test_bad_inputs_say_what_to_do():
    with pytest.raises(helpers.InputError, match="Fix:"):
        P.error_inputs(16, "lognormal")
    with pytest.raises(helpers.InputError, match="columns == B's rows"):
        emulate.tensor_core_gemm(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(helpers.InputError, match="tf32"):
        emulate.tensor_core_gemm(np.ones((2, 2)), np.ones((2, 2)), inputs="fp32")
    with pytest.raises(helpers.InputError, match="C has shape"):
        emulate.tensor_core_mma(np.ones((2, 2)), np.ones((2, 2)), np.ones((3, 3)))


def test_tolerance_curve_is_what_the_checks_use():
    from helpers.experiments import precision as P
    from helpers.kernels import KERNELS

    ks = [16, 1024, 16384]
    tf32 = P.tolerance_curve(ks, "tf32 in, fp32 acc")
    fp16 = P.tolerance_curve(ks, "fp16 in, fp32 acc")
    assert KERNELS["wmma_tf32_gemm_kernel"].acc_block == 4
    assert all(t > f for t, f in zip(tf32, fp16))          # n = K/4 roundings, not K/16
    # the alignment term is inside: more than the rounding term gamma_{K/16}(2u) alone
    from helpers.numerics import gamma
    assert fp16[-1] > 10 * gamma(16384 // 16, 2.0 ** -23)


def test_input_rounding_error_falls_like_one_over_sqrt_k():
    from helpers.experiments import precision as P

    ks = [16, 256, 4096]
    v = [P.input_rounding_error(k, "uniform", "fp16") for k in ks]
    slope = np.polyfit(np.log2(ks), np.log2(v), 1)[0]
    assert -0.6 < slope < -0.4
    assert v[0] < 2 * 2.0 ** -11       # under the bound 2 u_in


def test_zeros_on_a_floor_marks_exact_zeros_and_keeps_nan():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown, floor = helpers.plots.zeros_on_a_floor({"a": [0.0, 3e-8, math.nan], "b": [1e-4, 2e-3, 5e-3]})
    assert floor < 3e-8 and floor == 10.0 ** -8.5                  # half a decade below the smallest value
    assert shown["a"][0] == floor and shown["a"][1] == 3e-8 and math.isnan(shown["a"][2])
    assert shown["b"] == [1e-4, 2e-3, 5e-3]
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.plot([1, 2, 3], shown["a"])
    helpers.plots.mark_zero_floor(ax, floor)
    assert ax.get_ylim()[0] < floor and any(t.get_text().startswith("0") for t in ax.texts)
    plt.close(fig)


def _fp16_acc_median_error(K, model=None):
    A, B = P.error_inputs(K, "uniform", 4, 4)
    A = helpers.numerics.round_to(A, "fp16").astype(float)
    B = helpers.numerics.round_to(B, "fp16").astype(float)
    C = emulate.tensor_core_gemm(A, B, acc="fp16", model=model or emulate.model_for("fp16"))
    return P.error_stats(C, A, B, A, B)["acc_median"]


def test_wmma_fp16_accumulator_stalls_at_2_to_the_14_on_uniform_data():
    """'Where FP16 accumulation saturates' (the lesson's cell, the course's CPU model): the hfma chain is stuck
    at 2^11 (half the sum lost at K = 16384); the WMMA accumulator keeps growing through spacing 8 (K = 32768,
    65536) and stalls at 2^14: half the sum lost at K = 131072, a factor 8 in K after the hfma chain."""
    hfma = emulate.TensorCoreModel(1, 2, "hfma")
    assert _fp16_acc_median_error(8192, hfma) < 0.3
    assert abs(_fp16_acc_median_error(16384, hfma) - (1 - 4 * 2 ** 11 / 16384)) < 0.02
    assert _fp16_acc_median_error(32768) < 0.01 and _fp16_acc_median_error(65536) < 0.01
    assert abs(_fp16_acc_median_error(131072) - (1 - 4 * 2 ** 14 / 131072)) < 0.02


def test_reveals_judge_a_guess_against_the_recorded_error_study(capsys):
    from helpers import exercises

    Ks, cur = P.curves(P.recorded("error_vs_k").data, "uniform")
    growth = cur["fp16 in, fp32 acc"][Ks.index(16384)] / cur["fp16 in, fp32 acc"][Ks.index(1024)]
    ratio = cur["fp16 in, fp16 acc"][Ks.index(16384)] / cur["fp16 in, fp32 acc"][Ks.index(16384)]
    ex.reveal_k_growth(...)
    out = capsys.readouterr().out
    assert exercises.last_result is None and "No guess yet" in out and f"{growth:.1f}" not in out
    ex.reveal_k_growth(growth * 1.4)
    assert exercises.last_result is True and f"{growth:.1f}" in capsys.readouterr().out
    ex.reveal_k_growth(4)                                   # sqrt(16): the round-to-nearest guess
    assert exercises.last_result is (max(4 / growth, growth / 4) <= 1.5)
    ex.reveal_acc16_over_acc32(ratio / 1.9)
    assert exercises.last_result is True
    ex.reveal_acc16_over_acc32(2 ** 13)                     # the ratio of the unit roundoffs
    assert exercises.last_result is (2 ** 13 / ratio <= 2) and "too high" in capsys.readouterr().out
    for absurd in (0, -1, float("inf"), "big", (1,)):
        for reveal in (ex.reveal_k_growth, ex.reveal_acc16_over_acc32):
            reveal(absurd)
            out = capsys.readouterr().out
            one = sum(not ln.startswith(" ") for ln in out.splitlines()) == 1      # one verdict, perhaps wrapped
            assert exercises.last_result is False and out.startswith("[") and one
