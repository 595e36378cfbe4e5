"""Launch every course kernel once at small and odd sizes, for compute-sanitizer (``make sanitize``).

    python tools/sanitize_driver.py run                  # what compute-sanitizer runs (GPU)
    python tools/sanitize_driver.py list                 # the cases, without a GPU
    python tools/sanitize_driver.py summarize LOGDIR     # LOGDIR/<tool>.log -> results/sanitize-<gpu>.txt

``run`` launches, one case at a time, every kernel of the registry ``helpers.kernels.KERNELS``
(the seed kernels and every ladder rung, through ``helpers.launch.launcher``, zero-padded as
``gemm(pad=True)`` pads) and the lesson kernels outside it (the tiled FP32 solution with TILE
16 and 32, the column-major-B and 2x2 WMMA variants, the fragment probe, the tensor-core
probes), at M x N x K = 16 x 16 x 16 and 33 x 17 x 49. Between cases it prints ``@@case`` / ``@@end`` markers and synchronises, so
``summarize`` can attribute each sanitizer report to the case that caused it. CuPy's memory
pool is switched off (every array is its own cudaMalloc) so that memcheck sees each
matrix's true bounds. Each result is also checked against the float64 product.

``summarize`` reads the logs that tools/sanitize.sh wrote (memcheck, racecheck,
synccheck) and writes one table: tool, kernel, case, errors; then the tools' own
ERROR SUMMARY totals, and the kernels in kernels/*.cu that no case launched.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = ((16, 16, 16), (33, 17, 49))
TOOLS = ("memcheck", "racecheck", "synccheck")
CASE = "@@case"
END = "@@end"


# --------------------------------------------------------------------------- the cases
def _f32(M, N, K, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)


def cases() -> list[tuple[str, str, object]]:
    """(kernel, case label, fn) for every launch; fn() runs it and returns a verdict string."""
    out = []
    from helpers.kernels import KERNELS, PENDING

    for spec in [*KERNELS.values(), *PENDING.values()]:     # (PENDING: rungs not yet run on a GPU)
        for M, N, K in SIZES:
            out.append((spec.name, f"M={M} N={N} K={K}", (lambda s=spec, M=M, N=N, K=K: _course_kernel(s, M, N, K))))
    for tile in (16, 32):
        for M, N, K in SIZES:
            out.append(("gemm_fp32_tiled", f"TILE={tile} M={M} N={N} K={K}",
                        (lambda t=tile, M=M, N=N, K=K: _tiled(t, M, N, K))))
    for name in ("wmma_gemm_bcol", "wmma_gemm_2x2"):
        for M, N, K in SIZES:
            out.append((name, f"M={M} N={N} K={K}", (lambda n=name, M=M, N=N, K=K: _variant(n, M, N, K))))
    out.append(("wmma_fragment_probe", "one warp", _fragment_probe))
    out.append(("hopper_cluster_probe", "8 blocks in clusters of 2", _cluster_probe))
    from helpers.experiments.precision import _PROBE_KERNELS

    for (fmt, acc), (kname, _cc) in _PROBE_KERNELS.items():
        out.append((kname, f"{fmt} in, {acc} acc: 3 probes", (lambda f=fmt, a=acc: _probes(f, a))))
    from helpers.fp8_gemm import FP8_KERNELS

    for kname in ("tc_model_gemm", "fma_chain_model"):          # the check's model on CUDA cores
        for M, N, K in SIZES:
            out.append((kname, f"M={M} N={N} K={K}", (lambda n=kname, M=M, N=N, K=K: _check_model(n, M, N, K))))
    out.append(("fp8_convert", "4096 values", _fp8_convert))
    for name in FP8_KERNELS:                      # lesson 7 (E4M3 inputs, B transposed, their own front end)
        for M, N, K in SIZES:
            out.append((name, f"M={M} N={N} K={K}", (lambda n=name, M=M, N=N, K=K: _fp8(n, M, N, K))))
    from helpers.experiments.fp8_scaled import block_scaled_verdict

    for M, N, K in SIZES:                         # lesson 7: the block-scaled kernel takes two scale arrays too
        out.append(("fp8_block_scaled", f"M={M} N={N} K={K}",
                    (lambda M=M, N=N, K=K: block_scaled_verdict(M, N, K))))
    return out


def _verdict(chk) -> str:
    return chk.verdict() if chk.passed else chk.verdict() + " | " + chk.mismatch_summary().replace("\n", "; ")


def _course_kernel(spec, M, N, K, options=(), source=None):
    import cupy

    from helpers.device import backend
    from helpers.formats import from_bf16_bits, to_bf16_bits
    from helpers.launch import launcher

    why = spec.unsupported(backend().gpu.cc)
    if why:
        return f"skipped: {why}"
    A, B = _f32(M, N, K, 7)
    if spec.inputs == "bf16":
        Ad, Bd = to_bf16_bits(A), to_bf16_bits(B)
        A, B = from_bf16_bits(Ad).astype(np.float32), from_bf16_bits(Bd).astype(np.float32)
    else:
        Ad, Bd = A.astype(spec.in_dtype), B.astype(spec.in_dtype)
    run, C, _ = launcher(spec, cupy.asarray(Ad), cupy.asarray(Bd), pad=True, options=tuple(options), source=source)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return _verdict(spec.check(cupy.asnumpy(C)[:M, :N], A, B, backend="GPU"))


def _tiled(tile, M, N, K):
    import cupy

    from helpers.experiments.baseline import _check, fp32_launcher, tiled_kernel

    A, B = (cupy.asarray(x) for x in _f32(M, N, K, 8))
    run, C = fp32_launcher(tiled_kernel(tile), A, B, (tile, tile), tile=tile)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return _verdict(_check(C, A, B, f"gemm_fp32_tiled TILE={tile}"))


def _variant(name, M, N, K):
    import cupy

    from helpers.experiments.wmma import variant_launcher
    from helpers.check import check_gemm

    A, B = (x.astype(np.float16) for x in _f32(M, N, K, 9))
    run, C, _ = variant_launcher(name, A, B)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return _verdict(check_gemm(cupy.asnumpy(C)[:M, :N], A, B, inputs="fp16", acc="fp32", acc_rounding="truncate",
                               block=16, name=name, backend="GPU"))


def _check_model(kname, M, N, K):
    """The check's GPU model (helpers.model_gpu) against the CPU model, bit for bit."""
    import cupy

    from helpers import emulate

    A, B = _f32(M, N, K, 10)
    if kname == "fma_chain_model":
        ar = emulate.Arithmetic("fp32")
    else:
        ar = emulate.Arithmetic("fp16", "fp32", emulate.DEFAULT_TC_MODEL)
        A, B = A.astype(np.float16), B.astype(np.float16)
    dev = cupy.asnumpy(ar.gpu(cupy.asarray(A), cupy.asarray(B)))
    same = np.array_equal(dev, ar(A, B))
    return f"{'PASS' if same else 'FAIL'} {kname} M={M} N={N} K={K}: GPU model {'equals' if same else 'differs from'} " \
           "the CPU model bit for bit"


