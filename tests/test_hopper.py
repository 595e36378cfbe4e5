"""helpers.hopper: the TMA tensor maps (FP16 A and B, FP32 C) and the cluster-launch structures, built through
ctypes, checked against a stand-in for libcuda and cuda.h's layouts."""
from __future__ import annotations

import ctypes
import types

import numpy as np
import pytest

from helpers import hopper


def test_tensor_map_is_128_bytes_passed_by_value():
    assert hopper.TENSOR_MAP_DTYPE.itemsize == 128


def test_tensor_map_call_with_a_fake_driver(monkeypatch):
    """The ctypes call to cuTensorMapEncodeTiled, checked against a stand-in for libcuda."""
    seen = {}

    def fake_encode(tmap, dtype, rank, addr, dims, strides, box, estr, inter, swz, l2, oob):
        seen.update(dtype=dtype, rank=rank, addr=addr.value, dims=(dims[0], dims[1]), stride=strides[0],
                    box=(box[0], box[1]), estr=(estr[0], estr[1]), swz=swz, inter=inter, oob=oob,
                    aligned=tmap.value % 64 == 0)
        ctypes.memmove(tmap.value, bytes(range(128)), 128)
        return 0

    class FakeFn:
        def __call__(self, *a):
            return fake_encode(*a)

    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace(cuTensorMapEncodeTiled=FakeFn()))
    X = types.SimpleNamespace(shape=(256, 192), data=types.SimpleNamespace(ptr=0x7F0000001000))
    tm = hopper.tensor_map_2d(X, 128, 64)
    assert seen == {"dtype": 6, "rank": 2, "addr": 0x7F0000001000, "dims": (192, 256), "stride": 384,
                    "box": (64, 128), "estr": (1, 1), "swz": 3, "inter": 0, "oob": 0, "aligned": True}
    assert tm.shape == () and tm.dtype.itemsize == 128 and tm.size == 1
    assert tm.tobytes() == bytes(range(128))


# --------------------------------------------------------------------------- lesson 6: C's tensor map, cluster launches
def test_tensor_map_for_fp32_c(monkeypatch):
    seen = {}

    class FakeFn:
        def __call__(self, tmap, dtype, rank, addr, dims, strides, box, *rest):
            seen.update(dtype=dtype, stride=strides[0], box=(box[0], box[1]), dims=(dims[0], dims[1]))
            return 0

    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace(cuTensorMapEncodeTiled=FakeFn()))
    X = types.SimpleNamespace(shape=(96, 40), dtype=np.dtype(np.float32), data=types.SimpleNamespace(ptr=0x1000))
    hopper.tensor_map_2d(X, 64, 32)
    assert seen == {"dtype": 7, "stride": 160, "box": (32, 64), "dims": (40, 96)}
    with pytest.raises(ValueError, match="float64"):
        hopper.tensor_map_2d(types.SimpleNamespace(shape=(8, 8), dtype=np.dtype(np.float64)), 8, 8)


def test_cluster_launch_config_layout():
    """The ctypes mirror of CUlaunchConfig / CUlaunchAttribute (cuda.h): sizes, and the cluster attribute."""
    Attr, Config = hopper._launch_structs()
    assert ctypes.sizeof(Attr) == 72 and ctypes.sizeof(Config) == 56
    assert Config.hStream.offset == 32 and Config.attrs.offset == 40 and Config.numAttrs.offset == 48
    assert Attr.x.offset == 8                                    # the union starts 8 bytes in
    cfg, attrs = hopper._config((132,), (384,), 230528, (2, 1, 1), stream=0)
    assert (cfg.gridDimX, cfg.gridDimY, cfg.blockDimX, cfg.sharedMemBytes, cfg.numAttrs) == (132, 1, 384, 230528, 1)
    assert (attrs[0].id, attrs[0].x, attrs[0].y, attrs[0].z) == (4, 2, 1, 1)
    cfg, _ = hopper._config((8, 1, 1), (32, 1, 1), 0, None)
    assert cfg.numAttrs == 0


def test_launch_ex_argument_pointers():
    keep = []
    tm = np.zeros((), dtype=hopper.TENSOR_MAP_DTYPE)
    tm["words"] = np.arange(16, dtype=np.uint64)
    p = hopper._arg_pointer(tm, keep)
    assert ctypes.string_at(p, 128) == tm.tobytes()
    p = hopper._arg_pointer(np.int32(-7), keep)
    assert ctypes.c_int32.from_address(p).value == -7
    with pytest.raises(TypeError):
        hopper._arg_pointer(3.5, keep)


