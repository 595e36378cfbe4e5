"""Showing things in a notebook: kernel source straight from kernels/ (so a notebook never holds a second, drifting
copy of the code), the lines a rung changes, small tables.
"""
from __future__ import annotations

import ast
import difflib
import inspect
import re
import textwrap

from .compile import KERNEL_DIR
from .kernels import ALL_RUNGS, lookup
from .results import tried


def kernel_source(filename: str, name: str | None = None, with_header: bool = False) -> str:
    """The text of kernels/<filename>, or of one kernel in it (from `extern "C"` to its closing brace); with_header:
    with the file's leading comment block."""
    text = (KERNEL_DIR / filename).read_text()
    if name is None:
        return text
    # a definition, not a declaration: the name's parameter list is followed by the body, not by ';'
    pat = (r'extern\s+"C"\s+__global__\s+(?:__cluster_dims__\([^)]*\)\s+)?void\s+'
           r'(?:__launch_bounds__\([^)]*\)\s+)?(?:__cluster_dims__\([^)]*\)\s+)?' + re.escape(name) + r"\s*\(")
    m = None
    for cand in re.finditer(pat, text):
        depth, j = 1, cand.end()
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        if text[j:].lstrip()[:1] == "{":
            m = cand
            break
    if not m:
        raise KeyError(f"no kernel {name} in {filename}")
    body = _block_from(text, m.start())
    if with_header:
        header = re.match(r"((?://[^\n]*\n)+)", text)
        body = (header.group(1) if header else "") + "\n" + body
    return body


# The language code blocks of C++ are marked with: JupyterLab 4 highlights a block marked `c++` (its CodeMirror finds
# the C++ mode by that name; a block marked `cpp` stays plain text) and so does the slides' Pygments (an alias).
CPP = "c++"


def show_kernel(filename: str, name: str | None = None, with_header: bool = False):
    """Display a kernel as a highlighted code block (Markdown)."""
    from IPython.display import Markdown

    return Markdown(f"`kernels/{filename}`\n\n```{CPP}\n{kernel_source(filename, name, with_header)}\n```")


def python_code(fn, docstring: bool = False):
    """A helper function's Python source as a highlighted code block (Markdown), without its docstring unless
    `docstring`: a rule a slide teaches, read from helpers/, not pasted."""
    from IPython.display import Markdown

    src = textwrap.dedent(inspect.getsource(fn))
    node = ast.parse(src).body[0]
    if not docstring and ast.get_docstring(node) is not None:      # drop the docstring's lines
        doc = node.body[0]
        lines = src.splitlines()
        src = "\n".join(lines[:doc.lineno - 1] + lines[doc.end_lineno:])
    return Markdown(f"`{fn.__module__}.{fn.__qualname__}`\n\n```python\n{src.rstrip()}\n```")


