"""Lesson 7's FP8 GEMM: the CPU models against the recorded H200 outputs, the check on FP8 results
(it must reject wrong ones at the lesson's sizes), and the errors of the FP8 front ends."""
import numpy as np
import pytest
from conftest import full_only, sweep

from helpers import emulate as E
from helpers import fp8_gemm as F
from helpers.errors import InputError
from helpers.experiments import fp8 as X
from helpers.results import load_latest

WGMMA = ["fp8_wgmma", "fp8_wgmma_n128", "fp8_promote_32", "fp8_promote_128", "fp8_promote_512"]


@pytest.fixture(scope="module")
def data():
    rec = load_latest()
    exps = rec.meta.get("experiments", {})
    if "fp8" not in exps:
        pytest.fail(f"the committed record {rec.path.name} has no fp8 experiment")
    return exps["fp8"]


@pytest.mark.parametrize("kernel", list(F.FP8_KERNELS))
def test_model_reproduces_recorded_probes(data, kernel):
    pr, A, B = X.probe_matrices()
    assert [p["kind"] for p in pr] == data["probes"]["kind"]
    got = np.diagonal(X.cpu_model(kernel)(A, B))
    assert np.array_equal(got, np.array(data["probes"]["outputs"][kernel], dtype=np.float32))


def test_gap_rows_name_the_small_term(data):
    rows = {r["gap g"]: r for r in X.gap_rows(data)}
    assert rows[0]["small term"] == 2.0 ** 16 and rows[13]["small term"] == 8.0
    assert rows[13]["fp8_wgmma"] == 8.0 and rows[14]["fp8_wgmma"] == 0.0
    neg = {r["gap g"]: r for r in X.gap_rows(data, "gap_neg_frac")}
    assert neg[11]["small term"] == -60.0 and neg[11]["fp8_wgmma"] == -56.0      # cut toward zero


def test_recorded_facts(data):
    assert X.bits_kept(data, "fp8_wgmma") == 14
    assert X.block_survivors(data, "fp8_wgmma")[0] == 32
    assert X.block_survivors(data, "fp8_mma_sync")[:4] == [2, 3, 6, 7]
    assert X.max_significant_bits(data)["fp8_wgmma"] == 14
    assert all(r["differ"] == 0 and r["1024^3 differ"] == 0 and r["probes differ"] == 0 for r in X.match_rows(data))
    timed = [r for r in data["speed"] if r["kernel"].startswith("fp8_")]
    assert timed and all(r["check_passed"] for r in timed)
    assert all("sm_mhz" in r for r in data["speed"] if "tflops" in r)


def test_model_keeps_14_bits():
    a = np.zeros((1, 32)); b = np.zeros((32, 1))
    a[0, :2], b[:2, 0] = [256.0, 2.0], [256.0, 4.0]             # 2^16 + 2^3: the 14th bit from 2^16: kept
    assert E.fp8_wgmma_gemm(a, b)[0, 0] == 65536 + 8
    b[1, 0] = 2.0                                               # 2^16 + 2^2: the 15th: cut
    assert E.fp8_wgmma_gemm(a, b)[0, 0] == 65536
    assert E.fp8_mma_sync_gemm(a, b)[0, 0] == 65536 + 4         # the FP16 path keeps it


def test_promotion_is_an_fp32_add():
    A, B = X.random_inputs(16, 16, 512, "uniform", 3)
    parts = [E.fp8_wgmma_gemm(A[:, k:k + 128], B[k:k + 128]) for k in range(0, 512, 128)]
    total = np.zeros((16, 16), np.float32)
    for p in parts:
        total = total + p
    assert np.array_equal(E.fp8_wgmma_gemm(A, B, nc=128), total)
    assert not np.array_equal(E.fp8_wgmma_gemm(A, B, nc=128), E.fp8_wgmma_gemm(A, B))


@pytest.mark.parametrize("kernel,shape,dist", sweep(      # K = 8192: that of the largest timed product
    [(k, s, d) for s, d in [((57, 40, 136), "normal"), ((64, 48, 4096), "uniform"), ((33, 17, 1000), "normal"),
                            ((64, 64, 8192), "uniform"), ((64, 64, 8192), "normal")]
     for k in ["fp8_wgmma", "fp8_promote_128", "fp8_mma_sync"]],
    lambda c: c[1] == (57, 40, 136) or c in [("fp8_promote_128", (64, 64, 8192), "uniform"),
                                             ("fp8_mma_sync", (33, 17, 1000), "normal")]))
