#!/usr/bin/env python3
"""How long a lesson's main path takes to read, from its .ipynb (the stored outputs included).

The main path is every cell before the first markdown cell whose heading starts with "Appendix". Its reading
time counts
- prose at 200 words a minute (markdown cells, speaker notes included),
- a minute per figure (an image output, or an image in markdown),
- code at 15 lines a minute (non-blank lines of code cells),
- output at 40 lines a minute (text lines; an HTML table counts its rows),
and leaves out what a reader has to open to see: `<details>` blocks (in markdown or in a cell's output), the
source of cells marked hidden (`jupyter.source_hidden`, as the setup cell and the solutions are) and the
outputs of cells marked so (`jupyter.outputs_hidden`).

    python tools/reading_time.py notebooks/06_hopper_full_speed.ipynb    # one lesson, itemised
    python tools/reading_time.py                                          # every lesson
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 15
OUTPUT_LINES_PER_MINUTE = 40
MINUTES_PER_FIGURE = 1
BUDGET_MINUTES = 40
ROOT = Path(__file__).resolve().parent.parent

_DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
_APPENDIX = re.compile(r"#+\s+Appendix")


def _text(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


def unfolded(text: str) -> str:
    """`text` without its <details> blocks (what a reader sees before opening anything)."""
    return _DETAILS.sub("", text)


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def _output_counts(out: dict) -> tuple[int, int]:
    """(lines, figures) one output shows."""
    if out.get("output_type") == "stream":
        return _lines(_text(out.get("text"))), 0
    if out.get("output_type") == "error":
        return len(out.get("traceback") or []), 0
    data = out.get("data") or {}
    if any(k.startswith("image/") for k in data):
        return 0, 1
    if "text/markdown" in data:
        return _lines(unfolded(_text(data["text/markdown"]))), 0
    if "text/html" in data:
        html = unfolded(_text(data["text/html"]))
        rows = len(re.findall(r"<tr\b", html, re.I))
        return (rows if rows else _lines(re.sub(r"<[^>]+>", "", html))), 0
    return _lines(_text(data.get("text/plain"))), 0


def main_path(cells: list[dict]) -> list[dict]:
    """The cells before the first markdown cell that opens an appendix."""
    out = []
    for c in cells:
        if c["cell_type"] == "markdown" and _APPENDIX.match(_text(c["source"]).strip()):
            break
        out.append(c)
    return out


def counts(cells: list[dict]) -> dict:
    """Words, figures, code lines and output lines a reader meets in `cells`, folded parts left out."""
    n = dict(words=0, figures=0, code_lines=0, output_lines=0)
    for c in cells:
        hidden = (c.get("metadata") or {}).get("jupyter") or {}
        if c["cell_type"] == "markdown":
            src = unfolded(_text(c["source"]))
            n["figures"] += len(re.findall(r"!\[[^\]]*\]\(", src))
            n["words"] += len(src.split())
        elif c["cell_type"] == "code":
            if not hidden.get("source_hidden"):
                n["code_lines"] += _lines(_text(c["source"]))
            if not hidden.get("outputs_hidden"):
                for out in c.get("outputs") or []:
                    lines, figs = _output_counts(out)
                    n["output_lines"] += lines
                    n["figures"] += figs
    return n


def minutes(n: dict) -> float:
    return (n["words"] / WORDS_PER_MINUTE + n["figures"] * MINUTES_PER_FIGURE
            + n["code_lines"] / CODE_LINES_PER_MINUTE + n["output_lines"] / OUTPUT_LINES_PER_MINUTE)


def reading_time(path) -> dict:
    """The main path's counts and minutes, and the appendices' share of the lesson's prose words."""
    cells = json.loads(Path(path).read_text())["cells"]
    main = main_path(cells)
    n = counts(main)
    all_words = sum(len(_text(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    main_words = sum(len(_text(c["source"]).split()) for c in main if c["cell_type"] == "markdown")
    return dict(n, minutes=round(minutes(n), 1),
                appendix_share=round((all_words - main_words) / all_words, 3) if all_words else 0.0)


def lessons() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or lessons()
    over = 0
    for p in paths:
        r = reading_time(p)
        over += r["minutes"] > BUDGET_MINUTES
        print(f"{p.stem}: {r['minutes']:5.1f} min = {r['words']} words / {WORDS_PER_MINUTE} + {r['figures']} figures"
              f" + {r['code_lines']} code lines / {CODE_LINES_PER_MINUTE} + {r['output_lines']} output lines / "
              f"{OUTPUT_LINES_PER_MINUTE}; appendices {r['appendix_share']:.0%} of the prose")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
