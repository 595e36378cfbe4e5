"""Lesson 6, like for like: the goals timed in turn with cuBLAS writing the same C (experiment ``hopper_targets``), and
the same GEMM on other input values (experiment ``input_values``), with their tables. Timing the two in turn, in
alternating rounds, exposes both to the same clock under a power cap; a goal is met when the median of the
round-by-round ratios reaches it.
"""
from __future__ import annotations

import statistics

import numpy as np

from ..clocks import clock_span
from ..kernels import ALL_RUNGS, HOPPER_RUNGS, rung_entry
from ..timing import round_ratio
from . import experiment
from .hopper import TARGETS, _context_lost, _inputs, _progress, best_rung, timed_rows

TARGET_ROUNDS = 7


def target_candidates(rows: list[dict], shape, c_dtype: str) -> list[int]:
    """The rungs `hopper_targets` times at a goal (correct there, writing C in `c_dtype`): the best by its ratio to
    cuBLAS, the fastest and the highest rung, without repeats."""
    best = best_rung(rows, shape, c_dtype)
    rs = [r for r in timed_rows(rows, shape) if r["rung"] >= 8 and r.get("passed") and r.get("tflops")
          and r.get("c_dtype", "float32") == c_dtype]
    out = [best["rung"]] if best else []
    if rs:
        for k in (max(rs, key=lambda r: r["tflops"])["rung"], max(r["rung"] for r in rs)):
            out += [] if k in out else [k]
    return out


def target_rounds(plan: list, rounds: int = TARGET_ROUNDS) -> list[dict]:
    """GPU (child process): for each [shape, c_dtype, goal, rungs] of `plan`, each rung checked, then the rungs that
    passed and cuBLAS writing the same C timed in alternating rounds. One cell per goal; 'error' where one failed."""
    import cupy

    from ..cublas import same_c
    from ..launch import launcher
    from ..numerics import reference_gemm
    from ..timing import alternating, gemm_flops

    cells = []
    for i, (shape, c_dtype, goal, rungs) in enumerate(plan):
        M, N, K = shape
        cell = {"shape": list(shape), "c_dtype": c_dtype, "goal": goal, "candidates": list(rungs), "checks": [],
                "timed": []}
        cells.append(cell)
        _progress(f"hopper_targets: {M}x{N}x{K}, {c_dtype} C: rungs {rungs}")
        try:
            A, B = _inputs(90 + i, M, N, K)
            ref = reference_gemm(A, B)
            timed = {}
            for k in rungs:
                r = rung_entry(k)
                fn, C, _ = launcher(r, A, B, pad=True)
                C.fill(cupy.nan)
                fn()
                chk = r.check(C[:M, :N], A, B, reference=ref, backend="GPU")
                cell["checks"].append({"rung": k, "built": fn.built[0], "cluster": fn.built[1],
                                       "passed": bool(chk.passed), "model": chk.model, "verdict": chk.verdict()[:300]})
                if chk.passed:
                    timed[f"rung {k}"] = fn
            del ref
            cub, Cc = same_c(c_dtype), cupy.full((M, N), np.nan, dtype=c_dtype)
            timed["cuBLAS"] = lambda: cub.run(A, B, Cc)   # noqa: F821  (called before the del below)
            fl = gemm_flops(M, N, K)
            for key, v in alternating(timed, fl, rounds).items():
                per = [round(ms, 6) for ms in v.pop("ms")]
                ms = statistics.median(per)
                cell["timed"].append({"what": key, "median_ms": ms, "tflops": round(fl / (ms * 1e-3) / 1e12, 4),
                                      "round_ms": per, **v})
            del A, B, Cc
        except Exception as exc:                  # a fault, a trap, a refused launch
            cell["error"] = f"{type(exc).__name__}: {exc}"
            _progress(f"hopper_targets: {M}x{N}x{K} failed: {cell['error'][:300]}")
            if _context_lost():
                cell["error"] += " (the CUDA context is lost: the remaining targets were not tried)"
                break
        cupy.get_default_memory_pool().free_all_blocks()
    return cells


