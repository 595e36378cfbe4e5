"""The glossary (notebooks/glossary.md): every link a lesson or the glossary makes to one of its terms finds the
term, in JupyterLab (a heading's id is its text with spaces as '-') and in the built pages (tools/slides.py
writes glossary.html with the same ids and points the pages' links at it)."""
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LINK = re.compile(r"\]\(glossary\.md(?:#([^)\s]+))?\)")


def _slides():
    spec = importlib.util.spec_from_file_location("slides", ROOT / "tools" / "slides.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _terms() -> set[str]:
    slides = _slides()
    return {slides.glossary_anchor(h) for h in re.findall(r"^### (.+)$", (NOTEBOOKS / "glossary.md").read_text(), re.M)}


def test_every_glossary_link_of_a_lesson_names_a_term():
    terms = _terms()
    linked = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        for anchor in LINK.findall(path.read_text()):
            if anchor:
                linked.setdefault(anchor, path.name)
    missing = {a: f for a, f in linked.items() if a not in terms}
    assert not missing, f"glossary links to no such term: {missing}"
    for stem in ("00_start_here", "01_fp32_baseline", "02_tensor_cores_wmma", "03_mixed_precision",
                 "04_precision_analysis"):
        assert LINK.search((NOTEBOOKS / f"{stem}.py").read_text()), f"{stem} links no glossary term"


def test_the_glossary_links_only_to_its_own_terms_and_sorts_them():
    text = (NOTEBOOKS / "glossary.md").read_text()
    terms = _terms()
    assert set(re.findall(r"\]\(#([^)]+)\)", text)) <= terms
    headings = re.findall(r"^### (.+)$", text, re.M)
    assert headings == sorted(headings, key=str.lower) and len(set(headings)) == len(headings)


def test_built_pages_point_at_the_glossary_page_with_the_same_anchors(tmp_path):
    slides = _slides()
    page = slides.write_glossary(tmp_path).read_text()
    ids = set(re.findall(r'<h3 id="([^"]+)"', page))
    assert ids == _terms()
    body = '<a href="glossary.md#the-model">the model</a> <a href="glossary.md">glossary</a> <a href="x.md#y">'
    assert slides.link_glossary(body) == ('<a href="glossary.html#the-model">the model</a> '
                                          '<a href="glossary.html">glossary</a> <a href="x.md#y">')
