"""The course's error types (all ``CourseError``): each message says what went wrong, then ``Fix:`` what to do.
Also `wrap`, the one line-wrapper of the course's printed sentences."""

LINE = 100   # the widest line a lesson prints: JupyterLab at 1,400 px with the file browser open breaks a longer
             # one inside a word


def wrap(text: str, width: int = LINE, indent: str = "  ") -> str:
    """`text` with every line over `width` characters broken at spaces; continuation lines start with `indent`
    after the line's own leading spaces (a word longer than a line stays whole)."""
    import textwrap

    def lines(line: str) -> list[str]:
        lead = line[:len(line) - len(line.lstrip(" "))]
        return textwrap.wrap(line, width, subsequent_indent=lead + indent, break_long_words=False,
                             break_on_hyphens=False) or [line]

    return "\n".join(part for line in str(text).splitlines() for part in lines(line))


class CourseError(Exception):
    """Base class: a problem the learner can fix, with the fix in the message."""

    def __init__(self, problem: str, fix: str):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}\nFix: {fix}")

    def _render_traceback_(self) -> list[str]:
        """What IPython shows in a notebook: the message and its fix, not the traceback (`%tb` prints that)."""
        name = type(self).__name__
        lines = [part for line in f"{name}: {self}".splitlines() for part in wrap(line, indent="").splitlines()]
        lines[0] = f"\x1b[31m{name}\x1b[0m" + lines[0][len(name):]
        return lines + ["(the traceback: run %tb in a new cell)"]


class InputError(CourseError, ValueError):
    """Wrong dtype, shape, layout, alignment or size for a kernel."""


class _LookupError(CourseError, KeyError):
    def __str__(self) -> str:   # KeyError's own __str__ would show the message quoted, with "\n" escaped
        return self.args[0] if self.args else ""


class UnknownFormatError(_LookupError):
    """A number-format name the course does not know ('fp16', 'bf16', 'tf32', ...)."""


class UnknownKernelError(_LookupError):
    """A kernel name or ladder rung that is not in the registry (helpers.kernels)."""


class UnknownExperimentError(_LookupError):
    """An experiment name that helpers.experiments does not register (run_or_load)."""


class NoGPUError(CourseError, RuntimeError):
    """A GPU was required (COURSE_DEVICE=gpu, or a GPU-only operation) but none works."""


class ArchitectureError(CourseError, RuntimeError):
    """The GPU is too old for the kernel (compute capability below what it needs)."""


class HeaderNotFoundError(CourseError, RuntimeError):
    """The CUDA headers NVRTC needs (mma.h, crt/mma.h, ...) were not found."""


class MissingPackageError(CourseError, ImportError):
    """A Python package that one part of the course needs (and the rest does not) is not installed."""


class KernelCompileError(CourseError, RuntimeError):
    """NVRTC rejected a kernel; the message carries the compiler log."""


class ResultsError(CourseError, RuntimeError):
    """A recorded-results file is missing or malformed."""


class GPUContextLostError(CourseError, RuntimeError):
    """A kernel faulted (illegal address, launch failure, ...): the process's CUDA context is gone."""


class GPUOutOfMemoryError(CourseError, MemoryError):
    """The GPU ran out of memory for a buffer the course needed."""


# CUDA errors after which the context is unusable ("sticky"; the same numbers in the runtime's
# cudaError_t and the driver's CUresult): every later CUDA call in the process fails too.
STICKY_CUDA_ERRORS = {
    700: "illegal address", 710: "device-side assert", 714: "hardware stack error",
    715: "illegal instruction", 716: "misaligned address", 717: "invalid address space",
    718: "invalid program counter", 719: "launch failure",
}
_STICKY_NAMES = ("cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorLaunchFailure",
                 "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorMisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS",
                 "cudaErrorIllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "cudaErrorAssert",
                 "CUDA_ERROR_ASSERT", "cudaErrorHardwareStackError", "CUDA_ERROR_HARDWARE_STACK_ERROR",
                 "cudaErrorInvalidPc", "CUDA_ERROR_INVALID_PC", "cudaErrorInvalidAddressSpace",
                 "CUDA_ERROR_INVALID_ADDRESS_SPACE")
