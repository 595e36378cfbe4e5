"""Migration to jupytext (issue 17), safe to run again: lesson sources written for the old builder
(tools/lessons/NN_topic.py: nb.md(), nb.code(), nb.notes() calls for tools/nbbuild.py) become the
py:percent halves of the lesson pairs, notebooks/NN_topic.py (notebooks/jupytext.toml pairs them with
notebooks/NN_topic.ipynb).

    python tools/migrate_lessons_to_jupytext.py                    # tools/lessons/[0-9][0-9]_*.py here
    python tools/migrate_lessons_to_jupytext.py --ref main         # the same files as they are on a git ref
    python tools/migrate_lessons_to_jupytext.py old/07_fp8.py      # given files
    python tools/migrate_lessons_to_jupytext.py --check --ref main # compare with notebooks/*.ipynb; write nothing

Each source runs with a stand-in for nbbuild's Notebook that builds the cells exactly as nbbuild did
(dedented and stripped text, slide types, nbval tags, the notebook metadata) and that writes them
through jupytext with the options of notebooks/jupytext.toml. The builder itself is not needed, so
this works after tools/nbbuild.py and tools/lessons/ are gone (read old sources with --ref).

Afterwards run `make notebooks`: `jupytext --sync` carries the new text into the .ipynb (cell ids
and outputs of unchanged cells are kept), tools/colab.py adds the setup cell and the Colab link,
and the notebooks are executed on the CPU backend.

--check builds the cells and compares each one's type, source and metadata (and the notebook's
metadata that nbbuild set) with notebooks/NN_topic.ipynb less what tools/colab.py added (the setup
cell, the Colab link), and with the text read back through jupytext; it exits 1 on any difference. Comments between the nb.*() calls (section dividers) are not
cells and are not carried over.
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import jupytext
import nbformat
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LESSONS = "tools/lessons"
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}
# what nbbuild gave every notebook (the kernel `make` installs; RISE's settings)
METADATA = {
    "kernelspec": {"display_name": "Python 3 (tensor-core course)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
    "celltoolbar": "Slideshow",
    "rise": {"scroll": True, "transition": "none", "theme": "white"},
}


class StubNotebook:
    """nbbuild.Notebook's interface; save() hands the cells to the migration instead of writing."""

    built: list["StubNotebook"] = []

    def __init__(self, name: str):
        self.name = name
        self.nb = nbformat.v4.new_notebook()
        self.nb.metadata = {k: dict(v) if isinstance(v, dict) else v for k, v in METADATA.items()}

    @staticmethod
    def _meta(slide, tags):
        if slide not in SLIDE_TYPES:
            raise ValueError(f"slide type {slide!r} not in {sorted(SLIDE_TYPES)}")
        meta = {"slideshow": {"slide_type": slide}}
        if tags:
            meta["tags"] = list(tags)
        return meta

    def md(self, text: str, slide: str = "-"):
        self.nb.cells.append(nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip(),
                                                           metadata=self._meta(slide, None)))

    def notes(self, text: str):
        self.md(text, slide="notes")

    def code(self, src: str, slide: str = "-", tags=(), ignore_output: bool = False):
        tags = list(tags) + (["nbval-ignore-output"] if ignore_output else [])
        self.nb.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(src).strip(),
                                                       metadata=self._meta(slide, tags)))

    def save(self):
        for i, c in enumerate(self.nb.cells):      # nbbuild's ids; jupytext keeps the .ipynb's own
            c["id"] = f"{self.name[:2]}-{i:03d}"
        StubNotebook.built.append(self)
        return NOTEBOOKS / f"{self.name}.ipynb"


def build(source: str, filename: str) -> StubNotebook:
    """Run one lesson source (its text; `filename` is the path it claims) with the stand-in builder."""
    stub = types.ModuleType("nbbuild")
    stub.Notebook, stub.ROOT, stub.SLIDE_TYPES = StubNotebook, ROOT, SLIDE_TYPES
    saved_module, saved_path = sys.modules.get("nbbuild"), list(sys.path)
    sys.modules["nbbuild"] = stub
    StubNotebook.built = []
    try:
        exec(compile(source, filename, "exec"), {"__name__": "__main__", "__file__": filename})
    finally:
        sys.path[:] = saved_path
        if saved_module is None:
            sys.modules.pop("nbbuild", None)
        else:
            sys.modules["nbbuild"] = saved_module
    if len(StubNotebook.built) != 1:
        raise SystemExit(f"{filename}: expected one nb.save(), found {len(StubNotebook.built)}")
    return StubNotebook.built[0]


