"""Source of notebooks/02_tensor_cores_wmma.ipynb (run `make notebooks` after editing)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("02_tensor_cores_wmma")

# --------------------------------------------------------------------------- title
nb.md("""
# Tensor Cores, WMMA and mixed precision
## 02 · Tensor Cores and the WMMA API

One warp, one call, one 16 x 16 x 16 matrix product. We count what a single `mma_sync`
does, look at who in the warp holds which element, follow the call down to the machine
instruction, and measure how far the simplest WMMA kernel gets, and why it stops there.

*No GPU? Every cell runs: kernels are emulated with numpy, and the GPU-only measurements are the
ones recorded on an NVIDIA H200, labelled as such.*
""", slide="slide")
nb.notes("""
Follows seed 000's naive WMMA section and seed 001's sections on the Tensor Core principle, the
WMMA model, fragment load/store and MMA. Where the seeds are wrong or contradict themselves, the
lesson says so and shows the computation that settles it.
""")

nb.md("""
## What you will learn

- what one `wmma::mma_sync` computes, and how many operations that is (the seed miscounts it);
- which shapes and types each architecture's Tensor Cores offer through WMMA;
- the five WMMA calls, the rules for `ldm`, layouts and alignment, and why no `__syncthreads()` is needed;
- how `wmma_gemm_naive` maps blocks and warps to tiles of $C$;
- which lane holds which element of a fragment, measured, and how that compares with the documented PTX layout;
- what the compiler makes of `mma_sync` (PTX `wmma.mma.sync`, SASS `HMMA.16816`);
- how fast the naive kernel is against the FP32 baseline and cuBLAS, and why;
- what goes wrong with sizes that are not multiples of 16, and how padding fixes it.
""", slide="slide")

nb.code("""
import numpy as np
import helpers
from helpers import exercises
from helpers.exercises import wmma as ex
from helpers.experiments import wmma as W

rec = helpers.results.load_latest()          # the recorded GPU measurements
print("recorded data:", rec.label)
""")
nb.code("""
env = helpers.summary()
""", ignore_output=True)
nb.notes("The summary depends on the machine; the recorded-data line is the same everywhere.")

# --------------------------------------------------------------------------- 1. what a Tensor Core does
nb.md("""
## What a Tensor Core computes

Tensor Cores are matrix units inside each SM (four per SM on Ampere and Hopper: the NVIDIA A100 and
H100 Tensor Core GPU architecture whitepapers). Through WMMA,
**one warp** (32 threads) asks them for

$$D = A \\times B + C, \\qquad A: 16 \\times 16,\\; B: 16 \\times 16,\\; C, D: 16 \\times 16$$

with $A$, $B$ in FP16 and $C$, $D$ in FP32 (or FP16). Each of the $16 \\times 16$ elements of $D$ is
a dot product of length 16 added to $C$: 16 multiply-adds per element.
""", slide="slide")
nb.code("""
m = n = k = 16
multiply_adds = m * n * k
flops = 2 * multiply_adds                   # a multiply and an add
print(f"one m16n16k16 mma_sync: {multiply_adds} multiply-adds = {flops} FLOPs")
print(f"the same work on CUDA cores: {multiply_adds} FMA instructions, {multiply_adds // 32} per lane")
""")
nb.md("""
**The seed contradicts itself.** Seed 000 says one `mma_sync` does "16×16×16 = 4096 次乘加"
(multiply-adds) in one section, and "等效 8192 次乘加（约 16K FLOPs）" (8192 multiply-adds, about 16K
FLOPs) in the next. The first is right. The second counts each multiply-add as two
*and then* doubles again:
""", slide="fragment")
nb.code("""
claims = [("4096 multiply-adds", 4096, multiply_adds), ("8192 multiply-adds", 8192, multiply_adds),
          ("about 16K FLOPs", 16 * 1024, flops)]
for text, claimed, actual in claims:
    verdict = "correct" if claimed == actual else f"wrong: {claimed / actual:g}x the true count"
    print(f"seed: {text:20s} actual {actual:5d}  -> {verdict}")
""")
nb.notes("8192 is the FLOP count, not the multiply-add count; 16K FLOPs would be 2 x 8192 FLOPs, a double "
         "count. The exercise at the end asks for this number again.")

nb.md("""
## Why it matters: the rate

The chip's peak rates (datasheet, dense, in `helpers.device`) compare the two ways to do the same
multiply-adds. Seed 001 adds that a Volta Tensor Core does a 4×4×4 product per clock; that is the
Volta whitepaper's figure for one Tensor Core, a hardware detail that WMMA hides: the programmer
always sees a whole warp and a 16×16×16 tile.
""", slide="slide")
nb.code("""
p = helpers.device.peaks_for("NVIDIA H200")
print(f"{p.gpu} [{p.source}]")
print(f"  FP32 on CUDA cores   : {p.fp32:7.1f} TFLOP/s")
print(f"  FP16 on Tensor Cores : {p.fp16:7.1f} TFLOP/s  ({p.fp16 / p.fp32:.1f}x)")
print(f"  -> {p.fp16 * 1e12 / flops:.3g} m16n16k16 products per second across the chip")
""")

# --------------------------------------------------------------------------- 2. architectures
nb.md("""
## What each architecture offers through WMMA

