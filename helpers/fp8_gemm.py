"""FP8 (E4M3) GEMM on the GPU for lesson 7: encoding, launching kernels/fp8*.cu, cuBLASLt FP8.

CuPy has no float8 dtype: an FP8 matrix travels as a uint8 array of its bytes (ml_dtypes'
float8_e4m3fn encoding, the same bits the Tensor Cores read). Both FP8 kernels take B transposed
(Bt, N x K row-major): wgmma reads 8-bit operands only K-major.

* ``encode_e4m3``: float array -> E4M3 bytes (round to nearest even; values past +-448 refused,
  because a cast would turn them into NaN: scale first, lesson 7).
* ``gemm_fp8(name, A8, Bt8)``: one of the registered FP8 kernels on the GPU.
* ``cublaslt_fp8``: cuBLASLt's FP8 GEMM (CuPy has no cuBLASLt), through NVIDIA's nvmath-python
  (``nvmath.linalg.advanced``, a public API) where it is installed, else through PyTorch's private
  ``torch._scaled_mm`` (``torch_scaled_mm``; its signature has changed between releases); it says
  which path ran. Both take the operands as PyTorch float8_e4m3fn views of the CuPy bytes: CuPy has
  no float8 dtype, and nvmath-python takes FP8 operands as PyTorch tensors.
* Block scaling (DeepSeek-V3, issue 26): ``fp8_block_scaled`` is fp8_promote_128 with scales applied at
  each promotion (sa: one per 1 x 128 tile of A, sb: one per 128 x 128 block of B). ``gemm_block_scaled``
  runs it (``block_scaled_launcher``; ``kernel_scales`` makes its scales from helpers.fp8's),
  ``block_scaled_model`` / ``block_scaled_model_gpu`` are its arithmetic, bit for bit, on the CPU and on
  CUDA cores, ``check_block_scaled`` judges a result (a worst-case bound, and the model); the front ends
  ``block_scaled_matmul`` and ``per_tensor_matmul`` take real data, and ``scaling_error_table`` compares
  the two on seeded inputs with outliers.
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
F8_EPI_BYTES = 2 * 2 * 64 * 32 * 4     # fp8_wgmma_store's C buffers: 2 consumers x 2 boxes of 64 x 32 floats


@dataclass(frozen=True)
class Fp8Kernel:
    name: str
    file: str
    bn: int            # block tile columns (wgmma kernels)
    nc: int            # promotion to FP32 every nc products; 0: never
    min_cc: tuple
    what: str
    stages: int = 4    # the wgmma kernels' ring as the record builds it (-DF8_STAGES when not the file's 4)
    tstore: bool = False   # C through shared memory and TMA stores (fp8_wgmma_store: a map of C, 32 KB more)
    ctas: int = 0      # the persistent grid's CTAs at most (0: one per SM); 128 where the record measured it faster

    @property
    def wgmma(self) -> bool:
        return self.file == "fp8_sm90a.cu"

    @property
    def smem(self) -> int:
        return self.smem_for(self.stages)

    def build_options(self, stages: int | None = None) -> tuple:
        """NVRTC options of a wgmma kernel built with `stages` stages (its own, by default)."""
        stages = self.stages if stages is None else stages
        return () if stages == 4 else (f"-DF8_STAGES={stages}",)

    def grid_ctas(self, sms: int) -> int:
        """The persistent grid's CTAs on a GPU with `sms` SMs, before the tile count caps it: one per SM, or
        `ctas` where the entry sets it (never more than the SMs: a persistent grid must be resident at once)."""
        return min(self.ctas, sms) if self.ctas else sms

    def smem_for(self, stages: int) -> int:
        """Dynamic shared memory with `stages` stages (F8_SMEM, + F8_EPI_BYTES for tstore, in kernels/fp8_sm90a.cu)."""
        if not self.wgmma:
            return 0
        return stages * (128 * 128 + self.bn * 128) + 1024 + 128 + (F8_EPI_BYTES if self.tstore else 0)


FP8_KERNELS = {k.name: k for k in [
    Fp8Kernel("fp8_mma_sync", "fp8.cu", 8, 0, (8, 9), "mma.sync m16n8k32, one warp per 16 x 8 tile, no reuse"),
    Fp8Kernel("fp8_wgmma", "fp8_sm90a.cu", 256, 0, (9, 0), "wgmma m64n256k32, 128 x 256 tiles (lesson 6's rung 11)"),
    Fp8Kernel("fp8_wgmma_n128", "fp8_sm90a.cu", 128, 0, (9, 0), "the same with 128 x 128 tiles"),
] + [Fp8Kernel(f"fp8_promote_{nc}", "fp8_sm90a.cu", 128, nc, (9, 0),
               f"128 x 128 tiles, partial sums promoted to FP32 every {nc} products") for nc in (32, 64, 128, 256, 512)]
  + [Fp8Kernel("fp8_promote_pingpong", "fp8_sm90a.cu", 128, 128, (9, 0),
               "fp8_promote_128 with the consumer warpgroups taking turns: one promotes while the other's "
               "wgmmas run"),
     Fp8Kernel("fp8_promote_2acc", "fp8_sm90a.cu", 128, 128, (9, 0),
               "fp8_promote_128 with two partial sums per warpgroup: K-tile kt - 1's is added while K-tile kt's "
               "wgmmas run"),
     Fp8Kernel("fp8_promote_2acc_lean", "fp8_sm90a.cu", 128, 128, (9, 0),
               "fp8_promote_2acc with descriptors advanced by adds and a ring of 6 stages, on 128 CTAs", stages=6,
               ctas=128),
     Fp8Kernel("fp8_wgmma_store", "fp8_sm90a.cu", 256, 0, (9, 0),
               "fp8_wgmma with C stored through shared memory and TMA, overlapping the next tile, on 128 CTAs",
               tstore=True, ctas=128)]}
# ctas=128 (session 19, results/logs/fp8-ctas-lean-probe-nvidia-h200.json, lab/probes/fp8_stages.py --ctas-lean):
# both kernels ran about 1% faster on 128 CTAs than on one per SM (132) at 4096^3 and 8192^3, correct bit for bit.
PROMOTE_NC = (32, 64, 128, 256, 512)
# Kernels written and registered (so probes can launch them) before the record holds them: each leaves this set when
# `python -m helpers.record --update-experiments fp8` (or lab/probes/fp8_pingpong.py with
# helpers.experiments.fp8.store_new_kernels) has measured it on a Hopper GPU. fp8_promote_2acc and
# fp8_promote_2acc_lean were recorded in session 13, fp8_wgmma_store (issue 26) in session 17
# (experiments.fp8.speed_store). Three kernels ran slower than the lean kernel and left the course (lesson 7, Appendix
# H): fp8_promote_2acc_store, the lean kernel with fp8_wgmma_store's epilogue (session 17, code in commit 30b1673),
# fp8_promote_2acc_cluster, the lean kernel in 2-CTA clusters sharing B (session 14, code in commit 6596698), and
# fp8_promote_2acc_144, the lean kernel with 128 x 144 tiles (session 27, code in commit 3a670f9).
PENDING: set[str] = set()


def _real_values(X, what: str) -> np.ndarray:
    """X as a float64 numpy array, refusing what is not real numbers (text, complex, booleans, objects,
    CuPy arrays) with an InputError that says what to pass."""
    if type(X).__module__.startswith("cupy"):
        raise InputError(f"{what} is a CuPy array; this takes numpy arrays of values.",
                         f"pass {what}.get() (or cupy.asnumpy({what})).")
    fix = f"pass {what} as real numbers: a numpy float array (np.float32 or np.float64), or nested lists of floats."
    try:
        arr = np.asarray(X) if not isinstance(X, np.ndarray) else X
    except (TypeError, ValueError) as exc:     # ragged nested lists, objects numpy cannot hold
        raise InputError(f"{what} is not an array of numbers ({exc}).", fix) from None
    kind = arr.dtype.kind
    ok = kind in "iuf" or (kind == "V" and arr.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"))
    if not ok:
        why = {"c": "complex (its imaginary part would be dropped)", "b": "booleans", "U": "text", "S": "text",
               "O": "not all numbers"}.get(kind, f"dtype {arr.dtype}")
        raise InputError(f"{what} is {why}: E4M3 encodes real numbers.", fix)
    return arr.astype(np.float64)


def encode_e4m3(X) -> np.ndarray:
    """The E4M3 bytes of X (rounded once, to nearest even) as uint8. Refuses NaN, values past +-448 and
    anything that is not real numbers (text, complex, booleans).
    (ml_dtypes' own cast from float64 rounds twice, through float32; helpers.fp8.cast does not.)"""
    from .fp8 import cast

    X = _real_values(X, "X")
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
    """What a GPU of compute capability `cc` lacks to run `spec`, or None. The wgmma kernels are sm_90a
    code: compute capability 9.0 exactly (wgmma exists on no later GPU: not on a B200, 10.0, nor an
    RTX 50, 12.0); FP8 mma.sync exists from sm_89 on (Ada, Hopper, and both Blackwells)."""
    cc = tuple(cc)
    if spec.wgmma and cc != (9, 0):
        return "sm_90a, i.e. a Hopper GPU (compute capability 9.0: wgmma exists on no other)"
    if cc < tuple(spec.min_cc):
        return "compute capability 8.9 or newer (sm_89: FP8 mma.sync, on Ada, Hopper and Blackwell)"
    return None


def require_runs_here(spec: Fp8Kernel, gpu) -> None:
    """ArchitectureError (one line: why; the fix: what to read instead) before CuPy or NVRTC is used."""
    need = unsupported(spec, gpu.cc)
    if need:
        from .errors import ArchitectureError

        raise ArchitectureError(f"{spec.name} needs {need}; this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}.",
                                "read the recorded H200 results in lesson 7, or set COURSE_DEVICE=cpu to run the "
                                "CPU model of the kernel's arithmetic.")


def _operand_shape(A8, Bt8) -> tuple[int, int, int]:
    """(M, N, K) of E4M3 byte operands A8 (M x K) and Bt8 (N x K, B transposed), or an InputError."""
    _require_bytes(A8, "A")
    _require_bytes(Bt8, "Bt")
    M, K = A8.shape
    N, K2 = Bt8.shape
    if K != K2:
        raise InputError(f"A is {M} x {K} and Bt is {N} x {K2}: both need K columns (Bt is B transposed).",
                         "pass Bt = B.T (N x K), contiguous.")
    return M, N, K


def launcher(name: str, A8, Bt8, stages: int | None = None, options: tuple = (), ctas: int | None = None):
    """(run, C): a function that launches FP8 kernel `name` (FP8_KERNELS) on fixed inputs, and its output.
    A8: M x K, Bt8: N x K (B transposed), CuPy uint8 arrays of E4M3 bytes. Validated, padded with zeros
    (K to the kernel's multiple, N to 8) and the tensor maps built once, so timing run() times the kernel
    alone. C is M x N' FP32 (N' = N padded), filled with NaN before the first launch. stages: the wgmma
    kernels' ring (-DF8_STAGES; the entry's own, 4 as the file has it but for fp8_promote_2acc_lean's 6), up to what
    fits in 227 KB (7 with 128 x 128 tiles).
    options: more NVRTC options for the wgmma kernels (a probe's -D switches). ctas: the most CTAs of a wgmma
    kernel's persistent grid (default: the entry's `grid_ctas`, one per SM but for the kernels set to 128); each walks
    every ctas-th tile."""
    from .compile import get_arch_kernel, get_kernel
    from .device import require_gpu

    spec = FP8_KERNELS.get(name)
    if spec is None:
        raise InputError(f"no FP8 kernel {name!r}.", f"use one of {', '.join(FP8_KERNELS)}.")
    M, N, K = _operand_shape(A8, Bt8)
    stages = spec.stages if stages is None else stages
    if stages != 4 and not (spec.wgmma and 2 <= stages and spec.smem_for(stages) <= 227 * 1024):
        raise InputError(f"{name} cannot run {stages} stages.",
                         "stages applies to the wgmma kernels: 2 up to what fits in 227 KB of shared memory "
                         "(7 with 128 x 128 tiles, 4 with 128 x 256).")
    if ctas is not None and (not spec.wgmma or isinstance(ctas, bool) or not isinstance(ctas, (int, np.integer))
                             or ctas < 1):
        raise InputError(f"ctas={ctas!r}: the persistent grid's size is a whole number >= 1, for a wgmma kernel.",
                         "leave ctas out (the kernel's own grid), or pass e.g. ctas=128 with a wgmma kernel.")
    gpu = require_gpu(f"FP8 kernel {name}")
    require_runs_here(spec, gpu)                    # before CuPy: a GPU that cannot run it gets one line
    if ctas is not None and ctas > gpu.sms:         # more would not all be resident: a persistent grid's point
        raise InputError(f"ctas={ctas}: more CTAs than this GPU's {gpu.sms} SMs hold at once (one each).",
                         f"pass at most ctas={gpu.sms}, or leave ctas out.")
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

        kern = get_arch_kernel(spec.file, name, (9, 0), options=spec.build_options(stages) + tuple(options))
        smem = spec.smem_for(stages)
        if kern.max_dynamic_shared_size_bytes < smem:
            kern.max_dynamic_shared_size_bytes = smem
        # the maps hold A8's and Bt8's addresses: the closure below keeps those arrays alive
        maps = (tensor_map_2d(A8, 128, 128), tensor_map_2d(Bt8, spec.bn, 128))
        if spec.tstore:                              # C's map: boxes of 64 rows x 32 floats (128 bytes)
            maps += (tensor_map_2d(C, 64, 32),)
        args = maps + (C, np.int32(M), np.int32(Np), np.int32(Kp))
        grid = (persistent_grid(spec, M, Np, spec.grid_ctas(gpu.sms) if ctas is None else int(ctas)),)

        def run(keep=(A8, Bt8, C)):
            kern(grid, (384,), args, shared_mem=smem)
    else:
        kern = get_kernel(spec.file, name, min_cc=spec.min_cc)
        args = (A8, Bt8, C, np.int32(M), np.int32(Np), np.int32(Kp))
        grid = (-(-Np // 16), -(-M // 32))

        def run():
            kern(grid, (128,), args)
    return run, C


def persistent_grid(spec: Fp8Kernel, M: int, Np: int, sms: int) -> int:
    """CTAs of a persistent wgmma kernel: `sms` (one per SM, or fewer as the caller asks), no more than its tiles."""
    return min(-(-M // 128) * -(-Np // spec.bn), sms)


def gemm_fp8(name: str, A8, Bt8):
    """C = A B on the GPU with FP8 kernel `name` (see launcher): one launch into a NaN-poisoned C, M x N."""
    run, C = launcher(name, A8, Bt8)
    run()
    return C if C.shape[1] == Bt8.shape[0] else C[:, :Bt8.shape[0]]


def _fp8_views(torch, A8, Bt8):
    """A (M x K, row-major) and B = Bt^T (K x N, column-major) as PyTorch float8_e4m3fn views of CuPy
    uint8 E4M3 bytes, without a copy: K is contiguous in both, the layout cuBLASLt's FP8 GEMM takes."""
    a = torch.from_dlpack(A8).view(torch.float8_e4m3fn)
    b = torch.from_dlpack(Bt8).view(torch.float8_e4m3fn).t()
    return a, b


def nvmath_fp8(A8, Bt8, fast_accum: bool):
    """cuBLASLt's FP8 GEMM through nvmath-python's public API on CuPy uint8 E4M3 bytes: the stateful form
    of ``nvmath.linalg.advanced.matmul`` (``Matmul``, planned once, so that timing launch() times the
    product alone), quantization scales 1 for A and B, FP32 result and FP32 compute type, cuBLASLt's
    fast accumulation on or off. (launch function, output), or None when nvmath-python, or PyTorch with
    float8 (whose tensors carry nvmath-python's FP8 operands), is not installed."""
    try:
        import nvmath
        import torch
    except ImportError:
        return None
    if not hasattr(torch, "float8_e4m3fn"):
        return None
    a, b = _fp8_views(torch, A8, Bt8)
    mm = nvmath.linalg.advanced.Matmul(
        a, b, quantization_scales={"a": 1.0, "b": 1.0},
        options={"result_type": nvmath.CudaDataType.CUDA_R_32F, "compute_type": nvmath.linalg.ComputeType.COMPUTE_32F,
                 "fast_accumulation": bool(fast_accum)})
    mm.plan()

    def go():
        return mm.execute()

    go.matmul = mm                       # the planned product lives as long as its launch function
    out = go()
    return go, out


def torch_scaled_mm(A8, Bt8, fast_accum: bool):
    """cuBLASLt's FP8 GEMM (torch._scaled_mm, scales 1, FP32 output) on CuPy uint8 E4M3 bytes, as
    (launch function, output); None when PyTorch (with float8 support) is not installed."""
    try:
        import torch
    except ImportError:
        return None
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return None
    a, b = _fp8_views(torch, A8, Bt8)
    one = torch.ones((), dtype=torch.float32, device=a.device)

    def go():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast_accum)

    out = go()
    return go, out


CUBLASLT_PATHS = {"nvmath": nvmath_fp8, "torch": torch_scaled_mm}   # in the order cublaslt_fp8 tries them


def path_name(path: str) -> str:
    """What a recorded row says ran: the library, its version and the call."""
    from importlib import metadata

    dist, mod, call = {"nvmath": ("nvmath-python", "nvmath", "nvmath.linalg.advanced.Matmul"),
                       "torch": ("torch", "torch", "torch._scaled_mm")}[path]
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        version = getattr(__import__(mod), "__version__", "?")
    return f"{'PyTorch' if path == 'torch' else dist} {version}: {call}"


def cublaslt_fp8(A8, Bt8, fast_accum: bool, paths=tuple(CUBLASLT_PATHS)):
    """cuBLASLt's FP8 GEMM (scales 1, FP32 output) on CuPy uint8 E4M3 bytes (A8: M x K, Bt8: N x K) by the
    first of `paths` that is installed and works: nvmath-python, then PyTorch. Returns (launch function,
    output, path): `path` names the library, version and call that ran (path_name), and the failure of
    a path tried before it; None when none is installed. Raises RuntimeError when those installed all
    failed."""
    failed = []
    for p in paths:
        try:
            got = CUBLASLT_PATHS[p](A8, Bt8, fast_accum)
        except Exception as exc:  # noqa: BLE001 - fall back to the next path, and say so
            failed.append(f"{path_name(p)} failed: {type(exc).__name__}: {exc}"[:300])
            continue
        if got is not None:
            go, out = got
            return go, out, path_name(p) + (f" ({'; '.join(failed)})" if failed else "")
    if failed:
        raise RuntimeError("; ".join(failed))
    return None


def cpu_model(kernel: str):
    """The CPU model (helpers.emulate) of FP8 kernel `kernel`: a function (A, B) -> C, B K x N."""
    from . import emulate as E

    if kernel == "fp8_mma_sync":
        return E.Arithmetic("fp8_e4m3", "fp32", E.DEFAULT_TC_MODEL, pairs=True)       # E.fp8_mma_sync_gemm
    return E.Arithmetic("fp8_e4m3", "fp32", E.FP8_WGMMA_MODEL, nc=FP8_KERNELS[kernel].nc)   # E.fp8_wgmma_gemm


def matmul(kernel: str, A, B):
    """C = A B with FP8 kernel `kernel` (A: M x K, B: K x N, E4M3 values as floats): on the GPU where the
    kernel runs (an H200 / H100 for the wgmma kernels, sm_89+ for fp8_mma_sync), else with its CPU model
    (helpers.emulate). Returns (C as numpy float32, where it ran: one line)."""
    from .device import backend
    if not isinstance(kernel, str) or kernel not in FP8_KERNELS:
        raise InputError(f"no FP8 kernel {kernel!r}.", f"use one of {', '.join(FP8_KERNELS)}.")
    A = _real_values(A, "A")
    B = _real_values(B, "B")
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


# --------------------------------------------------------------------------- block scaling (issue 26)
# DeepSeek-V3's recipe (arXiv:2412.19437, sec. 3.3.2): activations scaled per 1 x 128 tile, weights per
# 128 x 128 block, and the scales applied where fp8_promote_128 promotes its partial sums (one K-tile of
# 128 = one scale block). The kernel takes two more arguments than the others (its scales), so it has its
# own registry and front ends; FP8_KERNELS and everything that walks it stay as they were.
SCALE_BLOCK = 128              # K per scale block = K per promotion = F8_BK; N per weight block = BN
BLOCK_SCALED = Fp8Kernel("fp8_block_scaled", "fp8_sm90a.cu", 128, 128, (9, 0),
                         "fp8_promote_128 with DeepSeek-V3's scales at promotion: 1 x 128 activation tiles, "
                         "128 x 128 weight blocks")
SCALED_KERNELS = {BLOCK_SCALED.name: BLOCK_SCALED}
TABLE_SHAPE = (256, 256, 1024)     # the error table's product (M, N, K): 8 K-blocks, 8 x 2 weight blocks


def _blocks(n: int) -> int:
    return -(-int(n) // SCALE_BLOCK)


def check_scales(sa, sb, M: int, N: int, K: int):
    """Refuse scales the kernel cannot use, with the fix: sa (M x ceil(K/128)) and sb (ceil(N/128) x
    ceil(K/128)), float32, numpy or CuPy, every value finite and > 0. Returns them unchanged."""
    kb, nb = _blocks(K), _blocks(N)
    for X, what, shape, layout in ((sa, "sa", (M, kb), "[row][k // 128]"),
                                   (sb, "sb", (nb, kb), "[n // 128][k // 128]")):
        if not (isinstance(X, np.ndarray) or type(X).__module__.startswith("cupy")):
            raise InputError(f"{what} is {type(X).__name__}, not an array of scales.",
                             f"pass {what} as a float32 numpy or CuPy array of shape {shape} ({layout}); "
                             "helpers.fp8_gemm.kernel_scales makes both from helpers.fp8's quantize_tiles and "
                             "quantize_blocks.")
        if X.dtype != np.float32:
            raise InputError(f"{what} is {X.dtype}; the kernel reads float32 scales.",
                             f"pass {what}.astype(np.float32) (the model then rounds exactly as the kernel reads).")
        if tuple(X.shape) != shape:
            hint = ""
            if what == "sb" and tuple(X.shape) == (kb, nb):
                hint = (" It has the layout [k // 128][n // 128] of helpers.fp8.quantize_blocks(B).scale for B"
                        " (K x N); the kernel indexes its weight blocks as Bt's, [n // 128][k // 128].")
                fix = "pass np.ascontiguousarray(sb.T) (helpers.fp8_gemm.kernel_scales does it)."
            elif what == "sa" and tuple(X.shape) == (kb, M):
                hint = " It looks transposed."
                fix = "pass np.ascontiguousarray(sa.T): one row of scales per row of A."
            else:
                per = "1 x 128 tile of A" if what == "sa" else "128 x 128 block of B"
                fix = (f"pass {what} of shape {shape}: one scale per {per}"
                       f" ({layout}); a last tile or block that is partial (K = {K}, N = {N}) still has its scale.")
            raise InputError(f"{what} has shape {tuple(X.shape)}, but A is {M} x {K} and B is {K} x {N}: "
                             f"{what} must be {shape[0]} x {shape[1]}.{hint}", fix)
        xp = np if isinstance(X, np.ndarray) else __import__("cupy")
        finite = xp.isfinite(X)
        if not bool(finite.all()):
            raise InputError(f"{what} holds {int((~finite).sum())} inf/NaN scale(s).",
                             "compute each scale as amax / 448 of a finite tile or block (an all-zero one gets 1).")
        if not bool((X > 0).all()):
            raise InputError(f"{what} holds {int((X <= 0).sum())} scale(s) <= 0: a scale multiplies a partial sum, "
                             "so 0 erases its block and a negative one flips its sign.",
                             "use amax / 448 for each tile or block, and 1 for a block of zeros.")
    return sa, sb


def kernel_scales(a, b):
    """The kernel's (sa, sb) from helpers.fp8's scaled operands: a = quantize_tiles(A) (1 x 128 tiles of
    A, M x K), b = quantize_blocks(B) (128 x 128 blocks of B, K x N). helpers.fp8's scale multiplies the
    data before the cast (q = fp8(x * scale)), so the kernel's factor is 1 / scale, rounded to float32;
    and b.scale is indexed [k // 128][n // 128], which is transposed here to the kernel's [n // 128][k // 128]
    (the kernel reads Bt, N x K). Returns float32 arrays M x ceil(K/128) and ceil(N/128) x ceil(K/128)."""
    from .fp8 import ACTIVATION_TILE, WEIGHT_BLOCK, Scaled

    for s, what, group, fn in ((a, "a", ACTIVATION_TILE, "quantize_tiles(A)"),
                               (b, "b", WEIGHT_BLOCK, "quantize_blocks(B)")):
        if not isinstance(s, Scaled) or tuple(s.group) != tuple(group):
            raise InputError(f"{what} is not scaled in {group[0]} x {group[1]} groups.",
                             f"make it with helpers.fp8.{fn}.")
    sa = (1.0 / a.scale).astype(np.float32)
    sb = np.ascontiguousarray((1.0 / b.scale).T).astype(np.float32)
    return sa, sb


def block_scaled_launcher(A8, Bt8, sa, sb):
    """(run, C) for fp8_block_scaled: A8 (M x K) and Bt8 (N x K) E4M3 bytes, sa (M x ceil(K/128)) and sb
    (ceil(N/128) x ceil(K/128)) float32 scales (check_scales; kernel_scales makes them from helpers.fp8's),
    numpy or CuPy. Validated before anything touches a GPU; padded as `launcher` pads (K to 16, N to 8,
    which changes neither ceil(K/128) nor ceil(N/128)); C (M x N' FP32) filled with NaN first."""
    from .compile import get_arch_kernel
    from .device import require_gpu

    spec = BLOCK_SCALED
    M, N, K = _operand_shape(A8, Bt8)
    if M == 0 or N == 0 or K == 0:
        raise InputError(f"A is {M} x {K} and Bt is {N} x {K}: an empty product.", "pass non-empty matrices.")
    check_scales(sa, sb, M, N, K)
    gpu = require_gpu(f"FP8 kernel {spec.name}")
    require_runs_here(spec, gpu)
    import cupy

    from .hopper import tensor_map_2d

    Kp, Np = -(-K // 16) * 16, -(-N // 8) * 8
    A8, Bt8 = cupy.ascontiguousarray(cupy.asarray(A8)), cupy.ascontiguousarray(cupy.asarray(Bt8))
    if Kp != K or Np != N:
        A8 = cupy.pad(A8, ((0, 0), (0, Kp - K)))
        Bt8 = cupy.pad(Bt8, ((0, Np - N), (0, Kp - K)))
    sa_d = cupy.ascontiguousarray(cupy.asarray(sa, dtype=cupy.float32))
    sb_d = cupy.ascontiguousarray(cupy.asarray(sb, dtype=cupy.float32))
    C = cupy.full((M, Np), np.nan, dtype=cupy.float32)
    kern = get_arch_kernel(spec.file, spec.name, (9, 0))
    if kern.max_dynamic_shared_size_bytes < spec.smem:
        kern.max_dynamic_shared_size_bytes = spec.smem
    args = (tensor_map_2d(A8, 128, 128), tensor_map_2d(Bt8, spec.bn, 128), C, np.int32(M), np.int32(Np),
            np.int32(Kp), sa_d, sb_d)
    grid = (persistent_grid(spec, M, Np, gpu.sms),)

    def run(keep=(A8, Bt8, sa_d, sb_d)):
        kern(grid, (384,), args, shared_mem=spec.smem)
    return run, C


def gemm_block_scaled(A8, Bt8, sa, sb):
    """C = sum over K-blocks of (A8 B8 of the block) x sa x sb on the GPU (fp8_block_scaled; see
    block_scaled_launcher): one launch into a NaN-poisoned C, M x N float32 (CuPy)."""
    run, C = block_scaled_launcher(A8, Bt8, sa, sb)
    run()
    return C if C.shape[1] == Bt8.shape[0] else C[:, :Bt8.shape[0]]


def _model_operands(A, B, sa, sb, xp):
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs A's columns == B's rows.",
                         "pass A (M x K) and B (K x N): the model takes B itself, the kernel its transpose.")
    M, K = A.shape
    N = B.shape[1]
    check_scales(sa, sb, M, N, K)
    return M, N, K


def block_scaled_model(A, B, sa, sb, *, threads: int | None = None) -> np.ndarray:
    """fp8_block_scaled's arithmetic on the CPU, bit for bit (A: M x K, B: K x N, E4M3 values; sa, sb the
    kernel's float32 scales). For each K-block kb of 128 (the last may be shorter: the kernel's zeros past
    K add nothing): the partial sum P of its products from a zero accumulator, as the FP8 wgmma computes
    it (helpers.emulate.tensor_core_mma with FP8_WGMMA_MODEL: 32 products per step, 14 bits cut toward
    zero; fp8_promote_128's model); the scale product s = f32(sa[i][kb] * sb[j // 128][kb]); then
    total = f32(total + f32(P * s)), starting from total = +0, in K-block order: numpy's float32 multiply
    and add round to nearest once each, as __fmul_rn and __fadd_rn do. (A partial of -0.0 gives +0.0 in
    the total, in the kernel too: +0 + -0 = +0.)"""
    from . import emulate as E

    A = E._as_fp8_values(A, "A")
    B = E._as_fp8_values(B, "B")
    M, N, K = _model_operands(A, B, sa, sb, np)
    sa, sb = np.asarray(sa, dtype=np.float32), np.asarray(sb, dtype=np.float32)
    col_block = np.arange(N) // SCALE_BLOCK
    total = np.zeros((M, N), dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for kb in range(_blocks(K)):
            k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
            part = E.tensor_core_mma(A[:, k0:k1], B[k0:k1], None, inputs="fp8_e4m3", acc="fp32",
                                     model=E.FP8_WGMMA_MODEL, threads=threads).astype(np.float32)
            s = sa[:, kb][:, None] * sb[:, kb][None, :]            # float32 x float32: M x ceil(N/128), rounded
            total = total + part * s[:, col_block]                 # two float32 operations, two roundings
    return total


def block_scaled_model_gpu(A, B, sa, sb):
    """block_scaled_model on the GPU, for CuPy arrays (A: M x K, B: K x N, E4M3 values, any float dtype;
    sa, sb float32): each K-block's partial sum by helpers.model_gpu.tc_model (the check's CUDA-core model
    of the FP8 wgmma, kernels/check_model.cu), then the same float32 multiply and add, each its own CuPy
    kernel (no contraction into an FMA). Returns a CuPy float32 array."""
    import cupy

    from .emulate import FP8_WGMMA_MODEL
    from .model_gpu import tc_model

    Av, Bv = cupy.asarray(A, dtype=cupy.float64), cupy.asarray(B, dtype=cupy.float64)
    M, N, K = _model_operands(Av, Bv, sa, sb, cupy)
    sa, sb = cupy.asarray(sa, dtype=cupy.float32), cupy.asarray(sb, dtype=cupy.float32)
    col_block = cupy.arange(N) // SCALE_BLOCK
    total = cupy.zeros((M, N), dtype=cupy.float32)
    term = cupy.empty((M, N), dtype=cupy.float32)
    for kb in range(_blocks(K)):
        k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
        part = tc_model(cupy.ascontiguousarray(Av[:, k0:k1]), cupy.ascontiguousarray(Bv[k0:k1]), FP8_WGMMA_MODEL,
                        inputs="fp8_e4m3", acc="fp32").astype(cupy.float32)
        s = sa[:, kb][:, None] * sb[:, kb][None, :]
        cupy.multiply(part, s[:, col_block], out=term)
        cupy.add(total, term, out=total)
        del part
    return total


# ------------------------------------------------------------------ the check of a block-scaled product
E4M3_TINY = 2.0 ** -6          # E4M3's smallest normal number (frexp exponent -5: what a subnormal counts as)
_F32_U, _F32_ETA = 2.0 ** -24, 2.0 ** -149   # FP32: unit roundoff (to nearest); an absolute error below normal


def _partial_bound(Ab, Bb, xp):
    """(P, E): the exact partial sum of one K-block (float64: products of E4M3 numbers are multiples of
    2^-18 below 2^18, so 128 of them add exactly) and a worst-case bound E on |P^ - P| for the FP8 wgmma's
    P^ (helpers.emulate's model, for any data): per step of 32 products plus the accumulator, each term
    loses less than one unit 2^(emax - 14) when aligned, where 2^emax <= 2 max(|a| |b| over the step,
    with a subnormal counted as 2^-6, |accumulator|), and the 14-bit cut of the sum loses less than
    2^-13 of it."""
    M, Kb = Ab.shape
    N = Bb.shape[1]
    P = xp.zeros((M, N))
    E = xp.zeros((M, N))
    w = 2.0 ** -13
    for k0 in range(0, Kb, 32):
        a, b = Ab[:, k0:k0 + 32], Bb[k0:k0 + 32]
        n = a.shape[1]
        am = xp.where(a != 0, xp.maximum(xp.abs(a), E4M3_TINY), 0.0).max(axis=1)
        bm = xp.where(b != 0, xp.maximum(xp.abs(b), E4M3_TINY), 0.0).max(axis=0)
        unit = w * xp.maximum(am[:, None] * bm[None, :], xp.abs(P) + E)
        P += a @ b
        E += (n + 1) * unit
        E += w * (xp.abs(P) + E)
    return P, E


@dataclass
class BlockScaledCheck:
    """The verdict on a block-scaled product: no NaN, every element within the worst-case bound of the
    exact product of the numbers the kernel multiplies (check_block_scaled), and (where compared) bit for
    bit the model's."""
    name: str
    shape: tuple
    n_nan: int
    n_over: int                   # elements over the bound (NaN not counted)
    bound_ratio: float            # max |C - R| / bound (<= 1 passes)
    first_over: tuple | None      # (i, j, got, exact) of the worst element
    model: str                    # 'identical', 'differs' or 'none' (not compared)
    model_cells: int = 0
    model_mismatch: int = 0
    model_first: tuple | None = None   # (i, j, got, model)
    model_where: str = ""

    @property
    def passed(self) -> bool:
        return self.n_nan == 0 and self.n_over == 0 and self.model != "differs"

    def __bool__(self):
        return self.passed

    def verdict(self) -> str:
        """One line without measured numbers when it passes."""
        M, N, K = self.shape
        head = f"{self.name} M={M} N={N} K={K}"
        model = (f"; bit-identical to the model (all {self.model_cells} elements, {self.model_where})"
                 if self.model == "identical" else "")
        if self.passed:
            return f"PASS {head}: every element within the worst-case bound{model}"
        why = []
        if self.n_nan:
            why.append(f"{self.n_nan} NaN (unwritten?)")
        if self.n_over:
            i, j, got, exact = self.first_over
            why.append(f"{self.n_over} elements over the bound (worst at ({i}, {j}): {got!r}, exact {exact!r})")
        if self.model == "differs":
            i, j, got, mod = self.model_first
            why.append(f"{self.model_mismatch} of {self.model_cells} elements unlike the model (first at ({i}, {j}): "
                       f"{got!r}, model {mod!r})")
        return f"FAIL {head}: " + "; ".join(why) + model


def block_scaled_bound(A, B, sa, sb):
    """(R, bound): the exact product R = sum over K-blocks of s P of what fp8_block_scaled multiplies (A: M x K,
    B: K x N, E4M3 values; P each K-block's exact partial sum, s = sa sb in float64, exact) and a worst-case
    bound on |C - R| for its C, for any data: the wgmma's error on each P (_partial_bound), then the float32
    roundings of s, of P^ s and of each add to the total (unit roundoff 2^-24, and 2^-149 more below the
    normal range), propagated in K-block order with the running total's size; plus the float64 rounding of R
    itself. numpy or CuPy (then on the GPU); float64 arrays M x N."""
    xp = np if isinstance(A, np.ndarray) else __import__("cupy")
    A64, B64 = xp.asarray(A, dtype=xp.float64), xp.asarray(B, dtype=xp.float64)
    M, N, K = _model_operands(A64, B64, sa, sb, xp)
    s_a, s_b = xp.asarray(sa, dtype=xp.float64), xp.asarray(sb, dtype=xp.float64)
    col_block = xp.arange(N) // SCALE_BLOCK
    u, eta = _F32_U, _F32_ETA
    R = xp.zeros((M, N))
    absR = xp.zeros((M, N))                    # sum of |s P|: what R's own float64 rounding scales with
    Et = xp.zeros((M, N))
    for kb in range(_blocks(K)):
        k0, k1 = kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK)
        P, eP = _partial_bound(A64[:, k0:k1], B64[k0:k1], xp)
        s = (s_a[:, kb][:, None] * s_b[:, kb][None, :])[:, col_block]      # exact: 24 x 24 bits
        s_hat = s * (1 + u) + eta                                            # |f32(s)| at most
        Et += eP * s_hat + xp.abs(P) * (u * s + eta) + u * (xp.abs(P) + eP) * s_hat + eta   # f32(P^ f32(s))
        R += s * P
        absR += xp.abs(s * P)
        Et += u * (xp.abs(R) + Et) + eta                                     # the add to the total
        del P, eP, s, s_hat
    Et += 4.0 * (_blocks(K) + 2) * 2.0 ** -53 * absR
    return R, Et


def check_block_scaled(C, A, B, sa, sb, *, model: bool = True, name: str = "fp8_block_scaled") -> BlockScaledCheck:
    """Is C a right answer of fp8_block_scaled for A (M x K), B (K x N) (E4M3 values) and its scales sa, sb?
    numpy, or CuPy (then every step, the model included, runs on the GPU).

    1. No NaN, and every element within the worst-case bound of block_scaled_bound around the exact
       product of what the kernel multiplies. Wrong scales (ignored, transposed, misindexed, one per tensor)
       and wrong sums leave it.
    2. model=True: C equal to block_scaled_model (numpy) or block_scaled_model_gpu (CuPy), every element,
       bit for bit: one element one unit off fails here (no bound can see that)."""
    if not (isinstance(C, np.ndarray) or type(C).__module__.startswith("cupy")) or C.dtype.kind != "f":
        raise InputError(f"C is {type(C).__name__} {getattr(C, 'dtype', '')}, not the kernel's float output.",
                         "pass the float32 array gemm_block_scaled (or block_scaled_model) returned.")
    xp = np if isinstance(C, np.ndarray) else __import__("cupy")
    A64, B64 = xp.asarray(A, dtype=xp.float64), xp.asarray(B, dtype=xp.float64)
    M, N, K = _model_operands(A64, B64, sa, sb, xp)
    if tuple(C.shape) != (M, N):
        raise InputError(f"C has shape {tuple(C.shape)}, but A B is {M} x {N}.",
                         "pass the kernel's output cropped to M x N (gemm_block_scaled returns it so).")
    R, Et = block_scaled_bound(A64, B64, sa, sb)
    C64 = C.astype(xp.float64)
    n_nan = int(xp.isnan(C64).sum())
    diff = xp.abs(C64 - R)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = xp.where(Et > 0, diff / xp.where(Et > 0, Et, 1.0), xp.where(diff > 0, xp.inf, 0.0))
    ratio = xp.where(xp.isnan(C64), 0.0, ratio)
    over = ratio > 1.0
    n_over = int(over.sum())
    worst = int(xp.argmax(ratio.ravel()))
    i, j = divmod(worst, N)
    first = (i, j, float(C64[i, j]), float(R[i, j])) if n_over else None
    chk = BlockScaledCheck(name, (M, N, K), n_nan, n_over, float(ratio.max()) if ratio.size else 0.0, first, "none")
    if model:
        Em = (block_scaled_model(A64, B64, sa, sb) if xp is np else block_scaled_model_gpu(A64, B64, sa, sb))
        Em = Em.astype(xp.float64)
        differ = ~((C64 == Em) | (xp.isnan(C64) & xp.isnan(Em)))
        chk.model_cells, chk.model_mismatch = int(C64.size), int(differ.sum())
        chk.model, chk.model_where = ("differs" if chk.model_mismatch else "identical"), ("CPU" if xp is np else "GPU")
        if chk.model_mismatch:
            r, c = divmod(int(xp.argmax(differ.ravel())), N)
            chk.model_first = (r, c, float(C64[r, c]), float(Em[r, c]))
    return chk


# ------------------------------------------------------------------ front ends: real data in, real units out
def block_scaled_operands(A, B):
    """A (M x K) per 1 x 128 tile and B (K x N) per 128 x 128 block (helpers.fp8.quantize_tiles /
    quantize_blocks, amax to 448), zero-padded to multiples of 128 for the scaling (zeros change no amax)
    and cropped back. Returns (Aq, Bq, sa, sb): E4M3 values M x K and K x N (float64) and the kernel's
    scales (kernel_scales): A B ~ the block-scaled product of Aq, Bq."""
    from .fp8 import quantize_blocks, quantize_tiles

    A, B = _real_values(A, "A"), _real_values(B, "B")
    _matmul_shapes(A, B)
    M, K = A.shape
    N = B.shape[1]
    Kp, Np = _blocks(K) * SCALE_BLOCK, _blocks(N) * SCALE_BLOCK
    a = quantize_tiles(np.pad(A, ((0, 0), (0, Kp - K))))
    b = quantize_blocks(np.pad(B, ((0, Kp - K), (0, Np - N))))
    sa, sb = kernel_scales(a, b)
    return a.q.astype(np.float64)[:, :K], b.q.astype(np.float64)[:K, :N], sa, sb


def per_tensor_operands(A, B):
    """A and B with one scale each (helpers.fp8.quantize_per_tensor): (Aq, Bq, sa, sb), sa and sb float32
    numbers (1 / scale): A B ~ (Aq Bq) sa sb."""
    from .fp8 import quantize_per_tensor

    A, B = _real_values(A, "A"), _real_values(B, "B")
    _matmul_shapes(A, B)
    a, b = quantize_per_tensor(A), quantize_per_tensor(B)
    return (a.q.astype(np.float64), b.q.astype(np.float64), np.float32(1.0 / a.scale.flat[0]),
            np.float32(1.0 / b.scale.flat[0]))


def _matmul_shapes(A, B):
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0] or 0 in A.shape or 0 in B.shape:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs non-empty matrices, A's columns == "
                         "B's rows.", "pass A (M x K) and B (K x N); the kernels' transposed B is made here.")


def _where(spec) -> tuple[str | None, object]:
    from .device import backend

    b = backend()
    if not b.is_gpu:
        return "no GPU (CPU backend)", b
    if unsupported(spec, b.gpu.cc):
        return f"{b.gpu.name} (sm_{b.gpu.cc[0]}{b.gpu.cc[1]}) cannot run {spec.name}", b
    return None, b


def block_scaled_matmul(A, B):
    """C ~ A B (A: M x K, B: K x N, real numbers) the DeepSeek-V3 way: A scaled per 1 x 128 tile, B per
    128 x 128 block, both cast to E4M3, and the scales applied at every promotion (fp8_block_scaled) on
    the GPU where it runs (a Hopper, sm_90), else its CPU model, bit for bit the same. Returns (C as numpy
    float32 in A B's units, where it ran: one line)."""
    Aq, Bq, sa, sb = block_scaled_operands(A, B)
    why, b = _where(BLOCK_SCALED)
    if why is None:
        import cupy

        C = gemm_block_scaled(cupy.asarray(encode_e4m3(Aq)), cupy.asarray(encode_e4m3(Bq.T.copy())), sa, sb)
        return cupy.asnumpy(C), f"ran on the {b.gpu.name}"
    return block_scaled_model(Aq, Bq, sa, sb), f"CPU model of the H200's arithmetic ({why})"


def per_tensor_matmul(A, B):
    """The per-tensor counterpart of block_scaled_matmul: one scale for A and one for B, the same kernel
    tile and promotion every 128 products (fp8_promote_128), then C = f32(f32(Aq Bq) x f32(sa sb)).
    Returns (C as numpy float32 in A B's units, where it ran)."""
    Aq, Bq, sa, sb = per_tensor_operands(A, B)
    C, where = matmul("fp8_promote_128", Aq, Bq)
    return np.asarray(C, dtype=np.float32) * (sa * sb), where      # float32 x float32, rounded to nearest


# ------------------------------------------------------------------ the error table
SCALING_INPUTS = ("normal", "outlier activations", "varied weight blocks")
MASSIVE_ROWS, OUTLIERS = 4, 8       # 'outlier activations': rows x 2^16, single entries +-2^17
SCALINGS = ("per tensor", "1x128 tiles, 128x128 blocks")


def scaling_inputs(kind: str, M: int = TABLE_SHAPE[0], N: int = TABLE_SHAPE[1], K: int = TABLE_SHAPE[2],
                   seed: int = 0):
    """Seeded float64 A (M x K, activations) and B (K x N, weights) of one kind:
    'normal': both N(0,1);
    'outlier activations': A as LLM activations can be: N(0,1), with a few massive tokens (MASSIVE_ROWS rows
      x 2^16) and a few single outliers (OUTLIERS entries of +-2^17, helpers.fp8.outlier_matrix); B N(0,1).
      One scale for all of A maps the ordinary values below E4M3's normal range (2^-6 .. 448: about 15
      binades), where they keep few bits or none;
    'varied weight blocks': A N(0,1); B N(0,1) with each 128 x 128 block multiplied by a power of two: the
      column blocks 2^0 down to 2^-16 (evenly spaced), each block a further 2^-2 .. 2^2 (seeded): output
      channels whose weights are 16 binades apart."""
    from .fp8 import outlier_matrix

    if kind not in SCALING_INPUTS:
        raise InputError(f"no input kind {kind!r}.", f"use one of {', '.join(SCALING_INPUTS)}.")
    rng = np.random.default_rng([seed, SCALING_INPUTS.index(kind)])
    if kind == "outlier activations":
        A = outlier_matrix(M, K, outliers=min(OUTLIERS, M * K), magnitude=2.0 ** 17, seed=seed)
        A[rng.choice(M, size=min(MASSIVE_ROWS, M), replace=False)] *= 2.0 ** 16
    else:
        A = rng.standard_normal((M, K))
    B = rng.standard_normal((K, N))
    if kind == "varied weight blocks":
        kb, nb = _blocks(K), _blocks(N)
        e = np.round(np.linspace(0, -16, nb))[None, :] + rng.integers(-2, 3, size=(kb, nb))
        B *= np.kron(2.0 ** e, np.ones((SCALE_BLOCK, SCALE_BLOCK)))[:K, :N]
    return A, B


def error_stats(C, R, absAB) -> dict:
    """Errors of C against the float64 product R: the median and 99th percentile of |C - R| / |R| over the
    elements (R != 0); the median and the largest |C - R| / (|A| |B|) (absAB: each error against the size of
    its own dot product's terms, which cancellation cannot inflate); and ||C - R||_F / ||R||_F, which the
    largest elements dominate."""
    C = np.asarray(C, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    err = np.abs(C - R)
    nz = R != 0
    rel = err[nz] / np.abs(R[nz])
    comp = err / np.where(absAB > 0, absAB, 1.0)
    return {"median rel. error": float(np.median(rel)), "p99 rel. error": float(np.percentile(rel, 99)),
            "median |err|/(|A||B|)": float(np.median(comp)), "max |err|/(|A||B|)": float(comp.max()),
            "normwise error": float(np.linalg.norm(C - R) / np.linalg.norm(R)), "nan": int(np.isnan(C).sum())}


def scaling_error_table(kinds=SCALING_INPUTS, shape=TABLE_SHAPE, seed: int = 0) -> list[dict]:
    """One row per (input kind, scaling): per tensor (per_tensor_matmul) and block-scaled
    (block_scaled_matmul), on the same seeded inputs (scaling_inputs), each against the float64 product of
    the unquantized A and B (error_stats). Runs on the GPU where fp8_block_scaled runs, else on the CPU
    model: the same numbers either way (the model is bit-exact). Each row says where it ran."""
    M, N, K = shape
    rows = []
    for kind in kinds:
        A, B = scaling_inputs(kind, M, N, K, seed)
        R, absAB = A @ B, np.abs(A) @ np.abs(B)
        for label, fn in zip(SCALINGS, (per_tensor_matmul, block_scaled_matmul)):
            C, where = fn(A, B)
            rows.append({"inputs": kind, "scaling": label, "M": M, "N": N, "K": K, **error_stats(C, R, absAB),
                         "ran": where})
    return rows
