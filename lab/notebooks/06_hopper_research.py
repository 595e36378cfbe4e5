# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (tensor-core course)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 6's research: how rungs 17-30 were found, and what lost
#
# Lesson 6 (`notebooks/06_hopper_full_speed.py`) teaches rungs 8-16 and ends with a table of rungs 17-30 and
# one of "what else was tried". This notebook tells the search behind them, in the order it ran on an NVIDIA
# H200 in December 2026: each idea predicted before it ran, then checked and timed by a probe in `lab/probes/`,
# whose output is kept in `lab/logs/`; what the course's record (`results/nvidia-h200.json`) holds is read
# from there. It runs top to bottom on any machine, without a GPU:
# `python lab/notebooks/06_hopper_research.py`, or open it in JupyterLab with jupytext.
#
# The readers are `lab/labkit/hopper.py` (`LK`); the course's own are `helpers.experiments.hopper` (`H`).

# %%
import functools, math, re, sys
from pathlib import Path

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd().resolve()
LAB = next(p for p in (here, *here.parents, Path.cwd() / "lab") if (p / "labkit").is_dir())
sys.path[:0] = [str(LAB), str(LAB.parent)]

try:
    get_ipython()                                # in Jupyter: tables and figures render
    from IPython.display import display
except NameError:                                # run as a script: print each table's Markdown
    def display(*objs):
        for o in objs:
            print(getattr(o, "data", o))

import helpers  # noqa: E402
from helpers.experiments import hopper as H, knobs  # noqa: E402
from helpers.kernels import HOPPER_RUNGS  # noqa: E402
import labkit.hopper as LK  # noqa: E402
import labkit.listings  # noqa: E402
import labkit.logs  # noqa: E402
import labkit.hopper_plots as LP  # noqa: E402
import labkit.rungs as LR  # noqa: E402

rec = helpers.results.load_latest()
exps, sms = labkit.logs.experiments(rec), rec.meta["gpu"]["sms"]
hop = exps["hopper"]
switch_lines, sweep = labkit.listings.switch_lines, functools.partial(knobs.knob_sweep, exps["knobs"])
miss_note = functools.partial(LK.miss_note, hop, ladder=exps["ladder"], sms=sms)
src = labkit.listings.research_source()      # lab/kernels/hopper_sm90a_research.cu as its rungs were built
print("record:", rec.label)

# %% [markdown]
# ## Rungs 8-16: the notes written for a miss
#
# Each rung's prediction came with a note for either direction of a miss, written before it was measured
# (rungs 8 and 10's rewritten after the record, `LK.SUPERSEDED_NOTES` keeping the first texts). The lesson
# shows the verdicts; here with the note the record calls for:

# %%
for k in range(8, 17):
    display(LK.notes_table(hop, k, exps["ladder"], sms))

# %% [markdown]
# ## The goals, predicted before `hopper_targets` first ran
#
# Each goal's ratio was predicted from the record's `hopper` experiment (the ratios and cuBLAS's medians)
# before the goals were timed in turn:

# %%
from helpers.experiments import like_for_like as LL  # noqa: E402

h2h = LL.head_to_head(exps["hopper_targets"])
helpers.display.table([dict(r, predicted=LK.TARGET_PREDICTED.get((tuple(map(int, r["shape"].split("x"))),
                                                                   "float16" if r["C"] == "FP16" else "float32")))
                       for r in h2h], ["shape", "C", "goal", "predicted", "rung", "ratio", "met"],
                      ["M x N x K", "C", "goal", "predicted", "best rung", "measured", "met"],
                      {"predicted": ".2f", "ratio": ".3f"})

# %% [markdown]
# ## What cuBLAS runs, and sizes off the tile grid
#
# cuBLAS is not one kernel. Nsight Compute names the kernel behind each call
# (`lab/probes/cublas_kernels.py`, one call per shape and C type). A name such as
# `nvjet_sm90_hsh_256x152_64x4_2x1` reads: FP16 in, FP32 sums, FP16 out (`hsh`; `hss` writes FP32), a
# 256 x 152 tile, K-tiles of 64 in 4 stages, clusters of 2. The tile is in cuBLAS's column-major terms
# (it computes $C^T = B^T A^T$). The shared memory each kernel asks for agrees with that reading:
# stages x (the tile's two sides) x 64 x 2 bytes, plus an epilogue buffer.

# %%
exps = labkit.logs.experiments(rec)            # the record's experiments and those the lab keeps
ck = LK.cublas_kernel_rows(exps["cublas_kernels"], sms=rec.meta["gpu"]["sms"]) if "cublas_kernels" in exps else []
cols = ["shape", "C", "kernel", "grid", "cluster", "ring_kb", "smem_kb", "tiles", "waves"]
heads = ["M x N x K", "C", "kernel", "CTAs", "cluster", "stages x tiles, KB", "shared memory, KB", "tiles", "waves"]
helpers.display.table(ck, cols, heads, {"ring_kb": ".0f", "smem_kb": ".0f", "waves": ".2f"}) if ck \
    else print("cuBLAS's kernels are not in this record: run lab/probes/cublas_kernels.py on a GPU")

# %% [markdown]
# The ring the name describes accounts for all but 16-28 KB of each kernel's shared memory. Two choices
# stand out. At $5000^3$ the 256 x 152 tile makes exactly 5 waves: cuBLAS fills the last wave by its choice
# of tile, where rung 16 splits K. At 128 x 8192 x 8192 it runs 128 CTAs over all of K in 8 stages,
# with no split at all, where rungs 15 and 16 split K into parts.

# %% [markdown]
# ### The search in one list
#
# Each idea below was predicted, then measured; the section named in quotes has its numbers.
#
# - **Kept as rungs**: the skinny tile, 64 x 128 (rungs 17-18); one consumer warpgroup (19-20); the
#   wait hint (21-22, "Rungs 21-22: a measured knob becomes a rung"); descriptors built once (23-24);
#   clusters of 4 where the rows ask for them (25-26); cuBLAS's orientation, chosen per problem (29-30,
#   "Rungs 29-30: the orientation chosen per problem").
# - **Tried, and not in the rungs as built** (`TILE_N`, `CT_M` and `GROUP_M` stay knobs to try with
#   `helpers.try_kernel`): other ring depths and a drained ring ("Tried, and no faster"); an L2 prefetch
#   and other tile orders ("Three changes aimed at the loads", and, under the missed goals, "Tried: a squarer tile
#   order (`GROUP_M=16`)"); a tile width per shape ("Tried: a tile width per shape"); a 256-row tile
#   ("Tried: a 256-row tile"); cuBLAS's pairs along N ("Tried: cuBLAS's pairs along N (rung 31)"); the
#   orientation alone ("Tried: the orientation alone (`CT_M=128`)"); 128 CTAs ("Tried: 128 CTAs instead
#   of 132").
# - **Measured to explain**: what cuBLAS runs and does faster at 128 rows, the Tensor Cores alone, the
#   pipeline cut in two, the row stride and its counters, what is left at $5000^3$, and the missed goals
#   under Nsight Compute (the last sections).

# %% [markdown]
# ### Rung 17: cuBLAS's skinny kernel, in our template
#
# Rung 17 copies that M = 128 design: `ws_gemm` takes the tile and the ring as template parameters, a
# 64 x 128 tile whose two consumer warpgroups split the columns (`wgmma` m64n64k16), 8 stages of 24 KB,
# clusters of 2 multicasting B, no split. **Predicted before it ran: x1.25 over rung 16 at
# 128 x 8192 x 8192**, where B's 128 MiB are streamed once, **and x0.6 at $4096^3$** (half the reuse per
# byte loaded).

# %%
print(src[src.index("    // The block tile (rung 17"):src.index("    static_assert(STAGES >= 2 && 2 * STAGES")])
display(LK.gain_table(hop, 17, (128, 8192, 8192), predicted=1.25, clocks=True))
display(LK.gain_table(hop, 17, (4096, 4096, 4096), predicted=0.6))
e = H.ncu_at("rung17", (128, 8192, 8192))
c = (e or {}).get("counters", {})
print(f"Nsight Compute, 128 x 8192 x 8192: DRAM read {c['dram_read_bytes'] / 1e6:.0f} MB (B is "
      f"{8192 * 8192 * 2 / 1e6:.0f} MB), DRAM {c['dram_throughput_pct']:.0f}% of peak, Tensor pipe "
      f"{c['tensor_pipe_pct']:.0f}%" if e else "rung 17 has no Nsight Compute counters in this record")

