"""A device probe (issue 25): which kernels does cuBLAS run for the shapes lesson 6 compares against, and how
does it launch them? Nsight Compute (launch statistics and speed of light, clocks not locked) profiles one
cuBLAS call per shape and C type: cupy.matmul on FP16 (FP16 C) and cublasGemmEx with an FP32 C, on N(0,1) FP16
inputs. Before each call a one-thread marker kernel named after it runs, so every kernel between two markers
belongs to one call (a split-K reduction shows up as a second kernel). Written: kernel names (cuBLAS names carry
their tile shape, cluster and split), grid, block, cluster, registers, shared memory, duration with the SM clock
it ran at (sm__cycles_elapsed.avg.per_second), DRAM and SM throughput. --fp8 S,S,... adds cuBLASLt's FP8 GEMM (E4M3 bytes, scales 1, FP32 C; helpers.fp8_gemm.cublaslt_fp8)
with default and with fast accumulation at those shapes (lesson 7); its set-up and a warm-up call run before it,
between markers whose kernels are left out.

    python3 lab/probes/cublas_kernels.py OUT.json [--shapes S,S,...] [--fp8 S,S,...]
                                                                      (a Hopper GPU; S is n or MxNxK)"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.probes.common import hopper_here, run  # noqa: E402  (run as a script: ROOT first)
SHAPES = [[128, 8192, 8192], [5000] * 3, [6000] * 3, [4096] * 3, [8192, 8192, 1024]]
CTYPES = ("fp16c", "fp32c")
KEEP = ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed", "launch__grid_size", "launch__block_size",
        "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "launch__cluster_dim_x",
        "launch__cluster_dim_y", "launch__cluster_dim_z", "launch__waves_per_multiprocessor",
        "sm__cycles_elapsed.avg.per_second", "dram__bytes.sum.per_second")


def _shapes(text: str) -> list:
    return [[int(v) for v in s.split("x")] * (3 if "x" not in s else 1) for s in text.split(",")]


def _marker(name: str) -> None:
    import cupy

    cupy.RawKernel(f'extern "C" __global__ void {name}(int* x) {{ x[0] = 1; }}', name)(
        (1,), (1,), (cupy.zeros(1, dtype=cupy.int32),))


def child(shapes, fp8_shapes=()) -> None:
    """Under ncu: inputs first, then for each shape and C type a marker kernel and one cuBLAS call; then, for
    each FP8 shape and accumulation, cuBLASLt's set-up and warm-up after a marker_skip kernel, and its call."""
    import cupy

    from helpers.cublas import CUBLAS_COMPUTE_32F, gemm_ex

    rng = cupy.random.default_rng(5)
    ops = [(s, rng.standard_normal((s[0], s[2]), dtype=cupy.float32).astype(cupy.float16),
            rng.standard_normal((s[2], s[1]), dtype=cupy.float32).astype(cupy.float16)) for s in shapes]
    cupy.cuda.runtime.deviceSynchronize()
    for (M, N, K), A, B in ops:
        for ct in CTYPES:
            _marker(f"marker_{M}x{N}x{K}_{ct}")
            if ct == "fp16c":
                cupy.matmul(A, B)
            else:
                gemm_ex(A, B, compute=CUBLAS_COMPUTE_32F, out_dtype=cupy.float32)
            cupy.cuda.runtime.deviceSynchronize()
    if fp8_shapes:
        from helpers.fp8_scaled import gpu_block_scaled_inputs
        from helpers.fp8_gemm import cublaslt_fp8

        for M, N, K in fp8_shapes:
            _marker("marker_skip_inputs")           # the FP8 inputs' generation is not a cuBLAS call either
            A8, Bt8 = gpu_block_scaled_inputs(M, N, K, seed=5)[:2]
            for ct, fast in (("fp8default", False), ("fp8fast", True)):
                _marker(f"marker_skip_{ct}")
                got = cublaslt_fp8(A8, Bt8, fast)
                if got is None:
                    print("no cuBLASLt FP8 path here (nvmath-python or PyTorch)", file=sys.stderr)
                    return
                go = got[0]
                go()
                cupy.cuda.runtime.deviceSynchronize()
                _marker(f"marker_{M}x{N}x{K}_{ct}")
                go()
                cupy.cuda.runtime.deviceSynchronize()


def main(argv) -> int:
    sys.path.insert(0, str(ROOT))
    if argv[:1] == ["--child"]:
        child(_shapes(argv[1]), _shapes(argv[2]) if len(argv) > 2 and argv[2] else ())
        return 0
    if not hopper_here():
        return 2
    sys.path.insert(0, str(ROOT / "tools"))
    from ncu_counters import find_ncu, number, parse_raw_csv

    args = list(argv)
    shapes, fp8 = SHAPES, ""
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = _shapes(args[i + 1])
        del args[i:i + 2]
    if "--fp8" in args:
        i = args.index("--fp8")
        fp8 = args[i + 1]
        del args[i:i + 2]
    ncu = find_ncu()
    if ncu is None:
        print("no ncu found (set NCU=/path/to/ncu)", file=sys.stderr)
        return 1
    rep = Path("/tmp/cublas_kernels")
    spec = ",".join("x".join(map(str, s)) for s in shapes)
    cmd = [ncu, "--clock-control", "none", "--section", "LaunchStats", "--section", "SpeedOfLight", "--metrics",
           ",".join(m for m in KEEP if not m.startswith("launch__")),   # the SM clock and DRAM, by name
           "--force-overwrite", "--export", str(rep), sys.executable, str(Path(__file__).resolve()), "--child", spec,
           ",".join("x".join(map(str, s)) for s in _shapes(fp8)) if fp8 else ""]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=500, cwd=ROOT,
                       env=dict(os.environ, COURSE_DEVICE="gpu"))
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
        return 1
    q = subprocess.run([ncu, "--import", f"{rep}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
                       capture_output=True, text=True, timeout=300)
    rows, units = parse_raw_csv(q.stdout)
    calls, current = [], None
    for row in rows:
        name = row.get("Kernel Name", "")
        if name.startswith("marker_skip"):           # set-up and warm-up: not the measured call
            current = None
        elif name.startswith("marker_"):
            shape, ct = name[len("marker_"):].split("_")
            current = {"shape": [int(v) for v in shape.split("x")], "c": ct, "kernels": []}
            calls.append(current)
        elif current is not None:
            k = {"name": name, **{m: number(row[m]) for m in KEEP if m in row}}
            current["kernels"].append(k)
            print(current["shape"], ct, name[:110], {m.split("__")[1][:28]: k.get(m) for m in KEEP if m in k},
                  file=sys.stderr)
    Path(args[0]).write_text(json.dumps({"ncu": cmd[0], "units": {m: units.get(m, "") for m in KEEP},
                                         "calls": calls}, indent=1))
    return 0 if calls else 1


if __name__ == "__main__":
    run(main, __doc__)
