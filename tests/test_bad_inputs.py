"""Bad input gets a CourseError that names the fix, never a raw Python/numpy error or a silently wrong answer;
exercise checkers answer anything with a verdict line. Each row of a table is (call, expected error class, a word
the message must contain); a table is one test whose rows are subtests (each reported apart when it fails)."""
from __future__ import annotations

import inspect
import json
import math
import sys

import numpy as np
import pytest

import helpers
import helpers.device
import helpers.exercises as exercises
from helpers import fp8_gemm
from helpers import results as hr
from helpers.errors import CourseError, InputError, ResultsError, UnknownExperimentError, UnknownKernelError
from helpers.exercises import baseline, fp8 as fp8x, hopper, ladder, mixed, precision, wmma
from helpers.experiments import hopper as H

A16 = np.ones((16, 16), np.float32)


def _check(**kw):
    args = dict(inputs="fp32", acc="fp32")
    args.update(kw)
    return helpers.check_gemm(A16 @ A16, A16, A16, **args)


# --------------------------------------------------------------------------- calls that must refuse, clearly
BAD_CALLS = [
    # run_or_load: unknown names, arguments the recorded run cannot stand for
    ("run_or_load unknown name", lambda: helpers.run_or_load("nope"), UnknownExperimentError, "known:"),
    ("run_or_load near name", lambda: helpers.run_or_load("ladderr"), UnknownExperimentError, "did you mean 'ladder'"),
    ("run_or_load name not a str", lambda: helpers.run_or_load(["ladder"]), UnknownExperimentError, "as a string"),
    ("run_or_load arg it lacks", lambda: helpers.run_or_load("hopper", sizes=[1]), InputError,
     "takes no argument sizes"),
    ("run_or_load arg not recorded", lambda: helpers.run_or_load("hopper", timed=((128, 128, 128),)), InputError,
     "recorded run used timed="),
    ("run_or_load arg not recorded 2", lambda: helpers.run_or_load("ladder", timed_sizes=[1024]), InputError,
     "on a GPU"),
    ("run_or_load scalar arg", lambda: helpers.run_or_load("tf32_env", n=512), InputError, "n=512"),
    # sweep: names and sizes
    ("sweep unknown kernel", lambda: helpers.sweep(["nope"], [1024]), UnknownKernelError, "wmma_gemm_naive"),
    ("sweep size not recorded", lambda: helpers.sweep(["gemm_fp32_kernel"], [1023]), ResultsError, "4096"),
    ("sweep kernel not swept", lambda: helpers.sweep([2], [1024]), InputError, "run_or_load"),
    ("sweep rung unknown", lambda: helpers.sweep([99], [1024]), UnknownKernelError, "cublas_fp16"),
    ("sweep name None", lambda: helpers.sweep([None], [1024]), InputError, "not a kernel name"),
    ("sweep name bool", lambda: helpers.sweep([True], [1024]), InputError, "not a kernel name"),
    ("sweep names empty", lambda: helpers.sweep([], [1024]), InputError, "empty"),
    ("sweep names not a list", lambda: helpers.sweep(3.5, [1024]), InputError, "not a list"),
    ("sweep sizes empty", lambda: helpers.sweep(["gemm_fp32_kernel"], []), InputError, "empty"),
    ("sweep size float", lambda: helpers.sweep(["gemm_fp32_kernel"], [1024.0]), InputError, "whole number"),
    ("sweep size nan", lambda: helpers.sweep(["gemm_fp32_kernel"], [float("nan")]), InputError, "whole number"),
    ("sweep size inf", lambda: helpers.sweep(["gemm_fp32_kernel"], float("inf")), InputError, "not a list"),
    ("sweep size negative", lambda: helpers.sweep(["gemm_fp32_kernel"], [-256]), InputError, ">= 1"),
    ("sweep size numpy bool", lambda: helpers.sweep(["gemm_fp32_kernel"], [np.bool_(True)]), InputError,
     "whole number"),
    ("sweep sizes text", lambda: helpers.sweep(["gemm_fp32_kernel"], "1024"), InputError, "text"),
    ("sweep seed text", lambda: helpers.sweep(["gemm_fp32_kernel"], [1024], seed="x"), InputError, "seed"),
    ("series unknown field", lambda: helpers.series(helpers.sweep(["gemm_fp32_kernel"], [1024]), "gemm_fp32_kernel",
                                                    y="speed"), InputError, "tflops"),
    # tolerance and the check's block
    ("tolerance inputs None", lambda: helpers.tolerance(16, None, "fp32"), InputError, "None"),
    ("tolerance acc None", lambda: helpers.tolerance(16, "fp16", None), InputError, "None"),
    ("tolerance K bool", lambda: helpers.tolerance(True, "fp16", "fp32"), InputError, "K=True"),
    ("tolerance block float", lambda: helpers.tolerance(16, "fp16", "fp32", block=1.5), InputError, "block=1.5"),
    ("tolerance block bool", lambda: helpers.tolerance(16, "fp16", "fp32", block=True), InputError, "block=True"),
    ("tolerance n_checked 0", lambda: helpers.tolerance(16, "fp16", "fp32", n_checked=0), InputError, "n_checked"),
    ("tolerance n_checked float", lambda: helpers.tolerance(16, "fp16", "fp32", n_checked=1.5), InputError,
     "n_checked"),
    ("tolerance false_alarm 0", lambda: helpers.tolerance(16, "fp16", "fp32", false_alarm=0), InputError,
     "false_alarm"),
    ("tolerance false_alarm 2", lambda: helpers.tolerance(16, "fp16", "fp32", false_alarm=2), InputError,
     "between 0 and 1"),
    ("check_gemm block float", lambda: _check(block=1.5), InputError, "block=1.5"),
    ("check_gemm block bool", lambda: _check(block=True), InputError, "block=True"),
    ("check_gemm acc None", lambda: _check(acc=None), InputError, "acc=None"),
    ("check_gemm inputs list", lambda: _check(inputs=["fp32"]), InputError, "inputs=['fp32']"),
    # random_matrix
    ("random_matrix dist", lambda: helpers.random_matrix(2, 2, seed=1, dist="gaussian"), InputError, "dist="),
    ("random_matrix rows negative", lambda: helpers.random_matrix(-2, 2, seed=1), InputError, "rows=-2"),
    ("random_matrix rows fraction", lambda: helpers.random_matrix(2.5, 2, seed=1), InputError, "rows=2.5"),
    ("random_matrix cols nan", lambda: helpers.random_matrix(2, float("nan"), seed=1), InputError, "cols=nan"),
    ("random_matrix cols inf", lambda: helpers.random_matrix(2, math.inf, seed=1), InputError, "cols=inf"),
    ("random_matrix rows bool", lambda: helpers.random_matrix(True, 2, seed=1), InputError, "rows=True"),
    ("random_matrix rows text", lambda: helpers.random_matrix("3", 2, seed=1), InputError, "rows='3'"),
    ("random_matrix seed text", lambda: helpers.random_matrix(2, 2, seed="a"), InputError, "seed='a'"),
    ("random_matrix seed fraction", lambda: helpers.random_matrix(2, 2, seed=1.5), InputError, "seed=1.5"),
    ("random_matrix seed None", lambda: helpers.random_matrix(2, 2, seed=None), InputError, "seed=None"),
    ("random_matrix seed negative", lambda: helpers.random_matrix(2, 2, seed=-1), InputError, "seed=-1"),
    ("random_matrix seed bool", lambda: helpers.random_matrix(2, 2, seed=True), InputError, "seed=True"),
    ("random_matrix dtype int", lambda: helpers.random_matrix(2, 2, seed=1, dtype=np.int32), InputError,
     "floating-point"),
    ("random_matrix dtype name", lambda: helpers.random_matrix(2, 2, seed=1, dtype="fp16"), InputError,
     "floating-point"),
    ("random_matrix dtype None", lambda: helpers.random_matrix(2, 2, seed=1, dtype=None), InputError,
     "floating-point"),
    # FP8: real numbers only
    ("encode_e4m3 text", lambda: fp8_gemm.encode_e4m3("abc"), InputError, "text"),
    ("encode_e4m3 complex", lambda: fp8_gemm.encode_e4m3(np.array([1 + 2j])), InputError, "complex"),
    ("encode_e4m3 bools", lambda: fp8_gemm.encode_e4m3([True, False]), InputError, "booleans"),
    ("encode_e4m3 ragged", lambda: fp8_gemm.encode_e4m3([[1.0], [1.0, 2.0]]), InputError, "not an array"),
    ("matmul complex", lambda: fp8_gemm.matmul("fp8_wgmma", np.full((2, 32), 1 + 1j), np.ones((32, 2))), InputError,
     "imaginary"),
    ("matmul text", lambda: fp8_gemm.matmul("fp8_wgmma", [["a"] * 32] * 2, np.ones((32, 2))), InputError, "text"),
    ("matmul kernel list", lambda: fp8_gemm.matmul(["fp8_wgmma"], np.ones((2, 32)), np.ones((32, 2))), InputError,
     "no FP8 kernel"),
]


