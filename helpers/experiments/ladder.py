"""Lesson 5 (closing the gap to cuBLAS): the rung registry, its launcher and the ladder experiment.

Rungs (``RUNGS``), one idea each; rung 1 is lesson 2's wmma_gemm_naive (kernels/wmma.cu),
rungs 2-6 are in kernels/ladder.cu:

1. naive WMMA: one warp per 16x16 tile, A and B straight from global memory;
2. shared-memory block tiling: 128x128 block tile, 8 warps of 4x2 fragments, BK = 32;
3. padding (skew) of the shared-memory rows against bank conflicts;
4. 16-byte vectorized global-to-shared copies;
5. cp.async 4-stage pipeline (sm_80+, 74 KB of dynamic shared memory);
6. ldmatrix + PTX mma.sync m16n8k16 with FP32 accumulators (sm_80+);
7. wgmma fed by TMA through mbarriers (kernels/ladder_sm90a.cu, sm_90a: Hopper only). Compiled
   with NVRTC for sm_90a and loaded from the cubin; its tensor maps come from the driver's
   cuTensorMapEncodeTiled (ctypes); it reads B transposed (the launcher transposes, inside the
   timing); it is measured in a child process (run_isolated) so that a fault or a hang cannot
   take the other rungs' results with it.

Sizes that are not multiples of a rung's tile are zero-padded (as helpers.launch.prepare
does): M and N up to a multiple of ``tile_mn``, K up to a multiple of ``tile_k``; the kernels
themselves do no bounds checks. Zero rows and columns add exact zeros to every dot product,
and the result is cropped.

Every rung keeps one FP32 accumulator per output element and walks K in order, 16 at a time,
with the Tensor Core's 16-deep product (WMMA m16n16k16, or PTX mma.sync m16n8k16, the same
operation on half the columns), so the CPU emulation of rungs 1-6 is
``helpers.emulate.tensor_core_gemm(inputs='fp16', acc='fp32')``. Rung 7's wgmma also walks K 16
at a time into one accumulator; that it rounds inside each step as mma.sync does is assumed, and
checked on the GPU (tests/test_gpu_ladder.py compares it with the emulation).

Experiment ``ladder`` (``make record``): every rung, checked against float64 at 4096, 8192 and
two sizes that are not multiples of any tile, then timed (helpers.timing.benchmark) at 4096
and 8192 next to cuBLAS FP16 (helpers.cublas.BASELINES['cublas_fp16']).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..launch import KERNELS
from . import experiment

LADDER_FILE = "ladder.cu"
TIMED_SIZES = (4096, 8192)
ODD_SIZES = ((1000, 1064, 1000), (2000, 1000, 3000))   # (M, N, K): not multiples of 16 or of 128
DEFAULT_SMEM_LIMIT = 48 * 1024                           # bytes of dynamic shared memory without opt-in
ELEM_IN, ELEM_OUT = 2, 4                                  # bytes: FP16 inputs, FP32 output
CHILD_FLAG = "COURSE_LADDER_CHILD"                        # set in the child processes of run_isolated


def _grid_block_tile(M, N, block):
    # rungs 2-6: one 128 x 128 tile of C per block
    return (math.ceil(N / 128), math.ceil(M / 128))


@dataclass(frozen=True)
class Rung:
    rung: int
    name: str                 # extern "C" kernel name
    file: str
    idea: str                 # the one idea this rung adds
    predicted_gain: float     # predicted speed-up over the previous rung, stated before measuring
    why: str                  # the reasoning behind the prediction
    block: tuple              # threads per block
    tile_mn: int              # M and N are padded to multiples of this
    tile_k: int               # K is padded to a multiple of this
    block_tile: tuple         # (rows, cols) of C per block: sets the global-memory traffic
    dyn_smem: int             # bytes of dynamic shared memory per block
    min_cc: tuple
    grid: Callable
    inputs: str = "fp16"
    acc: str = "fp32"
    acc_rounding: str = "truncate"
    acc_block: int = 16
    only_cc: tuple | None = None   # the one compute capability the kernel runs on (sm_90a: 9.0)
    isolate: bool = False          # measured in a child process (see _isolated_rows)
    b_transposed: bool = False     # the kernel reads B^T (N x K row-major); the launcher transposes

    @property
    def in_dtype(self) -> str:
        return "float16"

    @property
    def multiple(self) -> int:
        return max(self.tile_mn, self.tile_k)

    @property
    def label(self) -> str:
        return f"{self.rung}. {self.idea}"

    def padded(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        up = lambda v, m: math.ceil(v / m) * m  # noqa: E731
        return up(M, self.tile_mn), up(N, self.tile_mn), up(K, self.tile_k)

    def emulate(self, A, B):
        from .. import emulate

        return emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")

    def check(self, C, A, B, **kw):
        from ..check import check_gemm

        kw.setdefault("model", self.emulate)
        return check_gemm(C, A, B, inputs="fp16", acc="fp32", output="fp32", acc_rounding="truncate",
                          block=16, name=self.name, **kw)


PIPE_SMEM = 4 * (128 * 40 + 32 * 136) * 2     # STAGES * (As + Bs) padded stages, bytes (kernels/ladder.cu)
WGMMA_FILE = "ladder_sm90a.cu"
WGMMA_SMEM = 4 * (128 * 64 + 256 * 64) * 2 + 1024 + 64   # LADDER7_SMEM in kernels/ladder_sm90a.cu


def _grid_wgmma(M, N, block):
    # rung 7: one 128 x 256 tile of C per block
    return (math.ceil(N / 256), math.ceil(M / 128))

RUNGS: dict[int, Rung] = {r.rung: r for r in [
    Rung(1, "wmma_gemm_naive", "wmma.cu", "naive WMMA (lesson 2)", 1.0,
         "the starting point: every warp reloads its A and B tiles from global memory at every K step",
         (32, 8), 16, 16, (128, 16), 0, (7, 0), KERNELS["wmma_gemm_naive"].grid),   # lesson 2's own mapping
    Rung(2, "ladder_smem_tiled", LADDER_FILE, "shared-memory block tiling", 3.0,
         "a 128x128 block tile reuses each loaded element 8x more; bank conflicts and 2-byte copies remain",
         (256, 1), 128, 32, (128, 128), 0, (7, 0), _grid_block_tile),
    Rung(3, "ladder_smem_padded", LADDER_FILE, "padding against bank conflicts", 1.5,
         "16 bytes of skew per row remove the 4-8-way conflicts of the fragment loads",
         (256, 1), 128, 32, (128, 128), 0, (7, 0), _grid_block_tile),
    Rung(4, "ladder_vec16", LADDER_FILE, "16-byte vectorized copies", 1.3,
         "8x fewer load and store instructions for the same bytes",
         (256, 1), 128, 32, (128, 128), 0, (7, 0), _grid_block_tile),
    Rung(5, "ladder_cp_async", LADDER_FILE, "cp.async 4-stage pipeline", 1.6,
         "copies of the next 3 K-tiles fly while the Tensor Cores work on this one",
         (256, 1), 128, 32, (128, 128), PIPE_SMEM, (8, 0), _grid_block_tile),
    Rung(6, "ladder_mma_sync", LADDER_FILE, "ldmatrix + mma.sync m16n8k16", 1.3,
         "one ldmatrix.x4 replaces four fragment loads; fragments reused from registers",
         (256, 1), 128, 32, (128, 128), PIPE_SMEM, (8, 0), _grid_block_tile),
    Rung(7, "ladder_wgmma_tma", WGMMA_FILE, "wgmma + TMA + mbarriers (sm_90a)", 2.0,
         "Hopper's warpgroup MMA reads A and B from shared memory at a rate mma.sync cannot reach; "
         "the copy engine fills a 128x256 tile (half the bytes per FLOP) with one thread",
         (256, 1), 256, 64, (128, 256), WGMMA_SMEM, (9, 0), _grid_wgmma,
         only_cc=(9, 0), isolate=True, b_transposed=True),
]}


def rung(key) -> Rung:
    """A rung by number or kernel name."""
    if isinstance(key, Rung):
        return key
    for r in RUNGS.values():
        if key == r.rung or key == r.name:
            return r
    raise KeyError(f"no rung {key!r}; rungs: " + ", ".join(f"{r.rung} ({r.name})" for r in RUNGS.values()))


def predicted_tflops(rung1_tflops: float) -> dict[int, float]:
    """Each rung's predicted TFLOP/s, chained from rung 1's measurement by the predicted gains."""
    out, v = {}, rung1_tflops
    for r in RUNGS.values():
        v = v * r.predicted_gain
        out[r.rung] = v
    return out


# --------------------------------------------------------------------------- validation and padding
def validate(r: Rung, A, B) -> tuple[int, int, int]:
    """Check A and B for rung `r`; returns (M, N, K) or raises InputError saying what to do."""
    from ..errors import InputError

    for nm, X in (("A", A), ("B", B)):
        if not hasattr(X, "dtype") or not hasattr(X, "shape"):
            raise InputError(f"{nm} is a {type(X).__name__}, not an array.",
                             f"pass a numpy or CuPy array: {nm} = np.asarray({nm}, dtype=np.float16).")
        if X.ndim != 2:
            raise InputError(f"{nm} has {X.ndim} dimensions; {r.name} multiplies 2-D matrices.",
                             f"reshape {nm} to (rows, cols).")
        if X.dtype != np.float16:
            raise InputError(f"{nm} is {X.dtype}, but {r.name} takes float16 (FP16) inputs.",
                             f"convert explicitly: {nm} = {nm}.astype(np.float16) (this rounds).")
        if not X.flags.c_contiguous:
            raise InputError(f"{nm} is not C-contiguous (row-major).",
                             f"pass a row-major copy: {nm} = np.ascontiguousarray({nm}).")
        if 0 in X.shape:
            raise InputError(f"{nm} is empty (shape {X.shape}).", "use matrices with at least one row and column.")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise InputError(f"inner dimensions differ: A is {M}x{K} but B is {K2}x{N}.",
                         "C = A B needs A's columns == B's rows; check the order of the arguments.")
    if max(r.padded(M, N, K)) >= 2**31:
        raise InputError(f"sizes {M}x{N}x{K} overflow the kernels' 32-bit int arguments.",
                         "split the product into blocks smaller than 2^31 in every dimension.")
    return M, N, K


def _pad(X, rows: int, cols: int):
    if X.shape == (rows, cols):
        return X
    xp = __import__("cupy") if type(X).__module__.startswith("cupy") else np
    out = xp.zeros((rows, cols), dtype=X.dtype)
    out[:X.shape[0], :X.shape[1]] = X
    return out


def pad_for(r: Rung, A, B):
    """Zero-pad A and B to the rung's tile multiples: returns (Ap, Bp, (M, N, K), (Mp, Np, Kp))."""
    M, N, K = validate(r, A, B)
    Mp, Np, Kp = r.padded(M, N, K)
    return _pad(A, Mp, Kp), _pad(B, Kp, Np), (M, N, K), (Mp, Np, Kp)


