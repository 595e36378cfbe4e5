"""The recorded knob sweep try_kernel shows where it measures nothing, and the text of its results.

``recorded_sweep`` reads a rung's rows of the newest record's ``knobs`` experiment (``recorded_sizes``: the
shapes they were timed at); its rows become table cells and bar labels, and ``asked_lines`` says, per knob a
learner asked for, what the recorded run found for that value against the rung as recorded. ``_table``,
``_fmt`` and ``_wrapped`` lay out the plain text every TryResult prints.
"""
from __future__ import annotations

from . import results
from .clocks import clock_text
from .errors import ResultsError, wrap
from .kernels import GemmKernel
from .knobs import KNOBS


# --------------------------------------------------------------------------- text
def _wrapped(text: str, width: int = 100) -> list[str]:
    """A sentence as lines of at most `width` characters, broken at spaces: a notebook wraps a longer output line
    wherever it reaches the window's edge, inside a word too (JupyterLab's word-break: break-all)."""
    return wrap(" ".join(text.split("\n")), width, indent="").splitlines() or [text]


def _fmt(v, spec: str, suffix: str = "") -> str:
    return "-" if v is None else f"{format(v, spec)}{suffix}"


def _table(rows: list[dict], cols: list[str]) -> list[str]:
    w = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    return [" | ".join(f"{c:<{w[c]}}" for c in cols).rstrip(), "-+-".join("-" * w[c] for c in cols)] + \
        [" | ".join(f"{str(r.get(c, '')):<{w[c]}}" for c in cols).rstrip() for r in rows]


# --------------------------------------------------------------------------- rows of the recorded sweep
def _shown_knob(rows: list[dict]):
    """The one knob a recorded sweep shows (None when it shows several)."""
    knobs = {r.get("knob") for r in rows} - {None}
    return knobs.pop() if len(knobs) == 1 else None


def _forcing(r: dict, knob) -> bool:
    """Whether `knob`, given even at its default, changes the rung's build (CT_M): its row as recorded shows
    'left out'."""
    k = KNOBS.get(r.get("rung"), {}).get(knob) if knob else None
    return bool(k and k.forces)


def _chosen(r: dict, knob) -> str | None:
    """For the row as recorded and a knob the launcher chooses per problem when left out (rungs 25-26's CLUSTER_M):
    what it chose for this row's shape ('2, chosen per shape'); else None."""
    k = KNOBS.get(r.get("rung"), {}).get(knob) if knob else None
    if not (k and k.chosen) or r.get("knob") is not None:
        return None
    v = k.chosen(r)
    return "chosen per shape" if v is None else f"{v}, chosen per shape"


def _value_label(r: dict, knob=None) -> str:
    if r.get("knob") is None:
        if _forcing(r, knob):
            return f"{knob} left out (as recorded)"
        chosen = _chosen(r, knob)
        if chosen:
            return f"{knob}{'=' if chosen[0].isdigit() else ' '}{chosen} (as recorded)"
        v = (r.get("settings") or {}).get(knob)
        return "as recorded" if knob is None or v is None else f"{knob}={v} (as recorded)"
    return f"{r['knob']}={r['value']}"


def _recorded_cells(r: dict, knob=None) -> dict:
    value = r.get("value")
    if r.get("knob") is None and knob is not None:
        value = "left out" if _forcing(r, knob) else _chosen(r, knob) or (r.get("settings") or {}).get(knob)
    return {"rung": r.get("rung"), "knob": r.get("knob") or "(as recorded)",
            "value": "-" if value is None else value,
            "check": "skipped" if r.get("skipped") else ("PASS" if r.get("passed") else "FAIL"),
            "ms": _fmt(r.get("ms"), ".4f"), "TFLOP/s": _fmt(r.get("tflops"), ".1f"),
            "x default": _fmt(r.get("vs_default"), ".3f", "x"), "clocks": clock_text(r) if r.get("ms") else "-"}


def _asked_rows(rows: list[dict], given: dict) -> list[dict]:
    """The recorded rows of the values a learner asked for: a knob's row at that value, or the row as recorded when
    the value is the one it was recorded with."""
    out = []
    for knob, value in (given or {}).items():
        for r in rows:
            if (r.get("knob") == knob and r.get("value") == value) or (
                    r.get("knob") is None and (r.get("settings") or {}).get(knob) == value and not _forcing(r, knob)):
                out.append(r)
                break
    return out