def test_bad_input_gets_a_course_error_that_names_the_fix(subtests):
    for what, call, exc, word in BAD_CALLS:
        with subtests.test(what):
            with pytest.raises(exc) as info:
                call()
            assert isinstance(info.value, CourseError)
            text = str(info.value)
            assert "\nFix: " in text and word in text, text
            assert len(text.splitlines()) <= 3, text                 # one or two readable lines, and the fix


# --------------------------------------------------------------------------- malformed results files
def _record(**changes):
    row = {"kernel": "gemm_fp32_kernel", "m": 256, "n": 256, "k": 256, "dtype_in": "fp32", "acc": "fp32",
           "median_ms": 0.1, "tflops": 0.3, "rel_err": 1e-7}
    d = {"schema": hr.SCHEMA, "kind": "gpu-record", "gpu": {"name": "Test GPU"}, "date": "2030-01-01T00:00:00",
         "records": [row], "experiments": {"ladder": [{"rung": 0}]}}
    for key, value in changes.items():
        if key.startswith("row_"):
            row[key[4:]] = value
        else:
            d[key] = value
    return d


BAD_RECORDS = [
    ("records of ints", dict(records=[1, 2]), "record 0"),
    ("gpu without name", dict(gpu={"cc": [9, 0]}), "gpu.name"),
    ("gpu a string", dict(gpu="NVIDIA H200"), "'gpu'"),
    ("gpu name a number", dict(gpu={"name": 5}), "gpu.name"),
    ("date an int", dict(date=20260101), "'date'"),
    ("date not a date", dict(date="yesterday"), "'date'"),
    ("experiments a string", dict(experiments="ladder"), "'experiments'"),
    ("extras a list", dict(extras=[1]), "'extras'"),
    ("kind unknown", dict(kind="gpu_record"), "'kind'"),
    ("kind a list", dict(kind=["gpu-record"]), "'kind'"),
    ("row size a string", dict(row_m="256"), "'m'"),
    ("row size a bool", dict(row_k=True), "'k'"),
    ("row kernel a number", dict(row_kernel=5), "'kernel'"),
    ("row tflops text", dict(row_tflops="fast"), "'tflops'"),
]


