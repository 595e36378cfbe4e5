"""Lesson 3 on the CPU: the experiments' helpers that need no GPU, and the exercise checkers (helpers/experiments/
mixed.py, helpers/exercises/mixed.py); formats and training: tests/test_formats.py, tests/test_training.py."""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

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
    import types

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
    clock_text shows them (and says 'clock not recorded' for a row from an older record)."""
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
    old = {k: v for k, v in rows[0].items() if k not in clocks.FIELDS}
    assert clocks.with_clock([old])[0]["clock"] == "clock not recorded"


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


@pytest.mark.parametrize("fn,good,bad", [(ex.spacing_exercise, 0.5, 1.0), (ex.integer_run_exercise, 256, 255),
                                         (ex.loss_scale_exercise, 65536, 32768)])
def test_exercise_checkers(fn, good, bad, capsys):
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
    pts = [dict(x=at[k]["rel_err"], y=at[k]["tflops"], label=lab, color=exp.VARIANT_COLORS[k], marker=exp._marker(k))
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


# --------------------------------------------------------------------------- the lesson, read as a learner
def _lesson_cells():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parent.parent / "notebooks" / "03_mixed_precision.ipynb").read_text())
    return nb["cells"]


def _src(c):
    return "".join(c["source"]) if isinstance(c["source"], list) else c["source"]


def test_lesson03_main_path_is_short_and_checks_claims_in_one_appendix():
    import re

    cells = _lesson_cells()
    st = [c.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") for c in cells]
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and st[i] in ("slide", "subslide")
                 and re.search(r"^#+\s+Appendix", _src(c), re.M))
    prose = " ".join(_src(c) for c in cells[:first] if c["cell_type"] == "markdown")
    assert len(prose.split()) <= 3000
    assert len(re.findall(r"\bseeds?\b|the article", prose, re.I)) <= 3
    assert sum("A common claim:" in _src(c) for c in cells[:first]) >= 4
    headings = [h for c in cells if c["cell_type"] == "markdown" for h in re.findall(r"^#+\s+(.+)$", _src(c), re.M)]
    assert headings.count("Appendix: Claims checked") == 1
    main_headings = [h for c in cells[:first] if c["cell_type"] == "markdown" for h in re.findall(r"^##\s+(.+)$", _src(c), re.M)]
    assert main_headings[-2:] == ["Summary", "Exercises"]
    fp8 = prose.replace("\n# ", " ").replace("\n> ", " ")
    for words in ("arXiv:2209.05433", "simulated", "1x128", "128x128", "arXiv:2412.19437"):
        assert words in fp8


def test_lesson03_exercises_use_one_placeholder_and_hidden_solutions():
    cells = _lesson_cells()
    code = [(i, c) for i, c in enumerate(cells) if c["cell_type"] == "code"]
    asks = [i for i, c in code if "answer = ..." in _src(c)]
    sols = [i for i, c in code if "solution" in c["metadata"].get("tags", [])]
    assert len(asks) == 3 and sols and not any("= None" in _src(c) and "answer" in _src(c) for _, c in code)
    for i in sols:
        assert cells[i]["metadata"].get("jupyter", {}).get("source_hidden") is True
        assert i - 1 not in asks                                # not directly under a question
        between = [cells[j].get("metadata", {}).get("slideshow", {}).get("slide_type") for j in range(max(asks), i)]
        assert "subslide" in between or "slide" in between     # on a later slide


# --------------------------------------------------------------------------- claims of the lesson's prose
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
    """'Speed and error at 1024': cuBLAS FP16 writes FP16 C and its own-input error is the rounding of C
    (within 25% of rounding the exact product to FP16 alone, over 100 times the FP32-C WMMA kernel's);
    cuBLAS TF32 has no own-input error (the record's is against the FP32 inputs: n/a)."""
    import helpers

    rows = {r["kernel"]: r for r in exp.comparison_rows(helpers.results.load_latest().rows, 1024)}
    assert rows["cublas_fp16"]["c"] == "FP16" and rows["wmma_mixed_gemm_kernel"]["c"] == "FP32"
    assert rows["wmma_fp16acc_gemm_kernel"]["c"] == "FP16" and rows["cublas_tf32"]["c"] == "FP32"
    out = exp.fp16_output_rounding_error(1024)
    assert 0.8 < rows["cublas_fp16"]["rel_err_acc"] / out < 1.25
    assert rows["cublas_fp16"]["rel_err_acc"] > 100 * rows["wmma_mixed_gemm_kernel"]["rel_err_acc"]
    assert rows["cublas_tf32"]["own"] == "n/a" and np.isnan(rows["cublas_tf32"]["rel_err_acc"])
    assert rows["cublas_fp32"]["own"] == f"{rows['cublas_fp32']['rel_err_acc']:.1e}"


def test_speed_vs_error_chart_as_the_lesson_describes_it():
    """The prose under the chart at 4096: three error columns (FP32; 11-bit inputs with FP32 accumulation,
    cuBLAS FP16 rightmost of them; FP16 accumulation and BF16 inputs together, several times further right),
    two speed levels (every cuBLAS Tensor Core variant over ten times every WMMA kernel, which cuBLAS FP32
    also beats), and FP16 accumulation buying cuBLAS under 5%."""
    import helpers

    at = {r["kernel"]: r for r in helpers.results.load_latest().rows if r["m"] == r["n"] == r["k"] == 4096}
    err = {k: at[k]["rel_err"] for k in exp.VARIANTS}
    tf = {k: at[k]["tflops"] for k in exp.VARIANTS}
    fp32 = ["gemm_fp32_kernel", "cublas_fp32"]
    eleven = ["wmma_mixed_gemm_kernel", "wmma_tf32_gemm_kernel", "cublas_tf32", "cublas_fp16"]
    right = ["wmma_fp16acc_gemm_kernel", "cublas_fp16_acc16", "wmma_bf16_gemm_kernel"]
    assert max(err[k] for k in fp32) < 1e-5 < 1e-4 < min(err[k] for k in eleven)
    assert max(err[k] for k in eleven) == err["cublas_fp16"] < 1e-3
    assert min(err[k] for k in right) > 5 * max(err[k] for k in eleven)
    assert abs(err["wmma_bf16_gemm_kernel"] / err["wmma_fp16acc_gemm_kernel"] - 1) < 0.05
    wmma = [k for k in exp.VARIANTS if k.startswith("wmma")]
    tensor_cublas = ["cublas_tf32", "cublas_fp16", "cublas_fp16_acc16"]
    assert min(tf[k] for k in tensor_cublas) > 10 * max(tf[k] for k in wmma)
    assert tf["cublas_fp32"] > max(tf[k] for k in wmma) > tf["gemm_fp32_kernel"]
    assert 1 <= tf["cublas_fp16_acc16"] / tf["cublas_fp16"] < 1.05


def test_appendix_peak_ratios_exact_for_the_a100_close_on_hopper():
    """'Speed claims': exactly 16x and 8x are the A100 datasheet's ratios; the H100 and H200 datasheets and the
    H200 record at 4096 come close (within 15%); the V100 and T4 (8x FP16, no TF32) and the RTX 4090 (2x, 1x)
    do not."""
    import helpers

    def ratios(g):
        p = helpers.device.peaks_for(g)
        return p.fp16 / p.fp32, (p.tf32 / p.fp32 if p.tf32 else None)

    assert ratios("A100") == (16.0, 8.0)
    for g in ("H100", "H200"):
        f16, t32 = ratios(g)
        assert f16 != 16 and t32 != 8 and 0.85 < f16 / 16 < 1 and 0.85 < t32 / 8 < 1, g
    rec = helpers.results.load_latest()
    f32, t32, f16 = (rec.select(kernel=k, m=4096, n=4096, k=4096)[0]["tflops"]
                     for k in ("cublas_fp32", "cublas_tf32", "cublas_fp16"))
    assert 0.85 < f16 / f32 / 16 < 1.15 and 0.85 < t32 / f32 / 8 < 1.15
    for g in ("V100", "T4"):
        assert ratios(g) == (pytest.approx(8.0, rel=0.02), None), g
    assert ratios("RTX 4090") == (2.0, 1.0)


def test_appendix_c_ties_to_even_differs_on_the_complementary_share():
    """Appendix C': b4_e2_rne differs from the H200's TF32 output on 1 - its identical share (printed)."""
    import helpers

    res = helpers.results.load_latest().meta["experiments"]["mixed_emulator_probe"]["wmma_tf32_gemm_kernel"]["identical"]
    assert res["b4_e2"] == 1.0 and 0 < 1 - res["b4_e2_rne"] < 0.5
    cell = next(c for c in _lesson_cells() if "mixed_emulator_probe" in _src(c) and c["cell_type"] == "code")
    out = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    assert f"(b4_e2_rne): {1 - res['b4_e2_rne']:.1%} of the TF32 kernel's elements differ" in out


def test_appendix_d_without_a_gpu_names_the_main_path_chart():
    cells = _lesson_cells()
    cell = next(c for c in cells if c["cell_type"] == "code" and "speed_vs_error(sweep.data" in _src(c))
    out = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    title = "Speed vs error, every variant on one chart"
    assert "the main path's" in out and f"'{title}'" in out
    assert any(c["cell_type"] == "markdown" and f"## {title}" in _src(c) for c in cells)
