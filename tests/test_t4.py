"""The lessons on GPUs other than the H200 (issues 17 and 27), with the GPU faked: helpers.device believes it
found a Colab T4 (compute capability 7.5), a GeForce RTX 5090 (12.0, the RTX 50 family) or a B200 (10.0).
Every test runs once per GPU; its id carries the GPU and its target (T4-sm_75, RTX5090-sm_120, B200-sm_100).
A test of every kernel or experiment goes through them as subtests (each one reported apart if it fails).

* T4: FP16 WMMA (sm_70), but no BF16 or TF32 WMMA, no cp.async or mma.sync m16n8k16 (sm_80), no FP8 and
  no wgmma (sm_90a).
* RTX 50 (12.0) and B200 (10.0): everything up to sm_89 (rungs 1-6 of lesson 5, BF16 and TF32, the FP8
  mma.sync kernel of kernels/fp8.cu), but no sm_90a code: wgmma exists on Hopper only, so rung 7, lesson
  6's rungs and the wgmma FP8 kernels are out (the B200's tcgen05 and tensor memory are sm_100a code the
  course does not have).

CuPy is replaced by a module whose every use raises ReachedTheGPU, so each call below is decided before it
touches the GPU: a call that cannot run there gives a CourseError whose problem is one line (why, this
GPU) and whose fix says what to look at instead, or the recorded numbers with one printed line - never a
CuPy traceback; a call that can run there must get as far as CuPy (ReachedTheGPU). Nothing may ask for
sm_90a code on a GPU that is not 9.0 (helpers.compile.get_arch_kernel is watched). The sets of what each
GPU cannot run are written out here, not computed from the registry."""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

import helpers
import helpers.compile
import helpers.device
import helpers.memory
import helpers.record
from helpers import launch
from helpers.device import GPUInfo, peaks_for
from helpers.errors import ArchitectureError, CourseError, InputError
from helpers.experiments import NEEDS, REGISTRY, load_all, run_or_load
from helpers.formats import to_bf16_bits
from helpers.fp8_gemm import FP8_KERNELS
from helpers.kernels import ALL_RUNGS, HOPPER_RUNGS, KERNELS, RUNGS

load_all()
EXPERIMENTS = sorted(REGISTRY)
HOPPER_NAMES = frozenset(r.name for r in HOPPER_RUNGS.values())
SM90A = frozenset({"ladder_wgmma_tma"}) | HOPPER_NAMES                       # wgmma: compute capability 9.0 only
SM80 = frozenset({"wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel", "ladder_cp_async", "ladder_mma_sync"})
WGMMA_FP8 = frozenset(k for k in FP8_KERNELS if k != "fp8_mma_sync")
NEED_SM80 = frozenset({"tf32_env", "mixed_emulator_probe", "error_vs_k", "tc_probes", "ladder"})
NEED_SM89 = frozenset({"fp8", "fp8_convert"})


@dataclass(frozen=True)
class FakeGPU:
    id: str
    info: GPUInfo
    cannot: frozenset            # kernels of the registry it cannot run
    recorded: frozenset          # experiments it shows the record of
    fp8_live: frozenset          # FP8 kernels it runs
    cannot_baselines: frozenset  # cuBLAS baselines it cannot run

    @property
    def cc(self):
        return self.info.cc

    @property
    def cc_text(self) -> str:
        return f"{self.cc[0]}.{self.cc[1]}"


def _info(name, cc, sms, l2_mib, mem_gib):
    """A GPUInfo as helpers.device._probe_gpu would make it (stand-in sizes: only the name, the compute
    capability and the peaks matter to the gates)."""
    peaks = peaks_for(name)
    return GPUInfo(name=name, cc=cc, sms=sms, l2_bytes=l2_mib << 20, mem_bytes=mem_gib << 30,
                   mem_bw_gbs=peaks.mem_gbs if peaks else None, driver="13.0", runtime="13.0", nvrtc="13.0",
                   cupy="(faked)", peaks=peaks)


