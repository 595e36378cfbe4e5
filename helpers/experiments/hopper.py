"""Lesson 6 (Hopper GEMMs at full speed): experiment ``hopper`` and the readers the lesson's cells call.

Experiment ``hopper`` (``python -m helpers.record --update-experiments hopper``): cuBLAS FP16 at every timed shape,
then every rung of ``hopper_ladder()`` in its own child process, checked at odd sizes and the timed shapes and timed at
the latter right after cuBLAS writing FP16 C and FP32 C on the same matrices. Readers (no GPU): the gains beside their
predictions, the best rung per shape, Nsight Compute's counters (results/ncu-*.json) and the check's verdicts.
"""
from __future__ import annotations

import json
import re
import sys

import numpy as np

from ..kernels import ALL_RUNGS, hopper_ladder, rung_entry
from ..timing import verdict
from . import experiment
from .ladder import _inputs, _row_head, _rung_row, errors, gains, timed_rows  # noqa: F401  (re-exported)
from .ladder import chart_points, say_run, slide_line

SQUARE = (2048, 4096, 6144, 8192)
# transformer-like products: an MLP up-projection, 128 tokens through an 8192 x 8192 weight (a 128 x 256 tile leaves
# most SMs idle), a short K (the epilogue is a large share of each tile), and two squares off the 128 x 256 grid
SHAPES = ((8192, 28672, 4096), (128, 8192, 8192), (8192, 8192, 1024), (5000, 5000, 5000), (7000, 7000, 7000))
TIMED = tuple((n, n, n) for n in SQUARE) + SHAPES
ODD_SIZES = ((1000, 1064, 1000), (257, 520, 136), (40, 24, 56))   # not multiples of 8 tiles, 64, nor 16
TRY_TIMED = ((4096, 4096, 4096), (8192, 8192, 8192))
RUNGS = tuple(hopper_ladder())                        # 7 (where lesson 6 starts), then 8-30
# What lesson 6 runs live on a Hopper GPU: its main path's rungs (7-16), checked at one odd size, timed at 4096^3
# and at rungs 15's and 16's own shapes. Estimate: this live run took 35 s in an nbval run of the lesson on an
# H100 80GB HBM3 (its first on that machine, so the compiles included); each rung is a child process that starts
# CUDA, compiles, checks, then times beside cuBLAS, and the whole lesson ran about a quarter slower on the H200.
LIVE = {"timed": (TRY_TIMED[0], (128, 8192, 8192), (5000, 5000, 5000)), "odd_sizes": ODD_SIZES[:1],
        "rungs": RUNGS[:10]}
LIVE_SECONDS = 45                                     # the estimate the lesson announces (above)
# The goals, like for like: the best rung writing C in a type over cuBLAS writing the same C type
TARGETS = {(4096, 4096, 4096): 1.00, (8192, 8192, 8192): 1.00, (2048, 2048, 2048): 0.95,
           (8192, 8192, 1024): 0.95, (5000, 5000, 5000): 0.95, (7000, 7000, 7000): 0.95, (128, 8192, 8192): 0.90}
C_TAGS = {"float16": "fp16c", "float32": "fp32c"}     # row-field infix of each C type's cuBLAS timing


def _progress(msg: str) -> None:
    """A progress line on stderr: what a child was doing when it hung is in the parent's error message."""
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- experiment hopper
def _cublas_side(A, B, M: int, N: int, K: int, c_dtype: str = "float32") -> dict:
    """cuBLAS timed just before a rung on the same A and B, writing FP16 C and FP32 C (fields ``cublas_fp16c_*``,
    ``cublas_fp32c_*``; ``cublas_*`` repeat the one with the rung's C type)."""
    import cupy

    from ..cublas import same_c
    from ..timing import benchmark, gemm_flops

    out = {"cublas_c_dtype": c_dtype}
    for dt, tag in C_TAGS.items():
        cub = same_c(dt)
        Cc = cupy.full((M, N), np.nan, dtype=dt)
        cub.run(A, B, Cc)
        if dt == "float32":                       # (the FP16-C call is checked by the experiment's rung-0 rows)
            out["cublas_fp32c_passed"] = bool(cub.check(Cc, A, B, backend="GPU").passed)
        t = benchmark(lambda: cub.run(A, B, Cc))
        c = t.clocks or {}
        f = {"ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6), "p90_ms": round(t.p90_ms, 6),
             "tflops": round(gemm_flops(M, N, K) / (t.median_ms * 1e-3) / 1e12, 4),
             "sm_mhz": c.get("sm_mhz"), "power_w": c.get("power_w"), "throttle": c.get("throttle")}
        out.update({f"cublas_{tag}_{k}": v for k, v in f.items()})
        if dt == c_dtype:
            out.update({f"cublas_{k}": v for k, v in f.items()})
    return out


