"""Lesson 2's pictures (matplotlib, loaded when one is drawn).

Fragment ownership grids (``plot_fragment_maps``), how the naive kernel's warps and blocks cover C
(``plot_tile_mapping``), one mma_sync as D = A x B + C (``plot_mma_tile``), one warp's K loop
(``plot_k_loop``), one mma_sync as the HMMA instructions ptxas made of it (``plot_hmma_split``), error
against size (``plot_error_vs_size``) and the edge-corruption masks (``plot_edge_masks``).
"""
from __future__ import annotations

import math

import numpy as np

from .wmma_ptx import hmma_split, holders_grid, owner_grid, warp_tile


def _lane_colors():
    import matplotlib.pyplot as plt

    # 32 lanes: 8 groups of 4 (PTX groupID) -> 8 hues, 4 shades each
    base = plt.get_cmap("tab20b").colors + plt.get_cmap("tab20c").colors
    return [base[(g % 10) * 4 + t] for g in range(8) for t in range(4)]


def draw_owner_grid(ax, held, title: str, shape=(16, 16)):
    """One grid: each element coloured by the lowest lane holding it, with its number (bold where more
    than one lane holds it)."""
    from matplotlib.colors import ListedColormap

    owners = owner_grid(held, shape)
    count = holders_grid(held, shape)
    cmap = ListedColormap(["#ffffff"] + _lane_colors())
    ax.imshow(owners + 1, cmap=cmap, vmin=0, vmax=32, interpolation="nearest")
    for r in range(shape[0]):
        for c in range(shape[1]):
            if owners[r, c] >= 0:
                ax.text(c, r, str(owners[r, c]), ha="center", va="center", fontsize=6.5,
                        fontweight="bold" if count[r, c] > 1 else "normal")
    ax.set_xticks(range(0, shape[1], 4))
    ax.set_yticks(range(0, shape[0], 4))
    ax.set_xticks(np.arange(-0.5, shape[1], 1), minor=True)
    ax.set_yticks(np.arange(-0.5, shape[0], 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)
    ax.grid(which="major", visible=False)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("column")
    ax.set_ylabel("row")


def plot_fragment_maps(panels: dict, suptitle: str, source: str):
    """panels: {title: held-lists}; one grid per panel, side by side."""
    import matplotlib.pyplot as plt

    from ..plots import apply_style

    apply_style()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 5.0))
    for ax, (title, held) in zip(np.atleast_1d(axes), panels.items()):
        draw_owner_grid(ax, held, title)
    fig.suptitle(f"{suptitle}\n{source}", fontsize=12, x=0.01, ha="left")
    fig.tight_layout()
    return fig


def plot_tile_mapping(M: int, N: int, name: str = "wmma_gemm_naive"):
    """C (M x N) cut into 16x16 tiles, coloured by thread block, each labelled with the warp that computes it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..kernels import KERNELS
    from ..plots import COLORS, apply_style

    spec = KERNELS[name]
    block = spec.block
    grid = spec.grid(M, N)
    apply_style()
    fig, ax = plt.subplots(figsize=(10, 6.4))
    for by in range(grid[1]):
        for bx in range(grid[0]):
            color = COLORS[(bx + 3 * by) % 6]
            for wy in range(block[1]):
                r0, c0 = (by * block[1] + wy) * 16, bx * 16
                if r0 >= M or c0 >= N:
                    continue
                ax.add_patch(Rectangle((c0, r0), 16, 16, facecolor=color, alpha=0.30 + 0.25 * (wy % 2),
                                       edgecolor="white", linewidth=0.8))
                ax.text(c0 + 8, r0 + 8, f"w{wy}", ha="center", va="center", fontsize=7.5)
            ax.add_patch(Rectangle((bx * 16, by * block[1] * 16), 16, block[1] * 16, fill=False,
                                   edgecolor="black", linewidth=1.6))
    ax.set_xticks([16 * bx + 8 for bx in range(grid[0])], [str(bx) for bx in range(grid[0])], fontsize=9)
    ax.set_yticks([block[1] * 16 * (by + 0.5) for by in range(grid[1])], [str(by) for by in range(grid[1])])
    ax.xaxis.set_ticks_position("top")
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(f"blockIdx.x (one 16-column strip of C each; N = {N})", fontsize=11)
    ax.set_ylabel(f"blockIdx.y (128 rows of C each; M = {M})", fontsize=11)
    ax.set_xlim(0, N)
    ax.set_ylim(M, 0)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_title(f"{name}: block dim3{block}, grid dim3{grid}\nblack box = one thread block "
                 f"({block[0] * block[1]} threads); tile wY = the warp with threadIdx.y = Y",
                 loc="left", fontsize=11, pad=12)
    fig.tight_layout()
    return fig


def _grid_box(ax, x, y, w, h, label, color, alpha=0.25, cells=None, fontsize=12):
    """A matrix as a box at (x, y) (top left) of w x h, its label inside; cells=(rows, cols) draws its grid."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, alpha=alpha, edgecolor="black", linewidth=1.4))
    if cells:
        for i in range(1, cells[0]):
            ax.plot([x, x + w], [y + i * h / cells[0]] * 2, color="white", linewidth=0.6)
        for j in range(1, cells[1]):
            ax.plot([x + j * w / cells[1]] * 2, [y, y + h], color="white", linewidth=0.6)
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=fontsize)