def test_check_passes_model_and_rejects_wrong_results(kernel, shape, dist):
    m, n, k = shape
    A, B = X.random_inputs(m, n, k, dist, 7)
    C = X.cpu_model(kernel)(A, B)
    assert X.check_fp8(kernel, C, A, B, fitted=True).passed
    wrong = {"zeros": np.zeros_like(C), "x1.003": C * np.float32(1.003), "sign": -C,
             "rows permuted": C[::-1].copy(), "exact FP32": (A @ B).astype(np.float32),
             "one element off": C.copy()}
    wrong["one element off"][m // 2, n // 2] += np.float32(max(1.0, abs(C[m // 2, n // 2])))
    for other in ("fp8_wgmma", "fp8_mma_sync"):
        if other != kernel and not (kernel == "fp8_promote_128" and other == "fp8_wgmma" and k <= 128):
            wrong[f"computed as {other}"] = X.cpu_model(other)(A, B)
    for what, W in wrong.items():
        if np.array_equal(W, C):
            continue
        assert not X.check_fp8(kernel, W, A, B, fitted=True).passed, what


def test_encode_refuses_out_of_range_and_rounds_once():
    with pytest.raises(InputError, match="448"):
        F.encode_e4m3(np.array([500.0]))
    with pytest.raises(InputError):
        F.encode_e4m3(np.array([np.nan]))
    x = np.array([1 + 2 ** -4 + 2 ** -30])                      # just above a tie: rounds up to 1.125
    assert F.decode_e4m3(F.encode_e4m3(x))[0] == 1.125


def test_front_ends_refuse_bad_input(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    with pytest.raises(InputError, match="no FP8 kernel"):
        F.matmul("fp8_nope", np.ones((2, 32)), np.ones((32, 2)))
    with pytest.raises(InputError, match="columns"):
        F.matmul("fp8_wgmma", np.ones((2, 32)), np.ones((16, 2)))
    with pytest.raises(InputError, match="uint8"):
        F.gemm_fp8("fp8_wgmma", np.ones((2, 32), np.float32), np.ones((2, 32), np.uint8))
    with pytest.raises(InputError, match="not E4M3"):
        E.fp8_wgmma_gemm(np.full((2, 32), 0.1), np.ones((32, 2)))
    with pytest.raises(InputError, match="32"):
        E.fp8_wgmma_gemm(np.ones((2, 64)), np.ones((64, 2)), nc=48)


def test_matmul_on_cpu_says_so(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    from helpers import device
    if hasattr(device, "_BACKEND"):
        monkeypatch.setattr(device, "_BACKEND", None, raising=False)
    A, B = X.random_inputs(8, 8, 64, "normal", 1)
    C, where = F.matmul("fp8_wgmma", A, B)
    assert "CPU model" in where
    assert np.array_equal(C, E.fp8_wgmma_gemm(A, B))


def test_model_parameters_validated():
    with pytest.raises(ValueError):
        E.TensorCoreModel(32, -10, "x", result_bits=14, fp32_rounding="nearest")
    with pytest.raises(ValueError):
        E.TensorCoreModel(32, -30, "x")


def test_recorded_gpu_conversion_is_saturating():
    conv = load_latest().meta["experiments"]["fp8_convert"]
    from helpers.fp8 import saturating_cast
    for name in ("fp8_e4m3", "fp8_e5m2"):
        assert conv[name]["differ_from_saturating_cast"] == 0
        for v, g in conv[name]["gpu_of"].items():
            assert float(saturating_cast(np.array([float(v)], np.float32), name)[0].astype(np.float32)) == g
    assert conv["values"] == X.conversion_inputs().size


def test_the_ring_depth_of_the_wgmma_kernels_is_a_probe_knob():
    """helpers.fp8_gemm.launcher(stages=...) (lab/probes/fp8_stages.py): F8_STAGES is 4 in each wgmma kernel's file
    unless -DF8_STAGES says otherwise; the shared memory follows it; a depth that does not fit in 227 KB, or a
    kernel without a ring (mma.sync), is refused before any GPU is needed, with the fix."""
    import re
    from pathlib import Path

    from helpers.errors import InputError
    from helpers.fp8_gemm import FP8_KERNELS, launcher

    for f in sorted({s.file for s in FP8_KERNELS.values() if s.wgmma}):
        src = (Path(__file__).resolve().parents[1] / "kernels" / f).read_text()
        assert re.search(r"#ifndef F8_STAGES\n#define F8_STAGES 4\b", src), f
    n128, n256 = FP8_KERNELS["fp8_promote_128"], FP8_KERNELS["fp8_wgmma"]
    assert n128.smem == n128.smem_for(4) == 4 * 32 * 1024 + 1152 and n256.smem == 4 * 48 * 1024 + 1152
    assert n128.smem_for(7) <= 227 * 1024 < n128.smem_for(8) and n256.smem_for(4) <= 227 * 1024 < n256.smem_for(5)
    A8 = np.zeros((16, 32), np.uint8)
    for name, stages in (("fp8_wgmma", 5), ("fp8_promote_128", 8), ("fp8_promote_128", 1), ("fp8_mma_sync", 6)):
        with pytest.raises(InputError, match="stages"):
            launcher(name, A8, A8, stages=stages)


@full_only                   # nvcc builds: pytest --full (make gpu-check)
def test_the_lean_kernels_added_descriptors_are_the_descriptors_of_the_address():
    """fp8_promote_2acc_lean builds its descriptors once and reaches stage s, k-step ks by adding (s * STAGE + 32 ks)
    / 16 to the low word of stage 0's (desc_split, desc_plus): that equals desc_kmajor of the address itself, for both
    operands, both consumers, every stage that fits in 227 KB and both tile widths (the address field cannot carry:
    shared addresses stay below 2^18), including from any base the dynamic shared memory may start at (1024-byte
    aligned); with nvcc, only the lean kernel's PTX splits a descriptor, the other FP8 kernels rebuild theirs."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def desc_kmajor(addr):                        # the kernels' encoding (hopper_wgmma.cuh), in Python
        return ((addr & 0x3FFFF) >> 4) | ((16 >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)

    def desc_plus(d0, off16):                     # desc_split + desc_plus: the low word plus the offset, mod 2^32
        return (d0 & 0xFFFFFFFF00000000) | ((d0 + off16) & 0xFFFFFFFF)

    for bn in (128, 256):
        stage = 128 * 128 + bn * 128
        stages = max(s for s in range(1, 9) if s * stage + 1152 <= 227 * 1024)
        for base in range(0, 0x40000 - stages * stage, 1024 * 37):
            for a0 in (base, base + 64 * 128, base + 128 * 128):      # A of consumer 0 and 1, and B
                for s in range(stages):
                    for ks in range(4):
                        off = s * stage + 32 * ks
                        assert desc_plus(desc_kmajor(a0), off >> 4) == desc_kmajor(a0 + off), (bn, base, s, ks)
    assert desc_plus(desc_kmajor(0x3FC00), 0x800 >> 4) != desc_kmajor(0x3FC00 + 0x800)   # past 2^18: it carries
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return
    split = set()
    for f in sorted({s.file for s in F.FP8_KERNELS.values() if s.wgmma}):
        out = subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-ptx",
                              f"-I{root / 'kernels'}", str(root / "kernels" / f), "-o", "-"], capture_output=True,
                             text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        for entry in re.split(r"\n(?=\.visible \.entry )", out.stdout)[1:]:     # one kernel's PTX each
            if "mov.b64 {" in entry:
                split.add(re.match(r"\.visible \.entry (\w+)", entry).group(1))
    assert split == {"fp8_promote_2acc_lean"}


def test_the_lean_two_sum_kernel_builds_with_six_stages():
    """fp8_promote_2acc_lean's registry entry: 128 x 128 tiles, promotion every 128 products, 6 stages
    (build_options: -DF8_STAGES=6; shared memory smem_for(6), inside 227 KB)."""
    lean = F.FP8_KERNELS["fp8_promote_2acc_lean"]
    assert (lean.bn, lean.nc, lean.stages) == (128, 128, 6)
    assert lean.build_options() == ("-DF8_STAGES=6",) and lean.smem == lean.smem_for(6) <= 227 * 1024
    assert lean.build_options(4) == ()


def test_the_registry_runs_two_kernels_on_128_ctas_and_never_more_than_the_sms():
    """Fp8Kernel.grid_ctas: one CTA per SM, but 128 for fp8_wgmma_store and fp8_promote_2acc_lean, and never more CTAs
    than SMs (a GPU of 114 SMs gets 114: all resident)."""
    K = F.FP8_KERNELS
    assert {k for k, s in K.items() if s.ctas} == {"fp8_wgmma_store", "fp8_promote_2acc_lean"}
    assert K["fp8_wgmma_store"].grid_ctas(132) == 128 == K["fp8_promote_2acc_lean"].grid_ctas(132)
    assert K["fp8_wgmma_store"].grid_ctas(114) == 114 and K["fp8_wgmma"].grid_ctas(132) == 132
    assert F.persistent_grid(K["fp8_wgmma_store"], 4096, 4096, K["fp8_wgmma_store"].grid_ctas(132)) == 128


def test_the_persistent_grid_is_one_cta_per_sm_and_no_more_than_the_tiles():
    """persistent_grid: one CTA per SM, no more than the 128-row tiles (can fail: 3 tiles give 3 CTAs, not 132)."""
    lean = F.FP8_KERNELS["fp8_promote_2acc_lean"]
    assert F.persistent_grid(lean, 4096, 4096, 132) == 132 and F.persistent_grid(lean, 128, 384, 132) == 3
    assert F.persistent_grid(F.FP8_KERNELS["fp8_wgmma"], 256, 512, 132) == 4           # 2 x 2 tiles of 128 x 256

def test_the_store_kernel_is_its_base_kernel_with_the_tma_stores_buffers():
    """fp8_wgmma_store's registry entry is fp8_wgmma's (tile, no promotion, stages) plus the 32 KB of C buffers of its
    file's F8_EPI_BYTES (inside 227 KB), and the launcher passes it a map of C."""
    import math
    import re
    from pathlib import Path

    root = Path(F.__file__).parent.parent
    src = (root / "kernels" / F.FP8_KERNELS["fp8_wgmma_store"].file).read_text()
    n, b = F.FP8_KERNELS["fp8_wgmma_store"], F.FP8_KERNELS["fp8_wgmma"]
    assert (n.bn, n.nc, n.stages, n.tstore, b.tstore) == (b.bn, b.nc, b.stages, True, False)
    assert n.smem == b.smem + F.F8_EPI_BYTES <= 227 * 1024
    epi = re.search(r"^#define F8_EPI_BYTES \(([\d *]+)\)", src, re.M).group(1)
    assert F.F8_EPI_BYTES == 32 * 1024 == math.prod(int(x) for x in epi.split("*"))
    launcher = Path(F.__file__).read_text()
    assert "if spec.tstore:" in launcher and "tensor_map_2d(C, 64, 32)" in launcher


def test_check_without_its_model_is_the_bounds_alone():
    """check_fp8(model=False) leaves out the comparison with the model and keeps the bounds: one element one unit up
    passes it and fails the whole check, zeros fail both, and the kernel's C passes both (what
    lab/probes/reject_wrong_fp8.py reports per wrong result)."""
    A, B = X.random_inputs(24, 40, 4096, "normal", 4096)
    C = X.cpu_model("fp8_wgmma")(A, B)
    up = C.copy()
    up[3, 5] = np.nextafter(C[3, 5], np.float32(np.inf))
    alone = X.check_fp8("fp8_wgmma", up, A, B, fitted=True, model=False)
    assert alone.passed and alone.model == "none"
    assert not X.check_fp8("fp8_wgmma", up, A, B, fitted=True).passed
    assert not X.check_fp8("fp8_wgmma", np.zeros_like(C), A, B, fitted=True, model=False).passed
    assert X.check_fp8("fp8_wgmma", C, A, B, fitted=True, model=False).passed


@pytest.mark.parametrize("kernel,ctas", [("fp8_wgmma_store", 0), ("fp8_wgmma_store", 2.5), ("fp8_wgmma_store", True),
                                         ("fp8_mma_sync", 128)])
def test_launcher_refuses_a_grid_it_cannot_use(kernel, ctas):
    """launcher's ctas (the persistent grid's size, lab/probes/fp8_stages.py --ctas): a whole number >= 1, and only
    for the wgmma kernels; refused before any GPU is asked for, with the fix named."""
    A8, Bt8 = np.zeros((64, 128), np.uint8), np.zeros((64, 128), np.uint8)
    with pytest.raises(InputError, match="ctas=") as e:
        F.launcher(kernel, A8, Bt8, ctas=ctas)
    assert "leave ctas out" in str(e.value)


@full_only                   # nvcc builds: pytest --full (make gpu-check)
def test_the_period_switch_removes_the_wait_ptxas_injects_into_promote_256_and_512(tmp_path):
    """Lesson 7's trap: with F8_PERIOD=0 (the period decided at run time) ptxas injects a warpgroup.wait (its message
    C7517) into fp8_promote_256 and fp8_promote_512 and no other kernel of kernels/fp8_promote_sm90a.cu; with 2 (the
    default: fp8_promote_128's stage, the adds at a period's end) into none. Any other value stops the build with a
    message naming the two builds."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    from helpers.compile import KERNEL_DIR

    src = (KERNEL_DIR / "fp8_promote_sm90a.cu").read_text()
    assert re.search(r"#ifndef F8_PERIOD\n#define F8_PERIOD 2\n", src)
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    injected = {}
    def build(opt):
        return subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o",
                               str(tmp_path / "k.cubin"), "-Xptxas", "-v", opt, f"-I{KERNEL_DIR}",
                               str(KERNEL_DIR / "fp8_promote_sm90a.cu")], capture_output=True, text=True, timeout=600)

    for opt in ("-DF8_PERIOD=1", "-DF8_PERIOD=3"):      # neither is a build of the file
        p = build(opt)
        assert p.returncode != 0 and "F8_PERIOD is 0 (the period decided at run time) or 2 (the default)" in p.stderr, opt
    for opt in ("-DF8_PERIOD=0", "-DF8_PERIOD=2", "-DCOURSE_DEFAULT_BUILD"):
        p = build(opt)
        assert p.returncode == 0, p.stderr
        injected[opt] = set(re.findall(r"\(C7517\) warpgroup\.wait is injected .* in function '(\w+)'", p.stdout + p.stderr))
    assert injected == {"-DF8_PERIOD=0": {"fp8_promote_256", "fp8_promote_512"}, "-DF8_PERIOD=2": set(),
                        "-DCOURSE_DEFAULT_BUILD": set()}


def test_try_period_refuses_builds_that_do_not_exist_and_shows_the_record_without_a_gpu():
    """fp8x.try_period: any F8_PERIOD but 0 and 2 is refused with the fix named, as is a kernel the switch does not
    change; without a Hopper GPU it returns the record's rows, marked so: each build over fp8_promote_128 timed in the
    same run (period_rows), build 0 slower than it at 4096^3 and build 2 faster."""
    for kw in (dict(builds=(1,)), dict(builds=(0, 3)), dict(builds=()), dict(kernel="fp8_promote_128")):
        with pytest.raises(InputError):
            X.try_period(**kw)
    for k in ("fp8_promote_256", "fp8_promote_512"):
        rows = X.try_period(builds=(0, 2), kernel=k)
        assert [r["build"] for r in rows] == [0, 2] and {r["check"] for r in rows} == {"recorded"}
        assert rows[0]["vs_128"] < 1 < rows[1]["vs_128"]
    rec = {(r["n"], r["kernel"], r["build"]): r for r in X.period_rows(load_latest().meta["experiments"]["fp8"])}
    assert all(rec[n, "fp8_promote_256", 0]["vs_128"] < 1 for n in (4096, 8192))      # "slower than every 128"
    only = X.period_rows({"speed": load_latest().meta["experiments"]["fp8"]["speed"]})  # a record of one timing
    assert {r["build"] for r in only} == {2}

def test_launcher_refuses_a_switch_the_kernels_file_does_not_have():
    """A -D option a kernel's file never uses would build the kernel without it, silently: the launcher refuses it
    before any GPU is asked for. Knobs of the file (F8_STAGES, F8_PERIOD) and of the shared headers (MBAR_WAIT) pass;
    a research switch (the lab's) passes only with source= a copy that has it."""
    A8 = np.zeros((64, 128), np.uint8)
    with pytest.raises(InputError, match="F8_DESC_ADD: not a macro of kernels/fp8_promote_sm90a.cu"):
        F.launcher("fp8_promote_128", A8, A8, options=("-DF8_DESC_ADD=1",))
    K = F.FP8_KERNELS
    assert F.unknown_macros(K["fp8_promote_256"], ("-DF8_PERIOD=0", "-DF8_STAGES=6", "-DMBAR_WAIT=1")) == []
    assert F.unknown_macros(K["fp8_wgmma"], ("-DF8_PERIOD=0", "-DF8_UNIFORM=1")) == ["F8_PERIOD", "F8_UNIFORM"]
    assert F.unknown_macros(K["fp8_promote_2acc_lean"], ("-DF8_DESC_ADD=1", "-DF8_FLOW=1", "-DF8_STAGES=6")) == \
        ["F8_DESC_ADD", "F8_FLOW"]
    assert F.unknown_macros(K["fp8_wgmma"], ("-DF8_UNIFORM=1",), source="#if F8_UNIFORM\n#endif\n") == []
