"""A device probe: where the hopper record's time goes. The record (`python -m helpers.record --update-experiments
hopper`) took 474-549 s with rungs 7-26 and ran past 590 s once rungs 29-30 joined it (session 23). This runs one
rung's part of it in this process, as the record's child does (helpers.experiments.hopper.rung_rows at the record's
shapes), with each progress line stamped with the seconds since the start, then under cProfile: the functions that
took the most time, cumulative. Nothing is written to the record.

    python3 lab/probes/record_cost.py OUT.txt [RUNG ...]    (a Hopper GPU, COURSE_DEVICE=gpu; default rung 14)"""
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)


def main(argv) -> int:
    rungs = [int(x) for x in argv[1:]] or [14]
    if not hopper_here():
        return 2
    from helpers.experiments import hopper as H

    t0 = time.time()
    lines = []

    def stamped(msg: str) -> None:
        lines.append(f"{time.time() - t0:7.1f} s  {msg}")
        print(lines[-1], file=sys.stderr, flush=True)

    H._progress = stamped
    out = io.StringIO()
    for k in rungs:
        prof = cProfile.Profile()
        t = time.time()
        prof.enable()
        rows = H.rung_rows(k, H.shapes_for(H.rung_entry(k)), H.ODD_SIZES)
        prof.disable()
        stamped(f"rung {k}: {len(rows)} rows in {time.time() - t:.1f} s, "
                f"{sum(1 for r in rows if r.get('passed'))} passed")
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
    Path(argv[0]).write_text("\n".join(lines) + "\n\n" + out.getvalue())
    print(out.getvalue()[:6000], file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main, __doc__)
