"""Lesson 6's research (lab/labkit/hopper.py, lab/notebooks/06_hopper_research.py, lab/probes/hopper_try.py) without
a GPU: the notebook runs, the "What else was tried" rows are what results/tried.json holds, the readers name the
command behind a missing log, and hopper_try's whole flow with its child processes faked."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import kernels as K
from helpers.timing import verdict
import labkit.hopper as LK
from labkit.logs import LogMissing
from labkit.tried import build, check_rows

ROOT = Path(__file__).resolve().parents[2]


def test_the_research_notebook_runs_top_to_bottom_on_the_cpu():
    p = subprocess.run([sys.executable, str(ROOT / "lab" / "notebooks" / "06_hopper_research.py")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, COURSE_DEVICE="cpu", MPLBACKEND="Agg"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith("record: NVIDIA H200") and "| n | predicted | measured |" in p.stdout


def test_lesson_6s_tried_rows_are_computed_and_committed():
    """tried() gives valid rows (labkit.tried.check_rows), and results/tried.json holds exactly them: run
    `python lab/tried.py` after changing a log or the record."""
    rows = check_rows("06", LK.tried())
    assert rows == build({"06": "labkit.hopper"})["lessons"]["06"]
    assert rows == json.loads((ROOT / "results" / "tried.json").read_text())["lessons"]["06"]
    assert {r["kept"] for r in rows} == {"yes", "no"} and len({r["idea"] for r in rows}) == len(rows)


def test_the_kept_ideas_read_the_records_gains():
    """The rows of ideas kept as rungs measure the record's gain (helpers.experiments.hopper.gain_at) over the rung
    the prediction names."""
    from helpers.experiments.hopper import gain_at
    from helpers.results import load_latest

    hop = load_latest().meta["experiments"]["hopper"]
    rows = {r["idea"]: r for r in LK.tried()}
    for rung, base, shape, pred, idea in LK.KEPT:
        g = gain_at(hop, rung, shape, pred, base)
        assert rows[idea]["measured"].startswith(f"x{g['measured']:.2f} (") and rows[idea]["kept"] == "yes"
        assert f"over rung {base}" in rows[idea]["predicted"]


def test_a_missing_log_names_the_command_that_writes_it(tmp_path):
    for key, option in (("cluster_m", "--cluster"), ("group_m", "--group"), ("l2_prefetch", "--prefetch")):
        with pytest.raises(LogMissing, match=f"lab/probes/wait_hint.py OUT.json {option}"):
            LK.switch_rows(key, 0, directory=tmp_path)
    with pytest.raises(LogMissing, match="lab/probes/rung17.py OUT.json RUNG --knobs"):
        LK.knob_round("rung19-20-knobs", directory=tmp_path)


def test_knob_round_reads_each_setting_against_the_rung_as_recorded(tmp_path):
    (tmp_path / "x-nvidia-h200.json").write_text(json.dumps({"7": [
        {"knobs": {}, "passed": True, "model": "identical", "tflops": 100.0, "sm_mhz": [1980]},
        {"knobs": {"A": 1}, "passed": True, "model": "differs", "tflops": 120.0, "sm_mhz": [1965, 1980]}]}))
    got = LK.knob_round("x", directory=tmp_path)
    assert [(r["knob"], r["passed"], r["vs"], r["mhz"]) for r in got] == [("as recorded", True, 1.0, "1980"),
                                                                        ("A=1", False, 1.2, "1965-1980")]


def test_hilbert_rows_read_the_probe_as_order_rows_read_theirs(tmp_path):
    """hilbert_rows reads a wait_hint.py --hilbert log as order_rows reads --order's: the GROUP_M log with its key
    and values renamed gives the same ratios, judged against HILBERT_PREDICTED."""
    rows = json.loads((ROOT / "lab" / "logs" / "order-nvidia-h200.json").read_text())
    for r in rows:
        if "group_m" in r:
            r["tile_order"] = {8: 0, 16: 1, None: None}[r.pop("group_m")]
    (tmp_path / "hilbert-order-nvidia-h200.json").write_text(json.dumps(rows))
    got, old = LK.hilbert_rows(directory=tmp_path), LK.order_rows()
    assert len(got) == len(old) == 4
    for a, b in zip(got, old):
        assert (a["shape"], a["rung"], a["x"], a["checked"]) == (b["shape"], b["rung"], b["x16"], b["checked"])
        assert a["verdict"] == verdict(LK.HILBERT_PREDICTED[int(a["shape"][:4])], a["low"], a["high"])


def test_every_rung_of_lesson_6_has_a_note_for_each_way_it_can_miss():
    assert set(range(8, 17)) <= set(LK.MISS_NOTES) <= set(K.HOPPER_RUNGS)
    assert all(set(v) == {"better", "worse"} for v in LK.MISS_NOTES.values())
    assert set(LK.SUPERSEDED_NOTES) <= set(LK.MISS_NOTES)


# --------------------------------------------------------------------------- lab/probes/hopper_try.py, faked children
def _load_try():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hopper_try", ROOT / "lab" / "probes" / "hopper_try.py")
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


def test_row_ratio_is_the_median_of_round_ratios():
    """labkit.logs.row_ratio: two rows of one alternating run compared round by round (the median of their ratios,
    which can differ from the ratio of their medians), and by TFLOP/s where a row kept no rounds."""
    from labkit.logs import row_ratio

    a = {"round_ms": [1.0, 1.0, 2.0], "tflops": 10.0}
    b = {"round_ms": [1.3, 0.9, 2.0], "tflops": 9.0}
    assert row_ratio(a, b) == pytest.approx(1.0)         # rounds 1.3, 0.9, 1.0: median 1.0 (medians' ratio: 1.3)
    assert row_ratio({"tflops": 10.0}, b) == pytest.approx(10 / 9)
    assert row_ratio(a, {"round_ms": [1.0], "tflops": 5.0}) == pytest.approx(2.0)   # rounds differ: TFLOP/s


def test_the_record_says_which_flush_timed_each_experiment():
    """labkit.logs.flush: the latest update that re-ran an experiment, else the record's own, else "write" (records
    made before the read flush name none)."""
    import helpers.results as results
    from labkit.logs import flush

    rec = results.load_latest(gpu="NVIDIA H200")
    assert flush(rec, "hopper") == "read" and flush(rec, "tail_split") == "write" and flush(rec) == "write"
    assert flush(rec, "flush_method") == "both" and flush(rec, "fp8") == "write"
    fake = results.Record(rec.path, {"flush": "read", "updates": [{"experiments": ["a"]}]}, [])
    assert flush(fake, "a") == "write" and flush(fake, "b") == "read" and flush(fake) == "read"
def test_consumer_slices_draws_each_consumers_part_of_the_tile():
    """The research notebook's picture of rungs 17 and 19 (from the registry): rung 17's 64 x 128 tile in two 64 x 64
    slices (m64n64k16 each), rung 19's in one 64 x 128 slice (m64n128k16); a 128-row tile splits by rows."""
    import matplotlib.pyplot as plt

    import labkit.hopper_plots as LP

    tiles = {f"rung {k}": (*K.HOPPER_RUNGS[k].block_tile, K.HOPPER_RUNGS[k].block[0] // 128 - 1) for k in (17, 19)}
    assert tiles == {"rung 17": (64, 128, 2), "rung 19": (64, 128, 1)}
    fig = LP.consumer_slices(tiles)
    texts = [[t.get_text() for t in ax.texts] for ax in fig.axes]
    assert texts == [["consumer 0\nwgmma\nm64n64k16", "consumer 1\nwgmma\nm64n64k16"], ["consumer 0\nwgmma\nm64n128k16"]]
    assert "8 warps free each stage" in fig.axes[0].get_title(loc="left")
    assert "4 warps free each stage" in fig.axes[1].get_title(loc="left")
    fig = LP.consumer_slices({"rung 14": (128, 256, 2)})
    assert [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in fig.axes[0].patches] == \
        [(0, 0, 256, 64), (0, 64, 256, 64)]
    assert [t.get_text() for t in fig.axes[0].texts][0].endswith("m64n256k16")
    plt.close("all")


def test_the_h100_cluster_of_4_rows_divide_by_the_best_other_candidate(tmp_path):
    """quad_h100: each added rung's median round ratio to cuBLAS over the best other candidate's, per cell, and the
    log's prediction; None where the log is not kept."""
    assert LK.quad_h100(directory=tmp_path) is None
    cell = {"shape": [7000, 7000, 7000], "c_dtype": "float16", "timed": [
        {"what": "cuBLAS", "round_ms": [1.0, 1.0, 1.0]},
        {"what": "rung 16", "round_ms": [1.25, 1.25, 1.25]},        # ratio 0.8
        {"what": "rung 29", "round_ms": [2.0, 2.0, 2.0]},           # ratio 0.5
        {"what": "rung 25", "round_ms": [1.0 / 0.84] * 3}]}         # ratio 0.84
    pred = {"gain over the best other candidate": {"7000x7000x7000": 1.05}}
    (tmp_path / "targets-quad-nvidia-h100-80gb-hbm3.json").write_text(json.dumps({"cells": [cell], "predicted": pred}))
    out = LK.quad_h100(directory=tmp_path)
    (row,) = out["rows"]
    assert row["rung"] == "rung 25" and row["shape"] == "7000x7000x7000" and row["gain"] == pytest.approx(1.05)
    assert out["predicted"] == {"7000x7000x7000": 1.05}


def test_clusters_of_4_forced_read_against_the_build_where_it_is_pairs(tmp_path):
    """quad_forced: per GPU and shape, forced over built as the median of round-by-round ratios (one per run), only
    where the launcher built pairs; a missing log gives None."""
    def rows(shape, forced_ms, built_ms, cluster):
        base = {"shape": list(shape), "passed": True, "model": "identical"}
        return [dict(base, what="rung 25 GROUP_M=8 CLUSTER_M=4", round_ms=forced_ms, tflops=1.0),
                dict(base, what=f"rung 25 as built: hopper_quad_cluster, clusters of {cluster}", round_ms=built_ms,
                     tflops=1.0),
                dict(base, what="cuBLAS, FP16 C", round_ms=[1.0] * len(forced_ms), tflops=1.0)]

    s7, s3 = (7000, 7000, 7000), (3000, 3000, 3000)
    logs = {"group-m-ct-128b-nvidia-h100": rows(s7, [1.0, 1.0, 1.0], [1.1, 1.2, 0.9], 2) + rows(s3, [1.0], [2.0], 4),
            "group-m-shapes-nvidia-h100": rows(s7, [2.0, 2.0, 2.0], [2.0, 2.0, 2.0], 2),   # 256-byte maps: not read
            "group-m-ct-nvidia-h200": rows(s7, [1.0, 1.0, 1.0], [0.9, 0.9, 0.9], 2)}
    for name, r in logs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"rows": r}))
    got = LK.quad_forced(directory=tmp_path)
    assert got["H100"] == {s7: [pytest.approx(1.1)]}        # 3000^3 built clusters of 4: left out
    assert got["H200"] == {s7: [pytest.approx(0.9)]}
    (tmp_path / "group-m-ct-nvidia-h200.json").unlink()
    assert LK.quad_forced(directory=tmp_path) is None


