"""Source of notebooks/04_precision_analysis.ipynb (run `make notebooks` after editing)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("04_precision_analysis")

nb.md("""
# Tensor Cores, WMMA and mixed precision
## 04 · Precision analysis: how error grows, and how the hardware really adds

Lesson 3 measured *that* FP16 accumulation is less accurate. This lesson explains *how much*,
*why*, and *when it matters*: error against the length K of each dot product, the bounds
that predict it, the point where a sum stops growing, and the exact arithmetic of the tensor
core, measured with single `mma_sync` instructions.
""", slide="slide")

nb.md("""
## What you will be able to do

- predict how the error of a dot product grows with K for FP16, BF16, TF32 and FP32, and draw
  the worst-case and probabilistic bounds over the measurements;
- recognise stagnation ("large eats small") and fix it with Kahan or pairwise summation;
- say what a tensor core does inside one `mma_sync`: exact products, alignment with a few extra
  bits, truncation, one rounding per block, and reproduce it bit for bit on the CPU;
- set a test tolerance from K and the formats, and pick FP16 or BF16 for a given job.
""", slide="slide")

nb.code("""
import numpy as np
import helpers
from helpers import emulate, numerics
from helpers.experiments import precision as P
import helpers.exercises.precision

env = helpers.summary()
""", ignore_output=True)

nb.md("""
## Unit roundoff: the one number per format

Rounding to nearest in a format with t significant bits makes a relative error of at most
u = 2^-t. Directed rounding (truncation) doubles it to 2^(1-t). (`numpy.finfo(...).eps` is 2u.)
""", slide="slide")
nb.code("""
for f in ["fp32", "tf32", "fp16", "bf16"]:
    F = numerics.fmt(f)
    print(f"{f}: {F.precision:2d} significant bits, u = 2^-{F.precision} = {F.unit_roundoff:.3e}")
""")
nb.notes("TF32 and FP16 have the same precision (11 bits); TF32 and BF16 have FP32's exponent range. "
         "BF16's u is 8 times FP16's: BF16 trades precision for range.")

# ------------------------------------------------------------------ stagnation
nb.md("""
## Stagnation: when a running sum stops growing

Add 1.0 again and again in FP16. At 2048 the spacing of FP16 numbers is 2, so 2048 + 1 is a
tie between 2048 and 2050, and round-to-even keeps 2048: the sum is stuck forever.
""", slide="slide")
nb.code("""
for fmt, step in [("fp16", 1.0), ("bf16", 1.0), ("fp16", 0.1)]:
    print(f"summing {step} in {fmt}: stops at {P.stagnation_point(fmt, step):g}")
for fmt in ["fp16", "bf16", "fp32"]:   # 1 + 1 is lost once the spacing is 2: at 2^t = 1/u
    print(f"{fmt}: predicted 2^{numerics.fmt(fmt).precision} = {2 ** numerics.fmt(fmt).precision}")
""")
nb.notes("FP32 would need 2^24 additions to get stuck, so we only predict it. BF16 stops at 256 because it has 8 significant bits. "
         "Beware numpy: np.sum on float16 is pairwise with a float32 accumulator, so it does not stagnate; "
         "np.cumsum and Python loops do.")

nb.md("""
## "Large eats small", measured

Seed 000 warns that long FP16 accumulation lets a large partial sum swallow small terms. Here is
the effect on 2048 followed by a thousand ones (exact sum 3048), and two classic fixes:
Kahan's compensated summation and pairwise (tree) summation, both still entirely in FP16.
""", slide="slide")
nb.code("""
xs = [2048.0] + [1.0] * 1000
for how, fn in [("sequential", P.sum_sequential), ("Kahan", P.sum_kahan), ("pairwise", P.sum_pairwise)]:
    print(f"{how:10s}: fp16 {fn(xs, 'fp16'):7g}   fp32 {fn(xs, 'fp32'):7g}")
print(f"sequential, small terms first: fp16 {P.sum_sequential(xs[1:] + xs[:1], 'fp16'):g}")
""")
nb.notes("Kahan carries the lost low part in a second FP16 variable and feeds it back. Pairwise adds numbers "
         "of similar size, so its error grows like log2(n). Sorting small-to-large also helps, here exactly.")

nb.md("""
## The tensor core's FP16 accumulator stagnates later