GPUS = [
    FakeGPU("T4-sm_75", _info("Tesla T4", (7, 5), 40, 4, 15), SM80 | SM90A,
            NEED_SM80 | NEED_SM89 | {"hopper", "hopper_targets", "input_values"}, frozenset(),
            frozenset({"cublas_tf32"})),
    FakeGPU("RTX5090-sm_120", _info("NVIDIA GeForce RTX 5090", (12, 0), 170, 96, 32), SM90A,
            frozenset({"hopper", "hopper_targets", "input_values"}), frozenset({"fp8_mma_sync"}), frozenset()),
    FakeGPU("B200-sm_100", _info("NVIDIA B200", (10, 0), 148, 126, 179), SM90A,
            frozenset({"hopper", "hopper_targets", "input_values"}), frozenset({"fp8_mma_sync"}), frozenset()),
]


class ReachedTheGPU(AssertionError):
    """Raised by the stand-in CuPy: the call got past every gate to the GPU work."""


class _NoCuPy(types.ModuleType):
    """Stands in for CuPy (and NVRTC, the driver): any use raises ReachedTheGPU."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ReachedTheGPU(f"{self.__name__}.{name} was used on the faked GPU")


REAL_GET_ARCH_KERNEL = helpers.compile.get_arch_kernel


@pytest.fixture(params=GPUS, ids=[g.id for g in GPUS])
def gpu(request, monkeypatch):
    """The faked GPU of this test; after it, no sm_90a code may have been asked for (unless it is 9.0)."""
    fake = request.param
    monkeypatch.setattr(helpers.device, "_probe_gpu", lambda: fake.info)
    monkeypatch.setenv("COURSE_DEVICE", "gpu")
    for name in [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupy_backends")]:
        monkeypatch.delitem(sys.modules, name)          # put back after the test
    monkeypatch.setitem(sys.modules, "cupy", _NoCuPy("cupy"))
    monkeypatch.setitem(sys.modules, "cupy_backends", _NoCuPy("cupy_backends"))     # NVRTC, the driver
    monkeypatch.setattr(helpers.compile, "find_cuda_include_dirs", lambda *a, **k: [])  # no headers needed
    asked = []

    def watched(filename, name, cc, *a, **k):
        asked.append((filename, name, tuple(cc)))
        return REAL_GET_ARCH_KERNEL(filename, name, cc, *a, **k)

    monkeypatch.setattr(helpers.compile, "get_arch_kernel", watched)
    helpers.device.backend.cache_clear()
    assert helpers.backend().gpu.cc == fake.cc
    yield fake
    helpers.device.backend.cache_clear()
    if tuple(fake.cc) != (9, 0):
        assert not asked, f"sm_90a code was asked for on {fake.info.name}: {asked}"


def _inputs(spec, M=33, N=17, K=49):
    A, B = helpers.random_matrix(M, K, seed=1), helpers.random_matrix(K, N, seed=2)
    if spec.inputs == "bf16":
        return to_bf16_bits(A), to_bf16_bits(B)
    return A.astype(spec.in_dtype), B.astype(spec.in_dtype)


def _one_line(err: CourseError, gpu: FakeGPU) -> None:
    assert isinstance(err, CourseError), f"{type(err).__name__}: {err}"
    assert "\n" not in err.problem and err.problem.endswith("."), err.problem
    assert gpu.cc_text in err.problem, err.problem                     # names this GPU's capability
    assert "COURSE_DEVICE=cpu" in err.fix and "recorded" in err.fix    # and what to look at instead


def _recorded_with_one_line(capsys, out, name, gpu: FakeGPU):
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1, printed
    line = printed[0]
    assert line.startswith(f"experiment {name} needs ") and f"{gpu.info.name}, is {gpu.cc_text}" in line, line
    assert "showing the numbers recorded on NVIDIA H200" in line, line
    assert not out.live and out.source.endswith(f"({gpu.info.name} cannot run it)") and out.data


# --------------------------------------------------------------------------- the registry on this GPU
def test_what_this_gpu_cannot_run(gpu):
    cc = gpu.cc
    assert {k for k, spec in KERNELS.items() if spec.unsupported(cc)} == gpu.cannot
    for name in set(KERNELS) - gpu.cannot:
        assert KERNELS[name].skip_message(cc) is None, name
    assert {"gemm_fp32_kernel", "wmma_gemm_naive", "wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel",
            "ladder_smem_tiled", "ladder_smem_padded", "ladder_vec16"}.isdisjoint(gpu.cannot)   # 00-02, rungs 1-4
    if gpu.cc >= (8, 0):
        assert {RUNGS[k].name for k in range(1, 7)}.isdisjoint(gpu.cannot)                   # rungs 1-6
    assert {r.name for r in ALL_RUNGS.values() if r.only_cc == (9, 0)} <= gpu.cannot          # sm_90a: never here


def test_gemm_says_why_in_one_line_or_reaches_the_gpu(gpu, subtests):
    """helpers.gemm (lesson 03's kernel loop, lesson 05 and 06's calls), gpu_kernel and kernel_resources, for every
    kernel: an ArchitectureError before any CuPy call or child process for a kernel this GPU cannot run (isolated
    kernels included); for one it runs, the call gets to CuPy."""
    for name in sorted(KERNELS):
        with subtests.test(kernel=name):
            spec = KERNELS[name]
            A, B = _inputs(spec)
            for call in (lambda: helpers.gemm(name, A, B, pad=True), lambda: launch.gpu_kernel(name),
                         lambda: launch.kernel_resources(name)):
                if name in gpu.cannot:
                    with pytest.raises(ArchitectureError) as ei:
                        call()
                    _one_line(ei.value, gpu)
                else:
                    with pytest.raises(ReachedTheGPU):
                        call()


def test_input_mistakes_read_as_on_the_cpu(gpu, set_device):
    """Lesson 03 shows the BF16 kernel refusing FP32 arrays: the same InputError on this GPU as on the CPU
    (validation comes first), so the cell's compared output is the same."""
    A, B = helpers.random_matrix(200, 72, seed=0), helpers.random_matrix(72, 136, seed=1)
    with pytest.raises(InputError) as on_gpu:
        helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
    set_device("cpu")
    with pytest.raises(InputError) as on_cpu:
        helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
    assert str(on_gpu.value) == str(on_cpu.value)


