"""The course speaks of the course only: lessons, helpers, kernels, the README and the records name no working
session, issue or commit, and no probe switch (the research log lives in lab/). Provenance a reader needs (the GPU,
date and versions of a measurement, the command that repeats it) is not history and stays."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(
    r"\bsessions?\s+\d+|\bissues?\s+#?\d+|\b(?:commits?|tree)\s+`?[0-9a-f]{7,40}\b|\bprobe[- ]switch"
    r"|\bfirst record\b|\bbefore any GPU ran\b|\b(?:until|since|in|before) this session\b"
    r"|\b(?:until|since) 20\d\d-\d\d-\d\d\b", re.I)


def product_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")),
             *sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), *sorted((ROOT / "helpers").rglob("*.py")),
             *sorted((ROOT / "kernels").glob("*.cu*")), *sorted((ROOT / "results").glob("*.json"))]
    return [f for f in files if f.is_file()]


# a published source cited at the revision read (an outside repository's commit) is a citation, not history
CITATION = re.compile(r"github\.com/|MATLAB-tensor-core")


def history_lines(text: str) -> list[str]:
    return [ln.strip()[:160] for ln in text.splitlines() if HISTORY.search(ln) and not CITATION.search(ln)]


def test_the_pattern_finds_history():
    for line in ("as measured in session 27", "see issue 26", "kept in commit 1bcb7f2 only", "a probe switch",
                 "the first record's kernel", "Written before any GPU ran it", "the default until this session",
                 "until 2026-12-02 a memset"):
        assert history_lines(line), line
    for line in ("the GPU, its date and versions", "python -m helpers.record --update-experiments hopper",
                 "0x7fffffff", "rung 26: clusters of 4",
                 "github.com/north-numerical-computing/MATLAB-tensor-core, `models/`, commit b12b5a7"):
        assert not history_lines(line), line


@pytest.mark.parametrize("path", product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_history_in_the_product(path):
    found = history_lines(path.read_text(errors="replace"))
    assert not found, f"{path.relative_to(ROOT)}: {len(found)} lines, e.g. {found[:5]}"