A WMMA kernel with an FP16 accumulator rounds once per `mma_sync`, after adding 16 products exactly.
Summing ones therefore grows in steps of 16: it gets stuck where 16 is half the FP16 spacing.
""", slide="slide")
nb.code("""
for K in [2048, 4096, 32768, 65536]:
    c = emulate.tensor_core_gemm(np.ones((1, K)), np.ones((K, 1)), acc="fp16")[0, 0]
    print(f"K = {K:6d}: WMMA FP16 accumulator (CPU model) gives {float(c):g}")
""")
nb.code("""
rec = P.recorded("tc_probes")
if rec is None:
    print("no recording of tc_probes yet: run `make record` on a GPU")
else:
    for r in rec.data["stagnation"]:
        print(f"K = {r['k']:6d}: fp16 acc {r['fp16_acc']:g}, fp32 acc {r['fp32_acc']:g}   ({rec.source})")
""", ignore_output=True)
nb.notes("The recorded lines show the same numbers from the H200: the block of 16 is a hardware property.")

# ------------------------------------------------------------------ error vs K
nb.md("""
## Error against K: the experiment

For K = 16 ... 16384 we multiply 64 x K by K x 64 matrices five ways: FP16 inputs with FP16 or FP32
accumulation, BF16 and TF32 inputs with FP32 accumulation (all WMMA), and the FP32 CUDA-core FMA chain.

- error per element, normalised by (|A||B|)_ij: the scale every bound is stated in;
- the reference is the float64 product of the *rounded* inputs: we measure accumulation only;
- two data sets: U[0,1) (all products positive: errors add up) and N(0,1) (zero mean: they cancel).
""", slide="slide")
nb.code("""
meas = P.recorded("error_vs_k")
rows = meas.data if meas is not None else P.emulated_error_vs_k(P.ERROR_KS, M=16, dists=("uniform",))
source = meas.source if meas is not None else "CPU model, 16 x 16 (no recording yet)"
print(source)
""", ignore_output=True)
nb.md("""
Worst case (Higham): |error| <= gamma_n = n u / (1 - n u) with n roundings. The probabilistic bound
(Higham & Mary 2019) grows like sqrt(n) u. The dashed lines below are the bounds each kernel's check
really uses (`helpers.tolerance`, slide "Setting a test tolerance"): the rounding term with
n = K / block (each Tensor Core kernel's block as measured on the H200 later in this lesson, where
the models are printed; 1 for the FMA chain) *plus* the alignment inside each block, gamma_K(2^-23),
for the Tensor Core kernels.
""", slide="subslide")
nb.code("""
Ks, cur = P.curves(rows, "uniform")
colors = dict(zip(P.ARITHMETICS, helpers.plots.COLORS))       # a bound in its curve's colour
bounds = {f"tolerance, {a}" + (" (and bf16 in)" if a == "fp16 in, fp32 acc" else ""):
          (P.tolerance_curve(Ks, a), colors[a]) for a in P.ARITHMETICS if a != "bf16 in, fp32 acc"}
fig = helpers.plots.error_vs_k(Ks, cur, bounds=bounds, title="U[0,1): median accumulation error",
                               source=source)
""", slide="subslide", ignore_output=True)
nb.notes("Read the curves from the top: FP16 accumulation stays far below its bound (rounding to nearest "
         "lets errors cancel). The three FP32-accumulating WMMA curves sit together, far above the FP32 FMA "
         "chain, and under their tolerance lines (BF16's is FP16's: same accumulator, same block). The "
         "rounding term alone, gamma_{K/16}(2u), would sit below TF32's median at large K: TF32 rounds every "
         "4 products, and the alignment term is most of the tolerance. Truncation makes every error the same "
         "sign, so the curves grow almost as fast as the worst case: that is why the tolerance for them is "
         "worst-case, not probabilistic.")

nb.code("""
def slope(ks, v):
    ks, v = np.array(ks), np.array(v)
    ok = v > 0                      # an exact result (error 0) has no logarithm
    return np.polyfit(np.log2(ks[ok]), np.log2(v[ok]), 1)[0]