@pytest.mark.parametrize("keys", [[5, 6, 7], list(HOPPER_RUNGS)], ids=["lesson05", "lesson06"])
def test_verdicts_of_rungs_are_one_line_each_or_reach_the_gpu(gpu, keys):
    """helpers.launch.verdicts (lessons 05 and 06): a rung this GPU cannot run is one 'skipped' line; one it
    runs is launched (it gets to CuPy)."""
    A = helpers.random_matrix(33, 49, seed=1).astype(np.float16)
    B = helpers.random_matrix(49, 17, seed=2).astype(np.float16)
    gated = [k for k in keys if ALL_RUNGS[k].name in gpu.cannot]
    lines = launch.verdicts([ALL_RUNGS[k] for k in gated], A, B)
    assert len(lines) == len(gated) and gated
    for k, line in zip(gated, lines):
        assert line.startswith(f"rung {k} (") and " skipped: it needs " in line, line
        assert f"this GPU is {gpu.cc_text}." in line and "\n" not in line
    for k in (k for k in keys if k not in gated):
        with pytest.raises(ReachedTheGPU):
            launch.verdicts([ALL_RUNGS[k]], A, B)


def test_lesson06_says_where_its_numbers_come_from(gpu):
    why = HOPPER_RUNGS[8].unsupported(helpers.backend().gpu.cc)
    assert why == (f"it needs sm_90a, i.e. a Hopper GPU (compute capability 9.0: wgmma exists on no other); "
                   f"this GPU is {gpu.cc_text}.")


