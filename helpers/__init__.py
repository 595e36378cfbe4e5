"""helpers: the small library behind the Tensor Core course's notebooks.

Layered: a module imports only modules of its own layer or below (tests/test_layers.py).

core
  errors       the CourseError family; CUDA faults (lost context, out of memory) made readable
  paths        where kernels/ and results/ are
  device       which backend runs (GPU through CuPy, or CPU emulation), GPU facts and peak rates
  compile      finding CUDA headers, compiling kernels/*.cu with NVRTC, compute-capability gates
  numerics     formats, float64 reference, error measures, the tolerance formula
  formats      floating-point formats: facts, bits, BF16 bit patterns, TF32 rounding, number lines
  fp8          lesson 7's FP8 formats: facts, numpy's and the GPU's (saturating) casts, scaling
  model_gpu    the check's model of a kernel's arithmetic on CUDA cores
  emulate      numpy reproductions of each kernel's arithmetic (the CPU backend)
  check        check_gemm: the result check (bounds and the model of the arithmetic)
  mutations    wrong results a check must reject
  analysis     models that need no GPU: requested traffic, bank conflicts, ldmatrix maps, SASS counts
  kernels      the registry of every GEMM kernel; lesson 5's and 6's rungs are entries too
  knobs        the rungs' compile-time knobs, as data, and the entry a setting builds
  hopper       TMA tensor maps for Hopper (sm_90a) kernels, built by the driver
  isolate      running one function in a child process, so a faulting kernel cannot take this one
  launch       one validation, padding and launch path for every registered kernel (gemm)
  clocks, timing, memory   SM clocks and power, CUDA-event timing with cold L2, free GPU memory
  cublas       cuBLAS baselines
  results      recorded GPU measurements in results/
  profile      recorded Nsight Compute counters in the units lessons use
  fp8_gemm     lesson 7's FP8 GEMM kernels; fp8_scaled: the block-scaled FP8 GEMM (DeepSeek-V3's recipe)
  training     a small network trained in FP16/BF16
presentation
  plot_style, plots (plots_ladder, plots_hopper, plots_fp8)   the figures, one style
  display      kernel source from kernels/ and small tables, in a notebook
  tryout       try_kernel: compile, check and time a changed kernel in one call
lesson families
  experiments/ a lesson's GPU measurements, live or recorded (run_or_load; the sweep)
  exercises/   self-checking exercises, one module per lesson family
the command
  record       `make record`

Submodules and the names below load on first use, so `import helpers` loads no plotting or GPU package.
"""
from __future__ import annotations

import importlib
import pkgutil

# name -> the module that defines it
_NAMES = {
    "backend": "device", "summary": "device",
    "KERNELS": "kernels", "RUNGS": "kernels",
    "gemm": "launch", "gemm_fp32": "launch", "wmma_fp16acc": "launch", "wmma_gemm_naive": "launch",
    "wmma_mixed": "launch",
    "check_gemm": "check",
    "random_matrix": "numerics", "tolerance": "numerics",
    "run_or_load": "experiments",
    "sweep": "experiments.sweep", "series": "experiments.sweep",
    "try_kernel": "tryout",
    **{e: "errors" for e in ("ArchitectureError", "CourseError", "DriverMismatchError", "GPUContextLostError",
                             "GPUOutOfMemoryError", "HeaderNotFoundError", "InputError", "KernelCompileError",
                             "MissingPackageError", "NoGPUError", "ResultsError", "UnknownKernelError")},
}

__all__ = sorted(_NAMES)


def _submodules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(__path__)}


def __getattr__(name: str):
    if name in _submodules():
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _submodules() | set(_NAMES))
