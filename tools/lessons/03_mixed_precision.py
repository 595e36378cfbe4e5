"""Source of notebooks/03_mixed_precision.ipynb (run `make notebooks` after editing)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("03_mixed_precision")

# --------------------------------------------------------------------------- title
nb.md("""
# Tensor Cores, WMMA and mixed precision
## 03 · Mixed precision: FP16 in, FP32 accumulate, and BF16, TF32

The WMMA loop of lesson 02 with other number formats. What each format can hold, what it costs in
error, what it buys in speed, what switches TF32 on (measured, including an undocumented switch),
and why FP16 training needs loss scaling while BF16 does not.

*No GPU? Every cell runs: kernels are emulated with numpy, and timings are the ones recorded on an
NVIDIA H200, labelled as such.*
""", slide="slide")
nb.notes("""
The lesson follows seed 000's mixed-precision section (wmma_mixed_gemm_kernel vs gemm_fp32_kernel at
1024), seed 001's mixed-precision strategy, and seed 002's formats, 'three ways to use tensor cores'
and numerical-stability sections. Seed 002 gets several facts wrong; each is computed and corrected
on its own slide.
""")

nb.md("""
## What you will learn

- read a floating-point format from its bits: range, smallest normal and subnormal, unit roundoff;
- why TF32 has FP16's precision and FP32's range, and BF16 trades precision for range;
- what the seed's comparison (`wmma_mixed_gemm_kernel` vs `gemm_fp32_kernel`) measures, and where
  every variant (our WMMA kernels, cuBLAS) sits on one speed-vs-error chart;
- how TF32 is switched on in practice, measured: `CUPY_TF32`, `NVIDIA_TF32_OVERRIDE`, cuBLAS compute types;
- what a cast to FP16 or BF16 does to values spanning many decades, and how static and dynamic
  loss scaling rescue FP16 training.
""", slide="slide")

nb.code("""
import numpy as np
import helpers
from helpers import formats, training
from helpers.experiments import mixed as lesson
from helpers.exercises import mixed as ex

rec = helpers.results.load_latest()      # the committed GPU record: same numbers on every machine
print("recorded data:", rec.label)
""")
nb.code("""
env = helpers.summary()
""", ignore_output=True)
nb.notes("""
Two sources of numbers. `rec` is the record committed with the course (the H200): cells that print
from it give the same output everywhere, and the prose refers to them. Cells marked *live* measure
on your GPU when you have one; without one they show the recorded data too, labelled.
""")

# --------------------------------------------------------------------------- formats
nb.md(r"""
## Six formats, one recipe

A binary floating-point number is a sign, an exponent $e$ and a fraction $f$:
$x = \pm(1.f)_2 \cdot 2^{e}$. The exponent's bits set the **range**; the fraction's bits set the
**precision**. Rounding to nearest makes a relative error of at most the *unit roundoff*
$u = 2^{-t}$, where $t$ = fraction bits + 1 (numpy's `finfo.eps` is the spacing above 1, $2u$).

Below the smallest normal number $2^{e_{min}}$ the hidden leading 1 becomes 0: **subnormals** fill
the gap to zero with even spacing, losing precision as they go.

Every number in the next table is computed: from `numpy.finfo` / `ml_dtypes.finfo`, and for TF32
(which has no storage type) from FP32's exponent range and 10 fraction bits.
""", slide="slide")
nb.code("""
rows = formats.format_table()
helpers.display.table(rows, ["format", "bits", "sign/exp/frac", "max", "tiny", "subnormal", "u", "digits", "range", "inf"],
                      ["format", "bits", "sign/exp/frac", "largest", "smallest normal", "smallest subnormal",
                       "unit roundoff u", "decimal digits", "range (subnormal .. max)", "inf?"],
                      fmt={"max": ".4g", "tiny": ".4g", "subnormal": ".4g", "u": ".3g", "digits": ".1f"})
""")
nb.notes("""
Read across a row: FP16's largest number is 65504, and its smallest normal is 2^-14; below that,
subnormals reach 2^-24. BF16 has FP32's range with only 8 significant bits. TF32 is 19 bits used out
of a 32-bit word. E4M3 has no infinity: its top exponent holds numbers (max 448), which the IEEE
recipe would not give (240) - the 'fn' in ml_dtypes' float8_e4m3fn means finite, NaN only.
""")

nb.md("""
### The bits themselves

Each row is one format holding the same number, $-1/3$, rounded to it: sign (pink), exponent (blue),
fraction (orange). The value on the right is what the bits decode to. TF32 keeps FP32's sign and
exponent and 10 fraction bits; the other 13 bits of its 32-bit word carry nothing.
""", slide="subslide")
nb.code("""
fig = formats.plot_bit_layouts(value=-1 / 3)
""")

nb.md("""
## Seed 002's format table, checked

Seed 002 gives a table of "dynamic range" and "relative precision", and says TF32 is "19 bits
(logical)" and that FP16's smallest positive number is about 6.1e-5. Its claims (typed from the
article) against the computed values:
""", slide="slide")
nb.code("""
seed = {"fp32": ("~10^±38", "~1e-7"), "tf32": ("~10^±38", "~1e-3"),
        "fp16": ("~10^±8", "~1e-3"), "bf16": ("~10^±38", "~1e-2")}       # seed 002, section 2.1
check = []
for n, (rng_claim, prec_claim) in seed.items():
    i = formats.format_info(n)
    check.append({"format": n, "seed range": rng_claim, "normal range (log10)": f"{np.log10(i.tiny):.1f} .. {np.log10(i.max):.1f}",
                  "with subnormals": f"{np.log10(i.smallest_subnormal):.1f}", "seed precision": prec_claim,
                  "eps = 2u": i.eps, "u": i.u})
