"""Lesson 4 (precision): how error grows with K, and how the tensor core adds.

Experiments: ``error_vs_k`` (componentwise error for K = 16 .. 16384 with five arithmetics, on seeded inputs
the CPU can rebuild), ``tc_probes`` (single mma_sync on chosen inputs that reveal the tensor core's arithmetic,
after Fasi et al. 2021 and Khattak & Mikaitis 2025) and ``emulator_match`` (a 1024^3 FP16 product compared bit
for bit with helpers.emulate). The inputs, probes and their emulation run on the CPU.
"""
from __future__ import annotations

import math
import time

import numpy as np

from . import experiment
from .. import emulate
from ..numerics import round_to

PREC_FILE = "precision.cu"

# --------------------------------------------------------------------------- error vs K
ERROR_KS = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
ERROR_MN = 64                       # M = N: 4096 dot products per point, cheap to emulate
ERROR_DISTS = ("uniform", "normal")

# name -> (input format, accumulator format, how the GPU computes it)
ARITHMETICS = {
    "fp16 in, fp16 acc": ("fp16", "fp16", "wmma_fp16acc_gemm_kernel"),
    "fp16 in, fp32 acc": ("fp16", "fp32", "wmma_mixed_gemm_kernel"),
    "bf16 in, fp32 acc": ("bf16", "fp32", "wmma_bf16_gemm_kernel"),
    "tf32 in, fp32 acc": ("tf32", "fp32", "wmma_tf32_gemm_kernel"),
    "fp32 FMA chain": ("fp32", "fp32", "gemm_fp32_kernel"),
}


def error_inputs(K: int, dist: str, M: int = ERROR_MN, N: int = ERROR_MN, seed: int = 4):
    """The float64 inputs of the error study at this K (same on every machine)."""
    if dist not in ERROR_DISTS:
        from ..errors import InputError

        raise InputError(f"dist={dist!r} is not one of the study's data sets {ERROR_DISTS}.",
                         "use dist='uniform' (U[0,1), errors add up) or dist='normal' (N(0,1)).")
    rng = np.random.default_rng([seed, K, ERROR_DISTS.index(dist)])
    if dist == "uniform":
        return rng.random((M, K)), rng.random((K, N))
    return rng.standard_normal((M, K)), rng.standard_normal((K, N))


def error_stats(C, A, B, A_r, B_r) -> dict:
    """Componentwise errors of C over |A||B|: accumulation (against the rounded inputs A_r, B_r) and total."""
    C = np.asarray(C, dtype=np.float64)
    scale = np.abs(A_r) @ np.abs(B_r)
    acc = np.abs(C - A_r @ B_r) / scale
    tot = np.abs(C - A @ B) / (np.abs(A) @ np.abs(B))
    return {"acc_median": float(np.median(acc)), "acc_max": float(acc.max()),
            "total_median": float(np.median(tot)), "total_max": float(tot.max())}


def emulate_arithmetic(name: str, A_r, B_r):
    """The CPU model of one arithmetic of ARITHMETICS on already-rounded inputs."""
    inputs, acc, _ = ARITHMETICS[name]
    if inputs == "fp32":
        return emulate.fp32_fma_chain(A_r.astype(np.float32), B_r.astype(np.float32))
    return emulate.tensor_core_gemm(A_r, B_r, inputs=inputs, acc=acc,
                                    model=emulate.model_for(inputs))


def _gpu_arithmetic(name, A_r, B_r):
    """Run one arithmetic of ARITHMETICS on the GPU through the course kernel (helpers.launch)."""
    import cupy

    from ..formats import to_bf16_bits
    from ..kernels import KERNELS
    from ..launch import launcher

    inputs, acc, kernel = ARITHMETICS[name]
    spec = KERNELS[kernel]
    if inputs == "bf16":   # BF16 kernels take the bit patterns (exact: A_r is already BF16)
        dA, dB = to_bf16_bits(A_r.astype(np.float32)), to_bf16_bits(B_r.astype(np.float32))
    else:
        dA, dB = A_r.astype(spec.in_dtype), B_r.astype(spec.in_dtype)
    run, C, (M, N) = launcher(kernel, cupy.asarray(dA), cupy.asarray(dB))
    run()
    return cupy.asnumpy(C[:M, :N])


