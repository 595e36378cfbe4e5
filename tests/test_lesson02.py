"""CPU tests for lesson 2's helpers (helpers/experiments/wmma.py, helpers/exercises/wmma.py)."""
import numpy as np
import pytest

import helpers
from helpers import exercises
from helpers.exercises import wmma as ex
from helpers.experiments import wmma as w


@pytest.mark.parametrize("kind,shape,per_lane", [("a", (16, 16), 8), ("b", (16, 8), 4), ("c", (16, 8), 4)])
def test_ptx_layout_covers_each_element_once(kind, shape, per_lane):
    held = w.ptx_fragment_layout(kind)
    assert len(held) == 32 and all(len(h) == per_lane for h in held)
    assert (w.holders_grid(held, shape) == 1).all()


def test_ptx_layout_known_entries():
    a = w.ptx_fragment_layout("a")
    assert a[0][:4] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert a[5][4] == (1, 10)                      # groupID 1, threadID_in_group 1, a4: col 2 + 8
    b = w.ptx_fragment_layout("b")
    assert b[6] == [(4, 1), (5, 1), (12, 1), (13, 1)]
    c = w.ptx_fragment_layout("c")
    assert c[31] == [(7, 6), (7, 7), (15, 6), (15, 7)]
    assert (w.holders_grid(w.ptx_wmma_accumulator_layout()) == 1).all()


def test_compare_with_ptx_on_synthetic_maps():
    obs = {"matrix_a": [h + h for h in w.ptx_fragment_layout("a")], "matrix_b": w.ptx_wmma_b_layout(),
           "matrix_b_col": [list(reversed(h)) for h in w.ptx_wmma_b_layout()],
           "accumulator": w.ptx_wmma_accumulator_layout()}
    rows = {r["fragment"]: r for r in w.compare_with_ptx(obs)}
    assert rows["matrix_a"]["second_half_repeats_first"] and rows["matrix_a"]["distinct_per_lane"] == 8
    assert rows["matrix_b_col"]["same_elements_as_ptx"] and not rows["matrix_b_col"]["same_order_as_ptx"]


@pytest.mark.parametrize("name", list(w.VARIANTS))
def test_variants_on_cpu_pass_the_check(name):
    A = helpers.random_matrix(37, 50, seed=1)
    B = helpers.random_matrix(50, 23, seed=2)
    C = w.run_variant(name, A.astype(np.float16), B.astype(np.float16))
    chk = helpers.check_gemm(C, A, B, inputs="fp16", acc="fp32", acc_rounding="truncate", block=16, name=name)
    assert C.shape == (37, 23) and chk.passed, str(chk)


def test_prepare_variant_pads_and_transposes():
    A = np.ones((20, 30), np.float16)
    B = np.arange(30 * 10, dtype=np.float16).reshape(30, 10)
    Ap, Bt, (M, N, K), (Mp, Np, Kp) = w.prepare_variant("wmma_gemm_bcol", A, B)
    assert (M, N, K) == (20, 10, 30) and (Mp, Np, Kp) == (32, 16, 32)
    assert Bt.shape == (16, 32) and Bt.flags.c_contiguous and Bt[3, 7] == B[7, 3]
    _, _, _, (Mp, Np, _) = w.prepare_variant("wmma_gemm_2x2", A, B)
    assert (Mp, Np) == (32, 32)
    assert w.variant_grid("wmma_gemm_2x2", 256, 64) == (2, 2)
    with pytest.raises(helpers.InputError):
        w.prepare_variant("wmma_gemm_2x2", A.astype(np.float32), B)


def test_edge_replay_facts():
    out = w.edge_corruption_cpu()
    assert out == w.edge_corruption_cpu()           # deterministic
    first, second = out
    assert first["writes_past_end"] > 0 and first["n_nan"] > 0 and first["n_correct"] > 0
    assert second["n_correct"] == 0                 # K = 40: the last K step reads past B
    mask = np.array(first["mask"])
    assert (mask[:, 8:] == 0).all()                  # only the 8 wrapped columns are hit


def test_recorded_compiler_output_counts():
    n_mma = sum(ln.startswith("wmma.mma") for ln in w.ptx_lines())
    n_hmma = len(w.sass_lines(opcode="HMMA"))
    assert n_mma > 0 and n_hmma == 2 * n_mma
    assert all("HMMA.16816.F32" in ln for ln in w.sass_lines(opcode="HMMA"))


def test_question_checkers(capsys):
    ex.lane_of_a_exercise(7)
    assert exercises.last_result is True
    ex.lane_of_a_exercise(9)
    assert exercises.last_result is False
    ex.naive_bytes_per_flop_exercise(0.125)
    assert exercises.last_result is True
    ex.hmma_per_mma_exercise(2)
    assert exercises.last_result is True
    ex.two_by_two_bytes_per_flop_exercise(1 / 16)
    assert exercises.last_result is True


def test_kernel_checkers_without_gpu(capsys):
    ex.check_bcol_kernel(None)
    assert exercises.last_result is None and "Not answered yet" in capsys.readouterr().out
    ex.check_2x2_kernel(ex.solution_source("wmma_gemm_2x2"))
    assert exercises.last_result is None and "needs a CUDA GPU" in capsys.readouterr().out


def test_solution_sources_have_includes():
    for k in ("wmma_gemm_bcol", "wmma_gemm_2x2"):
        src = ex.solution_source(k)
        assert src.startswith("#include <mma.h>") and f"void {k}(" in src


def test_pictures(tmp_path):
    import matplotlib.pyplot as plt

    figs = [w.plot_tile_mapping(256, 64),
            w.plot_fragment_maps({"A": w.ptx_fragment_layout("a")}, "t", "s"),
            w.plot_edge_masks({"replay": w.edge_corruption_cpu()})]
    for f in figs:
        assert f.axes
        plt.close(f)


def test_legend_beside_leaves_the_plot_area():
    """Lesson 02's sweep plot: the legend sits right of the axes, where no peak or cuBLAS line runs."""
    import matplotlib.pyplot as plt

    fig = helpers.plots.tflops_vs_size({"k": ([256, 512], [1.0, 2.0])}, peaks={"peak": 3.0}, title="t", source="s")
    helpers.plots.legend_beside(fig)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1
    plt.close(fig)
