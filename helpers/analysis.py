"""Models that need no GPU, for predicting and explaining what a kernel does: the global-memory traffic its tile
requests, shared-memory bank conflicts, fragment addressing, tile orders and waves, and the instructions the compiler
emitted (read from a recorded ``cuobjdump -sass`` listing). A kernel here is a registry entry (helpers.kernels): the
models read its ``traffic_tile`` and formats, never launch it.
"""
from __future__ import annotations

import math
import re

import numpy as np

from .paths import kernel_dir


# --------------------------------------------------------------------------- traffic model
def tile_traffic_bytes(M: int, N: int, K: int, bm: int, bn: int, elem_in: int = 2, elem_out: int = 4) -> float:
    """Bytes that bm x bn tiles of C request from global memory if nothing is shared between tiles: each reads its
    rows of A and columns of B once and writes its piece of C once. Per FLOP: (1/bm + 1/bn) elem_in / 2 for A and B."""
    return float(M * K * math.ceil(N / bn) * elem_in + K * N * math.ceil(M / bm) * elem_in + M * N * elem_out)


def traffic_bytes(kernel, M: int, N: int, K: int) -> float:
    """tile_traffic_bytes for a registered kernel: its traffic tile and its input and output element sizes."""
    bm, bn = kernel.traffic_tile
    return tile_traffic_bytes(M, N, K, bm, bn, np.dtype(kernel.in_dtype).itemsize,
                              np.dtype(kernel.out_dtype).itemsize)


def intensity(kernel, M: int, N: int, K: int) -> float:
    """FLOP per byte of requested global-memory traffic (traffic_bytes)."""
    return 2.0 * M * N * K / traffic_bytes(kernel, M, N, K)