helpers.display.table(check, list(check[0]), fmt={"eps = 2u": ".2e", "u": ".2e"})
""")
nb.code("""
i16, i32 = formats.format_info("fp16"), formats.format_info("tf32")
print("FP16: smallest normal", i16.tiny, "| smallest positive (subnormal)", i16.smallest_subnormal)
print("TF32: bits used", i32.bits, "| bits stored", i32.storage_bits, "| significant bits", i32.precision,
      "(FP16:", i16.precision, ")")
""")
nb.md("""
- **FP16 range "~10^±8": wrong.** It is lopsided: normal numbers span about 10^-4.2 to 10^4.8, and
  subnormals extend the bottom to about 10^-7.2. Overflow comes far sooner than "10^8".
- **FP16's "smallest positive ~6.1e-5"** is the smallest *normal* number; subnormals go 1024 times lower.
- **"Relative precision"** matches `eps` (the spacing above 1) to an order of magnitude; the worst
  rounding error is half that, `u`.
- **TF32 "19 bits (logical)"**: 1 + 8 + 10 = 19 bits are used, but a TF32 number occupies a full
  32-bit word in memory and registers: it saves no memory and no bandwidth. Its precision is
  FP16's (11 significant bits), not "19-bit"; seed 001's "19-bit approximate precision" is wrong.
""", slide="fragment")
nb.notes("""
All four bullet points rest on the two cells above; the 1024 is 2^-14 / 2^-24. Ask the audience
before revealing: where does FP16 overflow? (65504.)
""")

nb.md("""
### Rounding FP32 to TF32: who rounds, and how

| where | how | source |
|---|---|---|
| the TF32 format | 1 + 8 + 10 bits of a 32-bit word; what the other 13 hold, and how many fraction bits the hardware reads ("10 or more"), is unspecified | CUDA Math API, `__nv_tf32` |
| `wmma::__float_to_tf32` (this lesson's TF32 kernel) | PTX `cvt.rna.tf32.f32`: to nearest, **ties away from zero** | PTX ISA, `cvt`; reproduced bit for bit on the H200 (appendix C) |
| a Tensor Core given unconverted FP32 bits | unspecified: not measured here; always convert | CUDA Math API, `__nv_tf32` |
| cuBLAS TF32 (`CUBLAS_COMPUTE_32F_FAST_TF32`, `CUPY_TF32=1`) | not documented; the course's check charges it as truncation | cuBLAS documentation, `cublasComputeType_t` |
| `helpers.numerics.round_to(x, "tf32")`, and FP16 casts | to nearest, **ties to even**: within FP16's normal range, the same values as FP16 | computed below |
""", slide="subslide")
nb.code("""
x = helpers.random_matrix(1000, 1000, seed=7)                  # 10^6 standard-normal values
rne, h, rna = helpers.numerics.round_to(x, "tf32"), helpers.numerics.round_to(x, "fp16"), formats.round_tf32_rna(x)
normal = np.abs(x) >= formats.format_info("fp16").tiny
print("ties to even: TF32 == FP16 wherever |x| >= FP16's smallest normal:", np.array_equal(rne[normal], h[normal]))
print("ties away (cvt.rna) and ties to even differ on", int((rna != rne).sum()), "of", x.size, "values: the exact ties")
tie = np.array([1 + 2.0 ** -11], dtype=np.float32)             # halfway between 1 and 1 + 2^-10
print(f"1 + 2^-11 -> ties to even {float(helpers.numerics.round_to(tie, 'tf32')[0])!r}, "
      f"ties away {float(formats.round_tf32_rna(tie)[0])!r}")
with np.errstate(over="ignore"):
    print("1e6 in FP16:", np.float16(1e6), "| in TF32:", helpers.numerics.round_to(np.float32(1e6), "tf32"))
""")
nb.notes("""
Three statements that sound alike: '13 low bits ignored' (what the format's layout leaves unused; if
the hardware simply dropped them, that would be truncation), 'rounds like FP16' (true for ties-to-even
rounding inside FP16's normal range), and cvt.rna (what the course's TF32 kernel uses: ties away).
They differ only on exact ties, which a tie in an input turns into a whole row or column of C.
""")

nb.md("""
## Seed 002's speed claims, checked against the datasheets

Seed 002's table says "Tensor Core peak: FP32 19.5 TFLOPS, FP16/BF16 312 TFLOPS, 16x" (A100), and
that TF32 gives "about 8x" FP32. The course's peak table (`helpers/device.py`, each row with its
datasheet) gives the ratios for several GPUs:
""", slide="slide")
nb.code("""
helpers.display.table(lesson.peak_ratio_rows(), ["gpu", "fp32", "tf32", "fp16", "fp16 / fp32", "tf32 / fp32",
                                                 "fp16 acc16 / fp16", "source"],
                      fmt={"fp16 / fp32": ".1f", "tf32 / fp32": ".1f", "fp16 acc16 / fp16": ".1f"})
""")
nb.md("""
- Of these GPUs, **the 16x and the 8x hold for the A100 only**. They are ratios of datasheet peaks
  and change from chip to chip: smaller on the H100/H200, far smaller on a GeForce card.
- The 19.5 TFLOP/s is the A100's **CUDA-core** FP32 rate; the seed lists it as a Tensor Core rate.
  Tensor Cores have no plain FP32 mode: FP32 inputs go through TF32.
- FP16 accumulation has the FP32-accumulate peak on datacenter GPUs; only GeForce parts double it
  (last-but-one column). On an H200 it buys no peak speed, only error.
""", slide="fragment")

nb.md("""
### Seed 001's speed-ups, against the H200 record

