"""CPU tests for lesson 5 (helpers/experiments/ladder.py, kernels/ladder.cu)."""
import re
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import exercises
from helpers.errors import InputError
from helpers.experiments import ladder as L
from helpers.experiments import wmma as w

KERNEL = Path(__file__).resolve().parent.parent / "kernels" / "ladder.cu"
KERNEL7 = KERNEL.parent / "ladder_sm90a.cu"
CLASSIC = [r for r in L.RUNGS.values() if r.file == "ladder.cu"]


def _define(name, path=KERNEL):
    m = re.search(rf"^#define {name} (\d+)", path.read_text(), re.M)
    return int(m.group(1))


def test_registry_is_a_ladder():
    assert list(L.RUNGS) == [1, 2, 3, 4, 5, 6, 7]
    for r in L.RUNGS.values():
        assert r.predicted_gain > 0 and r.idea and r.why
        assert r.file == {1: "wmma.cu", 7: "ladder_sm90a.cu"}.get(r.rung, "ladder.cu")
    assert [r.rung for r in L.RUNGS.values() if r.isolate] == [7]
    assert L.rung("ladder_mma_sync") is L.RUNGS[6] and L.rung(3) is L.RUNGS[3]
    with pytest.raises(KeyError):
        L.rung(9)


def test_every_rung_kernel_is_in_its_file():
    src = KERNEL.read_text()
    for r in CLASSIC:
        assert re.search(rf'extern "C" __global__ void {r.name}\(', src), r.name
        assert re.search(rf'__launch_bounds__\(NTHREADS, 2\) {r.name}\(', src), r.name
    assert "wmma_gemm_naive" in (KERNEL.parent / "wmma.cu").read_text()
    assert 'extern "C" __global__ void ladder_wgmma_tma(' in KERNEL7.read_text()


def test_registry_matches_kernel_constants():
    bm, bn, bk, stages, pad = (_define(n) for n in ("BM", "BN", "BK", "STAGES", "PAD"))
    assert _define("NTHREADS") == 256
    assert L.PIPE_SMEM == stages * (bm * (bk + pad) + bk * (bn + pad)) * 2
    assert L.PIPE_SMEM > L.DEFAULT_SMEM_LIMIT           # needs the opt-in, as the launcher does
    for r in CLASSIC:
        assert (r.tile_mn, r.tile_k, r.block_tile) == (bm, bk, (bm, bn))
        assert r.block == (256, 1)
        assert r.dyn_smem == (L.PIPE_SMEM if r.rung >= 5 else 0)
    assert L.RUNGS[5].min_cc == L.RUNGS[6].min_cc == (8, 0)


def test_rung7_constants():
    bm, bn, bk, st = (_define(n, KERNEL7) for n in ("BM7", "BN7", "BK7", "ST7"))
    r = L.RUNGS[7]
    assert (r.block_tile, r.tile_k, r.tile_mn) == ((bm, bn), bk, max(bm, bn))
    assert L.WGMMA_SMEM == st * (bm * bk + bn * bk) * 2 + 1024 + 64
    assert bk * 2 == 128                      # one 128-byte swizzle row per tile row
    assert L.WGMMA_SMEM <= 227 * 1024         # the most a block may opt in to on sm_90
    assert r.grid(1024, 1280, r.block) == (5, 8)
    assert L.TENSOR_MAP_DTYPE.itemsize == 128


@pytest.mark.parametrize("size", [(200, 136, 72), (129, 257, 33), (17, 5, 3)])
@pytest.mark.parametrize("rung", list(L.RUNGS))
def test_every_rung_emulated_passes_the_check(rung, size):
    M, N, K = size
    A = helpers.random_matrix(M, K, seed=3).astype(np.float16)
    B = helpers.random_matrix(K, N, seed=4).astype(np.float16)
    C = L.gemm(rung, A, B)
    chk = L.RUNGS[rung].check(C, A, B)
    assert C.shape == (M, N) and chk.passed, str(chk)