def _blank_axes(fig_size):
    import matplotlib.pyplot as plt

    from ..plots import apply_style

    apply_style()
    fig, ax = plt.subplots(figsize=fig_size)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def plot_mma_tile(name: str = "wmma_gemm_naive"):
    """D = A x B + C for one mma_sync of `name`: the four tiles with their shapes and formats, and one element of D
    as the dot product of a row of A and a column of B, plus C's element."""
    from matplotlib.patches import Rectangle

    from ..kernels import KERNELS
    from ..plots import COLORS

    m, n, k = warp_tile(name)
    fig, ax = _blank_axes((12.5, 4.4))
    gap = 5
    xs = [0, k + 2 * gap, k + n + 4 * gap, k + 2 * n + 6 * gap]        # D = A x B + C, left to right
    y = 2
    _grid_box(ax, xs[0], y, n, m, "", COLORS[5], cells=(m, n))
    _grid_box(ax, xs[1], y, k, m, "", COLORS[0], cells=(m, k))
    _grid_box(ax, xs[2], y, n, k, "", COLORS[2], cells=(k, n))
    _grid_box(ax, xs[3], y, n, m, "", COLORS[5], cells=(m, n))
    i, j = 3, 10                                              # one element of D, and what it is made of
    for x0, (r, c, w, h) in zip(xs, [(i, j, 1, 1), (i, 0, k, 1), (0, j, 1, k), (i, j, 1, 1)]):
        ax.add_patch(Rectangle((x0 + c, y + r), w, h, facecolor=COLORS[1], alpha=0.85, edgecolor="black"))
    spec = KERNELS[name]
    ab, cd = spec.inputs.upper(), spec.acc.upper()
    labels = [f"D: {m}×{n}, {cd}", f"A: {m}×{k}, {ab}", f"B: {k}×{n}, {ab}", f"C: {m}×{n}, {cd}"]
    for x0, w, lab in zip(xs, [n, k, n, n], labels):
        ax.text(x0 + w / 2, y + max(m, k) + 2.2, lab, ha="center", va="center", fontsize=13)
    for x0, sym in zip([xs[0] + n + gap, xs[1] + k + gap, xs[2] + n + gap], ["=", "×", "+"]):
        ax.text(x0, y + m / 2, sym, ha="center", va="center", fontsize=26)
    ax.set_xlim(-1, xs[3] + n + 1)
    ax.set_ylim(y + max(m, k) + 4, -3.5)
    ax.set_title(f"One mma_sync (m{m}n{n}k{k}) of one warp: D[{i}][{j}] = row {i} of A · column {j} of B "
                 f"+ C[{i}][{j}]: {k} multiply-adds", loc="left", fontsize=13)
    fig.tight_layout()
    return fig