""")
nb.code("""
for name, v in cur.items():
    print(f"{name:18s}: error at K={Ks[0]} {v[0]:.1e}, at K={Ks[-1]} {v[-1]:.1e}; log-log slope {slope(Ks, v):.2f}")
""", ignore_output=True)
nb.md("""
How to read the slopes: 0.5 is sqrt(K) growth (random, mean-zero rounding errors), 1.0 is linear
growth (every rounding error has the same sign). On positive data the tensor core's truncated FP32
sum grows almost linearly; the FMA chain, which rounds to nearest, grows like sqrt(K).
""", slide="fragment")

nb.code("""
if meas is not None:
    Ks_n, cur_n = P.curves(rows, "normal")
    fig = helpers.plots.error_vs_k(Ks_n, cur_n, title="N(0,1): median accumulation error", source=source)
""", slide="subslide", ignore_output=True)
nb.notes("With zero-mean data the partial sums stay small (about sqrt(k)), so their roundings are small too: "
         "every curve is lower and flatter. Zero-mean test data hides accumulation error; that is why the "
         "bounds are checked on U[0,1). TF32 is now clearly above FP16-with-FP32-accumulation: it truncates "
         "after a smaller block of products (the blocks measured later in the lesson), so more often.")

nb.md("""
## Input rounding versus accumulation

Rounding FP32 data to FP16 or BF16 costs at most u_in per input, whatever K: that is a **bound**.
What it really costs falls with K: the rounding errors of the products have both signs and partly
cancel, so the median input share falls roughly like u_in / sqrt(K) (first cell, computed exactly
on the study's inputs, no GPU), while the accumulation error grows. That is why accumulation
overtakes at large K (second cell: total error against the original inputs, and accumulation only).
""", slide="slide")
nb.code("""
for fmt in ("fp16", "bf16"):
    share = [P.input_rounding_error(k, "uniform", fmt) for k in Ks]
    print(f"{fmt} input rounding alone: {share[0]:.1e} at K={Ks[0]}, {share[-1]:.1e} at K={Ks[-1]}; "
          f"log-log slope {slope(Ks, share):.2f} (bound u_in = {numerics.unit_roundoff(fmt):.1e})")
""")
nb.code("""
for name in P.ARITHMETICS:
    r = {x["k"]: x for x in rows if x["dist"] == "uniform" and x["arithmetic"] == name}
    lo, hi = r[min(r)], r[max(r)]
    print(f"{name:18s} K={min(r):5d}: total {lo['total_median']:.1e} acc {lo['acc_median']:.1e} | "
          f"K={max(r):5d}: total {hi['total_median']:.1e} acc {hi['acc_median']:.1e}")
""", ignore_output=True)
nb.notes("The two FP32-accumulating FP16 rows show it: at the smallest K the total is all input rounding, at "
         "K = 16384 it equals the accumulation error. The input share in the first cell is the same on every "
         "machine (exact float64 products of the rounded and the original inputs).")

nb.md("""
## Where FP16 accumulation saturates

A CUDA-core FP16 loop (`hfma`, one rounding per product) stagnates at 2048; with U[0,1) data the
mean product is 1/4, so the sum is stuck from about K = 4 x 2048 on and the error heads for 1.
The tensor core adds 16 products before each rounding: its block sum (about 4) is only lost
to ties where the FP16 spacing reaches 8, at a sum of 2^13, i.e. K = 4 x 2^13. The CPU model:
""", slide="slide")
nb.code("""
hfma = emulate.TensorCoreModel(1, 2, "one FP16 rounding per product (CUDA-core hfma chain)")
print("predicted stagnation: hfma chain K =", 4 * 2048, "; WMMA blocks of 16 K =", 4 * 2**13)
for K in [1024, 4096, 8192, 16384]:
    A, B = P.error_inputs(K, "uniform", 4, 4)
    A, B = numerics.round_to(A, "fp16").astype(float), numerics.round_to(B, "fp16").astype(float)
    e1 = P.error_stats(emulate.tensor_core_gemm(A, B, acc="fp16", model=hfma), A, B, A, B)["acc_median"]
    e16 = P.error_stats(emulate.tensor_core_gemm(A, B, acc="fp16"), A, B, A, B)["acc_median"]
    print(f"K = {K:5d}: median error, hfma chain {e1:.1e}   WMMA (block 16) {e16:.1e}")
""")
nb.notes("The hfma chain's error approaches 1 - 4 x 2048 / K once it is stuck: half the sum is lost at "
         "K = 16384. The tensor core's block of 16 postpones stagnation by a factor 4 in K on this data "
         "(32768 against 8192, as printed), by a factor 16 for the sum of ones (32768 against 2048).")

nb.md("""
## The CPU model reproduces these curves

The same inputs (seeded), pushed through the CPU model of each kernel, give the same errors: the
model is not a rough approximation but the hardware's arithmetic (bit for bit on the H200: `emulator_match` in appendix A, and lesson 03's `mixed_emulator_probe`).
A quick check at small sizes that the model's errors stay within the course's tolerance:
""", slide="slide")
nb.code("""
emu_rows = P.emulated_error_vs_k([64, 1024], M=16, dists=("uniform",))
for r in emu_rows:
    tol = numerics.tolerance(r["k"], P.ARITHMETICS[r["arithmetic"]][0], P.ARITHMETICS[r["arithmetic"]][1],
                             acc_rounding="nearest" if r["arithmetic"] in ("fp16 in, fp16 acc", "fp32 FMA chain")
                             else "truncate", block=1 if "FMA" in r["arithmetic"] else 16,
                             inputs_rounded_in_reference=True)
    print(f"K={r['k']:5d} {r['arithmetic']:18s}: max error {'<=' if r['acc_max'] <= tol.value else '>'} "
          f"tolerance {tol.value:.1e}")
