"""helpers: the small library behind the Tensor Core course's notebooks.

Layered: a module imports only modules of its own layer or below (tests/test_layers.py).

core          errors, paths; device (backend, GPU, peak rates); compile (NVRTC, compute-capability gates);
              numerics (formats, reference, tolerance); formats, fp8 (bits, casts, scaling); emulate, model_gpu
              (each kernel's arithmetic on the CPU and on CUDA cores); check, mutations (the result check and
              what it must reject); analysis (models that need no GPU); kernels, knobs (the registry, the rungs'
              knobs); hopper (TMA maps); isolate (a child process); launch (gemm); clocks, timing, memory;
              cublas; results, profile (recorded measurements and Nsight Compute counters); fp8_gemm,
              fp8_scaled, training
presentation  plot_style, plots (plots_ladder, plots_hopper, plots_fp8); display; tryout (try_kernel),
              tryout_sweep (the recorded knob sweep it shows without a GPU)
lesson        experiments/ (a lesson's GPU measurements, live or recorded: run_or_load, the sweep),
families      exercises/ (self-checking exercises)
the command   record (`make record`)

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
                             "MissingPackageError", "NoGPUError", "ResultsError", "UnknownKernelError", "wrap")},
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