# --------------------------------------------------------------------------- GPU launch
_SM90A: dict = {}


def _load_sm90a(filename: str, name: str):
    """Compile kernels/<filename> with NVRTC for sm_90a (CuPy's RawModule(code=...) always appends
    its own -arch=sm_90, which cannot assemble wgmma), and load the cubin with RawModule(path=...)."""
    import os
    import tempfile

    import cupy
    from cupy_backends.cuda.libs import nvrtc

    from ..compile import KERNEL_DIR
    from ..errors import KernelCompileError

    if filename not in _SM90A:
        src = (KERNEL_DIR / filename).read_text()
        prog = nvrtc.createProgram(src, filename, [], [])
        try:
            try:
                nvrtc.compileProgram(prog, ["-std=c++17", "-arch=sm_90a"])
            except Exception as exc:
                raise KernelCompileError(f"NVRTC could not compile {filename} for sm_90a: {exc}\n"
                                         f"{nvrtc.getProgramLog(prog)}",
                                         "read the first error in the log (file:line) and fix the source.") from None
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        fd, path = tempfile.mkstemp(suffix=".cubin", prefix=filename.split(".")[0] + "_")
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        _SM90A[filename] = cupy.RawModule(path=path)
    return _SM90A[filename].get_function(name)


def gpu_kernel(r: Rung):
    """The compiled RawKernel for rung `r`, with its dynamic shared-memory limit raised when needed."""
    from ..compile import get_kernel
    from ..device import require_gpu
    from ..errors import ArchitectureError

    msg = skip_message(r, require_gpu(f"kernel {r.name}").cc)
    if msg:
        raise ArchitectureError(msg, "run this rung on a GPU it supports, or use COURSE_DEVICE=cpu to see "
                                     "its emulation and the recorded results.")
    if r.file == WGMMA_FILE:
        kern = _load_sm90a(r.file, r.name)
        if kern.num_regs < 32:
            raise ArchitectureError(f"{r.name} compiled to an empty kernel: the sm_90a code path "
                                    "(__CUDA_ARCH_FEAT_SM90_ALL) was not selected.",
                                    "compile with -arch=sm_90a (NVRTC) or -gencode=arch=compute_90a,code=sm_90a.")
    else:
        kern = get_kernel(r.file, r.name, r.min_cc)
    if r.dyn_smem > DEFAULT_SMEM_LIMIT and kern.max_dynamic_shared_size_bytes < r.dyn_smem:
        kern.max_dynamic_shared_size_bytes = r.dyn_smem   # cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
    return kern