| architecture | sm | $A$, $B$ types | accumulator | shapes $m \\times n \\times k$ |
|---|---|---|---|---|
| Volta (V100) | 7.0 | `__half` | `float` or `__half` | 16×16×16, 32×8×16, 8×32×16 |
| Turing (T4, RTX 20) | 7.5 (7.2: Xavier) | + `signed char`, `unsigned char` | `int` | same three shapes |
|  | 7.5 | experimental: `precision::u4`, `s4`; `precision::b1` | `int` | 8×8×32; 8×8×128 |
| Ampere (A100, RTX 30) | 8.0, 8.6 | + `__nv_bfloat16` | `float` | same three shapes |
|  | 8.0+ | + `precision::tf32` | `float` | 16×16×8 |
|  | 8.0+ | + `double` | `double` | 8×8×4 |
| Ada (L4, RTX 40) | 8.9 | as Ampere | | |
| Hopper (H100, H200) | 9.0 | as Ampere | | |

Source: CUDA C++ Programming Guide, *Warp Matrix Functions*: "Element Types and Matrix Sizes" and
the sections on alternate floating point, double precision and sub-byte operations. Newer Tensor
Core features are **not** in WMMA: FP8 (Ada, Hopper) and Hopper's warp-group `wgmma` (sm_90a) are
reached through PTX `mma` / `wgmma` or libraries such as CUTLASS and cuBLAS.
""", slide="slide")
nb.md("""
Seed 002's table (sec. 3.3) lists Volta: FP16; Turing: FP16, INT8/INT4; Ampere: FP16, BF16, TF32,
INT8; Hopper: FP16, BF16, TF32, FP8, INT8; Blackwell: FP16, BF16, TF32, FP8, INT4. It leaves out
the FP64 Tensor Cores (the `double` row: A100, H100/H200), the 1-bit type (`b1`), Ampere's INT4,
Ada (sm_89) entirely, whose Tensor Cores were the first with FP8 next to Hopper's (Ada whitepaper),
and Blackwell's FP6 and FP4 (Blackwell architecture technical brief).
""", slide="fragment")
nb.notes("The course runs the FP16 rows (this lesson and lesson 3), BF16 and TF32 (lesson 3) on the H200; "
         "the integer and sub-byte rows are listed for completeness and are not exercised here. 'as Ampere' "
         "means no new WMMA types: the extra Hopper speed comes from wgmma, which the last rung of lesson 5 uses.")

# --------------------------------------------------------------------------- 3. the API
nb.md("""
## The WMMA API in five calls

```cuda
#include <mma.h>
using namespace nvcuda;
wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;   // A tile, per warp
wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;   // B tile, layout is part of the type
wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;              // C/D tile, no layout
wmma::fill_fragment(acc, 0.0f);                                        // every element = 0
wmma::load_matrix_sync(a, ptr_a, lda);          // ptr to the tile's first element, ldm in elements
wmma::load_matrix_sync(b, ptr_b, ldb);
wmma::mma_sync(acc, a, b, acc);                 // acc = a * b + acc
wmma::store_matrix_sync(ptr_c, acc, ldc, wmma::mem_row_major);   // layout given at store time
```

- A **fragment** is the tile spread over the 32 lanes' registers: `frag.x[i]`, `frag.num_elements`
  per lane. *Which* element is in which lane is left unspecified by the Programming Guide.
- `row_major` / `col_major`: within a row (column) elements are contiguous; `ldm` is the distance,
  **in elements**, from one row (column) to the next: $K$ for a row-major $M \\times K$ matrix.
""", slide="slide")

nb.md("""
## Rules the hardware relies on

- **Alignment.** `mptr` must be **256-bit (32-byte) aligned**; `ldm` a multiple of 16 bytes, i.e.
  8 `half` or 4 `float` (CUDA C++ Programming Guide, `load_matrix_sync`). The PTX ISA (*Matrix
  Storage for WMMA*, "Address Alignment") is stricter: the start of *every* row must be aligned to
  the fragment size, 32 bytes for `m16n16k16.f16`, so `2 * ldm` must be a multiple of 32: `ldm` a
  multiple of 16 halves. The course pads sizes to multiples of 16, which satisfies both.
- Seed 001 says the pointer must be 16-byte aligned: that is the `ldm` granule, not the pointer rule.
- **Same arguments, all lanes.** Every lane of the warp must make the call, with the same
  `mptr`, `ldm`, layout and template parameters; otherwise the result is undefined.
""", slide="slide")
nb.code("""
for ldm in (8, 16, 24, 40, 48, 64):
    guide = ldm % 8 == 0                       # multiple of 16 bytes
    ptx = (2 * ldm) % 32 == 0                  # every row start 32-byte aligned
    print(f"ldm = {ldm:2d} halves ({2 * ldm:3d} B per row): Programming Guide {'ok' if guide else 'no'}, "
          f"PTX ISA row rule {'ok' if ptx else 'no'}")
""")
nb.notes("40 and 24 pass the Guide's rule and fail the PTX rule. On the H200 the naive kernel's SASS "
         "loads fragments with 4-byte LDG.E instructions, so such a launch does not fault there; the "
         "contract still says undefined. The edge-case experiment later uses ldm = 40.")

nb.md("""
## Why no `__syncthreads()`

