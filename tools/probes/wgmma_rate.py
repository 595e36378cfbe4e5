"""A device probe (issue 25): why rung 17 stops at about 0.74x cuBLAS at M = 128, N = K = 8192.

1. The Tensor Cores alone (kernels/hopper_sm90a.cu, hopper_wgmma_rate_n64/n128/n256): clocks per K-tile (four
   m64nNk16 k-steps) in one SM, by the width N and by how many warpgroups issue at once, each with one group left in
   flight as the rungs' consumers keep it (and drained, for comparison). One block per SM, zeros in shared memory.
2. Rung 17's pipeline taken apart (PIPE_PROBE, wrong results by design; a sum of 1 no MMA, 2 no loads, 4 no waits
   for full stages, 8 no ring): the loads and barriers without the MMAs, the MMAs and barriers without the loads,
   without the consumers' waits, without any ring; and other changes to the ring (RELEASE_PER_WG, MMA_DEPTH,
   FULL_PEEK, PRODUCER_WARP), checked when they compute. Those switches are in kernels/ of commit 8ec4c42 only
   (this script refuses a set whose switches the files no longer read); MBAR_WAIT (kernels/hopper_primitives.cuh)
   remains; beside the rung itself and cuBLAS (FP16 C), timed in alternating rounds at 128 x 8192 x 8192 and 4096^3
   with the course's harness (read flush, clocks).

    python3 tools/probes/wgmma_rate.py OUT.json [--pipes-only] [--set apart|depth|wait|hold]       (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
ITERS = 4096
RATES = [(n, wg, depth) for n in (64, 128, 256) for wg in (1, 2, 3) for depth in (1,)] + \
        [(64, 2, 0), (128, 1, 0), (128, 2, 0)]
SHAPES = [(128, 8192, 8192), (4096, 4096, 4096)]
PIPES = {   # --set NAME: the variants timed (apart: session 10's second call; depth: its third; wait: its fourth; hold: its sixth)
    "apart": [{}, {"PIPE_PROBE": 1}, {"PIPE_PROBE": 2}, {"PIPE_PROBE": 6}, {"PIPE_PROBE": 10},
              {"RELEASE_PER_WG": 1}, {"RELEASE_PER_WG": 1, "PIPE_PROBE": 2}, {"SKINNY_CLUSTER": 1, "PIPE_PROBE": 2}],
    "depth": [{}, {"MMA_DEPTH": 2}, {"FULL_PEEK": 1}, {"MMA_DEPTH": 2, "FULL_PEEK": 1},
              {"MMA_DEPTH": 2, "FULL_PEEK": 1, "RELEASE_PER_WG": 1}, {"PIPE_PROBE": 2},
              {"MMA_DEPTH": 2, "PIPE_PROBE": 2}, {"FULL_PEEK": 1, "PIPE_PROBE": 2}, {"PIPE_PROBE": 10}, {"PIPE_PROBE": 11}],
    "wait": [{}, {"MBAR_WAIT": 1}, {"MBAR_WAIT": 2}, {"PIPE_PROBE": 2}, {"MBAR_WAIT": 1, "PIPE_PROBE": 2},
             {"MBAR_WAIT": 2, "PIPE_PROBE": 2}, {"MBAR_WAIT": 2, "MMA_DEPTH": 2}, {"PRODUCER_WARP": 1},
             {"PRODUCER_WARP": 1, "PIPE_PROBE": 2}, {"PRODUCER_WARP": 1, "MBAR_WAIT": 1}],
    "hold": [{"MBAR_WAIT": 1}, {"MBAR_WAIT": 1, "MMA_DEPTH": 0}, {"MBAR_WAIT": 1, "MMA_DEPTH": 0, "RELEASE_PER_WG": 1},
             {"MBAR_WAIT": 1, "MMA_DEPTH": 0, "PRODUCER_WARP": 1}, {"MBAR_WAIT": 1, "SKINNY_STAGES": 6},
             {"MBAR_WAIT": 1, "SKINNY_STAGES": 7}, {"MBAR_WAIT": 1, "MMA_DEPTH": 0, "SKINNY_STAGES": 7},
             {"MBAR_WAIT": 1, "PIPE_PROBE": 1}, {"MBAR_WAIT": 1, "PIPE_PROBE": 1, "SKINNY_STAGES": 6}],
}


def rate_rows() -> list[dict]:
    """GPU, in a child: clocks per K-tile for each (N, warpgroups, depth) in RATES."""
    import cupy

    from helpers.compile import get_arch_kernel
    from helpers.device import require_gpu

    gpu = require_gpu("wgmma rate")
    out = []
    for n, wg, depth in RATES:
        kern = get_arch_kernel("hopper_sm90a.cu", f"hopper_wgmma_rate_n{n}", gpu.cc, check_empty=False)
        clocks = cupy.zeros(gpu.sms * wg, dtype=cupy.int64)
        args = (clocks, cupy.int32(ITERS), cupy.int32(depth))
        smem = 8192 + 4 * 8192 + 1024
        for _ in range(2):                                   # warm-up, then the timed launch
            kern((gpu.sms,), (128 * wg,), args, shared_mem=smem)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        kern((gpu.sms,), (128 * wg,), args, shared_mem=smem)
        end.record()
        end.synchronize()
        ms = cupy.cuda.get_elapsed_time(start, end)
        c = sorted(int(x) for x in clocks.get())
        per_ktile = c[len(c) // 2] / ITERS
        flop_ktile = wg * 2 * 64 * n * 64                    # FLOP of one K-tile, all warpgroups of the SM
        out.append({"n": n, "warpgroups": wg, "depth": depth, "clk_per_ktile": per_ktile,
                    "clk_per_ktile_min_max": [c[0] / ITERS, c[-1] / ITERS],
                    "flop_per_clk_sm": flop_ktile / per_ktile, "share_of_4096": flop_ktile / per_ktile / 4096,
                    "ms": ms, "tflops_chip": gpu.sms * ITERS * flop_ktile / ms / 1e9})
    return out


def pipe_rows(which: str = "apart", rounds: int = 3) -> list[dict]:
    """GPU, in a child: rung 17 with PIPE_PROBE 0 / 1 / 2 and cuBLAS FP16 C at SHAPES, alternating rounds."""
    import dataclasses

    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry, skinny_smem
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops
    from tools.probes.common import alternating

    src = "".join((ROOT / "kernels" / f).read_text() for f in ("hopper_sm90a.cu", "hopper_primitives.cuh"))
    gone = sorted({k for defs in PIPES[which] for k in defs if f"#ifndef {k}\n" not in src})
    if gone:   # a macro the file no longer reads would compile the rung unchanged: refuse, do not time it
        raise SystemExit(f"set {which!r} uses {', '.join(gone)}, which kernels/ no longer has: those probe switches "
                         f"exist only in commit 8ec4c42 (they kept the rungs' code hard to read); check that commit "
                         f"out to run this set again")
    out = []
    for M, N, K in SHAPES[:1] if which == "hold" else SHAPES:      # (hold: the skinny shape only)
        A, B = _inputs(0, M, N, K)
        runs = []
        ref = reference_gemm(A, B)
        for defs in PIPES[which]:
            entry = rung_entry(17)
            if defs.get("SKINNY_CLUSTER") == 1:
                entry = dataclasses.replace(entry, cluster=None)
            if "SKINNY_STAGES" in defs:
                entry = dataclasses.replace(entry, dyn_smem=skinny_smem(defs["SKINNY_STAGES"]))
            # MBAR_WAIT sets every kernel's default wait; rung 17 has its own macro since (its WAIT_HINT knob)
            more = {"SKINNY_WAIT": defs["MBAR_WAIT"]} if "MBAR_WAIT" in defs else {}
            run, C, _ = launcher(entry, A, B, options=tuple(f"-D{k}={v}" for k, v in {**defs, **more}.items()))
            C.fill(cupy.nan)
            run()
            passed = None
            if not defs.get("PIPE_PROBE"):
                passed = bool(rung_entry(17).check(C[:M, :N], A, B, reference=ref, backend="GPU").passed)
            runs.append(("rung 17 " + (" ".join(f"{k}={v}" for k, v in defs.items()) or "as recorded"), run, passed))
        Cc, cub = cupy.empty((M, N), dtype=cupy.float16), same_c("float16")
        runs.append(("cuBLAS FP16 C", lambda: cub.run(A, B, Cc), None))
        times = alternating({what: run for what, run, _ in runs}, gemm_flops(M, N, K), rounds)
        for what, _, passed in runs:
            v = times[what]
            ms = sorted(v["ms"])[len(v["ms"]) // 2]
            out.append({"shape": [M, N, K], "what": what, "passed": passed, "median_ms": ms, "us": ms * 1e3,
                        "tflops": gemm_flops(M, N, K) / ms / 1e9, "round_ms": v["ms"], "sm_mhz": v["sm_mhz"]})
    return out


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.isolate import run_isolated

    out = {"iters": ITERS}
    failed = False
    which = argv[argv.index("--set") + 1] if "--set" in argv else "apart"
    out["set"] = which
    steps = [("rates", "tools.probes.wgmma_rate:rate_rows", 200, ()),
             ("pipe", "tools.probes.wgmma_rate:pipe_rows", 400, (which,))]
    for name, fn, timeout, args in steps[1:] if "--pipes-only" in argv else steps:
        rows = run_isolated(fn, *args, timeout=timeout)
        out[name] = rows
        if isinstance(rows, dict):
            print(name, rows, file=sys.stderr)
            failed = True
            continue
        for r in rows:
            print(name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, file=sys.stderr)
            failed |= r.get("passed") is False
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
