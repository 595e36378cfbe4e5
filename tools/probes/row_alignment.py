"""A device probe (issue 25): does the row stride of A and B cost rung 14 (and 16) speed at 5000^3? At 5000 FP16
columns a row is 10000 bytes, 16 bytes past a 32-byte sector boundary, so each 128-byte row of a TMA box spans 5
sectors instead of 4. The same product is run with A and B stored in wider buffers (leading dimension 5008: rows
of 10016 bytes, sector-aligned; 5056: 10112 bytes, 128-byte aligned), the kernel reading the first 5000 columns
through the tensor map (helpers.hopper.tensor_map_2d's cols). Same numbers, same kernel, same launch: only the
addresses of the rows change. Every C is checked (float64 and the model on the GPU), then timed (cold L2).

    python3 tools/probes/row_alignment.py OUT.json          (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
N = 5000
LDS = (5000, 5008, 5056)
RUNGS = (14, 16)


def main(argv) -> int:
    sys.path.insert(0, str(ROOT))
    from helpers.device import backend

    if not backend().is_gpu:
        print(f"no GPU here: {backend().reason}; this probe needs a Hopper GPU (COURSE_DEVICE=gpu)", file=sys.stderr)
        return 2
    import cupy

    import helpers.hopper as HH
    from helpers.kernels import ALL_RUNGS
    from helpers.launch import launcher
    from helpers.timing import benchmark

    rng = cupy.random.default_rng(9)
    A = rng.standard_normal((N, N), dtype=cupy.float32).astype(cupy.float16)
    B = rng.standard_normal((N, N), dtype=cupy.float32).astype(cupy.float16)
    plain = HH.tensor_map_2d
    rows, bad = [], 0
    for ld in LDS:
        wide = {}
        for name, X in (("A", A), ("B", B)):
            W = cupy.zeros((N, ld), dtype=cupy.float16)
            W[:, :N] = X
            wide[id(X)] = W

        hits = []

        def mapped(X, box_rows, box_cols, cols=None):
            if id(X) in wide:                         # A or B: the same values, rows ld elements apart
                hits.append(id(X))
                return plain(wide[id(X)], box_rows, box_cols, cols=N)
            return plain(X, box_rows, box_cols, cols=cols)

        HH.tensor_map_2d = mapped
        for k in RUNGS:
            r = ALL_RUNGS[k]
            hits.clear()
            run, C, _ = launcher(r, A, B)
            if len(set(hits)) != 2:
                print(f"rung {k}: the launcher did not map A and B themselves (copies?): probe invalid", file=sys.stderr)
                return 1
            C.fill(cupy.nan)
            run()
            chk = r.check(C[:N, :N], A, B, backend="GPU")
            t = benchmark(run, flops=2.0 * N ** 3)
            row = {"rung": k, "ld": ld, "row_bytes": 2 * ld, "row_mod_32": (2 * ld) % 32, "row_mod_128": (2 * ld) % 128,
                   "passed": bool(chk.passed), "model": chk.model, "median_ms": t.median_ms, "p10_ms": t.p10_ms,
                   "p90_ms": t.p90_ms, "tflops": t.tflops, "clocks": t.clocks}
            bad += not chk.passed
            rows.append(row)
            print({x: row[x] for x in ("rung", "ld", "row_mod_32", "passed", "model", "median_ms", "tflops")},
                  (t.clocks or {}).get("sm_mhz"), file=sys.stderr, flush=True)
        HH.tensor_map_2d = plain
    Path(argv[0]).write_text(json.dumps({"n": N, "rows": rows}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
