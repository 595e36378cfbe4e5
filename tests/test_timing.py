"""helpers.timing on the CPU backend (the GPU side is in tests/test_gpu*.py)."""
from __future__ import annotations

import pytest

import helpers.timing
from helpers import NoGPUError


def test_benchmark_on_cpu_raises():
    with pytest.raises(NoGPUError):
        helpers.timing.benchmark(lambda: None)


def test_an_unknown_l2_flush_is_refused_before_any_gpu_work():
    """benchmark(flush=...) takes helpers.timing.FLUSHES ("write", the default, or "read"); anything else is an
    InputError naming them, even where no GPU is present (the check comes first)."""
    import pytest

    from helpers.errors import InputError
    from helpers.timing import FLUSHES, benchmark

    assert FLUSHES == ("write", "read")
    with pytest.raises(InputError, match="'write', 'read'"):
        benchmark(lambda: None, flush="memset")
