"""Which backend runs the kernels (a CUDA GPU through CuPy, else the CPU emulation), the GPU and its peak rates.

``COURSE_DEVICE=cpu`` or ``=gpu`` forces a backend; ``=gpu`` without a working GPU is an error, not a fallback.
"""
from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .errors import (wrap, DRIVER_MISMATCH, DRIVER_MISMATCH_FIX, CourseError, DriverMismatchError, NoGPUError,
                     is_driver_mismatch)

ENV_VAR = "COURSE_DEVICE"


# --------------------------------------------------------------------------- peak rates
@dataclass(frozen=True)
class Peaks:
    """Dense (no sparsity) peak rates in TFLOP/s and memory bandwidth in GB/s."""

    gpu: str
    fp32: float          # CUDA-core FP32 FMA
    tf32: float | None   # tensor core, TF32 inputs
    fp16: float | None   # tensor core, FP16 inputs, FP32 accumulate
    fp16_acc16: float | None  # tensor core, FP16 inputs, FP16 accumulate
    bf16: float | None   # tensor core, BF16 inputs, FP32 accumulate
    mem_gbs: float
    source: str
    fp8: float | None = None   # tensor core, FP8 (E4M3/E5M2) inputs, FP32 accumulate (where entered)


# Sources: each row's `source`. Tensor rates are dense: datasheets that quote them "with sparsity" are halved.
# The whitepapers' Appendix A tables hold the GeForce cards (GA102: RTX 3090, AD102: RTX 4090, and the RTX
# Blackwell whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf:
# RTX 5090); GeForce parts run FP16 with FP32 accumulation at half their FP16-accumulate rate, datacenter parts at
# the full rate. The H200 NVL (PCIe) reports the H200's name but is slower (835.5 BF16 dense).
# B200: NVIDIA's HGX page (https://www.nvidia.com/en-us/data-center/hgx/, per GPU); the DGX B200 datasheet and the
# Blackwell technical brief give the same tensor rates but 80 FP32 and 8 TB/s: the table takes the HGX figures.
PEAKS_TABLE: list[tuple[tuple[str, ...], Peaks]] = [
    (("B200",), Peaks("NVIDIA B200 (HGX)", 75.0, 1100.0, 2250.0, 2250.0, 2250.0, 7700,
                      "HGX B200 specifications", 4500.0)),
    (("H200",), Peaks("NVIDIA H200 SXM", 67.0, 494.7, 989.4, 989.4, 989.4, 4800, "H200 datasheet", 1979.0)),
    (("H100", "PCIe"), Peaks("NVIDIA H100 PCIe", 51.0, 378.0, 756.0, 756.0, 756.0, 2000, "H100 datasheet", 1513.0)),
    (("H100",), Peaks("NVIDIA H100 SXM5", 67.0, 494.7, 989.4, 989.4, 989.4, 3350, "H100 datasheet", 1979.0)),
    (("A100", "80GB", "PCIe"), Peaks("NVIDIA A100 80GB PCIe", 19.5, 156.0, 312.0, 312.0, 312.0, 1935, "A100 datasheet")),
    (("A100", "80GB"), Peaks("NVIDIA A100 80GB SXM4", 19.5, 156.0, 312.0, 312.0, 312.0, 2039, "A100 datasheet")),
    (("A100",), Peaks("NVIDIA A100 40GB", 19.5, 156.0, 312.0, 312.0, 312.0, 1555, "A100 datasheet")),
    (("L40S",), Peaks("NVIDIA L40S", 91.6, 183.0, 362.0, 362.0, 362.0, 864, "L40S datasheet")),
    (("L4",), Peaks("NVIDIA L4", 30.3, 60.0, 121.0, 121.0, 121.0, 300, "L4 datasheet")),
    (("A10",), Peaks("NVIDIA A10", 31.2, 62.5, 125.0, 125.0, 125.0, 600, "A10 datasheet")),
    (("RTX 5090",), Peaks("NVIDIA GeForce RTX 5090", 104.8, 104.8, 209.5, 419.0, 209.5, 1792,
                          "RTX Blackwell whitepaper, App. A", 419.0)),
    (("RTX 4090",), Peaks("NVIDIA GeForce RTX 4090", 82.6, 82.6, 165.2, 330.3, 165.2, 1008, "Ada whitepaper, App. A")),
    (("RTX 3090",), Peaks("NVIDIA GeForce RTX 3090", 35.6, 35.6, 71.0, 142.0, 71.0, 936, "GA102 whitepaper, App. A")),
    (("V100", "PCIE"), Peaks("NVIDIA V100 PCIe", 14.0, None, 112.0, 112.0, None, 900, "V100 datasheet")),
    (("V100",), Peaks("NVIDIA V100 SXM2", 15.7, None, 125.0, 125.0, None, 900, "V100 datasheet")),
    (("T4",), Peaks("NVIDIA T4", 8.1, None, 65.0, 65.0, None, 320, "T4 datasheet")),
]


