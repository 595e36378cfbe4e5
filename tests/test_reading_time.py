"""A lesson a learner finishes: every lesson's main path reads in at most 40 minutes by tools/reading_time.py
(prose at 200 words a minute, a minute a figure, code at 15 lines and output at 40 lines a minute; folded details
and the appendices do not count), and its appendices hold at most 30% of its prose."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("reading_time", ROOT / "tools" / "reading_time.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RT = _tool()

def _md(text, **meta):
    return {"cell_type": "markdown", "source": text, "metadata": meta}


def _code(src, outputs=(), **meta):
    return {"cell_type": "code", "source": src, "metadata": meta, "outputs": list(outputs)}


def test_counts_prose_code_output_and_figures():
    cells = [_md("# Title\n\n" + "word " * 398),                       # 400 words: 2 minutes
             _code("a = 1\n\nb = 2\n", [{"output_type": "stream", "name": "stdout", "text": "x\n" * 40}]),
             _code("fig = plot()", [{"output_type": "display_data", "data": {"image/png": "...", "text/plain": "F"}}])]
    n = RT.counts(RT.main_path(cells))
    assert n == dict(words=400, figures=1, code_lines=3, output_lines=40)
    assert RT.minutes(n) == pytest.approx(2 + 1 + 3 / 15 + 1)


def test_folded_parts_and_the_appendix_do_not_count():
    details = "<details><summary>more</summary>\n\n" + "hidden " * 500 + "\n</details>"
    cells = [_md("one two three\n" + details),
             _code("x = 1\n" * 30, jupyter={"source_hidden": True}),
             _code("y = 2", [{"output_type": "display_data",
                              "data": {"text/markdown": "shown\n" + details + "\n"}}]),
             _code("z = 3", [{"output_type": "stream", "name": "stdout", "text": "out\n" * 9}],
                   jupyter={"outputs_hidden": True}),
             _md("## Appendix A: more\n" + "deep " * 1000),
             _code("w = 4\n" * 50)]
    assert RT.counts(RT.main_path(cells)) == dict(words=3, figures=0, code_lines=2, output_lines=1)


def test_html_tables_count_their_rows():
    table = "<table><tr><th>a</th></tr>" + "<tr><td>1</td></tr>" * 5 + "</table>"
    cell = _code("t", [{"output_type": "execute_result", "data": {"text/html": table, "text/plain": "x\n" * 99}}])
    assert RT.counts([cell])["output_lines"] == 6


@pytest.mark.parametrize("path", RT.lessons(), ids=lambda p: p.stem)
def test_main_path_reads_in_at_most_40_minutes(path):
    r = RT.reading_time(path)
    assert r["minutes"] <= RT.BUDGET_MINUTES, f"{path.name}: {r}"


@pytest.mark.parametrize("path", RT.lessons(), ids=lambda p: p.stem)
def test_appendices_hold_at_most_30_percent_of_the_prose(path):
    assert RT.reading_time(path)["appendix_share"] <= 0.30
