"""Lesson 3 on the CPU: the experiments' helpers that need no GPU, and the exercise checkers (helpers/experiments/
mixed.py, helpers/exercises/mixed.py); formats and training: tests/test_formats.py, tests/test_training.py."""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

from helpers import exercises
from helpers.exercises import mixed as ex
from helpers.experiments import mixed as exp


# --------------------------------------------------------------------------- experiments (no GPU)
def test_tf32_threshold_between_unit_roundoffs():
    t = exp.tf32_threshold()
    assert 2.0 ** -24 < t < 2.0 ** -11
    assert exp.verdict(3e-4) == "TF32" and exp.verdict(5e-7) == "FP32"
    assert len(exp.TF32_ENV_CASES) == 6


def test_child_env_sets_and_unsets(monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "1")
    env = exp._child_env(None, "0")
    assert "CUPY_TF32" not in env and env["NVIDIA_TF32_OVERRIDE"] == "0"


CLOCKS = {"sm_mhz": 1980, "mem_mhz": 3201, "sm_mhz_min": 1965, "power_w": 412.3, "power_w_max": 430.0,
          "temp_c": 51, "throttle": ["none"], "clock_samples": 7}


def _fake_gpu_for_child(monkeypatch):
    """numpy in place of CuPy and cuBLAS, and a benchmark that returns fixed clock readings: the
    tf32_env child script runs on the CPU."""
    import sys

    import helpers.cublas
    import helpers.timing
    from helpers.timing import Timing

    from conftest import numpy_cupy

    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy())

    def benchmark(fn, **kw):
        fn()
        return Timing(np.array([0.5, 0.4, 0.6]), clocks=dict(CLOCKS))
    monkeypatch.setattr(helpers.timing, "benchmark", benchmark)
    monkeypatch.setattr(helpers.cublas, "gemm_ex", lambda A, B, *, compute, C=None, out_dtype=None:
                        np.matmul(A, B, out=C))


def test_tf32_env_child_reports_clocks(monkeypatch, capsys):
    """The child process's result carries the clocks of each timing (helpers.clocks' fields)."""
    import json
    import sys

    _fake_gpu_for_child(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["-c", "32"])
    exec(exp._CHILD, {"__name__": "__main__"})
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT "):])
    for call in ("cupy.matmul", "gemmEx COMPUTE_32F", "gemmEx COMPUTE_32F_FAST_TF32"):
        assert res[call]["clocks"] == CLOCKS and res[call]["median_ms"] == 0.5
        assert res[call]["rel_err"] < 1e-6                     # numpy's FP32 matmul: the FP32 level


def test_tf32_env_rows_carry_clocks(monkeypatch):
    """Every tf32_env row stores the clock fields beside its timing, like every other timed row;
    clock_text shows them (and says 'clock not recorded' for a row without them)."""
    import json
    import subprocess
    import types

    from helpers import clocks

    result = {c: {"rel_err": 3e-4, "median_ms": 0.34, "clocks": dict(CLOCKS)}
              for c in ("cupy.matmul", "gemmEx COMPUTE_32F", "gemmEx COMPUTE_32F_FAST_TF32")}
    result["cupy_compute_type"] = 1
    fake = types.SimpleNamespace(returncode=0, stdout="RESULT " + json.dumps(result), stderr="")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: fake)
    rows = exp.tf32_env(n=64)
    assert len(rows) == 3 * len(exp.TF32_ENV_CASES)
    for r in rows:
        assert {k: r[k] for k in clocks.FIELDS} == CLOCKS
        assert clocks.clock_text(r) == "1980 MHz (min 1965)"
    bare = {k: v for k, v in rows[0].items() if k not in clocks.FIELDS}
    assert clocks.with_clock([bare])[0]["clock"] == "clock not recorded"


# --------------------------------------------------------------------------- exercises
def test_exercise_answers():
    assert ex.spacing(1000.0, "fp16") == 0.5
    assert ex.spacing(1.0, "bf16") == 2.0 ** -7
    assert ex.largest_exact_integer_run("bf16") == 256 and ex.largest_exact_integer_run("fp16") == 2048
    assert ex.smallest_scale(1e-9, "fp16") == 2.0 ** 16
    # cross-check against the formats themselves
    assert np.float16(2048) + np.float16(1) == np.float16(2048)
    assert float(ml_dtypes.bfloat16(257)) != 257
    assert Fraction(float(np.float16(1e-9 * 2.0 ** 16))) >= Fraction(2) ** -14


def test_exercise_checkers(capsys):
    for fn, good, bad in [(ex.spacing_exercise, 0.5, 1.0), (ex.integer_run_exercise, 256, 255),
                          (ex.loss_scale_exercise, 65536, 32768)]:
        fn(None)
        assert exercises.last_result is None and "Not answered" in capsys.readouterr().out
        fn(good)
        assert exercises.last_result is True and "Correct." in capsys.readouterr().out
        fn(bad)
        assert exercises.last_result is False and "Hint" in capsys.readouterr().out


