"""Shared setup for the helpers unit tests: CPU backend, repo root on sys.path."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

# A test run leaves the work tree as it found it: no bytecode caches (here and in the child processes and
# notebook kernels the tests start), hypothesis's files in a temporary folder (below), the wheel built from a copy.
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GPU_TESTS = ROOT / "tests" / "gpu"      # collected only when named: pytest tests/gpu (make gpu-check's tests stage)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Force the CPU backend before helpers is imported anywhere (no GPU probing).
# Exception: an explicit COURSE_DEVICE=gpu run keeps 'gpu' for the GPU-only test
# modules (tests/gpu/; they read the variable when it is collected); every other test
# still runs on the CPU backend (see _cpu_backend below).
ORIGINAL_DEVICE = os.environ.get("COURSE_DEVICE")
if (ORIGINAL_DEVICE or "").strip().lower() != "gpu":
    os.environ["COURSE_DEVICE"] = "cpu"

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import helpers  # noqa: E402,F401
import helpers.device  # noqa: E402


# --------------------------------------------------------------------------- sweeps: a sample by default, all with --full
def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="run every case of the sweeps (every kernel and rung of the check's mutation matrices, "
                          "every knob value built with nvcc, ...); the default run takes one case of each kind. "
                          "make gpu-check's tests stage runs `pytest tests --full -m sweep`.")


_FULL = False


def full_sweeps() -> bool:
    """Whether this run was asked for the whole sweeps (pytest --full)."""
    return _FULL


def sweep(cases, keep, ids=None):
    """The cases of a sweep, for @pytest.mark.parametrize: all of `cases` with `pytest --full`, else those `keep`
    picks (a predicate of a case, or a collection of cases), one of each kind: enough to show the test can fail.
    Each case is marked `sweep`, so that `pytest tests --full -m sweep` runs the sweeps alone. `ids` as
    parametrize's (a list as long as `cases`, or a function of a case)."""
    cases = list(cases)
    picked = keep if callable(keep) else (lambda c, kept=list(keep): c in kept)
    out = []
    for i, case in enumerate(cases):
        if not (_FULL or picked(case)):
            continue
        values = case if isinstance(case, tuple) else (case,)
        id_ = ids[i] if isinstance(ids, (list, tuple)) else ids(case) if ids else None
        out.append(pytest.param(*values, id=id_, marks=pytest.mark.sweep))
    assert out, "a sweep keeps at least one case"
    return out


def sweep_cases(cases, keep):
    """The cases of a sweep a test loops over itself: all with `pytest --full`, else those `keep` picks (as in
    sweep()). Mark the test @pytest.mark.sweep."""
    cases = list(cases)
    picked = keep if callable(keep) else (lambda c, kept=list(keep): c in kept)
    return cases if _FULL else [c for c in cases if picked(c)]


def full_only(test):
    """Decorator: a test that is a sweep as a whole (nvcc builds of every variant, ...), run by `pytest --full` only
    (make gpu-check's tests stage); without --full it is reported as skipped."""
    skip = pytest.mark.skipif("not config.getoption('full')", reason="a sweep: runs with pytest --full (make gpu-check)")
    return pytest.mark.sweep(skip(test))


def pytest_configure(config):
    """--full, the `sweep` marker; hypothesis keeps its example database and caches in a temporary folder, not
    in .hypothesis/ here."""
    global _FULL
    _FULL = bool(config.getoption("full", False))
    config.addinivalue_line("markers", "sweep: a case of a sweep (all cases with --full, a sample without)")
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:                                               # pragma: no cover
        return
    config._course_hypothesis_dir = tempfile.mkdtemp(prefix="course-hypothesis-")
    set_hypothesis_home_dir(config._course_hypothesis_dir)


