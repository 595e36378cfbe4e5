"""Lesson 6's kernel code outside the ladder (lab/labkit/rungs.py): rungs 27-28 and 31 as entries of the kernels they
launch, rungs 27-28's per-shape tile, rung 31's index arithmetic, and the Hilbert tile order, without a GPU."""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import helpers
from helpers import analysis
from helpers import kernels as K
import labkit.rungs as LR

ROOT = Path(__file__).resolve().parents[2]
# the file rungs 27, 28 and 31 are built from (LR.RESEARCH_FILE, relative to kernels/): the templated file rungs 8-31
# were built from until 2026-12-07, frozen
HOPPER_CU = (ROOT / "kernels" / LR.RESEARCH_FILE).resolve()
HSRC = HOPPER_CU.read_text()


def _hdefine(name):
    return int(re.search(rf"^#define {name} (\d+)", HSRC, re.M).group(1))


def _template_call(name, text=HSRC):
    body = text[text.index(f"void {name}(const"):]
    call = re.search(r"ws_gemm<([^>]*)>", body).group(1)
    return [x.strip() for x in call.split(",")]




def test_the_rungs_outside_the_ladder_are_registered_for_the_probes():
    assert set(K.PENDING) == {27, 28, 31} and not set(K.PENDING) & set(K.ALL_RUNGS)
    assert all(K.rung_entry(k) == LR.PENDING[k] for k in (27, 28, 31))      # (lab.labkit.rungs registers them too)
    assert HOPPER_CU == ROOT / "lab" / "kernels" / "hopper_sm90a_research.cu"
    for k, r in LR.PENDING.items():                  # built from the lab's file, which defines each kernel
        assert r.file == LR.RESEARCH_FILE and f'extern "C" __global__ void {r.name}(const' in HSRC, k
    assert helpers.launch.PER_SHAPE["tile"][1].__qualname__ == "tall_build"


def test_tall_choice_builds_the_256_row_tile_only_where_it_saves_a_tenth_of_the_waves_times_area():
    """Rungs 27-28's tile with the H200's 66 clusters of 2 of either tile: at 5000^3 the 256 x 152 tile (330 units, 5
    whole waves; rung 14's 400 units take 7), at 3000^3 256 x 144; rung 14's 128 x 256 at 2048^3, 4096^3, 6000^3,
    7000^3, 8192^3 and at M = 128. Shared memory: 3 stages of 56 KB beside rung 14's epilogue and slack, 4 of 48 KB at
    128 wide; every width within the 227 KB a block may have on sm_90."""
    h200 = lambda: (66, 66)   # noqa: E731
    t = lambda m, n=None: LR.tall_choice(m, n or m, h200)   # noqa: E731
    assert (t(5000), t(3000)) == ((256, 152), (256, 144))
    assert [t(n) for n in (2048, 4096, 6000, 7000, 8192)] == [(128, 256)] * 5 and t(128, 8192) == (128, 256)
    assert (LR.tall_waves(5000, 5000, 152, 66), K.cluster_waves(5000, 5000, 2, 66)) == (5, 7)
    assert LR.tall_smem(152) == 3 * (32768 + 3 * 8192) + K.HOPPER_STORE_SMEM - 4 * K.HOPPER_STAGE
    assert LR.tall_smem(128) == K.HOPPER_STORE_SMEM and LR.tall_stages(128) == 4 and LR.tall_stages(136) == 3
    assert max(LR.tall_smem(w) for w in LR.TALL_WIDTHS) <= 227 * 1024


