"""A device probe (issue 25): rung 16 (hopper_tail_split: split-K for the last, partial wave only) checked at odd
sizes and at shapes where its plan splits, timed beside cuBLAS (both C types) and rung 14 in one run, and its C
compared bit for bit over three launches (the parts are added in a fixed order, so C must not change).

    python3 lab/probes/rung16.py OUT.json          (a Hopper GPU, COURSE_DEVICE=gpu)

Each rung runs in its own child process (helpers.experiments.hopper.rung_rows), as the `hopper` experiment does."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
# 5000^3: 6 whole waves + 4 units in 9 parts; 4200^3: 4 waves + 25 units in 2 parts; M = 128: no whole wave,
# 32 units in 2 parts; 4096^3: no split (rung 14's units)
SHAPES = [[5000] * 3, [4200] * 3, [128, 8192, 8192], [4096] * 3]
ODD = [[1000, 1064, 1000], [257, 520, 136], [40, 24, 56], [264, 17152, 1000]]   # the last: 2 waves + 2 units split
REPEAT = ((5000, 5000, 5000), (264, 17152, 1000))


def repeat_bits(M, N, K, launches=3) -> dict:
    """Rung 16 launched `launches` times on the same inputs (NaN-poisoned C each time): identical bits?"""
    import cupy

    from helpers.launch import launcher

    rng = cupy.random.default_rng(7)
    A = rng.standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
    B = rng.standard_normal((K, N), dtype=cupy.float32).astype(cupy.float16)
    run, C, _ = launcher(16, A, B)
    outs = []
    for _ in range(launches):
        C.fill(cupy.nan)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        outs.append(C[:M, :N].view(cupy.uint16).copy())
    flags = run.keep[-1]
    return {"shape": [M, N, K], "identical": all(bool((o == outs[0]).all()) for o in outs[1:]),
            "nan": int(cupy.isnan(C[:M, :N]).sum()), "counters_reset": int(flags.sum()) == 0}


def main(argv) -> int:
    if not hopper_here():
        return 2
    from lab.labkit.hopper import probe_rung

    out, failed = {"rows": {}}, False
    for k, shapes in ((16, SHAPES), (14, SHAPES[:2])):
        out["rows"][k], bad = probe_rung(k, shapes, ODD if k == 16 else [], timeout=400)
        failed |= bad
    out["repeat"] = [repeat_bits(*s) for s in REPEAT]
    for r in out["repeat"]:
        failed |= not (r["identical"] and r["counters_reset"] and r["nan"] == 0)
        print("repeat", r, file=sys.stderr, flush=True)
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
