"""helpers: the small library behind the Tensor Core course's notebooks.

One job per module:
  errors       the CourseError family; CUDA faults (lost context, out of memory) made readable
  device       which backend runs (GPU through CuPy, or CPU emulation), GPU facts and peak rates
  compile      finding CUDA headers, compiling kernels/*.cu with NVRTC, compute-capability gates
  kernels      the registry of every GEMM kernel: formats, tiles, launch shape, architecture,
               emulation and check; lesson 5's rungs are entries too (RUNGS)
  launch       one validation, padding and launch path for every registered kernel (gemm)
  hopper       TMA tensor maps for Hopper (sm_90a) kernels, built by the driver
  isolate      running one function in a child process, so a faulting kernel cannot take this one
  numerics     formats, float64 reference, error measures, the tolerance formula
  check        check_gemm: the result check (bounds and the model of the arithmetic)
  formats      floating-point formats for lesson 3: tables, bit layouts, number lines
  fp8          lesson 7's FP8 formats: facts, numpy's and the GPU's (saturating) casts, tile/block scaling
  emulate      numpy reproductions of each kernel's arithmetic (the CPU backend)
  analysis     models that need no GPU: requested traffic, bank conflicts, ldmatrix maps, SASS counts
  timing       CUDA-event benchmarking with cold L2
  clocks       SM and memory clocks, power, temperature and throttling read beside each timing
  memory       free GPU memory, size caps for sweeps on small GPUs, returning cached blocks
  cublas       cuBLAS baselines (FP32, TF32, FP16 with FP32 or FP16 accumulation)
  results      recorded GPU measurements in results/
  profile      recorded Nsight Compute counters (results/ncu-<gpu>.json), in the units lessons use
  record       `make record`, and sweep(): live measurements on a GPU, recorded ones without
  plots        the shared matplotlib figures
  display      kernel source from kernels/ and small tables, in a notebook
  training     a small network trained in emulated FP16/BF16 with loss scaling (lesson 3)
  experiments/ lesson-specific GPU measurements, recorded by `make record` (run_or_load)
  exercises/   self-checking exercises, one module per lesson family
"""
from . import (analysis, clocks, compile, cublas, device, display, emulate, exercises, kernels, launch,  # noqa: F401
               numerics, plots, profile, results, timing)
from .device import backend, summary
from .errors import (ArchitectureError, CourseError, DriverMismatchError, GPUContextLostError,  # noqa: F401
                     GPUOutOfMemoryError, HeaderNotFoundError, InputError, KernelCompileError, MissingPackageError,
                     NoGPUError, ResultsError, UnknownKernelError)
from .kernels import KERNELS, RUNGS  # noqa: F401
from .launch import gemm, gemm_fp32, wmma_fp16acc, wmma_gemm_naive, wmma_mixed  # noqa: F401
from .check import check_gemm  # noqa: F401
from .numerics import random_matrix, tolerance  # noqa: F401
from .experiments import run_or_load  # noqa: F401
from .tryout import try_kernel  # noqa: F401



def sweep(names, sizes, seed=2024, log=None):
    """Live (GPU) or recorded (CPU) rows for kernels/baselines `names` at square `sizes`;
    see helpers.record.sweep. (Imported lazily so `python -m helpers.record` runs cleanly.)"""
    from .record import sweep as _sweep

    return _sweep(names, sizes, seed=seed, log=log)


def series(rows, kernel, y="tflops"):
    """(sizes, values) of one kernel from sweep rows; see helpers.record.series."""
    from .record import series as _series

    return _series(rows, kernel, y)

__all__ = ["backend", "summary", "gemm", "gemm_fp32", "wmma_gemm_naive", "wmma_mixed", "wmma_fp16acc",
           "check_gemm", "random_matrix", "tolerance", "KERNELS", "RUNGS", "sweep", "series", "run_or_load"]
