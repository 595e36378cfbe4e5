"""Lesson 3 (mixed precision): its experiments, tables and figures.

``tf32_env``: an FP32 cupy.matmul and explicit cublasGemmEx calls (COMPUTE_32F, COMPUTE_32F_FAST_TF32) under
every combination of CUPY_TF32 and NVIDIA_TF32_OVERRIDE, each in a fresh process (CuPy and the CUDA libraries
read them once), with a verdict, TF32 or FP32, from the error alone. ``mixed_emulator_probe``: the BF16 and
TF32 WMMA kernels compared element by element with the CPU model under several block sizes and alignment bits.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np

from . import experiment
from ..numerics import FORMATS
from ..paths import IMPORT_ROOT as ROOT, child_env

TF32_ENV_SIZE = 2048
# (CUPY_TF32, NVIDIA_TF32_OVERRIDE); None = unset
TF32_ENV_CASES = [(c, o) for c in (None, "1") for o in (None, "0", "1")]


def tf32_threshold() -> float:
    """Relative errors above this mean TF32 inputs: the geometric mean of the FP32 and TF32
    unit roundoffs (the two errors sit orders of magnitude apart on either side)."""
    return math.sqrt(FORMATS["fp32"].unit_roundoff * FORMATS["tf32"].unit_roundoff)


def verdict(rel_err: float) -> str:
    return "TF32" if rel_err > tf32_threshold() else "FP32"


_CHILD = r"""
import json, os, sys
import numpy as np
import cupy
from helpers.timing import benchmark
from helpers.numerics import reference_gemm, rel_fro_error
from helpers.cublas import gemm_ex, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32

n = int(sys.argv[1])
rng = cupy.random.default_rng(1234)
A = rng.standard_normal((n, n), dtype=cupy.float32)
B = rng.standard_normal((n, n), dtype=cupy.float32)
ref = reference_gemm(A, B)
out = {}
def timed(C, fn):                     # error (before timing), median time, the clocks read while timed
    err = rel_fro_error(C, ref)
    t = benchmark(fn)
    return {"rel_err": err, "median_ms": t.median_ms, "clocks": t.clocks or {}}
C = cupy.matmul(A, B)
out["cupy.matmul"] = timed(C, lambda: cupy.matmul(A, B, out=C))
for label, ct in (("gemmEx COMPUTE_32F", CUBLAS_COMPUTE_32F),
                  ("gemmEx COMPUTE_32F_FAST_TF32", CUBLAS_COMPUTE_32F_FAST_TF32)):
    C2 = cupy.empty_like(C)
    gemm_ex(A, B, compute=ct, C=C2)
    out[label] = timed(C2, lambda: gemm_ex(A, B, compute=ct, C=C2))
try:
    from cupy._core import _routines_linalg as _rl
    out["cupy_compute_type"] = int(_rl.get_compute_type(np.float32))
except Exception as exc:  # internal API; informative only
    out["cupy_compute_type"] = repr(exc)
print("RESULT " + json.dumps(out))
"""


def _child_env(cupy_tf32, override) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CUPY_TF32", "NVIDIA_TF32_OVERRIDE")}
    if cupy_tf32 is not None:
        env["CUPY_TF32"] = cupy_tf32
    if override is not None:
        env["NVIDIA_TF32_OVERRIDE"] = override
    return child_env(env)


@experiment("tf32_env", min_cc=(8, 0), needs="TF32 Tensor Cores")
def tf32_env(n: int = TF32_ENV_SIZE, timeout: float = 120.0):
    """FP32 GEMM error and time under each TF32 switch."""
    rows = []
    for cupy_tf32, override in TF32_ENV_CASES:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(n)], env=_child_env(cupy_tf32, override),
                              cwd=str(ROOT), capture_output=True, text=True, timeout=timeout)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            raise RuntimeError(f"tf32_env child failed (CUPY_TF32={cupy_tf32}, NVIDIA_TF32_OVERRIDE={override}):\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        res = json.loads(line[len("RESULT "):])
        for call in ("cupy.matmul", "gemmEx COMPUTE_32F", "gemmEx COMPUTE_32F_FAST_TF32"):
            r = res[call]
            rows.append({"CUPY_TF32": cupy_tf32 or "unset", "NVIDIA_TF32_OVERRIDE": override or "unset",
                         "call": call, "n": n, "rel_err": float(f"{r['rel_err']:.4e}"),
                         "median_ms": round(float(r["median_ms"]), 5),
                         "tflops": round(2.0 * n ** 3 / (r["median_ms"] * 1e-3) / 1e12, 3),
                         "verdict": verdict(r["rel_err"]),
                         "cupy_compute_type": res.get("cupy_compute_type"), **(r.get("clocks") or {})})
    return rows


# --------------------------------------------------------------------------- emulator probe
PROBE_SHAPE = (128, 128, 1024)
PROBE_BLOCKS = (4, 8, 16, 32)
PROBE_EXTRA = (0, 1, 2, 3)


def probe_inputs(seed: int = 21):
    """The probe's FP32 inputs (seeded numpy: the CPU can rebuild them)."""
    M, N, K = PROBE_SHAPE
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)


