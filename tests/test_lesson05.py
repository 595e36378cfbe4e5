"""Lesson 5 on the CPU: reading the ladder experiment's rows (helpers/experiments/ladder.py) and the
exercise checkers (helpers/exercises/ladder.py). The rungs themselves are registry entries
(tests/test_kernels.py), launched like every kernel (tests/test_launch.py); their models are in
tests/test_analysis.py."""
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import analysis, exercises
from helpers.exercises import ladder as ex
from helpers.experiments import ladder as L
from helpers.kernels import RUNGS


def _rows(n=64):
    """A ladder record in which every rung meets its prediction exactly; cuBLAS is rung 0."""
    rows = [{"rung": 0, "m": n, "n": n, "k": n, "tflops": 100.0, "idea": "cuBLAS", "predicted": None,
             "frac_cublas": 1.0, "frac_peak": 0.1}]
    t = 10.0
    for r in RUNGS.values():
        t = t * (r.predicted_gain if r.rung > 1 else 1)
        rows.append({"rung": r.rung, "m": n, "n": n, "k": n, "tflops": t, "idea": r.idea,
                     "predicted": r.predicted_gain, "frac_cublas": t / 100, "frac_peak": t / 1000})
    return rows


def test_gains_of_a_ladder_that_meets_its_predictions():
    rows = _rows()
    g = L.gains(rows, 64)
    assert [x["rung"] for x in g] == list(RUNGS)
    assert all(x["verdict"].startswith("as predicted") for x in g[1:])
    assert len(L.roofline_points(rows, 64)) == len(RUNGS)
    assert list(L.timed_by_size(rows, sizes=(64,))) == [64] and L.timed_by_size(rows, (64,))[64][0]["rung"] == 0


def test_gains_are_judged_against_the_measured_spread():
    """The course's rule (helpers.timing.verdict) on lesson 5's ladder: with p10/p90 timings a prediction
    outside the spread misses, in its direction (rung 3 here: 1.2x measured, 1.5x predicted)."""
    rows = _rows()
    for r in rows[1:]:
        ms = 1.0 / r["tflops"]
        if r["rung"] == 3:                                   # measured 1.2x where 1.5x was predicted
            ms = 1.0 / (rows[2]["tflops"] * 1.2)
            r["tflops"] = 1.0 / ms
        r.update(median_ms=ms, p10_ms=ms * 0.99, p90_ms=ms * 1.01)
    g = {x["rung"]: x for x in L.gains(rows, 64)}
    assert g[1]["verdict"] == "-" and g[1]["low"] is None
    assert g[3]["verdict"] == "missed: worse than predicted" and g[3]["direction"] == "worse"
    assert g[3]["low"] < 1.2 < g[3]["high"] < 1.5
    assert g[2]["verdict"] == "as predicted" and g[2]["direction"] is None
    assert g[4]["verdict"] == "missed: better than predicted"      # 1.3x predicted over the slower rung 3


def test_misses_are_explained_both_ways():
    assert set(L.MISS_NOTES) == set(RUNGS) - {1}
    assert all(set(v) == {"better", "worse"} for v in L.MISS_NOTES.values())


def test_failed_measurements_are_reported():
    rows = [{"rung": 7, "kernel": "ladder_wgmma_tma", "error": "Traceback ...\nRuntimeError: illegal instruction\n"}] * 2
    assert L.errors(rows) == ["rung 7 (ladder_wgmma_tma) could not be measured: RuntimeError: illegal instruction"]


def test_exercise_checkers(capsys):
    ex.check_tile_traffic(None)
    assert exercises.last_result is None
    n = 4096
    ex.check_tile_traffic(n * n * 2 * (n / 256) + n * n * 2 * (n / 128) + n * n * 4)
    assert exercises.last_result is True
    assert n * n * 2 * (n / 128) * 2 + n * n * 4 == analysis.traffic_bytes(RUNGS[2], n, n, n)
    ex.check_pipeline_smem(3 * (128 * 40 + 32 * 136) * 2)
    assert exercises.last_result is True
    ex.check_pipeline_smem(1)
    assert exercises.last_result is False
    ex.check_blocks_per_sm(2)
    assert exercises.last_result is True
    out = capsys.readouterr().out
    assert "Not answered yet" in out and "Correct." in out and "Not quite" in out


