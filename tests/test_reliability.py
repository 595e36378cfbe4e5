"""Issue 9 on the CPU, with mocks: readable compile errors, mismatch summaries, a lost GPU context,
memory caps for sweeps, the sanitizer summary and the determinism checker's normalisation."""
from __future__ import annotations

import importlib.util
import re
import sys
import types

import numpy as np
import pytest

import helpers
import helpers.compile
import helpers.device
import helpers.errors
import helpers.launch
import helpers.memory
import helpers.record
from conftest import ROOT
from helpers import CourseError, GPUContextLostError, GPUOutOfMemoryError, KernelCompileError


# --------------------------------------------------------------------------- fakes
class CUDARuntimeError(RuntimeError):
    """Stands in for cupy.cuda.runtime.CUDARuntimeError (matched by name and .status)."""

    def __init__(self, status: int, text: str):
        self.status = status
        super().__init__(text)


class CUDADriverError(RuntimeError):
    def __init__(self, status: int, text: str):
        self.status = status
        super().__init__(text)


ILLEGAL = CUDARuntimeError(700, "cudaErrorIllegalAddress: an illegal memory access was encountered")
LAUNCH_FAILED = CUDADriverError(719, "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")


def fake_gpu(cc=(9, 0), name="NVIDIA H200"):
    info = helpers.device.GPUInfo(name=name, cc=cc, sms=132, l2_bytes=50 << 20, mem_bytes=141 << 30,
                                  mem_bw_gbs=4800.0, driver="13.0", runtime="13.0", nvrtc="13.0", cupy="14.2.0",
                                  peaks=helpers.device.peaks_for(name))
    return helpers.device.Backend("gpu", "mocked", info)


@pytest.fixture
def on_fake_gpu(monkeypatch):
    """backend() answers a GPU (nothing touches a real one: every GPU call is mocked by the test)."""
    b = fake_gpu()
    monkeypatch.setattr(helpers.device, "backend", lambda: b)
    for mod in ("helpers.launch", "helpers.record", "helpers.experiments"):
        if hasattr(sys.modules[mod], "backend"):
            monkeypatch.setattr(sys.modules[mod], "backend", lambda: b)
    return b


# --------------------------------------------------------------------------- compile errors
LEARNER_SRC = """#include <mma.h>
extern "C" __global__ void gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""
NVRTC_LOG = """/tmp/tmpan1ut480/3b7c153ce98d06488f1cbac8793f6dff_2.cubin.cu(6): error: expected a ";"
      for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
      ^

/tmp/tmpan1ut480/3b7c153ce98d06488f1cbac8793f6dff_2.cubin.cu(6): error: identifier "col" is undefined
      for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
                                                                    ^

/tmp/tmpan1ut480/3b7c153ce98d06488f1cbac8793f6dff_2.cubin.cu(2): warning #177-D: variable "x" was declared but never referenced

