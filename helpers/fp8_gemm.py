"""FP8 (E4M3) GEMM on the GPU for lesson 7: encoding, launching kernels/fp8*.cu, cuBLASLt FP8.

CuPy has no float8 dtype: an FP8 matrix travels as a uint8 array of its bytes (ml_dtypes'
float8_e4m3fn encoding, the same bits the Tensor Cores read). Both FP8 kernels take B transposed
(Bt, N x K row-major): wgmma reads 8-bit operands only K-major.

* ``encode_e4m3``: float array -> E4M3 bytes (round to nearest even; values past +-448 refused,
  because a cast would turn them into NaN: scale first, lesson 7).
* ``gemm_fp8(name, A8, Bt8)``: one of the registered FP8 kernels on the GPU.
* ``scaled_mm``: cuBLASLt's FP8 GEMM through PyTorch's ``torch._scaled_mm`` where PyTorch is
  installed (CuPy has no cuBLASLt; nvmath-python would also serve but is not on the course's GPU
  host); ``None`` otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

try:
    import ml_dtypes
    E4M3 = ml_dtypes.float8_e4m3fn
except ImportError:  # pragma: no cover - pinned dependency
    ml_dtypes = None
    E4M3 = None

E4M3_MAX = 448.0


@dataclass(frozen=True)
class Fp8Kernel:
    name: str
    file: str
    bn: int            # block tile columns (wgmma kernels)
    nc: int            # promotion to FP32 every nc products; 0: never
    min_cc: tuple
    what: str

    @property
    def wgmma(self) -> bool:
        return self.file == "fp8_sm90a.cu"

    @property
    def smem(self) -> int:
        return 4 * (128 * 128 + self.bn * 128) + 1024 + 128 if self.wgmma else 0


FP8_KERNELS = {k.name: k for k in [
    Fp8Kernel("fp8_mma_sync", "fp8.cu", 8, 0, (8, 9), "mma.sync m16n8k32, one warp per 16 x 8 tile, no reuse"),
    Fp8Kernel("fp8_wgmma", "fp8_sm90a.cu", 256, 0, (9, 0), "wgmma m64n256k32, 128 x 256 tiles (lesson 6's rung 11)"),
    Fp8Kernel("fp8_wgmma_n128", "fp8_sm90a.cu", 128, 0, (9, 0), "the same with 128 x 128 tiles"),
] + [Fp8Kernel(f"fp8_promote_{nc}", "fp8_sm90a.cu", 128, nc, (9, 0),
               f"128 x 128 tiles, partial sums promoted to FP32 every {nc} products") for nc in (32, 64, 128, 256, 512)]}
PROMOTE_NC = (32, 64, 128, 256, 512)


def encode_e4m3(X) -> np.ndarray:
    """The E4M3 bytes of X (rounded once, to nearest even) as uint8. Refuses NaN and values past +-448.
    (ml_dtypes' own cast from float64 rounds twice, through float32; helpers.fp8.cast does not.)"""
    from .fp8 import cast

    X = np.asarray(X, dtype=np.float64)
    if not np.isfinite(X).all() or (np.abs(X) > E4M3_MAX).any():
        bad = X[~(np.abs(X) <= E4M3_MAX)].ravel()
        raise InputError(f"values outside E4M3's range (e.g. {float(bad[0]):g}; E4M3 stops at 448, "
                         "and a cast turns what lies beyond, and NaN, into NaN).",
                         "scale the matrix first (lesson 7: divide by amax / 448) or clip it.")
    return np.asarray(cast(X, "fp8_e4m3"), dtype=np.float64).astype(E4M3).view(np.uint8)


def decode_e4m3(X8) -> np.ndarray:
    """float64 values of E4M3 bytes (a numpy uint8 array)."""
    return np.asarray(X8, dtype=np.uint8).view(E4M3).astype(np.float64)


def _require_bytes(X, what: str):
    if str(getattr(X, "dtype", "")) != "uint8" or getattr(X, "ndim", 0) != 2:
        raise InputError(f"{what} must be a 2-D uint8 array of E4M3 bytes, not {getattr(X, 'dtype', type(X))} "
                         f"with shape {getattr(X, 'shape', None)}.",
                         "encode it with helpers.fp8_gemm.encode_e4m3(X) (on the GPU: cupy.asarray of that).")


def unsupported(spec: Fp8Kernel, cc) -> str | None:
    """What a GPU of compute capability `cc` lacks to run `spec` ('sm_90 (Hopper: wgmma)', ...), or None."""
    cc = tuple(cc)
    if spec.wgmma and cc != (9, 0):
        return "sm_90 (Hopper: wgmma)"
    if cc < tuple(spec.min_cc):
        return "sm_89 or newer (Ada, Hopper: FP8 mma.sync)"
    return None


def require_runs_here(spec: Fp8Kernel, gpu) -> None:
    """ArchitectureError (one line: why; the fix: what to read instead) before CuPy or NVRTC is used."""
    need = unsupported(spec, gpu.cc)
    if need:
        from .errors import ArchitectureError

        raise ArchitectureError(f"{spec.name} needs {need}; this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}.",
                                "read the recorded H200 results in lesson 7, or set COURSE_DEVICE=cpu to run the "
                                "CPU model of the kernel's arithmetic.")


def launcher(name: str, A8, Bt8):
    """(run, C): a function that launches FP8 kernel `name` (FP8_KERNELS) on fixed inputs, and its output.
    A8: M x K, Bt8: N x K (B transposed), CuPy uint8 arrays of E4M3 bytes. Validated, padded with zeros
    (K to the kernel's multiple, N to 8) and the tensor maps built once, so timing run() times the kernel
    alone. C is M x N' FP32 (N' = N padded), filled with NaN before the first launch."""
    from .compile import get_arch_kernel, get_kernel
    from .device import require_gpu

    spec = FP8_KERNELS.get(name)
    if spec is None:
        raise InputError(f"no FP8 kernel {name!r}.", f"use one of {', '.join(FP8_KERNELS)}.")
    _require_bytes(A8, "A")
    _require_bytes(Bt8, "Bt")
    M, K = A8.shape
    N, K2 = Bt8.shape
    if K != K2:
        raise InputError(f"A is {M} x {K} and Bt is {N} x {K2}: both need K columns (Bt is B transposed).",
                         "pass Bt = B.T (N x K), contiguous.")
    gpu = require_gpu(f"FP8 kernel {name}")
    require_runs_here(spec, gpu)                    # before CuPy: a GPU that cannot run it gets one line
    import cupy

    mult = 16 if spec.wgmma else 32                 # TMA: 16-byte rows; mma.sync: 32 products per step
    Kp, Np = -(-K // mult) * mult, -(-N // 8) * 8
    A8, Bt8 = cupy.ascontiguousarray(A8), cupy.ascontiguousarray(Bt8)
    if Kp != K or Np != N:
        A8 = cupy.pad(A8, ((0, 0), (0, Kp - K)))
        Bt8 = cupy.pad(Bt8, ((0, Np - N), (0, Kp - K)))
    C = cupy.full((M, Np), np.nan, dtype=cupy.float32)
    if spec.wgmma:
        from .hopper import tensor_map_2d

        kern = get_arch_kernel(spec.file, name, (9, 0))
        if kern.max_dynamic_shared_size_bytes < spec.smem:
            kern.max_dynamic_shared_size_bytes = spec.smem
        # the maps hold A8's and Bt8's addresses: the closure below keeps those arrays alive
        args = (tensor_map_2d(A8, 128, 128), tensor_map_2d(Bt8, spec.bn, 128), C, np.int32(M), np.int32(Np),
                np.int32(Kp))
        grid = (min(-(-M // 128) * -(-Np // spec.bn), gpu.sms),)

        def run(keep=(A8, Bt8)):
            kern(grid, (384,), args, shared_mem=spec.smem)
    else:
        kern = get_kernel(spec.file, name, min_cc=spec.min_cc)
        args = (A8, Bt8, C, np.int32(M), np.int32(Np), np.int32(Kp))
        grid = (-(-Np // 16), -(-M // 32))

        def run():
            kern(grid, (128,), args)
    return run, C


def gemm_fp8(name: str, A8, Bt8):
    """C = A B on the GPU with FP8 kernel `name` (see launcher): one launch into a NaN-poisoned C, M x N."""
    run, C = launcher(name, A8, Bt8)
    run()
    return C if C.shape[1] == Bt8.shape[0] else C[:, :Bt8.shape[0]]


def torch_scaled_mm(A8, Bt8, fast_accum: bool):
    """cuBLASLt's FP8 GEMM (torch._scaled_mm, scales 1, FP32 output) on CuPy uint8 E4M3 bytes, as
    (launch function, output); None when PyTorch (with float8 support) is not installed."""
    try:
        import torch
    except ImportError:
        return None
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.from_dlpack(A8).view(torch.float8_e4m3fn)
    bt = torch.from_dlpack(Bt8).view(torch.float8_e4m3fn)
    one = torch.ones((), dtype=torch.float32, device=a.device)
    b = bt.t()                                           # K x N, column-major: what cuBLASLt's FP8 needs

    def go():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast_accum)

    out = go()
    return go, out


def cpu_model(kernel: str):
    """The CPU model (helpers.emulate) of FP8 kernel `kernel`: a function (A, B) -> C, B K x N."""
    from . import emulate as E

    if kernel == "fp8_mma_sync":
        return E.fp8_mma_sync_gemm
    nc = FP8_KERNELS[kernel].nc
    return lambda A, B: E.fp8_wgmma_gemm(A, B, nc=nc)


def matmul(kernel: str, A, B):
    """C = A B with FP8 kernel `kernel` (A: M x K, B: K x N, E4M3 values as floats): on the GPU where the
    kernel runs (an H200 / H100 for the wgmma kernels, sm_89+ for fp8_mma_sync), else with its CPU model
    (helpers.emulate). Returns (C as numpy float32, where it ran: one line)."""
    from .device import backend
    if kernel not in FP8_KERNELS:
        raise InputError(f"no FP8 kernel {kernel!r}.", f"use one of {', '.join(FP8_KERNELS)}.")
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs A's columns == B's rows.",
                         "pass A (M x K) and B (K x N); the kernels' transposed B is made here.")
    spec = FP8_KERNELS[kernel]
    b = backend()
    why = None
    if not b.is_gpu:
        why = "no GPU (CPU backend)"
    elif unsupported(spec, b.gpu.cc):
        why = f"{b.gpu.name} (sm_{b.gpu.cc[0]}{b.gpu.cc[1]}) cannot run {kernel}"
    if why is None:
        import cupy

        C = gemm_fp8(kernel, cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())))
        return cupy.asnumpy(C), f"ran on the {b.gpu.name}"
    C = cpu_model(kernel)(decode_e4m3(encode_e4m3(A)), decode_e4m3(encode_e4m3(B)))
    return np.asarray(C, dtype=np.float32), f"CPU model of the H200's arithmetic ({why})"
