"""Source of notebooks/00_start_here.ipynb (run `make notebooks` after editing)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbbuild import Notebook  # noqa: E402

nb = Notebook("00_start_here")

nb.md("""
# Tensor Cores, WMMA and mixed precision
## 00 · Start here

Executable lessons: real CUDA C++ kernels compiled and launched from Python through CuPy,
checked against a float64 reference, timed against cuBLAS, and plotted inline.

*No GPU? Every lesson still runs: the helpers switch to a CPU backend that reproduces each
kernel's arithmetic with numpy, and the speed plots show measurements recorded on a real GPU.*
""", slide="slide")

nb.md("""
## What you will be able to do

- explain what a Tensor Core computes, and why one warp-wide `mma_sync` replaces thousands of scalar FMAs;
- write, launch and check a WMMA kernel from a notebook;
- choose FP16, BF16 or TF32 inputs and FP32 or FP16 accumulation with the error it costs in view;
- measure a GPU kernel honestly (CUDA events, warm-up, median, cold L2) and compare it with cuBLAS and the chip's peak.
""", slide="slide")

nb.md("""
## The lessons

| # | notebook | the question it answers |
|---|---|---|
| 00 | start here | what is this, how do I run it, what is my machine? |
| 01 | FP32 CUDA-core baseline | how fast is a plain GEMM, and what holds it back? |
| 02 | Tensor Cores and WMMA | what does one `mma_sync` do, and who holds which element? |
| 03 | mixed precision | what do FP16, BF16 and TF32 inputs and an FP16 or FP32 accumulator cost in error, and buy in speed? |
| 04 | precision analysis | how does error grow with K, and how does the hardware really add? |
| 05 | closing the gap to cuBLAS | which optimisation buys how much, measured one at a time? |
| 06 | Hopper at full speed | what takes a `wgmma` kernel the rest of the way to cuBLAS on an H100/H200? |
| 07 | FP8 on Hopper | what do E4M3 and E5M2 hold, how few bits does Hopper's FP8 accumulator keep, and what does promotion cost? |

The kernels live in `kernels/*.cu`, one file per lesson family. The notebooks call them through
the small `helpers` package, so each code cell stays short.
""", slide="slide")

nb.md("""
## The three source articles

The course grew out of three Chinese articles ("seeds"). The lessons follow them, quote them where
they say something checkable, and correct them where a measurement or a document says otherwise.

| seed | title (translated) | what the course takes from it |
|---|---|---|
| 000 | *CUDA-Practice 09: Tensor Cores and mixed precision, WMMA and FP16 x FP32 working together* (CUDA-Practice 09 张量核心与混合精度) | the three kernels (`gemm_fp32_kernel`, `wmma_gemm_naive`, `wmma_mixed_gemm_kernel`) and their RTX 4090 numbers (lessons 01-03) |
| 001 | *Tensor Core matrix-multiply acceleration in practice* (Tensor Core矩阵乘加速实战) | the Tensor Core principle, the WMMA model, fragments, and the practical notes on tiling, bank conflicts and pipelining (lessons 02 and 05) |
| 002 | *A complete guide to CUDA mixed precision, from principles to engineering* (CUDA混合精度计算完全指南) | the formats, the three ways to use Tensor Cores, numerical stability and loss scaling (lessons 03 and 04) |

A lesson names the seed (000, 001, 002) whenever it quotes one.
""", slide="slide")
nb.notes("The seeds are not shipped with the course; every claim a lesson takes from one is quoted in the lesson "
         "itself, in Chinese where the wording matters, with the measurement or document that settles it.")

nb.md("""
## How to run it

```bash
make course   # creates .venv, installs, executes every notebook, writes build/ (notebooks + HTML)
make test     # unit tests, and every notebook re-run and compared with its stored outputs
make lab      # JupyterLab with the course's Python
make record   # GPU only: re-measure every kernel, write results/<your-gpu>.json
```

