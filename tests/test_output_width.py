"""Every line a lesson prints fits JupyterLab's output area: at most helpers.errors.LINE (100) characters.

JupyterLab at 1,400 px with the file browser open breaks a longer line inside a word. The lessons print their
sentences through helpers.wrap (helpers/errors.py), which breaks them at spaces; this scans the stored outputs of
every lesson. What JupyterLab shows is checked: stream output, and text/plain where it is the only form (an
output that also has HTML, Markdown or an image shows that instead).

Exceptions, each with its reason:
- a line of kernel source printed as it stands in kernels/ (code is shown as written, not reflowed; the
  kernels' comments may not change for a lesson's width);
- a row of a table whose columns are joined by " | ", or its rule of "-" and "+" (try_kernel's recorded sweep):
  its width is its content, and breaking a row would break its columns.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from helpers.errors import LINE, wrap

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


@lru_cache(maxsize=None)
def _kernel_lines() -> frozenset[str]:
    return frozenset(ln.strip() for f in (ROOT / "kernels").rglob("*") if f.suffix in (".cu", ".cuh")
                     for ln in f.read_text(errors="replace").splitlines() if ln.strip())


def _shown_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    data = output.get("data", {})
    if "text/plain" in data and set(data) == {"text/plain"}:
        return "".join(data["text/plain"])
    return ""


def _excepted(line: str) -> bool:
    return line.strip() in _kernel_lines() or line.count(" | ") >= 4 or set(line) <= {"-", "+"}


def long_lines(nb_path: Path) -> list[str]:
    """'cell N: <line>' for every shown output line over LINE characters that no exception covers."""
    cells = json.loads(nb_path.read_text())["cells"]
    return [f"cell {i} ({len(line)} chars): {line}"
            for i, cell in enumerate(cells) for out in cell.get("outputs", [])
            for line in _shown_text(out).splitlines() if len(line) > LINE and not _excepted(line)]


@pytest.mark.parametrize("nb", LESSONS, ids=lambda p: p.stem)
def test_lesson_output_lines_fit(nb):
    bad = long_lines(nb)
    assert not bad, f"{nb.name}: lines over {LINE} characters (print them through helpers.wrap):\n" + "\n".join(bad)


def test_scan_finds_a_long_line(tmp_path):
    long = "word " * 29 + "word"
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": [long + "\n"]},
        {"output_type": "execute_result", "data": {"text/plain": [long], "text/html": ["<p>x</p>"]}},
        {"output_type": "display_data", "data": {"text/plain": ["a | b | c | d | " + long]}},
    ]}]}
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    bad = long_lines(p)
    assert len(bad) == 1 and bad[0].startswith("cell 0 (149 chars): word")


def test_wrap_breaks_at_spaces_and_indents():
    text = "  " + " ".join(f"w{i:02d}" for i in range(40))
    lines = wrap(text).splitlines()
    assert all(len(ln) <= LINE for ln in lines) and len(lines) == 2
    assert lines[1].startswith("    w")                        # its own two spaces, then the continuation's two
    assert " ".join(" ".join(lines).split()) == text.strip()   # no word lost or split
    assert wrap("short\n\nlines") == "short\n\nlines"
    assert wrap("x" * 150) == "x" * 150                        # a word longer than a line stays whole
