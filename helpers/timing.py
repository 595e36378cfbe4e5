"""Timing GPU work honestly: CUDA events, warm-up, many runs, cold L2.

``benchmark(fn)`` runs ``fn`` (GPU work on the current stream) a few times to warm up, then `reps` times, each
after a read of a buffer of 4x L2 (no input stays cached, L2 holds clean lines) and between its own pair of
CUDA events: the median and 10th-90th percentile in ms, TFLOP/s and GB/s from the counts passed in, and the
clocks the GPU ran at meanwhile (helpers.clocks).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from .clocks import Sampler
from .device import require_gpu
from .errors import InputError


@dataclass
class Timing:
    times_ms: np.ndarray
    flops: float | None = None
    bytes_moved: float | None = None
    clocks: dict | None = None     # helpers.clocks.Sampler.summary(): SM/memory MHz, power, throttling

    @property
    def median_ms(self) -> float:
        return float(np.median(self.times_ms))

    @property
    def p10_ms(self) -> float:
        return float(np.percentile(self.times_ms, 10))

    @property
    def p90_ms(self) -> float:
        return float(np.percentile(self.times_ms, 90))

    @property
    def n(self) -> int:
        return int(self.times_ms.size)

    @property
    def tflops(self) -> float | None:
        return self.flops / (self.median_ms * 1e-3) / 1e12 if self.flops else None

    @property
    def gbs(self) -> float | None:
        return self.bytes_moved / (self.median_ms * 1e-3) / 1e9 if self.bytes_moved else None

    def __str__(self):
        s = f"median {self.median_ms:.4g} ms (p10 {self.p10_ms:.4g}, p90 {self.p90_ms:.4g}, n={self.n})"
        if self.tflops:
            s += f", {self.tflops:.3g} TFLOP/s"
        if self.gbs:
            s += f", {self.gbs:.4g} GB/s"
        return s


def gemm_flops(M: int, N: int, K: int) -> float:
    """2 M N K: one multiply and one add per term of every dot product."""
    return 2.0 * M * N * K


def gemm_min_bytes(M: int, N: int, K: int, in_bytes: int, out_bytes: int) -> float:
    """The least traffic a GEMM needs: read A and B once, write C once."""
    return float((M * K + K * N) * in_bytes + M * N * out_bytes)


_FLUSH = {}


def _flush_buffer(l2_bytes: int):
    import cupy

    nbytes = max(4 * l2_bytes, 64 << 20)
    if nbytes not in _FLUSH:
        _FLUSH.clear()
        _FLUSH[nbytes] = cupy.empty(nbytes, dtype=cupy.uint8)
    return _FLUSH[nbytes]


_READ_FLUSH = r"""
extern "C" __global__ void read_flush(const uint4* __restrict__ buf, size_t n, unsigned int* sink)
{
    unsigned int x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = buf[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) sink[0] = x;     // (almost) never: keeps the loads without writing anything
}
"""
FLUSHES = ("write", "read")
DEFAULT_FLUSH = "read"
FLUSH_TEXT = {"read": "a kernel reads a buffer of 4x L2, leaving clean lines",
              "write": "a memset of 4x L2, leaving dirty lines to be written back"}
_READER: list = []                     # [the read_flush kernel, its sink] once compiled


def _flush_fn(how: str, l2_bytes: int):
    """The L2 flush before each timed run: "read" (a kernel reads a buffer of 4x L2, leaving clean lines) or
    "write" (a memset of it: the timed kernel's first misses also write its dirty lines back to DRAM)."""
    import cupy

    buf = _flush_buffer(l2_bytes)
    if how == "write":
        return lambda: buf.fill(0)
    if not _READER:                                     # compiled and loaded once per process
        _READER.extend((cupy.RawKernel(_READ_FLUSH, "read_flush"), cupy.zeros(1, dtype=cupy.uint32)))
    (kern, sink), n = _READER, np.uint64(buf.nbytes // 16)
    return lambda: kern((1056,), (256,), (buf, n, sink))


def benchmark(fn, *, flops: float | None = None, bytes_moved: float | None = None, warmup: int = 3,
              reps: int | None = None, target_s: float = 0.4, min_reps: int = 10, max_reps: int = 100,
              flush_l2: bool = True, flush: str = DEFAULT_FLUSH) -> Timing:
    """Time `fn()` with CUDA events (see the module docstring). reps: default as many as fit in about `target_s`
    seconds (min_reps to max_reps), judged from the warm-up. flush: "read" or "write" (_flush_fn); flush_l2=False:
    none."""
    if flush not in FLUSHES:
        raise InputError(f"unknown L2 flush {flush!r}.", f"use one of {', '.join(map(repr, FLUSHES))}.")
    import cupy

    gpu = require_gpu("timing")
    stream = cupy.cuda.get_current_stream()
    flush_run = _flush_fn(flush, gpu.l2_bytes) if flush_l2 else None
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(max(1, warmup)):
        fn()
    end.record(stream)
    end.synchronize()
    per_call = cupy.cuda.get_elapsed_time(start, end) / max(1, warmup) / 1e3
    if reps is None:
        reps = int(np.clip(target_s / max(per_call, 1e-6), min_reps, max_reps))
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(reps)]
    sampler = Sampler()
    for s, e in events:
        if flush_run is not None:
            flush_run()            # evicts A, B and C from L2 (a read of over 4x L2; a memset if flush="write")
        s.record(stream)
        fn()
        e.record(stream)
    while True:                    # the runs are queued: read the clocks while they execute
        sampler.sample()
        if events[-1][1].done:
            break
        time.sleep(0.005)
    events[-1][1].synchronize()
    times = np.array([cupy.cuda.get_elapsed_time(s, e) for s, e in events])
    return Timing(times, flops, bytes_moved, sampler.summary())


def round_ratio(mine_ms, theirs_ms) -> dict:
    """The course's rule for "faster than": the two were timed in the same alternating rounds; each round gives
    theirs / mine (above 1: mine was faster) and the verdict is the median of those ratios. Returns {"ratio",
    "low", "high", "won": rounds mine was faster, "rounds"}."""
    per = [t / m for m, t in zip(mine_ms, theirs_ms)]
    if not per or len(mine_ms) != len(theirs_ms):
        raise ValueError("round_ratio needs the same number (at least one) of rounds for both")
    return {"ratio": statistics.median(per), "low": min(per), "high": max(per), "won": sum(p > 1 for p in per),
            "rounds": len(per)}


def verdict(predicted: float, low: float, high: float, above: str = "better", below: str = "worse",
            change: str | None = None) -> str:
    """The course's rule for a prediction: a predicted ratio against the spread of the measured one, [low, high]
    (what the p10 and p90 timings of both allow, or the extreme rounds of round_ratio). Inside: "as predicted",
    or "unresolved: the spread holds no {change} too" when the spread also holds 1.00 (`change`: "gain" for a
    predicted gain, else "change"). Outside: "missed: {above} than predicted" when the spread lies above the
    prediction, "missed: {below} than predicted" when below."""
    eps = 1e-9
    if low * (1 - eps) <= predicted <= high * (1 + eps):
        if predicted != 1.0 and low * (1 - eps) <= 1.0 <= high * (1 + eps):
            return f"unresolved: the spread holds no {change or ('gain' if predicted > 1 else 'change')} too"
        return "as predicted"
    return f"missed: {above if low > predicted else below} than predicted"


def alternating(timed: dict, flops: float, rounds: int = 3) -> dict:
    """Each launch function of `timed` (key -> fn) benchmarked in turn, `rounds` rounds (a drifting clock touches
    every entry alike), the order reversed every other round (a, b, then b, a: no entry always runs first, after
    the same neighbour): {key: {"ms", "sm_mhz", "power_w", "throttle"}}, one value per round, in round order."""
    out = {key: {"ms": [], "sm_mhz": [], "power_w": [], "throttle": []} for key in timed}
    for i in range(rounds):
        for key, fn in (list(timed.items()) if i % 2 == 0 else list(timed.items())[::-1]):
            t = benchmark(fn, flops=flops)
            c = t.clocks or {}
            out[key]["ms"].append(t.median_ms)
            for f in ("sm_mhz", "power_w", "throttle"):
                out[key][f].append(c.get(f))
    return out