def emulate_variants(kernel: str, A, B):
    """{label: emulated C} for every model the probe compares (CPU only)."""
    from .. import emulate
    from ..formats import from_bf16_bits, round_tf32_rna, to_bf16_bits
    from ..numerics import round_tf32

    out = {}
    if kernel == "wmma_bf16_gemm_kernel":
        Ar, Br = from_bf16_bits(to_bf16_bits(A)), from_bf16_bits(to_bf16_bits(B))
        inputs, roundings = "bf16", {"": (Ar, Br)}
    else:
        inputs = "tf32"
        roundings = {"": (round_tf32_rna(A), round_tf32_rna(B)), "_rne": (round_tf32(A), round_tf32(B))}
    for suffix, (Ar, Br) in roundings.items():
        for blk in PROBE_BLOCKS:
            for extra in PROBE_EXTRA:
                if suffix and extra != 2:      # the other input rounding: one alignment setting is enough
                    continue
                m = emulate.TensorCoreModel(blk, extra, "probe")
                out[f"b{blk}_e{extra}{suffix}"] = emulate.tensor_core_gemm(Ar, Br, inputs=inputs, acc="fp32", model=m)
    return out


@experiment("mixed_emulator_probe", min_cc=(8, 0), needs="BF16 and TF32 WMMA")
def mixed_emulator_probe(seed: int = 21):
    """Fraction of elements where the GPU kernel equals each emulation model, bit for bit."""
    import cupy

    from ..formats import to_bf16_bits
    from ..launch import launcher

    A, B = probe_inputs(seed)
    out = {"shape": list(PROBE_SHAPE), "seed": seed}
    for kernel in ("wmma_bf16_gemm_kernel", "wmma_tf32_gemm_kernel"):
        if kernel == "wmma_bf16_gemm_kernel":
            Ad, Bd = cupy.asarray(to_bf16_bits(A)), cupy.asarray(to_bf16_bits(B))
        else:
            Ad, Bd = cupy.asarray(A), cupy.asarray(B)
        run, C, _ = launcher(kernel, Ad, Bd)
        run()
        g = cupy.asnumpy(C)
        res = {label: float(np.mean(g == e)) for label, e in emulate_variants(kernel, A, B).items()}
        best = max(res, key=res.get)
        out[kernel] = {"identical": res, "best": best}
    return out


# --------------------------------------------------------------------------- notebook helpers (CPU)
# every GEMM variant of the lesson (wmma_gemm_naive is wmma_mixed_gemm_kernel's loop), with a short label
VARIANTS = {
    "gemm_fp32_kernel": "FP32 CUDA cores (seed)",
    "wmma_mixed_gemm_kernel": "WMMA FP16 in, FP32 acc (seed)",
    "wmma_fp16acc_gemm_kernel": "WMMA FP16 in, FP16 acc",
    "wmma_bf16_gemm_kernel": "WMMA BF16 in, FP32 acc",
    "wmma_tf32_gemm_kernel": "WMMA TF32 in, FP32 acc",
    "cublas_fp32": "cuBLAS FP32",
    "cublas_tf32": "cuBLAS TF32",
    "cublas_fp16": "cuBLAS FP16 in, FP32 acc",
    "cublas_fp16_acc16": "cuBLAS FP16 in, FP16 acc",
}


# rows whose rel_err_acc is not against the variant's own inputs (cuBLAS TF32 rounds them in a way it does
# not document, so the record compares it with the FP32 product)
NO_OWN_INPUTS = {"cublas_tf32": "n/a"}


