"""The README's Troubleshooting table quotes the helpers' messages verbatim, and each is triggered here.

Every backticked quote in the first column of the table must match, from its start, a message
that one of the scenarios below really produces ('...' stands for the variable parts); every
scenario's message must be quoted by some row. So a change of wording in the helpers, or a
new kind of error, fails this test until the README follows.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import helpers
import helpers.compile
import helpers.device
import helpers.errors
import helpers.memory
import helpers.results
from conftest import ROOT
from test_reliability import ILLEGAL, LEARNER_SRC, NVRTC_LOG, fake_gpu


def readme_quotes() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    quotes = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| message") and not set(line) <= set("|- "):
            cell = re.findall(r"`([^`]+)`", line.split(" | ")[0])
            # `results file ... does not exist` / `is not valid JSON`: a later quote in the cell
            # continues the first one's opening words
            quotes += cell[:1] + [cell[0].split("...")[0] + "..." + q for q in cell[1:]]
    return quotes


def quote_regex(quote: str) -> re.Pattern:
    parts = [re.escape(p) for p in quote.split("...")]
    return re.compile(".*?".join(parts), re.S)


def _raised(fn) -> str:
    with pytest.raises(Exception) as ei:
        fn()
    assert isinstance(ei.value, helpers.CourseError), f"{type(ei.value).__name__}: {ei.value}"
    assert "\nFix: " in str(ei.value)
    return str(ei.value)


# --------------------------------------------------------------------------- the scenarios
def no_gpu(set_device, monkeypatch, tmp_path):
    def probe():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    monkeypatch.setattr(helpers.device, "_probe_gpu", probe)
    set_device("gpu")
    return _raised(helpers.device.backend)


def driver_mismatch(set_device, monkeypatch, tmp_path):
    def probe():   # what CuPy says when its CUDA runtime is newer than the driver
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")

    monkeypatch.setattr(helpers.device, "_probe_gpu", probe)
    monkeypatch.setattr(helpers.device, "_driver_cuda_version", lambda: "12.2")
    set_device("gpu")
    msg = _raised(helpers.device.backend)
    set_device("auto")         # without COURSE_DEVICE=gpu: CPU backend, and the reason says the same
    assert helpers.errors.DRIVER_MISMATCH in helpers.device.backend().reason
    return msg


def driver_mismatch_at_load(set_device, monkeypatch, tmp_path):
    class Mod:
        def get_function(self, name):
            raise type("CUDADriverError", (RuntimeError,), {})(
                "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.")

    monkeypatch.setattr(helpers.device, "backend", fake_gpu)
    monkeypatch.setattr(helpers.compile, "load_module", lambda f, o=(), source=None: Mod())
    return _raised(lambda: helpers.compile.get_kernel("wmma.cu", "wmma_gemm_naive", (7, 0)))


def headers_missing(set_device, monkeypatch, tmp_path):
    monkeypatch.setattr(helpers.compile, "candidate_include_dirs", lambda *a, **k: [(tmp_path, "test")])
    return _raised(helpers.compile.find_cuda_include_dirs)


def gpu_too_old(set_device, monkeypatch, tmp_path):
    monkeypatch.setattr(helpers.device, "backend", lambda: fake_gpu(cc=(7, 5), name="Tesla T4"))
    return _raised(lambda: helpers.compile.get_kernel("mixed_precision.cu", "wmma_bf16_gemm_kernel", (8, 0)))


def not_multiple_of_16(set_device, monkeypatch, tmp_path):
    A = np.ones((33, 49), np.float16)
    B = np.ones((49, 17), np.float16)
    return _raised(lambda: helpers.wmma_mixed(A, B))


def unknown_kernel(set_device, monkeypatch, tmp_path):
    A = np.ones((16, 16), np.float16)
    return _raised(lambda: helpers.gemm("wmma_mixed", A, A))


def results_missing(set_device, monkeypatch, tmp_path):
    return _raised(lambda: helpers.results.load_record(tmp_path / "nvidia-t4.json"))


def results_not_json(set_device, monkeypatch, tmp_path):
    p = tmp_path / "nvidia-t4.json"
    p.write_text("{ not json")
    return _raised(lambda: helpers.results.load_record(p))


def compile_error(set_device, monkeypatch, tmp_path):
    return str(helpers.compile.compile_error("exercise_tiled.cu", LEARNER_SRC, NVRTC_LOG))


def wrong_result(set_device, monkeypatch, tmp_path):
    A = helpers.random_matrix(8, 32, seed=1)
    B = helpers.random_matrix(32, 6, seed=2)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    C[2, 3] = np.nan
    return helpers.check_gemm(C, A, B, inputs="fp32", acc="fp32").mismatch_summary()


def context_lost(set_device, monkeypatch, tmp_path):
    def boom():
        with helpers.errors.gpu_errors("wmma_gemm_naive at M=33 N=17 K=49"):
            raise ILLEGAL
    return _raised(boom)


def out_of_memory(set_device, monkeypatch, tmp_path):
    def boom():
        with helpers.errors.gpu_errors("the sweep at size 8192"):
            raise type("OutOfMemoryError", (MemoryError,), {})("Out of memory allocating 1,073,741,824 bytes")
    return _raised(boom)


def sweep_capped(set_device, monkeypatch, tmp_path):
    kept, note = helpers.memory.cap_sizes([4096, 8192, 16384], free=15 * 2**30, what="sweep")
    assert kept == [4096, 8192]
    return note


def cuda_bindings_missing(set_device, monkeypatch, tmp_path):
    import sys
    import types

    import helpers.hopper

    monkeypatch.setitem(sys.modules, "cuda.bindings", None)        # import cuda.bindings now fails
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    X = types.SimpleNamespace(shape=(64, 64), dtype=np.dtype(np.float16), data=types.SimpleNamespace(ptr=0x1000))
    return _raised(lambda: helpers.hopper.tensor_map_2d(X, 64, 64))


SCENARIOS = [no_gpu, driver_mismatch, driver_mismatch_at_load, headers_missing, gpu_too_old, not_multiple_of_16,
             unknown_kernel, results_missing, results_not_json, compile_error, wrong_result, context_lost, out_of_memory,
             sweep_capped, cuda_bindings_missing]


@pytest.fixture
def messages(set_device, monkeypatch, tmp_path):
    out = {}
    for fn in SCENARIOS:
        with monkeypatch.context() as m:
            out[fn.__name__] = fn(set_device, m, tmp_path)
        helpers.device.backend.cache_clear()
    return out


def test_every_readme_quote_is_a_real_message(messages):
    quotes = readme_quotes()
    assert len(quotes) >= 13, quotes
    for q in quotes:
        rx = quote_regex(q)
        hits = [name for name, msg in messages.items() if any(rx.match(line) for line in _starts(msg))]
        assert hits, f"README quotes `{q}`, but no helper message starts like that:\n" + "\n".join(
            f"  {n}: {m.splitlines()[0][:160]}" for n, m in messages.items())


def test_every_message_is_in_the_readme(messages):
    rxs = [quote_regex(q) for q in readme_quotes()]
    for name, msg in messages.items():
        assert any(rx.match(line) for rx in rxs for line in _starts(msg)), \
            f"scenario {name}: the README's Troubleshooting table does not quote:\n{msg}"


def _starts(msg: str) -> list[str]:
    """Where a quote may start matching: the message itself and each of its lines (a learner sees
    the message's lines; e.g. 'first wrong element ...' is the second line of a mismatch summary)."""
    lines = msg.splitlines()
    return [msg] + ["\n".join(lines[i:]) for i in range(1, len(lines))]
