"""Execute the course notebooks (what `make course` and `make notebooks` run).

    python tools/execute_notebooks.py            # -> build/notebooks/*.ipynb, build/html/*.html
    python tools/execute_notebooks.py --inplace  # rewrite notebooks/*.ipynb with fresh outputs, solution
                                                 # cells' outputs left out (strip_solutions), and touch
                                                 # each paired notebooks/NN_topic.py
    python tools/execute_notebooks.py --executed build/executed
                                                 # -> build/ as above, from notebooks executed already
                                                 # (tools/check_determinism.py --keep: its first run)
    python tools/execute_notebooks.py --no-html  # build/notebooks only (make course: tools/slides.py --site
                                                 # then writes every page of build/html and its index)

Notebooks run with the backend the helpers pick (GPU if one works, else the
CPU emulation; COURSE_DEVICE forces one). The committed notebooks are never
touched unless --inplace is given.
"""
from __future__ import annotations

import argparse
import html
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def coalesce_streams(nb: nbformat.NotebookNode) -> None:
    """One output per run of stdout (or stderr) text: how the kernel chunks a cell's prints depends on
    timing, and the committed notebooks should not (nbval joins them too)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged = []
        for out in cell.outputs:
            if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == out.get("name")):
                merged[-1]["text"] += out["text"]
            else:
                merged.append(out)
        cell.outputs = merged


def strip_solutions(nb: nbformat.NotebookNode) -> None:
    """Cells tagged "solution" keep no stored output: the committed lesson shows an exercise, not its answer.
    They are stored as not run (no execution count), so nbval runs them (an exception fails) but compares no
    output, and tools/check_determinism.py leaves them out the same way."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "solution" in cell.get("metadata", {}).get("tags", []):
            cell.outputs = []
            cell.execution_count = None


def execute(path: Path, timeout: int, executed: Path | None = None) -> nbformat.NotebookNode:
    """The notebook executed in a fresh kernel; or, given `executed` (a folder), its copy there as executed
    already, which must have the same cells as the source."""
    if executed is not None:
        nb = nbformat.read(executed / path.name, as_version=4)
        source = nbformat.read(path, as_version=4)
        if [(c.cell_type, c.source) for c in nb.cells] != [(c.cell_type, c.source) for c in source.cells]:
            raise SystemExit(f"{executed / path.name}: its cells are not those of {path}: execute it again")
        if any(c.cell_type == "code" and c.source.strip() and c.execution_count is None for c in nb.cells):
            raise SystemExit(f"{executed / path.name}: a code cell was not executed")
    else:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute()
    coalesce_streams(nb)
    return nb


def write_html(nb, out: Path):
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    out.write_text(body)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--inplace", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "build")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--executed", type=Path,
                    help="take each notebook as executed already in this folder instead of executing it")
    ap.add_argument("--no-html", action="store_true", help="write no build/html (tools/slides.py --site writes it)")
    args = ap.parse_args(argv)
    if args.executed and args.inplace:
        ap.error("--executed writes build/, not the committed notebooks: leave out --inplace")
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    html_out = not args.inplace and not args.no_html
    if not args.inplace:
        (args.out / "notebooks").mkdir(parents=True, exist_ok=True)
    if html_out:
        (args.out / "html").mkdir(parents=True, exist_ok=True)
    links = []
    for p in paths:
        t0 = time.time()
        nb = execute(p, args.timeout, args.executed)
        if args.inplace:
            strip_solutions(nb)
            nbformat.write(nb, p)
            paired = p.with_suffix(".py")          # the lesson's jupytext text (notebooks/jupytext.toml)
            if paired.exists():                    # newer than its notebook again: jupytext in JupyterLab
                paired.touch()                     # warns about a text older than its .ipynb (and refuses
                                                   # the pair when their cells differ)
        else:
            nbformat.write(nb, args.out / "notebooks" / p.name)
            if html_out:
                write_html(nb, args.out / "html" / f"{p.stem}.html")
            title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown"), p.stem)
            links.append((p.stem, title))
        print(f"took {p.name} as executed in {args.executed}/" if args.executed
              else f"executed {p.name} in {time.time() - t0:.0f} s", flush=True)
    if not args.inplace:
        shutil.copy2(ROOT / "notebooks" / "glossary.md", args.out / "notebooks")   # the lessons link to it
    if html_out:
        items = "\n".join(f'<li><a href="{s}.html">{html.escape(t)}</a></li>' for s, t in links)
        (args.out / "html" / "index.html").write_text(
            "<!doctype html><meta charset='utf-8'><title>Tensor Cores course</title>"
            f"<h1>Tensor Cores, WMMA and mixed precision</h1><ol>{items}</ol>\n")
        print(f"wrote {args.out}/notebooks and {args.out}/html (index.html)")
    elif not args.inplace:
        print(f"wrote {args.out}/notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
