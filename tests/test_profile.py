"""helpers.profile: the recorded Nsight Compute counters, read and converted (no GPU)."""
from __future__ import annotations

import json

import pytest

import helpers
from helpers import analysis, profile
from helpers.errors import ResultsError
from helpers.experiments.baseline import BLOCK_SHAPES, warp_footprint
from helpers.kernels import RUNGS


@pytest.fixture(scope="module")
def pr():
    return profile.load_ncu()


def test_the_recorded_file_has_every_target(pr):
    want = [f"fp32_{bx}x{by}" for bx, by in BLOCK_SHAPES] + ["fp32_tiled_16", "fp32_tiled_32"]
    want += [f"rung{k}" for k in RUNGS]
    assert set(want) <= set(pr.targets())
    assert pr.size == (4096, 4096, 4096) and pr.gpu_name == "NVIDIA H200"
    assert "Nsight Compute" in pr.label and "2026" in pr.label


def test_derived_units(pr):
    r = pr.row("rung2")
    c = pr.kernel("rung2")["counters"]
    assert r["dram_read_gb"] == pytest.approx(c["dram_read_bytes"] / 1e9)
    assert r["l2_read_gb"] == pytest.approx(c["l2_read_sectors"] * 32 / 1e9)
    assert r["sectors_per_request"] == pytest.approx(c["l1_global_load_sectors"] / c["l1_global_load_requests"])
    assert r["conflicts_per_load_wavefront"] == pytest.approx(c["smem_load_bank_conflicts"] / c["smem_load_wavefronts"])
    assert len(r["top_stalls"]) == 3 and r["stalls"].startswith(r["top_stalls"][0][0])


def test_the_counters_agree_with_the_course_models(pr):
    """What lessons 1 and 5 argue from the models, the counters show."""
    n = pr.size[0]
    # lesson 1: the L1 sectors per load request are the footprint model's (two loads per step)
    for bx, by in BLOCK_SHAPES:
        assert pr.row(f"fp32_{bx}x{by}")["sectors_per_request"] == warp_footprint(bx, by)["sectors"] / 2
    # lesson 5: rung 2's global loads are the traffic model's A and B bytes
    ab = analysis.traffic_bytes(RUNGS[2], n, n, n) - n * n * 4
    assert pr.row("rung2")["l1_load_gb"] * 1e9 == pytest.approx(ab, rel=1e-6)
    # padding removes the bank conflicts of the fragment loads (rung 2 -> 3)
    assert pr.row("rung2")["conflicts_per_load_wavefront"] > 50 * pr.row("rung3")["conflicts_per_load_wavefront"]
    # rung 6's ldmatrix issues no fewer shared-memory loads than WMMA did: the same LDSM count
    assert pr.row("rung5")["ldsm"] == pr.row("rung6")["ldsm"] > 0


def test_missing_counter_reads_none(pr):
    k = dict(pr.kernel("rung2"), counters={})
    r = profile.Profile(pr.path, dict(pr.meta, kernels=[k])).row("rung2")
    assert r["ms"] is None and r["sectors_per_request"] is None and r["conflicts_per_load_wavefront"] is None


def test_errors_say_what_to_do(tmp_path, pr):
    with pytest.raises(ResultsError, match="no recorded Nsight Compute"):
        profile.load_ncu(tmp_path)
    (tmp_path / "ncu-x.json").write_text("{not json")
    with pytest.raises(ResultsError, match="not valid JSON"):
        profile.load_ncu(tmp_path)
    (tmp_path / "ncu-x.json").write_text(json.dumps({"kind": "other"}))
    with pytest.raises(ResultsError, match="not an Nsight Compute"):
        profile.load_ncu(tmp_path)
    with pytest.raises(ResultsError, match="no target"):
        pr.row("rung99")
    assert helpers.profile is profile
