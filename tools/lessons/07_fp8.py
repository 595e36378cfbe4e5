"""Source of notebooks/07_fp8.ipynb (run this file, then execute the notebook: see the README)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("07_fp8")

# --------------------------------------------------------------------------- title
nb.md("""
# Tensor Cores, WMMA and mixed precision
## 07 · FP8 on Hopper, measured rather than assumed

Hopper's Tensor Cores multiply 8-bit floating-point numbers at twice the FP16 rate. Eight bits
leave little room: FP8 comes in two formats that split them differently between range and
precision, a conversion has to decide what to do with numbers too large to fit, and the data must be
scaled into the format's narrow window. This lesson takes each of these apart with numpy before the
GPU multiplies anything.

*No GPU? Every cell runs: the formats come from `ml_dtypes`, and GPU numbers are the ones recorded
on an NVIDIA H200, labelled as such.*
""", slide="slide")
nb.notes("""
The first half of the lesson needs no GPU at all: formats, conversion, scaling. It ends with the
correction of seed 002's claim that FP8 is only for inference. Every number printed comes from
ml_dtypes (finfo, and the 256 bit patterns of each format decoded by numpy).
""")

nb.md("""
## What you will learn

- read E4M3 and E5M2 from their bits: range, unit roundoff, subnormals, and their special values;
- what a conversion does with a number larger than the format holds: NaN or infinity in numpy,
  the largest number on the GPU (`cvt.rn.satfinite`);
- why FP8 data is scaled, and why one scale per tensor loses the small values when a few values
  are very large, while one scale per 1x128 tile or 128x128 block keeps them;
- why scales that change along K force the sum out of the Tensor Core every 128 elements;
- what is known about FP8 training, against seed 002's "FP8 is only for inference".
""", slide="slide")

nb.code("""
import numpy as np
from IPython.display import display

import helpers
from helpers import formats, fp8
from helpers.exercises import fp8 as ex

rec = helpers.results.load_latest()      # the committed GPU record: same numbers on every machine
print("recorded data:", rec.label)
""")
nb.code("""
env = helpers.summary()
""", ignore_output=True)
nb.notes("""
Two sources of numbers, as in the earlier lessons: `rec` is the record committed with the course,
and the environment summary says which backend runs here (it differs from machine to machine).
""")

# --------------------------------------------------------------------------- the formats
nb.md("""
## Two 8-bit formats

FP8 has two encodings (Micikevicius et al., "FP8 formats for deep learning", 2022, arXiv:2209.05433):
**E4M3**, 4 exponent and 3 fraction bits, and **E5M2**, 5 and 2. Hopper's Tensor Cores take both.
numpy knows them through `ml_dtypes` as `float8_e4m3fn` and `float8_e5m2`. The recipe of lesson 03,
next to FP16 and BF16; every number is computed from `ml_dtypes.finfo`:
""", slide="slide")
nb.code("""
rows = formats.format_table(["fp16", "bf16", "fp8_e4m3", "fp8_e5m2"])
helpers.display.table(rows, ["format", "sign/exp/frac", "max", "tiny", "subnormal", "u", "digits", "range", "inf"],
                      ["format", "sign/exp/frac", "largest", "smallest normal", "smallest subnormal",
                       "unit roundoff u", "decimal digits", "range (subnormal .. max)", "inf?"],
                      fmt={"max": ".6g", "tiny": ".4g", "subnormal": ".4g", "u": ".4g", "digits": ".1f"})
""")
nb.md("""
- **Precision**: one rounding to E4M3 costs up to $u = 2^{-4}$ (6.25%), to E5M2 up to $2^{-3}$:
  one decimal digit, give or take. FP16's $u$ is $2^7$ times smaller than E4M3's.
- **Range**: E5M2 has FP16's exponent and so FP16's range; E4M3 spans far fewer powers of two.
  That is why FP8 data is *scaled* before it is converted (later in this lesson).
""", slide="fragment")

nb.md("""
### E4M3 bends the IEEE rules, E5M2 keeps them