Seed 001 says FP16 Tensor Cores give "3 to 5x" over FP32 CUDA-core GEMMs on a V100, TF32 "stably more
than 2x" on an A100, and PyTorch AMP "nearly 2x" in training. No V100, A100 or PyTorch training run
was measured here, so those three stay **unchecked**. The same ratios on the H200, from the record
(cuBLAS against cuBLAS, each timing with its SM clock):
""", slide="subslide")
nb.code("""
for n in (1024, 4096, 8192):
    f32, t32, f16 = (rec.select(kernel=k, m=n, n=n, k=n)[0] for k in ("cublas_fp32", "cublas_tf32", "cublas_fp16"))
    print(f"n={n}: FP16 Tensor Cores / FP32 CUDA cores {f16['tflops'] / f32['tflops']:4.1f}x, TF32 / FP32 "
          f"{t32['tflops'] / f32['tflops']:4.1f}x  (SM clocks: {helpers.clocks.clock_text(f32)} | "
          f"{helpers.clocks.clock_text(t32)} | {helpers.clocks.clock_text(f16)})")
""")

# --------------------------------------------------------------------------- kernels
nb.md("""
## The kernels: one loop, four input/accumulator choices

`kernels/mixed_precision.cu` holds the seed's `wmma_mixed_gemm_kernel` (FP16 in, FP32 accumulator)
and three variants that differ only in their fragments:

| kernel | A, B in memory | Tensor Core inputs | accumulator | C | WMMA shape |
|---|---|---|---|---|---|
| `wmma_mixed_gemm_kernel` | FP16 | FP16 | FP32 | FP32 | m16n16k16 |
| `wmma_fp16acc_gemm_kernel` | FP16 | FP16 | FP16 | FP16 | m16n16k16 |
| `wmma_bf16_gemm_kernel` | BF16 (uint16 bits) | BF16 | FP32 | FP32 | m16n16k16 |
| `wmma_tf32_gemm_kernel` | FP32 | TF32 | FP32 | FP32 | m16n16k8 |

BF16 and TF32 WMMA need sm_80 (Ampere) or newer; the notebook says so if your GPU is older.
""", slide="slide")
nb.code("""
helpers.display.show_kernel("mixed_precision.cu", "wmma_tf32_gemm_kernel")
""", slide="subslide")
nb.notes("""
Three things differ from the FP16 kernel: the precision::tf32 fragment type, the k-step of 8 (WMMA's
only TF32 shape is m16n16k8), and the explicit __float_to_tf32 on every fragment element after the
load. That conversion rounds to nearest with ties away from zero (PTX cvt.rna.tf32.f32); the CPU
emulation does the same (helpers.formats.round_tf32_rna).
""")
nb.md("""
## Every variant, checked against float64

M = 200, K = 72, N = 136, standard-normal FP32 inputs; each kernel gets them in its own format. The
tolerance comes from the input format, the accumulator format and K (`helpers.tolerance`).
""", slide="slide")
nb.code("""
from helpers.check import encode_inputs             # FP16 values, BF16 bits (uint16), or FP32 for TF32
A = helpers.random_matrix(200, 72, seed=0)          # M x K, sizes not multiples of 16
B = helpers.random_matrix(72, 136, seed=1)          # K x N
checks = {}
for name in ["gemm_fp32_kernel", "wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel",
             "wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"]:
    spec = helpers.KERNELS[name]
    try:
        C = helpers.gemm(name, encode_inputs(A, spec.inputs), encode_inputs(B, spec.inputs), pad=True)
        checks[name] = spec.check(C, A, B)
        print(checks[name].verdict())
    except helpers.ArchitectureError as err:      # BF16/TF32 WMMA on a GPU older than sm_80
        print(f"SKIP {name}: {err.problem}")
""")
nb.md("""
Ordering of the errors: FP32 lowest; TF32 and FP16 inputs together (same precision); BF16 above them
(three fewer fraction bits); the FP16 accumulator above FP16 inputs. The measured numbers, and the
proof that the CPU emulation computes exactly what the H200 computed: appendix C. How the BF16
kernel takes its inputs (`uint16` bits): appendix B.
""", slide="fragment")

# --------------------------------------------------------------------------- seed comparison
nb.md("""
## The seed's comparison at M = N = K = 1024

Seed 000 compares `gemm_fp32_kernel` with `wmma_mixed_gemm_kernel` at 1024 on an RTX 4090. The
H200 record, with every other variant of this lesson alongside (time, speed, speedup over the
FP32 kernel, relative error against float64 of the FP32 inputs, and of the kernel's own rounded
inputs):
""", slide="slide")
nb.code("""
cols = ["variant", "median_ms", "tflops", "speedup", "rel_err", "rel_err_acc", "passed", "clock"]
heads = ["variant", "ms (median)", "TFLOP/s", "speedup vs FP32 kernel", "rel. error", "rel. error (own inputs)", "check",
         "SM clock while timed"]
fmts = {"median_ms": ".4f", "tflops": ".1f", "speedup": ".1f", "rel_err": ".1e", "rel_err_acc": ".1e"}
print(rec.label)
helpers.display.table(lesson.comparison_rows(rec.rows, 1024), cols, heads, fmts)
""")
nb.code("""
ref = helpers.results.load_reference("seed_rtx4090")
mixed_1024 = ref.value("wmma_mixed_gemm_kernel", 1024)
fp32_1024 = ref.value("gemm_fp32_kernel", 1024)
print(f"seed 000 on the RTX 4090 ({ref.meta['source_short']}): FP32 kernel {fp32_1024} TFLOP/s, "
      f"mixed WMMA {mixed_1024} TFLOP/s -> {mixed_1024 / fp32_1024:.1f}x")
h = {r["variant"]: r for r in lesson.comparison_rows(rec.rows, 1024)}
print(f"H200 record: {h['WMMA FP16 in, FP32 acc (seed)']['speedup']:.1f}x; "
      f"cuBLAS FP16 {h['cuBLAS FP16 in, FP32 acc']['speedup']:.0f}x the FP32 kernel")
