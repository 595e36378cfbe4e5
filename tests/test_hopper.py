"""helpers.hopper: the TMA tensor map, built through ctypes, checked against a stand-in for libcuda."""
from __future__ import annotations

import ctypes
import types

from helpers import hopper


def test_tensor_map_is_128_bytes_passed_by_value():
    assert hopper.TENSOR_MAP_DTYPE.itemsize == 128


def test_tensor_map_call_with_a_fake_driver(monkeypatch):
    """The ctypes call to cuTensorMapEncodeTiled, checked against a stand-in for libcuda."""
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
    tm = hopper.tensor_map_2d(X, 128, 64)
    assert seen == {"dtype": 6, "rank": 2, "addr": 0x7F0000001000, "dims": (192, 256), "stride": 384,
                    "box": (64, 128), "estr": (1, 1), "swz": 3, "inter": 0, "oob": 0, "aligned": True}
    assert tm.shape == () and tm.dtype.itemsize == 128 and tm.size == 1
    assert tm.tobytes() == bytes(range(128))


# =========================================================================== lesson 6 (kernels/hopper_sm90a.cu)
import json  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import helpers  # noqa: E402
from helpers import analysis  # noqa: E402
from helpers import kernels as K  # noqa: E402
from helpers.experiments import hopper as H  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HOPPER_CU = ROOT / "kernels" / "hopper_sm90a.cu"
SRC = HOPPER_CU.read_text()


def _define(name):
    m = re.search(rf"^#define {name} (\d+)", SRC, re.M)
    assert m, name
    return int(m.group(1))


def test_lesson6_rungs_are_registry_entries_one_idea_each():
    assert list(K.HOPPER_RUNGS) == [8, 9, 10, 11, 12, 13]
    assert list(K.hopper_ladder()) == [7, 8, 9, 10, 11, 12, 13] and K.hopper_ladder()[7] is K.RUNGS[7]
    for r in K.HOPPER_RUNGS.values():
        assert r is K.KERNELS[r.name] and r.lesson == 6 and r.file == "hopper_sm90a.cu"
        assert r.idea and r.why and 1.0 <= r.predicted_gain <= 2.0
        assert r.only_cc == (9, 0) and r.isolate and not r.b_transposed and not r.sweep
        assert (r.inputs, r.acc, r.output, r.acc_block, r.acc_rounding) == ("fp16", "fp32", "fp32", 16, "truncate")
        assert r.emulate is K.RUNGS[7].emulate                  # rung 7's arithmetic, rung 7's model
        assert r.tma_boxes == ((128, 64), (64, 64)) and r.block_tile == (128, 256)
        assert (r.tile_mn, r.tile_k) == (8, 8)                  # TMA: 16-byte rows; the rest is out-of-bounds fill
        assert r.teaches.startswith(f"lesson 6, rung {r.rung}: ")
    R = K.HOPPER_RUNGS
    assert R[8].block == (256, 1) and all(R[k].block == (384, 1) for k in range(9, 14))
    assert [k for k in R if R[k].persistent] == [10, 11, 12, 13]
    assert [k for k in R if R[k].cluster] == [12, 13] and R[12].cluster == (2, 1, 1)
    assert [k for k in R if R[k].c_box] == [13] and R[13].c_box == (64, 32)
    assert K.rung(12) is R[12] and K.lookup("hopper_tma_store") is R[13]


