"""One validation, padding and launch path for every kernel in the registry (helpers.kernels).

``gemm(key, A, B, pad=False)`` takes a kernel name, a rung number or a registry entry, and numpy or CuPy arrays. It
validates dtype, shape, contiguity, alignment and the kernel's tile multiples (``pad=True`` zero-pads M, N and K and
crops C: zero rows and columns add exact zeros to every dot product) and returns C (numpy in, numpy out). The CPU
backend runs the kernel's numpy emulation after the same validation, so a mistake gives the same message everywhere.
On a GPU, ``launcher`` compiles the kernel, opts in to more than 48 KB of dynamic shared memory, poisons C with NaN
(an element the kernel never writes cannot pass a check), transposes B for kernels that read B^T and builds TMA
tensor maps (helpers.hopper). A ``persistent`` kernel gets as many blocks as fit at once (``resident_blocks``); a
clustered one is launched plainly (its ``__cluster_dims__`` form the clusters), through cuLaunchKernelEx should the
driver refuse that (``launch_path``); a kernel marked ``isolate`` runs in a child process (helpers.isolate).
"""
from __future__ import annotations

import dataclasses
import math
import re
import sys

import numpy as np

from . import compile as compiler
from . import device, isolate
from .check import suspicious_bf16
from .device import backend
from .errors import ArchitectureError, InputError, KernelCompileError, gpu_errors
from .formats import from_bf16_bits
from .hopper import launch_ex, max_active_clusters, tensor_map_2d
from .kernels import (ALL_RUNGS, CT_GAIN, TAIL_SPLIT_CLUSTER, WITHDRAWN, GemmKernel, ct_waves_ratio, lookup,
                      quad_choice, split_k_plan, tail_split_plan)
from .knobs import entry_for_options

DEFAULT_SMEM_LIMIT = 48 * 1024      # bytes of dynamic shared memory a block may use without opting in


def _is_cupy(x) -> bool:
    return type(x).__module__.startswith("cupy")


def validate(spec: GemmKernel, A, B, pad: bool) -> tuple[int, int, int]:
    """Check A and B for `spec`; return (M, N, K) or raise InputError saying what to do."""
    for nm, X in (("A", A), ("B", B)):
        if not (isinstance(X, np.ndarray) or _is_cupy(X)):
            raise InputError(f"{nm} is a {type(X).__name__}, not an array.",
                             f"pass a numpy or CuPy array, e.g. np.asarray({nm}, dtype=np.{spec.in_dtype}).")
        if X.ndim != 2:
            raise InputError(f"{nm} has {X.ndim} dimensions; {spec.name} multiplies 2-D matrices.",
                             f"reshape {nm} to (rows, cols).")
        if X.dtype != np.dtype(spec.in_dtype) and spec.inputs == "bf16":
            raise InputError(f"{nm} is {X.dtype}, but {spec.name} takes BF16 inputs, passed as uint16 arrays "
                             "holding the BF16 bit patterns (CuPy has no bfloat16 dtype).",
                             f"from helpers.formats import to_bf16_bits; {nm} = to_bf16_bits({nm}) rounds FP32 "
                             "to BF16 (nearest even; numpy or CuPy); an ml_dtypes.bfloat16 array can be passed as "
                             f"{nm}.view(np.uint16). Never {nm}.astype(np.uint16): that makes integers.")
        if X.dtype != np.dtype(spec.in_dtype):
            raise InputError(f"{nm} is {X.dtype}, but {spec.name} takes {spec.in_dtype} ({spec.inputs}) inputs.",
                             f"convert explicitly: {nm} = {nm}.astype(np.{spec.in_dtype}) "
                             "(this rounds; the course never converts silently).")
        if not X.flags.c_contiguous:
            raise InputError(f"{nm} is not C-contiguous (row-major); strides {X.strides} for shape {X.shape}. "
                             f"{spec.name} reads rows with a fixed leading dimension.",
                             f"pass a row-major copy: {nm} = np.ascontiguousarray({nm}) "
                             "(cupy.ascontiguousarray for CuPy arrays).")
        if 0 in X.shape:
            raise InputError(f"{nm} is empty (shape {X.shape}).", "use matrices with at least one row and column.")
        if spec.inputs == "bf16":
            why = suspicious_bf16(from_bf16_bits(X))
            if why:
                raise InputError(f"{nm} does not look like BF16 bit patterns of ordinary numbers: {why}.",
                                 f"make the bits with helpers.formats.to_bf16_bits({nm}32); {nm}.astype(np.uint16) "
                                 "makes integers, not bit patterns.")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise InputError(f"inner dimensions differ: A is {M}x{K} (M x K) but B is {K2}x{N}; "
                         "C = A B needs A's columns == B's rows.",
                         "check the order of the arguments, or transpose B (B.T copied to row-major).")
    if max(spec.padded(M, N, K)) >= 2**31:
        raise InputError(f"sizes {M}x{N}x{K} overflow the kernels' 32-bit int arguments.",
                         "split the product into blocks smaller than 2^31 in every dimension.")
    if not pad:
        _check_multiples(spec, M, N, K)
    for nm, X in (("A", A), ("B", B)):
        if _is_cupy(X) and spec.multiple > 1 and X.data.ptr % 32:
            raise InputError(f"{nm} starts at address 0x{X.data.ptr:x}, not 32-byte aligned: "
                             "wmma::load_matrix_sync needs 256-bit aligned tile pointers.",
                             f"pass a fresh copy ({nm} = {nm}.copy()); views that start mid-row are not aligned.")
    return M, N, K