def pytest_unconfigure(config):
    folder = getattr(config, "_course_hypothesis_dir", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _cpu_backend(request):
    """Every CPU test starts on the CPU backend; the backend cache is cleared before and after.

    Autouse fixtures are set up before `monkeypatch`, so this teardown runs after
    monkeypatch has restored COURSE_DEVICE: the next backend() call sees 'cpu' again.
    Tests in tests/gpu/ see the session's own COURSE_DEVICE instead.
    """
    gpu_module = GPU_TESTS in request.node.path.parents
    want = ORIGINAL_DEVICE if gpu_module else "cpu"

    def apply():
        if want is None:
            os.environ.pop("COURSE_DEVICE", None)
        else:
            os.environ["COURSE_DEVICE"] = want
        helpers.device.backend.cache_clear()

    if not gpu_module or os.environ.get("COURSE_DEVICE") != want:
        apply()
    yield
    if not gpu_module:
        apply()


@pytest.fixture
def set_device(monkeypatch):
    """set_device('gpu') sets COURSE_DEVICE for this test only and clears the backend cache."""

    def _set(value: str):
        monkeypatch.setenv("COURSE_DEVICE", value)
        helpers.device.backend.cache_clear()

    return _set


# --------------------------------------------------------------------------- exact rounding reference
def round_fraction(x: Fraction, precision: int, emax: int | None = None) -> Fraction | float:
    """Round an exact rational to `precision` significant bits, to nearest, ties to even.

    Independent of numpy/ml_dtypes: works on Python integers only. Normal range
    only (no subnormals); if emax is given, results >= 2**(emax+1) become +-inf.
    """
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    # now 2**e <= a < 2**(e+1)
    assert Fraction(2) ** e <= a < Fraction(2) ** (e + 1)
    scale = Fraction(2) ** (e - precision + 1)
    q = a / scale
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * scale
    if emax is not None and r >= Fraction(2) ** (emax + 1):
        return sign * float("inf")
    return sign * r


def to_f32_exact(x: Fraction) -> np.float32:
    """Correctly rounded float32 of an exact rational (normal range)."""
    r = round_fraction(x, 24, emax=127)
    if isinstance(r, float):
        return np.float32(r)
    f = float(r)           # exact: 24 significant bits fit in a double
    assert Fraction(f) == r
    return np.float32(f)


def numpy_cupy():
    """A stand-in for the `cupy` module made of numpy: enough for the timing code paths that tests run
    without a GPU (dtypes, empty, matmul, and a seeded random generator)."""
    import types

    cupy = types.ModuleType("cupy")
    cupy.float16, cupy.float32 = np.float16, np.float32
    cupy.empty, cupy.empty_like = np.empty, np.empty_like
    cupy.matmul = lambda A, B, out=None: np.matmul(A, B, out=out)

    class Rng:
        def __init__(self, seed):
            self.g = np.random.default_rng(seed)

        def standard_normal(self, shape, dtype=np.float32):
            return self.g.standard_normal(shape).astype(dtype)
    cupy.random = types.SimpleNamespace(default_rng=Rng)
    return cupy


@pytest.fixture(scope="session")
def course_wheel(tmp_path_factory):
    """The course's wheel, built once per test run as the README says (pip wheel . --no-deps): in pip's
    isolated build environment, or, offline (the GPU machine), with the setuptools installed here.
    tests/test_package.py and tests/test_colab.py both use it."""
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of what the wheel is made of: setuptools writes build/ and *.egg-info/ beside setup.py
    src = tmp_path_factory.mktemp("course-src")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "requirements.txt"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("helpers", "kernels", "results"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "logs"))
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 and importlib.util.find_spec("setuptools"):
        p = subprocess.run(cmd + ["--no-build-isolation"], capture_output=True, text=True)
    if p.returncode != 0 and "invalid command 'bdist_wheel'" in p.stderr + p.stdout:   # pragma: no cover
        pytest.skip("setuptools cannot build wheels here")
    assert p.returncode == 0, p.stderr[-2000:]
    (whl,) = out.glob("*.whl")
    return whl


def quoted_slides(lesson: str, heading: str) -> tuple[list[str], set[str]]:
    """The slide titles quoted ("...") on the slide `heading` of notebooks/<lesson>.py (one of its '### ' headings), and
    every '### ' heading of that lesson: for a list of slides, that each one it names exists."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "notebooks" / f"{lesson}.py").read_text()
    start = text.index(f"# ### {heading}")
    block = " ".join(text[start:text.index("# %%", start)].replace("\n# ", " ").split())
    headings = {ln[len("# ### "):].strip() for ln in text.splitlines() if ln.startswith("# ### ")}
    return re.findall(r'"([^"]+)"', block), headings