The `_sync` in `load_matrix_sync`, `mma_sync` and `store_matrix_sync` means the warp's 32 lanes
meet at the call ("waits until all warp lanes have arrived", Programming Guide): each call is
**warp-collective**, so the warp needs no extra barrier between loading a fragment and using it.

`__syncthreads()` is about something else: **data shared between warps** through shared memory.
In `wmma_gemm_naive` no warp reads anything another warp writes: each reads $A$ and $B$ (read-only)
from global memory into its own registers and writes its own tile of $C$. So there is nothing to
wait for. Once warps share tiles through shared memory (lesson 5), a barrier between "write the
tile" and "read the tile" becomes necessary again.
""", slide="slide")
nb.notes("Seed 000 says the calls 'have warp-level sync semantics, so no __syncthreads() is needed'. The "
         "conclusion is right for this kernel, but the reason is that no data crosses warps; warp "
         "synchronisation alone would not make shared-memory exchange between warps safe.")

# --------------------------------------------------------------------------- 4. the seed kernel
nb.md("""
## The seed's kernel: `wmma_gemm_naive`

One warp per 16×16 tile of $C$; walk $K$ in steps of 16: load an $A$ tile and a $B$ tile from
global memory into fragments, `mma_sync`, repeat; store the accumulator once (the code: next slide).
It is correct, checked against float64 at sizes that are not multiples of 16 (the helper pads with zeros):
""", slide="slide")
nb.code("""
spec = helpers.KERNELS["wmma_gemm_naive"]
for M, N, K in [(200, 136, 72), (33, 17, 49)]:
    A = helpers.random_matrix(M, K, seed=M)
    B = helpers.random_matrix(K, N, seed=N)
    C = helpers.wmma_gemm_naive(A.astype(np.float16), B.astype(np.float16), pad=True)
    print(spec.check(C, A, B).verdict())
""")
nb.code("""
helpers.display.show_kernel("wmma.cu", "wmma_gemm_naive")
""", slide="subslide")
nb.notes("Compared with the seed: the course's copy computes the tile offsets in size_t. The seed's "
         "`row * K + i` is an int product, which overflows once M*K reaches 2^31 (46341^2).")

nb.md("""
## Blocks, warps and tiles

The launch configuration in `helpers.kernels.KERNELS` is the seed's: `block = dim3(32, 8)`, so
`threadIdx.x` is the lane and `threadIdx.y` picks one of 8 warps, stacked down $M$; `blockIdx.x`
walks 16-column strips. The picture is drawn from that configuration:
""", slide="slide")
nb.code("""
M, N = 256, 256
print("block", spec.block, "| grid", spec.grid(M, N), "| warps per block", spec.block[1])
fig = W.plot_tile_mapping(M, N)
""")
nb.notes("Each block covers 128 rows by 16 columns. Neighbouring warps of one block share the same B "
         "columns but no data is shared: each warp loads its own copy.")

# --------------------------------------------------------------------------- 5. fragment ownership
nb.md("""
## Who holds which element?

A fragment's layout is unspecified, but we can *measure* it on a given GPU. The probe kernel loads
matrices whose values are their own index, `A[r][c] = 16 r + c` (integers up to 255 are exact in
FP16), and each lane writes out what its fragment holds. For the accumulator each lane writes its
own id into every element it holds and stores the fragment: the stored matrix is a map of owners.
(The probe kernel is in appendix A.)
""", slide="slide")
nb.code("""
maps = helpers.run_or_load("wmma_fragment_maps")
d = maps.data
print(f"{d['gpu']} ({d['sm']}): elements per lane {d['num_elements']}")
""")
nb.code("""
print(maps.source)
""", ignore_output=True)
nb.code("""
fig = W.plot_fragment_maps({"matrix_a, row_major": d["matrix_a"], "matrix_b, row_major": d["matrix_b"],
                            "accumulator": d["accumulator"]},
                           "WMMA m16n16k16: the lane holding each element (bold: held by more than one lane)",
                           maps.source)
""", slide="subslide")
nb.notes("Read a colour band: lanes 0-3 (one PTX 'group') share a hue. A bold number would mark an "
         "element that several lanes hold; a lane that holds the same element twice counts once.")

nb.md("""
## The documented layout: PTX `mma.sync.m16n8k16`

WMMA has no documented layout, but the PTX instruction `mma.sync.aligned.m16n8k16` does (PTX ISA,
*Matrix Fragments for mma.m16n8k16 with floating point type*). With
`groupID = laneid >> 2` and `threadID_in_group = laneid % 4`, for the `.f16` $A$ fragment:

- `row = groupID` for $a_0, a_1, a_4, a_5$, `groupID + 8` for $a_2, a_3, a_6, a_7$;
- `col = threadID_in_group * 2 + (i & 1)`, plus 8 for $a_4 \\dots a_7$.

$B$ ($16 \\times 8$): `row = threadID_in_group * 2 + (i & 1)` (+8 for $b_2, b_3$), `col = groupID`.
$C$/$D$ ($16 \\times 8$): `row = groupID` (+8 for $c_2, c_3$), `col = threadID_in_group * 2 + (i & 1)`.
The same formulas, computed (`W.ptx_fragment_layout`):
""", slide="slide")
nb.code("""
ptx_a = W.ptx_fragment_layout("a")
for lane in (0, 1, 4, 31):
    print(f"lane {lane:2d}: " + "  ".join(f"a{i}=A[{r}][{c}]" for i, (r, c) in enumerate(ptx_a[lane])))