""")
nb.md("""
What the two tables say:

- the naive WMMA kernel is several times faster than the FP32 kernel, on both GPUs, and still far
  below cuBLAS on the same formats (lesson 05 closes that gap);
- on this N(0,1) data at K = 1024, the FP16 input rounding, not the accumulation, sets its error:
  compare "rel. error" with "rel. error (own inputs)" (lesson 04: on positive data at large K the
  accumulation catches up);
- switching only the accumulator fragment to FP16, or the inputs to BF16, leaves the speed of this
  kernel about where it was; the FP16 accumulator multiplies the accumulation error, BF16 the input
  error;
- the TF32 WMMA kernel is the slowest Tensor Core variant here: it reads 4-byte inputs and issues
  twice as many `mma_sync` (k-step 8);
- cuBLAS TF32 and FP16 with an FP32 accumulator have about the same error: same 11-bit precision.
""", slide="fragment")
nb.notes("""
Seed 000 stops at the speed-up. The error columns are the point of this lesson: the speed-up is
paid for in decimal digits (compare the 'digits' column of the format table), almost all of them
lost when A and B are rounded to FP16.
""")

nb.md("""
## Speed vs error, every variant on one chart

Up and to the left is better. Recorded on the H200 at M = N = K = 4096 (a live sweep over sizes, with
its own chart: appendix D).
""", slide="slide")
nb.code("""
fig = lesson.plot_speed_vs_error(rec.rows, 4096, source=rec.label)
""")
nb.md("""
Three clusters: FP32 (accurate, slow), 11-bit inputs with an FP32 accumulator (TF32 and FP16:
FP16's decimal digits, fast), and FP16 accumulation (worse error, no faster on this GPU). BF16
trades three more bits for FP32's range. Within a cluster, cuBLAS vs our naive kernels is a
question of implementation, not of format.
""", slide="fragment")

nb.md("""
## FP16 accumulation: the range problem too

An FP16 accumulator has FP16's range. Here the exact product is **zero**: A's second half of
columns is its first half negated, and B's second half of rows repeats the first. Each running
sum climbs past 65504 before it comes back down, in one long dot product (its length K is in the
verdicts below).
""", slide="slide")
nb.code("""
A_o, B_o = lesson.overflow_inputs()
for name in ["wmma_mixed_gemm_kernel", "wmma_fp16acc_gemm_kernel"]:
    C = helpers.gemm(name, A_o.astype(np.float16), B_o.astype(np.float16))
    n_bad = int(np.sum(~np.isfinite(np.asarray(C, dtype=np.float64))))
    print(helpers.KERNELS[name].check(C, A_o, B_o).verdict(), f"| non-finite: {n_bad} of {C.size}")
""")
nb.notes("""
Once a running sum is inf it stays inf: inf minus anything finite is inf. The FP32 accumulator
never comes near its limit. This is the 'large number eats small numbers' of seed 000 taken to
its end: the large number became infinite.
""")

# --------------------------------------------------------------------------- TF32 in practice
nb.md("""
## TF32 in practice: what switches it on?

Seed 002 says TF32 needs no code change: "set the environment variable NVIDIA_TF32_OVERRIDE=1" (or
compile with "-arch=sm_80 -ftz=true"). What is documented:

- NVIDIA documents `NVIDIA_TF32_OVERRIDE=0` as a switch that **disables** TF32 in its libraries
  (NVIDIA developer blog, "Accelerating AI Training with NVIDIA TF32 Tensor Cores", 2020,
  developer.nvidia.com/blog/accelerating-ai-training-with-tf32-tensor-cores). We found no NVIDIA
  document that gives `=1` the power to enable it.
- CuPy uses TF32 for float32 `matmul` only when `CUPY_TF32=1` is set (CuPy's environment-variable
  reference, docs.cupy.dev); it reads the variable once, at the first float32 product, and keeps
  the compute type it chose.
- `nvcc -ftz=true` flushes FP32 subnormals to zero in *your* kernels; it has nothing to do with TF32.

The experiment `tf32_env` settles it: a float32 `cupy.matmul` at n = 2048 in fresh Python processes
under each setting, plus explicit cuBLAS calls with the FP32 and the FAST_TF32 compute types. The
verdict comes from the error alone: above the geometric mean of the FP32 and TF32 unit roundoffs
means TF32 inputs.
""", slide="slide")
nb.code("""
try:
    tf32 = helpers.run_or_load("tf32_env")
    print(tf32.source)
except helpers.ResultsError as err:
    tf32 = None
    print(err)
""", ignore_output=True)
nb.code("""
print(f"TF32 verdict threshold: relative error > {lesson.tf32_threshold():.2e}")
if tf32 is not None:
    vt = lesson.tf32_verdict_table(tf32.data)
    display(helpers.display.table(vt, list(vt[0])))
    print("\\n".join(lesson.tf32_conclusions(tf32.data)))
else:
    print("tf32_env is not in the record yet: run `make record` on a GPU")
""")
nb.md("""
The conclusions printed under the table are computed from it. On the H200 record they say:

- with nothing set, FP32 code stays FP32; `CUPY_TF32=1` switches `cupy.matmul` to TF32 (the error
  jumps to the 11-bit level, the time drops) and leaves explicit FP32-compute calls alone;
- **`NVIDIA_TF32_OVERRIDE=1` does turn TF32 on for unchanged FP32 code** here: seed 002's claim holds
  on this driver and cuBLAS, although we found it documented nowhere. It goes further than the seed
  says: cuBLAS computed even the calls that explicitly ask for FP32 (`CUBLAS_COMPUTE_32F`) in TF32;
- `=0` vetoes TF32 everywhere, even where a call asks for it (`CUBLAS_COMPUTE_32F_FAST_TF32`), as
  documented;
- the seed's other switch, compiling with `-ftz=true`, remains unrelated to TF32.

An undocumented switch can change with the next driver or library: measure it where you rely on it,
and before trusting an "FP32" benchmark, look at the environment (or at the error).
""", slide="fragment")
nb.notes("""
We expected =1 to do nothing (no document says it enables anything); the measurement says
otherwise, and the lesson reports the measurement. If the verdict table on your machine
disagrees with these bullets, believe the table: it is measured. The bullets describe the H200 record (its driver, CUDA and CuPy versions are in
rec.meta['versions']). The raw errors and times are in appendix E.
""")

# --------------------------------------------------------------------------- seed 002 sec. 4.1
nb.md("""
## Seed 002's cuBLAS call (sec. 4.1), and the one to make instead

Seed 002 switches Tensor Cores on with `cublasSetMathMode(handle, CUBLAS_TENSOR_OP_MATH)` and calls
`cublasHgemm`. Two problems:

- `CUBLAS_TENSOR_OP_MATH` is **deprecated** since cuBLAS 11 (CUDA 11.0): cuBLAS uses Tensor Cores for
  FP16 without it (cuBLAS documentation, `cublasMath_t`);
- `cublasHgemm` computes and **accumulates in FP16**, against the article's own rule (sec. 5.4:
  never accumulate in FP16).