@experiment("hopper_targets", only_cc=(9, 0), needs="lesson 6's Hopper rungs, on a Hopper GPU")
def hopper_targets(timeout: int = 540, rounds: int = TARGET_ROUNDS):
    """Each goal of TARGETS: its `target_candidates` from the record's `hopper` experiment (run that first) and
    cuBLAS writing the same C, in alternating rounds in one child process."""
    from ..device import require_gpu
    from ..isolate import run_isolated
    from ..paths import results_dir
    from ..results import load_record

    from . import RECORDING

    gpu = require_gpu("hopper_targets")
    path = results_dir() / f"{gpu.slug}.json"
    # the `hopper` rows of the record being written (a first `make record` on this GPU), else of its record file
    rows = RECORDING.get("hopper") or (load_record(path).meta.get("experiments", {}).get("hopper")
                                       if path.exists() else None)
    if not rows:
        return {"rounds": rounds, "cells": [], "error": f"{path} holds no `hopper` experiment to choose the rungs "
                "from: run `python -m helpers.record --update-experiments hopper` first"}
    plan = [[list(shape), c, goal, target_candidates(rows, shape, c)]
            for shape, goal in TARGETS.items() for c in ("float16", "float32")]
    out = run_isolated("helpers.experiments.like_for_like:target_rounds", plan, rounds, timeout=timeout)
    if isinstance(out, dict):                     # the child failed as a whole
        return {"rounds": rounds, "error": out.get("error"), "cells": []}
    return {"rounds": rounds, "rule": "met: the median of the round-by-round ratios reaches the goal", "cells": out}


def head_to_head(exp: dict) -> list[dict]:
    """Experiment `hopper_targets` read: per goal the candidate with the highest median round-by-round ratio to
    cuBLAS (`low`, `high`: its extreme rounds; `won`: rounds it was faster), both TFLOP/s, the SM clocks, `met`,
    `short`; `checked`: every candidate bit-identical to its model; `ran`: the kernel and cluster size the best rung's
    launcher built for the shape where they are not the rung's own (rungs 25-26 and 29-30 choose per shape), else ""."""
    out = []
    for cell in exp.get("cells", []):
        shape = tuple(cell["shape"])
        row = {"shape": "x".join(map(str, shape)), "C": "FP16" if cell["c_dtype"] == "float16" else "FP32",
               "goal": cell["goal"], "rung": None, "ratio": None, "low": None, "high": None, "won": "",
               "tflops": None, "cublas": None, "mhz": "", "met": None, "short": None,
               "checked": all(c["passed"] and c["model"] == "identical" for c in cell["checks"]),
               "error": cell.get("error", ""), "ran": ""}
        t = {x["what"]: x for x in cell["timed"]}
        cub, best = t.get("cuBLAS"), None
        for what, x in t.items():
            if what != "cuBLAS" and cub is not None:
                rr = round_ratio(x["round_ms"], cub["round_ms"])
                if best is None or rr["ratio"] > best[0]:
                    best = (rr["ratio"], what, x, rr)
        if best:
            med, what, x, rr = best
            row.update(rung=int(what.split()[1]), ratio=med, low=rr["low"], high=rr["high"],
                       won=f"{rr['won']} of {rr['rounds']}", tflops=x["tflops"], cublas=cub["tflops"],
                       mhz=f"{clock_span(x['sm_mhz'])} / {clock_span(cub['sm_mhz'])}", met=med >= cell["goal"],
                       short=None if med >= cell["goal"] else round(cell["goal"] - med, 3))
            chk, own = next((c for c in cell["checks"] if c["rung"] == row["rung"]), {}), rung_entry(row["rung"])
            # the check names what ran: another kernel, or the rung's own in clusters of another size (rung 25 in
            # clusters of 2 is rung 14's build)
            if chk.get("built") and (chk["built"], chk["cluster"]) != (own.name, own.cluster_ctas):
                row["ran"] = f"{chk['built']}, clusters of {chk['cluster']}"
        out.append(row)
    return out


def head_to_head_table(exp: dict):
    """head_to_head as a table: goal, best rung, median ratio, rounds won, clocks, correct, met and how far short."""
    from ..display import table

    rows = [dict(x, met={True: "yes", False: "no"}.get(x["met"], "-"), short=x["short"] or "")
            for x in head_to_head(exp)]
    ran = any(x["ran"] for x in rows)               # a column only where a best rung ran another rung's kernel
    return table(rows, ["shape", "C", "goal", "rung"] + ["ran"] * ran
                 + ["ratio", "won", "mhz", "checked", "met", "short"],
                 ["M x N x K", "C", "goal", "best rung"] + ["kernel it built here"] * ran
                 + ["x cuBLAS, same C", "rounds faster", "MHz, rung / cuBLAS", "correct", "met", "short by"],
                 {"ratio": ".3f", "short": ".3f"})



