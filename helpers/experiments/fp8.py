"""Lesson 7's measurements and their readers (kernels/fp8.cu, kernels/fp8_*sm90a.cu).

Experiment ``fp8`` (``python -m helpers.record --update-experiments fp8``): the designed probes through every
FP8 kernel, seeded products compared with the CPU model, error against K beside cuBLASLt's FP8 GEMM, speed,
and on Hopper fp8_block_scaled (experiments.fp8_scaled). Experiment ``fp8_convert``: the GPU's
cvt.rn.satfinite against helpers.fp8's casts, byte for byte. The readers turn the record into the lesson's
tables and figures.
"""
from __future__ import annotations

import numpy as np

# the designed inputs, the seeded ones and the check live with the kernels; the lesson calls them as fp8x.*
from ..fp8_gemm import BIG, check_fp8, cpu_model, probe_matrices, probe_vectors, random_inputs  # noqa: F401
from . import experiment

RANDOM_K = (32, 64, 96, 128, 160, 256, 512, 1024, 4096, 8192)
SWEEP_K = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
SPEED_N = (4096, 8192)
NVML_POWER = "W, NVML 1-s average (lags)"      # nvmlDeviceGetPowerUsage: on Hopper an average over the last second


# --------------------------------------------------------------------------- the experiment
def _gpu(kernel, A, B):
    import cupy

    from ..fp8_gemm import encode_e4m3, gemm_fp8

    return cupy.asnumpy(gemm_fp8(kernel, cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))))


def run_probes(kernels) -> dict:
    pr, A, B = probe_matrices()
    out = {"kind": [p["kind"] for p in pr], "param": [p["param"] for p in pr], "outputs": {}, "model_mismatches": {}}
    for k in kernels:
        C = np.diagonal(_gpu(k, A, B)).copy()
        out["outputs"][k] = [float(v) for v in C]
        out["model_mismatches"][k] = int((np.diagonal(cpu_model(k)(A, B)) != C).sum())
    return out


def _sig_bits(C) -> np.ndarray:
    """Significant bits of each value (from its leading bit down to its last 1 bit)."""
    C = np.asarray(C, dtype=np.float32)
    b = (C.view(np.uint32) & np.uint32(0x7FFFFF)).astype(np.int64)     # the stored fraction bits
    low = np.where(b == 0, 1 << 23, b & -b)                            # its lowest 1 bit (none: past the end)
    return np.where(C == 0, 0, 24 - np.log2(low).astype(np.int64))


def run_random(kernels) -> list[dict]:
    rows = []
    for dist in ("normal", "uniform01"):
        for i, K in enumerate(RANDOM_K):
            A, B = random_inputs(128, 128, K, "normal" if dist == "normal" else "uniform", 100 + i)
            for k in kernels:
                C = _gpu(k, A, B)
                rows.append({"dist": dist, "K": K, "kernel": k, "elements": int(C.size),
                             "mismatches": int((cpu_model(k)(A, B) != C).sum()), "max_sig_bits": int(_sig_bits(C).max())})
    return rows


def run_match_1024(kernels) -> list[dict]:
    A, B = random_inputs(1024, 1024, 1024, "normal", 2024)
    return [{"kernel": k, "m": 1024, "n": 1024, "k": 1024, "dist": "normal", "seed": 2024, "elements": int(C.size),
             "mismatches": int((cpu_model(k)(A, B) != C).sum())} for k in kernels for C in [_gpu(k, A, B)]]


def _torch_fp8(A8, Bt8, fast):
    """fp8_gemm.cublaslt_fp8 as ((launch, output, path), None), or (None, why not)."""
    from ..fp8_gemm import cublaslt_fp8

    try:
        t = cublaslt_fp8(A8, Bt8, fast)
    except Exception as exc:  # noqa: BLE001 - report, do not stop the experiment
        return None, f"{type(exc).__name__}: {exc}"[:300]
    if t is None:
        return None, "neither nvmath-python nor PyTorch is installed (cuBLASLt's FP8 GEMM goes through one of them)"
    return t, None


