"""Do the kernels that left kernels/hopper_sm90a.cu on 2026-12-07 still build and run where they went? The course's
cluster probe now has its own file (kernels/hopper_cluster_probe_sm90a.cu); the lab builds rungs 27, 28 and 31 and
the wgmma-rate kernels from its frozen lab/kernels/hopper_sm90a_research.cu (lab/labkit/rungs.py, RESEARCH_FILE),
whose code for them compiled to the same SASS (nvcc 13, sm_90a). On a Hopper GPU, each step in a child process:

1. the cluster probe (helpers.experiments.hopper.cluster_probe), launched plainly and with cuLaunchKernelEx: does
   each form clusters of 2?
2. rungs 27, 28 and 31, as the `hopper` experiment runs a rung (helpers.experiments.hopper.rung_rows): checked
   against float64 and, bit for bit, against the CPU model at sizes that are no tile multiples, then checked and timed
   once beside cuBLAS at 5000^3 (where rungs 27-28 build their 256 x 152 tile); and rungs 27-28 forced to that tile
   (-DTALL_M=256 -DTALL_N=152) at small sizes that are no tile multiples, checked the same way;
3. the wgmma-rate kernels (lab/probes/wgmma_rate.py's rate_rows): every width and warpgroup count it measures.

    python3 lab/probes/hopper_lab_kernels.py OUT.json    a Hopper GPU (COURSE_DEVICE=gpu); exit 0 when all passed
    python3 lab/probes/hopper_lab_kernels.py dry-run     no GPU: the files, the kernels they define, the plan
"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)

CLUSTER_FILE = "hopper_cluster_probe_sm90a.cu"
RUNGS = (27, 28, 31)
TIMED = ((5000, 5000, 5000),)
TALL = ("-DTALL_M=256", "-DTALL_N=152")                 # rungs 27-28's own tile, whatever the shape
TALL_SIZES = ((257, 520, 136), (40, 24, 56), (520, 312, 200))   # small enough for the NumPy model too
RATE_KERNELS = ("hopper_wgmma_rate_n64", "hopper_wgmma_rate_n128", "hopper_wgmma_rate_n256")


def _say(*a):
    print(*a, file=sys.stderr, flush=True)


def tall_rows(k: int, sizes) -> list[dict]:
    """GPU (in a child process): rung k (27 or 28) built with the 256 x 152 tile (TALL: a build that names its tile is
    left as given), checked at `sizes` against float64 and its model on the GPU (helpers.check), and bit for bit
    against its NumPy model, C poisoned with NaN before the launch."""
    import cupy
    import numpy as np

    import lab.labkit.rungs  # noqa: F401  (registers rungs 27, 28 and 31)
    from helpers.experiments.hopper import _inputs
    from helpers.kernels import rung_entry
    from helpers.launch import launcher

    spec, out = rung_entry(k), []
    for i, (M, N, K) in enumerate(sizes):
        A, B = _inputs(i, M, N, K)
        run_, C, _ = launcher(spec, A, B, pad=True, options=TALL)
        C.fill(cupy.nan)
        run_()
        cupy.cuda.runtime.deviceSynchronize()
        chk = spec.check(C[:M, :N], A, B, backend="GPU")
        got = cupy.asnumpy(C[:M, :N])
        same = np.array_equal(got, spec.emulate(cupy.asnumpy(A), cupy.asnumpy(B)).astype(got.dtype))
        out.append({"m": M, "n": N, "k": K, **chk.fields(), "verdict": chk.verdict(), "numpy_model_identical": same})
    return out


def dry_run() -> int:
    """No GPU: each file exists and defines its kernels, the course's cluster probe names its file, each rung's entry
    is built from the research file and its CPU model runs, and what the GPU run would do."""
    import inspect

    import numpy as np

    import lab.labkit.rungs as LR
    from helpers.compile import KERNEL_DIR
    from helpers.experiments import hopper as H
    from helpers.kernels import PENDING
    from lab.probes.wgmma_rate import RATES

    research = (KERNEL_DIR / LR.RESEARCH_FILE).resolve()
    text = research.read_text()
    probe = (KERNEL_DIR / CLUSTER_FILE).read_text()
    assert "__cluster_dims__(2, 1, 1)" in probe and "void CLUSTER_DIMS hopper_cluster_probe(int* out)" in probe
    assert f'"{CLUSTER_FILE}", "hopper_cluster_probe"' in inspect.getsource(H.cluster_probe)
    assert not (KERNEL_DIR / "hopper_sm90a.cu").exists()
    _say(f"cluster probe: kernels/{CLUSTER_FILE}, launched plainly and with cuLaunchKernelEx (8 blocks of 32)")
    A = np.arange(16 * 16, dtype=np.float16).reshape(16, 16) / 256
    for k in RUNGS:
        spec = PENDING[k]
        assert spec.file == LR.RESEARCH_FILE and f'extern "C" __global__ void {spec.name}(const' in text, k
        assert spec.emulate(A, A).shape == (16, 16)
        tiles = {s: LR.tall_choice(s[0], s[1], lambda: (66, 66)) if spec.per_shape == "tile" else spec.block_tile
                 for s in (*H.ODD_SIZES, *TIMED)}
        _say(f"rung {k}: {spec.name} from {research.relative_to(ROOT)}; checked at {list(H.ODD_SIZES)}, checked and "
             f"timed at {list(TIMED)}; tiles (with the H200's 66 clusters of 2): {tiles}"
             + (f"; built with {' '.join(TALL)} and checked at {list(TALL_SIZES)}" if spec.per_shape == "tile" else ""))
    for name in RATE_KERNELS:
        assert f'extern "C" __global__ void {name}(long long* out' in text, name
    _say(f"wgmma rate: {', '.join(RATE_KERNELS)} from {research.relative_to(ROOT)}; {len(RATES)} launches "
         f"(N, warpgroups, depth): {RATES}")
    return 0


def main(argv) -> int:
    if not hopper_here():
        return 2
    from helpers.experiments.hopper import ODD_SIZES
    from helpers.isolate import run_isolated

    t0, out = time.time(), Path(argv[0])
    log = {"command": "python3 lab/probes/hopper_lab_kernels.py " + " ".join(argv), "cluster_probe": {}, "rungs": {}}
    bad = []
    for launch_ex in (False, True):
        p = run_isolated("helpers.experiments.hopper:cluster_probe", launch_ex, timeout=120)
        log["cluster_probe"]["launch_ex" if launch_ex else "plain"] = p
        ok = p.get("forms_clusters") is True
        bad += [] if ok else [f"cluster probe ({'cuLaunchKernelEx' if launch_ex else 'plain launch'})"]
        _say(f"{'ok  ' if ok else 'FAIL'} cluster probe, {'cuLaunchKernelEx' if launch_ex else 'plain launch'}: "
             f"{p.get('path', p.get('error', p))}; blocks (size, rank, cluster): "
             f"{[(b['cluster_size'], b['rank'], b['cluster']) for b in p.get('blocks', [])]}")
    for k in RUNGS:
        rows = run_isolated("lab.labkit.rungs:rung_rows", k, [list(s) for s in TIMED], [list(s) for s in ODD_SIZES],
                            timeout=600)
        log["rungs"][str(k)] = rows
        if isinstance(rows, dict):
            bad.append(f"rung {k}")
            _say(f"FAIL rung {k}: {str(rows.get('error', rows))[-2000:]}")
            continue
        for r in rows:
            ok = "error" not in r and "skipped" not in r and r.get("passed") is True and r.get("model") != "differs"
            bad += [] if ok else [f"rung {k} at {r.get('m')}x{r.get('n')}x{r.get('k')}"]
            _say(f"{'ok  ' if ok else 'FAIL'} rung {k} {r.get('m')}x{r.get('n')}x{r.get('k')}: "
                 f"{r.get('verdict') or r.get('error') or r.get('skipped')}; model: {r.get('model')}"
                 + (f"; {r['tflops']:.0f} TFLOP/s, x{r['frac_cublas_fp16c']:.2f} cuBLAS (FP16 C)"
                    if r.get("tflops") and r.get("frac_cublas_fp16c") else ""))
        if k in (27, 28):
            rows = run_isolated("lab.probes.hopper_lab_kernels:tall_rows", k, [list(s) for s in TALL_SIZES],
                                timeout=600)
            log["rungs"][f"{k} {' '.join(TALL)}"] = rows
            for r in rows if isinstance(rows, list) else [rows]:
                ok = r.get("passed") is True and r.get("model") != "differs" and r.get("numpy_model_identical") is True
                bad += [] if ok else [f"rung {k} ({' '.join(TALL)}) at {r.get('m')}x{r.get('n')}x{r.get('k')}"]
                _say(f"{'ok  ' if ok else 'FAIL'} rung {k} {' '.join(TALL)} {r.get('m')}x{r.get('n')}x{r.get('k')}: "
                     f"{r.get('verdict') or str(r.get('error', r))[-2000:]}; model on the GPU: {r.get('model')}; "
                     f"NumPy model identical: {r.get('numpy_model_identical')}")
    rates = run_isolated("lab.probes.wgmma_rate:rate_rows", timeout=300)
    log["wgmma_rate"] = rates
    ok = isinstance(rates, list) and bool(rates) and all(r["clk_per_ktile"] > 0 for r in rates)
    bad += [] if ok else ["wgmma rate"]
    for r in rates if isinstance(rates, list) else [rates]:
        _say(f"{'ok  ' if ok else 'FAIL'} wgmma rate {r}")
    log["failed"], log["seconds"] = bad, round(time.time() - t0, 1)
    out.write_text(json.dumps(log, indent=1))
    _say(f"{'ALL PASSED' if not bad else 'FAILED: ' + '; '.join(bad)} ({log['seconds']:.0f} s); wrote {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["dry-run"]:
        sys.exit(dry_run())
    run(main, __doc__)