def test_malformed_record_is_a_results_error_naming_file_and_field(tmp_path, subtests):
    path = tmp_path / "test-gpu.json"
    for what, changes, word in BAD_RECORDS:
        with subtests.test(what):
            path.write_text(json.dumps(_record(**changes)))
            with pytest.raises(ResultsError) as info:
                hr.load_record(path)
            text = str(info.value)
            assert word in text and "test-gpu.json" in text and "\nFix: " in text, text


def test_a_good_record_still_loads(tmp_path):
    path = tmp_path / "test-gpu.json"
    path.write_text(json.dumps(_record(row_median_ms=None)))         # published figures may lack a time
    assert hr.load_record(path).gpu_name == "Test GPU"


# --------------------------------------------------------------------------- COURSE_RESULTS_DIR, null experiments
@pytest.fixture
def own_results(tmp_path, monkeypatch):
    """COURSE_RESULTS_DIR set after `import helpers`, at a folder with one small record."""
    (tmp_path / "test-gpu.json").write_text(json.dumps(_record(experiments={"ladder": None, "hopper": [{"x": 1}]})))
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    return tmp_path


def test_results_dir_set_after_import_is_honoured(own_results):
    assert helpers.results.load_latest().gpu_name == "Test GPU"
    assert helpers.results.RESULTS_DIR == own_results
    assert helpers.results.list_records() == [own_results / "test-gpu.json"]
    out = helpers.sweep(["gemm_fp32_kernel"], [256])
    assert out.source.startswith("Test GPU, recorded 2030-01-01") and len(out.data) == 1


