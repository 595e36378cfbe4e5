"""Colab (issues 17 and 27): every lesson's setup cell and "Open in Colab" link, and the README's Colab line,
come from pyproject.toml (tools/colab.py, run by `make notebooks`): `Repository` under [project.urls] and
the package's name. Unset (the repository has no public address yet): no link anywhere, and the README
says why. Both states are tested; the committed files must be what the generator writes for the committed
value. The upload route (issue 27) is tested as the README describes it: an empty folder holding only
lesson 01 (with the setup cell tools/colab.py writes) and the course's wheel, a Python that has Colab's
usual packages but not the course, and a stand-in `google.colab`; the lesson must run."""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REPO = "https://github.com/example-org/tensor-core-course"


@pytest.fixture(scope="module")
def colab():
    spec = importlib.util.spec_from_file_location("colab", ROOT / "tools" / "colab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _stdout(cell) -> str:
    """A cell's printed text. The kernel may send one print's text in several stream messages (or two prints
    in one), so the outputs are joined before they are read as lines."""
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def _first_markdown(nb):
    return next(c for c in nb.cells if c.cell_type == "markdown")


# --------------------------------------------------------------------------- the one address
def test_the_address_is_read_from_pyproject(colab, tmp_path):
    p = tmp_path / "pyproject.toml"
    p.write_text('[project]\nname = "x"\n\n[project.urls]\n# Repository = "https://github.com/a/b"\n')
    assert colab.repository_url(p) is None
    p.write_text(f'[project]\nname = "x"\n\n[project.urls]\nRepository = "{REPO}/"\n')
    assert colab.repository_url(p) == REPO
    p.write_text('[project]\nname = "x"\n\n[project.urls]\nRepository = ""\n')
    assert colab.repository_url(p) is None


def test_the_address_appears_nowhere_else(colab):
    """The address is typed once: no lesson, README or tool spells a GitHub address of the course."""
    url = colab.repository_url()
    texts = [p.read_text() for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py")] + [(ROOT / "README.md").read_text()]
    if url is None:
        assert not any("colab.research.google.com/github" in t for t in texts)
        assert not any("/archive/refs/heads/" in t for t in texts)


def test_only_github_addresses_are_accepted(colab):
    with pytest.raises(SystemExit, match="GitHub"):
        colab.colab_url("https://gitlab.com/a/b", "00_start_here")
    assert colab.colab_url(REPO + ".git", "03_mixed_precision") == (
        "https://colab.research.google.com/github/example-org/tensor-core-course/blob/main/notebooks/03_mixed_precision.ipynb")
    assert colab.archive_url(REPO) == "https://github.com/example-org/tensor-core-course/archive/refs/heads/main.zip"


# --------------------------------------------------------------------------- both states, generated
@pytest.mark.parametrize("path", LESSONS[:2], ids=lambda p: p.stem)
def test_lessons_with_and_without_an_address(colab, path):
    nb = nbformat.read(path, as_version=4)
    lesson = path.stem
    colab.apply(nb, lesson, None)                       # unset: no link, the setup cell after the title
    title = _first_markdown(nb)
    assert "Open in Colab" not in title.source and "colab.research.google.com" not in title.source
    setup = nb.cells[nb.cells.index(title) + 1]
    assert setup.source.startswith(colab.SETUP_MARK) and "ARCHIVE = None" in setup.source
    assert setup.metadata == {"slideshow": {"slide_type": "skip"}, "jupyter": {"source_hidden": True}}
    plain = copy.deepcopy(nb)

    assert colab.apply(nb, lesson, REPO) is True        # set: the lesson's link ends the title cell
    title = _first_markdown(nb)
    assert title.source.endswith(f"\n\n[Open in Colab]({colab.colab_url(REPO, lesson)})")
    assert title.source.startswith("# ")                # the title slide's rules still hold
    setup = nb.cells[nb.cells.index(title) + 1]
    assert f"ARCHIVE = '{colab.archive_url(REPO)}'" in setup.source
    assert sum(colab._is_setup(c) for c in nb.cells) == 1
    assert colab.apply(nb, lesson, REPO) is False       # idempotent

    assert colab.apply(nb, lesson, None) is True        # unset again: back to the plain lesson
    assert [(c.cell_type, c.source, c.metadata) for c in nb.cells] == \
           [(c.cell_type, c.source, c.metadata) for c in plain.cells]
    colab.strip(nb)
    assert not any(colab._is_setup(c) for c in nb.cells)


def test_readme_with_and_without_an_address(colab):
    text = (ROOT / "README.md").read_text()
    unset = colab.update_readme(text, None)
    block = unset[unset.index(colab.README_BEGIN):unset.index(colab.README_END)]
    assert "Open in Colab" not in block and "await a public address" in block
    with_url = colab.update_readme(text, REPO)
    block = with_url[with_url.index(colab.README_BEGIN):with_url.index(colab.README_END)]
    assert f"[Open in Colab]({colab.colab_url(REPO, '00_start_here')})" in block
    assert colab.update_readme(with_url, None) == unset


def test_committed_lessons_and_readme_are_as_generated(colab, capsys):
    """What `make notebooks` would write for the committed address is what is committed."""
    assert colab.main(["--check"]) == 0, capsys.readouterr().out
    readme = (ROOT / "README.md").read_text()
    assert readme.count(colab.README_BEGIN) == 1


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_setup_cell_is_compared_and_says_nothing_to_install(colab, path):
    nb = nbformat.read(path, as_version=4)
    i = nb.cells.index(_first_markdown(nb))
    setup = nb.cells[i + 1]
    assert colab._is_setup(setup) and "tags" not in setup.metadata          # nbval compares its output
    text = "".join(o.get("text", "") for o in setup.outputs)
    assert text == "helpers is importable (a clone, or the course installed): nothing to install\n"


# --------------------------------------------------------------------------- what the cell does where
def _run_setup(source, monkeypatch, capsys, tmp_path, *, importable: bool, on_colab: bool, wheels=(), session=None):
    """Run the setup cell in this process, in the empty folder tmp_path holding `wheels` (file names),
    with helpers importable or not, google.colab importable or not, the notebook's path (session, as
    Jupyter sets JPY_SESSION_NAME) or none, and pip replaced by a recorder."""
    calls = []
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (real_find_spec(name, *a) if importable else None) if name == "helpers"
                        else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    if on_colab:
        google = types.ModuleType("google")
        google.colab = types.ModuleType("google.colab")
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", google.colab)
    else:
        monkeypatch.setitem(sys.modules, "google.colab", None)     # `import google.colab` raises ImportError
    if session is None:
        monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    else:
        monkeypatch.setenv("JPY_SESSION_NAME", str(session))
    for w in wheels:
        (tmp_path / w).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    exec(compile(source, "setup-cell", "exec"), {})
    return capsys.readouterr().out, calls


def _pip(source):
    return [sys.executable, "-m", "pip", "install", "-q", source]


@pytest.mark.parametrize("repo", [None, REPO])
def test_setup_cell_in_a_clone_does_nothing(colab, monkeypatch, capsys, tmp_path, repo):
    out, calls = _run_setup(colab.setup_source(repo), monkeypatch, capsys, tmp_path, importable=True, on_colab=True,
                            wheels=["tensor_core_course-0.1.0-py3-none-any.whl"])
    assert out == "helpers is importable (a clone, or the course installed): nothing to install\n" and not calls


def test_setup_cell_on_colab_installs_the_archive(colab, monkeypatch, capsys, tmp_path):
    out, calls = _run_setup(colab.setup_source(REPO), monkeypatch, capsys, tmp_path, importable=False, on_colab=True)
    assert calls == [_pip(colab.archive_url(REPO))]
    assert out.strip() == f"Colab: installed the course (helpers, kernels, recorded results) from {colab.archive_url(REPO)}"


@pytest.mark.parametrize("repo", [None, REPO])
def test_setup_cell_on_colab_installs_a_wheel_next_to_the_lesson(colab, monkeypatch, capsys, tmp_path, repo):
    """A course wheel in the lesson's folder is installed, with or without an address (the newest of several
    by name); wheels of other projects are not."""
    prefix = colab.wheel_prefix(colab.package_name())
    wheels = [f"{prefix}-0.1.0-py3-none-any.whl", f"{prefix}-0.2.0-py3-none-any.whl", "numpy-2.0.0-cp311-none.whl"]
    out, calls = _run_setup(colab.setup_source(repo), monkeypatch, capsys, tmp_path, importable=False, on_colab=True,
                            wheels=wheels)
    assert calls == [_pip(str(tmp_path / wheels[1]))]
    assert out == f"Colab: installed the course (helpers, kernels, recorded results) from {wheels[1]}\n"


def test_setup_cell_finds_the_wheel_next_to_the_notebook(colab, monkeypatch, capsys, tmp_path):
    """Jupyter names the notebook's path (JPY_SESSION_NAME): a wheel beside the notebook is found while the
    kernel runs in another folder."""
    lesson = tmp_path / "lesson"
    lesson.mkdir()
    whl = lesson / f"{colab.wheel_prefix(colab.package_name())}-0.1.0-py3-none-any.whl"
    whl.write_bytes(b"")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out, calls = _run_setup(colab.setup_source(None), monkeypatch, capsys, elsewhere, importable=False,
                            on_colab=True, session=lesson / "01_fp32_baseline.ipynb")
    assert calls == [_pip(str(whl))] and out.strip().endswith(f"from {whl.name}")


def test_setup_cell_on_colab_without_a_wheel_says_the_two_steps(colab, monkeypatch, capsys, tmp_path):
    out, calls = _run_setup(colab.setup_source(None), monkeypatch, capsys, tmp_path, importable=False, on_colab=True)
    assert not calls and len(out.strip().splitlines()) == 1
    assert "1. Get its wheel" in out and "pip wheel . --no-deps" in out and "2. Upload it" in out
    assert f"{colab.wheel_prefix(colab.package_name())}-*.whl" in out


@pytest.mark.parametrize("repo", [None, REPO])
def test_setup_cell_elsewhere_prints_the_install_command(colab, monkeypatch, capsys, tmp_path, repo):
    """Not on Colab: nothing is installed (a wheel lying there included); one line with the command."""
    out, calls = _run_setup(colab.setup_source(repo), monkeypatch, capsys, tmp_path, importable=False, on_colab=False,
                            wheels=["tensor_core_course-0.1.0-py3-none-any.whl"])
    assert not calls and len(out.strip().splitlines()) == 1
    assert out.strip().endswith(f"pip install {colab.archive_url(REPO)}" if repo else
                                "pip install -e /path/to/a/clone/of/the/course")


def test_setup_cell_source_is_short_and_names_the_package(colab):
    src = colab.setup_source(None, package="tensor-core-course")
    assert "tensor_core_course-*.whl" in src and len(src.splitlines()) <= 30
    assert max(map(len, src.splitlines())) <= 110
    assert colab.wheel_prefix("a.b-c__d") == "a_b_c_d"


# --------------------------------------------------------------------------- the upload route, simulated
@pytest.fixture(scope="module")
def colab_python(tmp_path_factory):
    """A Python with Colab's usual packages but not the course: a fresh venv whose site-packages reaches
    this Python's site-packages (numpy, matplotlib, ml_dtypes, ipykernel, pip) as a plain path, so that the
    .pth files there (the clone's editable install among them) do not run; and a stand-in google.colab
    package for PYTHONPATH. Returns (python, site-packages of the venv, the stand-in's folder)."""
    import numpy

    tmp = tmp_path_factory.mktemp("colab-python")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        text=True).strip())
    deps = Path(numpy.__file__).resolve().parent.parent
    assert not (deps / "helpers").exists(), deps
    (site / "colab_usual_packages.pth").write_text(f"{deps}\n")
    stub = tmp / "stub"
    (stub / "google" / "colab").mkdir(parents=True)
    (stub / "google" / "__init__.py").write_text("")
    (stub / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s google.colab."""\n')
    return py, site, stub


def _colab_env(stub: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "JPY_", "PIP_"))}
    env.update(PYTHONPATH=str(stub), COURSE_DEVICE="cpu", PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_the_setup_cell_outside_a_clone_in_a_real_python(colab, colab_python, tmp_path):
    """The generated cell, run by the simulated Colab Python in an empty folder: with google.colab and no
    wheel it prints the two steps; without google.colab the install command; one line each."""
    py, _, stub = colab_python
    src = colab.setup_source(None)
    for env, want in ((_colab_env(stub), "Colab: the course is not installed here. 1. Get its wheel"),
                      ({**_colab_env(stub), "PYTHONPATH": ""}, "helpers is not importable here; install the course")):
        p = subprocess.run([str(py), "-c", src], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and not p.stderr, p.stderr
        assert len(p.stdout.strip().splitlines()) == 1 and p.stdout.startswith(want), p.stdout


def test_lesson01_runs_from_an_uploaded_wheel_in_a_simulated_colab(colab, course_wheel, colab_python, tmp_path):
    """The README's upload route: an empty folder holding lesson 01 (its setup cell as tools/colab.py writes
    it) and the wheel; a Python with Colab's usual packages and no course; google.colab importable. Lesson 01
    runs top to bottom on the CPU backend, its setup cell says in one line that it installed the wheel, and
    helpers is imported from the wheel installed into that Python."""
    import nbformat
    from nbclient import NotebookClient

    py, site, stub = colab_python
    folder = tmp_path / "content"
    folder.mkdir()
    nb = nbformat.read(ROOT / "notebooks" / "01_fp32_baseline.ipynb", as_version=4)
    colab.apply(nb, "01_fp32_baseline", None)                # the setup cell of this tools/colab.py
    nbformat.write(nb, folder / "01_fp32_baseline.ipynb")
    whl = Path(folder / course_wheel.name)
    whl.write_bytes(course_wheel.read_bytes())
    assert sorted(p.name for p in folder.iterdir()) == sorted(["01_fp32_baseline.ipynb", whl.name])
    nb = nbformat.read(folder / "01_fp32_baseline.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import helpers, helpers.paths\nprint(helpers.__file__)\n"
                                              "print(helpers.paths.kernel_dir())"))
    spec = tmp_path / "jupyter" / "kernels" / "colab-sim"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [str(py), "-m", "ipykernel_launcher", "-f",
                                                           "{connection_file}"],
                                                  "display_name": "simulated Colab", "language": "python"}))
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(_colab_env(stub), JUPYTER_PATH=str(tmp_path / "jupyter"))    # the kernel inherits this
    try:
        NotebookClient(nb, timeout=600, kernel_name="colab-sim", resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors[0].get("evalue")
    setup = next(c for c in nb.cells if colab._is_setup(c))
    assert {o.get("name") for o in setup.outputs} == {"stdout"}, setup.outputs
    assert _stdout(setup) == f"Colab: installed the course (helpers, kernels, recorded results) from {whl.name}\n"
    out = _stdout(nb.cells[-1]).splitlines()
    assert out[0].startswith(str(site)), out                     # from the installed wheel, not the clone
    assert out[1] == str(site / "helpers" / "_data" / "kernels")