def test_lesson6_constants_match_the_kernel_file():
    bm, bn, bk, st, box, epi = (_define(n) for n in ("HBM", "HBN", "HBK", "HSTAGES", "BOX_N", "EPI_COLS"))
    assert (bm, bn, bk, st, box, epi) == (128, 256, 64, 4, 64, 32)
    assert bk * 2 == 128 and box * 2 == 128 and epi * 4 == 128       # one 128-byte swizzle row per box row
    stage = (bm * bk + bk * bn) * 2
    assert K.HOPPER_STAGE == stage
    assert K.HOPPER_SMEM == st * stage + _define("SMEM_SLACK") + _define("BAR_BYTES")
    assert K.HOPPER_STORE_SMEM == K.HOPPER_SMEM + 2 * 2 * 64 * epi * 4
    assert K.HOPPER_STORE_SMEM <= 227 * 1024                   # the most a block may opt in to on sm_90
    assert _define("BAR_BYTES") >= 2 * st * 8                   # full[] and empty[]
    assert _define("WS_THREADS") == 384 and _define("CLUSTER_M") == 2 and _define("GROUP_M") == 8
    for r in K.HOPPER_RUNGS.values():
        assert r.tma_boxes[0] == (bm, bk) and r.tma_boxes[1] == (bk, box)
        assert r.dyn_smem == (K.HOPPER_STORE_SMEM if r.c_box else K.HOPPER_SMEM)


def _kernel_comment(name):
    """The comment block right above a kernel's first declaration."""
    i = SRC.index(f" {name}(")
    block = SRC[:SRC.rfind("\n", 0, SRC.rfind("extern", 0, i))]
    lines = []
    for ln in reversed(block.splitlines()):
        if not ln.startswith("//"):
            break
        lines.append(ln)
    return "\n".join(reversed(lines))


def test_each_kernel_says_its_one_idea_and_the_registrys_prediction():
    for r in K.HOPPER_RUNGS.values():
        c = _kernel_comment(r.name)
        c = c[c.index("// Rung "):] if "// Rung " in c else c
        assert c.startswith(f"// Rung {r.rung} -- "), (r.name, c[:80])
        m = re.search(r"Predicted: x([\d.]+) over rung (\d+)", c)
        assert m and float(m.group(1)) == r.predicted_gain and int(m.group(2)) == r.rung - 1, (r.name, c)
        assert re.search(rf'extern "C" __global__ void {r.name}\(', SRC)
        bounds = "__launch_bounds__(256, 1)" if r.rung == 8 else "__launch_bounds__(WS_THREADS, 1)"
        decl = SRC[SRC.index(f"{bounds}", SRC.index(c)):SRC.index(f" {r.name}(")]
        assert ("CLUSTER_DIMS" in decl) == (r.cluster is not None), r.name


def test_rungs_9_to_13_differ_by_one_switch_each():
    """One templated body: each rung turns on exactly one more compile-time switch than the rung before."""
    args = {}
    for k in range(9, 14):
        body = helpers.display.kernel_source("hopper_sm90a.cu", K.HOPPER_RUNGS[k].name)
        m = re.search(r"ws_gemm<([^>]*)>", body)
        args[k] = [a.strip() for a in m.group(1).split(",")]
    assert args[9] == ["false", "ORDER_PLAIN", "1", "false"]
    for k in range(10, 14):
        assert sum(a != b for a, b in zip(args[k - 1], args[k])) == 1, (k, args[k - 1], args[k])


def test_lesson6_emulation_passes_the_check_at_odd_sizes():
    """CPU backend: every rung's emulation (rung 7's model) through helpers.gemm(pad=True) passes its check at
    sizes that are multiples of nothing, and helpers.launch.verdicts says so rung by rung."""
    for M, N, K_ in ((40, 24, 56), (37, 19, 100)):
        A = helpers.random_matrix(M, K_, seed=M).astype(np.float16)
        B = helpers.random_matrix(K_, N, seed=N).astype(np.float16)
        for r in K.HOPPER_RUNGS.values():
            C = helpers.gemm(r, A, B, pad=True)
            assert C.shape == (M, N) and C.dtype == np.float32
            chk = r.check(C, A, B)
            assert chk.passed and chk.model == "identical", str(chk)
        lines = helpers.launch.verdicts(K.HOPPER_RUNGS.values(), A, B)
        assert all(ln.startswith(f"{k} PASS hopper_") for k, ln in zip(K.HOPPER_RUNGS, lines)), lines


