"""Build the offline reveal.js decks (what `make slides` runs) and the slide manifest.

    python tools/slides.py                 # build/notebooks/*.ipynb -> build/slides/NN_topic.slides.html
    python tools/slides.py --committed     # decks from notebooks/*.ipynb as committed (CPU outputs)
    python tools/slides.py notebooks/01_fp32_baseline.ipynb   # one deck
    python tools/slides.py --site          # the HTML pages (build/html/) and their index (make course)
    python tools/slides.py --check-assets  # only say where reveal.js, MathJax, RequireJS, jQuery come from

Each deck loads reveal.js 4, MathJax 2, RequireJS and jQuery from build/slides/assets/, copied
from local installs (never a CDN):

    reveal.js 4   tools/slides/node_modules/reveal.js      (npm ci --prefix tools/slides)
    MathJax 2     tools/slides/node_modules/mathjax        (npm ci --prefix tools/slides: pinned in the lock file)
                  or /usr/share/javascript/mathjax         (Debian libjs-mathjax + fonts-mathjax)
    RequireJS     node_modules/requirejs, or /usr/share/javascript/requirejs (Debian libjs-requirejs)
    jQuery        node_modules/jquery, or /usr/share/javascript/jquery (Debian libjs-jquery)

so build/slides/ can be copied anywhere and opened from file:// with no network. After writing
each deck the script fails if any <script>, <link>, <img>, <iframe>, CSS url() or ES import in
it points off the machine (tests/browser/ checks the same in Chromium, request by request).

It also writes build/slides/manifest.json (per deck: title and, per slide, its heading, whether it
has math, its images, tables, coloured diffs and code lines) for the browser test, build/slides/index.html,
and the glossary (notebooks/glossary.md) as glossary.html beside the decks and the pages, where their links to it
point.
Notebooks come from build/notebooks/ (`make course`); any that are missing or older than their
source in notebooks/ are executed first with tools/execute_notebooks.py.
"""
from __future__ import annotations

import argparse
import copy
import html
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NPM = ROOT / "tools" / "slides" / "node_modules"
TEMPLATES = ROOT / "tools" / "slides" / "templates"
DEBIAN = Path("/usr/share/javascript")
MAX_CODE_LINES = 15  # README: a slide shows at most 15 lines of code

# MathJax 2 pieces the decks use (TeX input, CommonHTML output, TeX web fonts): ~2 MB of 54.
MATHJAX_PARTS = [
    "MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js", "config/local",
    "extensions", "jax/element", "jax/input/TeX", "jax/output/CommonHTML",
    "fonts/HTML-CSS/TeX/woff", "fonts/HTML-CSS/TeX/otf", "localization/en",
]


GLOSSARY = ROOT / "notebooks" / "glossary.md"   # the lessons link its terms as glossary.md#term


def glossary_anchor(heading: str) -> str:
    """The id of a glossary heading, made as JupyterLab's Markdown renderer makes it (spaces to '-', case kept):
    a lesson's link glossary.md#term then works in JupyterLab and in the built pages alike."""
    return heading.strip().replace(" ", "-")


def glossary_html() -> str:
    """notebooks/glossary.md as one HTML page, each term's heading with its glossary_anchor id."""
    import mistune

    body = mistune.html(GLOSSARY.read_text())
    body = re.sub(r"<h3>(.*?)</h3>", lambda m: '<h3 id="{}">{}</h3>'.format(
        html.escape(glossary_anchor(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))))), m.group(1)), body)
    return ("<!doctype html><meta charset='utf-8'><title>Glossary: Tensor Cores course</title>\n"
            "<style>body{font:18px/1.5 sans-serif;max-width:50em;margin:2em auto}h3{margin-bottom:0}</style>\n"
            + body)


def write_glossary(dest: Path) -> Path:
    """dest/glossary.html, the page the built lessons' glossary links point to (link_glossary)."""
    path = dest / "glossary.html"
    path.write_text(glossary_html())
    return path