""")
nb.code("""
fig = W.plot_fragment_maps({"A (m16n8k16)": ptx_a, "B: two n=8 halves": W.ptx_wmma_b_layout(),
                            "C/D: two n=8 halves": W.ptx_wmma_accumulator_layout()},
                           "PTX mma.m16n8k16 layout, computed from the PTX ISA formulas",
                           "a 16x16 tile as two m16n8k16 products side by side")
""", slide="subslide")

nb.md("""
## Measured WMMA vs documented PTX

For each fragment: how many elements a lane holds, how many distinct, and whether they are the
PTX layout's elements (as a set per lane, and in the same order):
""", slide="slide")
nb.code("""
cmp = W.compare_with_ptx(d)
helpers.display.table(cmp, ["fragment", "elements_per_lane", "distinct_per_lane", "same_elements_as_ptx",
                            "same_order_as_ptx", "second_half_repeats_first"],
                      ["fragment", "elements / lane", "distinct", "same elements as PTX", "same order",
                       "x[n/2:] repeats x[:n/2]"])
""")
nb.code("""
same_b = bool((W.owner_grid(d["matrix_b"]) == W.owner_grid(d["matrix_b_col"])).all())
print("matrix_b loaded from row-major and from column-major storage: same owners:", same_b)
""")
nb.md("""
Read the table row by row. On the GPU it was measured on, each WMMA fragment *is* the PTX layout:
the $A$ fragment is one m16n8k16 $A$ operand, the $B$ fragment is two m16n8k16 $B$ operands (the
left and right 8 columns), and the accumulator is two $C$ operands. Where `num_elements` is twice
the distinct count, the second half of `x[]` repeats the first: the API promises 16 elements per
lane, the instruction needs 8. Loading $B$ from column-major memory gives the same registers:
the layout tag changes the loads, not the fragment. This is one GPU and one compiler: WMMA's
layout is unspecified and may differ elsewhere (appendix B says what that means for your code).
""", slide="fragment")
# --------------------------------------------------------------------------- 6. PTX and SASS
nb.md("""
## From `mma_sync` to the machine

`nvcc -arch=sm_90` compiled `kernels/wmma.cu` on the H200 (`results/build-nvidia-h200/`). In the
PTX, the WMMA calls are still WMMA instructions, of the full 16×16×16 shape:
""", slide="slide")
nb.code("""
ptx = W.ptx_lines()
for op in ["wmma.load.a", "wmma.load.b", "wmma.mma", "wmma.store.d"]:
    hits = [ln for ln in ptx if ln.startswith(op)]
    print(f"{len(hits)} x {hits[0].split()[0]}")
""")
nb.notes("The compiler unrolled the K loop and kept a remainder loop, so the PTX holds more than one of "
         "each load and mma (the counts above) for a kernel whose source has one of each.")
nb.md("In the SASS (the instructions the SM runs), each `wmma.mma` became `HMMA.16816` instructions:",
      slide="fragment")
nb.code("""
hmma = W.sass_lines(opcode="HMMA")
for line in hmma[:2]:
    print(line)
n_mma = sum(ln.startswith("wmma.mma") for ln in ptx)
print(f"{len(hmma)} HMMA in the SASS for {n_mma} wmma.mma in the PTX: {len(hmma) // n_mma} per mma_sync")
""")
nb.md("""
`HMMA.16816` is the hardware's m16n8k16 product: a 16×16×16 `mma_sync` on sm_90 is **two** of them,
one for each 8-column half of the tile (the picture above). Seed 001 says `mma_sync` "corresponds
to PTX `mma.sync.aligned.m16n8k16`": the PTX it produces is `wmma.mma.sync ... m16n16k16`;
m16n8k16 appears only after `ptxas`, in the SASS. (Appendix C reads the registers of both.)
""", slide="fragment")

# --------------------------------------------------------------------------- 7. measured
nb.md("""
## Measured: naive WMMA vs the FP32 baseline vs cuBLAS

Square sizes from 256 to 8192; each kernel is checked against float64 first, then timed
(`helpers.sweep`: CUDA events, warm-up, cold L2, median, and the SM clock read while it runs). On
a GPU this runs live; without one it shows the recorded H200 numbers (table with clocks: appendix D).
""", slide="slide")
nb.code("""
sizes = [256, 512, 1024, 2048, 4096, 8192]
names = ["wmma_gemm_naive", "gemm_fp32_kernel", "cublas_fp16"]
sw = helpers.sweep(names, sizes)
peaks = helpers.backend().gpu.peaks if sw.live else helpers.device.Peaks(**rec.meta["gpu"]["peaks"])
print(sw.source, "| all checks passed:", all(r["passed"] for r in sw.data))
""", ignore_output=True)
nb.code("""
labels = {"wmma_gemm_naive": "naive WMMA (FP16 in, FP32 acc)", "gemm_fp32_kernel": "FP32 CUDA-core kernel"}
fig = helpers.plots.tflops_vs_size({labels[k]: helpers.series(sw.data, k) for k in labels},
                                   baselines={"cuBLAS FP16": helpers.series(sw.data, "cublas_fp16")},
                                   peaks={"FP16 tensor peak": peaks.fp16, "FP32 peak": peaks.fp32},
                                   title="Naive WMMA vs FP32 vs cuBLAS", source=sw.source)
