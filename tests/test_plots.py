"""The shared figures: each returns a Figure whose title carries the data's source."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from helpers import plots  # noqa: E402

SOURCE = "NVIDIA H200, recorded 2025-06-01 (test source)"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _title(fig):
    ax = fig.axes[0]
    return " ".join(ax.get_title(loc=loc) for loc in ("left", "center", "right"))


def test_tflops_vs_size():
    sizes = [256, 512, 1024]
    fig = plots.tflops_vs_size({"wmma": (sizes, [1.0, 5.0, 20.0])},
                               baselines={"cuBLAS": (sizes, [2.0, 10.0, 40.0])},
                               peaks={"FP16 peak": 989.4, "missing": None},
                               title="Throughput", source=SOURCE)
    assert isinstance(fig, Figure)
    t = _title(fig)
    assert SOURCE in t and "Throughput" in t
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert "wmma" in labels and "cuBLAS" in labels
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [int(x) for x in ax.get_xticks()] == sizes


def test_roofline():
    fig = plots.roofline({"k1": (10.0, 5.0), "k2": (500.0, 400.0)}, peak_tflops=989.4, mem_gbs=4800,
                         title="Roofline", source=SOURCE)
    assert isinstance(fig, Figure)
    assert SOURCE in _title(fig)
    ax = fig.axes[0]
    roof = ax.get_lines()[0]
    x, y = roof.get_data()
    np.testing.assert_allclose(y, np.minimum(989.4, 4800 * x / 1e3))
    assert y.max() == pytest.approx(989.4)


def test_error_vs_k():
    K = [16, 64, 256]
    fig = plots.error_vs_k(K, {"fp16 acc": [1e-3, 2e-3, 4e-3]}, bounds={"gamma_K": [1e-2, 4e-2, 1.6e-1]},
                           source=SOURCE)
    assert isinstance(fig, Figure)
    assert SOURCE in _title(fig)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    assert ax.get_yscale() == "log"


def test_ladder():
    rows = {n: [{"rung": 0, "idea": "cuBLAS", "tflops": 700.0}] +
            [{"rung": r, "idea": f"idea {r}", "tflops": 10.0 * r} for r in (1, 2, 3)] for n in (4096, 8192)}
    fig = plots.ladder(rows, peak=989.4, source=SOURCE)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert SOURCE in _title(fig) and [t.get_text() for t in ax.get_xticklabels()] == ["1. idea 1", "2. idea 2",
                                                                                      "3. idea 3"]
    assert len(ax.patches) == 6                       # 3 rungs x 2 sizes
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [700.0, 700.0, 989.4]   # cuBLAS at each size, the peak


@pytest.mark.parametrize("source", ["emulated on the CPU", "GPU NVIDIA H200 (live)"])
def test_every_plot_carries_the_source(source):
    figs = [plots.tflops_vs_size({"a": ([64, 128], [1.0, 2.0])}, source=source),
            plots.roofline({"a": (1.0, 1.0)}, peak_tflops=100.0, mem_gbs=1000.0, source=source),
            plots.error_vs_k([1, 2], {"e": [1e-3, 1e-3]}, source=source),
            plots.ladder({64: [{"rung": 1, "idea": "a", "tflops": 1.0}]}, peak=10.0, source=source)]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert source in _title(fig)


def test_size_tick_labels_do_not_overlap():
    from helpers.plots import size_tick_labels

    assert size_tick_labels([256, 768, 1000, 1024, 3000, 4096]) == ["256", "768", "", "1024", "3000", "4096"]
    assert size_tick_labels([256, 512, 1024, 2048, 4096, 8192]) == ["256", "512", "1024", "2048", "4096", "8192"]


def test_idea_pictures_are_drawn_from_the_kernels_parameters():
    """Lessons 5 and 6: the tile, bank, swizzle and multicast pictures take the kernels' #defines, and the
    bank model they draw agrees with helpers.analysis.bank_ways."""
    from collections import Counter

    from helpers import analysis

    d = analysis.kernel_defines("ladder.cu")
    assert (d["BM"], d["BN"], d["BK"], d["WM"], d["WN"]) == (128, 128, 32, 64, 32)
    for stride in (256, 272, 64, 80):
        hits = Counter(b for row in analysis.bank_map(stride) for b in row)
        assert max(hits.values()) == analysis.bank_ways(stride)
    assert analysis.swizzle_128b()[3] == [3, 2, 1, 0, 7, 6, 5, 4]
    fig = plots.block_warp_tiles(d["BM"], d["BN"], d["WM"], d["WN"], bk=d["BK"])
    assert "2 x 4 warps of 64 x 32" in fig.axes[0].get_title(loc="left")
    fig = plots.smem_banks({"PAD=0": 256, "PAD=8": 272})
    assert "8-way" in fig.axes[0].get_title(loc="left") and "conflict-free" in fig.axes[1].get_title(loc="left")
    assert isinstance(plots.swizzle_128b(analysis.swizzle_128b()), Figure)
    h = analysis.kernel_defines("hopper_rung12_sm90a.cu")      # the rung that adds clusters
    fig = plots.cluster_multicast(bm=h["HBM"], bn=h["HBN"], bk=h["HBK"], box_n=h["BOX_N"], cluster=h["CLUSTER_M"])
    assert "96 KB without multicast, 64 KB with it" in fig.axes[0].get_title(loc="left")
    plt.close("all")


def test_new_keywords_keep_the_old_defaults():
    fig = plots.roofline({"a": (1.0, 1.0)}, peak_tflops=100.0, mem_gbs=1000.0)
    assert fig.axes[0].get_xlabel() == "arithmetic intensity (FLOP / byte of DRAM traffic)"
    fig = plots.roofline({"a": (1.0, 1.0)}, peak_tflops=100.0, mem_gbs=1000.0, xlabel="requested", legend_outside=True)
    assert fig.axes[0].get_xlabel() == "requested"
    plt.close("all")


def test_vec16_copies_draws_every_chunk():
    from helpers import analysis
    d = analysis.kernel_defines("ladder.cu")
    fig = plots.vec16_copies(d["BM"], d["BN"], d["BK"], d["NTHREADS"], d["SMEM_PAD"])
    chunks = (d["BM"] * d["BK"] + d["BK"] * d["BN"]) // 8
    assert sum(len(ax.patches) for ax in fig.axes) == chunks + 2      # every 16-byte chunk, and each tile's padding
    plt.close(fig)


def test_lesson6_block_diagrams_are_drawn_from_the_constants_given():
    fig = plots.hopper_kernel(stages=3, bm=128, bn=256, bk=64, box_n=64, producer_regs=40, consumer_regs=232)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert [t for t in texts if t.startswith("stage ")] == ["stage 0\n48 KB\nA + B", "stage 1\n48 KB\nA + B",
                                                             "stage 2\n48 KB\nA + B"]
    assert {"full[2]", "empty[2]"} <= set(texts) and not any("full[3]" in t for t in texts)
    assert any("232 registers" in t for t in texts) and any("40 registers" in t for t in texts)
    fig = plots.tma_ring_flow(bm=128, bn=256, bk=64, stages=4, threads=256)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "mbar[3]" in texts and "A\n16 KB" in texts and "$B^T$\n32 KB" in texts
    assert "48 KB" in fig.axes[0].get_title(loc="left")


def test_epilogue_path_draws_the_swizzle_of_the_box():
    fig = plots.epilogue_path(box_rows=64, box_cols=32, elem_bytes=4, slice_cols=256, show_rows=8)
    ax = fig.axes[1]
    where = {(round(t.get_position()[1] - 0.5), t.get_text()): round(t.get_position()[0] - 0.5) for t in ax.texts}
    assert where[(3, "c0")] == 3 and where[(5, "c2")] == 2 ^ 5         # chunk q of row r at q XOR r
    assert "8 boxes of 64 x 32" in fig.axes[0].get_title(loc="left")


def test_operand_majors_labels_k_along_rows_only_for_k_major():
    fig = plots.operand_majors(bk=64, box_n=64, show=4)
    first_row = lambda ax: [t.get_text() for t in ax.texts if abs(t.get_position()[1] - 0.5) < 1e-9]  # noqa: E731
    assert first_row(fig.axes[0]) == ["k0\nn0", "k1\nn0", "k2\nn0", "k3\nn0"]
    assert first_row(fig.axes[1]) == ["k0\nn0", "k0\nn1", "k0\nn2", "k0\nn3"]


def test_prediction_judged_gives_the_courses_verdict():
    base = {"p10_ms": 2.0, "median_ms": 2.1, "p90_ms": 2.2}
    fast = {"p10_ms": 0.95, "median_ms": 1.0, "p90_ms": 1.05}
    fig = plots.prediction_judged(base, fast, 2.0, base_label="a", rung_label="b", source=SOURCE)
    assert fig.axes[1].get_title(loc="left") == "2. verdict: as predicted" and SOURCE in fig._suptitle.get_text()
    fig = plots.prediction_judged(base, fast, 3.0, base_label="a", rung_label="b", source=SOURCE)
    assert fig.axes[1].get_title(loc="left") == "2. verdict: missed: worse than predicted"


def test_predicted_vs_measured_draws_one_column_per_rung_and_colours_by_verdict():
    pts = [dict(rung=8, shape="4096^3", predicted=1.3, measured=1.47, low=1.45, high=1.49,
                verdict="missed: better than predicted"),
           dict(rung=9, shape="4096^3", predicted=1.2, measured=1.14, low=1.0, high=1.25, verdict="as predicted"),
           dict(rung=9, shape="8192^3", predicted=1.2, measured=1.1, low=0.9, high=1.3,
                verdict="unresolved: the spread holds no gain too")]
    fig = plots.predicted_vs_measured(pts, source=SOURCE)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["rung 8", "rung 9"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"missed", "as predicted", "unresolved", "predicted"}
    assert SOURCE in _title(fig)