def _error_rows(compute, Ks, M, dists) -> list[dict]:
    """The error study's rows, with compute(name, A_r, B_r) doing the product (GPU or CPU model)."""
    rows = []
    for dist in dists:
        for K in Ks or ERROR_KS:
            A, B = error_inputs(K, dist, M, M)
            for name, (inputs, _, _) in ARITHMETICS.items():
                A_r = round_to(A, inputs).astype(np.float64)
                B_r = round_to(B, inputs).astype(np.float64)
                C = compute(name, A_r, B_r)
                rows.append({"dist": dist, "arithmetic": name, "k": K, **error_stats(C, A, B, A_r, B_r)})
    return rows


def input_rounding_error(K: int, dist: str, fmt: str, M: int = ERROR_MN) -> float:
    """Median componentwise error that rounding the study's inputs to `fmt` causes on its own (exact products
    of the rounded inputs against the originals', over |A||B|): the term errors partly cancel, so it falls
    roughly like u_in / sqrt(K)."""
    A, B = error_inputs(K, dist, M, M)
    A_r, B_r = round_to(A, fmt).astype(np.float64), round_to(B, fmt).astype(np.float64)
    return float(np.median(np.abs(A_r @ B_r - A @ B) / (np.abs(A) @ np.abs(B))))


def tolerance_curve(Ks, arithmetic: str, n_checked: int = ERROR_MN * ERROR_MN) -> list[float]:
    """The course's tolerance for every K, as the arithmetic's kernel's check uses it (reference on the
    rounded inputs, as in the error study)."""
    from ..kernels import KERNELS
    from ..numerics import tolerance

    inputs, acc, kernel = ARITHMETICS[arithmetic]
    spec = KERNELS[kernel]
    return [tolerance(int(k), inputs, acc, acc_rounding=spec.acc_rounding, block=spec.acc_block,
                      inputs_rounded_in_reference=True, n_checked=n_checked).value for k in Ks]


@experiment("error_vs_k", min_cc=(8, 0), needs="its BF16 and TF32 rows run on BF16 and TF32 WMMA")
def error_vs_k(Ks=None, M=ERROR_MN):
    """Rows {dist, arithmetic, k, acc_median, acc_max, total_median, total_max} measured on the GPU."""
    return _error_rows(_gpu_arithmetic, Ks, M, ERROR_DISTS)


# --------------------------------------------------------------------------- probes
T = 2.0 ** -24   # fp16's smallest subnormal; also FP32's unit roundoff


def _case(name, fmt, acc, a, b, c, expect, question):
    return {"name": name, "fmt": fmt, "acc": acc, "a": [float(x) for x in a], "b": [float(x) for x in b],
            "c": float(c), "expect": {k: float(v) for k, v in expect.items()}, "question": question}


