"""helpers.timing on the CPU backend (the GPU side is in tests/gpu/)."""
from __future__ import annotations

import pytest

import helpers.timing
from helpers import NoGPUError


def test_benchmark_on_cpu_raises():
    with pytest.raises(NoGPUError):
        helpers.timing.benchmark(lambda: None)


def test_an_unknown_l2_flush_is_refused_before_any_gpu_work():
    """benchmark(flush=...) takes helpers.timing.FLUSHES ("read", the default, or "write"); anything else is an
    InputError naming them, even where no GPU is present (the check comes first)."""
    import pytest

    from helpers.errors import InputError
    from helpers.timing import FLUSHES, benchmark

    assert FLUSHES == ("write", "read")
    with pytest.raises(InputError, match="'write', 'read'"):
        benchmark(lambda: None, flush="memset")


def test_the_default_flush_reads():
    """The harness empties L2 with a read by default (DEFAULT_FLUSH: a memset leaves dirty lines that the timed
    kernel's first misses write back), benchmark's default is that constant and every flush has its text."""
    import inspect

    from helpers.timing import DEFAULT_FLUSH, FLUSH_TEXT, FLUSHES

    assert DEFAULT_FLUSH == "read" and set(FLUSH_TEXT) == set(FLUSHES)
    assert inspect.signature(helpers.timing.benchmark).parameters["flush"].default == DEFAULT_FLUSH


def test_round_ratio_is_the_median_of_the_rounds_ratios():
    """helpers.timing.round_ratio, the course's rule for 'faster': theirs / mine per round, the median of those (not the
    ratio of the two medians), the worst and best round and the rounds won; unequal or empty rounds refused."""
    import pytest

    from helpers.timing import round_ratio

    r = round_ratio([1.0, 2.0, 1.0], [1.1, 1.0, 0.9])        # per round: 1.1, 0.5, 0.9
    assert r == {"ratio": 0.9, "low": 0.5, "high": 1.1, "won": 1, "rounds": 3}
    # per round 0.5 and 4: their median 2.25, where the ratio of the two medians would be 2.5 / 1.5
    assert round_ratio([2.0, 1.0], [1.0, 4.0])["ratio"] == 2.25
    for bad in (([], []), ([1.0], [1.0, 2.0])):
        with pytest.raises(ValueError):
            round_ratio(*bad)


def test_one_rule_for_every_prediction():
    """helpers.timing.verdict is the course's one rule (lessons 5, 6 and 7 read it): inside the spread as predicted,
    outside missed in the direction the spread lies, unresolved when a predicted change's spread also holds 1.00; a
    prediction of no change inside the spread is as predicted; a ratio
    of costs names its own words."""
    from helpers.timing import verdict

    assert verdict(1.00, 0.99, 1.01) == "as predicted"
    assert verdict(1.00, 1.004, 1.046) == "missed: better than predicted"
    assert verdict(1.00, 0.95, 0.999, above="more", below="less") == "missed: less than predicted"
    assert verdict(1.05, 0.99, 1.06, change="change") == "unresolved: the spread holds no change too"
    assert verdict(1.05, 0.99, 1.06) == "unresolved: the spread holds no gain too"
    assert verdict(0.97, 0.898, 0.972, "more", "less") == "as predicted"
    assert verdict(1.23, 1.1557, 1.2152, "more", "less") == "missed: less than predicted"
    assert verdict(1.08, 1.048, 1.052) == "missed: worse than predicted"



def test_an_unresolved_loss_is_not_called_a_gain():
    """A predicted loss whose spread holds x1.00 is "unresolved: the spread holds no change too" (the 256-row tile's
    x0.97 at 4096^3), a predicted gain's "no gain"; a word given is kept."""
    from helpers.timing import verdict

    assert verdict(0.97, 0.959, 1.010) == "unresolved: the spread holds no change too"
    assert verdict(1.03, 0.99, 1.04) == "unresolved: the spread holds no gain too"
    assert verdict(1.03, 0.99, 1.04, change="change") == "unresolved: the spread holds no change too"


def test_alternating_reverses_the_order_every_other_round(monkeypatch):
    """No entry always runs first: a, b, c then c, b, a, and so on; each entry keeps its rounds in round order."""
    import types

    from helpers import timing

    calls = []
    monkeypatch.setattr(timing, "benchmark", lambda fn, flops: types.SimpleNamespace(median_ms=fn(), clocks={}))
    timed = {k: (lambda k=k: calls.append(k) or float(len(calls))) for k in "abc"}
    out = timing.alternating(timed, flops=1.0, rounds=3)
    assert calls == list("abccbaabc")
    assert out["a"]["ms"] == [1.0, 6.0, 7.0] and out["c"]["ms"] == [3.0, 4.0, 9.0]
