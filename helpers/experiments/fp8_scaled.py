"""Lesson 7, block scaling: fp8_block_scaled (helpers.fp8_scaled) measured for experiment fp8, and the readers
of what the record holds of it (``experiments.fp8.block_scaled``)."""
from __future__ import annotations

from ..fp8_gemm import encode_e4m3
from ..fp8_scaled import (BLOCK_SCALED, block_scaled_launcher, block_scaled_model, block_scaled_operands,
                          check_block_scaled, gemm_block_scaled, gpu_block_scaled_inputs, scaling_error_table,
                          scaling_inputs)

BLOCK_SCALED_CHECKS = (((40, 24, 256), ("normal", "outlier activations", "varied weight blocks")),
                       ((40, 24, 200), ("outlier activations",)),
                       ((257, 520, 136), ("normal", "outlier activations", "varied weight blocks")),
                       ((1000, 1064, 1000), ("normal", "outlier activations")),
                       ((1024, 1024, 1024), ("normal", "gpu random")),
                       ((4096, 4096, 4096), ("gpu random",)))
BLOCK_SCALED_CPU_MODEL = 1 << 25          # products up to which the check also compares the numpy model
BLOCK_SCALED_TIMED = ("cublaslt_fp8", "fp8_promote_128", "fp8_block_scaled")
BLOCK_SCALED_LARGE_TABLE = (1024, 1024, 8192)


def _block_scaled_case(M, N, K, kind, seed):
    """(A8, Bt8, sa, sb, Aq, Bq): inputs of `kind` quantized on the host, or 'gpu random' made on the GPU."""
    import cupy

    if kind == "gpu random":
        return gpu_block_scaled_inputs(M, N, K, seed)
    Aq, Bq, sa, sb = block_scaled_operands(*scaling_inputs(kind, M, N, K, seed))
    return (cupy.asarray(encode_e4m3(Aq)), cupy.asarray(encode_e4m3(Bq.T.copy())), cupy.asarray(sa),
            cupy.asarray(sb), cupy.asarray(Aq), cupy.asarray(Bq))


def run_block_scaled_checks(cases=BLOCK_SCALED_CHECKS, seed: int = 26) -> list[dict]:
    """One row per case: fp8_block_scaled checked (bound and GPU model, every element; the numpy model too up
    to BLOCK_SCALED_CPU_MODEL products)."""
    import time

    import cupy

    rows = []
    for (M, N, K), kinds in cases:
        for kind in kinds:
            t0 = time.perf_counter()
            A8, Bt8, sa, sb, Aq, Bq = _block_scaled_case(M, N, K, kind, seed)
            C = gemm_block_scaled(A8, Bt8, sa, sb)
            chk = check_block_scaled(C, Aq, Bq, sa, sb)
            row = {"M": M, "N": N, "K": K, "inputs": kind, "seed": seed, "elements": int(C.size),
                   "nan": chk.n_nan, "over_bound": chk.n_over, "bound_ratio": chk.bound_ratio,
                   "model": chk.model, "mismatches": chk.model_mismatch, "model_where": chk.model_where,
                   "check_passed": chk.passed, "check": chk.verdict()[:300]}
            if M * N * K <= BLOCK_SCALED_CPU_MODEL:
                Em = block_scaled_model(cupy.asnumpy(Aq), cupy.asnumpy(Bq), cupy.asnumpy(sa), cupy.asnumpy(sb))
                row["cpu_model_mismatches"] = int((Em != cupy.asnumpy(C)).sum())
            row["seconds"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
            del A8, Bt8, sa, sb, Aq, Bq, C
    return rows


def block_scaled_verdict(M: int, N: int, K: int, seed: int = 7) -> str:
    """The check's verdict on one launch of fp8_block_scaled (seeded 'outlier activations'), for
    tools/sanitize_driver.py."""
    import cupy

    A8, Bt8, sa, sb, Aq, Bq = _block_scaled_case(M, N, K, "outlier activations", seed)
    C = gemm_block_scaled(A8, Bt8, sa, sb)
    cupy.cuda.runtime.deviceSynchronize()
    return check_block_scaled(C, Aq, Bq, sa, sb).verdict()


def run_block_scaled_speed(sizes=(4096, 8192), seed: int = 4096) -> list[dict]:
    """TFLOP/s at n^3 (helpers.timing.benchmark) of cuBLASLt's FP8 GEMM, fp8_promote_128 and fp8_block_scaled
    on the same bytes; fp8_block_scaled's C checked first."""
    import time

    import cupy

    from ..fp8_gemm import cublaslt_fp8, launcher
    from ..timing import benchmark, gemm_flops

    rows = []
    for n in sizes:
        A8, Bt8, sa, sb, Aq, Bq = gpu_block_scaled_inputs(n, n, n, seed + n)

        def timed(name, fn, extra):
            t = benchmark(fn, flops=gemm_flops(n, n, n))
            rows.append({"kernel": name, "n": n, "tflops": t.tflops, "median_ms": t.median_ms, "p10_ms": t.p10_ms,
                         "p90_ms": t.p90_ms, "reps": t.n, **(t.clocks or {}), **extra})
        for k in BLOCK_SCALED_TIMED:
            if k == "cublaslt_fp8":
                try:
                    t = cublaslt_fp8(A8, Bt8, False)
                except Exception as exc:  # noqa: BLE001 - report, do not stop the experiment
                    t = f"{type(exc).__name__}: {exc}"[:300]
                if isinstance(t, tuple):
                    timed(k, t[0], {"path": t[2]})         # the library, version and call that ran
                else:
                    rows.append({"kernel": k, "n": n, "skipped": t or "neither nvmath-python nor PyTorch is installed"})
                continue
            elif k == "fp8_block_scaled":
                fn, C = block_scaled_launcher(A8, Bt8, sa, sb)
                fn()
                t0 = time.perf_counter()
                chk = check_block_scaled(C, Aq, Bq, sa, sb)
                timed(k, fn, {"check_passed": bool(chk.passed), "check": chk.verdict()[:300],
                              "check_s": round(time.perf_counter() - t0, 2)})
            else:
                fn, C = launcher(k, A8, Bt8)
                fn()
                timed(k, fn, {"nan": int(cupy.isnan(C).sum())})
            del C
        del A8, Bt8, sa, sb, Aq, Bq
    return rows


def run_block_scaled(sizes=(4096, 8192)) -> dict:
    """What experiment fp8 records of fp8_block_scaled: registers and spills, checks, speed, and the error table
    at its CPU shape and at BLOCK_SCALED_LARGE_TABLE."""
    import datetime as _dt
    import time

    from ..compile import get_arch_kernel

    t0 = time.perf_counter()
    kern = get_arch_kernel(BLOCK_SCALED.file, BLOCK_SCALED.name, (9, 0))
    out = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "resources": {BLOCK_SCALED.name: {"regs": int(kern.num_regs), "spills": int(kern.local_size_bytes),
                                             "smem": BLOCK_SCALED.smem}}}
    out["checks"] = run_block_scaled_checks()
    out["speed"] = run_block_scaled_speed(sizes)
    out["errors"] = scaling_error_table()
    out["errors_large"] = scaling_error_table(shape=BLOCK_SCALED_LARGE_TABLE)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# --------------------------------------------------------------------------- reading the record