def link_glossary(body: str) -> str:
    """A built page's links to glossary.md#term, pointed at the glossary.html written beside it."""
    return re.sub(r'href="glossary\.md(#[^"]*)?"', lambda m: f'href="glossary.html{m.group(1) or ""}"', body)


class AssetError(RuntimeError):
    pass


def _first(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.exists()), None)


HOW = {
    "reveal.js": "npm ci --prefix tools/slides   (reveal.js 4 from tools/slides/package-lock.json)",
    "mathjax": "npm ci --prefix tools/slides   (or apt-get install libjs-mathjax fonts-mathjax)",
    "require.js": "npm ci --prefix tools/slides   (or apt-get install libjs-requirejs)",
    "jquery.js": "npm ci --prefix tools/slides   (or apt-get install libjs-jquery)",
}


def find_assets(needed=("reveal.js", "mathjax", "require.js", "jquery.js"), strict=True) -> dict[str, Path]:
    """Where the local copies are; raises AssetError naming the install command for what is missing."""
    found = {
        "reveal.js": _first(NPM / "reveal.js"),
        "mathjax": _first(NPM / "mathjax", DEBIAN / "mathjax"),
        "require.js": _first(NPM / "requirejs" / "require.js", DEBIAN / "requirejs" / "require.min.js"),
        "jquery.js": _first(NPM / "jquery" / "dist" / "jquery.min.js", DEBIAN / "jquery" / "jquery.min.js"),
    }
    found = {k: v for k, v in found.items() if k in needed}
    missing = [k for k, v in found.items() if v is None]
    if missing and strict:
        raise AssetError("local copies needed for offline pages are missing:\n"
                         + "\n".join(f"  {k}: {HOW[k]}" for k in missing))
    if found.get("reveal.js"):
        version = json.loads((found["reveal.js"] / "package.json").read_text())["version"]
        if not version.startswith("4."):
            raise AssetError(f"reveal.js {version} found, the nbconvert template needs 4.x: {HOW['reveal.js']}")
    if found.get("mathjax"):
        head = (found["mathjax"] / "MathJax.js").read_text(errors="replace")[:4000]
        if not re.search(r"MathJax\.version\s*=\s*['\"]?2\.|2\.7\.\d", head):
            raise AssetError("MathJax 2 needed (the templates call MathJax.Hub): " + HOW["mathjax"])
    return found


