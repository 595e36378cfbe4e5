"""Colab (issue 17): every lesson's setup cell and "Open in Colab" link, and the README's Colab line, come
from one value, `Repository` under [project.urls] in pyproject.toml (tools/colab.py, run by `make
notebooks`). Unset (the repository has no public address yet): no link anywhere, and the README says
why. Both states are tested; the committed files must be what the generator writes for the committed
value."""
from __future__ import annotations

import copy
import importlib.util
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
    assert setup.metadata == {"slideshow": {"slide_type": "skip"}}
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
    if colab.repository_url() is None:
        assert "the Colab links await a public address of the repository" in readme


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_setup_cell_is_compared_and_says_nothing_to_install(colab, path):
    nb = nbformat.read(path, as_version=4)
    i = nb.cells.index(_first_markdown(nb))
    setup = nb.cells[i + 1]
    assert colab._is_setup(setup) and "tags" not in setup.metadata          # nbval compares its output
    text = "".join(o.get("text", "") for o in setup.outputs)
    assert text == "helpers is importable (a clone, or the course installed): nothing to install\n"


# --------------------------------------------------------------------------- what the cell does where
def _run_setup(source, monkeypatch, capsys, *, importable: bool, on_colab: bool):
    calls = []
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (real_find_spec(name, *a) if importable else None) if name == "helpers"
                        else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(source, "setup-cell", "exec"), {})
    return capsys.readouterr().out, calls


@pytest.mark.parametrize("repo", [None, REPO])
def test_setup_cell_in_a_clone_does_nothing(colab, monkeypatch, capsys, repo):
    out, calls = _run_setup(colab.setup_source(repo), monkeypatch, capsys, importable=True, on_colab=True)
    assert out == "helpers is importable (a clone, or the course installed): nothing to install\n" and not calls


def test_setup_cell_on_colab_installs_the_archive(colab, monkeypatch, capsys):
    out, calls = _run_setup(colab.setup_source(REPO), monkeypatch, capsys, importable=False, on_colab=True)
    assert calls == [[sys.executable, "-m", "pip", "install", "-q", colab.archive_url(REPO)]]
    assert out.strip() == f"Colab: installed the course (helpers, kernels, recorded results) from {colab.archive_url(REPO)}"


@pytest.mark.parametrize("on_colab", [False, True])
def test_setup_cell_elsewhere_prints_the_install_command(colab, monkeypatch, capsys, on_colab):
    out, calls = _run_setup(colab.setup_source(REPO), monkeypatch, capsys, importable=False, on_colab=False)
    assert not calls and out.strip().endswith(f"pip install {colab.archive_url(REPO)}")
    # without an address (Colab included) there is no archive to install: the command for a clone
    out, calls = _run_setup(colab.setup_source(None), monkeypatch, capsys, importable=False, on_colab=on_colab)
    assert not calls and len(out.strip().splitlines()) == 1 and "pip install -e " in out
