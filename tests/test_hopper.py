"""helpers.hopper: the TMA tensor maps (FP16 A and B, FP32 C, FP8 bytes) and the cluster launches, built with
cuda-bindings (cuda.bindings.driver). Here, without a GPU: the driver's functions are replaced by fakes that
record their arguments (the structures and enums are cuda-bindings' own), the installed cuda-bindings must
accept every argument the helpers pass it (its calls then stop only at loading the missing driver), and a
missing cuda-bindings gives a CourseError that names the install. The GPU tests run the real thing."""
from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest
from cuda.bindings import driver as real          # in requirements.txt: the tests use its real types and enums

import helpers
from helpers import hopper


def _no_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


def fake_driver(monkeypatch, **functions):
    """helpers.hopper.driver() answering with cuda-bindings' types and enums, and these functions."""
    d = types.SimpleNamespace(**{n: getattr(real, n) for n in dir(real) if n.startswith(("CU", "cuuint"))})
    for name, f in functions.items():
        setattr(d, name, f)
    monkeypatch.setattr(hopper, "driver", lambda what: d)
    return d


def fake_matrix(rows, cols, dtype, ptr=0x7F0000001000):
    return types.SimpleNamespace(shape=(rows, cols), dtype=np.dtype(dtype), data=types.SimpleNamespace(ptr=ptr))


def test_tensor_map_is_128_bytes_passed_by_value():
    assert hopper.TENSOR_MAP_DTYPE.itemsize == 128


@pytest.mark.parametrize("dtype, code, box, stride", [(np.float16, 6, (128, 64), 384), (np.float32, 7, (64, 32), 768),
                                                      (np.uint8, 0, (128, 128), 192)])
def test_tensor_map_arguments(monkeypatch, dtype, code, box, stride):
    """What cuTensorMapEncodeTiled is given: the element type, rank 2, the address, sizes innermost first, the
    row stride in bytes, the box (innermost first), unit element strides, 128-byte swizzle, 128-byte L2 promotion,
    zero fill; the descriptor it returns comes back as the 0-d array CuPy passes by value, word for word."""
    seen = {}

    def encode(dt, rank, addr, dims, strides, boxdim, estr, inter, swz, l2, oob):
        seen.update(dt=int(dt), rank=rank, addr=addr, dims=[int(x) for x in dims], strides=[int(x) for x in strides],
                    box=[int(x) for x in boxdim], estr=[int(x) for x in estr], inter=inter.name, swz=swz.name,
                    l2=l2.name, oob=oob.name)
        tm = real.CUtensorMap()
        tm.opaque = [1000 + i for i in range(16)]
        return real.CUresult.CUDA_SUCCESS, tm

    fake_driver(monkeypatch, cuTensorMapEncodeTiled=encode)
    cols = stride // np.dtype(dtype).itemsize
    tm = hopper.tensor_map_2d(fake_matrix(256, cols, dtype), *box)
    assert seen == {"dt": code, "rank": 2, "addr": 0x7F0000001000, "dims": [cols, 256], "strides": [stride],
                    "box": [box[1], box[0]], "estr": [1, 1], "inter": "CU_TENSOR_MAP_INTERLEAVE_NONE",
                    "swz": "CU_TENSOR_MAP_SWIZZLE_128B", "l2": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
                    "oob": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"}
    assert tm.shape == () and tm.dtype == hopper.TENSOR_MAP_DTYPE and tm.size == 1
    assert tm["words"].tolist() == [1000 + i for i in range(16)]


def test_tensor_map_failure_names_the_error(monkeypatch):
    fake_driver(monkeypatch, cuTensorMapEncodeTiled=lambda *a: (real.CUresult.CUDA_ERROR_INVALID_VALUE, None))
    with pytest.raises(RuntimeError, match=r"cuTensorMapEncodeTiled failed with CUDA_ERROR_INVALID_VALUE \(1\) for a "
                                           r"96 x 40 float32 matrix, box 64 x 32"):
        hopper.tensor_map_2d(fake_matrix(96, 40, np.float32), 64, 32)
    with pytest.raises(ValueError, match="float64"):
        hopper.tensor_map_2d(fake_matrix(8, 8, np.float64), 8, 8)


@pytest.mark.skipif(not _no_driver(), reason="with a driver the call would run: the GPU tests cover it")
def test_the_installed_cuda_bindings_accepts_the_arguments():
    """Through the real cuda-bindings: argument conversion happens before the driver is loaded, so the call
    must get as far as loading libcuda (plain ints in the size lists, say, are refused with a TypeError)."""
    with pytest.raises(Exception) as ei:
        hopper.tensor_map_2d(fake_matrix(256, 192, np.float16), 128, 64)
    assert not isinstance(ei.value, TypeError) and "cuda" in str(ei.value).lower(), repr(ei.value)
    cfg = hopper.launch_config(real, (132,), (384,), 230528, (2, 1, 1))
    tm = np.zeros((), dtype=hopper.TENSOR_MAP_DTYPE)
    with pytest.raises(Exception) as ei:
        real.cuLaunchKernelEx(cfg, real.CUfunction(0x1234), hopper.kernel_params(real, (tm, np.int32(3))), 0)
    assert not isinstance(ei.value, TypeError), repr(ei.value)


def test_launch_config_with_and_without_a_cluster():
    cfg = hopper.launch_config(real, (132,), (384,), 230528, (2, 1, 1), stream=0x55)
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ, cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ) == (132, 1, 1, 384, 1, 1)
    assert cfg.sharedMemBytes == 230528 and int(cfg.hStream) == 0x55 and cfg.numAttrs == 1
    attr = cfg.attrs[0]
    assert attr.id == real.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (2, 1, 1)
    cfg = hopper.launch_config(real, (8, 1, 1), (32, 1, 1), 0, None)
    assert cfg.numAttrs == 0 and (cfg.gridDimX, cfg.blockDimX) == (8, 32)


