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