def test_no_sm90a_code_is_compiled_here(gpu):
    """helpers.compile.get_arch_kernel itself refuses, in one line and before NVRTC or CuPy, to compile
    sm_90a code for a GPU that is not 9.0 (a `cc >= (9, 0)` slip elsewhere would be caught here)."""
    for filename, name in [("ladder_sm90a.cu", "ladder_wgmma_tma"),
                           ("hopper_cluster_probe_sm90a.cu", "hopper_cluster_probe"),
                           ("fp8_wgmma_sm90a.cu", "fp8_wgmma")]:
        with pytest.raises(ArchitectureError) as ei:
            REAL_GET_ARCH_KERNEL(filename, name, (9, 0))
        _one_line(ei.value, gpu)
        assert "sm_90a code" in ei.value.problem and gpu.info.name in ei.value.problem
    assert helpers.compile.arch_target((9, 0)) == "sm_90a" and helpers.compile.arch_target((12, 0)) == "sm_120a"
    assert helpers.backend().gpu.sm == f"sm_{gpu.cc[0]}{gpu.cc[1]}"     # sm_75, sm_120, sm_100: no 'a'


def test_peaks_of_this_gpu(gpu, capsys):
    """helpers.device's table has this GPU (with its source), and summary() prints it."""
    p = gpu.info.peaks
    assert p is not None and p.source and p.fp16 and p.mem_gbs
    assert (p.fp8 is not None) == (gpu.cc >= (8, 9))
    rows = helpers.summary()
    assert p.source in rows["peak (dense)"] and f"compute capability {gpu.cc_text}" in rows["GPU"]
    capsys.readouterr()


# --------------------------------------------------------------------------- experiments: live or recorded
def test_experiments_run_live_or_show_the_record_with_one_line(gpu, capsys, monkeypatch, subtests):
    """run_or_load of every experiment (every lesson; lesson 04's tc_probes and error_vs_k through P.recorded,
    lesson 06's hopper with its live settings): an experiment this GPU cannot run shows the recorded H200 data and
    one line; one it can run is started (here a stand-in that says it ran)."""
    from helpers.experiments import hopper as H
    from helpers.experiments import precision as P

    for name in EXPERIMENTS:
        with subtests.test(experiment=name):
            capsys.readouterr()
            if name not in gpu.recorded:
                monkeypatch.setitem(REGISTRY, name, lambda name=name, **kw: {"ran live": name})
            kw = H.LIVE if name == "hopper" else {}
            out = P.recorded(name) if name in ("tc_probes", "error_vs_k") else run_or_load(name, **kw)
            if name in gpu.recorded:
                _recorded_with_one_line(capsys, out, name, gpu)
            else:
                assert out.live and out.data == {"ran live": name} and not capsys.readouterr().out
                assert out.source == f"measured live on {gpu.info.name}"


def test_every_experiment_declares_the_gpu_it_needs(gpu):
    """An experiment that launches a kernel some GPU cannot run declares it (helpers.experiments.NEEDS), so
    run_or_load never starts it there."""
    assert {n for n, need in NEEDS.items() if need.unsupported(gpu.cc)} == gpu.recorded
    for name in ("fp32_block_shapes", "fp32_timing_method", "fp32_tiled_solution", "wmma_fragment_maps",
                 "wmma_edge_corruption", "wmma_variants_speed", "wmma_nvrtc_ptx", "emulator_match",
                 "check_false_alarms"):
        assert NEEDS[name].unsupported(gpu.cc) is None, name
    assert NEEDS["ladder"].unsupported((8, 0)) is None and NEEDS["hopper"].unsupported((10, 0))
    assert NEEDS["hopper"].unsupported((12, 0)) and NEEDS["hopper"].unsupported((9, 0)) is None
    assert NEEDS["fp8"].unsupported((8, 9)) is None and NEEDS["fp8"].unsupported((8, 6))