def kernel_resources(r: Rung) -> dict:
    """Registers per thread, static/dynamic shared memory and local memory (spills) per the driver."""
    k = gpu_kernel(r)
    return {"regs": int(k.num_regs), "smem_static": int(k.shared_size_bytes), "smem_dynamic": int(r.dyn_smem),
            "smem": int(k.shared_size_bytes) + int(r.dyn_smem), "spills": int(k.local_size_bytes)}


# CUtensorMap enums (cuda.h): CU_TENSOR_MAP_DATA_TYPE_FLOAT16, _INTERLEAVE_NONE, _SWIZZLE_128B,
# _L2_PROMOTION_L2_256B, _FLOAT_OOB_FILL_NONE
_TM_FLOAT16, _TM_INTERLEAVE_NONE, _TM_SWIZZLE_128B, _TM_L2_256B, _TM_OOB_NONE = 6, 0, 3, 3, 0
TENSOR_MAP_DTYPE = np.dtype([("words", np.uint64, (16,))])     # 128 bytes, passed by value


def tensor_map_2d(X, box_rows: int, box_cols: int):
    """A TMA descriptor (CUtensorMap) for the row-major FP16 CuPy matrix X, boxes of
    box_rows x box_cols elements (box_cols * 2 bytes = 128: one swizzle row), 128-byte swizzle.
    Built with the driver's cuTensorMapEncodeTiled through ctypes; returned as a 0-d numpy array
    of 128 bytes, which CuPy passes to a kernel by value (a numpy array of size one is passed by
    value, like a scalar)."""
    import ctypes

    rows, cols = X.shape
    lib = ctypes.CDLL("libcuda.so.1")
    f = lib.cuTensorMapEncodeTiled
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                  ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                  ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                  ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    buf = (ctypes.c_uint8 * 256)()
    addr = ctypes.addressof(buf)
    addr += (-addr) % 128                                        # the driver needs 64; cuda.h aligns to 128
    dims = (ctypes.c_uint64 * 2)(cols, rows)                     # innermost first
    strides = (ctypes.c_uint64 * 1)(cols * 2)                    # bytes between rows
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    estr = (ctypes.c_uint32 * 2)(1, 1)
    res = f(ctypes.c_void_p(addr), _TM_FLOAT16, 2, ctypes.c_void_p(X.data.ptr), dims, strides, box, estr,
            _TM_INTERLEAVE_NONE, _TM_SWIZZLE_128B, _TM_L2_256B, _TM_OOB_NONE)
    if res != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {res} for a {rows} x {cols} matrix, "
                           f"box {box_rows} x {box_cols}")
    out = np.zeros((), dtype=TENSOR_MAP_DTYPE)
    out["words"] = np.frombuffer(ctypes.string_at(addr, 128), dtype=np.uint64)
    return out


