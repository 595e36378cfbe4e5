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


def test_predicted_chain_and_gains():
    p = L.predicted_tflops(10.0)
    assert p[1] == 10.0 and p[max(RUNGS)] == pytest.approx(10.0 * np.prod([r.predicted_gain for r in RUNGS.values()]))
    rows = _rows()
    g = L.gains(rows, 64)
    assert [x["rung"] for x in g] == list(RUNGS)
    assert all(x["verdict"].startswith("as predicted") for x in g[1:])
    assert len(L.roofline_points(rows, 64)) == len(RUNGS)
    assert list(L.timed_by_size(rows, sizes=(64,))) == [64] and L.timed_by_size(rows, (64,))[64][0]["rung"] == 0


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


def test_the_lesson_uses_no_moved_names():
    """Lesson 05 reads the registry, the models and the exercises from their own modules."""
    src = (Path(__file__).resolve().parent.parent / "notebooks" / "05_closing_the_gap.py").read_text()
    for name in ("RUNGS", "traffic_bytes", "intensity", "bank_ways", "check_tile_traffic", "plot_ladder",
                 "demo_lines", "skip_message(r", "PIPE_SMEM", "DEFAULT_SMEM_LIMIT", "sass_opcode_counts"):
        assert f"L.{name}" not in src, name
