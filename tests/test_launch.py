"""helpers.launch on the CPU backend: validation (every learner mistake gives a specific Fix), padding,
one gemm path for every registered kernel, the per-kernel verdicts, and the way to isolated kernels."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import sweep

import helpers
import helpers.launch
from helpers import CourseError, InputError, KernelCompileError
from helpers import formats as F
from helpers.kernels import RUNGS


def f16(m, n, seed=0):
    return np.random.default_rng(seed).standard_normal((m, n)).astype(np.float16)


def f32(m, n, seed=0):
    return np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)


def raises_input_error(fn, *hints):
    with pytest.raises(InputError) as ei:
        fn()
    msg = str(ei.value)
    assert "Fix:" in msg, msg
    for h in hints:
        assert h in msg, f"{h!r} not in message:\n{msg}"
    return msg


# --------------------------------------------------------------------------- dtype
def test_float64_to_gemm_fp32_mentions_astype():
    A = np.ones((16, 16))
    msg = raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "astype", "float32")
    assert "float64" in msg


def test_float32_to_wmma_mixed_mentions_astype():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(16, 16), f32(16, 16)), "astype", "float16")
    assert msg.startswith("B ")          # names the offending argument


def test_float16_to_gemm_fp32_rejected():
    raises_input_error(lambda: helpers.gemm_fp32(f16(16, 16), f16(16, 16)), "astype(np.float32)")


# --------------------------------------------------------------------------- layout
@pytest.mark.parametrize("view", ["stride", "transpose"])
def test_non_contiguous_mentions_ascontiguousarray(view):
    base = f16(32, 64)
    A = base[:, ::2] if view == "stride" else f16(32, 32).T
    assert not A.flags.c_contiguous
    raises_input_error(lambda: helpers.wmma_mixed(A, f16(32, 16)), "ascontiguousarray")
    # the fix works
    C = helpers.wmma_mixed(np.ascontiguousarray(A), f16(32, 16))
    assert C.shape == (32, 16)


def test_non_contiguous_fp32():
    A = f32(16, 32)[:, ::2]
    raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "ascontiguousarray")


# --------------------------------------------------------------------------- shapes
def test_mismatched_inner_dims_mention_both_shapes():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(16, 48), f16(32, 16)), "16x48", "32x16")
    assert "inner" in msg


def test_mismatched_inner_dims_fp32():
    raises_input_error(lambda: helpers.gemm_fp32(f32(3, 5), f32(4, 2)), "3x5", "4x2")


@pytest.mark.parametrize("fn", [helpers.gemm_fp32, helpers.wmma_mixed])
def test_one_dimensional_input(fn):
    dt = np.float32 if fn is helpers.gemm_fp32 else np.float16
    a = np.ones(16, dtype=dt)
    msg = raises_input_error(lambda: fn(a, np.ones((16, 16), dtype=dt)), "reshape")
    assert "1 dimensions" in msg


def test_three_dimensional_input():
    raises_input_error(lambda: helpers.gemm_fp32(np.ones((2, 4, 4), np.float32), f32(4, 4)), "3 dimensions")


@pytest.mark.parametrize("shape_a,shape_b", [((0, 16), (16, 16)), ((16, 16), (16, 0)), ((16, 0), (0, 16))])
def test_empty(shape_a, shape_b):
    A = np.zeros(shape_a, np.float16)
    B = np.zeros(shape_b, np.float16)
    raises_input_error(lambda: helpers.wmma_mixed(A, B), "empty")


def test_size_not_multiple_of_16_suggests_pad_and_padded_size():
    msg = raises_input_error(lambda: helpers.wmma_mixed(f16(20, 16), f16(16, 16)), "pad=True", "32", "M=20")
    assert "M->32" in msg
    assert "N=" not in msg.split("\n")[0] and "K=" not in msg.split("\n")[0]   # only M is wrong


def test_several_bad_sizes_listed():
    raises_input_error(lambda: helpers.gemm("wmma_gemm_naive", f16(20, 24), f16(24, 18)),
                       "M=20", "N=18", "K=24", "M->32", "N->32", "K->32")


def test_plain_list_rejected():
    A = [[1.0] * 16] * 16
    msg = raises_input_error(lambda: helpers.gemm_fp32(A, f32(16, 16)), "np.asarray")
    assert "list" in msg


def test_fp32_kernel_accepts_any_size():
    A, B = f32(5, 7), f32(7, 3)
    C = helpers.gemm_fp32(A, B)
    assert C.shape == (5, 3) and C.dtype == np.float32
    assert helpers.KERNELS["gemm_fp32_kernel"].check(C, A, B).passed


def test_input_error_is_value_error_and_course_error():
    with pytest.raises(ValueError):
        helpers.gemm_fp32(np.ones(3, np.float32), f32(3, 3))
    with pytest.raises(CourseError):
        helpers.gemm_fp32(np.ones(3, np.float32), f32(3, 3))


# --------------------------------------------------------------------------- padding
def test_pad_true_product_works():
    A = np.random.default_rng(1).standard_normal((20, 24)).astype(np.float16)
    B = np.random.default_rng(2).standard_normal((24, 18)).astype(np.float16)
    C = helpers.gemm("wmma_mixed_gemm_kernel", A, B, pad=True)
    assert C.shape == (20, 18)
    assert C.dtype == np.float32
    assert not np.isnan(C).any()
    chk = helpers.KERNELS["wmma_mixed_gemm_kernel"].check(C, A, B)
    assert chk.passed, str(chk)
    # same answer as the product of explicitly zero-padded matrices, cropped
    Ap = np.zeros((32, 32), np.float16)
    Bp = np.zeros((32, 32), np.float16)
    Ap[:20, :24] = A
    Bp[:24, :18] = B
    np.testing.assert_array_equal(helpers.wmma_mixed(Ap, Bp)[:20, :18], C)


def test_pad_true_fp16acc():
    A = np.random.default_rng(3).standard_normal((20, 24)).astype(np.float16)
    B = np.random.default_rng(4).standard_normal((24, 18)).astype(np.float16)
    C = helpers.wmma_fp16acc(A, B, pad=True)
    assert C.shape == (20, 18) and C.dtype == np.float16
    chk = helpers.KERNELS["wmma_fp16acc_gemm_kernel"].check(C, A, B)
    assert chk.passed, str(chk)


def test_prepare_pads_with_zeros():
    A = f16(20, 24)
    B = f16(24, 18)
    spec, Ap, Bp, (M, N, K), padded = helpers.launch.prepare("wmma_mixed_gemm_kernel", A, B, pad=True)
    assert (M, N, K) == (20, 18, 24)
    assert padded == (32, 32, 32)
    assert Ap.shape == (32, 32) and Bp.shape == (32, 32)
    np.testing.assert_array_equal(Ap[:20, :24], A)
    assert not Ap[20:].any() and not Ap[:, 24:].any()
    assert not Bp[24:].any() and not Bp[:, 18:].any()


# --------------------------------------------------------------------------- lesson 3's kernels
@pytest.mark.parametrize("name", ["wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"])
def test_bf16_tf32_kernels_emulated_pass_check(name):
    A = helpers.random_matrix(40, 72, seed=2)
    B = helpers.random_matrix(72, 24, seed=3)
    spec = helpers.KERNELS[name]
    a, b = (F.to_bf16_bits(A), F.to_bf16_bits(B)) if spec.inputs == "bf16" else (A, B)
    C = helpers.gemm(name, a, b, pad=True)
    assert C.shape == (40, 24) and C.dtype == np.float32
    assert spec.check(C, A, B).passed


def test_bf16_kernel_rejects_floats_with_fix():
    A = helpers.random_matrix(16, 16, seed=0)
    with pytest.raises(helpers.InputError, match="to_bf16_bits") as e:
        helpers.gemm("wmma_bf16_gemm_kernel", A, A)
    assert "astype(np.uint16)" in str(e.value) and "Fix:" in str(e.value)


def test_tf32_kernel_takes_float32_only():
    A = helpers.random_matrix(16, 16, seed=0)
    with pytest.raises(helpers.InputError, match="float32"):
        helpers.gemm("wmma_tf32_gemm_kernel", A.astype(np.float16), A.astype(np.float16))


# --------------------------------------------------------------------------- lesson 5's rungs: the same path
# rungs 3-6 pad to rung 2's 128 x 128 block tile, as 2 does: rungs 1 (128 x 16), 2 and 7 (128 x 256) stand for the
# others (--full: every rung)
SIZES = [(200, 136, 72), (129, 257, 33), (17, 5, 3)]


@pytest.mark.parametrize("rung,size", sweep([(r, s) for r in RUNGS for s in SIZES], lambda c: c[0] in (1, 2, 7)))
def test_every_rung_emulated_passes_the_check(rung, size):
    M, N, K = size
    A = helpers.random_matrix(M, K, seed=3).astype(np.float16)
    B = helpers.random_matrix(K, N, seed=4).astype(np.float16)
    C = helpers.gemm(rung, A, B, pad=True)
    chk = RUNGS[rung].check(C, A, B)
    assert C.shape == (M, N) and chk.passed, str(chk)


def test_one_gemm_for_names_rung_numbers_and_entries():
    A = helpers.random_matrix(32, 48, seed=5).astype(np.float16)
    B = helpers.random_matrix(48, 16, seed=6).astype(np.float16)
    C = helpers.gemm("ladder_vec16", A, B, pad=True)
    np.testing.assert_array_equal(C, helpers.gemm(4, A, B, pad=True))
    np.testing.assert_array_equal(C, helpers.gemm(RUNGS[4], A, B, pad=True))
    np.testing.assert_array_equal(C, helpers.gemm("wmma_mixed_gemm_kernel", A, B))   # same sums, same order


def test_padding_to_tiles():
    A = np.ones((130, 40), np.float16)
    B = np.ones((40, 7), np.float16)
    spec, Ap, Bp, (M, N, K), (Mp, Np, Kp) = helpers.launch.prepare(4, A, B, pad=True)
    assert spec is RUNGS[4]
    assert (M, N, K) == (130, 7, 40) and (Mp, Np, Kp) == (256, 128, 64)
    assert Ap.shape == (256, 64) and Bp.shape == (64, 128)
    assert Ap[:130, :40].all() and not Ap[130:].any() and not Ap[:, 40:].any()


def test_rung_tiles_need_pad_true():
    msg = raises_input_error(lambda: helpers.gemm("ladder_smem_padded", f16(256, 128), f16(128, 136)),
                             "N=136", "128 for M and N, 32 for K", "pad=True", "N->256")
    assert "M=" not in msg.split("\n")[0] and "K=" not in msg.split("\n")[0]


@pytest.mark.parametrize("bad,match", [
    (lambda A, B: (A.astype(np.float32), B), "float16"),
    (lambda A, B: (A, B[:-1]), "inner dimensions"),
    (lambda A, B: (A.T, B), "C-contiguous|inner"),
    (lambda A, B: (A[None], B), "dimensions"),
    (lambda A, B: ([[1.0]], B), "not an array"),
])
def test_rung_bad_inputs_name_the_fix(bad, match):
    A = np.ones((32, 48), np.float16)
    B = np.ones((48, 16), np.float16)
    with pytest.raises(InputError, match=match):
        helpers.gemm(2, *bad(A, B), pad=True)


def test_verdicts_one_line_per_rung(monkeypatch):
    A = helpers.random_matrix(40, 24, seed=5).astype(np.float16)
    B = helpers.random_matrix(24, 33, seed=6).astype(np.float16)
    lines = helpers.launch.verdicts(RUNGS.values(), A, B)
    assert len(lines) == len(RUNGS) and all(" PASS " in ln for ln in lines)
    assert lines[0].startswith("1 PASS wmma_gemm_naive M=40 N=33 K=24") and lines[0].endswith("| padded to (48, 48, 32)")
    assert helpers.launch.verdicts(["gemm_fp32_kernel"], A.astype(np.float32), B.astype(np.float32))[0].startswith(
        "PASS gemm_fp32_kernel")
    monkeypatch.setitem(helpers.kernels.WITHDRAWN, "ladder_wgmma_tma", "failed on the H200")
    assert helpers.launch.verdicts(RUNGS.values(), A, B)[-1] == "rung 7 (ladder_wgmma_tma) withdrawn: failed on the H200"


# --------------------------------------------------------------------------- isolated kernels
def test_isolated_kernel_goes_to_a_child_process(monkeypatch):
    """On a GPU, an isolate=True kernel (rung 7) runs in a child process through helpers.isolate."""
    cupy = pytest.importorskip("cupy")
    from test_reliability import fake_gpu

    calls = []
    monkeypatch.setattr(helpers.launch, "backend", fake_gpu)
    monkeypatch.setattr(cupy, "asnumpy", np.asarray)
    monkeypatch.setattr(helpers.launch.isolate, "run_isolated", lambda f, *a: calls.append((f, a)) or [[1.5]])
    A = np.ones((1, 1), np.float16)
    C = helpers.gemm(7, A, A, pad=True)
    assert C.dtype == np.float32 and C.tolist() == [[1.5]]
    assert calls == [("helpers.launch:gemm_lists", ("ladder_wgmma_tma", [[1.0]], [[1.0]], True))]
    monkeypatch.setattr(helpers.launch.isolate, "run_isolated", lambda f, *a: {"error": "illegal instruction"})
    with pytest.raises(KernelCompileError, match="ladder_wgmma_tma failed in its child process:\nillegal"):
        helpers.gemm(7, A, A, pad=True)


def test_child_side_of_gemm():
    A = helpers.random_matrix(20, 8, seed=7).astype(np.float16)
    B = helpers.random_matrix(8, 12, seed=8).astype(np.float16)
    out = helpers.launch.gemm_lists("ladder_wgmma_tma", A.tolist(), B.tolist(), True)
    np.testing.assert_array_equal(np.asarray(out, np.float32), helpers.gemm(7, A, B, pad=True))


def test_build_for_gives_the_per_shape_build_and_the_record_reports_its_grid(monkeypatch):
    """helpers.launch.build_for: rung 25 with aligned rows is rung 14's build (clusters of 2, -DQUAD_CLUSTER=2 after
    the variant's own options), asking no driver; a build that names its cluster, and any other rung, is left as
    given. The hopper experiment's launch facts report the grid of that build, not of the entry (rung 25's record
    once said '30 clusters of 4' at 4096^3, where it launched clusters of 2)."""
    from helpers import launch
    from helpers.experiments import hopper as H
    from helpers.kernels import ALL_RUNGS

    r25, r14 = ALL_RUNGS[25], ALL_RUNGS[14]
    b, opts = launch.build_for(r25, 4096, 4096, 8192, 8192, options=("-DHSTAGES=3",))
    assert b.cluster == (2, 1, 1) and opts == ("-DHSTAGES=3", "-DQUAD_CLUSTER=2") and b.name == r25.name
    assert launch.build_for(r25, 4096, 4096, 8192, 8192, options=("-DQUAD_CLUSTER=4",)) == (r25, ("-DQUAD_CLUSTER=4",))
    assert launch.build_for(r14, 5000, 5000, 10000, 10000) == (r14, ())
    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=(): (0, f"{spec.cluster} {options}"))
    monkeypatch.setattr(launch, "launch_path", lambda spec: "plain launch")
    assert H._launch_facts(r25, 4096, 4096, 4096)["resident"] == "(2, 1, 1) ('-DQUAD_CLUSTER=2',)"
    assert H._launch_facts(r14, 4096, 4096, 4096)["resident"] == "(2, 1, 1) ()"


def test_tile_n_knob_builds_its_width_and_the_launcher_chooses_the_cluster_for_it(monkeypatch):
    """helpers.try_kernel(25, TILE_N=152) as the launcher builds it: -DTILE_N=152, a 128 x 152 block tile and the shared
    memory of 3 boxes of B per stage; at 5000^3 (rows of 10000 bytes) the cluster chosen for that width is 2 (10 waves
    against 11 of clusters of 4: -DQUAD_CLUSTER=2 added), at 256 it stays 4."""
    from helpers import launch
    from helpers.kernels import ALL_RUNGS, tile_n_smem
    from helpers.tryout import defines, options, validate_knobs, variant_entry

    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=():
                        (120 if spec.cluster == (4, 1, 1) else 132, f"{spec.cluster} {options}"))
    spec, settings, given = validate_knobs(25, {"TILE_N": 152})
    entry, opts = variant_entry(spec, settings), options(defines(spec, given))
    assert (entry.block_tile, entry.dyn_smem, opts) == ((128, 152), tile_n_smem(152), ("-DTILE_N=152",))
    b, o = launch.build_for(entry, 5000, 5000, 10000, 10000, options=opts)
    assert (b.cluster, b.block_tile, o) == ((2, 1, 1), (128, 152), ("-DTILE_N=152", "-DQUAD_CLUSTER=2"))
    assert launch.build_for(ALL_RUNGS[25], 5000, 5000, 10000, 10000) == (ALL_RUNGS[25], ())


def test_build_for_rungs_29_30_builds_the_transposed_tile_where_the_waves_pay(monkeypatch):
    """helpers.launch.build_for on rungs 29-30 (the H200's counts: 30 clusters of 4, 66 of 2): the C^T tile where
    ct_waves_ratio gives it CT_GAIN or more (5000^3, 5496^3, 6000^3, 6008^3: rows start inside a line; 3000^3), rung
    25's (26's) per-shape build elsewhere (4096^3: rung 14's pair, aligned rows; 7000^3 and 8928^3: clusters of 2
    there too); -DCT_M names the tile, so a probe's forced build is left as given."""
    from helpers import launch
    from helpers.kernels import ALL_RUNGS, CT_GAIN, ct_waves_ratio

    def resident(spec, source=None, options=()):      # as the driver's: source is a kernel's text or None
        assert source is None or isinstance(source, str), source
        assert all(isinstance(o, str) for o in options), options
        return 120 if spec.cluster == (4, 1, 1) else 132, "h200"

    monkeypatch.setattr(launch, "resident_blocks", resident)
    h200 = lambda: (30, 66, 66)   # noqa: E731
    for k, base in ((29, 25), (30, 26)):
        r = ALL_RUNGS[k]
        for n in (3000, 5000, 5496, 6000, 6008):
            assert ct_waves_ratio(n, n, 2 * n, 2 * n, h200) >= CT_GAIN
            assert launch.build_for(r, n, n, 2 * n, 2 * n) == (r, ())
        for n in (4096, 7000, 8928):
            assert ct_waves_ratio(n, n, 2 * n, 2 * n, h200) < CT_GAIN
            b, opts = launch.build_for(r, n, n, 2 * n, 2 * n)
            assert b.name == ALL_RUNGS[base].name and (b.cluster, opts) == ((2, 1, 1), ("-DQUAD_CLUSTER=2",))
        assert launch.build_for(r, 4096, 4096, 8192, 8192, options=("-DCT_M=160",)) == (r, ("-DCT_M=160",))


