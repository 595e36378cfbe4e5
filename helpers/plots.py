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


def roofline(points: dict, *, peak_tflops: float | None, mem_gbs: float | None, extra_ceilings: dict | None = None,
             title: str = "Roofline", source: str = "",
             xlabel: str = "arithmetic intensity (FLOP / byte of DRAM traffic)", legend_outside: bool = False):
    """Attainable TFLOP/s vs arithmetic intensity (FLOP/byte), log-log.

    points: {label: (intensity, tflops)}; extra_ceilings: {label: TFLOP/s}. peak_tflops or mem_gbs None (a GPU the
    course's peak table lacks): the roof is drawn from what is known, or not at all. xlabel: what the bytes are
    (lesson 5's intensity counts the bytes the blocks request, not DRAM's); legend_outside: the legend
    beside the axes, where no roof or ridge line crosses it.
    """
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
    for label, v in (extra_ceilings or {}).items():
        if v and mem_gbs:
            ax.plot(x, np.minimum(v, mem_gbs * x / 1e3), color="0.5", linestyle=":", label=f"{label}: {v:g} TFLOP/s")
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


def ladder(by_size: dict, *, peak: float, source: str, legend_outside: bool = False):
    """Bars: TFLOP/s of each rung of lesson 5's ladder at each size; cuBLAS and the dense peak as lines.

    by_size: {n: rows measured at M = N = K = n, each with 'rung', 'idea' and 'tflops'; rung 0 is
    cuBLAS} (helpers.experiments.ladder.timed_by_size). legend_outside: the legend beside the bars, where
    the cuBLAS and peak lines do not cross it.
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
    if legend_outside:
        fig.set_size_inches(13, 5.8)
        _legend_beside(ax, fontsize=10)
    else:
        ax.legend(loc="upper left", frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def counters_beside(entries: list[dict], metrics: dict, *, source: str, tick_fontsize: float | None = None):
    """Bars per rung: TFLOP/s in the first panel, then one panel per Nsight Compute counter in `metrics`
    ({counter name: axis label}); entries from helpers.experiments.hopper.ncu_rows. tick_fontsize: the
    size of the rung labels under the bars (smaller, so that 7 two-digit rungs do not run together)."""
    apply_style()
    panels = [("tflops", "TFLOP/s")] + list(metrics.items())
    # more than 7 rungs: two rows of panels, each wide enough for its two-digit labels
    rows = 1 if len(entries) <= 7 else 2
    cols = -(-len(panels) // rows)
    fig, axes = plt.subplots(rows, cols, figsize=(12, 4.6 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    labels = [str(e["rung"]) for e in entries]
    for j, (ax, (key, label)) in enumerate(zip(axes, panels)):
        vals = [e.get(key) if key == "tflops" else e["counters"].get(key) for e in entries]
        if key.endswith("_bytes"):
            vals = [None if v is None else v / 1e9 for v in vals]
        ax.bar(labels, [0 if v is None else v for v in vals], color=COLORS[j % len(COLORS)])
        ax.set_title(label, fontsize=12)
        ax.set_xlabel("rung")
        ax.grid(axis="x", visible=False)
        if tick_fontsize:
            ax.tick_params(axis="x", labelsize=tick_fontsize)
    fig.suptitle(f"Speed beside the counters that explain it\n{source}", x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig


def tile_orders(orders: dict, *, wave: int, title: str, waves: int = 3, rows: int | None = None,
                outline_first: bool = False):
    """One panel per order: the tiles of C that the first `waves` waves of `wave` CTAs compute, the first
    wave darkest; later tiles left white. orders: {label: list of (tm, tn) in visiting order}
    (helpers.analysis.tile_order). rows: show only the first `rows` tile rows (the waves drawn larger);
    outline_first: outline the first wave's tiles and label each panel with the rows of A and columns
    of B it reads (helpers.analysis.wave_footprint, 128 x 256 tiles)."""
    apply_style()
    fig, axes = plt.subplots(1, len(orders), figsize=(11, 4.4))
    for ax, (label, tiles) in zip(np.atleast_1d(axes), orders.items()):
        tm = max(t[0] for t in tiles) + 1
        tn = max(t[1] for t in tiles) + 1
        grid = np.full((tm, tn), float(waves))
        for i, (r, c) in enumerate(tiles[:wave * waves]):
            grid[r, c] = i // wave
        ax.imshow(grid, cmap="Blues_r", vmin=0, vmax=waves, aspect="auto", interpolation="nearest")
        if outline_first:
            from .analysis import wave_footprint

            ax.contour((grid == 0).astype(float), levels=[0.5], colors=[COLORS[1]], linewidths=2.4)
            w = wave_footprint(tiles[:wave])
            label = f"{label}: the first wave (outlined) reads\n{w['a_rows']} rows of A, {w['b_cols']} columns of B"
        if rows:
            ax.set_ylim(rows - 0.5, -0.5)
        ax.set_title(label, fontsize=12)
        ax.set_xlabel("tile column (256 columns of C)")
        ax.set_ylabel("tile row (128 rows of C)")
        ax.grid(False)
    fig.suptitle(title, x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig



def fp8_promotion(ncs, a, b, *, kstep: int = 32, stage: int = 128, source: str = ""):
    """FP8 promotion every N_C products, over K, for one output c = sum_k a_k b_k (a, b: 1-D arrays of
    length K, E4M3 values; lesson 7). Left, one lane per interval in `ncs` (0: never promoted): the partial
    sum the Tensor Cores' 14-bit accumulator holds after each wgmma k-step of `kstep` products (each lane
    scaled to its own largest value, printed at its end), refilled from zero at the start of every
    promotion period, and a dot where it is added into the FP32 total. Right: the accumulator's mean
    spacing over K (one unit in its 14th bit, 2^(e - 13) for a value in [2^e, 2^(e+1))): the size of
    what a cut toward zero can drop from each product added to it."""
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


def cp_async_pipeline(settings: list[tuple[int, int]], *, ktiles: int = 8, title: str = ""):
    """Lesson 5, rung 5: the cp.async pipeline as a schedule, one panel per (STAGES, WAIT_GROUP) in
    `settings` (the knobs of kernels/ladder.cu). One row per shared-memory stage; K-tile t lives in stage
    t % STAGES. Its copy is issued STAGES - 1 iterations before it is multiplied (the prologue issues
    tiles 0 .. STAGES-2), and cp.async.wait_group WAIT_GROUP at iteration kt makes every tile up to
    kt + STAGES - 2 - WAIT_GROUP land first: light bar = copy may still be in flight, hatched = landed,
    waiting to be used, dark = multiplied. A schedule in which every iteration takes the same time,
    not a measurement."""
    apply_style()
    fig, axes = plt.subplots(len(settings), 1, figsize=(10, 0.9 + 1.55 * sum(s for s, _ in settings) / 4 * 1.1),
                             squeeze=False)
    for ax, (stages, wait) in zip(axes[:, 0], settings):
        for t in range(ktiles):
            s = t % stages
            issue = max(0, t - (stages - 1))
            landed = max(issue, t - (stages - 2 - wait))       # the wait at this iteration forces it in
            ax.barh(s, landed - issue, left=issue, height=0.7, color=COLORS[5], alpha=0.55,
                    edgecolor="white")
            if t > landed:
                ax.barh(s, t - landed, left=landed, height=0.7, color="white", edgecolor=COLORS[5],
                        hatch="///", linewidth=0.8)
            ax.barh(s, 1, left=t, height=0.7, color=COLORS[0], edgecolor="white")
            ax.annotate(f"{t}", (t + 0.5, s), ha="center", va="center", color="white", fontsize=11)
            if t > issue:                                      # the copy's label, on its light or hatched bar
                ax.annotate(f"{t}", ((issue + (landed if landed > issue else t)) / 2, s), ha="center", va="center",
                            color="0.15", fontsize=10)
        ax.set_yticks(range(stages), [f"stage {s}" for s in range(stages)], fontsize=11)
        ax.invert_yaxis()
        ax.set_xlim(0, ktiles)
        ax.set_xticks(range(ktiles + 1))
        ax.grid(axis="y", visible=False)
        ax.set_title(f"STAGES={stages}, WAIT_GROUP={wait}: while K-tile kt is multiplied, the copies of "
                     f"{wait + 1} later tile{'s' if wait else ''} may be in flight", loc="left", fontsize=12)
    axes[-1, 0].set_xlabel("loop iteration kt (dark: K-tile kt multiplied; light: its copy in flight; "
                           "hatched: landed, waiting)", fontsize=11)
    fig.suptitle(title or "rung 5's cp.async pipeline (a schedule with equal iterations, not a measurement)",
                 x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig


def ring_schedule(stages: int, load: float = 2.0, ktiles: int = 10) -> list[dict]:
    """A model of the producer/consumer ring (kernels/hopper_sm90a.cu, rungs 9-15), in units of one K-tile's
    wgmma time: K-tile kt goes to stage kt % stages in lap kt // stages; its TMA load starts when the
    consumers have freed that stage (the tile `stages` before it is multiplied), takes `load` (an assumed
    latency, not a measurement), and its wgmma starts when the load is in and the previous K-tile is done.
    One dict per K-tile: kt, stage, lap, parity (lap % 2: what the consumers wait full[stage] for), issue,
    full, start, end."""
    out: list[dict] = []
    for kt in range(ktiles):
        issue = out[kt - stages]["end"] if kt >= stages else 0.0
        full = issue + load
        start = max(full, out[-1]["end"] if out else 0.0)
        out.append({"kt": kt, "stage": kt % stages, "lap": kt // stages, "parity": (kt // stages) % 2,
                    "issue": issue, "full": full, "start": start, "end": start + 1.0})
    return out


def mbarrier_ring(stages=(4, 2), load: float = 2.0, ktiles: int = 10):
    """The ring over time, one panel per ring depth in `stages` (ring_schedule): per stage, when TMA is
    filling it (light), when it is full and waiting (hatched), when the consumers' wgmma read it (dark,
    labelled with the K-tile and the parity of full[] it was waited with); the bottom row, when the Tensor
    Cores are busy (the title: their busy share over the last K-tiles). A shallow ring shows gaps there."""
    apply_style()
    stages = list(stages)
    fig, axes = plt.subplots(len(stages), 1, figsize=(11, 1.2 + 0.62 * sum(s + 1 for s in stages)),
                             gridspec_kw={"height_ratios": [s + 1 for s in stages]})
    horizon = max(ring_schedule(s, load, ktiles)[-1]["end"] for s in stages)
    for ax, s in zip(np.atleast_1d(axes), stages):
        sched = ring_schedule(s, load, ktiles)
        for t in sched:
            y = s - t["stage"]
            ax.barh(y, t["full"] - t["issue"], left=t["issue"], color=COLORS[5], alpha=0.45, height=0.7)
            if t["start"] > t["full"]:
                ax.barh(y, t["start"] - t["full"], left=t["full"], color="white", edgecolor=COLORS[5],
                        hatch="//", height=0.7, linewidth=0.6)
            ax.barh(y, 1.0, left=t["start"], color=COLORS[0], height=0.7)
            ax.text(t["start"] + 0.5, y, f"k{t['kt']} p{t['parity']}", ha="center", va="center", color="white",
                    fontsize=9)
            ax.barh(0, 1.0, left=t["start"], color=COLORS[2], height=0.7, edgecolor="white")
        n = min(s, ktiles - 1)                   # steady state: the last n K-tiles, once the ring is full
        busy = n / (sched[-1]["end"] - sched[-1 - n]["end"])
        ax.set_yticks(range(s + 1), ["Tensor Cores"] + [f"stage {i}" for i in range(s - 1, -1, -1)], fontsize=10)
        ax.set_xlim(0, horizon + 0.2)
        ax.grid(axis="y", visible=False)
        ax.set_title(f"STAGES = {s}: once the ring is full, the Tensor Cores are busy {busy:.0%} of the time",
                     loc="left", fontsize=12)
    np.atleast_1d(axes)[-1].set_xlabel(f"time, in K-tiles of wgmma (a TMA load assumed to take {load:g})")
    handles = [matplotlib.patches.Patch(color=COLORS[5], alpha=0.45, label="TMA filling the stage"),
               matplotlib.patches.Patch(facecolor="white", edgecolor=COLORS[5], hatch="//", label="full, waiting"),
               matplotlib.patches.Patch(color=COLORS[0], label="wgmma reading it (K-tile, parity)")]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def speed_vs_error_dodged(points, *, title: str = "", sep_pt: float = 15.0, close_dex: float = 0.06):
    """A log-log scatter of TFLOP/s against relative error where every marker stays visible: points
    closer than `close_dex` decades on both axes are drawn side by side, `sep_pt` points apart
    (the group's centre stays at the measured value), and a grey line ties each to that value.

    points: dicts with x (error), y (TFLOP/s), label, color, marker (lesson 03's speed-vs-error chart)."""
    import matplotlib.pyplot as plt
    from matplotlib.transforms import offset_copy

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


def block_warp_tiles(bm: int, bn: int, wm: int, wn: int, frag: int = 16, bk: int | None = None):
    """Lesson 5, rung 2: the block tile of C (bm x bn, kernels/ladder.cu's BM x BN), cut into warp tiles
    (wm x wn: WM x WN; warp w at row w // (bn / wn), column w % (bn / wn), as the kernel numbers them), and
    warp 0's frag x frag WMMA fragments ((wm / frag) x (wn / frag) accumulators). Beside it, the bm x bk
    slice of A and the bk x bn slice of B that the block copies into shared memory per K step (bk: BK),
    with the rows of A and the columns of B that warp 0 reads from them."""
    from matplotlib.patches import Rectangle

    apply_style()
    bk = bk or frag
    per_row = bn // wn
    fig, ax = plt.subplots(figsize=(10, 6.4))
    gap = 10
    # B slice on top, A slice on the left, C block below-right (y grows downward)
    ax.add_patch(Rectangle((0, -gap - bk), bn, bk, facecolor=COLORS[5], alpha=0.25, edgecolor="0.3"))
    ax.add_patch(Rectangle((0, -gap - bk), wn, bk, facecolor=COLORS[5], alpha=0.7, edgecolor="0.3"))
    ax.text(bn + 3, -gap - bk / 2, f"B slice in shared memory: {bk} x {bn}\n(dark: the {wn} columns warp 0 reads)",
            va="center", fontsize=11)
    ax.add_patch(Rectangle((-gap - bk, 0), bk, bm, facecolor=COLORS[4], alpha=0.25, edgecolor="0.3"))
    ax.add_patch(Rectangle((-gap - bk, 0), bk, wm, facecolor=COLORS[4], alpha=0.7, edgecolor="0.3"))
    ax.text(-gap - bk / 2, bm + 4, f"A slice\n{bm} x {bk}", ha="center", va="top", fontsize=11)
    for w in range((bm // wm) * per_row):
        r, c = divmod(w, per_row)
        ax.add_patch(Rectangle((c * wn, r * wm), wn, wm, facecolor=COLORS[w % len(COLORS)],
                               alpha=0.55 if w else 0.2, edgecolor="k", linewidth=1.6))
        ax.text(c * wn + wn / 2, -gap / 2 if w == 0 else r * wm + wm / 2, f"warp {w}", ha="center",
                va="center", fontsize=12, fontweight="bold")
    for i in range(wm // frag):
        for j in range(wn // frag):
            ax.add_patch(Rectangle((j * frag, i * frag), frag, frag, fill=False, edgecolor="k",
                                   linestyle="--", linewidth=0.9))
            if True:
                ax.text(j * frag + frag / 2, i * frag + frag / 2, f"{i},{j}", ha="center", va="center", fontsize=8)
    ax.set_xlim(-gap - bk - 4, bn + 90)
    ax.set_ylim(bm + 14, -gap - bk - 4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"rung 2's block tile of C: {bm} x {bn}, {bm // wm} x {per_row} warps of {wm} x {wn}; warp 0 "
                 f"holds {wm // frag} x {wn // frag} fragments of {frag} x {frag}\n(each A fragment is used "
                 f"{wn // frag} times, each B fragment {wm // frag} times, from registers)", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def smem_banks(strides: dict, *, rows: int = 8, access_bytes: int = 16, banks: int = 32):
    """Lesson 5, rung 3: which of the `banks` shared-memory banks each of `rows` consecutive rows hits when
    every row reads `access_bytes` at the same column (one phase of a fragment load), one panel per
    {label: row stride in bytes} (Bs rows: (BN + PAD) * 2 bytes, kernels/ladder.cu). The model is
    helpers.analysis.bank_map; the count over a column is how often that bank is hit (bank_ways: the most)."""
    from .analysis import bank_map

    apply_style()
    fig, axes = plt.subplots(len(strides), 1, figsize=(11, 1.3 + 2.3 * len(strides)), squeeze=False)
    for ax, (label, stride) in zip(axes[:, 0], strides.items()):
        m = bank_map(stride, rows=rows, access_bytes=access_bytes, banks=banks)
        hits = np.zeros(banks, dtype=int)
        for r, bs in enumerate(m):
            for b in bs:
                ax.add_patch(matplotlib.patches.Rectangle((b, r), 1, 1, facecolor=COLORS[r % len(COLORS)],
                                                          edgecolor="white", alpha=0.85))
                hits[b] += 1
            ax.text(banks + 0.4, r + 0.5, f"row {r}", va="center", fontsize=9)
        ways = int(hits.max())
        ax.set_xlim(0, banks + 3)
        ax.set_ylim(rows, 0)
        ax.set_xticks(np.arange(0, banks, 4) + 0.5, [str(b) for b in range(0, banks, 4)], fontsize=10)
        ax.set_yticks([])
        ax.grid(False)
        ax.set_title(f"{label}: rows {stride} bytes apart, each reads {access_bytes} bytes; busiest bank hit "
                     f"{ways} time{'s' if ways > 1 else ''}" + (" (conflict-free)" if ways == 1 else
                                                                f" ({ways}-way conflict)"),
                     loc="left", fontsize=12)
    axes[-1, 0].set_xlabel(f"bank (4 bytes wide; {banks} banks)")
    fig.tight_layout()
    return fig


def swizzle_128b(table, *, title: str = ""):
    """Lessons 5 (rung 7) and 6 (rung 8): TMA's 128-byte swizzle. table[r][q] is where 16-byte chunk q of
    row r is stored (helpers.analysis.swizzle_128b: q XOR (r mod 8)); each 128-byte row spans all 32 banks,
    4 banks per chunk. Left: the rows as stored, each cell labelled with the chunk it holds; a column of the
    tile (chunk 0, dark) lands in a different 16-byte position, so a different group of 4 banks, in each row.
    Right, for contrast: the same rows unswizzled, chunk 0 of every row in banks 0-3."""
    apply_style()
    rows, chunks = len(table), len(table[0])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.9))
    for ax, swz in zip(axes, (True, False)):
        for r in range(rows):
            for q in range(chunks):
                pos = table[r][q] if swz else q
                ax.add_patch(matplotlib.patches.Rectangle((pos, r), 1, 1, edgecolor="white",
                                                          facecolor=COLORS[0] if q == 0 else COLORS[5],
                                                          alpha=1.0 if q == 0 else 0.35 + 0.08 * q))
                ax.text(pos + 0.5, r + 0.5, str(q), ha="center", va="center", fontsize=11,
                        color="white" if q == 0 else "0.1")
        ax.set_xlim(0, chunks)
        ax.set_ylim(rows, 0)
        ax.set_xticks(np.arange(chunks) + 0.5, [f"{4 * p}-{4 * p + 3}" for p in range(chunks)], fontsize=9)
        ax.set_yticks(np.arange(rows) + 0.5, [f"row {r}" for r in range(rows)], fontsize=10)
        ax.set_xlabel("16-byte position in the 128-byte row (its banks)", fontsize=11)
        ax.grid(False)
        ax.set_title("128-byte swizzle: chunk q of row r at q XOR (r mod 8)" if swz else
                     "no swizzle: chunk q at position q", loc="left", fontsize=12)
    fig.suptitle(title or "where each 16-byte chunk (the number) of a 128-byte row is stored; dark: chunk 0 "
                 "of every row, what one column read touches", x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig


def cluster_multicast(*, bm: int, bn: int, bk: int, box_n: int, cluster: int = 2):
    """Lesson 6, rung 12: one pipeline stage of a cluster of `cluster` CTAs on vertically adjacent tiles
    (bm x bn each, kernels/hopper_sm90a.cu's HBM x HBN, K-stage HBK = bk, B in boxes of box_n columns:
    BOX_N, CLUSTER_M = cluster). Each CTA loads its own bm x bk slice of A; B's bn / box_n boxes are shared
    out, each CTA loading bn / box_n / cluster of them and multicasting each into every CTA of the cluster.
    Arrows: who loads which box into whose shared memory. The title counts the bytes requested per stage."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    apply_style()
    boxes = bn // box_n
    fig, ax = plt.subplots(figsize=(12, 5.6))
    bw, gap = 1.0, 0.25
    ax.text(1.6, 0.6, f"B in global memory: {bk} x {bn} (FP16), {boxes} TMA boxes of {bk} x {box_n}",
            fontsize=11, va="center")
    for b in range(boxes):
        owner = b // (boxes // cluster)
        ax.add_patch(Rectangle((1.6 + b * (bw + gap), 1.0), bw, 0.8, facecolor=COLORS[owner + 1], alpha=0.8,
                               edgecolor="k"))
        ax.text(1.6 + b * (bw + gap) + bw / 2, 1.4, f"box {b}", ha="center", va="center", fontsize=10)
    y0 = 3.4
    for c in range(cluster):
        x = c * 5.6
        ax.add_patch(Rectangle((x, y0), 5.0, 2.9, facecolor="none", edgecolor=COLORS[c + 1], linewidth=2.2))
        ax.text(x + 0.1, y0 + 0.1, f"CTA {c} of the cluster: tile row {c} (rows {c * bm}-{c * bm + bm - 1})",
                fontsize=10, va="top", color=COLORS[c + 1], fontweight="bold")
        ax.add_patch(Rectangle((x + 0.15, y0 + 0.6), 0.9, 2.0, facecolor=COLORS[c + 1], alpha=0.8, edgecolor="k"))
        ax.text(x + 0.6, y0 + 1.6, f"its A\n{bm} x {bk}", ha="center", va="center", fontsize=9)
        for b in range(boxes):
            owner = b // (boxes // cluster)
            bx = x + 1.3 + b * 0.9
            ax.add_patch(Rectangle((bx, y0 + 0.9), 0.8, 1.4, facecolor=COLORS[owner + 1], alpha=0.8, edgecolor="k"))
            ax.text(bx + 0.4, y0 + 1.6, f"B{b}", ha="center", va="center", fontsize=9)
            ax.add_patch(FancyArrowPatch((1.6 + b * (bw + gap) + bw / 2, 1.8), (bx + 0.4, y0 + 0.9),
                                         arrowstyle="-|>", mutation_scale=10, color=COLORS[owner + 1],
                                         linewidth=1.0, alpha=0.8, linestyle="-" if owner == c else "--"))
    ax.set_xlim(-0.2, cluster * 5.6)
    ax.set_ylim(y0 + 3.0, 0.2)
    ax.axis("off")
    a, bb = bm * bk * 2, bk * bn * 2
    ax.set_title(f"rung 12, one stage: each CTA loads its own A and {boxes // cluster} of the {boxes} boxes of B, "
                 f"multicast into all {cluster}\n(solid arrow: into itself, dashed: into its partner); "
                 f"requested per stage by the cluster: {cluster * (a + bb) // 1024} KB without multicast, "
                 f"{(cluster * a + bb) // 1024} KB with it", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def consumer_slices(tiles: dict):
    """Lesson 6, rungs 17 and 19: who computes which part of the block tile. One panel per entry of `tiles`
    ({label: (bm, bn, consumers)}): the bm x bn tile of C cut into the consumer warpgroups' slices (64 rows, by
    rows when bm is 128; by columns otherwise), each labelled with the wgmma it issues, m64nNk16 with N its
    slice's width. Below each panel: the wgmmas per K-tile of 64 and the warps whose arrivals free a stage
    (4 per consumer, in each CTA)."""
    from matplotlib.patches import Rectangle

    apply_style()
    tall = max(bm for bm, _, _ in tiles.values())
    fig, axes = plt.subplots(1, len(tiles), figsize=(5.2 * len(tiles), 1.2 + 2.2 * tall / 64), squeeze=False)
    for ax, (label, (bm, bn, consumers)) in zip(axes[0], tiles.items()):
        by_rows = bm == 128
        sw, sh = (bn, 64) if by_rows else (bn // consumers, bm)
        for c in range(consumers):
            x, y = (0, c * 64) if by_rows else (c * sw, 0)
            ax.add_patch(Rectangle((x, y), sw, sh, facecolor=COLORS[c + 1], alpha=0.55, edgecolor="k", linewidth=1.6))
            ax.text(x + sw / 2, y + sh / 2, f"consumer {c}\nwgmma\nm64n{sw}k16", ha="center", va="center", fontsize=11)
        ax.set_xlim(-4, max(bn, 128) + 4)
        ax.set_ylim(tall + 4, -4)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"{label}: a {bm} x {bn} tile, {consumers} consumer warpgroup{'s' * (consumers > 1)}\n"
                     f"{4 * consumers} wgmmas per K-tile; {4 * consumers} warps free each stage", loc="left",
                     fontsize=11)
    fig.tight_layout()
    return fig


def transposed_tile(rows: int = 160, cols: int = 256, slice_cols: int = 64, consumers: int = 2):
    """Lesson 6, rung 29: why cuBLAS computes C^T. Left: a 128-row tile cut by rows into the consumers' 64-row
    slices (wgmma's M is 64); a `rows`-row tile (160) is no whole number of them (hatched: the rows left over).
    Right: the same `rows` x `cols` tile cut by columns into slices `slice_cols` wide, each computed as its
    transpose, D' = B^T A^T: `slice_cols` rows of D' (wgmma's M) by `rows` columns (wgmma's N, any multiple of 8)."""
    from matplotlib.patches import Rectangle

    apply_style()
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 1.0 + 1.25 * rows / 64))
    ax = axes[0]
    for i in range(-(-rows // 64)):
        h = min(64, rows - 64 * i)
        whole = h == 64
        ax.add_patch(Rectangle((0, 64 * i), cols, h, facecolor=COLORS[(i % consumers) + 1] if whole else "white",
                               alpha=0.55, edgecolor="k", linewidth=1.6, hatch=None if whole else "//"))
        ax.text(cols / 2, 64 * i + h / 2, f"consumer {i % consumers}: wgmma m64n{cols}k16" if whole else
                f"{h} rows: no whole 64-row slice", ha="center", va="center", fontsize=11)
    ax.set_title(f"{rows} x {cols} cut by rows: wgmma's M is 64", loc="left", fontsize=11)
    ax = axes[1]
    per = cols // consumers // slice_cols
    for j in range(cols // slice_cols):
        c = j // per
        ax.add_patch(Rectangle((j * slice_cols, 0), slice_cols, rows, facecolor=COLORS[c + 1], alpha=0.35 + 0.2 * (j % per),
                               edgecolor="k", linewidth=1.6))
        ax.text(j * slice_cols + slice_cols / 2, rows / 2, f"consumer {c}\nslice {j % per}\nD' = {slice_cols} x {rows}"
                f"\nm64n{rows}k16", ha="center", va="center", fontsize=10)
    ax.set_title(f"{rows} x {cols} cut by columns, each slice as C^T: {rows} is wgmma's N", loc="left", fontsize=11)
    for ax in axes:
        ax.set_xlim(-4, cols + 4)
        ax.set_ylim(max(rows, 64 * -(-rows // 64)) + 4, -4)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.tight_layout()
    return fig


def label_every_size(fig, sizes=None, *, pad: float = 34.0):
    """Lessons 01-02: give every size tick on a tflops_vs_size figure a label. A size that
    size_tick_labels leaves blank (such as 1000 beside 1024) gets its label one row lower, so both
    print and neither covers the other."""
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
    """For a log axis, where an exact 0 has no place: the curves with each 0 replaced by a floor half a
    decade below the smallest positive value, and that floor. Draw it with mark_zero_floor, so that the
    points on it read as 0 and not as a small value."""
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
    """Point labels (ax.texts made with annotate, offset in points) that stay readable: a label of a
    point within edge_dex decades of the right edge of a log x axis goes to the left of its point, and
    of two points closer than close_dex decades in x and close_y in y, one label goes below, one above."""
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


def fragment_owners(frags, *, title: str = "", xlabel: str = "column (k)", ylabel: str = "row (m)",
                    legend: str = "a{lo}, a{hi}: 8 x 8 matrix {i}"):
    """Lesson 5, rung 6: which lane of the warp holds each element of a 16 x 16 fragment after ldmatrix.x4
    (frags: helpers.analysis.ldmatrix_fragments("a"), lane -> its (row, col) elements in PTX order a0..a7).
    Each cell is labelled with its lane; the colour is the 8 x 8 matrix (one ldmatrix register, a0-a1,
    a2-a3, ...) it arrives in. A model replayed from the kernel's addressing, not a measurement."""
    apply_style()
    n = 1 + max(max(r for r, _ in f) for f in frags)
    m = 1 + max(max(c for _, c in f) for f in frags)
    lane, reg = np.full((n, m), -1), np.full((n, m), -1)
    for L, f in enumerate(frags):
        for i, (r, c) in enumerate(f):
            lane[r, c], reg[r, c] = L, i // 2
    fig, ax = plt.subplots(figsize=(9.5, 7.2))
    for r in range(n):
        for c in range(m):
            ax.add_patch(matplotlib.patches.Rectangle((c, r), 1, 1, facecolor=COLORS[reg[r, c] % len(COLORS)],
                                                      alpha=0.55, edgecolor="white"))
            ax.text(c + 0.5, r + 0.5, str(lane[r, c]), ha="center", va="center", fontsize=8)
    ax.set_xlim(0, m)
    ax.set_ylim(n, 0)
    ax.set_xticks(np.arange(m) + 0.5, [str(c) for c in range(m)], fontsize=9)
    ax.set_yticks(np.arange(n) + 0.5, [str(r) for r in range(n)], fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    handles = [matplotlib.patches.Patch(color=COLORS[i], alpha=0.55, label=legend.format(lo=2 * i, hi=2 * i + 1, i=i))
               for i in range(int(reg.max()) + 1)]
    _legend_beside(ax, handles=handles, fontsize=10)
    ax.set_title(title or "the A fragment after ldmatrix.x4: the lane that holds each element (4 lanes per row, "
                 "2 halves each)", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def register_split(*, entry: int, threads: int, producer: int, consumer: int, warpgroup: int = 128):
    """Lesson 6, rung 9: the CTA's register pool before and after setmaxnreg (kernels/hopper_sm90a.cu:
    __launch_bounds__(threads, 1) gives `entry` registers per thread; the producer warpgroup drops to
    PRODUCER_REGS = producer, each consumer warpgroup rises to CONSUMER_REGS = consumer). Bars: registers
    per warpgroup (threads x registers), against the pool entry x threads; the inc waits until the pool
    holds what it asks for, so the after bar must fit inside the before bar."""
    apply_style()
    groups = threads // warpgroup
    pool = entry * threads
    fig, ax = plt.subplots(figsize=(11, 3.4))
    left = 0
    for g in range(groups):
        ax.barh(1, entry * warpgroup, left=left, color=COLORS[5], edgecolor="white", height=0.6)
        ax.text(left + entry * warpgroup / 2, 1, f"warpgroup {g}\n{warpgroup} x {entry}", ha="center", va="center",
                fontsize=10)
        left += entry * warpgroup
    left = 0
    for g, regs in enumerate([producer] + [consumer] * (groups - 1)):
        ax.barh(0, regs * warpgroup, left=left, color=COLORS[1] if g == 0 else COLORS[0], edgecolor="white",
                height=0.6)
        ax.text(left + regs * warpgroup / 2, 0, f"{'producer' if g == 0 else 'consumer'}\n{warpgroup} x {regs}",
                ha="center", va="center", fontsize=10, color="white")
        left += regs * warpgroup
    ax.axvline(pool, color="0.2", linestyle=":", linewidth=1.6)
    ax.set_yticks([0, 1], ["after setmaxnreg", "at launch"])
    ax.set_xlim(0, pool * 1.02)
    ax.set_xlabel("registers of the CTA (its pool: dotted line)")
    ax.grid(axis="y", visible=False)
    ax.set_title(f"rung 9's registers: {threads} threads x {entry} = {pool} at launch;\nafter setmaxnreg "
                 f"{producer} x {warpgroup} + {consumer} x {(groups - 1) * warpgroup} = "
                 f"{producer * warpgroup + consumer * (groups - 1) * warpgroup}", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def split_k_units(grids: dict, *, K: int, title: str = ""):
    """Lesson 6, rungs 14-15: one panel per launch ({label: helpers.analysis.split_k_units(...)}): for each CTA
    (x) the K range it multiplies (y), one bar per work unit, coloured by its tile. Idle CTAs stay empty. A
    replay of the scheduler, not a measurement."""
    apply_style()
    fig, axes = plt.subplots(len(grids), 1, figsize=(11, 2.4 * len(grids)), sharex=True, squeeze=False)
    for ax, (label, units) in zip(axes[:, 0], grids.items()):
        busy = sum(1 for u in units if u)
        for c, work in enumerate(units):
            for tile, k0, k1 in work:
                ax.add_patch(matplotlib.patches.Rectangle((c, k0), 0.9, k1 - k0, facecolor=COLORS[tile % len(COLORS)],
                                                          edgecolor="none", alpha=0.8))
        ax.set_xlim(0, len(units))
        ax.set_ylim(K, 0)
        ax.set_ylabel("K")
        ax.set_title(f"{label}: {busy} of {len(units)} CTAs busy", loc="left", fontsize=11)
        ax.grid(False)
    axes[-1, 0].set_xlabel("CTA (one per SM); colour: the output tile it works on")
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig


def cta_work(grids: dict, *, K: int, title: str = ""):
    """Lesson 6, rung 16: one panel per launch ({label: helpers.analysis.tail_split_work(...)}): for each CTA (x)
    the K-tiles it multiplies, stacked in the order it takes them (y): whole tiles grey, parts of split tiles
    coloured by tile. The tallest bar bounds the kernel's time. The axis starts one whole tile below the
    shortest stack of whole tiles, so that the last wave shows. A replay of the scheduler, not a measurement."""
    apply_style()
    fig, axes = plt.subplots(len(grids), 1, figsize=(11, 2.4 * len(grids)), sharex=True, squeeze=False)
    ktiles = -(-K // 64)
    whole = [sum(1 for _, k0, k1 in w if k0 == 0 and k1 >= K) for units in grids.values() for w in units if w]
    bottom = max(0, (min(whole, default=1) - 1) * ktiles)
    top = max([sum(-(-(k1 - k0) // 64) for _, k0, k1 in w) for units in grids.values() for w in units] + [ktiles])
    split = {}                                    # split tile -> its colour, in the order they first appear
    for units in grids.values():
        for w in units:
            for tile, k0, k1 in w:
                if not (k0 == 0 and k1 >= K):
                    split.setdefault(tile, COLORS[len(split) % len(COLORS)])
    for ax, (label, units) in zip(axes[:, 0], grids.items()):
        tallest = 0
        for c, work in enumerate(units):
            y = 0
            for tile, k0, k1 in work:
                h = -(-(k1 - k0) // 64)
                whole = k0 == 0 and k1 >= K
                ax.add_patch(matplotlib.patches.Rectangle((c, y), 0.9, h, edgecolor="white", linewidth=0.3,
                                                          facecolor="0.75" if whole else split[tile]))
                y += h
            tallest = max(tallest, y)
        ax.set_xlim(0, len(units))
        ax.set_ylim(bottom, bottom + (top - bottom) * 1.05)              # the same scale in every panel
        ax.set_ylabel("K-tiles" if not bottom else f"K-tiles (from {bottom})")
        ax.set_title(f"{label}: the busiest CTA multiplies {tallest} K-tiles", loc="left", fontsize=11)
        ax.grid(False)
    axes[-1, 0].set_xlabel("CTA (one per SM); grey: a whole tile (all of K), colour: a part of a split tile")
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig


def wave_efficiency(sizes, curves: dict, *, marks: dict | None = None, title: str = "", source: str = ""):
    """Lesson 6, Appendix D: the share of a persistent grid's tile slots that hold output (y) against the size n
    of an n x n output (x), one line per tile choice ({label: [efficiency per size]}); marks: {label: (n,
    efficiency)} drawn as points (a tile cuBLAS ran). Computed from the tile counts, not measured."""
    apply_style()
    fig, ax = plt.subplots(figsize=(10, 3.6))
    for label, ys in curves.items():
        ax.plot(list(sizes), ys, label=label, linewidth=1.6)
    for label, (n, y) in (marks or {}).items():
        ax.plot([n], [y], "o", markersize=8, label=label)
    ax.set_xlabel("n (an n x n output)")
    ax.set_ylabel("tile slots holding output")
    ax.set_ylim(min(0.7, *(min(ys) for ys in curves.values())) - 0.02, 1.01)
    return _finish(ax, title, source, legend_outside=True)


def box_rows_in_lines(row_bytes: list[int], *, rows: int = 8, segment: int = 128, line: int = 128, sector: int = 32):
    """Lesson 6, Appendix D: where the first `segment` bytes of each of `rows` consecutive matrix rows fall
    (one TMA box row: 64 FP16 values), against the 128-byte lines and 32-byte sectors of memory, for each row
    stride in `row_bytes` (one panel each; the matrix starts on a line). A piece that starts inside a line spans
    two lines: two L2 requests instead of one. Each panel's title gives the lines and sectors per piece, averaged
    over the rows (helpers.analysis.sectors_per_row)."""
    from matplotlib.patches import Rectangle

    from .analysis import sectors_per_row

    apply_style()
    fig, axes = plt.subplots(1, len(row_bytes), figsize=(6.2 * len(row_bytes), 4.8), squeeze=False)
    for ax, rb in zip(axes[0], row_bytes):
        for r in range(rows):
            start = r * rb % line                              # where the piece starts within its line
            spans = (start + segment - 1) // line + 1
            ax.add_patch(Rectangle((start, r + 0.15), segment, 0.7, facecolor=COLORS[1 if spans > 1 else 2],
                                   alpha=0.85, edgecolor="k"))
        for x in range(0, 2 * line + 1, sector):
            ax.axvline(x, color="k", linewidth=2.0 if x % line == 0 else 0.6, alpha=0.8 if x % line == 0 else 0.3)
        ax.set_xlim(0, 2 * line)
        ax.set_ylim(rows, 0)
        ax.set_xticks(range(0, 2 * line + 1, sector))
        ax.set_xlabel("byte within two 128-byte lines (thin: 32-byte sectors)")
        ax.set_ylabel("row")
        ax.grid(False)
        ax.set_title(f"rows {rb} bytes apart: {sectors_per_row(rb, segment, line, rows):.2f} lines and "
                     f"{sectors_per_row(rb, segment, sector, rows):.2f} sectors per piece", fontsize=12, loc="left")
    fig.suptitle(f"The first {segment} bytes of {rows} rows (orange: the piece spans two lines)", fontsize=14, x=0.01,
                 ha="left")
    fig.tight_layout()
    return fig


def stream_schedule(flow: bool, ktiles: int = 4, tiles: int = 2, store: float = 1.0, add: float = 0.25) -> dict:
    """A model of one consumer warpgroup of lesson 7's two-sum kernel (kernels/fp8_sm90a.cu, TWO), in units of one
    K-tile's wgmma time: it issues K-tile i (no time), then waits for K-tile i - 1's group, adds it (`add`) and, at a
    tile's last K-tile, stores C (`store`, an assumed cost, not a measurement). A group starts when issued and the one
    before it is done. As built (flow False) a tile's last K-tile is waited for and stored before the next tile's first
    is issued; with F8_FLOW (flow True) the next tile's first is issued first. Returns {'mma': [(start, end, label)],
    'cuda': [(start, end, 'add' | 'store')], 'busy': the Tensor Cores' share of the time}."""
    items = [(t, k) for t in range(tiles) for k in range(ktiles)]
    mma, cuda, w, end = [], [], 0.0, 0.0

    def retire(i):                                    # wait for item i's group, add it, store at a tile's end
        nonlocal w
        w = max(w, mma[i][1])
        cuda.append((w, w + add, "add"))
        w += add
        if items[i][1] == ktiles - 1:
            cuda.append((w, w + store, "store"))
            w += store
    for i, (t, k) in enumerate(items):
        start = max(w, end)                           # issued now; runs after the previous group
        end = start + 1.0
        mma.append((start, end, f"t{t} k{k}"))
        if i > 0 and (flow or k > 0):
            retire(i - 1)
        if not flow and k == ktiles - 1:              # as built: the tile's last K-tile, before the next tile
            retire(i)
    if flow:
        retire(len(items) - 1)
    return {"mma": mma, "cuda": cuda, "busy": len(items) / max(w, end)}


def k_tile_stream(ktiles: int = 4, tiles: int = 2, store: float = 1.0, add: float = 0.25):
    """Two panels of stream_schedule, as built and with F8_FLOW=1: per panel the Tensor Cores (a consumer's wgmma
    groups, labelled tile and K-tile) and the consumer's CUDA-core work (adds, stores of C). A model, not a
    measurement: the title says the assumed costs."""
    apply_style()
    fig, axes = plt.subplots(2, 1, figsize=(11, 3.6), sharex=True)
    runs = [(False, "as built"), (True, "F8_FLOW=1: one stream of K-tiles")]
    horizon = max(max(e for _, e, _ in stream_schedule(f, ktiles, tiles, store, add)["cuda"]) for f, _ in runs)
    for ax, (flow, name) in zip(axes, runs):
        s = stream_schedule(flow, ktiles, tiles, store, add)
        for a, b, label in s["mma"]:
            ax.barh(1, b - a, left=a, height=0.7, color=COLORS[0], edgecolor="white")
            ax.text((a + b) / 2, 1, label, ha="center", va="center", color="white", fontsize=9)
        for a, b, kind in s["cuda"]:
            ax.barh(0, b - a, left=a, height=0.7, color=COLORS[2] if kind == "add" else COLORS[3], edgecolor="white")
            if kind == "store":
                ax.text((a + b) / 2, 0, "store C", ha="center", va="center", color="white", fontsize=9)
        ax.set_yticks([0, 1], ["adds, store", "Tensor Cores"], fontsize=10)
        ax.set_xlim(0, horizon + 0.1)
        ax.grid(axis="y", visible=False)
        ax.set_title(f"{name}: Tensor Cores busy {s['busy']:.0%} of the time", loc="left", fontsize=12)
    axes[-1].set_xlabel(f"time, in K-tiles of wgmma (a model: an add {add:g}, a store of C {store:g})")
    fig.tight_layout()
    return fig