def _launch_facts(r, M: int, N: int, K: int) -> dict:
    """The grid (`resident`), the kernel built for this shape (`built`) and the cluster launch path of rung r."""
    from ..launch import build_for, launch_path, resident_blocks

    out, b = {}, r
    if r.persistent:
        b, opts = build_for(r, M, N, 2 * K, 2 * N)
        out["resident"] = resident_blocks(b, options=opts)[1]
        if r.per_shape == "orientation":
            out["built"] = f"{b.name}, {b.block_tile[0]} x {b.block_tile[1]} tiles in clusters of {b.cluster[0]}"
    if r.cluster is not None:
        out["launch_path"] = launch_path(b)
    return out


def _context_lost() -> bool:
    """After an exception: is this process's CUDA context unusable? (A fault or a trap is sticky.)"""
    import cupy

    try:
        cupy.cuda.runtime.deviceSynchronize()
        cupy.zeros(1).sum().get()
        return False
    except Exception:
        return True


def rung_rows(k: int, timed=TRY_TIMED, odd_sizes=ODD_SIZES, side_by_side: bool = True) -> list[dict]:
    """GPU (in a child process): rung k checked at the odd sizes and the timed shapes, timed at the latter (after
    cuBLAS when side_by_side). One row per size; 'error' where something failed (after a lost context, no more)."""
    import cupy

    from ..device import require_gpu
    from ..errors import CourseError
    from ..launch import kernel_resources
    from ..numerics import reference_gemm

    r = rung_entry(k)
    gpu = require_gpu(f"rung {k}")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    timed = [tuple(s) for s in timed]
    shapes = [tuple(s) for s in odd_sizes] + timed
    msg = r.skip_message(gpu.cc)
    if msg:
        return [dict(_row_head(r, *s), skipped=msg) for s in shapes]
    _progress(f"rung {k} ({r.name}): compiling {r.file} for sm_90a")
    try:
        res = kernel_resources(r)
    except CourseError as exc:
        return [dict(_row_head(r, *shapes[0]), error=f"compile: {exc}")]
    except Exception as exc:                      # the driver could not load or set up the kernel
        return [dict(_row_head(r, *shapes[0]), error=f"loading the kernel: {type(exc).__name__}: {exc}")]
    rows = []
    for i, (M, N, K) in enumerate(shapes):
        is_timed = (M, N, K) in timed
        _progress(f"rung {k}: {'checking, then timing' if is_timed else 'checking'} {M}x{N}x{K}")
        try:
            A, B = _inputs(i, M, N, K)
            C_ref = reference_gemm(A, B)
            side = _cublas_side(A, B, M, N, K, r.out_dtype) if is_timed and side_by_side else {}
            row = _rung_row(r, A, B, M, N, K, C_ref, is_timed, side.get("cublas_ms"), peak, gpu.cc)
            row.update(side, c_dtype=r.out_dtype, **_launch_facts(r, M, N, K))
            if row.get("median_ms") and side:
                row["frac_cublas_fp16c"] = round(side["cublas_fp16c_ms"] / row["median_ms"], 4)
            if r.split_k and r.tail_split:
                from ..kernels import tail_split_plan

                dp, row["splits"], _ = tail_split_plan(M, N, K)
                row["whole_units"] = dp
            elif r.split_k:
                from ..kernels import split_k_plan

                row["splits"] = split_k_plan(M, N, K)[0]
            rows.append(row)
            del A, B, C_ref
        except Exception as exc:                  # a fault, a trap (a hung mbarrier), a refused launch
            rows.append(dict(_row_head(r, M, N, K), **res, error=f"{type(exc).__name__}: {exc}"))
            _progress(f"rung {k}: {M}x{N}x{K} failed: {rows[-1]['error'][:300]}")
            if _context_lost():
                rows[-1]["error"] += " (the CUDA context is lost: the remaining sizes were not tried)"
                break
        try:
            cupy.get_default_memory_pool().free_all_blocks()
        except Exception:
            pass
    return rows