def _check_multiples(spec: GemmKernel, M: int, N: int, K: int) -> None:
    sizes = {"M": M, "N": N, "K": K}
    need = {"M": spec.tile_mn, "N": spec.tile_mn, "K": spec.tile_k}
    bad = [d for d in sizes if sizes[d] % need[d]]
    if not bad:
        return
    padded = dict(zip(sizes, spec.padded(M, N, K)))
    if spec.tile_mn == spec.tile_k:
        m = spec.tile_k
        what = f"not a multiple of {m}: {spec.name} moves whole {m}x{m} tiles"
    else:
        what = (f"not a multiple of the kernel's tile ({spec.tile_mn} for M and N, {spec.tile_k} for K): "
                f"{spec.name} moves whole tiles")
    raise InputError(f"{', '.join(f'{d}={sizes[d]}' for d in bad)} {what} and would read and write past the "
                     "matrices' edges.",
                     f"call with pad=True to zero-pad ({', '.join(f'{d}->{padded[d]}' for d in bad)}) and crop the "
                     "result, or pad the matrices yourself.")


def _pad_to(X, rows: int, cols: int):
    if X.shape == (rows, cols):
        return X
    xp = __import__("cupy") if _is_cupy(X) else np
    out = xp.zeros((rows, cols), dtype=X.dtype)
    out[:X.shape[0], :X.shape[1]] = X
    return out


def prepare(key, A, B, pad: bool = False):
    """Validate and pad for kernel `key`: returns (spec, A, B, (M, N, K), padded (Mp, Np, Kp))."""
    spec = lookup(key)
    M, N, K = validate(spec, A, B, pad)
    Mp, Np, Kp = spec.padded(M, N, K)
    return spec, _pad_to(A, Mp, Kp), _pad_to(B, Kp, Np), (M, N, K), (Mp, Np, Kp)


def require_runs_here(spec: GemmKernel, gpu) -> None:
    """ArchitectureError, before CuPy is touched, when `gpu` cannot run `spec` (too old, not the one GPU its
    arch-specific code is for, or withdrawn): one line that says why, and what to look at instead."""
    # arch-specific and withdrawn kernels say why in the lesson's words
    msg = spec.skip_message(gpu.cc) if spec.only_cc is not None or spec.name in WITHDRAWN else None
    if msg:
        raise ArchitectureError(msg, "run it on a GPU it supports, or use COURSE_DEVICE=cpu to see its "
                                     "emulation and the recorded results.")
    compiler.require_cc(spec.name, spec.min_cc, gpu)


def _variant(source, options) -> dict:
    """The keywords that compile a variant of an entry's file (an edited copy `source`, NVRTC `options`)."""
    out = {}
    if source is not None:
        out["source"] = source
    if options:
        out["options"] = tuple(options)
    return out


def gpu_kernel(key, source: str | None = None, options: tuple = ()):
    """The compiled RawKernel of `key` (or of a variant: source / options) on this GPU, its dynamic shared-memory
    limit raised when it needs more than DEFAULT_SMEM_LIMIT; ArchitectureError when this GPU cannot run it."""
    spec = lookup(key)
    require_runs_here(spec, device.require_gpu(f"kernel {spec.name}"))
    if spec.only_cc is not None:
        kern = compiler.get_arch_kernel(spec.file, spec.name, spec.only_cc, **_variant(source, options))
    else:
        kern = compiler.get_kernel(spec.file, spec.name, spec.min_cc, **_variant(source, options))
    if spec.dyn_smem > DEFAULT_SMEM_LIMIT and kern.max_dynamic_shared_size_bytes < spec.dyn_smem:
        kern.max_dynamic_shared_size_bytes = spec.dyn_smem   # cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
    return kern


