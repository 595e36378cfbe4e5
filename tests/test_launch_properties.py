"""Property-based tests (hypothesis) of helpers.launch's validation: helpers.gemm on the CPU backend.

Whatever a learner passes -- any kernel, shape (including empty and 1-D/3-D), dtype, memory
layout (transposed, strided, reversed, offset views, unaligned buffers), pad on or off, or
something that is not an array at all -- helpers.gemm returns a product that passes the
course's own check (helpers.check_gemm with the kernel's tolerance), or raises a CourseError
whose message ends with a Fix. Never another exception.

Runs derandomized (the same examples every time, no example database) so `make test` stays
reproducible and quick.
"""
from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import helpers  # noqa: E402
from helpers import CourseError  # noqa: E402
from helpers.formats import from_bf16_bits, to_bf16_bits  # noqa: E402
from helpers.kernels import KERNELS  # noqa: E402
from helpers.launch import validate  # noqa: E402

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

DTYPES = ["float32", "float16", "float64", "uint16", "int32", "int8", "complex64", "bool", "bf16", "object"]
LAYOUTS = ["contiguous", "transposed", "column-step", "row-step", "reversed", "row-offset", "unaligned",
           "1-D", "3-D"]
NAMES = sorted(KERNELS)


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "uint16":                       # what the BF16 kernel expects: BF16 bit patterns
        return to_bf16_bits(x.astype(np.float32))
    if dtype == "bf16":
        return x.astype(BF16) if BF16 is not None else x.astype(np.float32)
    if dtype == "object":
        return x.astype(object)
    return x.astype(dtype)


def _layout(rows: int, cols: int, dtype: str, layout: str, seed: int):
    """A (rows x cols) matrix (or a wrong-rank array) in the given memory layout."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    if layout == "contiguous":
        return _cast(x, dtype)
    if layout == "transposed":                  # Fortran order: a transposed view
        return np.ascontiguousarray(_cast(x, dtype).T).T
    if layout == "column-step":
        big = _cast(rng.standard_normal((rows, 2 * cols)), dtype)
        return big[:, ::2]
    if layout == "row-step":
        big = _cast(rng.standard_normal((2 * rows, cols)), dtype)
        return big[::2]
    if layout == "reversed":
        return _cast(x, dtype)[::-1]
    if layout == "row-offset":                  # C-contiguous view that starts one row in
        return _cast(rng.standard_normal((rows + 1, cols)), dtype)[1:]
    if layout == "unaligned":                   # C-contiguous, but one byte off the dtype's alignment
        a = _cast(x, dtype)
        if a.dtype == object:
            return a
        buf = np.zeros(a.nbytes + 1, dtype=np.uint8)
        u = np.frombuffer(buf.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
        u[...] = a
        return u
    if layout == "1-D":
        return _cast(x.ravel(), dtype)
    if layout == "3-D":
        return _cast(x.reshape(1, rows, cols), dtype)
    raise ValueError(layout)


def _values(spec, X):
    """The numbers a kernel's input array stands for (BF16 bit patterns decoded)."""
    return from_bf16_bits(X).astype(np.float64) if spec.inputs == "bf16" else np.asarray(X, dtype=np.float64)


def _outcome(name, A, B, pad):
    """Run gemm; assert the property; return 'ok' or 'error' (for statistics)."""
    spec = KERNELS[name]
    try:
        C = helpers.gemm(name, A, B, pad=pad)
    except CourseError as exc:
        msg = str(exc)
        assert "\nFix: " in msg and len(exc.problem) > 10, msg
        return "error"
    M, K = A.shape
    N = B.shape[1]
    assert isinstance(C, np.ndarray) and C.shape == (M, N), (type(C), getattr(C, "shape", None))
    assert C.dtype == np.dtype(spec.out_dtype)
    chk = spec.check(C, _values(spec, A), _values(spec, B), backend="CPU")
    assert chk.passed, f"{chk}\n{name} M={M} N={N} K={K} pad={pad}"
    return "ok"