The IEEE recipe reserves the all-ones exponent for infinity and NaN. E5M2 follows it. E4M3 gives
up infinity and keeps one NaN per sign (`S.1111.111`), so its top exponent holds numbers: its largest
number is 448 instead of the IEEE recipe's 240 (`formats.ieee_like`). Read from the 256 bit patterns:
""", slide="subslide")
nb.code("""
helpers.display.table(fp8.facts_table(), ["format", "bias", "max", "ieee max", "binades", "finite", "subnormals",
                                          "inf", "nan"],
                      ["format", "exponent bias", "largest", "largest by the IEEE rule", "binades (subnormals incl.)",
                       "finite patterns", "subnormals > 0", "inf?", "NaN patterns"], fmt={"binades": ".1f"})
""")
nb.notes("""
"fn" in float8_e4m3fn means finite (no infinity) with NaN. E4M3's 254 finite patterns include +0 and
-0; 126 of them are positive numbers. The binades column is log2(max / smallest subnormal): E4M3 covers
under 18 powers of two, E5M2 about 32, FP16's count.
""")

nb.md("### Every positive FP8 number", slide="subslide")
nb.code("""
fig = fp8.plot_values()
""")
nb.notes("""
Each tick is one representable number. Normal numbers have a fixed count per power of two (8 for E4M3,
4 for E5M2); the grey subnormals below the smallest normal are evenly spaced and have fewer significant
bits the smaller they get. The shaded region is where the two kinds of conversion disagree (next slides).
""")

nb.md("""
### Precision around 1 and at the bottom of the range

Lesson 03's number lines, with the two FP8 formats beside BF16. Around 1, E4M3 has 8 numbers per
power of two and E5M2 4; at the bottom, the subnormals (grey) fill the gap to zero evenly:
""", slide="subslide")
nb.code("""
fig = formats.plot_number_lines(names=("fp8_e5m2", "fp8_e4m3", "bf16"))
""")

# --------------------------------------------------------------------------- special values
nb.md("""
## Special values, bit by bit

