"""helpers.timing on the CPU backend (the GPU side is in tests/test_gpu*.py)."""
from __future__ import annotations

import pytest

import helpers.timing
from helpers import NoGPUError


def test_benchmark_on_cpu_raises():
    with pytest.raises(NoGPUError):
        helpers.timing.benchmark(lambda: None)
