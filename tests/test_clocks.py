"""helpers.clocks: readings beside each timing, as text for tables (no GPU)."""
from __future__ import annotations

import helpers
from helpers import clocks


def test_clock_text():
    assert clocks.clock_text({"sm_mhz": 1980, "sm_mhz_min": 1980, "throttle": ["none"]}) == "1980 MHz"
    assert clocks.clock_text({"sm_mhz": 1620, "sm_mhz_min": 1320, "throttle": ["sw power cap"]}) == \
        "1620 MHz (min 1320), sw power cap"
    assert clocks.clock_text({"tflops": 1.0}) == "not read"
    assert clocks.reason_names(0x4 | 0x40) == ["sw power cap", "sw thermal slowdown"]
    assert clocks.reason_names(0) == ["none"]


def test_every_recorded_timing_has_its_clock():
    rec = helpers.results.load_latest()
    assert all(r.get("sm_mhz") for r in rec.rows)
    rows = clocks.with_clock(rec.select(kernel="cublas_fp16"))
    assert all("MHz" in r["clock"] for r in rows)


def test_the_8192_dip_is_the_clock():
    """cuBLAS FP16 at 8192 ran throttled by the power cap; per GHz of SM clock it is not slower than at 4096."""
    rec = helpers.results.load_latest()
    r4, r8 = (rec.select(kernel="cublas_fp16", m=n)[0] for n in (4096, 8192))
    assert "sw power cap" in r8["throttle"] and r8["sm_mhz"] < r4["sm_mhz"]
    assert r8["tflops"] < r4["tflops"]
    assert clocks.tflops_per_ghz(r8) >= clocks.tflops_per_ghz(r4)
    assert clocks.tflops_per_ghz({"tflops": 1.0}) is None