def table(rows: list[dict], columns: list[str], headers: list[str] | None = None, fmt: dict | None = None):
    """A Markdown table from dicts: columns picks the keys, fmt maps a key to a format spec."""
    from IPython.display import Markdown

    fmt = fmt or {}
    headers = headers or columns
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(format(v, fmt[c]) if c in fmt and v not in ("", None) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return Markdown("\n".join(lines))


def gpu_columns_table(rows: list[dict], keys: list[str], heads: list[str], what: str):
    """A table of rows that hold, beside their `keys`, one value per GPU (the remaining keys, in first-seen order):
    one column per GPU, headed "<GPU>: <what>"."""
    gpus = [k for k in dict.fromkeys(k for r in rows for k in r) if k not in keys]
    return table(rows, [*keys, *gpus], [*heads, *(f"{g}: {what}" for g in gpus)])


def tried_table(lesson: str):
    """A lesson's "What else was tried" table: one line per idea, read from results/tried.json."""
    return table(tried(lesson), ["idea", "predicted", "measured", "kept"], ["idea", "predicted", "measured", "kept"])


# --------------------------------------------------------------------------- a rung's changed lines
_DEVICE_FN = re.compile(r"^(?:template\s*<[^>]*>\s*)?(?:static\s+)?__device__\s+(?:__forceinline__\s+|inline\s+)*"
                        r"[\w:<>,\s\*&]+?\b(\w+)\s*\(", re.M)


def _block_from(text: str, start: int) -> str:
    """Text from `start` to the closing brace of the first {...} block after it."""
    depth, i, started = 0, text.index("{", start), False
    while i < len(text):
        if text[i] == "{":
            depth += 1
            started = True
        elif text[i] == "}":
            depth -= 1
            if started and depth == 0:
                return text[start:i + 1]
        i += 1
    return text[start:]


def code_only(line: str) -> str:
    """A line of C++ without its // comment, string and character literals."""
    return re.sub(r"'(?:\\.|[^'\\])'", "''", re.sub(r'"(?:\\.|[^"\\])*"', '""', line)).split("//")[0]


def block_end(lines: list[str], i: int) -> int:
    """The index of the line that closes the {...} block lines[i] opens: a '}' line, or the '} else ... {' line of
    the next branch (a leading '}' of lines[i] closes the branch before); the last line if it never closes."""
    depth = 0
    for j in range(i, len(lines)):
        text = code_only(lines[j])
        if j == i and text.lstrip().startswith("}"):
            text = text.lstrip()[1:]
        for ch in text:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0 and ch == "}":
                return j
    return len(lines) - 1


def device_functions(filename: str, headers: bool = True) -> dict[str, str]:
    """{name: source} of the __device__ functions defined in kernels/<filename> and (headers) the headers it includes
    from kernels/, in file order."""
    text = (KERNEL_DIR / filename).read_text()
    out: dict[str, str] = {}
    for inc in re.findall(r'#include\s+"([^"]+)"', text) if headers else []:
        if (KERNEL_DIR / inc).is_file():
            out.update(device_functions(inc))
    for m in _DEVICE_FN.finditer(text):
        body = _block_from(text, m.start())
        if ";" in body[:body.find("{")] if "{" in body else True:      # a declaration, not a definition
            continue
        out[m.group(1)] = body
    return out


def called_functions(code: str, functions: dict[str, str]) -> list[str]:
    """Names of `functions` that `code` calls, directly or through each other, in order of first call."""
    seen: list[str] = []
    todo = [code]
    while todo:
        src = todo.pop(0)
        for name in re.findall(r"\b(\w+)\s*(?:<[^;(){}]*>)?\s*\(", src):
            if name in functions and name not in seen:
                seen.append(name)
                todo.append(functions[name])
    return seen


def rung_code(key) -> str:
    """A rung's whole code path as built: its extern "C" kernel, then every device function of its file it calls, so
    that two rungs can be compared line by line (the primitives of the headers it includes, shown once, left out)."""
    spec = lookup(key)
    kernel = kernel_source(spec.file, spec.name)
    fns = device_functions(spec.file, headers=False)
    return "\n\n".join([kernel] + [fns[n] for n in called_functions(kernel, fns)])


# a diff's lines as coloured HTML: JupyterLab's Markdown renderer and the slides (nbconvert) both pass raw HTML
# through, and JupyterLab's sanitizer keeps `class` and `style`, so the colours show everywhere (a ```diff block is
# coloured by neither: JupyterLab's highlighter styles only the @@ lines)
DIFF_STYLES = {
    "add": "background-color:#e6ffec;color:#116329",
    "del": "background-color:#ffebe9;color:#82071e",
    "hunk": "color:#6639ba",
    "file": "font-weight:bold",
    "more": "color:#57606a;font-style:italic",
}


def diff_kind(line: str) -> str | None:
    """How a unified diff's line is coloured: file header, hunk header, added, removed, or None (context)."""
    if line.startswith(("+++ ", "--- ")):
        return "file"
    return {"@": "hunk", "+": "add", "-": "del"}.get(line[:1])


def diff_html(lines: list[str], more: str | None = None) -> str:
    """A unified diff as an HTML <pre> block whose added and removed lines are coloured (class course-diff-add,
    course-diff-del, with inline colours); `more`: a last line saying what was left out."""
    import html

    out = []
    for line in lines:
        kind = diff_kind(line)
        text = html.escape(line, quote=False)
        # every line in a span, context lines too: a blank line would end the HTML block for the slides' Markdown
        # parser (mistune), which then shows the rest of the diff as prose
        out.append(f'<span class="course-diff-ctx">{text}</span>' if kind is None
                   else f'<span class="course-diff-{kind}" style="{DIFF_STYLES[kind]}">{text}</span>')
    if more:
        out.append(f'<span class="course-diff-more" style="{DIFF_STYLES["more"]}">{html.escape(more, quote=False)}</span>')
    # a line longer than the output is wide wraps at a space (a notebook's default breaks it inside a word)
    return ('<pre class="course-diff" style="white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere"><code>'
            + "\n".join(out) + "</code></pre>")


def rung_diff(key, prev=None, context: int = 1, max_lines: int = 40, full: bool = False):
    """The lines a rung changes against the rung before it (its `base`, or `prev`): a unified diff of the two code
    paths (rung_code), added and removed lines coloured, then the device functions its kernel calls, each folded
    under its name. Cut at max_lines diff lines unless full=True."""
    from IPython.display import Markdown

    spec = lookup(key)
    if spec.rung is None:
        raise KeyError(f"{spec.name} is not a rung of a ladder")
    before = lookup(prev) if prev is not None else ALL_RUNGS.get(spec.base if spec.base is not None else spec.rung - 1)
    fns = device_functions(spec.file)
    new = rung_code(spec)
    head = f"**Rung {spec.rung}** (`{spec.name}`, `kernels/{spec.file}`): {spec.idea}"
    if before is None:
        body = new.splitlines()
        note = f"The first rung: its whole kernel ({len(body)} lines)"
    else:
        old = rung_code(before)
        body = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"rung {before.rung} ({before.name})",
                                         f"rung {spec.rung} ({spec.name})", n=context, lineterm=""))
        removed = sum(1 for d in body if diff_kind(d) == "del")
        added = sum(1 for d in body if diff_kind(d) == "add")
        note = (f"{removed} lines removed and {added} added against rung {before.rung} (`{before.name}`), "
                f"shown as a diff of {len(body)} lines (with a line of context around each change)")
    cut = not full and len(body) > max_lines
    shown = body[:max_lines] if cut else body
    more = (f"... the {'kernel' if before is None else 'diff'}'s other {len(body) - max_lines} lines (of {len(body)}): "
            f"helpers.display.rung_diff({spec.rung}, full=True)") if cut else None
    if before is None:
        code = f"```{CPP}\n" + "\n".join(shown + ([more] if more else [])) + "\n```"
    else:
        code = diff_html(shown, more)
    parts = [f"{head}. {note}.", code]
    kernel = kernel_source(spec.file, spec.name)
    called = called_functions(kernel, fns)
    if called:
        parts.append(f"The {len(called)} device functions rung {spec.rung}'s kernel calls, directly or through "
                     f"each other (click one to open): " + " ".join(
            f"<details><summary><code>{n}</code></summary>\n\n```{CPP}\n{fns[n]}\n```\n</details>" for n in called))
    return Markdown("\n\n".join(parts))