def _block_scaled(data: dict) -> dict:
    from ..errors import ResultsError

    if not isinstance(data, dict) or "block_scaled" not in data:
        raise ResultsError("this fp8 record has no block_scaled measurements (fp8_block_scaled).",
                           "re-record experiment fp8 on a Hopper GPU: python -m helpers.record --update-experiments fp8")
    return data["block_scaled"]


def block_scaled_speed_rows(data: dict, kernels=BLOCK_SCALED_TIMED) -> list[dict]:
    """The recorded speed of fp8_block_scaled beside cuBLASLt's FP8 GEMM and fp8_promote_128 at each size."""
    speed = _block_scaled(data)["speed"]
    rows = []
    for n in sorted({r["n"] for r in speed}):
        ref = {r["kernel"]: r["tflops"] for r in speed if r["n"] == n and "tflops" in r}
        lt, p128 = ref.get("cublaslt_fp8"), ref.get("fp8_promote_128")
        for r in speed:
            if r["n"] == n and "tflops" in r and r["kernel"] in kernels:
                rows.append({"n": n, "kernel": r["kernel"], "TFLOP/s": round(r["tflops"], 1),
                             "x cuBLASLt FP8": round(r["tflops"] / lt, 3) if lt else None,
                             "x promote_128": round(r["tflops"] / p128, 3) if p128 else None,
                             "SM MHz": r.get("sm_mhz"),
                             "check": {True: "pass", False: "FAIL"}.get(r.get("check_passed"), "-")})
    return rows


ERROR_COLUMNS = ("median rel. error", "median |err|/(|A||B|)", "max |err|/(|A||B|)", "normwise error")


def block_scaled_error_rows(data: dict, large: bool = False) -> list[dict]:
    """The recorded error table (scaling_error_table), with per tensor's median error over each row's."""
    rows = _block_scaled(data)["errors_large" if large else "errors"]
    med = {(r["inputs"], r["scaling"]): r["median rel. error"] for r in rows}
    out = []
    for r in rows:
        pt = med.get((r["inputs"], "per tensor"))
        out.append({"inputs": r["inputs"], "scaling": r["scaling"], "M x N x K": f"{r['M']} x {r['N']} x {r['K']}",
                    **{c: r[c] for c in ERROR_COLUMNS},
                    "per tensor / this (median)": round(pt / r["median rel. error"], 2) if pt else None})
    return out


def block_scaled_check_rows(data: dict) -> list[dict]:
    """The recorded checks of fp8_block_scaled, one row per shape and input kind."""
    return [{"M x N x K": f"{r['M']} x {r['N']} x {r['K']}", "inputs": r["inputs"], "elements": r["elements"],
             "differ from model": r["mismatches"], "differ from numpy model": r.get("cpu_model_mismatches", "-"),
             "check": "pass" if r["check_passed"] else "FAIL"} for r in _block_scaled(data)["checks"]]


def block_scaled_reject_rows(data: dict) -> list[dict]:
    """The recorded rejects: the kernel's C and wrong results, each through the bound alone and the whole
    check; [] where the record holds none."""
    rej = _block_scaled(data).get("rejects")
    if not rej:
        return []
    size = " x ".join(map(str, rej["shape"]))
    rows = [{"M x N x K": size, "C": "the kernel's", "bound alone": "-",
             "whole check": "pass" if rej["correct"] else "FAIL"}]
    for what, r in rej["rejected"].items():
        rows.append({"M x N x K": size, "C": what, "bound alone": "rejects" if r["by the bound alone"] else "passes",
                     "whole check": "rejects" if r["by the check"] else "passes"})
    return rows