def _fp8(name, M, N, K):
    from helpers.device import backend
    from helpers.experiments.fp8 import check_fp8, random_inputs
    from helpers.fp8_gemm import FP8_KERNELS, matmul

    spec, cc = FP8_KERNELS[name], backend().gpu.cc
    if cc < spec.min_cc or (spec.wgmma and cc != (9, 0)):
        return f"skipped: {name} does not run on sm_{cc[0]}{cc[1]}"
    A, B = random_inputs(M, N, K, "normal", 7)
    C, _ = matmul(name, A, B)
    return _verdict(check_fp8(name, C, A, B, backend="GPU"))


def _fp8_convert():
    from helpers.experiments.fp8 import conversion_inputs, gpu_convert
    from helpers.fp8 import saturating_cast

    x = conversion_inputs()[:4096]
    e4, _ = gpu_convert(x)
    same = (e4 == saturating_cast(x, "fp8_e4m3").view(np.uint8)) | np.isnan(x)
    return f"{int(same.sum())} of {x.size} equal to saturating_cast (NaN counted as equal)"


def _fragment_probe():
    from helpers.experiments.wmma import wmma_fragment_maps

    d = wmma_fragment_maps()
    return f"elements per lane {d['num_elements']}"


def _cluster_probe():
    from helpers.experiments.hopper import cluster_probe

    d = cluster_probe()
    return f"skipped: {d['skipped']}" if "skipped" in d else f"{d['path']}, clusters formed: {d['forms_clusters']}"