The bit patterns of the special values (sign.exponent.fraction, as in the paper's Table 1), found by
decoding all 256 patterns of each format with numpy:
""", slide="slide")
nb.code("""
helpers.display.table(fp8.special_values(), ["value", "fp8_e4m3", "fp8_e5m2"])
""")
nb.md("""
- Both formats have **+0 and -0**, and subnormals.
- **E5M2** is FP16 with fewer fraction bits: infinities, and three NaN patterns per sign.
- **E4M3 has no infinity.** A number too large for it has to become something else: NaN, or the
  largest number. Which one depends on who converts.
""", slide="fragment")

# --------------------------------------------------------------------------- overflow
nb.md("""
## Past the largest number: numpy's cast

Rounding to nearest keeps a number finite up to the **midpoint** between the largest number and
the next one the format would have (max + half a spacing); a tie at the midpoint goes to the even
neighbour. What numpy (`ml_dtypes`) makes of values around and past the top, run here rather than assumed:
""", slide="slide")
nb.code("""
e4, e5 = fp8.facts("fp8_e4m3"), fp8.facts("fp8_e5m2")
probe = [e4.max, e4.midpoint, np.nextafter(e4.midpoint, np.inf), 1000.0, e5.max, e5.midpoint, 1e6,
         np.inf, -np.inf, np.nan]
cols = ["x", "fp8_e4m3 numpy", "fp8_e5m2 numpy"]
helpers.display.table(fp8.overflow_rows(probe), cols, fmt={"x": ".17g"})
""")
nb.md("""
- **E4M3**: anything past the midpoint becomes **NaN**, silently. The midpoint itself rounds down to
  the largest number (its last fraction bit is 0, the even one); one step above it is NaN.
- **E5M2**: past the midpoint comes **inf**, as in FP16. Here the midpoint itself goes up: the largest
  number's fraction `11` is odd, so the tie rounds away from it, out of range.
- Infinity and NaN inputs: E4M3 turns infinity into NaN too.
""", slide="fragment")
nb.notes("""
The midpoints printed in the first column are computed (fp8.facts: max + half the spacing below it),
and the cast results are what ml_dtypes returned on this machine, not what a specification says.
""")

nb.md("""
### On the GPU: `cvt.rn.satfinite` saturates

A CUDA kernel converts FP32 to FP8 with PTX `cvt.rn.satfinite.e4m3x2.f32` (or `.e5m2x2`: two values
per instruction). For these destinations PTX has no form without `.satfinite`, which the PTX ISA
(`cvt`) defines as: a NaN input gives NaN; an input whose magnitude exceeds the largest finite number
gives **that number, with the input's sign** (infinity included). `fp8.saturating_cast` does the
same on the CPU:
""", slide="subslide")
nb.code("""
helpers.display.table(fp8.overflow_rows(probe), ["x", "fp8_e4m3 satfinite", "fp8_e5m2 satfinite"], fmt={"x": ".17g"})
""")
nb.md("""
Measured on the H200 (`kernels/fp8.cu`, `fp8_convert`: the instruction itself, on every FP8 number,
every midpoint between neighbours, values past the largest, infinities, NaN and random values):
""", slide="fragment")
nb.code("""
conv = rec.meta["experiments"]["fp8_convert"]
for name in ("fp8_e4m3", "fp8_e5m2"):
    c = conv[name]
    print(f"{name}: the GPU's cvt.rn.satfinite differs from fp8.saturating_cast on {c['differ_from_saturating_cast']} "
          f"of {conv['values']} values, from numpy's cast on {c['differ_from_numpy_cast']}; GPU gives {c['gpu_of']}")
""")
nb.md("### Both conversions, drawn", slide="subslide")
nb.code("""
fig = fp8.plot_overflow()
""")
nb.md("""
**Which is which.** numpy's `astype` (ml_dtypes): overflow becomes NaN (E4M3) or inf (E5M2). The GPU's
`cvt ... satfinite`: overflow becomes $\\pm$max. Micikevicius et al. recommend saturation after scaling
("values that overflow are then saturated to the maximum representable value", sec. 2). A CPU reference
that converts with `astype` disagrees with a kernel exactly where values overflow.
""", slide="fragment")
nb.notes("""
The saturating behaviour is the PTX ISA's definition of .satfinite (cvt instruction), and the
recorded experiment fp8_convert checked it on the H200 byte for byte. Inside the format's range both
conversions round to nearest, ties to even, and agree bit for bit (the midpoints in the test are the ties).
""")

# --------------------------------------------------------------------------- scaling
nb.md("""
## Scaling: moving the data into the window

E4M3's normal numbers span about 4.5 decades. Data far from that window loses its bits: values of
order $10^{-3}$ (gradients often are), cast as they are, land among the subnormals or on zero. The remedy is a **scale**:
multiply by $s = \\text{max} / \\text{amax}$ before the cast, so that the largest magnitude (amax)
lands on 448, and divide by $s$ afterwards (a GEMM multiplies its result by $1/s$ of each operand).
""", slide="slide")
nb.code("""
g = 1e-3 * helpers.random_matrix(256, 1024, seed=3, dtype=np.float64)   # small values, like gradients
raw = fp8.cast(g, "fp8_e4m3").astype(np.float64)
t = fp8.quantize_per_tensor(g, "fp8_e4m3")
amax, s = np.abs(g).max(), t.scale.item()
print(f"amax {amax:.4g}, scale {s:.6g}: amax x scale = {float(amax * s)!r}, largest |q| = {np.abs(t.q.astype(float)).max()}")
for name, back in (("cast as it is", raw), ("scaled", t.dequantize())):
    err = fp8.relative_errors(g, back)
    print(f"{name:14s} became 0: {int(np.sum(back == 0)):6d}   median relative error {np.median(err):.3f}")
""")
nb.md("""
Without a scale most of these values become 0 and the rest keep a bit or two; with one, the values
keep E4M3's precision (the median error sits well under $u$). Micikevicius et al. leave the choice of scale to software, per
tensor; the next slide shows where one scale per tensor is not enough.
""", slide="fragment")

nb.md("""
## Outliers: one scale for everything

Activations of large models hold a few very large values among ordinary ones. DeepSeek-V3's report
(arXiv:2412.19437, sec. 3.3.2) says scaling by the tensor's amax "makes low-precision training highly
sensitive to activation outliers" and scales **each 1x128 tile of activations** (per token, per 128
channels) and **each 128x128 block of weights** separately. Here: $256 \\times 1024$ standard-normal
values with 16 entries of magnitude $10^4$, three ways:
""", slide="slide")
nb.code("""
X = fp8.outlier_matrix(256, 1024, outliers=16, magnitude=1e4, seed=0)
report = fp8.scaling_report(X, fmt="fp8_e4m3") + fp8.scaling_report(X, fmt="fp8_e5m2")
helpers.display.table(report, ["format", "scheme", "scales", "flushed to zero", "subnormal", "small error", "median error",
                               "tiles within u", "matrix error"],
                      ["format", "scaling", "scales", "values that became 0", "subnormal in FP8",
                       "median error, smallest 10%", "median error, all", "1x128 tiles with every value within u",
                       "matrix error (Frobenius)"],
                      fmt={"small error": ".3f", "median error": ".3f", "matrix error": ".1e"})
