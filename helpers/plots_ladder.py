"""Lesson 5's pictures, drawn from the numbers the kernels compile with: tiles, banks, swizzles, fragments,
the cp.async pipeline."""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from .analysis import bank_map
from .plot_style import COLORS, _legend_beside, apply_style


def cp_async_pipeline(settings: list[tuple[int, int]], *, ktiles: int = 8, title: str = ""):
    """Rung 5's cp.async pipeline as a schedule of equal iterations, one panel per (STAGES, WAIT_GROUP): K-tile
    t lives in stage t % STAGES, its copy issued STAGES - 1 iterations before it is multiplied, and
    wait_group WAIT_GROUP at iteration kt lands every tile up to kt + STAGES - 2 - WAIT_GROUP."""
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


def block_warp_tiles(bm: int, bn: int, wm: int, wn: int, frag: int = 16, bk: int | None = None):
    """Rung 2's block tile of C (BM x BN) cut into warp tiles (WM x WN, numbered as the kernel does) and warp
    0's WMMA fragments, beside the slices of A and B the block copies per K step (BK)."""
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
    """Rung 3: the shared-memory banks each of `rows` consecutive rows hits when every row reads `access_bytes`
    at the same column, one panel per {label: row stride in bytes} (helpers.analysis.bank_map)."""
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
    """TMA's 128-byte swizzle: table[r][q] is where 16-byte chunk q of row r is stored
    (helpers.analysis.swizzle_128b); beside it, the same rows unswizzled."""
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


def fragment_owners(frags, *, title: str = "", xlabel: str = "column (k)", ylabel: str = "row (m)",
                    legend: str = "a{lo}, a{hi}: 8 x 8 matrix {i}"):
    """Rung 6: the lane that holds each element of a fragment after ldmatrix.x4 (frags: lane -> its (row, col)
    elements, helpers.analysis.ldmatrix_fragments), coloured by the 8 x 8 matrix it arrives in."""
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


def vec16_copies(bm: int, bn: int, bk: int, threads: int, pad: int, vec: int = 8):
    """Rung 4: which thread copies which 16 bytes (`vec` halves, one uint4) of the A tile (bm x bk) and the B tile
    (bk x bn) into shared memory, from helpers.analysis.vec16_copy_map; coloured by warp, the second pass over
    the tile (chunk tid + threads) lighter, each row's `pad` halves of padding grey (never copied)."""
    from .analysis import vec16_copy_map
    apply_style()
    colors = COLORS[:7] + ["#999999"]                      # no black: the thread numbers stay readable
    fig = plt.figure(figsize=(12, 7.4))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.25, 3.2), height_ratios=(1, 1.1))
    axes = {"A": fig.add_subplot(grid[:, 0]), "B": fig.add_subplot(grid[0, 1])}
    for name, rows, cols in (("A", bm, bk), ("B", bk, bn)):
        ax, per = axes[name], cols // vec
        for t, p, r, c in vec16_copy_map(rows, cols, threads, vec):
            ax.add_patch(Rectangle((c, r), vec, 1, facecolor=colors[(t // 32) % len(colors)],
                                   alpha=0.9 if p == 0 else 0.35, edgecolor="white", linewidth=0.5))
            if name == "B" and r < 2:                 # B's first two rows: each chunk's thread
                ax.text(c + vec / 2, r + 0.5, str(t), ha="center", va="center", fontsize=7)
        ax.add_patch(Rectangle((cols, 0), pad, rows, facecolor="0.9", edgecolor="0.5", hatch="//", linewidth=0.6))
        ax.set_xlim(0, cols + pad)
        ax.set_ylim(rows, 0)
        ax.set_xticks(range(0, cols + pad + 1, vec), [str(x) for x in range(0, cols + pad + 1, vec)], fontsize=8)
        ticks = range(0, rows + 1, 8 if name == "A" else 2)
        ax.set_yticks(ticks, [str(y) for y in ticks], fontsize=8)
        ax.set_xlabel("column (halves)")
        ax.set_ylabel("row")
        ax.grid(False)
        sep = "\n" if name == "A" else " "
        ax.set_title(f"{name}s: {rows} x {cols} (+{pad} pad);{sep}thread t: row t // {per},{sep}columns {vec}(t % {per})"
                     f" to {vec}(t % {per}) + {vec - 1};\nthen the same {threads // per} rows lower",
                     loc="left", fontsize=10)
    handles = [matplotlib.patches.Patch(color=colors[w % len(colors)], alpha=0.9,
                                        label=f"warp {w}: threads {32 * w}-{32 * w + 31}")
               for w in range(threads // 32)]
    handles += [matplotlib.patches.Patch(color=colors[0], alpha=0.35, label=f"lighter: second pass (chunk tid + {threads})"),
                matplotlib.patches.Patch(facecolor="0.9", hatch="//", edgecolor="0.5", label="padding, not copied")]
    leg = fig.add_subplot(grid[1, 1])
    leg.axis("off")
    leg.legend(handles=handles, loc="center", ncol=2, fontsize=10, frameon=False)
    fig.suptitle(f"rung 4: which thread copies which 16 bytes ({vec} halves, one uint4) of a K step's tiles "
                 f"({threads} threads; numbers in Bs: each chunk's thread)", x=0.01, ha="left", fontsize=12)
    fig.tight_layout()
    return fig
