"""Recorded GPU measurements: read, validate, select, and write.

``make record`` writes ``results/<gpu-slug>.json`` on a GPU. The lessons read one of them, the same on every
machine (``load_latest``): the course's record, ``results/nvidia-h200.json``, unless ``COURSE_RECORD`` names
another; ``load_all`` gives every record, for tables that put GPUs side by side. ``results/reference/`` holds
published figures (the seed article's RTX 4090 numbers), each with its source.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError, ResultsError
from .paths import results_dir

# RESULTS_DIR (helpers.paths.results_dir()) is looked up when used (module __getattr__ below), so setting
# COURSE_RESULTS_DIR after `import helpers` takes effect.
SCHEMA = "tensor-core-course/results/1"
REQUIRED_ROW_KEYS = ("kernel", "m", "n", "k", "dtype_in", "acc", "median_ms", "tflops", "rel_err")
REQUIRED_META = ("schema", "kind", "gpu", "records")   # plus "date" for kind "gpu-record"

_FIX = ("run `make record` on a machine with a GPU to write a new one, or restore the committed "
        "file with `git checkout -- results/`.")


def __getattr__(name):
    if name == "RESULTS_DIR":
        return results_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _folder(directory) -> Path:
    """`directory`, or (None) the results folder as it is now (a RESULTS_DIR assigned to this module
    wins, then COURSE_RESULTS_DIR, then the course's results/)."""
    if directory is not None:
        return Path(directory)
    return Path(globals().get("RESULTS_DIR") or results_dir())


@dataclass
class Record:
    path: Path
    meta: dict
    rows: list[dict]

    @property
    def gpu_name(self) -> str:
        return self.meta["gpu"]["name"]

    @property
    def gpu_short(self) -> str:
        """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3': a column heading where records stand side by side."""
        return self.gpu_name.removeprefix("NVIDIA ").strip()

    @property
    def date(self) -> str:
        return self.meta["date"][:10]

    @property
    def label(self) -> str:
        if self.meta["kind"] == "gpu-record":
            return f"{self.gpu_name}, recorded {self.date}"
        return f"{self.gpu_name}, published in {self.meta.get('source_short', 'an external source')}"

    def run_that_wrote(self, experiment: str) -> dict:
        """The newest run that wrote `experiment`: its entry in the record's `updates`, else the record itself (both
        carry the run's date, flush and versions)."""
        for u in reversed(self.meta.get("updates", [])):
            if experiment in u.get("experiments", ()):
                return u
        return self.meta

    def written(self, experiment: str) -> str:
        """The date (YYYY-MM-DD) of the newest run that wrote `experiment` (an update, else the record)."""
        return self.run_that_wrote(experiment)["date"][:10]

    def l2_promotion(self, experiment: str) -> str:
        """What the Hopper kernels' tensor maps asked L2 to fetch around a miss (helpers.hopper.L2_PROMOTION) in the
        newest run that wrote `experiment`. A record or update that names none asked for 256 bytes: the maps' value
        before runs kept it."""
        return self.run_that_wrote(experiment).get("l2_promotion", "L2_256B")

    def maps_note(self, experiment: str) -> str:
        """'' where the newest run that wrote `experiment` built its tensor maps as the course does now, else what
        they asked L2 to fetch per miss beside what the course's ask (a record's figures then describe other
        maps)."""
        from .hopper import L2_PROMOTION, promotion_bytes

        asked = self.l2_promotion(experiment)
        if asked == L2_PROMOTION:
            return ""
        said = {p: f"{promotion_bytes(p)} bytes per miss" if promotion_bytes(p) else "no promotion"
                for p in (asked, L2_PROMOTION)}
        return f"its tensor maps asked L2 for {said[asked]}, the course's for {said[L2_PROMOTION]}"

    def select(self, **where) -> list[dict]:
        """Rows whose fields equal every keyword given, e.g. select(kernel='cublas_fp16', m=4096)."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in where.items())]

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


def _read_json(path: Path, what: str, fix: str):
    """The JSON in `path`; ResultsError (`what` does not exist / is not valid JSON) with `fix` otherwise."""
    if not path.is_file():
        raise ResultsError(f"{what} does not exist.", fix)
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{what} is not valid JSON ({exc}).", fix) from None


def load_record(path) -> Record:
    """Read and validate one results file; ResultsError with a fix if it is missing or malformed."""
    path = Path(path)
    meta = _read_json(path, f"results file {path}", _FIX)
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
    _validate_meta(path, meta)
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise ResultsError(f"record {i} in {path} is {_kind(r)}, not an object of fields (kernel, m, n, k, ...).",
                               _FIX)
        lack = [k for k in REQUIRED_ROW_KEYS if k not in r]
        if lack:
            raise ResultsError(f"record {i} in {path} lacks {', '.join(lack)}.", _FIX)
        _validate_row(path, i, r)
    return Record(path, meta, rows)


def _kind(v) -> str:
    """A JSON value's kind, for messages: 'a string ("x")', 'a number (3)', 'null', ..."""
    if v is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    text = repr(v)
    return f"{names.get(type(v), type(v).__name__)} ({text if len(text) <= 40 else text[:37] + '...'})"


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate_meta(path: Path, meta: dict) -> None:
    """The fields the helpers read have the types they read them as; else ResultsError naming the field."""
    def bad(field, v, want):
        raise ResultsError(f"results file {path}: field {field!r} is {_kind(v)}, expected {want}.", _FIX)

    if meta["kind"] not in ("gpu-record", "published"):
        bad("kind", meta["kind"], "'gpu-record' or 'published'")
    gpu = meta["gpu"]
    if not isinstance(gpu, dict):
        bad("gpu", gpu, 'an object with the GPU\'s "name"')
    if not isinstance(gpu.get("name"), str) or not gpu["name"].strip():
        bad("gpu.name", gpu.get("name"), "the GPU's name, a string")
    if "date" in meta:
        d = meta["date"]
        try:
            ok = isinstance(d, str) and bool(_dt.date.fromisoformat(d[:10]))
        except ValueError:
            ok = False
        if not ok:
            bad("date", d, "an ISO date string such as '2026-01-31T12:00:00+00:00'")
    for field in ("experiments", "extras"):
        if field in meta and not isinstance(meta[field], dict):
            bad(field, meta[field], "an object (experiment name -> data)")


def _validate_row(path: Path, i: int, r: dict) -> None:
    def bad(field, want):
        raise ResultsError(f"record {i} in {path}: field {field!r} is {_kind(r[field])}, expected {want}.", _FIX)

    for field in ("kernel", "dtype_in", "acc"):
        if not isinstance(r[field], str):
            bad(field, "a string")
    for field in ("m", "n", "k"):
        if not isinstance(r[field], int) or isinstance(r[field], bool) or r[field] < 1:
            bad(field, "a whole number >= 1")
    for field in ("median_ms", "tflops", "rel_err"):
        if r[field] is not None and not _is_number(r[field]):
            bad(field, "a number (or null)")


def write_json(data: dict, name: str, directory=None) -> Path:
    """Write `data` to <directory>/<name>.json (default: the results folder); returns its path."""
    directory = _folder(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


# results/*.json that are not measurement records: Nsight Compute counters, the lab's summaries ("What else was
# tried" rows, what limits a goal still missed) and a record in progress (helpers.record)
NOT_RECORDS = ("ncu-*.json", "tried.json", "limits.json", "*.partial.json")


def list_records(directory=None) -> list[Path]:
    """The measurement records (<gpu>.json) in `directory` (default: the results folder)."""
    return sorted(p for p in _folder(directory).glob("*.json") if not any(p.match(pat) for pat in NOT_RECORDS))


COURSE_RECORD = "nvidia-h200"     # the record the lessons' committed outputs were made from


def load_all(directory=None, gpu: str | None = None) -> list[Record]:
    """Every GPU record in `directory` (default: the results folder) of a GPU whose name contains `gpu`, oldest
    first."""
    directory = _folder(directory)
    if gpu is not None and not isinstance(gpu, str):
        raise InputError(f"gpu={gpu!r}: the GPU to pick is given by (part of) its name.",
                         "pass a string such as gpu='H200', or leave it out for the newest record.")
    if not directory.is_dir():
        env = os.environ.get("COURSE_RESULTS_DIR")
        raise ResultsError(f"the results folder {directory} does not exist"
                           + (f" (COURSE_RESULTS_DIR={env!r})." if env else "."),
                           "point COURSE_RESULTS_DIR at a folder that holds <gpu>.json records, or unset it to "
                           "use the course's results/." if env else _FIX)
    recs = []
    for p in list_records(directory):
        r = load_record(p)
        if r.meta["kind"] == "gpu-record" and (gpu is None or gpu.lower() in r.gpu_name.lower()):
            recs.append(r)
    return sorted(recs, key=lambda r: r.meta["date"])


def load_latest(directory=None, gpu: str | None = None) -> Record:
    """The record the lessons read. With `gpu`: the newest record of a GPU whose name contains it. Without: the
    record whose file name (without .json) the environment variable COURSE_RECORD gives, else the course's own
    (COURSE_RECORD, results/nvidia-h200.json) where the folder has it, else the newest. Which record a lesson
    shows thus never depends on which records were written last: a new GPU's record joins the side-by-side
    tables (load_all) and replaces the course's only when asked."""
    recs = load_all(directory, gpu)
    where = _folder(directory)
    if not recs:
        raise ResultsError(f"no recorded GPU results in {where}"
                           + (f" for a GPU matching {gpu!r}" if gpu else "") + ".", _FIX)
    if gpu is None:
        wanted = os.environ.get("COURSE_RECORD")
        if wanted:
            named = [r for r in recs if r.path.stem == wanted.removesuffix(".json")]
            if not named:
                raise ResultsError(f"COURSE_RECORD={wanted!r}: no record {wanted.removesuffix('.json')}.json in "
                                   f"{where} (there are: {', '.join(r.path.name for r in recs)}).",
                                   "set COURSE_RECORD to one of those names without .json, or unset it to read "
                                   f"the course's record ({COURSE_RECORD}.json).")
            return named[0]
        course = [r for r in recs if r.path.stem == COURSE_RECORD]
        if course:
            return course[0]
    return recs[-1]


def load_reference(name: str = "seed_rtx4090") -> Record:
    """A published reference file from results/reference/ (kind 'published', with its source)."""
    return load_record(_folder(None) / "reference" / f"{name}.json")


TRIED_SCHEMA = "tensor-core-course/tried/1"
LIMITS_SCHEMA = "tensor-core-course/limits/1"


def _lab_summary(name: str, schema: str, lesson: str, directory=None):
    """Lesson `lesson`'s part of results/<name>.json, a summary the lab writes (`python lab/<name>.py`) with `schema`;
    ResultsError naming the fix where the file is missing, of another kind, or has nothing for the lesson."""
    path = _folder(directory) / f"{name}.json"
    fix = f"restore the committed file with `git checkout -- results/{name}.json`, or run `python lab/{name}.py`."
    data = _read_json(path, str(path), fix)
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise ResultsError(f"{path} is not a {schema} file.", fix)
    lessons = data.get("lessons", {})
    if lesson not in lessons:
        raise ResultsError(f"{path} has nothing for lesson {lesson!r} (it has {', '.join(sorted(lessons)) or 'none'}).",
                           fix)
    return lessons[lesson]


def tried(lesson: str, directory=None) -> list[dict]:
    """The rows of a lesson's "What else was tried" table (results/tried.json, written by `python lab/tried.py`):
    per idea its `idea`, `predicted`, `measured`, `kept` and `where` (the lab notebook with the whole story)."""
    return _lab_summary("tried", TRIED_SCHEMA, lesson, directory)


def limits(lesson: str, directory=None) -> dict:
    """What the counters say limits the goals a lesson still misses (results/limits.json, written by `python
    lab/limits.py` from Nsight Compute runs): per finding its GPU, date, ncu version, shape, command and rows."""
    return _lab_summary("limits", LIMITS_SCHEMA, lesson, directory)
