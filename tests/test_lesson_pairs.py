"""Lessons are jupytext pairs (notebooks/jupytext.toml): notebooks/NN_topic.py, py:percent text with the
slide types and nbval tags in the cell headers, and notebooks/NN_topic.ipynb with the CPU backend's
outputs. These tests check that every committed pair is in sync (the text is what jupytext writes from the
.ipynb) and that pytest does not take the lesson texts for tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
TEXTS = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
CONFIG = load_jupytext_config(str(NB_DIR / "00_any.ipynb"))
COURSE_METADATA = {
    "kernelspec": {"display_name": "Python 3 (tensor-core course)", "language": "python", "name": "python3"},
    "celltoolbar": "Slideshow",
    "rise": {"scroll": True, "transition": "none", "theme": "white"},
}


def _cells(nb) -> list[tuple]:
    return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]


def test_jupytext_config_pairs_the_lessons():
    assert CONFIG is not None, "notebooks/jupytext.toml was not found"
    formats = CONFIG.formats if isinstance(CONFIG.formats, str) else ",".join(CONFIG.formats)
    assert formats == "ipynb,py:percent"


def test_every_lesson_is_a_pair():
    assert TEXTS, "no notebooks/NN_topic.py"
    assert [p.stem for p in TEXTS] == [p.stem for p in NOTEBOOKS], \
        "each notebooks/NN_topic.ipynb needs its notebooks/NN_topic.py and back: run `make notebooks`"


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.stem)
def test_pair_in_sync(text):
    """The .ipynb holds the cells of its text (type, source, slide type, tags), and the text is exactly
    what jupytext writes from the .ipynb: neither side was edited without the other. The notebook carries the
    course's metadata and a unique id on every cell."""
    ipynb = nbformat.read(text.with_suffix(".ipynb"), as_version=4)
    from_text = jupytext.read(text, fmt="py:percent", config=CONFIG)
    assert _cells(from_text) == _cells(ipynb), f"{text.name} and its .ipynb differ: run `make notebooks`"
    assert jupytext.writes(ipynb, fmt="py:percent", config=CONFIG) == text.read_text(), \
        f"{text.name} is not what jupytext writes from its .ipynb: run `make notebooks`"
    for key, value in COURSE_METADATA.items():
        assert ipynb.metadata.get(key) == value, f"{text.name}: notebook metadata {key!r}"
    ids = [c.get("id") for c in ipynb.cells]
    assert len(set(ids)) == len(ids) and all(ids), f"{text.name}: missing or repeated cell ids"


def test_pytest_does_not_collect_the_lesson_texts():
    """`pytest notebooks` finds nothing to run without --nbval, and with it only the .ipynb files."""
    run = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    plain = subprocess.run(run + ["notebooks"], cwd=ROOT, capture_output=True, text=True)
    assert plain.returncode == 5, plain.stdout[-2000:]           # 5: no tests collected
    nbval = subprocess.run(run + ["--nbval", "--nbval-current-env", "notebooks"], cwd=ROOT, capture_output=True,
                           text=True)
    items = [ln for ln in nbval.stdout.splitlines() if "::" in ln]
    assert items and all(ln.split("::")[0].endswith(".ipynb") for ln in items), nbval.stdout[-2000:]
    assert not any(ln.startswith("tests/") or ".py::" in ln for ln in items)


def test_readme_lists_every_lesson_by_its_title():
    """The README's lesson table links every notebook once, in order, under the title of its first slide."""
    import re

    readme = (ROOT / "README.md").read_text()
    listed = re.findall(r"^\| \[(\d\d · [^\]]+)\]\(notebooks/(\d\d_\w+\.ipynb)\) \|", readme, re.M)
    titles = []
    for nb in NOTEBOOKS:
        heading = next(line for line in nbformat.read(nb, as_version=4).cells[0].source.splitlines()
                       if re.match(r"## \d\d · ", line))
        titles.append((heading[3:].strip(), nb.name))
    assert listed == titles