@SETTINGS
@given(name=st.sampled_from(NAMES), M=st.integers(0, 40), N=st.integers(0, 40), K=st.integers(0, 40),
       pad=st.booleans(), seed=st.integers(0, 2**16), data=st.data())
def test_gemm_is_correct_or_a_course_error(name, M, N, K, pad, seed, data):
    own = "uint16" if KERNELS[name].inputs == "bf16" else KERNELS[name].in_dtype
    # half the time the kernel's own dtype, and layouts that are C-contiguous more often than not
    dtype = st.one_of(st.just(own), st.sampled_from(DTYPES))
    layout = st.one_of(st.sampled_from(["contiguous", "row-offset", "unaligned"]), st.sampled_from(LAYOUTS))
    A = _layout(M, K, data.draw(dtype, "dtype A"), data.draw(layout, "layout A"), seed)
    B = _layout(K, N, data.draw(dtype, "dtype B"), data.draw(layout, "layout B"), seed + 1)
    if A.ndim == 2 and B.ndim == 2:
        hypothesis.event(_outcome(name, A, B, pad))
    else:
        with pytest.raises(CourseError):
            helpers.gemm(name, A, B, pad=pad)


@SETTINGS
@given(name=st.sampled_from(NAMES), M=st.integers(1, 48), N=st.integers(1, 48), K=st.integers(1, 48),
       pad=st.booleans(), seed=st.integers(0, 2**16))
def test_valid_inputs_in_the_kernels_dtype(name, M, N, K, pad, seed):
    """The happy path, often: the kernel's own dtype, contiguous; only the size multiple can refuse."""
    spec = KERNELS[name]
    dt = "uint16" if spec.inputs == "bf16" else spec.in_dtype
    A = _layout(M, K, dt, "contiguous", seed)
    B = _layout(K, N, dt, "contiguous", seed + 1)
    result = _outcome(name, A, B, pad)
    hypothesis.event(result)
    fits = spec.padded(M, N, K) == (M, N, K)
    assert result == ("ok" if (pad or fits) else "error")


@SETTINGS
@given(name=st.sampled_from(NAMES), M=st.integers(1, 40), K=st.integers(1, 40), N=st.integers(1, 40),
       K2=st.integers(1, 40))
def test_inner_dimension_mismatch_names_both_shapes(name, M, K, N, K2):
    spec = KERNELS[name]
    dt = "uint16" if spec.inputs == "bf16" else spec.in_dtype
    A = _layout(M, K, dt, "contiguous", 1)
    B = _layout(K2, N, dt, "contiguous", 2)
    if K == K2:
        return
    with pytest.raises(CourseError) as ei:
        helpers.gemm(name, A, B, pad=True)
    assert f"{M}x{K}" in str(ei.value) and f"{K2}x{N}" in str(ei.value)


NOT_ARRAYS = [None, 3.0, "A", [[1.0, 2.0], [3.0, 4.0]], ((1.0,),), {"a": 1}, object(), b"\x00\x01"]


@SETTINGS
@given(name=st.sampled_from(NAMES), which=st.sampled_from(["A", "B", "both"]),
       junk=st.sampled_from(range(len(NOT_ARRAYS))), pad=st.booleans())
def test_things_that_are_not_arrays(name, which, junk, pad):
    spec = KERNELS[name]
    dt = "uint16" if spec.inputs == "bf16" else spec.in_dtype
    good = _layout(16, 16, dt, "contiguous", 3)
    A = NOT_ARRAYS[junk] if which in ("A", "both") else good
    B = NOT_ARRAYS[junk] if which in ("B", "both") else good
    with pytest.raises(CourseError) as ei:
        validate(spec, A, B, pad)
    assert "not an array" in str(ei.value) and "Fix:" in str(ei.value)
