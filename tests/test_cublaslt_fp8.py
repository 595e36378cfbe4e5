"""cuBLASLt's FP8 GEMM: helpers.fp8_gemm.cublaslt_fp8 goes through NVIDIA's nvmath-python (public
API: nvmath.linalg.advanced.Matmul, the stateful form of nvmath.linalg.advanced.matmul) where it is installed,
through PyTorch's private torch._scaled_mm otherwise, and says which path ran. No GPU here: nvmath and torch
are stand-ins that record what they were asked, so these tests check the argument plumbing (operands as
float8_e4m3fn views, A row-major and B column-major; scales 1; FP32 result and compute; the fast-accumulation
switch) and the fallback. (lab/probes/nvmath_fp8_probe.py runs both paths on a GPU.)"""
from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from helpers import fp8_gemm

ROOT = Path(__file__).resolve().parent.parent


class FakeTensor:
    def __init__(self, data, dtype=None, transposed=False):
        self.data, self.dtype, self.transposed = data, dtype, transposed
        self.device = "cuda:0"

    def view(self, dtype):
        return FakeTensor(self.data, dtype, self.transposed)

    def t(self):
        return FakeTensor(self.data, self.dtype, not self.transposed)


def fake_torch(calls):
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-stand-in"
    torch.float8_e4m3fn, torch.float32 = "float8_e4m3fn", "float32"
    torch.from_dlpack = FakeTensor
    torch.ones = lambda shape, dtype=None, device=None: ("ones", shape, dtype, device)

    def scaled_mm(a, b, **kw):
        calls.append(("torch._scaled_mm", a, b, kw))
        return "D from torch"

    torch._scaled_mm = scaled_mm
    return torch


def fake_nvmath(calls, fail=None):
    nvmath = types.ModuleType("nvmath")
    nvmath.__version__ = "0.0-stand-in"
    nvmath.CudaDataType = types.SimpleNamespace(CUDA_R_32F="CUDA_R_32F")
    # the compute type lives in nvmath.linalg (nvmath.ComputeType is another enum, which Matmul refuses:
    # "<ComputeType.COMPUTE_32F: 4> is not a valid ComputeType" on the H200, nvmath-python 1.0.0)
    nvmath.ComputeType = types.SimpleNamespace(COMPUTE_32F="the wrong enum")

    class Matmul:
        def __init__(self, a, b, **kw):
            calls.append(("Matmul", a, b, kw))

        def plan(self):
            calls.append(("plan",))
            if fail:
                raise fail

        def execute(self):
            calls.append(("execute",))
            return "D from nvmath"

    nvmath.linalg = types.SimpleNamespace(advanced=types.SimpleNamespace(Matmul=Matmul),
                                          ComputeType=types.SimpleNamespace(COMPUTE_32F="COMPUTE_32F"))
    return nvmath


A8 = np.zeros((32, 48), dtype=np.uint8)       # M x K bytes
BT8 = np.ones((16, 48), dtype=np.uint8)       # N x K bytes (B transposed)


@pytest.fixture
def installed(monkeypatch):
    """installed(nvmath=..., torch=...): put stand-ins (or None: not installed) into sys.modules."""
    def put(**mods):
        for name, mod in mods.items():
            monkeypatch.setitem(sys.modules, name, mod)
    return put


@pytest.mark.parametrize("fast", [False, True])
def test_nvmath_is_used_where_installed(installed, fast):
    calls = []
    installed(nvmath=fake_nvmath(calls), torch=fake_torch(calls))
    go, out, path = fp8_gemm.cublaslt_fp8(A8, BT8, fast)
    assert out == "D from nvmath"
    assert path.startswith("nvmath-python ") and path.endswith(": nvmath.linalg.advanced.Matmul")
    (_, a, b, kw), plan, first = calls
    assert a.data is A8 and a.dtype == "float8_e4m3fn" and not a.transposed          # M x K, row-major
    assert b.data is BT8 and b.dtype == "float8_e4m3fn" and b.transposed               # K x N, column-major
    assert kw == {"quantization_scales": {"a": 1.0, "b": 1.0},
                  "options": {"result_type": "CUDA_R_32F", "compute_type": "COMPUTE_32F",
                              "fast_accumulation": fast}}
    assert plan == ("plan",) and first == ("execute",)
    assert go() == "D from nvmath" and calls[-1] == ("execute",) and len(calls) == 4    # planned once


