"""CPU tests for lesson 2's helpers (helpers/experiments/wmma.py with wmma_ptx.py and wmma_plots.py,
helpers/exercises/wmma.py)."""
import numpy as np
import pytest

import helpers
from helpers import exercises
from helpers.exercises import wmma as ex
from helpers.experiments import wmma as w



def test_ptx_layout_covers_each_element_once():
    for kind, shape, per_lane in [("a", (16, 16), 8), ("b", (16, 8), 4), ("c", (16, 8), 4)]:
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
    ex.two_by_two_bytes_per_flop_exercise(1 / 16)
    assert exercises.last_result is True


def test_exercise_checkers_accept_the_answer_and_reject_a_printed_number(capsys):
    for fn, args, good, bad in [
        # exercise 1: an FP64 8x8x4 mma_sync; the 8192 FLOPs printed for 16x16x16 is rejected
        (exercises.mma_flops_exercise, (8, 8, 4), 2 * 8 * 8 * 4, 8192),
        # exercise 3: the TF32 kernel (16x16x8, 4-byte elements); the FP16 kernel's 1/8 is rejected
        (ex.naive_bytes_per_flop_exercise, (16, 16, 8, 4), 0.25, 0.125),
        # exercise 4: HMMA for a 16x16 tile at K = 4096; the printed 2 per mma_sync is rejected
        (ex.hmma_per_tile_exercise, (4096,), 512, 2),
        (ex.hmma_per_tile_exercise, (16,), 2, 1),
    ]:
        for answer, expected in [(None, None), (good, True), (bad, False)]:
            fn(answer, *args)
            assert exercises.last_result is expected, (fn.__name__, args, answer)
        out = capsys.readouterr().out
        assert "Not answered yet" in out and "Correct." in out and "Hint" in out


def test_padded_fp16_inputs_leave_no_input_term():
    """'Sizes that are not multiples of 16': FP32 inputs rounded to FP16 by the kernel carry an input term in
    the tolerance; inputs that already are FP16 leave only the accumulation's, a far smaller tolerance."""
    spec = helpers.KERNELS["wmma_gemm_naive"]
    A = helpers.random_matrix(200, 72, seed=200)
    B = helpers.random_matrix(72, 136, seed=136)
    first = spec.check(helpers.wmma_gemm_naive(A.astype(np.float16), B.astype(np.float16), pad=True), A, B)
    A = helpers.random_matrix(40, 48, seed=1).astype(np.float16)
    B = helpers.random_matrix(48, 40, seed=2).astype(np.float16)
    padded = spec.check(helpers.wmma_gemm_naive(A, B, pad=True), A, B)
    assert first.passed and padded.passed
    assert first.tol.in_term > 0 and padded.tol.in_term == 0 and padded.tol.value < first.tol.value / 10


def test_kernel_checkers_without_gpu(capsys):
    ex.check_bcol_kernel(None)
    assert exercises.last_result is None and "Not answered yet" in capsys.readouterr().out
    ex.check_bcol_kernel(ex.solution_source("wmma_gemm_bcol"))      # the CPU replay of the B load: no verdict
    assert exercises.last_result is None and "numpy replay" in capsys.readouterr().out
    ex.check_bcol_kernel(ex.BCOL_STARTER)
    assert exercises.last_result is False and "Not quite" in capsys.readouterr().out
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


def test_edge_store_sources_explain_the_replay():
    """Appendix D: M = 40 (both cases) sends the last row strip's rows 40-47 past the end of C: all of
    the right case's stores past the end, all but the few of the left case's that only the column wrap
    reaches; N = 40 (left) wraps 8 columns into the next row: exactly the wrong elements inside C;
    K = 40 (right) reads 8 rows past the end of B: every element wrong. Counts against the replay."""
    replay = {(c["m"], c["n"], c["k"]): c for c in w.edge_corruption_cpu()}
    for M, N, K in w.EDGE_CASES:
        s, c = w.edge_store_sources(M, N, K), replay[(M, N, K)]
        assert M == 40 and s["mp"] == 48
        assert s["past_end"] == c["writes_past_end"] == s["past_end_rows"] + s["past_end_wrap_only"]
        assert s["past_end_rows"] == (s["mp"] - M) * N              # every store of the rows below M
        assert s["past_end_wrap_only"] < s["past_end_rows"] / 10    # "almost all" from the rows below M
        wrong = c["n_nan"] + c["n_wrong"]
        if N % 16:                                                  # left: the wrap is all that is wrong in C
            assert (N, K % 16) == (40, 0) and s["past_end_wrap_only"] > 0
            assert wrong == s["wrapped_inside"] == (M - 1) * (_ceil16(N) - N) and c["n_nan"] == wrong
            mask = np.array(c["mask"])
            assert (mask[1:, :_ceil16(N) - N] == 2).all() and (mask[0] == 0).all()
        else:                                                       # right: the K tail spoils every element
            assert K == 40 and s["b_rows_past_end"] == 8 and s["wrapped_inside"] == 0
            assert wrong == M * N and s["past_end_wrap_only"] == 0