def test_lesson6_needs_multiples_of_8_without_padding():
    A = np.ones((40, 20), dtype=np.float16)
    B = np.ones((20, 24), dtype=np.float16)
    with pytest.raises(helpers.CourseError, match="K=20"):
        helpers.gemm("hopper_persistent", A, B)
    assert helpers.gemm("hopper_persistent", A, B, pad=True).shape == (40, 24)


@pytest.mark.parametrize("cc", [(7, 5), (8, 0), (8, 9), (10, 0), (12, 0)])
def test_lesson6_skip_message_on_other_gpus(cc):
    for r in K.HOPPER_RUNGS.values():
        msg = r.skip_message(cc)
        assert msg.startswith(f"rung {r.rung} ({r.name}) skipped: it needs sm_90a") and "Hopper" in msg
        assert msg.endswith(f"this GPU is {cc[0]}.{cc[1]}.")
        assert r.skip_message((9, 0)) is None and r.skip_message(None) is None


# --------------------------------------------------------------------------- the tile order (analysis mirror)
@pytest.mark.parametrize("order", ["plain", "grouped"])
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("tm,tn", [(64, 32), (32, 16), (3, 5), (1, 32), (17, 9)])
def test_tile_order_visits_every_tile_once(order, cluster, tm, tn):
    t = analysis.tile_order(tm, tn, order, cluster=cluster)
    units_m = -(-tm // cluster)
    assert len(t) == units_m * cluster * tn and len(set(t)) == len(t)
    assert {x for x in t if x[0] < tm} == {(i, j) for i in range(tm) for j in range(tn)}
    pairs = [t[i:i + cluster] for i in range(0, len(t), cluster)]         # a cluster's tiles share B's column
    assert all(len({tn_ for _, tn_ in p}) == 1 and [a for a, _ in p] == list(range(p[0][0], p[0][0] + cluster))
               for p in pairs)


def test_grouped_order_halves_the_wave_footprint_at_8192():
    plain = analysis.wave_footprint(analysis.tile_order(64, 32, "plain")[:132])
    grouped = analysis.wave_footprint(analysis.tile_order(64, 32, "grouped")[:132])
    assert plain["requested_per_k"] == grouped["requested_per_k"]
    assert grouped["distinct_per_k"] < 0.65 * plain["distinct_per_k"]
    assert analysis.tile_order(16, 4, "grouped")[:3] == [(0, 0), (1, 0), (2, 0)]
    assert analysis.tile_order(16, 4, "plain")[:3] == [(0, 0), (0, 1), (0, 2)]


# --------------------------------------------------------------------------- launch pieces, without a GPU
def test_tensor_map_for_fp32_c(monkeypatch):
    seen = {}

    class FakeFn:
        def __call__(self, tmap, dtype, rank, addr, dims, strides, box, *rest):
            seen.update(dtype=dtype, stride=strides[0], box=(box[0], box[1]), dims=(dims[0], dims[1]))
            return 0

    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace(cuTensorMapEncodeTiled=FakeFn()))
    X = types.SimpleNamespace(shape=(96, 40), dtype=np.dtype(np.float32), data=types.SimpleNamespace(ptr=0x1000))
    hopper.tensor_map_2d(X, 64, 32)
    assert seen == {"dtype": 7, "stride": 160, "box": (32, 64), "dims": (40, 96)}
    with pytest.raises(ValueError, match="float64"):
        hopper.tensor_map_2d(types.SimpleNamespace(shape=(8, 8), dtype=np.dtype(np.float64)), 8, 8)