def test_padding_to_tiles():
    r = L.RUNGS[4]
    A = np.ones((130, 40), np.float16)
    B = np.ones((40, 7), np.float16)
    Ap, Bp, (M, N, K), (Mp, Np, Kp) = L.pad_for(r, A, B)
    assert (M, N, K) == (130, 7, 40) and (Mp, Np, Kp) == (256, 128, 64)
    assert Ap.shape == (256, 64) and Bp.shape == (64, 128)
    assert Ap[:130, :40].all() and not Ap[130:].any() and not Ap[:, 40:].any()
    assert L.RUNGS[1].padded(130, 7, 40) == (144, 16, 48)


@pytest.mark.parametrize("bad,match", [
    (lambda A, B: (A.astype(np.float32), B), "float16"),
    (lambda A, B: (A, B[:-1]), "inner dimensions"),
    (lambda A, B: (A.T, B), "C-contiguous|inner"),
    (lambda A, B: (A[None], B), "dimensions"),
    (lambda A, B: ([[1.0]], B), "not an array"),
])
def test_bad_inputs_name_the_fix(bad, match):
    A = np.ones((32, 48), np.float16)
    B = np.ones((48, 16), np.float16)
    with pytest.raises(InputError, match=match):
        L.gemm(2, *bad(A, B))


def test_skip_message():
    assert L.skip_message(L.RUNGS[5], (7, 5)).startswith("rung 5 (ladder_cp_async) skipped")
    assert L.skip_message(L.RUNGS[6], (9, 0)) is None
    assert L.skip_message(L.RUNGS[2], (7, 0)) is None
    assert "sm_90a" in L.skip_message(L.RUNGS[7], (10, 0)) and "sm_90a" in L.skip_message(L.RUNGS[7], (8, 6))
    assert L.skip_message(L.RUNGS[7], (9, 0)) is None


def test_bank_conflict_model():
    assert L.smem_conflicts(0) == {"pad_halves": 0, "A_row_bytes": 64, "B_row_bytes": 256, "A_ways": 4, "B_ways": 8}
    assert L.smem_conflicts(8)["A_ways"] == L.smem_conflicts(8)["B_ways"] == 1
    assert L.bank_ways(128) == 8 and L.bank_ways(16) == 1


def test_ldmatrix_addressing_gives_ptx_fragments():
    assert L.ldmatrix_fragments("a") == w.ptx_fragment_layout("a")
    b, ptx_b = L.ldmatrix_fragments("b"), w.ptx_fragment_layout("b")
    for lane, want in zip(b, ptx_b):
        assert lane[:4] == want
        assert [(k, n - 8) for k, n in lane[4:]] == want


def test_traffic_model():
    n = 4096
    r1, r2 = L.RUNGS[1], L.RUNGS[2]
    assert L.traffic_bytes(r2, n, n, n) == n * n * 2 * (n / 128) * 2 + n * n * 4
    assert L.intensity(r2, n, n, n) > 4 * L.intensity(r1, n, n, n)


def test_predicted_chain_and_gains():
    p = L.predicted_tflops(10.0)
    assert p[1] == 10.0 and p[max(L.RUNGS)] == pytest.approx(10.0 * np.prod([r.predicted_gain for r in L.RUNGS.values()]))
    rows = [{"rung": 0, "m": 64, "n": 64, "k": 64, "tflops": 100.0, "idea": "cuBLAS", "predicted": None,
             "frac_cublas": 1.0, "frac_peak": 0.1}]
    t = 10.0
    for r in L.RUNGS.values():
        t = t * (r.predicted_gain if r.rung > 1 else 1)
        rows.append({"rung": r.rung, "m": 64, "n": 64, "k": 64, "tflops": t, "idea": r.idea,
                     "predicted": r.predicted_gain, "frac_cublas": t / 100, "frac_peak": t / 1000})
    g = L.gains(rows, 64)
    assert [x["rung"] for x in g] == list(L.RUNGS)
    assert all(x["verdict"].startswith("as predicted") for x in g[1:])
    fig = L.plot_ladder(rows, "test", 989.4, sizes=(64,))
    assert fig.axes
    assert len(L.roofline_points(rows, 64)) == len(L.RUNGS)