The helpers pick the backend: a CUDA GPU through CuPy when one works, else the CPU emulation.
Set `COURSE_DEVICE=cpu` or `COURSE_DEVICE=gpu` to force one (then restart the kernel).
""", slide="slide")

nb.md("## Your environment", slide="slide")
nb.code("""
import numpy as np
import helpers

env = helpers.summary()
""", ignore_output=True)
nb.notes("On a GPU this prints the GPU name, compute capability, SM count, L2 size, versions and the peak "
         "rates from the course's table; on the CPU it says that kernels are emulated.")

nb.md("""
## A first run: three kernels, checked against float64

Seed 000's three kernels, on a problem whose sizes are **not** multiples of 16
(M = 200, K = 72, N = 136). The inputs are random standard-normal FP32 numbers, never small
integers: integers are exact in FP16 and would hide its rounding error.

Each result is compared with the float64 product, element by element, by the course's check
(next slides: what it tests, and proof that it can fail).
""", slide="slide")
nb.code("""
A = helpers.random_matrix(200, 72, seed=0)    # M x K
B = helpers.random_matrix(72, 136, seed=1)    # K x N
checks = {}
for name in ["gemm_fp32_kernel", "wmma_gemm_naive", "wmma_mixed_gemm_kernel"]:
    spec = helpers.KERNELS[name]
    C = helpers.gemm(name, A.astype(spec.in_dtype), B.astype(spec.in_dtype), pad=True)
    checks[name] = spec.check(C, A, B)
    print(checks[name].verdict())
""")
nb.md("The measured errors themselves (the GPU and the CPU emulation can differ in the last digits):")
nb.code("""
for chk in checks.values():     # backend-dependent digits: not compared by the notebook tests
    print(chk, end="\\n\\n")
""", ignore_output=True)
nb.notes("The FP32 kernel's error (printed above) is a few units of FP32 rounding (unit roundoff 6e-8). The WMMA "
         "kernels' error is below FP16's unit roundoff (4.9e-4): almost all of it is the rounding of the inputs "
         "to FP16, not the accumulation.")

nb.md("""
## Where each tolerance comes from

`helpers.tolerance(K, inputs, acc)` adds three effects: the inputs' rounding, the accumulation
(a worst-case bound, or a probabilistic one when rounding is to nearest), and the output's rounding.
""", slide="slide")
nb.code("""
print(helpers.tolerance(72, "fp32", "fp32", n_checked=200 * 136))
print(helpers.tolerance(72, "fp16", "fp32", acc_rounding="truncate", block=16, n_checked=200 * 136))
print(helpers.tolerance(4096, "fp16", "fp16", block=16, n_checked=4096 * 4096))
""")

nb.md("""
## How the check decides

A verdict stands on three tests; all must hold, and no element may be NaN:

1. **the bound**: |C - AB| <= tol x |A||B| element by element, tol from the formats and K (above).
   A guarantee, but measured against |A||B|: on zero-mean data that is about sqrt(K) times the answer,
   so at large K even C = 0 would pass it;
2. **the answer-scaled bound**: the same worst case, computed from the partial sums the accumulator
   really holds (in float64, at every rounding), so it follows the size of the answer;
3. **the model**: the CPU model of the kernel's arithmetic (fitted bit for bit to the H200 in lesson 04)
   must agree bit for bit, on every element (a seeded sample for large products). On a GPU the model
   was not fitted to, this part is skipped, and the verdict says so.
""", slide="slide")
nb.code("""
C = helpers.gemm("wmma_mixed_gemm_kernel", A.astype(np.float16), B.astype(np.float16), pad=True)
wrong = helpers.check.wrong_results(C, A.astype(np.float16), B.astype(np.float16), inputs="fp16",
                                    acc="fp32", block=16, originals=(A, B))