""")
nb.md("""
- **E4M3, per tensor**: the outliers set the scale and push everything else down: thousands of values
  become 0, a quarter land among the subnormals, and no 1x128 tile keeps all of its values to $u$.
- **1x128 tiles**: only the tiles that hold an outlier suffer; the rest keep full E4M3 precision.
  128x128 blocks sit in between: here most blocks hold an outlier.
- The **matrix error** hardly moves: the large values dominate a norm. A norm-wise error hides the loss.
- **E5M2** has the range for these outliers even per tensor, at twice E4M3's $u$ on every value.
  DeepSeek-V3 uses E4M3 on all tensors and fine-grained scales for the range.
""", slide="fragment")
nb.notes("""
The data are made up (seeded); the counts are exactly what numpy computes for them. 'Subnormal in FP8'
means fewer than 4 significant bits survive. Ask:
how large must an outlier be before per-tensor scaling flushes a value of size 0.01 to zero? (The
third exercise.)
""")

nb.md("### Which values lose precision", slide="subslide")
nb.code("""
fig = fp8.plot_error_vs_magnitude(X)
""")
nb.notes("""
Mean relative error of the values in each bin of |x|. Per tensor, everything below about 0.02 becomes
zero (error 1) and the error climbs above u below about 0.15. 1x128 tiles keep E4M3's level for
all sizes. E5M2 per tensor is flat, at its own (larger) level. Appendix A has the same data as
histograms: zero, subnormal, normal, by scheme.
""")

# --------------------------------------------------------------------------- scales along K
nb.md("""
## Scales along K: the sum has to leave the Tensor Core

With A in 1x128 tiles and B in 128x128 blocks, the scales change every 128 elements along K:

$$C_{ij} = \\sum_{g} \\frac{1}{s^A_{i,g}\\, s^B_{g,j}} \\sum_{k \\in g} q^A_{ik}\\, q^B_{kj}$$

The inner sum is what a Tensor Core computes on FP8 inputs; the factor in front differs from group to
group, and an FP8 `wgmma` has no way to apply it. Each group's partial sum must leave the accumulator
and be scaled and added in FP32: DeepSeek-V3 does this every $N_C = 128$ elements (4 `wgmma`s).
`fp8.grouped_matmul` is that sum, exactly (float64):
""", slide="slide")
nb.code("""
W = helpers.random_matrix(1024, 512, seed=1, dtype=np.float64) / 32
R = X @ W                                                      # float64 of the unquantized data
for label, (ga, gb) in {"per tensor": (None, None), "1x128 tiles, 128x128 blocks": ((1, 128), (128, 128))}.items():
    a, w = fp8.quantize(X, ga), fp8.quantize(W, gb)
    C = fp8.grouped_matmul(a, w)
    same = np.abs(C - a.dequantize() @ w.dequantize()).max() / np.abs(C).max()
    rows = np.linalg.norm(C - R, axis=1) / np.linalg.norm(R, axis=1)
    print(f"{label:28s} group by group = dequantized product to {same:.0e}; "
          f"error of C's rows: median {np.median(rows):.3f}, worst {rows.max():.3f}")
""")
nb.md("""
The group-by-group sum is the product of the dequantized operands. On this data the product's error
barely depends on the scheme: each row of C is dominated by the values that per-tensor scaling kept.
What fine-grained scaling protects is the small values themselves. What a Tensor Core adds *inside*
each group, and how wide its accumulator is, is measured on the H200 next.
""", slide="fragment")

# --------------------------------------------------------------------------- seed 002
nb.md("""
## Seed 002: "FP8 is only for inference"