def probe_cases() -> list[dict]:
    """The probe inputs (a = row 0 of A, b = column 0 of B, c = C[0][0]; the answer is D[0][0]), `expect`
    mapping each hypothesis to the value it predicts. Sources: Fasi, Higham, Mikaitis & Pranesh, PeerJ
    Comput. Sci. 7:e330 (2021), sec. 4; Khattak & Mikaitis (2025)."""
    cs = []
    for fmt, (small, sub, eps) in {"fp16": (2.0 ** -24, 2.0 ** -24, 2.0 ** -11),
                                   "bf16": (2.0 ** -133, 2.0 ** -130, 2.0 ** -8),
                                   "tf32": (2.0 ** -136, 2.0 ** -130, 2.0 ** -11)}.items():
        cs.append(_case(f"{fmt}: subnormal input", fmt, "fp32", [sub], [2.0 ** 10], 0,
                        {"subnormals kept": sub * 2 ** 10, "flushed to zero": 0.0},
                        "is a subnormal input used, or flushed to zero?"))
        cs.append(_case(f"{fmt}: product exact", fmt, "fp32", [1 - eps], [1 - eps], 0,
                        {"exact product": (1 - eps) ** 2,
                         f"rounded to {fmt}": float(round_to(np.float64((1 - eps) ** 2), fmt))},
                        "is a product of two inputs kept exactly?"))
    for fmt in ("fp16", "bf16", "tf32"):
        q = 2.0 ** -23 + 2.0 ** -24 if fmt == "fp16" else 3 * 2.0 ** -24
        for sgn in (1, -1):
            cs.append(_case(f"{fmt}: rounding of the fp32 result{' (negative)' if sgn < 0 else ''}", fmt, "fp32",
                            [1, 1], [2 * sgn, q * sgn], 0,
                            {"toward zero": 2.0 * sgn, "to nearest": sgn * (2 + 2.0 ** -22),
                             "toward -inf": 2.0 if sgn > 0 else -(2 + 2.0 ** -22)},
                            "how is the FP32 result rounded: toward zero, to nearest, or down?"))
        cs.append(_case(f"{fmt}: final rounding with carry", fmt, "fp32", [1, 1, 1], [1, 1, 1],
                        1 + 2.0 ** -23 + 2.0 ** -22,
                        {"toward zero": 4.0, "to nearest": 4 + 2.0 ** -21},
                        "after a carry out of the top bit, is the result truncated or rounded?"))
        cs.append(_case(f"{fmt}: 3 carry bits", fmt, "fp32", [1, 1, 1, 1], [1, 1.5, 1.75, 1.875], 1.875,
                        {"enough carry bits": 8.0}, "does a sum that grows by 2^3 keep its top bits?"))
        # alignment bits: C is the big term; products are small
        cs.append(_case(f"{fmt}: 1 extra bit (c - p)", fmt, "fp32", [1], [1], -(1 - T),
                        {">= 1 extra bit": T, "no extra bit": 2 * T, "two's complement truncation": 0.0},
                        "is -(1 - 2^-24), aligned with a product of 1, kept exactly?"))
    # extra bits with the products small and c = 1 (fp16 and bf16 values below are exact)
    for fmt in ("fp16", "bf16", "tf32"):
        for e in (1, 2, 3, 4):
            b = [1.0] + [2.0 ** -j for j in range(1, e)] + [2.0 ** -(e - 1)]
            a = [T] * len(b)
            cs.append(_case(f"{fmt}: >= {e} extra bits", fmt, "fp32", a, b, 1.0,
                            {f">= {e} extra bits": 1 + 2 * T, f"< {e} extra bits": 1.0},
                            f"do products 2^-24 .. 2^-{24 + e - 1} next to c = 1 survive the alignment?"))
    # normalisation: is a product in [2, 4) x 2^e aligned by e (before normalisation) or by e + 1?
    for fmt in ("fp16", "bf16", "tf32"):
        n = 7
        cs.append(_case(f"{fmt}: products aligned before normalisation", fmt, "fp32", [1.5] + [T] * n,
                        [1.5] + [1.5] * n, 0,
                        {"unnormalised exponent": _rz32(2.25 + n * 1.5 * T), "normalised product": _rz32(2.25 + n * T)},
                        "is 1.5 x 1.5 = 2.25 aligned as 2.25 x 2^0 (before normalisation) or as 1.125 x 2^1?"))
    # block size: the small product at position j joins c's sum only inside the first block
    for fmt, kmax in (("fp16", 16), ("bf16", 16), ("tf32", 8)):
        for j in range(1, kmax):
            a = [1.0] + [0.0] * (j - 1) + [2.0 ** -23]
            b = [1.0] * (j + 1)
            cs.append(_case(f"{fmt}: block size, small product at k={j}", fmt, "fp32", a, b, 1 + 2.0 ** -23,
                            {"same block as c": 2 + 2.0 ** -22, "later block": 2.0},
                            "is the product at position k added in the same exact sum as the first?"))
    # products-only blocks: do the 16 products form sub-blocks rounded separately?
    for fmt in ("fp16", "bf16"):
        for j in range(1, 16):
            a = [1.0] + [0.0] * (j - 1) + [T]
            cs.append(_case(f"{fmt}: products 0 and {j}, c = 2^-24", fmt, "fp32", a, [1.0] * (j + 1), T,
                            {"one exact sum": 1 + 2 * T, "split": 1.0},
                            "with c = 0 and a tiny product at k, does 1 + 2^-24 + 2^-24 survive?"))
    # monotonicity: raising c from 1 - 2^-24 to 1 may lower the result (more bits dropped)
    for fmt in ("fp16", "bf16"):
        for s in (2.0 ** -25, 2.0 ** -26, 2.0 ** -27):
            a, b = [T] * 15, [s / T] * 15
            for c in (1 - T, 1.0):
                cs.append(_case(f"{fmt}: monotonicity, c = {'1 - 2^-24' if c < 1 else '1'}, 15 x {s:.3g}", fmt,
                                "fp32", a, b, c, {"exact, truncated to fp32": _rz32(c + 15 * s)},
                                "is the sum monotonic in c?"))
    # fp16 accumulator: rounding to nearest of the fp16 result
    cs.append(_case("fp16 acc: rounding of the fp16 result", "fp16", "fp16", [1, 1], [1, 2.0 ** -11 + 2.0 ** -12], 0,
                    {"to nearest": 1 + 2.0 ** -10, "toward zero": 1.0}, "how is an FP16 result rounded?"))
    cs.append(_case("fp16 acc: 2048 + 1", "fp16", "fp16", [1], [1], 2048,
                    {"to nearest even": 2048.0}, "does 2048 + 1 round back to 2048 in FP16?"))
    return cs


