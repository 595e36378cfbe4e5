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