def plot_k_loop(M: int = 64, N: int = 64, K: int = 64, warp: tuple = (1, 2), name: str = "wmma_gemm_naive"):
    """The naive kernel's K loop for one warp: its tile of C (row block, column block = `warp`), the strip of A
    (its 16 rows, all of K) and of B (all of K, its 16 columns) it walks, one 16-wide step per mma_sync."""
    from matplotlib.patches import Rectangle

    from ..plots import COLORS

    tm, tn, tk = warp_tile(name)
    r0, c0 = warp[0] * tm, warp[1] * tn
    steps = K // tk
    fig, ax = _blank_axes((10, 7.8))
    gap = 6
    ax_b, ay_c = K + gap, K + gap                            # B above C, A left of C (the textbook picture)
    _grid_box(ax, 0, ay_c, K, M, "", "0.85", alpha=0.5)             # A: M x K
    _grid_box(ax, ax_b, 0, N, K, "", "0.85", alpha=0.5)             # B: K x N
    _grid_box(ax, ax_b, ay_c, N, M, "", "0.85", alpha=0.5)          # C: M x N
    shades = [0.35 + 0.5 * s / max(steps - 1, 1) for s in range(steps)]
    for s in range(steps):
        ax.add_patch(Rectangle((s * tk, ay_c + r0), tk, tm, facecolor=COLORS[0], alpha=shades[s], edgecolor="black"))
        ax.text(s * tk + tk / 2, ay_c + r0 + tm / 2, f"k={s * tk}", ha="center", va="center", fontsize=10,
                color="white")
        ax.add_patch(Rectangle((ax_b + c0, s * tk), tn, tk, facecolor=COLORS[2], alpha=shades[s], edgecolor="black"))
        ax.text(ax_b + c0 + tn / 2, s * tk + tk / 2, f"k={s * tk}", ha="center", va="center", fontsize=10,
                color="white")
    ax.add_patch(Rectangle((ax_b + c0, ay_c + r0), tn, tm, facecolor=COLORS[1], alpha=0.9, edgecolor="black"))
    ax.text(ax_b + c0 + tn / 2, ay_c + r0 + tm / 2, "acc", ha="center", va="center", fontsize=10, color="white")
    ax.text(K / 2, ay_c + M + 3, f"A: {M}×{K}", ha="center", va="center", fontsize=13)
    ax.text(ax_b + N + 2, K / 2, f"B: {K}×{N}", ha="left", va="center", fontsize=13)
    ax.text(ax_b + N / 2, ay_c + M + 3, f"C: {M}×{N}", ha="center", va="center", fontsize=13)
    ax.set_xlim(-1, ax_b + N + 12)
    ax.set_ylim(ay_c + M + 5, -1)
    ax.set_title(f"{name}: the warp computing C[{r0}:{r0 + tm}, {c0}:{c0 + tn}] walks K = {K} in {steps} steps "
                 f"of {tk}.\nStep k loads A[{r0}:{r0 + tm}, k:k+{tk}] and B[k:k+{tk}, {c0}:{c0 + tn}] from global "
                 f"memory;\nmma_sync adds their product to acc, held in the warp's registers", loc="left",
                 fontsize=12)
    fig.tight_layout()
    return fig


def plot_hmma_split(kernel: str = "wmma_gemm_naive"):
    """One mma_sync as ptxas compiled it: the tile's two HMMA instructions from the recorded SASS, each one the
    whole A, half of B's columns and the same half of C/D's, with the registers each reads and writes."""
    from matplotlib.patches import Rectangle

    from ..plots import COLORS

    m, n, k = warp_tile(kernel)
    parts = hmma_split(kernel)
    fig, ax = _blank_axes((12.5, 5.2))
    gap = 5
    xs = [0, n + 2 * gap, n + k + 4 * gap]                   # D = A x B (+ C, same registers as D here)
    y = 3
    _grid_box(ax, xs[1], y, k, m, f"A: {m}×{k}\nwhole, in both", COLORS[0], alpha=0.35, fontsize=11)
    for p, color in zip(parts, (COLORS[2], COLORS[4])):
        c0, c1 = p["cols"]
        ax.add_patch(Rectangle((xs[0] + c0, y), c1 - c0, m, facecolor=color, alpha=0.55, edgecolor="black"))
        ax.add_patch(Rectangle((xs[2] + c0, y), c1 - c0, k, facecolor=color, alpha=0.55, edgecolor="black"))
        ax.text(xs[0] + (c0 + c1) / 2, y + m / 2, f"cols\n{c0}-{c1 - 1}", ha="center", va="center", fontsize=10)
        ax.text(xs[2] + (c0 + c1) / 2, y + k / 2, f"cols\n{c0}-{c1 - 1}", ha="center", va="center", fontsize=10)
    ax.text(xs[0] + n / 2, y - 1.5, f"D (and C): {m}×{n}", ha="center", fontsize=12)
    ax.text(xs[2] + n / 2, y - 1.5, f"B: {k}×{n}", ha="center", fontsize=12)
    ax.text(xs[0] + n + gap, y + m / 2, "=", ha="center", va="center", fontsize=24)
    ax.text(xs[1] + k + gap, y + m / 2, "×", ha="center", va="center", fontsize=24)
    for i, (p, color) in enumerate(zip(parts, (COLORS[2], COLORS[4]))):
        ax.text(0, y + max(m, k) + 2.5 + 2.6 * i,
                f"{p['text']}:  D {p['d']} = A {p['a']} × B {p['b']} + C {p['c']}  -> columns "
                f"{p['cols'][0]}-{p['cols'][1] - 1}", fontsize=11.5, va="center", family="monospace",
                bbox=dict(facecolor=color, alpha=0.35, edgecolor="none"))
    ax.set_xlim(-1, xs[2] + n + 1)
    ax.set_ylim(y + max(m, k) + 2.5 + 2.6 * len(parts), -1.5)
    ax.set_title(f"One m{m}n{n}k{k} mma_sync in the SASS of {kernel} (sm_90, recorded): "
                 f"{len(parts)} × {parts[0]['opcode']}", loc="left", fontsize=13)
    fig.tight_layout()
    return fig