def test_lessons_read_the_course_record_even_when_a_newer_one_exists(tmp_path, monkeypatch):
    """A second GPU's record, written later, joins load_all but does not change what load_latest (the lessons) reads;
    COURSE_RECORD picks another record by file name, and a name that is not there is an error that lists them."""
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    (tmp_path / f"{hr.COURSE_RECORD}.json").write_text(json.dumps(_record(gpu={"name": "Course GPU"})))
    (tmp_path / "newer-gpu.json").write_text(json.dumps(_record(gpu={"name": "Newer GPU"}, date="2031-01-01")))
    assert helpers.results.load_latest().gpu_name == "Course GPU"
    assert [r.gpu_name for r in helpers.results.load_all()] == ["Course GPU", "Newer GPU"]
    assert helpers.results.load_latest(gpu="newer").gpu_name == "Newer GPU"
    monkeypatch.setenv("COURSE_RECORD", "newer-gpu")
    assert helpers.results.load_latest().gpu_name == "Newer GPU"
    monkeypatch.setenv("COURSE_RECORD", "other-gpu")
    with pytest.raises(ResultsError) as info:
        helpers.results.load_latest()
    assert "newer-gpu.json" in str(info.value) and "COURSE_RECORD" in str(info.value)
    monkeypatch.delenv("COURSE_RECORD")
    (tmp_path / f"{hr.COURSE_RECORD}.json").unlink()        # without the course's record: the newest
    assert helpers.results.load_latest().gpu_name == "Newer GPU"


def test_results_dir_that_does_not_exist_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ResultsError) as info:
        helpers.results.load_latest()
    assert "COURSE_RESULTS_DIR" in str(info.value) and "does not exist" in str(info.value)


def test_null_experiment_is_a_results_error_with_the_command(own_results):
    with pytest.raises(ResultsError) as info:
        helpers.run_or_load("ladder")
    assert "python -m helpers.record --update-experiments ladder" in str(info.value)
    assert helpers.experiments.precision.recorded("ladder") is None      # lesson 4's "not recorded yet"


def test_sweep_names_a_kernel_the_record_lacks(own_results):
    with pytest.raises(ResultsError) as info:
        helpers.sweep(["cublas_fp16"], [256])
    assert "cublas_fp16" in str(info.value) and "gemm_fp32_kernel" in str(info.value)


# --------------------------------------------------------------------------- run_or_load on a (fake) GPU
def _fake_gpu(cc, name):
    info = helpers.device.GPUInfo(name=name, cc=cc, sms=132, l2_bytes=50 << 20, mem_bytes=141 << 30,
                                  mem_bw_gbs=4800.0, driver="13.0", runtime="13.0", nvrtc="13.0", cupy="14.2.0",
                                  peaks=helpers.device.peaks_for(name))
    return helpers.device.Backend("gpu", "mocked", info)


