"""Restart & Run All, N times: are the compared outputs of every notebook identical?

    python tools/check_determinism.py                 # every notebook, 3 runs, CPU backend
    python tools/check_determinism.py --runs 2 notebooks/00_start_here.ipynb
    python tools/check_determinism.py --jobs 2        # notebooks in parallel (one kernel each)
    python tools/check_determinism.py --settings OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1
                                                      # run k under the k-th setting (cycled)
    python tools/check_determinism.py --nbval-ran --keep build/executed
                                                      # nbval's run counts as one (see below); the
                                                      # notebooks of run 1 kept for make course

Each run executes the notebook in a fresh kernel (that is Restart & Run All) with
COURSE_DEVICE=cpu through nbclient, and keeps the outputs of every code cell that
nbval compares (cells not tagged ``nbval-ignore-output``, and stored as run), normalised the way nbval
sees them: the regex sanitizers of tests/nbval_sanitize.cfg applied, and the MIME
types nbval skips (images, metadata, tracebacks, ...) left out. It then reports

* every cell whose compared output differs between run 1 and run k (nondeterminism);
* every cell whose compared output in any run differs from the committed notebook
  (stale outputs, or outputs that depend on the machine: nbval would fail there).

``--settings`` gives each run an environment of its own (``NAME=VALUE[,NAME=VALUE]``, cycled over
the runs), so that one command proves the outputs do not depend on the BLAS kernel OpenBLAS picks
for the CPU (``OPENBLAS_CORETYPE``) or on the thread count (``OPENBLAS_NUM_THREADS=1``). Each run
reports the OpenBLAS core that its kernel really used, so a setting that did not take is visible.

``--nbval-ran`` says that nbval has run every notebook as this machine is and compared it with the
committed outputs in the same job (CI: make test beside make determinism; nbval normalises as above
and compares the same cells). Where the helpers pick the CPU backend as the machine is (no GPU),
that run counts as one of the ``--runs``: a setting under which numpy and OpenBLAS run exactly as
they do without it (the same OpenBLAS core, BLAS thread count and numpy loops, probed in a child
process) is not run again, and the runs go down by one, never below one per remaining setting.
Without such a setting nothing changes.

``--keep DIR`` writes each notebook as executed in its first run to DIR/NN_topic.ipynb, so that
``make course COURSE_EXECUTED=DIR`` builds the site from them instead of executing every notebook again.

Exit status 0 when all runs agree with each other and with the committed outputs,
1 otherwise. `make determinism` runs it.
"""
from __future__ import annotations

import argparse
import configparser
import difflib
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SANITIZE_CFG = ROOT / "tests" / "nbval_sanitize.cfg"
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
# the MIME types nbval does not compare (nbval.plugin: skip_compare, without --nbdime)
SKIP_KEYS = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}


def sanitizers(path: Path = SANITIZE_CFG) -> list[tuple[re.Pattern, str]]:
    cfg = configparser.ConfigParser()
    cfg.read(path)
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def normalise(outputs, subs) -> list[str]:
    """The compared part of a cell's outputs as lines of text (streams merged like nbval)."""
    lines: list[str] = []
    stream: dict[str, str] = {}
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            stream[o.get("name", "stdout")] = stream.get(o.get("name", "stdout"), "") + _text(o.get("text", ""))
            continue
        for name, text in sorted(stream.items()):
            lines.append(f"[{name}] {text}")
        stream = {}
        if kind == "error":
            lines.append(f"[error] {o.get('ename')}: {o.get('evalue')}")
        elif kind in ("execute_result", "display_data"):
            for mime, v in sorted(o.get("data", {}).items()):
                if mime not in SKIP_KEYS:
                    lines.append(f"[{kind} {mime}] {_text(v)}")
    for name, text in sorted(stream.items()):
        lines.append(f"[{name}] {text}")
    out = []
    for ln in lines:
        for rx, rep in subs:
            ln = rx.sub(rep, ln)
        out.append(ln)
    return out