2 errors detected in the compilation of "/tmp/tmpan1ut480/3b7c153ce98d06488f1cbac8793f6dff_2.cubin.cu".
"""


def test_compile_log_points_into_the_learners_source():
    out = helpers.compile.format_compile_log(NVRTC_LOG, LEARNER_SRC, "exercise_tiled.cu")
    assert "/tmp/" not in out and "cubin" not in out
    assert out.splitlines()[0] == 'exercise_tiled.cu, line 6: error: expected a ";"'
    assert "> 6 |     for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];" in out
    assert "  5 |     float acc = 0.0f" in out               # context around the error
    assert 'line 6: error: identifier "col" is undefined' in out
    assert "(1 warning not shown)" in out


def test_compile_log_errors_in_headers_and_unparsable_logs():
    log = "/usr/local/cuda/include/crt/mma.hpp(120): error: something odd\n"
    out = helpers.compile.format_compile_log(log, LEARNER_SRC, "exercise_tiled.cu")
    assert "mma.hpp, line 120 (an included header)" in out
    assert helpers.compile.format_compile_log("NVRTC_ERROR_INVALID_OPTION\n", "x", "f.cu") == "NVRTC_ERROR_INVALID_OPTION"


def test_compile_log_caps_the_number_of_errors():
    log = "".join(f"kern.cu({i % 8 + 1}): error: bad {i}\n" for i in range(9))
    out = helpers.compile.format_compile_log(log, LEARNER_SRC, "k.cu", max_errors=3)
    assert out.count(": error: bad") == 3 and "... and 6 more errors" in out


def test_load_module_raises_kernel_compile_error_with_numbered_source(on_fake_gpu, monkeypatch):
    cupy = pytest.importorskip("cupy")
    from cupy.cuda.compiler import CompileException

    class FakeRawModule:
        def __init__(self, code, options, name_expressions=None):
            self.code, self.options = code, options

        def compile(self):
            raise CompileException(NVRTC_LOG, self.code, "kern", self.options)

    monkeypatch.setattr(cupy, "RawModule", FakeRawModule)
    monkeypatch.setattr(helpers.compile, "find_cuda_include_dirs", lambda: [])
    with pytest.raises(KernelCompileError) as ei:
        helpers.compile.load_module("exercise_tiled.cu", source=LEARNER_SRC)
    msg = str(ei.value)
    assert msg.startswith("NVRTC could not compile exercise_tiled.cu:\nexercise_tiled.cu, line 6: error")
    assert "> 6 |" in msg and "Fix:" in msg and "Traceback" not in msg
    assert ei.value.__cause__ is None and ei.value.__suppress_context__      # no CuPy traceback chained


# --------------------------------------------------------------------------- mismatch summary
def test_check_mismatch_summary_counts_and_names_the_first_wrong_element():
    A = helpers.random_matrix(8, 32, seed=1)
    B = helpers.random_matrix(32, 6, seed=2)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    C[2, 3] += 10.0
    C[5, 1] = np.nan
    C[7, 5] -= 1.0
    chk = helpers.check_gemm(C, A, B, inputs="fp32", acc="fp32", name="k", backend="test")
    assert not chk.passed and chk.n_bad == 3 and chk.n_nan == 1
    assert chk.first_wrong[:2] == (2, 3) and chk.first_wrong[2] == pytest.approx(float(C[2, 3]))
    s = chk.mismatch_summary()
    assert s.splitlines()[0].startswith("3 of 48 elements wrong (1 of them NaN")
    assert "first wrong element C[2, 3] = " in s and "expected" in s
    assert "worst element C[5, 1] = nan" in s                       # NaN is the worst
    assert "first wrong element C[2, 3]" in str(chk)
    ok = helpers.check_gemm((A.astype(np.float64) @ B).astype(np.float32), A, B, inputs="fp32", acc="fp32")
    assert ok.passed and ok.n_bad == 0 and ok.first_wrong is None and ok.mismatch_summary() == ""


# --------------------------------------------------------------------------- lost GPU context
@pytest.mark.parametrize("exc", [ILLEGAL, LAUNCH_FAILED])
def test_sticky_cuda_errors_become_context_lost(exc):
    err = helpers.errors.translate_gpu_error(exc, "my kernel")
    assert isinstance(err, GPUContextLostError) and isinstance(err, CourseError)
    msg = str(err)
    assert "GPU context is lost" in msg and "Kernel > Restart" in msg and "my kernel" in msg


def test_other_errors_pass_through():
    assert helpers.errors.translate_gpu_error(ValueError("x"), "w") is None
    assert helpers.errors.translate_gpu_error(CUDARuntimeError(1, "cudaErrorInvalidValue: invalid argument"), "w") is None
    with pytest.raises(ValueError):
        with helpers.errors.gpu_errors("w"):
            raise ValueError("x")


def test_out_of_memory_is_translated():
    OutOfMemoryError = type("OutOfMemoryError", (MemoryError,), {})
    with pytest.raises(GPUOutOfMemoryError) as ei:
        with helpers.errors.gpu_errors("the sweep at size 8192"):
            raise OutOfMemoryError("Out of memory allocating 536,870,912 bytes")
    assert "free_all_blocks" in str(ei.value) and "Fix:" in str(ei.value)


def test_gemm_on_gpu_turns_an_illegal_address_into_context_lost(on_fake_gpu, monkeypatch):
    cupy = pytest.importorskip("cupy")
    monkeypatch.setattr(cupy, "asarray", lambda x: x)

    def launcher(*a, **k):
        def run():
            raise ILLEGAL
        return run, None, None

    monkeypatch.setattr(helpers.launch, "launcher", launcher)
    A = helpers.random_matrix(16, 16, seed=0)
    with pytest.raises(GPUContextLostError) as ei:
        helpers.gemm_fp32(A, A)
    assert "gemm_fp32_kernel at M=16 N=16 K=16" in str(ei.value)


def _wmma_exercise_setup(monkeypatch, variant_launcher):
    cupy = pytest.importorskip("cupy")
    import helpers.experiments.wmma as w

    monkeypatch.setattr(cupy, "asarray", np.asarray)
    monkeypatch.setattr(w, "variant_launcher", variant_launcher)
    from helpers.exercises import wmma as ex

    return ex


def test_wmma_exercise_reports_wrong_elements(on_fake_gpu, monkeypatch, capsys):
    def variant_launcher(name, A, B, source=None):
        M, N = A.shape[0], B.shape[1]
        C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
        C[1, 2] = 0.0           # one wrong element
        C[3:, 7] = np.nan       # a column never written
        return (lambda: None), C, (M, N)

    ex = _wmma_exercise_setup(monkeypatch, variant_launcher)
    ex.check_bcol_kernel("extern \"C\" __global__ void wmma_gemm_bcol(...) {}")
    out = capsys.readouterr().out
    M, N, K = ex.KERNEL_SIZES[0]
    assert "Not quite" in out and f"wrong result at M={M}, N={N}, K={K}" in out
    assert f"{1 + (M - 3)} of {M * N} elements wrong ({M - 3} of them NaN" in out
    assert "first wrong element C[1, 2] = 0.0, expected" in out
    assert helpers.exercises.last_result is False


def test_wmma_exercise_illegal_address_says_restart(on_fake_gpu, monkeypatch, capsys):
    def variant_launcher(name, A, B, source=None):
        raise ILLEGAL

    ex = _wmma_exercise_setup(monkeypatch, variant_launcher)
    with pytest.raises(GPUContextLostError) as ei:
        ex.check_2x2_kernel("extern \"C\" __global__ void wmma_gemm_2x2(...) {}")
    assert "Not quite" in capsys.readouterr().out
    assert "restart the notebook's kernel (Kernel > Restart" in str(ei.value)


def test_tiled_exercise_compile_error_shows_the_log(on_fake_gpu, monkeypatch, capsys):
    import helpers.exercises.baseline as ex

    def load_module(filename, options=(), source=None):
        raise helpers.compile.compile_error(filename, source, NVRTC_LOG)

    monkeypatch.setattr(helpers.compile, "load_module", load_module)
    src = LEARNER_SRC + "__shared__ float t[16]; __syncthreads(); __syncthreads();"
    pytest.importorskip("cupy")
    ex.check_tiled_kernel(src)
    out = capsys.readouterr().out
    assert "it does not compile" in out and "exercise_tiled.cu, line 6: error" in out and "> 6 |" in out


# --------------------------------------------------------------------------- memory caps
def test_cap_sizes_keeps_what_fits_and_says_what_it_skipped():
    sizes = [1024, 4096, 8192, 16384]
    kept, note = helpers.memory.cap_sizes(sizes, free=15 * 2**30, what="sweep")     # a T4 with ~15 GiB free
    need = helpers.memory.measure_bytes
    assert kept == [n for n in sizes if need(n) <= 0.8 * 15 * 2**30] and 16384 not in kept
    assert note.startswith("sweep: skipped size") and "16384" in note and "15.0 GiB is free" in note
    assert helpers.memory.cap_sizes(sizes, free=1 << 45) == (sizes, "")
    kept, note = helpers.memory.cap_sizes([100, 200], lambda n: n, free=150, fraction=1.0)
    assert kept == [100] and "skipped size 200: it needs" in note


def test_sweep_caps_sizes_by_free_memory_and_frees_between_sizes(on_fake_gpu, monkeypatch, capsys):
    calls, released = [], []
    monkeypatch.setattr(helpers.memory, "free_bytes", lambda: 16 * 2**30)
    monkeypatch.setattr(helpers.memory, "release", lambda: released.append(1))
    monkeypatch.setattr(helpers.experiments.sweep, "measure_size",
                        lambda m, n, k, seed, log=None, names=None: calls.append((m, seed)) or [{"m": m}])
    out = helpers.record.sweep(["gemm_fp32_kernel"], [1024, 8192, 16384], seed=10)
    assert calls == [(1024, 10), (8192, 11)]                # 16384 x 16384 needs ~32 GiB
    assert len(released) == 2
    assert out.live and "16384 skipped: GPU memory" in out.source
    assert "sweep: skipped size 16384" in capsys.readouterr().out


# --------------------------------------------------------------------------- sanitizer summary
def _load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SANITIZER_LOG = """========= COMPUTE-SANITIZER
@@gpu {"name": "NVIDIA H200", "slug": "nvidia-h200", "sm": "sm_90", "driver": "13.0", "runtime": "13.0", "cupy": "14.0"}
@@case gemm_fp32_kernel | M=16 N=16 K=16
@@end gemm_fp32_kernel | M=16 N=16 K=16 | PASS gemm_fp32_kernel M=16 N=16 K=16: componentwise error <= tolerance 1e-06
@@case wmma_gemm_2x2 | M=33 N=17 K=49
========= Invalid __global__ write of size 4 bytes
=========     at wmma_gemm_2x2+0x1b0
=========     by thread (0,0,0) in block (0,0,0)
@@end wmma_gemm_2x2 | M=33 N=17 K=49 | EXCEPTION CUDARuntimeError: cudaErrorLaunchFailure
========= ERROR SUMMARY: 1 error
"""


def test_sanitize_summary_attributes_reports_to_cases(tmp_path):
    drv = _load_tool("sanitize_driver")
    p = drv.parse_log(SANITIZER_LOG)
    assert p["total"] == 1 and p["gpu"]["slug"] == "nvidia-h200"
    assert [c["errors"] for c in p["cases"]] == [0, 1]
    assert p["cases"][1]["first"] == {"text": "Invalid __global__ write of size 4 bytes", "function": "wmma_gemm_2x2"}
    logs = tmp_path / "logs"
    logs.mkdir()
    for t in drv.TOOLS:
        (logs / f"{t}.log").write_text(SANITIZER_LOG if t == "memcheck" else
                                       SANITIZER_LOG.split("@@case wmma")[0] + "========= ERROR SUMMARY: 0 errors\n")
        (logs / f"{t}.rc").write_text("0\n")
    path = drv.summarize(logs, out_dir=tmp_path)
    text = path.read_text()
    assert path.name == "sanitize-nvidia-h200.txt"
    assert "memcheck   wmma_gemm_2x2" in text and "first report: Invalid __global__ write of size 4 bytes (in wmma_gemm_2x2)" in text
    assert "memcheck   ERROR SUMMARY: 1 errors" in text and "verdict: NOT CLEAN" in text


def test_sanitize_driver_covers_every_kernel_in_the_sources():
    """Every extern "C" kernel gets a sanitizer case: the registry's (helpers.kernels) and the lesson kernels
    outside it; a ladder kernel still being written (not yet a registry entry) is listed as uncovered in the
    summary instead."""
    drv = _load_tool("sanitize_driver")
    covered = {k for k, _, _ in drv.cases()}
    ladder_src = "".join(f.read_text() for f in (ROOT / "kernels").glob("ladder*.cu"))
    missing = {k for k in drv.kernels_in_sources() if k not in covered
               and not (f" {k}(" in ladder_src and k not in helpers.KERNELS)}
    assert not missing, missing
    assert set(helpers.KERNELS) <= covered


# --------------------------------------------------------------------------- determinism checker
def test_determinism_normalises_like_nbval():
    det = _load_tool("check_determinism")
    subs = det.sanitizers()
    outs = [{"output_type": "stream", "name": "stdout", "text": "a at 0x7f00deadbeef\n"},
            {"output_type": "stream", "name": "stdout", "text": "b\n"},
            {"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": "<Figure size 640x480>"},
             "metadata": {}}]
    assert det.normalise(outs, subs) == ["[stdout] a at 0xADDRESS\nb\n",
                                         "[display_data text/plain] <Figure size 640x480>"]
    nb = types.SimpleNamespace(cells=[
        types.SimpleNamespace(cell_type="code", metadata={"tags": ["nbval-ignore-output"]}, outputs=[],
                              get=lambda k, d=None, m={"tags": ["nbval-ignore-output"]}: m if k == "metadata" else []),
        types.SimpleNamespace(cell_type="code", metadata={}, get=lambda k, d=None: {} if k == "metadata" else outs)])
    assert list(det.compared_cells(nb, subs)) == [1]


def test_determinism_lets_nbval_stand_only_for_the_machine_as_it_is():
    """make determinism --nbval-ran (CI) leaves out a setting only where numpy and OpenBLAS run under it exactly as
    without it (nbval ran that); every other setting keeps a run of its own, and the runs never drop below one each."""
    det = _load_tool("check_determinism")
    as_is = det.probe_machine({})
    assert as_is and as_is["core"] and as_is["threads"] >= 1 and as_is["numpy"]
    same = f"OPENBLAS_CORETYPE={as_is['core']}"
    other = "OPENBLAS_CORETYPE=Prescott"               # SSE kernels: no machine of today picks them
    assert det.is_machine_as_is(det.parse_settings(same), as_is)
    assert not det.is_machine_as_is(det.parse_settings(other), as_is)
    assert not det.is_machine_as_is(det.parse_settings(same + ",OMP_NUM_THREADS=1"), as_is)   # unprobed variable
    assert not det.is_machine_as_is({}, as_is) and not det.is_machine_as_is(det.parse_settings(same), None)
    assert det.without_nbval_run(["A=1", same, other], 4, as_is) == (["A=1", other], 3, [same])
    assert det.without_nbval_run(["A=1", other], 4, as_is) == (["A=1", other], 4, [])
    assert det.without_nbval_run(["A=1", "B=2", "C=3", same], 2, as_is) == (["A=1", "B=2", "C=3"], 3, [same])
    assert det.without_nbval_run([same], 1, as_is) == ([], 1, [same])


def test_make_course_takes_executed_notebooks_only_with_the_same_cells(tmp_path):
    """make course COURSE_EXECUTED=DIR (CI: make determinism's first run, --keep DIR) publishes those notebooks
    instead of executing them again, streams joined as after an execution; a copy whose cells differ from the
    lesson's, or with a code cell not run, is refused."""
    import nbformat

    ex = _load_tool("execute_notebooks")
    src = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("print(1)")])
    (tmp_path / "src").mkdir()
    (tmp_path / "run").mkdir()
    nbformat.write(src, tmp_path / "src" / "00_x.ipynb")
    run = nbformat.from_dict(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"),
                                                            nbformat.v4.new_code_cell("print(1)")]))
    run.cells[1].execution_count = 1
    run.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1"),
                            nbformat.v4.new_output("stream", name="stdout", text="\n")]
    nbformat.write(run, tmp_path / "run" / "00_x.ipynb")
    nb = ex.execute(tmp_path / "src" / "00_x.ipynb", 60, tmp_path / "run")
    assert [o["text"] for o in nb.cells[1].outputs] == ["1\n"]
    run.cells[1].execution_count = None
    nbformat.write(run, tmp_path / "run" / "00_x.ipynb")
    with pytest.raises(SystemExit, match="not executed"):
        ex.execute(tmp_path / "src" / "00_x.ipynb", 60, tmp_path / "run")
    run.cells[1].source = "print(2)"
    nbformat.write(run, tmp_path / "run" / "00_x.ipynb")
    with pytest.raises(SystemExit, match="not those of"):
        ex.execute(tmp_path / "src" / "00_x.ipynb", 60, tmp_path / "run")


