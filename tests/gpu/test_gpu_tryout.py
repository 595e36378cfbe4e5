"""GPU tests of helpers.try_kernel (helpers/tryout.py, issue 23): a learner's variant of a rung compiled,
checked and timed beside the original and cuBLAS.

Each rung 2-6 as recorded (through an edited-source copy of its file, in a child process) passes and runs at
the original's speed; knob variants pass and take the launch settings their knobs imply; wrong edits are
rejected with the first wrong block tile named; a syntax error comes back as the compiler's error with its
line; an out-of-bounds write in a child process is one verdict and leaves this process's GPU context working;
the sm_90a rungs' edited sources go through the arch-specific compile, tensor maps and clusters. Run with
COURSE_DEVICE=gpu; skipped elsewhere.
"""
import os

import numpy as np
import pytest

import helpers
from helpers import tryout
from helpers.kernels import ALL_RUNGS, ladder_smem_bytes

_SESSION_DEVICE = os.environ.get("COURSE_DEVICE")
pytestmark = pytest.mark.skipif(_SESSION_DEVICE != "gpu",
                                reason="GPU tests run with COURSE_DEVICE=gpu on a GPU machine")


def _runnable(k):
    msg = ALL_RUNGS[k].skip_message(helpers.backend().gpu.cc)
    if msg:
        pytest.skip(msg)


def _within_noise(r, slack=0.07):
    """The variant and the original timed alike: their ratio within `slack` of 1 or within their spreads."""
    v, o = r.timing["variant"], r.timing["original"]
    spread = max((v["p90_ms"] - v["p10_ms"]) / v["ms"], (o["p90_ms"] - o["p10_ms"]) / o["ms"])
    return abs(r.row["vs_original"] - 1.0) <= max(slack, spread)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_each_rung_as_recorded_passes_at_the_original_speed(k):
    """The file as it is, passed as an edited source (the learner's path: NVRTC on a string, a child
    process): the check passes at 1000 x 1064 x 1000 (zero-padded) and at 4096^3, and the speed is the
    original's within noise; the row has every field, cuBLAS and the clocks beside it."""
    _runnable(k)
    r = helpers.try_kernel(k, source=tryout.source_of(k), runs=2)
    assert r.live and r.stage == "done" and r.passed, r.lines()
    assert r.verdict.startswith(f"PASS {ALL_RUNGS[k].name} M=1000 N=1064 K=1000"), r.verdict
    row = r.row
    assert set(row) >= {"variant", "defines", "passed", "verdict", "ms", "tflops", "vs_original", "vs_cublas", "clocks"}
    assert row["variant"] == f"{ALL_RUNGS[k].name} (your source)" and row["defines"] == ""
    assert _within_noise(r), (row, r.timing)
    assert 0 < row["vs_cublas"] < 1.2 and row["clocks"] and "MHz" in row["clocks"]
    assert r.outcome["check_timed"]["passed"] and r.outcome["check_timed"]["size"] == [4096, 4096, 4096]
    assert r.figure() is not None


def test_knob_defaults_in_process_are_the_original():
    """No source and no knobs: in this process, the registered kernel itself (the same module)."""
    _runnable(5)
    r = helpers.try_kernel(5, runs=2)
    assert r.passed and r.stage == "done" and r.variant == "ladder_cp_async (as recorded)", r.lines()
    assert _within_noise(r), r.timing


@pytest.mark.parametrize("k, knobs, smem", [
    (3, {"PAD": 0}, ("smem_static", ladder_smem_bytes(pad=0))),
    (2, {"PAD": 8}, ("smem_static", ladder_smem_bytes(pad=8))),
    (4, {"BK": 64}, ("smem_static", ladder_smem_bytes(pad=8, bk=64))),
    (5, {"STAGES": 2}, ("dyn_smem", ladder_smem_bytes(stages=2))),
    (5, {"WAIT_GROUP": 0}, ("dyn_smem", ladder_smem_bytes(stages=4))),
    (6, {"LDMATRIX": 0}, ("dyn_smem", ladder_smem_bytes(stages=4))),
    (6, {"STAGES": 6, "BK": 16, "PAD": 16}, ("dyn_smem", ladder_smem_bytes(stages=6, pad=16, bk=16))),
])
def test_knob_variants_pass_with_their_launch_settings(k, knobs, smem):
    _runnable(k)
    r = helpers.try_kernel(k, **knobs)
    assert r.passed and r.stage == "done", r.lines()
    field, want = smem
    assert r.outcome[field] == want
    if field == "dyn_smem":
        assert r.resources["smem_dynamic"] == want
    else:
        assert r.resources["smem_static"] == want        # what the driver says the variant declares
    assert r.outcome["tile_k"] == knobs.get("BK", 32)
    assert r.row["defines"] == " ".join(f"-D{tryout.KNOBS[k][n].define}={v}" for n, v in knobs.items())


