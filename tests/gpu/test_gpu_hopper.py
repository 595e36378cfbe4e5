"""GPU tests for lesson 6 (kernels/hopper_rungNN_sm90a.cu: helpers.kernels.HOPPER_RUNGS,
helpers/experiments/hopper.py).

Every rung, in a child process (helpers.isolate: a fault or a hang there cannot break the other tests),
against float64 at sizes that are not multiples of any tile (TMA's out-of-bounds fill instead of
padding), bit for bit against the CPU model on a small product, with no spills; a plain launch forms the
clusters that __cluster_dims__ asks for, and so does the fallback, cuLaunchKernelEx (cuda-bindings), with
which the clustered rungs are correct too. Run with COURSE_DEVICE=gpu on a Hopper GPU; skipped elsewhere.
"""
import os

import numpy as np
import pytest

import helpers
from helpers import isolate
from helpers.kernels import HOPPER_RUNGS

_SESSION_DEVICE = os.environ.get("COURSE_DEVICE")
gpu = pytest.mark.skipif(_SESSION_DEVICE != "gpu", reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")

ODD = [(200, 136, 72), (129, 264, 40), (257, 520, 136), (1000, 1064, 1000), (40, 24, 56), (8, 8, 8)]


def _runnable(r):
    msg = r.skip_message(helpers.backend().gpu.cc)
    if msg:
        pytest.skip(msg)


@gpu
@pytest.mark.parametrize("rung", list(HOPPER_RUNGS))
def test_rung_correct_at_odd_sizes_and_equal_to_the_model(rung):
    r = HOPPER_RUNGS[rung]
    _runnable(r)
    out = isolate.run_isolated("helpers.experiments.ladder:check_rung_sizes", rung, [list(s) for s in ODD])
    assert isinstance(out, list), out.get("error")
    for entry in out[:-1]:
        assert entry["shape_ok"] and entry["passed"], entry["text"]
    assert out[-1]["emulation_max_diff"] == 0.0          # the same sums in the same order: bit for bit


@gpu
@pytest.mark.parametrize("rung", list(HOPPER_RUNGS))
def test_rung_rows_have_no_spills_and_their_grid(rung):
    r = HOPPER_RUNGS[rung]
    _runnable(r)
    rows = isolate.run_isolated("helpers.experiments.hopper:rung_rows", rung, [], [[264, 512, 128]], False)
    assert isinstance(rows, list) and "error" not in rows[0], rows
    assert rows[0]["spills"] == 0 and rows[0]["smem_dynamic"] == r.dyn_smem and rows[0]["passed"]
    if r.persistent:
        assert rows[0]["resident"]
    if r.cluster:
        assert rows[0]["launch_path"] == "plain launch"
        assert "the driver:" in rows[0]["resident"], rows[0]["resident"]   # cuOccupancyMaxActiveClusters answered


@gpu
def test_a_plain_launch_forms_clusters():
    out = isolate.run_isolated("helpers.experiments.hopper:cluster_probe")
    if "skipped" in out:
        pytest.skip(out["skipped"])
    assert out.get("forms_clusters"), out


@gpu
def test_cuLaunchKernelEx_forms_clusters():
    """The fallback path (helpers.hopper.launch_ex, cuda-bindings' cuLaunchKernelEx with the cluster named)."""
    out = isolate.run_isolated("helpers.experiments.hopper:cluster_probe", True)
    if "skipped" in out:
        pytest.skip(out["skipped"])
    assert out.get("path") == "cuLaunchKernelEx" and out.get("forms_clusters"), out


@gpu
@pytest.mark.parametrize("rung", [k for k, r in HOPPER_RUNGS.items() if r.cluster])
def test_clustered_rung_correct_through_cuLaunchKernelEx(rung):
    """Tensor maps, pointers and int32s passed by cuLaunchKernelEx's kernelParams give the same, correct result."""
    r = HOPPER_RUNGS[rung]
    _runnable(r)
    out = isolate.run_isolated("helpers.experiments.ladder:check_rung_sizes", rung, [list(s) for s in ODD[:3]], True)
    assert isinstance(out, list), out.get("error")
    for entry in out[:-1]:
        assert entry["shape_ok"] and entry["passed"], entry["text"]
    assert out[-1]["emulation_max_diff"] == 0.0


@gpu
def test_gemm_of_an_isolated_rung_returns_numpy():
    r = HOPPER_RUNGS[13]
    _runnable(r)
    A = helpers.random_matrix(96, 40, seed=1).astype(np.float16)
    B = helpers.random_matrix(40, 72, seed=2).astype(np.float16)
    C = helpers.gemm(r, A, B, pad=True)
    assert isinstance(C, np.ndarray) and C.shape == (96, 72) and r.check(C, A, B).passed


SPLIT_SIZES = [(200, 600, 3000), (128, 8192, 2048), (136, 264, 1000)]    # 5, 4 and 2 parts of K


def split_k_repeat(sizes, rung: int = 15) -> list[dict]:
    """GPU (child process): rung 15 (or 16) at each size, launched three times on the same inputs: every C
    checked (float64 and the split-K model, every element), the three bit-identical (the parts are added in a
    fixed order), and the flags back at zero after each launch (the last part resets them)."""
    import cupy

    from helpers.kernels import ALL_RUNGS, split_k_plan, tail_split_plan
    from helpers.launch import launcher

    r = ALL_RUNGS[rung]
    out = []
    for i, (M, N, K) in enumerate(sizes):
        A = cupy.asarray(helpers.random_matrix(M, K, seed=40 + i).astype(np.float16))
        B = cupy.asarray(helpers.random_matrix(K, N, seed=60 + i).astype(np.float16))
        run, C, _ = launcher(r, A, B)
        flags = run.keep[-1]
        got, zero = [], []
        for _ in range(3):
            C.fill(np.nan)
            run()
            cupy.cuda.get_current_stream().synchronize()
            got.append(C.copy())
            zero.append(int(cupy.count_nonzero(flags)) == 0)
        chk = r.check(C, A, B, backend="GPU")
        splits = tail_split_plan(M, N, K)[1] if r.tail_split else split_k_plan(M, N, K)[0]
        out.append({"size": [M, N, K], "splits": splits, "passed": bool(chk.passed),
                    "model": chk.model, "text": str(chk), "flags_reset": all(zero),
                    "identical": all(bool(cupy.array_equal(got[0].view(cupy.uint16), g.view(cupy.uint16)))
                                     for g in got[1:])})
    return out


@gpu
def test_split_k_is_correct_deterministic_and_resets_its_flags():
    r = HOPPER_RUNGS[15]
    _runnable(r)
    out = isolate.run_isolated("tests.gpu.test_gpu_hopper:split_k_repeat", [list(s) for s in SPLIT_SIZES])
    assert isinstance(out, list), out.get("error")
    assert [e["splits"] for e in out] == [5, 4, 2]
    for e in out:
        assert e["passed"] and e["model"] == "identical", e["text"]
        assert e["identical"] and e["flags_reset"], e


TAIL_SIZES = [(5000, 5000, 5000), (264, 17152, 1000), (40, 24, 1000)]   # 9 parts after 6 waves; 2 after 2 waves
                                                                       # (a tile below M); 2, no whole wave


@gpu
def test_tail_split_is_correct_deterministic_and_resets_its_flags():
    r = HOPPER_RUNGS[16]
    _runnable(r)
    out = isolate.run_isolated("tests.gpu.test_gpu_hopper:split_k_repeat", [list(s) for s in TAIL_SIZES], 16)
    assert isinstance(out, list), out.get("error")
    assert [e["splits"] for e in out] == [9, 2, 2]
    for e in out:
        assert e["passed"] and e["model"] == "identical", e["text"]
        assert e["identical"] and e["flags_reset"], e


def _per_shape_grids(k: int, shapes, knobs=None) -> list:
    """GPU, in a child: rung k's launch grid and check at each shape (N(0,1) FP16 inputs, C poisoned with NaN); with
    `knobs`, the variant helpers.try_kernel builds for them (its entry and -D options)."""
    import cupy

    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher, resident_blocks
    from lab.probes.common import knob_variant

    entry, opts, _ = knob_variant(k, knobs or {})
    out = [{"quad": resident_blocks(rung_entry(k))[0]}]
    for M, N, K in shapes:
        A, B = _inputs(0, M, N, K)
        run, C, _ = launcher(entry, A, B, options=opts)
        C.fill(cupy.nan)
        run()
        chk = rung_entry(k).check(C[:M, :N], A, B, backend="GPU")
        out.append({"shape": [M, N, K], "grid": list(run.grid), "passed": bool(chk.passed), "model": chk.model})
    return out


@gpu
@pytest.mark.parametrize("k", [25, 26])
def test_rungs_25_and_26_build_per_shape(k):
    """Rungs 25-26: clusters of 4 where rows start inside a 128-byte line and no wave is added (1000 x 1064
    x 1000: rows of 2000 and 2128 bytes; 5000^3), rung 14's or 13's build where rows are aligned (4096^3) or clusters
    of 4 add a wave (7000^3): the grid is whole clusters of the chosen size, and every C is correct and the model's."""
    from helpers.kernels import quad_choice, rung_entry

    _runnable(rung_entry(k))
    shapes = [(1000, 1064, 1000), (4096, 4096, 4096), (5000, 5000, 5000), (7000, 7000, 7000)]
    out = isolate.run_isolated("tests.gpu.test_gpu_hopper:_per_shape_grids", k, [list(s) for s in shapes], timeout=300)
    assert isinstance(out, list), out
    quad, rows = out[0]["quad"], out[1:]
    assert all(x["passed"] and x["model"] == "identical" for x in rows), rows
    assert quad % 4 == 0 and quad < 132
    grids = {tuple(x["shape"]): x["grid"][0] for x in rows}
    assert grids[1000, 1064, 1000] == grids[5000, 5000, 5000] == quad
    assert grids[4096, 4096, 4096] == grids[7000, 7000, 7000] == 132
    assert quad_choice(7000, 7000, 14000, 14000, lambda: (quad // 4, 66)) == 2


@gpu
@pytest.mark.parametrize("k", [25, 26])
def test_rungs_25_and_26_knobs_keep_or_force_the_cluster(k):
    """helpers.try_kernel's knobs on rungs 25-26: STAGES=3 alone leaves the launcher to choose (clusters of 4 at 5000^3,
    of 2 at 4096^3); CLUSTER_M given is used at every size (4 at 4096^3, 2 at 5000^3); every C correct and the
    model's, with the grid of the cluster size built."""
    from helpers.kernels import rung_entry

    _runnable(rung_entry(k))
    n4, n5 = [4096] * 3, [5000] * 3
    got = {}
    for knobs, shapes in (({"STAGES": 3}, [n5, n4]), ({"CLUSTER_M": 4}, [n4]), ({"CLUSTER_M": 2}, [n5])):
        out = isolate.run_isolated("tests.gpu.test_gpu_hopper:_per_shape_grids", k, shapes, knobs, timeout=300)
        assert isinstance(out, list), out
        assert all(x["passed"] and x["model"] == "identical" for x in out[1:]), (knobs, out)
        got.update({(tuple(knobs.items()), x["shape"][0]): x["grid"][0] for x in out[1:]})
        quad = out[0]["quad"]
    assert got[(("STAGES", 3),), 5000] == got[(("CLUSTER_M", 4),), 4096] == quad < 132
    assert got[(("STAGES", 3),), 4096] == got[(("CLUSTER_M", 2),), 5000] == 132


@gpu
def test_target_rounds_checks_then_times_in_turn():
    """experiments.like_for_like.target_rounds (experiment hopper_targets' child) on a small plan: each candidate
    checked bit-identical before it is timed, every round timed for the rung and cuBLAS writing the same C (rung 15:
    FP16, rung 13: FP32), and head_to_head reads the cells."""
    from helpers.experiments import like_for_like as LL

    _runnable(HOPPER_RUNGS[15])
    plan = [[[1000, 1064, 1000], "float16", 0.5, [15]], [[257, 520, 136], "float32", 0.5, [13]]]
    cells = isolate.run_isolated("helpers.experiments.like_for_like:target_rounds", plan, 2, timeout=300)
    assert isinstance(cells, list), cells.get("error")
    for cell, (shape, c, _, rungs) in zip(cells, plan):
        assert not cell.get("error") and cell["shape"] == shape and cell["c_dtype"] == c
        assert [x["rung"] for x in cell["checks"]] == rungs and all(x["passed"] for x in cell["checks"])
        assert [(x["built"], x["cluster"]) for x in cell["checks"]] == \
            [(HOPPER_RUNGS[k].name, HOPPER_RUNGS[k].cluster_ctas) for k in rungs]   # no per-shape build
        assert {x["what"] for x in cell["timed"]} == {f"rung {rungs[0]}", "cuBLAS"}
        assert all(len(x["round_ms"]) == 2 and all(m > 0 for m in x["round_ms"]) for x in cell["timed"])
    rows = LL.head_to_head({"cells": cells})
    assert [r["rung"] for r in rows] == [15, 13] and all(r["checked"] and r["ratio"] > 0 for r in rows)