Seed 002 (sec. 5.4, item 4) warns: do not chase lower precision blindly; FP8 has more compute but
larger precision loss, and "only suits inference and other scenarios that tolerate precision loss".
Its table of recommendations (sec. 6.1) lists FP8 under inference only.
""", slide="slide")
nb.md("""
- **FP8 formats train.** Micikevicius et al. (arXiv:2209.05433) trained CNNs, RNNs and Transformers,
  language models up to 175B parameters included, with every GEMM input rounded to FP8 (E4M3 for
  weights and activations, E5M2 for gradients, per-tensor scales) and matched 16-bit training with
  unchanged hyperparameters. Their arithmetic was simulated: the values were FP8, the math 16-bit.
- **FP8 GEMMs train a frontier model.** DeepSeek-V3 (arXiv:2412.19437, sec. 3.3) was pre-trained with
  FP8 GEMMs on H800 GPUs: E4M3 everywhere, 1x128 / 128x128 scales, FP32 promotion every 128 elements;
  against BF16 at about 16B and 230B parameters the relative loss error stayed below 0.25%.
- **Where the seed has a point**: FP8 needs scales and a wide accumulator, and DeepSeek-V3 keeps the
  embedding, output head, MoE gating, normalisation and attention in BF16 or FP32. "Only for
  inference" is wrong; "not everywhere, and not without scaling" is right.
""", slide="fragment")
nb.notes("""
Both papers were checked at their text: the FP8 paper's sec. 4 says training used simulated FP8
(values clipped to FP8, arithmetic in FP16 or BF16), and reports the 175B model at 75% of training.
DeepSeek-V3's FP8 validation is in its sec. 3.3 and appendix B.1; the 14-bit accumulation remark and
N_C = 128 are in sec. 3.3.2. Lesson 03's misconception 8 pointed here.
""")

# --------------------------------------------------------------------------- the lead's part
nb.md("""
## An FP8 GEMM on the H200

Two kernels multiply E4M3 matrices here, both with an FP32 result:

- `fp8_mma_sync` (kernels/fp8.cu): one warp, one `mma.sync.m16n8k32.e4m3` per 32 products; runs
  on any GPU from sm_89 (Ada, Hopper). Slow on purpose: no shared memory, no reuse.
- `fp8_wgmma` (kernels/fp8_sm90a.cu): lesson 6's rung 11 (TMA producer, two consumer warpgroups,
  persistent grid) with `wgmma.m64n256k32.e4m3`. `wgmma` reads 8-bit operands only K-major, so B
  arrives transposed; `fp8_promote_NC` adds DeepSeek-V3's promotion every N_C products.

Each is checked like every kernel in the course: bounds, and bit equality with its CPU model.
""", slide="slide")
nb.code("""
from helpers import fp8_gemm
from helpers.experiments import fp8 as fp8x

A, B = fp8x.random_inputs(257, 520, 136, "normal", seed=1)     # sizes that are no tile multiples
for kernel in ["fp8_mma_sync", "fp8_wgmma", "fp8_promote_128"]:
    C, where = fp8_gemm.matmul(kernel, A, B)
    print(f"{kernel:16s} {where}\\n    {fp8x.check_fp8(kernel, C, A, B).verdict()}")
""", ignore_output=True)
nb.notes("""
On a machine without an H200 the same cell runs the CPU models; the verdict's last clause says that
the comparison with the model then is with itself, so the bound checks carry the verdict. The
output is not compared in the course's tests because the first line names the machine.
""")

nb.md("""
## How many bits does the accumulator keep?

The probe of lesson 4, with FP8 numbers: a large product $2^{16}$ (= 256 x 256) and, right after
it in the same 32 products, a small one $2^{16-g}$. The table shows what each kernel kept of the
small term, measured on the H200 (the record holds the raw outputs).
""", slide="slide")
nb.code("""
data = rec.meta["experiments"]["fp8"]
rows = fp8x.gap_rows(data)[8:17]
display(helpers.display.table(rows, list(rows[0])))
print("bits kept next to the large term: wgmma", fp8x.bits_kept(data, "fp8_wgmma"),
      "| mma.sync", fp8x.bits_kept(data, "fp8_mma_sync"), "(all of FP32's: its result cannot show more)")
