"""The L2 promotion probe rewrites only the l2Promotion of the tensor maps the course encodes, and puts the driver's
function back."""
import types

import numpy as np
import pytest

from lab.probes.l2_promotion import PROMOTIONS, Promoting

d = pytest.importorskip("cuda.bindings.driver")


class _Matrix:
    """What tensor_map_2d reads of a CuPy matrix: shape, dtype, data.ptr."""
    def __init__(self, rows, cols):
        self.shape, self.dtype, self.data = (rows, cols), np.dtype(np.float16), types.SimpleNamespace(ptr=1 << 20)


@pytest.fixture
def recorded(monkeypatch):
    calls = []

    def encode(*args):
        calls.append(args)
        return d.CUresult.CUDA_SUCCESS, types.SimpleNamespace(opaque=list(range(16)))

    monkeypatch.setattr(d, "cuTensorMapEncodeTiled", encode)
    return calls


@pytest.mark.parametrize("promotion", PROMOTIONS)
def test_each_promotion_reaches_the_driver_and_nothing_else_changes(recorded, promotion):
    from helpers.hopper import L2_PROMOTION, tensor_map_2d

    course = getattr(d.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{L2_PROMOTION}")

    tensor_map_2d(_Matrix(7000, 7000), 128, 64)                  # as the course encodes it
    with Promoting(d, promotion) as pm:
        tensor_map_2d(_Matrix(7000, 7000), 128, 64)
    plain, promoted = recorded
    assert plain[9] == course
    assert promoted[9] == getattr(d.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{promotion}")
    assert repr(promoted[:9] + promoted[10:]) == repr(plain[:9] + plain[10:])   # cuuint64_t: equal by repr only
    assert pm.maps == 1
    tensor_map_2d(_Matrix(7000, 7000), 128, 64)                  # restored on leaving
    assert recorded[-1][9] == course


def test_a_moved_argument_is_refused_and_an_unknown_promotion_named(recorded):
    with pytest.raises(ValueError, match="L2_128B"):
        Promoting(d, "128B")
    with Promoting(d, "NONE"), pytest.raises(TypeError, match="l2Promotion"):
        d.cuTensorMapEncodeTiled(*range(12))                      # argument 9 is no promotion
    assert not recorded
