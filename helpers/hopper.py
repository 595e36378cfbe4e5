"""TMA tensor maps (CUtensorMap) and cluster launches for Hopper kernels, through NVIDIA's cuda-bindings.

A kernel that copies its tiles with TMA takes, instead of a pointer, a 128-byte descriptor of the matrix (address,
sizes, row stride, box, swizzle), written by the driver's ``cuTensorMapEncodeTiled`` (``tensor_map_2d``).
``max_active_clusters`` says how many clusters of a kernel fit on the GPU at once; ``launch_ex`` launches with the
cluster named (cuLaunchKernelEx), should a plain launch refuse a kernel that declares ``__cluster_dims__``. CuPy has
none of the three; ``cuda-bindings`` has them and shares CuPy's driver and context.
"""
from __future__ import annotations

import numpy as np

from .errors import MissingPackageError

TENSOR_MAP_DTYPE = np.dtype([("words", np.uint64, (16,))])     # 128 bytes, passed by value
# How much L2 fetches from DRAM around each miss of a TMA copy: 128 bytes, as CUTLASS's TMA copies ask. Where rows
# start 16 bytes into a 32-byte sector (7000 or 6008 FP16 columns), 256 bytes made rung 25 on an H100 x1.22 (7000^3)
# and x1.11 (6008^3) slower than 128; with rows in whole lines the two are within 2% (lab/README.md, "The H100").
L2_PROMOTION = "L2_128B"


def promotion_bytes(promotion: str = L2_PROMOTION) -> int:
    """The bytes an L2 promotion setting fetches around a miss: "L2_128B" -> 128, "NONE" -> 0."""
    return 0 if promotion == "NONE" else int(promotion.removeprefix("L2_").removesuffix("B"))


