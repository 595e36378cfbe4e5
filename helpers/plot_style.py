"""The course's figure style (readable on a slide, colour-blind safe) and the small pieces figures share."""
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


def _legend_beside(ax, **kw):
    """The legend beside the axes, to their right: no line or label of the plot runs through it."""
    return ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, **kw)


def _finish(ax, title: str, source: str, legend_outside: bool = False):
    ax.set_title(f"{title}\n{source}", loc="left")
    if legend_outside:       # beside the axes: no legend on top of a line
        _legend_beside(ax)
    else:
        ax.legend(loc="best", frameon=False)
    ax.figure.tight_layout()
    return ax.figure


def size_tick_labels(sizes, min_ratio: float = 1.12) -> list[str]:
    """One label ('' or the size) per tick at `sizes` on a log axis: a size closer than `min_ratio` to one already
    labelled (powers of two first) gets '', so 1000 and 1024 do not print on top of each other."""
    sizes = list(sizes)
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i] & (sizes[i] - 1) != 0, sizes[i]))
    kept: list[int] = []
    for i in order:
        if all(max(sizes[i], sizes[j]) / min(sizes[i], sizes[j]) >= min_ratio for j in kept):
            kept.append(i)
    return [str(s) if i in kept else "" for i, s in enumerate(sizes)]


def label_every_size(fig, sizes=None, *, pad: float = 34.0):
    """A label on every size tick of a tflops_vs_size figure: one that size_tick_labels leaves blank (1000
    beside 1024) goes one row lower."""
    ax = fig.axes[0]
    sizes = list(sizes if sizes is not None else ax.get_xticks())
    kept = size_tick_labels(sizes)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(int(s)) for s in sizes], rotation=45)
    for tick, label in zip(ax.xaxis.get_major_ticks(), kept):
        if not label:
            tick.set_pad(pad)
    ax.minorticks_off()
    fig.tight_layout()
    return fig


def legend_beside(fig):
    """Move the legend of fig's first axes beside the axes (no peak or baseline line crosses it)."""
    ax = fig.axes[0]
    _legend_beside(ax)
    fig.set_size_inches(max(fig.get_size_inches()[0], 12.5), fig.get_size_inches()[1])
    fig.tight_layout()
    return fig


def zeros_on_a_floor(curves: dict) -> tuple[dict, float]:
    """For a log axis: the curves with each 0 replaced by a floor half a decade below the smallest positive value,
    and that floor (draw it with mark_zero_floor, so that those points read as 0)."""
    pos = [x for v in curves.values() for x in v if x > 0]
    floor = 10.0 ** (np.floor(np.log10(min(pos))) - 0.5) if pos else 1.0
    return {k: [floor if x == 0 else x for x in v] for k, v in curves.items()}, floor    # NaN stays NaN


def mark_zero_floor(ax, floor: float, label: str = "0 (error exactly zero)"):
    """The floor of zeros_on_a_floor as a grey line labelled `label`; no tick of the axis below it."""
    ax.axhline(floor, color="0.5", linewidth=0.8)
    ax.annotate(label, (0.99, floor), xycoords=("axes fraction", "data"), ha="right", va="bottom",
                fontsize=11, color="0.3")
    ax.set_ylim(bottom=floor / 10 ** 0.15)
    ax.figure.tight_layout()


def separate_point_labels(ax, *, edge_dex: float = 0.35, close_dex: float = 0.1, close_y: float = 25.0):
    """Readable point labels (annotations offset in points): one within edge_dex decades of the right edge of a
    log x axis goes left of its point; of two points closer than close_dex decades and close_y, one goes below."""
    right = np.log10(ax.get_xlim()[1]) - edge_dex
    texts = [t for t in ax.texts if hasattr(t, "xyann")]
    for t in texts:
        if np.log10(t.xy[0]) > right:
            t.set_horizontalalignment("right")
            t.xyann = (-7, t.xyann[1])
    by_y = sorted(texts, key=lambda t: t.xy[1])
    for lo, hi in zip(by_y, by_y[1:]):
        if abs(np.log10(hi.xy[0] / lo.xy[0])) < close_dex and hi.xy[1] - lo.xy[1] < close_y:
            lo.xyann, hi.xyann = (lo.xyann[0], -12), (hi.xyann[0], 8)