def test_cluster_launch_config_layout():
    """The ctypes mirror of CUlaunchConfig / CUlaunchAttribute (cuda.h): sizes, and the cluster attribute."""
    Attr, Config = hopper._launch_structs()
    assert ctypes.sizeof(Attr) == 72 and ctypes.sizeof(Config) == 56
    assert Config.hStream.offset == 32 and Config.attrs.offset == 40 and Config.numAttrs.offset == 48
    assert Attr.x.offset == 8                                    # the union starts 8 bytes in
    cfg, attrs = hopper._config((132,), (384,), 230528, (2, 1, 1), stream=0)
    assert (cfg.gridDimX, cfg.gridDimY, cfg.blockDimX, cfg.sharedMemBytes, cfg.numAttrs) == (132, 1, 384, 230528, 1)
    assert (attrs[0].id, attrs[0].x, attrs[0].y, attrs[0].z) == (4, 2, 1, 1)
    cfg, _ = hopper._config((8, 1, 1), (32, 1, 1), 0, None)
    assert cfg.numAttrs == 0


def test_launch_ex_argument_pointers():
    keep = []
    tm = np.zeros((), dtype=hopper.TENSOR_MAP_DTYPE)
    tm["words"] = np.arange(16, dtype=np.uint64)
    p = hopper._arg_pointer(tm, keep)
    assert ctypes.string_at(p, 128) == tm.tobytes()
    p = hopper._arg_pointer(np.int32(-7), keep)
    assert ctypes.c_int32.from_address(p).value == -7
    with pytest.raises(TypeError):
        hopper._arg_pointer(3.5, keep)


# --------------------------------------------------------------------------- the experiment and its reading
def _rows():
    """Synthetic rows in the shape rung_rows and the experiment write (no GPU)."""
    rows = []
    for n in (4096, 8192):
        cub = 750.0 if n == 4096 else 730.0
        rows.append({"rung": 0, "kernel": "cublas_fp16", "m": n, "n": n, "k": n, "tflops": cub, "frac_cublas": 1.0,
                     "passed": True})
        tf = 400.0
        for k, r in K.hopper_ladder().items():
            tf *= 1.0 if k == 7 else r.predicted_gain
            rows.append({"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": n, "n": n,
                         "k": n, "tflops": tf, "frac_cublas": tf / cub, "frac_peak": tf / 989.4, "passed": True})
    return rows


def test_hopper_experiment_is_registered_and_reads_its_rows():
    from helpers.experiments import REGISTRY, load_all

    load_all()
    assert REGISTRY["hopper"] is H.hopper
    rows = _rows()
    g = H.gains(rows, 4096)
    assert [x["rung"] for x in g] == [7, 8, 9, 10, 11, 12, 13] and g[0]["verdict"] == "-"
    assert all(x["verdict"] == "as predicted (within 25%)" for x in g[1:])
    lines = H.targets(rows)
    assert lines[0].startswith("n = 4096: best rung 13 (hopper_tma_store) at ") and lines[0].endswith("met")
    t = H.shape_table(rows, shapes=((4096, 4096, 4096), (8192, 28672, 4096)))
    assert t[0]["rung"] == 13 and t[1]["rung"] is None and t[0]["shape"] == "4096x4096x4096"
    assert set(H.MISS_NOTES) == set(K.HOPPER_RUNGS) and all(set(v) == {"better", "worse"} for v in H.MISS_NOTES.values())
    assert H.TIMED[:4] == tuple((n, n, n) for n in (2048, 4096, 6144, 8192)) and (128, 8192, 8192) in H.TIMED
    for M, N, K_ in H.ODD_SIZES:
        assert M % 8 or N % 8 or K_ % 64                     # not tile multiples


