"""Build a lesson notebook from its Python source in tools/lessons/.

Authors write cells with md() and code(); slide types and nbval tags are set
per cell (see the README's slide conventions). `make notebooks` runs every
source, then executes the notebooks on the CPU backend so that the committed
notebooks carry the outputs nbval compares.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}


class Notebook:
    def __init__(self, name: str):
        self.name = name
        self.nb = nbformat.v4.new_notebook()
        self.nb.metadata = {
            # what `make` installs (ipykernel install --display-name): JupyterLab writes it back on save
            "kernelspec": {"display_name": "Python 3 (tensor-core course)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "celltoolbar": "Slideshow",
            "rise": {"scroll": True, "transition": "none", "theme": "white"},
        }

    def _meta(self, slide, tags):
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
        """Speaker notes: shown in the presenter view, not on the slide."""
        self.md(text, slide="notes")

    def code(self, src: str, slide: str = "-", tags=(), ignore_output: bool = False):
        tags = list(tags) + (["nbval-ignore-output"] if ignore_output else [])
        self.nb.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(src).strip(),
                                                       metadata=self._meta(slide, tags)))

    def save(self):
        path = ROOT / "notebooks" / f"{self.name}.ipynb"
        # stable cell ids keep diffs small when a source is rebuilt
        for i, c in enumerate(self.nb.cells):
            c["id"] = f"{self.name[:2]}-{i:03d}"
        nbformat.write(self.nb, path)
        return path
