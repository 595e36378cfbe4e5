"""The course's figures, one style (helpers.plot_style): each draws one figure, its title carrying the data's
source. Lessons 5-7's figures live in plots_ladder, plots_hopper and plots_fp8 and are reachable here too.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.transforms import offset_copy

from .formats import CATEGORIES, LESSON_FORMATS, bit_layout, bit_string, classify, decode_bits, format_info, representable
from .plot_style import (COLORS, STYLE, _finish, _legend_beside, apply_style, label_every_size,  # noqa: F401
                         legend_beside, mark_zero_floor, separate_point_labels, size_tick_labels, zeros_on_a_floor)
from .plots_fp8 import (fp8_error_vs_magnitude, fp8_overflow, fp8_promotion, fp8_scaling,  # noqa: F401
                        fp8_values)
from .plots_hopper import (cluster_multicast, counters_beside, cta_work, mbarrier_ring, register_split,  # noqa: F401
                           ring_schedule, split_k_units, tile_orders)
from .plots_hopper import (epilogue_path, hopper_kernel, operand_majors, prediction_judged,  # noqa: F401
                           predicted_vs_measured, tma_ring_flow)
from .plots_ladder import (block_warp_tiles, cp_async_pipeline, fragment_owners, smem_banks,  # noqa: F401
                           swizzle_128b, vec16_copies)


def tflops_vs_size(series: dict, *, baselines: dict | None = None, peaks: dict | None = None,
                   title: str = "GEMM throughput", source: str = ""):
    """TFLOP/s against square size n: series and baselines (dashed) are {label: (sizes, tflops)}, peaks
    {label: TFLOP/s} (dotted lines)."""
    apply_style()
    fig, ax = plt.subplots()
    for label, (n, t) in series.items():
        ax.plot(n, t, marker="o", label=label)
    for label, (n, t) in (baselines or {}).items():
        ax.plot(n, t, linestyle="--", marker="s", label=label)
    for label, v in (peaks or {}).items():
        if v:
            ax.axhline(v, linestyle=":", color="0.3", linewidth=1.6)
            ax.annotate(f"{label}: {v:g}", (0.01, v), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=11, color="0.25")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size n (M = N = K = n)")
    ax.set_ylabel("TFLOP/s")
    sizes = sorted({s for n, _ in list(series.values()) + list((baselines or {}).values()) for s in n})
    if sizes:
        ax.set_xticks(sizes)
        ax.set_xticklabels(size_tick_labels(sizes), rotation=45)
        ax.minorticks_off()
    return _finish(ax, title, source)


def roofline(points: dict, *, peak_tflops: float | None, mem_gbs: float | None, title: str = "Roofline",
             source: str = "", xlabel: str = "arithmetic intensity (FLOP / byte of DRAM traffic)",
             legend_outside: bool = False):
    """Attainable TFLOP/s against arithmetic intensity, log-log, with points {label: (intensity, tflops)}; a
    peak or bandwidth of None (a GPU the peak table lacks) draws the roof from what is known."""
    apply_style()
    fig, ax = plt.subplots()
    xs = [p[0] for p in points.values()] or [1.0]
    ridge = peak_tflops * 1e3 / mem_gbs if peak_tflops and mem_gbs else None
    x = np.logspace(np.log10(min(xs + [0.1]) / 2), np.log10(max(xs + [ridge or 1.0]) * 4), 200)
    if ridge:
        roof = np.minimum(peak_tflops, mem_gbs * x / 1e3)
        ax.plot(x, roof, color="0.2", label=f"roof: {peak_tflops:g} TFLOP/s, {mem_gbs:g} GB/s")
    elif mem_gbs or peak_tflops:        # a GPU whose peaks the course's table lacks: only what is known
        ax.plot(x, mem_gbs * x / 1e3 if mem_gbs else np.full_like(x, peak_tflops), color="0.2",
                label=f"{mem_gbs:g} GB/s (compute peak unknown)" if mem_gbs else f"{peak_tflops:g} TFLOP/s")
    for label, (ai, t) in points.items():
        ax.plot([ai], [t], marker="o", markersize=10, linestyle="none", label=f"{label} ({t:.3g} TFLOP/s)")
    if ridge:
        ax.axvline(ridge, color="0.7", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("TFLOP/s")
    if legend_outside:
        ax.figure.set_size_inches(14, 5.6)
    return _finish(ax, title, source, legend_outside=legend_outside)


def error_vs_k(K, curves: dict, *, bounds: dict | None = None, title: str = "Error vs K", source: str = ""):
    """Error against K (log-log); bounds {label: values or (values, color)} are drawn dashed."""
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
    ax.set_ylabel("componentwise error / (|A||B|)")
    return _finish(ax, title, source, legend_outside=True)


def ladder(by_size: dict, *, peak: float, source: str, legend_outside: bool = False):
    """Bars: TFLOP/s of each rung at each size (by_size: {n: rows}, rung 0 cuBLAS, from
    helpers.experiments.ladder.timed_by_size); cuBLAS and the dense peak as lines."""
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
    if legend_outside:
        fig.set_size_inches(13, 5.8)
        _legend_beside(ax, fontsize=10)
    else:
        ax.legend(loc="upper left", frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def speed_vs_error_dodged(points, *, title: str = ""):
    """A log-log scatter of TFLOP/s (y) against relative error (x) where every marker stays visible: points
    closer than 0.06 decades on both axes are drawn side by side, 15 points apart, around the measured value
    (marked with a grey dot). points: dicts with x, y, label, color, marker."""
    sep_pt, close_dex = 15.0, 0.06
    apply_style()
    fig, ax = plt.subplots(figsize=(10.5, 6.2))
    ax.set_xscale("log")
    ax.set_yscale("log")
    lx = [np.log10(p["x"]) for p in points]
    ly = [np.log10(p["y"]) for p in points]
    groups: list[list[int]] = []
    for i in range(len(points)):
        for g in groups:
            if any(abs(lx[i] - lx[j]) < close_dex and abs(ly[i] - ly[j]) < close_dex for j in g):
                g.append(i)
                break
        else:
            groups.append([i])
    for g in groups:
        for pos, i in enumerate(g):
            p = points[i]
            dx = (pos - (len(g) - 1) / 2) * sep_pt
            tr = offset_copy(ax.transData, fig=fig, x=dx, y=0, units="points")
            ax.plot([p["x"]], [p["y"]], "o", markersize=3 if len(g) > 1 else 0, color="0.35", zorder=9)
            ax.plot([p["x"]], [p["y"]], p["marker"], transform=tr, markersize=13, color=p["color"],
                    markeredgecolor="0.15", label=p["label"], zorder=3 + pos)
    ax.set_xlabel("relative error vs float64, ||C - C_ref||_F / ||C_ref||_F   (lower is better)")
    ax.set_ylabel("TFLOP/s (higher is better)")
    ax.set_title(title, loc="left")
    _legend_beside(ax, fontsize=11)
    ax.margins(x=0.12, y=0.12)
    fig.tight_layout()
    return fig


def bars(items: list, title: str, source: str, highlight: str | None = None, yours: str | None = None):
    """A small horizontal bar plot: items [(label, TFLOP/s, (low, high) or None)]; the bar labelled `highlight` in
    the second colour, the one labelled `yours` (the value a learner asked for) in the third, hatched, its label
    bold."""
    apply_style()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.42 * len(items)))
    ys = np.arange(len(items))[::-1]
    for y, (lbl, v, rng) in zip(ys, items):
        color = (COLORS[2] if lbl == yours else COLORS[1] if lbl == highlight
                 else COLORS[0] if not lbl.startswith("cuBLAS") else "0.55")
        ax.barh(y, v, color=color, height=0.65, hatch="//" if lbl == yours else None,
                edgecolor="white" if lbl == yours else None)
        if rng:
            ax.plot(rng, [y, y], color="0.15", linewidth=1.4)
        ax.annotate(f"{v:.0f}", (max(v, rng[1]) if rng else v, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=11)
    ax.set_yticks(ys, [i[0] for i in items], fontsize=11)
    for tick in ax.get_yticklabels():
        if tick.get_text() == yours:
            tick.set_fontweight("bold")
    ax.set_xlabel("TFLOP/s (median; whiskers p10-p90)")
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, max(max(i[1], i[2][1] if i[2] else 0) for i in items) * 1.15)
    ax.set_title(f"{title}\n{source}", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


_FIELD_COLORS = {"sign": "#CC79A7", "exponent": "#56B4E9", "fraction": "#E69F00"}


def bit_layouts(names=LESSON_FORMATS, value: float = -1 / 3, source: str = "computed with ml_dtypes / numpy"):
    """One row per format: a box per bit (sign, exponent, fraction) holding `value` rounded to that format."""
    apply_style()
    fig, ax = plt.subplots(figsize=(12, 0.9 * len(names) + 1.2))
    width = 32
    for row, n in enumerate(names):
        y = len(names) - 1 - row
        bits = bit_string(value, n)
        x0 = 0
        for field, w in bit_layout(n):
            for j in range(w):
                ax.add_patch(plt.Rectangle((x0 + j, y), 0.95, 0.8, color=_FIELD_COLORS[field], alpha=0.85))
                ax.text(x0 + j + 0.47, y + 0.38, bits[x0 + j], ha="center", va="center", fontsize=10)
            x0 += w
        if n == "tf32":   # the 13 bits of the FP32 word that hold no TF32 information (layout unspecified)
            ax.add_patch(plt.Rectangle((19, y), 12.95, 0.8, fill=False, hatch="///", color="0.6"))
            ax.text(25.5, y + 0.38, "13 bits: not part of TF32", ha="center", va="center", fontsize=9, color="0.35")
        shown = decode_bits(bits, n)
        ax.text(-0.6, y + 0.4, n, ha="right", va="center", fontsize=13)
        ax.text(width + 0.6, y + 0.4, f"= {shown:.8g}", ha="left", va="center", fontsize=11)
    for field, c in _FIELD_COLORS.items():
        ax.add_patch(plt.Rectangle((0, 0), 0, 0, color=c, label=field))
    ax.set_xlim(-5, width + 9)
    ax.set_ylim(-0.3, len(names) + 0.2)
    ax.axis("off")
    ax.legend(loc="upper right", ncol=3, frameon=False, bbox_to_anchor=(1.0, 1.08))
    ax.set_title(f"Bit layouts, holding {value:.10g} rounded to each format\n{source}", loc="left")
    fig.tight_layout()
    return fig


def number_lines(names=("fp8_e5m2", "fp8_e4m3", "bf16", "fp16"), around_one=(0.75, 1.5),
                      bottom_units=4.0, source: str = "computed with ml_dtypes / numpy"):
    """Tick marks at the representable values of each format: around 1, and near the bottom of its range (in
    units of its smallest normal number: subnormals evenly in [0, 1), normals doubling each binade)."""
    apply_style()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6.4))
    for i, n in enumerate(names):
        v = representable(n, *around_one)
        a1.vlines(v, i - 0.35, i + 0.35, color=f"C{i}", linewidth=0.8 if v.size > 60 else 1.6)
        a1.text(around_one[1] + 0.01, i, f"{v.size} values", va="center", fontsize=10)
        info = format_info(n)
        w = representable(n, 0.0, bottom_units * info.tiny) / info.tiny
        sub = w < 1
        a2.vlines(w[sub], i - 0.35, i + 0.35, color="0.55", linewidth=0.8 if w.size > 60 else 1.6)
        a2.vlines(w[~sub], i - 0.35, i + 0.35, color=f"C{i}", linewidth=0.8 if w.size > 60 else 1.6)
    for a in (a1, a2):
        a.set_yticks(range(len(names)))
        a.set_yticklabels(names)
        a.grid(False)
    a1.set_xlim(around_one[0] - 0.01, around_one[1] + 0.12)
    a1.axvline(1.0, color="0.3", linewidth=1, linestyle=":")
    a1.set_xlabel("value (around 1)")
    a2.axvline(1.0, color="0.3", linewidth=1, linestyle=":")
    a2.set_xlabel("value / smallest normal of that format (grey: subnormals)")
    a1.set_title(f"Representable values\n{source}", loc="left")
    fig.tight_layout()
    return fig


def range_histogram(x, names=("fp16", "bf16"), scales=None, bins=80,
                         source: str = "computed with ml_dtypes / numpy"):
    """Histogram of log10|x| coloured by what each value becomes when rounded to each format (a panel each,
    after an optional loss scale)."""
    apply_style()
    scales = scales or [1.0] * len(names)
    fig, axes = plt.subplots(len(names), 1, figsize=(11, 2.6 * len(names) + 0.8), sharex=True)
    axes = np.atleast_1d(axes)
    lx = np.log10(np.abs(x))
    edges = np.linspace(lx.min(), lx.max(), bins + 1)
    colors = ["#D55E00", "#E69F00", "#009E73", "#000000"]
    for ax, n, s in zip(axes, names, scales):
        c = classify(x, n, s)
        data = [lx[c == k] for k in range(len(CATEGORIES))]
        fr = [d.size / x.size for d in data]
        labels = [f"{CATEGORIES[k]} {100 * fr[k]:.1f}%" for k in range(len(CATEGORIES))]
        ax.hist(data, bins=edges, stacked=True, color=colors, label=labels)
        info = format_info(n)
        for v, ls in ((info.smallest_subnormal / s, ":"), (info.tiny / s, "--"), (info.max / s, "-")):
            ax.axvline(math.log10(v), color="0.25", linestyle=ls, linewidth=1.2)
        ax.set_ylabel("count")
        ax.set_title(f"{n}" + (f", loss scale 2^{math.log2(s):g}" if s != 1 else ""), loc="left", fontsize=13)
        ax.legend(loc="upper left", frameon=False, fontsize=10)
    axes[-1].set_xlabel("log10 |gradient|   (dotted: smallest subnormal, dashed: smallest normal, solid: max)")
    fig.suptitle(f"What a cast does to values spanning many decades\n{source}", x=0.01, ha="left")
    fig.tight_layout()
    return fig


def training_curves(results: dict, *, source: str = "FP16 / BF16 arithmetic emulated in numpy on the CPU", title=None,
                  smooth: int = 50):
    """Loss curves (log scale, running mean over `smooth` steps) of several runs and the loss scale of the
    scaled ones, a diverging run marked where its loss stops being finite; the first run (the reference)
    is a wide pale band under the others, so runs that train exactly like it stay visible."""
    apply_style()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10.5, 7.4), sharex=True, gridspec_kw={"height_ratios": [3, 1.5]})
    styles = ["-", "--", ":", "-.", (0, (6, 2, 1, 2)), "-", (0, (8, 3))]
    colors = [c for c in COLORS if c != "#F0E442"]          # the yellow is too pale on white
    for i, (label, r) in enumerate(results.items()):
        color = colors[i % len(colors)]
        loss = np.where(np.isfinite(r.loss), r.loss, np.nan)
        if i == 0:   # the reference (FP32): a wide pale band under the others, so curves on it stay visible
            a1.plot(_running_mean(loss, smooth), label=f"{label} (wide band)", color="0.6", linewidth=9, alpha=0.45,
                    solid_capstyle="butt", zorder=1)
        else:
            a1.plot(_running_mean(loss, smooth), label=label, color=color, linewidth=2.0,
                    linestyle=styles[(i - 1) % len(styles)], zorder=2)
        bad = np.flatnonzero(~np.isfinite(r.loss))
        if bad.size:
            x0 = int(bad[0])
            a1.plot([x0], [np.nanmax(loss[:x0 + 1]) if x0 else r.loss[0]], "X", color=color, markersize=14)
            a1.annotate(f"{label}: inf/NaN from step {x0}", (x0, r.loss[0]), xytext=(30, -6),
                        textcoords="offset points", color=color, fontsize=11, va="top")
        if r.scaling != "none":
            a2.plot(np.log2(r.scale), color=color, linewidth=2.0, label=label)
            sk = np.flatnonzero(r.skipped)
            if sk.size:
                a2.plot(sk, np.log2(r.scale[sk]), "x", color="0.15", markersize=7)
    a1.set_yscale("log")
    a1.set_ylabel(f"training loss (MSE, mean of {smooth} steps)")
    a2.set_ylabel("log2(loss scale)")
    a2.set_xlabel("step   (x: step skipped, inf/NaN in the gradients)")
    a1.set_title(f"{title or 'Training with FP16 / BF16 arithmetic, with and without loss scaling'}\n{source}",
                 loc="left")
    a1.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=11)
    a2.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def _running_mean(y: np.ndarray, w: int) -> np.ndarray:
    """Running mean over w steps (NaN where the window holds inf/NaN)."""
    if w <= 1 or y.size < w:
        return y
    c = np.cumsum(np.concatenate([[0.0], y]))
    out = (c[w:] - c[:-w]) / w
    return np.concatenate([np.full(w - 1, np.nan), out])
