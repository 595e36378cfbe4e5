"""TMA tensor maps (CUtensorMap) for Hopper kernels, built by the CUDA driver through ctypes.

A kernel that copies its tiles with TMA (``cp.async.bulk.tensor``) takes, instead of a pointer,
a 128-byte descriptor of the matrix: its address, sizes, row stride, the box (tile) one copy
moves, and the shared-memory swizzle. The driver's ``cuTensorMapEncodeTiled`` writes it; CuPy
passes it to the kernel by value as a 0-d numpy array of that size. The registry says which
kernels take tensor maps and with which boxes (``tma_boxes``, helpers.kernels); helpers.launch
builds them here. Compiling such kernels for sm_90a is helpers.compile.get_arch_kernel.

Lesson 6's kernels also need, from the same driver: how many clusters of a kernel fit on the GPU
at once (``max_active_clusters``: a persistent grid of clustered CTAs must fit in one wave), and,
should a plain launch ever refuse a kernel that declares ``__cluster_dims__``, a launch that names
the cluster explicitly (``launch_ex``: cuLaunchKernelEx). Both go through ctypes, like the tensor
maps: CuPy has neither, and NVIDIA's cuda-core or cuda-bindings would be a second CUDA binding
beside CuPy's for two calls.
"""
from __future__ import annotations

import numpy as np

# CUtensorMap enums (cuda.h): CU_TENSOR_MAP_DATA_TYPE_UINT8 / _FLOAT16 / _FLOAT32, _INTERLEAVE_NONE,
# _SWIZZLE_128B, _L2_PROMOTION_L2_256B, _FLOAT_OOB_FILL_NONE (elements outside the matrix read as zero)
_TM_UINT8, _TM_FLOAT16, _TM_FLOAT32 = 0, 6, 7
_TM_INTERLEAVE_NONE, _TM_SWIZZLE_128B, _TM_L2_256B, _TM_OOB_NONE = 0, 3, 3, 0
# uint8: FP8 matrices travel as their bytes (CuPy has no float8 dtype); TMA only moves bytes
_TM_DTYPES = {np.dtype(np.uint8): _TM_UINT8, np.dtype(np.float16): _TM_FLOAT16, np.dtype(np.float32): _TM_FLOAT32}
TENSOR_MAP_DTYPE = np.dtype([("words", np.uint64, (16,))])     # 128 bytes, passed by value


def tensor_map_2d(X, box_rows: int, box_cols: int):
    """A TMA descriptor (CUtensorMap) for the row-major FP16, FP32 or FP8-bytes (uint8) CuPy matrix X, boxes of
    box_rows x box_cols elements (box_cols * element size = 128 bytes: one swizzle row), 128-byte
    swizzle; parts of a box outside X read as zeros (and a TMA store drops them).
    Built with the driver's cuTensorMapEncodeTiled through ctypes; returned as a 0-d numpy array
    of 128 bytes, which CuPy passes to a kernel by value (a numpy array of size one is passed by
    value, like a scalar). The descriptor holds X's address: keep X alive while it is used."""
    import ctypes

    rows, cols = X.shape
    dtype = np.dtype(getattr(X, "dtype", np.float16))
    if dtype not in _TM_DTYPES:
        raise ValueError(f"tensor maps here are for float16, float32 or uint8 (FP8 bytes) matrices, not {dtype}")
    size = dtype.itemsize
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
    strides = (ctypes.c_uint64 * 1)(cols * size)                 # bytes between rows
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    estr = (ctypes.c_uint32 * 2)(1, 1)
    res = f(ctypes.c_void_p(addr), _TM_DTYPES[dtype], 2, ctypes.c_void_p(X.data.ptr), dims, strides, box, estr,
            _TM_INTERLEAVE_NONE, _TM_SWIZZLE_128B, _TM_L2_256B, _TM_OOB_NONE)
    if res != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {res} for a {rows} x {cols} {dtype} "
                           f"matrix, box {box_rows} x {box_cols} (rows must be 16-byte multiples, the box at "
                           "most 256 x 256 with 128-byte rows)")
    out = np.zeros((), dtype=TENSOR_MAP_DTYPE)
    out["words"] = np.frombuffer(ctypes.string_at(addr, 128), dtype=np.uint64)
    return out


