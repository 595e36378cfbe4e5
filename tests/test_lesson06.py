"""Lesson 6 without a GPU: its rungs' CPU model through the one launch path, the skip messages, the exercise
checkers (helpers/exercises/hopper.py), the reading of the `hopper` experiment's rows
(helpers/experiments/hopper.py), and lab/probes/hopper_try.py's whole flow with its child processes faked."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import exercises
from helpers import kernels as K
from helpers.exercises import hopper as ex
from helpers.experiments import hopper as H

ROOT = Path(__file__).resolve().parent.parent


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


# --------------------------------------------------------------------------- the experiment and its reading
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


def test_hopper_experiment_is_registered_and_reads_its_rows():
    from helpers.experiments import REGISTRY, load_all

    load_all()
    assert REGISTRY["hopper"] is H.hopper
    rows = _rows()
    g = H.gains(rows, 4096)
    assert [x["rung"] for x in g] == [7, *range(8, 27), 29, 30] and g[0]["verdict"] == "-"
    assert [x["over"] for x in g] == [None, *range(7, 18), 17, 19, 19, 20, 21, 22, 14, 13, 25, 26]   # rungs 19, 21-26,
    # 29-30: over 17, 19, 20, 21, 22, 14, 13, 25, 26
    assert all(x["verdict"] == "as predicted" and x["direction"] is None for x in g[1:])   # no spread: the median (rung
    # 19 predicts no gain, and a prediction of no change inside the spread is as predicted)
    t = H.targets(rows)
    assert [(x["shape"], x["C"]) for x in t[:4]] == [("4096x4096x4096", "FP16"), ("4096x4096x4096", "FP32"),
                                                     ("8192x8192x8192", "FP16"), ("8192x8192x8192", "FP32")]
    x16, x32 = t[0], t[1]                                      # like for like: each C type against its own cuBLAS
    assert x16["rung"] == 14 and x32["rung"] == 13
    chain = {k: r["tflops"] for k, r in ((r["rung"], r) for r in rows if r["m"] == 4096)}
    assert x16["ratio"] == pytest.approx(chain[14] / 750.0) and x32["ratio"] == pytest.approx(chain[13] / 720.0)
    assert x16["met"] is (x16["ratio"] >= 1.0) and (x16["short"] is None) == x16["met"]
    assert all(x["rung"] is None and x["met"] is None for x in t if x["shape"] == "2048x2048x2048")   # not timed
    t = H.shape_table(rows, shapes=((4096, 4096, 4096), (8192, 28672, 4096)))
    assert t[0]["rung_fp32c"] == 13 and t[0]["rung_fp16c"] == 14 and t[1]["rung_fp16c"] is None
    assert t[0]["cublas_fp16c"] == 750.0 and t[0]["cublas_fp32c"] == pytest.approx(720.0)
    assert t[0]["shape"] == "4096x4096x4096"
    assert set(H.MISS_NOTES) == set(K.HOPPER_RUNGS) and all(set(v) == {"better", "worse"} for v in H.MISS_NOTES.values())
    assert H.TIMED[:4] == tuple((n, n, n) for n in (2048, 4096, 6144, 8192)) and (128, 8192, 8192) in H.TIMED
    for M, N, K_ in H.ODD_SIZES:
        assert M % 8 or N % 8 or K_ % 64                     # not tile multiples


# --------------------------------------------------------------------------- lab/probes/hopper_try.py, faked children
def _load_try():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hopper_try", ROOT / "tools" / "hopper_try.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hopper_try_reports_failures_wrong_results_and_the_table(monkeypatch, tmp_path, capsys):
    """The GPU script's whole flow with its child processes faked: every outcome gets its line, the JSON is
    written, the exit status says a rung failed."""
    mod = _load_try()

    def row(k, M, N, K_, **kw):
        r = K.ALL_RUNGS[k]
        base = {"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": M, "n": N, "k": K_,
                "regs": 168, "smem_static": 0, "smem_dynamic": r.dyn_smem, "smem": r.dyn_smem, "spills": 0,
                "passed": True, "verdict": f"PASS {r.name} M={M} N={N} K={K_}: ..."}
        return {**base, **kw}

    def fake(func, *args, timeout=240, **kw):
        name = func.split(":")[1]
        if name == "gpu_facts":
            return {"name": "NVIDIA H200", "slug": "nvidia-h200", "cc": [9, 0], "sms": 132, "l2_bytes": 62914560,
                    "driver_cuda": "13.0", "runtime": "13.0", "nvrtc": "13.0", "cupy": "14.2.0", "clocks_idle": None}
        if name == "cluster_probe":
            return {"path": "plain launch", "forms_clusters": True,
                    "blocks": [{"cluster_size": 2, "rank": i % 2, "cluster": i // 2} for i in range(8)]}
        k, timed, odd = args
        if k == 10:
            return {"error": "timed out after 60 s (a hang: e.g. an mbarrier that never completes)"}
        out = [row(k, *s) for s in odd]
        if k == 9:
            out[1] = row(k, *odd[1], passed=False, verdict="FAIL hopper_warp_specialized M=257 N=520 K=136: 3 NaN",
                         mismatch="3 of 133640 elements wrong (3 of them NaN: never written)")
        if k == 12:
            out.append(row(k, *timed[0], error="CUDARuntimeError: cudaErrorIllegalAddress (the CUDA context is "
                                                 "lost: the remaining sizes were not tried)"))
            return out
        for M, N, K_ in timed:
            out.append(row(k, M, N, K_, tflops=500.0 + 10 * k, median_ms=0.2, p10_ms=0.19, p90_ms=0.21, reps=100,
                           frac_cublas=0.7, cublas_tflops=740.0, sm_mhz=1980, sm_mhz_min=1900, power_w=400.0,
                           power_w_max=420.0, throttle=["none"], resident="132 blocks"))
        return out

    monkeypatch.setattr(mod, "run_isolated", fake)
    out = tmp_path / "try.json"
    assert mod.main([str(out)]) == 1
    said = capsys.readouterr().out
    assert "cluster probe: launched by plain launch; forms clusters of 2: True" in said
    assert "WRONG rung 9 (hopper_warp_specialized) at 257x520x136" in said and "never written" in said
    assert "FAILED rung 10 (hopper_persistent): its child process did not return" in said
    assert "FAILED rung 12 (hopper_cluster) at 4096x4096x4096" in said and "IllegalAddress" in said
    assert "4096x4096x4096: 580.0 TFLOP/s" in said                        # rung 8
    last = max(K.hopper_ladder())                    # every fake rung at 0.7x: the tie goes to the highest rung
    assert f"target at 4096x4096x4096: 1.00x cuBLAS; best correct rung {last}: 0.700x -> missed" in said
    assert "PROBLEM rung 10 (hopper_persistent)" in said
    log = json.loads(out.read_text())
    assert log["gpu"]["name"] == "NVIDIA H200" and set(log["rungs"]) == {str(k) for k in K.hopper_ladder()}
    assert log["rungs"]["10"]["rows"]["error"].startswith("timed out")


def test_hopper_try_without_a_hopper_gpu(monkeypatch, tmp_path, capsys):
    mod = _load_try()
    monkeypatch.setattr(mod, "run_isolated", lambda func, *a, **kw: {
        "name": "Tesla T4", "slug": "tesla-t4", "cc": [7, 5], "sms": 40, "l2_bytes": 4 << 20, "driver_cuda": "12.4",
        "runtime": "12.4", "nvrtc": "12.4", "cupy": "14.2.0"})
    assert mod.main([str(tmp_path / "t.json")]) == 2
    assert "SKIPPED: lesson 6's kernels are sm_90a code" in capsys.readouterr().out


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
    for every producer count the split fits the pool and equals kernels/hopper_sm90a.cu's CONSUMER_REGS
    ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8). The SM-based formula gave 232 for 48, which would not fit."""
    from helpers.exercises import hopper as hx

    assert hx.CTA_POOL == 168 * 384 == 64512
    for producer in range(24, 129, 8):
        c = hx.consumer_registers(producer)
        assert producer * 128 + 2 * 128 * c <= hx.CTA_POOL
        assert c == (168 * 3 - producer) // 2 // 8 * 8
    assert hx.consumer_registers(48) == 224 and (65536 - 48 * 128) // 256 // 8 * 8 == 232


# --------------------------------------------------------------------------- issue 24: predictions that can fail
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
    assert H.MISS_NOTES[13][g[13]["direction"]]


def test_the_record_holds_spreads_and_its_verdicts():
    d = helpers.results.load_latest().meta["experiments"]["hopper"]
    g = {x["rung"]: x for x in H.gains(d, 4096)}
    assert all(g[k]["low"] <= g[k]["measured"] <= g[k]["high"] for k in range(8, 14))
    assert g[8]["verdict"] == "missed: better than predicted"      # x1.47 for a predicted x1.3
    assert g[12]["verdict"] == "missed: worse than predicted"      # x1.00 for a predicted x1.03


# --------------------------------------------------------------------------- exercise 4: edit the ring
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


# --------------------------------------------------------------------------- the prose of rungs 14-15 and the closing slides
def _rec():
    return helpers.results.load_latest().meta["experiments"]


def test_claims_about_the_knob_sweeps_of_rungs_9_to_15():
    kn = [r for r in _rec()["knobs"] if r.get("knob")]
    at = {(r["rung"], r["knob"], r["value"]): r for r in kn}
    assert all(at[k, "STAGES", 2]["vs_default"] <= 0.70 for k in range(9, 16))   # "lose 30% or more"
    assert at[13, "CLUSTER_M", 4]["vs_default"] < 0.9                  # "four CTAs per cluster cost rung 13 speed"
    assert all(at[k, "PRODUCER_REGS", 24]["vs_default"] >= 0.98 for k in range(9, 15))   # "at most 2%"
    assert all(r["passed"] for r in kn if r["rung"] in (14, 15))


def test_claims_about_the_shapes_where_the_goals_are_missed():
    from helpers.exercises.hopper import waves

    w, busy = waves(5000, 5000)
    assert w == 7 and busy < 0.9                                       # "just over six waves"
    n14, n15 = (H.ncu_at(t, (5000, 5000, 5000))["counters"] for t in ("rung14", "rung15"))
    assert n15["l2_read_sectors"] > n14["l2_read_sectors"] and n15["tensor_pipe_pct"] < n14["tensor_pipe_pct"]
    assert K.split_k_plan(128, 8192, 8192) == (4, 32)                  # 4 x 32 tiles = 128 CTAs at work
    e = H.ncu_at("rung15", (128, 8192, 8192))
    c = e["counters"]
    assert c["tensor_pipe_pct"] < 60 and c["dram_throughput_pct"] < 60    # "well below their peaks"
    assert e["top_stalls"][0][0] == "long_scoreboard"
    assert not [r for r in K.HOPPER_RUNGS.values() if r.split_k and r.out_dtype == "float32"]   # "no FP32 split-K"


def test_claims_about_the_input_values():
    rows = _rec()["input_values"]
    assert rows and all(r["passed"] for r in rows)
    capped = [r for r in rows if "sw power cap" in (r.get("throttle") or [])]
    assert len(capped) > len(rows) / 2                                # "during most of these timings"
    clock = {k: np.median([r["sm_mhz"] for r in rows if r["inputs"] == k]) for k in H.INPUT_KINDS}
    assert min(clock["e4m3"], clock["zeros"]) > max(clock["normal"], clock["uniform"])   # "the clock was higher"
    t = {r["inputs"]: r for r in H.input_table(rows)}
    assert t["zeros"]["cublas_fp16"] > t["e4m3"]["cublas_fp16"] > t["normal"]["cublas_fp16"]


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


def _rejected(r, C, A, B) -> bool:
    """The check fails C, or refuses it as no output of this kernel (FP32 values given for FP16 C)."""
    try:
        return not r.check(C, A, B).passed
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
    """At 136 x 17152 x 1000 (67 units: one whole wave, then one unit of 2 tiles in 2 parts) rung 16's C equals
    rung 14's everywhere but in the split tiles, differs there, and equals rung 15's where both split all of
    K the same way; its check passes its own C and rejects rung 14's (unsplit) sum, zeros and one unit off."""
    M, N, K_ = 136, 17152, 1000
    assert K.tail_split_plan(M, N, K_) == (66, 2, 8)
    A = helpers.random_matrix(M, K_, seed=5).astype(np.float16)
    B = helpers.random_matrix(K_, N, seed=6).astype(np.float16)
    C14, C16 = helpers.gemm(14, A, B), helpers.gemm(16, A, B)
    mask = np.zeros((M, N), bool)
    for r0, r1, c0, c1 in K.tail_split_tiles(M, N, K_)[0]:
        mask[r0:r1, c0:c1] = True
    assert mask.sum() == 2 * 128 * 256 - 120 * 256 and (C16[~mask] == C14[~mask]).all() and (C16[mask] != C14[mask]).any()
    r = K.ALL_RUNGS[16]
    assert r.check(C16, A, B).passed
    one = C16.copy()
    one[130, 17000] = np.nextafter(one[130, 17000], np.float16(np.inf))
    for what, C in {"rung 14's sum": C14, "zeros": np.zeros_like(C16), "one unit off in a split tile": one}.items():
        assert _rejected(r, C, A, B), what
    a, b = A[:40].copy(), B[:, :24].copy()                             # 1 unit: rung 15's split, bit for bit
    assert K.tail_split_plan(40, 24, 1000)[1:] == K.split_k_plan(40, 24, 1000)
    assert (helpers.gemm(16, a, b) == helpers.gemm(15, a, b)).all()