# --------------------------------------------------------------------------- tools/hopper_try.py, faked children
def _load_try():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hopper_try", ROOT / "tools" / "hopper_try.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hopper_try_reports_failures_wrong_results_and_the_table(monkeypatch, tmp_path, capsys):
    """The GPU script's whole flow with its child processes faked: every outcome gets its line, the JSON is
    written, the exit status says a rung failed."""
    mod = _load_try()

    def row(k, M, N, K_, **kw):
        r = K.ALL_RUNGS[k]
        base = {"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": M, "n": N, "k": K_,
                "regs": 168, "smem_static": 0, "smem_dynamic": r.dyn_smem, "smem": r.dyn_smem, "spills": 0,
                "passed": True, "verdict": f"PASS {r.name} M={M} N={N} K={K_}: ..."}
        return {**base, **kw}

    def fake(func, *args, timeout=240, **kw):
        name = func.split(":")[1]
        if name == "gpu_facts":
            return {"name": "NVIDIA H200", "slug": "nvidia-h200", "cc": [9, 0], "sms": 132, "l2_bytes": 62914560,
                    "driver_cuda": "13.0", "runtime": "13.0", "nvrtc": "13.0", "cupy": "14.2.0", "clocks_idle": None}
        if name == "cluster_probe":
            return {"path": "plain launch", "forms_clusters": True,
                    "blocks": [{"cluster_size": 2, "rank": i % 2, "cluster": i // 2} for i in range(8)]}
        k, timed, odd = args
        if k == 10:
            return {"error": "timed out after 60 s (a hang: e.g. an mbarrier that never completes)"}
        out = [row(k, *s) for s in odd]
        if k == 9:
            out[1] = row(k, *odd[1], passed=False, verdict="FAIL hopper_warp_specialized M=257 N=520 K=136: 3 NaN",
                         mismatch="3 of 133640 elements wrong (3 of them NaN: never written)")
        if k == 12:
            out.append(row(k, *timed[0], error="CUDARuntimeError: cudaErrorIllegalAddress (the CUDA context is "
                                                 "lost: the remaining sizes were not tried)"))
            return out
        for M, N, K_ in timed:
            out.append(row(k, M, N, K_, tflops=500.0 + 10 * k, median_ms=0.2, p10_ms=0.19, p90_ms=0.21, reps=100,
                           frac_cublas=0.7, cublas_tflops=740.0, sm_mhz=1980, sm_mhz_min=1900, power_w=400.0,
                           power_w_max=420.0, throttle=["none"], resident="132 blocks"))
        return out

    monkeypatch.setattr(mod, "run_isolated", fake)
    out = tmp_path / "try.json"
    assert mod.main([str(out)]) == 1
    said = capsys.readouterr().out
    assert "cluster probe: launched by plain launch; forms clusters of 2: True" in said
    assert "WRONG rung 9 (hopper_warp_specialized) at 257x520x136" in said and "never written" in said
    assert "FAILED rung 10 (hopper_persistent): its child process did not return" in said
    assert "FAILED rung 12 (hopper_cluster) at 4096x4096x4096" in said and "IllegalAddress" in said
    assert "4096x4096x4096: 580.0 TFLOP/s" in said                        # rung 8
    assert "target at 4096^3: 0.90x cuBLAS; best correct rung 13: 0.700x -> missed" in said
    assert "PROBLEM rung 10 (hopper_persistent)" in said
    log = json.loads(out.read_text())
    assert log["gpu"]["name"] == "NVIDIA H200" and set(log["rungs"]) == {str(k) for k in K.hopper_ladder()}
    assert log["rungs"]["10"]["rows"]["error"].startswith("timed out")


def test_hopper_try_without_a_hopper_gpu(monkeypatch, tmp_path, capsys):
    mod = _load_try()
    monkeypatch.setattr(mod, "run_isolated", lambda func, *a, **kw: {
        "name": "Tesla T4", "slug": "tesla-t4", "cc": [7, 5], "sms": 40, "l2_bytes": 4 << 20, "driver_cuda": "12.4",
        "runtime": "12.4", "nvrtc": "12.4", "cupy": "14.2.0"})
    assert mod.main([str(tmp_path / "t.json")]) == 2
    assert "SKIPPED: lesson 6's kernels are sm_90a code" in capsys.readouterr().out