def cluster_probe(launch_ex: bool = False) -> dict:
    """GPU (child process): does a plain launch of a kernel declaring __cluster_dims__(2, 1, 1) form clusters of 2?
    8 blocks of hopper_cluster_probe write their cluster size, rank and id; cuLaunchKernelEx where the plain launch
    fails (or with launch_ex=True)."""
    import cupy

    from ..compile import get_arch_kernel
    from ..device import require_gpu
    from ..hopper import launch_ex as launch_named

    gpu = require_gpu("cluster probe")
    if gpu.cc != (9, 0):
        return {"skipped": f"sm_90a code; this GPU is {gpu.cc[0]}.{gpu.cc[1]}"}
    kern = get_arch_kernel("hopper_cluster_probe_sm90a.cu", "hopper_cluster_probe", (9, 0), check_empty=False)
    out = cupy.full(8, -1, dtype=cupy.int32)
    result = {}
    try:
        if launch_ex:
            raise RuntimeError("cuLaunchKernelEx asked for")
        kern((8,), (32,), (out,))
        cupy.cuda.runtime.deviceSynchronize()
        result["path"] = "plain launch"
    except Exception as exc:                      # the driver refused: name the cluster explicitly
        result["plain_error"] = f"{type(exc).__name__}: {exc}"
        out.fill(-1)
        launch_named(kern, (8, 1, 1), (32, 1, 1), (out,), 0, (2, 1, 1))
        cupy.cuda.runtime.deviceSynchronize()
        result["path"] = "cuLaunchKernelEx"
    v = [int(x) for x in out.get()]
    result["blocks"] = [{"cluster_size": x >> 16, "rank": (x >> 8) & 255, "cluster": x & 255} for x in v]
    result["forms_clusters"] = all(b["cluster_size"] == 2 for b in result["blocks"]) and \
        [b["rank"] for b in result["blocks"]] == [0, 1] * 4
    return result


def shapes_for(r, timed=TIMED) -> list[tuple]:
    """The shapes of `timed` the record times rung entry `r` at: all, or its own `timed_shapes` (the skinny rungs)."""
    return [tuple(s) for s in timed if r.timed_shapes is None or tuple(s) in r.timed_shapes]


@experiment("hopper", only_cc=(9, 0), needs="wgmma, TMA and clusters, on a Hopper GPU")
def hopper(timed=TIMED, odd_sizes=ODD_SIZES, rungs=RUNGS, timeout: int = 600, done=None, checkpoint=None):
    """Lesson 6's ladder: cuBLAS FP16 at every timed shape (rung 0), then each of `rungs` in its own child process.

    It takes minutes, so it can go on where a stopped run left off: `done` holds the rows that run measured (a rung
    found there is not measured again: each rung's row carries its own cuBLAS timing, taken beside it), and
    `checkpoint(rows)` is called with the rows so far after cuBLAS's and after each rung's (`make record` saves
    them, and `--resume` passes them back)."""
    import cupy

    from ..device import require_gpu
    from ..isolate import run_isolated
    from .ladder import cublas_row

    gpu = require_gpu("hopper")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    rows = list(done or [])
    measured = {row.get("rung") for row in rows}
    if 0 not in measured:
        for i, (M, N, K) in enumerate(timed):
            A, B = _inputs(len(odd_sizes) + i, M, N, K)    # the same inputs rung_rows uses for this shape
            rows.append(cublas_row(A, B, peak))
            del A, B
            cupy.get_default_memory_pool().free_all_blocks()
        if checkpoint:
            checkpoint(rows)
    for k, r in hopper_ladder().items():
        if k not in rungs or k in measured:
            continue
        msg = r.skip_message(gpu.cc)
        if msg:
            rows += [dict(_row_head(r, *s), skipped=msg) for s in list(odd_sizes) + list(timed)]
            continue
        out = run_isolated("helpers.experiments.hopper:rung_rows", k, [list(s) for s in shapes_for(r, timed)],
                           [list(s) for s in odd_sizes], timeout=timeout)
        rows += [dict(_row_head(r, 0, 0, 0), **out)] if isinstance(out, dict) else out
        if checkpoint:
            checkpoint(rows)
    return rows