def test_claims_of_the_rung_16_slide():
    """Rung 16: the busiest CTA's K-tiles (553 -> 483 at 5000^3) as the prediction says; the outcome missed it
    on the slow side; the number of parts hardly matters (all parts within 6% of each other); rung 14 reads
    more L2 sectors per tile and K-tile at 5000 than at 4096; rows of 10000 bytes touch more sectors than
    sector-aligned ones, and the same product from aligned rows runs faster for both rungs; and (Summary)
    aligning the rows gains rung 14 more than splitting the last wave does."""
    from helpers import analysis as A

    busiest = lambda w: max(sum(-(-(k1 - k0) // 64) for _, k0, k1 in x) for x in w)
    dp, s, _ = K.tail_split_plan(5000, 5000, 5000)
    assert busiest(A.tail_split_work(5000, 5000, 5000, 132, None, 1)) == 7 * 79 == 553
    assert busiest(A.tail_split_work(5000, 5000, 5000, 132, dp, s)) == 6 * 79 + 9 == 483
    hop = _rec()["hopper"]
    g = H.gain_at(hop, 16, (5000, 5000, 5000), predicted=1.11, base=14)
    assert g["verdict"] == "missed: worse than predicted" and g["measured"] > 1.0
    ts = _rec()["tail_split"]
    tf = [r["tflops"] for r in ts["parts_sweep"]]
    assert all(r["passed"] and r["model"] == "identical" for r in ts["parts_sweep"] + ts["row_alignment"])
    assert max(tf) / min(tf) < 1.06 and [r["parts"] for r in ts["parts_sweep"]][0] == 1     # "hardly matters"
    per = {n: H.ncu_at("rung14", (n,) * 3)["counters"]["l2_read_sectors"] / (-(-n // 128) * -(-n // 256) * -(-n // 64))
           for n in (4096, 5000)}
    assert per[5000] > per[4096]
    assert A.sectors_per_row(10000) > A.sectors_per_row(10016) == A.sectors_per_row(10112) == 4.0
    al = {(r["rung"], r["row_bytes"]): r["tflops"] for r in ts["row_alignment"]}
    for rung in (14, 16):
        assert al[rung, 10016] > al[rung, 10000] and al[rung, 10112] > al[rung, 10000]
    # Summary's claim, from pairs timed at the same SM clock: aligned rows gain rung 16 more (probe, 1980 MHz both)
    # than splitting the last wave gains over rung 14 (the hopper record, 1980 MHz both)
    mhz = {(r["rung"], r["row_bytes"]): r["clocks"]["sm_mhz"] for r in ts["row_alignment"]}
    assert mhz[16, 10016] == mhz[16, 10000] and g["clock"] == "1980 MHz"
    assert {r["sm_mhz"] for r in H.timed_rows(hop, (5000,) * 3) if r["rung"] in (14, 16)} == {1980}
    assert al[16, 10016] / al[16, 10000] > g["measured"]


def test_claims_of_appendix_d():
    """Appendix D, from the record: cuBLAS's kernel names give a ring (stages x tile x K-tile) within 16-28 KB of
    the shared memory each asks for; a different tile at each of the 5 shapes; 5000^3 in exactly 5 waves of 132; at
    128 x 8192 x 8192 a grid of 128 CTAs, one per tile of its shape (no split); at 7000^3 the best rungs match
    cuBLAS with FP16 C and pass it with FP32 C, and cuBLAS's FP16-C timing ran at a lower clock (the record's targets
    judge no ratio there that a throttled cuBLAS flatters); cuBLAS gains 3%
    from aligned rows, rung 16 13%; the power-of-two row stride changes rungs 15 and 16 by under 2%. Every C
    behind these timings passed its check."""
    e = _rec()
    ck = H.cublas_kernel_rows(e["cublas_kernels"], 132)
    assert len(ck) == 10 and all(r["tile"] for r in ck)
    assert all(16 <= r["smem_kb"] - r["ring_kb"] <= 28.5 for r in ck), [(r["smem_kb"], r["ring_kb"]) for r in ck]
    assert len({r["tile"] for r in ck}) == len({r["shape"] for r in ck}) == 5              # "a tile per shape"
    by = {(r["shape"], r["C"]): r for r in ck}
    assert by["5000x5000x5000", "FP16"]["tile"] == "256x152" and by["5000x5000x5000", "FP16"]["tiles"] == 5 * 132
    skinny = by["128x8192x8192", "FP16"]
    assert skinny["grid"] == skinny["tiles"] == 128 and skinny["stages"] == 8
    assert all(len(c["kernels"]) == 1 for c in e["cublas_kernels"]["calls"])          # no separate reduction
    sq = {(r["shape"], r["C"]): r for r in H.square_rows(e["square_sizes"])}
    assert all(r["passed"] and r["model"] == "identical" for r in e["square_sizes"]["rows"])
    assert {s for s, _ in sq} == {"5000x5000x5000", "6000x6000x6000", "7000x7000x7000", "8000x8000x8000"}
    assert all(int(s.split("x")[0]) % 128 for s, _ in sq)
    assert (14000 % 32, 10000 % 32) == (16, 16)
    assert 0.99 <= sq["7000x7000x7000", "FP16"]["ratio"] and sq["7000x7000x7000", "FP32"]["ratio"] > 1.0
    r16 = sq["7000x7000x7000", "FP16"]
    assert (r16["cublas_mhz"], r16["mhz"]) == (1770, 1980)
    # ... and the record's targets judge no ratio at 7000^3 that cuBLAS's throttled timing flatters: it is missed,
    # or not judged with a reason that names cuBLAS's timing ("read the clocks before the ratios")
    t = {(x["shape"], x["C"]): x for x in H.targets(e["hopper"])}["7000x7000x7000", "FP16"]
    assert t["met"] is False or (t["met"] is None and t["why"].startswith("cuBLAS's timing")), t
    assert "The\n# targets table times the two in turn instead, and there both C types meet 0.95x." in (
        ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    h = {(x["shape"], x["C"]): x for x in H.head_to_head(e["hopper_targets"])}
    assert h["7000x7000x7000", "FP16"]["met"] is True and h["7000x7000x7000", "FP32"]["met"] is True
    al = {(r["rung"], r["b_row_bytes"]): r for r in e["tail_split"]["row_alignment_cublas"]["rows"]}
    assert all(r["passed"] for r in al.values())
    gain = lambda k: al[k, 10112]["tflops"] / al[k, 10000]["tflops"]
    assert round(100 * (gain(0) - 1)) == 3 and round(100 * (gain(16) - 1)) == 13
    sk = {(r["rung"], r["b_row_bytes"]): r["tflops"] for r in e["tail_split"]["row_stride_skinny"]["rows"]}
    assert all(abs(sk[k, 16512] / sk[k, 16384] - 1) < 0.02 for k in (0, 15, 16))


def test_claims_of_the_row_stride_counters_slide():
    """Appendix D, 'What the counters say about the row stride' (results/logs/ncu-row-alignment, l2-prefetch,
    group-m): from 10112- to 10000-byte rows both kernels make about twice the L2 requests; rung 16 reads more from
    DRAM and cuBLAS the same; rung 16's long-scoreboard stall about triples, cuBLAS's grows by about a quarter; rung
    16's tensor-pipe share falls, cuBLAS's hardly changes. L2_PREFETCH: about half speed at 5000^3 at every distance,
    slower at 4096^3 too; GROUP_M 4 and 16 no faster than 8; every build correct; the gap at 5000^3 stays. Each
    claim can fail: the numbers come from the logs, not from this test."""
    na = {(r["kernel"], r["row_bytes"]): r for r in H.ncu_alignment_rows()}
    ratio = lambda k, f: na[k, 10000][f] / na[k, 10112][f]   # noqa: E731
    r16, cub = "rung 16", "cuBLAS FP16 C"
    assert all(1.7 < ratio(k, "requests_m") < 2.5 for k in (r16, cub))
    assert (10000 % 128, 10112 % 128) == (16, 0)
    from helpers.analysis import sectors_per_row
    assert sectors_per_row(10000, 128, 128, 8) == 1 + 7 / 8 and sectors_per_row(10112, 128, 128, 8) == 1.0   # "7 of 8"
    fig = helpers.plots.box_rows_in_lines([10000, 10112])
    assert [len(ax.patches) for ax in fig.axes] == [8, 8] and "1.88 lines" in fig.axes[0].get_title(loc="left")
    assert ratio(r16, "dram_mb") > 1.15 and abs(ratio(cub, "dram_mb") - 1) < 0.01
    assert 2.5 < ratio(r16, "long_scoreboard") < 3.5 and 1.15 < ratio(cub, "long_scoreboard") < 1.35
    assert na[r16, 10112]["tensor_pct"] - na[r16, 10000]["tensor_pct"] > 5
    assert abs(na[cub, 10112]["tensor_pct"] - na[cub, 10000]["tensor_pct"]) < 2
    pf = H.switch_rows("l2_prefetch", 0)
    assert all(r["passed"] for r in pf) and {r["l2_prefetch"] for r in pf} == {0, 2, 4, 8}
    assert all(0.5 < r["gain"] < 0.6 for r in pf if r["shape"] == "5000x5000x5000" and r["l2_prefetch"])
    assert all(r["gain"] < 0.9 for r in pf if r["shape"] == "4096x4096x4096" and r["l2_prefetch"])
    gm = H.switch_rows("group_m", 8)
    assert all(r["passed"] for r in gm) and all(r["gain"] <= 1.0 for r in gm)
    cm = {r["cluster_m"]: r for r in H.switch_rows("cluster_m", 2)}
    assert all(r["passed"] for r in cm.values()) and round(cm[4]["gain"], 2) == 1.08 and cm[1]["gain"] < 1.0
    assert 128 + 256 // 4 == 192 and 128 + 256 // 2 == 256              # box rows of A and of this CTA's B per K-tile
    assert "Predicted before it ran (session 14): x1.04 for\n        # 4" in (ROOT / "lab/probes/wait_hint.py").read_text()
    assert all(r["vs_cublas"] < 0.95 for r in pf + gm + list(cm.values()) if r["shape"] == "5000x5000x5000")
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for claim in ("Both kernels make about twice the L2 requests", "7 of every 8 box rows span two lines", "Rung 16 also reads more from DRAM (cuBLAS reads the same)",
                  "grows about threefold\n# where cuBLAS's grows by a quarter", "It ran at about\n# half speed",
                  "was no faster.", "rung 14 ran 8% faster at $5000^3$ (predicted\n# before it ran: 4%). It is still short of cuBLAS there."):
        assert claim in src, claim
    ksrc = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert "L2_PREFETCH" not in ksrc and "prefetch" not in ksrc          # the switch left: "kept in commit 1bcb7f2 only"
    assert "(a probe switch, kept in commit 1bcb7f2 only)" in src

def test_appendix_d_wave_filling_and_its_exercise(capsys):
    """'A menu of widths fills nearly all of them': the best 128-row width leaves at most 6% of the slots empty at
    every n from 4000 to 9000 (one 128 x 256 tile: up to 22%); at 5000^3 the best width is 152, one side of the
    tile cuBLAS ran there, and rung 14's tile fills 83% (the hint). The checker accepts 152 only."""
    ns = range(4000, 9001, 16)
    best = [ex.tile_efficiency(n, n, 128, ex.best_tile_width(n)) for n in ns]
    one = [ex.tile_efficiency(n, n, 128, 256) for n in ns]
    assert min(best) >= 0.94 and min(one) < 0.8 and all(b >= o for b, o in zip(best, one))
    assert ex.best_tile_width(5000) == 152 and round(ex.tile_efficiency(5000, 5000, 128, 256), 2) == 0.83
    tile = next(r["tile"] for r in H.cublas_kernel_rows(_rec()["cublas_kernels"]) if r["shape"] == "5000x5000x5000")
    assert "152" in tile.split("x")
    # brute force, independent of best_tile_width: no width of 128..256 beats 152 at 5000^3
    eff = {bn: 25e6 / (-(-(40 * -(-5000 // bn)) // 132) * 132 * 128 * bn) for bn in range(128, 257, 8)}
    assert max(eff, key=eff.get) == 152
    for answer, ok in ((152, "Correct."), (160, "Not quite"), (256, "Not quite")):
        ex.check_tile_width(answer, n=5000)
        assert ok in capsys.readouterr().out


def test_claims_of_the_rung_17_slide():
    """Appendix D's rung 17, from the record: correct wherever it ran; worse than predicted at both shapes
    (x1.25 over rung 16 at 128 x 8192 x 8192, x0.6 at 4096^3); at 128 rows it reads B about once from DRAM
    ("reads B once") with DRAM about half busy; each stage fewer costs speed there (8 > 6 > 4), and 8 stages of
    24 KB are the most that fit beside the epilogue buffers; it copies cuBLAS's kernel there (64 x 128 of our C
    from cuBLAS's 128 x 64, 8 stages, 2-CTA clusters, 128 CTAs)."""
    e = _rec()
    rows = [r for r in e["hopper"] if r["rung"] == 17 and "passed" in r]
    assert rows and all(r["passed"] and r["model"] == "identical" for r in rows)
    for shape, predicted in (((128, 8192, 8192), 1.25), ((4096,) * 3, 0.6)):
        g = H.gain_at(e["hopper"], 17, shape, predicted)
        assert g["verdict"] == "missed: worse than predicted" and g["high"] < predicted, (shape, g)
    ncu = H.ncu_at("rung17", (128, 8192, 8192))["counters"]
    b_bytes = 8192 * 8192 * 2
    assert b_bytes <= ncu["dram_read_bytes"] <= 1.05 * b_bytes                 # B once (and A's 2 MB)
    assert 40 <= ncu["dram_throughput_pct"] <= 65                                # "about half busy"
    kn = {r["knobs"].get("SKINNY_STAGES", 8): r for r in e["tail_split"]["skinny_knobs"]["rows"]
          if set(r["knobs"]) <= {"SKINNY_STAGES"}}
    assert all(r["passed"] for r in e["tail_split"]["skinny_knobs"]["rows"])
    assert kn[4]["tflops"] < kn[6]["tflops"] < kn[8]["tflops"]
    assert K.skinny_smem(8) <= 227 * 1024 < K.skinny_smem(9) and K.SKINNY_STAGE == 24 * 1024
    cub = {(r["shape"], r["C"]): r for r in H.cublas_kernel_rows(e["cublas_kernels"], 132)}["128x8192x8192", "FP16"]
    r17 = K.ALL_RUNGS[17]
    assert cub["tile"] == "128x64" and r17.block_tile == (64, 128) and cub["stages"] == 8 == K.SKINNY_STAGES
    assert cub["cluster"] == 2 and r17.cluster == (2, 1, 1) and cub["grid"] == 128 == 2 * 64


def test_a_ratio_that_a_throttled_cublas_flatters_is_not_judged():
    """H.targets: at or above the goal with cuBLAS's own timing throttled, at a clock more than 2% below the
    rung's, or with its median more than 5% above its p10, the target is not judged (met None, why says so); a miss
    stays a miss; a ratio at or above the goal that falls below it against the median of cuBLAS's unthrottled timings
    at that shape is a miss; in the record, 8192^3 and 7000^3 are not judged and a judged row gives a why only for
    the median."""
    base = {"rung": 14, "m": 4096, "n": 4096, "k": 4096, "passed": True, "c_dtype": "float16", "frac_cublas": 1.02,
            "tflops": 760.0, "sm_mhz": 1980, "cublas_fp16c_sm_mhz": 1980, "cublas_fp16c_throttle": ["none"]}
    goal = {(4096, 4096, 4096): 1.0}
    t = lambda **kw: [x for x in H.targets([dict(base, **kw)], goal) if x["C"] == "FP16"][0]   # noqa: E731
    assert t()["met"] is True and t()["why"] == "" and t()["mhz"] == "1980 / 1980"
    capped = t(cublas_fp16c_throttle=["sw power cap"])
    assert capped["met"] is None and "sw power cap" in capped["why"]
    slow = t(cublas_fp16c_sm_mhz=1900)
    assert slow["met"] is None and "1900 MHz against the rung's 1980" in slow["why"]
    assert t(cublas_fp16c_sm_mhz=1950)["met"] is True                          # within 2%
    miss = t(frac_cublas=0.9, cublas_fp16c_throttle=["sw power cap"])
    assert miss["met"] is False and miss["short"] == 0.1
    got = {(x["shape"], x["C"]): x for x in H.targets(_rec()["hopper"])}
    # in the record (session 13, rungs 23-24 added): neither C type is judged at 8192^3 (NVML saw the software power
    # cap in cuBLAS's timings) nor at 7000^3 (FP32 C: cuBLAS at a clock more than 2% below the rung's); a miss with a
    # throttled cuBLAS stays a miss (FP32 C at 4096^3); every judged row says no why
    for c in ("FP16", "FP32"):
        assert got["8192x8192x8192", c]["met"] is None and "sw power cap" in got["8192x8192x8192", c]["why"]
        assert got["7000x7000x7000", c]["met"] is None and got["7000x7000x7000", c]["why"].startswith("cuBLAS's timing")
    assert "MHz against" in got["7000x7000x7000", "FP32"]["why"]
    # at 4096^3 with FP32 C, rung 30's ratio (1.012) rests on the slowest of cuBLAS's unthrottled timings there: against
    # their median it is a miss, and why says so
    x = got["4096x4096x4096", "FP32"]
    assert x["rung"] == 30 and x["ratio"] > 1 and x["met"] is False and x["vs_median"] < 1
    assert x["why"].startswith(f"{x['vs_median']:.3f}x the median of cuBLAS's 18 unthrottled timings here")
    assert x["short"] == round(1 - x["vs_median"], 3)
    spread = t(cublas_fp16c_ms=0.2, cublas_fp16c_p10_ms=0.18)                  # 11% apart: not one population
    assert spread["met"] is None and "its median 1.11x its p10" in spread["why"]
    assert t(cublas_fp16c_ms=0.2, cublas_fp16c_p10_ms=0.195)["met"] is True   # 2.6%: one population
    assert all(x["why"] == "" or "median" in x["why"] for x in got.values() if x["met"] is not None)
    # the median: a ratio that passes against its own cuBLAS timing but not against the median of all of them
    two = [dict(base, tflops=740.0, cublas_fp16c_tflops=725.0),                          # 1.02 on its own timing
           dict(base, rung=15, frac_cublas=0.977, tflops=752.0, cublas_fp16c_tflops=770.0)]
    x = [x for x in H.targets(two, goal) if x["C"] == "FP16"][0]
    assert H.cublas_median(two, (4096,) * 3, "float16") == (747.5, 2)
    assert x["rung"] == 14 and x["ratio"] == 1.02 and x["met"] is False and x["short"] == 0.01
    assert x["why"] == "0.990x the median of cuBLAS's 2 unthrottled timings here (748 TFLOP/s)"
    assert [x for x in H.targets([two[0]], goal) if x["C"] == "FP16"][0]["met"] is True   # alone: its own median


def test_claims_of_the_rung_18_slide():
    """Appendix D's rung 18, from the record: correct wherever it ran; FP32 C at 128 rows was at about half of
    cuBLAS's FP32 C before it (the 128 x 256 rungs), and rung 18 stands within 0.03 of rung 17's fraction there
    ("both C types stand at about the same fraction of cuBLAS", the cell printing both); at 4096^3 it beat the x0.98 prediction (MISS_NOTES[18]
    "better": within 1% of rung 17), and at 128 rows the spread holds the prediction."""
    e = _rec()["hopper"]
    rows = [r for r in e if r["rung"] == 18 and "passed" in r]
    assert rows and all(r["passed"] and r["model"] == "identical" for r in rows)
    skinny = (128, 8192, 8192)
    before = H.best_rung(e, skinny, "float32", below=18)
    g17, g18 = H.gain_at(e, 17, skinny), H.gain_at(e, 18, skinny, 0.98)
    assert before["rung"] < 14 and before["frac_cublas"] < 0.6 and abs(g18["frac_cublas"] - g17["frac_cublas"]) < 0.03
    assert H.best_rung(e, skinny, "float32", below=19)["rung"] == 18   # (rung 20 is faster: its own slide)
    assert g18["low"] <= 0.98 <= g18["high"] and not g18["verdict"].startswith("missed")
    g = H.gain_at(e, 18, (4096,) * 3, 0.98)       # (session 12's record: the spread holds both x0.98 and x1.0)
    assert not g["verdict"].startswith("missed: worse") and 0.98 < g["measured"] < 1.02
    assert "at 4096^3 rung 18 ran closer to rung 17 than that" in H.MISS_NOTES[18]["better"]
    assert "not observed" in H.MISS_NOTES[18]["worse"]


def test_claims_of_the_flush_appendix():
    """Appendix E (experiments.flush_method): every C checked; at 128 rows the memset flush slowed cuBLAS "by
    about a fifth" (both C types: read / memset 1.15-1.25) and rung 17 "far less" (under 1.10, under half of
    cuBLAS's change); at 4096^3 cuBLAS and rungs 14 and 16 changed "by less than 4%", "at clocks that moved
    between rounds" (the clocks there are ranges); the lesson's main path says L2 is emptied by a read."""
    fm = {(r["shape"], r["kernel"]): r for r in H.flush_rows(_rec()["flush_method"])}
    assert all(r["passed"] for r in fm.values()) and len(fm) == 10
    for c in ("cuBLAS FP16 C", "cuBLAS FP32 C"):
        assert 1.15 <= fm["128x8192x8192", c]["read_over_write"] <= 1.25
    r17 = fm["128x8192x8192", "rung 17"]["read_over_write"]
    assert 1 < r17 < 1.10 and r17 - 1 < (fm["128x8192x8192", "cuBLAS FP16 C"]["read_over_write"] - 1) / 2
    for k in ("cuBLAS FP16 C", "cuBLAS FP32 C", "rung 14", "rung 16"):
        assert abs(fm["4096x4096x4096", k]["read_over_write"] - 1) < 0.04 and "-" in fm["4096x4096x4096", k]["mhz"]
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert "L2 emptied by a read before every launch" in src and "## Appendix E: how the harness empties L2" in src


def test_claims_of_the_cublas_at_128_rows_slide():
    """Appendix D, "What cuBLAS does faster at 128 rows" (results/ncu-nvidia-h200.json): rungs 17 and 18 and cuBLAS
    (both C types) read the same bytes from DRAM (within 1%) and about the same L2 sectors (within 10%); cuBLAS takes
    "about three quarters of the time" (0.70-0.80 of either rung's duration) with DRAM busier; its top stall is
    long_scoreboard, the rungs' is barrier."""
    cmp = {r["target"]: r for r in H.ncu_compare(["rung17", "rung18", "cublas_fp16c", "cublas_fp32c"], (128, 8192, 8192))}
    assert len(cmp) == 4
    rungs, cubs = [cmp["rung17"], cmp["rung18"]], [cmp["cublas_fp16c"], cmp["cublas_fp32c"]]
    for r in rungs:
        for c in cubs:
            assert abs(c["dram_mb"] / r["dram_mb"] - 1) < 0.01 and abs(c["l2_msectors"] / r["l2_msectors"] - 1) < 0.10
            assert 0.70 <= c["us"] / r["us"] <= 0.80 and c["dram_pct"] > r["dram_pct"] + 10
    assert {c["top_stall"] for c in cubs} == {"long_scoreboard"} and {r["top_stall"] for r in rungs} == {"barrier"}


def _apart():
    return _rec()["pipeline_apart"]


def test_claims_of_taking_rung_17_apart():
    """Appendix D, 'Taking rung 17 apart', 'The pipeline cut in two', 'How a thread waits', 'Tried, and no faster':
    each number in the prose, from experiments.pipeline_apart (lab/probes/wgmma_rate.py, wait_hint.py)."""
    pa = _apart()
    assert "lab/probes/wgmma_rate.py" in pa["commands"]["apart"] and "wait_hint.py" in pa["commands"]["wait_hint"]
    # the Tensor Cores alone: every width and warpgroup count at the peak with a group in flight; only one
    # warpgroup that drains loses time
    rates = H.rate_rows(pa)
    assert {(r["n"], r["warpgroups"]) for r in rates if r["in_flight"] == "1 group"} == \
        {(n, w) for n in (64, 128, 256) for w in (1, 2, 3)}
    assert all(r["share"] > 0.99 for r in rates if r["in_flight"] == "1 group")
    slow = [r for r in rates if r["share"] < 0.99]
    assert len(slow) == 1 and slow[0]["in_flight"] == "drained" and slow[0]["warpgroups"] == 1
    assert all(r["share"] > 0.99 for r in rates if r["in_flight"] == "drained" and r["warpgroups"] > 1)
    # the pipeline cut in two (one run), and the empty kernel (another run)
    cut = {r["what"]: r for r in H.apart_rows(pa, "apart")}
    whole, loads, mmas = cut["rung 17 as recorded"], cut["loads and barriers, no MMA"], cut["MMAs and barriers, no bytes"]
    assert whole["passed"] is True and loads["passed"] is None and mmas["passed"] is None
    assert whole["correct"] == "yes" and loads["correct"].startswith("not checked")
    assert loads["cublas_over"] > 0.95                                  # about cuBLAS's time
    assert 1.05 < mmas["us"] / cut["cuBLAS FP16 C"]["us"] < 1.15         # a tenth longer
    assert 9 <= whole["us"] - max(loads["us"], mmas["us"]) < 11          # about 10 us more than its slower part
    assert 8.5 < mmas["us"] - cut["MMAs, no bytes, no waits for full"]["us"] < 9.5   # skip the wait: 9 us go
    empty = {r["what"]: r for r in H.apart_rows(pa, "depth")}["no ring, no MMA (launch, empty loop, epilogue)"]
    assert 7.5 < empty["us"] < 8.5
    assert all(r["mhz"] == "1980" for w in ("apart", "depth", "wait", "hold") for r in H.apart_rows(pa, w))
    # the wait hint: rungs 17 and 18 gain 5%, every other kernel 0.97 to 1.01; all correct both ways
    hint = {r["kernel"]: r for r in H.hint_rows(pa)}
    assert all(r["passed"] for r in hint.values()) and len(hint) == 8
    for k in ("rung 17", "rung 18"):
        assert 1.045 < hint[k]["gain"] < 1.06 and hint[k]["shape"] == "128x8192x8192"
    assert hint["rung 18"]["ref"] == "cuBLAS float32 C" and hint["rung 17"]["ref"] == "cuBLAS float16 C"
    others = [r for k, r in hint.items() if k not in ("rung 17", "rung 18")]
    assert len(others) == 6 and all(0.965 <= r["gain"] <= 1.01 for r in others)
    assert round(hint["rung 17"]["on_vs_ref"], 2) == 0.79
    # tried, and no faster: 6, 7, 8 stages within 2%; draining gains under 1%
    hold = {r["what"]: r for r in H.apart_rows(pa, "hold")}
    st = [hold["wait hint; 6 stages"]["us"], hold["wait hint; 7 stages"]["us"], hold["wait hint"]["us"]]
    assert max(st) / min(st) < 1.02 and all(r["passed"] for r in hold.values() if r["passed"] is not None)
    assert 1.0 < hold["wait hint; 0 wgmma groups in flight"]["vs_first"] < 1.01
    assert round(hold["wait hint; loads and barriers, no MMA"]["us"]) == 39 and round(hold["wait hint"]["us"]) == 47
    wait = {r["what"]: r for r in H.apart_rows(pa, "wait")}
    assert round(wait["wait hint; MMAs and barriers, no bytes"]["us"]) == 38
    assert hold["wait hint; loads and barriers, no MMA"]["cublas_over"] > 0.95
    assert wait["wait hint; MMAs and barriers, no bytes"]["cublas_over"] > 0.95


def test_the_wait_hint_knob_builds_what_the_probe_timed():
    """WAIT_HINT (rungs 17-18) compiles the skinny kernels with SKINNY_WAIT, the template argument of ws_gemm that
    picks mbar_try's branch; the value the probe timed as MBAR_WAIT=1 is the try_wait with a suspend-time hint."""
    from helpers import tryout

    for r in (17, 18):
        k = tryout.KNOBS[r]["WAIT_HINT"]
        assert (k.define, k.values, k.default) == ("SKINNY_WAIT", (0, 1, 2), 0)
    prim = (ROOT / "kernels" / "hopper_primitives.cuh").read_text()
    one = prim[prim.index("if constexpr (HOW == 1)"):prim.index("} else if constexpr (HOW == 2)")]
    assert "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;" in one and "10000000u" in one
    two = prim[prim.index("} else if constexpr (HOW == 2)"):prim.index("    } else {")]
    assert "mbarrier.test_wait.parity" in two
    src = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert src.count("SKINNY_STAGES, SKINNY_WAIT>(") == 2 and src.count("mbar_wait<WAIT>(") == 2
    assert "PIPE_PROBE" not in src.split("// Knobs: compile-time values")[1]     # the probe switches left the rungs



def test_claims_about_cublas_one_warpgroup():
    """Appendix D, 'Tried, and no faster': the same number of m64n64k16 wgmma, cuBLAS's from one warpgroup (8 per
    stage), rung 17's from two (4 each), cuBLAS "a third" of rung 17's instructions (results/logs/ncu-source-m128-
    nvidia-h200.json); the rung that tries it is rung 19, the next slide."""
    rec = json.loads((ROOT / "results" / "logs" / "ncu-source-m128-nvidia-h200.json").read_text())["targets"]
    cub, r17 = rec["cublas_fp16c"], rec["rung17_hint"]
    n_c = sum(cub["gmma_executions"]) * cub["gmma_addresses"] // len(cub["gmma_executions"])
    n_r = sum(r17["gmma_executions"]) * r17["gmma_addresses"]
    assert n_c == n_r == 128 * 128 * 8 * 4 and cub["gmma_shapes"] == r17["gmma_shapes"] == ["64x64x16.F32"]
    assert sum(cub["gmma_executions"]) == 128 * 4 * 128 and r17["gmma_executions"] == [128 * 8 * 128]
    assert round(cub["warp_instructions"] / r17["warp_instructions"], 1) == 0.3
    assert K.ALL_RUNGS[19].name == "hopper_skinny_one" and K.ALL_RUNGS[19].base == 17


def test_claims_of_the_rung_19_and_20_slides():
    """Appendix D, 'Rung 19: one consumer warpgroup', against the record: rungs 19-20 correct wherever they ran (and
    bit-identical to the model); at 128 x 8192 x 8192 rung 19's gain over rung 17 holds the x1.10 predicted ("as
    predicted"), it was the fastest FP16-C rung there until rung 21; at 4096^3 (predicted x1.0) it is
    "better than predicted", as at 8192^3 (MISS_NOTES[19]: "worse" not observed); rung 20 no slower than its x0.98
    at either shape (MISS_NOTES[20]); the slide's code is the lines CONSUMERS selects, and 'Tried, and no faster'
    hands over to it."""
    e = _rec()["hopper"]
    rows = [r for r in e if r["rung"] in (19, 20) and "passed" in r]
    assert {(r["m"], r["n"], r["k"]) for r in rows} >= set(H.ODD_SIZES) | set(K.SKINNY_TIMED)
    assert all(r["passed"] and r["model"] == "identical" for r in rows)
    skinny = (128, 8192, 8192)
    g = H.gain_at(e, 19, skinny, 1.10, base=17)
    assert g["verdict"] == "as predicted" and g["low"] <= 1.10 <= g["high"]
    fastest = max((r for r in H.timed_rows(e, skinny) if 8 <= r["rung"] < 21 and r.get("c_dtype") == "float16"),
                  key=lambda r: r["tflops"])   # "the fastest FP16-C rung until rung 21"
    assert fastest["rung"] == 19
    assert "where it was the fastest FP16-C rung until rung 21" in (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for n in (4096, 8192):
        assert H.gain_at(e, 19, (n,) * 3, base=17)["verdict"] == "missed: better than predicted"
        assert not H.gain_at(e, 20, (n,) * 3, 0.98)["verdict"].startswith("missed: worse")
    assert not H.gain_at(e, 20, skinny, 0.98)["verdict"].startswith("missed: worse")
    assert "not observed" in H.MISS_NOTES[19]["worse"] and "not observed" in H.MISS_NOTES[20]["worse"]
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert 'switch_lines("CONSUMERS")' in src and "Rung 19 tries that." in src
    assert "helpers.try_kernel(19, WAIT_HINT=1)" in src


def test_claims_of_rung_19_beside_cublas_instruction_by_instruction():
    """Appendix D, 'Rung 19 beside cuBLAS, instruction by instruction' (results/logs/ncu-source-m128-nvidia-h200.json):
    one warpgroup "halved the instructions" (rung 19 against rung 17 with the hint), rung 19 executes "half as many
    again as cuBLAS"; its most executed opcodes are the descriptor arithmetic (LOP3, SHF, IMAD) and the R2UR moves,
    cuBLAS's the uniform adds (UIADD3), with no R2UR among them; the table's rows come from helpers.profile."""
    from helpers.profile import load_sampling, sampling_rows

    t = load_sampling("m128")["targets"]
    r17, r19, cub = t["rung17_hint"], t["rung19"], t["cublas_fp16c"]
    assert round(r19["warp_instructions"] / r17["warp_instructions"], 1) == 0.5
    assert round(r19["warp_instructions"] / cub["warp_instructions"], 1) == 1.5
    assert {"R2UR", "LOP3", "SHF", "IMAD"} <= set(list(r19["opcodes"])[:6]) and "R2UR" not in cub["opcodes"]
    assert next(iter(cub["opcodes"])) == "UIADD3" and "HGMMA" in cub["opcodes"]
    rows = sampling_rows(load_sampling("m128"), ["rung19", "cublas_fp16c"])
    assert [r["gmma"] for r in rows] == [128 * 4 * 128 * 4, 128 * 4 * 128 * 8] and rows[0]["kernel"] == "hopper_skinny_one"
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert 'sampling_rows(load_sampling("m128"), ["rung17_hint", "rung19", "cublas_fp16c"])' in src
    ksrc = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert "__device__ __forceinline__ u64 desc_encode" in ksrc and '// A, "K-major"' in ksrc
    with pytest.raises(helpers.errors.ResultsError, match="ncu_source.py"):
        load_sampling("nothing")


def test_a_rungs_predicted_speed_multiplies_the_gains_on_its_path():
    """H.gain_path: the predicted TFLOP/s of the last rung is rung 7's times the gains on its path, each over its base
    or the rung before: rung 20's path skips rung 18 (rung 19's gain is over 17), rung 18's includes every rung."""
    assert H.gain_path(18) == list(range(8, 19)) and H.gain_path(8) == [8]
    assert H.gain_path(20) == [*range(8, 18), 19, 20]
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert "path = H.gain_path(last := max(r[\"rung\"] for r in H.timed_rows(hop, 4096)))   # the last rung recorded" in src and "rung 7 times every gain" not in src


def test_claims_of_the_rung_21_and_22_slide():
    """Appendix D, 'Rungs 21-22: a measured knob becomes a rung': in the knob round (H.knob_round, every setting
    correct) "only the hint paid" on both rungs, and it measured the x1.10 and x1.08 the slide predicts at 128 rows
    (also in the registry's predictions); rungs 21-22 are rungs 19-20 with one template argument changed; in the
    record both hold their prediction at 128 rows ("as predicted") and pass the 0.90x goal there; at 4096^3 rung 21 beat its x1.05 (the note printed is MISS_NOTES[21]["better"]) and rung 22 is no
    slower than predicted. The main path says rungs 21 and 22 meet the goal at 128 rows."""
    rows = H.knob_round("rung19-20-knobs")
    assert len(rows) == 8 and all(r["passed"] for r in rows)
    hint = {r["rung"]: r["vs"] for r in rows if r["knob"] == "SKINNY_WAIT=1"}
    assert all(r["vs"] <= 1.0 for r in rows if r["knob"] not in ("SKINNY_WAIT=1", "as recorded"))   # only the hint
    assert (round(hint[19], 2), round(hint[20], 2)) == (1.10, 1.08)
    assert "x1.10 over rung 19" in K.rung_entry(21).why and "x1.08 over rung 20" in K.rung_entry(22).why
    ksrc = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    body = lambda name: ksrc[ksrc.index(f"void {name}(const"):].split("#endif", 1)[0].split("{", 1)[1]   # noqa: E731
    for new, old in (("hopper_skinny_hint", "hopper_skinny_one"), ("hopper_skinny_hint_f32c", "hopper_skinny_one_f32c")):
        assert "".join(body(new).split()) == "".join(body(old).split()).replace("SKINNY_WAIT", "SKINNY_HINT_WAIT")
    e, skinny = _rec()["hopper"], (128, 8192, 8192)
    for k, base, at_128 in ((21, 19, 1.10), (22, 20, 1.08)):
        g = H.gain_at(e, k, skinny, at_128)
        assert g["over"] == base and g["verdict"] == "as predicted"
    assert H.gain_at(e, 21, (4096,) * 3)["verdict"] == "missed: better than predicted"
    assert not H.gain_at(e, 22, (4096,) * 3)["verdict"].startswith("missed: worse")
    assert all(H.gain_at(e, k, skinny)["frac_cublas"] > 0.90 for k in (21, 22))    # x cuBLAS writing the same C
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert "rungs 17-24 copy its kernel." in src and 'H.knob_round("rung19-20-knobs")' in src
    assert "helpers.try_kernel(21, WAIT_HINT=0)" in src
    # the ratios shown beside a cuBLAS timing at a lower clock than the rungs' (the power cap): said so, not
    # "above 0.90x"; the goal judged on the targets table's timings in turn
    side = {k: H.cublas_beside(e, k, skinny) for k in (21, 22)}
    assert [f"{H.gain_at(e, k, skinny)['frac_cublas']:.2f}" for k in (21, 22)] == ["1.07", "0.96"]
    assert [x["mhz"] for x in side.values()] == ["1965 / 1515", "1965 / 1530"]
    prose = _lesson_prose()
    assert ("As predicted at 128 rows. There they show 1.07x and 0.96x cuBLAS writing the same C, but cuBLAS's "
            "timings beside them ran under the power cap at 1515 and 1530 MHz, the rungs at 1965, so those ratios "
            "flatter the rungs. Timed in turn with cuBLAS, the skinny rungs meet the 0.90x goal with either C") in prose
    assert "run above 0.90x cuBLAS" not in prose
    h = [x for x in H.head_to_head(_rec()["hopper_targets"]) if x["shape"] == "128x8192x8192"]
    assert len(h) == 2 and all(x["met"] is True and 17 <= x["rung"] <= 24 for x in h)
    assert all(t["met"] is None and "cuBLAS's timing" in t["why"] for t in H.targets(e) if t["shape"] == "128x8192x8192")


def test_claims_of_the_rung_23_and_24_slide():
    """Appendix D, 'Rungs 23-24: descriptors built once': the code it prints is mma_ktile and mma_ktile_at from
    kernels/; the x1.03 it predicts is the registry's, and the probe switch measured it on rung 21 at 128 rows
    (results/logs/desc-add-nvidia-h200.json); in the record neither rung ran slower than predicted at 128 rows or
    4096^3 (the note printed is the one for the record's verdict, miss_note), and rungs 23 and 24 are the fastest
    rungs of their C types at 128 rows, where the spread also holds no gain."""
    import json

    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = src[src.index("# ### Rungs 23-24: descriptors built once"):src.index("# ### Filling the waves")]
    assert "**Predicted before they ran: x1.03 over rungs 21 and 22 at 128 rows and at $4096^3$**" in slide
    assert K.ALL_RUNGS[23].predicted_gain == K.ALL_RUNGS[24].predicted_gain == 1.03
    log = {(r["what"], r["desc_add"]): r["tflops"] for r in json.loads(
        (ROOT / "results" / "logs" / "desc-add-nvidia-h200.json").read_text()) if "tflops" in r}
    assert round(log["rung 21", 1] / log["rung 21", 0], 2) == 1.03
    ksrc = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    shown = ksrc[ksrc.index("template <int NACC>\n__device__ __forceinline__ void mma_ktile("):
                 ksrc.index("// Rung 29 (C^T): one K-tile")]
    assert "void mma_ktile_at(" in shown and "desc_plus(a0, a16 + ks * 2)" in shown and shown.count("void ") == 2
    e, skinny = _rec()["hopper"], (128, 8192, 8192)
    for k, base in ((23, 21), (24, 22)):
        for shape in (skinny, (4096,) * 3):
            g = H.gain_at(e, k, shape)
            assert g["over"] == base and not g["verdict"].startswith("missed: worse"), (k, shape, g)
    assert "miss_note(23, (4096,) * 3)" in slide          # the note for the record's verdict, if it is a miss
    for k, c_dtype in ((23, "float16"), (24, "float32")):   # "the fastest rungs of their C types at 128 rows"
        rs = [r for r in H.timed_rows(e, skinny) if r["rung"] >= 8 and r.get("c_dtype") == c_dtype and r["passed"]]
        assert max(rs, key=lambda r: r["tflops"])["rung"] == k
        assert H.gain_at(e, k, skinny)["verdict"] == "unresolved: the spread holds no gain too"   # "... holds no gain"
    assert ("rungs 23 and 24 are the fastest rungs of their C types at 128 rows,\n# though there the spread of their "
            "timings also holds no gain.") in slide
    assert "helpers.try_kernel(23, DESC_ADD=0)" in slide


def test_claims_of_the_rung_25_and_26_slides(tmp_path):
    """Appendix D, 'Rungs 25-26': the first run (results/logs/rung25-probe, rung26-probe) was faster at 5000^3 and
    slower at 4096^3 and 2048^3 for both rungs; fewer CTAs run at once in clusters of 4 (the driver's counts, the
    grid log) and 4096^3 takes one more wave; the x1.12 predicted is that run's gain at 5000^3; the table's choice is
    clusters of 4 at 5000^3 only; in the record rung 25 gained at 5000^3 (the spread's low end above 1), rung 26's
    spread also holds no gain (the note printed is the one for the record's verdict, miss_note), both stay short of
    the 0.95x goal there and rungs 29-30 come closer, and
    where they build rung 14's (13's) kernel no verdict is a miss. The rule printed is quad_choice's code; a missing
    grid log names what writes it."""
    import json

    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = src[src.index("# ### Rungs 25-26: clusters of 4"):src.index("# ## Appendix E")]
    logs = ROOT / "results" / "logs"
    first = {}
    for k, base in ((25, 14), (26, 13)):
        d = json.loads((logs / f"rung{k}-probe-nvidia-h200.json").read_text())
        t = {(int(key), r["m"]): r["tflops"] for key in (str(k), str(base)) for r in d[key] if r.get("tflops")}
        first[k] = {n: t[k, n] / t[base, n] for n in (5000, 4096, 2048)}
        assert first[k][5000] > 1 and first[k][4096] < 1 and first[k][2048] < 1
    assert "their first run was faster at $5000^3$ but slower at\n# $4096^3$ and $2048^3$" in slide
    grid = H.quad_grid()
    assert 4 * grid[4] < 2 * grid[2] and "fewer CTAs run at once and the same tiles can take one more wave" in slide
    assert K.cluster_waves(4096, 4096, 4, grid[4]) == K.cluster_waves(4096, 4096, 2, grid[2]) + 1
    assert round(first[25][5000], 2) == 1.12 and "**Predicted after the first run: x1.12 over rungs 14 and 13" in slide
    e = _rec()["hopper"]
    shapes = [s_ for s_ in H.TIMED if s_[0] > 128]
    rows = H.quad_rows(e, 1.12, shapes)
    assert "H.quad_rows(hop, 1.12," in slide
    assert [r["shape"] for r in rows if r["cluster"] == 4] == ["5000x5000x5000"]
    for (k, base), s_ in ((kb, s_) for kb in ((25, 14), (26, 13)) for s_ in shapes):
        four = s_ == (5000,) * 3
        g = H.gain_at(e, k, s_, 1.12 if four else 1.0, base=base)
        if four:
            assert g["measured"] > 1 and (1 < g["low"] if k == 25 else g["low"] <= 1)
            assert g["frac_cublas"] < 0.95 and g["frac_cublas"] < H.gain_at(e, k + 4, s_)["frac_cublas"]
        else:
            assert not g["verdict"].startswith("missed"), (k, s_, g)
    assert 'miss_note(25, (5000,) * 3, 1.12, 14, written="before the record")' in slide
    assert ("Clusters of 4 paid at $5000^3$ (rung 26's spread also holds no gain), and rungs 25 and 26 stay short of\n"
            "# the 0.95x goal there; rungs 29-30 below come closer.") in slide
    assert "helpers.try_kernel(25, CLUSTER_M=4)" in slide and "helpers.display.python_code(quad_choice)" in slide
    code = helpers.display.python_code(K.quad_choice).data
    assert "def quad_choice(" in code and "fit4, fit2 = fits()" in code and '"""' not in code
    with pytest.raises(helpers.errors.ResultsError, match="resident_blocks"):
        H.quad_grid(directory=tmp_path)


def test_claims_of_the_what_is_left_at_5000_slide():
    """Appendix D, 'What is left at 5000^3': under Nsight Compute with 10000-byte rows rung 25 makes fewer L2
    requests than cuBLAS, its long-scoreboard stall is under half of rung 16's, its tensor pipe within a point of
    cuBLAS's, and it takes longer; its tile slots hold less output than cuBLAS's (computed), and that ratio is above
    the one measured (so it accounts for part of the gap, in the profile and in the record); it reads more from DRAM
    than cuBLAS."""
    from helpers.exercises import hopper as ex

    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = src[src.index("# ### What is left at $5000^3$"):src.index("# ## Appendix E")]
    n = {r["kernel"]: r for r in H.ncu_alignment_rows("ncu-row-alignment-r25")}
    r16 = next(r for r in H.ncu_alignment_rows() if r["kernel"] == "rung 16" and r["row_bytes"] == 10000)
    r25, cub = n["rung 25"], n["cuBLAS FP16 C"]
    assert r25["row_bytes"] == cub["row_bytes"] == 10000
    assert r25["requests_m"] < cub["requests_m"] and r25["long_scoreboard"] < r16["long_scoreboard"] / 2
    assert abs(r25["tensor_pct"] - cub["tensor_pct"]) < 1 and r25["us"] > cub["us"]
    assert r25["dram_mb"] > cub["dram_mb"]
    grid = H.quad_grid()
    slots25 = 5000**2 / (K.cluster_waves(5000, 5000, 4, grid[4]) * 4 * grid[4] * 128 * 256)   # by units of 4 tiles
    assert slots25 == ex.tile_efficiency(5000, 5000, 128, 256, sms=4 * grid[4])   # the slide's: by tiles, 120 CTAs
    slots_cublas = ex.tile_efficiency(5000, 5000, 152, 256)
    g = H.gain_at(_rec()["hopper"], 25, (5000,) * 3, 1.12, base=14)
    assert slots25 < slots_cublas and slots25 / slots_cublas > max(cub["us"] / r25["us"], g["frac_cublas"])
    for claim in ("rung 25 makes fewer L2 requests than cuBLAS", "less\n# than half of rung 16's",
                  "as busy as cuBLAS's. Yet it takes longer", "accounts for part of the gap",
                  "reads more from DRAM than cuBLAS"):
        assert claim in slide, claim


def test_a_knob_round_that_is_not_there_names_the_probe(tmp_path):
    """H.knob_round on a missing log: the error names the probe that writes it (and a present one is read)."""
    with pytest.raises(helpers.errors.ResultsError, match="lab/probes/rung17.py OUT.json RUNG --knobs"):
        H.knob_round("rung19-20-knobs", directory=tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x-nvidia-h200.json").write_text(json.dumps({"7": [
        {"knobs": {}, "passed": True, "model": "identical", "tflops": 100.0, "sm_mhz": [1980]},
        {"knobs": {"A": 1}, "passed": True, "model": "differs", "tflops": 120.0, "sm_mhz": [1965, 1980]}]}))
    got = H.knob_round("x", directory=tmp_path)
    assert [(r["knob"], r["passed"], r["vs"], r["mhz"]) for r in got] == [("as recorded", True, 1.0, "1980"),
                                                                        ("A=1", False, 1.2, "1965-1980")]


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


def test_switch_rows_names_the_command_of_a_missing_log(tmp_path):
    """helpers.experiments.hopper.switch_rows without its log: the error names the probe and option that write it
    (and can fail: the committed logs are read)."""
    (tmp_path / "logs").mkdir()
    for key, option in (("cluster_m", "--cluster"), ("group_m", "--group"), ("l2_prefetch", "--prefetch at commit 1bcb7f2")):
        with pytest.raises(helpers.errors.ResultsError) as e:
            H.switch_rows(key, 0, directory=tmp_path)
        assert f"lab/probes/wait_hint.py OUT.json {option}" in e.value.fix
        assert H.switch_rows(key, {"cluster_m": 2, "group_m": 8, "l2_prefetch": 0}[key])


def test_claims_of_the_tile_width_slide():
    """Appendix D, 'Tried: a tile width per shape': the waves (10 whole waves of 66 clusters of 2 at 128 x 152; rung
    25's 7 waves of 30 clusters of 4, the last two thirds full), the prediction's arithmetic (1520 and 1792
    width-waves; x1.08 from the clusters-of-4 knob on rung 14; 1792 / 1520 / 1.08 rounds to 1.09), the first run
    far below it (the 152-wide build under 0.75 of rung 25 and 26 at 5000^3, bit-identical to the model, and within 1%
    where it built 256), the sweep (every width checked; none beat rung 25 by more than rung 25's own code, 256 in
    clusters of 4, sits below it; rung 25 as built is that code), box rows per MFLOP above 256's for every narrower
    tile, and cuBLAS's 256 x 152 tile loading fewer rows per output than 128 x 256. The try cell runs a knob value."""
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = src[src.index("# ### Tried: a tile width per shape"):src.index("# ## Appendix E")]
    grid = H.quad_grid()
    assert (grid[2], grid[4]) == (66, 30)
    assert K.cluster_waves(5000, 5000, 2, 66, 152) == 10 and 40 // 2 * 33 == 10 * 66
    units4 = 40 // 4 * 20
    assert K.cluster_waves(5000, 5000, 4, 30) == 7 and units4 - 6 * 30 == 2 * 30 / 3
    assert 10 * 152 == 1520 and 7 * 256 == 1792
    gain4 = next(r["gain"] for r in H.switch_rows("cluster_m", 2) if r["cluster_m"] == 4)
    assert f"{gain4:.2f}" == "1.08" and f"{1792 / 1520 / gain4:.2f}" == "1.09"
    for claim in ("10\n# whole waves of 66 clusters", "7 waves of 30 clusters of 4, the last two thirds full",
                  "**Predicted: x1.09 over rung 25 at $5000^3$**", "waves x width 1520\n# against 1792",
                  "less the x1.08 that clusters of 4 gave rung 14 there", "**Missed by far.**",
                  "No width beat rung 25 by more than that spread", "helpers.try_kernel(25, TILE_N=192)"):
        assert claim in slide, claim
    first = H.tile_n_first_run()
    for k in (27, 28):
        r = first[k, (5000,) * 3]
        assert r["tile"] == [128, 152] and r["ratio"] < 0.75 and r["passed"] and r["model"] == "identical"
        assert all(abs(v["ratio"] - 1) < 0.02 for (kk, s), v in first.items() if kk == k and s[0] != 5000)
    rows = H.tile_n_rows()
    own = next(r for r in rows if (r["width"], r["cluster"], r["what"]) == (256, 4, "the two knobs"))
    spread = 1 - own["vs_rung25"]
    assert spread > 0 and all(r["passed"] for r in rows) and len(rows) == 17
    assert max(r["vs_rung25"] for r in rows if r["what"] != "rung 25 as built") - 1 < spread
    assert K.quad_choice(5000, 5000, 10000, 10000, lambda: (30, 66)) == 4          # rung 25 as built: 256, clusters of 4
    for c in (2, 4):
        assert all(H.box_rows_per_mflop(w, c) > H.box_rows_per_mflop(256, c) for w in K.TILE_N_WIDTHS if w < 256)
    assert H.box_rows_per_mflop(256, 4) == (128 + 64) / (2 * 128 * 256 * 64 / 1e6)
    assert (256 + 152) / (256 * 152) < (128 + 256) / (128 * 256)
    assert "(256 + 152) / (256 x 152) against (128 + 256) / (128 x 256)" in slide
    # "at 4096^3 ... 152 is slower even than 128": the knobs sweep, checked rows at 1980 MHz, the waves of 256 full
    kn = {r["value"]: r for r in _rec()["knobs"] if r["rung"] == 25 and r.get("knob") == "TILE_N"}
    assert kn[152]["tflops"] < kn[128]["tflops"] and kn[152]["passed"] and kn[128]["passed"]
    assert kn[152]["m"] == 4096 and K.cluster_waves(4096, 4096, 2, 66) == 4 and 32 * 16 // 2 / (4 * 66) > 0.95
    assert "152 is slower even than\n# 128, whose boxes are whole" in slide and "no profiler has looked at these" in slide


def test_claims_of_the_128_ctas_slide():
    """Appendix D, 'Tried: 128 CTAs instead of 132' (results/logs/grid-128-probe, seven alternating rounds): every check
    bit-identical to the model; at 4096^3 rung 14 faster on 128 CTAs, rung 13 slower, faster in 2 rounds of 7, the
    clock moving by at least 300 MHz over the rounds; at 8192^3 both about 1% faster (x1.005-1.015)."""
    from helpers.experiments import hopper as H

    rows = {(r["n"], r["rung"]): r for r in H.grid128_rows()}
    assert set(rows) == {(4096, 13), (4096, 14), (8192, 13), (8192, 14)} and all(r["passed"] for r in rows.values())
    assert rows[4096, 14]["x128"] > 1 > rows[4096, 13]["x128"] and rows[4096, 13]["won"] == "2 of 7"
    lo, hi = (int(x) for x in rows[4096, 13]["mhz"].split("-"))
    assert hi - lo >= 300
    assert all(1.005 <= rows[8192, k]["x128"] <= 1.015 for k in (13, 14))
    assert rows[8192, 13]["tflops_128"] < rows[8192, 13]["tflops"]          # "medians differ the other way"
    assert H.GRID128_PREDICTED == {4096: 1.01, 8192: 1.00}
    lesson = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for s in ("**Predicted before it ran: x1.01 at $4096^3$, x1.00 at $8192^3$:**", "faster in only 2\n# rounds of 7",
              "moved by 300 MHz", "at $8192^3$ both gained about 1% round by round", "medians differ the other way"):
        assert s in lesson, s


def test_claims_of_the_tall_tile_slide():
    """Appendix D, 'Tried: a 256-row tile' (results/logs/tall-rung27-probe, tall-rung28-probe): rungs 27-28 still
    pending (not in the ladder or the record); the launcher's choice printed (256 x 152 at 5000^3 only); the predictions
    are the registry's and the kernel comment's; every check bit-identical; at 5000^3 both far below rungs 25-26
    (under x0.9) at a steady clock for the tall tile; where both build rung 14's (13's) kernel within 2% unless a
    clock fell (8192^3); per MFLOP the tall tile asks for more box rows than rung 25 and cuBLAS's tile for nearly as
    many (90-100% of it), while cuBLAS is the fastest at 5000^3; memcheck of the forced tall builds clean."""
    from helpers.experiments import hopper as H

    assert 27 not in K.ALL_RUNGS and 28 not in K.ALL_RUNGS and {27, 28} <= set(K.PENDING)
    rows = H.tall_first_run()
    assert len(rows) == 10 and all(r["checked"] for r in rows)
    for r in rows:
        if r["shape"] == "5000x5000x5000":
            assert r["tile"] == "256 x 152" and r["predicted"] == K.PENDING[r["rung"]].predicted_gain == 1.05
            assert r["ratio"] < 0.9 and r["mhz"].split(" / ")[0].split("-")[0] == "1980"
            assert r["vs_cublas"] < 1 and r["base_vs_cublas"] < 1            # cuBLAS the fastest there
        else:
            assert r["tile"] == "128 x 256" and r["predicted"] == 1.0
            assert 0.98 <= r["ratio"] <= 1.02 or (r["why"] and r["shape"] == "8192x8192x8192"), r
    tall, r25, cub = (H.box_rows_per_mflop(152, 2, 256), H.box_rows_per_mflop(256, 4),
                      H.box_rows_per_mflop(256, 2, 152, "A"))
    assert tall > r25 and 0.9 < cub / tall < 1
    assert "(rung 27: 2)" in helpers.display.device_functions("hopper_sm90a.cu")["ws_gemm"]
    lesson = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for s in ("**Predicted before it ran: x1.05 over rung 25 (26) at $5000^3$, x1.00 where it builds rung 14's (13's)\n"
              "# tile.**", "**Missed by far at $5000^3$**"):
        assert s in lesson, s
    c = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert "Predicted before any run: x1.05 over rung 25 at 5000^3" in c and "x1.05 over rung 26 at 5000^3" in c
    log = (ROOT / "results" / "logs" / "sanitize-tall-memcheck-nvidia-h200.log").read_text()
    assert log.count("| PASS") == 24 and "ERROR SUMMARY: 0 errors" in log


def test_claims_of_the_tall_tile_slide_probes_after_the_run():
    """The tall-tile slide's last fragment (markdown): Nsight Compute at 5000^3 (results/logs/ncu-row-alignment-tall):
    rung 27's tensor pipe busy less than rung 25's, more L2 requests, more long-scoreboard stall; with rows of 10112
    bytes (results/logs/tall-alignment) it gains more than rung 25 and cuBLAS, ends within 1% of rung 25 and below
    cuBLAS; every check there bit-identical; the tall tile reads 256 rows of A per K-tile (its A box)."""
    import json

    logs = ROOT / "results" / "logs"
    n = {r["what"]: r for r in json.loads((logs / "ncu-row-alignment-tall-nvidia-h200.json").read_text())["rows"]}
    t, q = n["rung 27"], n["rung 25"]
    assert t["row_bytes"] == q["row_bytes"] == 10000
    assert t["counters"]["tensor_pipe_pct"] < q["counters"]["tensor_pipe_pct"]
    assert t["counters"]["l2_requests"] > q["counters"]["l2_requests"]
    assert dict(t["top_stalls"])["long_scoreboard"] > dict(q["top_stalls"])["long_scoreboard"]
    a = {(r["rung"], r["pad"]): r for r in json.loads((logs / "tall-alignment-nvidia-h200.json").read_text())["rows"]}
    assert all(r["passed"] for r in a.values()) and all(r["model"] == "identical" for k, r in a.items() if k[0])
    gain = {k: a[k, 56]["tflops"] / a[k, 0]["tflops"] for k in (27, 25, 0)}
    assert gain[27] > gain[25] and gain[27] > gain[0]
    assert 0.99 <= a[27, 56]["tflops"] / a[25, 56]["tflops"] <= 1.01 and a[27, 56]["tflops"] < a[0, 56]["tflops"]
    assert K.PENDING[27].tma_boxes[0] == (256, 64)
    lesson = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for s in ("keeps the tensor pipe busy a smaller share of the\n# time than rung 25, makes more L2 requests and waits "
              "longer for memory", "it gains more than rung 25 and cuBLAS do, to within 1% of rung 25,\n# still below "
              "cuBLAS", "it reads 256 rows of A per\n# K-tile"):
        assert s in lesson, s


def test_claims_of_the_tall_tile_stages_fragment():
    """The fragment after the tall-tile slide (lab/probes/tall_tile.py, results/logs/tall-tile-probe): the 256-row
    height costs 1-2% (4 stages x0.989 and x0.980 of rung 14, medians of round ratios), 3 stages 14-16%; 256 x 152 fits only 3 stages
    of 56 KB, B's 152 columns taking 3 boxes of 64; every build checked bit for bit."""
    rows = {(r["n"], r["build"]): r for r in H.tall_tile_rows()}
    assert len(rows) == 6 and all(r["checked"] for r in rows.values())
    for n in (4096, 6144):
        assert round(100 * (1 - rows[n, "256 x 128, 4 stages"]["ratio"])) in (1, 2)          # "costs 1-2%"
        assert 0.14 <= round(1 - rows[n, "256 x 128, 3 stages"]["ratio"], 2) <= 0.16
    assert K.tall_stages(152) == 3 and K.tall_stages(128) == 4 and -(-152 // 64) == 3
    assert (256 * 64 + 3 * 64 * 64) * 2 // 1024 == 56
    assert 4 * (256 * 64 + 3 * 64 * 64) * 2 + K.HOPPER_STORE_SMEM - 4 * K.HOPPER_STAGE > 227 * 1024
    lesson = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for s in ("The height costs 1-2%. Three stages instead of four cost 14-16%, and 256 x 152 fits only three: 56 KB "
              "a\n# stage, because B's 152 columns take three boxes of 64.",):
        assert s in lesson, s


def test_claims_of_the_rung_29_slide():
    """Rung 29's slide: a 160-row tile has no whole number of 64-row slices; a stage is 20 KB of A and 32 KB of B, 4
    fit; the wave model (ct_gain) says where it pays, and the runs agree in direction at every size (faster in every
    round where ct_gain > 1, slower where < 1), bit-identical; at 5000^3 below the prediction and below cuBLAS;
    Nsight Compute: tensor pipe within 2 points of cuBLAS's; 152-row tiles give an odd 33 tile rows at 5000; the
    tile-slot shares printed; the cells the learner edits run on the CPU (quad_grid from the logs)."""
    assert 160 % 64 and 160 * 64 * 2 // 1024 == 20 and 256 * 64 * 2 // 1024 == 32 and K.ct_smem() <= 227 * 1024
    grid = H.quad_grid()
    rows = {r["n"]: r for r in H.ct_tile_rows()}
    for n, r in rows.items():
        gain = K.ct_gain(n, n, lambda: (grid[4], grid[2]))
        won, of = map(int, r["won"].split(" of "))
        assert r["checked"] and (gain > 1) == (r["ratio"] > 1), n
        assert won == (of if gain > 1 else 0), n
    assert rows[5000]["verdict"] == "as predicted" and rows[5000]["vs_cublas"] < 1     # "gains what was predicted"
    assert all(rows[n]["vs_cublas"] >= 0.95 and not rows[n]["note"] and (2 * n) % 16 == 0 for n in (5496, 6744))
    ncu = {r["kernel"]: r for r in H.ncu_alignment_rows("ncu-row-alignment-ct") if r["row_bytes"] == 10000}
    assert abs(ncu["rung 29"]["tensor_pct"] - ncu["cuBLAS FP16 C"]["tensor_pct"]) < 2
    assert ncu["rung 29"]["us"] > ncu["cuBLAS FP16 C"]["us"]
    assert -(-5000 // 152) == 33 and -(-5000 // 160) % 2 == 0
    lesson = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for s in ("A stage needs no padding (20 KB of A, 32 KB of B), so four stages fit.",
              "**Faster wherever the waves said so**, slower where they said so, and correct everywhere (bit for bit).",
              "At\n# $5496^3$ and $6744^3$, whose rows TMA reads as they are, it reaches 0.95x cuBLAS or more. At "
              "$5000^3$ it gains\n# what was predicted but falls short of cuBLAS. Under Nsight Compute both keep the "
              "tensor pipe about equally busy", "152-row tiles give 33 at 5000"):
        assert s in lesson, s


def test_claims_of_the_rungs_29_30_chooser_slide():
    """'Rungs 29-30: the orientation chosen per problem': the predictions are those rung17.py's docstring wrote before
    the run; every check bit-identical; the C^T tile built exactly where the wave model gives x1.05 or more (5000^3,
    5496^3); there short of the prediction at 5000^3, within 0.01 of it at 5496^3, where rung 29 matches cuBLAS
    writing FP16 C (0.99x or more, cuBLAS's timing not flattering); where rung 25's (26's) kernel was built within 1%
    of 1.00 except at 8192^3, where the clock fell; the Try it's x0.80 is the waves' at 4096^3."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rung17_probe", ROOT / "lab" / "probes" / "rung17.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = " ".join(mod.__doc__.split())
    assert "x1.00 where the launcher builds rung 25's kernel" in doc and "x1.05 at 5000^3 and x1.07 at 5496^3" in doc
    assert H.CHOOSER_PREDICTED == {(5000,) * 3: 1.05, (5496,) * 3: 1.07}
    grid = H.quad_grid()
    rows = H.chooser_first_run()
    assert {r["rung"] for r in rows} == {29, 30} and all(r["checked"] for r in rows)
    assert all(re.fullmatch(r"\d+-\d+ / \d+-\d+", r["mhz"]) and re.fullmatch(r"\d+ / \d+", r["power_w"]) for r in rows)
    for r in rows:
        m, n, k = map(int, r["shape"].split("x"))
        waves = K.ct_waves_ratio(m, n, 2 * k, 2 * n, lambda: (grid[4], grid[2], grid[2]))
        assert (r["built"] == "C^T, 160 x 256") == (waves >= K.CT_GAIN) == (m in (5000, 5496)), r
        if m not in (5000, 5496):
            assert abs(r["ratio"] - 1) <= 0.01 or (m == 8192 == k and "clock fell" in r["why"]), r
    r29 = {r["shape"]: r for r in rows if r["rung"] == 29}
    assert r29["5000x5000x5000"]["ratio"] < 1.05 and abs(r29["5496x5496x5496"]["ratio"] - 1.07) <= 0.01
    assert r29["5496x5496x5496"]["vs_cublas"] >= 0.99 and not r29["5496x5496x5496"]["why"]
    assert K.ct_gain(4096, 4096, lambda: (grid[4], grid[2])) == 0.8
    lesson = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    for s in ("**Predicted before their first run: x1.05 at $5000^3$, x1.07 at $5496^3$, x1.00 where rung 25's kernel "
              "is built.**", "short of the prediction at $5000^3$, close to it at $5496^3$, where rung 29 matches "
              "cuBLAS writing FP16 C", "within 1% of 1.00, except at $8192^3$, where the clock fell",
              "The waves predict x0.80 for `CT_M=160`", "Rung 29 again gained less than predicted; rung 30's median "
              "gain is about the prediction, though its spread holds no gain too. Timed in turn with cuBLAS (the targets "
              "table), rung 29 meets the 0.95x goal there and rung 30 misses it."):
        assert s in lesson, s
    # ... and in the record at 5000^3: rung 29 below the x1.05 (a miss, worse), rung 30's spread holds it; the targets
    e = _rec()["hopper"]
    g29, g30 = (H.gain_at(e, k, (5000,) * 3, 1.05, base) for k, base in ((29, 25), (30, 26)))
    assert g29["verdict"] == "missed: worse than predicted" and abs(g30["measured"] - 1.05) < 0.01
    assert g30["verdict"] == "unresolved: the spread holds no gain too"
    assert "the forced tile gained x1.052 in alternating rounds (as the ratio of median times; x1.081 as the median of " \
        "the round ratios)" in H.MISS_NOTES[29]["worse"]
    forced = {r["n"]: r for r in H.ct_tile_rows()}[5000]
    run = {r["what"]: r for r in json.loads((ROOT / "results" / "logs" / "ct-tile-probe-nvidia-h200.json").read_text())
           ["timed"] if r["n"] == 5000}
    assert f"{forced['ratio']:.3f}" == "1.081" and \
        f"{run['rung 25']['median_ms'] / run['rung 29']['median_ms']:.3f}" == "1.052"
    t = {(x["shape"], x["C"]): x for x in H.targets(e)}
    assert t["5000x5000x5000", "FP16"]["rung"] == 29 and t["5000x5000x5000", "FP16"]["short"] == 0.001
    assert t["5000x5000x5000", "FP32"]["rung"] == 30 and t["5000x5000x5000", "FP32"]["met"] is None
    assert "sw power cap" in t["5000x5000x5000", "FP32"]["why"]
    assert "miss_note(k, (5000,) * 3, 1.05, base, written=\"before the record\")" in lesson.replace("\n", " ")
    h = {(x["shape"], x["C"]): x for x in H.head_to_head(_rec()["hopper_targets"])}
    assert (h["5000x5000x5000", "FP16"]["rung"], h["5000x5000x5000", "FP16"]["met"]) == (29, True)
    assert (h["5000x5000x5000", "FP32"]["rung"], h["5000x5000x5000", "FP32"]["met"]) == (30, False)


def test_claims_of_the_rung_31_slide():
    """Appendix D, 'Tried: cuBLAS's pairs along N (rung 31)', and rung 31's kernel comment, from its run
    (results/logs/ct-pair-n-nvidia-h200.json, after the fix; the failed first run's log beside it): every check
    bit-identical; slower than rung 29 in every round at 5000^3; x0.965, x1.018, x0.861; the clocks about 1500 MHz in
    most rounds at 5000^3 and 5496^3 for both kernels; the sanitizer logs clean; rung 31 still pending."""
    import json
    import statistics

    logs = ROOT / "results" / "logs"
    run = json.loads((logs / "ct-pair-n-nvidia-h200.json").read_text())
    rows = {r["n"]: r for r in H.ct_tile_rows(("ct-pair-n",), new=31, base=29)}
    assert set(rows) == {5000, 4096, 5496} and all(r["checked"] for r in rows.values())
    r31 = [c for c in run["checks"] if c["rung"] == 31]     # (and rung 29's at the timed sizes)
    assert len(r31) == 8 and sum(c["shape"][0] not in rows for c in r31) == 5
    assert rows[5000]["won"] == "0 of 7" and rows[5496]["won"] == "0 of 7"
    ksrc = " ".join((ROOT / "kernels" / "hopper_sm90a.cu").read_text().replace("\n// ", " ").split())
    assert (f"x{rows[5000]['ratio']:.3f} over rung 29 at 5000^3 (slower in every round), x{rows[4096]['ratio']:.3f} at "
            f"4096^3, x{rows[5496]['ratio']:.3f} at 5496^3.") in ksrc
    assert "bit-identical at 5 odd sizes and the 3 timed ones, memcheck 0 errors, racecheck 0 hazards" in ksrc
    for n in (5000, 5496):
        for what in ("rung 31", "rung 29"):
            mhz = next(r["sm_mhz"] for r in run["timed"] if r["n"] == n and r["what"] == what)
            assert statistics.median(mhz) <= 1560 and sum(m <= 1560 for m in mhz) > len(mhz) / 2, (n, what)
    assert "ERROR SUMMARY: 0 errors" in (logs / "sanitize-pair-n-memcheck-nvidia-h200.log").read_text()
    assert "0 hazards displayed (0 errors, 0 warnings)" in (logs / "sanitize-pair-n-racecheck-nvidia-h200.log").read_text()
    assert "Unknown Error" in (logs / "sanitize-pair-n-memcheck-failed-nvidia-h200.log").read_text()
    assert 31 in K.PENDING and 31 not in K.ALL_RUNGS
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = " ".join(src[src.index("# ### Tried: cuBLAS's pairs along N"):src.index("# ### Tried: 128 CTAs")]
                     .replace("\n# ", " ").split())
    for s in ("**Predicted before it ran, over rung 29 with its C^T tile forced: x1.03 at $5000^3$ and $4096^3$, x0.88 "
              "at $5496^3$**", "counted negative boxes of B in its stage's byte count",
              "slower than rung 29 in every round at $5000^3$", "the SM clock fell to about 1500 MHz in most rounds",
              "Rung 31 stays out of the ladder"):
        assert s in slide, s
    from lab.probes.ct_tile import PAIR_N_PREDICTED

    assert {int(k): v for k, v in run["predicted"].items()} == PAIR_N_PREDICTED
    # why, under Nsight Compute at 5000^3 (results/logs/ncu-pair-n-nvidia-h200.json): the rows asked of L2 (the cell's
    # count: 33 x 20 tiles of 80 + 256 rows against 32 x 20 of 160 + 128) predict the rise in L2 sectors within 2%;
    # DRAM reads rise more; long-scoreboard stalls about twice; the tensor pipe 93% -> 82%
    ncu = {r["kernel"]: r for r in H.ncu_alignment_rows("ncu-pair-n")}
    asked = (33 * 20 * (80 + 256)) / (32 * 20 * (160 + 128))
    sectors = ncu["rung 31"]["sectors_m"] / ncu["rung 29"]["sectors_m"]
    assert abs(sectors - asked) < 0.02 and ncu["rung 31"]["dram_mb"] / ncu["rung 29"]["dram_mb"] > sectors + 0.1
    assert 1.9 <= ncu["rung 31"]["long_scoreboard"] / ncu["rung 29"]["long_scoreboard"] <= 2.3
    assert (round(ncu["rung 29"]["tensor_pct"]), round(ncu["rung 31"]["tensor_pct"])) == (93, 82)
    assert ncu["rung 31"]["us"] > ncu["rung 29"]["us"]
    for s in ("**Its loads cost more than its waves saved.**", "the count above predicts the measured rise in L2 "
              "sectors", "DRAM reads rise more than that, loads wait about twice as long, and the tensor pipe drops "
              "from 93% to 82% busy"):
        assert s in slide, s
    assert ("1.20x its L2 read sectors (the box rows above), 1.46x its DRAM reads, tensor pipe 82% against 93%, "
            "long-scoreboard stalls 2.1x") in ksrc
    assert f"{sectors:.2f}x" == "1.20x" and f"{ncu['rung 31']['dram_mb'] / ncu['rung 29']['dram_mb']:.2f}" == "1.46"
    assert f"{ncu['rung 31']['long_scoreboard'] / ncu['rung 29']['long_scoreboard']:.1f}" == "2.1"


def test_claims_of_the_orientation_alone_slide():
    """Appendix D, 'Tried: the orientation alone (CT_M=128)', rung 29's CT_M comment and its knob's text, from
    lab/probes/ct_tile.py --ct-m 128 (results/logs/ct-m128-nvidia-h200.json): the prediction (x1.00 at both sizes)
    the run's own; every check bit-identical (5 odd sizes and the 2 timed ones for rung 29); within 1.5% of rung 25 at
    both, one above and one below; at 4096^3 the clock fell below 1800 MHz for all three kernels, at 2048^3 not."""
    import json

    from helpers import tryout

    run = json.loads((ROOT / "results" / "logs" / "ct-m128-nvidia-h200.json").read_text())
    assert run["ct_m"] == 128 and run["predicted"] == {"4096": 1.0, "2048": 1.0}
    rows = {r["n"]: r for r in H.ct_tile_rows(("ct-m128",))}
    assert set(rows) == {2048, 4096} and all(r["checked"] for r in rows.values())
    assert sum(c["rung"] == 29 for c in run["checks"]) == 7 and all(c["model"] == "identical" for c in run["checks"])
    assert all(abs(r["ratio"] - 1) <= 0.015 for r in rows.values()) and rows[2048]["ratio"] > 1 > rows[4096]["ratio"]
    for n, fell in ((4096, True), (2048, False)):
        for r in run["timed"]:
            if r["n"] == n:
                assert (min(r["sm_mhz"]) < 1800) == fell, (n, r["what"])
    ksrc = " ".join((ROOT / "kernels" / "hopper_sm90a.cu").read_text().replace("\n// ", " ").split())
    assert (f"bit-identical at 5 odd sizes and the 2 timed ones, x{rows[4096]['ratio']:.3f} at 4096^3 (clocks falling) "
            f"and x{rows[2048]['ratio']:.3f} at 2048^3: the orientation alone gains nothing.") in ksrc
    assert (f"bit-identical and x{rows[4096]['ratio']:.2f} (4096^3) / x{rows[2048]['ratio']:.2f} (2048^3) over rung 25"
            in tryout.KNOBS[29]["CT_M"].teaches)
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    slide = " ".join(src[src.index("# ### Tried: the orientation alone"):src.index("# ### Tried: 128 CTAs")]
                     .replace("\n# ", " ").split())
    for s in ("**Predicted before it ran: x1.00 over rung 25 at $4096^3$ and $2048^3$**",
              "within 1.5% of rung 25 at both sizes, once a little ahead and once a little behind",
              "at $4096^3$ the clock fell in the later rounds, for rung 25 and cuBLAS too",
              "**The orientation alone gains nothing**, as predicted"):
        assert s in slide, s
    # the table at the start of Appendix D names cuBLAS's 4096^3 kernel: 256 x 128 (columns x rows of C), 4 stages,
    # clusters of 2
    cub = {tuple(c["shape"]): c["kernels"][0]["name"] for c in _rec()["cublas_kernels"]["calls"] if c["c"] == "fp16c"}
    assert "_256x128_64x4_1x2_" in cub[4096, 4096, 4096]


def test_the_targets_in_turn_say_what_the_record_says():
    """The main path's 'Like for like, at every shape', from experiment hopper_targets: missed at 4096^3 and 8192^3
    (both C types, short by 0.003-0.024, '0.3-2.4%') and at 5000^3 with FP32 C, met at every other target; every
    candidate correct. Its 'Before Appendix D's rungs': at 5000^3 and 128 rows the best rung below 17 of either C type
    far short of its goal (more than 0.05 below). The Summary's bullet on judging."""
    src = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    h = {(x["shape"], x["C"]): x for x in H.head_to_head(_rec()["hopper_targets"])}
    assert len(h) == 14 and all(x["checked"] and not x["error"] for x in h.values())
    big = ("4096x4096x4096", "8192x8192x8192")
    missed = {k for k, x in h.items() if x["met"] is False}
    assert missed == {(s_, c) for s_ in big for c in ("FP16", "FP32")} | {("5000x5000x5000", "FP32")}
    assert all(x["met"] is True for k, x in h.items() if k not in missed)
    shorts = [h[s_, c]["short"] for s_ in big for c in ("FP16", "FP32")]
    assert (f"{100 * min(shorts):.1f}", f"{100 * max(shorts):.1f}") == ("0.3", "2.4")
    for s_ in ("**Missed at $4096^3$ and $8192^3$ (by 0.3-2.4%) and at $5000^3$ with FP32 C (the counters: Appendix G); "
               "met elsewhere.**",
               "Experiment `hopper_targets` times each goal's best rungs and cuBLAS (same C) in turn, seven rounds; the "
               "median round's ratio decides:", "**Before Appendix D's rungs**, $5000^3$ and 128 rows fall far short.",
               "- Compare like for like: the same C type and inputs, timed in turn, clocks beside; judge the median "
               "round."):
        assert s_ in src, s_
    assert H.TARGET_ROUNDS == 7 and _rec()["hopper_targets"]["rounds"] == 7
    # the README's "about 90 s on the H200": the run's own log
    took = float(re.search(r"done in ([\d.]+) s", (ROOT / "results" / "logs" /
                                                   "record-hopper-targets-nvidia-h200.log").read_text()).group(1))
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert 80 <= took <= 100 and "alternating rounds (about 90 s on the H200)" in readme
    e = _rec()["hopper"]
    for shape in ((5000,) * 3, (128, 8192, 8192)):
        for c in ("float16", "float32"):
            assert H.best_rung(e, shape, c, below=17)["frac_cublas"] < H.TARGETS[shape] - 0.05, (shape, c)


def test_appendix_f_compares_one_timing_with_the_rounds():
    """Appendix F: the record's one-timing verdicts (H.targets) leave most goals away from 4096^3 and 2048^3 unjudged
    (more than half of them); where both ways judge, they agree but at 5000^3 with FP16 C: 0.001 short on one
    timing, met in turn."""
    src = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    one = {(x["shape"], x["C"]): x for x in H.targets(_rec()["hopper"])}
    turn = {(x["shape"], x["C"]): x for x in H.head_to_head(_rec()["hopper_targets"])}
    away = [x for (s_, _), x in one.items() if s_ not in ("4096x4096x4096", "2048x2048x2048")]
    assert sum(x["met"] is None for x in away) > len(away) / 2
    both = [k for k in one if one[k]["met"] is not None and turn[k]["met"] is not None]
    assert [k for k in both if one[k]["met"] != turn[k]["met"]] == [("5000x5000x5000", "FP16")]
    assert one["5000x5000x5000", "FP16"]["short"] == 0.001 and turn["5000x5000x5000", "FP16"]["met"] is True
    assert ("In the record, most goals away from $4096^3$ and $2048^3$ go unjudged. Where both ways judge, they "
            "agree but once: at $5000^3$ with FP16 C, 0.001 short on one timing, met in turn.") in src


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
    exp = {"predicted": [[[4096] * 3, "float16", 0.99]],
           "cells": [_h2h_cell({15: [1.0, 1.0, 1.0], 29: [1.0, 1.0, 1.0]}, [1.02, 0.98, 0.99]),
                     _h2h_cell({13: [1.0, 2.0, 1.0]}, [0.96, 2.0, 0.97], goal=0.95, c="float32")]}
    exp["cells"][0]["timed"][1]["round_ms"] = [1 / 0.97 * 1.02, 1 / 0.97 * 0.98, 1 / 0.97 * 0.99]
    a, b = H.head_to_head(exp)
    assert a["rung"] == 15 and abs(a["ratio"] - 0.99) < 1e-12 and a["met"] is False and a["short"] == 0.01
    assert a["won"] == "1 of 3" and abs(a["high"] - 1.02) < 1e-12 and a["predicted"] == 0.99 and a["checked"]
    assert b["rung"] == 13 and abs(b["ratio"] - 0.97) < 1e-12 and b["met"] is True and b["short"] is None
    assert b["predicted"] is None and b["C"] == "FP32"
    # a wrong candidate is never hidden: checked is False (the cell's rungs are timed only where they passed)
    bad = H.head_to_head({"cells": [_h2h_cell({15: [1.0]}, [1.0], passed=False)]})[0]
    assert bad["checked"] is False
    assert H.head_to_head({"cells": [_h2h_cell({15: [1.0]}, [1.0], model="differs")]})[0]["checked"] is False
    md = H.head_to_head_table(exp).data              # the lesson's table: met as yes / no, short by 0.010
    assert "| 15 | 0.990 | 1 of 3 |" in md and "| no | 0.010 |" in md and "| yes |  |" in md
    lost = dict(_h2h_cell({}, []), timed=[], error="CUDARuntimeError: an illegal memory access")
    r = H.head_to_head({"cells": [lost]})[0]
    assert r["met"] is None and r["rung"] is None and r["error"].startswith("CUDARuntimeError")


def test_hopper_targets_plans_every_target_with_its_candidates():
    """The plan from the record: every target shape and both C types, each with one to three candidates (the best
    ratio first, each a correct rung of that C type at that shape); the predictions cover every cell and were written
    before the experiment ran (the record's `hopper_targets`, if any, carries the same)."""
    from helpers.kernels import rung_entry

    rows = _rec()["hopper"]
    assert set(H.TARGET_PREDICTED) == {(s, c) for s in H.TARGETS for c in ("float16", "float32")}
    for shape in H.TARGETS:
        for c in ("float16", "float32"):
            cand = H.target_candidates(rows, shape, c)
            assert 1 <= len(cand) <= 3 and len(set(cand)) == len(cand), (shape, c)
            assert cand[0] == H.best_rung(rows, shape, c)["rung"]
            assert all(rung_entry(k).out_dtype == c for k in cand), (shape, c, cand)
    exp = _rec().get("hopper_targets")
    if exp is not None:
        assert {(tuple(s), c): v for s, c, v in exp["predicted"]} == H.TARGET_PREDICTED
        assert exp["rounds"] == H.TARGET_ROUNDS and len(exp["cells"]) == 2 * len(H.TARGETS)


def test_claims_of_appendix_g():
    """Appendix G, from results/logs/ncu-targets-<n> and order-nvidia-h200.json: at 4096^3 and 8192^3 each best rung's
    tensor pipe within about 1 point of cuBLAS's (same C), DRAM reads 24-33% and L2 sectors 16-23% above; the GROUP_M=16
    predictions those the probe wrote before its run; slower for rung 15 at 4096^3, 0-1.5% faster at 8192^3, where the
    ratios to cuBLAS moved between the builds by at least as much; GROUP_M stays 8; at 5000^3 the same DRAM bytes (within
    1%) and fewer L2 sectors, and the waves: 5 of pairs each, 6.25 against 5.9375 rung-14 tile-times, the ratio the
    measured time ratio within 0.01; every check bit-identical."""
    import importlib.util

    from helpers import tryout

    src = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    rows = [r for r in H.ncu_target_rows() if r["kernel"] != "cuBLAS"]
    big = [r for r in rows if r["n"] in (4096, 8192)]
    assert len(big) == 4 and all(abs(r["tensor_pts"]) <= 1.05 for r in big)
    assert (min(round(100 * (r["x_dram"] - 1)) for r in big), max(round(100 * (r["x_dram"] - 1)) for r in big)) == (24, 33)
    assert (min(round(100 * (r["x_l2"] - 1)) for r in big), max(round(100 * (r["x_l2"] - 1)) for r in big)) == (16, 23)
    for s_ in ("the Tensor Cores are about as busy as cuBLAS's (within about 1 point), yet the rungs read 24-33% more "
               "from DRAM and 16-23% more L2 sectors", "**Predicted before it ran: x1.005 at $4096^3$, x1.01 at "
               "$8192^3$**", "Not reliably faster: slower for rung 15 at $4096^3$, about 1% faster at $8192^3$",
               "`GROUP_M` stays 8.", "both make 5 waves of pairs, but each of rung 29's takes longer",
               "at $8192^3$ rungs 29-30 build rung 25's and 26's kernels"):
        assert s_ in src, s_
    spec = importlib.util.spec_from_file_location("wait_hint_probe", ROOT / "lab" / "probes" / "wait_hint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = " ".join(mod.__doc__.split())
    assert (f"Predicted before it ran: x{H.ORDER_PREDICTED[4096]} at 4096^3 (the knob sweeps' GROUP_M=16 rows: x1.001 "
            f"to x1.012), x{H.ORDER_PREDICTED[8192]} at 8192^3") in doc
    o = {(r["shape"], r["rung"]): r for r in H.order_rows()}
    assert len(o) == 4 and all(r["checked"] for r in o.values())
    assert o["4096^3", 15]["x16"] < 1
    for k in (25, 26):
        r = o["8192^3", k]
        assert 1 < r["x16"] <= 1.015 and abs(r["vs16"] - r["vs8"]) >= r["x16"] - 1
    assert all(tryout.KNOBS[k]["GROUP_M"].default == 8 for k in (15, 25, 26, 29, 30))
    # session 26, Nsight Compute with GROUP_M=16 at 4096^3: "both rungs read as little from DRAM as cuBLAS (first table)
    # in the same time, their Tensor Cores as busy"; "what is left there is the tensor pipe's point"
    g = {r["target"]: r for r in H.ncu_log_rows("ncu-group16-4096")}
    assert set(g) == {"rung15", "rung26", "rung15_group16", "rung26_group16"}
    cub = {r["C"]: r for r in H.ncu_target_rows() if r["kernel"] == "cuBLAS" and r["n"] == 4096}
    for k, c in ((15, "FP16"), (26, "FP32")):
        a, b = g[f"rung{k}"], g[f"rung{k}_group16"]
        assert b["dram_mb"] <= cub[c]["dram_mb"] < a["dram_mb"] / 1.2
        assert abs(b["ms"] - a["ms"]) < 0.0015 and abs(b["tensor_pct"] - a["tensor_pct"]) < 0.5
    assert ("both rungs read as little from DRAM as cuBLAS (first table of this appendix) in the same time, their "
            "Tensor Cores as busy: the extra DRAM bytes did not cost the missing percent") in src
    assert "GROUP_M=16" in g["rung15_group16"]["run"] or "group16" in g["rung15_group16"]["run"]
    r5 = {r["kernel"]: r for r in rows if r["n"] == 5000}
    assert all(abs(r["x_dram"] - 1) < 0.01 and r["x_l2"] < 1 for r in r5.values())
    import math
    ours, theirs = math.ceil(5000 / 160) // 2 * 20, math.ceil(5000 / 152) * 10
    assert math.ceil(ours / 66) == math.ceil(theirs / 66) == 5
    model = (5 * 160 / 128) / (5 * 152 / 128)
    assert abs(r5["rung 29"]["x_time"] - model) < 0.01 and abs(r5["rung 30"]["x_time"] - model) < 0.01


def test_claims_of_the_targets_timed_again():
    """Appendix G, 'The targets timed again' (results/logs/hopper-targets-repeat): the prediction as the helper keeps it;
    both runs' candidates all correct; 9 met first, 10 again; the largest change 0.035; the three verdicts that flipped
    and the three targets missed both times, with their ratios as quoted."""
    src = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    rec = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    rows = H.repeat_rows(rec["experiments"]["hopper_targets"])
    assert H.REPEAT_PREDICTED_WITHIN == 0.02 and len(rows) == 14 and all(r["checked"] for r in rows)
    assert (sum(r["met1"] == "yes" for r in rows), sum(r["met2"] == "yes" for r in rows)) == (9, 10)
    assert f"{max(abs(r['change']) for r in rows):.3f}" == "0.035" > f"{H.REPEAT_PREDICTED_WITHIN:.3f}"
    key = lambda r: (r["shape"].split("x")[0] if len(set(r["shape"].split("x"))) == 1 else r["shape"], r["C"])  # noqa: E731
    flipped = {key(r): (r["met1"], r["met2"]) for r in rows if r["met1"] != r["met2"]}
    assert flipped == {("4096", "FP16"): ("no", "yes"), ("8192", "FP32"): ("no", "yes"), ("5000", "FP16"): ("yes", "no")}
    both = {key(r): (r["ratio1"], r["ratio2"]) for r in rows if r["met1"] == r["met2"] == "no"}
    assert set(both) == {("4096", "FP32"), ("8192", "FP16"), ("5000", "FP32")}
    # how far each of the three fell short of its goal, both times: 0.002 to 0.024, all within the 0.035 spread
    # (the FP32 target at 5000^3 too: its goal is 0.95, not 1.0)
    goal = {key(r): r["goal"] for r in rows}
    short = {k: tuple(round(goal[k] - x, 3) for x in v) for k, v in both.items()}
    assert (min(min(v) for v in short.values()), max(max(v) for v in short.values())) == (0.002, 0.024)
    assert max(max(v) for v in short.values()) < 0.035 and goal["5000", "FP32"] == 0.95
    assert tuple(f"{x:.3f}" for x in both["5000", "FP32"]) == ("0.935", "0.939")
    assert short["5000", "FP32"] == (0.015, 0.011)
    for s_ in ("**Missed**: 10 targets met instead of 9, and ratios moved by up to 0.035.",
               "At $4096^3$ with FP16 C and at $8192^3$ with FP32 C the goal is met this time; at $5000^3$ with FP16 C it is not.",
               "Three targets missed both times, each by 0.002 to 0.024 below its goal, within that spread: $4096^3$ "
               "with FP32 C, $8192^3$ with FP16 C, and $5000^3$ with FP32 C (x0.935 and x0.939 against 0.95: short by "
               "0.015, then 0.011)."):
        assert s_ in src, s_
    assert "by more (x0.935" not in src


def test_the_appendix_in_one_list_names_real_slides_and_true_states():
    """Appendix D's 'This appendix in one list': every slide it quotes is a heading of the lesson; the rungs it calls
    kept are in the ladder, the tried ones (27-28, 31) are not; the knobs it names exist, and what it tried is not the
    default (CT_M 160, GROUP_M 8) or is gone from the kernel file (L2_PREFETCH)."""
    from conftest import quoted_slides

    quoted, headings = quoted_slides("06_hopper_full_speed", "This appendix in one list")
    assert len(quoted) == 10
    for q in quoted:
        assert q in headings, q
    from helpers.kernels import ALL_RUNGS, CT_M
    from helpers.tryout import KNOBS

    assert set(range(17, 27)) | {29, 30} <= set(ALL_RUNGS) and not {27, 28, 31} & set(ALL_RUNGS)
    assert "TILE_N" in KNOBS[25] and "TILE_N" in KNOBS[26] and "CT_M" in KNOBS[29] and "GROUP_M" in KNOBS[14]
    assert CT_M == 160 and KNOBS[29]["CT_M"].default == 160
    kernel = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert "L2_PREFETCH" not in kernel and re.search(r"#ifndef GROUP_M\s*\n#define GROUP_M 8\b", kernel)


# --------------------------------------------------------------------------- the rung slides' readers (review fixes)
def _lesson_prose() -> str:
    return " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())


def test_rung_8_missed_by_the_blend_of_two_sizes():
    """Rung 8's x1.3 (the registry's, written before it ran) was one figure for 4096^3 and 8192^3, where rung 7's
    kernel alone ran x1.50 and x1.15 rung 7's speed (lesson 5's record): rung 8 measured x1.47 and x1.15, within 3% of
    those, so the miss (one each way) is the blend's. measured(8) prints those figures in its notes; the first notes,
    which blamed the transpose or wgmma's MN-major reads, are kept aside (SUPERSEDED_NOTES), not shown."""
    e = _rec()
    assert K.HOPPER_RUNGS[8].predicted_gain == 1.3
    want = {4096: ("1.47", "1.50", "better"), 8192: ("1.15", "1.15", "worse")}
    notes = H.measured(e["hopper"], 8, ladder=e["ladder"], sms=132).data
    for n, (got, alone, way) in want.items():
        g = next(x for x in H.gains(e["hopper"], n) if x["rung"] == 8)
        a = H.kernel_alone_gain(e["ladder"], n)
        assert (f"{g['measured']:.2f}", f"{a:.2f}", g["direction"]) == (got, alone, way)
        assert abs(g["measured"] / a - 1) < 0.03
        assert f"x{alone} over rung 7 at this size" in H.miss_text(8, way, n, e["ladder"])
        assert f"| {n} | 1.3 | {got} |" in notes and f"x{alone} over rung 7" in notes
    assert "transpose cost more" not in notes and "more slowly than K-major" not in notes
    assert "transpose cost more" in H.SUPERSEDED_NOTES[8]["better"]
    with pytest.raises(ValueError, match="ladder"):
        H.miss_text(8, "better", 4096)
    src = _lesson_prose()
    assert ("**Missed both ways: the miss is the blend's.** x1.3 was one figure for two sizes whose kernel-alone speeds "
            "said x1.50 and x1.15 (the notes); rung 8 measured x1.47 and x1.15, within 3% of them.") in src
    assert "**Predicted: x1.3 over rung 7.**" in src                 # the prediction stays as written


def test_rung_10_note_counts_the_tiles_it_walks():
    """measured(10)'s note for a miss computes the tiles and waves (the cell above prints 512 and 2048 tiles, 97% of
    the CTAs busy), where the first note said 128 and 512; it says the last wave costs rung 9's grid as much."""
    from helpers.exercises.hopper import waves

    for n, tiles, w in ((4096, 512, 4), (8192, 2048, 16)):
        f = H.wave_facts((n, n, n), 132)
        assert (f["tiles"], f["waves"]) == (tiles, w) and (w, f["busy"]) == waves(n, n, sms=132)
        text = H.miss_text(10, "worse", n, sms=132)
        assert text.startswith(f"after the record: {tiles} tiles make {w} waves of 132 CTAs (97% of them busy)")
        assert "not measured" in text and "128 (4096)" not in text
    assert "128 (4096) or 512 (8192)" in H.SUPERSEDED_NOTES[10]["worse"]
    notes = H.measured(_rec()["hopper"], 10, sms=132).data
    assert "512 tiles make 4 waves" in notes and "missed: worse than predicted" in notes
    # no other note has fields to fill: miss_text gives them as written
    for k, v in H.MISS_NOTES.items():
        for way, note in v.items():
            assert ("{" in note) == ((k, way) in {(8, "better"), (8, "worse"), (10, "worse")}), (k, way)
            if "{" not in note:
                assert H.miss_text(k, way, 4096) == note


def test_switch_lines_show_the_branch_each_rung_takes():
    """Rung 13's cell shows the TMA-store path (`} else if (!TMA_STORE) {` opens the chain: it used to drop it and
    show nothing), with FP32 boxes and no stmatrix; rung 14's shows its stmatrix_x4 branch, not the C^T one of rungs
    29-31 (stmatrix_x4_trans). The other switch cells read as before."""
    t13 = H.switch_lines("TMA_STORE", blocks_only=True, rung=13).data
    body13 = t13.split("```cuda\n")[1]
    for s_ in ("} else if (!TMA_STORE) {", "} else if (row < M) {", "store2(", "fence_proxy_async();", "tma_store(tmC",
               "bulk_commit();", "// (not in rung 13: HALF_C is false)", "// (not in rung 13: !TMA_STORE is false)"):
        assert s_ in body13, s_
    for s_ in ("stmatrix", "store_slice(", "pack_half2"):
        assert s_ not in body13, s_
    t14 = H.switch_lines("HALF_C", blocks_only=True, rung=14).data
    body14 = t14.split("```cuda\n")[1]
    assert body14.lstrip().startswith("if (HALF_C) {") and "stmatrix_x4(" in body14 and "pack_half2" in body14
    for s_ in ("stmatrix_x4_trans", "CT", "store2(", "..."):
        assert s_ not in body14, s_
    assert "// (not in rung 14: an earlier branch is taken)" in body14
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert 'switch_lines("TMA_STORE", blocks_only=True, rung=13)' in src
    assert 'switch_lines("HALF_C", blocks_only=True, rung=14)' in src
    # without a rung nothing is ruled out: both sides of each switch
    plain = H.switch_lines("TMA_STORE", blocks_only=True).data
    assert "store_slice(e, C, M, N, row, tn * BN + c0);" in plain and "stmatrix_x4(" in plain
    p = H.switch_lines("PERSISTENT").data
    assert "if (PERSISTENT) {" in p and "} else {" in p and "step = units;" in p and "static_assert" in p
    assert "if (ORDER == ORDER_PLAIN) {" in H.switch_lines("ORDER", fn="tile_of").data
    assert H.template_settings(13)["HALF_C"] is False and H.template_settings(14)["HALF_C"] is True
    assert H.template_settings(12)["CLUSTER"] == 2 and H.template_settings(29)["CT"] is True


def test_decide_reads_switch_conditions():
    s = {"CT": False, "TMA_STORE": True, "CLUSTER": 2, "PAIR_N": False, "BM": 128}
    assert H._decide("!TMA_STORE", s) is False and H._decide("CT", s) is False and H._decide(None, s) is True
    assert H._decide("CLUSTER == 1 || PAIR_N", s) is False and H._decide("CLUSTER > 1", s) is True
    assert H._decide("BM >= 128 && !CT", s) is True and H._decide("BM / 2 == 64", s) is True
    assert H._decide("row < M", s) is None and H._decide("TMA_STORE && row < M", s) is None
    assert H._decide("CT && row < M", s) is False and H._decide("TMA_STORE || row < M", s) is True
    assert H._decide("threadIdx.x % 128 == 0", s) is None and H._decide("(int)x", s) is None


def test_the_readers_are_helpers_not_lesson_code():
    """The five readers the rung slides call live in helpers/experiments/hopper.py; the lesson keeps a short alias cell
    (a skip cell) and defines no function of its own before Appendix A."""
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    main = src.split("# ## Appendix A")[0]
    assert not re.search(r"^def ", main, re.M)
    cell = main.split("# The rung slides' readers (helpers/experiments/hopper.py)")[1].split("# %%")[0]
    assert len(cell.strip().splitlines()) <= 8
    for name in ("switch_lines", "measured", "miss_note", "verdict_table", "knob_sweep"):
        assert callable(getattr(H, name)) and getattr(H, name).__doc__, name
    lines = ["8 PASS hopper_b_rowmajor M=257 N=520 K=136: fine | padded to (264, 520, 136)",
             "9 PASS hopper_warp_specialized M=257 N=520 K=136: fine"]
    t = H.verdict_table(lines).data
    assert "| 8 | PASS | hopper_b_rowmajor | (264, 520, 136) |" in t and "what the check found" not in t
    t = H.verdict_table(lines + ["a line it cannot split"]).data
    assert "|  |  |  | a line it cannot split |  |" in t and "| 9 | PASS | hopper_warp_specialized | fine |  |" in t


def test_knob_sweeps_show_their_spread_and_clock():
    """sweep(): each value's ratio to the rung as recorded, with the spread both timings' p10 and p90 allow and the SM
    clock. Rung 12 with CLUSTER_M=1 builds rung 11's kernel (the same ws_gemm arguments), yet timed 3% below rung 11
    as recorded, with their p10-p90 ranges apart and at another clock: the lesson says a few percent between separate
    timings is not resolved, and that a difference within the spread is not either (rung 8 at 2 stages)."""
    kn = _rec()["knobs"]
    rows = {r["value"]: r for r in H.knob_rows(kn, 12, "CLUSTER_M")}
    c1 = rows["CLUSTER_M=1"]
    assert f"{c1['ratio']:.2f}" == "0.97" and c1["high"] < 1 and "1965 MHz" in c1["clock"]
    assert rows["CLUSTER_M=2 (as recorded)"]["low"] is None and rows["CLUSTER_M=2 (as recorded)"]["clock"] == "1980 MHz"
    assert H.template_settings(11) == dict(H.template_settings(12), CLUSTER=1)
    r11 = next(r for r in kn if r["rung"] == 11 and r.get("knob") is None)
    r12 = next(r for r in kn if r["rung"] == 12 and (r.get("knob"), r.get("value")) == ("CLUSTER_M", 1))
    assert round(1 - r12["tflops"] / r11["tflops"], 2) == 0.03
    assert r12["p10_ms"] > r11["p90_ms"] and r12["sm_mhz"] != r11["sm_mhz"]
    s8 = {r["value"]: r for r in H.knob_rows(kn, 8, "STAGES")}["STAGES=2"]
    assert s8["low"] < 1 < s8["high"] and s8["ratio"] < 1               # within the spread: not resolved
    t = H.knob_sweep(kn, 12, "CLUSTER_M").data
    assert "| CLUSTER_M=1 | 0.97 | 0.94 | 0.98 | 1965 MHz, sw power cap | yes |" in t and "None" not in t
    src = _lesson_prose()
    for s_ in ("Below, the H200's sweep, each ratio with its p10-p90 spread and clock: a difference within the spread "
               "is not resolved.",
               "`CLUSTER_M=1` is rung 11's kernel, yet timed 3% below rung 11 as recorded, p10-p90 ranges disjoint, at "
               "another clock: a few percent between separate timings is not resolved either."):
        assert s_ in src, s_


def test_the_passage_on_rungs_17_to_30():
    """Where the ladder table first lists rungs 17-30: what each pair adds (the registry's ideas), that each even one
    writes FP32 C, and that they are taught in Appendix D; the like-for-like best rungs come from them."""
    r = K.HOPPER_RUNGS
    assert sorted(k for k in r if k >= 17) == [*range(17, 27), 29, 30]
    assert all(r[k].out_dtype == ("float32" if k % 2 == 0 else "float16") for k in r if k >= 17)
    for k, words in ((17, "64 x 128 tile"), (19, "one consumer warpgroup"), (21, "hint"), (23, "descriptors"),
                     (25, "clusters of 4"), (29, "C^T")):
        assert words in r[k].idea, (k, r[k].idea)
    best = {x["rung"] for x in H.head_to_head(_rec()["hopper_targets"]) if x.get("rung")}
    assert best & set(range(17, 31))
    src = _lesson_prose()
    assert ("**Rungs 17-30 are Appendix D's**, aimed mostly where rungs 8-16 fall short (128 rows, sizes off the tile "
            "grid): a $64 \\times 128$ tile, one consumer warpgroup, a wait hint, descriptors built once (17-24), clusters "
            "of 4 (25-26), cuBLAS's $C^T$ orientation (29-30); each even one writes FP32 C.") in src
    assert src.index("**Rungs 17-30 are Appendix D's**") < src.index("## One check for every rung")


# --------------------------------------------------------------------------- Appendix D-G review fixes (session 31)
def test_appendix_b_names_every_rung_that_moves_registers_with_setmaxnreg():
    """Appendix B: the registers are the count at entry for every rung with two consumer warpgroups (384 threads),
    which call setmaxnreg (ws_gemm: `if constexpr (CONSUMERS == 2) regs_dec / regs_inc`): rungs 9-18, 25-26, 29-30;
    rungs 19-24 (256 threads, one consumer) do not."""
    two = sorted(k for k, r in K.HOPPER_RUNGS.items() if r.block[0] == 384)
    one = sorted(k for k, r in K.HOPPER_RUNGS.items() if r.block[0] == 256 and k >= 9)
    assert two == [*range(9, 19), 25, 26, 29, 30] and one == list(range(19, 25))
    ksrc = (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    assert "if constexpr (CONSUMERS == 2) regs_dec<PRODUCER_REGS>();" in ksrc
    assert "if constexpr (CONSUMERS == 2) regs_inc<CONSUMER_REGS>();" in ksrc
    src = _lesson_prose()
    assert ("For every rung with two consumer warpgroups (384 threads: rungs 9-18, 25-26 and 29-30) the registers are "
            "the count at entry: `setmaxnreg` moves them between warpgroups afterwards. Rungs 19-24, with one consumer "
            "warpgroup, do not use it.") in src
    assert "For rungs 9-15 the registers" not in src


def test_appendix_g_says_which_kernel_rung_30_builds_at_4096():
    """Appendix G's Nsight Compute table names the kernel each best rung built: at 4096^3 rung 30 (the targets table's
    FP32-C rung) builds rung 26's kernel (the waves give the C^T tile x0.80 there, under the x1.05 it needs), and at
    8192^3 rungs 29-30 build rung 25's and 26's."""
    first = {(r["shape"], r["C"]): r["rung1"] for r in H.repeat_rows(_rec()["hopper_targets"])}
    assert first["4096x4096x4096", "FP32"] == 30 and first["8192x8192x8192", "FP16"] == 29
    grid = H.quad_grid()
    assert round(K.ct_gain(4096, 4096, lambda: (grid[4], grid[2])), 2) == 0.80 < K.CT_GAIN
    assert K.ct_gain(8192, 8192, lambda: (grid[4], grid[2])) < K.CT_GAIN
    names = {(r["n"], r["C"]): r["kernel"] for r in H.ncu_target_rows() if r["kernel"] != "cuBLAS"}
    assert names[4096, "FP32"] == "rung 26" and names[8192, "FP16"] == "rung 25" and names[8192, "FP32"] == "rung 26"
    assert ("at $8192^3$ rungs 29-30 build rung 25's and 26's kernels, and at $4096^3$ rung 30 builds rung 26's, so the "
            "table names those)") in _lesson_prose()


def test_the_recorded_sweeps_shown_for_a_try_name_their_size():
    """'Three changes aimed at the loads': the clusters-of-4 gain at 5000^3 is the probe's (x1.08); the try cell asks
    for 5000^3, but the knobs experiment timed 4096^3 only, where CLUSTER_M=4 was slower (x0.845): the lesson and the
    cell's first line say so."""
    kn = [r for r in _rec()["knobs"] if r["rung"] == 14]
    assert {(r["m"], r["n"], r["k"]) for r in kn} == {(4096,) * 3}
    c4 = next(r for r in kn if r.get("knob") == "CLUSTER_M" and r["value"] == 4)
    assert c4["vs_default"] < 1 and f"{c4['vs_default']:.3f}" == "0.845"
    line = helpers.try_kernel(14, CLUSTER_M=4, timing_size=5000).message
    assert line.endswith("at 4096^3. Not at your timing_size=5000: no sweep was recorded at 5000^3."), line
    assert ("Without a GPU, the cell below shows the recorded knob sweep instead, which ran at $4096^3$ only (its "
            "first line says so): there clusters of 4 were slower, and the next slide says why.") in _lesson_prose()
    src = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert "helpers.try_kernel(14, CLUSTER_M=4, timing_size=5000)" in src


def test_rung_25s_clusters_of_4_try_says_what_the_recording_ran():
    """Rungs 25-26's 'Try it' at 4096^3: the recorded row as built ran the launcher's choice there, clusters of 2
    (its grid), the same kernel as the CLUSTER_M=2 row; no forced clusters-of-4 row exists at 4096^3 for rung 25, and
    rung 14's sweep has one (slower)."""
    kn = [r for r in _rec()["knobs"] if r["rung"] == 25]
    built = next(r for r in kn if r.get("knob") is None)
    assert "66 clusters of 2" in built["resident"] and built["settings"]["CLUSTER_M"] == 4
    assert not any(r.get("knob") == "CLUSTER_M" and r["value"] == 4 for r in kn)
    assert K.quad_choice(4096, 4096, 8192, 8192, lambda: (30, 66)) == 2
    r14 = next(r for r in _rec()["knobs"] if r["rung"] == 14 and r.get("knob") == "CLUSTER_M" and r["value"] == 4)
    assert "clusters of 4" in r14["resident"] and r14["vs_default"] < 1
    assert helpers.tryout._value_label(built, "CLUSTER_M") == "CLUSTER_M=2, chosen per shape (as recorded)"
    src = _lesson_prose()
    assert ("On a GPU, `CLUSTER_M=4` forces clusters of 4 at every size. Without one, the cell shows the recorded "
            "sweep, which has no such row: as recorded, rung 25 ran the launcher's choice, clusters of 2 at $4096^3$ "
            "(its first row says \"chosen per shape\"), the same kernel as its `CLUSTER_M=2` row. For clusters of 4 at "
            "$4096^3$, see rung 14's sweep (`helpers.try_kernel(14, CLUSTER_M=4)`, on rung 14's slide).") in src
    raw = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    s14 = raw[raw.index("# ### Rung 14 in the code, and on the H200"):]
    assert s14.index("helpers.try_kernel(14, CLUSTER_M=4)") < s14.index("# %% [markdown] slideshow={\"slide_type\": \"s")


def test_the_tile_n_probe_and_the_256_row_rungs_27_28_are_told_apart():
    """'Rungs 27-28' names today's 256-row tile only; the earlier per-shape width (rungs 27-28 at commit dabad09) is
    'the TILE_N probe' in the prose and in its cell's output."""
    src = _lesson_prose()
    assert ("The width, chosen per problem, was first built as two rungs of its own (*the TILE_N probe* here: their "
            "numbers, 27-28, now belong to the 256-row tile of the next slide)") in src
    assert "The width became rungs 27-28" not in src and "The TILE_N probe's first run" in src
    assert "Rungs 27-28 (today's, not the TILE_N probe;" in src
    raw = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    assert 'print(f"TILE_N probe, ' in raw and 'print(f"rung {k}, {r[' not in raw
    assert "256-row tile" in K.PENDING[27].idea and 27 not in K.ALL_RUNGS     # today's rung 27


def test_the_case_for_the_256_row_tile_counts_the_clusters():
    """'Tried: a tile width per shape': one cuBLAS tile alone loads fewer rows per output than one 128 x 256, but
    counted with each cluster's multicast split among its CTAs (box_rows_per_mflop, the table's column) rung 25 in
    fours asks for the fewest, cuBLAS's tile in pairs more, the 256-row tile in pairs more than either; it was tried
    for its waves all the same."""
    r25, tall, cub = H.box_rows_per_mflop(256, 4), H.box_rows_per_mflop(152, 2, 256), H.box_rows_per_mflop(256, 2, 152, "A")
    assert (round(r25), round(tall), round(cub)) == (46, 71, 67) and r25 < cub < tall
    assert (256 + 152) / (256 * 152) < (128 + 256) / (128 * 256)
    src = _lesson_prose()
    assert ("That count leaves out the clusters, though. Counted as in the table, with the rows a cluster multicasts "
            "split among its CTAs, rung 25 in fours asks for fewer box rows per MFLOP than cuBLAS's tile in pairs, and "
            "a 256-row tile in pairs asks for more than either (the next slide counts all three). A 256-row tile was "
            "tried next all the same, for the waves it fills.") in src
    assert "A 256-row tile is the next thing to try." not in src and "still loads fewer rows" not in src
    assert "**Predicted before it ran: x1.05 over rung 25 (26) at $5000^3$" in src      # the prediction as written


def test_tables_timed_with_the_old_flush_say_so():
    """Experiment tail_split (rung 17's knobs, the row-stride tables) was timed with the memset flush (Appendix E),
    the hopper experiment with the read flush: rung 17 as recorded is 320 TFLOP/s in the knob table, 371 in the gain
    table; the prose says to compare within each table."""
    rec = helpers.results.load_latest()
    assert rec.flush("tail_split") == "write" and rec.flush("hopper") == "read"
    kn = rec.meta["experiments"]["tail_split"]["skinny_knobs"]["rows"]
    assert not kn[0]["knobs"] and f"{kn[0]['tflops']:.0f}" == "320"
    assert f"{H.gain_at(rec.meta['experiments']['hopper'], 17, (128, 8192, 8192))['tflops']:.0f}" == "371"
    src = _lesson_prose()
    assert ("They were timed with the harness's old memset flush (Appendix E), so rung 17 as recorded here (320 "
            "TFLOP/s) is not the 371 of the table above: compare within this table only.") in src
    assert ("Timed with the old memset flush (Appendix E), like all of experiment `tail_split`: compare within each "
            "table only.") in src


def test_how_a_thread_waits_states_try_waits_semantics():
    """try_wait suspends until the phase completes or a time limit passes, with or without a hint; the hint replaces
    the system's limit (PTX ISA, mbarrier.try_wait's suspendTimeHint, in nanoseconds): 10 ms in the code the slide
    prints. kernels/hopper_primitives.cuh and the WAIT_HINT knob's text say the same."""
    prim = (ROOT / "kernels" / "hopper_primitives.cuh").read_text()
    shown = prim[prim.index("    if constexpr (HOW == 1) {"):prim.index("    } else if constexpr (HOW == 2) {")]
    assert '"r"(10000000u)' in shown and 10000000 * 1e-9 == 0.01
    assert "suspended until the phase completes or a\n// time limit the hardware chooses passes" in prim
    src = _lesson_prose()
    assert ("Every `mbar_wait` loops on `mbarrier.try_wait`, which suspends the waiting thread until the phase completes "
            "or a time limit passes, then answers; on \"not yet\" the loop asks again. A time hint does not change "
            "that: it only replaces the limit the hardware would choose (here with 10 ms, `10000000u` nanoseconds in "
            "the code below).") in src
    assert "it sleeps until the phase completes" not in src
    teach = helpers.tryout.KNOBS[17]["WAIT_HINT"].teaches
    assert "the same, with that limit instead of the hardware's" in teach and "sleeps until the phase" not in teach


def test_gain_tables_at_128_rows_show_cublass_clock_and_rung_18_its_three_decimals():
    """At 128 rows the cuBLAS timing beside each skinny rung ran under the power cap at 1500-1635 MHz, the rungs at
    1965: the gain tables there show cuBLAS's TFLOP/s and both clocks (gain_table(clocks=True)), and the prose on rung
    19 quotes them (414 beside rung 19, 448 beside rung 17, both at 1635). Rungs 18 and 20 show three decimals: the
    verdict compares unrounded, rung 18's spread at 4096^3 from 0.981 (> 0.98: better), rung 20's from 0.978."""
    e, skinny = _rec()["hopper"], (128, 8192, 8192)
    side = {k: H.cublas_beside(e, k, skinny) for k in range(17, 25)}
    mhz = {k: tuple(int(x) for x in v["mhz"].split(" / ")) for k, v in side.items()}
    assert all(m[0] == 1965 and 1500 <= m[1] <= 1635 for m in mhz.values()), mhz
    assert (f"{side[19]['cublas_tflops']:.0f}", f"{side[17]['cublas_tflops']:.0f}") == ("414", "448")
    assert mhz[17][1] == mhz[19][1] == 1635
    assert f"{H.gain_at(e, 19, skinny, 1.10, base=17)['frac_cublas']:.2f}" == "0.96"
    assert round(H.gain_at(e, 19, skinny, 1.10, base=17)["tflops"] / side[17]["cublas_tflops"], 2) < 0.90
    t = H.gain_table(e, 19, skinny, 1.10, base=17, clocks=True).data
    assert "| cuBLAS, TFLOP/s | MHz, rung / cuBLAS |" in t and "| 0.96 | 414 | 1965 / 1635 |" in t
    assert "MHz" not in H.gain_table(e, 19, (4096,) * 3, base=17).data             # the default: as before
    src = _lesson_prose()
    assert H.gain_at(e, 19, skinny, 1.10, base=17)["measured"] <= 1.10           # "no larger than predicted"
    assert all("sw power cap" in e_["cublas_fp16c_throttle"] for e_ in H.timed_rows(e, skinny) if e_["rung"] in (17, 19))
    assert ("Its 0.96x cuBLAS at 128 rows is far above the 0.81x the prediction implied, though its gain over rung 17 "
            "is no larger than predicted: the difference lies in cuBLAS's timings. Beside rung 19 cuBLAS gave 414 "
            "TFLOP/s, against 448 beside rung 17, both under the power cap at 1635 MHz while the rungs ran at "
            "1965.") in src
    assert "(half the barrier arrivals and issue work per stage; about 0.81x cuBLAS)" in src     # the prediction stays
    g18, g20 = (H.gain_at(e, k, (4096,) * 3, 0.98) for k in (18, 20))
    assert (g18["low"], g18["verdict"]) == (0.981, "missed: better than predicted")
    assert (g20["low"], g20["verdict"]) == (0.978, "as predicted")
    assert f"{g18['low']:.2f}" == f"{g20['low']:.2f}" == "0.98"                   # why two decimals hid it
    t18 = H.gain_table(e, 18, (4096,) * 3, 0.98, digits=3).data
    assert "| 0.98 | 0.989 | 0.981 | 1.012 | missed: better than predicted |" in t18
    assert ("The gains have three decimals here and for rung 20: a verdict compares the prediction with the p10-p90 "
            "spread unrounded. At $4096^3$ rung 18's spread starts at 0.981, just above the predicted 0.98: \"better "
            "than predicted\".") in src
    raw = (ROOT / "notebooks" / "06_hopper_full_speed.py").read_text()
    for call in ("H.gain_table(hop, 18, shape, predicted=0.98, digits=3, clocks=shape[0] == 128)",
                 "H.gain_table(hop, 20, shape, predicted=0.98, digits=3, clocks=shape[0] == 128)",
                 "H.gain_table(hop, 17, (128, 8192, 8192), predicted=1.25, clocks=True)",
                 "H.gain_table(hop, 19, (128, 8192, 8192), predicted=1.10, base=17, clocks=True)",
                 "H.gain_table(hop, k, (128, 8192, 8192), predicted=at_128, clocks=True)",
                 "H.gain_table(hop, k, (128, 8192, 8192), clocks=True)"):
        assert call in raw, call


def test_hilbert_rows_read_the_probe_as_order_rows_read_theirs(tmp_path):
    """hilbert_rows (TILE_ORDER=1, issue 25, before its first run) reads a lab/probes/wait_hint.py --hilbert log
    as order_rows reads --order's: the GROUP_M log with its key and values renamed gives the same ratios, judged by
    the course's rule against HILBERT_PREDICTED; the probe's set builds rungs 29 and 30 at both sizes with
    -DTILE_ORDER=1; a missing log names the command that makes it."""
    import json

    from lab.probes import wait_hint

    logs = Path(helpers.results.RESULTS_DIR) / "logs"
    rows = json.loads((logs / "order-nvidia-h200.json").read_text())
    for r in rows:
        if "group_m" in r:
            r["tile_order"] = {8: 0, 16: 1, None: None}[r.pop("group_m")]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "hilbert-order-nvidia-h200.json").write_text(json.dumps(rows))
    got, old = H.hilbert_rows(directory=tmp_path), H.order_rows()
    assert len(got) == len(old) == 4
    for a, b in zip(got, old):
        assert (a["shape"], a["rung"], a["x"], a["vs_base"], a["vs_new"], a["checked"]) == \
            (b["shape"], b["rung"], b["x16"], b["vs8"], b["vs16"], b["checked"])
        assert a["predicted"] == H.HILBERT_PREDICTED[int(a["shape"][:4])]
        assert a["verdict"] == helpers.timing.verdict(a["predicted"], a["low"], a["high"])
    key, values, plan = wait_hint.SETS["hilbert"]
    assert key == "tile_order" and values == [(0, (), None), (1, ("-DTILE_ORDER=1",), None)]
    assert plan == [((4096,) * 3, (29, 30)), ((8192,) * 3, (29, 30))] and wait_hint.SET_ROUNDS["hilbert"] == 7
    assert "Predicted before any GPU ran it: x1.00 at 4096^3 and x1.005 at\n// 8192^3" in \
        (ROOT / "kernels" / "hopper_sm90a.cu").read_text()
    with pytest.raises(helpers.errors.ResultsError, match="--hilbert"):
        H.hilbert_rows(directory=tmp_path / "none")


def test_the_squarer_order_table_judges_its_predictions():
    """Appendix G's GROUP_M=16 table carries the course's verdict on the rounds' spread: missed (slower) for rung 15 at
    4096^3, as its prose says ('slower for rung 15 at $4096^3$'), and unresolved for the three others ('where the
    clock and the ratios to cuBLAS moved by as much between rounds')."""
    got = [(r["shape"], r["rung"], r["verdict"]) for r in H.order_rows()]
    assert got == [("4096^3", 15, "missed: worse than predicted"),
                   ("4096^3", 26, "unresolved: the spread holds no gain too"),
                   ("8192^3", 25, "unresolved: the spread holds no gain too"),
                   ("8192^3", 26, "unresolved: the spread holds no gain too")]
    lesson = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    assert "slower for rung 15 at $4096^3$" in lesson and '"verdict"' in lesson


def test_appendix_d_tables_judge_their_predictions():
    """The tried-tile tables of Appendix D carry the rule's verdict on the rounds' spread, as their prose reads it: the
    256-row tile's 3-stage and 152-wide builds missed (slower) at 4096^3; rung 29's C^T tile as predicted at 5000^3
    ('gains what was predicted'); rung 31 missed at 5000^3 ('slower than rung 29 in every round'); CT_M=128 as
    predicted at both sizes ('gains nothing, as predicted'); 128 CTAs unresolved at 4096^3 ('not told apart')."""
    tall = {(r["n"], r["build"]): r["verdict"] for r in H.tall_tile_rows()}
    assert tall[4096, "256 x 128, 3 stages"] == tall[4096, "256 x 152"] == "missed: worse than predicted"
    assert {r["n"]: r["verdict"] for r in H.ct_tile_rows()}[5000] == "as predicted"
    assert {r["n"]: r["verdict"] for r in H.ct_tile_rows(("ct-pair-n",), new=31, base=29)}[5000] == \
        "missed: worse than predicted"
    assert {r["verdict"] for r in H.ct_tile_rows(("ct-m128",))} == {"as predicted"}
    assert {r["verdict"] for r in H.grid128_rows() if r["n"] == 4096} == {"unresolved: the spread holds no gain too"}
    lesson = " ".join((ROOT / "notebooks" / "06_hopper_full_speed.py").read_text().replace("\n# ", " ").split())
    for s in ("**The orientation alone gains nothing**, as predicted", "**Not told apart from the spread.**",
              "slower than rung 29 in every round at $5000^3$"):
        assert s in lesson, s


def test_rung_29s_relabelled_note_keeps_its_first_text():
    """MISS_NOTES[29]['worse'] was written before the record with x1.052, a ratio of median times; session 31 put the
    median of the round ratios (x1.081) beside it and wrote "may": the first text is kept in SUPERSEDED_NOTES."""
    first, now = H.SUPERSEDED_NOTES[29]["worse"], H.MISS_NOTES[29]["worse"]
    assert "gained x1.052 in alternating rounds and the chooser's first run x1.030: the box rows cost more" in first
    assert "x1.081 as the median of the round ratios" in now and "the box rows may cost more" in now