def _rz32(x: float) -> float:
    """x rounded toward zero to FP32."""
    r = np.float32(x)
    if abs(float(r)) > abs(x):
        r = np.nextafter(r, np.float32(0))
    return float(r)


def probe_tiles(case: dict):
    """A (16 x K), B (K x 16), C (16 x 16) float64 tiles for one probe; K = 8 for tf32."""
    K = 8 if case["fmt"] == "tf32" else 16
    A = np.zeros((16, K))
    B = np.zeros((K, 16))
    C = np.zeros((16, 16))
    A[0, :len(case["a"])] = case["a"]
    B[:len(case["b"]), 0] = case["b"]
    C[0, 0] = case["c"]
    return A, B, C


def emulate_probe(case: dict, model=None) -> float:
    """What the CPU tensor-core model answers for one probe."""
    A, B, C = probe_tiles(case)
    m = model or emulate.model_for(case["fmt"])
    D = emulate.tensor_core_mma(A[:1], B[:, :1], C[:1, :1], inputs=case["fmt"], acc=case["acc"], model=m)
    return float(D[0, 0])


_PROBE_KERNELS = {("fp16", "fp32"): ("tc_probe_f16_f32", (7, 0)), ("fp16", "fp16"): ("tc_probe_f16_f16", (7, 0)),
                  ("bf16", "fp32"): ("tc_probe_bf16_f32", (8, 0)), ("tf32", "fp32"): ("tc_probe_tf32_f32", (8, 0))}


def _run_probe_batch(cases):
    """Run probes of one (fmt, acc) kind in one launch; returns D[0][0] of each."""
    import cupy
    import ml_dtypes

    from ..compile import get_kernel

    fmt, acc = cases[0]["fmt"], cases[0]["acc"]
    name, cc = _PROBE_KERNELS[(fmt, acc)]
    tiles = [probe_tiles(c) for c in cases]
    A = np.stack([t[0] for t in tiles])
    B = np.stack([t[1] for t in tiles])
    C = np.stack([t[2] for t in tiles])
    if fmt == "fp16":
        dA, dB = cupy.asarray(A.astype(np.float16)), cupy.asarray(B.astype(np.float16))
    elif fmt == "bf16":
        dA = cupy.asarray(A.astype(ml_dtypes.bfloat16).view(np.uint16))
        dB = cupy.asarray(B.astype(ml_dtypes.bfloat16).view(np.uint16))
    else:
        dA, dB = cupy.asarray(A.astype(np.float32)), cupy.asarray(B.astype(np.float32))
    out_dt = np.float16 if acc == "fp16" else np.float32
    dC = cupy.asarray(C.astype(out_dt))
    dD = cupy.full(C.shape, np.nan, dtype=out_dt)
    get_kernel(PREC_FILE, name, cc)((len(cases),), (32,), (dA, dB, dC, dD))
    return [float(x) for x in cupy.asnumpy(dD)[:, 0, 0].astype(np.float64)]


def stagnation_inputs(K: int):
    """All-ones inputs: the exact dot product is K."""
    return np.ones((16, K)), np.ones((K, 16))