def c_format(kernel: str) -> str:
    """'FP16' or 'FP32': the format a variant writes C in (cupy.matmul on float16 writes FP16 C)."""
    from ..cublas import BASELINES
    from ..kernels import KERNELS

    out = BASELINES[kernel].out_dtype if kernel in BASELINES else KERNELS[kernel].out_dtype
    return {"float16": "FP16", "float32": "FP32"}[np.dtype(out).name]


def comparison_rows(rows, size: int, baseline: str = "gemm_fp32_kernel") -> list[dict]:
    """Table rows at one square size: time, TFLOP/s, speedup over `baseline`, errors (``own``: against the
    variant's own rounded inputs, as text), the format of C and the SM clock recorded while it was timed."""
    from ..clocks import clock_text

    at = {r["kernel"]: r for r in rows if r["m"] == r["n"] == r["k"] == size}
    base = at.get(baseline)
    out = []
    for k, label in VARIANTS.items():
        if k not in at:
            continue
        r = at[k]
        acc = float("nan") if k in NO_OWN_INPUTS else r.get("rel_err_acc", float("nan"))
        out.append({"variant": label, "kernel": k, "inputs": r["dtype_in"], "acc": r["acc"], "c": c_format(k),
                    "median_ms": r["median_ms"], "tflops": r["tflops"],
                    "speedup": base["median_ms"] / r["median_ms"] if base else float("nan"),
                    "rel_err": r["rel_err"], "rel_err_acc": acc,
                    "own": NO_OWN_INPUTS.get(k, f"{acc:.1e}"),
                    "passed": "yes" if r.get("passed") else "NO", "clock": clock_text(r)})
    return out


def fp16_output_rounding_error(n: int = 1024, seed: int = 0) -> float:
    """Relative error of rounding the exact product of n x n FP16 inputs to an FP16 C, and nothing else."""
    from ..numerics import random_matrix, rel_fro_error

    A = random_matrix(n, n, seed=seed).astype(np.float16).astype(np.float64)
    B = random_matrix(n, n, seed=seed + 1).astype(np.float16).astype(np.float64)
    C = A @ B
    return rel_fro_error(C.astype(np.float16), C)


# colour = arithmetic (inputs and accumulator), marker = implementation (see marker)
_ARITH_COLOR = {"fp32": "#0072B2", "fp16/fp32": "#D55E00", "fp16/fp16": "#009E73", "bf16/fp32": "#CC79A7",
                "tf32/fp32": "#E69F00"}
VARIANT_COLORS = {
    "gemm_fp32_kernel": _ARITH_COLOR["fp32"], "cublas_fp32": _ARITH_COLOR["fp32"],
    "wmma_mixed_gemm_kernel": _ARITH_COLOR["fp16/fp32"], "cublas_fp16": _ARITH_COLOR["fp16/fp32"],
    "wmma_fp16acc_gemm_kernel": _ARITH_COLOR["fp16/fp16"], "cublas_fp16_acc16": _ARITH_COLOR["fp16/fp16"],
    "wmma_bf16_gemm_kernel": _ARITH_COLOR["bf16/fp32"],
    "wmma_tf32_gemm_kernel": _ARITH_COLOR["tf32/fp32"], "cublas_tf32": _ARITH_COLOR["tf32/fp32"],
}


def marker(kernel: str) -> str:
    """A variant's marker in lesson 3's charts: a square for cuBLAS, a triangle for the FP32 kernel, else a dot."""
    return "s" if kernel.startswith("cublas") else ("^" if kernel == "gemm_fp32_kernel" else "o")


def _plot_variants(rows, y: str, ylabel: str, title: str):
    """`y` against size for every variant (log-log), coloured by arithmetic, cuBLAS dashed."""
    import matplotlib.pyplot as plt

    from ..plots import apply_style
    from .sweep import series

    apply_style()
    fig, ax = plt.subplots()
    sizes = set()
    for k, label in VARIANTS.items():
        n, v = series(rows, k, y)
        if n:
            sizes |= set(n)
            ax.plot(n, v, marker=marker(k), color=VARIANT_COLORS[k], label=label,
                    linestyle="--" if k.startswith("cublas") else "-")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(sizes))
    ax.set_xticklabels([str(v) for v in sorted(sizes)])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (M = N = K = n)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=11)
    fig.tight_layout()
    return fig


