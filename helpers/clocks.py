"""What the GPU ran at while it was timed: SM and memory clocks, power, temperature, throttle reasons.

``Sampler`` reads them through NVML (the nvidia-ml-py package, module ``pynvml``; falls back to
nothing when NVML is missing) while timed work runs: ``helpers.timing.benchmark`` polls it until
its last event completes, so every recorded timing sits beside the clocks it ran at. A clock far
below the GPU's boost clock, or a throttle reason other than 'idle'/'none', means the number
measured the power or thermal state, not only the kernel. Work timed by another tool (an
independent timer, a child process) gets the same readings from ``while_running``. ``clock_text``
and ``with_clock`` put a recorded row's readings beside its timing in a table ('clock not recorded'
for a row that has none: a record made before its experiment stored clocks, or a machine without
NVML); ``tflops_per_ghz`` divides the clock out.
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
    nvmlDeviceGetPowerUsage: on Ampere and newer (the H200 included) an average over the last second, so during a
    timing shorter than that it lags and mixes in what ran before; energy_j (the energy counter) over a window of
    a second or more is the kernel's own."""
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
    """Call ``fn()`` while a thread samples the clocks every `interval_s` seconds: for GPU work that
    another timer times (``fn`` must wait for its work to finish). Returns (fn's result,
    ``Sampler.summary()``), the summary empty without NVML."""
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
    """What a timed row ran at, for a table column: '1980 MHz', or '1620 MHz (min 1320), sw power cap'
    when the clock moved or the driver reported a throttle reason; 'clock not recorded' for a row
    without readings (recorded before its experiment stored clocks, or without NVML)."""
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
    """The SM clocks of several timings (MHz; None where none was read) as one table cell: '1980' when they agree,
    '1845-1980' when they moved, '' without any."""
    v = [x for x in values if x]
    return "" if not v else str(v[0]) if min(v) == max(v) else f"{min(v)}-{max(v)}"


def with_clock(rows: list[dict]) -> list[dict]:
    """Copies of timed rows with a 'clock' field (clock_text) for helpers.display.table."""
    return [dict(r, clock=clock_text(r)) for r in rows]


def tflops_per_ghz(row: dict) -> float | None:
    """Throughput per unit of SM clock (TFLOP/s per GHz, median clock): what is left of a speed
    difference once the clock is divided out; None without a clock reading."""
    mhz, tf = row.get("sm_mhz"), row.get("tflops")
    return None if not mhz or tf is None else tf / (mhz / 1000.0)