def test_live_run_refuses_an_argument_the_experiment_lacks(monkeypatch):
    b = _fake_gpu((9, 0), "NVIDIA H200")
    monkeypatch.setattr(sys.modules["helpers.experiments"], "backend", lambda: b)
    monkeypatch.setitem(helpers.experiments.REGISTRY, "hopper", lambda timed=(), odd_sizes=(), timeout=600: "ran")
    with pytest.raises(InputError, match="takes no argument sizes"):
        helpers.run_or_load("hopper", sizes=[1])
    assert helpers.run_or_load("hopper", timed=((128, 128, 128),)).data == "ran"      # live: any value


def test_gpu_that_cannot_run_it_refuses_arguments_the_record_lacks(monkeypatch, capsys):
    b = _fake_gpu((7, 5), "Tesla T4")
    monkeypatch.setattr(sys.modules["helpers.experiments"], "backend", lambda: b)
    with pytest.raises(InputError) as info:
        helpers.run_or_load("hopper", timed=((128, 128, 128),))
    assert "Tesla T4 cannot run it" in str(info.value) and "recorded run used timed=" in str(info.value)
    out = helpers.run_or_load("hopper", **H.LIVE)                          # lesson 6's call: the record covers it
    assert out.data and not out.live


# --------------------------------------------------------------------------- good input still works
def test_good_inputs_still_work():
    # run_or_load: arguments the recorded run covers (equal, or a selection of its entries), run-only ones
    assert helpers.run_or_load("hopper", **H.LIVE).data == helpers.run_or_load("hopper").data
    assert helpers.run_or_load("ladder", timed_sizes=[4096], odd_sizes=list(map(list, H.ODD_SIZES[:0]))).data
    assert helpers.run_or_load("tf32_env", timeout=5).data
    # sweep: one name, rung numbers (numpy ones too), one size, numpy sizes; series of the Outcome
    one = helpers.sweep("gemm_fp32_kernel", 1024).data
    assert [(r["kernel"], r["m"]) for r in one] == [("gemm_fp32_kernel", 1024)]
    rung = helpers.sweep([1, np.int64(1)], np.array([256, 1024], dtype=np.int32))
    assert {(r["kernel"], r["m"]) for r in rung.data} == {("wmma_gemm_naive", 256), ("wmma_gemm_naive", 1024)}
    assert helpers.series(rung, 1)[0] == [256, 1024] == helpers.series(rung.data, "wmma_gemm_naive")[0]
    assert helpers.sweep(["wmma_gemm_naive"], [256, 1024]).data == rung.data
    assert helpers.series(rung, "cublas_fp16") == ([], [])          # a kernel the sweep left out: empty
    # tolerance and random_matrix with numpy integers
    t = helpers.tolerance(np.int64(1024), "fp16", "fp32", block=np.int32(16), n_checked=np.int64(64))
    assert t == helpers.tolerance(1024, "fp16", "fp32", block=16, n_checked=64) and type(t.K) is int
    assert np.array_equal(helpers.random_matrix(np.int64(3), np.int32(4), seed=np.uint8(5)),
                          helpers.random_matrix(3, 4, seed=5))
    assert helpers.random_matrix(2, 2, seed=1, dtype=np.float16).dtype == np.float16
    assert _check(block=np.int64(1)).passed
    # FP8 encoding of integer arrays and of plain lists
    assert np.array_equal(fp8_gemm.encode_e4m3(np.array([1, 2], np.int8)), fp8_gemm.encode_e4m3([1.0, 2.0]))


