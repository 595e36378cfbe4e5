"""Every lesson shows the display objects it builds: a helper that returns a Markdown table or a TryResult
(helpers.display.table and the helpers built on it) shows nothing unless it is the cell's last expression or is
passed to display(); a print() after it hides it. This checks all lessons."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("0*_*.ipynb"))
# the last part of the called name: helpers that return a Markdown object or a TryResult (displays itself), and
# lesson 6's short aliases of them (verdict_table, sweep)
SHOWN_BY_JUPYTER = {"table", "head_to_head_table", "knob_sweep", "verdict_table", "sweep", "show_kernel",
                    "python_code", "rung_diff", "try_kernel"}


def _builds(n) -> bool:
    if not isinstance(n, ast.Call):
        return False
    name = ast.unparse(n.func).split(".")[-1]
    # helpers.sweep (lessons 01-02: rows, not a display object) is not lesson 6's sweep alias
    return name in SHOWN_BY_JUPYTER and ast.unparse(n.func) != "helpers.sweep"


def not_shown(source: str) -> list[str]:
    """The calls in a code cell that build a display object no one shows: neither the cell's last expression (alone
    or as a branch of a conditional expression), nor inside display(...), nor assigned (a name may be shown later)."""
    tree = ast.parse(source)
    shown = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "display":
            shown |= {id(m) for a in n.args for m in ast.walk(a) if _builds(m)}
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            shown |= {id(m) for m in ast.walk(n.value) if _builds(m)}
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        v = last.value
        shown |= {id(x) for x in [v] + ([v.body, v.orelse] if isinstance(v, ast.IfExp) else []) if _builds(x)}
    return [ast.unparse(n)[:80] for n in ast.walk(tree) if _builds(n) and id(n) not in shown]


def test_the_check_can_fail():
    assert not_shown('helpers.display.table(r, c)\nprint("x")')
    assert not_shown('for k in ks:\n    helpers.display.rung_diff(k)\nprint(1)')
    assert not_shown('x = 1\nsweep(9, "STAGES")\nx')
    assert not not_shown('display(helpers.display.table(r, c))\nprint("x")')
    assert not not_shown("helpers.display.table(r, c) if r else print('no')")
    assert not not_shown("rows = helpers.sweep(names, sizes)\nprint(rows)")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_display_object_a_lesson_builds_is_shown(path):
    """No call is left unshown, and every cell that builds a Markdown table (helpers.display.table) has a Markdown
    output in the committed notebook."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    hidden = {i: not_shown("".join(c["source"])) for i, c in enumerate(cells)
              if not "".join(c["source"]).lstrip().startswith(("%", "!"))}
    assert not {i: h for i, h in hidden.items() if h}, path.name
    for c in (c for c in cells if "display.table(" in "".join(c["source"])):
        assert any("text/markdown" in o.get("data", {}) for o in c["outputs"]), "".join(c["source"])[:200]
