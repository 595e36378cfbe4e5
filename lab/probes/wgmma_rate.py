"""A device probe (issue 25): do the Tensor Cores keep up with rung 17's narrow wgmma?

The kernels hopper_wgmma_rate_n64/n128/n256 (lab/kernels/hopper_sm90a_research.cu) run K-tiles of four m64nNk16 k-steps from
shared memory (zeros), one block per SM, and count clocks: per K-tile in one SM, by the width N and by how many
warpgroups issue at once, each with one group left in flight as the rungs' consumers keep it (and drained, for
comparison). Stored as experiments.pipeline_apart.rates.

The same experiment holds rung 17 taken apart (pipes: the loads without the MMAs, the MMAs without the loads, other
rings), measured by this script's second part with probe switches in kernels/hopper_sm90a.cu that exist in commit
8ec4c42 only: `git show 8ec4c42:lab/probes/wgmma_rate.py` is that script (--pipes-only --set apart|depth|wait|hold).

    python3 lab/probes/wgmma_rate.py OUT.json               (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)

ITERS = 4096
RATES = [(n, wg, 1) for n in (64, 128, 256) for wg in (1, 2, 3)] + [(64, 2, 0), (128, 1, 0), (128, 2, 0)]
RATE_SMEM = 8192 + 4 * 8192 + 1024        # 64 x 64 of A, up to 4 boxes of B (8 KB each), room to align to 1024


def rate_clocks(n: int, blocks: int, warpgroups: int, iters: int, depth: int):
    """GPU: one launch of hopper_wgmma_rate_n{n} (after a warm-up launch): the clocks each warpgroup's loop took (a
    numpy array, blocks x warpgroups) and the launch's time in ms (CUDA events)."""
    import cupy

    from helpers.compile import get_arch_kernel
    from helpers.device import require_gpu
    from lab.labkit.rungs import RESEARCH_FILE

    gpu = require_gpu("wgmma rate")
    kern = get_arch_kernel(RESEARCH_FILE, f"hopper_wgmma_rate_n{n}", gpu.cc, check_empty=False)
    clocks = cupy.zeros(blocks * warpgroups, dtype=cupy.int64)
    args = (clocks, cupy.int32(iters), cupy.int32(depth))
    kern((blocks,), (128 * warpgroups,), args, shared_mem=RATE_SMEM)        # warm-up
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    kern((blocks,), (128 * warpgroups,), args, shared_mem=RATE_SMEM)
    end.record()
    end.synchronize()
    return clocks.get(), cupy.cuda.get_elapsed_time(start, end)


def rate_rows() -> list[dict]:
    """GPU, in a child: clocks per K-tile (the median SM) for each (N, warpgroups, depth) in RATES."""
    from helpers.device import require_gpu

    sms = require_gpu("wgmma rate").sms
    out = []
    for n, wg, depth in RATES:
        clocks, ms = rate_clocks(n, sms, wg, ITERS, depth)
        c = sorted(int(x) for x in clocks)
        per_ktile = c[len(c) // 2] / ITERS
        flop_ktile = wg * 2 * 64 * n * 64                    # FLOP of one K-tile, all warpgroups of the SM
        out.append({"n": n, "warpgroups": wg, "depth": depth, "clk_per_ktile": per_ktile,
                    "clk_per_ktile_min_max": [c[0] / ITERS, c[-1] / ITERS],
                    "flop_per_clk_sm": flop_ktile / per_ktile, "share_of_4096": flop_ktile / per_ktile / 4096,
                    "ms": ms, "tflops_chip": sms * ITERS * flop_ktile / ms / 1e9})
    return out


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.isolate import run_isolated

    rows = run_isolated("lab.probes.wgmma_rate:rate_rows", timeout=200)
    if isinstance(rows, dict):
        print("rates", rows, file=sys.stderr)
        return 1
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, file=sys.stderr)
    Path(argv[0]).write_text(json.dumps({"iters": ITERS, "rates": rows}, indent=1))
    return 0


if __name__ == "__main__":
    run(main, __doc__)
