"""A device probe (issue 26): does a deeper ring close the FP8 kernels' gap to cuBLASLt? cuBLASLt's kernel for
default accumulation at 4096^3 (Nsight Compute, experiments.fp8.cublaslt_kernels) takes the course's 128 x 128
tile with K-tiles of 128 in 6 stages, where the course's kernels have 4 (F8_STAGES in the kernels' files).
fp8_wgmma_n128 and fp8_promote_128 (128 x 128 tiles: 32 KB a stage) are compiled with -DF8_STAGES=4 to 7, each
checked (helpers.experiments.fp8.check_fp8: the bounds and the CPU model, every element, on the GPU) at an odd
shape and at every timed size, then timed in alternating rounds beside cuBLASLt with default and with fast
accumulation, with the SM clock of every timing. fp8_wgmma (128 x 256, 48 KB a stage: 4 is the most that fits)
is timed beside them as recorded. With --desc: fp8_promote_128 and fp8_wgmma (4 stages) as recorded and with the
probe switch -DF8_DESC_ADD=1 (descriptors built once and advanced by adds, as cuBLASLt's kernel does), the same
checks (the sums must stay the model's, bit for bit) and timings.

With --two: fp8_promote_2acc (pending, issue 26) at 4 and 6 stages (and 6 with F8_DESC_ADD) beside fp8_promote_128,
fp8_wgmma_n128 at 6 stages and fp8_wgmma, checked also at shapes with 9 and 1 K-tiles (its K loop takes pairs).

With --store (session 17): fp8_wgmma_store (issue 26: C through shared memory and TMA stores, the next tile's wgmmas
starting while a tile's stores run) beside fp8_wgmma. Its first run, results/logs/fp8-store-probe-nvidia-h200.json, also
ran fp8_promote_2acc_store, the same epilogue in fp8_promote_2acc_lean, beside that kernel: slower, it left the course
(code in commit 30b1673), and its variants with it. Checked at the odd shapes of --two as well (1, 8 and 9 K-tiles;
1064 and 264 columns end inside a box of C) and at 2000 x 2600 x 300 (more tiles than SMs: buffers of C reused by a
CTA's next tile).
With --spread: fp8_wgmma_store as recorded and with the probe switch -DF8_STORE_SPREAD=1 (its stores to shared
memory without bank conflicts, in lesson 7's half-warp model), beside fp8_wgmma, checked at the same shapes as
--store (run in session 17: results/logs/fp8-spread-probe-nvidia-h200.json).

(--cluster ran fp8_promote_2acc_cluster, the lean kernel in 2-CTA clusters sharing B, beside fp8_promote_2acc_lean and
fp8_wgmma in session 14: results/logs/fp8-cluster-probe-nvidia-h200.json. It was slower and left the course; the
option left with it, and both are in commit 6596698.)

With --ctas (session 18): fp8_wgmma_store with a persistent grid of 128 CTAs (launcher's ctas) beside the 132 it has.
With --ctas-lean (session 19): the same, and the promoting kernel fp8_promote_2acc_lean on 128 CTAs beside 132.
With --lean-stages (session 19): fp8_promote_2acc_lean on 128 CTAs with rings of 5, 6 and 7 stages.
With --flow (session 19): fp8_promote_2acc_lean on 128 CTAs, as recorded and built with F8_FLOW=1.
With --flow2 (session 20): the same with F8_FLOW=2 (the pairs as built; only a tile's end issues the next tile's
K-tile 0 before its last add and store), checked also at 2000 x 2600 x 512 and 1300 x 3900 x 256 (even K-tile counts,
more tiles than CTAs: every CTA issues a next tile's K-tile 0 early) besides the odd counts of --two and --store.
F8_FLOW=2 lost (results/logs/fp8-flow2-probe-nvidia-h200.json) and its code left the kernel file: --flow2 runs in a
checkout of commit 3c26c11; elsewhere the kernel's #error says so.
With --uniform (session 20): fp8_wgmma_store and fp8_promote_2acc_lean on 128 CTAs, as recorded and built with
F8_UNIFORM=1 (the warpgroup index broadcast from lane 0, so that ptxas keeps the wgmma descriptors in uniform
registers), checked at the odd shapes of --two and --store. Its run (tree e3397d3) made both kernels pass UNIFORM =
true (a template argument), so today its two builds of each kernel are the same code.
With --period (session 26): fp8_promote_256 and fp8_promote_512 built with the switch F8_PERIOD
(kernels/fp8_promote_sm90a.cu) 0 (the first record's build, into which ptxas injects a warpgroup.wait) and 2 (the default), beside fp8_promote_128
and fp8_wgmma_n128, on one CTA per SM as the record's rows, checked at the odd shapes of --two and --store and at
264 x 136 x 840 (7 K-tiles: a last period of 3 stages at 512, of 1 at 256). Its first run (tree 4d6d0c7, no option
then meaning 0) timed F8_PERIOD=1 (a period at a time: no injected wait), predicted x1.08 over 0 at 4096^3 for both and
x1.05 at 8192^3 (labkit.fp8.PERIOD_PREDICTED): slower, x0.970 and x0.993 at 4096^3. Its second (tree
bace95d, results/logs/fp8-period2-probe-nvidia-h200.json) added F8_PERIOD=2 (each stage lets its stage go at once; the
adds only at a period's end), predicted before its run (PERIOD2_PREDICTED): x1.035 (256) and x1.025 (512) at 4096^3,
x1.01 at 8192^3; measured x1.046 and x1.063 at 4096^3, x1.002 and x1.057 at 8192^3, bit-identical. 2 became the
default; 1 left the kernel file (commit 17ad692).
With --wait (session 27): fp8_promote_2acc_lean on 128 CTAs built with MBAR_WAIT 0 (as recorded) and 1 (mbarrier
waits with a suspend-time hint), checked at the odd shapes of --two and --store; predicted before its first run
(WAIT_PREDICTED, 1 over 0): x1.00 at 4096^3, x1.01 at 8192^3 at the power limit. Its run (tree 3abc2bd,
results/logs/fp8-wait-probe-nvidia-h200.json): x0.989 and x0.963, bit-identical; MBAR_WAIT stays 0.
With --wide (session 27): fp8_promote_2acc_144 (the lean kernel with 128 x 144 tiles, cuBLASLt's width at 8192^3,
on one CTA per SM) beside fp8_promote_2acc_lean as recorded, checked at the odd shapes of --two and --store;
predicted before its first run (FP8_WIDE_PREDICTED): x1.02 at 8192^3, x0.89 at 4096^3 (waves). Its run (tree
3a670f9, results/logs/fp8-wide-probe-nvidia-h200.json): x1.012 and x0.911, bit-identical; nine rounds beside cuBLASLt
after it, x0.967 at 8192^3: the kernel left the course, and --wide runs in a checkout of commit 3a670f9.
At 4096^3 its 512 tiles take 4 rounds of tiles either way (132 CTAs: 116 of them do 4, 16 do 3).
With --pair (session 29): fp8_promote_2acc_lean on 128 CTAs built with F8_PAIR 0 (as recorded) and 1 (two K-tiles per
shared-memory stage: one mbarrier wait, release and ring step per pair), checked at the odd shapes of --two and --store
(and PERIOD_ODD's 7 K-tiles: the last stage holds one); predicted before its first run (PAIR_PREDICTED): x1.00 at
4096^3, x1.01 at 8192^3, and x0.935 the warp instructions at 8192^3 (tools/ncu_counters.py target
fp8_promote_2acc_lean_pair). Its run (tree 4831ad4, results/logs/fp8-pair-probe-nvidia-h200.json): bit-identical,
x0.999 at 4096^3, x0.970 at 8192^3 (rounds 0.94-1.04), x0.933 the instructions; the switch left the kernel file, and
--pair runs in a checkout of commit 2a049e0.
With --extra-l2 (session 29, pending): fp8_promote_2acc_lean on 128 CTAs as recorded beside the energy probe
F8_EXTRA_L2=1 (each K-tile's box of A loaded twice into the same place), checked at the odd shapes of --pair; its
prediction (EXTRA_L2_PREDICTED) is about energy, measured by fp8_energy.py.

--sizes A[,B]: the timed sizes (default 4096,8192). --rounds N: N alternating rounds instead of 3 (session 18:
--store --sizes 4096 --rounds 9, to tell fp8_wgmma_store from cuBLASLt's fast accumulation at 4096^3, where three rounds
had them within 1%).

    python3 lab/probes/fp8_stages.py OUT.json [--desc | --two | --store | --spread | --ctas | --ctas-lean | --lean-stages | --flow | --flow2 |
    --uniform | --period | --wait | --wide | --pair | --extra-l2] [--sizes A,B] [--rounds N]"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import FP8_RESEARCH_FILE, fp8_research_source, hopper_here, int_option, run  # noqa: E402  (run as a script: ROOT first)
VARIANTS = [("fp8_wgmma", 4, ())] + [(k, s, ()) for k in ("fp8_wgmma_n128", "fp8_promote_128") for s in (4, 5, 6, 7)]
DESC = [(k, 4, o) for k in ("fp8_promote_128", "fp8_wgmma") for o in ((), ("-DF8_DESC_ADD=1",))]
# --two: fp8_promote_2acc (two partial sums per warpgroup) beside fp8_promote_128 and the tiles without promotion
TWO = [("fp8_promote_128", 4, ()), ("fp8_promote_2acc", 4, ()), ("fp8_promote_2acc", 6, ()),
       ("fp8_promote_2acc", 6, ("-DF8_DESC_ADD=1",)), ("fp8_wgmma_n128", 6, ()), ("fp8_wgmma", 4, ())]
TWO_ODD = ((520, 264, 1100), (40, 24, 100))       # 9 K-tiles and 1: odd counts (ODD has 8)
# --store: the TMA-store epilogue beside the same kernels storing from registers (each at its registry's stages)
STORE = [("fp8_wgmma", 4, ()), ("fp8_wgmma_store", 4, ())]
SPREAD = STORE + [("fp8_wgmma_store", 4, ("-DF8_STORE_SPREAD=1",))]
# --ctas: fp8_wgmma_store's persistent grid of 128 CTAs instead of 132 (a pseudo-option "ctas=128", not passed to NVRTC)
CTAS = STORE + [("fp8_wgmma_store", 4, ("ctas=128",))]
# --ctas-lean (session 19): the same, and the promoting kernel (fp8_promote_2acc_lean, 6 stages) on 128 CTAs beside 132
CTAS_LEAN = CTAS + [("fp8_promote_2acc_lean", 6, ()), ("fp8_promote_2acc_lean", 6, ("ctas=128",))]
# --lean-stages (session 19): fp8_promote_2acc_lean on the registry's 128 CTAs with 5, 6 (as recorded) and 7 stages.
# Predicted (session 20, before its first run): 5 and 7 within 0.5% of 6 at both sizes (x1.00): on one CTA per SM the
# promoting kernels gained nothing from depth past 4 (experiments.fp8.stages), and 6 already covers the store.
LEAN_STAGES = [("fp8_promote_2acc_lean", st, ("ctas=128",)) for st in (5, 6, 7)]
# --flow (session 19): fp8_promote_2acc_lean on 128 CTAs as recorded, and built with the probe switch F8_FLOW=1 (one
# stream of K-tiles across a CTA's tiles: the next tile's first K-tile runs during the store)
FLOW = [("fp8_promote_2acc_lean", 6, ("ctas=128",)), ("fp8_promote_2acc_lean", 6, ("ctas=128", "-DF8_FLOW=1"))]
# --flow2 (session 20): F8_FLOW=2 instead, and two more shapes where every CTA has a next tile and an even K-tile count
FLOW2 = [FLOW[0], ("fp8_promote_2acc_lean", 6, ("ctas=128", "-DF8_FLOW=2"))]
FLOW2_ODD = ((2000, 2600, 512), (1300, 3900, 256))
# --uniform (session 20): both kernels of the record on 128 CTAs, as recorded and with the probe switch F8_UNIFORM=1.
# Predicted (session 20, before its first run): x1.01 at 4096^3 for both (fewer instructions before each wgmma: the
# lean kernel's SASS loses 15 of its 21 R2UR, the store kernel's 19 of 46), x1.00 at 8192^3 (the power limit).
UNIFORM = [(k, st, ("ctas=128",) + u) for k, st in (("fp8_wgmma_store", 4), ("fp8_promote_2acc_lean", 6))
           for u in ((), ("-DF8_UNIFORM=1",))]
# --period (session 26): fp8_promote_256 and _512 with F8_PERIOD 0 (ptxas serialises its K loop: message C7517) and 2,
# beside fp8_promote_128 and the same tile without promotion; one CTA per SM, as recorded (session 26's two runs passed
# no option for 0, then the default, and timed 1, which has left the kernel file)
PERIOD = ([("fp8_promote_128", 4, ())] + [(k, 4, (f"-DF8_PERIOD={v}",)) for k in ("fp8_promote_256", "fp8_promote_512")
                                          for v in (0, 2)] + [("fp8_wgmma_n128", 4, ())])
# --wait (session 27): fp8_promote_2acc_lean on 128 CTAs (6 stages, as recorded) with MBAR_WAIT 0 (every mbarrier
# wait a try_wait without a time hint, as recorded) and 1 (try_wait with a suspend-time hint: a waiting thread sleeps
# until the phase completes; kernels/hopper_primitives.cuh). The energy probe found ours doing cuBLASLt's work per
# cycle at 8192^3 at a lower clock (more energy per cycle); a producer thread and consumers that sleep instead of
# polling might draw less. Predicted before its first run (WAIT_PREDICTED, 1 over 0): x1.00 at 4096^3 (below the
# power limit in cold-L2 timing), x1.01 at 8192^3 (at the limit).
WAIT = [("fp8_promote_2acc_lean", 6, ("ctas=128", f"-DMBAR_WAIT={h}")) for h in (0, 1)]
# --wide (session 27): fp8_promote_2acc_144 (128 x 144 tiles, one CTA per SM) beside the lean kernel as recorded
# (128 x 128 on 128 CTAs); predicted before its first run: labkit.fp8.FP8_WIDE_PREDICTED. The kernel lost
# and left the course: --wide runs in a checkout of commit 3a670f9.
WIDE = [("fp8_promote_2acc_lean", 6, ("ctas=128",)), ("fp8_promote_2acc_144", 6, ())]
# --pair (session 29): fp8_promote_2acc_lean on 128 CTAs (6 K-tiles of ring, as recorded) with F8_PAIR 0 (a stage
# per K-tile, as recorded) and 1 (two K-tiles per stage); predicted before its first run:
# labkit.fp8.PAIR_PREDICTED
PAIR = [("fp8_promote_2acc_lean", 6, ("ctas=128", f"-DF8_PAIR={p}")) for p in (0, 1)]
# --extra-l2 (session 29): fp8_promote_2acc_lean on 128 CTAs as recorded beside the energy probe F8_EXTRA_L2=1 (A's box
# loaded twice per K-tile), to check it bit for bit and time it; its energy in fp8_energy.py. Predicted before its
# first run: labkit.fp8.EXTRA_L2_PREDICTED
EXTRA_L2 = [("fp8_promote_2acc_lean", 6, ("ctas=128", f"-DF8_EXTRA_L2={v}")) for v in (0, 1)]
PERIOD_ODD = ((264, 136, 840),)    # 7 K-tiles: periods of 2 and 4 stages end in a shorter one
STORE_ODD = ((2000, 2600, 300),)   # more tiles than SMs (176 of 128 x 256), the last column of tiles 40 wide: a CTA's
                                   # second tile reuses its C buffers, and boxes right of C are not stored
SIZES = (4096, 8192)
ODD = (1000, 1064, 1000)
ROUNDS = 3


def main(argv) -> int:
    if not hopper_here():
        return 2
    import cupy
    import numpy as np

    from helpers.experiments.fp8 import _torch_fp8, check_fp8, random_inputs
    from helpers.fp8_gemm import encode_e4m3, launcher
    from helpers.timing import benchmark, gemm_flops

    def operands(M, N, K, seed):
        A, B = random_inputs(M, N, K, "normal", seed)
        return cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy())), cupy.asarray(A), cupy.asarray(B)

    store = any(f in argv for f in ("--store", "--spread", "--ctas", "--ctas-lean"))

    from helpers.device import require_gpu
    sms = require_gpu("lab/probes/fp8_stages.py").sms

    def launch(k, st, opts, A8, Bt8):     # launcher, with a pseudo-option ctas=N taken out as its ctas; without it,
        n = [int(o[5:]) for o in opts if o.startswith("ctas=")]      # one CTA per SM, as every run before session 19
        o = tuple(o for o in opts if not o.startswith("ctas="))
        return launcher(k, A8, Bt8, stages=st, options=o, ctas=n[0] if n else sms, source=fp8_research_source(k, o))
    rounds, sizes = int_option(argv, "--rounds", ROUNDS, one=True), int_option(argv, "--sizes", SIZES)
    import lab.labkit.fp8  # noqa: F401  (registers the kernels that lost, e.g. fp8_promote_pingpong, fp8_promote_2acc)
    from helpers.fp8_gemm import FP8_KERNELS

    if "--wide" in argv and "fp8_promote_2acc_144" not in FP8_KERNELS:
        print("--wide: fp8_promote_2acc_144 left the course (session 27); run this probe in a checkout of commit 3a670f9",
              file=sys.stderr)
        return 2
    if "--pair" in argv and "#ifndef F8_PAIR" not in FP8_RESEARCH_FILE.read_text():
        print("--pair: F8_PAIR left the FP8 kernels' file after its runs (session 29); run this probe in a checkout of "
              "commit 2a049e0", file=sys.stderr)
        return 2
    variants = (DESC if "--desc" in argv else TWO if "--two" in argv else SPREAD if "--spread" in argv
                else LEAN_STAGES if "--lean-stages" in argv else UNIFORM if "--uniform" in argv
                else FLOW2 if "--flow2" in argv else FLOW if "--flow" in argv else PERIOD if "--period" in argv
                else WAIT if "--wait" in argv else WIDE if "--wide" in argv else PAIR if "--pair" in argv
                else EXTRA_L2 if "--extra-l2" in argv
                else CTAS_LEAN if "--ctas-lean" in argv else CTAS if "--ctas" in argv
                else STORE if store else VARIANTS)
    switched = any(f in argv for f in ("--flow", "--flow2", "--uniform", "--period", "--wait",
                                           "--wide", "--pair", "--extra-l2"))   # a probe switch of the record's kernels:
    more_odd = "--two" in argv or switched or store                          # the odd shapes of --two and --store
    store = store or switched                   # (2000 x 2600 x 300: 336 tiles of 128 x 128, 3 K-tiles each)
    rows, failed = [], False
    shapes = (ODD,) + (TWO_ODD if more_odd else ()) + (STORE_ODD if store else ())
    seven = any(f in argv for f in ("--period", "--pair", "--extra-l2"))     # PERIOD_ODD's 7 K-tiles
    for odd in shapes + (FLOW2_ODD if "--flow2" in argv else ()) + (PERIOD_ODD if seven else ()):
        M, N, K = odd
        A8, Bt8, gA, gB = operands(M, N, K, 1)
        for k, st, opts in variants:
            run, C = launch(k, st, opts, A8, Bt8)
            run()
            chk = check_fp8(k, C[:, :N], gA, gB, backend="GPU")
            rows.append({"kernel": k, "stages": st, "options": list(opts), "shape": list(odd),
                         "check_passed": bool(chk.passed), "check": chk.verdict()[:300]})
            failed |= not chk.passed
            print(k, st, opts, odd, chk.verdict()[:160], file=sys.stderr, flush=True)
    for n in sizes:
        A8, Bt8, gA, gB = operands(n, n, n, n)
        fl = gemm_flops(n, n, n)
        timed = {}
        for fast in (False, True):
            t, err = _torch_fp8(A8, Bt8, fast)
            if t is None:
                print("cuBLASLt FP8:", err, file=sys.stderr)
            else:
                timed[("cublaslt_fp8_fast" if fast else "cublaslt_fp8", 0, ())] = t[0]
        for k, st, opts in variants:
            run, C = launch(k, st, opts, A8, Bt8)
            run()
            chk = check_fp8(k, C, gA, gB, backend="GPU")
            failed |= not chk.passed
            rows.append({"kernel": k, "stages": st, "options": list(opts), "shape": [n] * 3,
                         "check_passed": bool(chk.passed), "check": chk.verdict()[:300]})
            print(k, st, opts, n, chk.verdict()[:160], file=sys.stderr, flush=True)
            timed[(k, st, opts)] = run
        del gA, gB
        ms = {key: [] for key in timed}
        mhz = {key: [] for key in timed}
        watts = {key: [] for key in timed}
        for _ in range(rounds):
            for key, fn in timed.items():
                t = benchmark(fn, flops=fl)
                ms[key].append(t.median_ms)
                mhz[key].append((t.clocks or {}).get("sm_mhz"))
                watts[key].append((t.clocks or {}).get("power_w"))
        for (k, st, opts), v in ms.items():
            med = float(np.median(v))
            rows.append({"kernel": k, "stages": st, "options": list(opts), "n": n, "median_ms": med,
                         "tflops": fl / med / 1e9, "round_ms": v, "sm_mhz": mhz[k, st, opts],
                         "power_w": watts[k, st, opts]})
            print(k, st, opts, n, round(fl / med / 1e9), "TFLOP/s", [round(x, 4) for x in v], mhz[k, st, opts],
                  file=sys.stderr, flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
    Path(argv[0]).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    run(main, __doc__)
