"""FP8 (E4M3) GEMM for lesson 7: the kernels of kernels/fp8*.cu, their CPU models and check, and
cuBLASLt's FP8 GEMM. The wgmma kernels lesson 7 teaches are kernels/fp8_wgmma_sm90a.cu (no promotion) and
kernels/fp8_promote_sm90a.cu (promotion every N_C products); its appendix's each have a file of their own
(fp8_wgmma_store_sm90a.cu, fp8_promote_2acc_lean_sm90a.cu, fp8_block_scaled_sm90a.cu).

CuPy has no float8 dtype: an FP8 matrix travels as a uint8 array of its E4M3 bytes (``encode_e4m3``).
The kernels take B transposed (Bt, N x K): wgmma reads 8-bit operands only K-major. ``matmul`` runs a
kernel where the GPU can and its bit-exact CPU model elsewhere. CuPy has no cuBLASLt either:
``cublaslt_fp8`` calls it through nvmath-python, else PyTorch's private ``torch._scaled_mm``.
Block scaling (fp8_block_scaled) is helpers.fp8_scaled.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .errors import InputError

E4M3 = ml_dtypes.float8_e4m3fn

E4M3_MAX = 448.0
F8_EPI_BYTES = 2 * 2 * 64 * 32 * 4     # fp8_wgmma_store's C buffers: 2 consumers x 2 boxes of 64 x 32 floats
PROMOTE_NC = (32, 64, 128, 256, 512)   # the promotion intervals of the fp8_promote_<nc> kernels


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
        return self.file.endswith("_sm90a.cu")

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
        """Dynamic shared memory with `stages` stages (F8_SMEM in the kernel's file, + F8_EPI_BYTES for tstore)."""
        if not self.wgmma:
            return 0
        return stages * (128 * 128 + self.bn * 128) + 1024 + 128 + (F8_EPI_BYTES if self.tstore else 0)


FP8_KERNELS = {k.name: k for k in [
    Fp8Kernel("fp8_mma_sync", "fp8.cu", 8, 0, (8, 9), "mma.sync m16n8k32, one warp per 16 x 8 tile, no reuse"),
    Fp8Kernel("fp8_wgmma", "fp8_wgmma_sm90a.cu", 256, 0, (9, 0),
              "wgmma m64n256k32, 128 x 256 tiles (lesson 6's rung 11)"),
    Fp8Kernel("fp8_wgmma_n128", "fp8_wgmma_sm90a.cu", 128, 0, (9, 0), "the same with 128 x 128 tiles"),
] + [Fp8Kernel(f"fp8_promote_{nc}", "fp8_promote_sm90a.cu", 128, nc, (9, 0),
               f"128 x 128 tiles, partial sums promoted to FP32 every {nc} products") for nc in PROMOTE_NC]
  + [Fp8Kernel("fp8_promote_2acc_lean", "fp8_promote_2acc_lean_sm90a.cu", 128, 128, (9, 0),
               "promotion every 128 products with two partial sums per warpgroup (K-tile kt - 1's is added while "
               "K-tile kt's wgmmas run), descriptors advanced by adds, a ring of 6 stages, on 128 CTAs", stages=6,
               ctas=128),
     Fp8Kernel("fp8_wgmma_store", "fp8_wgmma_store_sm90a.cu", 256, 0, (9, 0),
               "fp8_wgmma with C stored through shared memory and TMA, overlapping the next tile, on 128 CTAs",
               tstore=True, ctas=128)]}


def _real_values(X, what: str) -> np.ndarray:
    """X as a float64 numpy array; an InputError for anything but real numbers (or a CuPy array)."""
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
    """The E4M3 bytes of X (rounded once, to nearest even) as uint8; refuses NaN and values past +-448."""
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


def unsupported(spec: Fp8Kernel, cc) -> str | None:
    """What a GPU of compute capability `cc` lacks to run `spec`, or None. wgmma is sm_90a code: 9.0
    exactly (no later GPU has it); FP8 mma.sync exists from sm_89 on."""
    cc = tuple(cc)
    if spec.wgmma and cc != (9, 0):
        return "sm_90a, i.e. a Hopper GPU (compute capability 9.0: wgmma exists on no other)"
    if cc < tuple(spec.min_cc):
        return "compute capability 8.9 or newer (sm_89: FP8 mma.sync, on Ada, Hopper and Blackwell)"
    return None


def require_runs_here(spec: Fp8Kernel, gpu) -> None:
    """ArchitectureError, saying what to read instead, when this GPU cannot run `spec`."""
    need = unsupported(spec, gpu.cc)
    if need:
        from .errors import ArchitectureError

        raise ArchitectureError(f"{spec.name} needs {need}; this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}.",
                                "read the recorded H200 results in lesson 7, or set COURSE_DEVICE=cpu to run the "
                                "CPU model of the kernel's arithmetic.")


def _operand_shape(A8, Bt8) -> tuple[int, int, int]:
    """(M, N, K) of E4M3 byte operands A8 (M x K) and Bt8 (N x K, B transposed), or an InputError."""
    for X, what in ((A8, "A"), (Bt8, "Bt")):
        if str(getattr(X, "dtype", "")) != "uint8" or getattr(X, "ndim", 0) != 2:
            raise InputError(f"{what} must be a 2-D uint8 array of E4M3 bytes, not {getattr(X, 'dtype', type(X))} "
                             f"with shape {getattr(X, 'shape', None)}.",
                             "encode it with helpers.fp8_gemm.encode_e4m3(X) (on the GPU: cupy.asarray of that).")
    M, K = A8.shape
    N, K2 = Bt8.shape
    if K != K2:
        raise InputError(f"A is {M} x {K} and Bt is {N} x {K2}: both need K columns (Bt is B transposed).",
                         "pass Bt = B.T (N x K), contiguous.")
    return M, N, K


def launcher(name: str, A8, Bt8, stages: int | None = None, options: tuple = (), ctas: int | None = None,
             source: str | None = None):
    """(run, C): a function that launches FP8 kernel `name` on A8 (M x K) and Bt8 (N x K), CuPy uint8 E4M3
    bytes, and its NaN-filled FP32 output C (M x N, N padded to 8). Everything but the launch is done here
    (checks, zero padding, tensor maps), so timing run() times the kernel alone.
    stages: the wgmma kernels' ring (-DF8_STAGES), up to what fits in 227 KB. options: more NVRTC options
    (-D switches). ctas: the most CTAs of a wgmma kernel's persistent grid (default: the entry's). source: an edited
    copy of the wgmma kernel's file to build instead of it (helpers.compile.get_arch_kernel)."""
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
    unknown = unknown_macros(spec, options, source)
    if unknown:                                     # a switch the file does not have would be ignored: say so
        raise InputError(f"{', '.join(unknown)}: not a macro of kernels/{spec.file}, so {name} would build without "
                         "it.", "pass only the file's own knobs (its #ifndef macros), or source= a copy that has it.")
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

        kern = get_arch_kernel(spec.file, name, (9, 0), source=source,
                               options=spec.build_options(stages) + tuple(options))
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


def unknown_macros(spec: Fp8Kernel, options: tuple = (), source: str | None = None) -> list[str]:
    """The macros that `options` (-DNAME or -DNAME=V) set and that neither the kernel's file (or `source`) nor the
    headers of kernels/ use (comments left out)."""
    import re

    from .compile import KERNEL_DIR

    text = source if source is not None else (KERNEL_DIR / spec.file).read_text()
    text += "".join(h.read_text() for h in sorted(KERNEL_DIR.glob("*.cuh")))
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    names = [o[2:].split("=")[0] for o in options if isinstance(o, str) and o.startswith("-D")]
    return [n for n in names if not re.search(rf"\b{re.escape(n)}\b", text)]


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
    """cuBLASLt's FP8 GEMM through nvmath-python (``nvmath.linalg.advanced.Matmul``, planned once; scales 1,
    FP32 result and compute) on CuPy E4M3 bytes: (launch function, output), or None when nvmath-python or
    PyTorch with float8 (which carries its FP8 operands) is not installed."""
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
    """cuBLASLt's FP8 GEMM (scales 1, FP32 output) on CuPy E4M3 bytes A8 (M x K), Bt8 (N x K) by the first
    of `paths` that is installed and works. Returns (launch function, output, what ran and what failed
    before it), None when none is installed; RuntimeError when all installed ones failed."""
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


def why_not_here(spec: Fp8Kernel):
    """(why `spec` cannot run here, or None; the backend)."""
    from .device import backend

    b = backend()
    if not b.is_gpu:
        return "no GPU (CPU backend)", b
    if unsupported(spec, b.gpu.cc):
        return f"{b.gpu.name} (sm_{b.gpu.cc[0]}{b.gpu.cc[1]}) cannot run {spec.name}", b
    return None, b


def matmul(kernel: str, A, B):
    """C = A B with FP8 kernel `kernel` (A: M x K, B: K x N, E4M3 values) on the GPU where it runs, else
    with its CPU model. Returns (C as numpy float32, where it ran: one line)."""
    if not isinstance(kernel, str) or kernel not in FP8_KERNELS:
        raise InputError(f"no FP8 kernel {kernel!r}.", f"use one of {', '.join(FP8_KERNELS)}.")
    A = _real_values(A, "A")
    B = _real_values(B, "B")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InputError(f"A is {A.shape} and B is {B.shape}: C = A B needs A's columns == B's rows.",
                         "pass A (M x K) and B (K x N); the kernels' transposed B is made here.")
    why, b = why_not_here(FP8_KERNELS[kernel])
    if why is None:
        import cupy

        C = gemm_fp8(kernel, cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())))
        return cupy.asnumpy(C), f"ran on the {b.gpu.name}"
    C = cpu_model(kernel)(decode_e4m3(encode_e4m3(A)), decode_e4m3(encode_e4m3(B)))
    return np.asarray(C, dtype=np.float32), f"CPU model of the H200's arithmetic ({why})"


