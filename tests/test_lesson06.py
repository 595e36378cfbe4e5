"""Lesson 6 without a GPU: its rungs' CPU model through the one launch path and their checks, the skip messages, the
exercise checkers, the reading of the `hopper`, `hopper_targets` and `knobs` experiments' rows (helpers/experiments:
hopper.py, like_for_like.py, knobs.py), and the lesson's "What else was tried" rows (results/tried.json)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import helpers
from helpers import exercises
from helpers import kernels as K
from helpers.exercises import hopper as ex
from helpers.experiments import hopper as H
from helpers.experiments import knobs as KN
from helpers.experiments import like_for_like as LL


def _rec():
    return helpers.results.load_latest().meta["experiments"]


def test_lesson6_emulation_passes_the_check_at_odd_sizes():
    """CPU backend: every rung's emulation (rung 7's model) through helpers.gemm(pad=True) passes its check at
    sizes that are multiples of nothing, and helpers.launch.verdicts says so rung by rung."""
    for M, N, K_ in ((40, 24, 56), (37, 19, 100)):
        A = helpers.random_matrix(M, K_, seed=M).astype(np.float16)
        B = helpers.random_matrix(K_, N, seed=N).astype(np.float16)
        for r in K.HOPPER_RUNGS.values():
            C = helpers.gemm(r, A, B, pad=True)
            assert C.shape == (M, N) and C.dtype == np.dtype(r.out_dtype)
            chk = r.check(C, A, B)
            assert chk.passed and chk.model == "identical", str(chk)
        lines = helpers.launch.verdicts(K.HOPPER_RUNGS.values(), A, B)
        assert all(ln.startswith(f"{k} PASS hopper_") for k, ln in zip(K.HOPPER_RUNGS, lines)), lines


def test_lesson6_needs_multiples_of_8_without_padding():
    A = np.ones((40, 20), dtype=np.float16)
    B = np.ones((20, 24), dtype=np.float16)
    with pytest.raises(helpers.CourseError, match="K=20"):
        helpers.gemm("hopper_persistent", A, B)
    assert helpers.gemm("hopper_persistent", A, B, pad=True).shape == (40, 24)


@pytest.mark.parametrize("cc", [(7, 5), (8, 0), (8, 9), (10, 0), (12, 0)])
def test_lesson6_skip_message_on_other_gpus(cc):
    for r in K.HOPPER_RUNGS.values():
        msg = r.skip_message(cc)
        assert msg.startswith(f"rung {r.rung} ({r.name}) skipped: it needs sm_90a") and "Hopper" in msg
        assert msg.endswith(f"this GPU is {cc[0]}.{cc[1]}.")
        assert r.skip_message((9, 0)) is None and r.skip_message(None) is None


def _rows():
    """Synthetic rows in the shape rung_rows and the experiment write (no GPU)."""
    rows = []
    for n in (4096, 8192):
        cub = 750.0 if n == 4096 else 730.0
        rows.append({"rung": 0, "kernel": "cublas_fp16", "m": n, "n": n, "k": n, "tflops": cub, "frac_cublas": 1.0,
                     "passed": True})
        tf = {}
        for k, r in K.hopper_ladder().items():                 # each at its prediction over its base
            tf[k] = 400.0 if k == 7 else tf[r.base or max(tf)] * r.predicted_gain
            c32 = cub * 0.96                                   # cuBLAS writing FP32 C: a little slower
            same = c32 if r.out_dtype == "float32" else cub
            rows.append({"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": n, "n": n,
                         "k": n, "tflops": tf[k], "frac_cublas": tf[k] / same, "frac_peak": tf[k] / 989.4,
                         "passed": True, "c_dtype": r.out_dtype, "cublas_fp16c_tflops": cub, "cublas_fp32c_tflops": c32,
                         **({"base": r.base} if r.base else {})})
    return rows


def test_hopper_experiments_are_registered_and_read_their_rows():
    from helpers.experiments import REGISTRY, load_all

    load_all()
    assert REGISTRY["hopper"] is H.hopper and REGISTRY["hopper_targets"] is LL.hopper_targets
    assert REGISTRY["input_values"] is LL.input_values
    rows = _rows()
    g = H.gains(rows, 4096)
    assert [x["rung"] for x in g] == [7, *K.HOPPER_RUNGS] and g[0]["verdict"] == "-"
    assert [x["over"] for x in g[1:]] == [r.base or k - 1 for k, r in K.HOPPER_RUNGS.items()]
    assert all(x["verdict"] == "as predicted" and x["direction"] is None for x in g[1:])   # no spread: the median
    b16, b32 = H.best_rung(rows, (4096,) * 3, "float16"), H.best_rung(rows, (4096,) * 3, "float32")
    assert b16["c_dtype"] == "float16" and b32["c_dtype"] == "float32"         # like for like: each C type alone
    assert H.best_rung(rows, (4096,) * 3, "float32", below=13)["rung"] < 13
    t = H.shape_table(rows, shapes=((4096, 4096, 4096), (8192, 28672, 4096)))
    assert t[0]["rung_fp32c"] == b32["rung"] and t[0]["rung_fp16c"] == b16["rung"] and t[1]["rung_fp16c"] is None
    assert t[0]["cublas_fp16c"] == 750.0 and t[0]["cublas_fp32c"] == pytest.approx(720.0)
    assert H.TIMED[:4] == tuple((n, n, n) for n in (2048, 4096, 6144, 8192)) and (128, 8192, 8192) in H.TIMED
    for M, N, K_ in H.ODD_SIZES:
        assert M % 8 or N % 8 or K_ % 64                     # not tile multiples


def test_input_kinds_and_their_table():
    """input_table: per kind of input the median TFLOP/s of each kernel's rounds, the clock range, and each rung over
    cuBLAS writing the same C (rung 14 over FP16 C, rung 13 over FP32 C)."""
    rows = []
    for rnd, f in enumerate((1.0, 1.1)):
        for who, dt, tf in (("cublas_fp16", "float16", 700), ("cublas_fp16_f32c", "float32", 650),
                            ("rung 14", "float16", 680), ("rung 13", "float32", 660)):
            rows.append({"inputs": "zeros", "round": rnd, "who": who, "c_dtype": dt, "passed": True,
                         "tflops": tf * f, "sm_mhz": 1980 - 100 * rnd})
    (z,) = LL.input_table(rows)
    assert z["inputs"] == "zeros" and z["all_passed"] and z["sm_mhz"] == (1880, 1980)
    assert z["rung 14 / cuBLAS same C"] == pytest.approx(680 / 700) and z["rung 13 / cuBLAS same C"] == pytest.approx(660 / 650)
    with pytest.raises(helpers.InputError, match="normal, uniform, e4m3, zeros"):
        LL.kind_inputs("gaussian", 8, 8, 8)
    assert {r["inputs"] for r in LL.input_table(_rec()["input_values"])} == set(LL.INPUT_KINDS)


def test_later_rungs_say_what_each_adds_and_where_it_is_best():
    """Appendix D's table: rungs 17 on, each with its idea and C type, and the goals of hopper_targets it won."""
    rows = LL.later_rungs(_rec()["hopper_targets"])
    assert [r["rung"] for r in rows] == [k for k in K.HOPPER_RUNGS if k >= 17]
    won = {g["rung"] for g in LL.head_to_head(_rec()["hopper_targets"]) if g["rung"] is not None and g["rung"] >= 17}
    assert {r["rung"] for r in rows if r["best_at"] != "-"} == won
    assert all(r["C"] == ("FP16" if K.ALL_RUNGS[r["rung"]].out_dtype == "float16" else "FP32") for r in rows)