def head_to_head_by_gpu(records) -> list[dict]:
    """head_to_head of every record that has `hopper_targets`, side by side: one row per goal shape, its goal (the
    highest a record set for it), and per GPU and C type the best rung's median ratio to cuBLAS writing the same C,
    the rung, and "missed" where the ratio falls short of that goal ("-" where the GPU has no timing of it)."""
    judged = [(rec.gpu_short, head_to_head(rec.meta["experiments"]["hopper_targets"])) for rec in records
              if rec.meta.get("experiments", {}).get("hopper_targets")]
    goals: dict[str, float] = {}
    for _, h2h in judged:
        for r in h2h:
            goals[r["shape"]] = max(goals.get(r["shape"], 0.0), r["goal"])
    cols = [f"{gpu}, {c} C" for gpu, _ in judged for c in ("FP16", "FP32")]
    rows = {shape: {"shape": shape, "goal": goal, **dict.fromkeys(cols, "-")} for shape, goal in goals.items()}
    for gpu, h2h in judged:
        for r in h2h:
            if r["ratio"] is not None:
                rows[r["shape"]][f"{gpu}, {r['C']} C"] = (f"{r['ratio']:.3f}, rung {r['rung']}"
                                                          + ("" if r["ratio"] >= goals[r["shape"]] else ", missed"))
    return list(rows.values())


def goals_line(rec) -> str:
    """One record's verdict on the goals: how many met, whether every candidate timed matched its model, and, where
    its tensor maps asked L2 for another amount per miss than the course's do now, that amount."""
    h2h = head_to_head(rec.meta["experiments"]["hopper_targets"])
    met, wrong = sum(r["met"] is True for r in h2h), sum(not r["checked"] for r in h2h)
    line = (f"{rec.gpu_short}, recorded {rec.written('hopper_targets')}: met {met} of {len(h2h)} goals; "
            + ("every candidate bit-identical to its model" if not wrong
               else f"{wrong} goal{'s' * (wrong > 1)} with a wrong candidate"))
    note = rec.maps_note("hopper_targets")
    return line + (f"; {note} (Appendix E)" if note else "")


def widest_gaps(records, top: int = 3) -> list[dict]:
    """The `top` goals whose best ratios to cuBLAS differ most between two GPUs with `hopper_targets` (the first two
    such records): shape, C, both GPUs' ratios and their difference, widest first."""
    recs = [r for r in records if r.meta.get("experiments", {}).get("hopper_targets")][:2]
    if len(recs) < 2:
        return []
    a, b = ({(r["shape"], r["C"]): r["ratio"] for r in head_to_head(rec.meta["experiments"]["hopper_targets"])}
            for rec in recs)
    rows = [{"shape": s, "C": c, recs[0].gpu_short: a[s, c], recs[1].gpu_short: b[s, c], "gap": a[s, c] - b[s, c]}
            for s, c in a if (s, c) in b and a[s, c] is not None and b[s, c] is not None]
    return sorted(rows, key=lambda r: -abs(r["gap"]))[:top]


def head_to_head_by_gpu_table(records):
    """head_to_head_by_gpu as a table, a column per GPU and C type."""
    from ..display import gpu_columns_table

    rows = [dict(r, goal=f"{r['goal']:.2f}") for r in head_to_head_by_gpu(records)]
    return gpu_columns_table(rows, ["shape", "goal"], ["M x N x K", "goal"], "x cuBLAS")


# --------------------------------------------------------------------------- experiment input_values
INPUT_KINDS = {"normal": "N(0,1), rounded to FP16 (every other timing in the course)",
               "uniform": "U(-1,1), rounded to FP16",
               "e4m3": "N(0,1) rounded to E4M3, then held as FP16 (lesson 7's inputs: 3 fraction bits)",
               "zeros": "all zeros"}
INPUT_RUNGS = (13, 14)                     # the fastest FP32-C and FP16-C rungs where the chip is full


def kind_inputs(kind: str, M: int, N: int, K: int, seed: int = 0):
    """Seeded CuPy FP16 A (M x K) and B (K x N) of one of INPUT_KINDS."""
    if kind not in INPUT_KINDS:
        from ..errors import InputError

        raise InputError(f"unknown input kind {kind!r}.", f"use one of {', '.join(INPUT_KINDS)}.")
    import cupy

    from ..fp8_gemm import decode_e4m3, encode_e4m3
    from ..numerics import random_matrix
    out = []
    for rows, cols, sd in ((M, K, 700 + seed), (K, N, 800 + seed)):
        if kind == "zeros":
            X = np.zeros((rows, cols))
        elif kind == "uniform":
            X = 2.0 * random_matrix(rows, cols, seed=sd, dist="uniform") - 1.0
        else:
            X = random_matrix(rows, cols, seed=sd)
            if kind == "e4m3":
                X = decode_e4m3(encode_e4m3(X))
        out.append(cupy.asarray(X.astype(np.float16)))
    return tuple(out)