""")
nb.md("""
`wgmma` keeps **14 bits** below the leading bit of the largest term, and drops the rest (the
`gap_neg_frac` probes show it cuts toward zero). DeepSeek-V3's report says "around 14 bits": it is
exactly 14 on the H200. `mma.sync` keeps everything an FP32 result can show.
""", slide="fragment")

nb.md("""
## The accumulator itself holds 14 bits

A term aligned to 14 bits could still be added into a full FP32 accumulator. Counting the significant
bits of every output of the recorded random products says it is not:
""", slide="subslide")
nb.code("""
print(fp8x.max_significant_bits(data))
""")
nb.md("""
No `wgmma` output without promotion has more than 14 significant bits: the running sum lives in an
FP32 register but keeps only 8 exponent and 13 fraction bits ("e8m13"), cut toward zero after
every 32 products. The promoting kernels have more, because their FP32 total is an ordinary FP32 add.
""", slide="fragment")

nb.md("""
## Where do the blocks start?

The same probe with $+2^{16}$ and $-2^{16}$ at positions 0 and 1 and a tiny term at position $i$:
the tiny term survives only where a new block begins (the big pair has cancelled by then).
""", slide="slide")
nb.code("""
print("wgmma:    the tiny term survives at i =", fp8x.block_survivors(data, "fp8_wgmma"))
print("mma.sync: the tiny term survives at i =", fp8x.block_survivors(data, "fp8_mma_sync"))
""")
nb.md("""
`wgmma` adds blocks of **32** products: one k-step of `m64nNk32`. `mma.sync` shows a stranger
pattern, pairs 2,3 and 6,7 but not 4,5: its 32 products are split into two halves of 16,
{0,1,4,5,...} and {2,3,6,7,...}. The machine code says why (recorded with `cuobjdump` on the H200):
""", slide="fragment")
nb.code("""
sass = helpers.paths.results_dir() / "logs" / "sass-fp8_mma_sync-nvidia-h200.txt"
print("\\n".join(fp8x.sass_excerpt(sass)))
""")
nb.md("""
On Hopper, `mma.sync` with E4M3 inputs is not an FP8 instruction at all: the compiler converts the
bytes to FP16 (`F2FP.F16.E4M3.UNPACK_B`), runs two FP16 `HMMA.16816` from a zero accumulator and adds
the result to C with an ordinary `FADD`. Exact enough, but at FP16 speed at best.
""", slide="fragment")
nb.notes("""
The halves follow from the fragment layout: each 32-bit register holds four consecutive k; the
unpack turns its low two bytes into one FP16 pair and its high two into another, and HMMA.16816 takes
pairs (2t, 2t+1) and (2t+8, 2t+9).
""")

nb.md("""
## The model, bit for bit

Put together: blocks of 32 products plus the accumulator, each term cut to 14 bits below the
largest, the sum cut to 14 significant bits (`helpers.emulate.FP8_WGMMA_MODEL`); promotion adds each
partial sum to an FP32 total, rounded to nearest. `mma.sync`: lesson 4's FP16 model on the two
halves, then an FP32 add. Compared with the H200's raw outputs:
""", slide="slide")
nb.code("""
rows = fp8x.match_rows(data)
display(helpers.display.table(rows, list(rows[0])))
""")
nb.code("""
pr, PA, PB = fp8x.probe_matrices()                      # the designed probes, through the CPU model here
live = np.diagonal(fp8x.cpu_model("fp8_wgmma")(PA, PB))
print("CPU model == H200 on all", len(pr), "probes:", bool(np.array_equal(live, data["probes"]["outputs"]["fp8_wgmma"])))
""")

nb.md("""
## Error against K: with and without promotion

