"""Source of notebooks/06_hopper_full_speed.ipynb (run this file, then execute the notebook: see the README)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("06_hopper_full_speed")

# --------------------------------------------------------------------------- title
nb.md("""
# Tensor Cores, WMMA and mixed precision
## 06 · Hopper at full speed: from rung 7 to cuBLAS

Lesson 5 ended at rung 7: `wgmma` fed by the TMA copy engine through mbarriers, at the fraction of
cuBLAS on an H200 printed below. Published hand-written Hopper kernels show that the rest of the
way can be taught one idea at a time. Here are six more rungs. As in lesson 5, each adds **one**
idea, its gain is predicted **before** it is measured, and it is checked against float64 at
sizes that are not multiples of its tiles before it is timed next to cuBLAS.

*Not on a Hopper GPU (or no GPU at all)? Every cell runs: the rungs' arithmetic is emulated with
numpy, and the timings are the ones recorded on an NVIDIA H200, labelled as such.*
""", slide="slide")
nb.notes("""
The kernels are in kernels/hopper_sm90a.cu; rungs 9-13 are one templated body (ws_gemm) with
compile-time switches, and each rung turns on one more switch, so two neighbouring rungs differ by
exactly one idea (tests/test_hopper.py checks it). The predictions are in helpers/kernels.py and
were written before any of these kernels ran.
""")

nb.md("""
## What you will learn

- read B as it is stored: K-major and MN-major operands, the 128-byte swizzle, `wgmma`'s transpose bit;
- warp specialisation: a producer warpgroup, consumer warpgroups, `setmaxnreg`, and a ring of
  full/empty mbarriers waited by phase parity;
- a persistent grid with a tile scheduler, and why the order of the tiles matters for L2;
- thread-block clusters and TMA multicast, and how a cluster kernel is launched from Python;
- an epilogue through shared memory and a TMA store;
- how far each idea went on an H200, and what the Nsight Compute counters say about it.
""", slide="slide")

nb.code("""
import numpy as np
from IPython.display import display

import helpers
from helpers import analysis
from helpers.display import kernel_source, show_kernel
from helpers.exercises import hopper as ex
from helpers.experiments import hopper as H
from helpers.kernels import HOPPER_RUNGS, hopper_ladder

rec = helpers.results.load_latest()          # the recorded GPU measurements
print("recorded data:", rec.label)
""")
nb.code("""
env = helpers.summary()
""", ignore_output=True)
nb.code("""
b = helpers.backend()
why = HOPPER_RUNGS[8].unsupported(b.gpu.cc) if b.is_gpu else "this is the CPU backend"
print("the kernels run here (a Hopper GPU), each rung in its own child process" if why is None else
      f"lesson 6's kernels are sm_90a code and do not run here ({why.removeprefix('it needs ')}): the cells "
      "show the numbers recorded on an H200 and the CPU model of the rungs' arithmetic")
""", slide="subslide", ignore_output=True)
nb.notes("""
The one line that says why nothing runs live; it depends on the machine.
""")

# --------------------------------------------------------------------------- where we start
nb.md("""
## Where lesson 5 ended

The yardstick is the same: cuBLAS FP16 (`cupy.matmul` on float16: FP16 inputs, FP32 accumulation),
timed by the same harness (CUDA events, L2 flushed before every launch, clocks and power recorded).
From the record of lesson 5's ladder:
""", slide="slide")
nb.code("""
from helpers.experiments import ladder as L

lad = rec.meta["experiments"]["ladder"]
for n in L.TIMED_SIZES:
    cub, r7 = (next(r for r in L.timed_rows(lad, n) if r["rung"] == k) for k in (0, 7))
    print(f"n = {n}: cuBLAS {cub['tflops']:.0f} TFLOP/s; rung 7 {r7['tflops']:.0f} ({r7['frac_cublas']:.2f}x), "
          f"its kernel alone {r7['tflops_kernel_only']:.0f} ({r7['frac_cublas_kernel_only']:.2f}x)")
