"""CPU unit tests of lesson 1's helpers: the traffic model and the exercise checkers."""
import pytest

import helpers
from helpers.exercises import baseline as ex
from helpers.experiments import baseline as exp

SOLUTION = helpers.display.kernel_source("fp32_variants.cu", "gemm_fp32_tiled")


def test_intensity_formulas():
    d = exp.intensity(1024)
    assert d["ideal"] == pytest.approx(1024 / 6)
    assert d["requested"] == pytest.approx(0.25, rel=1e-3)
    assert d["ideal_bytes"] == 3 * 1024 ** 2 * 4


@pytest.mark.parametrize("shape,lines,sectors", [((16, 16), 3, 4), ((32, 8), 2, 5), ((64, 4), 2, 5),
                                                 ((8, 32), 5, 5), ((4, 64), 9, 9), ((1, 256), 33, 33)])
def test_warp_footprint(shape, lines, sectors):
    f = exp.warp_footprint(*shape)
    assert (f["lines"], f["sectors"]) == (lines, sectors)
    assert f["warp_rows"] * f["warp_cols"] == 32


def test_block_intensity():
    assert exp.block_intensity(16, 16) == pytest.approx(4.0)
    assert exp.block_intensity(32, 32) == pytest.approx(8.0)


def test_every_experiment_registered():
    reg = helpers.experiments.load_all()
    assert {"fp32_block_shapes", "fp32_tiled_solution", "fp32_timing_method"} <= set(reg)


@pytest.mark.parametrize("fn,args,good,bad", [
    (ex.ai_ideal_exercise, (4096,), 4096 / 6, 4096 / 4),
    (ex.ai_naive_exercise, (), 0.25, 0.5),
    (ex.ai_tiled_exercise, (16,), 4.0, 16.0),
])
def test_intensity_checkers(fn, args, good, bad, capsys):
    fn(None, *args)
    assert helpers.exercises.last_result is None
    fn(good, *args)
    assert helpers.exercises.last_result is True
    fn(bad, *args)
    assert helpers.exercises.last_result is False
    out = capsys.readouterr().out
    assert "Not answered yet" in out and "Correct." in out and "Hint" in out


def test_solution_passes_static_checks():
    assert ex.static_problems(SOLUTION, "gemm_fp32_tiled") == []


@pytest.mark.parametrize("edit,needle", [
    (lambda s: s.replace("__shared__", ""), "__shared__"),
    (lambda s: s.replace("__syncthreads();", "", 1), "__syncthreads"),
    (lambda s: s.replace('extern "C" ', ""), "extern"),
    (lambda s: s.replace("gemm_fp32_tiled", "other"), "gemm_fp32_tiled"),
])
def test_static_problems_found(edit, needle):
    probs = ex.static_problems(edit(SOLUTION), "gemm_fp32_tiled")
    assert probs and any(needle in p for p in probs)


def test_tiled_checker_on_cpu(capsys):
    ex.check_tiled_kernel(None)
    assert "Not answered yet" in capsys.readouterr().out
    ex.check_tiled_kernel(SOLUTION, name="gemm_fp32_tiled")
    out = capsys.readouterr().out
    assert "needs a CUDA GPU" in out and helpers.exercises.last_result is None
    ex.check_tiled_kernel(SOLUTION.replace("__shared__", ""), name="gemm_fp32_tiled")
    assert "Not quite" in capsys.readouterr().out
    ex.check_tiled_kernel(42)
    assert "string" in capsys.readouterr().out


def test_timing_agreement_lines_show_each_clock():
    """The record's harness-vs-do_bench entry, each timing beside its SM clock; 'clock not recorded'
    for an entry recorded before the clocks were stored."""
    c = {"sm_mhz": 1980, "sm_mhz_min": 1980, "throttle": ["none"]}
    entry = {"size": 4096, "op": "cupy.matmul float16", "harness_median_ms": [0.1795, 0.1794],
             "do_bench_median_ms": 0.1806, "ratio": 0.9937, "independent_timer": "do_bench",
             "harness_clocks": [c, dict(c, sm_mhz=1965)], "do_bench_clocks": c}
    text = "\n".join(exp.timing_agreement_lines(entry))
    assert text.count("1980 MHz") == 2 and "1965 MHz" in text and "0.994" in text
    old = {k: v for k, v in entry.items() if not k.endswith("_clocks")}
    lines = exp.timing_agreement_lines(old)
    assert sum("clock not recorded" in ln for ln in lines) == 3
    recorded = helpers.results.load_latest().meta["extras"]["timing_agreement"]
    assert len(exp.timing_agreement_lines(recorded)) == 5               # the committed record, whatever its age
    assert exp.timing_agreement_lines({"skipped": "no triton"}) == ["timing agreement not measured: no triton"]


def test_every_size_labelled_1000_beside_1024():
    """The sweep plot labels 1000 and 1024 both (1000 one row lower), so the 1000 point is seen."""
    import matplotlib.pyplot as plt

    sizes = [512, 1000, 1024, 2048]
    fig = helpers.plots.tflops_vs_size({"k": (sizes, [1.0, 2.0, 1.5, 1.6])}, title="t", source="s")
    helpers.plots.label_every_size(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "1000", "1024", "2048"]
    pads = [t.get_pad() for t in ax.xaxis.get_major_ticks()]
    assert pads[1] > pads[2] == pads[0]
    plt.close(fig)