# --------------------------------------------------------------------------- exercise 4: edit rung 5
def _knob_record(monkeypatch, tmp_path, stages2_ms=2.0):
    """The committed record with a synthetic `knobs` experiment (not measurements): rung 5 as recorded
    at 1 ms, STAGES=2 at `stages2_ms` (speed 1 / stages2_ms), STAGES=3 at 1.25 ms, a 2% p10-p90 spread."""
    import json

    from helpers import results

    def row(knob, value, ms):
        return {"rung": 5, "kernel": "ladder_cp_async", "knob": knob, "value": value, "default": knob is None,
                "settings": {"PAD": 8, "BK": 32, "STAGES": 4 if knob is None else value, "WAIT_GROUP": 2},
                "passed": True, "m": 4096, "ms": ms, "p10_ms": ms * 0.99, "p90_ms": ms * 1.01, "tflops": 137.4 / ms,
                "vs_default": 1 / ms, "sm_mhz": 1980, "throttle": ["none"]}

    meta = json.loads((Path(__file__).resolve().parent.parent / "results" / "nvidia-h200.json").read_text())
    meta["experiments"]["knobs"] = [row(None, None, 1.0), row("STAGES", 2, stages2_ms), row("STAGES", 3, 1.25)]
    (tmp_path / "nvidia-h200.json").write_text(json.dumps(meta))
    monkeypatch.setattr(results, "load_latest", lambda *a, **k: results.load_record(tmp_path / "nvidia-h200.json"))


def _edit(stages=2):
    return helpers.tryout.source_of(5, replace={"#define STAGES 4": f"#define STAGES {stages}"})

def _verdicts(out: str) -> list[str]:
    """The printed verdicts, each as one line of single spaces (helpers.wrap goes on in indented lines)."""
    return [" ".join(v.split()) for v in out.strip().split("\n[") if v.strip()]



def test_stages_checker_judges_the_prediction_against_the_record(capsys, monkeypatch, tmp_path):
    _knob_record(monkeypatch, tmp_path)                     # STAGES=2 recorded at 0.5x (0.49-0.51)
    ex.check_stages_prediction(...)
    assert exercises.last_result is None and "Not answered yet" in capsys.readouterr().out
    for right in (0.5, 0.45, 0.55):                         # within the spread, widened by STAGES_TOL
        ex.check_stages_prediction(right)
        assert exercises.last_result is True, right
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[rung 5 with STAGES=2, recorded 0.50x] Correct."
    for wrong in (0.97, 0.3, 2):
        ex.check_stages_prediction(wrong)
        assert exercises.last_result is False, wrong
    out = _verdicts(capsys.readouterr().out)
    assert len(out) == 3 and all("Not quite" in ln and "0.50x (p10-p90 0.49-0.51)" in ln for ln in out)
    ex.check_stages_prediction(0.8, stages=3)               # another recorded value: 1 / 1.25
    assert exercises.last_result is True
    ex.check_stages_prediction(1.0, stages=4)               # the rung as recorded is 1.0x of itself
    assert exercises.last_result is True


def test_stages_checker_refuses_wrong_types_and_values(capsys, monkeypatch, tmp_path):
    _knob_record(monkeypatch, tmp_path)
    ex.check_stages_prediction("fast")
    assert exercises.last_result is False
    assert "expects your predicted speed as a fraction" in _verdicts(capsys.readouterr().out)[0]
    ex.check_stages_prediction([0.5])
    assert exercises.last_result is False
    ex.check_stages_prediction(0.5, source=42)              # a source that is not text
    out = " ".join(_verdicts(capsys.readouterr().out))
    assert exercises.last_result is False and "Not accepted" in out and "not a string of CUDA code" in out
    ex.check_stages_prediction(0.5, stages=9)               # a value the knob does not allow
    said = " ".join(_verdicts(capsys.readouterr().out))
    assert exercises.last_result is False and "STAGES is one of 2, 3, 4, 5, 6" in said
    ex.check_stages_prediction(0.5, source=helpers.tryout.source_of(5))   # the file unchanged
    assert exercises.last_result is False and "unchanged" in capsys.readouterr().out


def test_stages_checker_without_a_gpu_says_in_one_line_that_the_edit_cannot_run(capsys, monkeypatch, tmp_path):
    _knob_record(monkeypatch, tmp_path)
    ran = []
    monkeypatch.setattr(helpers.tryout, "try_kernel", lambda *a, **k: ran.append(a))
    ex.check_stages_prediction(0.5, source=_edit(2))
    out = capsys.readouterr().out.splitlines()
    assert not ran and len(out) == 2, out                    # nothing run; one line, then the verdict
    assert out[0].startswith("[rung 5 with STAGES=2] No GPU here, so your edited kernel cannot be compiled or run")
    assert "recorded STAGES=2 run (NVIDIA H200, recorded " in out[0]
    assert out[1] == "[rung 5 with STAGES=2, recorded 0.50x] Correct."
    ex.check_stages_prediction(0.5, source=_edit(3))          # the edit's own STAGES is what is compared
    out = capsys.readouterr().out.splitlines()
    assert "recorded STAGES=3 run" in out[0] and "Not quite" in out[1] and exercises.last_result is False
    ex.check_stages_prediction(0.5)                           # the knob: no line about an edit
    assert capsys.readouterr().out.splitlines() == ["[rung 5 with STAGES=2, recorded 0.50x] Correct."]


