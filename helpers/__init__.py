"""helpers: the small library behind the Tensor Core course's notebooks.

One job per module:
  device    which backend runs (GPU through CuPy, or CPU emulation), GPU facts and peak rates
  compile   finding CUDA headers, compiling kernels/*.cu with NVRTC, compute-capability gates
  launch    validating inputs and launching the course kernels (or their emulation)
  numerics  formats, float64 reference, error measures, the tolerance formula
  emulate   numpy reproductions of each kernel's arithmetic (the CPU backend)
  timing    CUDA-event benchmarking with cold L2
  cublas    cuBLAS baselines (FP32, TF32, FP16 with FP32 or FP16 accumulation)
  results   recorded GPU measurements in results/
  plots     the shared matplotlib figures
  record    `make record`, and sweep(): live measurements on a GPU, recorded ones without
  memory    free GPU memory, size caps for sweeps on small GPUs, returning cached blocks
  errors    the CourseError family; CUDA faults (lost context, out of memory) made readable
  experiments  lesson-specific GPU measurements, recorded by `make record` (run_or_load)
"""
from . import compile, cublas, device, display, emulate, exercises, launch, numerics, plots, results, timing  # noqa: F401,E501
from .device import backend, summary
from .errors import (ArchitectureError, CourseError, DriverMismatchError, GPUContextLostError,  # noqa: F401
                     GPUOutOfMemoryError, HeaderNotFoundError, InputError, KernelCompileError, NoGPUError,
                     ResultsError)
from .launch import KERNELS, gemm, gemm_fp32, wmma_fp16acc, wmma_gemm_naive, wmma_mixed  # noqa: F401
from .numerics import check_gemm, random_matrix, tolerance  # noqa: F401
from .experiments import run_or_load  # noqa: F401



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
           "check_gemm", "random_matrix", "tolerance", "KERNELS", "sweep", "series", "run_or_load"]