Random 256 x 256 outputs, K up to 65536, every kernel and cuBLASLt's FP8 GEMM (through PyTorch's
`torch._scaled_mm`, with and without its fast-accumulation switch), against float64:
""", slide="slide")
nb.code("""
src = rec.label
fig = fp8x.plot_error_vs_k(data, src)
""")
nb.md("""
Without promotion the error grows with K, and on positive data it is disastrous: every cut goes
the same way. With promotion it nearly stops growing once K passes N_C, at a level set by N_C.
cuBLASLt's default lies exactly on promote-128's line; its fast-accumulation switch follows `wgmma`
without promotion up to K = 4096 and stays below it beyond.
""", slide="fragment")
nb.code("""
rows = fp8x.sweep_rows(data, 4096, "uniform01")
display(helpers.display.table(rows, list(rows[0]), fmt={c: ".3g" for c in list(rows[0])[1:]}))
""", slide="subslide")
nb.notes("""
DeepSeek-V3 quotes nearly 2% maximum relative error at K = 4096 for its (unstated) data; the table
shows what these data give: median and 99th percentile relative error and the largest error relative
to |A||B|. Positive inputs are the worst case of one-sided cuts; zero-mean inputs partly cancel.
cuBLASLt's fast mode switching behaviour after K = 4096 is observed, not documented: its internals
are not public.
""")

nb.md("""
## What accuracy costs: speed

TFLOP/s on the H200 (cold L2, CUDA events, median of many runs), each kernel's result checked first,
against cuBLASLt's FP8 GEMM and the dense FP8 peak of the datasheet:
""", slide="slide")
nb.code("""
peak = helpers.device.peaks_for(rec.gpu_name).fp8
rows = fp8x.speed_rows(data, peak)
display(helpers.display.table(rows, list(rows[0])))
""")
nb.code("""
fig = fp8x.plot_cost(data, src)
""", slide="subslide")
nb.md("""
Promotion costs speed: each promotion waits for the Tensor Cores to finish (`wgmma.wait_group 0`)
and spends CUDA-core adds. Every 32 or 64 products costs most; from 128 on, the three promoting
kernels lie close to one another, below the same tile without promotion (`fp8_wgmma_n128`): the
table has the figures. The fastest kernel is the one that is wrong by percents on positive data.
""", slide="fragment")
nb.notes("""
Promoting kernels use 128 x 128 tiles (two sets of accumulators would not fit at 128 x 256), so compare
them with fp8_wgmma_n128, the same tile without promotion. The SM clock and power of each timing are
in the table: the cuBLASLt timings at 8192 ran at a lower clock than the course's kernels.
""")

nb.md("""
## What the seed articles and the folklore get wrong

- "FP8 is only for inference" (seed 002): no; see above.
- "Tensor Cores accumulate FP8 products in FP32": on the H200 `wgmma` keeps 14 significant bits,
  measured here bit for bit; the FP32 register is a container, not the precision.
- "mma.sync with FP8 inputs uses FP8 Tensor Cores": on Hopper it is FP16 `HMMA` after a conversion.
- "About 14 bits" (DeepSeek-V3): exactly 14, cut toward zero, in blocks of 32 products. cuBLASLt's
  default FP8 GEMM shows the same error statistics as promotion every 128 products (their N_C) at
  every K measured, and costs speed the way promotion does.
""", slide="slide")

# --------------------------------------------------------------------------- exercises
nb.md("""
## Exercises

1. **E4M3's largest number.** Its bits are `0.1111.110` and its exponent bias is 7. What is it?
2. **Overflow.** What does 500 become in E4M3 with numpy's cast, and with the GPU's `cvt.rn.satfinite`?
   (Answer with a number, `float("nan")` or `float("inf")`.)
""", slide="slide")
nb.code("""
answer = ...
ex.check_e4m3_max(answer)
ex.check_cast(..., value=500.0, fmt="fp8_e4m3", saturate=False)
ex.check_cast(..., value=500.0, fmt="fp8_e4m3", saturate=True)
""")
nb.code("""
answer = (1 + 6 / 8) * 2.0 ** (15 - 7)
ex.check_e4m3_max(answer)
ex.check_cast(float("nan"), value=500.0, fmt="fp8_e4m3", saturate=False)
ex.check_cast(448.0, value=500.0, fmt="fp8_e4m3", saturate=True)
""", tags=["solution"])
nb.md("""
3. **Scale and loss.** A tensor's largest magnitude is $10^4$. Which scale does per-tensor scaling
   to E4M3 choose, and at or below which magnitude does a value become 0? (Hint: the smallest
   E4M3 subnormal is `fp8.facts("fp8_e4m3").smallest_subnormal`; half of it rounds to 0.)
