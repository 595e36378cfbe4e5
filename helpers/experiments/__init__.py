"""Lesson experiments: measurements a lesson runs live on a GPU and `make record` records.

Each lesson family has a module here (``baseline``, ``wmma``, ...) whose
functions are registered with ``@experiment("name")``. A registered function
takes no required arguments, runs on the GPU, and returns JSON-serialisable
data (usually a list of row dicts). ``make record`` runs them all and stores
the data under ``experiments`` in ``results/<gpu>.json``.

In a notebook, ``run_or_load("name")`` runs the experiment live when a GPU is
present and otherwise returns the recorded data, with a label saying which.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

from ..device import backend
from ..errors import ResultsError, gpu_errors

REGISTRY: dict[str, Callable[[], Any]] = {}


def experiment(name: str):
    """Register a GPU experiment under `name` (unique across the course)."""
    def deco(fn):
        if name in REGISTRY and REGISTRY[name] is not fn:
            raise ValueError(f"experiment {name!r} registered twice")
        REGISTRY[name] = fn
        fn.experiment_name = name
        return fn
    return deco


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


def run_or_load(name: str, **kwargs) -> Outcome:
    """Run experiment `name` on the GPU, or load its recorded data on the CPU backend."""
    load_all()
    if name not in REGISTRY:
        raise KeyError(f"no experiment {name!r}; known: {', '.join(sorted(REGISTRY))}")
    b = backend()
    if b.is_gpu:
        with gpu_errors(f"experiment {name}"):
            return Outcome(REGISTRY[name](**kwargs), True, f"measured live on {b.gpu.name}")
    from ..results import load_latest

    rec = load_latest()
    exps = rec.meta.get("experiments", {})
    if name not in exps:
        raise ResultsError(f"the newest record ({rec.path.name}) has no experiment {name!r}.",
                           "run `make record` on a GPU to record it, or run this notebook on a GPU.")
    return Outcome(exps[name], False, f"{rec.label} (no GPU here: CPU backend)")
