"""The Colab T4 path (issue 17), with the GPU faked: helpers.device believes it found a Tesla T4,
compute capability 7.5, which has FP16 WMMA (sm_70) but no BF16 or TF32 WMMA, no cp.async or
mma.sync m16n8k16 (sm_80) and no wgmma (sm_90a). CuPy is replaced by a module that fails any use, so
each gated call below must decide before it touches the GPU: a CourseError whose problem is one line
(why, this GPU) and whose fix says what to look at instead, or the recorded numbers with one printed
line - never a CuPy traceback. One test per gated helper call of each lesson's cells."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import helpers
import helpers.device
import helpers.memory
import helpers.record
from helpers import launch
from helpers.device import GPUInfo, peaks_for
from helpers.errors import ArchitectureError, CourseError, InputError
from helpers.experiments import NEEDS, load_all, run_or_load
from helpers.formats import to_bf16_bits
from helpers.kernels import HOPPER_RUNGS, KERNELS, RUNGS

T4_CC = (7, 5)
GATED = sorted(k for k, spec in KERNELS.items() if spec.unsupported(T4_CC))


class _NoCuPy(types.ModuleType):
    """Stands in for CuPy: a gated path that reaches it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"cupy.{name} was used on the faked T4: the gate came too late")


@pytest.fixture
def t4(monkeypatch):
    info = GPUInfo(name="Tesla T4", cc=T4_CC, sms=40, l2_bytes=4 << 20, mem_bytes=15 << 30, mem_bw_gbs=320.0,
                   driver="12.4", runtime="12.8", nvrtc="12.8", cupy="(faked)", peaks=peaks_for("Tesla T4"))
    monkeypatch.setattr(helpers.device, "_probe_gpu", lambda: info)
    monkeypatch.setenv("COURSE_DEVICE", "gpu")
    for name in [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupy_backends")]:
        monkeypatch.delitem(sys.modules, name)          # put back after the test
    monkeypatch.setitem(sys.modules, "cupy", _NoCuPy("cupy"))
    monkeypatch.setitem(sys.modules, "cupy_backends", _NoCuPy("cupy_backends"))     # NVRTC, the driver
    helpers.device.backend.cache_clear()
    assert helpers.backend().gpu.cc == T4_CC
    yield info
    helpers.device.backend.cache_clear()


def _inputs(spec, M=33, N=17, K=49):
    A, B = helpers.random_matrix(M, K, seed=1), helpers.random_matrix(K, N, seed=2)
    if spec.inputs == "bf16":
        return to_bf16_bits(A), to_bf16_bits(B)
    return A.astype(spec.in_dtype), B.astype(spec.in_dtype)


def _one_line(err: CourseError) -> None:
    assert isinstance(err, CourseError), f"{type(err).__name__}: {err}"
    assert "\n" not in err.problem and err.problem.endswith("."), err.problem
    assert "7.5" in err.problem, err.problem                           # names this GPU's capability
    assert "COURSE_DEVICE=cpu" in err.fix and "recorded" in err.fix    # and what to look at instead


def _recorded_with_one_line(capsys, out, name):
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1, printed
    line = printed[0]
    assert line.startswith(f"experiment {name} needs ") and "Tesla T4, is 7.5" in line, line
    assert "showing the numbers recorded on NVIDIA H200" in line, line
    assert not out.live and out.source.endswith("(Tesla T4 cannot run it)") and out.data


# --------------------------------------------------------------------------- the registry on a T4
def test_what_a_t4_cannot_run():
    assert set(GATED) == ({"wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel", "ladder_cp_async", "ladder_mma_sync",
                           "ladder_wgmma_tma"} | {r.name for r in HOPPER_RUNGS.values()})
    for name in ("gemm_fp32_kernel", "wmma_gemm_naive", "wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel",
                 "ladder_smem_tiled", "ladder_smem_padded", "ladder_vec16"):     # lessons 00-02, rungs 1-4
        assert KERNELS[name].skip_message(T4_CC) is None, name


@pytest.mark.parametrize("name", GATED)
def test_gemm_of_a_gated_kernel_says_why_in_one_line(t4, name):
    """helpers.gemm (lesson 03's kernel loop, lesson 05 and 06's calls), gpu_kernel and kernel_resources:
    an ArchitectureError before any CuPy call or child process, isolated kernels included."""
    spec = KERNELS[name]
    A, B = _inputs(spec)
    for call in (lambda: helpers.gemm(name, A, B, pad=True), lambda: launch.gpu_kernel(name),
                 lambda: launch.kernel_resources(name)):
        with pytest.raises(ArchitectureError) as ei:
            call()
        _one_line(ei.value)


def test_input_mistakes_read_as_on_the_cpu(t4, set_device):
    """Lesson 03 shows the BF16 kernel refusing FP32 arrays: the same InputError on a T4 as on the CPU
    (validation comes first), so the cell's compared output is the same."""
    A, B = helpers.random_matrix(200, 72, seed=0), helpers.random_matrix(72, 136, seed=1)
    with pytest.raises(InputError) as on_t4:
        helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
    set_device("cpu")
    with pytest.raises(InputError) as on_cpu:
        helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
    assert str(on_t4.value) == str(on_cpu.value)


@pytest.mark.parametrize("keys", [[5, 6, 7], list(HOPPER_RUNGS)], ids=["lesson05", "lesson06"])
def test_verdicts_of_gated_rungs_are_one_line_each(t4, keys):
    """helpers.launch.verdicts (lessons 05 and 06): a rung this GPU cannot run is one 'skipped' line."""
    A = helpers.random_matrix(33, 49, seed=1).astype(np.float16)
    B = helpers.random_matrix(49, 17, seed=2).astype(np.float16)
    lines = launch.verdicts([helpers.kernels.ALL_RUNGS[k] for k in keys], A, B)
    assert len(lines) == len(keys)
    for k, line in zip(keys, lines):
        assert line.startswith(f"rung {k} (") and " skipped: it needs " in line and "this GPU is 7.5." in line
        assert "\n" not in line


def test_lesson06_says_where_its_numbers_come_from(t4):
    why = HOPPER_RUNGS[8].unsupported(helpers.backend().gpu.cc)
    assert why == "it needs sm_90a, i.e. a Hopper GPU (compute capability 9.0: wgmma exists on no other); this GPU is 7.5."


# --------------------------------------------------------------------------- experiments: recorded instead
RECORDED_ON_A_T4 = [("tf32_env", {}), ("mixed_emulator_probe", {}), ("error_vs_k", {}), ("tc_probes", {}),
                    ("ladder", {}), ("hopper", "LIVE"), ("fp8", {}), ("fp8_convert", {})]


@pytest.mark.parametrize("name, kwargs", RECORDED_ON_A_T4, ids=[n for n, _ in RECORDED_ON_A_T4])
def test_gated_experiments_show_the_record_with_one_line(t4, capsys, name, kwargs):
    """run_or_load (lesson 03's tf32_env, lesson 04's tc_probes and error_vs_k through P.recorded, lesson
    05's ladder, lesson 06's hopper with its live settings): the recorded H200 data and one line."""
    from helpers.experiments import hopper as H
    from helpers.experiments import precision as P

    kw = H.LIVE if kwargs == "LIVE" else kwargs
    out = P.recorded(name) if name in ("tc_probes", "error_vs_k") else run_or_load(name, **kw)
    _recorded_with_one_line(capsys, out, name)


def test_every_experiment_that_needs_sm80_or_sm90a_is_marked():
    """An experiment that launches a kernel a T4 cannot run declares it (helpers.experiments.NEEDS), so
    run_or_load never starts it there; the FP32 and FP16 ones run live on a T4."""
    load_all()
    gated = {n for n, need in NEEDS.items() if need.unsupported(T4_CC)}
    assert gated == {n for n, _ in RECORDED_ON_A_T4}
    for name in ("fp32_block_shapes", "fp32_timing_method", "fp32_tiled_solution", "wmma_fragment_maps",
                 "wmma_edge_corruption", "wmma_variants_speed", "wmma_nvrtc_ptx", "emulator_match",
                 "check_false_alarms"):
        assert NEEDS[name].unsupported(T4_CC) is None, name
    assert NEEDS["ladder"].unsupported((8, 0)) is None and NEEDS["hopper"].unsupported((10, 0))
    assert NEEDS["fp8"].unsupported((8, 9)) is None and NEEDS["fp8"].unsupported((8, 6))


def test_no_undeclared_experiment_meets_a_gate_on_a_t4(t4, monkeypatch):
    """Every experiment not marked in NEEDS is started on the faked T4: it must get as far as the GPU work
    (the stand-in CuPy, or a child process, stops it there) without an ArchitectureError, which would
    mean it launches a kernel a T4 lacks and should be marked (then run_or_load shows the record)."""
    import subprocess

    from helpers.experiments import REGISTRY

    def child(*a, **k):
        raise AssertionError("a child process was started")

    monkeypatch.setattr(subprocess, "run", child)
    monkeypatch.setattr(subprocess, "Popen", child)
    load_all()
    for name, fn in sorted(REGISTRY.items()):
        if NEEDS[name].unsupported(T4_CC):
            continue
        try:
            fn()
        except ArchitectureError as err:
            pytest.fail(f"experiment {name} launches what a T4 cannot run ({err.problem}): give it min_cc/needs")
        except (AssertionError, CourseError, ImportError):
            pass                      # it reached the GPU work (or needs a tool this machine lacks)


# --------------------------------------------------------------------------- lesson 07: FP8
FP8 = ["fp8_mma_sync", "fp8_wgmma", "fp8_promote_128"]


@pytest.mark.parametrize("kernel", FP8)
def test_lesson07_fp8_kernels_run_their_cpu_model_and_say_so(t4, kernel):
    """Lesson 07's kernel loop: fp8_gemm.matmul gives the CPU model's C and one line naming why; the
    check then runs as on the CPU."""
    from helpers import fp8_gemm
    from helpers.experiments import fp8 as fp8x

    A, B = fp8x.random_inputs(57, 40, 72, "normal", seed=1)
    C, where = fp8_gemm.matmul(kernel, A, B)
    assert where == f"CPU model of the H200's arithmetic (Tesla T4 (sm_75) cannot run {kernel})"
    assert isinstance(C, np.ndarray) and fp8x.check_fp8(kernel, C, A, B).passed


@pytest.mark.parametrize("kernel", ["fp8_mma_sync", "fp8_wgmma", "fp8_promote_32"])
def test_lesson07_fp8_launches_say_why_in_one_line(t4, kernel):
    from helpers import fp8_gemm

    A8 = fp8_gemm.encode_e4m3(np.ones((64, 64)))
    for call in (lambda: fp8_gemm.gemm_fp8(kernel, A8, A8), lambda: fp8_gemm.launcher(kernel, A8, A8)):
        with pytest.raises(ArchitectureError) as ei:
            call()
        err = ei.value
        assert "\n" not in err.problem and err.problem.endswith("this GPU, Tesla T4, is 7.5.")
        assert "COURSE_DEVICE=cpu" in err.fix and "recorded" in err.fix


# --------------------------------------------------------------------------- sweeps: live, less what cannot run
@pytest.mark.parametrize("names", [["gemm_fp32_kernel", "cublas_fp32", "cublas_tf32"], None],
                         ids=["lesson01", "lesson03"])
def test_sweeps_leave_out_what_a_t4_cannot_run_in_one_line(t4, monkeypatch, capsys, names):
    """helpers.sweep (lesson 01's FP32 sweep with cuBLAS TF32; lesson 03's every variant): the kernels and
    baselines this GPU runs are measured live, the others are named in one line, and none is started."""
    from helpers.experiments.mixed import VARIANTS

    names = names or list(VARIANTS)
    asked = []
    monkeypatch.setattr(helpers.memory, "cap_sizes", lambda sizes, what: (list(sizes), None))
    monkeypatch.setattr(helpers.memory, "release", lambda: None)
    monkeypatch.setattr(helpers.record, "measure_size", lambda m, n, k, seed, log, names: asked.append(names) or [])
    out = helpers.sweep(names, [256, 512])
    gated = {"wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel", "cublas_tf32"} & set(names)
    assert asked == [[n for n in names if n not in gated]] * 2
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1 and printed[0].startswith("not measured on Tesla T4: ")
    assert all(g in printed[0] for g in gated) and "compute capability 8.0" in printed[0]
    assert out.live


def test_make_record_leaves_out_what_a_t4_cannot_run(t4):
    keep, line = helpers.record.left_out(list(KERNELS) + list(helpers.cublas.BASELINES), helpers.backend().gpu)
    assert "wmma_bf16_gemm_kernel" in line and "cublas_tf32" in line and "\n" not in line
    assert "gemm_fp32_kernel" in keep and "cublas_fp16_acc16" in keep and "wmma_bf16_gemm_kernel" not in keep