def _ceil16(v):
    return -(-v // 16) * 16


# --------------------------------------------------------------------------- the error figure, the predictions
def test_error_figure_draws_each_kernel_and_both_unit_roundoffs():
    import matplotlib.pyplot as plt

    sw = helpers.sweep(["wmma_gemm_naive", "gemm_fp32_kernel", "cublas_fp16"], [256, 1024, 8192])
    fig = w.plot_error_vs_size(sw.data, sw.source)
    ax = fig.axes[0]
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 3]
    assert len(curves) == 4                               # naive WMMA twice (FP32 and own inputs), FP32, cuBLAS
    naive = {r["m"]: r for r in sw.data if r["kernel"] == "wmma_gemm_naive"}
    assert list(curves[1].get_ydata()) == [naive[n]["rel_err_acc"] for n in (256, 1024, 8192)]
    levels = sorted(ln.get_ydata()[0] for ln in ax.get_lines() if len(set(ln.get_ydata())) == 1 and ln not in curves)
    assert levels == [2.0 ** -24, 2.0 ** -11]
    plt.close(fig)


def _recorded(kernel, n):
    return helpers.results.load_latest().select(kernel=kernel, m=n, n=n, k=n)[0]


def test_speedup_reveal_judges_a_guess_and_says_how_far_off(capsys):
    ratio = _recorded("wmma_gemm_naive", 4096)["tflops"] / _recorded("gemm_fp32_kernel", 4096)["tflops"]
    ex.reveal_speedup(...)
    out = capsys.readouterr().out
    assert exercises.last_result is None and "No guess yet" in out and f"{ratio:.2f}" not in out
    ex.reveal_speedup(ratio * 1.3)
    assert exercises.last_result is True and f"{ratio:.2f}" in capsys.readouterr().out
    peaks = helpers.device.peaks_for("NVIDIA H200")
    ex.reveal_speedup(peaks.fp16 / peaks.fp32)                # the datasheet's ratio: far too high
    out = capsys.readouterr().out
    assert exercises.last_result is False and "too high" in out
    assert f"off by a factor of {peaks.fp16 / peaks.fp32 / ratio:.2f}" in out


def test_error_growth_and_tensor_busy_reveals(capsys):
    growth = _recorded("wmma_gemm_naive", 8192)["rel_err"] / _recorded("wmma_gemm_naive", 256)["rel_err"]
    ex.reveal_error_growth(growth * 1.4)
    assert exercises.last_result is True
    ex.reveal_error_growth(32 ** 0.5)                         # what an accumulation-bound error would do
    assert exercises.last_result is (32 ** 0.5 / growth <= 1.5)
    busy = helpers.profile.load_ncu().row("rung1")["tensor_pct"]
    ex.reveal_tensor_busy(busy / 1.9)
    assert exercises.last_result is True
    ex.reveal_tensor_busy(busy * 3)
    last = capsys.readouterr().out.split("\n[")[-1]                 # the last verdict, its wrapped lines too
    assert exercises.last_result is False and "too high" in last
    for absurd in (0, -1, float("nan"), float("-inf"), 10 ** 400, "fast", (1, 2), object()):
        for reveal in (ex.reveal_speedup, ex.reveal_error_growth, ex.reveal_tensor_busy):
            reveal(absurd)                                     # a verdict, never an exception
            out = capsys.readouterr().out
            one = sum(not ln.startswith(" ") for ln in out.splitlines()) == 1      # one verdict, perhaps wrapped
            assert exercises.last_result is False and out.startswith("[") and one


