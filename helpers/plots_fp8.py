"""Lesson 7's figures: every FP8 number, overflow and saturation, scaling schemes and their errors, and
promotion of the partial sums. Each returns the figure."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from .fp8 import FP8, SCHEMES, cast, facts, patterns, quantize, relative_errors, saturating_cast
from .plot_style import COLORS, apply_style


def fp8_values(names=FP8, source: str = "computed with ml_dtypes"):
    """Every positive finite value of each FP8 format as a tick on a log2 axis (grey: subnormals), with
    the smallest subnormal, smallest normal and largest number marked, and what lies past the largest."""
    apply_style()
    fig, ax = plt.subplots(figsize=(12, 1.8 * len(names) + 1.2))
    gap = 1.6
    colours = ["#0072B2", "#D55E00"]
    lo = min(math.log2(facts(n).smallest_subnormal) for n in names) - 1
    hi = max(math.log2(facts(n).max) for n in names) + 3
    for i, n in enumerate(names):
        f = facts(n)
        y = gap * (len(names) - 1 - i)
        _, vals = patterns(n)
        v = np.unique(vals[np.isfinite(vals) & (vals > 0)])
        lv = np.log2(v)
        sub = v < f.tiny
        ax.vlines(lv[sub], y - 0.28, y + 0.28, color="0.6", linewidth=1.2)
        ax.vlines(lv[~sub], y - 0.28, y + 0.28, color=colours[i % 2], linewidth=1.2)
        for val, label, dy in ((f.smallest_subnormal, "smallest subnormal", -0.5), (f.tiny, "smallest normal", 0.36),
                               (f.max, "max", 0.36)):
            ax.annotate(f"{label}\n{val:g}" if label != "max" else f"max {val:g}", (math.log2(val), y + dy),
                        ha="center", va="bottom" if dy > 0 else "top", fontsize=10)
        beyond = f"numpy: {f.overflow_to}\nsatfinite: {f.max:g}"
        ax.add_patch(plt.Rectangle((math.log2(f.midpoint), y - 0.3), hi + 6 - math.log2(f.midpoint), 0.6,
                                   color="#CC79A7", alpha=0.18, linewidth=0))
        ax.text(math.log2(f.midpoint) + 0.3, y, beyond, va="center", fontsize=10)
        ax.text(lo - 0.3, y, f"{n}\n{f.positive_finite} values > 0", ha="right", va="center", fontsize=12)
    ax.set_xlim(lo, hi + 6)
    ax.set_ylim(-0.9, gap * (len(names) - 1) + 0.9)
    ax.set_yticks([])
    ax.set_xlabel("log2(value)")
    ax.grid(False)
    ax.set_title(f"Every positive FP8 number (grey: subnormals; shaded: past the largest)\n{source}", loc="left")
    fig.tight_layout()
    return fig


def fp8_overflow(names=FP8, source: str = "computed with ml_dtypes"):
    """One panel per format: the value a cast returns against the input, from 0 to past the largest
    number; numpy's cast (NaN / inf marked at the top) and the saturating cast."""
    apply_style()
    fig, axes = plt.subplots(1, len(names), figsize=(12, 4.6))
    for ax, n in zip(np.atleast_1d(axes), names):
        f = facts(n)
        x = np.linspace(0, 1.6 * f.max, 4001)
        plain = cast(x, n).astype(np.float64)
        sat = saturating_cast(x, n).astype(np.float64)
        ok = np.isfinite(plain)
        ax.plot(x[ok], plain[ok], color="#0072B2", label="numpy cast (ml_dtypes)")
        top = 1.12 * f.max
        marker = "NaN" if np.isnan(plain[~ok]).any() else "inf"
        ax.plot(x[~ok], np.full((~ok).sum(), top), ".", color="#D55E00", markersize=3,
                label=f"numpy cast gives {marker}")
        ax.plot(x, sat, "--", color="#009E73", label="saturating cast (cvt .satfinite)")
        ax.axvline(f.midpoint, color="0.4", linestyle=":", linewidth=1.2)
        ax.text(f.midpoint, 0.45 * f.max, f" max + half a spacing\n = {f.midpoint:g}", fontsize=10, color="0.3")
        ax.set_title(n, loc="left", fontsize=13)
        ax.set_xlabel("x")
        ax.set_ylim(0, 1.45 * f.max)
        ax.legend(loc="upper left", frameon=False, fontsize=10, bbox_to_anchor=(0.0, 0.93))
    np.atleast_1d(axes)[0].set_ylabel("cast(x)")
    fig.suptitle(f"Past the largest number: NaN, inf, or saturation\n{source}", x=0.01, ha="left")
    fig.tight_layout()
    return fig