# %% [markdown]
# Worse than predicted at both shapes. At 128 rows it reads B once from DRAM, yet keeps DRAM only
# about half busy. Its knobs there (`lab/probes/rung17.py`, each variant checked, three rounds). They were
# timed with the harness's old memset flush (see "How the harness empties L2"), so rung 17 as recorded here (320 TFLOP/s) is
# not the 371 of the table above: compare within this table only.

# %%
kn = exps["tail_split"]["skinny_knobs"]["rows"]
sk = [dict(r, knob=", ".join(f"{k}={v}" for k, v in r["knobs"].items()) or "as recorded (8 stages, clusters of 2)",
           vs=r["tflops"] / kn[0]["tflops"]) for r in kn]
helpers.display.table(sk, ["knob", "passed", "tflops", "vs"], ["macro", "correct", "TFLOP/s", "x as recorded"],
                      {"tflops": ".0f", "vs": ".2f"})

# %% [markdown]
# Each stage fewer costs speed, which suggests the CTAs wait for bytes in flight; 8 stages is the most
# that fits beside the epilogue buffers. **Try it**: predict rung 17 with 4 stages at $4096^3$, then run it
# (`STAGES=4` compiles it with `-DSKINNY_STAGES=4`).

# %%
sweep(17, "STAGES")

# %% [markdown]
# ### Rung 18: the skinny tile, writing FP32 C
#
# The FP32-C rungs 9-13 have 128 x 256 tiles: at 128 rows, 32 tiles for 132 SMs. Rung 18 is rung 17 with
# one template switch off (`HALF_C`), so C leaves through rung 13's FP32 epilogue. **Predicted before it
# ran: x0.98 over rung 17**: the same mainloop, twice the bytes of C (4 MB against 2 MB at 128 rows,
# beside 134 MB of B).

# %%
helpers.display.rung_diff(18)

# %%
for shape in ((128, 8192, 8192), (4096,) * 3):
    display(LK.gain_table(hop, 18, shape, predicted=0.98, digits=3, clocks=shape[0] == 128))
before = H.best_rung(hop, (128, 8192, 8192), "float32", below=18)
print(f"FP32 C at 128 rows, x cuBLAS FP32 C: rung {before['rung']} {before['frac_cublas']:.2f}, "
      f"rung 18 {H.gain_at(hop, 18, (128, 8192, 8192))['frac_cublas']:.2f}; FP16 C, x cuBLAS FP16 C: "
      f"rung 17 {H.gain_at(hop, 17, (128, 8192, 8192))['frac_cublas']:.2f}")

# %% [markdown]
# Each FP32-C comparison now has a rung of the right shape; at 128 rows both C types stand at about the
# same fraction of cuBLAS, and what holds rung 17 back there holds rung 18 too. The gains have three
# decimals here and for rung 20: a verdict compares the prediction with the p10-p90 spread unrounded. At
# $4096^3$ rung 18's spread starts at 0.981, just above the predicted 0.98: "better than predicted".

# %% [markdown]
# ### What cuBLAS does faster at 128 rows
#
# Nsight Compute on both rungs and on cuBLAS's own kernel for each C type, at 128 x 8192 x 8192 (its own
# cold cache, clocks not locked):

# %%
cmp = LK.ncu_compare(["rung17", "rung18", "cublas_fp16c", "cublas_fp32c"], (128, 8192, 8192))
helpers.display.table(cmp, ["target", "us", "dram_mb", "dram_pct", "l2_msectors", "tensor_pct", "warps_pct", "top_stall"],
                      ["kernel", "µs", "DRAM read, MB", "DRAM busy, %", "L2 sectors read, M", "Tensor pipe, %",
                       "warps active, %", "top stall"], dict.fromkeys(["us", "dram_mb", "dram_pct", "l2_msectors",
                                                                         "tensor_pct", "warps_pct"], ".0f"))

# %% [markdown]
# The same bytes from DRAM and about the same L2 reads: cuBLAS moves them in about three quarters of
# the time, with DRAM busier. The counters do not say why. cuBLAS's warps wait mostly on memory
# results (`long_scoreboard`); ours wait most at barriers, where the producer warpgroup's idle warps sit.
# The next sections take rung 17 apart instead.

# %% [markdown]
# ### Taking rung 17 apart: the Tensor Cores alone
#
# Is `wgmma` m64n64k16 too narrow to keep the Tensor Cores busy? A probe kernel (`lab/probes/wgmma_rate.py`)
# runs 4096 K-tiles of `wgmma` in every SM from shared memory, as a consumer issues them, and counts clocks:

# %%
print(src[src.index("    const long long t0 = clock64();"):src.index("    const long long t1 = clock64();")])
pa = exps["pipeline_apart"]
helpers.display.table(LK.rate_rows(pa), ["n", "warpgroups", "in_flight", "clk", "ideal", "share"],
                      ["N of m64nNk16", "warpgroups issuing", "groups left in flight", "clocks per K-tile",
                       "at 4096 FLOP/clock", "share of peak"], {"clk": ".0f", "ideal": ".0f", "share": ".2f"})

# %% [markdown]
# Every width reaches the peak, from one warpgroup or three, as long as one group stays in flight. Only a
# single warpgroup that drains each K-tile before issuing the next loses time. The Tensor Cores are not
# what holds rung 17 back.

# %% [markdown]
# ### The pipeline cut in two
#
# Rung 17 itself, compiled with probe switches that each remove one part (`PIPE_PROBE`, in the kernel
# file of the course's commit 8ec4c42 only: those builds compute wrong results by design, so only the
# full kernel is checked), timed in alternating rounds beside cuBLAS at 128 x 8192 x 8192:

# %%
cut = LK.apart_rows(pa, "apart")[:5] + LK.apart_rows(pa, "depth")[-2:-1] + LK.apart_rows(pa, "apart")[-1:]
helpers.display.table(cut, ["what", "us", "cublas_over", "correct", "mhz"],
                      ["what runs", "µs", "cuBLAS's time / this", "correct", "SM clock, MHz"],
                      {"us": ".1f", "cublas_over": ".2f"})

# %% [markdown]
# The loads with their barriers alone take about cuBLAS's time; the MMAs with their barriers but no bytes
# take a tenth longer. The whole takes about 10 µs more than its slower part. Without bytes, most of what
# the barriers cost is the consumers' wait for full stages: skip that wait and 9 µs go. (The last row but
# one is from another run of the probe: a kernel that loads nothing and multiplies nothing takes 8 µs.)

# %% [markdown]
# ### How a thread waits
#
# Every `mbar_wait` loops on `mbarrier.try_wait`, which suspends the waiting thread until the phase
# completes or a time limit passes, then answers; on "not yet" the loop asks again. A time hint does not
# change that: it only replaces the limit the hardware would choose (here with 10 ms, `10000000u`
# nanoseconds in the code below). Rungs 17 and 18 have it as a knob, `WAIT_HINT` (0 as recorded, 1 the
# hint, 2 a spin on `test_wait`):

# %%
prim = helpers.display.kernel_source("hopper_primitives.cuh")
print(prim[prim.index("    if constexpr (HOW == 1) {"):prim.index("    } else if constexpr (HOW == 2) {")])
helpers.display.table(LK.hint_rows(pa), ["kernel", "shape", "off", "on", "gain", "passed", "mhz", "ref", "on_vs_ref"],
                      ["kernel", "M x N x K", "TFLOP/s, no hint", "with the hint", "gain", "correct", "SM clock, MHz",
                       "compared with", "with the hint / it"],
                      {"off": ".0f", "on": ".0f", "gain": ".2f", "on_vs_ref": ".2f"})