PROBE_K = 256
BIG = 65536.0                                  # the large product of the probes: 256 x 256 = 2^16


# --------------------------------------------------------------------------- designed inputs, and the check
def probe_vectors(K: int = PROBE_K) -> list[dict]:
    """Dot products of length K (exact E4M3 numbers) that each show one property of an accumulator.

    kind (param): gap_same_block (g): 2^16 then 2^(16-g); gap_small_first (g): small first; gap_frac /
    gap_neg_frac (g): +-1.875 x 2^(16-g); gap_acc / gap_acc_neg (g): that term 128 positions later (it
    meets the accumulator); block (i): +2^16, -2^16, then 2^-18 at position i; sum_equal (n): n x 1.125."""
    probes = []

    def pair(e):                                  # 2^e as a product of two E4M3 powers of two
        e1 = -(-e // 2)
        return 2.0 ** e1, 2.0 ** (e - e1)

    def add(kind, param, terms, small=None):
        vals = np.array([v for _, x, y in terms for v in (x, y)])
        if (np.abs(vals) > E4M3_MAX).any() or not np.array_equal(decode_e4m3(encode_e4m3(vals)), vals):
            return                                # not exact in E4M3: this probe does not exist
        a, b = np.zeros(K), np.zeros(K)
        for pos, x, y in terms:
            a[pos], b[pos] = x, y
        probes.append({"kind": kind, "param": int(param), "a": a, "b": b, "small": small})

    for g in range(0, 36):
        sa, sb = pair(16 - g)
        add("gap_same_block", g, [(0, 256.0, 256.0), (1, sa, sb)], sa * sb)
        add("gap_small_first", g, [(0, sa, sb), (1, 256.0, 256.0)], sa * sb)
        add("gap_frac", g, [(0, 256.0, 256.0), (1, 1.875 * sa, sb)], 1.875 * sa * sb)
        add("gap_neg_frac", g, [(0, 256.0, 256.0), (1, -1.875 * sa, sb)], -1.875 * sa * sb)
        add("gap_acc", g, [(0, 256.0, 256.0), (128, 1.875 * sa, sb)], 1.875 * sa * sb)
        add("gap_acc_neg", g, [(0, 256.0, 256.0), (128, -1.875 * sa, sb)], -1.875 * sa * sb)
    sa, sb = pair(-18)
    for i in range(2, K):
        add("block", i, [(0, 256.0, 256.0), (1, -256.0, 256.0), (i, sa, sb)])
    for n in range(1, 65):
        add("sum_equal", n, [(j, 1.125, 1.0) for j in range(n)])
    return probes


def probe_matrices(K: int = PROBE_K):
    """The probes as A (P x K) and B (K x P): probe p is element (p, p) of A B."""
    pr = probe_vectors(K)
    return pr, np.stack([p["a"] for p in pr]), np.stack([p["b"] for p in pr]).T


def random_inputs(M: int, N: int, K: int, dist: str, seed: int):
    """Seeded E4M3 inputs (A: M x K, B: K x N, values in float64): N(0,1) or U[0,1) rounded to E4M3."""
    rng = np.random.default_rng(seed)
    draw = rng.standard_normal if dist == "normal" else rng.random
    return decode_e4m3(encode_e4m3(draw((M, K)))), decode_e4m3(encode_e4m3(draw((K, N))))


def check_fp8(kernel: str, C, A, B, backend=None, fitted=None, model: bool = True):
    """helpers.check's verdict on an FP8 kernel's C for A B (numpy inputs are rounded to E4M3, CuPy ones
    must hold E4M3 values): worst-case bounds for 14 bits cut toward zero every 32 products (mma.sync: FP32
    every 16), and bit equality with the CPU model (model=False: the bounds alone)."""
    from .check import check_gemm
    from .numerics import round_to

    def values(X):                        # the numbers the Tensor Cores multiply: X rounded to E4M3
        return round_to(X, "fp8_e4m3").astype(np.float64) if isinstance(X, np.ndarray) else X

    kw = (dict(acc="fp32", block=16) if kernel == "fp8_mma_sync" else dict(acc="e8m13", block=32))
    return check_gemm(C, A, B, inputs="fp8_e4m3", output="fp32", acc_rounding="truncate", name=kernel,
                      model=cpu_model(kernel) if model else None, values=values, backend=backend, fitted=fitted, **kw)