def plot_error_vs_size(rows, source: str = ""):
    """Relative error against square size n (log-log) from sweep rows: wmma_gemm_naive against float64 of the FP32
    inputs and of its own FP16 inputs, the FP32 kernel and cuBLAS FP16, beside FP16's and FP32's unit roundoff."""
    import matplotlib.pyplot as plt

    from ..formats import format_info
    from ..plot_style import _finish, apply_style, size_tick_labels
    from .sweep import series

    apply_style()
    fig, ax = plt.subplots(figsize=(12.5, 5.6))
    sizes = set()
    for k, y, label, style in [("wmma_gemm_naive", "rel_err", "naive WMMA, against the FP32 inputs", "-"),
                               ("wmma_gemm_naive", "rel_err_acc", "naive WMMA, against its own FP16 inputs", "--"),
                               ("gemm_fp32_kernel", "rel_err", "FP32 CUDA-core kernel", "-"),
                               ("cublas_fp16", "rel_err", "cuBLAS FP16 (writes an FP16 C)", ":")]:
        n, e = series(rows, k, y)
        sizes |= set(n)
        if n:
            ax.plot(n, e, marker="o", linestyle=style, label=label)
    for fmt in ("fp16", "fp32"):
        u = format_info(fmt).u
        ax.axhline(u, color="0.4", linestyle=":", linewidth=1.2)
        ax.annotate(f"{fmt.upper()} unit roundoff $2^{{{math.log2(u):.0f}}}$", (0.01, u), xycoords=("axes fraction", "data"),
                    va="bottom", fontsize=10, color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(sizes), size_tick_labels(sorted(sizes)))
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (M = N = K = n)")
    ax.set_ylabel("relative error against float64")
    return _finish(ax, "Error of each kernel against size", source, legend_outside=True)


def plot_edge_masks(rows: dict):
    """rows: {row label: [case dicts with 'mask', 'm', 'n', 'k']}; one image per case."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..plots import apply_style

    apply_style()
    colors = ["#009E73", "#E69F00", "#B2182B"]
    ncol = max(len(v) for v in rows.values())
    fig, axes = plt.subplots(len(rows), ncol, figsize=(4.6 * ncol, 4.3 * len(rows)), squeeze=False)
    for i, (label, cases) in enumerate(rows.items()):
        for j, case in enumerate(cases):
            ax = axes[i][j]
            ax.imshow(np.array(case["mask"]), cmap=ListedColormap(colors), vmin=0, vmax=2,
                      interpolation="nearest")
            ax.set_title(f"{label}\nM={case['m']}, N={case['n']}, K={case['k']}", fontsize=10, loc="left")
            ax.grid(False)
    fig.legend(handles=[Patch(color=c, label=lab) for c, lab in zip(colors, ["correct", "wrong (finite)", "NaN"])],
               loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
