"""Figures only lesson 6's research notebook draws (lab/notebooks/06_hopper_research.py): who computes which part of
the skinny tile, the C^T tile, how full the waves are per tile width, and where TMA box rows fall in 128-byte lines."""
from __future__ import annotations

import matplotlib.pyplot as plt

from helpers.plots import COLORS, apply_style


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
    ax.set_title(f"{title}\n{source}", loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def box_rows_in_lines(row_bytes: list[int], *, rows: int = 8, segment: int = 128, line: int = 128, sector: int = 32):
    """Lesson 6, Appendix D: where the first `segment` bytes of each of `rows` consecutive matrix rows fall
    (one TMA box row: 64 FP16 values), against the 128-byte lines and 32-byte sectors of memory, for each row
    stride in `row_bytes` (one panel each; the matrix starts on a line). A piece that starts inside a line spans
    two lines: two L2 requests instead of one. Each panel's title gives the lines and sectors per piece, averaged
    over the rows (helpers.analysis.sectors_per_row)."""
    from matplotlib.patches import Rectangle

    from helpers.analysis import sectors_per_row

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

