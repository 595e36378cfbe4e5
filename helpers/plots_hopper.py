"""Lesson 6's pictures: the TMA/mbarrier ring, clusters and multicast, tile orders and waves, split-K
units, the counters beside the speed. Each returns the figure."""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle

from .analysis import wave_footprint
from .plot_style import COLORS, apply_style


def counters_beside(entries: list[dict], metrics: dict, *, source: str, tick_fontsize: float | None = None):
    """Bars per rung: TFLOP/s in the first panel, then one panel per Nsight Compute counter in `metrics`
    ({counter name: axis label}); entries from helpers.experiments.hopper.ncu_rows."""
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
    """One panel per order ({label: (tm, tn) in visiting order}): the tiles of C that the first `waves` waves of
    `wave` CTAs compute, the first darkest. rows: only the first `rows` tile rows; outline_first: outline the first
    wave and label each panel with the rows of A and columns of B it reads (helpers.analysis.wave_footprint)."""
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


def ring_schedule(stages: int, load: float = 2.0, ktiles: int = 10) -> list[dict]:
    """A model of the producer/consumer ring, in units of one K-tile's wgmma time: K-tile kt goes to stage
    kt % stages; its TMA load starts when the consumers have freed that stage, takes `load` (assumed, not measured),
    and its wgmma starts when the load is in and the previous K-tile is done. One dict per K-tile: kt, stage, lap,
    parity (what the consumers wait full[stage] for), issue, full, start, end."""
    out: list[dict] = []
    for kt in range(ktiles):
        issue = out[kt - stages]["end"] if kt >= stages else 0.0
        full = issue + load
        start = max(full, out[-1]["end"] if out else 0.0)
        out.append({"kt": kt, "stage": kt % stages, "lap": kt // stages, "parity": (kt // stages) % 2,
                    "issue": issue, "full": full, "start": start, "end": start + 1.0})
    return out


def mbarrier_ring(stages=(4, 2), load: float = 2.0, ktiles: int = 10):
    """The ring over time, one panel per depth in `stages` (ring_schedule): per stage, TMA filling it (light), full
    and waiting (hatched), read by wgmma (dark, with the K-tile and parity); the bottom row, the Tensor Cores busy."""
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


def cluster_multicast(*, bm: int, bn: int, bk: int, box_n: int, cluster: int = 2):
    """Rung 12: one pipeline stage of a cluster of `cluster` CTAs on tiles stacked along M (bm x bn each, K-stage
    bk, B in boxes of box_n columns). Each CTA loads its own slice of A and bn / box_n / cluster of B's boxes,
    multicast into every CTA of the cluster (arrows). The title counts the bytes requested per stage."""
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


def register_split(*, entry: int, threads: int, producer: int, consumer: int, warpgroup: int = 128):
    """Rung 9: the CTA's register pool (`entry` per thread at launch) before and after setmaxnreg (the producer
    warpgroup down to `producer`, each consumer up to `consumer`): the after bar must fit inside the before bar."""
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
    """Rungs 14-15: one panel per launch ({label: helpers.analysis.split_k_units(...)}): for each CTA the K range of
    each of its work units, coloured by tile. A replay of the scheduler, not a measurement."""
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
    """Rung 16: one panel per launch ({label: helpers.analysis.tail_split_work(...)}): for each CTA the K-tiles it
    multiplies, stacked in order (whole tiles grey, parts of split tiles coloured); the axis starts one whole tile
    below the shortest stack, so that the last wave shows. A replay of the scheduler, not a measurement."""
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


# --------------------------------------------------------------------------- block diagrams (drawn, not measured)
def _box(ax, x, y, w, h, text, color, *, alpha=0.85, fontsize=10, text_color="k", lw=1.0, fill=True):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color if fill else "none", alpha=alpha if fill else 1.0,
                           edgecolor="k" if fill else color, linewidth=lw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, color=text_color)


def _arrow(ax, a, b, text="", color="0.25", *, style="-|>", ls="-", fontsize=9, rad=0.0, offset=(0, 0)):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=12, color=color, linewidth=1.4,
                                 linestyle=ls, connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((a[0] + b[0]) / 2 + offset[0], (a[1] + b[1]) / 2 + offset[1], text, ha="center", va="center",
                fontsize=fontsize, color=color, bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1))


