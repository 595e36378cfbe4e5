"""The kernel registry (helpers.kernels): entries match their .cu files, lookups, skips, the one check."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import helpers
import helpers.numerics
from helpers import CourseError, UnknownKernelError
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
    assert list(K.HOPPER_RUNGS) == [8, 9, 10, 11, 12, 13]    # lesson 6's (tests/test_hopper.py)
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
    bm, bn, bk, st = (_define(n, LADDER7) for n in ("BM7", "BN7", "BK7", "ST7"))
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