def _fake_h200(monkeypatch):
    info = helpers.device.GPUInfo(name="NVIDIA H200", cc=(9, 0), sms=132, l2_bytes=50 << 20, mem_bytes=141 << 30,
                                  mem_bw_gbs=4800.0, driver="13.0", runtime="13.0", nvrtc="13.0", cupy="(faked)",
                                  peaks=helpers.device.peaks_for("NVIDIA H200"))
    monkeypatch.setattr(helpers.device, "backend", lambda: helpers.device.Backend("gpu", "mocked", info))


def _tried(passed=True, variant_ms=1.25):
    t = {"variant": {"ms": variant_ms, "p10_ms": variant_ms * 0.99, "p90_ms": variant_ms * 1.01, "tflops": 110.0},
         "original": {"ms": 1.0, "p10_ms": 0.99, "p90_ms": 1.01, "tflops": 137.4}}
    o = {"like": "ladder_cp_async", "rung": 5, "variant": "ladder_cp_async (your source)", "knobs": {}, "defines": {},
         "stage": "done" if passed else "check", "passed": passed, "error": "", "size": [1000, 1064, 1000],
         "timing_size": 4096, "resources": {}, "timing": t if passed else {},
         "verdict": "PASS ..." if passed else "FAIL ladder_cp_async (your source) M=1000 N=1064 K=1000: 3 elements "
                                               "beyond the tolerance; first wrong block tile: blockIdx.y = 0"}
    return helpers.tryout.TryResult.from_outcome(o, "measured live on NVIDIA H200")


def test_stages_checker_on_a_gpu_runs_the_edit_and_rejects_a_wrong_one(capsys, monkeypatch, tmp_path):
    _knob_record(monkeypatch, tmp_path)
    _fake_h200(monkeypatch)
    calls = []

    def fake_try(like, source=None, **knobs):
        calls.append((like, source, knobs))
        return _tried(passed="(barrier removed)" not in (source or ""))

    monkeypatch.setattr(helpers.tryout, "try_kernel", fake_try)
    ex.check_stages_prediction(0.8, source=_edit(2))             # live: 1.0 / 1.25 ms, not the record's 0.5x
    out = capsys.readouterr().out.splitlines()
    assert calls[-1][:2] == ("ladder_cp_async", _edit(2)) and exercises.last_result is True
    assert out == ["[rung 5 with STAGES=2, measured 0.80x] Correct."]
    ex.check_stages_prediction(0.5, source=_edit(2))
    said = " ".join(_verdicts(capsys.readouterr().out))
    assert exercises.last_result is False and "the live run went at 0.80x" in said
    barrier = "__syncthreads();               // ... everyone's have"
    assert barrier in _edit(2)
    wrong = _edit(2).replace(barrier, "// (barrier removed) everyone's have", 1)   # the (mocked) check fails it
    ex.check_stages_prediction(0.8, source=wrong)
    out = " ".join(_verdicts(capsys.readouterr().out))
    assert exercises.last_result is False and "Not quite" in out and "does not pass the check" in out
    assert "first wrong block tile" in out
    ex.check_stages_prediction(0.8)                               # the knob, live
    assert calls[-1] == ("ladder_cp_async", None, {"STAGES": 2}) and exercises.last_result is True


def test_the_pipeline_picture():
    fig = helpers.plots.cp_async_pipeline([(4, 2), (4, 0), (2, 0)], ktiles=6)
    assert len(fig.axes) == 3 and [len(ax.get_yticks()) for ax in fig.axes] == [4, 4, 2]
    assert "3 later tiles" in fig.axes[0].get_title("left") and "1 later tile may" in fig.axes[1].get_title("left")


