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
    """A model of the producer/consumer ring (kernels/hopper_sm90a.cu, rungs 9-13), in units of one K-tile's
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