def plot_tflops_vs_size(rows, *, source: str = ""):
    """TFLOP/s against size for every variant."""
    return _plot_variants(rows, "tflops", "TFLOP/s", f"Throughput of each variant (dashed: cuBLAS)\n{source}")


def plot_error_vs_size(rows, *, source: str = ""):
    """Relative error against size for every variant."""
    return _plot_variants(rows, "rel_err", "relative error vs float64",
                          f"Error of each variant (dashed: cuBLAS; lines of the same arithmetic coincide)\n{source}")


def overflow_inputs(K_half: int = 12000, n: int = 16, seed: int = 3):
    """A product whose exact value is 0 but whose running sums climb far past FP16's maximum: A's second
    half of columns negates its first, B's second half of rows repeats its first (values in [2, 3))."""
    rng = np.random.default_rng(seed)
    a = (2 + rng.random((n, K_half))).astype(np.float16).astype(np.float32)
    b = (2 + rng.random((K_half, n))).astype(np.float16).astype(np.float32)
    return np.hstack([a, -a]), np.vstack([b, b])


def peak_ratio_rows(names=("V100", "T4", "A100", "RTX 4090", "H100", "H200")) -> list[dict]:
    """Datasheet tensor-core / CUDA-core peak ratios from helpers.device's table (with its sources)."""
    from ..device import peaks_for

    out = []
    for n in names:
        p = peaks_for(n)
        if p is None:
            continue
        out.append({"gpu": p.gpu, "fp32": p.fp32, "fp16": p.fp16, "tf32": p.tf32 or float("nan"),
                    "fp16 / fp32": p.fp16 / p.fp32 if p.fp16 else float("nan"),
                    "tf32 / fp32": p.tf32 / p.fp32 if p.tf32 else float("nan"),
                    "fp16 acc16 / fp16": (p.fp16_acc16 / p.fp16) if p.fp16 and p.fp16_acc16 else float("nan"),
                    "source": p.source})
    return out


def tf32_verdict_table(rows) -> list[dict]:
    """One row per environment setting: which arithmetic cupy.matmul and the explicit calls used."""
    table = {}
    for r in rows:
        key = (r["CUPY_TF32"], r["NVIDIA_TF32_OVERRIDE"])
        table.setdefault(key, {"CUPY_TF32": key[0], "NVIDIA_TF32_OVERRIDE": key[1]})[r["call"]] = r["verdict"]
    return list(table.values())


def tf32_conclusions(rows) -> list[str]:
    """Sentences that follow from the tf32_env rows (so the notebook's conclusions are computed)."""
    v = {(r["CUPY_TF32"], r["NVIDIA_TF32_OVERRIDE"], r["call"]): r["verdict"] for r in rows}
    mm, f32, fast = "cupy.matmul", "gemmEx COMPUTE_32F", "gemmEx COMPUTE_32F_FAST_TF32"
    on = v[("unset", "1", mm)] == "TF32"
    forced = v[("unset", "1", f32)] == "TF32"
    veto = v[("1", "0", mm)] == "FP32" and v[("unset", "0", fast)] == "FP32"
    return [
        f"nothing set:                       cupy.matmul {v[('unset', 'unset', mm)]}, "
        f"COMPUTE_32F {v[('unset', 'unset', f32)]}, FAST_TF32 {v[('unset', 'unset', fast)]}",
        f"CUPY_TF32=1:                       cupy.matmul {v[('1', 'unset', mm)]}",
        f"NVIDIA_TF32_OVERRIDE=1 (only):     cupy.matmul {v[('unset', '1', mm)]}, COMPUTE_32F {v[('unset', '1', f32)]}"
        + (" -> =1 turns TF32 ON for unchanged FP32 code" if on else " -> =1 does NOT turn TF32 on")
        + (", even for calls that ask for FP32 compute" if forced else ""),
        f"NVIDIA_TF32_OVERRIDE=0:            cupy.matmul under CUPY_TF32=1 {v[('1', '0', mm)]}, "
        f"FAST_TF32 {v[('unset', '0', fast)]}" + (" -> =0 vetoes TF32 everywhere" if veto else " -> =0 did not veto it"),
    ]