""")
nb.md("""
**The goal of this lesson:** at least **0.90x** cuBLAS at $4096^3$ and **1.00x** at $8192^3$, in
one run, with every rung correct. The gap between "rung 7" and "its kernel alone" is the transpose
of B that rung 7 needs: rung 8 removes it.
""", slide="fragment")

# --------------------------------------------------------------------------- the plan
nb.md("""
## The ladder, and the predictions made before measuring

Each rung keeps rung 7's arithmetic (FP16 in, one FP32 accumulator per output, K walked in order 16
at a time) and changes one thing about how data reaches the Tensor Cores or leaves them.
""", slide="slide")
nb.code("""
rows = [dict(rung=r.rung, kernel=r.name, idea=r.idea, gain=f"x{r.predicted_gain:g}", why=r.why)
        for r in hopper_ladder().values() if r.rung >= 8]
helpers.display.table(rows, ["rung", "kernel", "idea", "gain", "why"],
                      ["rung", "kernel", "adds", "predicted gain", "because"])
""")
nb.code("""
v = {n: next(r for r in L.timed_rows(lad, n) if r["rung"] == 7)["tflops"] for n in (4096, 8192)}
for r in HOPPER_RUNGS.values():
    v = {n: t * r.predicted_gain for n, t in v.items()}
print("predicted at rung 13 (from rung 7's recorded TFLOP/s, times every predicted gain): "
      + ", ".join(f"{t:.0f} TFLOP/s at n = {n}" for n, t in v.items()))
""", slide="subslide")
nb.notes("""
A chain of predictions: if every rung did exactly what it was predicted to do, this is where the
last rung lands. The measurement below is compared with it rung by rung.
""")

# --------------------------------------------------------------------------- correctness
nb.md("""
## One check for every rung