def test_rungs_27_and_28_are_rung_14s_and_13s_template_call_with_the_tall_tile():
    """Rungs 27-28's kernels are rung 14's (13's) template call (persistent, grouped, clusters of 2, a TMA store; FP16
    C for 27, FP32 for 28) with TALL_M, TALL_N, TALL_STAGES as the block tile and stages, whose defaults in ws_gemm are
    HBM x HBN and HSTAGES: so TALL_M=128 TALL_N=256 (4 stages) is rung 14's (13's) kernel. The entry is the 256 x 152
    build (A's box 256 rows)."""
    assert "int BM = HBM, int BN = HBN, int STAGES = HSTAGES," in HSRC
    assert (_hdefine("HBM"), _hdefine("HBN"), _hdefine("HSTAGES"), _hdefine("CLUSTER_M")) == (128, 256, 4, 2)
    for k, base in ((27, 14), (28, 13)):
        r, b = LR.PENDING[k], K.ALL_RUNGS[base]
        assert r.per_shape == "tile" and r.base == {27: 25, 28: 26}[k]
        assert (r.emulate, r.out_dtype, r.c_box, r.cluster) == (b.emulate, b.out_dtype, b.c_box, b.cluster)
        assert (r.block_tile, r.tma_boxes, r.dyn_smem) == ((256, 152), ((256, 64), (64, 64)), LR.tall_smem(152))
        args, base_args = _template_call(r.name), _template_call(b.name)
        assert base_args[:4] == ["true", "ORDER_GROUPED", "CLUSTER_M", "true"]
        half = {27: "true", 28: "false"}[k]
        assert (base_args + ["false"])[4] == half
        assert args == ["true", "ORDER_GROUPED", "2", "true", half, "false", "false", "TALL_M", "TALL_N", "TALL_STAGES"]
        assert f"TALL_DIMS {r.name}(" in HSRC
    assert "#define TALL_STAGES (TALL_M == 128 || TALL_N <= 128 ? 4 : 3)" in HSRC


def test_build_for_rung_27_builds_the_tall_tile_where_tall_choice_takes_it(monkeypatch):
    """helpers.launch.build_for on rung 27 (66 clusters of 2 resident, as the H200): at 5000^3 the 256 x 152 build
    (-DTALL_M=256 -DTALL_N=152 after the variant's own options, that tile's shared memory and A's 256-row box); at
    4096^3 rung 14's (-DTALL_M=128 -DTALL_N=256, rung 14's shared memory, block tile and box of A); a build that
    names its tile is left as given."""
    from helpers import launch

    monkeypatch.setattr(launch, "resident_blocks", lambda spec, source=None, options=(): (132, "h200"))
    r27 = LR.PENDING[27]
    b, opts = launch.build_for(r27, 5000, 5000, 10000, 10000, options=("-DWG_UNIFORM=1",))
    assert opts == ("-DWG_UNIFORM=1", "-DTALL_M=256", "-DTALL_N=152") and b.name == r27.name
    assert (b.block_tile, b.dyn_smem, b.tma_boxes, b.cluster) == ((256, 152), LR.tall_smem(152),
                                                                  ((256, 64), (64, 64)), (2, 1, 1))
    b, opts = launch.build_for(r27, 4096, 4096, 8192, 8192)
    assert opts == ("-DTALL_M=128", "-DTALL_N=256") and (b.block_tile, b.dyn_smem, b.tma_boxes) == (
        (128, 256), K.HOPPER_STORE_SMEM, ((128, 64), (64, 64)))
    assert launch.build_for(r27, 5000, 5000, 10000, 10000, options=("-DTALL_N=160",)) == (r27, ("-DTALL_N=160",))


