"""Source of notebooks/05_closing_the_gap.ipynb (run `make notebooks` after editing)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("05_closing_the_gap")

# --------------------------------------------------------------------------- title
nb.md("""
# Tensor Cores, WMMA and mixed precision
## 05 · Closing the gap to cuBLAS: a measured ladder of Tensor Core GEMMs

Lesson 2's WMMA kernel is correct and uses the Tensor Cores, yet cuBLAS is many times faster on
the same GPU. Here we climb towards cuBLAS one rung at a time: each rung adds **one** idea,
states its predicted gain **before** it is measured, and is then checked against float64 and
timed. Where a prediction misses, we say why.

*No GPU? Every cell runs: the kernels are emulated with numpy, and the timings are the ones
recorded on an NVIDIA H200, labelled as such.*
""", slide="slide")
nb.notes("""
Follows seed 001's "practical notes" (tiling through shared memory, bank-conflict padding,
software pipelining / prefetch) and builds each one. The seed describes them in a paragraph each
and measures none of them; here each is a kernel in kernels/ladder.cu with a number next to it.
""")

nb.md("""
## What you will learn

- why a Tensor Core GEMM is limited by data movement long before the Tensor Cores are busy;
- five classic steps, one idea each: block tiling in shared memory, padding against bank
  conflicts, 16-byte copies, a `cp.async` multi-stage pipeline, `ldmatrix` + `mma.sync`;
- Hopper's own step: `wgmma` fed by the TMA copy engine through mbarriers (sm_90a);
- how to predict the effect of each step, and how to read a miss, with the profiler's counters;
- how to read registers, shared memory and spills, and why > 48 KB of shared memory needs an opt-in;
- what is still between the last rung and cuBLAS.
""", slide="slide")

nb.code("""
import numpy as np
import helpers
from helpers import analysis
from helpers.exercises import ladder as ex
from helpers.experiments import ladder as L
from helpers.kernels import RUNGS

rec = helpers.results.load_latest()          # the recorded GPU measurements
print("recorded data:", rec.label)
""")
nb.code("""
env = helpers.summary()
""", ignore_output=True)
nb.notes("The summary depends on the machine; the recorded-data line does not.")

# --------------------------------------------------------------------------- the yardstick
nb.md("""
## The yardstick: cuBLAS FP16 and the Tensor Core peak

The target is cuBLAS on the same problem: FP16 inputs, FP32 accumulation
(`cupy.matmul` on float16), square $M = N = K = n$. From the record:
""", slide="slide")
nb.code("""
peak = rec.meta["gpu"]["peaks"]["fp16"]       # dense FP16 Tensor Core peak (datasheet)
for n in L.TIMED_SIZES:
    t = rec.value("cublas_fp16", n)
    clk = helpers.clocks.clock_text(rec.select(kernel="cublas_fp16", m=n, n=n, k=n)[0])
    print(f"n = {n}: cuBLAS FP16 {t:.0f} TFLOP/s = {t / peak:.2f} of the {peak:g} TFLOP/s peak; "
          f"half of it: {t / 2:.0f} TFLOP/s  [SM clock {clk}]")
naive = rec.value("wmma_gemm_naive", 4096)
print(f"lesson 2's naive WMMA at 4096: {naive:.1f} TFLOP/s; half of cuBLAS is "
      f"{rec.value('cublas_fp16', 4096) / 2 / naive:.1f}x that")
""")
nb.md("""
The goal of this lesson: a rung at **half of cuBLAS** or better at both sizes, with a correct
result: the factor over lesson 2's kernel printed above.
""", slide="fragment")

nb.md("""
### Why cuBLAS is slower at 8192 than at 4096: the power cap

Every timing in the record carries what NVML read while it ran (`helpers.clocks`): the SM clock
(median and lowest), the power (median and highest), the temperature, and the reasons the driver
gave for holding the clock down:
""", slide="subslide")
nb.code("""
lad = rec.meta["experiments"]["ladder"]
rows = [dict(r, where="sweep") for r in rec.select(kernel="cublas_fp16") if r["m"] in (4096, 6144, 8192)]
rows += [dict(r, where="ladder experiment") for n in (4096, 8192) for r in L.timed_rows(lad, n) if r["rung"] == 0]
for r in rows:
    r.update(per_ghz=helpers.clocks.tflops_per_ghz(r), reasons=", ".join(r["throttle"]))
helpers.display.table(rows, ["where", "m", "tflops", "sm_mhz", "sm_mhz_min", "power_w", "power_w_max", "temp_c",
                             "reasons", "per_ghz"],
                      ["record", "n", "TFLOP/s", "SM MHz (median)", "SM MHz (lowest)", "W (median)", "W (highest)",
                       "°C", "clock held down by", "TFLOP/s per GHz"], fmt={"tflops": ".0f", "per_ghz": ".0f"})