The new rungs need no zero padding: a TMA box that reaches past the edge of A or B is filled with
zeros by the copy engine, and the epilogue writes only elements inside C. Only the rows must be
16-byte multiples (M, N, K multiples of 8: the launcher pads to that). Every rung is checked against
float64 and against the CPU model of its arithmetic (`helpers.emulate.tensor_core_gemm`, rung 7's):
""", slide="slide")
nb.code("""
M, N, K = 257, 520, 136                       # multiples of nothing the kernels tile by
A = helpers.random_matrix(M, K, seed=1).astype(np.float16)
B = helpers.random_matrix(K, N, seed=2).astype(np.float16)
for line in helpers.launch.verdicts(HOPPER_RUNGS.values(), A, B):
    print(line)
""")
nb.notes("""
On the CPU backend this runs the emulation; on an H200 it runs each kernel in a child process.
Either way the verdict lines are identical. tools/hopper_try.py and the recorded experiment check
three odd sizes and the timed sizes.
""")

# --------------------------------------------------------------------------- rung 8
nb.md("""
## Rung 8: B read as it is stored

`wgmma` reads a tile from shared memory in one of two layouts. **K-major**: consecutive elements
of a row of the tile run along K (A row-major is K-major; so is $B^T$). **MN-major**: they run along
M or N, as in B stored row-major ($K \\times N$). For FP16, `wgmma` reads MN-major B when its
*transpose bit* is set, so rung 8 drops rung 7's transpose and loads B as it is: boxes of 64 k-rows
by 64 columns (128 bytes per row).

The **128-byte swizzle**: TMA writes each 128-byte row of a box as eight 16-byte chunks, chunk $q$
of row $r$ at position $q \\oplus (r \\bmod 8)$. Eight rows that a warp reads at the same column then
sit in eight different groups of banks instead of one.
""", slide="slide")
nb.code("""
print("chunk q of row r is stored at position q XOR (r % 8):")
for r in range(8):
    print(f"row {r}:", " ".join(str(q ^ r) for q in range(8)))
""")
nb.notes("""
The swizzle is a property of the tensor map (CU_TENSOR_MAP_SWIZZLE_128B) and of the wgmma
descriptor (swizzle mode 1); both must agree, and the tiles must start on 1024-byte boundaries
(8 rows of 128 bytes), which is why the kernels round the shared-memory base up.
""")

# --------------------------------------------------------------------------- rung 9
nb.md("""
## Rung 9: warp specialisation

Rung 8 still drains the Tensor Cores at every K-tile: all threads wait for their `wgmma`, meet at
`__syncthreads()`, and only then does thread 0 ask TMA for the next stage. Rung 9 gives each
**warpgroup** (4 warps, 128 threads) one job:

- warpgroup 0, the **producer**: one thread issues TMA copies, nothing else;
- warpgroups 1 and 2, the **consumers**: each multiplies a $64 \\times 256$ half of the tile.

They meet at a ring of 4 stages. Stage $s$ has two mbarriers: **full[s]** completes when TMA has
delivered its bytes, **empty[s]** when all 8 consumer warps are done reading it.
""", slide="slide")
nb.md("""
**mbarrier phase.** An mbarrier counts arrivals (and, for TMA, bytes); when the count is reached,
its current *phase* completes and the next one begins. A waiter asks "has the phase with parity
$p$ completed?" (`mbarrier.try_wait.parity`). The ring's $k$-th lap uses parity $k \\bmod 2$, so
parity flips each time the ring wraps. A fresh barrier is in phase 0, and waiting for parity 1 returns
at once: that is how the producer finds every stage empty on its first lap.
""", slide="subslide")
nb.code("""
stages = 4
for kt in range(10):
    s, lap = kt % stages, kt // stages
    print(f"K-tile {kt}: stage {s}, consumers wait full[{s}] for parity {lap % 2}, "
          f"producer waits empty[{s}] for parity {(lap % 2) ^ 1}")
""")
nb.md("""
**setmaxnreg.** A block's registers are split evenly at launch: 384 threads under
`__launch_bounds__(384, 1)` get at most 168 each. The producer needs few, so it gives them back
(`setmaxnreg.dec` to 40) and the consumers, which hold 128 FP32 accumulators each, take them
(`setmaxnreg.inc` to 232). It needs the register cap at entry and each role as one branch of one if/else.
""", slide="subslide")
nb.code("""
regs_at_entry = 65536 // 384 // 8 * 8
print(f"at entry: {regs_at_entry} registers x 384 threads = {regs_at_entry * 384}")
print(f"after setmaxnreg: 40 x 128 + 232 x 256 = {40 * 128 + 232 * 256} (of 65536 per SM)")
""")

# --------------------------------------------------------------------------- rung 10
nb.md("""
## Rung 10: a persistent grid

A **persistent grid** launches only as many CTAs as fit on the GPU at once (here one per SM: the
H200's 132, printed below from the record) and lets each loop over tiles: CTA $c$ takes tiles
$c, c + 132, c + 264, \\dots$ (the *tile scheduler*, `tile_of`). The producer then runs ahead into
the next tile while the consumers store this one, and no CTA is set up or torn down per tile. The price: the last wave may be partly empty,
and a product with few tiles (the skinny one below) leaves most SMs idle whatever the grid.
""", slide="slide")
nb.code("""
sms = rec.meta["gpu"]["sms"]                  # the recorded GPU's SMs: one CTA each
print(f"{rec.gpu_name}: {sms} SMs")
for M, N, K in H.TIMED:
    w, busy = ex.waves(M, N, sms=sms)
    print(f"{M} x {N} x {K}: {-(-M // 128) * -(-N // 256):5d} tiles of 128 x 256 = {w:3d} wave(s) of {sms} CTAs, "
          f"{busy:.0%} of the CTAs busy")
""")

# --------------------------------------------------------------------------- rung 11
nb.md("""
## Rung 11: an L2-aware tile order

The 132 tiles in flight at one moment all read slices of A and B at about the same K. In plain
order they are about one row of tiles: a few rows of A, but **all** of B. Grouped order walks 8 tile
rows column by column, so the wave shares fewer, more reused slices, and L2 (its size printed
below) holds more of what the next tiles need.
""", slide="slide")
nb.code("""
print(f"L2 of the {rec.gpu_name}: {rec.meta['gpu']['l2_bytes'] / 2**20:.0f} MiB")
for order in ("plain", "grouped"):
    w = analysis.wave_footprint(analysis.tile_order(64, 32, order)[:sms])
    print(f"{order:8s} order, n = 8192: the first wave reads {w['a_rows']} rows of A and {w['b_cols']} "
          f"columns of B: {w['distinct_per_k'] / 1e3:.1f} KB per unit of K (requested: "
          f"{w['requested_per_k'] / 1e3:.0f} KB)")
""")
nb.code("""
orders = {f"{o} order": analysis.tile_order(64, 32, o) for o in ("plain", "grouped")}
fig = helpers.plots.tile_orders(orders, wave=sms, title=f"n = 8192: the tiles of the first three waves of {sms} CTAs "
                                "(darkest: the first)")
""", slide="subslide")

# --------------------------------------------------------------------------- rung 12
nb.md("""
## Rung 12: thread-block clusters and TMA multicast

A **cluster** is a group of CTAs that the hardware schedules together on one GPC and that can
reach each other's shared memory. Rung 12 pairs the CTAs on tiles $(2u, n)$ and $(2u + 1, n)$, which
need the same $256$-column slice of B: each loads its own A and **half** of B, and *multicasts* that
half into both CTAs' shared memory. A stage is refilled only when the consumers of **both** CTAs
have freed it, so each consumer warp arrives on both CTAs' `empty` barriers.
""", slide="slide")
nb.code("""
a, b = 128 * 64 * 2, 64 * 256 * 2                  # bytes of A and of B per stage, per tile
print(f"per stage, two tiles: {2 * (a + b) // 1024} KB requested without multicast, "
      f"{(2 * a + b) // 1024} KB with it ({1 - (2 * a + b) / (2 * (a + b)):.0%} less)")
""")
nb.md("""
**Launching a cluster from Python.** CuPy has no cluster launch option. But a kernel that declares
its cluster shape at compile time (`__cluster_dims__(2, 1, 1)`) forms clusters under a plain
`cuLaunchKernel`, which is what CuPy calls. `helpers.launch` does that, and falls back to the
driver's `cuLaunchKernelEx` with the cluster named (through `ctypes`, like the tensor maps) should the
driver refuse; the kernel traps if it finds itself outside a cluster of two.
""", slide="subslide")

# --------------------------------------------------------------------------- rung 13
nb.md("""
## Rung 13: the epilogue through shared memory and a TMA store

Up to rung 12 each consumer writes its $64 \\times 256$ FP32 slice straight from registers: every
store instruction scatters 8 rows of 32 bytes. Rung 13 writes the slice as 8 boxes of
$64 \\times 32$ floats into a swizzled shared-memory buffer, fences the async proxy
(`fence.proxy.async`), meets at a warpgroup barrier, and one thread hands the box to TMA, which
writes whole 128-byte rows and clips at the edge of C. (`stmatrix`, the usual partner of a TMA
store, moves 16-bit elements; this C is FP32.)
""", slide="slide")
nb.code("""
for sw in (False, True):
    print(f"{'with' if sw else 'without'} the 128-byte swizzle: one float2 store of a warp takes "
          f"{analysis.epilogue_store_wavefronts(sw)} shared-memory wavefronts (256 bytes need at least 2)")
""")

# --------------------------------------------------------------------------- the measurement
nb.md("""
## The measurement

Experiment `hopper` (recorded with `python -m helpers.record --update-experiments hopper`) times
cuBLAS FP16 at 2048, 4096, 6144 and 8192 and at two transformer-like shapes, then runs each rung in
its own child process: checked at odd sizes and at every timed shape, then timed next to cuBLAS
measured in the same process. On a Hopper GPU this cell runs a shorter version live (4096 and 8192,
a few minutes); elsewhere it loads the record.
""", slide="slide")
nb.code("""
try:
    out = helpers.run_or_load("hopper", **H.LIVE)
    data, source = out.data, out.source
    print(source)
except helpers.errors.ResultsError as e:
    data, source = None, None
    print(f"not recorded yet: {e.problem} The tables and plots below say so too.")
""", ignore_output=True)
nb.code("""
if data is not None:
    checked = [r for r in data if r["rung"] >= 7 and "passed" in r]
    print(f"{sum(r['passed'] for r in checked)} of {len(checked)} checked launches passed")
    for msg in sorted({r["skipped"] for r in data if "skipped" in r}) + H.errors(data):
        print(msg)
""", ignore_output=True)

nb.code("""
for k in (10, 12):
    row = next((r for r in (data or []) if r["rung"] == k and "resident" in r), None)
    print(f"rung {k}: " + (f"grid of {row['resident']}" + (f"; clusters by {row['launch_path']}" if k == 12 else "")
                           if row else "not recorded yet"))
""", slide="subslide", ignore_output=True)
nb.notes("""
How the persistent grid was sized (one block per SM, or whole clusters that the driver says fit at
once) and how the clusters were launched: plainly (the kernel's __cluster_dims__), or through
cuLaunchKernelEx if the driver refused the plain launch.
""")

nb.md("""
## Prediction and outcome, side by side
""", slide="slide")
nb.code("""
fmt = {"predicted": "g", "measured": ".2f", "tflops": ".0f", "frac_cublas": ".2f", "frac_peak": ".2f"}
cols = ["rung", "idea", "predicted", "measured", "verdict", "tflops", "frac_cublas"]
heads = ["rung", "idea", "predicted gain", "measured gain", "", "TFLOP/s", "x cuBLAS"]
if data is None:
    print("not recorded yet")
else:
    display(helpers.display.table(H.gains(data, 4096), cols, heads, fmt))
""", ignore_output=True)
nb.code("""
if data is not None:
    display(helpers.display.table(H.gains(data, 8192), cols, heads, fmt))
    print(*H.targets(data), sep="\\n")
""", slide="subslide", ignore_output=True)
nb.code("""
if data is not None:
    print(*H.limit_lines(data), sep="\\n")
""", ignore_output=True)
nb.md("""
**Why $8192^3$ misses 1.00x.** Both cuBLAS and the rungs ran under the software power cap at this size
(the clock readings above), so the ratio compares two throttled kernels. The counters name no single
limit: the Tensor Cores are busy most of the time, and the top stall, `barrier`, counts warps waiting at
any barrier; in rungs 12 and 13 the producer warpgroup's three idle warps wait at the final cluster
barrier for the whole kernel, so it does not say the Tensor Cores were starved. Not tried here: more
pipeline stages (four of 48 KB fill the shared memory), more `wgmma` groups in flight, a Hilbert order.
""", slide="fragment")
nb.code("""
if data is not None:
    display(helpers.display.table(H.shape_table(data), ["shape", "cublas", "rung", "tflops", "frac_cublas"],
                                  ["M x N x K", "cuBLAS TFLOP/s", "best rung", "TFLOP/s", "x cuBLAS"],
                                  {"cublas": ".0f", "tflops": ".0f", "frac_cublas": ".2f"}))
""", slide="subslide", ignore_output=True)
nb.notes("""
The transformer-like shapes: M = 8192, N = 28672, K = 4096 (an MLP up-projection for 8192 tokens) and
M = 128, N = K = 8192 (a skinny product: one 128-row strip of tiles, 32 tiles for 132 SMs; split-K
or stream-K would be the next idea there). Shapes not measured in a live run show as empty rows.
""")

nb.md("""
## The ladder
""", slide="slide")
nb.code("""
peak = rec.meta["gpu"]["peaks"]["fp16"]
if data is None:
    print("not recorded yet")
else:
    fig = helpers.plots.ladder(L.timed_by_size(data, (4096, 8192)), peak=peak, source=source)
""", ignore_output=True)

nb.md("""
## Reading the misses

For each rung whose measured gain is off by more than 25%, the explanation written before the
measurement for that direction:
""", slide="slide")
nb.code("""
for g in (H.gains(data, 4096)[1:] if data else []):
    note = H.MISS_NOTES[g["rung"]].get(g["verdict"].split()[0])
    print(f"rung {g['rung']}: {g['verdict']}" + (f": {note}" if note else ""))
""", ignore_output=True)

# --------------------------------------------------------------------------- counters
nb.md("""
## What the counters say

Nsight Compute (`tools/ncu_counters.py`, one launch per rung at $4096^3$, clocks left alone): how busy
the Tensor Cores were, how many bytes came from DRAM, how often L2 had them, beside each rung's TFLOP/s.
""", slide="slide")
nb.code("""
entries, label = H.ncu_rows(data)
if entries:
    fig = helpers.plots.counters_beside(entries, H.NCU_METRICS, source=label)
else:
    print(label)
""", ignore_output=True)
nb.code("""
for e in entries:
    print(f"rung {e['rung']}: top stalls " + ", ".join(f"{s} {v:g}" for s, v in e["top_stalls"][:3]))
""", slide="subslide", ignore_output=True)

# --------------------------------------------------------------------------- exercises
nb.md("""
## Check your understanding

1. **Registers.** If the producer warpgroup kept 56 registers per thread instead of 40, how many could
   each consumer thread take (two consumer warpgroups, 65536 registers per SM, multiples of 8)?
""", slide="slide")
nb.code("""
answer = ...
ex.check_consumer_registers(answer, producer=56)
""")
nb.code("""
answer = (65536 - 56 * 128) // 256 // 8 * 8
ex.check_consumer_registers(answer, producer=56)
""", tags=["solution"])
nb.md("""
2. **Bytes a stage expects.** With N = 520, the third tile column (columns 512-767) has only one box
   of B that starts inside B. How many bytes must the producer announce with `arrive.expect_tx` for
   one stage of that tile?
""", slide="subslide")
nb.code("""
answer = ...
ex.check_stage_bytes(answer, N=520, tn=2)
""")
nb.code("""
answer = 128 * 64 * 2 + 1 * 64 * 64 * 2
ex.check_stage_bytes(answer, N=520, tn=2)
""", tags=["solution"])
nb.md("""
3. **Waves.** How many waves of 132 CTAs does the persistent grid need at $n = 6144$?
""", slide="subslide")
nb.code("""
answer = ...
ex.check_waves(answer, n=6144)
""")
nb.code("""
answer = -(-(6144 // 128) * (6144 // 256) // 132)
ex.check_waves(answer, n=6144)
""", tags=["solution"])

# --------------------------------------------------------------------------- summary
nb.md("""
## Summary

- Read operands as they are stored: TMA boxes of 128-byte rows with the 128-byte swizzle, and
  `wgmma`'s transpose bit for MN-major B; out-of-bounds boxes are filled with zeros, so no padding.
- Warp specialisation separates copying from multiplying: a producer, consumers, a ring of
  full/empty mbarriers waited by phase parity, and `setmaxnreg` to give the consumers the registers.
- A persistent grid and its tile scheduler overlap one tile's epilogue with the next tile's loads;
  the tile order decides how much of A and B L2 can serve.
- Clusters share a tile of B through TMA multicast; a TMA store takes the epilogue off the warps.
- Each step was predicted before it was measured; the misses point at what the model left out.
""", slide="slide")

# --------------------------------------------------------------------------- appendix
nb.md("""
## Appendix A: the code of each rung

The kernels' own lines, as the lesson discusses them (kernels/hopper_sm90a.cu).
""", slide="slide")
nb.code("""
src = kernel_source("hopper_sm90a.cu")
""")
nb.md("### Rung 8: the wgmma descriptors and the kernel", slide="subslide")
nb.code("""
print(src[src.index("// A, \\"K-major\\""):src.index("// ----------------------------------------------------------"
                                                  "----------------- mbarriers")])
""", slide="subslide")
nb.md("""
A descriptor tells `wgmma` where a tile starts and how to step through it: for MN-major B, the
leading byte offset (LBO) is the distance to the next 64 columns (the next box, 8 KB) and the stride
byte offset (SBO) the distance to the next 8 k-rows (1024 bytes).
""", slide="fragment")
nb.code("""
show_kernel("hopper_sm90a.cu", "hopper_b_rowmajor")
""", slide="subslide")
nb.md("### Rung 9: the producer and the consumers", slide="subslide")
nb.code("""
i = src.index("        // ------------------------------------------------------------ producer warpgroup")
print(src[i:src.index("        // ------------------------------------------------------------ consumer warpgroups")])
""", slide="subslide")
nb.code("""
print(src[src.index("            int prev = -1;"):src.index("            if (!TMA_STORE) {")])
""", slide="subslide")
nb.notes("""
The consumer keeps one wgmma group in flight: after committing the group that reads K-tile kt, it
waits until at most one group is pending (wgmma.wait_group 1), i.e. until the group of K-tile kt-1
is done, and only then frees kt-1's stage. Every warp's lane 0 arrives on empty[] (8 arrivals per
stage), after its own wait.
""")
nb.md("### Rungs 10 and 11: the tile scheduler", slide="subslide")
nb.code("""
print(src[src.index("template <int ORDER, int CLUSTER>"):src.index("// The warp-specialised GEMM.")])
""", slide="subslide")
nb.md("### Rung 12: each CTA multicasts its half of B", slide="subslide")
nb.code("""
i = src.index("                    } else {                                   // my share of the boxes")
print(src[i:src.index("                    if (++s == HSTAGES)", i)])
""")
nb.md("### Rung 13: the epilogue", slide="subslide")
nb.code("""
i = src.index("                // rung 13: 8 boxes")
print(src[i:src.index("        if (TMA_STORE && threadIdx.x % 128 == 0)")])
""", slide="subslide")

# --------------------------------------------------------------------------- resources
nb.md("""
## Appendix B: registers, shared memory, spills

As the driver reports them for the compiled kernels. For rungs 9-13 the registers are the count at
entry: `setmaxnreg` moves them between warpgroups afterwards.
""", slide="slide")
nb.code("""
res = [r for r in L.timed_rows(data, 4096) if r["rung"] >= 7] if data else []
helpers.display.table(res, ["rung", "kernel", "regs", "smem", "spills"],
                      ["rung", "kernel", "registers / thread", "shared memory / block (bytes)", "spills (bytes)"])
""", ignore_output=True)
nb.code("""
print("dynamic shared memory per block:", {r.rung: r.dyn_smem for r in HOPPER_RUNGS.values()})
print("the most a block may opt in to on Hopper:", 227 * 1024)   # CUDA C++ Programming Guide, cc 9.0: 227 KB
""")

# --------------------------------------------------------------------------- other GPUs
nb.md("""
## Appendix C: on other GPUs

`wgmma` and `setmaxnreg` exist only on sm_90a: not on Ampere, Ada, nor on Blackwell. Every rung of
this lesson is skipped there with a message, and the lesson shows the recorded H200 numbers:
""", slide="slide")
nb.code("""
for name, cc in [("Tesla T4", (7, 5)), ("A100", (8, 0)), ("L40S", (8, 9)), ("H200", (9, 0)), ("B200", (10, 0))]:
    skipped = [r.skip_message(cc) for r in HOPPER_RUNGS.values() if r.skip_message(cc)]
    print(f"{name} (cc {cc[0]}.{cc[1]}): runs {len(HOPPER_RUNGS) - len(skipped)} of {len(HOPPER_RUNGS)} rungs",
          *skipped[:1], sep="\\n  ")
""")


nb.save()
