"""Showing things in a notebook: kernel source straight from kernels/, small tables.

Kernels are displayed from their files so a notebook never holds a second,
drifting copy of the code.
"""
from __future__ import annotations

import re

from .compile import KERNEL_DIR


def kernel_source(filename: str, name: str | None = None, with_header: bool = False) -> str:
    """The text of kernels/<filename>, or of one kernel in it (from `extern "C"` to its closing brace).

    with_header=True keeps the file's leading comment block as well.
    """
    text = (KERNEL_DIR / filename).read_text()
    if name is None:
        return text
    m = re.search(r'extern\s+"C"\s+__global__\s+void\s+' + re.escape(name) + r"\s*\(", text)
    if not m:
        raise KeyError(f"no kernel {name} in {filename}")
    depth, i, started = 0, m.start(), False
    while i < len(text):
        if text[i] == "{":
            depth += 1
            started = True
        elif text[i] == "}":
            depth -= 1
            if started and depth == 0:
                break
        i += 1
    body = text[m.start():i + 1]
    if with_header:
        header = re.match(r"((?://[^\n]*\n)+)", text)
        body = (header.group(1) if header else "") + "\n" + body
    return body


def show_kernel(filename: str, name: str | None = None, with_header: bool = False):
    """Display a kernel as a highlighted code block (Markdown)."""
    from IPython.display import Markdown

    return Markdown(f"`kernels/{filename}`\n\n```cuda\n{kernel_source(filename, name, with_header)}\n```")


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
