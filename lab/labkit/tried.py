"""results/tried.json: what each lesson's "What else was tried" table shows, one line per idea.

Each lab module that ran experiments for a lesson defines `tried() -> list[dict]`, computed from its logs and the
course's records: per idea its `idea`, `predicted`, `measured` (text, the figures computed here) and `kept`
("yes" / "no"), and `where` (the lab notebook that tells the story). `python lab/tried.py` writes the file; the
lessons read it with helpers.results.tried(lesson)."""
from __future__ import annotations

import importlib
import json

from . import ROOT

SCHEMA = "tensor-core-course/tried/1"
FIELDS = ("idea", "predicted", "measured", "kept", "where")
# lesson -> the lab module whose tried() gives its rows
SOURCES: dict[str, str] = {"06": "labkit.hopper", "07": "labkit.fp8"}


def check_rows(lesson: str, rows: list[dict]) -> list[dict]:
    """Each row has every field as non-empty text and `kept` is yes or no; ValueError naming the row otherwise."""
    for i, r in enumerate(rows):
        missing = [f for f in FIELDS if not isinstance(r.get(f), str) or not r[f].strip()]
        if missing:
            raise ValueError(f"lesson {lesson}, row {i} ({r.get('idea', '?')}): {', '.join(missing)} missing or empty")
        if r["kept"] not in ("yes", "no"):
            raise ValueError(f"lesson {lesson}, row {i} ({r['idea']}): kept is {r['kept']!r}, not 'yes' or 'no'")
    return [{f: r[f] for f in FIELDS} for r in rows]


def build(sources: dict[str, str] | None = None) -> dict:
    """The file's content: every lesson's rows from its lab module."""
    lessons = {}
    for lesson, module in sorted((sources or SOURCES).items()):
        lessons[lesson] = check_rows(lesson, importlib.import_module(module).tried())
    return {"schema": SCHEMA, "made_by": "python lab/tried.py", "lessons": lessons}


def write(path=None, sources: dict[str, str] | None = None):
    """Build the lessons of `sources` and write them into `path`, keeping the other lessons already there."""
    path = path or ROOT / "results" / "tried.json"
    data = build(sources)
    if path.is_file():
        old = json.loads(path.read_text()).get("lessons", {})
        data["lessons"] = dict(sorted({**old, **data["lessons"]}.items()))
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