The call that does what the article recommends is `cublasGemmEx` with `CUDA_R_16F` inputs and
`CUBLAS_COMPUTE_32F`: what `cupy.matmul` does on float16 (`helpers/cublas.py`). The course measures
both computes, on the same inputs:
""", slide="slide")
nb.code("""
for n in (1024, 4096):
    for k, how in [("cublas_fp16", "cublasGemmEx, CUBLAS_COMPUTE_32F"),
                   ("cublas_fp16_acc16", "cublasGemmEx, CUBLAS_COMPUTE_16F (Hgemm's arithmetic)")]:
        r = rec.select(kernel=k, m=n, n=n, k=n)[0]
        print(f"n={n} {how:52s} {r['tflops']:6.1f} TFLOP/s ({helpers.clocks.clock_text(r)}), "
              f"rel. error {r['rel_err']:.1e}")
""")
nb.md("""
On the H200 the FP16-accumulating call buys no speed worth having (equal datasheet peaks) and costs
error that grows with $K$ (lesson 04). Use `CUBLAS_COMPUTE_32F`; FP16 output is still possible.
""", slide="fragment")

# --------------------------------------------------------------------------- range and loss scaling
nb.md("""
## Underflow and overflow: what a cast does to gradients

Gradients in deep learning spread over many decades. Take 200 000 values with random signs and
magnitudes spread evenly (in log scale) from 10^-14 to 10^6, and cast them: what becomes zero, what
becomes subnormal (few significant bits left), what overflows?
""", slide="slide")
nb.code("""
g = formats.gradient_like(200_000, seed=0)
cases = [("fp16", 1.0), ("fp16", 2.0 ** 16), ("bf16", 1.0)]
for n, s in cases:
    fr = formats.category_fractions(g, n, s)
    print(f"{n} x 2^{np.log2(s):<3.0f}" + "  ".join(f"{k}: {100 * v:5.1f}%" for k, v in fr.items()))
""")
nb.code("""
fig = formats.plot_range_histogram(g, names=[n for n, _ in cases], scales=[s for _, s in cases])
""", slide="subslide")
nb.md("""
- FP16 loses everything below 2^-25 to zero and keeps few bits down to 2^-14; above 65504 it
  overflows.
- Multiplying by a **loss scale** (here 2^16) shifts the whole window: most of the small values survive, and
  more of the largest overflow. The scale must fit the data.
- BF16 covers all of it: FP32's exponent range. It pays in precision, not range.
""", slide="fragment")

nb.md("""
## Loss scaling on a small network, FP16 arithmetic emulated in numpy

`helpers/training.py`: a 16-32-1 tanh network learns a teacher network, FP32 master weights, and
every matrix product and element-wise result rounded to FP16 (or BF16), as a tensor-core training
step does. The loss is divided by a large factor (2^14, as a loss averaged over far more terms
than one batch), which makes the gradients small; the learning rate compensates, so FP32 training
does not depend on it.

- **static** scaling multiplies the loss by a fixed S and divides the gradients by S before the update;
- **dynamic** scaling follows PyTorch's `GradScaler`: start at 2^16; a step whose gradients hold
  inf/NaN is skipped and S is halved; after 2000 clean steps S is doubled.
""", slide="slide")
nb.code("""
print("GradScaler rule:", training.GRADSCALER_DEFAULTS)
runs = {
    "FP32": training.train("fp32"),
    "FP16, no scaling": training.train("fp16"),
    "FP16, static 2^12": training.train("fp16", "static", scale=2.0 ** 12),
    "FP16, static 2^36 (too big)": training.train("fp16", "static", scale=2.0 ** 36),
    "FP16, dynamic (GradScaler)": training.train("fp16", "dynamic"),
    "FP16, dynamic from 2^40": training.train("fp16", "dynamic", scaler=training.DynamicLossScaler(init_scale=2.0 ** 40)),
    "BF16, no scaling": training.train("bf16"),
}
""")
nb.code("""
fig = training.plot_training(runs)
""", slide="subslide")
nb.notes("""
The GradScaler run never overflows with these gradients (its skipped steps and final scale are in
the numbers below): its scale only grows, after each run of clean steps. The run that starts at
2^40 shows the other half of the rule: its first steps overflow, are skipped (x marks), and halve
the scale until the gradients fit. Curves are running means (the y label says over how many steps);
the too-big static run is marked where its loss became inf/NaN.
""")
nb.code("""
ref_loss = runs["FP32"].final_loss
def verdict(r):
    if r.diverged:
        return "diverges (inf/NaN weights)"
    q = r.final_loss / ref_loss
    return "trains like FP32" if q < 2 else ("trains, higher floor" if q < 10 else "stalls")
