"""helpers.record without a GPU: the timing-agreement entry of the record (``extras.timing_agreement``)
stores the clocks beside each of its timings, with fakes in place of CuPy, torch and triton."""
from __future__ import annotations

import sys
import types

import numpy as np

from helpers import clocks, record
from helpers.timing import Timing

CLOCKS = {"sm_mhz": 1980, "mem_mhz": 3201, "sm_mhz_min": 1980, "power_w": 420.0, "power_w_max": 421.0,
          "temp_c": 53, "throttle": ["none"], "clock_samples": 12}


def _fakes(monkeypatch):
    from conftest import numpy_cupy

    cupy = numpy_cupy()
    triton, testing = types.ModuleType("triton"), types.ModuleType("triton.testing")
    testing.do_bench = lambda fn, warmup, rep, return_mode: (fn(), 0.181)[1]
    triton.testing = testing
    for name, mod in {"cupy": cupy, "torch": types.ModuleType("torch"), "triton": triton,
                      "triton.testing": testing}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(record, "benchmark", lambda fn, **kw: (fn(), Timing(np.array([0.18]), clocks=dict(CLOCKS)))[1])
    monkeypatch.setattr(clocks, "read", lambda: {"sm_mhz": 1965, "mem_mhz": 3201, "power_w": 430.0, "temp_c": 54,
                                                 "reasons": 0})


def test_timing_agreement_stores_clocks_beside_each_timing(monkeypatch):
    _fakes(monkeypatch)
    out = record.timing_agreement(n=32, log=lambda *a: None)
    assert out["harness_median_ms"] == [0.18, 0.18] and out["do_bench_median_ms"] == 0.181
    assert out["harness_clocks"] == [CLOCKS, CLOCKS]
    assert tuple(out["do_bench_clocks"]) == clocks.FIELDS           # sampled while do_bench ran
    assert out["do_bench_clocks"]["sm_mhz"] == 1965 and out["do_bench_clocks"]["throttle"] == ["none"]


def test_timing_agreement_without_nvml_still_records(monkeypatch):
    _fakes(monkeypatch)
    monkeypatch.setattr(clocks, "read", lambda: None)
    out = record.timing_agreement(n=32, log=lambda *a: None)
    assert out["do_bench_clocks"] == {} and clocks.clock_text(out["do_bench_clocks"]) == "clock not recorded"


def test_extras_can_be_updated_by_name():
    assert set(record.EXTRAS) == {"timing_agreement", "emulator_probe"}
