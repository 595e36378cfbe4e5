"""TMA tensor maps (CUtensorMap) for Hopper kernels, built by the CUDA driver through ctypes.

A kernel that copies its tiles with TMA (``cp.async.bulk.tensor``) takes, instead of a pointer,
a 128-byte descriptor of the matrix: its address, sizes, row stride, the box (tile) one copy
moves, and the shared-memory swizzle. The driver's ``cuTensorMapEncodeTiled`` writes it; CuPy
passes it to the kernel by value as a 0-d numpy array of that size. The registry says which
kernels take tensor maps and with which boxes (``tma_boxes``, helpers.kernels); helpers.launch
builds them here. Compiling such kernels for sm_90a is helpers.compile.get_arch_kernel.
"""
from __future__ import annotations

import numpy as np

# CUtensorMap enums (cuda.h): CU_TENSOR_MAP_DATA_TYPE_FLOAT16, _INTERLEAVE_NONE, _SWIZZLE_128B,
# _L2_PROMOTION_L2_256B, _FLOAT_OOB_FILL_NONE
_TM_FLOAT16, _TM_INTERLEAVE_NONE, _TM_SWIZZLE_128B, _TM_L2_256B, _TM_OOB_NONE = 6, 0, 3, 3, 0
TENSOR_MAP_DTYPE = np.dtype([("words", np.uint64, (16,))])     # 128 bytes, passed by value


def tensor_map_2d(X, box_rows: int, box_cols: int):
    """A TMA descriptor (CUtensorMap) for the row-major FP16 CuPy matrix X, boxes of
    box_rows x box_cols elements (box_cols * 2 bytes = 128: one swizzle row), 128-byte swizzle.
    Built with the driver's cuTensorMapEncodeTiled through ctypes; returned as a 0-d numpy array
    of 128 bytes, which CuPy passes to a kernel by value (a numpy array of size one is passed by
    value, like a scalar). The descriptor holds X's address: keep X alive while it is used."""
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