for name, r in runs.items():
    print(f"{name:30s} {verdict(r)}")
""", slide="subslide")
nb.code("""
for name, r in runs.items():
    s = r.summary()
    print(f"{name:30s} final loss {s['final_loss']:.2e}  ({s['final_loss'] / ref_loss:6.1f}x FP32)  "
          f"zero gradient entries at the end {100 * r.zero_grad_frac[-100:].mean():5.1f}%  "
          f"skipped steps {s['skipped_steps']}  final scale 2^{np.log2(s['final_scale']):.0f}")
""", ignore_output=True)
nb.md("""
- **FP16 without scaling stalls**: most gradient entries round to zero, so the weights stop moving.
- A **static scale** that fits works like FP32; one that is too big overflows on the first step and,
  applied blindly, destroys the weights.
- **Dynamic scaling** needs no tuning: started far too high, it skips a few steps, halving each
  time, then trains.
- **BF16 needs no scaling**: nothing underflows. Its loss floor sits above FP32's: 8 significant bits
  in the forward pass.
""", slide="fragment")
nb.notes("""
The printed numbers (last code cell) come from numpy's float32 matmul and can differ in the last
digits between CPUs; the verdicts do not. The stall is about the backward pass: dL/dy is already
tiny, and dL/dh = dL/dy W2^T is smaller still, so the first layer's gradients vanish first.
""")

# --------------------------------------------------------------------------- misconceptions
nb.md("""
## Common misconceptions

1. **"Mixed precision means replacing `float` by `half`."** The speed in this lesson comes from the
   Tensor Cores (WMMA fragments, cuBLAS); changing a CUDA-core kernel's types from `float` to `half`
   does not use them. And the accumulator must stay FP32: an FP16 one costs accuracy and can overflow.
2. **"TF32 is a 19-bit type that halves memory."** It occupies 32 bits in memory and registers, of
   which 19 carry the value. Its precision is FP16's.
3. **"FP32 code computes in FP32."** Not necessarily: with `NVIDIA_TF32_OVERRIDE=1` in the
   environment, cuBLAS computed even explicit FP32-compute GEMMs in TF32 on the H200 (measured above).
   The error tells: the FP32 level or the 11-bit level. And `nvcc -ftz=true` has nothing to do with TF32.
4. **"BF16 is more accurate than FP16."** It has more range and less precision: its unit roundoff is
   8 times FP16's.
5. **"The FP16 GEMM's error comes from accumulation."** With an FP32 accumulator, on N(0,1) data at
   moderate K, rounding A and B to FP16 costs far more than all the additions (the two error columns
   at 1024). Not always: on positive data the truncated FP32 sum grows about linearly with K, and at
   K = 16384 on U[0,1) lesson 04 measures the accumulation error equal to the whole error.
6. **"FP16's smallest positive number is 6.1e-5."** That is the smallest normal number; subnormals go
   down to 6e-8, with fewer and fewer significant bits.
7. **"Loss scaling does not change the training."** Static scaling divides the gradients by the scale
   before the update, so it changes only which gradients survive FP16. Dynamic scaling also *skips*
   every step whose gradients overflow: those updates never happen, so the trajectory does change
   (the run started at 2^40 skips its first steps).
8. **"FP8 is only for inference"** (seed 002, sec. 5.4). FP8 training is practice on Hopper: E4M3 for
   weights and activations, E5M2 for gradients, with per-tensor scales, matched 16-bit training on
   models up to 175B parameters (Micikevicius et al., "FP8 formats for deep learning", 2022,
   arXiv:2209.05433); DeepSeek-V3 was trained in FP8 (arXiv:2412.19437).
""", slide="slide")

# --------------------------------------------------------------------------- applications (seed 001)
nb.md("""
## Where mixed precision is used

Seed 001 has a heading for application scenarios and nothing under it. Where the formats of this
lesson are used, and what the course measured that decides the choice:

- **Training**: FP16 or BF16 inputs to every large matrix product, FP32 accumulation and FP32 master
  weights (Micikevicius et al., "Mixed precision training", 2018); FP16 with loss scaling, BF16
  without (the training run above); FP8 with per-tensor scales on Hopper (misconception 8).
- **Inference**: FP16 or BF16 weights halve memory and bandwidth; INT8 and FP8 go further with
  quantization (not measured here).
- **Scientific computing**: TF32 only where 11-bit inputs suffice (lesson 04); otherwise low
  precision inside mixed-precision algorithms such as iterative refinement, which recover FP32 or
  FP64 accuracy (Higham & Mary, "Mixed precision algorithms in numerical linear algebra", Acta
  Numerica 2022).
""", slide="slide")
nb.code("""
r = {k: rec.select(kernel=k, m=4096, n=4096, k=4096)[0] for k in ("cublas_fp32", "cublas_tf32", "cublas_fp16")}
for k in ("cublas_tf32", "cublas_fp16"):
    print(f"{k} at 4096: {r[k]['tflops'] / r['cublas_fp32']['tflops']:.1f}x cuBLAS FP32's speed, relative error "
          f"{r[k]['rel_err']:.1e} against FP32's {r['cublas_fp32']['rel_err']:.1e}  ({rec.label})")
""")

nb.md("""
## Interview questions

Seed 001 ends with an empty "interview questions" heading. Questions the course can answer, with
the answer hidden:

