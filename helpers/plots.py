"""Matplotlib helpers shared by all lessons: one style, readable on a slide.

Each function draws one figure and returns it; every title carries the data's
provenance (``source``): the live GPU, a recorded file with its GPU and date,
or "emulated on the CPU".
"""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

STYLE = {
    "figure.figsize": (10, 5.6),      # 16:9-ish, fits a 1280x720 slide
    "figure.dpi": 100,
    "font.size": 14,
    "axes.titlesize": 15,
    "axes.labelsize": 14,
    "legend.fontsize": 12,
    "lines.linewidth": 2.4,
    "lines.markersize": 7,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "tensor-core-course",
}

# A colour-blind-safe cycle (Okabe & Ito) so kernels keep their colour across lessons.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def apply_style():
    plt.rcParams.update(STYLE)
    plt.rcParams["axes.prop_cycle"] = matplotlib.cycler(color=COLORS)


def _finish(ax, title: str, source: str, legend_outside: bool = False):
    ax.set_title(f"{title}\n{source}", loc="left")
    if legend_outside:       # beside the axes: no legend on top of a line
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    else:
        ax.legend(loc="best", frameon=False)
    ax.figure.tight_layout()
    return ax.figure


def size_tick_labels(sizes, min_ratio: float = 1.12) -> list[str]:
    """Labels for ticks at `sizes` on a log axis: a size closer than `min_ratio` to one already
    labelled gets no label (powers of two are labelled first), so labels such as 1000 and 1024 do
    not print on top of each other. Returns one label ('' or the size) per size, in order."""
    sizes = list(sizes)
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i] & (sizes[i] - 1) != 0, sizes[i]))
    kept: list[int] = []
    for i in order:
        if all(max(sizes[i], sizes[j]) / min(sizes[i], sizes[j]) >= min_ratio for j in kept):
            kept.append(i)
    return [str(s) if i in kept else "" for i, s in enumerate(sizes)]


def tflops_vs_size(series: dict, *, baselines: dict | None = None, peaks: dict | None = None,
                   title: str = "GEMM throughput", source: str = "", ylog: bool = True):
    """TFLOP/s against square size n (M=N=K=n).

    series / baselines: {label: (sizes, tflops)}; baselines are drawn dashed.
    peaks: {label: TFLOP/s} drawn as horizontal dotted lines.
    """
    apply_style()
    fig, ax = plt.subplots()
    for label, (n, t) in series.items():
        ax.plot(n, t, marker="o", label=label)
    for label, (n, t) in (baselines or {}).items():
        ax.plot(n, t, linestyle="--", marker="s", label=label)
    for i, (label, v) in enumerate((peaks or {}).items()):
        if v:
            ax.axhline(v, linestyle=":", color="0.3", linewidth=1.6)
            ax.annotate(f"{label}: {v:g}", (0.01, v), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=11, color="0.25")
    ax.set_xscale("log", base=2)
    if ylog:
        ax.set_yscale("log")
    ax.set_xlabel("matrix size n (M = N = K = n)")
    ax.set_ylabel("TFLOP/s")
    sizes = sorted({s for n, _ in list(series.values()) + list((baselines or {}).values()) for s in n})
    if sizes:
        ax.set_xticks(sizes)
        ax.set_xticklabels(size_tick_labels(sizes), rotation=45)
        ax.minorticks_off()
    return _finish(ax, title, source)


def roofline(points: dict, *, peak_tflops: float, mem_gbs: float, extra_ceilings: dict | None = None,
             title: str = "Roofline", source: str = ""):
    """Attainable TFLOP/s vs arithmetic intensity (FLOP/byte), log-log.

    points: {label: (intensity, tflops)}; extra_ceilings: {label: TFLOP/s}.
    """
    apply_style()
    fig, ax = plt.subplots()
    xs = [p[0] for p in points.values()] or [1.0]
    x = np.logspace(np.log10(min(xs + [0.1]) / 2), np.log10(max(xs + [peak_tflops * 1e3 / mem_gbs]) * 4), 200)
    roof = np.minimum(peak_tflops, mem_gbs * x / 1e3)
    ax.plot(x, roof, color="0.2", label=f"roof: {peak_tflops:g} TFLOP/s, {mem_gbs:g} GB/s")
    for label, v in (extra_ceilings or {}).items():
        ax.plot(x, np.minimum(v, mem_gbs * x / 1e3), color="0.5", linestyle=":", label=f"{label}: {v:g} TFLOP/s")
    for label, (ai, t) in points.items():
        ax.plot([ai], [t], marker="o", markersize=10, linestyle="none", label=f"{label} ({t:.3g} TFLOP/s)")
    ax.axvline(peak_tflops * 1e3 / mem_gbs, color="0.7", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic)")
    ax.set_ylabel("TFLOP/s")
    return _finish(ax, title, source)