# FP8 matrices travel as their bytes (uint8: CuPy has no float8 dtype); TMA only moves bytes
_TM_DTYPE_NAMES = {np.dtype(np.uint8): "CU_TENSOR_MAP_DATA_TYPE_UINT8",
                   np.dtype(np.float16): "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
                   np.dtype(np.float32): "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}


def driver(what: str):
    """cuda.bindings.driver, or a MissingPackageError that says how to install it."""
    try:
        from cuda.bindings import driver as d
    except ImportError as exc:
        raise MissingPackageError(
            f"{what} needs NVIDIA's cuda-bindings (the CUDA driver API for Python), which is not installed "
            f"here ({exc}).",
            "pip install cuda-bindings, the major version of your CuPy wheel's CUDA (cuda-bindings 12.x with "
            "cupy-cuda12x, 13.x with cupy-cuda13x); requirements.txt and the course's [gpu] extra include it.") from exc
    return d


def _ok(d, result, call: str, detail: str):
    """cuda-bindings returns (CUresult, *outputs): the outputs, or a RuntimeError naming the CUresult."""
    err, *out = result
    if err != d.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{call} failed with {getattr(err, 'name', err)} ({int(err)}) {detail}")
    return out[0] if len(out) == 1 else out


def tensor_map_2d(X, box_rows: int, box_cols: int, cols: int | None = None):
    """A TMA descriptor (CUtensorMap) for the row-major FP16, FP32 or FP8-bytes (uint8) CuPy matrix X: boxes of
    box_rows x box_cols elements (one 128-byte swizzle row wide), 128-byte swizzle; parts of a box outside X read as
    zeros (and a TMA store drops them). cols: the matrix is the first `cols` columns of X (X's width its leading
    dimension). Returned as a 0-d numpy array of 128 bytes, which CuPy passes by value. It holds X's address: keep X
    alive while it is used."""
    rows, ld = X.shape
    cols = ld if cols is None else cols
    if not 0 < cols <= ld:
        raise ValueError(f"cols = {cols}: the matrix is the first 1 to {ld} columns of X")
    dtype = np.dtype(getattr(X, "dtype", np.float16))
    if dtype not in _TM_DTYPE_NAMES:
        raise ValueError(f"tensor maps here are for float16, float32 or uint8 (FP8 bytes) matrices, not {dtype}")
    d = driver("a TMA tensor map (Hopper kernels)")
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    tmap = _ok(d, d.cuTensorMapEncodeTiled(
        getattr(d.CUtensorMapDataType, _TM_DTYPE_NAMES[dtype]), 2, X.data.ptr,
        [u64(cols), u64(rows)],                  # sizes, innermost first
        [u64(ld * dtype.itemsize)],              # bytes between rows (the innermost stride is implied)
        [u32(box_cols), u32(box_rows)],          # the box one copy moves
        [u32(1), u32(1)],                        # every element, no striding
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        getattr(d.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{L2_PROMOTION}"),
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),     # outside the matrix: zeros
        "cuTensorMapEncodeTiled",
        f"for a {rows} x {cols} {dtype} matrix, box {box_rows} x {box_cols} (rows must be 16-byte multiples, "
        "the box at most 256 x 256 with 128-byte rows)")
    out = np.zeros((), dtype=TENSOR_MAP_DTYPE)
    out["words"] = [int(w) for w in tmap.opaque]
    return out


# --------------------------------------------------------------------------- clusters
def launch_config(d, grid, block, smem: int, cluster, stream: int = 0):
    """A CUlaunchConfig: grid and block (padded to 3-D), dynamic shared memory, stream; with cluster
    (its shape) one CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION attribute, with None none."""
    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = tuple(grid) + (1,) * (3 - len(grid))
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = tuple(block) + (1,) * (3 - len(block))
    cfg.sharedMemBytes = smem
    cfg.hStream = d.CUstream(stream)
    if cluster is not None:
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = attr.value.clusterDim
        dim.x, dim.y, dim.z = tuple(cluster) + (1,) * (3 - len(cluster))
        cfg.attrs, cfg.numAttrs = [attr], 1
    else:
        cfg.numAttrs = 0
    return cfg


def max_active_clusters(kern, block, smem: int, cluster, grid=(132, 1, 1)) -> int | None:
    """How many clusters of `kern` (a CuPy RawKernel declaring __cluster_dims__ = `cluster`) can be resident at
    once with `block` threads and `smem` bytes of dynamic shared memory each (cuOccupancyMaxActiveClusters); None
    when the driver cannot say."""
    d = driver("counting the clusters that fit on the GPU (lesson 6)")
    err, n = d.cuOccupancyMaxActiveClusters(d.CUfunction(kern.kernel.ptr), launch_config(d, grid, block, smem, None))
    return int(n) if err == d.CUresult.CUDA_SUCCESS and n > 0 else None


def kernel_params(d, args):
    """cuLaunchKernelEx's kernelParams in cuda-bindings' form, (values, types): tensor maps (tensor_map_2d)
    by value as CUtensorMap objects, CuPy arrays as pointers, integers as int32."""
    import ctypes                                # cuda-bindings names a parameter's C type by its ctypes type

    values, types = [], []
    for a in args:
        if isinstance(a, np.ndarray) and a.shape == () and a.dtype == TENSOR_MAP_DTYPE:
            tmap = d.CUtensorMap()
            tmap.opaque = [int(w) for w in a["words"]]
            values.append(tmap)
            types.append(None)                   # None: a cuda-bindings object, passed by value
        elif type(a).__module__.startswith("cupy"):
            values.append(a.data.ptr)
            types.append(ctypes.c_void_p)
        elif isinstance(a, (np.integer, int)) and not isinstance(a, bool):
            values.append(int(a))
            types.append(ctypes.c_int)
        else:
            raise TypeError(f"launch_ex cannot pass a {type(a).__name__} argument")
    return tuple(values), tuple(types)


def launch_ex(kern, grid, block, args, smem: int, cluster) -> None:
    """Launch `kern` (a CuPy RawKernel) on CuPy's current stream with an explicit cluster shape, through
    the driver's cuLaunchKernelEx: the fallback for a kernel with __cluster_dims__ that a plain launch
    refuses. args: tensor maps (tensor_map_2d), CuPy arrays (passed as pointers) and int32s."""
    import cupy

    d = driver("a cluster launch (cuLaunchKernelEx, lesson 6)")
    cfg = launch_config(d, grid, block, smem, cluster, cupy.cuda.get_current_stream().ptr)
    _ok(d, d.cuLaunchKernelEx(cfg, d.CUfunction(kern.kernel.ptr), kernel_params(d, args), 0), "cuLaunchKernelEx",
        f"(grid {tuple(grid)}, block {tuple(block)}, cluster {tuple(cluster)}, {smem} bytes of shared memory)")
