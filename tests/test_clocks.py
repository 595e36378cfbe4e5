"""helpers.clocks: readings beside each timing, as text for tables (no GPU)."""
from __future__ import annotations

import helpers
from helpers import clocks


def test_clock_text():
    assert clocks.clock_text({"sm_mhz": 1980, "sm_mhz_min": 1980, "throttle": ["none"]}) == "1980 MHz"
    assert clocks.clock_text({"sm_mhz": 1620, "sm_mhz_min": 1320, "throttle": ["sw power cap"]}) == \
        "1620 MHz (min 1320), sw power cap"
    assert clocks.clock_text({"tflops": 1.0}) == "clock not recorded"    # an old record, or no NVML
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


def _fake_reads(monkeypatch, mhz=(1980, 1950, 1620)):
    """clocks.read() returning fake NVML readings, cycling through `mhz` (no GPU, no NVML)."""
    state = {"i": 0}

    def read():
        state["i"] += 1
        return {"sm_mhz": mhz[state["i"] % len(mhz)], "mem_mhz": 3201, "power_w": 400.0, "temp_c": 50,
                "reasons": 0x4}
    monkeypatch.setattr(clocks, "read", read)


def test_sampler_summary_has_every_field(monkeypatch):
    _fake_reads(monkeypatch)
    s = clocks.Sampler()
    for _ in range(3):
        s.sample()
    summary = s.summary()
    assert tuple(summary) == clocks.FIELDS
    assert summary["throttle"] == ["sw power cap"] and summary["sm_mhz_min"] == 1620


def test_while_running_samples_work_timed_elsewhere(monkeypatch):
    """For timings another tool makes (triton's do_bench): the same fields as the harness's rows."""
    import time

    _fake_reads(monkeypatch)
    result, summary = clocks.while_running(lambda: time.sleep(0.05) or 42, interval_s=0.002)
    assert result == 42
    assert tuple(summary) == clocks.FIELDS and summary["clock_samples"] >= 3
    assert "MHz" in clocks.clock_text(summary)
    monkeypatch.setattr(clocks, "read", lambda: None)            # no NVML: nothing, and the text says so
    assert clocks.while_running(lambda: 1) == (1, {})
    assert clocks.clock_text({}) == "clock not recorded"


def test_clock_span_is_one_cell_for_several_timings():
    from helpers.clocks import clock_span

    assert clock_span([1980, 1980, None]) == "1980"
    assert clock_span([1845, None, 1980, 1900]) == "1845-1980"
    assert clock_span([None, None]) == "" and clock_span([]) == ""