def input_rows(n: int = 8192, kinds=tuple(INPUT_KINDS), rungs=INPUT_RUNGS, rounds: int = 2) -> list[dict]:
    """GPU (child process): the same n^3 GEMM on each kind of input, each rung checked, then cuBLAS (FP16 C, FP32 C)
    and each rung timed in turn `rounds` times: a row per timing."""
    import cupy

    from ..cublas import same_c
    from ..device import require_gpu
    from ..launch import launcher
    from ..numerics import reference_gemm
    from ..timing import benchmark, gemm_flops

    require_gpu("input_values")
    rows = []
    for kind in kinds:
        _progress(f"input_values: {kind} inputs at {n}^3")
        A, B = kind_inputs(kind, n, n, n)
        C_ref = reference_gemm(A, B)
        runs = {}
        for dt in ("float16", "float32"):
            cub = same_c(dt)
            Cc = cupy.full((n, n), np.nan, dtype=dt)
            cub.run(A, B, Cc)
            runs[cub.name] = (lambda cub=cub, Cc=Cc: cub.run(A, B, Cc), dt,
                              bool(cub.check(Cc, A, B, reference=C_ref, backend="GPU").passed))
        for k in rungs:
            r = ALL_RUNGS[k]
            run, C, _ = launcher(r, A, B)
            run()
            cupy.cuda.get_current_stream().synchronize()
            runs[f"rung {k}"] = (run, r.out_dtype, bool(r.check(C, A, B, reference=C_ref, backend="GPU").passed))
        for rnd in range(rounds):
            for who, (fn, dt, ok) in runs.items():
                t = benchmark(fn)
                rows.append({"inputs": kind, "round": rnd, "who": who, "c_dtype": dt, "passed": ok, "n": n,
                             "median_ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6),
                             "p90_ms": round(t.p90_ms, 6), "reps": t.n,
                             "tflops": round(gemm_flops(n, n, n) / (t.median_ms * 1e-3) / 1e12, 2), **(t.clocks or {})})
        runs.clear()
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


@experiment("input_values", only_cc=(9, 0), needs="lesson 6's rungs 13 and 14 (sm_90a)")
def input_values(n: int = 8192, timeout: int = 600):
    """The same 8192^3 GEMM on N(0,1), U(-1,1), E4M3-valued and zero FP16 inputs (input_rows, in a child process)."""
    from ..isolate import run_isolated

    out = run_isolated("helpers.experiments.like_for_like:input_rows", n, timeout=timeout)
    return [out] if isinstance(out, dict) else out


def input_table(rows: list[dict]) -> list[dict]:
    """One row per kind of input: each kernel's median TFLOP/s, the SM clock range, each rung's ratio to cuBLAS
    writing the same C."""
    out = []
    for kind in INPUT_KINDS:
        rs = [r for r in rows if r.get("inputs") == kind and r.get("tflops")]
        if not rs:
            continue
        row, med = {"inputs": kind, "all_passed": all(r["passed"] for r in rs)}, {}
        who = list(dict.fromkeys(r["who"] for r in rs))
        for w in who:
            row[w] = med[w] = float(np.median([r["tflops"] for r in rs if r["who"] == w]))
        clocks = [r.get("sm_mhz") for r in rs if r.get("sm_mhz")]
        row["sm_mhz"] = (min(clocks), max(clocks)) if clocks else None
        for w in who:
            if w.startswith("rung"):
                dt = next(r["c_dtype"] for r in rs if r["who"] == w)
                base = "cublas_fp16" if dt == "float16" else "cublas_fp16_f32c"
                row[f"{w} / cuBLAS same C"] = med[w] / med[base] if base in med else None
        out.append(row)
    return out


def later_rungs(exp: dict, first: int = 17) -> list[dict]:
    """Rungs `first` on: what each adds, its C type, and the goals (experiment hopper_targets) it is the best rung at."""
    best = {}
    for r in head_to_head(exp):
        if r["rung"] is not None:
            best.setdefault(r["rung"], []).append(f"{r['shape']}, {r['C']} C")
    return [{"rung": k, "kernel": r.name, "adds": r.idea, "C": "FP16" if r.out_dtype == "float16" else "FP32",
             "best_at": "; ".join(best.get(k, [])) or "-"} for k, r in HOPPER_RUNGS.items() if k >= first]