# --------------------------------------------------------------------------- exercise checkers never raise
def _checkers():
    for mod in (exercises, baseline, fp8x, hopper, ladder, mixed, precision, wmma):
        for name, fn in inspect.getmembers(mod, inspect.isfunction):    # public, printing (-> None), answer first
            sig = inspect.signature(fn)
            params = list(sig.parameters)
            if fn.__module__ == mod.__name__ and params and params[0] in ("answer", "src", "source") \
                    and not name.startswith("_") and sig.return_annotation in (None, "None"):
                yield pytest.param(fn, id=f"{mod.__name__.rsplit('.', 1)[-1]}.{name}")


CHECKERS = list(_checkers())


def test_every_checker_is_guarded():
    assert len(CHECKERS) >= 30
    unguarded = [p.id for p in CHECKERS if not getattr(p.values[0], "checker", False)]
    assert not unguarded, unguarded


ABSURD = [10**400, -10**400, {}, [], 1j, np.array([1.0, 2.0]), np.array([448.0]), object(), True, np.bool_(True)]


def test_every_checker_answers_absurd_answers_with_a_verdict(capsys, subtests):
    for p in CHECKERS:
        fn = p.values[0]
        with subtests.test(p.id):
            params = list(inspect.signature(fn).parameters.values())
            extra = [16] * sum(q.default is q.empty for q in params[1:])    # M, N, K, tile, ... (data gets 16: wrong)
            for answer in ABSURD:
                fn(answer, *extra)                                        # never raises
                out = capsys.readouterr().out
                assert out.startswith("[") and exercises.last_result is False, (answer, out)


BAD_CHECKS = [   # (checker call, a word of the verdict): wrong-typed answers or arguments
    ("gemm flops 10**400", lambda: exercises.gemm_flops_exercise(10**400, 4, 4, 4), "Not quite"),
    ("mma flops -10**400", lambda: exercises.mma_flops_exercise(-10**400), "Not quite"),
    ("cast 10**400", lambda: fp8x.check_cast(10**400), "Not quite"),
    ("cast numpy bool", lambda: fp8x.check_cast(np.bool_(True), value=1.0), "expects a number"),
    ("smallest kept, data None", lambda: fp8x.check_smallest_kept(16, None), "not the recorded fp8 experiment"),
    ("smallest kept, data {}", lambda: fp8x.check_smallest_kept(16, {}), "not the recorded fp8 experiment"),
    ("spacing, value None", lambda: mixed.spacing_exercise(0.5, None, "fp16"), "Not accepted"),
    ("spacing, unknown format", lambda: mixed.spacing_exercise(0.5, 1000.0, "fp99"), "fp99"),
    ("tolerance, tol {}", lambda: precision.tolerance_exercise(3, tol={}), "tol={}"),
    ("lines, bx None", lambda: baseline.lines_exercise(9, None, 64), "Not accepted"),
    ("waves, n text", lambda: hopper.check_waves(2, n="big"), "Not accepted"),
    ("traffic, bm 0", lambda: ladder.check_tile_traffic(2, bm=0), "Not accepted"),
    ("kernel source a number", lambda: wmma.check_bcol_kernel(12345), "Python string"),
]


def test_checker_gives_a_verdict_for_wrong_input(capsys, subtests):
    for what, call, word in BAD_CHECKS:
        with subtests.test(what):
            call()                                                    # never raises
            out = capsys.readouterr().out
            verdicts = [ln for ln in out.splitlines() if ln and not ln.startswith(" ")]   # wrapped lines indent
            assert exercises.last_result is False and word in " ".join(out.split()), out
            assert out.startswith("[") and len(verdicts) <= 2, out


def test_checker_lets_a_lost_gpu_context_through():
    def lost(answer):
        raise helpers.GPUContextLostError("the GPU stopped", "restart the kernel")

    with pytest.raises(helpers.GPUContextLostError):
        exercises.checker(lost)(1)