def run_sweep(kernels) -> list[dict]:
    import cupy

    from ..fp8_gemm import encode_e4m3, gemm_fp8
    rows = []
    for dist in ("normal", "uniform01"):
        for i, K in enumerate(SWEEP_K):
            A, B = random_inputs(256, 256, K, "normal" if dist == "normal" else "uniform", 500 + i)
            A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
            Ad, Bd = cupy.asarray(A), cupy.asarray(B)
            R, absAB = Ad @ Bd, cupy.abs(Ad) @ cupy.abs(Bd)

            def stats(C):
                e = cupy.abs(C.astype(cupy.float64) - R)
                n, r = e / absAB, e / cupy.maximum(cupy.abs(R), 1e-300)
                return {"nan": int(cupy.isnan(C).sum()), "med_norm": float(cupy.median(n)), "max_norm": float(n.max()),
                        "med_rel": float(cupy.median(r)), "p99_rel": float(cupy.percentile(r, 99))}
            for k in kernels:
                rows.append({"dist": dist, "K": K, "kernel": k, **stats(gemm_fp8(k, A8, Bt8))})
            for fast in (False, True):
                name = "cublaslt_fp8_fast" if fast else "cublaslt_fp8"
                t, err = _torch_fp8(A8, Bt8, fast)
                rows.append({"dist": dist, "K": K, "kernel": name, "path": t[2],
                             **stats(cupy.from_dlpack(t[1].contiguous()))} if t is not None
                            else {"dist": dist, "K": K, "kernel": name, "skipped": err})
    return rows


