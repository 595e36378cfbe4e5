"""The course's error types: every one says what went wrong and what to do.

Each class is a ``CourseError`` so a notebook can catch them all at once; the
message always ends with a line that starts with ``Fix:``.
"""


class CourseError(Exception):
    """Base class: a problem the learner can fix, with the fix in the message."""

    def __init__(self, problem: str, fix: str):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}\nFix: {fix}")


class InputError(CourseError, ValueError):
    """Wrong dtype, shape, layout, alignment or size for a kernel."""


class NoGPUError(CourseError, RuntimeError):
    """A GPU was required (COURSE_DEVICE=gpu, or a GPU-only operation) but none works."""


class ArchitectureError(CourseError, RuntimeError):
    """The GPU is too old for the kernel (compute capability below what it needs)."""


class HeaderNotFoundError(CourseError, RuntimeError):
    """The CUDA headers NVRTC needs (mma.h, crt/mma.h, ...) were not found."""


class KernelCompileError(CourseError, RuntimeError):
    """NVRTC rejected a kernel; the message carries the compiler log."""


class ResultsError(CourseError, RuntimeError):
    """A recorded-results file is missing or malformed."""