""")
nb.md("""
At 4096 the GPU ran at its full clock with no reason to slow down. At 6144 and 8192 the driver
reported **`sw power cap`**: the GPU reached its power limit and lowered the SM clock to stay under
it. Divide the clock out (last column) and 8192 is no slower per cycle than 4096: the dip is the
clock, not cuBLAS. The course keeps its timing method (cold L2, median of many launches) and shows
the clock beside every number instead: compare kernels at the same size, and read their clocks.
""", slide="fragment")
nb.notes("""
Locking the clocks (nvidia-smi --lock-gpu-clocks, admin only) would give flat numbers, but at a
clock the GPU does not run at in practice; a long run at 8192 is power-limited on this machine, and
that is a property of the workload worth showing. The ladder experiment timed cuBLAS separately:
its own rows are in the table too. NVML's power reading is an average over a window and can lag a
burst (the ladder's 8192 row reports the cap with a low median power); the clock and the reason the
driver gives are the direct evidence.
""")

# --------------------------------------------------------------------------- the plan
nb.md("""
## The ladder, and the predictions made before measuring

Every rung keeps rung 1's arithmetic and changes one thing about how data reaches the Tensor
Cores. The predicted gain is over the rung before, written down before the first measurement
(it is in the kernel registry, `helpers/kernels.py`, and does not change with the data).
""", slide="slide")
nb.code("""
rungs = [dict(rung=r.rung, kernel=r.name, idea=r.idea, gain=f"x{r.predicted_gain:g}", why=r.why,
              cc="9.0 only (sm_90a)" if r.only_cc else f"{r.min_cc[0]}.{r.min_cc[1]}+") for r in RUNGS.values()]
helpers.display.table(rungs, ["rung", "kernel", "idea", "gain", "why", "cc"],
                      ["rung", "kernel", "adds", "predicted gain", "because", "needs"])
""")
nb.notes("""
Multiplying the predicted gains gives the predicted end point; the next cell does it. Keep it in
mind: the measured ladder will be compared with this chain, rung by rung.
""")
nb.code("""
chain = np.prod([r.predicted_gain for r in RUNGS.values()])
print(f"predicted: the last rung is {chain:.1f}x rung 1")
""")

# --------------------------------------------------------------------------- correctness
nb.md("""
## One check for every rung

- **Sizes.** Rungs 2-6 move whole $128 \\times 128$ tiles of $C$ and 32-deep slices of $K$ (rung 7:
  $128 \\times 256$ and 64), with no bounds checks inside the kernels. The launcher **zero-pads**
  $M, N$ to multiples of the tile and $K$ to a multiple of its depth (`helpers.gemm(..., pad=True)`,
  as for lesson 2's kernel), then crops $C$. Zero rows and columns add exact zeros to every dot product.
- **Arithmetic.** Every rung keeps one FP32 accumulator per output and walks $K$ in order, 16 at a
  time, with the same Tensor Core instruction: WMMA's m16n16k16 is PTX `wmma.mma`, which `ptxas`
  turns into two `HMMA.16816` on sm_90 (lesson 02), the instruction rung 6's PTX
  `mma.sync.m16n8k16` becomes too. So rungs 1-6 compute the *same sums in the same order*, and the CPU emulation of all of
  them is `helpers.emulate.tensor_core_gemm(inputs='fp16', acc='fp32')`. Rung 7's `wgmma` also
  walks $K$ 16 at a time into one accumulator; that it rounds like `mma.sync` inside each step is an
  assumption, which the GPU tests check against the emulation. A rung that split $K$ across warps,
  or used another accumulation order, would need its own emulation.
""", slide="slide")
nb.code("""
M, N, K = 200, 136, 72                       # not multiples of 16, nor of the 128 x 128 x 32 tile
A = helpers.random_matrix(M, K, seed=1).astype(np.float16)
B = helpers.random_matrix(K, N, seed=2).astype(np.float16)
for line in helpers.launch.verdicts(RUNGS.values(), A, B):   # gemm(pad=True) + check, every rung
    print(line)
""")
nb.notes("""
On the CPU backend this runs the emulation; on a GPU it runs the kernels. Either way the verdict
line is identical. The GPU tests (tests/test_gpu_ladder.py) run every rung at four odd sizes,
and the recorded experiment checks 4096, 8192 and two odd sizes.
""")
nb.code("""
bad = np.ones((64, 64), dtype=np.float32)
try:
    helpers.gemm("ladder_smem_tiled", bad, bad)
except helpers.CourseError as e:
    print(e)
""")

# --------------------------------------------------------------------------- rung 1
nb.md("""
## Rung 1: lesson 2's naive WMMA

One warp per $16 \\times 16$ tile of $C$; each K step loads a $16 \\times 16$ tile of A and of B
from global memory, and no two warps share one. Count the bytes the warps request (the traffic
model of `helpers.analysis`, lesson 02's count): each $16 \\times 16$ tile of $C$ reads its 16 rows
of A and 16 columns of B once, so every column of tiles re-reads all of A, every row all of B.
""", slide="slide")
nb.code("""
n = 4096
for r in (RUNGS[1], RUNGS[2]):
    print(f"rung {r.rung}: tiles of C that share their loads {r.traffic_tile}, requested traffic "
          f"{analysis.traffic_bytes(r, n, n, n) / 1e9:.1f} GB, "
          f"intensity {analysis.intensity(r, n, n, n):.1f} FLOP/byte")
hbm = rec.meta["gpu"]["peaks"]["mem_gbs"]
print(f"ridge point of the roofline: {peak * 1e3 / hbm:.0f} FLOP/byte; "
      f"L2 of the {rec.gpu_name}: {rec.meta['gpu']['l2_bytes'] / 2**20:.0f} MiB")
""")
nb.md("""
Requested traffic is what the loads ask of the memory system if no two tiles shared anything;
L1 and L2 (its size printed above) catch much of it, so real DRAM traffic is far lower (the profiler's
counts follow the measurement). Still: rung 1 asks for far more bytes per FLOP than a Tensor Core
GEMM can afford. **Rung 2 cuts it by the ratio computed above**: (1/16 + 1/16) against
(1/128 + 1/128) per FLOP, eight times, a little less with the store of $C$.
""", slide="fragment")

# --------------------------------------------------------------------------- rung 2
nb.md("""
## Rung 2: a block tile in shared memory

256 threads load a $128 \\times 32$ slice of A and a $32 \\times 128$ slice of B into shared memory;
then 8 warps, arranged $2 \\times 4$, each multiply a $64 \\times 32$ sub-tile: $4 \\times 2$ fragments,
8 `mma_sync` per 16-deep step, every A fragment used twice and every B fragment four times from
registers.
""", slide="slide")
nb.code("""
helpers.display.show_kernel("ladder.cu", "ladder_smem_tiled", with_header=False)
""")
nb.notes("""
Rungs 2 and 3 share one templated body (appendix B prints it): the only difference is PAD, so the
before/after of the padding is a clean experiment. The copies here are one half (2 bytes) per thread per instruction.
""")

# --------------------------------------------------------------------------- rung 3
nb.md("""
## Rung 3: padding against bank conflicts

Shared memory has 32 banks of 4 bytes (CUDA C++ Programming Guide, shared memory of compute
capability 5.x and later). A fragment load reads 16 bytes from each of 8 rows at
once (128 bytes, all 32 banks, if the rows fall on different banks). Which banks a row starts on
depends only on the **row stride**:
""", slide="slide")
nb.code("""
rows = [analysis.smem_conflicts(0), analysis.smem_conflicts(8)]
helpers.display.table(rows, ["pad_halves", "A_row_bytes", "A_ways", "B_row_bytes", "B_ways"],
                      ["pad (halves)", "As row (bytes)", "As: busiest bank hit", "Bs row (bytes)",
                       "Bs: busiest bank hit"])
""")
nb.md("""
Without padding, Bs rows are 256 bytes apart: all 8 rows start in bank 0 and the load replays 8
times. Eight halves (16 bytes) of padding per row shift each row by 4 banks: conflict-free.
""", slide="fragment")
nb.md("""
**The seed gets the fix wrong.** Seed 001 says to "pad one extra row" when allocating the shared
array (在分配共享内存数组时多垫一行数据). An extra *row* leaves the row stride, and so every bank,
unchanged; the padding has to go at the end of *each row* (extra columns):
""", slide="subslide")
nb.code("""
stride = 128 * 2                                  # Bs row in bytes, as allocated [32][128]
print("Bs[33][128] (one extra row):       busiest bank hit", analysis.bank_ways(stride), "times")
print("Bs[32][128 + 8] (8 extra columns): busiest bank hit", analysis.bank_ways(stride + 8 * 2), "times")
""")
nb.md("Why 8 halves and not fewer (WMMA's alignment rules): appendix C. The profiler's count of the "
      "conflicts, before and after: after the measurement.", slide="fragment")
nb.notes("""
The prediction for rung 3 (in the table) is far below the 8 replays: the conflicts slow the
fragment loads, which are only part of each iteration; the global loads and the mma_sync do not
change.
""")

# --------------------------------------------------------------------------- rung 4
nb.md("""
## Rung 4: 16-byte copies

Rung 3 copies a $128 \\times 32$ tile of A with 4096 two-byte loads and stores. One `uint4` moves 8
halves: the same bytes in an eighth of the instructions. It needs 16-byte aligned addresses:
rows of A ($K$ halves) and of B ($N$ halves) must be multiples of 8 halves, which the padding to
the tile guarantees, and the padded shared-memory rows (80 and 272 bytes) are multiples of 16.
""", slide="slide")
nb.code("""
tile = 128 * 32                                       # halves per tile of A (and of B)
print("load+store instructions per thread per K-tile:",
      f"2-byte copies {2 * 2 * tile // 256}, 16-byte copies {2 * 2 * tile // 8 // 256}")
""")
# --------------------------------------------------------------------------- rung 5
nb.md("""
## Rung 5: a `cp.async` pipeline

Rungs 2-4 load a tile, wait at `__syncthreads()`, compute, wait again: the Tensor Cores idle while
data travels, and the loads idle while they compute. `cp.async` (sm_80+) copies global to shared
memory **without passing through registers and without blocking the thread**. With 4 stages, the
copies of K-tiles $k+1 \\dots k+3$ are in flight while the warps multiply tile $k$.
The seed suggests prefetching into registers; `cp.async` skips the registers entirely.
""", slide="slide")
nb.code("""
smem, limit = RUNGS[5].dyn_smem, helpers.launch.DEFAULT_SMEM_LIMIT
print(f"dynamic shared memory per block: {smem} bytes = {smem / 1024:.1f} KB")
print(f"above the default limit of {limit // 1024} KB: {smem > limit}")
""")
nb.md("""
Without an opt-in, a launch asking for more than 48 KB of dynamic shared memory fails. The
launcher raises the limit first: in CuPy, `kernel.max_dynamic_shared_size_bytes = bytes`
(`cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)` in C++).
""", slide="fragment")
nb.notes("""
The order in the loop matters: wait for tile kt, barrier (everyone's copies have landed AND
everyone is done reading tile kt-1), then reuse tile kt-1's stage for tile kt+3. Issuing the copy
before the barrier would overwrite a stage another warp may still be reading.
""")

# --------------------------------------------------------------------------- rung 6
nb.md("""
## Rung 6: `ldmatrix` + `mma.sync m16n8k16`

WMMA hides which lane holds which element. PTX documents it for `mma.sync`, and `ldmatrix`
loads four $8 \\times 8$ matrices from shared memory straight into that layout (`.trans`
transposes B on the way). The warp tile becomes $4 \\times 4$ products of $16 \\times 8$.
The lane addressing, replayed in Python against the PTX fragment layout from lesson 2:
""", slide="slide")
nb.code("""
from helpers.experiments import wmma as W

a_ok = analysis.ldmatrix_fragments("a") == W.ptx_fragment_layout("a")
b = analysis.ldmatrix_fragments("b")
b_ok = all(l[:4] == p and [(k, n - 8) for k, n in l[4:]] == p for l, p in zip(b, W.ptx_fragment_layout("b")))
print("A fragments from ldmatrix.x4 match PTX:", a_ok)
print("B fragments of both n8 tiles from ldmatrix.x4.trans match PTX:", b_ok)
""")
# --------------------------------------------------------------------------- rung 7
nb.md("""
## Rung 7 (Hopper only): `wgmma` fed by TMA through mbarriers

- **TMA** (`cp.async.bulk.tensor`): *one* thread asks the copy engine for a whole $128 \\times 64$
  tile of A and a $256 \\times 64$ tile of $B^T$, described by a *tensor map* built on the host;
  the engine writes them in the 128-byte **swizzled** layout `wgmma` reads. *Swizzle*: within each
  128-byte row the eight 16-byte chunks are permuted (chunk index XOR row index mod 8), so the
  rows a read touches at once fall in different banks: rung 3's padding, done without padding.
- **mbarrier**: each of 4 stages has one; the engine counts the bytes it delivered on it, and the
  warps wait on its **phase** instead of on their own copies. *Phase*: an mbarrier completes a phase
  when the expected arrivals and bytes are in, and flips a parity bit; waiters test that bit
  (`try_wait.parity`), and each reuse of the stage is the next phase.
- **wgmma**: a warpgroup (4 warps) multiplies $64 \\times 16$ of A by $16 \\times 256$ of B straight
  from shared memory, asynchronously: no `ldmatrix`, no A or B fragments in registers.
""", slide="slide")
nb.code("""
r7 = RUNGS[7]                                # the registry entry (also when a GPU cannot run it)
print(f"block tile {r7.block_tile}, K-tile {r7.tile_k}, {r7.block[0]} threads = 2 warpgroups")
print(f"dynamic shared memory {r7.dyn_smem} bytes ({r7.dyn_smem / 1024:.0f} KB): one block per SM")
print(f"requested traffic at n = 4096: {analysis.intensity(r7, 4096, 4096, 4096):.0f} FLOP/byte "
      f"(rung 6: {analysis.intensity(RUNGS[6], 4096, 4096, 4096):.0f})")
""")
nb.md("""
**Three practical hurdles, and what the course does.**
`wgmma` exists only on sm_90a, and CuPy's `RawModule(code=...)` always adds its own `-arch=sm_90`:
the helper compiles with NVRTC for `sm_90a` itself and loads the cubin with `RawModule(path=...)`.
The tensor map comes from the driver's `cuTensorMapEncodeTiled` (through `ctypes`) and is passed by
value. This kernel's `wgmma` reads both operands **K-major** (no transpose bit): in memory,
consecutive elements run along $K$, which A (row-major, $M \\times K$) already is and B ($K \\times N$,
row-major) is not; so the launcher transposes B first, **inside** the timed run. And because a wrong tensor map or barrier hangs or faults the GPU, this rung is measured
in a child process.
""", slide="subslide")
# --------------------------------------------------------------------------- the measurement
nb.md("""
## The measurement

The experiment `ladder` checks every rung against float64 at 4096, 8192 and two odd sizes, then
times it at 4096 and 8192 (`helpers.timing.benchmark`: CUDA events, L2 flushed before each
launch, median of many, the SM clock read while it runs) next to cuBLAS. On a GPU this cell runs it live (about half a minute);
on the CPU it loads the H200 record. Rung 7 runs in a child process.
""", slide="slide")
nb.code("""
out = helpers.run_or_load("ladder")
data, source = out.data, out.source
print(source)
""", ignore_output=True)
nb.code("""
checked = [r for r in data if r["rung"] >= 1 and "passed" in r]
print(f"{sum(r['passed'] for r in checked)} of {len(checked)} checked launches passed "
      f"(sizes: {sorted({(r['m'], r['n'], r['k']) for r in checked})})")
for msg in sorted({r["skipped"] for r in data if "skipped" in r}) + L.errors(data):
    print(msg)
""", ignore_output=True)

nb.md("""
## Prediction and outcome, side by side
""", slide="slide")
nb.code("""
fmt = {"predicted": "g", "measured": ".2f", "tflops": ".0f", "frac_cublas": ".2f", "frac_peak": ".2f"}
cols = ["rung", "idea", "predicted", "measured", "verdict", "tflops", "frac_cublas", "frac_peak", "clock"]
heads = ["rung", "idea", "predicted gain", "measured gain", "", "TFLOP/s", "x cuBLAS", "x peak", "SM clock while timed"]
helpers.display.table(L.gains(data, 4096), cols, heads, fmt)
""", ignore_output=True)
nb.code("""
helpers.display.table(L.gains(data, 8192), cols, heads, fmt)      # the clock column: which rungs ran power-capped
""", slide="subslide", ignore_output=True)
nb.code("""
for n in L.TIMED_SIZES:
    row = max(L.timed_rows(data, n)[1:], key=lambda r: r["tflops"])
    print(f"n = {n}: best rung {row['rung']} ({row['kernel']}) at {row['frac_cublas']:.2f}x cuBLAS: "
          f"target 0.50x {'met' if row['frac_cublas'] >= 0.5 else 'missed'}")
    if "frac_cublas_kernel_only" in row:
        print(f"   (the kernel alone, B^T given: {row['frac_cublas_kernel_only']:.2f}x cuBLAS)")
""", ignore_output=True)

nb.md("""
## The ladder
""", slide="slide")
nb.code("""
fig = helpers.plots.ladder(L.timed_by_size(data), peak=peak, source=source)
""")

nb.md("""
## Reading the misses

A prediction is a model of where the time goes; a miss says which part of the model was wrong.
For each rung whose measured gain is off by more than 25%, the most likely reason:
""", slide="slide")
nb.code("""
for g in L.gains(data, 4096)[1:]:
    if g["verdict"].startswith("as predicted"):
        print(f"rung {g['rung']}: as predicted")
    else:
        print(f"rung {g['rung']}: {g['verdict']}: {L.MISS_NOTES[g['rung']][g['verdict'].split()[0]]}")
""", ignore_output=True)
nb.notes("""
The explanations are written for both directions (better and worse) before the measurement, in
helpers/experiments/ladder.py (MISS_NOTES); the cell picks the one the data calls for. The next two
slides check them against what the hardware counted.
""")

nb.md("""
## What the profiler counted, rung by rung: the bytes

Nsight Compute ran one launch of every rung at 4096 on the H200 (`make gpu-check STAGES=ncu`,
recorded in `results/`, read by `helpers.profile`). Bytes at each level, beside the traffic model:
""", slide="slide")
nb.code("""
prof = helpers.profile.load_ncu()
print(prof.label)
n = prof.size[0]
rows = [dict(prof.row(f"rung{k}"), rung=k, model_gb=analysis.traffic_bytes(r, n, n, n) / 1e9) for k, r in RUNGS.items()]
helpers.display.table(rows, ["rung", "model_gb", "l1_load_gb", "l2_read_gb", "dram_read_gb", "l2_hit_pct"],
                      ["rung", "requested (model) GB", "L1: sectors loaded, GB", "L2 read GB", "DRAM read GB",
                       "L2 hit %"], fmt={k: ".2f" for k in ("model_gb", "l1_load_gb", "l2_read_gb", "dram_read_gb")}
                      | {"l2_hit_pct": ".0f"})
""")
nb.md("""
- Rungs 2-4 move the model's bytes through L1 (their L1 column is $A$ and $B$ of the model exactly);
  rungs 5-6's `cp.async` copies count somewhat more at L1 and L2 (these counters do not say why),
  and rung 7's TMA copies bypass L1 altogether. DRAM delivers little more than $A$, $B$ and $C$ once
  at every rung: L2 holds the rest. The rungs differ in how they feed the Tensor Cores (next slide).
- Rung 1's loads touch twice the requested bytes in sectors (lesson 02), and what reaches **L2** is
  far below the model: the 8 warps of a block read the same $B$ tile, and L1 serves the repeats.
""", slide="fragment")

nb.md("""
## What the profiler counted, rung by rung: shared memory and the pipes
""", slide="slide")
nb.code("""
cols = ["rung", "smem_load_wavefronts", "conflicts_per_load_wavefront", "smem_store_conflicts", "ldsm",
        "tensor_pct", "occupancy_pct", "stalls"]
ways = analysis.smem_conflicts(0)               # per step a warp loads 4 A fragments (4-way) and 2 B (8-way)
print(f"shared-load wavefronts, rung 2 / rung 3: {rows[1]['smem_load_wavefronts'] / rows[2]['smem_load_wavefronts']:.2f}"
      f"; the bank-conflict model predicts {(4 * ways['A_ways'] + 2 * ways['B_ways']) / 6:.2f}")
helpers.display.table(rows, cols, ["rung", "shared loads (wavefronts)", "bank conflicts per wavefront",
                                   "store conflicts", "LDSM (ldmatrix) executed", "Tensor pipe busy %",
                                   "occupancy %", "top stalls (cycles per instruction)"],
                      fmt={"smem_load_wavefronts": ".3g", "conflicts_per_load_wavefront": ".2f",
                           "smem_store_conflicts": ".3g", "ldsm": ".3g", "tensor_pct": ".1f", "occupancy_pct": ".0f"})
""")
nb.md("""
- **Rung 2 to 3**: the bank conflicts are the model's (rung 3's table): the ratio of shared-load
  wavefronts is what 4-way conflicts on the $A$ fragments and 8-way on the $B$ fragments predict
  (printed), and the padding removes them.
- **Rung 5 to 6, the miss**: the `ldmatrix` count is the *same*. WMMA's `load_matrix_sync` from
  shared memory already compiled to `LDSM` on sm_90, so rung 6 issues no fewer loads, and the Tensor
  pipe is no busier: the predicted gain had nothing to come from (MISS_NOTES' "worse" reason).
- **Rung 7**: the busiest Tensor pipe of the ladder, from one block per SM (the occupancy), whose
  warps wait mostly at the barrier that drains the pipeline every K-tile: what warp specialisation
  removes. (`gmma` pipe utilisation was not collected by this ncu; the tensor-pipe total includes it.)
""", slide="fragment")
nb.notes("""
Stall columns: cycles a warp spent, per issued instruction, waiting for that reason (Nsight Compute's
smsp__average_warps_issue_stalled_*): long_scoreboard = a global-memory result, short_scoreboard = a
shared-memory result, mio_throttle = the shared-memory instruction queue, barrier = __syncthreads,
math_pipe_throttle = the Tensor pipe busy, wait = fixed-latency dependencies. Rung 4's 16-byte stores
into the padded rows conflict (store conflicts column) - a cost the 8x fewer instructions outweigh.
""")

# --------------------------------------------------------------------------- roofline
nb.md("""
## All rungs on a roofline

Arithmetic intensity here is FLOPs per byte the blocks *request* (the traffic model above), and
the roof is HBM bandwidth. A point above the slanted roof is one whose requests were served
partly by L2, not DRAM.
""", slide="slide")
nb.code("""
gpu = rec.meta["gpu"]["peaks"]
fig = helpers.plots.roofline(L.roofline_points(data, 4096), peak_tflops=gpu["fp16"], mem_gbs=gpu["mem_gbs"],
                             title="Ladder rungs at n = 4096 (intensity: requested bytes)", source=source)
""")

# --------------------------------------------------------------------------- resources
nb.md("""
## Registers, shared memory, spills

What each kernel costs per thread and per block, as the driver reports it for the compiled
kernel (`num_regs`, `shared_size_bytes`, `local_size_bytes`; dynamic shared memory is what the
launch asks for). Registers and shared memory decide how many blocks fit on one SM.
""", slide="slide")
nb.code("""
res = [r for r in L.timed_rows(data, 4096) if r["rung"] >= 1]
helpers.display.table(res, ["rung", "kernel", "regs", "smem", "spills"],
                      ["rung", "kernel", "registers / thread", "shared memory / block (bytes)",
                       "local memory (spills, bytes)"])
""", ignore_output=True)
nb.md("""
**Exercise (below):** with 128 registers per thread and 256 threads, how many blocks of rung 5 fit
on one SM of an H100/H200 (65536 registers, 228 KB of shared memory per SM, 1 KB reserved per
block: the compute capability 9.0 limits in the CUDA C++ Programming Guide)? The ptxas reports and
what the compiler emitted per rung (SASS opcode counts): appendix E.
""", slide="fragment")

# --------------------------------------------------------------------------- what is left
nb.md("""
## What is still between the last rung and cuBLAS

Rung 7 is a deliberately simple `wgmma` + TMA pipeline, not a tuned one. What the fastest public
Hopper kernels add (each one more rung; pranjalssh/fast.cu builds them one at a time and passes
cuBLAS on an H100 in BF16):

- **keep the Tensor Cores fed across K-tiles**: `wgmma.wait_group 1` instead of 0, and a
  *producer* warpgroup that only issues TMA while *consumer* warpgroups only multiply (warp
  specialisation), with **`setmaxnreg`** (PTX, sm_90a: a warpgroup gives registers back or claims
  more at run time) so the producers run with few registers and the consumers with many;
- **no transpose**: read B N-major with `wgmma`'s transpose bit, or store it K-major upstream;
- **clusters**: two blocks that need the same A (or B) tile get it through one TMA **multicast**:
  that operand is read from L2 once for both, halving *its* loads; the other operand's loads do
  not change;
- **a persistent grid**: one block per SM, each looping over many output tiles (instead of one
  block per tile), in an L2-friendly order, with an epilogue that overlaps the next tile's loads.
""", slide="slide")

# --------------------------------------------------------------------------- exercises
nb.md("""
## Check your understanding

1. **Tile shape.** Rung 2 with a $128 \\times 256$ block tile instead of $128 \\times 128$: how many
   bytes do the blocks request in total for $n = 4096$ (FP16 inputs, FP32 output, the traffic
   model of this lesson)? Predict first: more or less than rung 2, and by how much?
""", slide="slide")
nb.code("""
answer = ...            # bytes
ex.check_tile_traffic(answer, bm=128, bn=256, n=4096)
""")
nb.code("""
n = 4096
answer = n * n * 2 * (n // 256) + n * n * 2 * (n // 128) + n * n * 4
ex.check_tile_traffic(answer, bm=128, bn=256, n=4096)
print(f"vs 128 x 128: {answer / analysis.traffic_bytes(RUNGS[2], n, n, n):.2f}x the bytes")
""", tags=["solution"])
nb.md("""
2. **Pipeline depth.** How many bytes of dynamic shared memory does rung 5 need with 3 stages
   instead of 4 (BK = 32, padding 8 halves)? Does it still need the opt-in?
""", slide="subslide")
nb.code("""
answer = ...            # bytes
ex.check_pipeline_smem(answer, stages=3)
""")
nb.code("""
answer = 3 * (128 * (32 + 8) + 32 * (128 + 8)) * 2
ex.check_pipeline_smem(answer, stages=3)
print("needs the opt-in:", answer > helpers.launch.DEFAULT_SMEM_LIMIT)
""", tags=["solution"])
nb.md("""
3. **Occupancy.** Blocks of rung 5 per SM with 128 registers per thread and 256 threads, on an
   H100/H200 (see the resources slide).
""", slide="subslide")
nb.code("""
answer = ...
ex.check_blocks_per_sm(answer)
""")
nb.code("""
by_regs = 65536 // (128 * 256)
by_smem = (228 * 1024) // (RUNGS[5].dyn_smem + 1024)
ex.check_blocks_per_sm(min(by_regs, by_smem))
""", tags=["solution"])
nb.md("""
4. **Open exercise (GPU).** Copy `ladder_cp_async` from `kernels/ladder.cu`, change `STAGES` to 2
   and 3, predict the TFLOP/s, and measure with `helpers.launch.launcher` + `helpers.timing.benchmark`.
""", slide="subslide")

# --------------------------------------------------------------------------- summary
nb.md("""
## Summary

- A Tensor Core GEMM is a data-movement problem: each rung changed only how A and B reach the
  Tensor Cores, never the arithmetic, so one emulation and one tolerance check all of them.
- Block tiling cuts the bytes requested per FLOP; padding removes bank conflicts (pad each row,
  not an extra row); 16-byte copies cut instructions; `cp.async` overlaps copies with math;
  `ldmatrix` + `mma.sync` expose the register layout WMMA hides; `wgmma` + TMA take the loads
  out of the registers altogether.
- Predictions before measurements turn a benchmark into an experiment: a miss points at the part
  of the model that was wrong, and the profiler's counters (bank conflicts, `ldmatrix` counts,
  Tensor-pipe use, stalls) show which part.
- The clock is part of every number: cuBLAS's 8192 dip is the power cap, not the library.
- On Hopper the big step is `wgmma` + TMA (sm_90a); warp specialisation, clusters and a
  persistent grid are what separate a first such kernel from cuBLAS.
""", slide="slide")

# --------------------------------------------------------------------------- appendix
nb.md("""
## Appendix: details behind the main slides

- A. The kernels of rungs 4, 5 and 6
- B. The templated body of rungs 2 and 3
- C. Why 8 halves of padding and not fewer
- D. Rung 7's main loop
- E. Registers and instructions: ptxas reports, SASS opcode counts
- F. On older GPUs
""", slide="slide")
nb.md("### A. The kernels of rungs 4, 5 and 6 (`kernels/ladder.cu`)", slide="subslide")
nb.code("""
helpers.display.show_kernel("ladder.cu", "ladder_vec16")
""")

nb.code("""
helpers.display.show_kernel("ladder.cu", "ladder_cp_async")
""", slide="subslide")
nb.code("""
helpers.display.show_kernel("ladder.cu", "ladder_mma_sync")
""", slide="subslide")

nb.md("### B. The templated body of rungs 2 and 3", slide="subslide")
nb.code("""
src = helpers.display.kernel_source("ladder.cu")
body = src[src.index("template <int PAD>"):src.index("// Rung 2 --")]
print(body[:1600])
""")
nb.md("""
### C. Why 8 halves and not fewer

Why 8 halves and not fewer: the padding must also keep WMMA's rules (lesson 2): `ldm` a multiple
of 8 halves and every fragment pointer 32-byte aligned.
""", slide="subslide")
nb.code("""
helpers.display.table(analysis.pad_options(), ["pad_halves", "A_ways", "B_ways", "ldm_ok", "aligned_32B", "legal"],
                      ["pad (halves)", "As conflict", "Bs conflict", "ldm multiple of 8", "pointers 32-byte aligned",
                       "usable with WMMA"])
""")
nb.md("### D. Rung 7's main loop (`kernels/ladder_sm90a.cu`)", slide="subslide")
nb.code("""
src7 = helpers.display.kernel_source("ladder_sm90a.cu", "ladder_wgmma_tma")
print(src7[src7.index("    for (int kt = 0"):src7.index("    // Accumulator layout")])
""")
nb.notes("""
The main loop: wait on the stage's mbarrier, fence, four wgmma (K = 64 in steps of 16: the
descriptor's start address moves 32 bytes inside the swizzled row), commit, wait for them, barrier,
and thread 0 re-arms the stage's barrier and asks TMA for the tile 4 steps ahead. Everything the
full kernel adds (descriptors, the wait loop, the epilogue) is in kernels/ladder_sm90a.cu.
""")

nb.md("### E. Registers and instructions", slide="subslide")
nb.code("""
build = helpers.results.RESULTS_DIR / "build-nvidia-h200"
for name in ("ladder.ptxas.txt", "ladder_sm90a.ptxas.txt"):
    if (build / name).is_file():
        print(name, "".join(ln for ln in open(build / name) if "Used" in ln or "Compiling" in ln or "spill" in ln))
    else:
        print(f"no recorded ptxas report {name} yet")
""", ignore_output=True)
nb.md("""
What the compiler emitted for each rung (static instruction counts from the recorded SASS): the
copies (`LDG`+`STS`, then `LDGSTS` = cp.async, then `UTMALDG` = TMA), the shared-memory reads
(`LDS`, `LDSM` = ldmatrix) and the Tensor Core instructions (`HMMA` = mma.sync, `HGMMA` = wgmma).
""", slide="subslide")
nb.code("""
from IPython.display import display

for name in ("ladder.sm_90.sass", "ladder_sm90a.sm_90a.sass"):
    if (build / name).is_file():
        counts = analysis.sass_opcode_counts(build / name)
        display(helpers.display.table([dict(kernel=k, **v) for k, v in counts.items()], ["kernel", *analysis.SASS_OPS]))
    else:
        print(f"no recorded SASS {name} yet")
""", ignore_output=True)
# --------------------------------------------------------------------------- older GPUs
nb.md("""
### F. On older GPUs

Rungs 1-4 need WMMA (sm_70+); rungs 5-6 need `cp.async` and `ldmatrix`/`mma.sync m16n8k16`
(sm_80+); rung 7 needs sm_90a, which only Hopper has (`wgmma` is not on later GPUs either). On any
other GPU the lesson skips those rungs with a message:
""", slide="subslide")
nb.code("""
for name, cc in [("Tesla T4", (7, 5)), ("A100", (8, 0)), ("H200", (9, 0)), ("B200", (10, 0))]:
    skipped = [r.skip_message(cc) for r in RUNGS.values() if r.skip_message(cc)]
    print(f"{name} (cc {cc[0]}.{cc[1]}): runs {len(RUNGS) - len(skipped)} "
          f"of {len(RUNGS)} rungs", *skipped, sep="\\n  ")
""")


nb.save()
