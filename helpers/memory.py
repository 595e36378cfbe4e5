"""GPU memory for sweeps: ``cap_sizes`` keeps the sizes that fit in the free memory (on a 16 GB GPU the H200's
largest do not) with a note saying which were skipped, instead of failing half-way; ``release()`` returns CuPy's
cached blocks between sizes."""
from __future__ import annotations

from typing import Callable, Iterable

# Bytes per element of an n x n problem that measure_size(n, n, n) may hold at once: FP32 A, B (8), FP16 copies
# (4), BF16 bits (4), padded copies (12), three float64 references (24), C (4), check_gemm's float64 temporaries
# (about 48); rounded up.
MEASURE_BYTES_PER_ELEMENT = 128
# What a size may use of the free memory (the rest: CUDA context growth, cuBLAS, fragmentation).
FREE_FRACTION = 0.8


def _gib(b: float) -> str:
    return f"{b / 2**30:.1f} GiB"


def free_bytes() -> int:
    """Free GPU memory in bytes: what the driver reports free plus what CuPy's pool holds unused."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())


def release() -> None:
    """Give CuPy's cached (unused) device and pinned blocks back to the driver."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def measure_bytes(n: int) -> int:
    """Estimated peak GPU memory of measure_size(n, n, n) (see MEASURE_BYTES_PER_ELEMENT)."""
    return MEASURE_BYTES_PER_ELEMENT * n * n


def cap_sizes(sizes: Iterable[int], bytes_for: Callable[[int], int] = measure_bytes, *, free: int | None = None,
              fraction: float = FREE_FRACTION, what: str = "this sweep") -> tuple[list[int], str]:
    """(the sizes whose footprint ``bytes_for(n)`` fits in ``fraction`` of `free` bytes (default: free_bytes()),
    a note: "" when all fit, else one line saying which were skipped and why)."""
    sizes = list(sizes)
    if free is None:
        free = free_bytes()
    budget = fraction * free
    kept = [n for n in sizes if bytes_for(n) <= budget]
    skipped = [n for n in sizes if n not in kept]
    if not skipped:
        return kept, ""
    need = max(bytes_for(n) for n in skipped)
    note = (f"{what}: skipped size{'s' if len(skipped) > 1 else ''} {', '.join(map(str, skipped))}: "
            f"{'they need' if len(skipped) > 1 else 'it needs'} up to about {_gib(need)} of GPU memory, and "
            f"{_gib(free)} is free on this GPU (a size may use {fraction:.0%} of it). "
            "The recorded results in results/ have them.")
    return kept, note
