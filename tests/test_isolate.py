"""helpers.isolate: a function run in a child process, its result, its failure, its hang (no GPU needed)."""
from __future__ import annotations

from helpers import isolate


def test_result_comes_back_as_json():
    assert isolate.run_isolated("helpers.analysis:bank_ways", 128, device="cpu") == 8
    assert isolate.run_isolated("helpers.analysis:smem_conflicts", 8, device="cpu")["B_ways"] == 1


def test_the_child_knows_it_is_one():
    assert not isolate.in_child()
    assert isolate.run_isolated("helpers.isolate:in_child", device="cpu") is True


def test_a_failing_child_is_an_error_entry():
    out = isolate.run_isolated("helpers.analysis:ldmatrix_fragments", "c", device="cpu")
    assert isinstance(out, dict) and out["returncode"] != 0 and "kind must be 'a' or 'b'" in out["error"]


def test_a_hanging_child_is_stopped():
    out = isolate.run_isolated("time:sleep", 30, timeout=2, device="cpu")
    assert out == {"error": "timed out after 2 s (a hang: e.g. an mbarrier that never completes)"}


def test_every_isolated_target_named_in_the_code_exists():
    """Each "module:function" that helpers, tools, tests or the lab hand to run_isolated names a function that exists
    (the child imports it by that name, so a module moved into a subfolder breaks only on a GPU otherwise)."""
    import ast
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    targets = set()
    for folder in ("helpers", "tools", "tests", "lab"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
                        == "run_isolated" and node.args and isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str) and ":" in node.args[0].value):
                    targets.add((node.args[0].value, path.relative_to(root).as_posix()))
    targets = {(t, where) for t, where in targets if t not in ("pkg.module:function",)}   # a docstring's example
    assert len(targets) > 20
    missing = []
    for target, where in sorted(targets):
        module, func = target.split(":")
        try:
            if not callable(getattr(importlib.import_module(module), func, None)):
                missing.append(f"{target} ({where}): no such function")
        except ImportError as exc:
            missing.append(f"{target} ({where}): {exc}")
    assert not missing, missing