def test_what_else_was_tried_is_a_short_table_of_ideas():
    """results/tried.json's lesson-6 rows (computed by the lab) as the lesson shows them: one line per idea, each with
    a prediction and a measurement, kept yes or no; the table the lesson draws has the four columns."""
    rows = helpers.results.tried("06")
    assert 5 <= len(rows) <= 20 and {r["kept"] for r in rows} == {"yes", "no"}
    assert all(r["idea"] and r["predicted"] and r["measured"] and r["where"].startswith("lab/") for r in rows)
    md = helpers.display.tried_table("06").data
    assert md.splitlines()[0] == "| idea | predicted | measured | kept |" and len(md.splitlines()) == len(rows) + 2


def test_the_widest_gap_table_pairs_each_kernel_with_its_padded_rows():
    """results/limits.json (written by the lab from Nsight Compute logs) as Appendix E reads it: each kernel once with
    rows 16 bytes into a sector and once padded to whole 128-byte lines, at the shape of the H100's widest gap; the
    rung's kernel reads DRAM more with rows inside a sector, by more than cuBLAS's does (the lesson's reading)."""
    lim = helpers.results.limits("06")["row_alignment"]
    M, N, K_ = lim["shape"]
    pairs = {}
    for r in lim["rows"]:
        pairs.setdefault(r["who"], {})[r["row_bytes"]] = r
    assert len(pairs) == 2 and all(set(p) == {2 * N, 2 * N + 80} for p in pairs.values())
    assert (2 * N) % 32 == 16 and (2 * N + 80) % 128 == 0
    rise = {who: p[2 * N]["dram_read_gb"] / p[2 * N + 80]["dram_read_gb"] for who, p in pairs.items()}
    assert rise["cuBLAS"] < 1.1 < min(v for who, v in rise.items() if who != "cuBLAS")


def test_a_missing_or_foreign_limits_file_names_the_fix(tmp_path):
    with pytest.raises(helpers.errors.ResultsError, match="python lab/limits.py"):
        helpers.results.limits("06", directory=tmp_path)
    (tmp_path / "limits.json").write_text(json.dumps({"schema": helpers.results.TRIED_SCHEMA, "lessons": {}}))
    with pytest.raises(helpers.errors.ResultsError, match="is not a tensor-core-course/limits/1 file"):
        helpers.results.limits("06", directory=tmp_path)
    (tmp_path / "limits.json").write_text(json.dumps({"schema": helpers.results.LIMITS_SCHEMA, "lessons": {"07": {}}}))
    with pytest.raises(helpers.errors.ResultsError, match="nothing for lesson '06' \\(it has 07\\)"):
        helpers.results.limits("06", directory=tmp_path)


def test_the_rung_8_cell_reads_rung_7s_kernel_alone_from_lesson_5s_record():
    ladder, hop = _rec()["ladder"], _rec()["hopper"]
    for n in (4096, 8192):
        r7 = next(r for r in H.timed_rows(ladder, n) if r["rung"] == 7)
        assert H.kernel_alone_gain(ladder, n) == pytest.approx(r7["tflops_kernel_only"] / r7["tflops"])
    assert H.kernel_alone_gain(ladder, 4096) > H.kernel_alone_gain(ladder, 8192) > 1
    assert [g["rung"] for g in H.gains(hop, 4096)][:2] == [7, 8]