def test_exercise_answered_with_text_says_what_it_expects(capsys):
    from helpers import exercises

    exercises.gemm_flops_exercise("n/6", 4, 4, 4)
    out = capsys.readouterr().out
    assert "expects a number" in out and "'n/6'" in out and exercises.last_result is False
    exercises.gemm_flops_exercise("128", 4, 4, 4)          # a number in a string is still a number
    assert exercises.last_result is True


def test_determinism_runs_under_three_blas_kernels_and_one_thread():
    """Issue 22: `make determinism` (which CI runs) gives each run another machine: at least three
    OpenBLAS kernels, numpy's wide loops off, and one BLAS thread; settings parse, and one this CPU
    cannot execute is recognised instead of crashing the run."""
    det = _load_tool("check_determinism")
    make = (ROOT / "Makefile").read_text()
    settings = make[make.index("DETERMINISM_SETTINGS ?="):make.index("determinism: $(STAMP)")]
    cores = set(re.findall(r"OPENBLAS_CORETYPE=(\w+)", settings))
    assert len(cores) >= 3 and "OPENBLAS_NUM_THREADS=1" in settings and "NPY_DISABLE_CPU_FEATURES" in settings
    assert "--settings $(DETERMINISM_SETTINGS)" in make and "--runs 4" in make
    assert det.parse_settings("A=1,B=x y") == {"A": "1", "B": "x y"} and det.parse_settings("") == {}
    with pytest.raises(SystemExit):
        det.parse_settings("no-equals-sign")
    assert det.cpu_lacks({"OPENBLAS_NUM_THREADS": "1"}) is None
    flags = open("/proc/cpuinfo").read().split()
    assert det.cpu_lacks({"OPENBLAS_CORETYPE": "SkylakeX"}) == (None if "avx512f" in flags else "avx512f")