def test_padding_off_is_slower_on_rung_3():
    """Rung 3 with PAD=0 is rung 2's code: its bank conflicts cost time (the record: rung 2 ~0.75x rung 3)."""
    _runnable(3)
    r = helpers.try_kernel(3, PAD=0, runs=2)
    assert r.passed and r.row["vs_original"] < 0.95, r.lines()


def test_a_k_loop_that_stops_early_is_rejected_with_the_first_tile():
    _runnable(5)
    src = tryout.source_of(5, replace={
        "    for (int kt = 0; kt < ktiles; ++kt) {\n        cp_async_wait<WAIT_GROUP>();   // this":
        "    for (int kt = 0; kt < ktiles - 1; ++kt) {\n        cp_async_wait<WAIT_GROUP>();   // this"})
    r = helpers.try_kernel(5, source=src)
    assert r.live and r.stage == "check" and r.passed is False, r.lines()
    assert r.verdict.startswith("FAIL ladder_cp_async M=1000 N=1064 K=1000"), r.verdict
    assert "first wrong block tile: blockIdx.y = 0, blockIdx.x = 0 (rows 0-127, columns 0-127)" in r.verdict
    assert "72 of 72 tiles wrong" in r.verdict and r.first_wrong_tile == (0, 0)
    assert not r.timing and r.row["ms"] is None                      # a wrong result is not timed
    assert "Traceback" not in "\n".join(r.lines())


def test_one_wrong_element_in_one_tile_names_that_tile():
    """rung 6, one accumulator of one thread of block (x 2, y 1) off by 1: exactly that tile is named,
    with the element (warp 1: warp_m 0, warp_n 1; lane 37 % 32 = 5: g 1, t 1; m16 tile 1, n8 tile 2)."""
    _runnable(6)
    src = tryout.source_of(6, replace={
        "    cp_async_wait<0>();\n\n    const int g = lane / 4, t = lane % 4;":
        "    cp_async_wait<0>();\n    if (blockIdx.x == 2 && blockIdx.y == 1 && threadIdx.x == 37) acc[1][2][0] += 1.0f;\n"
        "\n    const int g = lane / 4, t = lane % 4;"})
    r = helpers.try_kernel(6, source=src, timing_size=None)
    assert r.stage == "check" and not r.passed, r.lines()
    assert r.first_wrong_tile == (1, 2)
    assert "blockIdx.y = 1, blockIdx.x = 2 (rows 128-255, columns 256-383), C[145, 306]" in r.verdict, r.verdict
    assert "1 of 72 tiles wrong" in r.verdict


def test_a_syntax_error_comes_back_with_its_line():
    _runnable(5)
    old = "    const int ktiles = K / BK;\n\n    wmma::fragment"
    src = tryout.source_of(5, replace={old: old.replace("K / BK;", "K / BKK;")})
    line = src[:src.index("K / BKK;")].count("\n") + 1
    r = helpers.try_kernel(5, source=src)
    assert r.stage == "compile" and r.passed is False, r.lines()
    assert f"line {line}: error: identifier \"BKK\" is undefined" in r.error, r.error
    assert f"> {line} |     const int ktiles = K / BKK;" in r.error
    assert r.verdict.startswith("ladder_cp_async (your source) does not compile: ")
    assert "Traceback" not in r.error and "CompileException" not in r.error