_REGION_MARK = re.compile(r"^\s*// \[(?:end )?region: [^\]]+\]\s*$")


def kernel_region(filename: str, region: str) -> str:
    """The lines of kernels/<filename> between its comment markers `// [region: <region>]` and
    `// [end region: <region>]` (markers of other regions inside left out), dedented: a piece of a kernel as it
    runs, printed from the file itself."""
    lines = (KERNEL_DIR / filename).read_text().splitlines()
    start, end = f"// [region: {region}]", f"// [end region: {region}]"
    try:
        i = next(k for k, line in enumerate(lines) if line.strip() == start)
        j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == end)
    except StopIteration:
        raise KeyError(f"no region {region!r} (markers {start!r} ... {end!r}) in kernels/{filename}") from None
    body = [line for line in lines[i + 1:j] if not _REGION_MARK.match(line)]
    cut = min((len(x) - len(x.lstrip()) for x in body if x.strip() and not x.startswith("#")), default=0)
    return "\n".join(x if x.startswith("#") else x[cut:] for x in body)      # (#pragma stays at column 0)


def strip_region_marks(text: str) -> str:
    """`text` without its `// [region: ...]` marker lines."""
    return "\n".join(line for line in text.splitlines() if not _REGION_MARK.match(line))


def rung_regions(key, regions, functions=()):
    """A rung's code as it runs, beside its number: the marked `regions` of its kernel file (kernel_region) and the
    device `functions` they call, each whole, then the rung's complete code path folded beneath (Markdown)."""
    from IPython.display import Markdown

    spec = lookup(key)
    fns = device_functions(spec.file)
    parts = [f"**Rung {spec.rung}** (`{spec.name}`, `kernels/{spec.file}`): {spec.idea}."]
    for r in regions:
        parts.append(f"Region `{r}` of the file (between its `// [region: {r}]` markers):\n\n"
                     f"```c++\n{kernel_region(spec.file, r)}\n```")
    for f in functions:
        parts.append(f"*`{f}`*, which it calls:\n\n```c++\n{fns[f]}\n```")
    whole = strip_region_marks(rung_code(spec))
    parts.append(f"<details><summary>The whole kernel, {len(whole.splitlines())} lines (click to open)</summary>\n\n"
                 f"```c++\n{whole}\n```\n</details>")
    return Markdown("\n\n".join(parts))