_RESIDENT: dict = {}


def resident_blocks(key, source: str | None = None, options: tuple = ()) -> tuple[int, str]:
    """(blocks, why) for a persistent kernel: one per SM; for a clustered kernel, whole clusters, no more than the
    driver says fit at once (a cluster's blocks share a GPC, whose SMs need not divide into whole clusters).
    source / options: a variant, asked about apart from the entry."""
    spec = lookup(key)
    var = _variant(source, options)
    slot = spec.name if not var else (spec.name, spec.dyn_smem, spec.block, source, tuple(options))
    if slot in _RESIDENT:
        return _RESIDENT[slot]
    gpu = device.require_gpu(f"kernel {spec.name}")
    n, why = gpu.sms, f"one block per SM ({gpu.sms} SMs)"
    if spec.cluster is not None:
        c = spec.cluster_ctas
        n = gpu.sms // c * c
        fit = max_active_clusters(gpu_kernel(spec, **var), spec.block, spec.dyn_smem, spec.cluster,
                                  grid=(n, 1, 1))
        if fit is None:
            why = f"{n // c} clusters of {c} on {gpu.sms} SMs (the driver could not say how many fit at once)"
        else:
            n = min(n, fit * c)
            why = f"{n // c} clusters of {c} (the driver: {fit} fit at once on {gpu.sms} SMs)"
    _RESIDENT[slot] = (n, why)
    return n, why


_CLUSTER_PATH: dict = {}     # kernel name -> "plain launch" | "cuLaunchKernelEx (...)", once one has worked


def launch_path(key) -> str | None:
    """How a clustered kernel was launched in this process: 'plain launch', 'cuLaunchKernelEx (...why...)' (the
    fallback), or None before its first launch."""
    return _CLUSTER_PATH.get(lookup(key).name)


def force_launch_ex(key) -> None:
    """From now on in this process, launch this clustered kernel with cuLaunchKernelEx (helpers.hopper.launch_ex)."""
    spec = lookup(key)
    if spec.cluster is None:
        raise InputError(f"{spec.name} declares no cluster; cuLaunchKernelEx is only for clustered kernels here.",
                         "choose a rung with clusters (rungs 12 and 13).")
    _CLUSTER_PATH[spec.name] = "cuLaunchKernelEx (asked for)"


def _cluster_launch(spec: GemmKernel, kern, grid, args):
    """A launch function for a clustered kernel: plain first; if the driver refuses, cuLaunchKernelEx."""
    import cupy

    def go():
        path = _CLUSTER_PATH.get(spec.name)
        if path is None or path == "plain launch":
            try:
                kern(grid, spec.block, args, shared_mem=spec.dyn_smem)
                _CLUSTER_PATH[spec.name] = "plain launch"
                return
            except cupy.cuda.driver.CUDADriverError as exc:
                if path is not None:
                    raise
                print(f"{spec.name}: a plain launch of a kernel with __cluster_dims__ failed ({exc}); "
                      "launching it with cuLaunchKernelEx and the cluster named instead", file=sys.stderr)
                _CLUSTER_PATH[spec.name] = f"cuLaunchKernelEx (a plain launch failed: {exc})"
        launch_ex(kern, grid, spec.block, args, spec.dyn_smem, spec.cluster)

    return go


def kernel_resources(key, source: str | None = None, options: tuple = ()) -> dict:
    """Registers per thread, static and dynamic shared memory and local memory (spills) per the driver."""
    spec = lookup(key)
    k = gpu_kernel(spec, **_variant(source, options))
    return {"regs": int(k.num_regs), "smem_static": int(k.shared_size_bytes), "smem_dynamic": int(spec.dyn_smem),
            "smem": int(k.shared_size_bytes) + int(spec.dyn_smem), "spills": int(k.local_size_bytes)}


def source_with(source: str | None, spec: GemmKernel) -> str | None:
    """`source` where it defines spec's kernel, else None (spec's own file): a per-shape build may be another rung's
    kernel (rung 29's orientation_build builds rung 25's), which an edited copy of the asked rung's file lacks."""
    return source if source is None or re.search(rf"\b{spec.name}\s*\(", source) else None