STAGNATION_KS = [1024, 2048, 4096, 8192, 16384, 32768, 65536]


@experiment("tc_probes", min_cc=(8, 0), needs="its BF16 and TF32 probes run on BF16 and TF32 WMMA")
def tc_probes():
    """{'probes': [case + measured], 'stagnation': [{k, fp16_acc, fp32_acc}]} on this GPU."""
    cases = probe_cases()
    groups: dict = {}
    for i, c in enumerate(cases):
        groups.setdefault((c["fmt"], c["acc"]), []).append(i)
    measured = [None] * len(cases)
    for idx in groups.values():
        try:
            vals = _run_probe_batch([cases[i] for i in idx])
        except Exception as exc:   # e.g. an old GPU without BF16/TF32 WMMA
            vals = [f"error: {type(exc).__name__}: {exc}"] * len(idx)
        for i, v in zip(idx, vals):
            measured[i] = v
    probes = [{**c, "measured": m} for c, m in zip(cases, measured)]
    stag = []
    for K in STAGNATION_KS:
        A, B = stagnation_inputs(K)
        row = {"k": K}
        for key, name in (("fp16_acc", "fp16 in, fp16 acc"), ("fp32_acc", "fp16 in, fp32 acc")):
            row[key] = float(np.asarray(_gpu_arithmetic(name, A, B), dtype=np.float64)[0, 0])
        stag.append(row)
    return {"probes": probes, "stagnation": stag}


# --------------------------------------------------------------------------- emulator match
def ulp_diff_f32(x, y) -> np.ndarray:
    """|x - y| in units in the last place of FP32 (distance on the ordered integer line)."""
    def key(v):
        i = np.asarray(v, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(key(x) - key(y))


def match_stats(gpu, emu) -> dict:
    """Fraction of bit-identical elements and the ulp differences between two FP32 arrays."""
    d = ulp_diff_f32(gpu, emu)
    vals, counts = np.unique(np.minimum(d, 4), return_counts=True)
    return {"elements": int(d.size), "identical": float(np.mean(d == 0)), "max_ulp": int(d.max()),
            "ulp_histogram": {("4+" if v == 4 else str(int(v))): int(c) for v, c in zip(vals, counts)}}


def candidate_models() -> dict:
    """Models the H200 fit compared: the fitted one, and one change at a time."""
    TCM = emulate.TensorCoreModel
    return {"fitted (block 16, 2 extra bits, unnormalised products)": emulate.DEFAULT_TC_MODEL,
            "normalised products (textbook)": TCM(16, 2, "t", normalised_products=True),
            "1 extra bit": TCM(16, 1, "t"), "3 extra bits": TCM(16, 3, "t"),
            "blocks of 8": TCM(8, 2, "t"),
            "truncation toward -inf (two's complement)": TCM(16, 2, "t", truncation="toward-minus-inf"),
            "FP32 result rounded to nearest": TCM(16, 2, "t", fp32_rounding="nearest"),
            "A100 parameters (Fasi et al.)": emulate.A100_MODEL}


def sample_fit(data: dict, models: dict | None = None) -> dict:
    """Fraction of the recorded raw corner (emulator_match's 'sample') each model reproduces."""
    n, seed = data["shape"][2], data["seed"]
    A, B = match_inputs(n, seed)
    r, c = data["sample"]["rows"], data["sample"]["cols"]
    g = np.array(data["sample"]["values"], dtype=np.float32).reshape(r, c)
    A, B = np.ascontiguousarray(A[:r]), np.ascontiguousarray(B[:, :c])
    return {name: float(np.mean(g == emulate.tensor_core_gemm(A, B, model=m)))
            for name, m in (models or candidate_models()).items()}


def match_inputs(n: int = 1024, seed: int = 2026):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)).astype(np.float16), rng.standard_normal((n, n)).astype(np.float16))