def test_rows_of_rungs_29_30_name_the_kernel_the_launcher_built(monkeypatch):
    """helpers.experiments.hopper._launch_facts (every timed row of the record and the probes): for rungs 29-30 a
    `built` field names the kernel, tile and cluster the launcher chose (the C^T tile at 5000^3, rung 25's (26's)
    pair at 4096^3); rungs that choose a cluster only (25-26) carry no such field."""
    from helpers import launch
    from helpers.experiments import hopper as H
    from helpers.kernels import ALL_RUNGS

    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=():
                        (120 if spec.cluster == (4, 1, 1) else 132, "h200"))
    monkeypatch.setattr(launch, "launch_path", lambda r: "cluster launch")
    assert H._launch_facts(ALL_RUNGS[29], 5000, 5000, 5000)["built"] == "hopper_ct_tile, 160 x 256 tiles in clusters of 2"
    assert H._launch_facts(ALL_RUNGS[30], 4096, 4096, 4096)["built"] == \
        "hopper_quad_cluster_f32c, 128 x 256 tiles in clusters of 2"
    assert "built" not in H._launch_facts(ALL_RUNGS[25], 5000, 5000, 5000)


def test_the_launch_path_of_rungs_29_30_is_the_built_kernels(monkeypatch):
    """_launch_facts' launch_path is that of the kernel the launcher built: where rung 30 builds rung 26's kernel
    (4096^3) the path recorded under that kernel's name, where it builds its C^T tile (5000^3) its own. (The H200 found
    this, session 28: rungs 29-30 at 264 x 512 x 128 reported None, the path looked up under the entry's name.)"""
    from helpers import launch
    from helpers.experiments import hopper as H
    from helpers.kernels import ALL_RUNGS

    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=():
                        (120 if spec.cluster == (4, 1, 1) else 132, "h200"))
    monkeypatch.setattr(launch, "_CLUSTER_PATH", {"hopper_quad_cluster_f32c": "plain launch",
                                                  "hopper_ct_tile_f32c": "cuLaunchKernelEx (asked for)"})
    assert H._launch_facts(ALL_RUNGS[30], 4096, 4096, 4096)["launch_path"] == "plain launch"
    assert H._launch_facts(ALL_RUNGS[30], 5000, 5000, 5000)["launch_path"] == "cuLaunchKernelEx (asked for)"
    assert H._launch_facts(ALL_RUNGS[26], 4096, 4096, 4096)["launch_path"] == "plain launch"