def test_an_out_of_bounds_write_is_a_verdict_and_this_context_survives():
    import cupy

    _runnable(5)
    src = tryout.source_of(5, replace={
        "    cp_async_wait<0>();\n    wmma_store_tile(C, N, row0, col0, warp_m, warp_n, acc);":
        "    cp_async_wait<0>();\n    if (tid == 0) C[(size_t)1 << 40] = 1.0f;   // far past the end of C\n"
        "    wmma_store_tile(C, N, row0, col0, warp_m, warp_n, acc);"})
    r = helpers.try_kernel(5, source=src)
    assert r.stage == "fault" and r.passed is False, r.lines()
    assert "context is intact" in r.verdict, r.verdict
    assert "Traceback" not in r.verdict
    # this process's context still works: a kernel launch and a check
    A = helpers.random_matrix(200, 72, seed=1).astype(np.float16)
    B = helpers.random_matrix(72, 136, seed=2).astype(np.float16)
    assert ALL_RUNGS[4].check(helpers.gemm(4, A, B, pad=True), A, B).passed
    assert float(cupy.arange(4).sum()) == 6.0


def test_an_in_process_variant_can_be_isolated_on_request():
    _runnable(4)
    r = helpers.try_kernel(4, BK=16, isolate=True, timing_size=None)
    assert r.passed and "child process" in r.source, r.lines()


@pytest.mark.parametrize("k", [8, 12])
def test_hopper_rungs_as_edited_sources(k):
    """sm_90a: the edited-source path through NVRTC for sm_90a (helpers.compile.get_arch_kernel with
    source), tensor maps (rung 8) and 2-CTA clusters (rung 12), in a child process."""
    _runnable(k)
    r = helpers.try_kernel(k, source=tryout.source_of(k), runs=2)
    assert r.passed and r.stage == "done", r.lines()
    assert _within_noise(r, slack=0.08), r.timing


@pytest.mark.parametrize("k, knobs, cluster", [
    (8, {"STAGES": 2}, None),
    (9, {"PRODUCER_REGS": 56}, None),
    (11, {"GROUP_M": 2}, None),
    (12, {"CLUSTER_M": 1}, None),
    (12, {"CLUSTER_M": 4, "GROUP_M": 16}, (4, 1, 1)),
    (13, {"STAGES": 3}, (2, 1, 1)),
])
def test_hopper_knob_variants_pass_with_their_launch_settings(k, knobs, cluster):
    """sm_90a knobs (kernels/hopper_rungNN_sm90a.cu), in a child process: stages change the dynamic shared memory,
    CLUSTER_M the cluster the launcher forms (none for 1)."""
    from helpers.kernels import HOPPER_SMEM, HOPPER_STAGE, HOPPER_STORE_SMEM

    _runnable(k)
    r = helpers.try_kernel(k, timing_size=4096, **knobs)
    assert r.passed and r.stage == "done", r.lines()
    stages = knobs.get("STAGES", 4)
    want = HOPPER_SMEM + (stages - 4) * HOPPER_STAGE + (HOPPER_STORE_SMEM - HOPPER_SMEM if k == 13 else 0)
    assert r.outcome["dyn_smem"] == r.resources["smem_dynamic"] == want
    spec, settings, _ = tryout.validate_knobs(k, knobs)
    assert tryout.variant_entry(spec, settings).cluster == (cluster if k >= 12 else None)


@pytest.mark.parametrize("k", [17, 18, 19, 20])
@pytest.mark.parametrize("knobs, cluster", [({"STAGES": 4}, (2, 1, 1)), ({"CLUSTER_M": 1}, None)])
def test_skinny_knobs_pass_with_their_own_ring_and_cluster(k, knobs, cluster):
    """The knobs of rungs 17-20 (SKINNY_STAGES, SKINNY_CLUSTER in their files): their ring of 24 KB
    stages (helpers.kernels.skinny_smem) and the cluster the launcher forms (none for 1), checked and timed."""
    from helpers.kernels import skinny_smem

    _runnable(k)
    r = helpers.try_kernel(k, timing_size=4096, **knobs)
    assert r.passed and r.stage == "done", r.lines()
    assert r.outcome["dyn_smem"] == r.resources["smem_dynamic"] == skinny_smem(knobs.get("STAGES", 8))
    spec, settings, _ = tryout.validate_knobs(k, knobs)
    assert tryout.variant_entry(spec, settings).cluster == cluster


