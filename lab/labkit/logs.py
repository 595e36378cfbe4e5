"""The probes' outputs, kept in lab/logs/ as <name>-<gpu>.json (or .log, .txt): read them back."""
from __future__ import annotations

import json
from pathlib import Path

from . import LAB

LOGS = LAB / "logs"


class LogMissing(FileNotFoundError):
    """A log the lab reads is not in lab/logs/: the message names the command that writes it."""


def log_path(name: str, made_by: str, gpu_slug: str = "nvidia-h200", suffix: str = ".json",
             directory: Path | None = None) -> Path:
    """lab/logs/<name>-<gpu_slug><suffix>, which must exist; `made_by` names the command that writes it."""
    path = Path(directory or LOGS) / f"{name}-{gpu_slug}{suffix}"
    if not path.is_file():
        raise LogMissing(f"no {path.name} in {path.parent}: run {made_by} on a Hopper GPU and keep its output there")
    return path


def load_log(name: str, made_by: str, gpu_slug: str = "nvidia-h200", directory: Path | None = None):
    """A probe's JSON output, parsed (see log_path)."""
    return json.loads(log_path(name, made_by, gpu_slug, directory=directory).read_text())


def experiments(rec, gpu_slug: str = "nvidia-h200") -> dict:
    """The record's experiments, plus those the lab keeps for itself (lab/logs/record-<name>-<gpu>.json, moved out of
    the course's record because no lesson reads them), under their experiment names."""
    out = dict(rec.meta.get("experiments", {}))
    for path in sorted(LOGS.glob(f"record-*-{gpu_slug}.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "from" in data:
            out[data["from"].rsplit(".", 1)[-1]] = data
    return out


def row_ratio(mine: dict, theirs: dict) -> float:
    """Two timed rows of one alternating run (each with `round_ms` and `tflops`), mine over theirs: the median of the
    round-by-round ratios (helpers.timing.round_ratio; above 1 mine was faster) where both kept the same rounds, their
    TFLOP/s ratio where a run kept none."""
    from helpers.timing import round_ratio

    a, b = mine.get("round_ms"), theirs.get("round_ms")
    if a and b and len(a) == len(b):
        return round_ratio(a, b)["ratio"]
    return mine["tflops"] / theirs["tflops"]


def flush(rec, experiment: str | None = None) -> str:
    """How L2 was emptied before each timed launch (one of helpers.timing.FLUSHES, or "both" for the probe that
    compared them) in the run of record `rec` that last wrote `experiment` (None: the record's own rows). A record or
    update that names none flushed with a memset ("write")."""
    return (rec.meta if experiment is None else rec.run_that_wrote(experiment)).get("flush", "write")
