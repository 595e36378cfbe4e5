"""A device probe (issue 25): lesson 6's rungs timed next to cuBLAS writing FP16 C and FP32 C at the shapes of
the issue, each rung in its own child process (helpers.experiments.hopper.rung_rows), checked first.

    python3 lab/probes/rungs_side_by_side.py OUT.json [RUNG ...] [--shapes S,S,...]      (a Hopper GPU)

Default rungs 13 14 15, default shapes the issue's; a shape S is n (n^3) or MxNxK.

Its first run (2026-12-01) reproduced the issue's table before rungs 14-15 were recorded by the `hopper`
experiment; the record holds the experiment's rows, this prints and writes its own."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPES = [[4096] * 3, [8192] * 3, [128, 8192, 8192], [8192, 8192, 1024], [5000] * 3, [2048] * 3]


def main(argv) -> int:
    if not hopper_here():
        return 2
    from lab.labkit.hopper import probe_rung

    args, shapes = list(argv[1:]), SHAPES
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = [[int(v) for v in s.split("x")] * (3 if "x" not in s else 1) for s in args[i + 1].split(",")]
        del args[i:i + 2]
    out, failed = {}, False
    for k in [int(x) for x in args] or [13, 14, 15]:
        out[k], bad = probe_rung(k, shapes, [[1000, 1064, 1000]])
        failed |= bad
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