""")

# ------------------------------------------------------------------ how tensor cores add
nb.md("""
## How a tensor core adds

Fasi, Higham, Mikaitis & Pranesh (PeerJ CS 7:e330, 2021) probed V100, T4 and A100 tensor cores with
chosen inputs; Khattak & Mikaitis (arXiv:2512.07004, 2025) extended this to H100 and B200. In one
block of b products plus the accumulator c:

1. every product a_k b_k is exact (no rounding);
2. all terms are shifted to the largest exponent, keeping 24 + e bits; lower bits are dropped
   (on the H200 a product is aligned before it is normalised: appendix A);
3. the shifted terms are added exactly (with carry bits);
4. the sum is rounded once: toward zero to FP32, to nearest to FP16.
""", slide="slide")
nb.md("""
| GPU | block b (FP16/BF16) | block b (TF32) | extra bits e | source |
|---|---|---|---|---|
| V100 | 4 | - | 0 | Fasi et al. 2021; K & M code `V100TC.m` |
| A100 | 8 | 4 | 1 | Fasi et al. 2021; K & M code `A100TC.m` |
| H100 | 16 | 8 | 2 | K & M code `H100TC.m` (their `H200TC.m` calls it) |
| B200 | 16 | 8 | 2 | K & M code `B200TC.m` |
| H200 | measured in this lesson (below) | | | `tc_probes`, `emulator_match`, lesson 03's `mixed_emulator_probe` |

"K & M code": the MATLAB models published with Khattak & Mikaitis's paper,
github.com/north-numerical-computing/MATLAB-tensor-core, `models/`, commit b12b5a7 (2026-08-19),
parameters `fma` (b) and `neab` (e). The paper itself (arXiv:2512.07004) was not read for this
course beyond its abstract, so no table of it is cited here. What the H200 measured, as the models
the course fitted to it (below; the probes that measure them follow): FP16 and BF16 as in their
H100 and B200 code, **TF32 with a block of 4 (printed below), not their 8**: the A100's.
""", slide="subslide")
nb.code("""
for f in ("fp16", "bf16", "tf32"):
    print(f"{f}: {emulate.model_for(f)}")
""")

nb.md("""
## A probe: one `mma_sync` that asks one question