# --------------------------------------------------------------------------- the yardstick and exercise 4
def test_the_yardstick_writes_fp16_c_and_the_rungs_fp32_c():
    """'The yardstick': cupy.matmul on float16 (the ladder's rung 0) writes FP16 C, every rung FP32 C: half
    the output bytes (lesson 06 compares like for like)."""
    from helpers.cublas import BASELINES, same_c

    assert np.dtype(BASELINES["cublas_fp16"].out_dtype).itemsize == 2
    assert all(np.dtype(r.out_dtype).itemsize == 4 for r in RUNGS.values())
    assert same_c("float16") is BASELINES["cublas_fp16"] and same_c("float32").name == "cublas_fp16_f32c"


def test_the_verdict_divides_by_cublas_timed_beside_the_rungs():
    """cublas_beside_rungs is the ladder run's own cuBLAS row (rung 0), the one frac_cublas divides by; None
    for a record without a ladder run."""
    import types

    rec = helpers.results.load_latest()
    beside = L.timed_by_size(rec.meta["experiments"]["ladder"])
    for n in L.TIMED_SIZES:
        cub, *rs = beside[n]
        assert cub is L.cublas_beside_rungs(rec, n)
        assert cub["rung"] == 0 and cub["kernel"] == "cublas_fp16"
        best = max(rs, key=lambda r: r["tflops"])
        assert best["frac_cublas"] == pytest.approx(best["tflops"] / cub["tflops"], rel=0.01)
    for meta in ({}, {"experiments": {}}, {"experiments": {"ladder": None}}):   # a record without a ladder run
        assert L.cublas_beside_rungs(types.SimpleNamespace(meta=meta), 4096) is None


