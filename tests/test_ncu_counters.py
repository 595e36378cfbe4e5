"""tools/ncu_counters.py without a GPU: its targets, reading ncu's CSV, finding the metrics ncu refuses,
and the counters it keeps (the profiling itself runs in `make gpu-check`)."""
from __future__ import annotations

import importlib.util

from conftest import ROOT
from helpers.experiments.baseline import BLOCK_SHAPES
from helpers.kernels import ALL_RUNGS


def _tool():
    spec = importlib.util.spec_from_file_location("ncu_counters", ROOT / "tools" / "ncu_counters.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_targets_are_lesson1_shapes_the_tiled_solution_and_every_rung():
    t = _tool().targets()
    assert [v["block"] for v in t.values() if "block" in v] == [list(s) for s in BLOCK_SHAPES]
    assert [v["tile"] for v in t.values() if "tile" in v] == [16, 32]
    assert [(v["rung"], v["kernel"]) for v in t.values() if "rung" in v and "options" not in v] == [
        (k, r.name) for k, r in ALL_RUNGS.items()]
    # builds with a knob: the rung's kernel with its -D option
    assert {tid: (v["kernel"], v["options"]) for tid, v in t.items() if "rung" in v and "options" in v} == {
        f"rung{k}_group16": (ALL_RUNGS[k].name, ["-DGROUP_M=16"]) for k in (15, 26)}
    assert {v["lesson"] for v in t.values() if "rung" in v} == {5, 6}      # lesson 5's ladder, then lesson 6's
    assert all(tid.replace("_", "").isalnum() for tid in t)          # file names for the reports
    # lesson 7's yardsticks (session 27): cuBLASLt's FP8 kernels, default and fast accumulation, and instructions counted
    assert {tid: v["cublaslt_fast"] for tid, v in t.items() if "cublaslt_fast" in v} == {
        "cublaslt_fp8_default": False, "cublaslt_fp8_fast": True}
    assert _tool().METRICS["instructions"] == "smsp__inst_executed.sum"
    assert _tool().METRICS["sm_clock_hz"] == "sm__cycles_elapsed.avg.per_second"


RAW = '''==PROF== Connected to process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","lts__t_sector_hit_rate.pct"
"","","","","","","","","","","","byte","nsecond","%"
"0","4242","python3","vm","gemm_fp32_kernel","1","7","(16, 16, 1)","(256, 256, 1)","0","9.0","1,234,567","25373570","n/a"
'''


def test_raw_csv_is_read_with_units_and_numbers():
    tool = _tool()
    rows, units = tool.parse_raw_csv(RAW)
    assert len(rows) == 1 and rows[0]["Kernel Name"] == "gemm_fp32_kernel"
    assert units == {"dram__bytes_read.sum": "byte", "gpu__time_duration.sum": "nsecond", "lts__t_sector_hit_rate.pct": "%"}
    assert tool.number(rows[0]["dram__bytes_read.sum"]) == 1234567.0
    assert tool.number(rows[0]["lts__t_sector_hit_rate.pct"]) is None
    assert tool.parse_raw_csv("==ERROR== nothing profiled\n") == ([], {})


def test_unknown_metrics_are_found_by_bisection(monkeypatch):
    tool = _tool()
    bad = {tool.stall_metric("gmma"), tool.METRICS["tensor_gmma_pipe_pct"]}
    calls = []

    def profile(ncu, py, target, kernel, metrics, n, timeout, log):
        calls.append(len(metrics))
        return {"error": "Failed to find metric"} if bad & set(metrics) else {"values": {}}

    monkeypatch.setattr(tool, "profile", profile)
    known, unknown = tool.usable_metrics("ncu", "py", "fp32_16x16", "gemm_fp32_kernel", tool.ALL_METRICS, 60, print)
    assert sorted(unknown) == sorted(bad) and sorted(known + unknown) == sorted(tool.ALL_METRICS)
    assert len(calls) < len(tool.ALL_METRICS)


def test_counters_and_top_stalls():
    tool = _tool()
    values = {tool.METRICS["smem_load_wavefronts"]: 400.0, tool.METRICS["smem_load_bank_conflicts"]: 100.0,
              tool.stall_metric("long_scoreboard"): 9.0, tool.stall_metric("selected"): 50.0,
              tool.stall_metric("barrier"): 3.0, tool.stall_metric("wait"): 4.0}
    c = tool.counters(values)
    assert c["counters"]["smem_load_conflicts_per_wavefront"] == 0.25 and c["counters"]["dram_read_bytes"] is None
    assert c["top_stalls"] == [["long_scoreboard", 9.0], ["wait", 4.0], ["barrier", 3.0]]   # 'selected' is no stall


def test_every_fp8_target_builds_from_its_kernels_own_file():
    """Lesson 7's targets are the course's FP8 kernels as the record builds them: one per wgmma kernel of the registry
    and the block-scaled kernel, none with a -D option its kernel's file lacks (the launcher would refuse the build),
    and the launch passes a target's options on."""
    import inspect

    import tools.ncu_counters as T
    from helpers.fp8_gemm import FP8_KERNELS, unknown_macros

    t = T.targets()
    fp8 = {tid: v for tid, v in t.items() if v.get("fp8")}
    assert set(fp8) == {k for k, s in FP8_KERNELS.items() if s.wgmma}
    assert all(v["kernel"] == tid for tid, v in fp8.items())
    assert [tid for tid, v in t.items() if v.get("fp8_scaled")] == ["fp8_block_scaled"]
    for tid, v in fp8.items():
        assert not unknown_macros(FP8_KERNELS[v["kernel"]], tuple(v.get("options", ()))), tid
    assert 'options=tuple(t.get("options", ()))' in inspect.getsource(T.launch)


def test_the_canary_is_a_target_whose_kernel_a_small_launch_runs():
    """Rungs 29-30 build rung 25's (26's) kernel at the 256^3 launches that find the known metrics (their orientation
    is chosen per problem), so the canary skips them: with rung 29 first, cuBLAS is the canary; rung 25 (clusters by
    shape, one kernel name) may be one; rungs 29-30 alone have none."""
    assert (ALL_RUNGS[29].per_shape, ALL_RUNGS[30].per_shape, ALL_RUNGS[25].per_shape) == ("orientation",
                                                                                           "orientation", "cluster")
    nc = _tool()
    t = nc.targets()
    pick = lambda *ids: nc.canary_target({i: t[i] for i in ids}, ALL_RUNGS)   # noqa: E731
    assert pick("rung29", "rung30", "cublas_fp16c") == "cublas_fp16c"
    assert pick("rung29", "rung25") == "rung25" and pick("fp32_16x16") == "fp32_16x16"
    assert pick("rung29", "rung30") is None