@pytest.mark.skipif("LAB_NVCC" not in os.environ, reason="nvcc builds of the whole file: LAB_NVCC=1 make lab-test")
def test_tall_tile_compiles_at_its_widths_without_spills_or_serialized_wgmma(tmp_path):
    """nvcc: rungs 27-28 built 128, 152 and 192 wide (two 64-row slices: 128 to 192 accumulators a consumer thread)
    without spills, stack or ptxas's performance-loss notes."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    for width in (128, 152, 192):
        p = subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o",
                            str(tmp_path / "k.cubin"), "-Xptxas", "-v", f"-I{ROOT / 'kernels'}", f"-DTALL_N={width}",
                            str(HOPPER_CU)],
                           capture_output=True, text=True, timeout=300)
        out = p.stdout + p.stderr
        assert p.returncode == 0 and "performance loss" not in out.lower(), out
        entries = dict((e[0], e[1:]) for e in re.findall(
            r"Compiling entry function '(\w+)'.*?(\d+) bytes stack frame, (\d+) bytes spill stores, "
            r"(\d+) bytes spill loads", out, re.S))
        assert entries["hopper_tall_tile"] == entries["hopper_tall_tile_f32c"] == ("0", "0", "0"), (width, out)


def test_ct_gain_is_the_wave_model_of_rung_29_over_rung_25():
    h200 = lambda: (30, 66)   # noqa: E731  (clusters of 4 and of 2 the H200's driver runs at once)
    assert (round(LR.ct_gain(5000, 5000, h200), 2), LR.ct_gain(4096, 4096, h200)) == (1.12, 0.8)


def test_rung_31_has_the_kernels_tile_and_its_reasoning_computed():
    """Rung 31 (hopper_ct_pair_n): the entry's tile, A's box (half the tile's rows, rounded up to 8 so that each half
    starts on a 1024-byte swizzle atom), C's 8-row box and shared memory (two halves in rung 29's 160-row stage) are the
    kernel's; its template call is rung 29's with PAIR_N; the numbers of its reasoning, computed; its prediction is
    the probe's."""
    from lab.probes.ct_tile import PAIR_N_PREDICTED

    r, r29 = LR.PENDING[31], K.ALL_RUNGS[29]
    assert r.base == 29 and not r.per_shape
    assert (r.emulate, r.out_dtype, r.cluster) == (r29.emulate, r29.out_dtype, r29.cluster)
    half = (LR.CTN_M // 2 + 7) // 8 * 8
    assert _hdefine("CTN_M") == LR.CTN_M == 152 and half == 80 and half * 128 % 1024 == 0 and 2 * half <= K.CT_M
    assert (r.block_tile, r.tma_boxes, r.c_box) == ((152, 256), ((80, 64), (64, 64)), (8, 64))
    assert r.dyn_smem == r29.dyn_smem == K.ct_smem(160) and 152 % 32 and 152 % 8 == 0
    call, call29 = _template_call(r.name), _template_call(r29.name)                 # rung 29 as ws_gemm built it
    assert call29[7] == "CT_M" and call29[4] == call29[-1] == "true"                 # FP16 C, the C^T tile
    assert call == call29[:7] + ["CTN_M"] + call29[8:] + ["true"]                    # ... CTN_M rows high, PAIR_N
    units = math.ceil(5000 / 152) * math.ceil(math.ceil(5000 / 256) / 2)
    assert (math.ceil(5000 / 152), math.ceil(5000 / 256), units, -(-units // 66)) == (33, 20, 330, 5)
    assert (f"{5 * 152 / 128:.2f}", f"{6.25 / (5 * 152 / 128):.2f}") == ("5.94", "1.05")
    assert (round(152 * 256 / (80 + 256)), round(160 * 256 / (160 + 128))) == (116, 142)
    u31 = lambda n: math.ceil(n / 152) * math.ceil(math.ceil(n / 256) / 2)          # noqa: E731
    u29 = lambda n: math.ceil(math.ceil(n / 160) / 2) * math.ceil(n / 256)          # noqa: E731
    assert (u31(4096), -(-u31(4096) // 66), u29(4096), -(-u29(4096) // 66)) == (216, 4, 208, 4)
    assert (u31(5496), -(-u31(5496) // 66), u29(5496), -(-u29(5496) // 66)) == (407, 7, 396, 6)
    assert f"{6 * 1.25 / (7 * 152 / 128):.2f}" == "0.90" and f"{1.25 / (152 / 128):.2f}" == "1.05"
    assert r.predicted_gain == PAIR_N_PREDICTED[5000] == PAIR_N_PREDICTED[4096] == 1.03 and PAIR_N_PREDICTED[5496] == 0.88


def test_rung_31s_pairs_along_n_cover_every_tile_and_row_once():
    """Rung 31's index arithmetic (the kernel's lines, checked to be there, and the same arithmetic here): units of two
    tiles side by side along N walked as tile_of walks units (analysis.tile_order, no cluster along M), CTA rank r
    taking tile column 2 un + r; every tile of C is some CTA's exactly once at every size lab/probes/ct_tile.py
    --pair-n checks or times (an odd number of tile columns leaves the last pair's second CTA without a tile). Its rows
    of A: the two 80-row halves, the second loaded only where it starts above M, cover every row of the tile inside A.
    Its stores: 8-row boxes in 5 steps of 32 rows, none past the tile's 152 rows."""
    from lab.probes.ct_tile import ODD

    flat = " ".join(HSRC.split())
    for line in ("const int units_n = PAIR_N ? (tiles_n + 1) / 2 : tiles_n, part_units = units_m * units_n;",
                 "tile_of<ORDER, 1>(tile, units_m, units_n, 0, tm, tn); tn = 2 * tn + (int)rank;",
                 "const int halves = PAIR_N && tm * BM + A_HALF >= M ? 1 : 2;", "if ((int)rank < halves)",
                 "if (b * SR + 8 * h8 < BM && tm * BM + b * SR + 8 * h8 < M)",
                 "const int nb = PAIR_N && tn * BN >= N ? 0 : b_boxes_in<BN>(tn, N);"):
        assert line in flat, line
    bm, half = LR.CTN_M, (LR.CTN_M // 2 + 7) // 8 * 8

    def b_boxes_in(tn, N):                       # the kernel's, with C's division (it truncates toward zero)
        q = N - tn * 256 + 63
        return min(4, abs(q) // 64 * (1 if q >= 0 else -1))

    def stage_bytes(tm, tn, M, N, guard=True):   # what the producer's expect_tx asks for (A's halves + B's boxes)
        nb = 0 if guard and tn * 256 >= N else b_boxes_in(tn, N)
        return (1 if tm * bm + half >= M else 2) * half * 64 * 2 + nb * 64 * 64 * 2
    for M, N, _ in [*ODD, (5000, 5000, 5000), (4096, 4096, 4096), (5496, 5496, 5496)]:
        tiles_m, tiles_n = -(-M // bm), -(-N // 256)
        units_n = (tiles_n + 1) // 2
        got = [(tm, 2 * un + r) for tm, un in analysis.tile_order(tiles_m, units_n, "grouped", 8, 1) for r in (0, 1)]
        inside = [t for t in got if t[1] < tiles_n]
        assert len(got) == 2 * tiles_m * units_n and sorted(inside) == sorted(set(inside))
        assert set(inside) == {(i, j) for i in range(tiles_m) for j in range(tiles_n)}, (M, N)
        assert (len(got) - len(inside)) == tiles_m * (tiles_n % 2)
        # every CTA's stage expects A's bytes at least, B's only inside N (without the guard, the second CTA past N
        # would count negative boxes of B)
        assert all(stage_bytes(tm, tn, M, N) >= half * 64 * 2 for tm, tn in got)
        assert all(stage_bytes(tm, tn, M, N) == stage_bytes(tm, tn, M, N, guard=False) for tm, tn in inside)
        assert all(stage_bytes(tm, tn, M, N, guard=False) < stage_bytes(tm, tn, M, N)
                   for tm, tn in got if tn >= tiles_n and N % 256 <= 192)
        for tm in range(tiles_m):
            halves = 1 if tm * bm + half >= M else 2
            loaded = {r for h in range(halves) for r in range(h * half, (h + 1) * half)}
            assert {r for r in range(bm) if tm * bm + r < M} <= loaded, (M, tm)
    stored = [32 * b + 8 * h for b in range(-(-bm // 32)) for h in range(4) if 32 * b + 8 * h < bm]
    assert stored == list(range(0, bm, 8)) and -(-bm // 32) == 5
    assert any(M < half for M, _, _ in ODD) and any(-(-N // 256) % 2 for _, N, _ in ODD)


# --------------------------------------------------------------------------- the Hilbert order (TILE_ORDER=1)
@pytest.mark.parametrize("cluster", [1, 2])
def test_hilbert_order_visits_every_tile_once(cluster):
    for tm, tn in [(64, 32), (32, 16), (3, 5), (1, 32), (17, 9), (16, 16)]:
        t = LR.hilbert_order(tm, tn, cluster=cluster)
        units_m = -(-tm // cluster)
        assert len(t) == units_m * cluster * tn and len(set(t)) == len(t)
        assert {x for x in t if x[0] < tm} == {(i, j) for i in range(tm) for j in range(tn)}
        pairs = [t[i:i + cluster] for i in range(0, len(t), cluster)]     # a cluster's tiles share B's column
        assert all(len({tn_ for _, tn_ in p}) == 1 and [a for a, _ in p] == list(range(p[0][0], p[0][0] + cluster))
                   for p in pairs)


def test_hilbert_order_walks_neighbours_and_falls_back_to_grouped():
    """On a square power-of-two grid of units every step goes to a neighbouring unit and each quarter of the walk fills
    one quadrant; elsewhere it is the grouped order; the first wave at 4096^3 and 8192^3 (66 units of 2 tiles on 132
    SMs) spans about as many rows of A and columns of B as GROUP_M=16's, fewer than the grouped order's columns of B.
    Bad arguments name what is wrong."""
    for n in (1, 2, 4, 16, 32):
        pts = [LR.hilbert_point(n, d) for d in range(n * n)]
        assert len(set(pts)) == n * n and pts[0] == (0, 0)
        assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(pts, pts[1:]))
        q = n * n // 4
        for k in range(4 if n > 1 else 0):                              # a quarter of the walk, one quadrant
            assert len({(x // (n // 2), y // (n // 2)) for x, y in pts[k * q:(k + 1) * q]}) == 1
    assert LR.hilbert_order(30, 15, cluster=2) == analysis.tile_order(30, 15, "grouped", cluster=2)
    for tiles_m, tiles_n in ((32, 16), (64, 32)):                     # 4096^3, 8192^3: 128 x 256 tiles, clusters of 2
        hilbert = LR.hilbert_order(tiles_m, tiles_n, cluster=2)
        assert hilbert != analysis.tile_order(tiles_m, tiles_n, "grouped", cluster=2)
        wave = {g: analysis.wave_footprint(analysis.tile_order(tiles_m, tiles_n, "grouped", g, cluster=2)[:132])
                for g in (8, 16)}
        h = analysis.wave_footprint(hilbert[:132])
        assert h["b_cols"] < wave[8]["b_cols"] and h["distinct_per_k"] <= 1.1 * wave[16]["distinct_per_k"]
    for bad in ((3, 0), (4, 16), (0, 0)):
        with pytest.raises(ValueError, match="power-of-two"):
            LR.hilbert_point(*bad)


def test_the_kernels_hilbert_unit_is_the_model(tmp_path):
    """The research file's hilbert_unit (TILE_ORDER=1, lab/kernels/hopper_sm90a_research.cu), its own text compiled
    for the host (g++), gives the points of hilbert_point for every d of 16 x 16 and 32 x 32, the grids of units at
    4096^3 and 8192^3."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler (g++) on this machine")
    start = HSRC.index("__device__ __forceinline__ void hilbert_unit(")
    body = HSRC[start:HSRC.index("\n}\n", start) + 3].replace("__device__ __forceinline__ ", "static ")
    prog = tmp_path / "h.cpp"
    prog.write_text(body + "#include <cstdio>\nint main() { for (int n = 16; n <= 32; n *= 2) for (int d = 0; "
                    "d < n * n; ++d) { int x, y; hilbert_unit(n, d, x, y); std::printf(\"%d %d %d %d\\n\", n, d, x, y); } }\n")
    subprocess.run([cxx, "-O1", "-o", str(tmp_path / "h"), str(prog)], check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "h")], check=True, capture_output=True, text=True).stdout.split("\n")
    got = [tuple(map(int, line.split())) for line in out if line]
    assert len(got) == 16 * 16 + 32 * 32
    assert all((x, y) == LR.hilbert_point(n, d) for n, d, x, y in got)