def test_exercise_checkers():
    ex.check_consumer_registers(None)
    assert exercises.last_result is None
    ex.check_consumer_registers(232)
    assert exercises.last_result is True and ex.consumer_registers(56) == 224
    ex.check_consumer_registers(240)
    assert exercises.last_result is False
    ex.check_stage_bytes(128 * 64 * 2 + 64 * 64 * 2, N=520, tn=2)
    assert exercises.last_result is True
    assert ex.stage_bytes(1024, 0) == 48 * 1024 and ex.stage_bytes(4096, 3, a_in=False) == 32 * 1024
    ex.check_waves(4, n=4096)
    assert exercises.last_result is True
    assert ex.waves(128, 8192) == (1, 32 / 132)


def test_ncu_rows_reads_the_newest_file_with_lesson6_rungs(tmp_path):
    rows, why = H.ncu_rows(None, directory=tmp_path)
    assert rows == [] and why.startswith("not recorded yet")
    old = {"gpu": {"name": "NVIDIA H200"}, "date": "2026-12-01T00:00:00+00:00", "size": [4096] * 3,
           "kernels": [{"target": "rung7", "kernel": "ladder_wgmma_tma", "counters": {"tensor_pipe_pct": 71.0}}]}
    (tmp_path / "ncu-nvidia-h200.json").write_text(json.dumps(old))
    assert H.ncu_rows(None, directory=tmp_path)[0] == []          # rung 7 alone: lesson 5's file
    new = dict(old, kernels=old["kernels"] + [{"target": "rung9", "kernel": "hopper_warp_specialized",
                                               "counters": {"tensor_pipe_pct": 85.0}, "top_stalls": [["gmma", 1.0]]}])
    (tmp_path / "ncu-nvidia-h200.json").write_text(json.dumps(new))
    got, label = H.ncu_rows(_rows(), directory=tmp_path)
    assert [e["rung"] for e in got] == [7, 9] and got[1]["tflops"] > got[0]["tflops"]
    assert label.startswith("Nsight Compute on NVIDIA H200, 2026-12-01, n = 4096")


def test_consumer_registers_fit_the_ctas_pool_as_the_kernel_computes_them():
    """Issue 24: setmaxnreg shares out the CTA's pool (168 x 384 = 64512 registers), not the SM's 65536:
    for every producer count the split fits the pool and equals CONSUMER_REGS of rung 9's file (the first with a
    producer warpgroup). The SM-based formula gave 232 for 48, which would not fit."""
    import re

    from helpers.compile import KERNEL_DIR
    from helpers.exercises import hopper as hx

    src = (KERNEL_DIR / K.HOPPER_RUNGS[9].file).read_text()
    formula = re.search(r"^#define CONSUMER_REGS (\(.*\))", src, re.M).group(1)     # C's integer arithmetic:
    assert set(formula) <= set("()0123456789 +-*/PRODUCER_GS")                      # / of positive ints is //
    assert hx.CTA_POOL == 168 * 384 == 64512
    for producer in range(24, 129, 8):
        c = hx.consumer_registers(producer)
        assert producer * 128 + 2 * 128 * c <= hx.CTA_POOL
        assert c == eval(formula.replace("/", "//"), {"PRODUCER_REGS": producer}) == (168 * 3 - producer) // 2 // 8 * 8
    assert hx.consumer_registers(48) == 224 and (65536 - 48 * 128) // 256 // 8 * 8 == 232


def test_verdict_judges_against_the_measured_spread():
    """A prediction counts only inside the p10-p90 spread of the gain; outside it, it missed (and which way);
    inside a spread that also holds 1.00 the timing cannot tell the gain from none."""
    assert H.verdict(1.02, 1.006, 1.024) == "as predicted"
    assert H.verdict(1.04, 1.011, 1.027) == "missed: worse than predicted"
    assert H.verdict(1.3, 1.499, 1.524) == "missed: better than predicted"
    assert H.verdict(1.02, 0.866, 1.173).startswith("unresolved")
    # the old +-25% rule called a 0.97 measurement of a 1.02 prediction "as predicted"; a tight spread misses
    assert H.verdict(1.02, 0.96, 0.98) == "missed: worse than predicted"
    assert H.verdict(1.00, 0.99, 1.01) == "as predicted"       # no change predicted, none resolved (helpers.timing)


def test_gains_use_the_p10_p90_of_both_rungs():
    rows = _rows()
    for r in rows:                                   # +-1% spread around each median
        if r["rung"] >= 7:
            r.update(median_ms=1.0 / r["tflops"], p10_ms=0.99 / r["tflops"], p90_ms=1.01 / r["tflops"])
    slow = next(r for r in rows if r["rung"] == 13 and r["m"] == 4096)
    slow["tflops"] *= 0.95                             # rung 13 measured 5% under its prediction
    for k in ("median_ms", "p10_ms", "p90_ms"):
        slow[k] /= 0.95
    g = {x["rung"]: x for x in H.gains(rows, 4096)}
    assert g[7]["low"] is None and g[7]["verdict"] == "-"
    assert g[12]["verdict"] == "as predicted" and g[12]["low"] < g[12]["predicted"] < g[12]["high"]
    assert g[13]["verdict"] == "missed: worse than predicted" and g[13]["direction"] == "worse"


def test_the_record_holds_spreads_and_its_verdicts():
    d = helpers.results.load_latest().meta["experiments"]["hopper"]
    g = {x["rung"]: x for x in H.gains(d, 4096)}
    assert all(g[k]["low"] <= g[k]["measured"] <= g[k]["high"] for k in range(8, 14))
    assert g[8]["verdict"] == "missed: better than predicted"      # x1.47 for a predicted x1.3
    assert g[12]["verdict"] == "missed: worse than predicted"      # x1.00 for a predicted x1.03