def copy_assets(found: dict[str, Path], dest: Path) -> None:
    """Copy what the decks load into dest (symlinks resolved: Debian links fonts elsewhere)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    rv = found.get("reveal.js")
    if rv:
        for part in ["dist", "plugin/notes"]:
            shutil.copytree(rv / part, dest / "reveal.js" / part,
                            ignore=shutil.ignore_patterns("*.map", "*.esm.js"))
        shutil.copy2(rv / "LICENSE", dest / "reveal.js" / "LICENSE")
    for part in MATHJAX_PARTS:
        src = found["mathjax"] / part
        if src.is_dir():
            shutil.copytree(src, dest / "mathjax" / part, symlinks=False)
        elif src.exists():
            (dest / "mathjax" / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / "mathjax" / part)
    shutil.copy2(found["require.js"], dest / "require.js")
    if found.get("jquery.js"):
        shutil.copy2(found["jquery.js"], dest / "jquery.js")


# --- what each slide holds (the manifest) -------------------------------------------------------

_CODE = re.compile(r"```.*?```|~~~.*?~~~|`[^`\n]*`", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$\n]+?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)


def has_math(markdown: str) -> bool:
    return bool(_MATH.search(_CODE.sub("", markdown)))


def _plain(text: str) -> str:
    text = _MATH.sub(" ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\*+", "", text)
    return re.sub(r"(?<!\w)_+(\S(?:.*?\S)?)_+(?!\w)", r"\1", text)


def plain_heading(markdown: str) -> str:
    """The heading text as a reader sees it, math and markup left out."""
    for line in markdown.splitlines():
        m = re.match(r"\s*#{1,6}\s+(.*)", line)
        if m:
            parts = re.split(r"(`[^`]*`)", m.group(1))  # code spans are shown as written
            text = "".join(p[1:-1] if p.startswith("`") else _plain(p) for p in parts)
            return " ".join(text.split())
    return ""


def count_tables(markdown: str) -> int:
    """Markdown tables (a header row's |---| line) and HTML tables in a cell's text."""
    return len(re.findall(r"^\s*\|?\s*:?-{3,}:?\s*\|", markdown, re.M)) + markdown.count("<table")


def slide_units(nb) -> list[dict]:
    """One entry per reveal.js slide (a notebook `slide` or `subslide`), in order, with its
    position (h, v), its cells and what it shows. Mirrors nbconvert's _RevealMetadataPreprocessor:
    the first visible cell always starts a slide; notes and skip cells are not shown."""
    units: list[dict] = []
    h = -1
    for cell in nb.cells:
        st = cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") or "-"
        if st in ("notes", "skip"):
            if units:
                units[-1]["cells"].append(cell.get("id", "?"))
            continue
        if not units or st == "slide":
            h += 1
            units.append(dict(h=h, v=0, type="slide", heading="", math=False, images=0, tables=0, diffs=0,
                              diff_lines=0, code_lines=0, cells=[]))
        elif st == "subslide":
            units.append(dict(h=h, v=units[-1]["v"] + 1, type="subslide", heading="", math=False,
                              images=0, tables=0, diffs=0, diff_lines=0, code_lines=0, cells=[]))
        u = units[-1]
        u["cells"].append(cell.get("id", "?"))
        if cell.cell_type == "markdown":
            u["heading"] = u["heading"] or plain_heading(cell.source)
            u["math"] = u["math"] or has_math(cell.source)
            u["images"] += len(re.findall(r"!\[[^\]]*\]\(|<img\b", cell.source))
            u["tables"] += count_tables(cell.source)
        elif cell.cell_type == "code":
            u["code_lines"] += len(cell.source.rstrip().splitlines())
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                u["images"] += any(k.startswith("image/") for k in data)
                u["tables"] += count_tables(str(data.get("text/markdown", "")) + str(data.get("text/html", "")))
                u["diffs"] += str(data.get("text/markdown", "")).count('<pre class="course-diff"')
                u["diff_lines"] += str(data.get("text/markdown", "")).count('<span class="course-diff-')
    return units


def notebook_titles(nb) -> tuple[str, str]:
    """The course title (the first cell's `#` line) and the lesson's (its first `##` line)."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    found = {}
    for line in first.splitlines():
        m = re.match(r"\s*(#{1,2})\s+(.*)", line)
        if m and m.group(1) not in found:
            found[m.group(1)] = " ".join(re.sub(r"[`*_]", "", m.group(2)).split())
    return found.get("#", ""), found.get("##", "")


# --- export -------------------------------------------------------------------------------------

_LOADS = [
    re.compile(r"<(?:script|img|iframe|source|video|audio|embed)\b[^>]*?\bsrc\s*=\s*[\"']([^\"']*)", re.I),
    re.compile(r"<link\b[^>]*?\bhref\s*=\s*[\"']([^\"']*)", re.I),
    re.compile(r"url\(\s*[\"']?([^\"')]*)", re.I),
    re.compile(r"\bimport\s+(?:[\w{}\s,*]+\s+from\s+)?[\"']([^\"']+)[\"']"),
    re.compile(r"@import\s+[\"']([^\"']+)[\"']"),
]


def remote_loads(text: str) -> list[str]:
    """URLs in a page that a browser would fetch and that are not local (relative, data:, file:)."""
    bad = []
    for pat in _LOADS:
        for url in pat.findall(text):
            u = url.strip().lower()
            if u.startswith(("http:", "https:", "//", "ftp:", "ws:", "wss:")):
                bad.append(url)
    return sorted(set(bad))


def export_deck(nb, name: str, out: Path) -> Path:
    from nbconvert import SlidesExporter

    rise = nb.metadata.get("rise", {})
    exporter = SlidesExporter(
        template_name="course-reveal",
        extra_template_basedirs=[str(TEMPLATES)],
        reveal_url_prefix="assets/reveal.js",
        reveal_theme=rise.get("theme", "white"),
        reveal_transition=rise.get("transition", "none"),
        reveal_scroll=bool(rise.get("scroll", True)),
        reveal_width="1280",
        reveal_height="720",
        reveal_number="c/t",
        mathjax_url="assets/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        require_js_url="assets/require.js",
        jquery_url="assets/jquery.js",
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
        font_awesome_url="",
        jupyter_widgets_base_url="",
        widget_renderer_url="",
        html_manager_semver_range="",
    )
    nb = copy.deepcopy(nb)
    course, lesson = notebook_titles(nb)
    nb.metadata["title"] = lesson or course or name  # the page's <title>
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": name}})
    body = link_glossary(body)
    bad = remote_loads(body)
    if bad:
        raise RuntimeError(f"{name}: the deck would load from the network: {bad[:5]}")
    path = out / f"{name}.slides.html"
    path.write_text(body)
    return path


def source_notebooks(build: Path, committed: bool, only: list[Path] | None = None) -> list[Path]:
    sources = sorted(p.resolve() for p in only) if only else sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if committed:
        return sources
    executed = build / "notebooks"
    stale = [p for p in sources
             if not (executed / p.name).exists() or (executed / p.name).stat().st_mtime < p.stat().st_mtime]
    if stale:
        print(f"executing {len(stale)} notebook(s) first: {', '.join(p.name for p in stale)}", flush=True)
        sys.path.insert(0, str(ROOT / "tools"))
        import execute_notebooks

        rc = execute_notebooks.main([*map(str, stale), "--out", str(build)])
        if rc:
            raise SystemExit(rc)
    return [executed / p.name for p in sources]


def write_index(out: Path, decks: list[dict]) -> None:
    items = []
    for d in decks:
        links = [f'<a href="{d["file"]}?print-pdf">print view</a>']
        if (out / "pdf" / f'{d["name"]}.pdf').exists():
            links.append(f'<a href="pdf/{d["name"]}.pdf">PDF</a>')
        if (out.parent / "html" / f'{d["name"]}.html').exists():
            links.append(f'<a href="../html/{d["name"]}.html">page</a>')
        items.append(f'<li><a href="{d["file"]}">{html.escape(d["lesson"] or d["name"])}</a> '
                     f'<small>({d["slides"]} slides; {"; ".join(links)})</small></li>')
    (out / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>Tensor Cores course: slides</title>\n"
        "<style>body{font:18px/1.5 sans-serif;max-width:50em;margin:2em auto}</style>\n"
        "<h1>Tensor Cores, WMMA and mixed precision: slides</h1>\n"
        "<p>Arrow keys move between slides (down for a slide's details), <kbd>S</kbd> opens the "
        "speaker notes, <kbd>Esc</kbd> the overview. Everything loads from this folder.</p>\n"
        "<ol>\n" + "\n".join(items) + "\n</ol>\n")


# --- the static HTML site (build/html/, `make course`) ------------------------------------------

def write_site_index(build: Path) -> None:
    """build/html/index.html: every lesson's page, with its slides and notebook when built."""
    site = build / "html"
    items = []
    for page in sorted(site.glob("[0-9][0-9]_*.html")):
        nb_path = build / "notebooks" / f"{page.stem}.ipynb"
        course, lesson = notebook_titles(nbformat.read(nb_path, as_version=4)) if nb_path.exists() else ("", "")
        extra = []
        if (build / "slides" / f"{page.stem}.slides.html").exists():
            extra.append(f'<a href="../slides/{page.stem}.slides.html">slides</a>')
        if nb_path.exists():
            extra.append(f'<a href="../notebooks/{nb_path.name}">notebook</a>')
        items.append(f'<li><a href="{page.name}">{html.escape(lesson or page.stem)}</a>'
                     + (f' <small>({"; ".join(extra)})</small>' if extra else "") + "</li>")
    (site / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>Tensor Cores course</title>\n"
        "<style>body{font:18px/1.5 sans-serif;max-width:50em;margin:2em auto}</style>\n"
        "<h1>Tensor Cores, WMMA and mixed precision</h1>\n"
        "<p>The lessons as executed by <code>make course</code>, one page each.</p>\n"
        "<ol>\n" + "\n".join(items) + "\n</ol>\n")


def build_site(build: Path) -> int:
    """Re-export build/notebooks/*.ipynb as build/html/*.html with MathJax and RequireJS from
    build/html/assets/ (offline) when local copies exist; else keep nbconvert's CDN defaults."""
    from nbconvert import HTMLExporter

    site = build / "html"
    site.mkdir(parents=True, exist_ok=True)
    notebooks = sorted((build / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        print(f"slides: no executed notebooks in {build}/notebooks: run `make course`", file=sys.stderr)
        return 2
    found = find_assets(("mathjax", "require.js"), strict=False)
    local = all(found.values())
    urls = {}
    if local:
        copy_assets(found, site / "assets")
        urls = dict(mathjax_url="assets/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
                    require_js_url="assets/require.js")
    else:
        missing = [k for k, v in found.items() if not v]
        print("note: the HTML pages load MathJax/RequireJS from a CDN; for offline pages: "
              + "; ".join(HOW[k] for k in missing))
    exporter = HTMLExporter(template_name="course-lab", extra_template_basedirs=[str(TEMPLATES)],
                            mermaid_js_url="", mermaid_layout_elk_js_url="", **urls)
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        course, lesson = notebook_titles(nb)
        nb.metadata["title"] = lesson or course or path.stem
        slides = build / "slides" / f"{path.stem}.slides.html"
        body, _ = exporter.from_notebook_node(nb, resources={
            "metadata": {"name": path.stem},
            "course_slides": f"../slides/{slides.name}" if slides.exists() else ""})
        body = link_glossary(body)
        bad = remote_loads(body)
        if bad and local:
            raise RuntimeError(f"{path.stem}.html would load from the network: {bad[:5]}")
        (site / f"{path.stem}.html").write_text(body)
    write_glossary(site)
    write_site_index(build)
    print(f"wrote {len(notebooks)} pages, glossary.html and index.html in {site}"
          + (" (offline: MathJax and RequireJS in html/assets)" if local else ""))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="notebooks/NN_topic.ipynb (default: all)")
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--committed", action="store_true",
                    help="use notebooks/*.ipynb with their committed outputs instead of build/notebooks")
    ap.add_argument("--site", action="store_true",
                    help="write the HTML site (build/html/ and its index) instead of the decks")
    ap.add_argument("--index-only", action="store_true",
                    help="only rewrite build/slides/index.html (after make slides-pdf)")
    ap.add_argument("--check-assets", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.site:
            return build_site(args.build)
        out = args.build / "slides"
        if args.index_only:
            write_index(out, json.loads((out / "manifest.json").read_text())["decks"])
            return 0
        found = find_assets()
    except AssetError as e:
        print(f"slides: {e}", file=sys.stderr)
        return 2
    for k, v in found.items():
        print(f"  {k:10s} {v}")
    if args.check_assets:
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.slides.html"):
        old.unlink()
    copy_assets(found, out / "assets")
    decks = []
    for path in source_notebooks(args.build, args.committed, args.notebooks):
        nb = nbformat.read(path, as_version=4)
        deck = export_deck(nb, path.stem, out)
        units = slide_units(nb)
        course, lesson = notebook_titles(nb)
        decks.append(dict(name=path.stem, file=deck.name, title=course, lesson=lesson,
                          slides=len(units), units=units))
        print(f"wrote {deck} ({len(units)} slides, {deck.stat().st_size // 1024} KiB)", flush=True)
    (out / "manifest.json").write_text(json.dumps({"max_code_lines": MAX_CODE_LINES, "decks": decks}, indent=1))
    write_glossary(out)
    write_index(out, decks)
    if (args.build / "html" / "index.html").exists():
        write_site_index(args.build)  # now with links to the slides
    print(f"wrote {out}/index.html and manifest.json; open {out}/index.html (no network needed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
