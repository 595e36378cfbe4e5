"""helpers.analysis: the traffic model, bank conflicts, ldmatrix addressing, SASS counts, lesson 6's tile order
and epilogue stores (no GPU)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import analysis
from helpers import analysis as A
from helpers.experiments import wmma as w
from helpers.kernels import KERNELS, RUNGS

ROOT = Path(__file__).resolve().parents[1]


def test_traffic_model():
    n = 4096
    r1, r2 = RUNGS[1], RUNGS[2]
    assert A.traffic_bytes(r2, n, n, n) == n * n * 2 * (n / 128) * 2 + n * n * 4
    assert A.intensity(r2, n, n, n) > 4 * A.intensity(r1, n, n, n)
    assert A.traffic_bytes(r2, n, n, n) == A.tile_traffic_bytes(n, n, n, 128, 128)
    # element sizes come from the kernel: FP32 in and out for the CUDA-core kernel, whose threads each
    # load their own A and B elements (two 4-byte loads per FMA: lesson 1's requested traffic)
    fp32 = KERNELS["gemm_fp32_kernel"]
    assert A.traffic_bytes(fp32, 64, 64, 64) == A.tile_traffic_bytes(64, 64, 64, 1, 1, 4, 4)
    from helpers.experiments.baseline import intensity as lesson1_intensity
    assert A.intensity(fp32, n, n, n) == lesson1_intensity(n)["requested"]


def test_rung1_traffic_is_per_warp_as_lesson2_counts_it():
    """Every warp of the seed's WMMA loop loads its own 16 x 16 tiles of A and B: n^3 / 4 bytes of A and B
    at n^3 (lesson 2's count), and rung 2's 128 x 128 block tile cuts that by (1/16 + 1/16) / (2/128) = 8
    (7.8 with the store of C)."""
    n = 4096
    r1, r2, r7 = RUNGS[1], RUNGS[2], RUNGS[7]
    assert r1.traffic_tile == (16, 16) and r2.traffic_tile == (128, 128) and r7.traffic_tile == (128, 256)
    assert A.traffic_bytes(r1, n, n, n) == n ** 3 / 4 + n * n * 4
    assert 7.7 < A.traffic_bytes(r1, n, n, n) / A.traffic_bytes(r2, n, n, n) < 7.9
    # rung 7's 128 x 256 tile: (1/128 + 1/256) / (2/128) = 3/4 of rung 2's A and B bytes, not half
    ab = lambda r: A.traffic_bytes(r, n, n, n) - n * n * 4  # noqa: E731
    assert ab(r7) / ab(r2) == 0.75
    for name in ("wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel", "wmma_bf16_gemm_kernel"):
        assert KERNELS[name].traffic_tile == (16, 16)


def test_bank_conflict_model():
    assert A.smem_conflicts(0) == {"pad_halves": 0, "A_row_bytes": 64, "B_row_bytes": 256, "A_ways": 4, "B_ways": 8}
    assert A.smem_conflicts(8)["A_ways"] == A.smem_conflicts(8)["B_ways"] == 1
    assert A.bank_ways(128) == 8 and A.bank_ways(16) == 1


def test_pad_options():
    rows = {r["pad_halves"]: r for r in A.pad_options()}
    assert rows[8]["legal"] and rows[8]["A_ways"] == rows[8]["B_ways"] == 1
    assert not rows[4]["legal"] and rows[0]["legal"] and rows[0]["B_ways"] == 8
    assert rows[16]["B_ways"] > 1                 # more padding is not better
    assert [p for p, r in rows.items() if r["legal"] and r["A_ways"] == r["B_ways"] == 1] == [8]


def test_ldmatrix_addressing_gives_ptx_fragments():
    assert A.ldmatrix_fragments("a") == w.ptx_fragment_layout("a")
    b, ptx_b = A.ldmatrix_fragments("b"), w.ptx_fragment_layout("b")
    for lane, want in zip(b, ptx_b):
        assert lane[:4] == want
        assert [(k, n - 8) for k, n in lane[4:]] == want


def test_sass_opcode_counts():
    path = helpers.results.RESULTS_DIR / "build-nvidia-h200" / "wmma.sm_90.sass"
    counts = A.sass_opcode_counts(path)
    assert counts["wmma_gemm_naive"]["HMMA"] > 0 and counts["wmma_gemm_naive"]["HGMMA"] == 0
    assert set(counts["wmma_gemm_naive"]) == set(A.SASS_OPS)


def test_sass_instructions(tmp_path):
    listing = tmp_path / "k.sass"
    listing.write_text("\tcode for sm_90\n\t\tFunction : kern\n"
                       "        /*0000*/                   LDC R1, c[0x0][0x28] ;            /* 0x00000a00ff017b82 */\n"
                       "                                                                     /* 0x000fe20000000800 */\n"
                       "        /*0010*/              @!P0 LDS.U16 R2, [R3+0x10] ;          /* 0x0000100003027984 */\n")
    assert list(A.sass_instructions(listing)) == [("kern", "0000", "LDC R1, c[0x0][0x28]", "LDC"),
                                                   ("kern", "0010", "@!P0 LDS.U16 R2, [R3+0x10]", "LDS.U16")]
    counts = A.sass_opcode_counts(listing)["kern"]
    assert counts["LDS"] == 1 and sum(counts.values()) == 1


def test_sass_opcode_counts_skip_never_executed_padding(tmp_path):
    """@!PT (never true) marks padding that never runs: not counted; a real LDS, predicated or not, is.
    The recorded rungs 5-6 (ladder_cp_async, ladder_mma_sync) have only such LDS: lesson 05, appendix E."""
    listing = tmp_path / "k.sass"
    listing.write_text("\t\tFunction : kern\n"
                       "        /*0000*/                   LDS R2, [R3] ;                     /* 0x0000000003027984 */\n"
                       "        /*0010*/              @!P1 LDS.U16 R4, [R3+0x10] ;          /* 0x0000100003047984 */\n"
                       "        /*0020*/              @!PT LDS RZ, [RZ] ;                   /* 0x00000000ff00798c */\n"
                       "        /*0030*/              @!PT LDGSTS.E.BYPASS.128 [R1], desc[UR6][R2.64] ;  /* 0x0 */\n")
    assert len(list(A.sass_instructions(listing))) == 4                 # listed, but
    counts = A.sass_opcode_counts(listing)["kern"]
    assert counts["LDS"] == 2 and counts["LDGSTS"] == 0 and sum(counts.values()) == 2
    ladder = helpers.results.RESULTS_DIR / "build-nvidia-h200" / "ladder.sm_90.sass"
    padding = {}
    for kernel, _, text, op in A.sass_instructions(ladder):
        if op.split(".")[0] == "LDS":
            padding.setdefault(kernel, []).append(text)
    counts = A.sass_opcode_counts(ladder)
    for k in ("ladder_cp_async", "ladder_mma_sync"):
        assert padding[k] and set(padding[k]) == {"@!PT LDS RZ, [RZ]"}, k
        assert counts[k]["LDS"] == 0 and counts[k]["LDGSTS"] > 0 and counts[k]["LDSM"] > 0
    assert all(counts[k]["LDS"] == 0 for k in counts)                   # rungs 2-6 read fragments with LDSM


# --------------------------------------------------------------------------- the tile order (lesson 6: the rung files' tile_of)
@pytest.mark.parametrize("order", ["plain", "grouped"])
@pytest.mark.parametrize("cluster", [1, 2])
def test_tile_order_visits_every_tile_once(order, cluster, subtests):
    for tm, tn in [(64, 32), (32, 16), (3, 5), (1, 32), (17, 9), (16, 16)]:
        with subtests.test(tiles=(tm, tn)):
            t = analysis.tile_order(tm, tn, order, cluster=cluster)
            units_m = -(-tm // cluster)
            assert len(t) == units_m * cluster * tn and len(set(t)) == len(t)
            assert {x for x in t if x[0] < tm} == {(i, j) for i in range(tm) for j in range(tn)}
            pairs = [t[i:i + cluster] for i in range(0, len(t), cluster)]     # a cluster's tiles share B's column
            assert all(len({tn_ for _, tn_ in p}) == 1 and [a for a, _ in p] == list(range(p[0][0], p[0][0] + cluster))
                       for p in pairs)


def test_grouped_order_halves_the_wave_footprint_at_8192():
    plain = analysis.wave_footprint(analysis.tile_order(64, 32, "plain")[:132])
    grouped = analysis.wave_footprint(analysis.tile_order(64, 32, "grouped")[:132])
    assert plain["requested_per_k"] == grouped["requested_per_k"]
    assert grouped["distinct_per_k"] < 0.65 * plain["distinct_per_k"]
    assert analysis.tile_order(16, 4, "grouped")[:3] == [(0, 0), (1, 0), (2, 0)]
    assert analysis.tile_order(16, 4, "plain")[:3] == [(0, 0), (0, 1), (0, 2)]


def test_epilogue_store_wavefronts():
    """Rung 13's staging stores: 8 rows of 32 bytes hit the same 8 banks without the swizzle; 2 wavefronts with it."""
    assert analysis.epilogue_store_wavefronts(False) == 8 and analysis.epilogue_store_wavefronts(True) == 2


# --------------------------------------------------------------------------- lesson 6, rungs 14-15
def test_stmatrix_puts_every_value_where_its_accumulator_lane_holds_it():
    """Rung 14's stmatrix.x4 replay: the 32 lanes x 8 values cover the warp's 16 x 16 piece exactly once, and
    each element is stored by the lane whose wgmma accumulators hold it (no shuffle is needed)."""
    from helpers import analysis as A

    pieces = A.stmatrix_pieces()
    cells = [c for lane in pieces for c in lane]
    assert sorted(cells) == [(r, c) for r in range(16) for c in range(16)]
    assert all(A.accumulator_owner(r, c) == lane for lane, cs in enumerate(pieces) for r, c in cs)
    assert pieces[0][:4] == [(0, 0), (0, 1), (8, 0), (8, 1)] and pieces[5][4:6] == [(1, 10), (1, 11)]


def test_split_k_units_fill_the_grid_only_when_split():
    from helpers import analysis as A
    from helpers.kernels import split_k_plan

    one = A.split_k_units(128, 8192, 8192, 132, 1)
    four = A.split_k_units(128, 8192, 8192, 132, split_k_plan(128, 8192, 8192)[0])
    assert sum(1 for u in one if u) == 32 and sum(1 for u in four if u) == 128
    assert one[0] == [(0, 0, 8192)] and four[32] == [(0, 2048, 4096)] and four[127] == [(31, 6144, 8192)]
    assert sorted(k for u in four for t, k0, k1 in u if t == 5 for k in (k0, k1)) == [0, 2048, 2048, 4096, 4096,
                                                                                     6144, 6144, 8192]


def test_vec16_copy_map_covers_each_tile_once_as_rung4_indexes_it():
    d = analysis.kernel_defines("ladder.cu")
    for rows, cols in ((d["BM"], d["BK"]), (d["BK"], d["BN"])):
        m = analysis.vec16_copy_map(rows, cols, d["NTHREADS"])
        covered = np.zeros((rows, cols), dtype=int)
        for t, p, r, c in m:
            covered[r, c:c + 8] += 1
            v = t + p * d["NTHREADS"]                          # the kernel's loop: v = tid, tid + NTHREADS, ...
            assert (r, c) == (v // (cols // 8), (v % (cols // 8)) * 8)
        assert (covered == 1).all()
    t0 = [(r, c) for t, p, r, c in analysis.vec16_copy_map(d["BM"], d["BK"], d["NTHREADS"]) if t == 5]
    assert t0 == [(1, 8), (65, 8)]                              # thread 5: row 5 // 4, chunk 5 % 4, then 64 rows lower
    with pytest.raises(ValueError):
        analysis.vec16_copy_map(128, 30, 256)