def colab():
    """tools/colab.py, which adds the setup cell and the Colab link (strip() takes them out again)."""
    spec = importlib.util.spec_from_file_location("colab", ROOT / "tools" / "colab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def config():
    return load_jupytext_config(str(NOTEBOOKS / "00_any.ipynb"))


def to_text(nb: nbformat.NotebookNode) -> str:
    """The py:percent text of a notebook, as `jupytext --sync` writes it with notebooks/jupytext.toml."""
    return jupytext.writes(nb, fmt="py:percent", config=config())


def sources(args) -> list[tuple[str, str]]:
    """(claimed path, text) of every lesson source to convert."""
    if args.files:
        return [(str(Path(f).resolve()), Path(f).read_text()) for f in args.files]
    if args.ref:
        names = subprocess.run(["git", "ls-tree", "--name-only", f"{args.ref}:{LESSONS}"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.split()
        names = sorted(n for n in names if n[:2].isdigit() and n[2] == "_" and n.endswith(".py"))
        return [(str(ROOT / LESSONS / n), subprocess.run(["git", "show", f"{args.ref}:{LESSONS}/{n}"], cwd=ROOT,
                                                         check=True, capture_output=True, text=True).stdout)
                for n in names]
    return [(str(p), p.read_text()) for p in sorted((ROOT / LESSONS).glob("[0-9][0-9]_*.py"))]


def _cell_key(c) -> tuple:
    return c.cell_type, c.source, dict(c.metadata)


def differences(built: nbformat.NotebookNode, other: nbformat.NotebookNode, what: str) -> list[str]:
    """Every cell (type, source, metadata) and notebook metadata key nbbuild sets that differs."""
    out = []
    if len(built.cells) != len(other.cells):
        out.append(f"{what}: {len(built.cells)} cells built, {len(other.cells)} there")
    for i, (a, b) in enumerate(zip(built.cells, other.cells)):
        if _cell_key(a) != _cell_key(b):
            out.append(f"{what}: cell {i} differs ({a.cell_type} {a.source[:60]!r} vs {b.cell_type} {b.source[:60]!r})")
    for k in ("kernelspec", "celltoolbar", "rise"):
        if built.metadata.get(k) != other.metadata.get(k):
            out.append(f"{what}: notebook metadata {k!r} differs")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="lesson sources (default: tools/lessons/[0-9][0-9]_*.py)")
    ap.add_argument("--ref", help="read tools/lessons/*.py from this git ref instead of the work tree")
    ap.add_argument("--check", action="store_true", help="compare with notebooks/*.ipynb; write nothing")
    args = ap.parse_args(argv)
    problems = []
    todo = sources(args)
    if not todo:
        print("no lesson sources found", file=sys.stderr)
        return 1
    for filename, text in todo:
        lesson = build(text, filename)
        out = NOTEBOOKS / f"{lesson.name}.py"
        txt = to_text(lesson.nb)
        back = jupytext.reads(txt, fmt="py:percent")
        problems += differences(lesson.nb, back, f"{out.name} read back")
        if args.check:
            ipynb = NOTEBOOKS / f"{lesson.name}.ipynb"
            if ipynb.exists():
                there = nbformat.read(ipynb, as_version=4)
                colab().strip(there)               # the setup cell and Colab link are tools/colab.py's
                problems += differences(lesson.nb, there, ipynb.name)
            else:
                problems.append(f"{ipynb.name}: does not exist")
            print(f"checked {Path(filename).name}: {len(lesson.nb.cells)} cells")
        else:
            out.write_text(txt)
            print(f"{Path(filename).name} -> {out.relative_to(ROOT)} ({len(lesson.nb.cells)} cells)")
    for p in problems:
        print("DIFFERENT:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