def tma_ring_flow(*, bm: int, bn: int, bk: int, stages: int, threads: int):
    """Lesson 5's rung 7: where the data goes. Tiles of A (bm x bk) and B^T (bn x bk) in global memory, copied by
    TMA (one thread asks) into a ring of `stages` stages of shared memory, each with an mbarrier the copy engine
    counts its bytes on; the warpgroups wait on it and `wgmma` reads the stage straight into accumulators."""
    apply_style()
    fig, ax = plt.subplots(figsize=(12, 4.6))
    a_bytes, b_bytes = bm * bk * 2, bn * bk * 2
    _box(ax, 0.0, 2.6, 2.2, 1.1, f"A in global memory\ntile {bm} x {bk}", COLORS[1])
    _box(ax, 0.0, 0.6, 2.2, 1.1, f"$B^T$ in global memory\ntile {bn} x {bk}", COLORS[2])
    _box(ax, 3.0, 1.55, 1.7, 1.2, "TMA\n(copy engine)", COLORS[5])
    _arrow(ax, (2.2, 3.15), (3.0, 2.4))
    _arrow(ax, (2.2, 1.15), (3.0, 1.9))
    ax.text(3.85, 3.25, "thread 0: expect_tx\n+ one copy per tile", ha="center", fontsize=9)
    x0, w = 5.4, 1.05
    for s in range(stages):
        x = x0 + s * (w + 0.15)
        _box(ax, x, 2.15, w, 1.3, f"A\n{a_bytes // 1024} KB", COLORS[1], alpha=0.55, fontsize=9)
        _box(ax, x, 0.55, w, 1.5, f"$B^T$\n{b_bytes // 1024} KB", COLORS[2], alpha=0.55, fontsize=9)
        _box(ax, x, 3.55, w, 0.45, f"mbar[{s}]", "0.85", fontsize=9)
        ax.text(x + w / 2, 0.3, f"stage {s}", ha="center", fontsize=9)
    ring_end = x0 + stages * (w + 0.15) - 0.15
    ax.text((x0 + ring_end) / 2, 4.35, f"shared memory: a ring of {stages} stages, swizzled 128-byte rows",
            ha="center", fontsize=10)
    _arrow(ax, (4.7, 2.15), (x0, 2.15), "bytes", COLORS[5])
    _box(ax, ring_end + 0.8, 1.3, 2.3, 1.7, f"{threads // 128} warpgroups\nwgmma 64 x {bn} x 16\n"
         "reads A, $B^T$ from\nshared memory", COLORS[0], text_color="white")
    _box(ax, ring_end + 3.6, 1.3, 1.9, 1.7, f"accumulators\nin registers\n{bm} x {bn} FP32", COLORS[3],
         alpha=0.6)
    _arrow(ax, (ring_end, 1.9), (ring_end + 0.8, 1.9))
    _arrow(ax, (ring_end + 3.1, 2.15), (ring_end + 3.6, 2.15))
    _arrow(ax, (ring_end + 1.95, 3.0), (ring_end, 3.78), "wait: phase bit", "0.3", ls="--", rad=0.3,
           offset=(0.6, 0.3))
    ax.set_xlim(-0.1, ring_end + 5.6)
    ax.set_ylim(0.0, 4.7)
    ax.axis("off")
    ax.set_title(f"rung 7: TMA fills a stage ({(a_bytes + b_bytes) // 1024} KB) and counts its bytes on the stage's "
                 "mbarrier; the warpgroups wait on it, then wgmma reads the stage", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def operand_majors(*, bk: int, box_n: int, show: int = 8):
    """Rung 8: one TMA box of B (bk k-rows x box_n columns, FP16: one 128-byte row per k) in shared memory, as rung 7
    stores it (B^T, K-major: a 128-byte row holds bk values of k for one column n) and as rung 8 does (B as stored,
    MN-major: a row holds box_n columns n for one k). Only the first `show` rows and columns are drawn; the arrows
    follow consecutive addresses."""
    apply_style()
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, (title, row_is_k) in zip(axes, [(f"rung 7: $B^T$, K-major\n(a transpose first): a 128-byte row = {bk} "
                                             "values of k, one column n", False),
                                            (f"rung 8: B as stored, MN-major\n(wgmma's transpose bit): a 128-byte "
                                             f"row = {box_n} columns n, one k", True)]):
        for r in range(show):
            for c in range(show):
                k, n = (r, c) if row_is_k else (c, r)
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=COLORS[2] if row_is_k else COLORS[1],
                                       alpha=0.25 + 0.6 * (r == 0), edgecolor="white"))
                ax.text(c + 0.5, r + 0.5, f"k{k}\nn{n}", ha="center", va="center", fontsize=7.5)
            ax.add_patch(FancyArrowPatch((0.1, r + 0.85), (show - 0.1, r + 0.85), arrowstyle="-|>",
                                         mutation_scale=9, color="0.3", linewidth=0.8))
        ax.set_xlim(0, show)
        ax.set_ylim(show, -0.6)
        ax.text(0, -0.2, "address ->  (row 0 darker; each row continues to 128 bytes)", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks(range(show), [f"row {r}" for r in range(show)], fontsize=9)
        ax.grid(False)
        ax.set_title(title, loc="left", fontsize=11)
    fig.suptitle("one wgmma k-step reads 16 values of k: along a row (K-major) or down 16 rows (MN-major)",
                 x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig


def hopper_kernel(*, stages: int, bm: int, bn: int, bk: int, box_n: int, producer_regs: int, consumer_regs: int,
                  consumers: int = 2):
    """Rung 9, the whole kernel as blocks: the producer warpgroup (one thread issues TMA), the ring of `stages`
    stages with their full[] and empty[] mbarriers, the consumer warpgroups (wgmma on their 64-row slices) and the
    epilogue (registers to C). Arrows: who waits on which barrier, who arrives on it."""
    apply_style()
    fig, ax = plt.subplots(figsize=(13, 6.2))
    slab = bm // consumers
    stage_kb = (bm * bk + bk * bn) * 2 // 1024
    _box(ax, 0.0, 4.6, 2.4, 1.2, f"A, B in global memory\n(TMA boxes: A {bm} x {bk},\nB {bk} x {box_n})", "0.85")
    _box(ax, 0.0, 1.6, 2.4, 2.2, f"producer\nwarpgroup 0\n(128 threads,\n{producer_regs} registers each)\n"
         "thread 0 issues TMA", COLORS[5])
    _arrow(ax, (1.2, 4.6), (1.2, 3.8), "", "0.4")
    x0, w = 3.4, 1.2
    for s in range(stages):
        x = x0 + s * (w + 0.2)
        _box(ax, x, 2.0, w, 1.6, f"stage {s}\n{stage_kb} KB\nA + B", COLORS[2], alpha=0.45, fontsize=9)
        _box(ax, x, 3.75, w, 0.45, f"full[{s}]", COLORS[5], alpha=0.5, fontsize=9)
        _box(ax, x, 1.35, w, 0.45, f"empty[{s}]", COLORS[3], alpha=0.5, fontsize=9)
    ring_end = x0 + stages * (w + 0.2) - 0.2
    ax.text((x0 + ring_end) / 2, 4.5, f"shared memory: a ring of {stages} stages", ha="center", fontsize=11)
    _arrow(ax, (2.4, 3.2), (x0, 3.2), "TMA load\n+ expect_tx", COLORS[5], offset=(0, 0.35))
    _arrow(ax, (x0, 1.57), (2.4, 2.0), "wait: free?", COLORS[3], ls="--", offset=(0, -0.35))
    cx = ring_end + 1.0
    for c in range(consumers):
        y = 3.3 - c * 2.0
        _box(ax, cx, y, 2.6, 1.6, f"consumer warpgroup {c + 1}\n({consumer_regs} registers each)\nwgmma on rows "
             f"{c * slab}-{c * slab + slab - 1}\n{slab} x {bn} FP32 accumulators", COLORS[0], text_color="white",
             fontsize=9)
    _arrow(ax, (ring_end, 3.97), (cx, 4.1), "wait: loaded?", COLORS[5], ls="--", offset=(0, 0.3))
    _arrow(ax, (cx, 1.9), (ring_end, 1.57), "arrive: done\n(8 warps)", COLORS[3], offset=(0, -0.45))
    _box(ax, cx + 3.3, 2.1, 2.2, 1.6, "epilogue\nregisters -> C\n(global memory)", COLORS[1], fontsize=10)
    _arrow(ax, (cx + 2.6, 4.1), (cx + 3.3, 3.3))
    _arrow(ax, (cx + 2.6, 2.1), (cx + 3.3, 2.5))
    ax.set_xlim(-0.1, cx + 5.7)
    ax.set_ylim(0.9, 6.0)
    ax.axis("off")
    ax.set_title(f"rung 9: one CTA of {128 * (consumers + 1)} threads computes a {bm} x {bn} tile of C, {bk} of K "
                 "per stage\nsolid: data; dashed: a wait on an mbarrier", loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def epilogue_path(*, box_rows: int, box_cols: int, elem_bytes: int, slice_cols: int, show_rows: int = 8):
    """Rung 13's epilogue: a consumer's 64-row slice of FP32 accumulators (registers) is written box by box
    (box_rows x box_cols elements, 128-byte rows) into a shared-memory buffer with the 128-byte swizzle (16-byte
    chunk q of row r at chunk q XOR r mod 8; the first `show_rows` rows drawn), then one thread hands the box to a
    TMA store, which writes whole rows of C and clips at its edge."""
    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1.1, 1.3, 1.2]})
    chunks = box_cols * elem_bytes // 16
    boxes = slice_cols // box_cols
    ax = axes[0]
    for b in range(boxes):
        ax.add_patch(Rectangle((b, 0), 1, box_rows, facecolor=COLORS[b % 2], alpha=0.45 + 0.4 * (b == 0),
                               edgecolor="white"))
        ax.text(b + 0.5, box_rows / 2, f"box {b}", rotation=90, ha="center", va="center", fontsize=9)
    ax.set_xlim(0, boxes)
    ax.set_ylim(box_rows, 0)
    ax.set_xticks([])
    ax.set_ylabel("row of the slice")
    ax.set_title(f"1. registers: a {box_rows} x {slice_cols} slice,\n{boxes} boxes of {box_rows} x {box_cols}",
                 loc="left", fontsize=11)
    ax = axes[1]
    for r in range(show_rows):
        for q in range(chunks):
            pos = q ^ (r % 8)
            ax.add_patch(Rectangle((pos, r), 1, 1, facecolor=COLORS[q % len(COLORS)], alpha=0.75, edgecolor="white"))
            ax.text(pos + 0.5, r + 0.5, f"c{q}", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, chunks)
    ax.set_ylim(show_rows, 0)
    ax.set_xticks(range(chunks), [f"{16 * i}" for i in range(chunks)], fontsize=8)
    ax.set_xlabel("byte of the 128-byte row (16-byte chunks)")
    ax.set_yticks(range(show_rows), [f"row {r}" for r in range(show_rows)], fontsize=8)
    ax.grid(False)
    ax.set_title("2. shared memory, box 0: chunk c of row r\nat chunk c XOR (r mod 8): the swizzle",
                 loc="left", fontsize=11)
    ax = axes[2]
    ax.add_patch(Rectangle((0, 0), slice_cols, box_rows, facecolor="0.92", edgecolor="0.5"))
    ax.add_patch(Rectangle((0, 0), box_cols, box_rows, facecolor=COLORS[0], alpha=0.85, edgecolor="k"))
    ax.add_patch(Rectangle((slice_cols * 0.8, 0), slice_cols * 0.2, box_rows, facecolor="none", edgecolor="r",
                           hatch="//", linewidth=0.8))
    ax.text(slice_cols * 0.9, box_rows / 2, "beyond N:\nnot written", ha="center", va="center", fontsize=9,
            color="r")
    ax.set_xlim(0, slice_cols)
    ax.set_ylim(box_rows, 0)
    ax.set_xlabel("column of C")
    ax.set_yticks([])
    ax.set_title(f"3. C in global memory: one thread's TMA store\nwrites box 0 as {box_rows} rows of "
                 f"{box_cols * elem_bytes} bytes", loc="left", fontsize=11)
    fig.tight_layout()
    for a, b in ((axes[0], axes[1]), (axes[1], axes[2])):
        fig.add_artist(FancyArrowPatch((a.get_position().x1 + 0.005, 0.5), (b.get_position().x0 - 0.04, 0.5),
                                       transform=fig.transFigure, arrowstyle="-|>", mutation_scale=14, color="0.3"))
    return fig


