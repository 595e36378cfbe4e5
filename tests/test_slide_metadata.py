"""The README's slide conventions, checked on every notebooks/*.ipynb (CPU only, no browser).

- the first cell is a markdown `slide` whose first line is the `#` title;
- every cell has a slide type, one of ALLOWED (what RISE and nbconvert's reveal.js export know);
- no slide (a `slide` or `subslide` with the cells that follow it until the next one) shows more
  than MAX_CODE_LINES lines of code, blank lines included: code cells that are `skip` or `notes`
  are not shown and not counted.

A failure names the notebook, the cell ids (`NN-iii` = cell iii of lesson NN as the course's old
builder numbered them; cells added since keep the id JupyterLab or jupytext gave them) and the heading
of the slide, so the fix goes into the lesson: notebooks/NN_topic.py (its cell headers carry the slide
types) or the .ipynb in JupyterLab, then `make notebooks`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ALLOWED = {"slide", "subslide", "fragment", "-", "skip", "notes"}
MAX_CODE_LINES = 15


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _slide_type(cell: dict):
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def _where(path: Path, i: int, cell: dict) -> str:
    return f"{path.name} cell {i} (id {cell.get('id', '?')})"


def slides(cells: list[dict]) -> list[dict]:
    """The notebook cut into the slides a reader sees, with the code each one shows."""
    out: list[dict] = []
    for i, cell in enumerate(cells):
        st = _slide_type(cell) or "-"
        if not out or st in ("slide", "subslide"):
            out.append({"first": i, "id": cell.get("id", "?"), "type": st, "heading": "", "code": []})
        s = out[-1]
        if st in ("skip", "notes"):
            continue
        if cell["cell_type"] == "markdown" and not s["heading"]:
            m = re.search(r"^\s*#{1,6}\s+(.+)$", _source(cell), re.M)
            s["heading"] = m.group(1).strip() if m else ""
        if cell["cell_type"] == "code":
            n = len(_source(cell).rstrip().splitlines())
            if n:
                s["code"].append((cell.get("id", f"#{i}"), n))
    return out


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks/NN_topic.ipynb found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_title_slide_first(path):
    cells = _cells(path)
    first = cells[0]
    assert first["cell_type"] == "markdown", f"{_where(path, 0, first)} is {first['cell_type']}, not markdown"
    assert _slide_type(first) == "slide", f"{_where(path, 0, first)} has slide type {_slide_type(first)!r}, not 'slide'"
    line = _source(first).lstrip().splitlines()[0] if _source(first).strip() else ""
    assert re.match(r"# \S", line), f"{_where(path, 0, first)} does not start with a '# ' title: {line!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_slide_types_allowed(path):
    bad = [f"{_where(path, i, c)}: {_slide_type(c)!r}" for i, c in enumerate(_cells(path))
           if _slide_type(c) not in ALLOWED]
    if bad:
        pytest.fail("cells without an allowed slideshow.slide_type "
                    f"(one of {sorted(ALLOWED)}; None = no metadata):\n  " + "\n  ".join(bad), pytrace=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_lines_per_slide(path):
    too_long = []
    for s in slides(_cells(path)):
        total = sum(n for _, n in s["code"])
        if total > MAX_CODE_LINES:
            cells = ", ".join(f"{cid} ({n} lines)" for cid, n in s["code"])
            too_long.append(f"{path.name}: {s['type']} at cell {s['first']} (id {s['id']}) "
                            f"{s['heading']!r}: {total} code lines > {MAX_CODE_LINES}: {cells}")
    if too_long:
        pytest.fail("slides with more code than the README allows; split the slide (a `subslide` "
                    "for the second cell) or move code to helpers/:\n  " + "\n  ".join(too_long),
                    pytrace=False)


# A lesson's main path (the slides before its appendix) fits a lecture: about 30 slides. Deep dives go
# into an appendix after the summary, whose first slide's heading starts with "Appendix".
MAX_MAIN_SLIDES = 30


def main_path(cells: list[dict]) -> list[dict]:
    out = []
    for s in slides(cells):
        if s["type"] in ("slide", "subslide") and s["heading"].startswith("Appendix"):
            break
        out.append(s)
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_main_path_fits_a_lecture(path):
    n = len(main_path(_cells(path)))
    assert n <= MAX_MAIN_SLIDES, (f"{path.name}: {n} slides before the appendix (at most {MAX_MAIN_SLIDES}); "
                                  "move deep dives into the appendix in notebooks/NN_topic.py")


# Words about the course's own tests and files do not belong in what a learner reads (markdown cells,
# speaker notes included); code comments and cell metadata may say them.
TEST_SPEAK = ("nbval", "shared/notes", "does not compare this cell")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_test_speak_in_learner_text(path):
    bad = [f"{_where(path, i, c)}: {w!r}" for i, c in enumerate(_cells(path)) if c["cell_type"] == "markdown"
           for w in TEST_SPEAK if w in _source(c)]
    assert not bad, "test-speak in learner text: " + "; ".join(bad)


# Issue 24: a lesson's main path (before its first appendix) holds at most 3,000 words of prose, the
# speaker notes included (an instructor reads them too).
MAX_MAIN_WORDS = 3000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_main_path_prose_fits_the_word_budget(path):
    import re

    words = 0
    for c in _cells(path):
        if c["cell_type"] != "markdown":
            continue
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if re.match(r"#+\s+Appendix", src.strip()):
            break
        words += len(src.split())
    assert words <= MAX_MAIN_WORDS, f"{path.name}: {words} words of prose before the appendix (notes included)"