# Dense Tensor Core FLOP per SM per clock on Hopper (sm_90): NVIDIA's H100 whitepaper gives each SM twice A100's
# 1024 dense FP16 FMA per clock (4096 FLOP) and FP8 twice FP16. A datasheet's peak is SMs x this x the clock it
# assumes, so the same chip at another clock has another ceiling.
HOPPER_TC_FLOP_PER_CLK_SM = {"fp16": 4096, "fp8": 8192}


def peak_clock_mhz(peak_tflops: float, sms: int, flop_per_clk_sm: int = HOPPER_TC_FLOP_PER_CLK_SM["fp16"]) -> float:
    """The SM clock (MHz) at which `sms` SMs doing `flop_per_clk_sm` each per clock reach `peak_tflops`."""
    return peak_tflops * 1e12 / (sms * flop_per_clk_sm) / 1e6


def peak_at_clock(mhz: float, sms: int, flop_per_clk_sm: int) -> float:
    """The Tensor Core ceiling (TFLOP/s) of `sms` SMs at an SM clock of `mhz`."""
    return sms * flop_per_clk_sm * mhz * 1e6 / 1e12


def peak_clock_line(peak_tflops: float, sms: int, mhz: float, kind: str = "fp16") -> str:
    """One line for a lesson: the clock a Hopper datasheet peak of `kind` assumes, and the ceiling at `mhz`."""
    per = HOPPER_TC_FLOP_PER_CLK_SM[kind]
    return (f"the {peak_tflops:g} TFLOP/s peak = {sms} SMs x {per} FLOP per SM per clock x "
            f"{peak_clock_mhz(peak_tflops, sms, per):.0f} MHz; at {mhz:g} MHz the ceiling is "
            f"{peak_at_clock(mhz, sms, per):.0f} TFLOP/s")


def _words(s: str) -> list[str]:
    return re.findall(r"[A-Z0-9]+", s.upper())


def _has_phrase(words: list[str], phrase: str) -> bool:
    p = _words(phrase)
    return any(words[i:i + len(p)] == p for i in range(len(words) - len(p) + 1))


# Names that contain a key of the table but are other products, whose figures the table does not hold:
# the GeForce RTX 5090 D (a variant sold in China) is not the RTX 5090 of the whitepaper's appendix.
NOT_IN_TABLE: tuple[str, ...] = ("RTX 5090 D",)


def peaks_for(name: str) -> Peaks | None:
    """Peak rates for a GPU name as CUDA reports it ('NVIDIA H200', 'Tesla T4'), or None. Keys match whole
    words ('L4' does not match 'L40')."""
    words = _words(name)
    if any(_has_phrase(words, other) for other in NOT_IN_TABLE):
        return None
    for keys, peaks in PEAKS_TABLE:
        if all(_has_phrase(words, k) for k in keys):
            return peaks
    return None


