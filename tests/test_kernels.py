"""The kernel registry (helpers.kernels): entries match their .cu files, lookups, skips, the one check."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from conftest import full_only

import helpers
import helpers.numerics
from helpers import CourseError, UnknownKernelError
from helpers import display
from helpers import kernels as K

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
LADDER = KERNEL_DIR / "ladder.cu"
LADDER7 = KERNEL_DIR / "ladder_sm90a.cu"
CLASSIC = [r for r in K.RUNGS.values() if r.file == "ladder.cu"]


def _define(name, path=LADDER):
    m = re.search(rf"^#define {name} (\d+)", path.read_text(), re.M)
    return int(m.group(1))


# --------------------------------------------------------------------------- entries and their files
def test_every_entry_is_in_its_file():
    for k in K.KERNELS.values():
        src = (KERNEL_DIR / k.file).read_text()
        assert re.search(rf'extern "C" __global__ void (__launch_bounds__\([^)]*\) )?{k.name}\(', src), k.name
        assert k.in_dtype and k.out_dtype and k.output in ("fp32", "fp16")


def test_seed_kernels_keep_their_launch_shape():
    """Lessons 1-3: one thread per C element (FP32), one warp per 16x16 tile, 8 warps stacked in M (WMMA)."""
    fp32 = K.KERNELS["gemm_fp32_kernel"]
    assert fp32.block == (16, 16) and fp32.grid(33, 49) == (4, 3) and fp32.multiple == 1
    for k in K.KERNELS.values():
        if k.block == (32, 8):
            assert k.grid(200, 136) == (math.ceil(136 / 16), math.ceil(200 / 128)) and k.multiple == 16
    assert [k.name for k in K.KERNELS.values() if k.sweep] == [
        "gemm_fp32_kernel", "wmma_gemm_naive", "wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel",
        "wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"]


def test_lesson3_kernels_registered():
    for name, inputs, dt, block in (("wmma_bf16_gemm_kernel", "bf16", "uint16", 16),
                                    ("wmma_tf32_gemm_kernel", "tf32", "float32", 4)):
        spec = helpers.KERNELS[name]
        assert spec.inputs == inputs and spec.in_dtype == dt and spec.min_cc == (8, 0)
        assert spec.acc_block == block and spec.file == "mixed_precision.cu"
        assert helpers.display.kernel_source("mixed_precision.cu", name)
    assert K.KERNELS["wmma_fp16acc_gemm_kernel"].out_dtype == "float16"


def test_registry_is_a_ladder():
    assert list(K.RUNGS) == [1, 2, 3, 4, 5, 6, 7]            # lesson 5's ladder
    assert list(K.HOPPER_RUNGS) == [*range(8, 27), 29, 30]   # lesson 6's (tests/test_hopper.py)
    assert K.ALL_RUNGS == {**K.RUNGS, **K.HOPPER_RUNGS}
    for r in K.RUNGS.values():
        assert r.predicted_gain > 0 and r.idea and r.why
        assert r.file == {1: "wmma.cu", 7: "ladder_sm90a.cu"}.get(r.rung, "ladder.cu")
        assert r is K.KERNELS[r.name]                      # a rung is a registry entry, not a copy
    assert [r.rung for r in K.RUNGS.values() if r.isolate] == [7]
    assert K.rung("ladder_mma_sync") is K.RUNGS[6] and K.rung(3) is K.RUNGS[3] and K.rung(K.RUNGS[2]) is K.RUNGS[2]


def test_every_rung_kernel_is_in_its_file():
    src = LADDER.read_text()
    for r in CLASSIC:
        assert re.search(rf'extern "C" __global__ void {r.name}\(', src), r.name
        assert re.search(rf'__launch_bounds__\(NTHREADS, 2\) {r.name}\(', src), r.name
    assert 'extern "C" __global__ void ladder_wgmma_tma(' in LADDER7.read_text()


def test_registry_matches_kernel_constants():
    bm, bn, bk, stages, pad = (_define(n) for n in ("BM", "BN", "BK", "STAGES", "PAD"))
    assert _define("NTHREADS") == 256
    assert K.PIPE_SMEM == K.ladder_smem_bytes(stages, pad, bk, bm, bn) == stages * (bm * (bk + pad) + bk * (bn + pad)) * 2
    assert K.PIPE_SMEM > helpers.launch.DEFAULT_SMEM_LIMIT      # needs the opt-in, as the launcher does
    for r in CLASSIC:
        assert (r.tile_mn, r.tile_k, r.block_tile) == (bm, bk, (bm, bn))
        assert r.block == (256, 1)
        assert r.dyn_smem == (K.PIPE_SMEM if r.rung >= 5 else 0)
        assert r.grid(1000, 1064) == (9, 8)
    assert [K.RUNGS[k].smem_static for k in (2, 3, 4)] == [(bm * bk + bk * bn) * 2] + [K.ladder_smem_bytes(pad=pad)] * 2
    assert K.RUNGS[5].min_cc == K.RUNGS[6].min_cc == (8, 0)


def test_rung7_constants():
    bm, bn, bk, st = (_define(n, LADDER7) for n in ("HBM", "HBN", "HBK", "HSTAGES"))
    r = K.RUNGS[7]
    assert (r.block_tile, r.tile_k, r.tile_mn) == ((bm, bn), bk, max(bm, bn))
    assert r.tma_boxes == ((bm, bk), (bn, bk)) and r.b_transposed and r.only_cc == (9, 0)
    assert K.WGMMA_SMEM == st * (bm * bk + bn * bk) * 2 + 1024 + 64
    assert bk * 2 == 128                      # one 128-byte swizzle row per tile row
    assert K.WGMMA_SMEM <= 227 * 1024         # the most a block may opt in to on sm_90
    assert r.grid(1024, 1280) == (5, 8)


def test_padded_sizes():
    assert K.RUNGS[4].padded(130, 7, 40) == (256, 128, 64)
    assert K.RUNGS[1].padded(130, 7, 40) == (144, 16, 48)
    assert K.KERNELS["gemm_fp32_kernel"].padded(5, 7, 3) == (5, 7, 3)


# --------------------------------------------------------------------------- lookups
@pytest.mark.parametrize("key", ["wmma_gemm_nave", 0, 99, None, 2.0, True])
def test_unknown_kernel_is_a_course_error_and_a_key_error(key):
    with pytest.raises(UnknownKernelError) as ei:
        K.lookup(key)
    assert isinstance(ei.value, KeyError) and isinstance(ei.value, CourseError)
    msg = str(ei.value)
    assert msg.startswith(f"no kernel {key!r} in the registry") and "\nFix: " in msg
    assert all(name in msg for name in K.KERNELS) and "7 (ladder_wgmma_tma)" in msg
    assert "13 (hopper_tma_store)" in msg


@pytest.mark.parametrize("key", [99, "gemm_fp32_kernel", "nope"])
def test_unknown_rung(key):
    with pytest.raises(KeyError) as ei:
        K.rung(key)
    assert isinstance(ei.value, UnknownKernelError)
    assert str(ei.value).startswith(f"no rung {key!r} on the ladder. Rungs: 1 (wmma_gemm_naive), 2 ")
    assert "rung=" in ei.value.fix


def test_gemm_with_an_unknown_name_says_which_exist():
    A = helpers.random_matrix(16, 16, seed=0).astype("float16")
    with pytest.raises(KeyError, match="wmma_mixed_gemm_kernel"):
        helpers.gemm("wmma_mixed", A, A)


# --------------------------------------------------------------------------- where a kernel runs
def test_skip_message():
    R = K.RUNGS
    assert R[5].skip_message((7, 5)).startswith("rung 5 (ladder_cp_async) skipped")
    assert R[5].skip_message((7, 5)).endswith("it needs compute capability 8.0 (sm_80), this GPU is 7.5.")
    assert R[6].skip_message((9, 0)) is None and R[2].skip_message((7, 0)) is None
    assert "sm_90a" in R[7].skip_message((10, 0)) and "sm_90a" in R[7].skip_message((8, 6))
    assert R[7].skip_message((9, 0)) is None and R[7].skip_message(None) is None
    assert K.KERNELS["wmma_bf16_gemm_kernel"].skip_message((7, 5)).startswith("kernel wmma_bf16_gemm_kernel skipped")


def test_withdrawal_skips_on_every_backend(monkeypatch):
    monkeypatch.setitem(K.WITHDRAWN, "ladder_wgmma_tma", "failed on the H200")
    assert K.RUNGS[7].skip_message((9, 0)) == "rung 7 (ladder_wgmma_tma) withdrawn: failed on the H200"
    assert K.RUNGS[7].skip_message(None).endswith("failed on the H200")


# --------------------------------------------------------------------------- the check
def test_check_is_check_gemm_with_the_entrys_formats(monkeypatch):
    """Every entry's check() goes through one call of helpers.check.check_gemm, with these keywords
    (its emulation as the model; TF32 kernels round their inputs with cvt.rna on the device)."""
    import helpers.check
    from helpers.formats import round_tf32_rna

    seen = []
    monkeypatch.setattr(helpers.check, "check_gemm", lambda C, A, B, **kw: seen.append(kw) or "checked")
    for k in K.KERNELS.values():
        assert k.check("C", "A", "B", backend="test") == "checked"
        assert seen[-1] == {"inputs": k.inputs, "acc": k.acc, "output": k.output, "acc_rounding": k.acc_rounding,
                            "block": k.acc_block, "name": k.name, "backend": "test", "model": k.emulate,
                            "values": round_tf32_rna if k.inputs == "tf32" else None}
    assert seen[1]["acc_rounding"] == "truncate" and seen[0]["acc_rounding"] == "nearest"


# --------------------------------------------------------------------------- lesson 6's rungs (kernels/hopper_rungNN_sm90a.cu)
HOPPER_CU = KERNEL_DIR / K.hopper_rung_file(13)     # rungs 9-16's tile and ring, and from rung 13 on their C buffers


def _hdefine(name):
    return _define(name, HOPPER_CU)


def test_lesson6_rungs_are_registry_entries_one_idea_each():
    assert list(K.HOPPER_RUNGS) == [*range(8, 27), 29, 30]      # 27-28 (the 256-row tile) tried, pending
    assert list(K.hopper_ladder()) == [7, *range(8, 27), 29, 30] and K.hopper_ladder()[7] is K.RUNGS[7]
    for r in K.HOPPER_RUNGS.values():
        assert r is K.KERNELS[r.name] and r.lesson == 6
        assert r.file == f"hopper_rung{r.rung:02d}_sm90a.cu"
        # rung 17 is for skinny shapes: where the chip is full (4096^3, what predicted_gain is at) it predicts a loss
        assert r.idea and (0.95 <= r.predicted_gain <= 2.0 if r.rung != 17 else r.predicted_gain == 0.6)
        assert r.only_cc == (9, 0) and r.isolate and not r.b_transposed and not r.sweep
        out = "fp16" if 14 <= r.rung <= 17 or r.rung in (19, 21, 23, 25, 29) else "fp32"   # 14-17, 19, 21, 23, 25, 29: FP16 C, as cupy.matmul
        assert (r.inputs, r.acc, r.output, r.acc_block, r.acc_rounding) == ("fp16", "fp32", out, 16, "truncate")
        if r.rung <= 13 or r.rung in (18, 20, 22, 24, 26, 30):
            assert r.emulate is K.RUNGS[7].emulate              # rung 7's arithmetic, rung 7's model
        else:                                                   # ... rounded to FP16 at the end (and split)
            assert r.emulate.output == "fp16" and r.emulate.model is K.RUNGS[7].emulate.model
            assert (r.emulate.split is None) == (r.rung != 15) and r.split_k == (r.rung in (15, 16))
            assert (r.emulate.split_tiles is None) == (r.rung != 16) and r.tail_split == (r.rung == 16)
        assert (r.tma_boxes, r.block_tile) == ((((128, 64), (64, 64)), (128, 256)) if r.rung < 17 or 24 < r.rung < 29
                                               else (((64, 64), (64, 64)), (64, 128)) if r.rung < 29   # 29-30: C^T
                                               else (((K.CT_M, 64), (64, 64)), (K.CT_M, 256)))
        assert (r.tile_mn, r.tile_k) == (8, 8)                  # TMA: 16-byte rows; the rest is out-of-bounds fill
    R = K.HOPPER_RUNGS
    assert all(R[k].block == (256, 1) for k in (8, *range(19, 25)))
    assert all(R[k].block == (384, 1) for k in (*range(9, 19), 25, 26, 29, 30))
    assert [k for k in R if R[k].persistent] == [*range(10, 27), 29, 30]
    assert [k for k in R if R[k].cluster] == [12, 13, 14, *range(16, 27), 29, 30] and R[12].cluster == (2, 1, 1)
    assert (R[8].cluster_ctas, R[12].cluster_ctas, R[25].cluster_ctas) == (1, 2, 4)     # CTAs per cluster
    assert [k for k in R if R[k].c_box] == [*range(13, 27), 29, 30]
    assert (R[29].c_box, R[30].c_box) == ((32, 64), (16, 32))      # the C^T epilogue's boxes: 32 rows FP16, 16 FP32
    assert R[13].c_box == R[18].c_box == R[20].c_box == R[22].c_box == R[24].c_box == R[26].c_box == (64, 32)
    assert R[19].c_box == R[21].c_box == R[23].c_box == R[25].c_box == (64, 64)
    assert {k: R[k].base for k in R if R[k].base is not None} == {19: 17, 21: 19, 22: 20, 23: 21, 24: 22, 25: 14,
                                                                26: 13, 29: 25, 30: 26}   # gains over these
    assert [k for k in R if R[k].per_shape] == [25, 26, 29, 30]
    assert R[14].c_box == R[15].c_box == R[16].c_box == R[17].c_box == (64, 64)              # FP16 C: 64 columns are one 128-byte row
    assert K.rung(12) is R[12] and K.lookup("hopper_tma_store") is R[13]


def test_lesson6_constants_match_the_kernel_file():
    bm, bn, bk, st, box, epi = (_hdefine(n) for n in ("HBM", "HBN", "HBK", "HSTAGES", "BOX_N", "EPI_COLS"))
    assert (bm, bn, bk, st, box, epi) == (128, 256, 64, 4, 64, 32)
    assert bk * 2 == 128 and box * 2 == 128 and epi * 4 == 128       # one 128-byte swizzle row per box row
    stage = (bm * bk + bk * bn) * 2
    assert K.HOPPER_STAGE == stage
    # the ring, then 1024 bytes to align its start (smem_base: the swizzle's 1024-byte atoms) and 128 for the barriers
    src, prim = HOPPER_CU.read_text(), (KERNEL_DIR / "hopper_primitives.cuh").read_text()
    assert "2 * HSTAGES * 8 <= 128" in src and "(1024 - (base & 1023)) & 1023" in prim   # full[] and empty[] fit
    assert K.HOPPER_SMEM == st * stage + 1024 + 128
    assert K.HOPPER_STORE_SMEM == K.HOPPER_SMEM + 2 * 2 * 64 * epi * 4
    assert K.HOPPER_STORE_SMEM <= 227 * 1024                   # the most a block may opt in to on sm_90
    assert "__launch_bounds__(384, 1)" in src and _hdefine("CLUSTER_M") == 2 and _hdefine("GROUP_M") == 8
    for r in K.HOPPER_RUNGS.values():
        if r.rung >= 17:                                         # their own tile and ring (test_rung_17_... below)
            continue
        assert r.tma_boxes[0] == (bm, bk) and r.tma_boxes[1] == (bk, box)
        assert r.dyn_smem == (K.HOPPER_STORE_SMEM if r.c_box else K.HOPPER_SMEM)


def test_each_kernel_says_its_one_idea_and_the_registrys_prediction():
    for r in K.HOPPER_RUNGS.values():
        src = (KERNEL_DIR / r.file).read_text()
        c = src[:src.index("\n\n")]         # one kernel per file: its leading comment says the idea and the prediction
        assert c.startswith(f"// {r.file} -- Lesson 6, rung {r.rung}: "), (r.name, c[:80])
        m = re.search(r"Predicted: x([\d.]+) over rung (\d+)", c)
        assert m and float(m.group(1)) == r.predicted_gain, (r.name, c)
        assert int(m.group(2)) == (16 if r.rung == 17 else r.base or r.rung - 1), (r.name, c)   # rung 17: on 16
        assert re.search(rf'extern "C" __global__ void {r.name}\(', src)
        bounds = "__launch_bounds__(256, 1)" if r.block == (256, 1) else "__launch_bounds__(384, 1)"
        decl = src[src.index(f"{bounds}", src.index(c)):src.index(f" {r.name}(")]
        assert ("CLUSTER_DIMS" in decl) == (r.cluster is not None), r.name


def test_hopper_file_compiles_for_sm90a_without_spills(tmp_path):
    """nvcc (when present) builds kernels/*_sm90a.cu for sm_90a, the only target with their real code: every
    kernel without spills or a stack frame, the warp-specialised ones within the 168 registers that
    __launch_bounds__(384, 1) allows at entry, and ptxas warns about nothing (e.g. C7508: setmaxnreg ignored,
    C7510: wgmma serialised) and reports no "Potential Performance Loss" (C7512: wgmma serialised for want of
    registers, which rung 27 first did)."""
    import shutil
    import subprocess

    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    for cu in sorted(KERNEL_DIR.glob("*_sm90a.cu")):
        p = subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o",
                            str(tmp_path / "k.cubin"), "-Xptxas", "-v", str(cu)], capture_output=True, text=True,
                           timeout=300)
        out = p.stdout + p.stderr
        assert p.returncode == 0, out
        assert "warning" not in out.lower() and "performance loss" not in out.lower(), out
        entries = re.findall(r"Compiling entry function '(\w+)'.*?(\d+) bytes stack frame, (\d+) bytes spill stores, "
                             r"(\d+) bytes spill loads.*?Used (\d+) registers", out, re.S)
        names = {e[0] for e in entries}
        assert {k.name for k in K.KERNELS.values() if k.file == cu.name} <= names, (cu.name, names)
        for name, stack, st, ld, regs in entries:
            assert (stack, st, ld) == ("0", "0", "0"), (name, out)
            spec = K.KERNELS.get(name)
            if spec is not None and spec.block[0] == 384:
                assert int(regs) <= 168, (name, regs)


def test_the_cluster_probe_builds_a_kernel_its_file_defines(monkeypatch):
    """helpers.experiments.hopper.cluster_probe (GPU only) asks for a kernel that its kernels/ file defines, for sm_90a,
    declaring the clusters of 2 whose sizes and ranks it then checks (and none below sm_90, where clusters do not
    exist)."""
    import types

    import helpers.compile
    import helpers.device
    from helpers.experiments import hopper as H

    class Asked(Exception):
        pass

    def ask(filename, name, cc, **kw):
        raise Asked(filename, name, cc)

    monkeypatch.setattr(helpers.device, "require_gpu", lambda what: types.SimpleNamespace(cc=(9, 0)))
    monkeypatch.setattr(helpers.compile, "get_arch_kernel", ask)
    with pytest.raises(Asked) as ei:
        H.cluster_probe()
    filename, name, cc = ei.value.args
    text = (KERNEL_DIR / filename).read_text()
    assert cc == (9, 0) and filename.endswith("_sm90a.cu")
    assert re.search(rf'^extern "C" __global__ void (\w+ )?{name}\(int\* out\)$', text, re.M)
    assert "__cluster_dims__(2, 1, 1)" in text and "__CUDA_ARCH__ < 900" in text


def _rung_src(k):
    return (KERNEL_DIR / K.ALL_RUNGS[k].file).read_text()


def _rung_define(name, k):
    return _define(name, KERNEL_DIR / K.ALL_RUNGS[k].file)


def _predicted(k):
    """(gain, over rung) of a rung file's leading comment."""
    c = _rung_src(k)
    c = c[:c.index("\n\n")].replace("\n// ", " ")
    m = re.search(r"Predicted: x([\d.]+) over rung (\d+)", c)
    return float(m.group(1)), int(m.group(2))


def test_rung_17_is_the_skinny_tile():
    """Rung 17 (hopper_skinny), reached by rung_entry like the others: a 64 x 128 tile in 8 stages of 24 KB (its own
    knobs SKINNY_STAGES and SKINNY_CLUSTER, named HSTAGES and CLUSTER_M in its code), two consumers splitting the
    tile's columns (wgmma 64 wide), rung 14's arithmetic and FP16 C; predicted over rung 16."""
    r = K.ALL_RUNGS[17]
    assert 17 not in K.PENDING and K.KERNELS["hopper_skinny"] is r and K.HOPPER_RUNGS[17] is r
    assert K.rung_entry(17) is r
    with pytest.raises(KeyError):
        K.rung_entry(99)                      # neither a rung nor pending
    assert _predicted(17) == (r.predicted_gain, 16)
    src = _rung_src(17)
    assert (_rung_define("HBM", 17), _rung_define("HBN", 17)) == r.block_tile == (64, 128)
    assert "#define HSTAGES SKINNY_STAGES" in src and "#define CLUSTER_M SKINNY_CLUSTER" in src
    assert _rung_define("SKINNY_WAIT", 17) == 0          # the WAIT_HINT knob's default: the rung as recorded
    st = _rung_define("SKINNY_STAGES", 17)
    assert (st, _rung_define("SKINNY_CLUSTER", 17)) == (K.SKINNY_STAGES, 2) == (8, 2)
    assert K.SKINNY_STAGE == (64 * 64 + 64 * 128) * 2
    assert r.dyn_smem == st * K.SKINNY_STAGE + 2 * 2 * 64 * 32 * 4 + 1024 + 128 <= 227 * 1024
    assert "wgmma_m64n64k16<1>(" in src and "float d[32];" in src and "8 * CLUSTER_M" in src
    assert r.tma_boxes == ((64, 64), (64, 64)) and r.cluster == (2, 1, 1)
    assert r.emulate is K.ALL_RUNGS[14].emulate and r.out_dtype == "float16"


def test_rung_18_is_rung_17_writing_fp32_c():
    """Rung 18 (hopper_skinny_f32c): rung 17's file with rung 13's FP32 epilogue (boxes of 64 x 32 floats), its
    arithmetic and model; the same ring, tile and cluster."""
    r, r13, r17 = K.ALL_RUNGS[18], K.ALL_RUNGS[13], K.ALL_RUNGS[17]
    assert K.rung_entry(18) is r and K.KERNELS["hopper_skinny_f32c"] is r
    assert _predicted(18) == (r.predicted_gain, 17)
    assert r.emulate is r13.emulate and r.out_dtype == "float32" and r.c_box == r13.c_box == (64, 32)
    assert (r.block_tile, r.tma_boxes, r.cluster, r.dyn_smem) == (r17.block_tile, r17.tma_boxes, r17.cluster,
                                                                    r17.dyn_smem)
    src = _rung_src(18)
    assert "store2(buf + r * EPI_COLS" in src and "stmatrix" not in display.rung_code(18)
    assert f"void __launch_bounds__(384, 1) CLUSTER_DIMS {r.name}(" in src


def test_rung_19_is_rung_17_with_one_consumer_warpgroup():
    """Rung 19 (hopper_skinny_one): rung 17 with one consumer warpgroup (wgmma 128 wide, 64 accumulators) in 256
    threads, no setmaxnreg, 4 arrivals per CTA on a stage's empty barrier; its arithmetic and model are rung 17's."""
    r, r17 = K.rung_entry(19), K.ALL_RUNGS[17]
    assert r is K.ALL_RUNGS[19] is K.KERNELS["hopper_skinny_one"]
    assert r.block == (256, 1) and r.rung == 19 and r.lesson == 6 and r.base == 17
    assert (r.emulate, r.out_dtype, r.block_tile, r.tma_boxes, r.c_box, r.cluster, r.dyn_smem) == \
        (r17.emulate, r17.out_dtype, r17.block_tile, r17.tma_boxes, r17.c_box, r17.cluster, r17.dyn_smem)
    src, code = _rung_src(19), display.rung_code(19)
    assert f"void __launch_bounds__(256, 1) CLUSTER_DIMS {r.name}(" in src
    assert "wgmma_m64n128k16<1>(" in code and "float d[64];" in code and "4 * CLUSTER_M" in code
    assert "regs_dec" not in code and "regs_inc" not in code
    assert _predicted(19) == (r.predicted_gain, 17) and r.predicted_gain == 1.0


def test_rung_20_is_rung_19_writing_fp32_c():
    """Rung 20 (hopper_skinny_one_f32c): rung 19 with rung 18's FP32 epilogue (4 boxes of 64 x 32 floats); 256
    threads."""
    r, r18, r19 = K.rung_entry(20), K.ALL_RUNGS[18], K.rung_entry(19)
    assert r is K.ALL_RUNGS[20] and r.name == "hopper_skinny_one_f32c" and r.block == (256, 1) and r.base is None
    assert (r.emulate, r.out_dtype, r.c_box) == (r18.emulate, "float32", (64, 32)) and r.dyn_smem == r19.dyn_smem
    assert "for (int box = 0; box < 128 / EPI_COLS; ++box)" in _rung_src(20)
    assert _predicted(20) == (r.predicted_gain, 19)


def test_rungs_21_and_22_are_rungs_19_and_20_with_the_wait_hint():
    """Rungs 21-22: rungs 19-20 waiting with SKINNY_HINT_WAIT (default 1, the suspend-time hint) where 19-20 wait with
    SKINNY_WAIT (default 0), nothing else; their gains are predicted over 19 and 20 (base), where the chip is full
    and separately at M = 128; their launch and model are 19-20's."""
    assert 21 not in K.PENDING and 22 not in K.PENDING and K.rung_entry(21) is K.ALL_RUNGS[21]
    for k, base, m128 in ((21, 19, "1.10"), (22, 20, "1.08")):
        r, b = K.rung_entry(k), K.ALL_RUNGS[base]
        assert r is K.KERNELS[r.name] and r.base == base and r.predicted_gain == 1.05 and r.lesson == 6
        assert (r.emulate, r.out_dtype, r.block, r.block_tile, r.tma_boxes, r.c_box, r.cluster, r.dyn_smem) == \
            (b.emulate, b.out_dtype, b.block, b.block_tile, b.tma_boxes, b.c_box, b.cluster, b.dyn_smem)
        code, bcode = display.rung_code(k), display.rung_code(base)
        assert code.count("mbar_wait<SKINNY_HINT_WAIT>(") == bcode.count("mbar_wait<SKINNY_WAIT>(") == 2
        norm = lambda t: re.sub(r"\s+", " ", t.replace(r.name, "K").replace(b.name, "K"))   # noqa: E731
        assert norm(code.replace("SKINNY_HINT_WAIT", "SKINNY_WAIT")) == norm(bcode)
        c = _rung_src(k)
        c = c[:c.index("\n\n")].replace("\n// ", " ")
        assert _predicted(k) == (r.predicted_gain, base) and f"(predicted separately), x{m128} over rung {base}" in c
    assert _rung_define("SKINNY_HINT_WAIT", 21) == 1 and _rung_define("SKINNY_WAIT", 19) == 0


@full_only                   # nvcc builds: pytest --full (make gpu-check)
def test_added_descriptors_reach_the_same_descriptors_and_only_rungs_23_24_add():
    """Rungs 23-24's added descriptors (hopper_primitives.cuh's desc_split and desc_plus): stage s, k-step ks of the
    tile reached by adding to the low word of stage 0's descriptor is the descriptor of that address, for A (K-major,
    32 bytes a k-step) and B (MN-major, 16 k-rows of 128 bytes a k-step), both tiles (128 x 256 in 4 stages, 64 x 128
    in 8), both consumers' slices, from any 1024-byte-aligned base that leaves the ring below 2^18 bytes. With nvcc:
    SKINNY_DESC=1 (the default) splits the descriptors in rung 23's PTX, SKINNY_DESC=0 does not."""
    import shutil
    import subprocess

    box = 64 * 64 * 2                                                 # B_BOX_BYTES: 64 k-rows x 64 columns x 2 bytes

    def encode(addr, lbo):                                            # desc_encode, in Python
        return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)

    def plus(d0, off16):
        return (d0 & 0xFFFFFFFF00000000) | ((d0 + off16) & 0xFFFFFFFF)

    for bm, bn, stages in ((128, 256, 4), (64, 128, 8)):
        a_bytes, b_bytes = bm * 64 * 2, 64 * bn * 2
        ring = stages * (a_bytes + b_bytes)
        for base in range(0, 0x40000 - ring - 40 * 1024, 1024 * 29):
            sA, sB = base, base + stages * a_bytes
            for cw in (0, 1):
                a0 = sA + (cw * 64 * 128 if bm == 128 else 0)
                b0 = sB + ((0 if bm == 128 else cw * 64) // 64) * box
                for s in range(stages):
                    for ks in range(4):
                        assert plus(encode(a0, 16), (s * a_bytes >> 4) + ks * 2) == encode(a0 + s * a_bytes + ks * 32, 16)
                        assert plus(encode(b0, box), (s * b_bytes >> 4) + ks * 128) == \
                            encode(b0 + s * b_bytes + ks * 16 * 128, box)
    # the check can fail: past 2^18 bytes the sum carries into the LBO field, and the descriptors differ
    assert plus(encode(0x3FC00, 16), 0x800 >> 4) != encode(0x3FC00 + 0x800, 16)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return
    ptx = {}
    for opts in ((), ("-DSKINNY_DESC=0",)):
        out = subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-ptx", *opts,
                              str(KERNEL_DIR / K.ALL_RUNGS[23].file), "-o", "-"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        ptx[opts] = out.stdout
    assert "mov.b64 {" in ptx[()] and "mov.b64 {" not in ptx[("-DSKINNY_DESC=0",)]


def test_rungs_23_and_24_are_rungs_21_and_22_with_added_descriptors():
    """Rungs 23-24: rungs 21-22 with SKINNY_DESC (default 1: descriptors built once and advanced by adds, mma_ktile_at;
    0: rebuilt, rungs 21-22's mma_ktile), nothing else; predicted x1.03 over rungs 21 and 22; their launch and model
    are 21-22's."""
    for k, base in ((23, 21), (24, 22)):
        r, b = K.ALL_RUNGS[k], K.ALL_RUNGS[base]
        assert r.base == base and r.predicted_gain == 1.03 and r is K.KERNELS[r.name] and r.timed_shapes == b.timed_shapes
        assert (r.emulate, r.out_dtype, r.block, r.block_tile, r.tma_boxes, r.c_box, r.cluster, r.dyn_smem) == \
            (b.emulate, b.out_dtype, b.block, b.block_tile, b.tma_boxes, b.c_box, b.cluster, b.dyn_smem)
        code = display.rung_code(k)
        assert "if (SKINNY_DESC)" in code and "mma_ktile_at(d, da0, db0," in code and "mma_ktile(d, sA" in code
        assert "desc_plus(" in code and "mma_ktile_at" not in display.rung_code(base)
        assert _predicted(k) == (r.predicted_gain, base) and _rung_define("SKINNY_DESC", k) == 1


def test_rungs_25_and_26_are_rungs_14_and_13_in_clusters_of_four():
    """Rungs 25-26: rungs 14 and 13 with QUAD_CLUSTER (default 4, named CLUSTER_M in the code) where they have
    CLUSTER_M (default 2), and the TILE_N knob (default 256); their entries are 14's and 13's but for the cluster
    (4, 1, 1); the sums are theirs (same model)."""
    assert 25 not in K.PENDING and K.rung_entry(25) is K.KERNELS["hopper_quad_cluster"] is K.HOPPER_RUNGS[25]
    for k, base in ((25, 14), (26, 13)):
        r, b = K.ALL_RUNGS[k], K.ALL_RUNGS[base]
        assert r.base == base and r.cluster == (4, 1, 1) and b.cluster == (2, 1, 1) and r.predicted_gain == 1.0
        assert r.per_shape and not b.per_shape
        assert (r.emulate, r.out_dtype, r.block, r.block_tile, r.tma_boxes, r.c_box, r.dyn_smem, r.persistent) == \
            (b.emulate, b.out_dtype, b.block, b.block_tile, b.tma_boxes, b.c_box, b.dyn_smem, b.persistent)
        src = _rung_src(k)
        assert (_rung_define("QUAD_CLUSTER", k), _rung_define("TILE_N", k), _rung_define("CLUSTER_M", base)) == (4, 256, 2)
        assert "#define CLUSTER_M QUAD_CLUSTER" in src and "#define HBN TILE_N" in src
        assert f"CLUSTER_DIMS {r.name}(" in src and _predicted(k) == (1.0, base)


def test_quad_choice_takes_clusters_of_four_only_where_rows_start_inside_a_line_and_no_wave_is_added():
    """helpers.kernels.quad_choice with the H200's counts (30 clusters of 4, 66 of 2: lab/logs/quad-grid): 4 at
    5000^3 (rows of 10000 bytes, 7 waves either way) and at 1000^3 (1 wave); 2 at 4096^3 and 8192 x 8192 x 1024
    (aligned rows), at 7000^3 and 6000^3 (rows inside a line, but 14 waves against 12, 10 against 9); 2 with aligned
    rows even where the waves tie; rows of A alone inside a line count. The launcher's build for 2 is rung 14's
    template call (QUAD_CLUSTER=2)."""
    asked = []
    h200 = lambda: asked.append(1) or (30, 66)   # noqa: E731
    q = lambda n, a=None, b=None: K.quad_choice(n, n, a or 2 * n, b or 2 * n, h200)   # noqa: E731
    assert (q(4096), K.quad_choice(8192, 8192, 2048, 16384, h200)) == (2, 2) and not asked   # aligned: no driver
    assert (q(5000), q(1000), q(7000), q(6000)) == (4, 4, 2, 2) and len(asked) == 4
    assert q(5000, a=10112, b=10112) == 2 and q(5000, a=10000, b=10112) == 4
    assert K.cluster_waves(5000, 5000, 4, 30) == K.cluster_waves(5000, 5000, 2, 66) == 7
    assert (K.cluster_waves(7000, 7000, 4, 30), K.cluster_waves(7000, 7000, 2, 66)) == (14, 12)
    src = (KERNEL_DIR.parent / "helpers" / "launch.py").read_text()
    assert 'return dataclasses.replace(spec, cluster=(2, 1, 1)), (*tuple(options), "-DQUAD_CLUSTER=2")' in src
    assert "pair = per_shape_pair(spec, options)" in src


def test_tile_n_knob_shared_memory_and_the_cluster_choice_counts_the_waves_of_its_width():
    """Rungs 25-26's TILE_N knob: the launcher asks for 4 stages of A and whole boxes of B (152 columns: 3 boxes) plus
    rung 14's epilogue and slack; quad_choice counts the waves of the width built (at 5000^3, 152 wide: 11 waves of
    30 clusters of 4 against 10 of 66 clusters of 2, so clusters of 2; 256 wide: 7 and 7, clusters of 4)."""
    assert K.tile_n_smem(256) == K.HOPPER_STORE_SMEM and K.tile_n_smem(152) == K.HOPPER_STORE_SMEM - 4 * 8192
    assert K.tile_n_smem(192) == K.tile_n_smem(152) and K.tile_n_smem(200) == K.tile_n_smem(256)
    assert K.tile_n_smem(256, 3) == K.HOPPER_STORE_SMEM - K.HOPPER_STAGE
    h200 = lambda: (30, 66)   # noqa: E731
    assert (K.cluster_waves(5000, 5000, 4, 30, 152), K.cluster_waves(5000, 5000, 2, 66, 152)) == (11, 10)
    assert K.quad_choice(5000, 5000, 10000, 10000, h200, 152) == 2 and K.quad_choice(5000, 5000, 10000, 10000, h200) == 4


def test_wgmma_widths_header_is_what_its_generator_writes():
    """kernels/wgmma_widths.cuh is tools/gen_wgmma_widths.py's output, one wrapper per width from 136 to 248 and 128; each
    names its width in the instruction and lists width / 2 accumulators (a wrong count would not assemble, a wrong
    width would multiply the wrong columns); A's transpose bit is a template argument, 0 unless given (rung 29 reads
    A MN-major, the other callers K-major)."""
    import re
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen", KERNEL_DIR.parent / "tools" / "gen_wgmma_widths.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = (KERNEL_DIR / "wgmma_widths.cuh").read_text()
    assert text == gen.text()
    for n in (128, *range(136, 256, 8)):       # 128 again, with A's transpose bit: rung 29's CT_M=128
        block = text[text.index(f"struct Wgmma<{n}>"):].split("};")[0]
        assert f"m64n{n}k16" in block and f"float (&d)[{n // 2}]" in block
        assert max(int(i) for i in re.findall(r"d\[(\d+)\]", block)) == n // 2 - 1
        # operands after the descriptors: scale-d, scale-a, scale-b, then the transpose bits of A and of B
        assert f'"%{n // 2}, %{n // 2 + 1}, 1, 1, 1, %{n // 2 + 3}, %{n // 2 + 2};' in block
        assert block.count('"n"(TRANS_B), "n"(TRANS_A)') == 1 and "int TRANS_B, int TRANS_A = 0" in block
    # its users: rungs 25-26 (B MN-major) and the C^T rungs 29-30 (A MN-major)
    assert "Wgmma<2 * NACC>::template mma<1>" in _rung_src(25) and "Wgmma<2 * NACC>::template mma<0, 1>" in _rung_src(29)


def test_rung_29_has_the_kernels_tile_and_its_reasoning_computed():
    """Rung 29 (hopper_ct_tile): the entry's tile, boxes and shared memory are the kernel's (CT_M, 4 stages fit in
    227 KB, where 256 x 152 fitted 3), computed as C^T (mma_ktile_ct: wgmma's A a box of B, read MN-major); every
    number of its reasoning is computed here: 5000^3 in 320 units of 2 (5 waves of 66 clusters, 4.85 of work) against
    rung 25's 200 units of 4 (7 waves of 30), 6.25 tile-times against 7 (x1.12), 142 outputs per box row against 171;
    the forced tile's prediction, x1.08, in the probe; the registry's gain the chooser's x1.00 where it builds rung
    25's kernel (the ladder's 4096^3 and 8192^3)."""
    from lab.probes.ct_tile import CT_PREDICTED

    r, b = K.ALL_RUNGS[29], K.ALL_RUNGS[14]
    assert 29 not in K.PENDING and K.rung_entry(29) is r is K.KERNELS["hopper_ct_tile"] is K.HOPPER_RUNGS[29]
    assert r.base == 25 and r.per_shape == "orientation"
    assert (r.emulate, r.out_dtype, r.cluster) == (b.emulate, b.out_dtype, b.cluster)
    assert _rung_define("CT_M", 29) == K.CT_M == 160 and _rung_define("EPI_ROWS", 29) == 32
    assert (r.block_tile, r.tma_boxes, r.c_box) == ((160, 256), ((160, 64), (64, 64)), (32, 64))
    assert r.dyn_smem == K.ct_smem() == 4 * (160 * 128 + 256 * 128) + 16384 + 1024 + 128 <= 227 * 1024
    assert K.ct_smem(192) > 227 * 1024
    code = display.rung_code(29)
    assert "Wgmma<2 * NACC>::template mma<0, 1>(d, desc_mnmajor(b" in code and "stmatrix_x4_trans(" in code
    units = -(-math.ceil(5000 / 160) // 2) * math.ceil(5000 / 256)
    assert (units, -(-units // 66), f"{units / 66:.2f}") == (320, 5, "4.85")
    assert (K.cluster_waves(5000, 5000, 4, 30), -(-math.ceil(5000 / 128) // 4) * math.ceil(5000 / 256)) == (7, 200)
    assert (5 * 160 / 128, f"{7 / (5 * 160 / 128):.2f}") == (6.25, "1.12")
    assert (round(160 * 256 / (160 + 128)), round(128 * 256 / (128 + 64))) == (142, 171)
    assert CT_PREDICTED[5000] == 1.08 and r.predicted_gain == 1.0 and K.ct_waves(5000, 5000, 66) == 5
    assert _predicted(29) == (1.0, 25)


def test_rung_30_is_rung_29_writing_fp32_c():
    """Rung 30 (hopper_ct_tile_f32c): rung 29's mainloop with FP32 C, its entry rung 29's but for C (FP32, boxes of
    16 rows x 32 columns: 128-byte rows, two per 64-column slice) and the model rung 26's; the epilogue's steps of 16
    rows fit the 160-row tile; predicted x1.05 over rung 26 in the probe (--f32c) before any run (the registry's gain,
    as rung 29's, the chooser's x1.00 where it builds rung 26's kernel)."""
    from lab.probes.ct_tile import F32C_PREDICTED

    r, r29, r26 = K.ALL_RUNGS[30], K.ALL_RUNGS[29], K.ALL_RUNGS[26]
    assert 30 not in K.PENDING and r.base == 26 and (r.emulate, r.out_dtype) == (r26.emulate, r26.out_dtype)
    assert (r.block_tile, r.tma_boxes, r.dyn_smem, r.cluster) == (r29.block_tile, r29.tma_boxes, r29.dyn_smem,
                                                                  r29.cluster)
    assert r.c_box == (16, 32) and 32 * 4 == 128 and K.CT_M % 16 == 0 and 2 * 16 * 128 * 2 * 2 == K.CT_EPI_BYTES
    code, code29 = display.rung_code(30), display.rung_code(29)
    main = lambda c: c[c.index("    if (wg == 0) {"):c.index("// [region: epilogue]")]   # noqa: E731
    assert main(code) == main(code29) and "stmatrix" not in code and _rung_define("EPI_ROWS", 30) == 16
    assert F32C_PREDICTED[5000] == 1.05 and r.predicted_gain == 1.0 and _predicted(30) == (1.0, 26)


def test_recorded_compiler_output_is_of_the_kernels_as_they_are():
    """results/build-nvidia-h200 (the PTX, SASS and ptxas reports lessons 01, 02 and 05 show without a GPU) was made
    from kernels/ as they are now: sources.sha256, written by tools/kernel_dumps.sh, names every kernel file and
    header with its hash, and each .cu has its report and its SASS. A kernel changed without new dumps fails here."""
    import hashlib

    build = KERNEL_DIR.parent / "results" / "build-nvidia-h200"
    lines = (build / "sources.sha256").read_text().splitlines()
    recorded = {path: digest for digest, path in (ln.split(maxsplit=1) for ln in lines)}
    now = {f"kernels/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted(KERNEL_DIR.glob("*.cu*"))}
    fix = "run `bash tools/kernel_dumps.sh` (nvcc and cuobjdump; no GPU needed) and commit results/build-nvidia-h200"
    assert set(recorded) == set(now), f"kernel files added or removed since the dumps: {fix}"
    stale = sorted(p for p in now if recorded[p] != now[p])
    assert not stale, f"{stale} changed since the dumps: {fix}"
    for cu in (p for p in now if p.endswith(".cu")):
        stem = Path(cu).stem
        assert (build / f"{stem}.ptxas.txt").is_file() and list(build.glob(f"{stem}.sm_90*.sass")), cu
        assert "Compile time" not in (build / f"{stem}.ptxas.txt").read_text()   # machine-independent reports