_OOM_NAMES = ("OutOfMemoryError", "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY")

CONTEXT_LOST_FIX = ("restart the notebook's kernel (Kernel > Restart, then run the cells again from the top): "
                    "nothing else brings the GPU back in this process. Before rerunning, fix the kernel: an "
                    "illegal address is almost always a read or write past the end of a matrix (guard loads "
                    "and stores with `if (row < M && col < N)`, and the last partial tile with `< K`).")

OOM_FIX = ("free what you no longer need (del the arrays, then "
           "cupy.get_default_memory_pool().free_all_blocks()), use smaller sizes, or restart the notebook's "
           "kernel to release everything; `nvidia-smi` shows what else uses the GPU.")


def is_cuda_error(exc: BaseException) -> bool:
    """True for CuPy's CUDARuntimeError / CUDADriverError (checked by name: no CuPy import needed)."""
    return type(exc).__name__ in ("CUDARuntimeError", "CUDADriverError")


def is_context_lost(exc: BaseException) -> bool:
    """True when `exc` is a CUDA error that leaves the context unusable (illegal address, ...)."""
    if not is_cuda_error(exc):
        return False
    if getattr(exc, "status", None) in STICKY_CUDA_ERRORS:
        return True
    text = str(exc)
    return any(n in text for n in _STICKY_NAMES)


def is_out_of_memory(exc: BaseException) -> bool:
    return type(exc).__name__ == "OutOfMemoryError" or (is_cuda_error(exc) and any(n in str(exc) for n in _OOM_NAMES))


def translate_gpu_error(exc: BaseException, what: str) -> CourseError | None:
    """The CourseError a learner should see for a CUDA error raised by `what`, or None to re-raise it."""
    if isinstance(exc, CourseError):
        return None
    if is_context_lost(exc):
        return GPUContextLostError(
            f"The GPU stopped with an error while running {what} ({type(exc).__name__}: {exc}). "
            "The GPU context is lost: every further GPU call in this Python process will fail, "
            "in every cell.", CONTEXT_LOST_FIX)
    if is_out_of_memory(exc):
        return GPUOutOfMemoryError(f"The GPU ran out of memory while running {what} ({type(exc).__name__}: {exc}).",
                                   OOM_FIX)
    return None


class gpu_errors:
    """``with gpu_errors("wmma_gemm_naive"):`` turns a CUDA fault inside into a GPUContextLostError
    (or an out-of-memory error into GPUOutOfMemoryError) that says what to do; anything else passes."""

    def __init__(self, what: str):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            return False
        new = translate_gpu_error(exc, self.what)
        if new is None:
            return False
        raise new from None


class DriverMismatchError(NoGPUError):
    """An NVIDIA driver is installed, but CuPy (its CUDA runtime or NVRTC) is newer than it supports."""


_MISMATCH_NAMES = ("cudaErrorInsufficientDriver", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "cudaErrorUnsupportedPtxVersion",
                   "driver version is insufficient", "cudaErrorSystemDriverMismatch",
                   "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "cudaErrorCompatNotSupportedOnDevice")

DRIVER_MISMATCH = "The CuPy wheel and the NVIDIA driver do not match: CuPy's CUDA is newer than the driver supports"
DRIVER_MISMATCH_FIX = ("install the CuPy wheel that matches the driver's CUDA version (`nvidia-smi` shows it, top "
                       "right): pip install cupy-cuda12x for CUDA 12.x drivers, cupy-cuda13x for CUDA 13.x (uninstall "
                       "the other one first); or update the NVIDIA driver.")


def is_driver_mismatch(text: str) -> bool:
    return any(n in text for n in _MISMATCH_NAMES)