""", slide="subslide", ignore_output=True)
nb.notes("Read three things: the Tensor Core kernel is several times faster than the FP32 kernel at "
         "large sizes; it flattens early; and cuBLAS on the same Tensor Cores is far above it. cuBLAS's dip "
         "at 8192 is the GPU lowering its clock under its power limit (lesson 05).")

# --------------------------------------------------------------------------- 8. why
nb.md("""
## Why naive WMMA is far from cuBLAS

Every K step, every warp loads a fresh 16×16 $A$ tile and $B$ tile from global memory and uses each
exactly once; no two warps share a tile. The course's traffic model (`helpers.analysis`, the same
one lesson 05 uses for every rung) counts the bytes the warps request:
""", slide="slide")
nb.code("""
tile_bytes = 16 * 16 * 2                              # one FP16 tile
per_step = 2 * tile_bytes                             # A and B tile per mma_sync
print(f"per mma_sync: {per_step} bytes loaded for {flops} FLOPs -> {flops / per_step:.0f} FLOP per byte")
n = 4096
req = helpers.analysis.traffic_bytes(spec, n, n, n)   # A and B per warp tile, plus the store of C
least = 2 * n * n * 2 + n * n * 4                     # read A and B once, write C once
print(f"n = {n}: the warps request {req / 1e9:.1f} GB ({helpers.analysis.intensity(spec, n, n, n):.1f} FLOP/byte); "
      f"reading each input once would be {least / 1e6:.0f} MB ({req / least:.0f}x less)")
p = helpers.device.peaks_for("NVIDIA H200")
print(f"at {p.fp16} TFLOP/s this ratio needs {p.fp16 * per_step / flops:.0f} TB/s of loads; HBM gives "
      f"{p.mem_gbs / 1000} TB/s; the ridge point is {p.fp16 * 1e3 / p.mem_gbs:.0f} FLOP/byte")
""")
nb.md("""
### Where those bytes came from: Nsight Compute on the H200

One launch at 4096, hardware counters (`helpers.profile`): the bytes of the sectors the warps' loads
touched in L1, what L2 served, what DRAM delivered, and how busy the Tensor Cores were.
""", slide="subslide")
nb.code("""
prof = helpers.profile.load_ncu()
r1 = prof.row("rung1")
print(prof.label)
print(f"requested (model) {req / 1e9:.1f} GB | L1: sectors touched {r1['l1_load_gb']:.1f} GB "
      f"({r1['sectors_per_request']:.0f} sectors per load, hit rate {r1['l1_hit_pct']:.0f}%) | "
      f"L2 served {r1['l2_read_gb']:.1f} GB | DRAM read {r1['dram_read_gb']:.2f} GB")
print(f"Tensor pipe busy {r1['tensor_pct']:.1f}% of the cycles; top stalls: {r1['stalls']}")
""")
nb.md("""
Each fragment load reads 16 of the 32 bytes of every sector it touches (one row of a tile per lane
group), so L1 sees twice the requested bytes; L1 and L2 then catch almost all of it (the 8 warps of a
block read the same $B$ tile, neighbouring blocks the same $A$ rows), and DRAM sees a small fraction. What is left is the
wait: the top stall, `long_scoreboard`, is a warp waiting for its global loads, for many cycles
per instruction, while the Tensor Cores idle (the tensor-pipe share). cuBLAS keeps tiles in shared
memory and registers and reuses each loaded element many times. **Lesson 5** climbs that ladder one
measured step at a time; its rung 1 is this kernel, counted with the same model. (A first step
that fits in this lesson, 2×2 fragments per warp, is exercise 2; measured in appendix H.)
""", slide="fragment")
# --------------------------------------------------------------------------- 9. sizes not multiple of 16
nb.md("""
## Sizes that are not multiples of 16

The kernel moves whole 16×16 tiles. The helper refuses sizes it would overrun, and says what to do:
""", slide="slide")
nb.code("""
A = helpers.random_matrix(40, 48, seed=1).astype(np.float16)
B = helpers.random_matrix(48, 40, seed=2).astype(np.float16)
try:
    helpers.wmma_gemm_naive(A, B)
except helpers.InputError as err:
    print(err)
""")
nb.md("**The fix: pad.** `pad=True` zero-pads to multiples of 16 (zeros add nothing to the dot products) and "
      "crops the result. (What happens without the refusal and without padding: appendix E.)", slide="fragment")
nb.code("""
C = helpers.wmma_gemm_naive(A, B, pad=True)
print(C.shape, spec.check(C, A, B).verdict())
""")

# --------------------------------------------------------------------------- 10. misconceptions
nb.md("""
## Common misconceptions

- **"One `mma_sync` is 8192 multiply-adds."** It is 4096 multiply-adds = 8192 FLOPs (section 1).
- **"`mma_sync` is one hardware instruction."** On sm_90 it is two `HMMA.16816` (section 6); on
  other architectures the split can differ.