1. Why does a Tensor Core GEMM with FP16 inputs accumulate in FP32?
2. How many FLOPs is one `wmma::mma_sync` on m16n16k16, and what does the H200 run for it?
3. What is TF32, and who rounds FP32 to it, how?
4. Why is a WMMA kernel that loads its tiles straight from global memory far from cuBLAS?
5. cuBLAS FP16 on an H200 is slower at 8192^3 than at 4096^3. Why?
6. How do you set the tolerance of a test for an FP16 GEMM?

<details><summary>Answers</summary>

1. Accuracy and range: an FP16 accumulator loses small terms as the sum grows, stagnates, and
   overflows above 65504 (this lesson); on an H200 FP16 accumulation is not faster.
2. 2 x 16 x 16 x 16 = 8192 FLOPs; on sm_90 it compiles to two `HMMA.16816` instructions (lesson 02).
3. FP32's sign and exponent with 10 fraction bits, in a 32-bit word; `__float_to_tf32` rounds to
   nearest with ties away from zero, cuBLAS does not document its rounding (this lesson).
4. Every warp reloads its tiles for every `mma_sync`: the loads, not the Tensor Cores, set the pace;
   the profiler shows the Tensor Cores idle most of the time (lessons 02 and 05).
5. The GPU lowers its SM clock to stay under its power limit (NVML reports "sw power cap"); per GHz
   of clock it is not slower (lesson 05).
6. From the formats and K: input rounding, accumulation (worst case for truncation, probabilistic for
   rounding to nearest) and output rounding (`helpers.tolerance`), tested on positive data too
   (lesson 04), never a fixed epsilon.
</details>
""", slide="slide")

# --------------------------------------------------------------------------- check your understanding
nb.md("""
## Check your understanding

1. Why do TF32 and FP16 inputs give the same GEMM error on standard-normal data, and when would they not?
2. An FP16 GEMM with an FP32 accumulator writes FP32. Where does its error come from?
3. A colleague's "FP32" GEMM benchmark shows a relative error of a few times 1e-4 at n = 2048. What do
   you check first?
4. A gradient of 1e-9 in FP16: what happens, and what does a loss scale of 2^16 do to it?
5. Why does dynamic loss scaling *skip* a step on overflow instead of clipping the gradient?

<details><summary>Answers</summary>

1. Same 10 fraction bits and the same rounding for numbers in FP16's normal range; TF32 keeps FP32's
   exponent, so values above 65504 or below 2^-14 (2^-24 subnormal) behave differently.
2. From rounding A and B to FP16 (11 significant bits) and from the truncated FP32 sums; on zero-mean
   data at moderate K the rounding of A and B dominates, on positive data at large K the sums do.
3. Whether TF32 was on: `CUPY_TF32`, `NVIDIA_TF32_OVERRIDE=1` (which forced TF32 even on explicit FP32
   calls on the H200), or a TF32 compute type. An error at the 11-bit level is TF32's signature.
4. It rounds to zero (below 2^-25). Times 2^16 it is about 6.6e-5, a normal FP16 number.
5. An inf/NaN gradient carries no usable direction; the step is lost, the scale halves, and the
   next step is computed with representable gradients.
</details>
""", slide="slide")

nb.md("""
## Exercises (they check themselves)

1. What is the distance between 1000 and the next larger FP16 number?
2. What is the largest N such that every integer 0, 1, ..., N is exactly representable in BF16?
3. What is the smallest power-of-two loss scale that turns a gradient of 1e-9 into a *normal* FP16 number?

Replace `None` with your answer and run the cell.
""", slide="slide")
nb.code("""
answer_1 = None
answer_2 = None
answer_3 = None
ex.spacing_exercise(answer_1, 1000.0, "fp16")
ex.integer_run_exercise(answer_2, "bf16")
ex.loss_scale_exercise(answer_3, 1e-9, "fp16")
""")
nb.md("**Solutions** (try first):", slide="subslide")
nb.code("""
ex.spacing_exercise(2.0 ** (9 - 10), 1000.0, "fp16")        # 2^9 <= 1000 < 2^10, 10 fraction bits
ex.integer_run_exercise(2 ** 8, "bf16")                     # 8 significant bits
ex.loss_scale_exercise(2.0 ** 16, 1e-9, "fp16")             # 1e-9 * 2^16 >= 2^-14 > 1e-9 * 2^15
print(np.float16(1000) + np.float16(0.25) == np.float16(1000), np.float16(1e-9 * 2 ** 16) >= 2.0 ** -14)
""")

nb.md("""
## Summary

- A format is range (exponent bits) and precision (fraction bits); compute them, don't memorise them.
- TF32 = FP16's precision with FP32's range, stored in 32 bits; BF16 = FP32's range with 8 bits.
- The seed's mixed kernel is several times faster than the FP32 kernel and keeps about FP16's
  decimal digits, lost (on zero-mean data, moderate K) when the inputs are rounded; FP16
  accumulation loses more and, on an H200, is not faster (equal datasheet peaks). In cuBLAS, ask for
  `CUBLAS_COMPUTE_32F`, not `cublasHgemm`.
- TF32 rounding differs by who does it: `__float_to_tf32` rounds ties away from zero, FP16-style
  rounding ties to even, cuBLAS does not say.
- TF32 is switched on by the library call (`CUPY_TF32=1`, a cuBLAS compute type), and on the H200
  record also by `NVIDIA_TF32_OVERRIDE=1`, which even overrides explicit FP32 requests; `=0` turns it off.
- FP16 training needs loss scaling (dynamic: start 2^16, halve and skip on overflow, double after
  2000 clean steps); BF16 does not.

Next: lesson 04 measures how the error grows with K and how the Tensor Core really adds.
""", slide="slide")
# --------------------------------------------------------------------------- appendix
nb.md("""
## Appendix: details behind the main slides