def test_ring_edit_without_a_gpu_judges_the_prediction_against_the_record(capsys):
    ratio, low, high, label = ex.recorded_ratio(11, "STAGES", 2)
    assert 0.5 < ratio < 0.8 and low <= ratio <= high and "H200" in label
    ex.check_ring_edit(ratio, {"STAGES": 2})
    out = capsys.readouterr().out.splitlines()
    assert exercises.last_result is True
    assert out[0] == (f"[rung 11, STAGES=2] The edit cannot run here (no Hopper GPU): your prediction is judged "
                      f"against the sweep of {label}.")
    assert out[1] == "[rung 11, STAGES=2] Correct." and len(out) == 3
    ex.check_ring_edit(0.95, {"STAGES": 2})                     # "a little slower": wrong
    said = capsys.readouterr().out
    assert exercises.last_result is False and "Not quite" in said and f"{ratio:.2f}x" in said
    ex.check_ring_edit(ratio, helpers.tryout.source_of(11, replace={"#define HSTAGES 4": "#define HSTAGES 2"}))
    assert exercises.last_result is True and "cannot run here" in capsys.readouterr().out


def test_ring_edit_placeholders_wrong_types_and_wrong_edits(capsys):
    ex.check_ring_edit(..., {"STAGES": 2})
    assert exercises.last_result is None and "Not answered yet" in capsys.readouterr().out
    ex.check_ring_edit(0.64, ...)
    assert exercises.last_result is None
    ex.check_ring_edit("a lot slower", {"STAGES": 2})
    assert exercises.last_result is False and "expects a number" in capsys.readouterr().out
    ex.check_ring_edit(0.64, {"STAGES": 3})                     # not this exercise's edit
    assert exercises.last_result is False and "{'STAGES': 2}" in capsys.readouterr().out
    ex.check_ring_edit(0.64, {"RING": 2})                       # no such knob: named, never raised
    assert exercises.last_result is False and "Not accepted" in capsys.readouterr().out
    ex.check_ring_edit(0.64, 2)
    assert exercises.last_result is False and "Not accepted" in capsys.readouterr().out


def test_ring_edit_on_a_gpu_rejects_an_edit_that_fails_its_check(monkeypatch, capsys):
    """On a Hopper GPU the checker runs the edit (helpers.try_kernel, faked here): a variant that fails its
    check is "Not quite" whatever the prediction; a passing one is judged against the live ratio."""
    from helpers.tryout import TryResult

    def fake(like, edit):
        wrong = isinstance(edit, str) and "HSTAGES 0" in edit
        return TryResult(like="hopper_grouped", rung=11, variant="hopper_grouped (edited)", knobs={}, defines={},
                         live=True, stage="check" if wrong else "done", passed=not wrong,
                         verdict="FAIL hopper_grouped M=1000 N=1064 K=1000: 1064000 of 1064000 elements wrong"
                         if wrong else "PASS", timing={} if wrong else {"variant": {"ms": 0.3}, "original": {"ms": 0.192}})

    monkeypatch.setattr(ex, "_run_edit", fake)
    ex.check_ring_edit(0.64, "#define HSTAGES 0 ... an edited file")
    said = capsys.readouterr().out
    assert exercises.last_result is False and "did not pass its check" in said and "FAIL hopper_grouped" in said
    ex.check_ring_edit(0.64, {"STAGES": 2})
    said = capsys.readouterr().out
    assert exercises.last_result is True and "cannot run" not in said and "0.64x" in said
    ex.check_ring_edit(0.95, {"STAGES": 2})
    assert exercises.last_result is False


def test_the_ring_model_drawn_for_rung_9():
    from helpers import plots

    s4, s2 = plots.ring_schedule(4, load=2.0, ktiles=12), plots.ring_schedule(2, load=2.0, ktiles=12)
    assert [t["stage"] for t in s4[:6]] == [0, 1, 2, 3, 0, 1] and [t["parity"] for t in s4[:9]] == [0] * 4 + [1] * 4 + [0]
    assert s4[-1]["end"] - s4[-5]["end"] == 4.0                  # 4 stages cover a load of 2: one K-tile per unit
    assert s2[-1]["end"] - s2[-3]["end"] == 3.0                  # 2 stages: two K-tiles per load + 1
    fig = plots.mbarrier_ring(stages=(4, 2))
    assert [a.get_title(loc="left").split(":")[0] for a in fig.axes] == ["STAGES = 4", "STAGES = 2"]