def _probes(fmt, acc):
    from helpers.experiments.precision import _run_probe_batch, emulate_probe, probe_cases

    cs = [c for c in probe_cases() if (c["fmt"], c["acc"]) == (fmt, acc)][:3]
    got = _run_probe_batch(cs)
    same = sum(g == emulate_probe(c) for g, c in zip(got, cs))
    return f"{same} of {len(cs)} equal to the CPU model"


def run() -> int:
    import cupy

    from helpers.device import backend

    cupy.cuda.set_allocator(None)            # no pool: one cudaMalloc per array, exact bounds for memcheck
    cupy.cuda.set_pinned_memory_allocator(None)
    b = backend()
    if not b.is_gpu:
        print(f"no GPU: {b.reason}", flush=True)
        return 2
    g = b.gpu
    print("@@gpu " + json.dumps({"name": g.name, "slug": g.slug, "sm": g.sm, "driver": g.driver,
                                 "runtime": g.runtime, "cupy": g.cupy}), flush=True)
    failed = 0
    for kernel, label, fn in cases():
        print(f"{CASE} {kernel} | {label}", flush=True)
        try:
            verdict = fn()
        except Exception as exc:
            failed += 1
            verdict = f"EXCEPTION {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        print(f"{END} {kernel} | {label} | {verdict}", flush=True)
    return 1 if failed else 0