def test_exercise_4_edits_the_replacement_string_not_the_file(capsys):
    """Exercise 4's cell edits source_of(5, replace={old: new})'s second string; `old` must be in
    kernels/ladder.cu exactly once, and the checker says to edit the second string when it is unchanged."""
    import json
    import re

    nb = json.loads((Path(__file__).resolve().parent.parent / "notebooks" / "05_closing_the_gap.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "prediction = ..." in "".join(c["source"]))
    old, new = re.search(r'replace=\{"([^"]+)": "([^"]+)"\}', cell).groups()
    assert old == new == "#define STAGES 4"
    text = (Path(__file__).resolve().parent.parent / "kernels" / RUNGS[5].file).read_text()
    assert text.count(old) == 1
    ex.check_stages_prediction(0.5, source=helpers.tryout.source_of(5))
    assert "second string" in capsys.readouterr().out


# --------------------------------------------------------------------------- the appendices' helpers
def test_a_rung_refuses_a_size_that_is_not_a_multiple_of_its_tile():
    """Appendix B: without the padding a rung refuses a size that is not a multiple of its tile, input of the
    rung's own dtype."""
    assert np.dtype(RUNGS[2].in_dtype) == np.float16
    with pytest.raises(helpers.InputError, match="not a multiple of the kernel's tile"):
        helpers.gemm("ladder_smem_tiled", np.ones((64, 64), np.float16), np.ones((64, 64), np.float16))


def test_sass_opcode_counts_leave_out_never_executed_lines():
    """Appendix E: rungs 5-6's listings hold @!PT LDS RZ, [RZ] lines (never executed), which the opcode counts
    leave out: rungs 2-6 read their fragments with LDSM only; rung 7 has no LDSM."""
    build = helpers.results.RESULTS_DIR / "build-nvidia-h200"
    ins = list(analysis.sass_instructions(build / "ladder.sm_90.sass"))
    assert {x[2] for x in ins if x[2].startswith("@!PT")} == {"@!PT LDS RZ, [RZ]"}
    counts = analysis.sass_opcode_counts(build / "ladder.sm_90.sass")
    assert all(c["LDS"] == 0 and c["LDSM"] > 0 for c in counts.values())
    assert analysis.sass_opcode_counts(build / "ladder_sm90a.sm_90a.sass")["ladder_wgmma_tma"]["LDSM"] == 0


# --------------------------------------------------------------------------- the rung slides, the reveals, the chart
def _timed_rows():
    """_rows with a p10-p90 spread of 1% and a passed check bit-identical to the model at every rung."""
    rows = _rows()
    for r in rows:
        ms = 1.0 / r["tflops"]
        r.update(median_ms=ms, p10_ms=ms * 0.99, p90_ms=ms * 1.01, reps=10, sm_mhz=1980)
        if r["rung"]:
            r.update(passed=True, model="identical")
    return rows


def test_rung_line_says_the_check_the_gain_and_the_verdict():
    rows = _timed_rows()
    line = L.rung_line(rows, 3, 64)
    assert line.startswith("rung 3: PASS at 1 sizes, bit-identical to the CPU model; at 64^3: ")
    assert "x1.50 over rung 2" in line and "predicted x1.5: as predicted" in line and "1980 MHz" in line
    assert "over rung" not in L.rung_line(rows, 1, 64)                     # the first rung has no rung before
    rows[3]["passed"] = False
    assert "FAIL at 64x64x64" in L.rung_line(rows, 3, 64)
    assert L.rung_line(rows, 3, 128).endswith("not timed at 128^3 in this run")
    assert L.rung_line([r for r in rows if r["rung"] != 5], 5, 64) == "rung 5: not in this run"


def test_prediction_points_are_the_chart_of_rungs_2_to_7():
    pts = L.prediction_points(_timed_rows(), sizes=(64,))
    assert [p["rung"] for p in pts] == [2, 3, 4, 5, 6, 7]
    assert all(p["shape"] == "64^3" and p["verdict"] == "as predicted" and p["low"] < p["measured"] < p["high"]
               for p in pts)
    fig = helpers.plots.predicted_vs_measured(pts, source="test", ylabel="gain over the rung before")
    assert fig.axes[0].get_ylabel() == "gain over the rung before"


def test_launch_seconds_adds_each_timings_launches():
    rows = [{"median_ms": 2.0, "reps": 97}, {"median_ms": 1.0, "reps": 7, "median_ms_kernel_only": 0.5},
            {"median_ms": None}, {"rung": 0}]
    assert L.launch_seconds(rows) == pytest.approx((2.0 * 100 + 1.0 * 10 + 0.5 * 10) / 1e3)


def test_counter_line_compares_a_rung_with_the_one_before():
    class Prof:
        def row(self, target):
            k = int(target.removeprefix("rung"))
            return {"ldsm": 100.0 * k, "tensor_pct": 10.0 * k, "top_stalls": [[f"stall{k}", 1.0]]}

    assert L.counter_line(Prof(), 6) == ("rung 5 -> rung 6, LDSM (ldmatrix) executed: 500 -> 600; Tensor pipe busy: "
                                         "50% -> 60%; top stall: stall5 -> stall6")
    assert "Tensor pipe busy (%): 60 -> 70; top stall" in L.counter_line(Prof(), 7)     # not said twice


def test_measure_or_load_on_the_cpu_shows_the_record(capsys):
    rec = helpers.results.load_latest()
    data, source = L.measure_or_load(rec)
    out = capsys.readouterr().out
    assert data == rec.meta["experiments"]["ladder"] and source in out and "estimated" not in out
    assert "checked launches passed" in out


def test_reveals_judge_the_guess_against_the_record(capsys):
    rec = helpers.results.load_latest()
    g = L.rung_gain(rec.meta["experiments"]["ladder"], 4)
    ex.reveal_gain(..., 4)
    assert "No guess yet" in capsys.readouterr().out and exercises.last_result is None
    ex.reveal_gain(g["measured"], 4)
    assert "Correct." in capsys.readouterr().out and exercises.last_result is True
    ex.reveal_gain(g["measured"] * 1.2, 4)
    out = capsys.readouterr().out
    assert "Not quite" in out and "too high" in out and f"{g['measured']:.2f}" in out
    rows, _ = ex.recorded_knob(4, "BK")
    default = next(r for r in rows if r.get("knob") is None)
    bk64 = next(r for r in rows if r.get("knob") == "BK" and r["value"] == 64)
    ex.reveal_knob(default["ms"] / bk64["ms"], 4, "BK", 64)
    assert "Correct." in capsys.readouterr().out
    ex.reveal_knob(1.0, 4, "BK", 3)                              # no such run: the checker says so
    assert "Not accepted" in capsys.readouterr().out


def test_measure_or_load_on_a_gpu_says_how_long_before_it_runs(capsys, monkeypatch):
    from helpers import experiments

    rec = helpers.results.load_latest()
    _fake_h200(monkeypatch)
    said = []

    def fake_run(name, **kw):
        said.append(capsys.readouterr().out)                   # what was printed before the run started
        return experiments.Outcome(_timed_rows(), True, "measured live on NVIDIA H200")

    monkeypatch.setattr(experiments, "run_or_load", fake_run)
    data, source = L.measure_or_load(rec)
    assert said and said[0].startswith(f"estimated: about {L.LIVE_SECONDS} s")
    assert f"launches alone take {L.launch_seconds(rec.meta['experiments']['ladder']):.0f} s" in said[0]
    assert source == "measured live on NVIDIA H200" and "7 of 7 checked launches passed" in capsys.readouterr().out
