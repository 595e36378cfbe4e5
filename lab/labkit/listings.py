"""Listings of the lab's frozen research files (lab/kernels/*_research.cu) as their rungs were built: without the
code of the lab's switches (macros #defined 0 that no knob sets), and the lines of ws_gemm a template switch selects.
The course's kernel files have no such switches (tests/test_rung_files.py, tests/test_fp8_files.py)."""
from __future__ import annotations

import re

from helpers.display import _DEVICE_FN, _block_from, block_end, code_only
from helpers.knobs import KNOBS

from . import LAB

HOPPER_RESEARCH = LAB / "kernels" / "hopper_sm90a_research.cu"


def lab_switches(text: str) -> set[str]:
    """The lab's switches in a kernel file's text: macros defined as 0 unless told otherwise (`#ifndef X` /
    `#define X 0`) that no knob sets. The rungs are built with each of them 0."""
    knobs = {k.define for rung in KNOBS.values() for k in rung.values()}
    return {x for x in re.findall(r"^#ifndef (\w+)\s*\n#define \1 0\b", text, re.M) if x not in knobs}


def without_switched_code(text: str, off: set[str]) -> str:
    """`text` without each `#if X` or `#if X == 1` block (to its `#endif`) for X in `off`; blocks with an #else or
    #elif are kept whole."""
    lines, out, i = text.splitlines(keepends=True), [], 0
    head = re.compile(r"#if\s+(\w+)(?:\s*==\s*1)?\s*$")
    while i < len(lines):
        m = head.match(lines[i].strip())
        if m and m.group(1) in off:
            depth, j, branch = 0, i, False
            for j in range(i, len(lines)):
                t = lines[j].strip()
                depth += t.startswith("#if")
                branch |= depth == 1 and t.startswith(("#else", "#elif"))
                depth -= t.startswith("#endif")
                if depth == 0:
                    break
            if not branch:
                i = j + 1
                continue
        out.append(lines[i])
        i += 1
    return "".join(out)


def research_source(path=HOPPER_RESEARCH) -> str:
    """The text of a research file as its rungs were built: without the code its lab switches add."""
    text = path.read_text()
    return without_switched_code(text, lab_switches(text))


def research_functions(path=HOPPER_RESEARCH) -> dict[str, str]:
    """{name: source} of the __device__ functions defined in a research file as built (research_source)."""
    text, out = research_source(path), {}
    for m in _DEVICE_FN.finditer(text):
        body = _block_from(text, m.start())
        if "{" in body and ";" not in body[:body.find("{")]:         # a definition, not a declaration
            out[m.group(1)] = body
    return out


# --------------------------------------------------------------------------- the lines a template switch selects
_BRANCH = re.compile(r"^\s*(?P<close>\}\s*else\s*)?(?:if\s*(?:constexpr\s*)?\((?P<cond>.*)\))?\s*\{\s*(?://.*)?$")
_OPS = {"Lt": "__lt__", "LtE": "__le__", "Gt": "__gt__", "GtE": "__ge__", "Eq": "__eq__", "NotEq": "__ne__",
        "Add": "__add__", "Sub": "__sub__", "Mult": "__mul__", "Mod": "__mod__", "Div": "__floordiv__"}


def _branch(line: str):
    """(condition or None for a plain else, opens after a closing brace?) for a line opening an if / else block."""
    m = _BRANCH.match(line)
    return None if not m or (m["cond"] is None and not m["close"]) else (m["cond"], bool(m["close"]))


def _decide(cond: str | None, settings: dict):
    """True, False or None (undecidable from `settings`) for a C++ if-condition of names, numbers, !, &&, ||,
    comparisons and integer arithmetic; an else (None) is True."""
    import ast

    if cond is None:
        return True
    try:
        tree = ast.parse(re.sub(r"!(?!=)", " not ", cond.replace("&&", " and ").replace("||", " or ")).strip(),
                         mode="eval").body
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name):
            return settings.get(n.id, {"true": True, "false": False}.get(n.id))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            v = ev(n.operand)
            return None if v is None else not v
        if isinstance(n, ast.BoolOp):
            vs, want = [ev(v) for v in n.values], isinstance(n.op, ast.Or)   # or: one True decides; and: one False
            if any(v is not None and bool(v) == want for v in vs):
                return want
            return None if None in vs else not want
        if isinstance(n, ast.BinOp) and type(n.op).__name__ in _OPS:
            a, b = ev(n.left), ev(n.right)
            return None if a is None or b is None else getattr(int(a), _OPS[type(n.op).__name__])(int(b))
        if isinstance(n, ast.Compare) and all(type(o).__name__ in _OPS for o in n.ops):
            vs = [ev(x) for x in (n.left, *n.comparators)]
            return None if None in vs else all(getattr(int(a), _OPS[type(o).__name__])(int(b))
                                               for a, o, b in zip(vs, n.ops, vs[1:]))
        return None

    return ev(tree)


def switch_lines(switch: str, fn: str = "ws_gemm", blocks_only: bool = False):
    """The lines of `fn` (the research file as built, HOPPER_RESEARCH) that template switch `switch` selects, as
    Markdown: every if-chain testing it, every other block opened by a line naming it and, unless `blocks_only`, every
    line naming it; a branch ruled out by a constant condition is shown by its first line and a comment."""
    from IPython.display import Markdown

    lines = research_functions()[fn].splitlines()
    settings: dict = {}
    names = re.compile(rf"\b{switch}\b")
    shown: dict[float, str] = {}                      # line number -> its text (k + 0.5: what stands for a branch)
    picked: list[tuple[int, int]] = []

    def walk(lo: int, hi: int) -> None:
        i = lo
        while i < hi:
            b = _branch(lines[i])
            if b is None or b[1]:                      # not the first line of an if-chain
                shown[i] = lines[i]
                opens = code_only(lines[i]).count("{") - code_only(lines[i]).count("}")
                if names.search(lines[i]) and (opens > 0 or not blocks_only):
                    picked.append((i, block_end(lines, i) if opens > 0 else i))
                i += 1
                continue
            heads, j = [i], block_end(lines, i)       # the chain's branches (first lines), then its last line
            while _branch(lines[j]) is not None and _branch(lines[j])[1]:
                heads.append(j)
                j = block_end(lines, j)
            conds = [_branch(lines[h])[0] for h in heads]
            first = next((k for k, c in enumerate(conds) if c is not None and names.search(c)), None)
            taken = False
            for k, (h, c) in enumerate(zip(heads, conds)):
                v = _decide(c, settings)
                shown[h], pad = lines[h], re.match(r"\s*", lines[h])[0] + "    "
                if taken or v is False:
                    why = "an earlier branch is taken" if taken else f"{c} is false"
                    shown[h + 0.5] = f"{pad}// (not built: {why})"
                elif first is not None and k < first:
                    shown[h + 0.5] = f"{pad}// ..."
                else:
                    walk(h + 1, heads[k + 1] if k + 1 < len(heads) else j)
                taken = taken or v is True
            shown[j] = lines[j]
            if first is not None:
                picked.append((i, j))
            i = j + 1

    walk(3, len(lines))                                # (lines 0-2: the template's parameter list)
    spans: list[list[int]] = []
    for a, b in sorted(picked):
        if spans and a <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    out = []
    for n, (a, b) in enumerate(spans):
        out += (["    ..."] if n else []) + [shown[k] for k in sorted(shown) if a <= k <= b]
    return Markdown(f"The lines of `{fn}` that `{switch}` selects:\n```c++\n" + "\n".join(out) + "\n```")