# --------------------------------------------------------------------------- the speed-vs-error chart
def test_speed_vs_error_chart_shows_every_marker():
    """Lesson 03's chart (helpers.plots.speed_vs_error_dodged) on the record at 4096: the WMMA FP16-accumulator
    and BF16 points nearly coincide; no marker may sit on top of another one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import helpers
    from helpers import plots

    rows = helpers.results.load_latest().rows
    at = {r["kernel"]: r for r in rows if r["m"] == r["n"] == r["k"] == 4096}
    pts = [dict(x=at[k]["rel_err"], y=at[k]["tflops"], label=lab, color=exp.VARIANT_COLORS[k], marker=exp.marker(k))
           for k, lab in exp.VARIANTS.items() if k in at]
    assert len(pts) >= 8
    fig = plots.speed_vs_error_dodged(pts)
    fig.canvas.draw()
    ax = fig.axes[0]
    centres = [ln.get_transform().transform(ln.get_xydata()[0]) for ln in ax.get_lines() if ln.get_markersize() > 5]
    assert len(centres) == len(pts)
    gaps = [np.hypot(*(a - b)) for i, a in enumerate(centres) for b in centres[i + 1:]]
    size = max(ln.get_markersize() for ln in ax.get_lines())   # points
    assert min(gaps) >= size * fig.dpi / 72                 # centres at least one marker width apart: no overlap
    plt.close(fig)


# --------------------------------------------------------------------------- TF32 rounding, the 1024 table
def test_tf32_ties_differ_only_where_the_last_kept_bit_is_even():
    """'Rounding FP32 to TF32': ties away (cvt.rna) and ties to even differ exactly on the exact ties whose
    last kept bit is even, fewer than all the exact ties (the lesson's 10^6 values)."""
    import helpers
    from helpers import formats

    x = helpers.random_matrix(1000, 1000, seed=7)
    rne, rna = helpers.numerics.round_to(x, "tf32"), formats.round_tf32_rna(x)
    bits = x.view(np.uint32)
    tie = (bits & 0x1FFF) == 0x1000
    even = ((bits >> 13) & 1) == 0
    assert np.array_equal(rna != rne, tie & even)
    assert 0 < (tie & even).sum() < tie.sum()


def test_the_1024_table_says_which_c_and_which_own_inputs():
    """comparison_rows: the C column says FP16 for cuBLAS FP16 (cupy.matmul on float16) and the FP16-accumulator
    kernel; cuBLAS TF32 rounds its FP32 inputs itself, so its error against its own inputs is n/a."""
    import helpers

    rows = {r["kernel"]: r for r in exp.comparison_rows(helpers.results.load_latest().rows, 1024)}
    assert rows["cublas_fp16"]["c"] == "FP16" and rows["wmma_mixed_gemm_kernel"]["c"] == "FP32"
    assert rows["wmma_fp16acc_gemm_kernel"]["c"] == "FP16" and rows["cublas_tf32"]["c"] == "FP32"
    assert rows["cublas_tf32"]["own"] == "n/a" and np.isnan(rows["cublas_tf32"]["rel_err_acc"])
    assert rows["cublas_fp32"]["own"] == f"{rows['cublas_fp32']['rel_err_acc']:.1e}"
    assert 0 < exp.fp16_output_rounding_error(1024) < 2.0 ** -11


# --------------------------------------------------------------------------- predictions, revealed from the record
def _recorded(kernel, n):
    import helpers

    return helpers.results.load_latest().select(kernel=kernel, m=n, n=n, k=n)[0]


def test_acc16_speed_reveal_judges_a_guess_and_says_how_far_off(capsys):
    ratio = _recorded("cublas_fp16_acc16", 4096)["tflops"] / _recorded("cublas_fp16", 4096)["tflops"]
    ex.reveal_acc16_speed(...)
    out = capsys.readouterr().out
    assert exercises.last_result is None and "No guess yet" in out and f"{ratio:.3f}" not in out   # nothing revealed
    ex.reveal_acc16_speed(ratio * 1.05)
    out = capsys.readouterr().out
    assert exercises.last_result is True and "Correct." in out and f"{ratio:.3f}" in out and "per clock" in out
    ex.reveal_acc16_speed(2.0)                                 # the GeForce ratio of peaks
    out = capsys.readouterr().out
    assert exercises.last_result is False and "Not quite" in out and "too high" in out
    assert f"off by a factor of {2.0 / ratio:.2f}" in out


def test_error_growth_reveal_right_wrong_and_absurd(capsys):
    growth = _recorded("wmma_fp16acc_gemm_kernel", 8192)["rel_err"] / _recorded("wmma_fp16acc_gemm_kernel", 256)["rel_err"]
    ex.reveal_fp16acc_error_growth(32 ** 0.5)                 # errors of random sign: the square root of 32
    assert exercises.last_result is bool(abs(np.log(32 ** 0.5 / growth)) <= np.log(1.5))
    ex.reveal_fp16acc_error_growth(growth)
    assert exercises.last_result is True and "exactly it" in capsys.readouterr().out
    ex.reveal_fp16acc_error_growth(1.0)
    out = capsys.readouterr().out
    assert exercises.last_result is False and "too low" in out
    for absurd in (0, -3, float("nan"), float("inf"), 1e308, "a lot", [5], {"x": 1}):
        ex.reveal_fp16acc_error_growth(absurd)                # a verdict, never an exception
        out = capsys.readouterr().out
        assert exercises.last_result is False and out.startswith("[") and "Traceback" not in out


# --------------------------------------------------------------------------- the committed lesson's solutions
def test_solution_cells_are_stored_empty_and_answer_correctly(capsys):
    """The committed lesson shows no solution output (stored unrun: nbval runs the cells but compares nothing),
    so this test runs them and reads their verdicts."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "03_mixed_precision.ipynb").read_text())
    cells = [c for c in nb["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert cells and all(c["outputs"] == [] and c["execution_count"] is None for c in cells)
    ns = {}
    exec("import numpy as np\nfrom helpers.exercises import mixed as ex", ns)
    for c in cells:
        exec("".join(c["source"]), ns)
    out = capsys.readouterr().out
    assert out.count("Correct.") == 3 and "Not quite" not in out and "Not accepted" not in out