- **"Lane *l* holds row *l* of the tile."** No documented rule says so; the measured map above is
  interleaved, and may differ on another GPU. Use PTX `mma` when the layout matters.
- **"The `_sync` calls replace `__syncthreads()`."** They synchronise the lanes of one warp. Data
  passed between warps through shared memory still needs a block barrier.
- **"A 16-byte aligned pointer is enough."** The pointer rule is 32 bytes; 16 bytes is the `ldm`
  granule (and PTX asks for 32-byte aligned rows).
- **"Tensor Cores make any GEMM fast."** The naive kernel keeps the Tensor Cores busy a small
  fraction of the time (the profiler's tensor-pipe share); it is limited by its loads.

Two more (sizes that are not multiples of 16, and seed 001's numpy "simulation"): appendix G.
""", slide="slide")
# --------------------------------------------------------------------------- 11. check your understanding
nb.md("""
## Check your understanding

1. How many FLOPs does one 16×16×16 `mma_sync` perform?
2. In the documented PTX m16n8k16 layout, which lane holds $A[9][6]$?
3. How many bytes does `wmma_gemm_naive` load from global memory per FLOP?
4. How many `HMMA.16816` instructions does one 16×16×16 `mma_sync` become on sm_90?
5. With 2×2 fragments per warp (4 tiles loaded per 4 `mma_sync`), how many bytes per FLOP?

Replace each `None` with your answer and run the cell.
""", slide="slide")
nb.code("""
answer_1 = None
answer_2 = None
answer_3 = None
answer_4 = None
answer_5 = None
exercises.mma_flops_exercise(answer_1)
ex.lane_of_a_exercise(answer_2)
ex.naive_bytes_per_flop_exercise(answer_3)
ex.hmma_per_mma_exercise(answer_4)
ex.two_by_two_bytes_per_flop_exercise(answer_5)
""")
nb.md("**Solutions** (try first):", slide="subslide")
nb.code("""
exercises.mma_flops_exercise(2 * 16 * 16 * 16)
ex.lane_of_a_exercise(4 * 1 + 3)                 # row 9 = groupID 1 + 8; col 6 = 2*3 + 0
ex.naive_bytes_per_flop_exercise(2 * 512 / 8192)
ex.hmma_per_mma_exercise(2)
ex.two_by_two_bytes_per_flop_exercise(4 * 512 / (4 * 8192))
""")

# --------------------------------------------------------------------------- 12. kernel exercises
nb.md("""
## Exercise 1: $B$ stored column-major

Write `wmma_gemm_bcol`: the same product, but $B$ arrives column-major, element $(k, n)$ at
`Bt[n * K + k]` ($B^T$ stored row-major). Change the fragment's layout tag, the pointer to the
tile's first element, and `ldm`. The checker compiles your source with NVRTC, runs it on sizes
that are not multiples of 16 (padded), checks it against float64, and times it (GPU only).

**This is the fix of seed 002's WMMA example** (sec. 4.2). It declares $B$ column-major
(`fragment<matrix_b, ..., col_major>`, "B: K x N, column-major") but addresses it row-major
(`B + k * N + warpCol * 16`, `ldm = N`), so every fragment holds the wrong elements and the result
is wrong; and its `store_matrix_sync(..., row_major)` does not compile: the layout argument of a
store is `wmma::mem_row_major`. Your kernel gets both right. The starting point:
""", slide="slide")
nb.code("""
print(ex.BCOL_STARTER)
my_bcol = None        # your kernel source as a string: my_bcol = r'''...'''
ex.check_bcol_kernel(my_bcol)
""")
nb.md("**Solution**, from `kernels/wmma_lesson.cu`: the tile of $B^T$ starts at `Bt + col * K + k`, with `ldm = K`.",
      slide="subslide")
nb.code("""
helpers.display.show_kernel("wmma_lesson.cu", "wmma_gemm_bcol")
""")
nb.code("""
ex.check_bcol_kernel(ex.solution_source("wmma_gemm_bcol"))
""", ignore_output=True)

nb.md("""
## Exercise 2: each warp computes 32×32 from 2×2 fragments

Write `wmma_gemm_2x2`: per K step load two $A$ fragments (rows +0, +16) and two $B$ fragments
(columns +0, +16), issue four `mma_sync` into a 2×2 array of accumulators, store four tiles at
the end. Launched with `block = dim3(32, 4)` and `grid = (N/32, ceil(M/128))`; the helper pads
$M$ and $N$ to multiples of 32.
""", slide="slide")
nb.code("""
print(ex.TWO_BY_TWO_STARTER)
my_2x2 = None         # your kernel source as a string
ex.check_2x2_kernel(my_2x2)
""")
nb.md("**Solution**, from `kernels/wmma_lesson.cu`:", slide="subslide")
nb.code("""
helpers.display.show_kernel("wmma_lesson.cu", "wmma_gemm_2x2")
""")
nb.code("""
ex.check_2x2_kernel(ex.solution_source("wmma_gemm_2x2"))
""", ignore_output=True)
nb.notes("The 2x2 kernel halves the bytes loaded per FLOP (exercise question 5). Whether that buys "
         "speed is measured in appendix H, live on a GPU.")

# --------------------------------------------------------------------------- summary
nb.md("""
## Summary

- One `mma_sync` on a 16×16×16 tile: 4096 multiply-adds, 8192 FLOPs, issued by a whole warp.
- Fragments are opaque: the measured H200 map is shown above; the documented layout belongs to PTX `mma`.
- The compiler turns each `wmma.mma.sync` into two `HMMA.16816` on sm_90.
- The naive kernel reloads every tile from global memory for every `mma_sync`: it leaves the
  Tensor Cores idle most of the time. Reuse (registers, shared memory) is what lesson 5 adds.
- Pad sizes to multiples of 16, and keep tile pointers 32-byte aligned.

**Next:** lesson 3 changes the input and accumulator formats (FP16, BF16, TF32; FP32 or FP16
accumulation) and measures what each costs in error and buys in speed.
""", slide="slide")


# --------------------------------------------------------------------------- appendix
nb.md("""
## Appendix: details behind the main slides

- A. The probe kernel that maps the fragments
- B. What the measured map does and does not tell you
- C. The registers of `wmma.mma` and `HMMA`, load and store counts, and the PTX NVRTC makes
- D. The sweep's numbers, with the SM clock of each timing
- E. Sizes that are not multiples of 16, without the refusal and without padding
- F. Alignment: the helper checks it too
- G. More misconceptions
- H. A first step: 2×2 fragments per warp, measured
""", slide="slide")
nb.md("### A. The probe kernel that maps the fragments", slide="subslide")
nb.code("""
helpers.display.show_kernel("wmma_lesson.cu", "wmma_fragment_probe")
""")
nb.md("""
### B. What the measured map does and does not tell you

The table is a measurement on one GPU and one compiler:
WMMA's fragment layout is *unspecified* by the CUDA Programming Guide and may differ between
architectures (Volta's Tensor Cores, for example, work on different internal shapes) and even
between compiler versions. Code that needs to know which lane holds which element, for example to
apply a per-row operation to an accumulator, should use the PTX `mma` instructions, whose layout
is documented, not rely on this map. Element-wise operations on a whole fragment (`for i <
num_elements: x[i] *= alpha`) are safe with any layout.
""", slide="subslide")

nb.md("""
### C. The registers of `wmma.mma` and `HMMA`

Look at the operands. In the PTX, `wmma.mma` takes each fragment as a list of 32-bit registers;
in the SASS, each `HMMA.16816` names the first register of each operand group: PTX `mma.m16n8k16`
with FP16 inputs reads $A$ from four 32-bit registers, $B$ from two, and $C$/$D$ from four FP32
registers (PTX ISA, *Matrix Fragments for mma.m16n8k16*).
""", slide="subslide")
nb.code("""
import re
mma_line = next(ln for ln in ptx if ln.startswith("wmma.mma"))
d_, a_, b_, c_ = [g.split(",") for g in re.findall(r"\\{([^}]*)\\}", mma_line)]
print(f"PTX wmma.mma operands: D {len(d_)} regs, A {len(a_)} regs ({2 * len(a_)} halves), "
      f"B {len(b_)} regs ({2 * len(b_)} halves), C {len(c_)} regs")
for line in hmma[:2]:
    dst, a_reg, b_reg, c_reg = [x.strip().split(".")[0] for x in line.split("F32", 1)[1].split(",")]
    print(f"HMMA at 0x{line.split()[0]}: D {dst}, A {a_reg}, B {b_reg}, C {c_reg}")
""")
nb.md("""
The PTX fragment for $A$ carries 16 halves (`num_elements`), the hardware reads 8 of them: the
duplicate half measured above. The two `HMMA` share the same $A$ registers and use different $B$
and $D$ registers: one per 8-column half of the tile.
""", slide="fragment")
nb.code("""
for op in ["LDG", "STG"]:
    print(f"{op}: {len(W.sass_lines(opcode=op))} instructions")
print("register use:", (W.build_dir() / "wmma.ptxas.txt").read_text().split("Used ")[1].split(",")[0])
""")

nb.md("""
### C'. The PTX NVRTC generates on this GPU

The course compiles kernels at run time with NVRTC. CuPy asks NVRTC for a cubin (`-arch=sm_XY`),
which has no PTX text, unless `CUPY_COMPILE_WITH_PTX=1` is set before CuPy is imported; the
experiment below calls NVRTC directly with `-arch=compute_XY` to get the PTX:
""", slide="subslide")
nb.code("""
live = helpers.run_or_load("wmma_nvrtc_ptx")
print(live.source, "|", live.data["arch"], "| NVRTC", live.data["nvrtc"])
print("\\n".join(sorted({ln.split()[0] for ln in live.data["wmma_lines"]})))
""", ignore_output=True)

nb.md("### D. The sweep's numbers, with the SM clock of each timing (live on a GPU)", slide="subslide")
nb.code("""
t = {k: dict(zip(*helpers.series(sw.data, k))) for k in names}
rows = [{"n": n, "wmma": t["wmma_gemm_naive"][n], "fp32": t["gemm_fp32_kernel"][n], "cublas": t["cublas_fp16"][n],
         "speedup": t["wmma_gemm_naive"][n] / t["gemm_fp32_kernel"][n],
         "of_cublas": 100 * t["wmma_gemm_naive"][n] / t["cublas_fp16"][n],
         "of_peak": 100 * t["wmma_gemm_naive"][n] / peaks.fp16} for n in sizes if n in t["cublas_fp16"]]
clk = {(r["kernel"], r["m"]): helpers.clocks.clock_text(r) for r in sw.data}
rows = [dict(r, clk_wmma=clk[("wmma_gemm_naive", r["n"])], clk_cublas=clk[("cublas_fp16", r["n"])]) for r in rows]
helpers.display.table(rows, list(rows[0]), ["n", "naive WMMA TFLOP/s", "FP32 kernel", "cuBLAS FP16",
                      "WMMA / FP32", "% of cuBLAS", "% of FP16 peak", "SM clock (WMMA)", "SM clock (cuBLAS)"],
                      fmt={k: ".1f" for k in ["wmma", "fp32", "cublas", "speedup", "of_cublas"]} | {"of_peak": ".2f"})
""", ignore_output=True)
nb.md("""
### E. Without the refusal and without padding

What if the helper did not refuse? The experiment allocates each matrix with **slack** after its end (so
every load and store stays inside memory we own) and fills the slack with NaN: garbage a real
program could have there. Then it launches the kernel on $M, N, K$ as given. Left: $N = 40$, so the
last column strip stores 16 columns into rows that are only 40 wide: 8 of them wrap into the
start of the *next* row. Right: $K = 40$, so the last K step reads 8 rows past the end of $B$.
""", slide="subslide")
nb.code("""
edge = helpers.run_or_load("wmma_edge_corruption")
replay = W.edge_corruption_cpu()           # numpy replay of the kernel's loads and stores
gpu_label = "GPU, measured live" if edge.live else f"{rec.gpu_name}, recorded {rec.date}"
fig = W.plot_edge_masks({gpu_label: edge.data, "CPU replay of the same loads and stores": replay})
""", slide="subslide", ignore_output=True)
nb.code("""
for case in replay:
    print(f"M={case['m']} N={case['n']} K={case['k']}: {case['n_nan'] + case['n_wrong']} of {case['m'] * case['n']} "
          f"elements wrong ({case['n_nan']} NaN, {case['n_wrong']} finite but wrong), "
          f"{case['writes_past_end']} stores landed past the end of C")
""")
nb.code("""
for case in edge.data:
    print(f"GPU M={case['m']} N={case['n']} K={case['k']}: wrong {case['n_nan'] + case['n_wrong']} "
          f"({case['n_nan']} NaN, {case['n_wrong']} finite), past the end {case['writes_past_end']}")
""", ignore_output=True)
nb.md("""
The GPU and the replay need not agree element for element: where two warps store to the same
element of $C$ (a wrapped store and the correct one), which store lands last is not defined, and
it can change from run to run.
""", slide="fragment")
nb.notes("On the GPU the wrapped stores race with the correct stores of the neighbouring tiles, so the "
         "number of corrupted elements can change from run to run; the replay runs tiles in launch "
         "order. The stores past the end of C are what would overwrite other data in a real program.")

nb.md("""
### F. Alignment: the helper checks it too

`load_matrix_sync` needs 32-byte aligned tile pointers. A CuPy view that starts mid-row, e.g.
`X[:, 1:]` or a slice of a flat buffer at an odd offset, is not. On a GPU the helper rejects it
before launching (without a GPU, CuPy arrays cannot be made, so this cell only says so):
""", slide="subslide")
nb.code("""
if helpers.backend().is_gpu:
    import cupy
    view = cupy.zeros(16 * 17, dtype=cupy.float16)[1:257].reshape(16, 16)   # starts 2 bytes in
    try:
        helpers.wmma_mixed(view, cupy.zeros((16, 16), dtype=cupy.float16))
    except helpers.InputError as err:
        print(err)
else:
    print("CPU backend: no CuPy arrays here; the size rule above is checked the same way on every backend.")
""", ignore_output=True)

nb.md("""
### G. More misconceptions

- **"Sizes that are not multiples of 16 just lose a little at the edge."** Without padding or guards
  the kernel reads and writes past the matrices: wrong values *inside* $C$ and writes beyond it
  (appendix E).
- **"Simulating WMMA in numpy with float32 `@` on 16×16 blocks reproduces it."** Seed 001's Python
  demo does that: it never rounds the inputs to FP16, uses non-negative inputs, and times Python
  loops against numpy. The course's emulation (`helpers.emulate.tensor_core_gemm`) rounds inputs
  to FP16 and models the Tensor Core's block-wise truncated FP32 accumulation.
""", slide="subslide")

nb.md("""
### H. A first step: 2×2 fragments per warp

A first step fits in this lesson: let each warp compute a 32×32 tile from 2×2 fragments, so each
loaded fragment feeds two `mma_sync` (exercise 2). Measured, with the column-major-$B$ variant of
exercise 1 for comparison (same loads per FLOP, different layout):
""", slide="subslide")
nb.code("""
var = helpers.run_or_load("wmma_variants_speed")
print(var.source)
helpers.display.table(helpers.clocks.with_clock(var.data), ["kernel", "m", "tflops", "clock", "passed"],
                      ["kernel", "n", "TFLOP/s", "SM clock while timed", "checked"], fmt={"tflops": ".1f"})
""", ignore_output=True)


nb.save()