def per_shape_build(spec: GemmKernel, M: int, N: int, a_row_bytes: int, b_row_bytes: int, source: str | None = None,
                    options: tuple = ()) -> tuple:
    """(entry, NVRTC options) of rung 25 or 26 for an M x N problem whose rows of A and B are a_row_bytes and
    b_row_bytes apart: clusters of 4 as built, or of 2 (per_shape_pair), as helpers.kernels.quad_choice decides from
    how many clusters of each the driver lets run at once. source / options: a variant, asked about and built so."""
    options = tuple(options)
    pair = per_shape_pair(spec, options)
    fits = lambda: (resident_blocks(spec, source, options)[0] // 4,                          # noqa: E731
                    resident_blocks(pair[0], source, pair[1])[0] // 2)
    four = quad_choice(M, N, a_row_bytes, b_row_bytes, fits, spec.block_tile[1]) == 4
    return (spec, options) if four else pair


def orientation_build(spec: GemmKernel, M: int, N: int, a_row_bytes: int, b_row_bytes: int, source: str | None = None,
                      options: tuple = ()) -> tuple:
    """(entry, NVRTC options) of rung 29 or 30 for an M x N problem: its C^T tile where helpers.kernels.ct_waves_ratio
    gives it at least CT_GAIN over rung 25 (26), else rung 25's (26's) per-shape build (the same sums, bit for bit).
    source / options: a variant, built either way with them."""
    options = tuple(options)
    base = entry_for_options(ALL_RUNGS[spec.base], options)     # a variant's knobs apply to rung 25's (26's) build too
    pair, pair_opts = per_shape_pair(base, options)
    base_source = source_with(source, base)                     # an edited rung 29 (30) file has no rung 25 (26)
    # a GROUP_M that is no multiple of 4 (rung 29's knob allows 2) leaves rung 25 no clusters of 4: its kernel would
    # trap (a group must hold whole units of 4 tile rows), so only its clusters of 2 are weighed and built
    groups = [int(m[1]) for o in options if (m := re.fullmatch(r"-DGROUP_M=(\d+)", o))]
    quad = not groups or groups[-1] % 4 == 0
    fits = lambda: (resident_blocks(base, base_source, options)[0] // 4 if quad else None,   # noqa: E731
                    resident_blocks(pair, base_source, pair_opts)[0] // 2,
                    resident_blocks(spec, source, options)[0] // 2)
    if ct_waves_ratio(M, N, a_row_bytes, b_row_bytes, fits, spec.block_tile[0]) >= CT_GAIN:
        return spec, options
    return per_shape_build(base, M, N, a_row_bytes, b_row_bytes, base_source, options) if quad else (pair, pair_opts)


def per_shape_pair(spec: GemmKernel, options: tuple = ()) -> tuple:
    """Rung 25's (26's) build in clusters of 2 (QUAD_CLUSTER=2 after `options`: rung 14's or 13's template call)."""
    return dataclasses.replace(spec, cluster=(2, 1, 1)), (*tuple(options), "-DQUAD_CLUSTER=2")


# per_shape -> (the options that name a build, which the launcher then leaves as given; the function that chooses the
# build for a problem): rungs 25-26's cluster, rungs 29-30's orientation
PER_SHAPE = {"cluster": (("-DQUAD_CLUSTER=",), per_shape_build), "orientation": (("-DCT_M=",), orientation_build)}


def build_for(spec: GemmKernel, M: int, N: int, a_row_bytes: int, b_row_bytes: int, source: str | None = None,
              options: tuple = ()) -> tuple:
    """(entry, NVRTC options) the launcher builds for an M x N problem with rows of A and B a_row_bytes and
    b_row_bytes apart: the per-shape choice of the entry's build (PER_SHAPE) where the options do not name one, else
    the entry and options as given. What a record says of a launch (its grid) must come from this build."""
    if spec.per_shape:
        names, choose = PER_SHAPE[spec.per_shape]
        if not any(str(o).startswith(names) for o in options):
            return choose(spec, M, N, a_row_bytes, b_row_bytes, source, options)
    return spec, tuple(options)


def launcher(key, A, B, pad: bool = False, *, source: str | None = None, options: tuple = (), ctas: int | None = None):
    """For timing: (run, C, (M, N)); run() launches once on CuPy A and B.

    C is the padded output, poisoned with NaN once (crop it with C[:M, :N]; poison it again before a launch whose
    output you check). For a kernel that reads B^T, run() also transposes B (the timing includes it) and
    run.kernel_only() launches the kernel alone. source / options: a variant of the entry's kernel, launched with the
    entry's settings. ctas: a persistent kernel's grid, when fewer CTAs than fit at once (whole clusters).
    """
    import cupy

    spec0 = lookup(key)
    if ctas is not None:
        c = spec0.cluster_ctas
        if not spec0.persistent:
            raise InputError(f"ctas={ctas!r}: {spec0.name} is not persistent; its grid is one CTA per tile.",
                             "leave ctas out, or pass it with a persistent rung (10 and later).")
        if isinstance(ctas, bool) or not isinstance(ctas, (int, np.integer)) or ctas < c \
                or ctas % c:
            raise InputError(f"ctas={ctas!r} for {spec0.name}: a persistent kernel's grid, a whole number of its "
                             f"{c}-CTA clusters.", "leave ctas out (as many CTAs as fit at once), or pass e.g. "
                             "ctas=128 with a persistent rung.")
    spec, A, B, (M, N, K), (Mp, Np, Kp) = prepare(key, A, B, pad)
    built, options = build_for(spec, Mp, Np, A.shape[1] * A.itemsize, B.strides[0], source, options)  # A: contiguous
    source, spec = source_with(source, built), built   # (rung 29 building rung 25's kernel: from its own file)
    var = _variant(source, options)
    kern = gpu_kernel(spec, **var)
    C = cupy.full((Mp, Np), np.nan, dtype=spec.out_dtype)
    grid = (resident_blocks(spec, **var)[0], 1) if spec.persistent else spec.grid(Mp, Np)
    if ctas is not None:
        if ctas > grid[0]:
            raise InputError(f"ctas={ctas} for {spec.name}: more CTAs than fit at once ({grid[0]}).",
                             f"pass at most {grid[0]}, or leave ctas out.")
        grid = (int(ctas), 1)
    if spec.cluster is not None and any(g % c for g, c in zip(grid, spec.cluster)):
        raise InputError(f"{spec.name}'s grid {grid} is not a whole number of {spec.cluster} clusters.",
                         "make the block tile divide the padded sizes into whole clusters (tile_mn in the registry).")
    Bt = cupy.empty((Np, Kp), dtype=B.dtype) if spec.b_transposed else None
    a_arg, b_arg = A, (Bt if spec.b_transposed else B)
    maps = ()
    if spec.tma_boxes is not None:
        A = cupy.ascontiguousarray(A)
        a_arg, b_arg = tensor_map_2d(A, *spec.tma_boxes[0]), tensor_map_2d(b_arg, *spec.tma_boxes[1])
        if spec.c_box is not None:
            maps = (tensor_map_2d(C, *spec.c_box),)
    args = (a_arg, b_arg, *maps, C, np.int32(Mp), np.int32(Np), np.int32(Kp))
    extra = ()
    if spec.split_k and spec.tail_split:   # rung 16: slots and counters for the split tail units only, + dp
        dp, splits, _ = tail_split_plan(Mp, Np, Kp)
        units = -(-math.ceil(Mp / 128) // TAIL_SPLIT_CLUSTER) * math.ceil(Np / 256)
        slices = max(1, 2 * TAIL_SPLIT_CLUSTER * (units - dp))
        extra = (cupy.empty(splits * slices * 128 * 128, dtype=cupy.float32), cupy.zeros(slices, dtype=cupy.int32))
        args += (*extra, np.int32(splits), np.int32(dp))
    elif spec.split_k:              # rung 15: a slot of FP32 sums per part and slice, a counter per slice, the parts
        splits, _ = split_k_plan(Mp, Np, Kp)
        slices = 2 * math.prod(spec.grid(Mp, Np))
        extra = (cupy.empty(splits * slices * 128 * 128, dtype=cupy.float32), cupy.zeros(slices, dtype=cupy.int32))
        args += (*extra, np.int32(splits))

    if spec.cluster is not None:
        kernel_only = _cluster_launch(spec, kern, grid, args)
    else:
        def kernel_only():
            kern(grid, spec.block, args, shared_mem=spec.dyn_smem)

    kernel_only.grid = grid
    # what runs: the entry's own kernel, or the build it chose for this shape (rungs 25-26, 29-30: build_for)
    kernel_only.built = (spec.name, spec.cluster_ctas)   # (kernel, CTAs per cluster)
    if not spec.b_transposed:
        kernel_only.keep = (A, B, C, *extra)    # tensor maps point into these: keep them alive
        return kernel_only, C, (M, N)

    def run():
        cupy.copyto(Bt, B.T)
        kernel_only()

    run.kernel_only = kernel_only
    run.grid, run.built = grid, kernel_only.built
    run.keep = (A, B, Bt)           # tensor maps point into these: keep them alive
    return run, C, (M, N)


def gemm(key, A, B, *, pad: bool = False):
    """C = A B with registered kernel `key` (name, rung number or entry) on the current backend;
    see the module docstring."""
    spec, Ap, Bp, (M, N, K), _ = prepare(key, A, B, pad)
    if not backend().is_gpu:
        if _is_cupy(A) or _is_cupy(B):  # pragma: no cover - needs CuPy without a GPU
            raise InputError("CuPy arrays were passed but the CPU backend is active.",
                             "pass numpy arrays (cupy.asnumpy(A)), or run on a GPU.")
        return spec.emulate(np.asarray(A), np.asarray(B))
    require_runs_here(spec, backend().gpu)     # before CuPy or a child process: one line, not a traceback
    import cupy

    back_to_numpy = not (_is_cupy(A) or _is_cupy(B))
    if spec.isolate and not isolate.in_child():
        C = _gemm_in_child(spec, cupy.asnumpy(A), cupy.asnumpy(B), pad)
        return C if back_to_numpy else cupy.asarray(C)
    with gpu_errors(f"{spec.name} at M={M} N={N} K={K}"):
        run, C, _ = launcher(spec, cupy.asarray(Ap), cupy.asarray(Bp))
        run()
        C = C[:M, :N]
        return cupy.asnumpy(C) if back_to_numpy else C


def _gemm_in_child(spec: GemmKernel, A: np.ndarray, B: np.ndarray, pad: bool) -> np.ndarray:
    """gemm() of an isolated kernel, run in a child process (small matrices only: they travel as JSON)."""
    out = isolate.run_isolated("helpers.launch:gemm_lists", spec.name, A.tolist(), B.tolist(), pad)
    if isinstance(out, dict):
        raise KernelCompileError(f"{spec.name} failed in its child process:\n{out['error']}",
                                 "read the error above; this process's GPU context is unaffected.")
    return np.asarray(out, dtype=spec.out_dtype)


def gemm_lists(name: str, A: list, B: list, pad: bool) -> list:
    """The child-process side of gemm() for isolated kernels: lists in, C as a list out."""
    spec = lookup(name)
    C = gemm(spec, np.asarray(A, dtype=spec.in_dtype), np.asarray(B, dtype=spec.in_dtype), pad=pad)
    return np.asarray(C, dtype=np.float64).tolist()


def verdicts(keys, A, B) -> list[str]:
    """One line per kernel: its check against float64 on the current backend (the GPU kernel or its emulation),
    zero-padded to its tiles, or why it is skipped here. A rung's line starts with its number."""
    b = backend()
    M, K = A.shape
    N = B.shape[1]
    out = []
    for spec in map(lookup, keys):
        msg = spec.skip_message(b.gpu.cc if b.is_gpu else None)
        if msg:
            out.append(msg)
            continue
        verdict = spec.check(gemm(spec, A, B, pad=True), A, B).verdict()
        out.append(f"{'' if spec.rung is None else f'{spec.rung} '}{verdict} | padded to {spec.padded(M, N, K)}")
    return out


def gemm_fp32(A, B):
    """gemm_fp32_kernel: FP32 in, FP32 FMA chain, FP32 out."""
    return gemm("gemm_fp32_kernel", A, B)


def wmma_gemm_naive(A, B, *, pad=False):
    """wmma_gemm_naive: FP16 in, FP32 accumulator, FP32 out."""
    return gemm("wmma_gemm_naive", A, B, pad=pad)


def wmma_mixed(A, B, *, pad=False):
    """wmma_mixed_gemm_kernel: FP16 in, FP32 accumulator, FP32 out."""
    return gemm("wmma_mixed_gemm_kernel", A, B, pad=pad)


def wmma_fp16acc(A, B, *, pad=False):
    """wmma_fp16acc_gemm_kernel: FP16 in, FP16 accumulator, FP16 out."""
    return gemm("wmma_fp16acc_gemm_kernel", A, B, pad=pad)
