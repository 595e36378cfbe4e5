"""A device probe (issues 25 and 26): does a wait that sleeps until its barrier's phase completes speed up every
Hopper rung? lab/probes/wgmma_rate.py found rung 17 faster with MBAR_WAIT=1 (kernels/hopper_primitives.cuh:
mbarrier.try_wait with a suspend-time hint) than with the hint left to the hardware (MBAR_WAIT=0): 47.7 against
50.7 us at 128 x 8192 x 8192. Here rungs 13-18 at the shapes each is best at, and the FP8 kernels at 4096^3, are
compiled both ways (rungs 17-18 have their own macro since, SKINNY_WAIT: both are set), each checked (float64 and the CPU model, on the GPU) and timed in alternating rounds beside
cuBLAS writing the same C (cuBLASLt for FP8, default and fast accumulation), with the SM clock of every timing.
With --desc, the same for the probe switch DESC_ADD (ws_gemm): descriptors built once and advanced by adds, as
cuBLAS's kernels do (rungs 12-15 at 4096^3, 16 at 5000^3, 19-21 at M = 128; rows keyed desc_add instead of
mbar_wait). Its FP8 twin, F8_DESC_ADD, is timed by lab/probes/fp8_stages.py --desc (odd shape, 4096^3, 8192^3).

With --group, rung 14's GROUP_M (8, 4, 16) at 5000^3; with --cluster, its CLUSTER_M (2, 1, 4) there (rows keyed
group_m, cluster_m). With --order (session 25), GROUP_M 8 and 16 for the best rungs of each C type at 4096^3 and
8192^3 (15 and 26; 25 and 26), in 7 rounds: Nsight Compute found them reading 24-33% more from DRAM than cuBLAS
there (lab/logs/ncu-targets-*), and a wave spanning 16 rows of A tiles and ~8 columns of B tiles holds fewer
bytes of A and B than one of 8 x ~16 (a B tile's panel is twice an A tile's). Predicted before it ran: x1.005 at
4096^3 (the knob sweeps' GROUP_M=16 rows: x1.001 to x1.012), x1.01 at 8192^3 (fewer DRAM bytes, less power under
the cap). With --hilbert (session 31), the probe switch TILE_ORDER (lab/kernels/hopper_sm90a_research.cu: the units along a
Hilbert curve where their grid is square with a power-of-two side) for rungs 29 and 30 at 4096^3 and 8192^3, in 7
rounds; its prediction is in the kernel's comment and lab/labkit/hopper.py's HILBERT_PREDICTED, its log
lab/logs/hilbert-order-<gpu>.json (hopper.hilbert_rows). (--prefetch timed the probe switch L2_PREFETCH, the
producer asking for K-tile kt + 2, 4 or 8 in L2, on rungs 16 and 14 in session 14:
lab/logs/l2-prefetch-nvidia-h200.json. It was slower everywhere and left the kernels with its option; both are in
commit 1bcb7f2.)

    python3 lab/probes/wait_hint.py OUT.json [--desc | --group | --cluster | --order | --hilbert]   (a Hopper GPU, COURSE_DEVICE=gpu)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, knob_variant, research_source, run  # noqa: E402  (run as a script: ROOT first)
PLAN = [((4096, 4096, 4096), (13, 14, 15)), ((5000, 5000, 5000), (16,)), ((128, 8192, 8192), (17, 18))]
FP8 = ("fp8_wgmma", "fp8_promote_128")
# set -> (the rows' key, [(value, NVRTC options of the course's rungs, of the FP8 kernels)], the rungs' plan)
# (the FP8 kernels' DESC_ADD twin is timed by fp8_stages.py --desc)
SETS = {"hint": ("mbar_wait", [(h, (f"-DMBAR_WAIT={h}", f"-DSKINNY_WAIT={h}"), (f"-DMBAR_WAIT={h}",)) for h in (0, 1)],
                 PLAN),
        "desc": ("desc_add", [(0, (), ()), (1, ("-DDESC_ADD=1",), None)],
                 [((4096, 4096, 4096), (12, 13, 14, 15)), ((5000, 5000, 5000), (16,)),
                  ((128, 8192, 8192), (19, 20, 21))]),
        # --group: rung 14's tile order at 5000^3 (GROUP_M, a knob; rung 16's plan assumes 8): a wave of 132 tiles
        # spans GROUP_M rows of A and 132 / GROUP_M columns of B, which decides how often each is read from DRAM
        "group": ("group_m", [(g, (f"-DGROUP_M={g}",) if g != 8 else (), None) for g in (8, 4, 16)],
                  [((5000, 5000, 5000), (14,))]),
        # --cluster: rung 14's CLUSTER_M at 5000^3 (a knob): 4 CTAs sharing B each ask for a quarter of it, 192 TMA
        # rows of 128 bytes per K-tile instead of 256 (and 1: 384). Predicted before it ran (session 14): x1.04 for
        # 4, x0.95 for 1
        "cluster": ("cluster_m", [(c, (f"-DCLUSTER_M={c}",) if c != 2 else (), None) for c in (2, 1, 4)],
                    [((5000, 5000, 5000), (14,))]),
        # --order (session 25): GROUP_M 16 against 8 where the targets are missed at full-chip sizes
        "order": ("group_m", [(g, (f"-DGROUP_M={g}",) if g != 8 else (), None) for g in (8, 16)],
                  [((4096, 4096, 4096), (15, 26)), ((8192, 8192, 8192), (25, 26))]),
        # --hilbert (session 31): TILE_ORDER=1, the units along a Hilbert curve, for the best rungs where two targets
        # were missed twice (rung 30 at 4096^3 with FP32 C, rung 29 at 8192^3 with FP16 C; both at both sizes)
        "hilbert": ("tile_order", [(0, (), None), (1, ("-DTILE_ORDER=1",), None)],
                    [((4096, 4096, 4096), (29, 30)), ((8192, 8192, 8192), (29, 30))])}
KNOB_SETS = {"group": "GROUP_M", "cluster": "CLUSTER_M", "order": "GROUP_M"}   # knobs: built as try_kernel does
ROUNDS = 3
SET_ROUNDS = {"order": 7, "hilbert": 7}    # a set's rounds, where not ROUNDS


def hopper_rows(shape, rungs, which: str = "hint") -> list[dict]:
    """GPU, in a child: each rung of `rungs` built with each value of set `which` (MBAR_WAIT 0 and 1, or DESC_ADD) at
    `shape`, checked, then timed in alternating rounds with cuBLAS (FP16 C and FP32 C)."""
    import cupy

    from helpers.cublas import same_c
    from helpers.experiments.ladder import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher
    from helpers.numerics import reference_gemm
    from helpers.timing import gemm_flops

    M, N, K = shape
    A, B = _inputs(0, M, N, K)
    ref = reference_gemm(A, B)
    key, values, _ = SETS[which]
    timed, rows = {}, []
    knob = KNOB_SETS.get(which)
    for r in rungs:
        for h, opts, _ in values:
            entry = rung_entry(r)
            if knob:                                   # a knob of helpers.tryout: its entry (cluster, grid) too
                entry, opts, _ = knob_variant(r, {knob: h})
            run, C, _ = launcher(entry, A, B, options=opts, source=research_source(r, opts))
            C.fill(cupy.nan)
            run()
            chk = entry.check(C[:M, :N], A, B, reference=ref, backend="GPU")
            rows.append({"rung": r, key: h, "shape": list(shape), "passed": bool(chk.passed), "model": chk.model})
            timed[(f"rung {r}", h)] = run
    for c in ("float16", "float32"):
        Cc, cub = cupy.empty((M, N), dtype=c), same_c(c)
        timed[(f"cuBLAS {c} C", None)] = (lambda cub=cub, Cc=Cc: cub.run(A, B, Cc))
    return rows + _time(timed, gemm_flops(M, N, K), shape, key, SET_ROUNDS.get(which, ROUNDS))


def _time(timed, fl, shape, key: str = "mbar_wait", rounds: int = ROUNDS) -> list[dict]:
    from lab.probes.common import alternating

    out = []
    for (what, h), v in alternating(timed, fl, rounds).items():
        med = sorted(v["ms"])[len(v["ms"]) // 2]
        out.append({"what": what, key: h, "shape": list(shape), "median_ms": med, "tflops": fl / med / 1e9,
                    "round_ms": v["ms"], "sm_mhz": v["sm_mhz"]})
    return out


def fp8_rows(n: int = 4096, which: str = "hint") -> list[dict]:
    """GPU, in a child: the FP8 wgmma kernels built with each value of set `which` at n^3, checked, timed beside
    cuBLASLt."""
    import cupy

    from helpers.experiments.fp8 import _torch_fp8, check_fp8, random_inputs
    from helpers.fp8_gemm import encode_e4m3, launcher
    from helpers.timing import gemm_flops

    A, B = random_inputs(n, n, n, "normal", n)
    A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
    gA, gB = cupy.asarray(A), cupy.asarray(B)
    timed, rows = {}, []
    for fast in (False, True):
        t, err = _torch_fp8(A8, Bt8, fast)
        if t is not None:
            timed[("cuBLASLt FP8 " + ("fast" if fast else "default"), None)] = t[0]
        else:
            rows.append({"what": "cuBLASLt FP8", "error": str(err)})
    key, values, _ = SETS[which]
    for k in FP8:
        for h, _, opts in values:
            run, C = launcher(k, A8, Bt8, options=opts)
            run()
            chk = check_fp8(k, C, gA, gB, backend="GPU")
            rows.append({"kernel": k, key: h, "shape": [n] * 3, "passed": bool(chk.passed)})
            timed[(k, h)] = run
    del gA, gB
    return rows + _time(timed, gemm_flops(n, n, n), (n, n, n), key)


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.isolate import run_isolated

    which = next((w for w in SETS if f"--{w}" in argv), "hint")
    out, failed = [], False
    steps = [("lab.probes.wait_hint:hopper_rows", (list(s), list(r), which)) for s, r in SETS[which][2]]
    if which == "hint":                                   # (--desc: the FP8 kernels are fp8_stages.py's)
        steps.append(("lab.probes.wait_hint:fp8_rows", (4096, which)))
    for fn, args in steps:
        rows = run_isolated(fn, *args, timeout=300)
        if isinstance(rows, dict):
            print(fn, args, rows, file=sys.stderr)
            out.append({"step": fn, "args": args, **rows})
            failed = True
            continue
        for r in rows:
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}, file=sys.stderr, flush=True)
            failed |= r.get("passed") is False
        out += rows
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