def sweep_peaks(outcome, rec) -> dict:
    """The peak rates (Peaks' fields) of the GPU the sweep's rows come from: the record's, or this GPU's when
    measured live. A GPU not in PEAKS_TABLE gets None for every rate (no peak line is drawn) and a line saying so."""
    if not outcome.live:
        return dict(rec.meta["gpu"]["peaks"])
    g = backend().gpu
    if g.peaks:
        return dict(g.peaks.__dict__)
    print(f"{g.name}: its datasheet peaks are not in helpers/device.py's PEAKS_TABLE, so no peak line is drawn "
          "(add a row with the datasheet's dense figures to draw them)")
    return {"gpu": g.name, "fp32": None, "tf32": None, "fp16": None, "fp16_acc16": None, "bf16": None,
            "mem_gbs": g.mem_bw_gbs, "source": "not in the table"}


# --------------------------------------------------------------------------- backend
@dataclass(frozen=True)
class GPUInfo:
    name: str
    cc: tuple[int, int]
    sms: int
    l2_bytes: int
    mem_bytes: int
    mem_bw_gbs: float | None    # from the memory clock and bus width, when the driver reports them
    driver: str
    runtime: str
    nvrtc: str
    cupy: str
    peaks: Peaks | None

    @property
    def slug(self) -> str:
        """A file-name-safe name: 'NVIDIA H200' -> 'nvidia-h200'."""
        return "-".join("".join(c if c.isalnum() else " " for c in self.name.lower()).split())

    @property
    def sm(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"


@dataclass(frozen=True)
class Backend:
    name: str                 # 'gpu' or 'cpu'
    reason: str               # why this backend was chosen
    gpu: GPUInfo | None = None

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def label(self) -> str:
        return f"GPU {self.gpu.name}" if self.is_gpu else "CPU emulation"


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _probe_gpu() -> GPUInfo:
    import cupy
    from cupy.cuda import runtime

    if runtime.getDeviceCount() < 1:
        raise RuntimeError("no CUDA device visible")
    # a tiny computation proves that the driver, the runtime and CuPy work together
    if int(cupy.arange(4, dtype=cupy.int32).sum()) != 6:
        raise RuntimeError("a test computation on the GPU gave a wrong answer")
    dev = cupy.cuda.Device()
    props = runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    bw = None
    try:  # attribute 36 = memory clock (kHz), 37 = global memory bus width (bits)
        clk = runtime.deviceGetAttribute(36, dev.id)
        bus = runtime.deviceGetAttribute(37, dev.id)
        if clk and bus:
            bw = 2.0 * clk * 1e3 * bus / 8 / 1e9
    except Exception:
        pass
    try:
        nvrtc = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception:
        nvrtc = "unknown"
    return GPUInfo(name=name, cc=(int(props["major"]), int(props["minor"])), sms=int(props["multiProcessorCount"]),
                   l2_bytes=int(props["l2CacheSize"]), mem_bytes=int(props["totalGlobalMem"]), mem_bw_gbs=bw,
                   driver=_version(runtime.driverGetVersion()), runtime=_version(runtime.runtimeGetVersion()),
                   nvrtc=nvrtc, cupy=cupy.__version__, peaks=peaks_for(name))


_NO_GPU_FIX = ("unset COURSE_DEVICE (or set COURSE_DEVICE=cpu) to run on the CPU backend; or, on a "
               "machine with an NVIDIA GPU, check that `nvidia-smi` works and install the CuPy wheel "
               "that matches the driver's CUDA version (pip install cupy-cuda12x for CUDA 12.x drivers, "
               "cupy-cuda13x for CUDA 13.x).")


def _driver_cuda_version() -> str | None:
    """The CUDA version the installed NVIDIA driver supports ('12.4'), or None when no driver loads."""
    import ctypes

    for lib in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(lib)
        except OSError:
            continue
        v = ctypes.c_int(0)
        try:
            if cuda.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
                return _version(v.value)
        except Exception:
            return None
    return None


@lru_cache(maxsize=None)
def backend() -> Backend:
    """The backend for this process (decided once; restart the kernel after changing COURSE_DEVICE)."""
    choice = os.environ.get(ENV_VAR, "").strip().lower()
    if choice not in ("", "auto", "gpu", "cpu"):
        raise CourseError(f"{ENV_VAR}={choice!r} is not understood.",
                          f"set {ENV_VAR} to 'gpu', 'cpu' or leave it unset (auto).")
    if choice == "cpu":
        return Backend("cpu", f"{ENV_VAR}=cpu")
    try:
        info = _probe_gpu()
    except Exception as exc:  # ImportError, CUDARuntimeError, ...
        why = f"{type(exc).__name__}: {exc}".strip()
        # CUDA says "insufficient driver" both without any driver and with one too old for CuPy:
        # only a driver that answers makes it a mismatch
        drv = _driver_cuda_version() if is_driver_mismatch(why) else None
        mismatch = f" {DRIVER_MISMATCH} (driver: CUDA {drv})." if drv else ""
        if is_driver_mismatch(why) and not drv:
            # one statement: CUDA's own words ("driver version is insufficient") would say the opposite
            why = "no NVIDIA driver was found on this machine: the CUDA library libcuda does not load"
        if choice == "gpu":
            if mismatch:
                raise DriverMismatchError(f"{ENV_VAR}=gpu, but no CUDA GPU works here ({why}).{mismatch}",
                                          DRIVER_MISMATCH_FIX) from None
            raise NoGPUError(f"{ENV_VAR}=gpu, but no CUDA GPU works here ({why}).", _NO_GPU_FIX) from None
        return Backend("cpu", f"no usable CUDA GPU ({why})" + (f".{mismatch} Fix: {DRIVER_MISMATCH_FIX}"
                                                               if mismatch else ""))
    return Backend("gpu", f"{ENV_VAR}={choice or 'auto'}, CUDA GPU found", info)


def require_gpu(what: str) -> GPUInfo:
    """The GPU, or a NoGPUError explaining that `what` needs one."""
    b = backend()
    if not b.is_gpu:
        raise NoGPUError(f"{what} needs a CUDA GPU; this session runs on the CPU backend ({b.reason}).",
                         "run on a machine with an NVIDIA GPU; without one, the lessons show the recorded "
                         "GPU measurements from results/ (helpers.results.load_latest()).")
    return b.gpu


def summary(file=None) -> dict:
    """Print (and return) the environment: backend, GPU, versions and peak rates."""
    b = backend()
    rows = {"backend": f"{b.name.upper()} ({b.reason})"}
    if b.is_gpu:
        g = b.gpu
        rows.update({
            "GPU": f"{g.name}, compute capability {g.cc[0]}.{g.cc[1]} ({g.sm})",
            "SMs": str(g.sms),
            "L2 cache": f"{g.l2_bytes / 2**20:.0f} MiB",
            "memory": f"{g.mem_bytes / 2**30:.0f} GiB"
                      + (f", {g.mem_bw_gbs:.0f} GB/s from clock x bus width" if g.mem_bw_gbs else ""),
            "versions": f"CuPy {g.cupy}, CUDA runtime {g.runtime}, driver supports CUDA {g.driver}, NVRTC {g.nvrtc}",
        })
        p = g.peaks
        if p:
            rows["peak (dense)"] = (f"FP32 {p.fp32:g}, TF32 {p.tf32 or '-'}, FP16 {p.fp16 or '-'} "
                                    f"(FP16-acc {p.fp16_acc16 or '-'}), BF16 {p.bf16 or '-'} TFLOP/s; "
                                    f"{p.mem_gbs:g} GB/s [{p.source}]")
        else:
            rows["peak (dense)"] = "not in the course's table (helpers/device.py PEAKS_TABLE)"
    else:
        rows["note"] = ("kernels run as numpy emulations of their arithmetic; timings shown are "
                        "recorded GPU measurements from results/")
    rows["host"] = f"Python {platform.python_version()}, numpy {np.__version__}"
    width = max(map(len, rows))
    for k, v in rows.items():
        print(wrap(f"{k:<{width}} : {v}", indent=" " * (width + 3)), file=file)
    return rows