@pytest.mark.parametrize("k", [17, 18, 19, 20])
@pytest.mark.parametrize("hint", [1, 2])
def test_skinny_wait_hint_variants_are_correct(k, hint):
    """WAIT_HINT (SKINNY_WAIT: how a thread waits for a stage, kernels/hopper_primitives.cuh): each value compiles
    the rung with that wait only, and the rung stays correct (the check at an odd size and at 4096^3), with the
    launch settings of the rung as recorded."""
    from helpers.kernels import skinny_smem

    _runnable(k)
    r = helpers.try_kernel(k, timing_size=4096, WAIT_HINT=hint)
    assert r.passed and r.stage == "done", r.lines()
    assert r.row["defines"] == f"-DSKINNY_WAIT={hint}"
    assert r.outcome["dyn_smem"] == r.resources["smem_dynamic"] == skinny_smem(8)


@pytest.mark.parametrize("k", [23, 24])
def test_skinny_desc_add_off_gives_back_rebuilt_descriptors(k):
    """DESC_ADD = 0 (SKINNY_DESC, ws_gemm's DESC argument): rungs 23-24 rebuild their descriptors before every wgmma,
    as rungs 21-22 do, and stay correct (the check at an odd size and at 4096^3), with the rung's launch settings."""
    from helpers.kernels import skinny_smem

    _runnable(k)
    r = helpers.try_kernel(k, timing_size=4096, DESC_ADD=0)
    assert r.passed and r.stage == "done", r.lines()
    assert r.row["defines"] == "-DSKINNY_DESC=0"
    assert r.outcome["dyn_smem"] == r.resources["smem_dynamic"] == skinny_smem(8)


def test_quad_cluster_knob_gives_rung_14_back_and_clusters_of_four_cost_a_wave_at_4096():
    """Rung 25's CLUSTER_M (QUAD_CLUSTER): at 4096^3 the rung as recorded is rung 14's build (rows aligned), so
    CLUSTER_M=2 times alike; CLUSTER_M=4 forced there is correct but slower (30 clusters of 4 fit on an H200, so
    128 units take 5 waves where 256 units of 2 take 4: results/logs/quad-grid), the lesson's Try it."""
    _runnable(25)
    two = helpers.try_kernel(25, timing_size=4096, CLUSTER_M=2)
    assert two.passed and two.stage == "done" and two.row["defines"] == "-DQUAD_CLUSTER=2", two.lines()
    assert _within_noise(two), two.lines()
    four = helpers.try_kernel(25, timing_size=4096, CLUSTER_M=4)
    assert four.passed and four.stage == "done" and four.row["defines"] == "-DQUAD_CLUSTER=4", four.lines()
    assert four.row["vs_original"] < 0.95, four.lines()


def test_ct_m_knob_forces_the_transposed_tile_which_wastes_a_wave_at_4096():
    """Rung 29's CT_M: at 4096^3 the rung as recorded is rung 25's build (the wave model gives the C^T tile x0.80
    there), so CT_M=160, which forces the C^T tile, is correct but slower (forced, it measured x0.820 over rung 25:
    results/logs/ct-tile-probe), the lesson's Try it; CT_M=192 with 3 stages (27 tile rows at 5000, only 3 stages
    fit) is correct too, checked at the odd size and 4096^3, with its own shared memory."""
    from helpers.kernels import ct_smem

    _runnable(29)
    forced = helpers.try_kernel(29, timing_size=4096, CT_M=160)
    assert forced.passed and forced.stage == "done" and forced.row["defines"] == "-DCT_M=160", forced.lines()
    assert forced.row["vs_original"] < 0.95, forced.lines()
    tall = helpers.try_kernel(29, timing_size=4096, CT_M=192, STAGES=3)
    assert tall.passed and tall.stage == "done", tall.lines()
    assert tall.outcome["dyn_smem"] == tall.resources["smem_dynamic"] == ct_smem(192, 3), tall.lines()


def test_rung_30_with_three_stages_builds_them_in_either_orientation():
    """Rung 30 with STAGES=3 and no CT_M: the launcher still chooses per problem, and both builds take the ring
    (helpers.launch.orientation_build passes -DHSTAGES to rung 26's build): correct at the odd size (rung 26's
    build there) and at 5000^3 (the C^T tile), timed there."""
    _runnable(30)
    r = helpers.try_kernel(30, timing_size=5000, STAGES=3)
    assert r.passed and r.stage == "done" and r.row["defines"] == "-DHSTAGES=3", r.lines()