# %% [markdown]
# Found by trying, not predicted. The hint pays where a thread waits often: rungs 17 and 18 wait once per
# 1 MFLOP K-tile and gain 5%, with either C. Rungs 13-16 and the FP8 kernels, with four times the work
# per wait or more, gained nothing (0.97 to 1.01), at clocks that moved during their timings. With the
# hint, rung 17 is at 0.79x cuBLAS: the target of 0.90x is still missed.

# %% [markdown]
# ### Tried, and no faster
#
# Other changes to the ring, each timed beside the same kernel without it, with the hint on
# (`lab/probes/wgmma_rate.py --set hold` at commit 8ec4c42):

# %%
helpers.display.table(LK.apart_rows(pa, "hold"), ["what", "us", "vs_first", "cublas_over", "correct"],
                      ["what changes", "µs", "x with the hint alone", "cuBLAS's time / this", "correct"],
                      {"us": ".1f", "vs_first": ".2f", "cublas_over": ".2f"})

# %% [markdown]
# Six, seven or eight stages now give the same time within 2%, so with the hint the ring is no longer short
# of stages; a consumer that drains each K-tile (0 groups in flight) gains under 1%. With the hint the loads
# alone take 39 µs and the MMAs with their barriers 38 (`--set wait`), each within 5% of cuBLAS; together
# they take 47. Why is still open. One difference in structure shows in Nsight Compute's sampling of each
# instruction (`lab/probes/ncu_source.py`): both kernels issue the same number of m64n64k16 `wgmma`, but
# cuBLAS issues a stage's eight from one warpgroup, rung 17 four from each of two, and cuBLAS executes a
# third of rung 17's instructions. Rung 19 tries that.

# %% [markdown]
# ### Rung 19: one consumer warpgroup
#
# Rung 19 is rung 17 with one template argument changed, `CONSUMERS = 1`: one warpgroup issues
# `wgmma` m64n128k16 over the whole 64 x 128 tile (64 accumulators per thread), in 256 threads.
# **Predicted before it ran: x1.10 over rung 17 at 128 x 8192 x 8192** (half the barrier arrivals and
# issue work per stage; about 0.81x cuBLAS) **and x1.0 at $4096^3$** (the same bytes per FLOP).