# --------------------------------------------------------------------------- predictions
def prediction_judged(base: dict, rung: dict, predicted: float, *, base_label: str, rung_label: str, source: str):
    """How a prediction is judged, on one real pair of timings: each timing's launches as p10, median and p90
    (base, rung: dicts with p10_ms, median_ms, p90_ms); the measured gain (median over median) and its spread
    [base p10 / rung p90, base p90 / rung p10]; the prediction inside or outside; the verdict (helpers.timing)."""
    from .timing import verdict

    apply_style()
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1, 1.2]})
    for y, (t, lab, col) in enumerate(((base, base_label, COLORS[5]), (rung, rung_label, COLORS[0]))):
        ax0.plot([t["p10_ms"], t["p90_ms"]], [y, y], color=col, linewidth=8, solid_capstyle="butt", alpha=0.6)
        ax0.plot([t["median_ms"]], [y], "|", color="k", markersize=22, markeredgewidth=2)
        ax0.text(t["p90_ms"], y + 0.28, "p10 - median - p90", fontsize=8, ha="right")
    ax0.set_yticks([0, 1], [base_label, rung_label])
    ax0.set_ylim(-0.6, 1.7)
    ax0.set_xlabel("time per launch (ms)")
    ax0.set_title("1. each timing: many launches", loc="left", fontsize=11)
    mid = base["median_ms"] / rung["median_ms"]
    low, high = base["p10_ms"] / rung["p90_ms"], base["p90_ms"] / rung["p10_ms"]
    v = verdict(predicted, low, high)
    ax1.axvspan(low, high, color=COLORS[0], alpha=0.25, label=f"spread: {low:.3f} to {high:.3f}")
    ax1.axvline(mid, color=COLORS[0], linewidth=2.2, label=f"measured gain x{mid:.3f} (median / median)")
    ax1.axvline(predicted, color=COLORS[1], linewidth=2.2, linestyle="--", label=f"predicted x{predicted:g}")
    ax1.axvline(1.0, color="0.5", linewidth=1.0, linestyle=":", label="x1.00: no change")
    lo, hi = min(low, predicted, 1.0), max(high, predicted, 1.0)
    pad = 0.15 * (hi - lo) + 1e-3
    ax1.set_xlim(lo - pad, hi + pad)
    ax1.set_yticks([])
    ax1.set_xlabel(f"gain of {rung_label} over {base_label}")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    ax1.set_title(f"2. verdict: {v}", loc="left", fontsize=11)
    fig.suptitle(f"how a prediction is judged ({source})", x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig


VERDICT_COLORS = {"as predicted": COLORS[2], "missed": COLORS[3], "unresolved": "0.55"}


def predicted_vs_measured(points: list[dict], *, source: str, title: str = "",
                          ylabel: str = "gain over the rung before\n(at their own shape, 15-16: over 14)"):
    """Every rung's predicted gain against its measured gain (with the p10-p90 spread), one column per rung, a point
    per shape (prediction_points of helpers.experiments.hopper or .ladder); coloured by the verdict."""
    apply_style()
    rungs = sorted({p["rung"] for p in points})
    shapes = list(dict.fromkeys(p["shape"] for p in points))
    fig, ax = plt.subplots(figsize=(12, 4.8))
    width = 0.6 / max(1, len(shapes))
    lo = min(min(p["low"], p["predicted"]) for p in points)
    seen = set()
    for p in points:
        x = rungs.index(p["rung"]) + (shapes.index(p["shape"]) - (len(shapes) - 1) / 2) * width
        kind = p["verdict"].split(":")[0]
        col = VERDICT_COLORS.get(kind, "0.3")
        ax.plot([x, x], [p["low"], p["high"]], color=col, linewidth=6, alpha=0.45, solid_capstyle="butt")
        ax.plot([x], [p["measured"]], "o", color=col, markersize=7, label=None if kind in seen else kind)
        seen.add(kind)
        ax.plot([x - width * 0.45, x + width * 0.45], [p["predicted"]] * 2, color="k", linewidth=1.6)
        ax.text(x, lo - 0.1, p["shape"], ha="center", va="bottom", fontsize=8, rotation=90)
    ax.plot([], [], color="k", linewidth=1.6, label="predicted")
    ax.axhline(1.0, color="0.5", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(rungs)), [f"rung {r}" for r in rungs])
    ax.set_ylabel(ylabel, fontsize=10)
    ax.set_ylim(lo - 0.12, max(max(p["high"], p["predicted"]) for p in points) + 0.05)
    ax.legend(loc="upper right", fontsize=9, title="measured (dot: median; bar: p10-p90 spread)", title_fontsize=9)
    ax.set_title(title or f"predicted (black) against measured, every rung ({source})", loc="left", fontsize=12)
    fig.tight_layout()
    return fig
