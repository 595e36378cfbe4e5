"""Recorded GPU measurements: read, validate, select, and write.

``make record`` (``python -m helpers.record``) writes ``results/<gpu-slug>.json``
on a GPU. Without a GPU the lessons plot the newest such file, labelled with
its GPU and date. ``results/reference/`` holds published figures from elsewhere
(the seed article's RTX 4090 numbers), each with its source.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import ResultsError
from .paths import results_dir

RESULTS_DIR = results_dir()          # results/ of the clone, or of the installed package (helpers.paths)
SCHEMA = "tensor-core-course/results/1"
REQUIRED_ROW_KEYS = ("kernel", "m", "n", "k", "dtype_in", "acc", "median_ms", "tflops", "rel_err")
REQUIRED_META = ("schema", "kind", "gpu", "records")   # plus "date" for kind "gpu-record"

_FIX = ("run `make record` on a machine with a GPU to write a new one, or restore the committed "
        "file with `git checkout -- results/`.")


@dataclass
class Record:
    path: Path
    meta: dict
    rows: list[dict]

    @property
    def gpu_name(self) -> str:
        return self.meta["gpu"]["name"]

    @property
    def date(self) -> str:
        return self.meta["date"][:10]

    @property
    def label(self) -> str:
        if self.meta["kind"] == "gpu-record":
            return f"{self.gpu_name}, recorded {self.date}"
        return f"{self.gpu_name}, published in {self.meta.get('source_short', 'an external source')}"

    def select(self, **where) -> list[dict]:
        """Rows whose fields equal every keyword given, e.g. select(kernel='cublas_fp16', m=4096)."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in where.items())]

    def kernels(self) -> list[str]:
        return list(dict.fromkeys(r["kernel"] for r in self.rows))

    def series(self, kernel: str, y: str = "tflops", square: bool = True):
        """(sizes, values) for one kernel, sorted by size; square=True keeps M=N=K rows."""
        rows = [r for r in self.select(kernel=kernel) if not square or r["m"] == r["n"] == r["k"]]
        rows.sort(key=lambda r: r["m"])
        return [r["m"] for r in rows], [r[y] for r in rows]

    def value(self, kernel: str, size: int, y: str = "tflops"):
        rows = self.select(kernel=kernel, m=size, n=size, k=size)
        if not rows:
            raise ResultsError(f"{self.path.name} has no {kernel} row at {size}^3.",
                               "pick a size the record has (Record.series(kernel)) or re-record.")
        return rows[0][y]


def load_record(path) -> Record:
    """Read and validate one results file; ResultsError with a fix if it is missing or malformed."""
    path = Path(path)
    if not path.is_file():
        raise ResultsError(f"results file {path} does not exist.", _FIX)
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"results file {path} is not valid JSON ({exc}).", _FIX) from None
    if not isinstance(meta, dict):
        raise ResultsError(f"results file {path} does not hold a JSON object.", _FIX)
    missing = [k for k in REQUIRED_META if k not in meta]
    if meta.get("kind") == "gpu-record" and "date" not in meta:
        missing.append("date")
    if missing:
        raise ResultsError(f"results file {path} lacks {', '.join(missing)}.", _FIX)
    if meta["schema"] != SCHEMA:
        raise ResultsError(f"results file {path} has schema {meta['schema']!r}, expected {SCHEMA!r}.", _FIX)
    rows = meta["records"]
    if not isinstance(rows, list) or not rows:
        raise ResultsError(f"results file {path} has no records.", _FIX)
    for i, r in enumerate(rows):
        lack = [k for k in REQUIRED_ROW_KEYS if k not in r]
        if lack:
            raise ResultsError(f"record {i} in {path} lacks {', '.join(lack)}.", _FIX)
    return Record(path, meta, rows)


def write_json(data: dict, name: str, directory=RESULTS_DIR) -> Path:
    """Write `data` to <directory>/<name>.json, indented as every results file is; returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


# results/*.json that are not measurement records: Nsight Compute counters (tools/ncu_counters.py)
NOT_RECORDS = ("ncu-*.json",)


def list_records(directory=RESULTS_DIR) -> list[Path]:
    """The measurement records in `directory` (<gpu>.json), not the other JSON files kept there."""
    return sorted(p for p in Path(directory).glob("*.json") if not any(p.match(pat) for pat in NOT_RECORDS))


def load_latest(directory=RESULTS_DIR, gpu: str | None = None) -> Record:
    """The newest GPU record in `directory` (optionally only GPUs whose name contains `gpu`)."""
    recs = []
    for p in list_records(directory):
        r = load_record(p)
        if r.meta["kind"] == "gpu-record" and (gpu is None or gpu.lower() in r.gpu_name.lower()):
            recs.append(r)
    if not recs:
        raise ResultsError(f"no recorded GPU results in {directory}"
                           + (f" for a GPU matching {gpu!r}" if gpu else "") + ".", _FIX)
    return max(recs, key=lambda r: r.meta["date"])


def load_reference(name: str = "seed_rtx4090") -> Record:
    """A published reference file from results/reference/ (kind 'published', with its source)."""
    return load_record(RESULTS_DIR / "reference" / f"{name}.json")