# %%
tiles = {f"rung {k}": (*HOPPER_RUNGS[k].block_tile, HOPPER_RUNGS[k].block[0] // 128 - 1) for k in (17, 19)}
fig = LP.consumer_slices(tiles)              # consumers = threads / 128 - 1 (the producer)

# %%
switch_lines("CONSUMERS")

# %%
display(LK.gain_table(hop, 19, (128, 8192, 8192), predicted=1.10, base=17, clocks=True))
display(LK.gain_table(hop, 19, (4096,) * 3, base=17))
miss_note(19, (4096,) * 3, base=17)

# %% [markdown]
# As predicted at 128 rows, where it was the fastest FP16-C rung until rung 21; better than predicted where the
# chip is full. Its 0.96x cuBLAS at 128 rows is far above the 0.81x the prediction implied, though its gain
# over rung 17 is no larger than predicted: the difference lies in cuBLAS's timings. Beside rung 19 cuBLAS
# gave 414 TFLOP/s, against 448 beside rung 17, both under the power cap at 1635 MHz while the rungs ran at
# 1965. At 128 rows these ratios move with cuBLAS's own timing; judge by the targets table, which times the
# two in turn.
#
# Rung 20 is rung 19 writing FP32 C (`HALF_C` off, as rung 18 is
# rung 17), **predicted x0.98 over rung 19**:

# %%
for shape in ((128, 8192, 8192), (4096,) * 3):
    display(LK.gain_table(hop, 20, shape, predicted=0.98, digits=3, clocks=shape[0] == 128))

# %% [markdown]
# ### Rung 19 beside cuBLAS, instruction by instruction
#
# Nsight Compute's sampling of every instruction (`lab/probes/ncu_source.py`) at 128 x 8192 x 8192, rung 17
# with the wait hint, rung 19, and cuBLAS's kernel:

# %%
m128 = LK.load_log("ncu-source-m128", "lab/probes/ncu_source.py (with Nsight Compute)")
helpers.display.table(LK.sampling_rows(m128, ["rung17_hint", "rung19", "cublas_fp16c"]),
                      ["kernel", "warp_minstr", "gmma", "gmma_shape", "opcodes", "top_stall"],
                      ["kernel", "warp instructions, M", "wgmma executed", "wgmma shape", "most executed",
                       "top stall"], {"warp_minstr": ".1f", "gmma": ".0f"})

# %% [markdown]
# One warpgroup halved the instructions, yet rung 19 still executes half as many again as cuBLAS.
# Before every `wgmma` it rebuilds both shared-memory descriptors from their addresses (`LOP3`, `SHF`,
# `IMAD`: the code below) and moves them into uniform registers (`R2UR`); cuBLAS adds a constant to
# descriptors already in uniform registers (`UIADD3`) between its `HGMMA`s.

# %%
print(src[src.index("__device__ __forceinline__ u64 desc_encode"):src.index("// A, \"K-major\"")])

# %% [markdown]
# **Try it**: does the wait hint add to one consumer's gain? Predict, then run
# `helpers.try_kernel(19, WAIT_HINT=1)`; the next section has the answer.

# %% [markdown]
# ### Rungs 21-22: a measured knob becomes a rung
#
# Rungs 19 and 20's knobs at 128 x 8192 x 8192 (`lab/probes/rung17.py RUNG --knobs`, each setting checked,
# the median of three rounds; `WAIT_HINT=1` compiles `-DSKINNY_WAIT=1`):

# %%
helpers.display.table(LK.knob_round("rung19-20-knobs"), ["rung", "knob", "passed", "tflops", "vs", "mhz"],
                      ["rung", "knob", "correct", "TFLOP/s", "x as recorded", "MHz"], {"tflops": ".0f", "vs": ".2f"})

# %% [markdown]
# Only the hint paid, so rungs 21 and 22 are rungs 19 and 20 with it set: one template argument.
# **Predicted before they ran: x1.10 and x1.08 over rungs 19 and 20 at 128 rows** (what the knob
# measured) **and x1.05 at $4096^3$** (the same waits per FLOP, but more of the time is L2's there).

# %%
helpers.display.rung_diff(21)

# %%
for k, at_128 in ((21, 1.10), (22, 1.08)):
    display(LK.gain_table(hop, k, (128, 8192, 8192), predicted=at_128, clocks=True))
    display(LK.gain_table(hop, k, (4096,) * 3))
miss_note(21, (4096,) * 3)

# %% [markdown]
# As predicted at 128 rows. There they show 1.07x and 0.96x cuBLAS writing the same C, but cuBLAS's timings
# beside them ran under the power cap at 1515 and 1530 MHz, the rungs at 1965, so those ratios flatter the
# rungs. Timed in turn with cuBLAS, the skinny rungs meet the 0.90x goal with either C (the targets table
# above). **Try it**: predict rung 21 without the hint, then run it.

# %% [markdown]
# ### Rungs 23-24: descriptors built once
#
# Two slides back, rung 19 rebuilt both descriptors before every `wgmma`, and cuBLAS added to them.
# Rungs 23 and 24 are rungs 21 and 22 doing what cuBLAS does: each consumer builds its slice's
# descriptors in stage 0 once, then adds the stage's offset and the k-step's, in units of 16 bytes.

# %%
print(src[src.index("template <int NACC>\n__device__ __forceinline__ void mma_ktile("):
          src.index("// Rung 29 (C^T): one K-tile")])

# %% [markdown]
# **Predicted before they ran: x1.03 over rungs 21 and 22 at 128 rows and at $4096^3$**, what the same
# code measured on rung 21 at 128 rows as a probe switch (`lab/probes/wait_hint.py --desc`).

# %%
for k in (23, 24):
    display(LK.gain_table(hop, k, (128, 8192, 8192), clocks=True))
    display(LK.gain_table(hop, k, (4096,) * 3))
miss_note(23, (4096,) * 3)

# %% [markdown]
# Fewer instructions for the same `wgmma`s: rungs 23 and 24 are the fastest rungs of their C types at 128 rows,
# though there the spread of their timings also holds no gain. **Try it**: predict rung 23 with `DESC_ADD=0`, then run it.

# %% [markdown]
# ### Filling the waves with the tile
#
# How much of a persistent grid's work is output: the tile slots of all its waves against the tiles' part
# inside C (`LK.tile_efficiency`). One tile for every size leaves gaps; a menu of widths (here 128-row
# tiles, widths 128 to 256 in steps of 8) fills nearly all of them. Computed, not measured:

# %%
ns = range(4000, 9001, 16)
curves = {"one 128 x 256 tile (rung 15's)": [LK.tile_efficiency(n, n, 128, 256) for n in ns],
          "the best 128-row width": [LK.tile_efficiency(n, n, 128, LK.best_tile_width(n)) for n in ns]}
fig = LP.wave_efficiency(ns, curves, marks={"cuBLAS at 5000^3: 256 x 152": (5000, LK.tile_efficiency(
    5000, 5000, 152, 256))}, title="Tile slots holding output, 132 SMs", source="computed from the tile counts")

# %% [markdown]
# **Try it.** Which width of a 128-row tile fills the waves of $5000^3$ best? Compare with cuBLAS's tile.

# %%
print("the best width of a 128-row tile at 5000^3:", LK.best_tile_width(5000))

# %% [markdown]
# ### Square sizes off the tile grid
#
# Rungs 13-16 at four sizes that are not multiples of 128, in one run (`lab/probes/rungs_side_by_side.py`):
# the best rung of each C type against cuBLAS writing the same C, timed just before it, with the SM
# clock of each timing.

# %%
sq = LK.square_rows(exps["square_sizes"]) if "square_sizes" in exps else []
helpers.display.table(sq, ["shape", "C", "rung", "tflops", "mhz", "cublas", "cublas_mhz", "ratio"],
                      ["M x N x K", "C", "best rung", "TFLOP/s", "MHz", "cuBLAS, same C", "MHz", "x cuBLAS"],
                      {"tflops": ".0f", "cublas": ".0f", "ratio": ".2f"}) if sq else print(
    "not in this record: run lab/probes/rungs_side_by_side.py OUT.json 13 14 15 16 --shapes 6000,7000,8000,5000")

# %% [markdown]
# Rows of 14000 bytes (7000 halves) start as far inside a sector as rows of 10000 bytes, yet in this
# probe the best rungs match cuBLAS at $7000^3$ (FP16 C) or pass it (FP32 C). But cuBLAS's clock dropped
# during its FP16-C timing (1770 MHz against the rung's 1980), and that ratio flatters the rung. The
# targets table times the two in turn instead, and there both C types meet 0.95x. Read the clocks before
# the ratios.

# %% [markdown]
# ### cuBLAS and the row stride
#
# The row-stride probe shown on lesson 6's rung 16 slide, again, with cuBLAS reading the same wide buffers through its
# leading dimensions; and at M = 128, rows of B of 16384 bytes (a power of two) against 16512. Timed with
# the old memset flush (see "How the harness empties L2"), like all of experiment `tail_split`: compare within each table only.

# %%
ts = exps["tail_split"]
for key, names in (("row_alignment_cublas", ["rung 14", "rung 16"]), ("row_stride_skinny", ["rung 15", "rung 16"])):
    rows = H.alignment_rows(ts[key]["rows"]) if key in ts else []
    cols = ["row_bytes"] + [c for n in names + ["cuBLAS"] for c in (n, f"{n} MHz")]
    display(helpers.display.table(rows, cols, ["bytes per row of B"] + [c.replace(" MHz", ", MHz") for c in cols[1:]],
                                  dict.fromkeys(names + ["cuBLAS"], ".0f")))

# %% [markdown]
# From 10000-byte to 10112-byte rows cuBLAS gains 3% and rung 16 13%: cuBLAS hardly pays for rows that
# start inside a sector. A power-of-two row stride is not what holds rungs 15 and 16 back at M = 128.
# Not tried here yet: a tile chosen per shape at run time, clusters along N sharing A, full stream-K.

# %% [markdown]
# ### What the counters say about the row stride
#
# A TMA box row is 128 bytes of one matrix row; memory serves L2 requests in 128-byte lines. Where the
# box rows of eight consecutive rows fall:

# %%
fig = LP.box_rows_in_lines([10000, 10112])

# %% [markdown]
# Rung 16 and cuBLAS at $5000^3$, each launched once under Nsight Compute with rows of 10000 and of
# 10112 bytes (`lab/probes/ncu_row_alignment.py`; clocks not locked):

# %%
na = LK.ncu_alignment_rows()
helpers.display.table(na, ["kernel", "row_bytes", "us", "requests_m", "sectors_m", "dram_mb", "tensor_pct",
                           "long_scoreboard"],
                      ["kernel", "bytes per row", "µs", "L2 requests, M", "L2 sectors read, M", "DRAM read, MB",
                       "tensor pipe, %", "long-scoreboard stall"],
                      {"us": ".0f", "requests_m": ".1f", "sectors_m": ".1f", "dram_mb": ".0f", "tensor_pct": ".0f",
                       "long_scoreboard": ".2f"})

# %% [markdown]
# Both kernels make about twice the L2 requests when rows start 16 bytes into a line, as the picture
# says: 7 of every 8 box rows span two lines. Rung 16 also reads more from DRAM (cuBLAS reads the same), its
# long-scoreboard stall (a warp waiting for a result from the memory pipeline) grows about threefold
# where cuBLAS's grows by a quarter, and its tensor pipe is busy a smaller share of the time while
# cuBLAS's hardly changes.

# %% [markdown]
# ### Three changes aimed at the loads
#
# Each checked and timed in three alternating rounds beside cuBLAS (`lab/probes/wait_hint.py
# --prefetch`, `--group` and `--cluster`):

# %%
sw = [dict(r, change=f"{key.upper()}={r[key]}") for key, default in (("l2_prefetch", 0), ("group_m", 8),
                                                                        ("cluster_m", 2))
      for r in LK.switch_rows(key, default)]
helpers.display.table(sw, ["kernel", "shape", "change", "passed", "tflops", "gain", "vs_cublas", "mhz"],
                      ["kernel", "M x N x K", "build", "correct", "TFLOP/s", "x as recorded", "x cuBLAS, same C",
                       "SM clock, MHz"], {"tflops": ".0f", "gain": ".2f", "vs_cublas": ".2f"})

# %% [markdown]
# `L2_PREFETCH=d` (a probe switch, kept in commit 1bcb7f2 only) had the producer also ask for K-tile
# kt + d to be brought into L2 while it loads kt: one more copy-engine operation per box. It ran at about
# half speed at $5000^3$ and slower at $4096^3$ too, which fits a copy engine that is already busy
# with these loads. A wider or narrower tile order (`GROUP_M`) was no faster. Clusters of 4
# (`CLUSTER_M=4`, a knob of rung 14) paid: each CTA asks for a quarter of B instead of half, so a
# K-tile costs it 192 box rows instead of 256, and rung 14 ran 8% faster at $5000^3$ (predicted
# before it ran: 4%). It is still short of cuBLAS there. Without a GPU, the cell below shows the recorded
# knob sweep instead, which ran at $4096^3$ only (its first line says so): there clusters of 4 were slower,
# and the next section says why.

# %% [markdown]
# ### Rungs 25-26: clusters of 4 where the rows ask for them
#
# The knob became two rungs: rungs 14 and 13 with a macro of their own, `QUAD_CLUSTER`, in the template
# call. Built in clusters of 4 for every shape, their first run was faster at $5000^3$ but slower at
# $4096^3$ and $2048^3$ (the kernel's comment quotes that run). The change, then how many clusters run at once:

# %%
helpers.display.rung_diff(25)

# %%
from helpers.kernels import cluster_waves, quad_choice
grid = LK.quad_grid()       # the grids rungs 14 and 25 launched with on the H200 (results/logs/quad-grid)
print(f"at once: {grid[2]} clusters of 2 ({2 * grid[2]} CTAs), {grid[4]} clusters of 4 ({4 * grid[4]} CTAs)")
print(f"waves at 4096^3: {cluster_waves(4096, 4096, 2, grid[2])} of units of 2 tiles, "
      f"{cluster_waves(4096, 4096, 4, grid[4])} of units of 4")

# %% [markdown]
# A cluster's CTAs run in one GPC (a group of SMs), and not every GPC's SMs divide into fours, so
# fewer CTAs run at once and the same tiles can take one more wave. The launcher therefore chooses per
# problem, before it compiles:

# %%
helpers.display.python_code(quad_choice)

# %% [markdown]
# ### Rungs 25-26 on the H200
#
# **Predicted after the first run: x1.12 over rungs 14 and 13 at $5000^3$** (that run's gain, where
# clusters of 4 are built) **and x1.0 elsewhere** (the same build as rungs 14 and 13). Rung 25 over rung 14,
# from the record:

# %%
helpers.display.table(LK.quad_rows(hop, 1.12, [s for s in H.TIMED if s[0] > 128]),
                      ["shape", "inside", "waves2", "waves4", "cluster", "predicted", "measured", "low", "high",
                       "verdict"],
                      ["M x N x K", "rows start inside a line", "waves, units of 2", "waves, units of 4", "CTAs per cluster",
                       "predicted", "measured", "p10-p90 from", "to", ""],
                      {"predicted": "g", "measured": ".2f", "low": ".2f", "high": ".2f"})

# %%
for k, base in ((25, 14), (26, 13)):
    display(LK.gain_table(hop, k, (5000,) * 3, predicted=1.12, base=base))
miss_note(25, (5000,) * 3, 1.12, 14, written="before the record")

# %% [markdown]
# Clusters of 4 paid at $5000^3$ (rung 26's spread also holds no gain), and rungs 25 and 26 stay short of
# the 0.95x goal there; rungs 29-30 below come closer. Where they build rung 14's or 13's kernel, the spread of two
# timings of the same code holds every difference. **Try it**: predict rung 25 in clusters of 4 at
# $4096^3$, then run it. On a GPU, `CLUSTER_M=4` forces clusters of 4 at every size. Without one, the cell
# shows the recorded sweep, which has no such row: as recorded, rung 25 ran the launcher's choice, clusters of
# 2 at $4096^3$ (its first row says "chosen per shape"), the same kernel as its `CLUSTER_M=2` row. For
# clusters of 4 at $4096^3$, see rung 14's sweep (`helpers.try_kernel(14, CLUSTER_M=4)`, as in lesson 6).

# %% [markdown]
# ### What is left at $5000^3$
#
# Rung 25 and cuBLAS under Nsight Compute with rows of 10000 bytes (`lab/probes/ncu_row_alignment.py
# --pads 0 --rungs 25`, one launch each, clocks not locked), beside rung 16 from the earlier run:

# %%
na = [r for r in LK.ncu_alignment_rows() if r["kernel"] == "rung 16" and r["row_bytes"] == 10000]
na += LK.ncu_alignment_rows("ncu-row-alignment-r25")
helpers.display.table(na, ["kernel", "us", "requests_m", "dram_mb", "tensor_pct", "long_scoreboard"],
                      ["kernel", "µs", "L2 requests, M", "DRAM read, MB", "tensor pipe, %", "long-scoreboard stall"],
                      {"us": ".0f", "requests_m": ".1f", "dram_mb": ".0f", "tensor_pct": ".0f",
                       "long_scoreboard": ".2f"})

# %%
slots25 = LK.tile_efficiency(5000, 5000, 128, 256, sms=4 * grid[4])      # the CTAs that run at once
print(f"tile slots holding output at 5000^3: rung 25 {slots25:.0%} (128 x 256 tiles, {4 * grid[4]} CTAs), "
      f"cuBLAS {LK.tile_efficiency(5000, 5000, 152, 256):.0%} (256 x 152 tiles)")

# %% [markdown]
# With clusters of 4, rung 25 makes fewer L2 requests than cuBLAS, its long-scoreboard stall is less
# than half of rung 16's, and its tensor pipe is as busy as cuBLAS's. Yet it takes longer: more of its tiles' work falls
# outside C (the tensor pipe multiplies those zeros too), which accounts for part of the gap; it also
# reads more from DRAM than cuBLAS. The next section tries a tile chosen per shape.

# %% [markdown]
# ### Tried: a tile width per shape
#
# "Filling the waves with the tile" found 128 x 152 tiles for $5000^3$: in clusters of 2 they make 10
# whole waves of 66 clusters, where rung 25 makes 7 waves of 30 clusters of 4, the last two thirds full.
# The width, chosen per problem, was first built as two rungs of its own (*the TILE_N probe* here: their
# numbers, 27-28, now belong to the 256-row tile of the next section), and is now
# the knob `TILE_N` of rungs 25-26: a multiple of 8 from 128 to 256 (wgmma names its width in the
# instruction: one wrapper per width in `kernels/wgmma_widths.cuh`).
# **Predicted: x1.09 over rung 25 at $5000^3$**: waves x width 1520
# against 1792, less the x1.08 that clusters of 4 gave rung 14 there. B still arrives in boxes of 64
# columns, so a width that is no multiple of 64 loads a last box that reaches into the next tile, and a
# cluster may share the boxes unevenly (C's columns past its last whole box are stored from registers,
# `store_rest`):

# %%
switch_lines("NBOX")

# %% [markdown]
# The TILE_N probe's first run (`lab/probes/tile_n.py`), each build beside its rung in one process:

# %%
for (k, shape), r in LK.tile_n_first_run().items():
    if shape[0] == 5000:
        print(f"TILE_N probe, {r['tile'][0]} x {r['tile'][1]} tiles: x{r['ratio']:.2f} of rung {k - 2} at 5000^3 "
              f"(C {r['model']} to the model's)")

# %% [markdown]
# **Missed by far.** The sweep at $5000^3$: each width checked, then three alternating rounds with rung
# 25 as built. The clocks fell during this run, so compare within the table; the row of width 256 in
# clusters of 4 is rung 25's own code, and its distance from 1.00 is the spread.

# %%
helpers.display.table(LK.tile_n_rows(),
                      ["what", "width", "cluster", "waves", "rows_per_mflop", "tflops", "vs_rung25", "mhz"],
                      ["built with", "TILE_N", "CTAs per cluster", "waves", "box rows per MFLOP", "TFLOP/s",
                       "x rung 25", "MHz"],
                      {"rows_per_mflop": ".0f", "tflops": ".0f", "vs_rung25": ".2f"})

# %% [markdown]
# No width beat rung 25 by more than that spread. The likely cost (no profiler has looked at these
# builds yet): every tile narrower than 256 asks L2 for more box rows per MFLOP, and at $5000^3$ each
# box row costs two requests. cuBLAS's 256 x 152 tile fills the waves, and one such tile alone loads
# fewer rows of A and B per output than one of our 128 x 256:
# (256 + 152) / (256 x 152) against (128 + 256) / (128 x 256). That count leaves out the clusters,
# though. Counted as in the table, with the rows a cluster multicasts split among its CTAs, rung 25 in
# fours asks for fewer box rows per MFLOP than cuBLAS's tile in pairs, and a 256-row tile in pairs asks
# for more than either (the next section counts all three). A 256-row tile was tried next all the same,
# for the waves it fills. **Try it**: predict rung 25 with `TILE_N=192` at $4096^3$,
# where 256 already fills the waves, then run it. (The recorded sweep there: 152 is slower even than
# 128, whose boxes are whole.)

# %% [markdown]
# ### Tried: a 256-row tile
#
# Rungs 27-28 (today's, not the TILE_N probe; written, checked and timed once; not yet in the ladder or the
# record) build a tile of 256 rows where tiles of 128 x 256 leave the last wave mostly empty, its width chosen
# so that the tiles fill whole waves (`LR.tall_choice`), and rung 14's (13's) own tile elsewhere.
# Each consumer warpgroup owns two 64-row slices, so `ws_gemm` gains a loop over them:

# %%
fn = labkit.listings.research_functions()["ws_gemm"].splitlines()
print("\n".join(line for line in fn if re.search(r"\bSUB\b|acc\[h\]|rung 27", line)))

# %%
fits = lambda: (LK.quad_grid()[2],) * 2      # clusters of 2 the H200's driver ran at once (rung 14's grid)
print({n: LR.tall_choice(n, n, fits) for n in (4096, 5000, 8192)})

# %% [markdown]
# **Predicted before it ran: x1.05 over rung 25 (26) at $5000^3$, x1.00 where it builds rung 14's (13's)
# tile.** The first run (`lab/probes/rung17.py OUT.json 27`, then `28`), each rung in its own process
# beside cuBLAS:

# %%
helpers.display.table(LK.tall_first_run(), ["rung", "shape", "tile", "predicted", "tflops", "base_tflops", "ratio",
                                           "vs_cublas", "checked", "why"],
                      ["rung", "M x N x K", "tile built", "predicted", "TFLOP/s", "rung 25 (26)", "x rung 25 (26)",
                       "x cuBLAS, same C", "correct", "read with care"],
                      {"tflops": ".0f", "base_tflops": ".0f", "ratio": ".2f", "vs_cublas": ".2f"})

# %% [markdown]
# **Missed by far at $5000^3$**, and correct everywhere (bit for bit). Where both build rung 14's kernel the
# ratio is their spread (at $8192^3$ the clock fell). Counting box rows does not explain the loss: per MFLOP
# the tall tile asks L2 for more rows than rung 25, but cuBLAS's tile (152 rows by 256, in pairs that share
# A) asks for nearly as many and runs fastest:

# %%
for what, args in (("rung 25, 128 x 256 in fours", (256, 4)), ("rung 27, 256 x 152 in pairs", (152, 2, 256)),
                   ("cuBLAS, 152 x 256 in pairs sharing A", (256, 2, 152, "A"))):
    print(f"{what}: {LK.box_rows_per_mflop(*args):.0f} box rows per MFLOP")

# %% [markdown]
# Two probes after that run (logs in `results/logs`, `ncu-row-alignment-tall` and `tall-alignment`) say where
# it goes. Under Nsight Compute at $5000^3$ the tall tile keeps the tensor pipe busy a smaller share of the
# time than rung 25, makes more L2 requests and waits longer for memory (long-scoreboard stalls). With
# rows padded to a multiple of 128 bytes it gains more than rung 25 and cuBLAS do, to within 1% of rung 25,
# still below cuBLAS. So rows that start inside a 128-byte line cost it most: it reads 256 rows of A per
# K-tile, and each such row is two L2 requests. **Try it**: which tile would the launcher build for your
# own shape? Add a size to the tuple in the `tall_choice` cell and rerun it.

# %% [markdown]
# Is it the height or the ring? At sizes whose rows are whole lines, the tall tile forced to three builds
# (`lab/probes/tall_tile.py`, seven alternating rounds with rung 14, predicted before it ran):

# %%
helpers.display.table(LK.tall_tile_rows(), ["n", "build", "predicted", "ratio", "verdict", "tflops", "mhz", "checked"],
                      ["n", "256-row tile", "predicted", "x rung 14", "verdict", "TFLOP/s", "MHz", "correct"],
                      {"predicted": ".2f", "ratio": ".3f", "tflops": ".0f"})

# %% [markdown]
# The height costs 1-2%. Three stages instead of four cost 14-16%, and 256 x 152 fits only three: 56 KB a
# stage, because B's 152 columns take three boxes of 64.

# %% [markdown]
# ### Rungs 29-30: cuBLAS's orientation
#
# cuBLAS's kernel at $5000^3$ computes $C^T$. Why: wgmma's M is 64 rows per instruction, so a tile 160 rows high
# has no whole number of 64-row slices, while its N may be any multiple of 8. Rung 29 computes each 64-column slice
# of a 160 x 256 tile as its transpose, $D' = B^T A^T$: wgmma's A is a box of B read MN-major, its B the tile's 160
# rows of A. A stage needs no padding (20 KB of A, 32 KB of B), so four stages fit.

# %%
fig = LP.transposed_tile()
print(labkit.listings.research_functions()["mma_ktile_ct"])

# %% [markdown]
# The epilogue turns each 8 x 8 block of $D'$ back into 8 rows of C (`stmatrix` with `.trans`). Where does it pay?
# Rung 25's waves over rung 29's tile-times, computed (`LR.ct_gain`). **Try it**: add your own size
# to the tuple, predict, then compare with the runs below.

# %%
grid = LK.quad_grid()                           # clusters of 4 and of 2 the H200's driver ran at once
print({n: round(LR.ct_gain(n, n, lambda: (grid[4], grid[2])), 2) for n in (3000, 4096, 5000, 5500, 6750)})

# %% [markdown]
# ### The C^T tile at every size
#
# **Predicted before each run**: x1.08 at $5000^3$ (the waves' x1.12, less some for the box rows); the other sizes
# from the waves, times the first run's shortfall (0.94) where rung 25 builds clusters of 4 ($3000^3$). The C^T
# tile forced (`-DCT_M=160`) against rung 25 in alternating rounds (`lab/probes/ct_tile.py`), beside cuBLAS
# writing FP16 C:

# %%
ct = LK.ct_tile_rows()
helpers.display.table(ct, ["shape", "predicted", "ratio", "verdict", "won", "tflops", "base_tflops", "vs_cublas", "mhz",
                           "checked"],
                      ["M x N x K", "predicted", "x rung 25", "verdict", "rounds faster", "TFLOP/s", "rung 25",
                       "x cuBLAS", "MHz", "correct"], {"predicted": ".2f", "ratio": ".3f", "tflops": ".0f", "base_tflops": ".0f",
                                           "vs_cublas": ".2f"})

# %%
for r in ct:
    if r["note"]:
        print(f"{r['shape']}: {r['note']}")

# %% [markdown]
# **Faster wherever the waves said so**, slower where they said so, and correct everywhere (bit for bit). At
# $5496^3$ and $6744^3$, whose rows TMA reads as they are, it reaches 0.95x cuBLAS or more. At $5000^3$ it gains
# what was predicted but falls short of cuBLAS. Under Nsight Compute both keep the tensor pipe about equally busy; the
# difference is the tile. cuBLAS pairs 152-row tiles along N, sharing A; pairs along M, as here,
# need an even number of tile rows, and 152-row tiles give 33 at 5000:

# %%
helpers.display.table([r for r in LK.ncu_alignment_rows("ncu-row-alignment-ct") if r["row_bytes"] == 10000],
                      ["kernel", "us", "tensor_pct", "requests_m", "long_scoreboard"],
                      ["kernel", "µs", "tensor pipe, %", "L2 requests, M", "long-scoreboard stall"],
                      {"us": ".0f", "tensor_pct": ".0f", "requests_m": ".1f", "long_scoreboard": ".2f"})

# %%
for what, bm in (("rung 29, 160 x 256 in pairs along M", 160), ("cuBLAS, 152 x 256 in pairs along N", 152)):
    print(f"{what}: {LK.tile_efficiency(5000, 5000, bm, 256):.1%} of the tile slots hold output")

# %% [markdown]
# ### Rungs 29-30: the orientation chosen per problem
#
# The C^T tile pays only where the waves say so, so rungs 29 and 30 choose per problem, as rungs 25-26 choose their
# cluster (`helpers.launch.orientation_build`): the C^T tile where the wave model gives it x1.05 or more over rung 25
# (26), rung 25's (26's) own kernel elsewhere. **Predicted before their first run: x1.05 at $5000^3$, x1.07 at
# $5496^3$, x1.00 where rung 25's kernel is built.** Each rung in its own process beside cuBLAS, then rung 25 (26) the
# same way (`lab/probes/rung17.py`):

# %%
helpers.display.table(LK.chooser_first_run(), ["rung", "shape", "built", "predicted", "ratio", "tflops", "vs_cublas",
                                              "mhz", "power_w", "checked", "why"],
                      ["rung", "M x N x K", "built", "predicted", "x rung 25 (26)", "TFLOP/s", "x cuBLAS, same C",
                       "MHz, rung / base", "W, rung / base", "correct", "read with care"],
                      {"ratio": ".3f", "tflops": ".0f", "vs_cublas": ".2f"})

# %% [markdown]
# Correct everywhere, bit for bit. Where the C^T tile was built: short of the prediction at $5000^3$, close to it at
# $5496^3$, where rung 29 matches cuBLAS writing FP16 C. Where rung 25's (26's) kernel was built, the ratio stays
# within 1% of 1.00, except at $8192^3$, where the clock fell. Then in the record, at $5000^3$:

# %%
for k, base in ((29, 25), (30, 26)):
    display(LK.gain_table(hop, k, (5000,) * 3, predicted=1.05, base=base))
    miss_note(k, (5000,) * 3, 1.05, base, written="before the record")

# %% [markdown]
# Rung 29 again gained less than predicted; rung 30's median gain is about the prediction, though its spread
# holds no gain too. Timed in turn with cuBLAS (the targets table), rung 29 meets the 0.95x goal there and rung
# 30 misses it. **Try it**: force the C^T
# tile at $4096^3$ (`CT_M=160`, or `CT_M=192, STAGES=3` for taller tiles in a shorter ring). The waves predict
# x0.80 for `CT_M=160`.

# %% [markdown]
# ### Tried: cuBLAS's pairs along N (rung 31)
#
# Rung 31 copies cuBLAS's tile at $5000^3$ (`PAIR_N`): 152 x 256 as C^T, a cluster's two tiles side by side along
# N. Each CTA loads 80 of the tile's rows of A and multicasts them to both; each loads its own B; C leaves in 8-row
# boxes. **Predicted before it ran, over rung 29 with its C^T tile forced: x1.03 at $5000^3$ and $4096^3$, x0.88 at
# $5496^3$** (the waves, less some for the box rows). Its first launch failed wherever N has an odd number of tile
# columns: the last pair's second CTA, past N, counted negative boxes of B in its stage's byte count. Fixed, then
# in alternating rounds (`lab/probes/ct_tile.py --pair-n`):

# %%
helpers.display.table(LK.ct_tile_rows(("ct-pair-n",), new=31, base=29),
                      ["shape", "predicted", "ratio", "verdict", "won", "tflops", "base_tflops", "vs_cublas", "mhz",
                       "power_w", "checked"],
                      ["M x N x K", "predicted", "x rung 29", "verdict", "rounds faster", "TFLOP/s", "rung 29", "x cuBLAS",
                       "MHz", "W, at most", "correct"], {"predicted": ".2f", "ratio": ".3f", "tflops": ".0f",
                                                   "base_tflops": ".0f", "vs_cublas": ".2f"})

# %% [markdown]
# Correct everywhere, bit for bit (and the sanitizers found nothing), but slower than rung 29 in every round at
# $5000^3$, the size it was built for. There and at $5496^3$ the SM clock fell to about 1500 MHz in most rounds,
# for both kernels alike. Rung 31 stays out of the ladder.

# %% [markdown]
# ### Why rung 31 lost
#
# Under Nsight Compute at $5000^3$ (one launch each, `lab/probes/ncu_row_alignment.py --rungs 29,31`):

# %%
display(helpers.display.table(LK.ncu_alignment_rows("ncu-pair-n"),
                              ["kernel", "us", "tensor_pct", "sectors_m", "dram_mb", "long_scoreboard", "top_stall"],
                              ["kernel", "µs", "tensor pipe, %", "L2 read sectors, M", "DRAM read, MB",
                               "long-scoreboard stall", "top stall"], {"us": ".0f", "tensor_pct": ".0f",
                                                                       "sectors_m": ".1f", "dram_mb": ".0f",
                                                                       "long_scoreboard": ".2f"}))
# rows of A and B a tile asks of L2 per K-tile: rung 29's pair shares B (160 + 256 / 2), rung 31's shares A (80 + 256)
asks = {"rung 29": math.ceil(5000 / 160) * math.ceil(5000 / 256) * (160 + 256 / 2),
        "rung 31": math.ceil(5000 / 152) * math.ceil(5000 / 256) * (160 / 2 + 256)}
print(f"rows asked of L2, all tiles, rung 31 / rung 29: {asks['rung 31'] / asks['rung 29']:.2f}")

# %% [markdown]
# **Its loads cost more than its waves saved.** Sharing A instead of B, each tile asks L2 for more rows for
# its outputs: the count above predicts the measured rise in L2 sectors. DRAM reads rise more than that, loads wait
# about twice as long, and the tensor pipe drops from 93% to 82% busy.

# %% [markdown]
# ### Tried: the orientation alone (`CT_M=128`)
#
# cuBLAS's kernel at $4096^3$ (the table at the start of this story) is rung 14's tile and ring, 128 x 256 in
# 4 stages and clusters of 2, computed as C^T. Is the orientation worth anything by itself? Rung 29 with
# `CT_M=128` is exactly that. **Predicted before it ran: x1.00 over rung 25 at $4096^3$ and $2048^3$** (the same
# tile, the same waves). In alternating rounds (`lab/probes/ct_tile.py --ct-m 128`):

# %%
helpers.display.table(LK.ct_tile_rows(("ct-m128",)),
                      ["shape", "predicted", "ratio", "verdict", "won", "tflops", "base_tflops", "vs_cublas", "mhz",
                       "checked"],
                      ["M x N x K", "predicted", "x rung 25", "verdict", "rounds faster", "TFLOP/s", "rung 25",
                       "x cuBLAS", "MHz", "correct"], {"predicted": ".2f", "ratio": ".3f", "tflops": ".0f", "base_tflops": ".0f",
                                           "vs_cublas": ".2f"})

# %% [markdown]
# Bit for bit, and within 1.5% of rung 25 at both sizes, once a little ahead and once a little behind (at
# $4096^3$ the clock fell in the later rounds, for rung 25 and cuBLAS too). **The orientation alone gains
# nothing**, as predicted: what cuBLAS still has at $4096^3$ lies elsewhere. Try it: `helpers.try_kernel(29,
# CT_M=128)`.

# %% [markdown]
# ### Tried: 128 CTAs instead of 132
#
# Lesson 7's FP8 kernels run about 1% faster on 128 CTAs than on one per SM (its research notes). Rungs 13 and
# 14 walk the same L2-aware order on 66 clusters of 2. `lab/probes/grid_128.py` ran them on 64 clusters
# (the launcher's `ctas=128`), checked bit for bit, then seven alternating rounds beside cuBLAS writing the
# same C. **Predicted before it ran: x1.01 at $4096^3$, x1.00 at $8192^3$:**

# %%
g128 = LK.grid128_rows()
for r in g128:
    r["predicted"] = LK.GRID128_PREDICTED[r["n"]]
helpers.display.table(g128, ["n", "rung", "c_dtype", "passed", "tflops", "tflops_128", "predicted", "x128", "verdict",
                             "won", "vs_cublas", "vs_cublas_128", "mhz"],
                      ["n", "rung", "C", "correct", "TFLOP/s, 132 CTAs", "TFLOP/s, 128", "predicted",
                       "x 132 CTAs", "verdict", "rounds faster", "x cuBLAS, 132", "x cuBLAS, 128", "SM clock, MHz"],
                      {"tflops": ".0f", "tflops_128": ".0f", "predicted": ".2f", "x128": ".3f",
                       "vs_cublas": ".3f", "vs_cublas_128": ".3f"})

# %% [markdown]
# **Not told apart from the spread.** At $4096^3$ rung 14 gained and rung 13 lost, faster in only 2
# rounds of 7, while the clock moved by 300 MHz; at $8192^3$ both gained about 1% round by round, though
# rung 13's medians differ the other way. One run with mixed signs: the rungs keep as many CTAs as fit,
# and the goals above are unchanged.

# %% [markdown]
# ## How the harness empties L2
#
# Every timing empties L2 before each launch, so that A and B come from DRAM. Until 2026-12-02 the harness
# did it with a memset over four times L2. A memset leaves L2 full of *dirty* lines: before a line can
# hold A or B it must be written back to DRAM, so the timed kernel pays for the harness's own writes.
# Reading the same buffer leaves clean lines, which are dropped for free. `lab/probes/flush_method.py`
# timed cuBLAS and three rungs both ways, in three alternating rounds, each C checked first:

# %%
fm = LK.flush_rows(exps["flush_method"]) if "flush_method" in exps else []
helpers.display.table(fm, ["shape", "kernel", "write", "read", "read_over_write", "mhz"],
                      ["M x N x K", "kernel", "memset flush, TFLOP/s", "read flush, TFLOP/s", "read / memset",
                       "SM clock, MHz"], {"write": ".0f", "read": ".0f", "read_over_write": ".2f"})

# %% [markdown]
# At 128 rows, where the time goes to streaming B from DRAM, the memset slowed cuBLAS by about a fifth
# and rung 17 far less: the old flush flattered the rungs. At $4096^3$ cuBLAS and rungs 14 and 16 changed
# by less than 4%, at clocks that moved between rounds. The harness now reads
# (`helpers.timing.DEFAULT_FLUSH`), and the record says which flush each experiment was timed with:

# %%
print({name: labkit.logs.flush(rec, name) for name in ("hopper", "ladder", "knobs", "input_values", "tail_split")})

# %% [markdown]
# ## One cuBLAS timing per rung
#
# Experiment `hopper` times cuBLAS once, just before each rung. Until `hopper_targets`, the goals were judged
# on those timings: a ratio at or above its goal was left unjudged where cuBLAS's timing ran throttled, and
# counted only if it also held against the median of cuBLAS's unthrottled timings at that shape:

# %%
data = hop
if data is not None:
    t = [dict(x, met={True: "yes", False: "no"}.get(x["met"], "not judged"), short=x["short"] or "",
              vs_median=x["vs_median"] or "") for x in LK.targets(data)]
    display(helpers.display.table(t, ["shape", "C", "goal", "rung", "ratio", "vs_median", "met", "short", "mhz", "why"],
                                  ["M x N x K", "C", "goal", "best rung", "x cuBLAS, same C", "x cuBLAS's median", "met",
                                   "short by", "MHz, rung / cuBLAS", "why"],
                                  {"ratio": ".3f", "vs_median": ".3f", "short": ".3f"}))

# %% [markdown]
# In the record, most goals away from $4096^3$ and $2048^3$ go unjudged. Where both ways judge, they agree
# but once: at $5000^3$ with FP16 C, 0.001 short on one timing, met in turn.

# %% [markdown]
# ## The missed goals under Nsight Compute
#
# Where the targets table misses, each best rung and cuBLAS writing the same C, one launch each
# (`tools/ncu_counters.py --size N --only ...`, clocks left alone; at $8192^3$ rungs 29-30 build rung 25's and
# 26's kernels, and at $4096^3$ rung 30 builds rung 26's, so the table names those), the rung's counters over
# cuBLAS's:

# %%
helpers.display.table(LK.ncu_target_rows(), ["n", "kernel", "C", "us", "x_time", "dram_mb", "x_dram", "l2_m", "x_l2",
                                            "tensor_pct", "tensor_pts"],
                      ["n", "kernel", "C", "µs", "x cuBLAS", "DRAM read, MB", "x cuBLAS", "L2 read sectors, M",
                       "x cuBLAS", "tensor pipe, %", "points over cuBLAS"],
                      {"us": ".0f", "x_time": ".3f", "dram_mb": ".0f", "x_dram": ".2f", "l2_m": ".1f", "x_l2": ".2f",
                       "tensor_pct": ".1f", "tensor_pts": "+.1f"})

# %% [markdown]
# At $4096^3$ and $8192^3$ the Tensor Cores are about as busy as cuBLAS's (within about 1 point), yet the rungs
# read 24-33% more from DRAM and 16-23% more L2 sectors. A tile order whose waves span 16 rows of tiles
# instead of 8 holds fewer bytes of A and B at once (a B tile's panel is twice an A tile's). **Predicted
# before it ran: x1.005 at $4096^3$, x1.01 at $8192^3$** (`GROUP_M=16`, `lab/probes/wait_hint.py --order`,
# seven alternating rounds beside cuBLAS):

# %% [markdown]
# ### Tried: a squarer tile order (`GROUP_M=16`)

# %%
helpers.display.table(LK.order_rows(), ["shape", "rung", "C", "predicted", "x16", "low", "high", "verdict", "won", "vs8",
                                       "vs16", "mhz", "checked"],
                      ["M x N x K", "rung", "C", "predicted", "x GROUP_M=8", "lowest round", "highest", "verdict",
                       "rounds faster", "x cuBLAS, 8", "x cuBLAS, 16", "MHz", "correct"],
                      {"predicted": ".3f", "x16": ".3f", "low": ".3f", "high": ".3f", "vs8": ".3f", "vs16": ".3f"})

# %% [markdown]
# Not reliably faster: slower for rung 15 at $4096^3$, about 1% faster at $8192^3$, where the clock and the
# ratios to cuBLAS moved by as much between rounds. `GROUP_M` stays 8. Yet it did what it was for: under
# Nsight Compute at $4096^3$ (one launch each, `rung15_group16` and `rung26_group16` in `tools/ncu_counters.py`):

# %%
g16 = LK.ncu_log_rows("ncu-group16-4096")
print(g16[0]["run"].split(", command")[0].lstrip("# "))
helpers.display.table(g16, ["target", "ms", "dram_mb", "l2_m", "tensor_pct"],
                      ["build", "ms", "DRAM read, MB", "L2 read sectors, M", "tensor pipe, %"], {"ms": ".3f"})

# %% [markdown]
# With `GROUP_M=16` both rungs read as little from DRAM as cuBLAS (the first table of this section) in the
# same time, their Tensor Cores as busy: the extra DRAM bytes did not cost the missing percent at
# $4096^3$. What is left there is the tensor pipe's point. At $5000^3$ the loads are not the
# difference (the first table: the same DRAM bytes, fewer L2 sectors); the tile is. Rung 29's 160-row tiles
# and cuBLAS's 152-row ones both make 5 waves of pairs, but each of rung 29's takes longer:

# %%
for what, rows_, units in (("rung 29, 160 x 256 in pairs along M", 160, math.ceil(5000 / 160) // 2 * 20),
                           ("cuBLAS, 152 x 256 in pairs along N", 152, math.ceil(5000 / 152) * 10)):
    waves = math.ceil(units / (sms // 2))
    print(f"{what}: {units} pairs, {waves} waves of {rows_ / 128:.4g} rung-14 tiles = {waves * rows_ / 128:.4g}")

# %% [markdown]
# ### The targets timed again
#
# How firm are verdicts a percent apart? `hopper_targets` ran once more (session 27, the same rungs and
# rule, seven rounds; kept as `results/logs/hopper-targets-repeat-nvidia-h200.json`). Predicted before it
# ran: the same targets met, every ratio within 0.02 of the first run's.

# %%
rep = LK.repeat_rows(exps["hopper_targets"])
helpers.display.table(rep, ["shape", "C", "goal", "rung1", "ratio1", "met1", "rung2", "ratio2", "met2", "mhz2",
                            "change"],
                      ["M x N x K", "C", "goal", "rung", "x cuBLAS", "met", "rung, again", "x cuBLAS, again",
                       "met, again", "MHz again, rung / cuBLAS", "change"],
                      {"ratio1": ".3f", "ratio2": ".3f", "change": "+.3f"})

# %% [markdown]
# **Missed**: 10 targets met instead of 9, and ratios moved by up to 0.035. At $4096^3$ with FP16 C and at
# $8192^3$ with FP32 C the goal is met this time; at $5000^3$ with FP16 C it is not. A verdict within about
# 3.5% of its goal is within the spread between runs. Three targets missed both times, each by 0.002 to 0.024
# below its goal, within that spread: $4096^3$ with FP32 C, $8192^3$ with FP16 C, and $5000^3$ with FP32 C
# (x0.935 and x0.939 against 0.95: short by 0.015, then 0.011).