# --------------------------------------------------------------------------- the summary
_SUMMARY = re.compile(r"=+ ERROR SUMMARY: (\d+) errors?")
_RACE = re.compile(r"=+ RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_REPORT = re.compile(r"^=+ (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|\s)(.*(?:Invalid|Error|error|Race|"
                     r"Barrier|hazard|Hazard|Program hit|Warning).*)$")
_AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?(?:\S+:\d+:)?([A-Za-z_]\w*)")


def parse_log(text: str) -> dict:
    """{'cases': [{kernel, label, verdict, errors, first}], 'total', 'race', 'gpu', 'outside': [reports]}.

    A report between a case's @@case and @@end lines belongs to that case; one outside any case
    (the tool's output and ours interleave in one stream) is kept with the function named on its
    'at ...' line."""
    res = {"cases": [], "total": None, "race": None, "gpu": None, "outside": []}
    cur, last = None, None
    for line in text.splitlines():
        if line.startswith("@@gpu "):
            res["gpu"] = json.loads(line[6:])
        elif line.startswith(CASE + " "):
            kernel, label = (x.strip() for x in line[len(CASE) + 1:].split("|", 1))
            cur = {"kernel": kernel, "label": label, "verdict": "did not finish", "errors": 0, "first": None}
            res["cases"].append(cur)
        elif line.startswith(END + " "):
            parts = [x.strip() for x in line[len(END) + 1:].split("|", 2)]
            if cur is not None and len(parts) == 3:
                cur["verdict"] = parts[2]
            cur = None
        elif (m := _SUMMARY.search(line)):
            res["total"] = int(m.group(1))
        elif (m := _RACE.search(line)):
            res["race"] = tuple(int(x) for x in m.groups())
        elif (m := _REPORT.match(line)):
            last = {"text": m.group(1).strip(), "function": None}
            if cur is not None:
                cur["errors"] += 1
                if cur["first"] is None:
                    cur["first"] = last
            else:
                res["outside"].append(last)
        elif (m := _AT.match(line)) and last is not None and last["function"] is None:
            last["function"] = m.group(1)
    return res


def _report_text(r: dict) -> str:
    return r["text"] + (f" (in {r['function']})" if r["function"] else "")


def kernels_in_sources() -> list[str]:
    """Every extern "C" kernel of kernels/*.cu."""
    names = []
    for f in sorted((ROOT / "kernels").glob("*.cu")):
        names += re.findall(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?'
                            r'(?:CLUSTER_DIMS\s+)?(\w+)\s*\(', f.read_text())
    return list(dict.fromkeys(names))                  # a declaration and its definition count once


def summarize(logdir: Path, out_dir: Path = ROOT / "results") -> Path:
    logs = {t: (logdir / f"{t}.log") for t in TOOLS}
    parsed = {t: parse_log(p.read_text(errors="replace")) if p.is_file() else None for t, p in logs.items()}
    rcs = {t: ((logdir / f"{t}.rc").read_text().strip() if (logdir / f"{t}.rc").is_file() else "?") for t in TOOLS}
    gpu = next((p["gpu"] for p in parsed.values() if p and p["gpu"]), None) or {"name": "unknown GPU",
                                                                                 "slug": "unknown-gpu"}
    version = (logdir / "version.txt").read_text().strip() if (logdir / "version.txt").is_file() else "?"
    lines = [f"# compute-sanitizer on {gpu['name']} ({gpu.get('sm', '?')}): every course kernel at "
             f"{' and '.join('x'.join(map(str, s)) for s in SIZES)} (M x N x K, padded as the helpers pad)",
             f"# date {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}; {version}; "
             f"CUDA runtime {gpu.get('runtime', '?')}, driver CUDA {gpu.get('driver', '?')}, CuPy {gpu.get('cupy', '?')}",
             "# command: make sanitize (tools/sanitize.sh; driver tools/sanitize_driver.py)", "",
             f"{'tool':<10} {'kernel':<28} {'case':<26} {'errors':>6}  result"]
    launched, total_errors, problems = set(), 0, []
    for t in TOOLS:
        p = parsed[t]
        if p is None:
            lines.append(f"{t:<10} (no log: the tool did not run)")
            problems.append(f"{t}: no log")
            continue
        for c in p["cases"]:
            launched.add(c["kernel"])
            lines.append(f"{t:<10} {c['kernel']:<28} {c['label']:<26} {c['errors']:>6}  {c['verdict']}")
            if c["first"]:
                lines.append(f"{'':<10}   first report: {_report_text(c['first'])}")
            if c["errors"] or c["verdict"].startswith(("EXCEPTION", "did not finish", "FAIL")):
                problems.append(f"{t} {c['kernel']} {c['label']}: {c['errors']} reports, {c['verdict']}")
        for r in p["outside"]:
            lines.append(f"{t:<10} (outside any case) {_report_text(r)}")
            problems.append(f"{t}: report outside any case: {_report_text(r)}")
    lines += ["", "totals (the tools' own ERROR SUMMARY lines; racecheck's RACECHECK SUMMARY):"]
    for t in TOOLS:
        p = parsed[t]
        if p is None:
            continue
        tot = p["total"]
        if tot is None and t == "racecheck" and p["race"]:
            # racecheck (compute-sanitizer 2025.x, seen on the H200) ends with its own
            # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" instead of ERROR SUMMARY
            tot = p["race"][1]
        extra = f", racecheck hazards {p['race'][0]} ({p['race'][1]} errors, {p['race'][2]} warnings)" if p["race"] else ""
        outside = f", {len(p['outside'])} reports outside any case" if p["outside"] else ""
        lines.append(f"  {t:<10} ERROR SUMMARY: {tot if tot is not None else 'missing (tool failed?)'} errors"
                     f"{extra}{outside}; exit status {rcs[t]}")
        total_errors += tot or 0
        if tot is None:
            problems.append(f"{t}: no ERROR SUMMARY line (see {logs[t].name})")
        if p["race"] and p["race"][2]:
            problems.append(f"{t}: {p['race'][2]} racecheck warnings")
    n_cases = {t: len(parsed[t]["cases"]) for t in TOOLS if parsed[t]}
    for t, n in n_cases.items():
        if n < max(n_cases.values()):
            problems.append(f"{t}: only {n} of {max(n_cases.values())} cases ran (timed out or crashed? see {logs[t].name})")
    missing = [k for k in kernels_in_sources() if k not in launched]
    lines += ["", "kernels in kernels/*.cu that no case launched: " + (", ".join(missing) if missing else "none")]
    n_run = max(n_cases.values(), default=0)
    verdict = (f"CLEAN: {n_run} cases x {len(TOOLS)} tools, 0 errors" if not problems and total_errors == 0
               else f"NOT CLEAN: {len(problems)} problem(s)")
    lines += ["", f"verdict: {verdict}"] + [f"  - {p}" for p in problems]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"sanitize-{gpu['slug']}.txt"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {path}")
    return path


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv[0] if argv else "list"
    if cmd == "run":
        return run()
    if cmd == "summarize":
        p = summarize(Path(argv[1]))
        return 0 if "verdict: CLEAN" in p.read_text() else 1
    if cmd == "list":
        import os

        os.environ.setdefault("COURSE_DEVICE", "cpu")
        cs = cases()
        for k, label, _ in cs:
            print(f"{k:<28} {label}")
        covered = {k for k, _, _ in cs}
        missing = [k for k in kernels_in_sources() if k not in covered]
        print(f"{len(cs)} cases; kernels without a case: {', '.join(missing) or 'none'}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