# --------------------------------------------------------------------------- the committed lesson's solutions
def test_solution_cells_are_stored_empty_and_answer_correctly(capsys):
    """The committed lesson shows no solution output (stored unrun: nbval runs the cells but compares nothing),
    so this test runs them and reads their verdicts; the kernel checks need a GPU and say so here."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "02_tensor_cores_wmma.ipynb").read_text())
    cells = [c for c in nb["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert cells and all(c["outputs"] == [] and c["execution_count"] is None for c in cells)
    ns = {}
    exec("import numpy as np\nimport helpers\nfrom helpers import exercises\nfrom helpers.exercises import wmma as ex", ns)
    for c in cells:
        exec("".join(c["source"]), ns)
    out = capsys.readouterr().out
    assert out.count("Correct.") == 5 and "Not quite" not in out and "Not accepted" not in out


# --------------------------------------------------------------------------- the pictures drawn from the kernel and its SASS
def test_hmma_split_reads_the_recorded_sass():
    """One mma_sync of wmma_gemm_naive is two HMMA.16816 in the recorded sm_90 SASS: the same A registers, each its
    own B registers and its own 8 columns of D (from the kernel's final stores), accumulating in place."""
    parts = w.hmma_split()
    assert len(parts) == 2 and all(p["opcode"].startswith("HMMA.16816") for p in parts)
    assert parts[0]["a"] == parts[1]["a"] and parts[0]["b"] != parts[1]["b"] and parts[0]["d"] != parts[1]["d"]
    assert sorted(p["cols"] for p in parts) == [(0, 8), (8, 16)]
    assert all(p["c"] == p["d"] for p in parts)
    first = [int(p["a"].split("-")[0][1:]) for p in parts]
    assert all(p["a"] == f"R{f}-R{f + 3}" for p, f in zip(parts, first))      # A: four registers


def test_wmma_pictures_take_the_kernels_tile():
    import matplotlib.pyplot as plt

    assert w.warp_tile("wmma_gemm_naive") == (16, 16, 16)
    fig = w.plot_mma_tile()
    assert "m16n16k16" in fig.axes[0].get_title(loc="left")
    assert {"A: 16×16, FP16", "C: 16×16, FP32"} <= {t.get_text() for t in fig.axes[0].texts}   # the kernel's formats
    plt.close(fig)
    fig = w.plot_k_loop(64, 64, 64, warp=(1, 2))
    title = fig.axes[0].get_title(loc="left")
    assert "C[16:32, 32:48]" in title and "4 steps of 16" in title
    plt.close(fig)
    fig = w.plot_hmma_split()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t.startswith("HMMA.16816") for t in texts) == 2
    plt.close(fig)


def test_bcol_replay_accepts_the_solution_and_rejects_each_mistake(capsys):
    """Exercise 6 without a GPU: the replay of the B load passes the solution however it is spelled (&Bt[...],
    other casts, the nvcuda:: prefix, a local pointer and ldm), fails the starter and each one-part mistake (layout
    tag, pointer, ldm), naming the first element read from the wrong place, and gives no verdict, saying so, where
    it cannot follow the source."""
    sol = ex.solution_source("wmma_gemm_bcol")
    load = "Bt + (size_t)tile_col * K + k, K"
    assert load in sol
    local = sol.replace(load, "bt, ldb").replace("for (int k = 0;", "const int ldb = K;\n    for (int k = 0;").replace(
        "wmma::load_matrix_sync(b,", "const half* bt = Bt + (size_t)tile_col * K + k;\n        wmma::load_matrix_sync(b,")
    spellings = [sol, local, sol.replace("wmma::", "nvcuda::wmma::")] + [sol.replace(load, f"{p}, K") for p in (
        "&Bt[tile_col * K + k]", "Bt + k + tile_col * K", "Bt + static_cast<size_t>(tile_col) * K + k",
        "Bt + (unsigned int)tile_col * K + k", "Bt + (int64_t)tile_col * K + k", "(Bt + (size_t)tile_col * K) + k",
        "k + Bt + tile_col * K")]
    for ok in spellings:
        assert ex.bcol_replay(ok) == ("ok", None), ok[ok.index("load_matrix_sync(b"):][:80]
    assert ex.bcol_replay(ex.BCOL_STARTER)[0] == "wrong"
    wrong = {"layout": sol.replace("col_major> b", "row_major> b"),
             "pointer": sol.replace(load, "Bt + (size_t)k * N + tile_col, K"),
             "off by one tile": sol.replace(load, "Bt + (size_t)tile_col * K + k + 16, K"),
             "ldm": sol.replace(load, "Bt + (size_t)tile_col * K + k, N")}
    for what, src in wrong.items():
        status, why = ex.bcol_replay(src)
        assert status == "wrong" and "is read from Bt[" in why, what
    for unreadable in (sol.replace(load, "Bt + offset(tile_col, k), K"), sol.replace(load, "Bt + K**K**K, K"),
                       sol.replace(load, "Bt + tile_col * K + kk, K"), sol.replace("wmma::matrix_b", "wmma::matrix_a")):
        assert ex.bcol_replay(unreadable)[0] == "unreadable"
        ex.check_bcol_kernel(unreadable)
        out = capsys.readouterr().out
        assert "No verdict" in out and "Not quite" not in out and exercises.last_result is None