ok = lambda flag: "ok" if flag else "FAIL"  # noqa: E731
for what, W in {"the kernel's own result": C, **wrong}.items():
    chk = helpers.KERNELS["wmma_mixed_gemm_kernel"].check(W, A, B)
    print(f"{what:34s} bound {ok(chk.bound_ok):4s} answer-scaled {ok(chk.size_ok):4s} "
          f"model {ok(chk.model_ok):4s} -> {'PASS' if chk.passed else 'FAIL'}")
""", slide="subslide")
nb.notes("A check is only worth something if it can fail. Each wrong answer here is one a real bug produces: "
         "an unwritten output (zeros), a swapped index (transposed, permuted rows), a missing scale, the wrong "
         "accumulator fragment, inputs converted to the wrong format. Lesson 04 shows how small an error of a "
         "single element each kernel's check still sees.")

nb.md("""
## When the input is wrong, the message says what to do

The WMMA kernels move whole 16 x 16 tiles. Called without `pad=True` on these sizes they would
read and write past the matrices' edges, so the helper refuses, and says how to fix it:
""", slide="slide")
nb.code("""
try:
    helpers.wmma_mixed(A.astype(np.float16), B.astype(np.float16))
except helpers.InputError as err:
    print(err)
""")

nb.md("""
## Recorded measurements

`make record` measured every kernel and cuBLAS baseline on a real GPU and stored the numbers,
with the GPU, versions and date, in `results/`. These are the same on every machine:
""", slide="slide")
nb.code("""
rec = helpers.results.load_latest()
print(rec.label, "|", rec.meta["versions"])
rows = helpers.clocks.with_clock(rec.select(m=4096, n=4096, k=4096))
helpers.display.table(rows, ["kernel", "dtype_in", "acc", "median_ms", "tflops", "clock", "rel_err"],
                      ["kernel", "inputs", "accumulate", "ms (median)", "TFLOP/s", "SM clock while timed", "rel. error"],
                      fmt={"median_ms": ".3f", "tflops": ".1f", "rel_err": ".1e"})
""")
nb.code("""
series = {k: rec.series(k) for k in ["gemm_fp32_kernel", "wmma_gemm_naive"]}
base = {k: rec.series(k) for k in ["cublas_fp32", "cublas_fp16"]}
peaks = rec.meta["gpu"]["peaks"]
fig = helpers.plots.tflops_vs_size(series, baselines=base,
                                   peaks={"FP32 peak": peaks["fp32"], "FP16 tensor peak": peaks["fp16"]},
                                   title="Seed kernels vs cuBLAS", source=rec.label)
""", slide="subslide")
nb.md("""
Every timing in the record carries the SM clock, power and temperature the GPU ran at while it was
timed, read through NVML (`helpers.clocks`). The dip of cuBLAS FP16 at the largest sizes is one of
them: lesson 05 shows that the GPU lowered its clock there to stay under its power limit.
""", slide="fragment")
nb.notes("Read the gap: at large sizes the naive WMMA kernel is several times faster than the FP32 kernel, and still "
         "far below cuBLAS FP16. Lesson 5 closes that gap one measured step at a time.")

nb.md("""
## Check yourself

1. How many floating-point operations does a GEMM with M = N = K = 1024 perform?
   (Count a multiply and an add as two.)
2. How many does one 16 x 16 x 16 `wmma::mma_sync` perform?

Replace `None` with your answer and run the cell.
""", slide="slide")
nb.code("""
answer_1 = None
answer_2 = None
helpers.exercises.gemm_flops_exercise(answer_1, 1024, 1024, 1024)
helpers.exercises.mma_flops_exercise(answer_2)
""")
nb.md("**Solutions** (try first):", slide="subslide")
nb.code("""
helpers.exercises.gemm_flops_exercise(2 * 1024**3, 1024, 1024, 1024)
helpers.exercises.mma_flops_exercise(2 * 16 * 16 * 16)
""")
nb.save()
