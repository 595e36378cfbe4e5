"""What running every lesson in JupyterLab 4.6.6 found (issue 17), one test per finding, so none comes
back: the kernel's display name that JupyterLab writes on save is the committed one; the README's RISE
instructions name what jupyterlab-rise 0.43 has; RISE finds rise.css and <notebook>.css (no 404);
`make lab` works as root; without any NVIDIA driver the summary says so (not "driver version is
insufficient"); an exercise answered with text says what it expects."""
from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import helpers.device
from helpers import exercises
from helpers.exercises import baseline, hopper, ladder, mixed, precision, wmma

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_kernel_display_name_is_what_make_installs():
    """`make` installs the kernel as "Python 3 (tensor-core course)"; a notebook saved in JupyterLab gets
    that name, so every committed notebook carries it already (saving changes nothing)."""
    m = re.search(r'ipykernel install .*--display-name "([^"]+)"', (ROOT / "Makefile").read_text())
    assert m, "the Makefile no longer installs the course's kernel"
    for path in LESSONS:
        spec = json.loads(path.read_text())["metadata"]["kernelspec"]
        assert spec == {"display_name": m.group(1), "language": "python", "name": "python3"}, path.name
    toml = (ROOT / "notebooks" / "jupytext.toml").read_text()
    assert "kernelspec" in toml          # the text halves carry it too, so jupytext does not drop it


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_rise_finds_its_style_sheets(path):
    """jupyterlab-rise requests rise.css and <notebook>.css next to the notebook: both exist (no 404)."""
    assert (path.parent / "rise.css").is_file()
    css = path.with_suffix(".css")
    assert css.is_file(), f"add {css.relative_to(ROOT)} (a one-line comment like the other lessons' .css)"


def test_make_lab_as_root_passes_allow_root():
    """As root JupyterLab refuses to start without --allow-root; `make lab` adds it then, and only then."""
    out = subprocess.run(["make", "-n", "-W", ".venv/.installed", "lab"], cwd=ROOT, capture_output=True,
                         text=True).stdout
    line = next(ln for ln in out.splitlines() if "jupyter lab" in ln)
    assert ("--allow-root" in line) == (os.geteuid() == 0), line


def test_summary_without_any_nvidia_driver_says_so(monkeypatch, capsys):
    """No driver at all: CuPy reports cudaErrorInsufficientDriver, which reads as "update your driver"; the
    CPU fallback's reason (what helpers.summary() prints) says that no NVIDIA driver was found."""
    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")

    monkeypatch.setattr(helpers.device, "_probe_gpu", no_driver)
    monkeypatch.setattr(helpers.device, "_driver_cuda_version", lambda: None)
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    helpers.device.backend.cache_clear()
    try:
        rows = helpers.device.summary()
    finally:
        helpers.device.backend.cache_clear()
    backend_line = capsys.readouterr().out.splitlines()[0]
    assert rows["backend"].startswith("CPU (no usable CUDA GPU (no NVIDIA driver was found on this machine")
    assert "no NVIDIA driver was found" in backend_line and "do not match" not in backend_line


def _answer_checkers():
    for mod in (exercises, baseline, hopper, ladder, mixed, precision, wmma):
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            params = list(inspect.signature(fn).parameters.values())
            if fn.__module__ == mod.__name__ and params and params[0].name == "answer" and name != "as_number":
                sizes = [16] * sum(p.default is p.empty for p in params[1:])      # M, N, K, tile, bx, by, ...
                yield pytest.param(fn, sizes, id=f"{mod.__name__.rsplit('.', 1)[-1]}.{name}")


@pytest.mark.parametrize("checker, sizes", list(_answer_checkers()))
def test_every_exercise_answered_with_text_says_what_it_expects(checker, sizes, capsys):
    checker("n/6", *sizes)                           # never raises
    out = capsys.readouterr().out
    assert "expects a number" in out and "'n/6'" in out and exercises.last_result is False, out
    lines = out.strip().splitlines()
    assert sum(not ln.startswith(" ") for ln in lines) == 1 and all(len(ln) <= 100 for ln in lines)   # one message, wrapped