# --------------------------------------------------------------------------- reading the record
def best_rung(rows: list[dict], shape, c_dtype: str, below: int | None = None):
    """The correct rung (8 on; below `below`) writing C in `c_dtype` with the highest ratio to cuBLAS writing the
    same C at `shape`, or None."""
    rs = [r for r in timed_rows(rows, shape) if r["rung"] >= 8 and r.get("passed") and r.get("frac_cublas")
          and r.get("c_dtype", "float32") == c_dtype and (below is None or r["rung"] < below)]
    return max(rs, key=lambda r: r["frac_cublas"]) if rs else None


NCU_METRICS = {"tensor_pipe_pct": "Tensor pipe busy (%)", "dram_read_bytes": "DRAM read (GB)",
               "l2_hit_rate_pct": "L2 hit rate (%)", "achieved_occupancy_pct": "warps active (%)"}


def _ncu_files(directory=None) -> list[dict]:
    """Every recorded Nsight Compute file (results/ncu-*.json), newest first."""
    from ..profile import list_profiles
    from ..results import RESULTS_DIR

    files = [json.loads(p.read_text()) for p in list_profiles(RESULTS_DIR if directory is None else directory)]
    return sorted(files, key=lambda d: d.get("date", ""), reverse=True)


def ncu_at(target: str, shape, directory=None) -> dict | None:
    """The recorded Nsight Compute entry of `target` ('rung15', ...) profiled at `shape` (M, N, K), or None."""
    for data in _ncu_files(directory):
        for e in data.get("kernels", []):
            if e.get("target") == target and list(e.get("size", data.get("size"))) == list(shape) and "counters" in e:
                return dict(e, date=e.get("date", data.get("date")), gpu=data["gpu"]["name"])
    return None


def ncu_rows(rows: list[dict] | None = None, n: int = 4096, directory=None) -> tuple[list[dict], str]:
    """Nsight Compute counters of lesson 6's rungs, each with its TFLOP/s in `rows` at n^3: ([{rung, kernel, tflops,
    counters, top_stalls}], label), or ([], why) when none is recorded."""
    want = {f"rung{k}": k for k in hopper_ladder()}
    for data in _ncu_files(directory):
        size = data.get("size")
        got = [e for e in data.get("kernels", []) if e.get("target") in want and "counters" in e
               and e.get("size", size) == size]
        if not any(want[e["target"]] >= 8 for e in got):
            continue
        tf = {r["rung"]: r["tflops"] for r in (timed_rows(rows, n) if rows else [])}
        out = [{"rung": want[e["target"]], "kernel": e["kernel"], "tflops": tf.get(want[e["target"]]),
                "counters": e["counters"], "top_stalls": e.get("top_stalls", [])} for e in got]
        label = f"Nsight Compute on {data['gpu']['name']}, {data['date'][:10]}, n = {data['size'][0]}"
        return sorted(out, key=lambda e: e["rung"]), label
    return [], ("not recorded yet: no results/ncu-*.json holds lesson 6's rungs (run `make gpu-check STAGES=ncu` "
                "on a Hopper GPU)")