# --------------------------------------------------------------------------- tile order (lesson 6)
def tile_order(tiles_m: int, tiles_n: int, order: str = "plain", group_m: int = 8, cluster: int = 1) -> list:
    """The tiles (tm, tn) in the order lesson 6's persistent kernels walk them (their tile_of()): work
    unit t = 0, 1, ... is a column of `cluster` tiles (tm = cluster * um + rank); 'plain' takes the units row by row,
    'grouped' takes group_m tile rows at a time, column by column. CTA c of a grid of G takes units c, c + G, ...: the
    first G units are the first wave."""
    units_m = -(-tiles_m // cluster)
    out = []
    for t in range(units_m * tiles_n):
        if order == "plain":
            um, un = divmod(t, tiles_n)
        elif order == "grouped":
            group = group_m // cluster
            first = t // (group * tiles_n) * group
            rows = min(units_m - first, group)
            inside = t % (group * tiles_n)
            um, un = first + inside % rows, inside // rows
        else:
            raise ValueError(f"order {order!r}: 'plain' or 'grouped'")
        out += [(um * cluster + r, un) for r in range(cluster)]
    return out


def wave_footprint(tiles: list, bm: int = 128, bn: int = 256) -> dict:
    """For the tiles of one wave: the distinct rows of A and columns of B they read, and the bytes of FP16 A and B
    per unit of K they ask for, against those distinct bytes (what L2 can serve from one copy of each)."""
    rows = {tm for tm, _ in tiles}
    cols = {tn for _, tn in tiles}
    return {"tiles": len(tiles), "a_rows": len(rows) * bm, "b_cols": len(cols) * bn,
            "requested_per_k": 2 * len(tiles) * (bm + bn), "distinct_per_k": 2 * (len(rows) * bm + len(cols) * bn)}


def epilogue_store_wavefronts(swizzle: bool, banks: int = 32) -> int:
    """Shared-memory wavefronts of one float2 store of rung 13's epilogue: lane (g = lane / 4, t = lane % 4) writes
    row g, columns 2t, 2t + 1 of a box of 32 floats per row; with the 128-byte swizzle, 16-byte chunk q of row r sits
    at chunk q ^ (r % 8). The count: the most distinct 4-byte words any one bank must deliver."""
    words: dict[int, set] = {}
    for lane in range(32):
        g, t = divmod(lane, 4)
        q, within = (2 * t) // 4, (2 * t) % 4
        chunk = q ^ (g % 8) if swizzle else q
        for w in range(2):
            word = g * 32 + chunk * 4 + within + w           # 4-byte word index in the box
            words.setdefault(word % banks, set()).add(word)
    return max(len(v) for v in words.values())


# --------------------------------------------------------------------------- bank conflicts
def bank_ways(row_stride_bytes: int, rows: int = 8, access_bytes: int = 16, banks: int = 32,
              bank_bytes: int = 4) -> int:
    """How many times the busiest bank is hit when `rows` lanes each read `access_bytes` from consecutive rows
    `row_stride_bytes` apart (one phase of ldmatrix / a 16-byte fragment load). 1 means conflict-free."""
    hits = [0] * banks
    for r in range(rows):
        start = r * row_stride_bytes // bank_bytes
        for w in range(access_bytes // bank_bytes):
            hits[(start + w) % banks] += 1
    return max(hits)


def smem_conflicts(pad: int) -> dict:
    """Conflict ways of the fragment loads from As (128 x (32 + pad)) and Bs (32 x (128 + pad)), FP16."""
    return {"pad_halves": pad, "A_row_bytes": (32 + pad) * 2, "B_row_bytes": (128 + pad) * 2,
            "A_ways": bank_ways((32 + pad) * 2), "B_ways": bank_ways((128 + pad) * 2)}


def pad_options(pads=(0, 2, 4, 8, 16)) -> list[dict]:
    """For each padding (in halves): bank conflicts of the fragment loads, and whether WMMA's rules still hold (ldm
    a multiple of 8 halves, every fragment pointer 32-byte aligned)."""
    out = []
    for pad in pads:
        lda, ldb = 32 + pad, 128 + pad
        offs = [(m * lda + kk) * 2 for m in range(0, 128, 16) for kk in (0, 16)]
        offs += [(kk * ldb + n) * 2 for kk in (0, 16) for n in range(0, 128, 16)]
        c = smem_conflicts(pad)
        out.append({"pad_halves": pad, "A_ways": c["A_ways"], "B_ways": c["B_ways"],
                    "ldm_ok": lda % 8 == 0 and ldb % 8 == 0, "aligned_32B": all(o % 32 == 0 for o in offs),
                    "legal": lda % 8 == 0 and ldb % 8 == 0 and all(o % 32 == 0 for o in offs)})
    return out


# --------------------------------------------------------------------------- ldmatrix addressing
def ldmatrix_fragments(kind: str) -> list[list[tuple[int, int]]]:
    """Replays rung 6's ldmatrix addressing (kernels/ladder.cu): for each lane, the (row, col) of the 16x16 A tile
    (kind 'a', ldmatrix.x4) or (k, n) of the B tile (kind 'b', ldmatrix.x4.trans, two n8 tiles) in each of its
    fragment halves, in PTX order. PTX ISA: lanes 8i..8i+7 give the row addresses of 8x8 matrix i; without .trans
    lane l receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i in register i; with .trans, rows 2(l%4), 2(l%4)+1
    of column l/4. The kernel's address for lane L: row L % 16, column (L / 16) * 8."""
    def addr(L):
        return L % 16, (L // 16) * 8

    out = []
    for lane in range(32):
        cells = []
        for i in range(4):
            for h in range(2):
                if kind == "a":
                    r0, c0 = addr(8 * i + lane // 4)
                    cells.append((r0, c0 + 2 * (lane % 4) + h))
                elif kind == "b":
                    r0, c0 = addr(8 * i + 2 * (lane % 4) + h)
                    cells.append((r0, c0 + lane // 4))
                else:
                    raise ValueError("kind must be 'a' or 'b'")
        out.append(cells)
    return out


# --------------------------------------------------------------------------- recorded compiler output
SASS_OPS = ("LDG", "LDGSTS", "UTMALDG", "STS", "LDS", "LDSM", "HMMA", "HGMMA", "BAR", "SYNCS")


def sass_instructions(path):
    """(kernel, address, text, opcode) for every instruction of a `cuobjdump -sass` listing, in order: kernel the
    last "Function :" name seen, opcode the mnemonic without its predicate ("@P0 LDG.E ..." -> "LDG.E")."""
    kernel = None
    for line in open(path):
        s = line.strip()
        if s.startswith("Function :"):
            kernel = s.split(":", 1)[1].strip()
            continue
        if not s.startswith("/*") or "*/" not in s:
            continue
        body = s.split("*/", 1)[1].split("/*")[0].strip().rstrip(";").strip()
        words = body.split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        yield kernel, s[2:6], body, op


def sass_opcode_counts(path) -> dict[str, dict[str, int]]:
    """{kernel: {opcode family: static count}} from a `cuobjdump -sass` listing: how many of each instruction the
    compiler emitted (not how often they run); families (LDS.U16 -> LDS) of SASS_OPS only. An instruction predicated
    on @!PT never executes (PT is always true: ptxas emits `@!PT LDS RZ, [RZ]` before rungs 5-6's LDGSTS) and is
    not counted."""
    out: dict[str, dict[str, int]] = {}
    for kernel, _, text, op in sass_instructions(path):
        if kernel is None:
            continue
        counts = out.setdefault(kernel, {o: 0 for o in SASS_OPS})
        if text.split()[0] == "@!PT":
            continue
        fam = op.split(".")[0]
        if fam in counts:
            counts[fam] += 1
    return out


# --------------------------------------------------------------------------- pictures' models
def kernel_defines(filename: str) -> dict[str, int]:
    """The integer ``#define NAME value`` lines of kernels/<filename> (the first of each), so that a picture of a
    kernel's tiles is drawn from the numbers it compiles with."""
    out: dict[str, int] = {}
    for m in re.finditer(r"^\s*#define\s+([A-Z_][A-Z0-9_]*)\s+(\d+)\b", (kernel_dir() / filename).read_text(), re.M):
        out.setdefault(m.group(1), int(m.group(2)))
    return out


def bank_map(row_stride_bytes: int, rows: int = 8, access_bytes: int = 16, banks: int = 32,
             bank_bytes: int = 4) -> list[list[int]]:
    """The banks each of `rows` consecutive rows (row_stride_bytes apart) hits when each reads `access_bytes` at the
    same column: the model behind bank_ways."""
    return [[(r * row_stride_bytes // bank_bytes + w) % banks for w in range(access_bytes // bank_bytes)]
            for r in range(rows)]


def swizzle_128b(rows: int = 8, chunks: int = 8) -> list[list[int]]:
    """The 128-byte swizzle of TMA (CU_TENSOR_MAP_SWIZZLE_128B): position[r][q] is where 16-byte chunk q
    of row r of a 128-byte-wide tile is stored in that row, q XOR (r mod 8)."""
    return [[q ^ (r % 8) for q in range(chunks)] for r in range(rows)]


def stmatrix_pieces() -> list[list[tuple[int, int]]]:
    """Replays rung 14's epilogue (kernels/hopper_rung14_sm90a.cu, store_slice_tma): for each lane, the (row, col) of
    the warp's 16 x 16 piece of C that each of its 8 FP16 values lands on after one stmatrix.x4, in register order.
    Lane l names row l % 8 of matrix m = l / 8 at piece row (m & 1) * 8 + l % 8, column block m >> 1; stmatrix
    (PTX ISA) stores register i of lane l at row l / 4, columns 2 (l % 4), +1 of matrix i."""
    def origin(m):                                 # where 8 x 8 matrix m starts in the piece (the address lanes)
        return (m & 1) * 8, (m >> 1) * 8

    out = []
    for lane in range(32):
        cells = []
        for i in range(4):
            r0, c0 = origin(i)
            cells += [(r0 + lane // 4, c0 + 2 * (lane % 4) + h) for h in range(2)]
        out.append(cells)
    return out


def accumulator_owner(row: int, col: int) -> int:
    """The lane whose wgmma accumulators hold element (row, col) of a warp's 16-row slice (PTX ISA, wgmma D
    fragments: lane g * 4 + t holds rows g and g + 8, columns 8 j + 2 t and + 1)."""
    return (row % 8) * 4 + (col % 8) // 2


def split_k_units(M: int, N: int, K: int, ctas: int, splits: int, bm: int = 128, bn: int = 256) -> list[list]:
    """Rungs 14-15: per CTA of a persistent grid of `ctas`, the (tile, k0, k1) it multiplies, in order, for an
    M x N x K product cut into `splits` parts of K (work unit t = part * tiles + tile; CTA c takes c, c + ctas, ...)."""
    tiles = -(-M // bm) * -(-N // bn)
    ktiles = -(-K // 64)
    per = -(-ktiles // splits)
    out = [[] for _ in range(ctas)]
    for t in range(tiles * splits):
        part, tile = divmod(t, tiles)
        out[t % ctas].append((tile, part * per * 64, min(K, (part + 1) * per * 64)))
    return out


def tail_split_work(M: int, N: int, K: int, ctas: int, dp: int | None, splits: int, cluster: int = 2,
                    group_m: int = 8) -> list[list]:
    """Rungs 14 and 16: per CTA of a persistent grid of `ctas` (clusters of `cluster`), the (tile, k0, k1) it
    multiplies, in order. Units (columns of `cluster` tiles, grouped order) below dp are whole; each after them is cut
    into `splits` parts of K (helpers.kernels.tail_split_plan; dp = None: all whole). Cluster c takes units c,
    c + ctas / cluster, ..."""
    tiles_m, tiles_n = -(-M // 128), -(-N // 256)
    order = tile_order(tiles_m, tiles_n, "grouped", group_m=group_m, cluster=cluster)
    units, groups, ktiles = len(order) // cluster, ctas // cluster, -(-K // 64)
    dp = units if dp is None else dp
    per = -(-ktiles // splits)
    tail = units - dp
    work = []
    for t in range(dp + tail * splits):
        if t < dp:
            work.append((t, 0, K))
        else:
            part, u = divmod(t - dp, tail)
            work.append((dp + u, part * per * 64, min(K, (part + 1) * per * 64)))
    out = [[] for _ in range(ctas)]
    for i, (u, k0, k1) in enumerate(work):
        c = i % groups
        for r in range(cluster):
            tm, tn = order[u * cluster + r]
            if tm < tiles_m:
                out[c * cluster + r].append((tm * tiles_n + tn, k0, k1))
    return out


def sectors_per_row(row_bytes: int, segment: int = 128, sector: int = 32, rows: int = 64) -> float:
    """The 32-byte sectors that one `segment`-byte piece of each row (a TMA box row) touches, averaged over `rows`
    consecutive rows `row_bytes` apart, the first starting on a sector: 4.0 when rows are whole sectors."""
    total = 0
    for r in range(rows):
        start = r * row_bytes
        total += (start + segment - 1) // sector - start // sector + 1
    return total / rows


def vec16_copy_map(rows: int, cols: int, threads: int, vec: int = 8) -> list[tuple[int, int, int, int]]:
    """Rung 4's copy of one rows x cols tile (kernels/ladder.cu, ladder_vec16): each thread moves `vec` halves
    (16 bytes) per uint4, chunk v = tid, tid + threads, ... at row v // (cols // vec), column (v % (cols // vec)) * vec.
    Returns (thread, pass, row, first column) for every chunk, in chunk order."""
    per_row = cols // vec
    if cols % vec or (rows * per_row) % threads:
        raise ValueError(f"a {rows} x {cols} tile is not whole chunks of {vec} halves for {threads} threads")
    return [(v % threads, v // threads, v // per_row, (v % per_row) * vec) for v in range(rows * per_row)]