def _mark(r: dict, mine: list[dict]) -> str:
    if any(m is r for m in mine):
        return "yours, default" if r.get("knob") is None else "yours"
    return "default" if r.get("knob") is None else ""


def asked_lines(rows: list[dict], given: dict) -> list[str]:
    """One line per knob a learner asked for: what the recorded run found for that value against the rung as
    recorded, judged by the course's rule (timing.verdict: a predicted "no change", 1.00, against the spread the
    p10 and p90 timings of both allow), or that the value was not recorded."""
    from .timing import verdict

    default = next((r for r in rows if r.get("knob") is None), None)
    out = []
    for knob, value in (given or {}).items():
        r = next(iter(_asked_rows(rows, {knob: value})), None)
        if r is None:
            recorded = sorted({x["value"] for x in rows if x.get("knob") == knob}, key=str)
            out.append(f"Your {knob}={value} was not recorded"
                       + (f" (recorded: {', '.join(map(str, recorded))}), so there is no number for it here."
                          if recorded else ", so there is no number for it here."))
        elif r is default:
            out.append(f"Your {knob}={value} is the rung as recorded (the default row).")
        elif r.get("skipped") or not (default and r.get("ms") and default.get("ms")):
            out.append(f"Your {knob}={value} was recorded but not timed (check: "
                       f"{'skipped' if r.get('skipped') else 'FAIL' if not r.get('passed') else 'no timing'}).")
        else:
            ratio = default["ms"] / r["ms"]
            low = default.get("p10_ms", default["ms"]) / r.get("p90_ms", r["ms"])
            high = default.get("p90_ms", default["ms"]) / r.get("p10_ms", r["ms"])
            said = {"as predicted": "no difference the spread can resolve",
                    "missed: faster than predicted": "faster than the default, beyond the spread",
                    "missed: slower than predicted": "slower than the default, beyond the spread"}[
                verdict(1.0, low, high, above="faster", below="slower")]
            digits = 3      # enough digits that the spread's ends show on which side of x1 they lie
            while digits < 6 and any((round(x, digits) == 1.0) != (x == 1.0) for x in (low, high)):
                digits += 1
            out.append(f"Your {knob}={value}, as recorded: x{ratio:.3f} the default's speed "
                       f"(spread x{low:.{digits}f} to x{high:.{digits}f}): {said}.")
    return out


def _tflops_range(t: dict):
    if not t.get("p10_ms") or not t.get("p90_ms") or not t.get("tflops") or not t.get("ms"):
        return None
    return t["tflops"] * t["ms"] / t["p90_ms"], t["tflops"] * t["ms"] / t["p10_ms"]


# --------------------------------------------------------------------------- the recorded sweep
def recorded_sweep(spec: GemmKernel, given: dict | None = None):
    """(rows, label) of the newest record's ``knobs`` experiment for spec's rung: the default row and the rows of the
    knobs in `given` (all of them when none is given); (None, why) without one."""
    try:
        rec = results.load_latest()
    except ResultsError as exc:
        return None, exc.problem
    data = (rec.meta.get("experiments") or {}).get("knobs")
    if not data:
        return None, f"{rec.path.name} has no knobs experiment"
    rows = [r for r in data if r.get("rung") == spec.rung and r.get("kernel") == spec.name]
    if given:
        rows = [r for r in rows if r.get("knob") is None or r.get("knob") in given]
        if rows and not any(r.get("knob") in given for r in rows):    # the rung as recorded alone shows nothing
            return None, f"{rec.path.name} has no rows of {', '.join(given)} for it"
    if not rows:
        return None, f"{rec.path.name} has no rows for it"
    return rows, f"{rec.gpu_name}, recorded {rec.written('knobs')}" if rec.meta["kind"] == "gpu-record" else rec.label


def recorded_sizes(rows: list[dict]) -> list[tuple]:
    """The (M, N, K) shapes the recorded rows were timed at (a row with only ``m`` is m^3), in order."""
    return sorted({(r["m"], r.get("n", r["m"]), r.get("k", r["m"])) for r in rows if r.get("m")})


def _size_text(shape: tuple) -> str:
    return f"{shape[0]}^3" if len(set(shape)) == 1 else " x ".join(map(str, shape))