Each probe fills row 0 of A, column 0 of B and C[0][0], everything else zero, runs one 16x16x16
`mma_sync` and reads D[0][0]. Each hypothesis predicts a different answer. The kernels:
""", slide="slide")
nb.code("""
helpers.display.show_kernel("precision.cu", "tc_probe_f16_f32")
""", slide="subslide")

nb.code("""
cases = P.probe_cases()
def verdict(c, value):
    hits = [h for h, v in c["expect"].items() if v == value]
    return ", ".join(hits) if hits else "none of the hypotheses"

for c in cases[:8] + [c for c in cases if "extra bits" in c["name"] and c["fmt"] == "fp16"]:
    print(f"{c['name']:45s} model: {P.emulate_probe(c)!r:22} -> {verdict(c, P.emulate_probe(c))}")
""", slide="subslide")
nb.notes("These are the CPU model's answers with the H200 parameters; the next cell shows the H200's own.")

nb.code("""
if rec is None:
    print("no recording of tc_probes yet")
else:
    agree = sum(c["measured"] == P.emulate_probe(c) for c in rec.data["probes"])
    print(f"{rec.source}: the GPU agrees with the model on {agree} of {len(rec.data['probes'])} probes")
    for c in rec.data["probes"]:
        if c["measured"] != P.emulate_probe(c):
            print(f"  differs: {c['name']}: GPU {c['measured']!r}, model {P.emulate_probe(c)!r}")
""", ignore_output=True)

nb.md("""
## What the probes measure on the H200