def run_speed(kernels, rounds: int = 1) -> list[dict]:
    """At each size in SPEED_N: cuBLAS FP16, cuBLASLt FP8 (default and fast accumulation) and `kernels` (each
    checked first), timed by helpers.timing.benchmark. rounds > 1: all are timed once per round, in turn (so a
    slow spell of the clock touches every kernel), and each row holds the median round and every round's."""
    import cupy

    from ..fp8_gemm import encode_e4m3, launcher
    from ..timing import benchmark, gemm_flops

    rows = []
    for n in SPEED_N:
        A, B = random_inputs(n, n, n, "normal", n)
        A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
        gA, gB = cupy.asarray(A), cupy.asarray(B)              # the check's float64 work runs on the GPU
        Ah, Bh = cupy.asarray(A.astype(np.float16)), cupy.asarray(B.astype(np.float16))
        todo = [("cublas_fp16", lambda X=Ah, Y=Bh: cupy.matmul(X, Y), {})]     # (name, launch, extra)
        for fast in (False, True):
            name = "cublaslt_fp8_fast" if fast else "cublaslt_fp8"
            t, err = _torch_fp8(A8, Bt8, fast)
            if t is None:
                rows.append({"kernel": name, "n": n, "skipped": err})
            else:
                todo.append((name, t[0], {"path": t[2]}))
        for k in kernels:
            if k == "fp8_mma_sync" and n > 4096:
                continue
            fn, C = launcher(k, A8, Bt8)             # C starts as NaN: the check sees unwritten elements
            fn()
            chk = check_fp8(k, C, gA, gB, backend="GPU")
            todo.append((k, fn, {"check_passed": bool(chk.passed), "check": chk.verdict()[:300]}))
        del gA, gB
        runs = {name: [] for name, _, _ in todo}
        for _ in range(max(1, rounds)):
            for name, fn, _ in todo:
                runs[name].append(benchmark(fn, flops=gemm_flops(n, n, n)))
        for name, _, extra in todo:
            t = sorted(runs[name], key=lambda t: t.median_ms)[(len(runs[name]) - 1) // 2]
            if rounds > 1:
                extra = {**extra, "rounds": len(runs[name]), "round_ms": [r.median_ms for r in runs[name]],
                         "round_mhz": [(r.clocks or {}).get("sm_mhz") for r in runs[name]]}
            rows.append({"kernel": name, "n": n, "tflops": t.tflops, "median_ms": t.median_ms, "p10_ms": t.p10_ms,
                         "p90_ms": t.p90_ms, "reps": t.n, **(t.clocks or {}), **extra})
        del Ah, Bh
    return rows


@experiment("fp8", min_cc=(8, 9), needs="FP8 Tensor Cores (mma.sync on sm_89, wgmma on sm_90a)")
def fp8_experiment():
    """Lesson 7's measurements (see the module docstring)."""
    from ..compile import get_arch_kernel, get_kernel
    from ..device import require_gpu
    from ..fp8_gemm import FP8_KERNELS
    from .fp8_scaled import run_block_scaled

    gpu = require_gpu("experiment fp8")
    kernels = [k for k, s in FP8_KERNELS.items() if gpu.cc >= s.min_cc and (not s.wgmma or gpu.cc == (9, 0))]
    resources = {}
    for k in kernels:
        s = FP8_KERNELS[k]
        kern = (get_arch_kernel(s.file, k, (9, 0), options=s.build_options()) if s.wgmma
                else get_kernel(s.file, k, s.min_cc))
        resources[k] = {"regs": int(kern.num_regs), "spills": int(kern.local_size_bytes), "smem": s.smem}
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    out = {"kernels": kernels, "resources": resources, "torch": torch_version,
           "probes": run_probes(kernels), "random": run_random(kernels), "match_1024": run_match_1024(kernels),
           "sweep": run_sweep(kernels), "speed": run_speed(kernels)}
    if gpu.cc == (9, 0):                          # fp8_block_scaled is sm_90a code, as the wgmma kernels
        out["block_scaled"] = {"note": "helpers.experiments.fp8_scaled.run_block_scaled, in experiment fp8", **run_block_scaled()}
    return out


# --------------------------------------------------------------------------- the GPU's conversion
def conversion_inputs(seed: int = 0) -> np.ndarray:
    """FP32 values for the conversion check: specials, every E4M3 and E5M2 number and the midpoints between
    neighbours, values past the largest, and log-uniform random values of both signs from 2^-20 to 2^20."""
    from ..fp8 import patterns

    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 480.0, 500.0, 57344.0, 61440.0, 65536.0, 1e30]
    for name in ("fp8_e4m3", "fp8_e5m2"):
        _, v = patterns(name)
        v = np.sort(np.unique(v[np.isfinite(v)]))
        vals += list(v) + list((v[1:] + v[:-1]) / 2)
    rng = np.random.default_rng(seed)
    r = np.exp2(rng.uniform(-20, 20, 100000)) * rng.choice([-1.0, 1.0], 100000)
    x = np.concatenate([np.array(vals, dtype=np.float64), r]).astype(np.float32)
    return np.concatenate([x, -x])


