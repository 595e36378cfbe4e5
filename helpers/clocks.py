"""What the GPU ran at while it was timed: SM and memory clocks, power, temperature, throttle reasons.

``Sampler`` reads them through NVML (module ``pynvml``; nothing without it) while timed work runs, so every
recorded timing sits beside its clocks. A clock far below boost, or a throttle reason, means the number measured
the power or thermal state too. ``clock_text`` and ``with_clock`` put a row's readings in a table.
"""
from __future__ import annotations

import statistics
import threading

# The fields ``Sampler.summary`` gives, and so every timed row of the record carries
FIELDS = ("sm_mhz", "mem_mhz", "sm_mhz_min", "power_w", "power_w_max", "temp_c", "throttle", "clock_samples")

# NVML clock-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*)
REASONS = {0x1: "gpu idle", 0x2: "application clocks setting", 0x4: "sw power cap", 0x8: "hw slowdown",
           0x20: "sync boost", 0x40: "sw thermal slowdown", 0x80: "hw thermal slowdown",
           0x100: "hw power brake slowdown", 0x200: "display clock setting"}

_HANDLE: dict = {}


def _handle():
    """The NVML handle of the current CuPy device (matched by PCI bus id), or None without NVML."""
    if "h" in _HANDLE:
        return _HANDLE["h"]
    h = None
    try:
        import cupy
        import pynvml

        pynvml.nvmlInit()
        bus = cupy.cuda.Device().pci_bus_id
        h = pynvml.nvmlDeviceGetHandleByPciBusId(bus.encode() if isinstance(bus, str) else bus)
    except Exception:   # no pynvml, no NVML library, or a driver without it: timings go unannotated
        h = None
    _HANDLE["h"] = h
    return h


def read() -> dict | None:
    """One reading: {'sm_mhz', 'mem_mhz', 'power_w', 'temp_c', 'reasons'}, or None without NVML. power_w is
    nvmlDeviceGetPowerUsage: on Ampere and newer an average over the last second, so a shorter timing's lags."""
    h = _handle()
    if h is None:
        return None
    import pynvml

    out = {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
           "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
           "power_w": round(pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0, 1),
           "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)}
    try:
        out["reasons"] = int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))
    except Exception:
        out["reasons"] = int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))
    return out


def reason_names(bits: int) -> list[str]:
    return [name for bit, name in REASONS.items() if bits & bit] or ["none"]


class Sampler:
    """Readings taken while timed work runs; ``summary()`` gives the medians, the peak power and
    every throttle reason seen."""

    def __init__(self):
        self.samples: list[dict] = []

    def sample(self) -> None:
        r = read()
        if r is not None:
            self.samples.append(r)

    def summary(self) -> dict:
        if not self.samples:
            return {}
        s = self.samples
        bits = 0
        for r in s:
            bits |= r["reasons"]
        return {"sm_mhz": int(statistics.median(r["sm_mhz"] for r in s)),
                "mem_mhz": int(statistics.median(r["mem_mhz"] for r in s)),
                "sm_mhz_min": min(r["sm_mhz"] for r in s),
                "power_w": round(statistics.median(r["power_w"] for r in s), 1),
                "power_w_max": max(r["power_w"] for r in s),
                "temp_c": max(r["temp_c"] for r in s),
                "throttle": [n for n in reason_names(bits) if n != "gpu idle"] or ["none"],
                "clock_samples": len(s)}


def while_running(fn, interval_s: float = 0.005):
    """Call ``fn()`` (which waits for its GPU work) while a thread samples the clocks every `interval_s` seconds,
    for work another timer times. Returns (fn's result, Sampler.summary())."""
    sampler = Sampler()
    sampler.sample()                 # one reading first, in this thread (it also finds the NVML handle)
    stop = threading.Event()

    def loop():
        while not stop.wait(interval_s):
            sampler.sample()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        result = fn()
    finally:
        stop.set()
        thread.join()
    sampler.sample()
    return result, sampler.summary()


# --------------------------------------------------------------------------- reading recorded rows
def clock_text(row: dict) -> str:
    """What a timed row ran at, for a table: '1980 MHz', '1620 MHz (min 1320), sw power cap' when the clock moved
    or the driver reported a throttle reason, 'clock not recorded' for a row without readings."""
    mhz = row.get("sm_mhz")
    if mhz is None:
        return "clock not recorded"
    s = f"{mhz} MHz"
    lo = row.get("sm_mhz_min")
    if lo is not None and lo < mhz:
        s += f" (min {lo})"
    reasons = [r for r in (row.get("throttle") or []) if r != "none"]
    if reasons:
        s += ", " + ", ".join(reasons)
    return s


def clock_span(values) -> str:
    """The SM clocks of several timings (None: not read) as one cell: '1980', '1845-1980' when they moved, or ''."""
    v = [x for x in values if x]
    return "" if not v else str(v[0]) if min(v) == max(v) else f"{min(v)}-{max(v)}"


def with_clock(rows: list[dict]) -> list[dict]:
    """Copies of timed rows with a 'clock' field (clock_text) for helpers.display.table."""
    return [dict(r, clock=clock_text(r)) for r in rows]


def tflops_per_ghz(row: dict) -> float | None:
    """TFLOP/s per GHz of median SM clock: a speed difference with the clock divided out; None without a clock."""
    mhz, tf = row.get("sm_mhz"), row.get("tflops")
    return None if not mhz or tf is None else tf / (mhz / 1000.0)