def l2_sectors_per_ktile(target: str, sizes=(4096, 5000)) -> dict:
    """L2 sectors `target` read per 128 x 256 tile and K-tile of 64 at n^3 for each n (Nsight Compute, ncu_at)."""
    out = {}
    for n in sizes:
        e = ncu_at(target, (n, n, n))
        if e is not None:
            out[n] = round(e["counters"]["l2_read_sectors"] / (-(-n // 128) * -(-n // 256) * -(-n // 64)))
    return out


def gain_at(rows: list[dict], rung: int, shape, predicted: float | None = None, base: int | None = None) -> dict | None:
    """Rung `rung`'s recorded gain over the rung before it (or `base`) at `shape`, its p10-p90 range and the verdict
    against `predicted` (default: the registry's)."""
    g = next((x for x in gains(rows, shape) if x["rung"] == rung), None)
    if g is not None and base is not None:
        by_rung = {r["rung"]: r for r in timed_rows(rows, shape)}
        r, b = by_rung[rung], by_rung.get(base)
        if b is None:
            return None
        spread = all(x.get(k) for x in (r, b) for k in ("p10_ms", "p90_ms"))
        mid = r["tflops"] / b["tflops"]
        g = dict(g, base=base, measured=round(mid, 3), low=round(b["p10_ms"] / r["p90_ms"] if spread else mid, 3),
                 high=round(b["p90_ms"] / r["p10_ms"] if spread else mid, 3))
        predicted = g["predicted"] if predicted is None else predicted
    if g is None or predicted is None:
        return g
    low = g["low"] if g["low"] is not None else g["measured"]
    high = g["high"] if g["high"] is not None else g["measured"]
    g = dict(g, predicted=predicted, verdict=verdict(predicted, low, high))
    g["direction"] = g["verdict"].split()[1] if g["verdict"].startswith("missed") else None
    return g


def kernel_alone_gain(ladder: list[dict], n: int) -> float:
    """Rung 7's kernel alone (without its transpose of B) over rung 7 as timed, at n^3 (lesson 5's ladder rows)."""
    r7 = next(r for r in timed_rows(ladder, n) if r["rung"] == 7)
    return r7["tflops_kernel_only"] / r7["tflops"]


def shape_table(rows: list[dict], shapes=TIMED) -> list[dict]:
    """For every timed shape and C type: the best rung, its TFLOP/s and ratio, and cuBLAS's TFLOP/s timed beside it."""
    out = []
    for s in shapes:
        row = {"shape": "x".join(map(str, s))}
        for c_dtype, tag in C_TAGS.items():
            best = best_rung(rows, s, c_dtype)
            row[f"cublas_{tag}"] = best.get(f"cublas_{tag}_tflops", best.get("cublas_tflops")) if best else None
            row[f"rung_{tag}"] = best["rung"] if best else None
            row[f"tflops_{tag}"] = best["tflops"] if best else None
            row[f"ratio_{tag}"] = best["frac_cublas"] if best else None
        out.append(row)
    return out


def verdict_table(lines: list[str]):
    """helpers.launch.verdicts' lines, one row per rung; the check's text printed once when every rung's is the same."""
    from ..display import table

    rows = []
    for line in lines:
        m = re.match(r"(\d+) (PASS|FAIL) (\S+) M=\S+ N=\S+ K=\S+: (.*?)(?: \| padded to (.*))?$", line)
        rows.append(dict(rung=m[1], result=m[2], kernel=m[3], check=m[4], padded=m[5] or "") if m else dict(check=line))
    same = len({r["check"] for r in rows}) == 1
    if same:
        print("every rung:", rows[0]["check"])
    return table(rows, ["rung", "result", "kernel"] + ([] if same else ["check"]) + ["padded"],
                 ["rung", "result", "kernel"] + ([] if same else ["what the check found"]) + ["padded to (M, N, K)"])


# --------------------------------------------------------------------------- rung 16 (experiment tail_split)
def _mhz(r: dict):
    return (r.get("clocks") or {}).get("sm_mhz", "?")


def parts_sweep(ts: dict) -> str:
    """Rung 16's TFLOP/s for each number of parts its tail units were cut into: one line."""
    return ", ".join(f"{r['parts']} part{'s' * (r['parts'] > 1)}: {r['tflops']:.0f} ({_mhz(r)} MHz)"
                     for r in ts["parts_sweep"]) + " TFLOP/s (SM clock)"


def alignment_rows(rows: list[dict]) -> list[dict]:
    """One row per row stride of the tail_split experiment's row-stride run: the bytes per row, the sectors a TMA box
    row touches on average, and each kernel's TFLOP/s and SM clock."""
    from ..analysis import sectors_per_row

    out = {}
    for r in rows:
        row = out.setdefault(r["row_bytes"], {"row_bytes": r["row_bytes"], "sectors": sectors_per_row(r["row_bytes"])})
        name = "cuBLAS" if r["rung"] == 0 else f"rung {r['rung']}"
        row[name] = r["tflops"]
        row[f"{name} MHz"] = _mhz(r)
    return [out[b] for b in sorted(out)]


# --------------------------------------------------------------------------- the rung slides and the lesson's chart
# Rungs 15 and 16 aim at a shape of their own: their prediction there, over the rung they are compared with.
OWN_SHAPE = {15: ((128, 8192, 8192), 1.8, 14), 16: ((5000, 5000, 5000), 1.11, 14)}


def own_shape_goal(rung: int) -> str:
    """Rung 15's or 16's prediction at its own shape, as the lesson's overview table prints it ('' for others)."""
    if rung not in OWN_SHAPE:
        return ""
    shape, gain, base = OWN_SHAPE[rung]
    return f"x{gain:g} at {shape_name(shape)} over rung {base}"


def shape_name(shape) -> str:
    M, N, K = shape
    return f"{M}^3" if M == N == K else f"{M}x{N}x{K}"


def rung_gain(rows: list[dict], rung: int, shape=None) -> dict | None:
    """Rung `rung`'s gain where its slide judges it: at its own shape over its own base (OWN_SHAPE), else at 4096^3
    over the rung before; gain_at's dict (measured, low, high, verdict, tflops, clock) with `shape` added."""
    own = OWN_SHAPE.get(rung)
    if shape is None:
        shape = own[0] if own else TRY_TIMED[0]
    if own and tuple(shape) == own[0]:
        g = gain_at(rows, rung, shape, predicted=own[1], base=own[2])
        g = g and dict(g, over=own[2])
    else:
        g = gain_at(rows, rung, shape)
    return g and dict(g, shape=shape_name(shape))


def rung_line(rows: list[dict], rung: int, shape=None) -> str:
    """One line for a rung's slide (ladder.slide_line): its checks, then at the slide's shape (rung_gain) its gain."""
    return slide_line(rows, rung, rung_gain(rows, rung, shape), lambda r: shape_name((r["m"], r["n"], r["k"])),
                      "that shape")


def prediction_points(rows: list[dict], rungs=range(8, 17), sizes=(4096, 8192)) -> list[dict]:
    """What the lesson's predicted-against-measured chart draws (ladder.chart_points): for each rung, its gain at each
    of `sizes` (n^3) over the rung before (the registry's prediction), and at its own shape for rungs 15-16
    (OWN_SHAPE)."""
    return chart_points(rung_gain(rows, k, s) for k in rungs
                        for s in [(n, n, n) for n in sizes] + ([OWN_SHAPE[k][0]] if k in OWN_SHAPE else []))


def measure_or_load(rec, live: dict = LIVE) -> tuple[list[dict], str]:
    """Lesson 6's one measurement: on a Hopper GPU, experiment `hopper` run live with `live` (its time estimate printed
    first); elsewhere the record `rec`'s full run. Prints where the rows come from, how many checks passed and any
    skip or error; returns (rows, source)."""
    from ..device import backend
    from ..errors import ResultsError
    from . import run_or_load

    b = backend()
    if b.is_gpu and ALL_RUNGS[8].unsupported(b.gpu.cc) is None:
        print(f"estimated: about {LIVE_SECONDS} s (rungs {live['rungs'][0]}-{live['rungs'][-1]}, "
              f"{len(live['timed'])} timed shapes, each rung in its own child process)")
    try:
        out = run_or_load("hopper", **live)
        data, source, note = out.data, out.source, None
    except ResultsError as e:
        data, source = rec.meta["experiments"]["hopper"], rec.label
        note = f"not measured: {e.problem} The rungs below show the record."
    say_run(data, note or source, first_rung=7)
    return data, source