def compared_cells(nb, subs) -> dict[int, list[str]]:
    """{code cell index: normalised outputs} for the cells nbval compares."""
    res = {}
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        if IGNORE_TAGS & set(c.get("metadata", {}).get("tags", [])):
            continue
        if c.get("execution_count", 0) is None:          # stored unrun (a solution cell): nbval compares nothing
            continue
        res[i] = normalise(c.get("outputs", []), subs)
    return res


# Python that finds the OpenBLAS numpy loaded and defines _blas(names, restype): the first of those functions the
# library has, called (None without OpenBLAS or without any of them). Both probes below start with it.
_OPENBLAS = """
import ctypes as _c, numpy as _np
_libs = [_l for _l in open("/proc/self/maps").read().split() if "openblas" in _l and ".so" in _l]
_lib = _c.CDLL(_libs[0]) if _libs else None
def _blas(names, restype=None):
    for _n in names:
        if _lib is not None and hasattr(_lib, _n):
            _fn = getattr(_lib, _n)
            if restype is not None:
                _fn.restype = restype
            return _fn()
    return None
_CORE_FNS = ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename")
_THREAD_FNS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
"""

# run in the notebook's kernel after the lesson: which OpenBLAS core and thread count numpy used
_PROBE = _OPENBLAS + """
_core = (_blas(_CORE_FNS, _c.c_char_p) or b"unknown").decode()
from numpy._core._multiarray_umath import __cpu_features__ as _f
_simd = ("AVX-512" if _f.get("X86_V4", _f.get("AVX512_SKX")) else "AVX2" if _f.get("X86_V3", _f.get("AVX2"))
         else "SSE")
print(f"{_core}, numpy loops {_simd}")
"""


# The machine as numpy sees it under an environment: OpenBLAS core, BLAS threads and every numpy CPU feature
# (NPY_DISABLE_CPU_FEATURES switches some off). Run in a child process (probe_machine).
_MACHINE_PROBE = _OPENBLAS + """
import json
from numpy._core._multiarray_umath import __cpu_features__ as features
core = _blas(_CORE_FNS, _c.c_char_p)
print(json.dumps({"core": core and core.decode(), "threads": _blas(_THREAD_FNS),
                  "numpy": sorted(k for k, v in features.items() if v)}))
"""
# the variables the probe sees the effect of: a setting with any other variable is never taken for the machine as is
_PROBED = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES"}


