"""tools/probes/*.py without a GPU: each says in one line that it needs a Hopper GPU and exits with status 2
(no traceback), and each is where the record says its results came from."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBES = sorted(p for p in (ROOT / "tools" / "probes").glob("*.py") if p.name != "common.py")   # common: shared


def test_there_are_probes():
    assert {p.name for p in PROBES} == {"rungs_side_by_side.py", "fp8_pingpong.py", "sanitize_new_kernels.py",
                                        "reject_wrong_fp16c.py", "rung16.py",
                                        "tail_split_sweep.py", "row_alignment.py",
                                        "fp8_block_scaled.py", "cublas_kernels.py", "reject_wrong_block_scaled.py",
                                        "rung17.py", "fp8_stages.py", "flush_method.py", "wgmma_rate.py",
                                        "wait_hint.py", "ncu_source.py"}


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.stem)
def test_probe_without_a_gpu_says_so(probe):
    p = subprocess.run([sys.executable, str(probe), "/tmp/never-written.json"], capture_output=True, text=True,
                       env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=120)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "needs a Hopper GPU" in p.stderr


def test_the_record_names_the_probe_it_came_from():
    rec = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    assert "tools/probes/fp8_pingpong.py" in rec["experiments"]["fp8"]["speed_pingpong"]["note"]
    assert "tools/probes/sanitize_new_kernels.py" in (ROOT / "results" / "logs" /
                                                      "sanitize-new-kernels-nvidia-h200.log").read_text()
    pa = rec["experiments"]["pipeline_apart"]
    assert all("tools/probes/wgmma_rate.py" in pa["commands"][k] for k in ("rates", "apart", "depth", "wait", "hold"))
    assert all("8ec4c42" in pa["commands"][k] for k in ("apart", "depth", "wait", "hold"))   # where its switches are
    assert "tools/probes/wait_hint.py" in pa["commands"]["wait_hint"]


def test_ncu_source_summary_reads_a_sass_page_and_the_stored_one_says_one_warpgroup():
    """tools/probes/ncu_source.py summary: the SASS page's rows become instruction totals, the HGMMA addresses with
    their executions, and stall shares; the stored H200 summary (results/logs/ncu-source-m128-nvidia-h200.json) shows
    cuBLAS's kernel issuing the same 524288 warp-level HGMMA as rung 17 from half the warps (one consumer warpgroup
    of 4 warps per CTA: 128 CTAs x 4 warps x 128 K-tiles x 8), which rung 19 copies."""
    sys.path.insert(0, str(ROOT))
    from tools.probes.ncu_source import summary

    head = ('"Kernel Name","k",\n"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
            '"stall_wait","stall_long_sb"\n')
    text = head + ('"0x10","      HGMMA.64x64x16.F32 R24, gdesc[UR8], R24","30","100","20","10"\n'
                   '"0x20","  @!P0  NANOSLEEP.SYNCS 0x989680","70","50","0","70"\n')
    s = summary(text)
    assert s["warp_instructions"] == 150 and s["hgmma_addresses"] == 1 and s["hgmma_executions"] == [100]
    assert s["hgmma_shapes"] == ["64x64x16.F32"] and s["stall_share"] == {"long_sb": 0.8, "wait": 0.2}
    assert [a["opcode"] for a in s["top_addresses"]] == ["NANOSLEEP.SYNCS", "HGMMA.64x64x16.F32"]
    rec = json.loads((ROOT / "results" / "logs" / "ncu-source-m128-nvidia-h200.json").read_text())
    cub, r17 = rec["targets"]["cublas_fp16c"], rec["targets"]["rung17_hint"]
    assert sum(cub["hgmma_executions"]) * 8 == 128 * 4 * 128 * 8          # two loop copies: 8 HGMMA addresses each
    assert cub["hgmma_addresses"] == 16 and r17["hgmma_addresses"] == 4
    assert r17["hgmma_executions"] == [128 * 8 * 128]                       # 8 warps per CTA, 4 HGMMA per K-tile
    assert 0.3 < cub["warp_instructions"] / r17["warp_instructions"] < 0.4


def test_probes_share_the_hopper_check_and_the_rounds(monkeypatch):
    """tools/probes/common.py: every probe checks for a Hopper GPU through hopper_here (none repeats the check), and
    alternating() times each entry once per round, in order, keeping each round's median, clock and power."""
    sys.path.insert(0, str(ROOT))
    from tools.probes import common

    for p in PROBES:
        src = p.read_text()
        assert "hopper_here()" in src and "hopper_missing" not in src, p.name
    calls = []

    class T:
        def __init__(self, ms):
            self.median_ms, self.clocks = ms, {"sm_mhz": 1980, "power_w": 500.0}

    import helpers.timing

    monkeypatch.setattr(helpers.timing, "benchmark", lambda fn, flops: T(fn()))
    timed = {"a": lambda: calls.append("a") or 1.0, "b": lambda: calls.append("b") or 2.0}
    out = common.alternating(timed, flops=1.0, rounds=3)
    assert calls == ["a", "b"] * 3
    assert out["a"] == {"ms": [1.0] * 3, "sm_mhz": [1980] * 3, "power_w": [500.0] * 3} and out["b"]["ms"] == [2.0] * 3