- A. Representable numbers, around 1 and at the bottom of each format's range
- B. The BF16 kernel, and how BF16 matrices travel
- C. The measured errors of every variant, and the CPU emulation against the H200
- D. A sweep over sizes (live on a GPU)
- E. The raw `tf32_env` measurements
""", slide="slide")
nb.md("""
### A. Representable numbers: around 1, and at the bottom of the range

Top: every number each format has between 0.75 and 1.5 (TF32, not drawn, has FP16's numbers here:
same fraction bits). Bottom: near each format's smallest normal number, in units of it; grey ticks
are subnormals, evenly spaced; above 1 the spacing doubles every power of two.
""", slide="subslide")
nb.code("""
fig = formats.plot_number_lines(("fp8_e5m2", "fp8_e4m3", "bf16", "fp16"))
""")
nb.code("""
for n in ["fp8_e5m2", "fp8_e4m3", "bf16", "fp16", "tf32"]:
    v = formats.representable(n, 1.0, 2.0)
    print(f"{n:9s} values in [1, 2]: {v.size:5d}   spacing just above 1: 2^{np.log2(v[1] - v[0]):.0f}")
""")

nb.md("### B. The BF16 kernel, and how BF16 matrices travel (`uint16` bits)", slide="subslide")
nb.code("""
helpers.display.show_kernel("mixed_precision.cu", "wmma_bf16_gemm_kernel")
""")
nb.md("""
CuPy has no bfloat16 dtype, so a BF16 matrix travels as a `uint16` array holding the bits;
`formats.to_bf16_bits` rounds FP32 to BF16 (nearest even) on numpy or CuPy arrays. Passing floats
is refused, with the fix:
""", slide="fragment")
nb.code("""
A = helpers.random_matrix(200, 72, seed=0)     # M x K, sizes not multiples of 16
B = helpers.random_matrix(72, 136, seed=1)     # K x N
try:
    helpers.gemm("wmma_bf16_gemm_kernel", A, B, pad=True)
except helpers.InputError as err:
    print(err)
""")

nb.md("### C. The measured errors, and the CPU emulation against the H200", slide="subslide")
nb.code("""
for chk in checks.values():
    print(f"{chk.name:26s} componentwise {chk.comp_err:.1e}  relative {chk.rel_err:.1e}  ({chk.tol})")
""", ignore_output=True)
nb.notes("""
The measured errors depend on the backend only in the last digits; the verdicts (main path) are
identical everywhere. Note the ordering: FP32 lowest; TF32 and FP16 inputs next, together (same
precision); BF16 above them (three fewer fraction bits); the FP16 accumulator above FP16 inputs.
""")

nb.md("""
### C'. Does the CPU emulation compute what the GPU computes?

The experiment `mixed_emulator_probe` ran both new kernels on the H200 (at the shape printed below)
and compared every output element with the emulation under several models of the Tensor Core's
addition (products per rounding, extra alignment bits). The share of identical elements:
""", slide="subslide")
nb.code("""
probe = rec.meta["experiments"]["mixed_emulator_probe"]
print("M, N, K =", probe["shape"])
for k in ["wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"]:
    res, best = probe[k]["identical"], probe[k]["best"]
    others = ", ".join(f"{m} {res[m]:.1%}" for m in ("b8_e2", "b16_e2", "b4_e2_rne") if m in res and m != best)
    print(f"{k:24s} best: {best} ({res[best]:.1%} identical) | {others}")
print("models in use:", {k: str(helpers.emulate.model_for(k)) for k in ("bf16", "tf32")})
""")
nb.notes("""
b16_e2 = 16 products per rounding with 2 extra alignment bits, as for FP16 (lesson 04 measures it).
For TF32 the H200 adds 4 products per rounding (the best model above; m16n16k8 = two such steps),
the value Fasi et al. (2021) found on the A100, not the 8 of Khattak & Mikaitis's H100 and B200
model code (lesson 04's table); and the inputs must be rounded with
ties away from zero (b4_e2_rne, ties to even, misses the share of elements printed above: a tie in one input
changes a whole row or column of C).
""")

nb.md("""
### D. A sweep over sizes (live on a GPU)

On a GPU the next cell measures every variant at five sizes (about a minute); without one it
returns the recorded rows.
""", slide="subslide")
nb.code("""
SIZES = [256, 512, 1024, 2048, 4096]
sweep = helpers.sweep(list(lesson.VARIANTS), SIZES)
print(sweep.source, "|", len(sweep.data), "rows")
""", ignore_output=True)
nb.code("""
fig = lesson.plot_tflops_vs_size(sweep.data, source=sweep.source)
""", slide="subslide", ignore_output=True)
nb.code("""
fig = lesson.plot_error_vs_size(sweep.data, source=sweep.source)
""", slide="subslide", ignore_output=True)
nb.notes("""
On the error plot, the FP16-accumulator variants grow with n (their accumulation error grows with
K); the FP16/TF32-input variants with FP32 accumulation stay flat at the level of the FP16 rounding
of the inputs; FP32 stays lowest, growing slowly with n. Lesson 04 takes error-vs-K apart properly.
""")

nb.code("""
if sweep.live:
    fig = lesson.plot_speed_vs_error(sweep.data, 4096, source=sweep.source)
else:
    print("no GPU: the chart above is the recorded one")
""", ignore_output=True)
nb.md("### E. The raw `tf32_env` measurements (each in a fresh process, with the SM clock read while it was timed)",
      slide="subslide")
nb.code("""
if tf32 is not None:
    display(helpers.display.table(helpers.clocks.with_clock(tf32.data),
                                  ["CUPY_TF32", "NVIDIA_TF32_OVERRIDE", "call", "rel_err", "median_ms", "tflops", "clock"],
                                  fmt={"rel_err": ".2e", "median_ms": ".3f", "tflops": ".1f"}))
""", ignore_output=True)

nb.save()