def fp8_scaling(x, schemes=None, fmt="fp8_e4m3", bins=70, source: str = "computed with ml_dtypes"):
    """One panel per scaling scheme: histogram of log10|x| of the original values, coloured by what
    each became in FP8 after its group's scale: zero, subnormal, or normal."""
    apply_style()
    x = np.asarray(x, dtype=np.float64)
    schemes = SCHEMES if schemes is None else schemes
    f = facts(fmt)
    fig, axes = plt.subplots(len(schemes), 1, figsize=(11, 2.2 * len(schemes) + 1.0), sharex=True)
    lx = np.log10(np.abs(x[x != 0]))
    edges = np.linspace(lx.min(), lx.max(), bins + 1)
    colours = ["#D55E00", "#E69F00", "#009E73"]
    for ax, (label, group) in zip(np.atleast_1d(axes), schemes.items()):
        s = quantize(x, group, fmt)
        qa = np.abs(s.q.astype(np.float64))[x != 0]
        cat = np.where(qa == 0, 0, np.where(qa < f.tiny, 1, 2))
        names = ["became 0", "subnormal in FP8", "normal in FP8"]
        data = [lx[cat == k] for k in range(3)]
        ax.hist(data, bins=edges, stacked=True, color=colours,
                label=[f"{names[k]}: {d.size}" for k, d in enumerate(data)])
        ax.set_yscale("log")
        ax.set_ylabel("count")
        ax.set_title(f"{label} ({s.scale.size} scale{'s' if s.scale.size > 1 else ''})", loc="left", fontsize=13)
        ax.legend(loc="upper left", frameon=False, fontsize=10)
    np.atleast_1d(axes)[-1].set_xlabel("log10 |x|  (x before scaling)")
    fig.suptitle(f"{fmt}: what each value becomes, by scaling scheme\n{source}", x=0.01, ha="left")
    fig.tight_layout()
    return fig