""", slide="subslide")
nb.code("""
scale, threshold = ..., ...
ex.check_scale(scale, amax=1e4)
ex.check_zero_threshold(threshold, amax=1e4)
""")
nb.code("""
scale = 448 / 1e4
threshold = 2.0 ** -9 / 2 / scale
ex.check_scale(scale, amax=1e4)
ex.check_zero_threshold(threshold, amax=1e4)
""", tags=["solution"])

# --------------------------------------------------------------------------- summary
nb.md("""
4. **Bits kept.** From the probe table above (the `fp8_wgmma` column), how many bits below the large
   term's leading bit does `wgmma` keep?
5. **Swamping.** One block of `wgmma`: $2^{16}$ (256 x 256) and then 31 products of 2 x 2 = 4. What
   does the accumulator hold? (`ex.wgmma_sum(a, b)` runs the fitted model, once you have answered.)
""", slide="subslide")
nb.code("""
bits, total = ..., ...
ex.check_bits_kept(bits, data)
ex.check_swamped_sum(total)
""")
nb.code("""
bits, total = 14, 65536.0
ex.check_bits_kept(bits, data)
ex.check_swamped_sum(total)
""", tags=["solution"])

nb.md("""
## Summary

- **E4M3** (4 significant bits, largest 448, no infinity) for precision, **E5M2** (3 bits, FP16's range,
  inf and NaN) for range; both have subnormals and one rounding costs up to 6.25% or 12.5%.
- **Overflow**: numpy turns it into NaN (E4M3) or inf (E5M2); the GPU's `cvt.rn.satfinite` into
  $\\pm$max. A reference must convert the way the kernel does.
- **Scaling** brings data into the window: $s = \\text{max}/\\text{amax}$. One scale per tensor lets a
  few outliers push the small values to zero; one per 1x128 tile or 128x128 block keeps them.
- Scales that change along K make every 128-element partial sum leave the Tensor Core to be scaled.
- FP8 is used to train, with scales and FP32 accumulation: seed 002's "inference only" is wrong.
- On the H200, FP8 `wgmma` accumulates in blocks of 32 products and keeps 14 significant bits, cut
  toward zero: a CPU model reproduces it bit for bit. Promotion to FP32 every N_C products bounds the
  error at a speed cost the lesson measured; `mma.sync` with FP8 inputs runs as FP16 `HMMA` on Hopper.
""", slide="slide")

# --------------------------------------------------------------------------- appendix
nb.md("""
## Appendix A: the outlier data, value by value

The outlier matrix of the main part: a histogram of $\\log_{10}|x|$ for each scaling scheme, coloured by
what each value became in E4M3 after its group's scale.
""", slide="slide")
nb.code("""
fig = fp8.plot_scaling(X, fmt="fp8_e4m3")
""", slide="subslide")

nb.md("""
## Appendix B: one rounding, or two

`ml_dtypes` converts float64 to FP8 through float32, which can round twice. $1 + 2^{-4} + 2^{-30}$ lies
just above the midpoint between 1 and 1.125 in E4M3, so it should round up; the float32 step first
rounds it onto the midpoint, and the tie then goes to 1. `fp8.cast` rounds float64 once
(`helpers.numerics.round_to`):
""", slide="slide")
nb.code("""
import ml_dtypes
v = np.array([1 + 2.0 ** -4 + 2.0 ** -30])
print("ml_dtypes", ml_dtypes.__version__, "| astype from float64:", v.astype(ml_dtypes.float8_e4m3fn)[0],
      "| fp8.cast:", fp8.cast(v, "fp8_e4m3")[0])
""")

nb.md("""
## Appendix C: all 256 E4M3 patterns

Row = high 4 bits (sign and the first three exponent bits), column = low 4 bits; each cell is the
value numpy decodes.
""", slide="slide")
nb.code("""
bits, vals = fp8.patterns("fp8_e4m3")
grid = [{"hi": f"{h:X}_", **{f"{l:X}": f"{vals[16 * h + l]:g}" for l in range(16)}} for h in range(16)]
helpers.display.table(grid, ["hi"] + [f"{l:X}" for l in range(16)])
""")

nb.save()