@experiment("emulator_match")
def emulator_match(n: int = 1024, seed: int = 2026):
    """WMMA FP32-accumulate on the GPU vs helpers.emulate on the host, bit for bit (n^3, N(0,1))."""
    import cupy

    from ..launch import launcher

    A, B = match_inputs(n, seed)
    out = {"shape": [n, n, n], "seed": seed, "dist": "standard normal, rounded to fp16",
           "kernel": "wmma_mixed_gemm_kernel", "model": str(emulate.model_for("fp16"))}
    run, C, _ = launcher("wmma_mixed_gemm_kernel", cupy.asarray(A), cupy.asarray(B))
    run()
    g = cupy.asnumpy(C)
    t0 = time.time()
    e = emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32", model=emulate.model_for("fp16"), threads=16)
    out["emulation_s"] = round(time.time() - t0, 2)
    out.update(match_stats(g, e))
    # a corner of the raw output, so the CPU can test models against real hardware (inputs: match_inputs)
    out["sample"] = {"rows": 32, "cols": 32, "values": [float(x) for x in g[:32, :32].ravel()]}
    # the hypotheses the fit rejected, on the first 128 rows (evidence for the lesson)
    out["candidates"] = {name: float(np.mean(g[:128] == emulate.tensor_core_gemm(
        A[:128], B, inputs="fp16", acc="fp32", model=m, threads=16))) for name, m in candidate_models().items()}
    # the same check for the FP16 accumulator (rounded to nearest, compared in fp16 ulps)
    A2, B2 = np.ascontiguousarray(A[:256]), np.ascontiguousarray(B[:, :256])
    run, C, _ = launcher("wmma_fp16acc_gemm_kernel", cupy.asarray(A2), cupy.asarray(B2))
    run()
    e16 = emulate.tensor_core_gemm(A2, B2, inputs="fp16", acc="fp16",
                                   model=emulate.model_for("fp16"), threads=16)
    out["fp16_acc_identical_256x256"] = float(np.mean(cupy.asnumpy(C).view(np.uint16) == e16.view(np.uint16)))
    return out


# --------------------------------------------------------------------------- for the notebook (CPU)
def emulated_error_vs_k(Ks=None, M: int = 32, dists=ERROR_DISTS) -> list[dict]:
    """error_vs_k's rows computed with the CPU models (same inputs, smaller M = N)."""
    return _error_rows(emulate_arithmetic, Ks, M, dists)


def curves(rows, dist: str, key: str = "acc_median"):
    """(Ks, {arithmetic: values}) from error_vs_k rows."""
    Ks = sorted({r["k"] for r in rows if r["dist"] == dist})
    out = {}
    for name in ARITHMETICS:
        v = {r["k"]: r[key] for r in rows if r["dist"] == dist and r["arithmetic"] == name}
        if v:
            out[name] = [v.get(k, math.nan) for k in Ks]
    return Ks, out


def recorded(name: str):
    """run_or_load(name), or None when the newest record does not hold it yet."""
    from ..errors import ResultsError
    from . import run_or_load

    try:
        return run_or_load(name)
    except ResultsError:
        return None


def fl(x: float, fmt: str) -> float:
    """x rounded to format fmt (one rounding to nearest even)."""
    return float(round_to(np.float64(x), fmt))


def sum_sequential(xs, fmt: str) -> float:
    """s = fl(s + x) for each x: a running sum in `fmt`, rounded after every addition."""
    s = 0.0
    for x in xs:
        s = fl(s + fl(x, fmt), fmt)
    return s


def sum_kahan(xs, fmt: str) -> float:
    """Kahan's compensated summation with every operation rounded to `fmt`."""
    s = c = 0.0
    for x in xs:
        y = fl(fl(x, fmt) - c, fmt)
        t = fl(s + y, fmt)
        c = fl(fl(t - s, fmt) - y, fmt)
        s = t
    return s


def sum_pairwise(xs, fmt: str) -> float:
    """Pairwise (tree) summation in `fmt`: error grows like log2(n) instead of n."""
    v = [fl(x, fmt) for x in xs]
    while len(v) > 1:
        nxt = [fl(v[i] + v[i + 1], fmt) for i in range(0, len(v) - 1, 2)]
        if len(v) % 2:
            nxt.append(v[-1])
        v = nxt
    return v[0] if v else 0.0


def stagnation_point(fmt: str, step: float = 1.0, limit: int = 1 << 20) -> float:
    """The value where s = fl(s + step) stops growing."""
    s = 0.0
    for _ in range(limit):
        t = fl(s + step, fmt)
        if t == s:
            return s
        s = t
    return math.inf