@pytest.mark.parametrize("fast", [False, True])
def test_pytorch_is_the_fallback(installed, fast):
    calls = []
    installed(nvmath=None, torch=fake_torch(calls))
    go, out, path = fp8_gemm.cublaslt_fp8(A8, BT8, fast)
    assert out == "D from torch" and path.startswith("PyTorch ") and path.endswith(": torch._scaled_mm")
    (_, a, b, kw), = calls
    assert a.data is A8 and not a.transposed and b.data is BT8 and b.transposed and b.dtype == "float8_e4m3fn"
    assert kw["out_dtype"] == "float32" and kw["use_fast_accum"] is fast
    assert kw["scale_a"][0] == kw["scale_b"][0] == "ones" and kw["scale_a"][2] == "float32"
    assert go() == "D from torch" and len(calls) == 2


def test_a_failing_nvmath_falls_back_and_says_so(installed):
    calls = []
    installed(nvmath=fake_nvmath(calls, fail=RuntimeError("cuBLASLt 12.8 or newer is needed")), torch=fake_torch(calls))
    go, out, path = fp8_gemm.cublaslt_fp8(A8, BT8, False)
    assert out == "D from torch" and path.split(" (")[0].endswith(": torch._scaled_mm")
    assert "nvmath-python" in path and "failed: RuntimeError: cuBLASLt 12.8 or newer is needed" in path


def test_nvmath_without_pytorch_float8_is_not_a_path(installed):
    """nvmath-python takes FP8 operands as PyTorch float8 tensors (CuPy has no float8 dtype)."""
    calls = []
    old_torch = fake_torch(calls)
    del old_torch.float8_e4m3fn
    installed(nvmath=fake_nvmath(calls), torch=old_torch)
    assert fp8_gemm.nvmath_fp8(A8, BT8, False) is None
    assert fp8_gemm.cublaslt_fp8(A8, BT8, False) is None and not calls


def test_neither_installed_and_both_failing(installed):
    installed(nvmath=None, torch=None)
    assert fp8_gemm.cublaslt_fp8(A8, BT8, True) is None
    calls = []
    torch = fake_torch(calls)
    torch._scaled_mm = lambda *a, **k: (_ for _ in ()).throw(TypeError("unexpected keyword 'use_fast_accum'"))
    installed(nvmath=fake_nvmath(calls, fail=ValueError("no FP8 here")), torch=torch)
    with pytest.raises(RuntimeError, match="nvmath-python .*ValueError: no FP8 here; PyTorch .*TypeError"):
        fp8_gemm.cublaslt_fp8(A8, BT8, True)
    assert fp8_gemm.cublaslt_fp8(A8, BT8, True, paths=()) is None


def test_the_experiment_records_which_path_ran(installed):
    """Lesson 07's experiment (helpers.experiments.fp8): its cuBLASLt baseline hands back the path, which the
    sweep and speed rows record as `path`, or says why there is none."""
    from helpers.experiments import fp8 as X

    calls = []
    installed(nvmath=fake_nvmath(calls), torch=fake_torch(calls))
    t, err = X._torch_fp8(A8, BT8, False)
    assert err is None and t[1] == "D from nvmath" and t[2].startswith("nvmath-python ")
    installed(nvmath=None, torch=None)
    t, err = X._torch_fp8(A8, BT8, False)
    assert t is None and err.startswith("neither nvmath-python nor PyTorch is installed")