# --------------------------------------------------------------------------- clusters
_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4        # cuda.h, CUlaunchAttributeID


def _launch_structs():
    import ctypes

    class LaunchAttribute(ctypes.Structure):       # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte union
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("x", ctypes.c_uint), ("y", ctypes.c_uint),
                    ("z", ctypes.c_uint), ("rest", ctypes.c_char * 52)]

    class LaunchConfig(ctypes.Structure):          # CUlaunchConfig
        _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                    ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                    ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                    ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]

    assert ctypes.sizeof(LaunchAttribute) == 72 and ctypes.sizeof(LaunchConfig) == 56
    return LaunchAttribute, LaunchConfig


def _config(grid, block, smem: int, cluster, stream: int = 0):
    """A CUlaunchConfig (and the attribute array it points to, to keep alive); cluster None: no attribute."""
    import ctypes

    Attr, Config = _launch_structs()
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = tuple(block) + (1,) * (3 - len(block))
    attrs = (Attr * 1)()
    n = 0
    if cluster is not None:
        c = tuple(cluster) + (1,) * (3 - len(cluster))
        attrs[0].id, attrs[0].x, attrs[0].y, attrs[0].z = _CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, *c
        n = 1
    cfg = Config(*g, *b, smem, ctypes.c_void_p(stream), ctypes.cast(attrs, ctypes.POINTER(Attr)), n)
    return cfg, attrs


def max_active_clusters(kern, block, smem: int, cluster, grid=(132, 1, 1)) -> int | None:
    """How many clusters of `kern` (a CuPy RawKernel that declares __cluster_dims__ = `cluster`) can be
    resident on the GPU at once, with `block` threads and `smem` bytes of dynamic shared memory each
    (cuOccupancyMaxActiveClusters); None when the driver cannot say. Not every SM need be usable:
    a cluster's CTAs share one GPC, and GPCs may have SM counts that are not multiples of it."""
    import ctypes

    cfg, keep = _config(grid, block, smem, None)
    n = ctypes.c_int(0)
    try:
        f = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_void_p]
        res = f(ctypes.byref(n), ctypes.c_void_p(kern.kernel.ptr), ctypes.byref(cfg))
    except (OSError, AttributeError):
        return None
    del keep
    return int(n.value) if res == 0 and n.value > 0 else None


def _arg_pointer(a, keep: list) -> int:
    """The address of one kernel argument's value, as cuLaunchKernelEx takes them (kernelParams)."""
    import ctypes

    if isinstance(a, np.ndarray) and a.shape == () and a.dtype == TENSOR_MAP_DTYPE:
        buf = ctypes.create_string_buffer(a.tobytes(), 128)
    elif type(a).__module__.startswith("cupy"):
        buf = ctypes.c_uint64(a.data.ptr)
    elif isinstance(a, (np.integer, int)):
        buf = ctypes.c_int32(int(a))
    else:
        raise TypeError(f"launch_ex cannot pass a {type(a).__name__} argument")
    keep.append(buf)
    return ctypes.addressof(buf)


def launch_ex(kern, grid, block, args, smem: int, cluster) -> None:
    """Launch `kern` (a CuPy RawKernel) on CuPy's current stream with an explicit cluster shape, through
    the driver's cuLaunchKernelEx (ctypes): the fallback for a kernel with __cluster_dims__ that a plain
    launch refuses. args: tensor maps (tensor_map_2d), CuPy arrays (passed as pointers) and int32s."""
    import ctypes

    import cupy

    keep: list = []
    ptrs = (ctypes.c_void_p * len(args))(*[_arg_pointer(a, keep) for a in args])
    cfg, attrs = _config(grid, block, smem, cluster, cupy.cuda.get_current_stream().ptr)
    f = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    res = f(ctypes.byref(cfg), ctypes.c_void_p(kern.kernel.ptr), ptrs, None)
    if res != 0:
        raise RuntimeError(f"cuLaunchKernelEx failed with CUresult {res} (grid {tuple(grid)}, block {tuple(block)}, "
                           f"cluster {tuple(cluster)}, {smem} bytes of shared memory)")