def launcher(key, A, B):
    """For timing: (run, C, (M, N)); A, B CuPy float16 arrays of any size (zero-padded here).

    C is the padded output, poisoned with NaN once; crop with C[:M, :N]. For rung 7, run()
    also transposes B into a preallocated B^T (the kernel reads B K-major): the timing includes it."""
    import cupy

    r = rung(key)
    Ap, Bp, (M, N, K), (Mp, Np, Kp) = pad_for(r, A, B)
    kern = gpu_kernel(r)
    C = cupy.full((Mp, Np), np.nan, dtype=cupy.float32)
    grid = r.grid(Mp, Np, r.block)
    if r.b_transposed:
        Ap = cupy.ascontiguousarray(Ap)
        Bt = cupy.empty((Np, Kp), dtype=cupy.float16)
        tmA = tensor_map_2d(Ap, 128, 64)
        tmB = tensor_map_2d(Bt, 256, 64)
        args = (tmA, tmB, C, np.int32(Mp), np.int32(Np), np.int32(Kp))

        def run():
            cupy.copyto(Bt, Bp.T)
            kern(grid, r.block, args, shared_mem=r.dyn_smem)

        def kernel_only():            # B^T as left by the last run(): the kernel alone
            kern(grid, r.block, args, shared_mem=r.dyn_smem)

        run.kernel_only = kernel_only
        run.keep = (Ap, Bp, Bt)       # the tensor maps point into these: keep them alive
        return run, C, (M, N)
    args = (Ap, Bp, C, np.int32(Mp), np.int32(Np), np.int32(Kp))

    def run():
        kern(grid, r.block, args, shared_mem=r.dyn_smem)

    return run, C, (M, N)


def gemm(key, A, B):
    """C = A B (FP32) with rung `key` on the current backend: the GPU kernel, or its CPU emulation.
    An isolated rung (rung 7) runs in a child process on the GPU (small matrices only: they travel
    as JSON)."""
    import os

    from ..device import backend

    r = rung(key)
    validate(r, A, B)
    if not backend().is_gpu:
        return r.emulate(np.asarray(A), np.asarray(B))
    import cupy

    back_to_numpy = isinstance(A, np.ndarray)
    if r.isolate and os.environ.get(CHILD_FLAG) != "1":
        out = run_isolated("_gemm_lists", r.rung, cupy.asnumpy(A).tolist(), cupy.asnumpy(B).tolist())
        if isinstance(out, dict):
            from ..errors import KernelCompileError

            raise KernelCompileError(f"rung {r.rung} ({r.name}) failed in its child process:\n{out['error']}",
                                     "read the error above; the parent's GPU context is unaffected.")
        C = np.asarray(out, dtype=np.float32)
        return C if back_to_numpy else cupy.asarray(C)
    run, C, (M, N) = launcher(r, cupy.asarray(A), cupy.asarray(B))
    run()
    C = C[:M, :N]
    return cupy.asnumpy(C) if back_to_numpy else C


def demo_lines(A, B) -> list[str]:
    """One line per rung for the lesson: its verdict against float64 on the current backend (GPU
    kernel or CPU emulation) and the padded size, or why it is skipped."""
    from ..device import backend

    b = backend()
    M, K = A.shape
    N = B.shape[1]
    out = []
    for r in RUNGS.values():
        msg = (WITHDRAWN.get(r.rung) and skip_message(r, (0, 0))) or (b.is_gpu and skip_message(r, b.gpu.cc))
        if msg:
            out.append(msg)
            continue
        out.append(f"{r.rung} {r.check(gemm(r.rung, A, B), A, B).verdict()} | padded to {r.padded(M, N, K)}")
    return out


def _gemm_lists(k: int, A: list, B: list) -> list:
    """Child-process side of gemm() for isolated rungs."""
    C = gemm(k, np.asarray(A, dtype=np.float16), np.asarray(B, dtype=np.float16))
    return np.asarray(C, dtype=np.float64).tolist()


# Rungs taken out of the lesson after a failed GPU run: {rung: reason}. A withdrawn rung is skipped
# everywhere (CPU and GPU alike) with its reason, so the notebook's outputs stay backend independent.
WITHDRAWN: dict[int, str] = {}


def skip_message(r: Rung, cc) -> str | None:
    """Why rung `r` cannot run on a GPU of compute capability `cc`, or None when it can."""
    if r.rung in WITHDRAWN:
        return f"rung {r.rung} ({r.name}) withdrawn: {WITHDRAWN[r.rung]}"
    if r.only_cc is not None and tuple(cc) != tuple(r.only_cc):
        return (f"rung {r.rung} ({r.name}) skipped: it needs sm_{r.only_cc[0]}{r.only_cc[1]}a, i.e. a Hopper GPU "
                f"(compute capability {r.only_cc[0]}.{r.only_cc[1]}: wgmma exists on no other); "
                f"this GPU is {cc[0]}.{cc[1]}.")
    if tuple(cc) >= tuple(r.min_cc):
        return None
    return (f"rung {r.rung} ({r.name}) skipped: it needs compute capability {r.min_cc[0]}.{r.min_cc[1]} "
            f"(sm_{r.min_cc[0]}{r.min_cc[1]}), this GPU is {cc[0]}.{cc[1]}.")


# --------------------------------------------------------------------------- traffic model (no GPU)
def traffic_bytes(r: Rung, M: int, N: int, K: int) -> float:
    """Bytes the blocks request from global memory (L2/DRAM) if nothing is shared between blocks:
    each block reads its rows of A and columns of B once, and writes its tile of C once."""
    bm, bn = r.block_tile
    return float(M * K * math.ceil(N / bn) * ELEM_IN + K * N * math.ceil(M / bm) * ELEM_IN + M * N * ELEM_OUT)


def intensity(r: Rung, M: int, N: int, K: int) -> float:
    """FLOP per byte of requested global-memory traffic (traffic_bytes)."""
    return 2.0 * M * N * K / traffic_bytes(r, M, N, K)