The answers, read off the recorded probes (block size from the position where a small product
stops joining c's exact sum; extra bits from the largest e whose probe keeps 1 + 2^-23):
""", slide="slide")
nb.code("""
def measured_parameters(probes, fmt):
    ok = lambda c: c["measured"] == next(iter(c["expect"].values()))
    blk = [c for c in probes if c["fmt"] == fmt and "block size" in c["name"]]
    block = 1 + max([i + 1 for i, c in enumerate(blk) if ok(c)], default=0)
    extra = max([int(c["name"].split(">= ")[1][0]) for c in probes if c["fmt"] == fmt
                 and "extra bits" in c["name"] and ok(c)], default=0)
    rnd = [c for c in probes if c["fmt"] == fmt and c["name"].endswith("(negative)")][0]
    return {"block": block if block < len(blk) + 1 else f">= {block}", "extra bits": extra,
            "fp32 rounding": verdict(rnd, rnd["measured"])}

""")
nb.code("""
probes = rec.data["probes"] if rec is not None else [{**c, "measured": P.emulate_probe(c)} for c in cases]
for fmt in ["fp16", "bf16", "tf32"]:
    print(fmt, measured_parameters(probes, fmt))
""", ignore_output=True)
nb.notes("For FP16/BF16 the probe cannot find a rounding inside one instruction (it only sees K = 16). "
         "For TF32 it finds a block smaller than the instruction's K = 8: one TF32 mma_sync rounds inside "
         "itself, as Fasi et al. found on A100, and unlike the block of 8 in Khattak & Mikaitis's H100 and "
         "B200 model code.")

nb.md("""
## The same probes on the published V100 and A100 models

Run against the CPU model with the published parameters, the probes recover them: they would
tell these GPUs apart on real hardware too.
""", slide="slide")
nb.code("""
for model in [emulate.V100_MODEL, emulate.A100_MODEL, emulate.DEFAULT_TC_MODEL]:
    sim = [{**c, "measured": P.emulate_probe(c, model)} for c in cases if c["fmt"] == "fp16"]
    print(f"{model.source:40s}", measured_parameters(sim, "fp16"))
""")

nb.md("""
## Non-monotonic: a bigger input can give a smaller sum

Raising c from 1 - 2^-24 to 1 moves the alignment up one place, and fifteen tiny products fall off
the bottom. The tensor-core sum goes *down*. (Mikaitis studies this for multi-term adders.)
""", slide="slide")
nb.code("""
for c in [x for x in cases if x["name"].startswith("fp16: monotonicity") and "1.49e-08" in x["name"]]:
    print(f"{c['name']:52s} -> {P.emulate_probe(c)!r}")
""")

# ------------------------------------------------------------------ practical rules
nb.md("""
## What the seed articles get wrong

- Seed 000 says the FP32 accumulator lets the Tensor Core "accumulate with high precision inside"
  (在芯片内部保持高精度累加) and so avoid mantissa truncation. What the probes measured: inside a
  block the products are added exactly, with FP32-level precision (24 bits plus the extra alignment
  bits the probes count);
  then each block's FP32 result is rounded **toward zero**, always in the same direction. On
  positive data the error therefore grows about linearly in K (the slopes above), not like sqrt(K).
  The precision is FP32's; the rounding is one-sided.
- Seed 001 says TF32 loses "much less precision than FP16". TF32 keeps 10 fraction bits, exactly
  FP16's: the same u = 2^-11 (first table) and the same input-rounding error in the measurements.
  What TF32 adds is FP32's exponent range.
- Seed 002 (sec. 6.1) recommends TF32 for scientific computing, with "almost no precision loss".
  Its unit roundoff is that of FP16, thousands of times FP32's, and so is the error of a TF32 GEMM:
""", slide="slide")
nb.code("""
u32, u19 = numerics.unit_roundoff("fp32"), numerics.unit_roundoff("tf32")
rec_h = helpers.results.load_latest()
t32, f32 = (rec_h.select(kernel=k, m=4096, n=4096, k=4096)[0] for k in ("cublas_tf32", "cublas_fp32"))
print(f"unit roundoff: TF32 {u19:.1e}, FP32 {u32:.1e} ({u19 / u32:.0f}x)")
print(f"cuBLAS at 4096, relative error: TF32 {t32['rel_err']:.1e}, FP32 {f32['rel_err']:.1e} "
      f"({t32['rel_err'] / f32['rel_err']:.0f}x)  [{rec_h.label}]")
""")
nb.code("""
r16 = {x["k"]: x["total_median"] for x in rows if x["dist"] == "uniform" and x["arithmetic"] == "fp16 in, fp32 acc"}
r19 = {x["k"]: x["total_median"] for x in rows if x["dist"] == "uniform" and x["arithmetic"] == "tf32 in, fp32 acc"}
for K in sorted(r16)[:3]:
    print(f"K = {K:3d}: total error with FP16 inputs {r16[K]:.2e}, with TF32 inputs {r19[K]:.2e}")
""", ignore_output=True)

nb.md("""
## Practical rules

- **FP16 accumulation** is acceptable while its error stays below the FP16 rounding of the inputs
  themselves (the K printed below): beyond that it dominates, and at large K it stagnates outright.
  Otherwise accumulate in FP32: it costs no extra input bytes.
- **BF16** when range matters (no loss scaling, FP32's exponent), at 8 times FP16's input rounding.
- **Tensor-core FP32 accumulation truncates**: on positive data its error grows almost linearly,
  ~ K/16 x 2^-23: below FP16's input unit roundoff 2^-11 up to K = 2^16 (BF16's 2^-8: K = 2^19),
  although at large K it already dominates the measured error (the input-rounding slide).
- **Zero-mean test data hides accumulation error**: test with non-negative data too.
""", slide="slide")

nb.code("""
e16 = {x["k"]: x["acc_median"] for x in rows if x["dist"] == "uniform" and x["arithmetic"] == "fp16 in, fp16 acc"}
u16 = numerics.unit_roundoff("fp16")
ok = [k for k in sorted(e16) if e16[k] <= u16]
print(f"FP16 accumulation error stays below FP16's own input rounding u = {u16:.1e} up to K = "
      f"{max(ok) if ok else None} (U[0,1), median; {source})")
""", ignore_output=True)

nb.md("""
## Setting a test tolerance

`helpers.tolerance(K, inputs, acc, ...)` = (1 + input term)(1 + accumulation term)(1 + output term) - 1:
input rounding (1 + u_in)^2 - 1; accumulation gamma_n (truncation: u doubled) or, when rounding is
to nearest, the smaller of gamma_n and the probabilistic sqrt(n) bound, with n = ceil(K / block); alignment
inside blocks gamma_K(2^-23); output rounding when the output is narrower than the accumulator.
""", slide="slide")
nb.code("""
for args, kw in [((1024, "fp16", "fp32"), dict(acc_rounding="truncate", block=16)),
                 ((1024, "fp16", "fp16"), dict(block=16)),
                 ((1024, "bf16", "fp32"), dict(acc_rounding="truncate", block=16)),
                 ((1024, "fp32", "fp32"), dict()),
                 ((16384, "fp16", "fp16"), dict(block=16))]:
    print(numerics.tolerance(*args, **kw, n_checked=64 * 64))
""")
nb.code("""
if meas is not None:
    worst = max((r for r in rows if r["arithmetic"] == "fp16 in, fp32 acc"), key=lambda r: r["acc_max"])
    tol = numerics.tolerance(worst["k"], "fp16", "fp32", acc_rounding="truncate", block=16,
                             inputs_rounded_in_reference=True)
    print(f"largest measured fp16/fp32 error {worst['acc_max']:.1e} at K={worst['k']} vs tolerance {tol.value:.1e}")
""", ignore_output=True)
nb.notes("The tolerance is a bound, not an estimate: the measured errors sit well below it, and a failing "
         "check means a bug, not bad luck (false-alarm probability below 1e-6 for the probabilistic part).")

nb.md("""
## One bound is not enough: at large K, C = 0 passes it

The tolerance multiplies |A||B|, which grows like K. On zero-mean data the answer grows like sqrt(K),
so at large K the bound exceeds the answer itself. An FP16 accumulator at K = 16384:
""", slide="slide")
nb.code("""
spec = helpers.KERNELS["wmma_fp16acc_gemm_kernel"]
A = helpers.random_matrix(16, 16384, seed=3).astype(np.float16)
B = helpers.random_matrix(16384, 16, seed=4).astype(np.float16)
C = helpers.gemm("wmma_fp16acc_gemm_kernel", A, B)
for what, X in [("the kernel's result", C), ("all zeros", np.zeros_like(C))]:
    chk = spec.check(X, A, B)
    print(f"{what:20s} bound: {'holds' if chk.bound_ok else 'broken'}, answer-scaled bound: "
          f"{'holds' if chk.size_ok else 'broken'}, model: {chk.model} -> {'PASS' if chk else 'FAIL'}")
""")
nb.md("""
So the check (`helpers.check`) adds two tests to the bound:

- **answer-scaled**: the same worst case, from the partial sums the accumulator really holds. At every
  rounding the error is at most u |s| for the partial sum s (2u |s| when it truncates), plus, on a tensor
  core, the bits the alignment drops: at most (b + 1) 2^-23 times the block's largest term, whatever the
  number of extra bits. The check computes every partial sum in float64, so the bound follows the answer;
- **the model**: the CPU model fitted above must agree bit for bit (every element, or a seeded 64 x 64
  sample of large products), on the CPU and on the H200. It sees what no bound can: an error smaller
  than rounding could make.

Neither needs an input-rounding term when A and B already are in the kernel's format: the reference is
then the exact product of the same numbers.
""", slide="subslide")

nb.md("""
## The smallest error of one element each check detects

With the model, any change of any element, one unit in the last place, fails (shown first). Without it
(on a GPU the model was not fitted to), the two bounds alone catch a change of one element down to the
sizes below, relative to the root-mean-square of the answer (64 x 64 x 4096, N(0,1) inputs):
""", slide="slide")
nb.code("""
from helpers.check import detection_limits, encode_inputs

A32, B32 = helpers.random_matrix(64, 4096, seed=8), helpers.random_matrix(4096, 64, seed=9)
for name, spec in helpers.KERNELS.items():
    A_k, B_k = encode_inputs(A32, spec.inputs), encode_inputs(B32, spec.inputs)
    C = spec.emulate(A_k, B_k)                      # bit-identical to the H200 kernel
    C1 = C.copy()
    C1[17, 5] = np.nextafter(C1[17, 5], np.inf)     # one element, one unit in the last place
    lim = detection_limits(C, A_k, B_k, inputs=spec.inputs, acc=spec.acc, acc_rounding=spec.acc_rounding,
                           block=spec.acc_block, values=helpers.formats.round_tf32_rna if spec.inputs == "tf32" else None)
    print(f"{name:26s} 1 ulp off: {'FAIL' if not spec.check(C1, A_k, B_k) else 'pass'} | bounds alone: "
          f"smallest {lim['smallest']:.1e}, median {lim['median']:.1e}")
""", slide="subslide")
nb.notes("FP32 accumulators leave the bounds little room: a change as small as the 'smallest' sizes printed "
         "above fails even without the model. An FP16 accumulator's worst case is wide at K = 4096, so without the model "
         "only changes of a sizeable fraction of the answer fail: that is why the model is part of the check.")

# ------------------------------------------------------------------ exercises
nb.md("""
## Check your understanding

1. Through WMMA with an FP16 accumulator (16 products per rounding), a sum of ones stops growing at
   what value?
2. Predict the H200's answer (FP16 inputs, FP32 accumulator): c = 1, a = [2^-24] * 4,
   b = [1, 1/2, 1/4, 1/4]. (Exact: 1 + 2^-23.)
3. What is the largest K (a multiple of 16) for which `helpers.tolerance(K, "fp16", "fp16", block=16,
   inputs_rounded_in_reference=True)` is at most 1e-2?

Replace `None` and run the cell.
""", slide="slide")
nb.code("""
answer_1 = None
answer_2 = None
answer_3 = None
helpers.exercises.precision.fp16_block_stagnation_exercise(answer_1)
helpers.exercises.precision.probe_exercise(answer_2)
helpers.exercises.precision.tolerance_exercise(answer_3)
""")
nb.md("**Solutions** (try first):", slide="subslide")
nb.code("""
helpers.exercises.precision.fp16_block_stagnation_exercise(32768)
# window down to 2^-25: 2^-24 + 2^-25 survive, the two 2^-26 are dropped; 1 + 1.5 * 2^-24 truncates to 1
helpers.exercises.precision.probe_exercise(1.0)
K = 16
while numerics.tolerance(K + 16, "fp16", "fp16", block=16, inputs_rounded_in_reference=True).value <= 1e-2:
    K += 16
helpers.exercises.precision.tolerance_exercise(K)
""")
# ------------------------------------------------------------------ appendix
nb.md("""
## Appendix A. The detail the textbook model misses: products are not normalised

The published form of the model aligns each product by its normalised exponent. On the H200,
a product whose significand lies in [2, 4) is aligned by e(a) + e(b) instead, one place lower, so
it keeps one more bit. With that single change the CPU model matches the H200's WMMA output bit
for bit. The cell compares the two models on a product the CPU can do quickly:
""", slide="slide")
nb.code("""
A, B = P.match_inputs(128, seed=7)
ours = emulate.tensor_core_gemm(A, B)
textbook = emulate.tensor_core_gemm(A, B, model=emulate.TensorCoreModel(16, 2, "textbook",
                                                                           normalised_products=True))
print(f"textbook model differs from the H200 model on {np.mean(ours != textbook):.1%} of the elements")
print("probe 'products aligned before normalisation':",
      [c["expect"] for c in cases if c["name"] == "fp16: products aligned before normalisation"][0])
""")
nb.code("""
m = P.recorded("emulator_match")
if m is None:
    print("no recording of emulator_match yet")
else:
    d = m.data
    print(f"{m.source}: {d['shape']} product, {d['identical']:.4%} of elements bit-identical, "
          f"largest difference {d['max_ulp']} ulp; model: {d['model']}")
    for name, frac in d.get("candidates", {}).items():
        print(f"  {name:45s} {frac:8.2%} identical")
""", slide="subslide", ignore_output=True)
nb.md("""
Try it yourself: the record keeps a 32 x 32 corner of the H200's raw output (the inputs are
regenerated from the seed). Each candidate model is one change away from the fitted one:
""", slide="subslide")
nb.code("""
if m is not None and "sample" in m.data:
    for name, frac in P.sample_fit(m.data).items():
        print(f"{name:55s} reproduces {frac:7.2%} of the H200's corner")
""", ignore_output=True)
nb.notes("The match was found by testing hypotheses (sign handling of truncation, joint or separate "
         "alignment of c, rounding mode, extra bits, block splitting, normalisation) against raw H200 "
         "outputs: of all of them, only the unnormalised product alignment turns 'most elements identical' "
         "into 'all elements identical' (the candidate table above).")


nb.save()