def gpu_convert(x: np.ndarray):
    """The GPU's cvt.rn.satfinite of FP32 values x to E4M3 and E5M2 bytes (kernels/fp8.cu fp8_convert)."""
    import cupy

    from ..compile import get_kernel

    k = get_kernel("fp8.cu", "fp8_convert", min_cc=(8, 9))
    gx = cupy.asarray(np.asarray(x, dtype=np.float32))
    e4, e5 = cupy.zeros(gx.size, cupy.uint8), cupy.zeros(gx.size, cupy.uint8)
    k(((gx.size + 255) // 256,), (256,), (gx, e4, e5, np.int32(gx.size)))
    return cupy.asnumpy(e4), cupy.asnumpy(e5)


@experiment("fp8_convert", min_cc=(8, 9), needs="cvt.rn.satfinite to FP8")
def fp8_convert_experiment():
    """Where the GPU's cvt.rn.satfinite differs from helpers.fp8.saturating_cast and from numpy's cast."""
    from ..fp8 import cast, saturating_cast

    x = conversion_inputs()
    out = {"values": int(x.size)}
    e4, e5 = gpu_convert(x)
    for name, got in (("fp8_e4m3", e4), ("fp8_e5m2", e5)):
        dt = cast(np.zeros(1), name).dtype
        sat, plain = saturating_cast(x, name).view(np.uint8), cast(x, name).view(np.uint8)
        gv = got.view(dt)
        nan = lambda b: np.isnan(b.view(dt).astype(np.float32))      # noqa: E731  (NaN has several bit patterns)
        diff = ~((got == sat) | (nan(got) & nan(sat)))
        differs_plain = ~((got == plain) | (nan(got) & nan(plain)))
        out[name] = {"differ_from_saturating_cast": int(diff.sum()),
                     "examples_differing": [[float(v), int(g), int(s)] for v, g, s in
                                            zip(x[diff][:8], got[diff][:8], sat[diff][:8])],
                     "differ_from_numpy_cast": int(differs_plain.sum()),
                     "examples_numpy_differs": [[float(v), float(gv[i].astype(np.float32)),
                                                 float(plain.view(dt)[i].astype(np.float32))]
                                                for i, v in zip(np.flatnonzero(differs_plain)[:6], x[differs_plain][:6])],
                     "gpu_of": {str(v): float(gv[np.flatnonzero(x == np.float32(v))[0]].astype(np.float32))
                                for v in (500.0, 1e30, np.inf, -np.inf)}}
    return out


# --------------------------------------------------------------------------- reading the record
def _probe_outputs(data: dict, kind: str, kernel: str):
    pr = data["probes"]
    sel = [i for i, k in enumerate(pr["kind"]) if k == kind]
    return [pr["param"][i] for i in sel], [pr["outputs"][kernel][i] for i in sel]


def gap_rows(data: dict, kind: str = "gap_same_block", kernels=("fp8_wgmma", "fp8_mma_sync")) -> list[dict]:
    """For each gap g: the small term 2^(16-g) (or +-1.875 x 2^(16-g)) and what each kernel kept of it."""
    small = {p["param"]: p["small"] for p in probe_vectors() if p["kind"] == kind}
    rows = {}
    for k in kernels:
        for g, v in zip(*_probe_outputs(data, kind, k)):
            rows.setdefault(g, {"gap g": g, "small term": small[g]})[k] = v - BIG
    return [rows[g] for g in sorted(rows)]


def bits_kept(data: dict, kernel: str) -> int:
    """Bits kept from the large term's leading bit down: 1 + the largest gap g at which 2^(16-g) survives
    whole next to 2^16."""
    gs, outs = _probe_outputs(data, "gap_same_block", kernel)
    return max(g for g, v in zip(gs, outs) if v - BIG == 2.0 ** (16 - g)) + 1


def block_survivors(data: dict, kernel: str, upto: int = 40) -> list[int]:
    """Positions i < upto at which 2^-18 survived after +2^16 and -2^16 at positions 0 and 1."""
    gs, outs = _probe_outputs(data, "block", kernel)
    return [i for i, v in zip(gs, outs) if v != 0 and i < upto]


def max_significant_bits(data: dict) -> dict:
    """The most significant bits any output of each kernel had, over all recorded random products."""
    out: dict = {}
    for r in data["random"]:
        out[r["kernel"]] = max(out.get(r["kernel"], 0), r["max_sig_bits"])
    return out


def match_rows(data: dict) -> list[dict]:
    """Per kernel of FP8_KERNELS: elements compared with the CPU model and how many differed."""
    from ..fp8_gemm import FP8_KERNELS

    rows = {}
    for r in data["random"]:
        d = rows.setdefault(r["kernel"], {"kernel": r["kernel"], "random products": 0, "elements": 0, "differ": 0})
        d["random products"] += 1
        d["elements"] += r["elements"]
        d["differ"] += r["mismatches"]
    for r in data["match_1024"]:
        rows[r["kernel"]]["1024^3 elements"] = r["elements"]
        rows[r["kernel"]]["1024^3 differ"] = r["mismatches"]
    for k, n in data["probes"]["model_mismatches"].items():
        rows[k]["probes differ"] = n
    return [r for k, r in rows.items() if k in FP8_KERNELS]


def sweep_rows(data: dict, K: int, dist: str) -> list[dict]:
    """Error of every kernel at one K and distribution (the recorded sweep)."""
    return [{"kernel": r["kernel"], "median rel. error": r["med_rel"], "99th pct rel. error": r["p99_rel"],
             "max |err|/(|A||B|)": r["max_norm"]}
            for r in data["sweep"] if r["K"] == K and r["dist"] == dist and "med_rel" in r]


def speed_of(data: dict) -> list[dict]:
    """The record's latest timing of every kernel: `speed_period` (the F8_PERIOD=2 build) where it holds one,
    else `speed`."""
    return data["speed_period"]["rows"] if "speed_period" in data else data["speed"]


def speed_rows(data: dict, peak: float | None = None, rows: list[dict] | None = None) -> list[dict]:
    """TFLOP/s of every kernel and of cuBLAS at each size (default speed_of(data)), with the ratios, the clock
    and NVML's power."""
    rows = speed_of(data) if rows is None else rows
    out = []
    for n in sorted({r["n"] for r in rows}):
        at = [r for r in rows if r["n"] == n and "tflops" in r]
        lt = next((r["tflops"] for r in at if r["kernel"] == "cublaslt_fp8"), None)
        for r in at:
            out.append({"n": n, "kernel": r["kernel"], "TFLOP/s": round(r["tflops"], 1),
                        "x cuBLASLt FP8": round(r["tflops"] / lt, 3) if lt else None,
                        "of FP8 peak": round(r["tflops"] / peak, 3) if peak else None,
                        "SM MHz": r.get("sm_mhz"), NVML_POWER: r.get("power_w"),
                        "check": {True: "pass", False: "FAIL"}.get(r.get("check_passed"), "-")})
    return out




GOAL_KERNELS = ("fp8_promote_2acc_lean", "fp8_wgmma_store")     # the FP8 speed goals' kernels (Appendix H)


def goals_by_gpu(records, kernels=GOAL_KERNELS) -> list[dict]:
    """The FP8 speed goals of every record that holds them (`fp8`'s `speed_goals`: alternating rounds) side by side:
    per size and kernel, one column per GPU (its name without 'NVIDIA '), the median of the round-by-round ratios
    of cuBLASLt's FP8 time to the kernel's (above 1: the kernel faster)."""
    from ..timing import round_ratio

    out = {}
    for rec in records:
        goals = rec.meta.get("experiments", {}).get("fp8", {}).get("speed_goals")
        if not goals:
            continue
        gpu = rec.gpu_short
        t = {(r["kernel"], r["n"]): r for r in goals["rows"] if r.get("round_ms")}
        for (k, n), r in t.items():
            lt = t.get(("cublaslt_fp8", n))
            if k in kernels and lt:
                rr = round_ratio(r["round_ms"], lt["round_ms"])
                out.setdefault((n, kernels.index(k)), {"n": n, "kernel": k})[gpu] = \
                    f"x{rr['ratio']:.3f} ({rr['won']} of {rr['rounds']} rounds faster)"
    return [out[key] for key in sorted(out)]


def goals_notes(records) -> list[str]:
    """For each record that holds the speed goals and whose FP8 kernels' tensor maps asked L2 for another amount per
    miss than the course's do now: the GPU and what they asked for."""
    return [f"{r.gpu_short}: {r.maps_note('fp8')}" for r in records
            if r.meta.get("experiments", {}).get("fp8", {}).get("speed_goals") and r.maps_note("fp8")]


def period_rows(data: dict) -> list[dict]:
    """fp8_promote_256 and _512 in each build the record timed (F8_PERIOD 0 in `speed`, 2 in `speed_period`),
    each over fp8_promote_128 in the same run."""
    runs = [(0, data["speed"]), (2, data["speed_period"]["rows"])] if "speed_period" in data else [(2, data["speed"])]
    out = []
    for build, rows in runs:
        t = {(r["n"], r["kernel"]): r for r in rows if "tflops" in r}
        for n, k in sorted(key for key in t if key[1] in ("fp8_promote_256", "fp8_promote_512")):
            out.append({"n": n, "kernel": k, "build": build, "tflops": t[n, k]["tflops"],
                        "vs_128": t[n, k]["tflops"] / t[n, "fp8_promote_128"]["tflops"]})
    return out


def try_period(builds=(0, 2), kernel: str = "fp8_promote_256", n: int = 4096, rounds: int = 3) -> list[dict]:
    """On a Hopper GPU: `kernel` built with each F8_PERIOD in `builds` beside fp8_promote_128, each checked and
    timed in `rounds` alternating rounds at n^3; rows of build, check, TFLOP/s and that over fp8_promote_128's.
    Elsewhere: the record's rows at 4096^3 (period_rows), marked "recorded"."""
    from ..device import backend
    from ..errors import InputError

    if kernel not in ("fp8_promote_256", "fp8_promote_512"):
        raise InputError(f"F8_PERIOD changes fp8_promote_256 and fp8_promote_512, not {kernel!r}.",
                         "pass kernel='fp8_promote_256' or kernel='fp8_promote_512'.")
    if not builds or any(b not in (0, 2) for b in builds):
        raise InputError(f"builds={builds!r}: F8_PERIOD is 0 (the period decided at run time) or 2 (the default).",
                         "pass e.g. builds=(0, 2).")
    gpu = backend().gpu
    if gpu is None or tuple(gpu.cc) != (9, 0):
        from ..results import load_latest

        return [{"build": r["build"], "check": "recorded", "tflops": r["tflops"], "vs_128": r["vs_128"]}
                for r in period_rows(load_latest().meta["experiments"]["fp8"])
                if r["kernel"] == kernel and r["n"] == 4096 and r["build"] in builds]
    import cupy

    from ..fp8_gemm import encode_e4m3, launcher
    from ..timing import alternating, gemm_flops

    A, B = random_inputs(n, n, n, "normal", n)
    A8, Bt8 = cupy.asarray(encode_e4m3(A)), cupy.asarray(encode_e4m3(B.T.copy()))
    gA, gB = cupy.asarray(A), cupy.asarray(B)
    runs, checks = {}, {}
    for b in (*builds, "fp8_promote_128"):
        k, opts = (b, ()) if isinstance(b, str) else (kernel, (f"-DF8_PERIOD={b}",))
        run, C = launcher(k, A8, Bt8, options=opts)
        run()
        checks[b] = check_fp8(k, C, gA, gB, backend="GPU").verdict().split(" ")[0]
        runs[b] = run
    fl = gemm_flops(n, n, n)
    ms = {b: float(np.median(v["ms"])) for b, v in alternating(runs, fl, rounds).items()}
    return [{"build": b, "check": checks[b], "tflops": fl / ms[b] / 1e9, "vs_128": ms["fp8_promote_128"] / ms[b]}
            for b in builds]


def sass_excerpt(kernel: str = "fp8_mma_sync", patterns=("F2FP", "HMMA", "FADD"), per: int = 2) -> list[str]:
    """The first `per` instructions of each kind in `patterns` of `kernel`'s SASS for the H200
    (results/build-nvidia-h200/fp8.sm_90.sass, from tools/kernel_dumps.sh)."""
    from ..analysis import sass_instructions
    from ..results import RESULTS_DIR

    out, seen = [], dict.fromkeys(patterns, 0)
    for k, _, text, op in sass_instructions(RESULTS_DIR / "build-nvidia-h200" / "fp8.sm_90.sass"):
        for p in patterns:
            if k == kernel and op.startswith(p) and seen[p] < per:
                seen[p] += 1
                out.append(text + " ;")
    return out


def promotion_loop(kernel: str = "fp8_promote_128") -> str:
    """fp8_promote_128's promotion loop, whole, as kernels/fp8_promote_sm90a.cu has it: the interval's constants,
    the accumulators, their zeroing at each output tile, and the consumer's K loop that fp8_gemm<128> compiles
    (the branch for NC >= 128 of one K-tile or more per promotion; F8_PERIOD's branch is for 256 and 512, the
    other for NC < 128)."""
    import re

    from ..display import block_end, device_functions, kernel_source

    call = re.search(r"\bfp8_gemm\s*<([^>]*)>\s*\(", kernel_source("fp8_promote_sm90a.cu", kernel))
    if not call or call.group(1).strip() != "128":
        raise ValueError(f"{kernel} is not fp8_gemm<128>: promotion_loop shows fp8_promote_128's loop only")
    lines = device_functions("fp8_promote_sm90a.cu", headers=False)["fp8_gemm"].splitlines()
    strip = [ln.strip() for ln in lines]
    consts = [s for s in strip if s.startswith(("constexpr int EVERY =", "constexpr int PSTAGES ="))]
    decls = [s for s in strip if s.startswith(("float d[NREG];", "float total[NREG];"))]
    inits = [s for s in strip if s in ("for (int i = 0; i < NREG; ++i) total[i] = 0.0f;", "int prev = -1;")]
    branch = strip.index("} else if constexpr (EVERY >= KSTEPS) {")
    start = branch + 1 + (not strip[branch + 1].startswith("for ("))      # past the branch's comment line
    pad = len(lines[start]) - len(lines[start].lstrip())
    shown = [ln[pad:] if ln.startswith(" " * pad) else ln for ln in lines[start:block_end(lines, start) + 1]]
    return "\n".join(consts + decls + ["// at each output tile, before its K loop:"] + inits + shown)


def plot_error_vs_k(data: dict, source: str, dists=("normal", "uniform01")):
    """Median relative error against K, per kernel (log-log), one panel per input distribution."""
    import matplotlib.pyplot as plt

    styles = {"fp8_wgmma": ("C3", "-", "wgmma, no promotion"), "fp8_mma_sync": ("C2", "-", "mma.sync (via FP16 HMMA)"),
              "cublaslt_fp8": ("k", "none", "cuBLASLt FP8 (x: on promote-128's line)"),
              "cublaslt_fp8_fast": ("0.5", ":", "cuBLASLt FP8, fast accum")}
    for i, nc in enumerate((32, 64, 128, 256, 512)):
        styles[f"fp8_promote_{nc}"] = (plt.cm.viridis(0.15 + 0.17 * i), "--", f"promote every {nc}")
    fig, axes = plt.subplots(1, len(dists), figsize=(6.2 * len(dists), 4.2), sharey=True)
    for ax, dist in zip(np.atleast_1d(axes), dists):
        for k, (c, ls, lab) in styles.items():
            pts = sorted((r["K"], r["med_rel"]) for r in data["sweep"]
                         if r["kernel"] == k and r["dist"] == dist and r.get("med_rel", 0) > 0)
            if pts:
                ax.loglog(*zip(*pts), color=c, ls=ls, marker="x" if ls == "none" else ".", label=lab)
        ax.set_title(f"{'N(0,1)' if dist == 'normal' else 'U[0,1)'} inputs")
        ax.set_xlabel("K")
        ax.grid(True, which="major", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("median |C - AB| / |AB| (0 not drawn)")
    np.atleast_1d(axes)[-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
    fig.suptitle(f"FP8 GEMM error against K (256 x 256 outputs; {source})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_cost(data: dict, source: str, n: int = 8192, K: int = 4096, dist: str = "uniform01"):
    """Speed at n^3 (speed_of(data)) against error at K: what each promotion interval N_C costs and buys."""
    import matplotlib.pyplot as plt

    err = {r["kernel"]: r["med_rel"] for r in data["sweep"] if r["K"] == K and r["dist"] == dist and "med_rel" in r}
    spd = {r["kernel"]: r["tflops"] for r in speed_of(data) if r["n"] == n and "tflops" in r}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for k in spd:
        if k in err and err[k] > 0:
            ax.scatter(err[k], spd[k], color="k" if "cublas" in k else ("C0" if "promote" in k else "C3"))
            ax.annotate(k.replace("fp8_", ""), (err[k], spd[k]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(f"median relative error, K = {K}, {'U[0,1)' if dist == 'uniform01' else 'N(0,1)'} inputs")
    ax.set_ylabel(f"TFLOP/s at {n}^3")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"What accuracy costs ({source})", fontsize=10)
    fig.tight_layout()
    return fig