def smem_bytes_static(r: Rung) -> int:
    """Static shared memory of rungs 2-4 (computed from the tile sizes in kernels/ladder.cu)."""
    pad = {2: 0, 3: 8, 4: 8}.get(r.rung)
    if pad is None:
        return 0
    return (128 * (32 + pad) + 32 * (128 + pad)) * 2


# --------------------------------------------------------------------------- the experiment
ROW_KEYS = ("rung", "kernel", "idea", "predicted", "m", "n", "k", "median_ms", "tflops", "frac_cublas",
            "frac_peak", "rel_err", "passed", "regs", "smem", "spills")


def _inputs(i: int, M: int, N: int, K: int):
    import cupy

    from ..numerics import random_matrix

    A = cupy.asarray(random_matrix(M, K, seed=500 + i).astype(np.float16))
    B = cupy.asarray(random_matrix(K, N, seed=600 + i).astype(np.float16))
    return A, B


def _sizes(timed_sizes, odd_sizes):
    timed = [(n, n, n) for n in timed_sizes]
    return timed + [tuple(s) for s in odd_sizes], timed


def _rung_row(r: Rung, A, B, M, N, K, C_ref, timed: bool, cub_ms, peak, cc) -> dict:
    """One checked (and, for timed sizes, timed) launch of rung r: a row of the ladder experiment."""
    import cupy

    from ..timing import benchmark, gemm_flops

    row = {"rung": r.rung, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain, "m": M, "n": N, "k": K}
    msg = skip_message(r, cc)
    if msg:
        return dict(row, skipped=msg)
    row.update(kernel_resources(r))
    run, C, _ = launcher(r, A, B)
    run()
    cupy.cuda.get_current_stream().synchronize()
    chk = r.check(C[:M, :N], A, B, reference=C_ref, backend="GPU")
    row.update(rel_err=float(f"{chk.rel_err:.4g}"), comp_err=float(f"{chk.comp_err:.4g}"),
               tol=float(f"{chk.tol.value:.4g}"), passed=bool(chk.passed), n_nan=int(chk.n_nan),
               padded=list(C.shape) != [M, N] or K % r.tile_k != 0)
    if timed:
        t = benchmark(run)
        tf = gemm_flops(M, N, K) / (t.median_ms * 1e-3) / 1e12
        row.update(median_ms=round(t.median_ms, 6), p10_ms=round(t.p10_ms, 6), p90_ms=round(t.p90_ms, 6),
                   reps=t.n, tflops=round(tf, 4), frac_cublas=round(cub_ms / t.median_ms, 4) if cub_ms else None,
                   frac_peak=round(tf / peak, 4) if peak else None)
        if hasattr(run, "kernel_only"):   # rung 7: also without the transpose of B
            t2 = benchmark(run.kernel_only)
            tf2 = gemm_flops(M, N, K) / (t2.median_ms * 1e-3) / 1e12
            row.update(median_ms_kernel_only=round(t2.median_ms, 6), tflops_kernel_only=round(tf2, 4),
                       frac_cublas_kernel_only=round(cub_ms / t2.median_ms, 4) if cub_ms else None)
    else:
        row.update(median_ms=None, tflops=None, frac_cublas=None, frac_peak=None)
    return row