def test_kernel_params_values_and_types():
    tm = np.zeros((), dtype=hopper.TENSOR_MAP_DTYPE)
    tm["words"] = np.arange(16, dtype=np.uint64) * 3
    fake_cupy_array = type("ndarray", (), {"__module__": "cupy", "data": types.SimpleNamespace(ptr=0xABC0)})()
    values, kinds = hopper.kernel_params(real, (tm, fake_cupy_array, np.int32(-7), 5))
    assert kinds == (None, ctypes.c_void_p, ctypes.c_int, ctypes.c_int)
    assert [int(w) for w in values[0].opaque] == (np.arange(16) * 3).tolist()
    assert ctypes.string_at(values[0].getPtr(), 128) == tm.tobytes()      # the 128 bytes the kernel receives
    assert values[1:] == (0xABC0, -7, 5)
    for bad in (3.5, True, np.zeros(2)):
        with pytest.raises(TypeError):
            hopper.kernel_params(real, (bad,))


def test_max_active_clusters_asks_the_driver(monkeypatch):
    seen = {}

    def occupancy(func, cfg):
        seen.update(func=int(func), grid=cfg.gridDimX, block=cfg.blockDimX, smem=cfg.sharedMemBytes, attrs=cfg.numAttrs)
        return real.CUresult.CUDA_SUCCESS, 66

    fake_driver(monkeypatch, cuOccupancyMaxActiveClusters=occupancy)
    kern = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=0xF00))
    assert hopper.max_active_clusters(kern, (384, 1, 1), 230528, (2, 1, 1), grid=(132, 1, 1)) == 66
    assert seen == {"func": 0xF00, "grid": 132, "block": 384, "smem": 230528, "attrs": 0}
    fake_driver(monkeypatch, cuOccupancyMaxActiveClusters=lambda f, c: (real.CUresult.CUDA_ERROR_INVALID_VALUE, 0))
    assert hopper.max_active_clusters(kern, (384, 1, 1), 230528, (2, 1, 1)) is None


def test_without_cuda_bindings_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)        # import cuda.bindings now fails
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    with pytest.raises(helpers.MissingPackageError) as ei:
        hopper.tensor_map_2d(fake_matrix(64, 64, np.float16), 64, 64)
    assert isinstance(ei.value, ImportError) and isinstance(ei.value, helpers.CourseError)
    assert "needs NVIDIA's cuda-bindings" in str(ei.value) and "\nFix: pip install cuda-bindings" in str(ei.value)