def test_a_variant_of_rungs_29_30_keeps_its_knobs_in_rung_25s_build(monkeypatch):
    """helpers.launch.orientation_build with a try_kernel variant's options (STAGES=3: -DHSTAGES=3): where rung 25's
    (26's) build is chosen, it is built with the same options and that rung's own entry for them
    (helpers.tryout.entry_for_options: 3 stages of its 48 KB, not rung 29's shared memory); where the C^T tile is
    chosen, the variant as given. Knobs rung 25 does not have (CT_M) leave its entry as it is."""
    from helpers import launch
    from helpers.kernels import ALL_RUNGS, tile_n_smem
    from helpers.tryout import _resolve, entry_for_options, variant_entry

    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=():
                        (120 if spec.cluster == (4, 1, 1) else 132, "h200"))
    r29 = ALL_RUNGS[29]
    var = variant_entry(r29, _resolve(r29, {"STAGES": 3}))
    b, opts = launch.build_for(var, 4096, 4096, 8192, 8192, options=("-DHSTAGES=3",))
    assert b.name == "hopper_quad_cluster" and b.cluster == (2, 1, 1) and opts == ("-DHSTAGES=3", "-DQUAD_CLUSTER=2")
    assert b.dyn_smem == tile_n_smem(256, 3) != ALL_RUNGS[25].dyn_smem
    assert launch.build_for(var, 5000, 5000, 10000, 10000, options=("-DHSTAGES=3",)) == (var, ("-DHSTAGES=3",))
    assert entry_for_options(ALL_RUNGS[25], ("-DCT_M=160", "-DPRODUCER_REGS=56")) is ALL_RUNGS[25]