def fp8_error_vs_magnitude(x, cases=None, bins=40, min_count: int = 20, source: str = "computed with ml_dtypes"):
    """Mean relative error of the values in each bin of |x| (log scale), one line per (format, scheme);
    a value that became 0 counts as error 1. Dotted: each format's unit roundoff u."""
    apply_style()
    x = np.asarray(x, dtype=np.float64)
    cases = cases or [("fp8_e4m3", "per tensor"), ("fp8_e4m3", "128x128 blocks"), ("fp8_e4m3", "1x128 tiles"),
                      ("fp8_e5m2", "per tensor")]
    nz = x != 0
    lx = np.log10(np.abs(x[nz]))
    edges = np.linspace(lx.min(), lx.max(), bins + 1)
    idx = np.clip(np.digitize(lx, edges) - 1, 0, bins - 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    fig, ax = plt.subplots(figsize=(11, 5.6))
    for i, (fmt, label) in enumerate(cases):
        rel = relative_errors(x, quantize(x, SCHEMES[label], fmt).dequantize())[nz]
        count = np.bincount(idx, minlength=bins)
        mean = np.bincount(idx, weights=rel, minlength=bins) / np.maximum(count, 1)
        keep = count >= min_count
        ax.plot(10 ** centres[keep], mean[keep], "-" if fmt == "fp8_e4m3" else "--", color=COLORS[i],
                label=f"{fmt}, {label}")
    for fmt, c in (("fp8_e4m3", "0.3"), ("fp8_e5m2", "0.6")):
        ax.axhline(facts(fmt).u, color=c, linestyle=":", linewidth=1.4)
        ax.text(0.01, facts(fmt).u * 1.08, f"u of {fmt}", fontsize=10, color=c, transform=ax.get_yaxis_transform())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("|x| (before scaling)")
    ax.set_ylabel("mean relative error (1 = became 0)")
    ax.set_title(f"Which values lose precision: error against size\n{source}", loc="left")
    ax.legend(loc="upper right", frameon=False)
    fig.tight_layout()
    return fig


def fp8_promotion(ncs, a, b, *, kstep: int = 32, stage: int = 128, source: str = ""):
    """Promotion every N_C products for one output c = sum_k a_k b_k (a, b: E4M3 values, length K).

    Left, one lane per interval in `ncs` (0: never): the partial sum in the Tensor Cores' 14-bit
    accumulator after each k-step of `kstep` products, refilled from zero each period, with a dot where
    it is added into the FP32 total. Right: the accumulator's mean spacing (2^(e - 13) for a value in
    [2^e, 2^(e+1))), the most a cut toward zero drops from each product."""
    apply_style()
    p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    K = p.size
    steps = np.add.reduceat(p, np.arange(0, K, kstep))             # the products of each k-step
    starts = np.arange(steps.size) * kstep
    fig, (ax, bar) = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True, gridspec_kw={"width_ratios": [4, 1.3]})
    lanes = list(ncs)
    spacing = []
    for i, nc in enumerate(lanes):
        held, acc = [], 0.0
        for k0, s in zip(starts, steps):
            if nc and k0 % nc == 0:
                acc = 0.0                                            # a new period: wgmma's scale-d = 0
            acc += s
            held.append(acc)
        held = np.array(held)
        y0, colour = len(lanes) - 1 - i, COLORS[i % len(COLORS)]
        h = np.append(held, held[-1]) / held.max() * 0.8
        x = np.append(starts, K)
        ax.fill_between(x, y0, y0 + h, step="post", color=colour, alpha=0.35, linewidth=0)
        ax.step(x, y0 + h, where="post", color=colour, linewidth=1.4)
        if nc:
            last = np.array([j for j, k0 in enumerate(starts) if (k0 + kstep) % nc == 0 or k0 + kstep >= K])
            ax.scatter(starts[last] + kstep, y0 + h[last], color=colour, s=24, zorder=3, edgecolor="k", linewidth=0.6)
        ax.annotate(f"up to {held.max():.0f}", (K, y0 + 0.4), xytext=(6, 0), textcoords="offset points",
                    fontsize=9, va="center", annotation_clip=False)
        sp = np.exp2(np.floor(np.log2(held[held > 0])) - 13)
        spacing.append(float(sp.mean()))
        bar.barh(y0 + 0.4, spacing[-1], height=0.6, color=colour)
    ax.set_yticks([len(lanes) - 1 - i + 0.4 for i in range(len(lanes))],
                  ["never\n(fp8_wgmma_n128)" if not nc else f"every {nc}\n(fp8_promote_{nc})" for nc in lanes],
                  fontsize=10)
    ax.set_ylim(-0.1, len(lanes))
    ax.grid(False)
    for k in range(0, K + 1, stage):
        ax.axvline(k, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xlim(0, K)
    ax.set_xlabel(f"k, products added (grey: K-tiles of {stage}; steps: wgmma k-steps of {kstep})", fontsize=11)
    ax.set_title("The Tensor Cores' partial sum (14 bits), refilled from zero every N_C products;\n"
                 "dots: added into the FP32 total. " + (source or "One output, U[0,1) E4M3 inputs"),
                 loc="left", fontsize=12)
    bar.set_xscale("log", base=2)
    bar.set_title("mean spacing of the\n14-bit accumulator", fontsize=11)
    bar.grid(axis="y", visible=False)
    bar.tick_params(axis="x", labelsize=10)
    fig.tight_layout()
    return fig
