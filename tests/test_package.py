"""The course as an installed package (issue 17): the wheel carries the kernels and the recorded
results, and a lesson copied alone into an empty folder runs from it (CPU backend)."""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(course_wheel):
    return course_wheel            # tests/conftest.py builds it once for this module and test_colab.py


def test_wheel_carries_kernels_and_results(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for cu in [*(ROOT / "kernels").glob("*.cu"), *(ROOT / "kernels").glob("*.cuh")]:
        assert f"helpers/_data/kernels/{cu.name}" in names
    for rec in (ROOT / "results").glob("*.json"):
        assert f"helpers/_data/results/{rec.name}" in names
    assert "helpers/experiments/ladder.py" in names and "helpers/exercises/__init__.py" in names


def install(wheel, tmp_path) -> Path:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    return site


def pythonpath(site: Path) -> str:
    """The installed package first, then whatever else PYTHONPATH held (where Jupyter itself may come
    from, as on the GPU machine), but never the clone."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    return os.pathsep.join([str(site), *rest])


def test_a_lesson_copied_alone_runs_from_the_installed_package(wheel, tmp_path):
    site = install(wheel, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", empty)
    nb = nbformat.read(empty / "00_start_here.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import helpers, helpers.paths\nprint(helpers.__file__)\nprint(helpers.paths.kernel_dir())"))
    env = dict(os.environ, PYTHONPATH=pythonpath(site), COURSE_DEVICE="cpu")
    env.pop("COURSE_KERNELS_DIR", None)
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)          # the kernel process inherits this environment
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(empty)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout").splitlines()
    assert out[0].startswith(str(site)), out           # helpers imported from the installed package
    assert out[1] == str(site / "helpers" / "_data" / "kernels")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors
    setup = next(c for c in nb.cells if c.cell_type == "code")       # tools/colab.py's setup cell: a no-op here
    assert "".join(o.get("text", "") for o in setup.outputs).startswith("helpers is importable")


def test_binder_pins_follow_requirements():
    """binder/requirements.txt (the CPU image for Binder or JupyterHub) pins what requirements.txt pins,
    without CuPy; postBuild installs the helpers."""
    def pins(path):
        out = {}
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                name = line.split("=")[0].split(">")[0].split("<")[0].strip().lower()
                out[name] = line.replace(" ", "")
        return out

    course, binder = pins(ROOT / "requirements.txt"), pins(ROOT / "binder" / "requirements.txt")
    assert not any(n.startswith("cupy") for n in binder)
    for name, line in binder.items():
        assert course.get(name) == line, (name, line, course.get(name))
    assert "pip install --no-deps -e ." in (ROOT / "binder" / "postBuild").read_text()
    assert "COURSE_DEVICE=cpu" in (ROOT / "binder" / "start").read_text()


HOPPER_FROM_THE_PACKAGE = """
import numpy as np
import helpers, helpers.paths
from helpers import fp8_gemm as F
from helpers.experiments import fp8 as X
from helpers.kernels import HOPPER_RUNGS
gpu = helpers.backend().gpu
if gpu is None or tuple(gpu.cc) != (9, 0):
    raise SystemExit("SKIP: not a Hopper GPU")
print("helpers", helpers.__file__)
print("kernels", helpers.paths.kernel_dir())
r = HOPPER_RUNGS[13]                     # isolated: runs in a child process, which must import the same package
A = helpers.random_matrix(257, 136, seed=1).astype(np.float16)
B = helpers.random_matrix(136, 520, seed=2).astype(np.float16)
print("rung_13", bool(r.check(helpers.gemm(r, A, B, pad=True), A, B).passed))
A, B = X.random_inputs(257, 520, 136, "normal", 5)
C, where = F.matmul("fp8_wgmma", A, B)
print("fp8_wgmma", bool(X.check_fp8("fp8_wgmma", C, A, B, backend="GPU").passed))
"""


@pytest.mark.skipif(os.environ.get("COURSE_DEVICE") != "gpu", reason="GPU test: COURSE_DEVICE=gpu on a Hopper GPU")
def test_the_installed_package_runs_the_hopper_kernels(wheel, tmp_path):
    """From the wheel, outside the clone: the sm_90a files compile with their shared header
    (kernels/hopper_primitives.cuh, found in helpers/_data/kernels through -I) and give correct results."""
    site = install(wheel, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = dict(os.environ, PYTHONPATH=pythonpath(site), COURSE_DEVICE="gpu")
    env.pop("COURSE_KERNELS_DIR", None)
    p = subprocess.run([sys.executable, "-c", HOPPER_FROM_THE_PACKAGE], cwd=empty, env=env, capture_output=True,
                       text=True, timeout=600)
    if "SKIP:" in p.stderr:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in p.stdout.strip().splitlines())
    assert lines["helpers"].startswith(str(site)) and lines["kernels"] == str(site / "helpers" / "_data" / "kernels")
    assert lines["rung_13"] == "True" and lines["fp8_wgmma"] == "True", p.stdout


def test_every_setup_asks_for_the_python_the_pins_need():
    """The pins (requirements.txt: matplotlib, ipykernel and hypothesis as pinned need Python 3.11) and every place
    that names a Python agree: pyproject's requires-python, environment.yml, binder/runtime.txt (repo2docker), the
    Makefile's check before it makes .venv, and the README's requirement under its two commands."""
    import re

    need = "3.11"
    assert re.search(r'requires-python = ">=3\.11"', (ROOT / "pyproject.toml").read_text())
    assert f"python={need}" in (ROOT / "environment.yml").read_text()
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{need}"
    assert f"Python {need}+" in (ROOT / "README.md").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_refuses_an_old_or_missing_python_and_a_broken_venv(tmp_path):
    """Before it makes .venv, the Makefile refuses a Python older than 3.11, a PYTHON that is not installed, and a
    .venv whose interpreter is old or gone, each with a message that names the fix, and installs nothing."""
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    old = tmp_path / "python3.10"
    old.write_text('#!/bin/sh\n[ "$1" = "-V" ] && echo "Python 3.10.12" && exit 0\nexit 1\n')
    old.chmod(0o755)

    def make(*args):
        p = subprocess.run(["make", "--no-print-directory", ".venv/.installed", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    rc, out = make(f"PYTHON={old}")
    assert rc != 0 and "needs Python 3.11 or newer" in out and "Python 3.10.12" in out and "PYTHON=" in out
    rc, out = make("PYTHON=python3.99-not-here")
    assert rc != 0 and "No python3.99-not-here on this machine" in out
    assert not (tmp_path / ".venv").exists()                      # nothing made
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /nowhere\n")
    rc, out = make(f"PYTHON={sys.executable}")                     # a .venv whose Python is gone
    assert rc != 0 and "rm -rf .venv" in out
    shutil.copy(old, tmp_path / ".venv" / "bin" / "python")        # one made with an old Python
    rc, out = make(f"PYTHON={sys.executable}")
    assert rc != 0 and "rm -rf .venv" in out and "3.10.12" in out