def test_no_undeclared_experiment_meets_a_gate(gpu, monkeypatch):
    """Every experiment this GPU may run is started on it: it must get as far as the GPU work (the stand-in
    CuPy, or a child process, stops it there) without an ArchitectureError, which would mean it launches a
    kernel this GPU lacks and should declare it (then run_or_load shows the record)."""
    import subprocess

    def child(*a, **k):
        raise AssertionError("a child process was started")

    monkeypatch.setattr(subprocess, "run", child)
    monkeypatch.setattr(subprocess, "Popen", child)
    for name, fn in sorted(REGISTRY.items()):
        if NEEDS[name].unsupported(gpu.cc):
            continue
        try:
            fn()
        except ArchitectureError as err:
            pytest.fail(f"experiment {name} launches what {gpu.info.name} cannot run ({err.problem}): "
                        "give it min_cc/needs")
        except (AssertionError, CourseError, ImportError):
            pass                      # it reached the GPU work (or needs a tool this machine lacks)


def test_lesson05_ladder_measures_the_rungs_this_gpu_runs(gpu, capsys, monkeypatch):
    """The ladder experiment: on a GPU with sm_80, rungs 1-6 are measured in the notebook's process and
    rung 7 (sm_90a) is a skipped row that says why, never a child process compiling it; on a T4 the record."""
    from helpers.experiments import ladder as L

    measured, isolated = [], []
    monkeypatch.setattr(L, "_inputs", lambda *a: (None, None))
    monkeypatch.setattr(L, "cublas_row", lambda A, B, peak: {"rung": 0, "median_ms": 1.0})
    monkeypatch.setattr(L, "measure_rungs", lambda keys, *a, **k: measured.extend(keys) or [])
    monkeypatch.setattr(L, "_isolated_rows", lambda keys, *a, **k: isolated.extend(keys) or [])
    out = run_or_load("ladder")
    if "ladder" in gpu.recorded:
        _recorded_with_one_line(capsys, out, "ladder", gpu)
        assert not measured
        return
    assert out.live and measured == [1, 2, 3, 4, 5, 6] and not isolated
    skipped = [r for r in out.data if r.get("rung") == 7]
    assert skipped and all(r["skipped"].startswith("rung 7 (ladder_wgmma_tma) skipped: it needs sm_90a")
                           and f"this GPU is {gpu.cc_text}." in r["skipped"] for r in skipped)


# --------------------------------------------------------------------------- lesson 07: FP8
def test_lesson07_fp8_experiment_runs_the_fp8_kernels_this_gpu_has(gpu, capsys, monkeypatch):
    """The fp8 experiment: on sm_89 and newer (not 9.0) the mma.sync kernel only, compiled with NVRTC for
    this GPU (never the sm_90a file); on a T4 the record."""
    from helpers.experiments import fp8 as X

    compiled = []

    class Kernel:
        num_regs, local_size_bytes = 40, 0

    monkeypatch.setattr(helpers.compile, "get_kernel", lambda f, k, cc=(0, 0), *a, **kw: compiled.append(f) or Kernel())
    for step in ("run_probes", "run_random", "run_match_1024", "run_sweep", "run_speed"):
        monkeypatch.setattr(X, step, lambda kernels, s=step: {s: list(kernels)})
    out = run_or_load("fp8")
    if "fp8" in gpu.recorded:
        _recorded_with_one_line(capsys, out, "fp8", gpu)
        return
    assert out.live and out.data["kernels"] == sorted(gpu.fp8_live) and compiled == ["fp8.cu"]
    assert out.data["sweep"] == {"run_sweep": ["fp8_mma_sync"]}


