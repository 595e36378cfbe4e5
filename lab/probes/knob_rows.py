"""The knobs sweep of a few rungs, run alone, and its rows merged into the record (results/<gpu>.json).

    python lab/probes/knob_rows.py OUT.json 29,30          # on the GPU: experiments.knobs for these rungs -> OUT.json
    python lab/probes/knob_rows.py --merge OUT.json        # anywhere: those rungs' rows replace theirs in the record

Why: `python -m helpers.record --update-experiments knobs` sweeps every rung (about 360 s on the H200). When one rung's
sweep failed (session 24: rungs 29-30 stopped at GROUP_M=2, a launcher bug fixed since), this re-runs only those
rungs, with the same code (helpers.experiments.knobs.knobs, the rungs' own seeds and sizes), and the merge replaces
exactly their rows. Every merged row says where it came from (`run`: this probe, its date, GPU and versions), and the
record's `updates` gets an entry naming the rungs. The other rungs' rows, and the sweep's cuBLAS row, stay as they were:
each rung's knob rows are read against its own row as recorded, timed in the same child process.
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)


def sweep(out: Path, rungs: tuple[int, ...]) -> int:
    import datetime

    from helpers.device import backend
    from helpers.experiments.knobs import knobs
    from helpers.timing import DEFAULT_FLUSH

    gpu = backend().gpu
    rows = [r for r in knobs(rungs=rungs, log=print) if r["rung"] in rungs]
    bad = [r for r in rows if r.get("error") or r.get("passed") is False]
    out.write_text(json.dumps({
        "command": f"python lab/probes/knob_rows.py OUT.json {','.join(map(str, rungs))}", "rungs": list(rungs),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "gpu": gpu.name,
        "flush": DEFAULT_FLUSH, "versions": {"driver_cuda": gpu.driver, "cuda_runtime": gpu.runtime, "cupy": gpu.cupy},
        "rows": rows}, indent=1))
    print(f"{len(rows)} rows, {len(bad)} failed or not correct -> {out}")
    return 1 if bad or not rows else 0


def merge(src: Path, record: Path | None = None) -> int:
    run_ = json.loads(src.read_text())
    rungs = set(run_["rungs"])
    record = record or ROOT / "results" / "nvidia-h200.json"
    meta = json.loads(record.read_text())
    if meta["gpu"]["name"] != run_["gpu"]:
        print(f"{src} ran on {run_['gpu']}, {record} is {meta['gpu']['name']}: nothing merged", file=sys.stderr)
        return 2
    if any(r.get("error") or r.get("passed") is False for r in run_["rows"]) or {r["rung"] for r in run_["rows"]} != rungs:
        print(f"{src} holds failed rows or misses a rung: nothing merged", file=sys.stderr)
        return 2
    where = f"lab/probes/knob_rows.py, {run_['date']}, {run_['gpu']}"
    kept = [r for r in meta["experiments"]["knobs"] if r["rung"] not in rungs]
    meta["experiments"]["knobs"] = sorted(kept + [dict(r, run=where) for r in run_["rows"]], key=lambda r: r["rung"])
    meta.setdefault("updates", []).append({"date": run_["date"], "experiments": ["knobs"], "rungs": sorted(rungs),
                                           "command": run_["command"], "flush": run_["flush"],
                                           "versions": run_["versions"]})
    record.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"merged {len(run_['rows'])} rows of rungs {sorted(rungs)} into {record}")
    return 0


def main(argv) -> int:
    if argv[0] == "--merge":
        return merge(Path(argv[1]))
    if not hopper_here():
        return 2
    if len(argv) < 2 or not all(x.isdigit() for x in argv[1].split(",")):
        print("give the rungs after OUT.json, e.g. 29,30", file=sys.stderr)
        return 2
    return sweep(Path(argv[0]), tuple(int(x) for x in argv[1].split(",")))


if __name__ == "__main__":
    run(main, __doc__)