def test_exercise_checkers(capsys):
    L.check_tile_traffic(None)
    assert exercises.last_result is None
    n = 4096
    L.check_tile_traffic(n * n * 2 * (n / 256) + n * n * 2 * (n / 128) + n * n * 4)
    assert exercises.last_result is True
    L.check_pipeline_smem(3 * (128 * 40 + 32 * 136) * 2)
    assert exercises.last_result is True
    L.check_pipeline_smem(1)
    assert exercises.last_result is False
    L.check_blocks_per_sm(2)
    assert exercises.last_result is True
    out = capsys.readouterr().out
    assert "Not answered yet" in out and "Correct." in out and "Not quite" in out


def test_pad_options():
    rows = {r["pad_halves"]: r for r in L.pad_options()}
    assert rows[8]["legal"] and rows[8]["A_ways"] == rows[8]["B_ways"] == 1
    assert not rows[4]["legal"] and rows[0]["legal"] and rows[0]["B_ways"] == 8
    assert rows[16]["B_ways"] > 1                 # more padding is not better
    assert [p for p, r in rows.items() if r["legal"] and r["A_ways"] == r["B_ways"] == 1] == [8]


def test_demo_lines_and_withdrawal(monkeypatch):
    A = helpers.random_matrix(40, 24, seed=5).astype(np.float16)
    B = helpers.random_matrix(24, 33, seed=6).astype(np.float16)
    lines = L.demo_lines(A, B)
    assert len(lines) == len(L.RUNGS) and all(" PASS " in ln for ln in lines)
    monkeypatch.setitem(L.WITHDRAWN, 7, "failed on the H200")
    lines = L.demo_lines(A, B)
    assert lines[-1] == "rung 7 (ladder_wgmma_tma) withdrawn: failed on the H200"
    assert L.skip_message(L.RUNGS[7], (9, 0)).endswith("failed on the H200")


def test_sass_opcode_counts():
    path = helpers.results.RESULTS_DIR / "build-nvidia-h200" / "wmma.sm_90.sass"
    counts = L.sass_opcode_counts(path)
    assert counts["wmma_gemm_naive"]["HMMA"] > 0 and counts["wmma_gemm_naive"]["HGMMA"] == 0
    assert set(counts["wmma_gemm_naive"]) == set(L.SASS_OPS)


def test_tensor_map_call_with_a_fake_driver(monkeypatch):
    """The ctypes call to cuTensorMapEncodeTiled, checked against a stand-in for libcuda."""
    import ctypes
    import types

    seen = {}

    def fake_encode(tmap, dtype, rank, addr, dims, strides, box, estr, inter, swz, l2, oob):
        seen.update(dtype=dtype, rank=rank, addr=addr.value, dims=(dims[0], dims[1]), stride=strides[0],
                    box=(box[0], box[1]), estr=(estr[0], estr[1]), swz=swz, inter=inter, oob=oob,
                    aligned=tmap.value % 64 == 0)
        ctypes.memmove(tmap.value, bytes(range(128)), 128)
        return 0

    class FakeFn:
        def __call__(self, *a):
            return fake_encode(*a)

    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace(cuTensorMapEncodeTiled=FakeFn()))
    X = types.SimpleNamespace(shape=(256, 192), data=types.SimpleNamespace(ptr=0x7F0000001000))
    tm = L.tensor_map_2d(X, 128, 64)
    assert seen == {"dtype": 6, "rank": 2, "addr": 0x7F0000001000, "dims": (192, 256), "stride": 384,
                    "box": (64, 128), "estr": (1, 1), "swz": 3, "inter": 0, "oob": 0, "aligned": True}
    assert tm.shape == () and tm.dtype.itemsize == 128 and tm.size == 1
    assert tm.tobytes() == bytes(range(128))