def test_lesson07_fp8_kernels_run_their_cpu_model_or_on_the_gpu(gpu, subtests):
    """Lesson 07's kernel loop: fp8_gemm.matmul gives the CPU model's C and one line naming why for a kernel
    this GPU cannot run (the check then runs as on the CPU); a kernel it runs goes to the GPU."""
    from helpers import fp8_gemm
    from helpers.experiments import fp8 as fp8x

    A, B = fp8x.random_inputs(57, 40, 72, "normal", seed=1)
    for kernel in sorted(FP8_KERNELS):
        with subtests.test(kernel=kernel):
            if kernel in gpu.fp8_live:
                with pytest.raises(ReachedTheGPU):
                    fp8_gemm.matmul(kernel, A, B)
                continue
            C, where = fp8_gemm.matmul(kernel, A, B)
            assert where == (f"CPU model of the H200's arithmetic ({gpu.info.name} (sm_{gpu.cc[0]}{gpu.cc[1]}) "
                             f"cannot run {kernel})")
            assert isinstance(C, np.ndarray) and fp8x.check_fp8(kernel, C, A, B).passed


def test_lesson07_fp8_launches_say_why_in_one_line_or_reach_the_gpu(gpu, subtests):
    from helpers import fp8_gemm

    A8 = fp8_gemm.encode_e4m3(np.ones((64, 64)))
    for kernel in sorted(FP8_KERNELS):
        with subtests.test(kernel=kernel):
            for call in (lambda: fp8_gemm.gemm_fp8(kernel, A8, A8), lambda: fp8_gemm.launcher(kernel, A8, A8)):
                if kernel in gpu.fp8_live:
                    with pytest.raises(ReachedTheGPU):
                        call()
                    continue
                with pytest.raises(ArchitectureError) as ei:
                    call()
                err = ei.value
                assert "\n" not in err.problem
                assert err.problem.endswith(f"this GPU, {gpu.info.name}, is {gpu.cc_text}.")
                assert "COURSE_DEVICE=cpu" in err.fix and "recorded" in err.fix
                need = "sm_90a, i.e. a Hopper GPU" if kernel in WGMMA_FP8 else "compute capability 8.9 or newer"
                assert f"{kernel} needs {need}" in err.problem, err.problem


# --------------------------------------------------------------------------- sweeps: live, less what cannot run
@pytest.mark.parametrize("names", [["gemm_fp32_kernel", "cublas_fp32", "cublas_tf32"], None],
                         ids=["lesson01", "lesson03"])
def test_sweeps_leave_out_what_this_gpu_cannot_run_in_one_line(gpu, monkeypatch, capsys, names):
    """helpers.sweep (lesson 01's FP32 sweep with cuBLAS TF32; lesson 03's every variant): the kernels and
    baselines this GPU runs are measured live, the others are named in one line, and none is started."""
    from helpers.experiments.mixed import VARIANTS

    names = names or list(VARIANTS)
    asked = []
    monkeypatch.setattr(helpers.memory, "cap_sizes", lambda sizes, what: (list(sizes), None))
    monkeypatch.setattr(helpers.memory, "release", lambda: None)
    monkeypatch.setattr(helpers.experiments.sweep, "measure_size",
                        lambda m, n, k, seed, log, names: asked.append(names) or [])
    out = helpers.sweep(names, [256, 512])
    gated = (gpu.cannot | gpu.cannot_baselines) & set(names)
    assert asked == [[n for n in names if n not in gated]] * 2
    printed = capsys.readouterr().out.strip().splitlines()
    if gated:
        assert len(printed) == 1 and printed[0].startswith(f"not measured on {gpu.info.name}: ")
        assert all(g in printed[0] for g in gated) and "compute capability 8.0" in printed[0]
    else:
        assert printed == []
    assert out.live


def test_make_record_leaves_out_what_this_gpu_cannot_run(gpu):
    names = list(KERNELS) + list(helpers.cublas.BASELINES)
    keep, line = helpers.record.left_out(names, helpers.backend().gpu)
    swept_out = {n for n in gpu.cannot if KERNELS[n].sweep} | gpu.cannot_baselines
    assert set(names) - set(keep) == swept_out
    if swept_out:
        assert "wmma_bf16_gemm_kernel" in line and "cublas_tf32" in line and "\n" not in line
    else:
        assert line is None
    assert "gemm_fp32_kernel" in keep and "cublas_fp16_acc16" in keep