def test_checker_that_fails_after_its_verdict_keeps_the_verdict(capsys):
    def late(answer):
        exercises._report("late", answer, True, "")
        raise RuntimeError("timing failed")

    exercises.checker(late)(1)
    out = capsys.readouterr().out
    assert "Correct." in out and "after the verdict" in out and exercises.last_result is True


# --------------------------------------------------------------------------- lesson 6's like-for-like readers
@pytest.mark.parametrize("bad", ["float64", "int8", np.complex64])
def test_same_c_names_the_c_types_it_has(bad):
    from helpers.cublas import same_c

    with pytest.raises(helpers.InputError, match="float16.*float32"):
        same_c(bad)
    assert same_c("float16").name == "cublas_fp16" and same_c(np.float32).name == "cublas_fp16_f32c"


def test_input_kinds_and_split_plans_refuse_what_they_do_not_know():
    from helpers.experiments import like_for_like as LL
    from helpers.kernels import split_k_plan, split_k_ranges

    with pytest.raises(helpers.InputError, match="normal, uniform, e4m3, zeros"):
        LL.kind_inputs("gaussian", 8, 8, 8)
    for shape in ((128, 8192, 8192), (8, 8, 8), (5000, 5000, 5000), (136, 264, 1000)):
        parts = split_k_ranges(*shape)
        assert parts[0][0] == 0 and parts[-1][1] == shape[2] and len(parts) == split_k_plan(*shape)[0]
        assert all(k1 > k0 for k0, k1 in parts) and all(a[1] == b[0] for a, b in zip(parts, parts[1:]))


def test_cublas_leading_dimension_of_views_and_refusal_of_transposes():
    """helpers.cublas.gemm_ex passes each operand's row stride as its leading dimension: a contiguous matrix gives
    its width, a view of the first columns of a wider buffer the buffer's width (the row-stride probe); a
    transpose or a column-strided view is refused with the fix, never read as if it were contiguous."""
    from helpers.cublas import leading_dim
    from helpers.errors import InputError

    W = np.zeros((5, 12), np.float16)
    assert leading_dim(W) == 12 and leading_dim(W[:, :7]) == 12 and leading_dim(np.zeros((1, 9), np.float32)) == 9
    for bad in (W.T, W[:, ::2]):
        with pytest.raises(InputError, match="not rows of adjacent elements"):
            leading_dim(bad, "A")


def test_a_course_error_shows_in_a_notebook_as_its_message_and_fix():
    """IPython renders a CourseError as its message and fix (the traceback stays one %tb away); other errors keep
    their traceback."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    try:
        with capture_output() as out:
            shell.run_cell("import helpers\nhelpers.gemm('no_such_kernel', None, None)")
        text = out.stdout + out.stderr
        assert "UnknownKernelError" in text and "Fix:" in text and "%tb" in text
        assert "Traceback" not in text and "File " not in text
        with capture_output() as out:
            shell.run_cell("1 / 0")
        assert "ZeroDivisionError" in out.stdout + out.stderr and "Traceback" in out.stdout + out.stderr
    finally:
        InteractiveShell.clear_instance()      # later tests see no IPython shell, as under plain pytest


def test_a_course_errors_rendered_lines_are_short_and_keep_every_word():
    """A notebook breaks an output line longer than its width inside a word: the rendered message comes in lines of
    at most 100 characters, broken at spaces, with every word of the message in order and the fix on its own line."""
    err = InputError("PAD=4 is not a value rung 3 allows: " + "word " * 40 + "end.", "pass PAD= one of 0, 8, 16; "
                     + "because " * 30 + "done.")
    lines = err._render_traceback_()
    assert all(len(ln) <= 100 for ln in lines[1:]) and len(lines[0]) <= 100 + len("\x1b[31m\x1b[0m")
    assert " ".join(lines[:-1]).split() == f"\x1b[31mInputError\x1b[0m: {err}".split()
    assert any(ln.startswith("Fix: pass PAD=") for ln in lines) and lines[-1].startswith("(the traceback")