def test_l2_promotion_gains_read_128_over_256_per_shape(tmp_path):
    """l2_promotion_gains: per shape, rung 25 with 128-byte promotion over 256, the median of round-by-round ratios,
    from both logs; the tried row lists the predicted shapes one by one and the others as one range; a missing log
    gives None."""
    def rows(shape, ms128, ms256):
        base = {"shape": list(shape), "passed": True, "model": "identical", "tflops": 1.0}
        return [dict(base, what="rung 25 (hopper_quad_cluster, clusters of 2), L2_128B", promotion="L2_128B",
                     round_ms=ms128),
                dict(base, what="rung 25 (hopper_quad_cluster, clusters of 2), L2_256B", promotion="L2_256B",
                     round_ms=ms256),
                dict(base, what="cuBLAS, FP16 C", round_ms=[1.0] * len(ms128))]

    s7, s4, s8 = (7000, 7000, 7000), (4096, 4096, 4096), (8192, 8192, 8192)
    (tmp_path / "l2-promotion-nvidia-h100.json").write_text(json.dumps(
        {"rows": rows(s7, [1.0, 1.0, 1.0], [1.2, 1.3, 1.1]) + rows(s4, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])}))
    (tmp_path / "l2-promotion-b-nvidia-h100.json").write_text(json.dumps({"rows": rows(s8, [2.0], [1.98])}))
    got = LK.l2_promotion_gains(directory=tmp_path)
    assert list(got) == [s7, s4, s8]
    assert got[s7] == pytest.approx(1.2) and got[s4] == pytest.approx(1.0) and got[s8] == pytest.approx(0.99)
    (tmp_path / "l2-promotion-b-nvidia-h100.json").unlink()
    assert LK.l2_promotion_gains(directory=tmp_path) is None


def test_the_limits_file_is_what_the_logs_give():
    """results/limits.json holds what labkit.limits computes from the Nsight Compute logs (run `python lab/limits.py`
    after changing one), and the course reads it as the lab wrote it."""
    from labkit import limits

    import helpers.results

    built = limits.build()
    assert json.loads((ROOT / "results" / "limits.json").read_text()) == built, "run python lab/limits.py"
    assert helpers.results.limits("06") == built["lessons"]["06"]
    rows = built["lessons"]["06"]["row_alignment"]["rows"]
    assert [r["row_bytes"] for r in rows] == [14000, 14080, 14000, 14080]
    assert rows[0]["kernel"] == rows[1]["kernel"] == "hopper_quad_cluster" and rows[2]["kernel"].startswith("nvjet")