def test_rung_14_and_15_checks_reject_wrong_results():
    """The check of the FP16-C rungs rejects, at a shape where rung 15 splits K: zeros, C scaled by 1.003, C left
    in FP32 (not rounded to FP16), the other rung's sum (unsplit for split and back: the same numbers, another
    order), and one element one FP16 unit off; and passes each rung's own result."""
    for M, N, K_ in ((136, 264, 1000), (40, 24, 2048)):
        assert K.split_k_plan(M, N, K_)[0] > 1
        A = helpers.random_matrix(M, K_, seed=3).astype(np.float16)
        B = helpers.random_matrix(K_, N, seed=4).astype(np.float16)
        C14, C15 = helpers.gemm(14, A, B), helpers.gemm(15, A, B)
        assert C14.dtype == C15.dtype == np.float16 and (C14 != C15).any()
        for r, good, other in ((K.ALL_RUNGS[14], C14, C15), (K.ALL_RUNGS[15], C15, C14)):
            assert r.check(good, A, B).passed
            one = good.copy()
            one[M // 2, N // 3] = np.nextafter(one[M // 2, N // 3], np.float16(np.inf))
            wrong = {"zeros": np.zeros_like(good), "x1.003": (good.astype(np.float32) * 1.003).astype(np.float16),
                     "the other rung's sum": other, "one element one unit off": one,
                     "FP32 C": _fp32_of(r, A, B)}
            for what, C in wrong.items():
                assert _rejected(r, C, A, B), (r.name, M, N, K_, what)


def _rejected(r, C, A, B, **kw) -> bool:
    """The check fails C, or refuses it as no output of this kernel (FP32 values given for FP16 C)."""
    try:
        return not r.check(C, A, B, **kw).passed
    except helpers.InputError as exc:
        return "is not a fp16 number" in str(exc)


def _fp32_of(r, A, B):
    """The rung's arithmetic without the final rounding to FP16: C as an FP32-C kernel would write it."""
    import dataclasses

    return dataclasses.replace(r.emulate, output="")(A, B)


def test_rung_16_plan_splits_only_the_last_wave():
    """tail_split_plan: whole waves of 66 cluster units first, then the leftover units in parts; no split where
    the last wave is full or more than half full; the split blocks are exactly the tiles of the leftover units."""
    from helpers.analysis import tile_order

    assert K.tail_split_plan(5000, 5000, 5000) == (396, 9, 9)         # 6 waves, then 4 units in 9 parts of 9
    for shape in ((4096,) * 3, (8192,) * 3, (2048,) * 3, (8192, 8192, 1024)):
        units = -(-(-(-shape[0] // 128)) // 2) * -(-shape[1] // 256)
        assert K.tail_split_plan(*shape) == (units, 1, -(-shape[2] // 64)), shape   # "the plan does not split"
        assert K.tail_split_tiles(*shape) == ([], [(0, shape[2])])
    for M, N, K_ in ((5000, 5000, 5000), (4200, 4200, 4200), (128, 8192, 8192), (264, 17152, 1000), (40, 24, 1000)):
        dp, s, per = K.tail_split_plan(M, N, K_)
        tm, tn = -(-M // 128), -(-N // 256)
        units = -(-tm // 2) * tn
        assert s > 1 and dp % 66 == 0 and 0 < units - dp <= 33 and (units - dp) * s <= 66
        blocks, ranges = K.tail_split_tiles(M, N, K_)
        assert len(ranges) == s and ranges[0][0] == 0 and ranges[-1][1] == K_
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges, ranges[1:] + [(K_, K_ + 1)]))
        tail = [t for t in tile_order(tm, tn, "grouped", 8, 2)[2 * dp:] if t[0] < tm]
        assert [(b[0] // 128, b[2] // 256) for b in blocks] == tail
        assert all(b[1] <= M and b[3] <= N for b in blocks)


def test_rung_16_arithmetic_is_rung_14_outside_the_split_tiles_and_its_check_rejects_the_others():
    """At 8 x 17152 x 1000 (67 units: one whole wave, then one unit in 2 parts) rung 16's C equals rung 14's
    everywhere but in the split tile, differs there, and equals rung 15's where both split all of K the same way; its
    check passes its own C and rejects rung 14's (unsplit) sum, zeros and one unit off."""
    M, N, K_ = 8, 17152, 1000
    assert K.tail_split_plan(M, N, K_) == (66, 2, 8)
    A = helpers.random_matrix(M, K_, seed=5).astype(np.float16)
    B = helpers.random_matrix(K_, N, seed=6).astype(np.float16)
    C14, C16 = helpers.gemm(14, A, B), helpers.gemm(16, A, B)
    mask = np.zeros((M, N), bool)
    for r0, r1, c0, c1 in K.tail_split_tiles(M, N, K_)[0]:
        mask[r0:r1, c0:c1] = True
    assert mask.sum() == 8 * 256 and (C16[~mask] == C14[~mask]).all() and (C16[mask] != C14[mask]).any()
    r = K.ALL_RUNGS[16]
    kw = dict(model=lambda *_: C16, reference=A.astype(np.float64) @ B.astype(np.float64))   # (its model: C16)
    assert r.check(C16, A, B, **kw).passed
    one = C16.copy()
    one[5, 17000] = np.nextafter(one[5, 17000], np.float16(np.inf))
    for what, C in {"rung 14's sum": C14, "zeros": np.zeros_like(C16), "one unit off in a split tile": one}.items():
        assert _rejected(r, C, A, B, **kw), what
    a, b = A.copy(), B[:, :24].copy()                                  # 1 unit: rung 15's split, bit for bit
    assert K.tail_split_plan(8, 24, 1000)[1:] == K.split_k_plan(8, 24, 1000)
    assert (helpers.gemm(16, a, b) == helpers.gemm(15, a, b)).all()


def test_the_record_times_the_skinny_rungs_at_their_three_shapes():
    """H.shapes_for: the big-tile rungs (8-16, 25-26) at every timed shape; rungs 17-24 at M = 128, 4096^3 and 8192^3 only
    (each a shape of TIMED, so their gains and like-for-like ratios are read from the same rows as before)."""
    lad = K.hopper_ladder()
    for k, r in lad.items():
        got = H.shapes_for(r)
        if 17 <= k <= 24:
            assert got == [s for s in H.TIMED if s in K.SKINNY_TIMED] and len(got) == 3
        else:
            assert got == list(H.TIMED)
    assert set(K.SKINNY_TIMED) <= set(H.TIMED)


def _h2h_cell(rung_ms, cub_ms, goal=1.0, passed=True, model="identical", shape=(4096, 4096, 4096), c="float16"):
    timed = [{"what": f"rung {k}", "round_ms": ms, "sm_mhz": [1980] * len(ms), "tflops": 1.0} for k, ms in rung_ms.items()]
    timed.append({"what": "cuBLAS", "round_ms": cub_ms, "sm_mhz": [1980] * len(cub_ms), "tflops": 1.0})
    return {"shape": list(shape), "c_dtype": c, "goal": goal, "candidates": list(rung_ms),
            "checks": [{"rung": k, "passed": passed, "model": model} for k in rung_ms], "timed": timed}


def test_head_to_head_judges_the_median_of_round_by_round_ratios():
    """hopper_targets' reader: per round cuBLAS's time over the rung's; the median decides (not the best round, not
    the ratio of medians); the best of the candidates by that median; met iff it reaches the goal; short by how much;
    a candidate that failed its check (or differs from its model) makes `checked` false; a cell without cuBLAS's
    timing (an error) is not judged."""
    # rung 15: rounds 1.02, 0.98, 0.99 -> median 0.99 (its best round 1.02 must not count); rung 29: 0.97 each
    exp = {"cells": [_h2h_cell({15: [1.0, 1.0, 1.0], 29: [1.0, 1.0, 1.0]}, [1.02, 0.98, 0.99]),
                     _h2h_cell({13: [1.0, 2.0, 1.0]}, [0.96, 2.0, 0.97], goal=0.95, c="float32")]}
    exp["cells"][0]["timed"][1]["round_ms"] = [1 / 0.97 * 1.02, 1 / 0.97 * 0.98, 1 / 0.97 * 0.99]
    a, b = LL.head_to_head(exp)
    assert a["rung"] == 15 and abs(a["ratio"] - 0.99) < 1e-12 and a["met"] is False and a["short"] == 0.01
    assert a["won"] == "1 of 3" and abs(a["high"] - 1.02) < 1e-12 and a["checked"]
    assert b["rung"] == 13 and abs(b["ratio"] - 0.97) < 1e-12 and b["met"] is True and b["short"] is None
    assert b["C"] == "FP32"
    # a wrong candidate is never hidden: checked is False (the cell's rungs are timed only where they passed)
    bad = LL.head_to_head({"cells": [_h2h_cell({15: [1.0]}, [1.0], passed=False)]})[0]
    assert bad["checked"] is False
    assert LL.head_to_head({"cells": [_h2h_cell({15: [1.0]}, [1.0], model="differs")]})[0]["checked"] is False
    md = LL.head_to_head_table(exp).data              # the lesson's table: met as yes / no, short by 0.010
    assert "| 15 | 0.990 | 1 of 3 |" in md and "| no | 0.010 |" in md and "| yes |  |" in md
    assert "kernel it built here" not in md and a["ran"] == ""    # no check says what was built: no column
    # a best rung whose launcher built another rung's kernel for the shape says which, in a column of its own
    exp["cells"][0]["checks"][0].update(built="hopper_quad_cluster", cluster=4)   # rung 15's check, as recorded
    exp["cells"][1]["checks"][0].update(built=LL.rung_entry(13).name, cluster=2)  # its own kernel: nothing to say
    a, b = LL.head_to_head(exp)
    assert a["ran"] == "hopper_quad_cluster, clusters of 4" and b["ran"] == ""
    md = LL.head_to_head_table(exp).data
    assert "kernel it built here" in md and "| 15 | hopper_quad_cluster, clusters of 4 | 0.990 |" in md
    exp["cells"][1]["checks"][0].update(cluster=1)    # its own kernel in clusters of another size: said too
    assert LL.head_to_head(exp)[1]["ran"] == f"{LL.rung_entry(13).name}, clusters of 1"
    lost = dict(_h2h_cell({}, []), timed=[], error="CUDARuntimeError: an illegal memory access")
    r = LL.head_to_head({"cells": [lost]})[0]
    assert r["met"] is None and r["rung"] is None and r["error"].startswith("CUDARuntimeError")


def test_hopper_targets_plans_every_target_with_its_candidates():
    """The plan from the record: every target shape and both C types, each with one to three candidates (the best
    ratio first, each a correct rung of that C type at that shape); the record's `hopper_targets` has every cell."""
    from helpers.kernels import rung_entry

    rows = _rec()["hopper"]
    for shape in H.TARGETS:
        for c in ("float16", "float32"):
            cand = LL.target_candidates(rows, shape, c)
            assert 1 <= len(cand) <= 3 and len(set(cand)) == len(cand), (shape, c)
            assert cand[0] == H.best_rung(rows, shape, c)["rung"]
            assert all(rung_entry(k).out_dtype == c for k in cand), (shape, c, cand)
    exp = _rec()["hopper_targets"]
    assert exp["rounds"] == LL.TARGET_ROUNDS and len(exp["cells"]) == 2 * len(H.TARGETS)


def test_hopper_targets_in_a_first_record_plans_from_the_rows_just_measured(tmp_path, monkeypatch):
    """On a Hopper GPU with no record yet, `make record` measures `hopper` before `hopper_targets`: the targets take
    their candidates from those rows (helpers.experiments.RECORDING) instead of failing for want of a file; with
    neither, the experiment says which to run first."""
    import types

    import helpers.device
    import helpers.isolate
    from helpers.experiments import RECORDING

    hopper = _rec()["hopper"]
    monkeypatch.setattr(helpers.device, "require_gpu", lambda what: types.SimpleNamespace(slug="new-hopper"))
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))               # no new-hopper.json there
    plans = []
    monkeypatch.setattr(helpers.isolate, "run_isolated", lambda target, plan, *a, **k: plans.append(plan) or [])
    monkeypatch.setitem(RECORDING, "hopper", hopper)
    out = LL.hopper_targets()
    assert out["cells"] == [] and "error" not in out and len(plans[0]) == 2 * len(H.TARGETS)
    assert [p[3] for p in plans[0]] == [LL.target_candidates(hopper, tuple(p[0]), p[1]) for p in plans[0]]
    monkeypatch.delitem(RECORDING, "hopper")
    out = LL.hopper_targets()
    assert out["cells"] == [] and "--update-experiments hopper" in out["error"] and len(plans) == 1


def test_knob_sweeps_show_their_spread_and_clock():
    """knob_sweep: each value's ratio to the rung as recorded, with the spread both timings' p10 and p90 allow and the
    SM clock, read from the record's rows. Rung 12 with CLUSTER_M=1 (every CTA its own cluster, loading all of B) is
    resolved slower than rung 12 as built; the rung's own row has no spread and its own clock."""
    from helpers.clocks import clock_text

    kn = _rec()["knobs"]
    rows = {r["value"]: r for r in KN.knob_rows(kn, 12, "CLUSTER_M")}
    base = next(r for r in kn if r["rung"] == 12 and r.get("knob") is None)
    one = next(r for r in kn if r["rung"] == 12 and (r.get("knob"), r.get("value")) == ("CLUSTER_M", 1))
    c1 = rows["CLUSTER_M=1"]
    assert c1["ratio"] == one["vs_default"] and c1["clock"] == clock_text(one)
    assert c1["low"] == pytest.approx(base["p10_ms"] / one["p90_ms"]) and c1["high"] == pytest.approx(
        base["p90_ms"] / one["p10_ms"])
    assert c1["low"] <= c1["ratio"] <= c1["high"] < 1                  # slower, and the spread says so
    own = rows["CLUSTER_M=2 (as recorded)"]
    assert own["low"] is None and own["high"] is None and own["clock"] == clock_text(base)
    assert list(rows) == ["CLUSTER_M=1", "CLUSTER_M=2 (as recorded)", "CLUSTER_M=4"]
    s8 = {r["value"]: r for r in KN.knob_rows(kn, 8, "STAGES")}["STAGES=2"]
    assert s8["low"] <= s8["ratio"] <= s8["high"]                       # every value gets its spread
    t = KN.knob_sweep(kn, 12, "CLUSTER_M").data
    assert (f"| CLUSTER_M=1 | {c1['ratio']:.2f} | {c1['low']:.2f} | {c1['high']:.2f} | {c1['clock']} | yes |" in t
            and "None" not in t and t.startswith("| rung 12, 4096^3 |"))


def test_rung_slides_read_their_gain_where_the_rung_is_judged():
    import helpers
    from helpers.experiments import hopper as H

    hop = helpers.results.load_latest().meta["experiments"]["hopper"]
    g9 = H.rung_gain(hop, 9)
    assert (g9["shape"], g9["over"]) == ("4096^3", 8)
    r9, r8 = (next(r for r in H.timed_rows(hop, 4096) if r["rung"] == k) for k in (9, 8))
    assert g9["measured"] == pytest.approx(r9["tflops"] / r8["tflops"], abs=1e-3)
    g15 = H.rung_gain(hop, 15)
    assert (g15["shape"], g15["over"], g15["predicted"]) == ("128x8192x8192", 14, H.OWN_SHAPE[15][1])
    line = H.rung_line(hop, 9)
    assert line.startswith("rung 9: PASS at ") and f"x{g9['measured']:.2f} over rung 8" in line
    bad = [dict(r, passed=False) if r.get("rung") == 9 and r.get("m") == 257 else r for r in hop]
    assert "FAIL at 257x520x136" in H.rung_line(bad, 9)
    assert H.rung_line([r for r in hop if r.get("rung") != 12], 12) == "rung 12: not in this run"


def test_prediction_points_cover_rungs_8_to_16_at_both_sizes_and_their_own_shapes():
    import helpers
    from helpers.experiments import hopper as H

    pts = H.prediction_points(helpers.results.load_latest().meta["experiments"]["hopper"])
    assert {(p["rung"], p["shape"]) for p in pts} == ({(k, s) for k in range(8, 17) for s in ("4096^3", "8192^3")}
                                                      | {(15, "128x8192x8192"), (16, "5000^3")})
    assert all(p["low"] <= p["measured"] <= p["high"] for p in pts)


def test_the_live_measurement_is_the_records_subset_and_loads_it_on_the_cpu(capsys):
    import helpers
    from helpers.experiments import hopper as H

    assert set(H.LIVE["rungs"]) == set(range(7, 17)) and all(tuple(s) in H.TIMED for s in H.LIVE["timed"])
    rec = helpers.results.load_latest()
    data, source = H.measure_or_load(rec)
    out = capsys.readouterr().out
    assert data == rec.meta["experiments"]["hopper"] and source.startswith(rec.label)
    assert "checked launches passed" in out and "estimated" not in out


def test_reveal_gain_judges_a_guess_against_the_recorded_gain(capsys):
    import helpers
    from helpers.exercises import hopper as ex
    from helpers.experiments import hopper as H

    g = H.rung_gain(helpers.results.load_latest().meta["experiments"]["hopper"], 8)["measured"]
    ex.reveal_gain(g * 1.04, 8)
    assert "Correct." in capsys.readouterr().out
    ex.reveal_gain(g * 1.2, 8)
    assert "Not quite." in capsys.readouterr().out
    ex.reveal_gain(None, 8)
    assert "No guess yet" in capsys.readouterr().out


def test_head_to_head_by_gpu_puts_each_record_in_its_own_columns():
    """Two records side by side: one row per goal shape, a column per GPU and C type with that GPU's best rung and
    ratio, "missed" below the goal; a record without hopper_targets adds no column; a goal one record lacks reads
    "-" in its columns; goals_line counts the goals met and says whether every candidate was correct."""
    import copy

    h200 = helpers.results.load_latest()
    h100 = copy.deepcopy(h200)
    h100.meta["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    cell = h100.meta["experiments"]["hopper_targets"]["cells"][0]
    for t in cell["timed"]:                                   # cuBLAS twice as fast as every rung in every round
        if t["what"] == "cuBLAS":
            t["round_ms"] = [ms / 2 for ms in t["round_ms"]]
    bare = copy.deepcopy(h200)
    bare.meta["gpu"]["name"] = "NVIDIA A100"
    del bare.meta["experiments"]["hopper_targets"]
    rows = LL.head_to_head_by_gpu([h200, h100, bare])
    own = LL.head_to_head(h200.meta["experiments"]["hopper_targets"])
    assert [r["shape"] for r in rows] == list(dict.fromkeys(r["shape"] for r in own))
    assert all(not any("A100" in k for k in r) for r in rows)
    first, col = own[0], f"{own[0]['C']} C"
    assert rows[0][f"H200, {col}"] == f"{first['ratio']:.3f}, rung {first['rung']}" + ("" if first["met"] else ", missed")
    assert rows[0][f"H100 80GB HBM3, {col}"].endswith(", missed")             # half of a ratio near 1 misses
    assert rows[1] == {**rows[1], **{f"H100 80GB HBM3, {c} C": rows[1][f"H200, {c} C"] for c in ("FP16", "FP32")}}
    short = h100.meta["experiments"]["hopper_targets"]["cells"]
    short[:] = [c for c in short if "x".join(map(str, c["shape"])) != own[-1]["shape"]]
    last = LL.head_to_head_by_gpu([h200, h100])[-1]
    assert last["shape"] == own[-1]["shape"] and last["H100 80GB HBM3, FP16 C"] == "-" != last["H200, FP16 C"]
    assert "H100 80GB HBM3, FP32 C: x cuBLAS" in LL.head_to_head_by_gpu_table([h200, h100]).data
    met = sum(r["met"] is True for r in own)
    assert f"met {met} of {len(own)} goals; every candidate bit-identical" in LL.goals_line(h200)
    # a record whose maps asked L2 for another amount than the course's says so; one that matches says nothing
    from helpers.hopper import L2_PROMOTION, promotion_bytes

    h200.meta.setdefault("updates", []).append({"date": "2030-01-01T00:00:00+00:00", "experiments": ["hopper_targets"],
                                                "l2_promotion": L2_PROMOTION})
    h200.meta["experiments"]["hopper_targets"]["cells"][0]["checks"][0]["passed"] = False
    assert LL.goals_line(h200).endswith("1 goal with a wrong candidate")
    h200.meta["updates"][-1]["l2_promotion"] = "L2_256B" if L2_PROMOTION != "L2_256B" else "L2_128B"
    asked = promotion_bytes(h200.meta["updates"][-1]["l2_promotion"])
    assert LL.goals_line(h200).endswith(f"its tensor maps asked L2 for {asked} bytes per miss, the course's for "
                                        f"{promotion_bytes()} bytes per miss (Appendix E)")
    assert [promotion_bytes(p) for p in ("NONE", "L2_64B", "L2_128B", "L2_256B")] == [0, 64, 128, 256]


def test_widest_gaps_ranks_the_goals_where_two_gpus_differ_most():
    """A copy of the record with cuBLAS twice as fast in one goal's rounds: that goal comes first, its gap the
    difference of the two ratios (half the ratio), the others' gap 0; with one record there is nothing to rank."""
    import copy

    h200 = helpers.results.load_latest()
    other = copy.deepcopy(h200)
    other.meta["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    cell = other.meta["experiments"]["hopper_targets"]["cells"][3]
    for t in cell["timed"]:
        if t["what"] == "cuBLAS":
            t["round_ms"] = [ms / 2 for ms in t["round_ms"]]
    own = LL.head_to_head(h200.meta["experiments"]["hopper_targets"])
    first, second = LL.widest_gaps([h200, other], top=2)
    assert (first["shape"], first["C"]) == (own[3]["shape"], own[3]["C"])
    assert first["gap"] == pytest.approx(first["H200"] / 2, rel=0.02) and second["gap"] == 0
    assert LL.widest_gaps([h200]) == []


def test_overview_names_where_rungs_15_and_16_aim():
    """The overview table's last column: rungs 15 and 16 at their own shape, over their own base, as OWN_SHAPE
    holds them (their 4096^3 gain, where nothing splits, is not their prediction); nothing for the other rungs."""
    from helpers.experiments import hopper as H

    for rung, (shape, gain, base) in H.OWN_SHAPE.items():
        goal = H.own_shape_goal(rung)
        assert goal.startswith(f"x{gain:g} at ") and H.shape_name(shape) in goal and goal.endswith(f"rung {base}")
    assert H.own_shape_goal(15) == "x1.8 at 128x8192x8192 over rung 14"
    assert all(H.own_shape_goal(r) == "" for r in range(8, 15))