def probe_machine(env: dict[str, str]) -> dict | None:
    """{core, threads, numpy features} of a Python started with `env` added; None if it cannot say."""
    import json
    import subprocess

    full = {**os.environ, **env}
    try:
        out = subprocess.run([sys.executable, "-c", _MACHINE_PROBE], env=full, capture_output=True, text=True,
                             timeout=120, check=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return None
    return found if found.get("core") and found.get("threads") else None


def backend_as_is() -> str | None:
    """The backend the helpers pick in this environment ('cpu' or 'gpu'), as nbval's kernel saw it."""
    import subprocess

    try:
        return subprocess.run([sys.executable, "-c", "import helpers.device as d; print(d.backend().name)"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout.split()[-1]
    except (subprocess.SubprocessError, OSError, IndexError):
        return None


def is_machine_as_is(setting: dict[str, str], as_is: dict | None) -> bool:
    """Whether numpy and OpenBLAS run under `setting` exactly as they do without it (as_is: probe_machine({}))."""
    if as_is is None or not setting or set(setting) - _PROBED:
        return False
    return probe_machine(setting) == as_is


def without_nbval_run(settings: list[str], runs: int, as_is: dict | None) -> tuple[list[str], int, list[str]]:
    """(settings still to run, runs still to make, settings nbval's run stands for): nbval's run as the machine
    is stands for every setting that leaves the machine as it is and, if there is one, counts as one of the runs;
    every other setting still gets a run of its own."""
    by_nbval = [s for s in settings if is_machine_as_is(parse_settings(s), as_is)]
    if not by_nbval:
        return settings, runs, []
    rest = [s for s in settings if s not in by_nbval]
    return rest, max(runs - 1, len(rest), 1), by_nbval


# what the CPU must have for an OpenBLAS core (the kernels use these instructions: a CPU without them
# would stop with an illegal instruction, not give other digits)
_CORE_NEEDS = {"haswell": "avx2", "zen": "avx2", "skylakex": "avx512f", "cooperlake": "avx512_bf16",
               "sapphirerapids": "amx_tile"}


def cpu_lacks(setting: dict[str, str]) -> str | None:
    """The CPU flag a setting needs that this machine lacks (None: it can run here)."""
    need = _CORE_NEEDS.get(setting.get("OPENBLAS_CORETYPE", "").lower())
    if not need:
        return None
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return None
    return None if need in flags else need


def parse_settings(text: str) -> dict[str, str]:
    """'A=1,B=2' -> {'A': '1', 'B': '2'}; '' -> {} (the machine as it is)."""
    out = {}
    for part in filter(None, text.split(",")):
        if "=" not in part:
            raise SystemExit(f"--settings: {part!r} is not NAME=VALUE")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def execute_once(path: str, timeout: int, env: dict[str, str] | None = None
                 ) -> tuple[dict[int, list[str]], float, str | None, str, nbformat.NotebookNode]:
    """Run the notebook in a fresh kernel on the CPU backend, with `env` added to the kernel's
    environment; (compared outputs, seconds, error, OpenBLAS core the kernel used, the executed notebook)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    os.environ["COURSE_DEVICE"] = "cpu"
    p = Path(path)
    nb = nbformat.read(p, as_version=4)
    n_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(_PROBE))
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                allow_errors=False, resources={"metadata": {"path": str(p.parent)}})
        t0 = time.time()
        err = None
        try:
            client.execute()
        except CellExecutionError as exc:
            first = (getattr(exc, "evalue", "") or "").splitlines()
            err = f"{getattr(exc, 'ename', type(exc).__name__)}: {first[0] if first else ''}"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    probe = nb.cells.pop()
    assert len(nb.cells) == n_cells
    core = "".join(_text(o.get("text", "")) for o in probe.get("outputs", []) if o.get("output_type") == "stream")
    return compared_cells(nb, sanitizers()), time.time() - t0, err, core.strip() or "not run", nb


def _diff(a: list[str], b: list[str], la: str, lb: str, limit: int = 12) -> str:
    d = list(difflib.unified_diff("\n".join(a).splitlines(), "\n".join(b).splitlines(), la, lb, lineterm="", n=0))
    more = f"\n      ... {len(d) - limit} more diff lines" if len(d) > limit else ""
    return "\n".join("      " + x for x in d[:limit]) + more


def cell_label(nb, i: int) -> str:
    src = nb.cells[i].source.strip().splitlines()
    return f"cell {i} (id {nb.cells[i].get('id', '?')}): {src[0][:70] if src else '(empty)'}"


def check_notebook(path: Path, runs: int, timeout: int, log=print, settings: list[str] | None = None,
                   keep: Path | None = None) -> list[str]:
    """Problems found for one notebook (empty: deterministic and matching the committed outputs).
    settings: one 'NAME=VALUE,...' string per run (cycled); None or '' runs on the machine as it is.
    keep: a folder to write the notebook as executed in run 1 to (when that run raised nothing)."""
    committed_nb = nbformat.read(path, as_version=4)
    subs = sanitizers()
    committed = compared_cells(committed_nb, subs)
    settings = settings or [""]
    results, labels = [], []
    for k in range(runs):
        setting = settings[k % len(settings)]
        cells, secs, err, core, executed = execute_once(str(path), timeout, parse_settings(setting))
        label = f"run {k + 1} ({setting or 'as the machine is'}; OpenBLAS core {core})"
        log(f"  {path.name} {label}: {secs:.0f} s{', ERROR ' + err if err else ''}")
        if err:
            return [f"{path.name} {label}: a cell raised: {err}"]
        if keep is not None and k == 0:
            keep.mkdir(parents=True, exist_ok=True)
            nbformat.write(executed, keep / path.name)
        results.append(cells)
        labels.append(label)
    problems = []
    for k in range(1, runs):
        for i in results[0]:
            if results[0][i] != results[k].get(i):
                problems.append(f"{path.name} {cell_label(committed_nb, i)}: {labels[0]} and {labels[k]} differ\n"
                                + _diff(results[0][i], results[k].get(i, []), "run 1", f"run {k + 1}"))
    for k in range(runs):
        for i in committed:
            if committed[i] != results[k].get(i):
                problems.append(f"{path.name} {cell_label(committed_nb, i)}: {labels[k]} differs from the committed "
                                "output\n" + _diff(committed[i], results[k].get(i, []), "committed", f"run {k + 1}"))
    return problems


def _job(args):
    path, runs, timeout, settings, keep = args
    lines: list[str] = []
    problems = check_notebook(Path(path), runs, timeout, log=lines.append, settings=settings, keep=keep)
    return path, lines, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    ap.add_argument("--jobs", type=int, default=1, help="notebooks executed in parallel")
    ap.add_argument("--settings", nargs="*", default=[],
                    help="environment of each run, NAME=VALUE[,NAME=VALUE] (cycled over the runs; '' = as is)")
    ap.add_argument("--nbval-ran", action="store_true",
                    help="nbval has compared a run as this machine is with the committed outputs (make test): it "
                         "counts as one of the runs, and a setting that leaves the machine as it is is not run again")
    ap.add_argument("--keep", type=Path, help="write each notebook as executed in run 1 to this folder")
    args = ap.parse_args(argv)
    runnable = []
    for s in args.settings:
        lack = cpu_lacks(parse_settings(s))
        if lack:
            print(f"setting {s!r} skipped: this CPU has no {lack}")
        else:
            runnable.append(s)
    if args.settings and not runnable:
        print("no setting can run on this CPU: the runs use the machine as it is")
    by_nbval = []
    if args.nbval_ran and runnable and backend_as_is() != "cpu":
        print("--nbval-ran: nbval's run was not on the CPU backend here: every setting runs")
    elif args.nbval_ran and runnable:
        as_is = probe_machine({})
        runnable, args.runs, by_nbval = without_nbval_run(runnable, args.runs, as_is)
        for s in by_nbval:
            print(f"setting {s!r} skipped: it leaves this machine as it is (OpenBLAS {as_is['core']}, "
                  f"{as_is['threads']} BLAS threads, numpy's loops unchanged), the run nbval has checked")
    args.settings = runnable
    os.environ["COURSE_DEVICE"] = "cpu"
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    t0 = time.time()
    all_problems: list[str] = []
    jobs = [(str(p), args.runs, args.timeout, args.settings, args.keep) for p in paths]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            outcomes = list(ex.map(_job, jobs))
    else:
        outcomes = []
        for j in jobs:
            outcomes.append(_job(j))
            print("\n".join(outcomes[-1][1]), flush=True)
    for path, lines, problems in outcomes:
        if args.jobs > 1:
            print("\n".join(lines))
        n_cells = len(compared_cells(nbformat.read(path, as_version=4), sanitizers()))
        print(f"{Path(path).name}: {n_cells} compared cells, {args.runs} runs: "
              f"{'identical, and equal to the committed outputs' if not problems else f'{len(problems)} problem(s)'}",
              flush=True)
        all_problems += problems
    where = f", settings {' | '.join(s or 'as is' for s in args.settings)}" if args.settings else ""
    nbval = f" (and nbval's run as the machine is: {' | '.join(by_nbval)})" if by_nbval else ""
    print(f"\n{len(paths)} notebooks, {args.runs} runs each{nbval}, COURSE_DEVICE=cpu{where}, {time.time() - t0:.0f} s")
    if all_problems:
        print(f"{len(all_problems)} problem(s):")
        for p in all_problems:
            print("- " + p)
        return 1
    print("deterministic: every compared output identical in every run and equal to the committed one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