def measure_rungs(rung_numbers, timed_sizes=TIMED_SIZES, odd_sizes=ODD_SIZES, cub_ms=None) -> list[dict]:
    """Rows for the given rungs at every size (cub_ms: {n: cuBLAS median ms} for frac_cublas)."""
    import cupy

    from ..device import require_gpu
    from ..numerics import reference_gemm

    gpu = require_gpu("ladder")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    sizes, timed = _sizes(timed_sizes, odd_sizes)
    rows = []
    for i, (M, N, K) in enumerate(sizes):
        A, B = _inputs(i, M, N, K)
        C_ref = reference_gemm(A, B)
        for k in rung_numbers:
            rows.append(_rung_row(RUNGS[k], A, B, M, N, K, C_ref, (M, N, K) in timed,
                                  (cub_ms or {}).get(str(M)), peak, gpu.cc))
        del A, B, C_ref
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def run_isolated(func: str, *args, timeout: int = 240):
    """helpers.experiments.ladder.<func>(*args) in a child process on the GPU; returns its JSON result,
    or {"error": ...} when the child failed, faulted or hung (a kernel that faults or hangs there
    cannot take this process's CUDA context, and the other rungs' results, with it)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    # the arguments travel on stdin: matrices as JSON can exceed the kernel's limit on one
    # command-line argument (128 KiB on Linux), which raised OSError here for a 200 x 72 input
    code = ("import json, sys; import helpers.experiments.ladder as L; a = json.loads(sys.stdin.read()); "
            f"print('JSON' + json.dumps(L.{func}(*a)))")
    env = dict(os.environ, COURSE_DEVICE="gpu", **{CHILD_FLAG: "1"})
    try:
        p = subprocess.run([sys.executable, "-c", code], input=json.dumps(list(args)), cwd=root, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s (a hang: e.g. an mbarrier that never completes)"}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("JSON")), None)
    if p.returncode != 0 or line is None:
        return {"error": (p.stderr or p.stdout)[-3000:], "returncode": p.returncode}
    return json.loads(line[4:])


def _isolated_rows(rung_numbers, timed_sizes, odd_sizes, cub_ms) -> list[dict]:
    out = run_isolated("measure_rungs", list(rung_numbers), list(timed_sizes), [list(s) for s in odd_sizes],
                       cub_ms)
    if isinstance(out, dict):
        return [{"rung": k, "kernel": RUNGS[k].name, "idea": RUNGS[k].idea, "predicted": RUNGS[k].predicted_gain,
                 **out} for k in rung_numbers]
    return out


def check_rung_sizes(k: int, sizes) -> list[dict]:
    """GPU: rung k against float64 at each (M, N, K), and against its CPU emulation at 256 x 256 x 512
    (the last entry). Used by the GPU tests, in a child process for isolated rungs."""
    from ..numerics import random_matrix

    r = RUNGS[k]
    out = []
    for i, (M, N, K) in enumerate(sizes):
        A = random_matrix(M, K, seed=900 + i).astype(np.float16)
        B = random_matrix(K, N, seed=950 + i).astype(np.float16)
        C = gemm(r, A, B)
        chk = r.check(C, A, B)
        out.append({"size": [M, N, K], "shape_ok": list(C.shape) == [M, N], "passed": bool(chk.passed),
                    "text": str(chk)})
    A = random_matrix(256, 512, seed=77).astype(np.float16)
    B = random_matrix(512, 256, seed=78).astype(np.float16)
    C = gemm(r, A, B).astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    out.append({"emulation_max_diff": float(np.max(np.abs(C - r.emulate(A, B)) / scale))})
    return out


@experiment("ladder")
def ladder(timed_sizes=TIMED_SIZES, odd_sizes=ODD_SIZES):
    """Every rung: correctness (4096, 8192, odd sizes) and TFLOP/s next to cuBLAS FP16.
    Rung 7 (sm_90a) runs in a child process (see _isolated_rows)."""
    import cupy

    from ..cublas import BASELINES
    from ..device import require_gpu
    from ..numerics import check_gemm
    from ..timing import benchmark, gemm_flops

    gpu = require_gpu("ladder")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    cub = BASELINES["cublas_fp16"]
    rows, cub_ms = [], {}
    for n in timed_sizes:
        i = list(timed_sizes).index(n)
        A, B = _inputs(i, n, n, n)
        Cc = cupy.empty((n, n), dtype=cupy.float16)
        t = benchmark(lambda: cub.run(A, B, Cc))
        chk = check_gemm(Cc, A, B, inputs="fp16", acc="fp32", output="fp16", acc_rounding="truncate",
                         block=16, name="cublas_fp16", backend="GPU")
        tf = gemm_flops(n, n, n) / (t.median_ms * 1e-3) / 1e12
        cub_ms[str(n)] = t.median_ms
        rows.append({"rung": 0, "kernel": "cublas_fp16", "idea": "cuBLAS (cupy.matmul float16)", "predicted": None,
                     "m": n, "n": n, "k": n, "median_ms": round(t.median_ms, 6), "tflops": round(tf, 4),
                     "frac_cublas": 1.0, "frac_peak": round(tf / peak, 4) if peak else None,
                     "rel_err": float(f"{chk.rel_err:.4g}"), "passed": bool(chk.passed),
                     "regs": None, "smem": None, "spills": None})
        del A, B, Cc
    in_process = [k for k in RUNGS if not RUNGS[k].isolate]
    rows += measure_rungs(in_process, timed_sizes, odd_sizes, cub_ms)
    isolated = [k for k in RUNGS if RUNGS[k].isolate]
    runnable = [k for k in isolated if skip_message(RUNGS[k], gpu.cc) is None]
    for k in isolated:
        if k not in runnable:
            for (M, N, K) in _sizes(timed_sizes, odd_sizes)[0]:
                r = RUNGS[k]
                rows.append({"rung": k, "kernel": r.name, "idea": r.idea, "predicted": r.predicted_gain,
                             "m": M, "n": N, "k": K, "skipped": skip_message(r, gpu.cc)})
    if runnable:
        rows += _isolated_rows(runnable, timed_sizes, odd_sizes, cub_ms)
    return rows


# --------------------------------------------------------------------------- reading the record
def timed_rows(rows: list[dict], n: int) -> list[dict]:
    """The rows of one square timed size, rungs in order, cuBLAS (rung 0) first."""
    out = [r for r in rows if r.get("m") == r.get("n") == r.get("k") == n and r.get("tflops") is not None]
    return sorted(out, key=lambda r: r["rung"])


def gains(rows: list[dict], n: int) -> list[dict]:
    """Predicted and measured gain of every rung over the one before it, at size n."""
    rs = [r for r in timed_rows(rows, n) if r["rung"] >= 1]
    out, prev = [], None
    for r in rs:
        measured = r["tflops"] / prev["tflops"] if prev else 1.0
        out.append({"rung": r["rung"], "idea": r["idea"], "predicted": r["predicted"],
                    "measured": round(measured, 3), "tflops": r["tflops"], "frac_cublas": r["frac_cublas"],
                    "frac_peak": r["frac_peak"],
                    "verdict": "-" if prev is None else ("as predicted (within 25%)"
                                                          if abs(math.log(measured / r["predicted"])) <= math.log(1.25)
                                                          else ("better than predicted" if measured > r["predicted"]
                                                                else "worse than predicted"))})
        prev = r
    return out


def plot_ladder(rows: list[dict], source: str, peak: float, sizes=TIMED_SIZES):
    """Bars: TFLOP/s per rung at each size, cuBLAS and the dense peak as lines."""
    import matplotlib.pyplot as plt

    from ..plots import COLORS, apply_style

    apply_style()
    fig, ax = plt.subplots(figsize=(11, 5.8))
    width = 0.8 / len(sizes)
    labels = []
    for j, n in enumerate(sizes):
        rs = [r for r in timed_rows(rows, n) if r["rung"] >= 1]
        labels = [f"{r['rung']}. {r['idea']}" for r in rs]
        xs = np.arange(len(rs)) + (j - (len(sizes) - 1) / 2) * width
        ax.bar(xs, [r["tflops"] for r in rs], width, color=COLORS[j], label=f"n = {n}")
        cub = [r for r in timed_rows(rows, n) if r["rung"] == 0]
        if cub:
            ax.axhline(cub[0]["tflops"], color=COLORS[j], linestyle="--", linewidth=1.6,
                       label=f"cuBLAS FP16, n = {n}")
    ax.axhline(peak, color="0.2", linestyle=":", linewidth=1.6, label=f"dense FP16 peak ({peak:g})")
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=11)
    ax.set_ylabel("TFLOP/s (M = N = K = n)")
    ax.set_title(f"The ladder: one idea per rung\n{source}", loc="left")
    ax.legend(loc="upper left", frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def roofline_points(rows: list[dict], n: int) -> dict:
    """{label: (intensity, TFLOP/s)} for the roofline: each rung at size n, intensity from traffic_bytes."""
    pts = {}
    for row in timed_rows(rows, n):
        if row["rung"] == 0:
            continue
        r = RUNGS[row["rung"]]
        pts[f"rung {r.rung}: {r.idea}"] = (intensity(r, n, n, n), row["tflops"])
    return pts


# --------------------------------------------------------------------------- exercises
def check_tile_traffic(answer, bm: int = 128, bn: int = 256, n: int = 4096) -> None:
    """Exercise: bytes the blocks request (traffic_bytes) for an n^3 GEMM with a bm x bn block tile."""
    from ..exercises import check_number

    M = N = K = n
    expected = float(M * K * math.ceil(N / bn) * ELEM_IN + K * N * math.ceil(M / bm) * ELEM_IN + M * N * ELEM_OUT)
    check_number(f"traffic of a {bm}x{bn} tile", answer, expected, rel=1e-6,
                 hint="A is read once per column of blocks (N / bn times), B once per row of blocks "
                      "(M / bm times), 2 bytes per element; C written once, 4 bytes per element.")


def check_pipeline_smem(answer, stages: int = 3, bk: int = 32, pad: int = 8) -> None:
    """Exercise: dynamic shared memory of the cp.async rung with `stages` stages of BK = bk."""
    from ..exercises import check_number

    expected = stages * (128 * (bk + pad) + bk * (128 + pad)) * 2
    check_number(f"shared memory, {stages} stages, BK={bk}", answer, expected, rel=1e-9,
                 hint="per stage: a 128 x (BK + pad) tile of A and a BK x (128 + pad) tile of B, 2 bytes each.")


def check_blocks_per_sm(answer, regs: int = 128, threads: int = 256, smem: int = PIPE_SMEM,
                        reg_file: int = 65536, smem_per_sm: int = 228 * 1024) -> None:
    """Exercise: resident blocks per SM, limited by registers and shared memory (H100/H200 limits).
    The 1 KB the driver reserves per block is counted in smem."""
    from ..exercises import check_number

    by_regs = reg_file // (regs * threads)
    by_smem = smem_per_sm // (smem + 1024)
    check_number("blocks per SM", answer, min(by_regs, by_smem, 32), rel=1e-9,
                 hint="registers: 65536 per SM / (registers per thread x threads); shared memory: "
                      "228 KB per SM / (bytes per block + 1 KB reserved); the smaller wins.")


# --------------------------------------------------------------------------- bank conflicts (no GPU)
def bank_ways(row_stride_bytes: int, rows: int = 8, access_bytes: int = 16, banks: int = 32,
              bank_bytes: int = 4) -> int:
    """How many times the busiest bank is hit when `rows` lanes each read `access_bytes` from
    consecutive rows `row_stride_bytes` apart (one phase of ldmatrix / a 16-byte fragment load:
    8 lanes x 16 bytes = all 32 banks once, if there is no conflict). 1 means conflict-free."""
    hits = [0] * banks
    for r in range(rows):
        start = r * row_stride_bytes // bank_bytes
        for w in range(access_bytes // bank_bytes):
            hits[(start + w) % banks] += 1
    return max(hits)


def smem_conflicts(pad: int) -> dict:
    """Conflict ways of the fragment loads from As (128 x (32 + pad)) and Bs (32 x (128 + pad)), FP16."""
    return {"pad_halves": pad, "A_row_bytes": (32 + pad) * 2, "B_row_bytes": (128 + pad) * 2,
            "A_ways": bank_ways((32 + pad) * 2), "B_ways": bank_ways((128 + pad) * 2)}


def pad_options(pads=(0, 2, 4, 8, 16)) -> list[dict]:
    """For each padding (in halves): bank conflicts of the fragment loads, and whether WMMA's rules
    still hold: ldm a multiple of 8 halves (16 bytes), every fragment pointer 32-byte aligned."""
    out = []
    for pad in pads:
        lda, ldb = 32 + pad, 128 + pad
        offs = [(m * lda + kk) * 2 for m in range(0, 128, 16) for kk in (0, 16)]
        offs += [(kk * ldb + n) * 2 for kk in (0, 16) for n in range(0, 128, 16)]
        c = smem_conflicts(pad)
        out.append({"pad_halves": pad, "A_ways": c["A_ways"], "B_ways": c["B_ways"],
                    "ldm_ok": lda % 8 == 0 and ldb % 8 == 0, "aligned_32B": all(o % 32 == 0 for o in offs),
                    "legal": lda % 8 == 0 and ldb % 8 == 0 and all(o % 32 == 0 for o in offs)})
    return out


# --------------------------------------------------------------------------- rung 6 addressing (no GPU)
def ldmatrix_fragments(kind: str) -> list[list[tuple[int, int]]]:
    """Replays rung 6's ldmatrix addressing in Python: for each lane, the (row, col) of the 16x16 A
    tile (kind 'a', ldmatrix.x4) or of the 16x16 B tile as (k, n) (kind 'b', ldmatrix.x4.trans, two
    n8 tiles: n 0-7 then 8-15) that ends up in each of its fragment halves, in PTX order
    (a0..a7; b0..b3 of the first n8 tile, then b0..b3 of the second, whose n is 8 more).

    ldmatrix semantics (PTX ISA): lanes 8i..8i+7 give the row addresses of 8x8 matrix i; without
    .trans, lane l receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i in register i; with
    .trans, rows 2(l%4), 2(l%4)+1 of column l/4. The kernel's address for lane L is
    row L % 16, column (L / 16) * 8."""
    def addr(L):
        return L % 16, (L // 16) * 8

    out = []
    for lane in range(32):
        cells = []
        for i in range(4):
            for h in range(2):
                if kind == "a":
                    r0, c0 = addr(8 * i + lane // 4)
                    cells.append((r0, c0 + 2 * (lane % 4) + h))
                elif kind == "b":
                    r0, c0 = addr(8 * i + 2 * (lane % 4) + h)
                    cells.append((r0, c0 + lane // 4))
                else:
                    raise ValueError("kind must be 'a' or 'b'")
        out.append(cells)
    return out


# --------------------------------------------------------------------------- recorded compiler output
SASS_OPS = ("LDG", "LDGSTS", "UTMALDG", "STS", "LDS", "LDSM", "HMMA", "HGMMA", "BAR", "SYNCS")


def sass_opcode_counts(path) -> dict[str, dict[str, int]]:
    """{kernel: {opcode family: static count}} from a `cuobjdump -sass` listing: how many of each
    instruction the compiler emitted (not how often they run). Families: the opcode before the first
    dot (LDS.U16 -> LDS; LDSM.16.M88.4 -> LDSM), predicates stripped."""
    out: dict[str, dict[str, int]] = {}
    kernel = None
    for line in open(path):
        s = line.strip()
        if s.startswith("Function :"):
            kernel = s.split(":", 1)[1].strip()
            out[kernel] = {op: 0 for op in SASS_OPS}
            continue
        if kernel is None or not s.startswith("/*") or "*/" not in s:
            continue
        body = s.split("*/", 1)[1].split("/*")[0].strip().rstrip(";").strip()
        words = body.split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        fam = op.split(".")[0]
        if fam in out[kernel]:
            out[kernel][fam] += 1
    return out


# --------------------------------------------------------------------------- explaining misses
# Written before the measurement, for both directions; the notebook prints the one the data calls for.
MISS_NOTES = {
    2: {"better": "rung 1 was even more load-bound than assumed: with 8x fewer requested bytes per FLOP "
                  "the waits on global memory shrink by more than the prediction allowed for.",
        "worse": "the new bottlenecks arrived early: 8-way bank conflicts on the Bs fragment loads, 2-byte "
                 "copies (16 load/store pairs per thread per tile) and two barriers per 32-deep step with no "
                 "overlap of copies and math."},
    3: {"better": "the bank conflicts were the main cost of rung 2: the fragment loads replayed up to 8 "
                  "times, and the Tensor Cores waited on them.",
        "worse": "rung 2 was limited by the copies and barriers, not by the fragment loads; or the WMMA "
                 "loads were already split in a way that softened the conflicts."},
    4: {"better": "instruction issue was a large share: 2-byte copies took most of each iteration.",
        "worse": "the copies were waiting on memory latency, not on instruction issue: the same bytes "
                 "still arrive before anyone can compute (no overlap until rung 5)."},
    5: {"better": "rung 4 spent most of its time waiting for loads; hiding them behind the math removed "
                  "most of it.",
        "worse": "74 KB of shared memory per block lowers the number of resident blocks, which was "
                 "already hiding latency; or the WMMA fragment loads from shared memory, not global "
                 "latency, are now the limit."},
    6: {"better": "the WMMA loads from shared memory were the limit: ldmatrix.x4 issues a quarter of the "
                  "instructions and the compiler schedules the mma.sync freely.",
        "worse": "WMMA already compiles to ldmatrix-like loads and HMMA.16816 on sm_90, so there was "
                 "little to gain; the limit is mma.sync's rate on Hopper, which only wgmma lifts."},
    7: {"better": "mma.sync was capped well below Hopper's Tensor Core rate, and the larger tile and the copy "
                  "engine removed most of the remaining load work from the SM.",
        "worse": "the pipeline drains every K-tile (wgmma.wait_group 0 and a __syncthreads before the next "
                 f"copy is issued), the transpose of B is inside the timing, and one block per SM ({WGMMA_SMEM // 1024} KB of "
                 "shared memory) leaves nothing to hide the epilogue; warp specialisation fixes the first."},
}


def errors(rows: list[dict]) -> list[str]:
    """One line per rung whose measurement failed (an isolated rung's child process died or hung)."""
    out = {}
    for r in rows:
        if "error" in r:
            last = [ln for ln in str(r["error"]).strip().splitlines() if ln.strip()][-1:] or ["?"]
            out[r["rung"]] = f"rung {r['rung']} ({r['kernel']}) could not be measured: {last[0][:300]}"
    return list(out.values())
