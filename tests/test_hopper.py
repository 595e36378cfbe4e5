"""helpers.hopper: the TMA tensor map, built through ctypes, checked against a stand-in for libcuda."""
from __future__ import annotations

import ctypes
import types

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