def error_vs_k(K, curves: dict, *, bounds: dict | None = None, title: str = "Error vs K",
               ylabel: str = "componentwise error / (|A||B|)", source: str = ""):
    """Error against inner dimension K (log-log); the legend sits beside the axes.

    bounds: {label: values} drawn dashed, grey, or {label: (values, color)} drawn dashed in the colour
    of the curve they bound."""
    apply_style()
    fig, ax = plt.subplots(figsize=(12, 5.6))
    for label, e in curves.items():
        ax.plot(K, e, marker="o", label=label)
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1))]
    for i, (label, b) in enumerate((bounds or {}).items()):
        b, color = b if isinstance(b, tuple) else (b, str(0.2 + 0.2 * i))
        ax.plot(K, b, linestyle=styles[i % len(styles)], color=color, linewidth=1.6, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K (length of each dot product)")
    ax.set_ylabel(ylabel)
    return _finish(ax, title, source, legend_outside=True)


def ladder(by_size: dict, *, peak: float, source: str):
    """Bars: TFLOP/s of each rung of lesson 5's ladder at each size; cuBLAS and the dense peak as lines.

    by_size: {n: rows measured at M = N = K = n, each with 'rung', 'idea' and 'tflops'; rung 0 is
    cuBLAS} (helpers.experiments.ladder.timed_by_size).
    """
    apply_style()
    fig, ax = plt.subplots(figsize=(11, 5.8))
    width = 0.8 / len(by_size)
    labels = []
    for j, (n, rows) in enumerate(by_size.items()):
        rs = [r for r in rows if r["rung"] >= 1]
        labels = [f"{r['rung']}. {r['idea']}" for r in rs]
        xs = np.arange(len(rs)) + (j - (len(by_size) - 1) / 2) * width
        ax.bar(xs, [r["tflops"] for r in rs], width, color=COLORS[j], label=f"n = {n}")
        cub = [r for r in rows if r["rung"] == 0]
        if cub:
            ax.axhline(cub[0]["tflops"], color=COLORS[j], linestyle="--", linewidth=1.6,
                       label=f"cuBLAS FP16, n = {n}")
    ax.axhline(peak, color="0.2", linestyle=":", linewidth=1.6, label=f"dense FP16 peak ({peak:g})")
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=11)
    ax.set_ylabel("TFLOP/s (M = N = K = n)")
    ax.set_title(f"The ladder: one idea per rung\n{source}", loc="left")
    ax.legend(loc="upper left", frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def counters_beside(entries: list[dict], metrics: dict, *, source: str):
    """Bars per rung: TFLOP/s in the first panel, then one panel per Nsight Compute counter in `metrics`
    ({counter name: axis label}); entries from helpers.experiments.hopper.ncu_rows."""
    apply_style()
    panels = [("tflops", "TFLOP/s")] + list(metrics.items())
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 4.6))
    labels = [str(e["rung"]) for e in entries]
    for j, (ax, (key, label)) in enumerate(zip(axes, panels)):
        vals = [e.get(key) if key == "tflops" else e["counters"].get(key) for e in entries]
        if key.endswith("_bytes"):
            vals = [None if v is None else v / 1e9 for v in vals]
        ax.bar(labels, [0 if v is None else v for v in vals], color=COLORS[j % len(COLORS)])
        ax.set_title(label, fontsize=12)
        ax.set_xlabel("rung")
        ax.grid(axis="x", visible=False)
    fig.suptitle(f"Speed beside the counters that explain it\n{source}", x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig


def tile_orders(orders: dict, *, wave: int, title: str, waves: int = 3):
    """One panel per order: the tiles of C that the first `waves` waves of `wave` CTAs compute, the first
    wave darkest; later tiles left white. orders: {label: list of (tm, tn) in visiting order}
    (helpers.analysis.tile_order)."""
    apply_style()
    fig, axes = plt.subplots(1, len(orders), figsize=(11, 4.4))
    for ax, (label, tiles) in zip(np.atleast_1d(axes), orders.items()):
        tm = max(t[0] for t in tiles) + 1
        tn = max(t[1] for t in tiles) + 1
        grid = np.full((tm, tn), float(waves))
        for i, (r, c) in enumerate(tiles[:wave * waves]):
            grid[r, c] = i // wave
        ax.imshow(grid, cmap="Blues_r", vmin=0, vmax=waves, aspect="auto", interpolation="nearest")
        ax.set_title(label, fontsize=12)
        ax.set_xlabel("tile column (256 columns of C)")
        ax.set_ylabel("tile row (128 rows of C)")
        ax.grid(False)
    fig.suptitle(title, x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig
