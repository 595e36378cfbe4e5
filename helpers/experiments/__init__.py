"""Lesson experiments: measurements a lesson runs live on a GPU and `make record` records.

Each lesson family's module registers GPU functions with ``@experiment("name")`` (no required arguments,
JSON-serialisable data); ``make record`` stores their data under ``experiments`` in ``results/<gpu>.json``.
``run_or_load("name")`` runs one live on a GPU that can (``min_cc`` / ``only_cc``), else returns the recorded
data, with a label saying which.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

from ..device import backend
from ..errors import ResultsError, gpu_errors

REGISTRY: dict[str, Callable[[], Any]] = {}
# The experiments a `make record` in progress has measured so far (helpers.record fills it as each finishes), so
# that one experiment can build on another's data before the record file exists (hopper_targets on `hopper`).
RECORDING: dict[str, Any] = {}


@dataclass(frozen=True)
class Needs:
    """The GPU an experiment needs: compute capability min_cc or newer, or exactly only_cc (sm_90a code)."""
    min_cc: tuple = (0, 0)
    only_cc: tuple | None = None
    what: str = ""

    def unsupported(self, cc) -> str | None:
        """Why a GPU of compute capability `cc` cannot run it (words after 'it needs'), or None."""
        cc = tuple(cc)
        for_what = f": {self.what}" if self.what else ""
        if self.only_cc is not None and cc != tuple(self.only_cc):
            return f"sm_{self.only_cc[0]}{self.only_cc[1]}a (compute capability {self.only_cc[0]}.{self.only_cc[1]}{for_what})"
        if cc < tuple(self.min_cc):
            return f"compute capability {self.min_cc[0]}.{self.min_cc[1]} or newer{for_what}"
        return None


NEEDS: dict[str, Needs] = {}


def experiment(name: str, *, min_cc: tuple = (0, 0), only_cc: tuple | None = None, needs: str = ""):
    """Register a GPU experiment under a unique `name`; min_cc / only_cc and `needs` say which GPUs can run it."""
    def deco(fn):
        if name in REGISTRY and REGISTRY[name] is not fn:
            raise ValueError(f"experiment {name!r} registered twice")
        REGISTRY[name] = fn
        NEEDS[name] = Needs(tuple(min_cc), tuple(only_cc) if only_cc else None, needs)
        fn.experiment_name = name
        return fn
    return deco


def unsupported(name: str, gpu) -> str | None:
    """One line saying why `gpu` cannot run experiment `name`, or None when it can."""
    why = NEEDS.get(name, Needs()).unsupported(gpu.cc)
    if why is None:
        return None
    return f"experiment {name} needs {why}; this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}"


def load_all() -> dict[str, Callable[[], Any]]:
    """Import every experiment module so the registry is complete."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return REGISTRY


@dataclass
class Outcome:
    data: Any
    live: bool
    source: str      # for plot titles: "measured live on NVIDIA H200" / "recorded on NVIDIA H200, 2026-..."

    def __iter__(self):   # rows, source = run_or_load(...)
        return iter((self.data, self.source))


# Parameters that change how an experiment runs, not what it measures: a recorded run honours any value.
RUN_ONLY_PARAMETERS = ("timeout",)


def _plain(v):
    """v with lists made tuples and numpy scalars made Python numbers, to compare arguments."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):     # numpy arrays and scalars
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return v


def _covered(value, recorded) -> bool:
    """Whether the recorded run's argument holds what a run with `value` would measure: the same value, or a
    selection of its entries."""
    value, recorded = _plain(value), _plain(recorded)
    try:
        if value == recorded:
            return True
        if isinstance(value, tuple) and isinstance(recorded, tuple):
            return all(v in recorded for v in value)
    except (TypeError, ValueError):            # values that do not compare
        pass
    return False


def _short(v, width: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= width else text[:width - 3] + "..."


def _check_arguments(name: str, kwargs: dict, live: bool, why: str | None) -> None:
    """InputError for keyword arguments experiment `name` does not take, and (not live) for those its recorded
    run (with its defaults) cannot stand for."""
    import inspect

    from ..errors import InputError

    if not kwargs:
        return
    params = inspect.signature(REGISTRY[name]).parameters
    takes = [p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)]
    unknown = [k for k in kwargs if k not in takes]
    if unknown:
        raise InputError(f"experiment {name} takes no argument {', '.join(unknown)}"
                         f" (it takes {', '.join(takes) or 'none'}).",
                         f"pass only those, e.g. helpers.run_or_load({name!r}).")
    if live:
        return

    def honoured(k):
        p = params[k]
        return k in RUN_ONLY_PARAMETERS or (p.default is not p.empty and _covered(kwargs[k], p.default))

    differ = [k for k in kwargs if not honoured(k)]
    if differ:
        used = ", ".join(f"{k}={_short(params[k].default)}" for k in differ)
        asked = ", ".join(f"{k}={_short(kwargs[k])}" for k in differ)
        raise InputError(f"experiment {name} is not run here ({why}): its recorded run used {used}, not {asked}.",
                         f"call helpers.run_or_load({name!r}) without those arguments for the recorded numbers, "
                         "or run this notebook on a GPU that can run it for a live run with yours.")


def run_or_load(name: str, **kwargs) -> Outcome:
    """Run experiment `name` on the GPU, or load its recorded data (keyword arguments go to a live run; else
    the recorded run must cover them)."""
    load_all()
    if not isinstance(name, str) or name not in REGISTRY:
        import difflib

        from ..errors import UnknownExperimentError

        near = difflib.get_close_matches(name, list(REGISTRY), n=1, cutoff=0.75) if isinstance(name, str) else []
        raise UnknownExperimentError(f"no experiment {name!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                                     + f"; known: {', '.join(sorted(REGISTRY))}.",
                                     "pass one of those names, as a string: helpers.run_or_load('ladder').")
    b = backend()
    cannot = unsupported(name, b.gpu) if b.is_gpu else None
    live = b.is_gpu and cannot is None
    _check_arguments(name, kwargs, live, f"{b.gpu.name} cannot run it" if cannot else "no GPU here: CPU backend")
    if live:
        with gpu_errors(f"experiment {name}"):
            return Outcome(REGISTRY[name](**kwargs), True, f"measured live on {b.gpu.name}")
    from ..results import load_latest

    rec = load_latest()
    exps = rec.meta.get("experiments", {})
    if name not in exps:
        raise ResultsError(f"the newest record ({rec.path.name}) has no experiment {name!r}"
                           + (f" ({cannot})." if cannot else "."),
                           "run `make record` on a GPU to record it, or run this notebook on a GPU.")
    if exps[name] is None:
        raise ResultsError(f"the newest record ({rec.path.name}) holds no data for experiment {name!r} "
                           "(it is null: the recorded run failed or was not saved).",
                           f"re-record it on a GPU with `python -m helpers.record --update-experiments {name}`, "
                           "or run this notebook on a GPU.")
    if cannot:
        print(f"{cannot}: showing the numbers recorded on {rec.label} instead.")
        return Outcome(exps[name], False, f"{rec.label} ({b.gpu.name} cannot run it)")
    return Outcome(exps[name], False, f"{rec.label} (no GPU here: CPU backend)")