def test_a_group_m_below_4_leaves_rung_25_its_clusters_of_2_in_rung_29s_choice(monkeypatch):
    """Rung 29's GROUP_M knob allows 2, but rung 25 in clusters of 4 needs whole groups of 4 tile rows (its kernel
    traps otherwise, and the compile check calls that an empty kernel: the knobs record's GROUP_M=2 row of rung 29
    failed so on the H200). orientation_build then weighs and builds only rung 25's clusters of 2: it never asks for
    the cluster-of-4 build, and where rung 25's side is chosen it is the pair build with the variant's options."""
    from helpers import launch
    from helpers.kernels import ALL_RUNGS

    asked = []

    def resident(spec, source=None, options=()):
        asked.append((spec.name, spec.cluster, tuple(options)))
        return (120 if spec.cluster == (4, 1, 1) else 132, "h200")

    monkeypatch.setattr(launch, "resident_blocks", resident)
    for k in (29, 30):
        b, opts = launch.build_for(ALL_RUNGS[k], 4096, 4096, 8192, 8192, options=("-DGROUP_M=2",))
        assert b.cluster == (2, 1, 1) and opts == ("-DGROUP_M=2", "-DQUAD_CLUSTER=2") and b.name != ALL_RUNGS[k].name
        assert not [a for a in asked if a[1] == (4, 1, 1)], asked
        assert launch.build_for(ALL_RUNGS[k], 5000, 5000, 10000, 10000, options=("-DGROUP_M=2",))[0] is ALL_RUNGS[k]
        asked.clear()
        launch.build_for(ALL_RUNGS[k], 4096, 4096, 8192, 8192, options=("-DGROUP_M=4",))   # 4: clusters of 4 weighed
        assert [a for a in asked if a[1] == (4, 1, 1)]
        asked.clear()
