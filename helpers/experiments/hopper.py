"""Lesson 6 (Hopper GEMMs at full speed): the ``hopper`` experiment, the one-run try-out, and reading the rows.

The rungs are lesson 6's entries of the kernel registry (``helpers.kernels.hopper_ladder()``: rung 7,
where lesson 5 ends, then the rungs of kernels/hopper_sm90a.cu, HOPPER_RUNGS, one idea each, the gain
predicted before measuring). They are validated, padded and launched like every other kernel (helpers.launch),
and each runs in its own child process (helpers.isolate), so a fault or a hang in one cannot take the
others' results with it.

* ``rung_rows(k, timed, odd)`` (GPU, in the child): rung k checked against float64 (and its CPU model)
  at every size, and at the timed shapes timed next to cuBLAS FP16 measured in the same process just
  before it, with the same harness (helpers.timing.benchmark: cold L2, clocks and power sampled). The
  rows are the ladder experiment's (helpers.experiments.ladder._rung_row), plus the side-by-side cuBLAS
  timing, the launch grid and, for clustered rungs, how the clusters were launched.
* Experiment ``hopper`` (``python -m helpers.record --update-experiments hopper``): cuBLAS FP16 rows
  (rung 0, checked) at 2048, 4096, 6144, 8192 and two transformer-like shapes, then every rung's
  ``rung_rows`` in a child process each.
* ``lab/probes/hopper_try.py``: the same children at two odd sizes, 4096 and 8192, within a few minutes.

Reading the rows (no GPU): ``timed_rows`` / ``errors`` from the ladder experiment, ``gains`` (its gains,
judged by ``verdict`` against the measured p10-p90 spread),
``targets`` (the issue's 0.90x and 1.00x cuBLAS), ``shape_table`` (every shape's best rung and its
ratio) and ``MISS_NOTES`` (the explanations of a miss in either direction, written before measuring; rungs 8
and 10's rewritten after the record, rung 29's relabelled, ``SUPERSEDED_NOTES`` keeping the first texts).

The rung slides' readers: ``switch_lines`` (the lines of kernels/hopper_sm90a.cu that a template switch selects,
for one rung if asked), ``measured`` and ``miss_note`` (a recorded gain beside its prediction, and the note for a
miss, ``miss_text``), ``verdict_table`` (helpers.launch.verdicts as a table) and ``knob_sweep`` (a knob's recorded
sweep, each value with its spread and clock).
"""
from __future__ import annotations

import functools
import math
import re
import statistics
import sys
from pathlib import Path

import numpy as np

from ..clocks import clock_span
from ..kernels import ALL_RUNGS, hopper_ladder, rung_entry
from ..timing import round_ratio, row_ratio, verdict  # noqa: F401  (verdict: lesson 6 reads it as H.verdict)
from . import experiment
from .ladder import _inputs, _row_head, _rung_row, errors, gains, timed_rows  # noqa: F401  (re-exported)

SQUARE = (2048, 4096, 6144, 8192)
# transformer-like products: an MLP up-projection (8192 tokens, hidden 4096 -> 28672) and a skinny one
# (128 tokens through an 8192 x 8192 weight), where a 128 x 256 tile leaves most SMs idle; a short K
# (8192 x 8192 x 1024: the epilogue is a large share of each tile); a square size off the 128 x 256 grid
# (5000: 40 x 20 tiles, the last of 20 tile columns 136 wide, 800 tiles = 6.06 waves of 132), and one more (7000:
# 55 x 28 tiles, rows of 14000 bytes, where the square-size probe found the best rungs level with cuBLAS)
SHAPES = ((8192, 28672, 4096), (128, 8192, 8192), (8192, 8192, 1024), (5000, 5000, 5000), (7000, 7000, 7000))
TIMED = tuple((n, n, n) for n in SQUARE) + SHAPES
ODD_SIZES = ((1000, 1064, 1000), (257, 520, 136), (40, 24, 56))   # not multiples of 8 tiles, 64, nor 16
TRY_TIMED = ((4096, 4096, 4096), (8192, 8192, 8192))
LIVE = {"timed": TRY_TIMED, "odd_sizes": ODD_SIZES[:1]}   # what the lesson runs live on a Hopper GPU (minutes)
# Like for like (issue 25): the best rung writing C in a type over cuBLAS writing the same C type, timed
# side by side in one run (cold L2, N(0,1) FP16 inputs, FP32 accumulation)
TARGETS = {(4096, 4096, 4096): 1.00, (8192, 8192, 8192): 1.00, (2048, 2048, 2048): 0.95,
           (8192, 8192, 1024): 0.95, (5000, 5000, 5000): 0.95, (7000, 7000, 7000): 0.95, (128, 8192, 8192): 0.90}


def _progress(msg: str) -> None:
    """A progress line on stderr: what a child was doing when it hung is in the parent's error message."""
    print(msg, file=sys.stderr, flush=True)


C_TAGS = {"float16": "fp16c", "float32": "fp32c"}     # row-field infix of each C type's cuBLAS timing


def _cublas_side(A, B, M: int, N: int, K: int, c_dtype: str = "float32") -> dict:
    """cuBLAS timed in this process just before a rung, on the same A and B, writing each C type: FP16 C
    (cupy.matmul) and FP32 C (cublasGemmEx), fields ``cublas_fp16c_*`` and ``cublas_fp32c_*`` (ms, tflops,
    clocks). ``cublas_ms`` / ``cublas_tflops`` / ``cublas_sm_mhz`` ... are the timing with the rung's own C
    type (`c_dtype`): like for like. The FP32-C call is checked here (its first launch, poisoned with NaN);
    the FP16-C one by the experiment's rung-0 rows."""
    import cupy

    from ..cublas import same_c
    from ..timing import benchmark, gemm_flops

    out = {"cublas_c_dtype": c_dtype}
    for dt, tag in C_TAGS.items():
        cub = same_c(dt)
        Cc = cupy.full((M, N), np.nan, dtype=dt)
        cub.run(A, B, Cc)
        if dt == "float32":
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
    """The grid and cluster launch path of rung entry r on an M x N x K problem of contiguous FP16 rows, from the build
    the launcher uses for it (helpers.launch.build_for: rungs 25-26 choose their cluster per shape, rungs 29-30 their
    orientation: `built` names the kernel and tile)."""
    from ..launch import build_for, launch_path, resident_blocks

    out, b = {}, r
    if r.persistent:
        b, opts = build_for(r, M, N, 2 * K, 2 * N)
        out["resident"] = resident_blocks(b, options=opts)[1]
        if r.per_shape == "orientation":        # rungs 29-30: which of two kernels the launcher built here
            out["built"] = f"{b.name}, {b.block_tile[0]} x {b.block_tile[1]} tiles in clusters of {b.cluster[0]}"
    if r.cluster is not None:
        out["launch_path"] = launch_path(b)     # the kernel launched: rung 25's where rung 29 builds it
    return out


def _context_lost() -> bool:
    """After an exception: is this process's CUDA context still usable? (A fault or a trap is sticky.)"""
    import cupy

    try:
        cupy.cuda.runtime.deviceSynchronize()
        cupy.zeros(1).sum().get()
        return False
    except Exception:
        return True


def rung_rows(k: int, timed=TRY_TIMED, odd_sizes=ODD_SIZES, side_by_side: bool = True) -> list[dict]:
    """GPU (run it in a child process): rung k at the odd sizes (checked) and the timed shapes (checked,
    then timed, with cuBLAS FP16 timed just before it when side_by_side). One row per size; a row with
    'error' where something failed (after a CUDA fault the context is gone: the remaining sizes are
    not tried). Rung k may be on either ladder."""
    import cupy

    from ..device import require_gpu
    from ..errors import CourseError
    from ..launch import kernel_resources
    from ..numerics import reference_gemm

    r = rung_entry(k)                             # (or a rung pending its first GPU run: a probe)
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
            if row.get("median_ms") and side:          # the ratio to the cuBLAS call writing FP16 C, for every rung
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


def gpu_facts() -> dict:
    """GPU (child process): the GPU, versions and its clocks right now, for a run's header."""
    from .. import clocks
    from ..device import backend

    b = backend()
    if not b.is_gpu:
        return {"error": b.reason}
    g = b.gpu
    return {"name": g.name, "slug": g.slug, "cc": list(g.cc), "sms": g.sms, "l2_bytes": g.l2_bytes,
            "driver_cuda": g.driver, "runtime": g.runtime, "nvrtc": g.nvrtc, "cupy": g.cupy,
            "clocks_idle": clocks.read()}


def cluster_probe(launch_ex: bool = False) -> dict:
    """GPU (child process): does a plain launch (cuLaunchKernel, as CuPy launches) of a kernel declaring
    __cluster_dims__(2, 1, 1) form clusters of 2? Launches hopper_cluster_probe on 8 blocks; each block
    writes its cluster size, rank and cluster id. Falls back to cuLaunchKernelEx when the plain launch fails
    (launch_ex=True: uses cuLaunchKernelEx, the cluster named, without trying the plain launch)."""
    import cupy

    from ..compile import get_arch_kernel
    from ..device import require_gpu
    from ..hopper import launch_ex

    gpu = require_gpu("cluster probe")
    if gpu.cc != (9, 0):
        return {"skipped": f"sm_90a code; this GPU is {gpu.cc[0]}.{gpu.cc[1]}"}
    kern = get_arch_kernel("hopper_sm90a.cu", "hopper_cluster_probe", (9, 0), check_empty=False)
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
        launch_ex(kern, (8, 1, 1), (32, 1, 1), (out,), 0, (2, 1, 1))
        cupy.cuda.runtime.deviceSynchronize()
        result["path"] = "cuLaunchKernelEx"
    v = [int(x) for x in out.get()]
    result["blocks"] = [{"cluster_size": x >> 16, "rank": (x >> 8) & 255, "cluster": x & 255} for x in v]
    result["forms_clusters"] = all(b["cluster_size"] == 2 for b in result["blocks"]) and \
        [b["rank"] for b in result["blocks"]] == [0, 1] * 4
    return result


def shapes_for(r, timed=TIMED) -> list[tuple]:
    """The shapes of `timed` the record times rung entry `r` at: all of them, or its own `timed_shapes` (the skinny
    rungs: M = 128, 4096^3, 8192^3)."""
    return [tuple(s) for s in timed if r.timed_shapes is None or tuple(s) in r.timed_shapes]


@experiment("hopper", only_cc=(9, 0), needs="wgmma, TMA and clusters, on a Hopper GPU")
def hopper(timed=TIMED, odd_sizes=ODD_SIZES, timeout: int = 600):
    """Lesson 6's ladder (rung 7, then HOPPER_RUNGS): cuBLAS FP16 at every timed shape (rung 0, checked), then
    each rung in its own child process (rung_rows): checked at the odd sizes and the timed shapes, timed at
    the latter next to cuBLAS measured in the same process."""
    import cupy

    from ..device import require_gpu
    from ..isolate import run_isolated
    from .ladder import cublas_row

    gpu = require_gpu("hopper")
    peak = gpu.peaks.fp16 if gpu.peaks else None
    rows = []
    n_odd = len(odd_sizes)
    for i, (M, N, K) in enumerate(timed):
        A, B = _inputs(n_odd + i, M, N, K)        # the same inputs rung_rows uses for this shape
        rows.append(cublas_row(A, B, peak))
        del A, B
        cupy.get_default_memory_pool().free_all_blocks()
    for k, r in hopper_ladder().items():
        msg = r.skip_message(gpu.cc)
        if msg:
            rows += [dict(_row_head(r, *s), skipped=msg) for s in list(odd_sizes) + list(timed)]
            continue
        out = run_isolated("helpers.experiments.hopper:rung_rows", k, [list(s) for s in shapes_for(r, timed)],
                           [list(s) for s in odd_sizes], timeout=timeout)
        rows += [dict(_row_head(r, 0, 0, 0), **out)] if isinstance(out, dict) else out
    return rows


# --------------------------------------------------------------------------- reading the record
NCU_METRICS = {"tensor_pipe_pct": "Tensor pipe busy (%)", "dram_read_bytes": "DRAM read (GB)",
               "l2_hit_rate_pct": "L2 hit rate (%)", "achieved_occupancy_pct": "warps active (%)"}


@functools.lru_cache(maxsize=16)
def _ncu_file(path: str, mtime: float) -> dict:
    """One results/ncu-*.json, parsed once per version of the file (the lessons ask for several entries)."""
    import json

    return json.loads(Path(path).read_text())


def _ncu_files(directory=None):
    """(path, data) of every recorded Nsight Compute file (helpers.profile.list_profiles), newest first."""
    from ..profile import list_profiles
    from ..results import RESULTS_DIR

    paths = list_profiles(RESULTS_DIR if directory is None else directory)
    for path in sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True):
        yield path, _ncu_file(str(path), path.stat().st_mtime)


def ncu_at(target: str, shape, directory=None) -> dict | None:
    """The Nsight Compute entry of `target` ('rung15', 'fp8_promote_256', ...) profiled at `shape` (M, N, K) in
    the newest results/ncu-*.json that has it, or None."""
    for _, data in _ncu_files(directory):
        for e in data.get("kernels", []):
            if e.get("target") == target and list(e.get("size", data.get("size"))) == list(shape) and "counters" in e:
                return dict(e, date=e.get("date", data.get("date")), gpu=data["gpu"]["name"])
    return None


def ncu_compare(targets, shape, directory=None) -> list[dict]:
    """Nsight Compute side by side at one shape (ncu_at): for each of `targets` ('rung17', 'cublas_fp16c', ...) that
    was profiled there, its duration (µs), DRAM bytes read (MB) and DRAM busy (% of peak), L2 sectors read
    (millions), Tensor pipe busy (%), warps active (%) and its top stall reason."""
    out = []
    for t in targets:
        e = ncu_at(t, shape, directory)
        if e is None:
            continue
        c = e["counters"]
        out.append({"target": t, "us": c["duration_ns"] / 1e3, "dram_mb": c["dram_read_bytes"] / 1e6,
                    "dram_pct": c["dram_throughput_pct"], "l2_msectors": c["l2_read_sectors"] / 1e6,
                    "tensor_pct": c["tensor_pipe_pct"], "warps_pct": c["achieved_occupancy_pct"],
                    "top_stall": e["top_stalls"][0][0]})
    return out


def ncu_rows(rows: list[dict] | None = None, n: int = 4096, directory=None) -> tuple[list[dict], str]:
    """Nsight Compute counters of lesson 6's ladder (tools/ncu_counters.py targets rung7 ... rung15, from the
    newest results/ncu-*.json that has any of them), each with the TFLOP/s its rung reached in `rows` at n^3:
    ([{rung, kernel, tflops, counters, top_stalls}], label), or ([], why) when none is recorded."""
    want = {f"rung{k}": k for k in hopper_ladder()}
    for _, data in _ncu_files(directory):
        size = data.get("size")                   # entries at other shapes (--shape) are not this table's
        got = [e for e in data.get("kernels", []) if e.get("target") in want and "counters" in e
               and e.get("size", size) == size]
        if not any(want[e["target"]] >= 8 for e in got):
            continue
        tf = {r["rung"]: r["tflops"] for r in (timed_rows(rows, n) if rows else [])}
        out = [{"rung": want[e["target"]], "kernel": e["kernel"], "tflops": tf.get(want[e["target"]]),
                "counters": e["counters"], "top_stalls": e.get("top_stalls", [])} for e in got]
        label = f"Nsight Compute on {data['gpu']['name']}, {data['date'][:10]}, n = {data['size'][0]}"
        return sorted(out, key=lambda e: e["rung"]), label
    return [], ("not recorded yet: no results/ncu-*.json holds lesson 6's rungs (run `make gpu-check STAGES=ncu`, "
                "or lab/probes/hopper_try.py --ncu, on a Hopper GPU)")
def gain_path(rung: int) -> list[int]:
    """The rungs whose predicted gains lead from rung 7 to `rung`, in order: each rung's gain is over its base or
    the rung before it (rung 19's over 17, so rung 18 is not on rung 20's path)."""
    path, k = [], rung
    while k != 7:
        path.append(k)
        r = ALL_RUNGS[k]
        k = r.base if r.base is not None else k - 1
    return path[::-1]


def gain_at(rows: list[dict], rung: int, shape, predicted: float | None = None, base: int | None = None) -> dict | None:
    """Rung `rung`'s gain over the rung before it (or over rung `base`) at `shape` (gains' row), judged against
    `predicted` (a prediction made for this shape; default the registry's) by ``verdict`` on the p10-p90 spread."""
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


def cublas_beside(rows: list[dict], rung: int, shape) -> dict | None:
    """The cuBLAS timing (same C type) that the `hopper` experiment took just before `rung` at `shape`, the one its
    ratio ``frac_cublas`` divides by: {"cublas_tflops", "mhz": "rung's SM clock / cuBLAS's" (MHz)}; None if absent."""
    r = next((x for x in timed_rows(rows, shape) if x["rung"] == rung), None)
    tag = C_TAGS[r.get("c_dtype", "float32")] if r else None
    if r is None or not r.get(f"cublas_{tag}_tflops"):
        return None
    return {"cublas_tflops": r[f"cublas_{tag}_tflops"],
            "mhz": f"{r.get('sm_mhz') or '-'} / {r.get(f'cublas_{tag}_sm_mhz') or '-'}"}


def gain_table(rows: list[dict], rung: int, shape, predicted: float | None = None, base: int | None = None,
               digits: int = 2, clocks: bool = False):
    """gain_at as a one-row table (helpers.display.table): the shape, predicted and measured gain (over the rung
    before, or over `base`), the p10-p90 range, the verdict, and the TFLOP/s against cuBLAS writing the same C
    type. digits: the decimals of the gains (the verdict compares them unrounded: 3 shows a spread that starts just
    past the prediction); clocks: also cuBLAS's TFLOP/s beside the rung and both SM clocks (`cublas_beside`), for
    ratios whose cuBLAS timing ran at another clock than the rung's."""
    from ..display import table

    g = gain_at(rows, rung, shape, predicted, base)
    if g is None:
        return table([{"shape": "x".join(map(str, shape)), "verdict": "not recorded"}], ["shape", "verdict"])
    g = dict(g, shape="x".join(map(str, shape)), **(cublas_beside(rows, rung, shape) or {} if clocks else {}))
    over = f" over rung {base}" if base is not None else ""
    extra = ["cublas_tflops", "mhz"] if clocks else []
    f = f".{digits}f"
    return table([g], ["shape", "predicted", "measured", "low", "high", "verdict", "tflops", "frac_cublas", *extra],
                 ["M x N x K", f"predicted gain{over}", f"measured gain{over}", "p10-p90 from", "to", "", "TFLOP/s",
                  "x cuBLAS (same C)", *(["cuBLAS, TFLOP/s", "MHz, rung / cuBLAS"] if clocks else [])],
                 {"predicted": "g", "measured": f, "low": f, "high": f, "tflops": ".0f", "frac_cublas": ".2f",
                  "cublas_tflops": ".0f"})


def best_rung(rows: list[dict], shape, c_dtype: str, below: int | None = None):
    """The fastest correct lesson-6 rung (8 on; below `below`, if given) writing C in `c_dtype` at `shape` (by its
    ratio to cuBLAS writing the same C), or None."""
    rs = [r for r in timed_rows(rows, shape) if r["rung"] >= 8 and r.get("passed") and r.get("frac_cublas")
          and r.get("c_dtype", "float32") == c_dtype and (below is None or r["rung"] < below)]
    return max(rs, key=lambda r: r["frac_cublas"]) if rs else None


def flattered(best: dict) -> str:
    """Why a ratio of the best rung over cuBLAS cannot count as a target met, or "": cuBLAS's own timing (the
    yardstick) ran throttled (NVML's throttle reasons), at a lower SM clock than the rung's (by more than 2%), or
    with its median more than 5% above its 10th percentile: its runs were not one population, the clock moved
    during them (NVML's few samples can miss that: in session 9's record cuBLAS's FP16-C timing before rung 15
    at 8192^3 read 1980 MHz and no throttle, with a median 15% above its p10). A throttled rung against an
    unthrottled cuBLAS only makes the ratio worse, so it does not stop a miss."""
    tag = C_TAGS[best.get("c_dtype", "float32")]
    why = [t for t in best.get(f"cublas_{tag}_throttle") or [] if t != "none"]
    mine, theirs = best.get("sm_mhz"), best.get(f"cublas_{tag}_sm_mhz")
    if mine and theirs and theirs < 0.98 * mine:
        why.append(f"{theirs} MHz against the rung's {mine}")
    med, p10 = best.get(f"cublas_{tag}_ms"), best.get(f"cublas_{tag}_p10_ms")
    if med and p10 and med > 1.05 * p10:
        why.append(f"its median {med / p10:.2f}x its p10")
    return ("cuBLAS's timing: " + ", ".join(why)) if why else ""


def cublas_median(rows: list[dict], shape, c_dtype: str):
    """The median TFLOP/s of cuBLAS writing C in `c_dtype` at `shape` over every timing of it in the experiment (one
    before each lesson-6 rung) that NVML saw unthrottled, and how many there were; (None, 0) if none."""
    tag = C_TAGS[c_dtype]
    ts = sorted(r[f"cublas_{tag}_tflops"] for r in timed_rows(rows, shape)
                if r["rung"] >= 8 and r.get(f"cublas_{tag}_tflops")
                and not set(r.get(f"cublas_{tag}_throttle") or ["none"]) - {"none"})
    return (statistics.median(ts) if ts else None), len(ts)


def targets(rows: list[dict], goals=None) -> list[dict]:
    """Issue 25's targets, like for like: for each shape and C type, the best rung's ratio to cuBLAS writing
    the same C type (timed just before it), the goal, and whether it is met (``short``: how far below). A
    ratio at or above its goal that cuBLAS's throttled timing flatters (`flattered`) is not judged: ``met`` is
    None and ``why`` says so; the clocks of both timings are beside it (``mhz``: rung / cuBLAS). The best of many
    ratios favours the one whose cuBLAS timing ran slow, so a ratio at or above its goal counts as met only if the
    rung's TFLOP/s over the median of cuBLAS's unthrottled timings at that shape (``vs_median``, `cublas_median`)
    reaches the goal too; where it does not, the target is missed by that much and ``why`` says so."""
    out = []
    for shape, want in (TARGETS if goals is None else goals).items():
        for c_dtype in ("float16", "float32"):
            best = best_rung(rows, shape, c_dtype)
            row = {"shape": "x".join(map(str, shape)), "C": "FP16" if c_dtype == "float16" else "FP32",
                   "goal": want, "rung": None, "ratio": None, "vs_median": None, "met": None, "short": None,
                   "mhz": "", "why": ""}
            if best is not None:
                ratio, why = best["frac_cublas"], flattered(best)
                tag = C_TAGS[c_dtype]
                med, n = cublas_median(rows, shape, c_dtype)
                vs = round(best["tflops"] / med, 4) if med else None
                row.update(rung=best["rung"], ratio=ratio, vs_median=vs, met=ratio >= want,
                           short=None if ratio >= want else round(want - ratio, 3),
                           mhz=f"{best.get('sm_mhz') or '?'} / {best.get(f'cublas_{tag}_sm_mhz') or '?'}")
                if row["met"] and why:
                    row.update(met=None, why=why)
                elif row["met"] and vs is not None and vs < want:
                    row.update(met=False, short=round(want - vs, 3),
                               why=f"{vs:.3f}x the median of cuBLAS's {n} unthrottled timings here ({med:.0f} TFLOP/s)")
            out.append(row)
    return out


# --------------------------------------------------------------------------- the targets in alternating rounds
# Issue 25's targets judged head to head (session 25): the record's `hopper` experiment times cuBLAS once, just before
# each rung, so a ratio leans on that one timing; under the software power cap cuBLAS's timings spread by 10-15% and
# `targets` leaves most shapes unjudged. Experiment `hopper_targets` times each target's candidates and cuBLAS writing
# the same C one after the other, in TARGET_ROUNDS rounds, on the same inputs: a clock that moves touches both alike.
# The verdict (written before its first run): a target is met when the median of the round-by-round ratios (cuBLAS's
# time over the rung's, the same round) reaches the goal. A kernel that draws less power under the cap keeps a higher
# clock: that is part of its speed, so clocks are reported, not corrected for.
TARGET_ROUNDS = 7
# Predicted before the first run (session 25, from the record's ratios and cuBLAS's medians): (shape, C) -> ratio
TARGET_PREDICTED = {((4096,) * 3, "float16"): 0.99, ((4096,) * 3, "float32"): 0.99,
                    ((8192,) * 3, "float16"): 0.99, ((8192,) * 3, "float32"): 0.99,
                    ((2048,) * 3, "float16"): 0.97, ((2048,) * 3, "float32"): 0.96,
                    ((8192, 8192, 1024), "float16"): 0.97, ((8192, 8192, 1024), "float32"): 0.99,
                    ((5000,) * 3, "float16"): 0.95, ((5000,) * 3, "float32"): 0.96,
                    ((7000,) * 3, "float16"): 0.96, ((7000,) * 3, "float32"): 0.98,
                    ((128, 8192, 8192), "float16"): 0.95, ((128, 8192, 8192), "float32"): 0.90}


def target_candidates(rows: list[dict], shape, c_dtype: str) -> list[int]:
    """The rungs `hopper_targets` times at a target (each correct there in the record, writing C in `c_dtype`): the
    best by its ratio to cuBLAS (`best_rung`), the fastest by its own TFLOP/s (they differ where a slow cuBLAS timing
    flattered one rung's ratio) and the highest rung (the top of the ladder, whose one timing may have met a falling
    clock). One to three rung numbers, in that order."""
    best = best_rung(rows, shape, c_dtype)
    rs = [r for r in timed_rows(rows, shape) if r["rung"] >= 8 and r.get("passed") and r.get("tflops")
          and r.get("c_dtype", "float32") == c_dtype]
    out = [best["rung"]] if best else []
    if rs:
        for k in (max(rs, key=lambda r: r["tflops"])["rung"], max(r["rung"] for r in rs)):
            out += [] if k in out else [k]
    return out


def target_rounds(plan: list, rounds: int = TARGET_ROUNDS) -> list[dict]:
    """GPU (run it in a child process): for each [shape, c_dtype, goal, rungs] of `plan`, fresh N(0,1) FP16 inputs;
    each rung launched as the record launches it (helpers.launch.launcher, pad=True), C poisoned with NaN, checked
    against float64 and its model; then the rungs that passed and cuBLAS writing the same C (helpers.cublas.same_c)
    timed in alternating rounds (helpers.timing.alternating: cold L2, clocks). One cell per target; a cell with
    'error' where something failed (a lost context ends the run)."""
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
                cell["checks"].append({"rung": k, "passed": bool(chk.passed), "model": chk.model,
                                       "verdict": chk.verdict()[:300]})
                if chk.passed:
                    timed[f"rung {k}"] = fn
            del ref
            cub, Cc = same_c(c_dtype), cupy.full((M, N), np.nan, dtype=c_dtype)
            timed["cuBLAS"] = lambda: cub.run(A, B, Cc)
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
    """Issue 25's targets in alternating rounds: for each target shape and C type, `target_candidates` of the record's
    `hopper` experiment (run it first) and cuBLAS writing the same C, in one child process (`target_rounds`)."""
    from ..device import require_gpu
    from ..isolate import run_isolated
    from ..paths import results_dir
    from ..results import load_record

    gpu = require_gpu("hopper_targets")
    path = results_dir() / f"{gpu.slug}.json"      # (in a full `make record`: the previous record's `hopper`)
    rows = load_record(path).meta.get("experiments", {}).get("hopper") if path.exists() else None
    if not rows:
        return {"rounds": rounds, "cells": [], "error": f"{path} holds no `hopper` experiment to choose the rungs "
                "from: run `python -m helpers.record --update-experiments hopper` first"}
    plan = [[list(shape), c, goal, target_candidates(rows, shape, c)]
            for shape, goal in TARGETS.items() for c in ("float16", "float32")]
    out = run_isolated("helpers.experiments.hopper:target_rounds", plan, rounds, timeout=timeout)
    if isinstance(out, dict):                     # the child failed as a whole
        return {"rounds": rounds, "error": out.get("error"), "cells": []}
    return {"rounds": rounds, "rule": "met: the median of the round-by-round ratios reaches the goal",
            "predicted": [[list(s), c, v] for (s, c), v in TARGET_PREDICTED.items()], "cells": out}


def head_to_head(exp: dict) -> list[dict]:
    """Experiment `hopper_targets` read (no GPU): per target (shape, C type), the candidate whose median round-by-round
    ratio to cuBLAS is highest (`ratio`: cuBLAS's time over the rung's in the same round), its lowest and highest
    round (`low`, `high`), the rounds it was faster (`won`), its and cuBLAS's TFLOP/s (medians of the rounds), the SM
    clocks of both (`mhz`, rung / cuBLAS), the prediction, the goal, `met` (the median ratio reaches it) and `short`;
    `checked`: every candidate passed its check bit-identical to its model. A cell that failed has `error`."""
    pred = {(tuple(s), c): v for s, c, v in exp.get("predicted", [])}
    out = []
    for cell in exp.get("cells", []):
        shape = tuple(cell["shape"])
        row = {"shape": "x".join(map(str, shape)), "C": "FP16" if cell["c_dtype"] == "float16" else "FP32",
               "goal": cell["goal"], "predicted": pred.get((shape, cell["c_dtype"])), "rung": None, "ratio": None,
               "low": None, "high": None, "won": "", "tflops": None, "cublas": None, "mhz": "", "met": None,
               "short": None, "checked": all(c["passed"] and c["model"] == "identical" for c in cell["checks"]),
               "error": cell.get("error", "")}
        t = {x["what"]: x for x in cell["timed"]}
        cub = t.get("cuBLAS")
        best = None
        for what, x in t.items():
            if what == "cuBLAS" or cub is None:
                continue
            rr = round_ratio(x["round_ms"], cub["round_ms"])
            if best is None or rr["ratio"] > best[0]:
                best = (rr["ratio"], what, x, rr)
        if best:
            med, what, x, rr = best
            row.update(rung=int(what.split()[1]), ratio=med, low=rr["low"], high=rr["high"],
                       won=f"{rr['won']} of {rr['rounds']}", tflops=x["tflops"], cublas=cub["tflops"],
                       mhz=f"{clock_span(x['sm_mhz'])} / {clock_span(cub['sm_mhz'])}", met=med >= cell["goal"],
                       short=None if med >= cell["goal"] else round(cell["goal"] - med, 3))
        out.append(row)
    return out


def head_to_head_table(exp: dict):
    """head_to_head as a table (helpers.display.table): per target its shape, C type, goal, prediction, best rung, the
    median round-by-round ratio to cuBLAS writing the same C, the rounds it was faster, the clocks, whether every
    candidate was correct, and met ('yes', 'no', '-' where nothing was timed) with how far short."""
    from ..display import table

    rows = [dict(x, met={True: "yes", False: "no"}.get(x["met"], "-"), short=x["short"] or "")
            for x in head_to_head(exp)]
    return table(rows, ["shape", "C", "goal", "predicted", "rung", "ratio", "won", "mhz", "checked", "met", "short"],
                 ["M x N x K", "C", "goal", "predicted", "best rung", "x cuBLAS, same C", "rounds faster",
                  "MHz, rung / cuBLAS", "correct", "met", "short by"], {"predicted": ".2f", "ratio": ".3f",
                                                                        "short": ".3f"})


# The targets timed again (session 27): the same experiment run once more on the H200, kept as a log
# (results/logs/hopper-targets-repeat-<gpu>.json; the record keeps the first run). Predicted before it ran: the same
# targets met, every median ratio within 0.02 of the first run's.
REPEAT_LOG = "hopper-targets-repeat"
REPEAT_PREDICTED_WITHIN = 0.02


def repeat_rows(first: dict, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Experiment `hopper_targets` (`first`, the record's) beside its repeat (REPEAT_LOG): per target its shape, C type
    and goal, and per run the best rung, its median round-by-round ratio to cuBLAS, whether it met the goal and the SM
    clocks of the rung's and cuBLAS's rounds (head_to_head), with `change`: the second ratio less the first."""
    from ..results import load_log

    second = load_log(REPEAT_LOG, "python -m helpers.record --update-experiments hopper_targets", gpu_slug, directory)
    b = {(r["shape"], r["C"]): r for r in head_to_head(second)}
    yes = {True: "yes", False: "no", None: "-"}
    out = []
    for r in head_to_head(first):
        q = b[r["shape"], r["C"]]
        out.append({"shape": r["shape"], "C": r["C"], "goal": r["goal"], "rung1": r["rung"], "ratio1": r["ratio"],
                    "met1": yes[r["met"]], "mhz1": r["mhz"], "rung2": q["rung"], "ratio2": q["ratio"],
                    "met2": yes[q["met"]], "mhz2": q["mhz"],
                    "change": None if None in (r["ratio"], q["ratio"]) else q["ratio"] - r["ratio"],
                    "checked": r["checked"] and q["checked"]})
    return out


NCU_TARGETS_MADE_BY = "tools/ncu_counters.py --size N --out OUT --only RUNGS cublas_fp16c cublas_fp32c"


def ncu_log_rows(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """The table tools/ncu_counters.py prints, read back from its log results/logs/<name>-<gpu_slug>.log (for a run
    whose JSON did not come back from the device, e.g. "ncu-group16-4096"): per target, `ms`, `dram_mb` (read),
    `dram_wr_mb`, `l2_m` (L2 read sectors, millions), `tensor_pct` and the log's header line (`run`)."""
    from ..results import log_path

    lines = log_path(name, "tools/ncu_counters.py (its printed table)", gpu_slug, directory, ".log").read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("target ") and "DRAM rd MB" in ln)
    out = []
    for ln in lines[head + 1:]:
        if not ln.strip():
            break
        f = ln.split()
        out.append({"target": f[0], "ms": float(f[1]), "dram_mb": float(f[2]), "dram_wr_mb": float(f[3]),
                    "l2_m": float(f[4]), "tensor_pct": float(f[7]), "run": lines[0]})
    return out


def ncu_target_rows(sizes=(4096, 8192, 5000), gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Nsight Compute at the goals the targets table misses (results/logs/ncu-targets-<n>-<gpu>.json: the best rungs
    and cuBLAS writing each C type, one launch each, clocks left alone): per size and kernel, its C type, µs, DRAM read
    (MB), L2 read sectors (M), the tensor pipe's share of active cycles and the top stall; a rung's row also has its
    ratios to cuBLAS writing the same C (`x_time`, `x_dram`, `x_l2`: rung over cuBLAS) and `tensor_pts` (rung minus
    cuBLAS, points)."""
    from ..results import load_log

    out = []
    for n in sizes:
        log = load_log(f"ncu-targets-{n}", NCU_TARGETS_MADE_BY, gpu_slug, directory)
        by = {}
        for k in log["kernels"]:
            c = k["counters"]
            tgt = k["target"]
            c_dtype = ("float16" if tgt.endswith("fp16c") else "float32") if tgt.startswith("cublas") \
                else rung_entry(k["rung"]).out_dtype
            by[tgt] = {"n": n, "kernel": "cuBLAS" if k.get("rung") is None else f"rung {k['rung']}",
                       "C": "FP16" if c_dtype == "float16" else "FP32", "us": c["duration_ns"] / 1e3,
                       "dram_mb": c["dram_read_bytes"] / 1e6, "l2_m": c["l2_read_sectors"] / 1e6,
                       "tensor_pct": c["tensor_pipe_pct"], "top_stall": k["top_stalls"][0][0]}
        for tgt, r in by.items():
            if r["kernel"] != "cuBLAS":
                cub = by[f"cublas_{C_TAGS['float16' if r['C'] == 'FP16' else 'float32']}"]
                r.update(x_time=r["us"] / cub["us"], x_dram=r["dram_mb"] / cub["dram_mb"], x_l2=r["l2_m"] / cub["l2_m"],
                         tensor_pts=r["tensor_pct"] - cub["tensor_pct"])
            out.append(r)
    return out


def shape_table(rows: list[dict], shapes=TIMED) -> list[dict]:
    """For every timed shape: cuBLAS's TFLOP/s writing FP16 C and FP32 C (each timed just before the best
    rung of that C type), and the best rung of each C type with its like-for-like ratio."""
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


# Written before the measurement, for both directions, unless a comment says otherwise; the notebook prints the one
# the data calls for (miss_text fills in the fields of rungs 8 and 10's).
MISS_NOTES = {
    # rewritten after the record (SUPERSEDED_NOTES keeps the first text): rung 8 ran within 3% of rung 7's kernel-alone
    # speed at each size; x1.3 was one figure for both. {alone}: rung 7's kernel alone over rung 7, lesson 5's record
    8: {"better": "after the record: rung 8 was to run at rung 7's kernel-alone speed, x{alone:.2f} over rung 7 at "
                  "this size in lesson 5's record; x1.3 was one figure for both sizes.",
        "worse": "after the record: rung 8 was to run at rung 7's kernel-alone speed, x{alone:.2f} over rung 7 at this "
                 "size in lesson 5's record; x1.3 was one figure for both sizes."},
    9: {"better": "rung 8's drain at every K-tile was most of its gap: with the producer running ahead the "
                  "Tensor Cores see a steady stream of stages.",
        "worse": "the consumers still wait on TMA (4 stages of 48 KB are not deep enough to hide DRAM latency "
                 "at 2 tiles per SM), or the producer's single thread issues boxes too slowly."},
    10: {"better": "with one tile per CTA, the epilogue and the start-up of each CTA left the Tensor Cores idle "
                   "for longer than estimated; the persistent producer hides both.",
         # rewritten after the record (SUPERSEDED_NOTES keeps the first text, whose tile counts were wrong): the
         # counts are computed for the shape (miss_text)
         "worse": "after the record: {tiles} tiles make {waves} waves of {sms} CTAs ({busy:.0%} of them busy), as for "
                  "rung 9's grid, so the last wave costs both alike. Perhaps the fixed schedule (CTA c takes tiles c, "
                  "c + {sms}, ...) cannot pass a slow CTA's tiles to a fast one, as the hardware does for rung 9; "
                  "not measured."},
    11: {"better": "rung 10's plain order re-read B from DRAM for every row of tiles: L2 hit rate was the limit.",
         "worse": "at these sizes A and B mostly stay in L2 whatever the order, and the grouped order's ragged "
                  "group edges cost a little balance."},
    12: {"better": "L2 bandwidth, not DRAM, was the limit: multicast halves the L2 reads of B.",
         "worse": "cluster scheduling leaves SMs idle (clusters of 2 must fit in one GPC), or the consumers of "
                  "the two CTAs drift apart and each waits for the slower one to free a stage."},
    13: {"better": "the FP32 epilogue (8 scattered 32-byte stores per instruction, 128 KB per tile) was a large "
                   "share of each tile's time.",
         "worse": "the epilogue was already hidden behind the producer's next loads; staging through shared "
                  "memory adds barriers and waits on the TMA store's reads."},
    14: {"better": "the FP32 epilogue was on the critical path: with half the bytes and an eighth of the shared-"
                   "memory store instructions the consumers return to the Tensor Cores sooner.",
         "worse": "the epilogue was already hidden (the producer runs ahead during it), so the saved bytes only "
                  "lower DRAM traffic that was not the limit; the cvt instructions add a little."},
    15: {"better": "the clusters cost more than they saved at these sizes (a stage is refilled only when both "
                   "CTAs free it), so turning them off gains.",
         "worse": "multicast's saved L2 reads of B mattered more than estimated; where the chip is full this "
                  "rung is rung 14 without them."},
    # rung 16's notes were written after its first probe run (lab/probes/rung16.py), before the record
    16: {"better": "rung 15's lack of clusters cost more at these sizes than rung 14's record said.",
         "worse": "the same units as rung 14: a slower run of rung 14, not of the idea (it does not split here)."},
    # rung 17's notes were written after its first runs (its probe, then the record), so they explain rather than
    # predict; the lesson shows them only with its counters (Appendix D)
    17: {"better": "not observed: rung 17 ran slower than predicted at both shapes.",
         "worse": "the prediction counted L2 bytes per FLOP only; at 128 rows it reads B once yet keeps DRAM about "
                  "half busy (Nsight Compute), and each stage fewer costs speed (its knob rounds), which suggests it "
                  "waits for bytes in flight."},
    # rung 18's notes were written after its first runs (its probe, then the record): they describe, not predict
    18: {"better": "FP32 C cost less than the 2% predicted: at 4096^3 rung 18 ran closer to rung 17 than that, "
                   "whose mainloop it shares.",
         "worse": "not observed: rung 18 ran no slower than predicted at either shape."},
    # rungs 19-20's notes were written after their first runs (the probe, then the record): they describe
    19: {"better": "rung 17's time where the chip is full was not all L2 bandwidth: with the same bytes per FLOP, one "
                   "consumer warpgroup (half the arrivals at each stage's barrier, one warpgroup's issue work where "
                   "there were two) ran faster there too.",
         "worse": "not observed: rung 19 ran faster than predicted at both full-chip sizes."},
    20: {"better": "FP32 C cost less than the 2% predicted: rung 19's mainloop, not its epilogue, sets the time.",
         "worse": "not observed: rung 20 ran no slower than predicted at either shape."},
    # rungs 21-22's notes were written after their first probe run (session 11), before the record
    21: {"better": "the hint paid where the chip is full nearly as much as at M = 128, as its first probe found: what L2 costs "
                   "there did not hide the wait's sleep.",
         "worse": "the knob's gain at M = 128 came from that run's clocks or cuBLAS-free timings; in the record, with "
                  "cuBLAS timed beside each rung, less of it remains."},
    22: {"better": "as rung 21: the hint paid where the chip is full too.",
         "worse": "as rung 21: less of the knob's gain remains in the record."},
    # rungs 23-24's notes were written after rung 23's first probe run (session 12), before the record
    23: {"better": "rebuilding the descriptors cost rung 21 more where the chip is full than the probe switch's one "
                   "round at M = 128 suggested: there one consumer warpgroup issues every wgmma, so its instructions, "
                   "not L2, may be what limits it.",
         "worse": "the probe's gain came from its clocks; with cuBLAS timed beside each rung, less of it remains."},
    24: {"better": "as rung 23: the descriptor arithmetic cost more than the switch's round showed.",
         "worse": "as rung 23: less of the switch's gain remains in the record."},
    # rungs 25-26's notes were written after their per-shape probe run (session 14), before the record
    25: {"better": "where it is rung 14's build the code is the same, so a gain there is the two timings' clocks; at "
                   "5000^3, a quarter of B per CTA saved more L2 requests than the first run showed.",
         "worse": "where it is rung 14's build, the clocks again (the code is the same); at 5000^3 the first run's "
                  "gain was partly its clocks: the per-shape probe (results/logs/rung25-per-shape-probe) already "
                  "measured less."},
    26: {"better": "as rung 25: over rung 13, the same build but where rows start inside a line.",
         "worse": "as rung 25: less of the first run's gain remains in the record."},
    # rungs 29-30's notes were written after the chooser's first run (session 23, results/logs/ct-rung29-probe), before
    # the record
    # rung 29's "worse" relabelled in session 31 (SUPERSEDED_NOTES keeps the first text): its x1.052 is a ratio of median
    # times, the median of the round ratios x1.081
    29: {"better": "where it is rung 25's build the code is the same, so a gain there is the two timings' clocks; at "
                   "5000^3, the C^T tile's five whole waves paid more than in the chooser's first run.",
         "worse": "where it is rung 25's build, the clocks again (the code is the same); at 5000^3 the forced tile "
                  "gained x1.052 in alternating rounds (as the ratio of median times; x1.081 as the median of the "
                  "round ratios) and the chooser's first run x1.030: the box rows may cost more than the waves model "
                  "counts."},
    30: {"better": "as rung 29: over rung 26, the same build except where the C^T tile is chosen.",
         "worse": "as rung 29: at 5000^3 less of the forced tile's gain (x1.077) remains once both run in the record."},
}


# The first texts of the notes rewritten after the record, kept as they were written before measuring: rung 8's
# blamed the transpose or wgmma's MN-major reads for a miss that the per-size kernel-alone speeds explain; rung 10's
# counted 128 and 512 tiles where a 128 x 256 tile makes 512 and 2048.
# Rung 29's quoted a ratio of median times as the forced tile's gain (see below).
SUPERSEDED_NOTES = {
    8: {"better": "rung 7's transpose cost more than its share of the time suggested: the copy also "
                  "evicted A and B from L2 before rung 7 read them.",
        "worse": "the MN-major B tile is read by wgmma more slowly than K-major (a transposed operand path), "
                 "or four 8 KB boxes per stage cost the single issuing thread more than one 32 KB box."},
    10: {"worse": "132 CTAs walking 128 (4096) or 512 (8192) tiles leave a ragged last wave; a non-persistent "
                  "grid lets the hardware fill SMs as tiles finish, so the order of the tiles now matters more."},
    # rung 29's, as written before the record; session 31 labelled its x1.052 (a ratio of median times) beside the
    # median of the round ratios, x1.081, and softened its conclusion to "may"
    29: {"worse": "where it is rung 25's build, the clocks again (the code is the same); at 5000^3 the forced tile "
                  "gained x1.052 in alternating rounds and the chooser's first run x1.030: the box rows cost more "
                  "than the waves model counts."},
}


# --------------------------------------------------------------------------- the rung slides' readers
# Lesson 6's rung slides show the lines a template switch selects (kernels/hopper_sm90a.cu, read, not pasted), the
# recorded gain beside its prediction and the note for a miss, the check's verdicts and a knob's recorded sweep.
def wave_facts(shape, sms: int = 132) -> dict:
    """Rungs 9-16's 128 x 256 tiles at `shape` (M, N, ...) on `sms` CTAs: {"tiles", "waves", "last" (tiles in the
    last wave), "busy" (the share of the CTA slots of all waves that hold a tile), "sms"}."""
    from ..analysis import kernel_defines
    from ..exercises.hopper import waves

    d = kernel_defines("hopper_sm90a.cu")
    w, busy = waves(shape[0], shape[1], sms, d["HBM"], d["HBN"])
    tiles = round(busy * w * sms)
    return {"tiles": tiles, "waves": w, "last": tiles - (w - 1) * sms, "busy": busy, "sms": sms}


def kernel_alone_gain(ladder: list[dict], n: int) -> float:
    """Rung 7's kernel alone (without its transpose of B) over rung 7 as timed, at n^3, in lesson 5's record (the
    ladder experiment's rows): the speed rung 8 was predicted to reach."""
    r7 = next(r for r in timed_rows(ladder, n) if r["rung"] == 7)
    return r7["tflops_kernel_only"] / r7["tflops"]


def miss_text(rung: int, direction: str, shape, ladder: list[dict] | None = None, sms: int = 132) -> str:
    """MISS_NOTES[rung][direction] for `shape` (an int n for n^3, or (M, N, K)): the fields of a note rewritten after
    the record are filled in, {tiles} {waves} {busy} {sms} from wave_facts and {alone} from kernel_alone_gain (which
    needs lesson 5's `ladder` rows)."""
    note = MISS_NOTES[rung][direction]
    if "{" not in note:
        return note
    shape = (shape,) * 3 if isinstance(shape, int) else tuple(shape)
    facts = wave_facts(shape, sms)
    if "{alone" in note:
        if ladder is None:
            raise ValueError(f"rung {rung}'s note needs lesson 5's ladder rows (ladder=...)")
        facts["alone"] = kernel_alone_gain(ladder, shape[0])
    return note.format(**facts)


def measured(rows: list[dict], rung: int, ladder: list[dict] | None = None, sms: int = 132, sizes=(4096, 8192)):
    """The rung's recorded gain over the rung before it at each of `sizes` (n^3), beside its prediction (gains: judged
    against the spread that the p10 and p90 timings of both rungs allow), and the note for a miss (miss_text; once,
    when both sizes miss the same way): a table (helpers.display.table), one row per size."""
    from ..display import table

    out, said = [], set()
    for n in sizes:
        g = dict(next(x for x in gains(rows, n) if x["rung"] == rung), n=n)
        note = miss_text(rung, g["direction"], n, ladder, sms) if g["direction"] else ""
        g["note"] = "as above" if note and note in said else note
        said.add(note)
        out.append(g)
    return table(out, ["n", "predicted", "measured", "low", "high", "verdict", "note"],
                 ["n", "predicted", "measured", "p10-p90 from", "to", "verdict",
                  "for a miss: written before measuring, or after the record where it says so"],
                 {"predicted": "g", "measured": ".2f", "low": ".2f", "high": ".2f"})


def miss_note(rows: list[dict], rung: int, shape, predicted: float | None = None, base: int | None = None,
              written: str = "after its first run", ladder: list[dict] | None = None, sms: int = 132) -> None:
    """Print the note written for a miss (miss_text) in the direction the record's verdict (gain_at) calls for, or,
    without a miss, the verdict."""
    g, at = gain_at(rows, rung, shape, predicted, base), "x".join(map(str, shape))
    if g is not None and g["direction"]:
        print(f"why rung {rung} was {g['direction']} than predicted at {at} (written {written}):",
              miss_text(rung, g["direction"], shape, ladder, sms))
    else:
        print(f"rung {rung} at {at}: {g['verdict'] if g else 'not recorded'} (no miss to explain)")


def verdict_table(lines: list[str]):
    """helpers.launch.verdicts' lines, one row per rung (a line it cannot split goes whole into the last column); the
    check's text is printed once, above, when every rung's is the same."""
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


def knob_rows(rows: list[dict], rung: int, knob: str) -> list[dict]:
    """One knob of one rung as the H200 recorded it (the knobs experiment's rows): a row per value, in order, the rung
    as recorded among them, each with its speed over the rung as recorded (`ratio`), the spread that both timings'
    p10 and p90 allow (`low`, `high`, as gains computes it; None for the rung itself), its SM clock (`clock`,
    helpers.clocks.clock_text) and whether its check passed."""
    from ..clocks import clock_text
    from ..tryout import KNOBS

    default = KNOBS[rung][knob].default
    mine = [r for r in rows if r["rung"] == rung and r.get("knob") in (None, knob)]
    base = next(r for r in mine if r.get("knob") is None)
    out = []
    for r in sorted(mine, key=lambda r: default if r.get("knob") is None else r["value"]):
        own = r.get("knob") is None
        spread = not own and all(x.get(k) for x in (r, base) for k in ("p10_ms", "p90_ms"))
        out.append({"value": f"{knob}={default} (as recorded)" if own else f"{knob}={r['value']}",
                    "ratio": r["vs_default"], "low": base["p10_ms"] / r["p90_ms"] if spread else None,
                    "high": base["p90_ms"] / r["p10_ms"] if spread else None, "clock": clock_text(r),
                    "passed": "yes" if r["passed"] else "NO"})
    return out


def knob_sweep(rows: list[dict], rung: int, knob: str):
    """knob_rows as a table (helpers.display.table), headed by the rung and the size it was timed at."""
    from ..display import table

    n = next(r["m"] for r in rows if r["rung"] == rung)
    shown = [{k: "" if v is None else v for k, v in r.items()} for r in knob_rows(rows, rung, knob)]
    return table(shown, ["value", "ratio", "low", "high", "clock", "passed"],
                 [f"rung {rung}, {n}^3", "x as recorded", "p10-p90 from", "to", "SM clock", "correct"],
                 {"ratio": ".2f", "low": ".2f", "high": ".2f"})


# the template switches of a device function, and the lines each selects (block_end, code_only: helpers.display)
_BRANCH = re.compile(r"^\s*(?P<close>\}\s*else\s*)?(?:if\s*(?:constexpr\s*)?\((?P<cond>.*)\))?\s*\{\s*(?://.*)?$")


def _branch(line: str):
    """(condition, or None for a plain else; opens after a closing brace?) for a line that opens an if / else if /
    else block, else None."""
    m = _BRANCH.match(line)
    if not m or (m["cond"] is None and not m["close"]):
        return None
    return m["cond"], bool(m["close"])


_OPS = {"Lt": "__lt__", "LtE": "__le__", "Gt": "__gt__", "GtE": "__ge__", "Eq": "__eq__", "NotEq": "__ne__",
        "Add": "__add__", "Sub": "__sub__", "Mult": "__mul__", "Mod": "__mod__", "Div": "__floordiv__"}


def _decide(cond: str | None, settings: dict):
    """True, False, or None (not decidable from `settings`, {name: int or bool}) for the condition of a C++ if: names,
    numbers, !, &&, ||, comparisons and integer arithmetic; anything else is undecidable. None as `cond` (an else):
    True."""
    import ast

    if cond is None:
        return True
    expr = re.sub(r"!(?!=)", " not ", cond.replace("&&", " and ").replace("||", " or "))
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name):
            return settings.get(n.id, {"true": True, "false": False}.get(n.id))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            v = ev(n.operand)
            return None if v is None else not v
        if isinstance(n, ast.BoolOp):
            vs, want = [ev(v) for v in n.values], isinstance(n.op, ast.Or)   # or: one True decides; and: one False
            if any(v is not None and bool(v) == want for v in vs):
                return want
            return None if None in vs else not want
        if isinstance(n, ast.BinOp) and type(n.op).__name__ in _OPS:
            a, b = ev(n.left), ev(n.right)
            return None if a is None or b is None else getattr(int(a), _OPS[type(n.op).__name__])(int(b))
        if isinstance(n, ast.Compare) and all(type(o).__name__ in _OPS for o in n.ops):
            vs = [ev(x) for x in (n.left, *n.comparators)]
            if None in vs:
                return None
            return all(getattr(int(a), _OPS[type(o).__name__])(int(b)) for a, o, b in zip(vs, n.ops, vs[1:]))
        return None

    return ev(tree)


def template_settings(rung: int, fn: str = "ws_gemm") -> dict:
    """The template arguments rung `rung`'s kernel gives device function `fn` ({parameter: value}, defaults filled
    in; true / false as bools, numbers and the kernel file's integer #defines as ints; other names left out)."""
    from ..analysis import kernel_defines
    from ..display import device_functions, kernel_source

    spec = ALL_RUNGS[rung]
    head = re.match(r"\s*template\s*<([^>]*)>", device_functions(spec.file)[fn])[1]
    params = [re.match(r"\s*\w+\s+(\w+)\s*(?:=\s*(.+?))?\s*$", p).groups() for p in head.split(",")]
    call = re.search(rf"\b{fn}\s*<([^>]*)>\s*\(", kernel_source(spec.file, spec.name))[1]
    args = [a.strip() for a in call.split(",")]
    defines = kernel_defines(spec.file)
    out = {}
    for k, (name, default) in enumerate(params):
        v = args[k] if k < len(args) else default
        v = {"true": True, "false": False}.get(v, defines.get(v, int(v) if v and v.isdigit() else None))
        if v is not None:
            out[name] = v
    return out


def switch_lines(switch: str, fn: str = "ws_gemm", blocks_only: bool = False, rung: int | None = None):
    """The lines of device function `fn` (kernels/hopper_sm90a.cu) that template switch `switch` selects, as Markdown:
    every if / else-if chain with a branch that tests it (a branch before that one shown by its first line only),
    every other block opened by a line naming it and, unless `blocks_only`, every line naming it. With `rung`, a
    branch that rung's template arguments (template_settings) rule out is shown by its first line and a comment, so
    what is left is what the rung runs. '...' marks the lines left out between the pieces."""
    from IPython.display import Markdown

    from ..display import block_end, code_only, device_functions

    lines = device_functions("hopper_sm90a.cu", as_built=True)[fn].splitlines()
    settings = template_settings(rung, fn) if rung is not None else {}
    names = re.compile(rf"\b{switch}\b")
    shown: dict[float, str] = {}                      # line number -> its text (k + 0.5: what stands for a branch)
    picked: list[tuple[int, int]] = []                # the ranges of lines to show

    def walk(lo: int, hi: int) -> None:
        i = lo
        while i < hi:
            b = _branch(lines[i])
            if b is None or b[1]:                      # not the first line of an if-chain
                shown[i] = lines[i]
                opens = code_only(lines[i]).count("{") - code_only(lines[i]).count("}")
                if names.search(lines[i]) and (opens > 0 or not blocks_only):
                    picked.append((i, block_end(lines, i) if opens > 0 else i))
                i += 1
                continue
            heads, j = [i], block_end(lines, i)       # the chain's branches (first lines), then its last line
            while _branch(lines[j]) is not None and _branch(lines[j])[1]:
                heads.append(j)
                j = block_end(lines, j)
            conds = [_branch(lines[h])[0] for h in heads]
            first = next((k for k, c in enumerate(conds) if c is not None and names.search(c)), None)
            taken = False
            for k, (h, c) in enumerate(zip(heads, conds)):
                v = _decide(c, settings)
                shown[h], pad = lines[h], re.match(r"\s*", lines[h])[0] + "    "
                if taken or v is False:
                    why = "an earlier branch is taken" if taken else f"{c} is false"
                    shown[h + 0.5] = f"{pad}// (not in rung {rung}: {why})"
                elif first is not None and k < first:
                    shown[h + 0.5] = f"{pad}// ..."
                else:
                    walk(h + 1, heads[k + 1] if k + 1 < len(heads) else j)
                taken = taken or v is True
            shown[j] = lines[j]
            if first is not None:
                picked.append((i, j))
            i = j + 1

    walk(3, len(lines))                                # (lines 0-2: the template's parameter list)
    spans: list[list[int]] = []                        # the picked ranges, merged
    for a, b in sorted(picked):
        if spans and a <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    out = []
    for n, (a, b) in enumerate(spans):
        out += (["    ..."] if n else []) + [shown[k] for k in sorted(shown) if a <= k <= b]
    how = f" in rung {rung}" if rung is not None else ""
    return Markdown(f"The lines of `{fn}` that `{switch}` selects{how}:\n```cuda\n" + "\n".join(out) + "\n```")

# --------------------------------------------------------------------------- the same GEMM on other values
INPUT_KINDS = {"normal": "N(0,1), rounded to FP16 (every other timing in the course)",
               "uniform": "U(-1,1), rounded to FP16",
               "e4m3": "N(0,1) rounded to E4M3, then held as FP16 (lesson 7's inputs: 3 significand bits)",
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
    """GPU (a child process): the same n^3 GEMM on each kind of input values. Each rung is checked once per
    kind (float64 reference and model, every element); then, `rounds` times in turn, cuBLAS writing FP16 C,
    cuBLAS writing FP32 C and each rung are timed one after the other (cold L2, clocks beside each): a row
    per timing, so what changes with the values and what changes from one run to the next can be told
    apart."""
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
    """The same 8192^3 GEMM on N(0,1), U(-1,1), E4M3-valued and zero FP16 inputs: cuBLAS (FP16 C, FP32 C) and
    rungs 13 and 14, timed in turn, twice, with clocks (input_rows, in a child process)."""
    from ..isolate import run_isolated

    out = run_isolated("helpers.experiments.hopper:input_rows", n, timeout=timeout)
    return [out] if isinstance(out, dict) else out


def input_table(rows: list[dict]) -> list[dict]:
    """One row per kind of input: each timed kernel's TFLOP/s (the median of its rounds, and the rounds'
    range), the SM clock range while they ran, and each rung's ratio to cuBLAS writing the same C type."""
    out = []
    for kind in INPUT_KINDS:
        rs = [r for r in rows if r.get("inputs") == kind and r.get("tflops")]
        if not rs:
            continue
        row = {"inputs": kind, "all_passed": all(r["passed"] for r in rs)}
        who = list(dict.fromkeys(r["who"] for r in rs))
        med = {}
        for w in who:
            tf = sorted(r["tflops"] for r in rs if r["who"] == w)
            med[w] = float(np.median(tf))
            row[w] = med[w]
            row[f"{w} range"] = (tf[0], tf[-1])
        clocks = [r.get("sm_mhz") for r in rs if r.get("sm_mhz")]
        row["sm_mhz"] = (min(clocks), max(clocks)) if clocks else None
        for w in who:
            if w.startswith("rung"):
                dt = next(r["c_dtype"] for r in rs if r["who"] == w)
                base = "cublas_fp16" if dt == "float16" else "cublas_fp16_f32c"
                row[f"{w} / cuBLAS same C"] = med[w] / med[base] if base in med else None
        out.append(row)
    return out


# --------------------------------------------------------------------------- rung 16 (experiment tail_split)
def parts_sweep(ts: dict) -> str:
    """Rung 16's TFLOP/s at the record's shape for each number of parts its tail units were cut into (the
    record's experiments.tail_split, lab/probes/tail_split_sweep.py): one line."""
    return ", ".join(f"{r['parts']} part{'s' * (r['parts'] > 1)}: {r['tflops']:.0f} ({_mhz(r)} MHz)"
                     for r in ts["parts_sweep"]) + " TFLOP/s (SM clock)"


def _mhz(r: dict):
    """The SM clock sampled during a probe's timing (helpers.timing.benchmark's clocks), or '?'."""
    return (r.get("clocks") or {}).get("sm_mhz", "?")


def l2_sectors_per_ktile(target: str, sizes=(4096, 5000)) -> dict:
    """L2 sectors `target` read per 128 x 256 tile and K-tile of 64 at n^3 for each n (Nsight Compute, ncu_at)."""
    out = {}
    for n in sizes:
        e = ncu_at(target, (n, n, n))
        if e is not None:
            out[n] = round(e["counters"]["l2_read_sectors"] / (-(-n // 128) * -(-n // 256) * -(-n // 64)))
    return out


def alignment_rows(rows: list[dict]) -> list[dict]:
    """One row per row stride in a row-stride probe's rows (experiments.tail_split.row_alignment,
    row_alignment_cublas, row_stride_skinny): the bytes per row (of B), the 32-byte sectors one 128-byte TMA box
    row touches on average (helpers.analysis.sectors_per_row), and each kernel's TFLOP/s and SM clock ('rung 14',
    'rung 14 MHz', ...; rung 0 is 'cuBLAS')."""
    from ..analysis import sectors_per_row

    out = {}
    for r in rows:
        row = out.setdefault(r["row_bytes"], {"row_bytes": r["row_bytes"], "sectors": sectors_per_row(r["row_bytes"])})
        name = "cuBLAS" if r["rung"] == 0 else f"rung {r['rung']}"
        row[name] = r["tflops"]
        row[f"{name} MHz"] = _mhz(r)
    return [out[b] for b in sorted(out)]


def ncu_alignment_rows(name: str = "ncu-row-alignment", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/ncu_row_alignment.py's run (results/logs/<name>-<gpu_slug>.json): per kernel and row stride, one
    launch under Nsight Compute (clocks not locked): µs, L2 read requests and sectors (M), sectors per request, DRAM
    read (MB), the tensor pipe's share of active cycles, the long-scoreboard stall (cycles per issued instruction)
    and the top stall."""
    from ..results import load_log

    log = load_log(name, "lab/probes/ncu_row_alignment.py OUT.json", gpu_slug, directory)
    out = []
    for r in log["rows"]:
        c = r["counters"]
        out.append({"kernel": r["what"], "row_bytes": r["row_bytes"], "us": c["duration_ns"] / 1e3,
                    "requests_m": c["l2_requests"] / 1e6, "sectors_m": c["l2_read_sectors"] / 1e6,
                    "per_request": c["l2_read_sectors"] / c["l2_requests"], "dram_mb": c["dram_read_bytes"] / 1e6,
                    "tensor_pct": c["tensor_pipe_pct"], "long_scoreboard": r["stalls"]["long_scoreboard"],
                    "top_stall": r["top_stalls"][0][0]})
    return sorted(out, key=lambda r: (r["kernel"], r["row_bytes"]))


# lab/probes/wait_hint.py's sets kept as logs (results/logs/<name>-<gpu>.json): rows key -> (name, what wrote it)
SWITCH_LOGS = {"l2_prefetch": ("l2-prefetch", "lab/probes/wait_hint.py OUT.json --prefetch at commit 1bcb7f2"),
               "group_m": ("group-m", "lab/probes/wait_hint.py OUT.json --group"),
               "cluster_m": ("cluster-m", "lab/probes/wait_hint.py OUT.json --cluster")}


def switch_rows(key: str, default, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A run of lab/probes/wait_hint.py with one set (rows keyed `key`: SWITCH_LOGS), kept in results/logs/: per
    rung, shape and value, the median TFLOP/s of three alternating rounds, its gain over the value `default` (the rung
    as recorded) and its ratio to cuBLAS writing the same C in the same rounds (each the median of the round-by-round
    ratios, helpers.timing.row_ratio), whether its checks passed, and the SM clocks of its rounds."""
    from ..results import load_log

    log = load_log(*SWITCH_LOGS[key], gpu_slug, directory)
    ok = {(r["rung"], r[key], tuple(r["shape"])): r["passed"] for r in log if "passed" in r}
    runs = [r for r in log if "median_ms" in r]
    cub = {(r["what"], tuple(r["shape"])): r for r in runs if r[key] is None}
    ref = {(r["what"], tuple(r["shape"])): r for r in runs if r[key] == default}
    out = []
    for r in runs:
        if r[key] is None:
            continue
        rung, shape = int(r["what"].split()[1]), tuple(r["shape"])
        c = "float32" if rung_entry(rung).out_dtype == "float32" else "float16"
        out.append({"kernel": r["what"], "shape": "x".join(map(str, shape)), key: r[key], "tflops": r["tflops"],
                    "gain": row_ratio(r, ref[r["what"], shape]), "vs_cublas": row_ratio(r, cub[f"cuBLAS {c} C", shape]),
                    "passed": bool(ok.get((rung, r[key], shape))), "mhz": clock_span(r["sm_mhz"])})
    return out


ORDER_PREDICTED = {4096: 1.005, 8192: 1.01}    # lab/probes/wait_hint.py --order's docstring, written before its run


def _switch_rows(log: list[dict], key: str, base, new, predicted: dict) -> list[dict]:
    """A lab/probes/wait_hint.py log of one switch (rows keyed `key`) per shape and rung: the `new` build over the
    `base` build round by round (`x`: the median of base's time over new's, the same round; `low`, `high`: the lowest
    and highest round; `won`: rounds new was faster), judged against `predicted` ({n: ratio}) by the course's rule
    (`verdict`, helpers.timing.verdict), each build's median round-by-round ratio to cuBLAS writing the same C
    (`vs_base`, `vs_new`), whether both builds passed their checks (bit-identical to the model) and the SM clocks of
    the new build's rounds."""
    ok = {}
    for r in log:
        if "passed" in r:
            k = (r["rung"], tuple(r["shape"]))
            ok[k] = ok.get(k, True) and r["passed"] and r["model"] == "identical"
    t = {(r["what"], r[key], tuple(r["shape"])): r for r in log if "median_ms" in r}
    out = []
    for (rung, shape), passed in ok.items():
        a, b = t[f"rung {rung}", base, shape], t[f"rung {rung}", new, shape]
        cub = t[f"cuBLAS {rung_entry(rung).out_dtype} C", None, shape]["round_ms"]
        x = round_ratio(b["round_ms"], a["round_ms"])
        out.append({"shape": f"{shape[0]}^3", "rung": rung, "C": "FP16" if rung_entry(rung).out_dtype == "float16"
                    else "FP32", "predicted": predicted[shape[0]], "x": x["ratio"], "low": x["low"], "high": x["high"],
                    "verdict": verdict(predicted[shape[0]], x["low"], x["high"]), "won": f"{x['won']} of {x['rounds']}",
                    "vs_base": round_ratio(a["round_ms"], cub)["ratio"],
                    "vs_new": round_ratio(b["round_ms"], cub)["ratio"],
                    "checked": passed, "mhz": clock_span(b["sm_mhz"])})
    return out


def order_rows(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/wait_hint.py --order (results/logs/order-<gpu>.json): per shape and rung, GROUP_M 16 over 8 as
    _switch_rows gives it, with `x16` (its `x`), `vs8` and `vs16` (its `vs_base`, `vs_new`)."""
    from ..results import load_log

    log = load_log("order", "lab/probes/wait_hint.py OUT.json --order", gpu_slug, directory)
    return [dict(r, x16=r["x"], vs8=r["vs_base"], vs16=r["vs_new"])
            for r in _switch_rows(log, "group_m", 8, 16, ORDER_PREDICTED)]


# TILE_ORDER=1 (kernels/hopper_sm90a.cu, issue 25, session 31): the units along a Hilbert curve where their grid is
# square with a power-of-two side. Predicted before any GPU ran it (the kernel's comment): over the rung as recorded,
# rungs 29 and 30, the best rungs where the targets at 4096^3 (FP32 C) and 8192^3 (FP16 C) were missed twice.
HILBERT_PREDICTED = {4096: 1.00, 8192: 1.005}
HILBERT_MADE_BY = "lab/probes/wait_hint.py OUT.json --hilbert"


def hilbert_rows(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/wait_hint.py --hilbert (results/logs/hilbert-order-<gpu>.json): per shape and rung, TILE_ORDER=1
    over the rung as recorded (TILE_ORDER=0), as _switch_rows gives it, judged against HILBERT_PREDICTED."""
    from ..results import load_log

    return _switch_rows(load_log("hilbert-order", HILBERT_MADE_BY, gpu_slug, directory), "tile_order", 0, 1,
                        HILBERT_PREDICTED)


# --------------------------------------------------------------------------- rungs 25-26: clusters of 4 by shape
QUAD_GRID_MADE_BY = ("helpers.launch.resident_blocks(helpers.kernels.rung_entry(k)) for k = 14, 25, 13, 26, printed "
                     "one line each (session 14, call 6)")


def quad_grid(gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """{cluster size: clusters the driver let run at once}, from the grids rungs 14 and 25 (13 and 26) launched with
    (results/logs/quad-grid-<gpu_slug>.log)."""
    import re

    from ..results import log_path

    text = log_path("quad-grid", QUAD_GRID_MADE_BY, gpu_slug, directory, suffix=".log").read_text()
    return {int(c): int(n) for n, c in re.findall(r"'(\d+) clusters of (\d+) \(the driver", text)}


def quad_rows(rows: list[dict], predicted: float, shapes=TIMED, grid: dict | None = None) -> list[dict]:
    """Rung 25's choice at each shape (helpers.kernels.quad_choice, FP16 rows of K and N halves, the driver's counts
    from quad_grid): whether a row of A or B starts inside a 128-byte line, the waves of units of 4 and of 2 tiles,
    the cluster built, and the recorded gain of rung 25 over rung 14 with its spread (gain_at) and its verdict
    against `predicted` where clusters of 4 are built, x1.0 where it is rung 14's build."""
    from ..kernels import cluster_waves, quad_choice, starts_inside_line

    grid = quad_grid() if grid is None else grid
    out = []
    for M, N, K in shapes:
        choice = quad_choice(M, N, 2 * K, 2 * N, lambda: (grid[4], grid[2]))
        want = predicted if choice == 4 else 1.0
        g = gain_at(rows, 25, (M, N, K), want, base=14)
        out.append({"shape": f"{M}x{N}x{K}", "inside": "yes" if starts_inside_line(2 * K, 2 * N) else "no",
                    "waves4": cluster_waves(M, N, 4, grid[4]), "waves2": cluster_waves(M, N, 2, grid[2]),
                    "cluster": choice, "predicted": want,
                    **({k: g[k] for k in ("measured", "low", "high", "verdict")} if g else {"verdict": "not recorded"})})
    return out


# --------------------------------------------------------------------------- what cuBLAS runs (lesson 6, Appendix D)
FP8_CALLS = {"fp8default": "FP8, default accumulation", "fp8fast": "FP8, fast accumulation"}


def cublas_kernel_rows(ck: dict, sms: int = 132) -> list[dict]:
    """One row per cuBLAS call in the record's experiments.cublas_kernels (lab/probes/cublas_kernels.py): the
    shape, the C type, the kernel's name, the tile and the K-tile x stages its name gives (nvjet_sm90_<types>_
    <tile>_<K-tile>x<stages>_<cluster>_...; in cuBLAS's column-major terms: a x b is a columns by b rows of our
    C), the grid, the cluster, the dynamic shared memory (KB) and Nsight Compute's duration (µs; clocks not
    locked). Computed from the name: ring_kb, the A and B tiles of all stages (KB; 1-byte elements for cuBLASLt's
    FP8 calls, whose C column names the accumulation), and the output tiles and waves (tiles / sms) of that tile
    shape."""
    import re

    out = []
    for call in ck["calls"]:
        fp8 = call["c"].startswith("fp8")                 # cuBLASLt's FP8 calls (--fp8): 1-byte A and B
        for k in call["kernels"]:
            m = re.match(r"nvjet_sm90_\w+?_(\d+x\d+)_(\d+)x(\d+)_(\d+x\d+)_", k["name"])
            row = {"shape": "x".join(map(str, call["shape"])), "C": FP8_CALLS.get(call["c"], call["c"][:4].upper()),
                   "kernel": k["name"],
                   "tile": None, "k_tile": None, "stages": None, "cluster_name": None, "ring_kb": None, "tiles": None,
                   "waves": None, "grid": int(k["launch__grid_size"]), "cluster": int(k["launch__cluster_dim_x"]),
                   "smem_kb": k["launch__shared_mem_per_block_dynamic"] / 1024, "us": k["gpu__time_duration.sum"] / 1e3}
            if m:
                a, b = map(int, m.group(1).split("x"))
                M, N, _ = call["shape"]
                tiles = -(-N // a) * -(-M // b)
                row.update(tile=m.group(1), k_tile=int(m.group(2)), stages=int(m.group(3)), cluster_name=m.group(4),
                           ring_kb=int(m.group(3)) * (a + b) * int(m.group(2)) * (1 if fp8 else 2) / 1024, tiles=tiles,
                           waves=tiles / sms)
            out.append(row)
    return out


def square_rows(sq: dict) -> list[dict]:
    """experiments.square_sizes (one run of lab/probes/rungs_side_by_side.py): for each shape and C type the
    best rung (best_rung), its TFLOP/s and SM clock, and cuBLAS writing the same C (timed just before it) with its clock."""
    out = []
    for shape in dict.fromkeys((r["m"], r["n"], r["k"]) for r in sq["rows"] if r.get("tflops")):
        for c_dtype, tag in C_TAGS.items():
            b = best_rung(sq["rows"], shape, c_dtype)
            if b is not None:
                out.append({"shape": "x".join(map(str, shape)), "C": tag[:4].upper(), "rung": b["rung"],
                            "tflops": b["tflops"], "mhz": b.get("sm_mhz"), "cublas": b[f"cublas_{tag}_tflops"],
                            "cublas_mhz": b.get(f"cublas_{tag}_sm_mhz"), "ratio": b["frac_cublas"]})
    return out


# --------------------------------------------------------------------------- how L2 is emptied (experiment flush_method)
def flush_rows(fm: dict) -> list[dict]:
    """experiments.flush_method (lab/probes/flush_method.py): one row per shape and kernel, its TFLOP/s with each
    L2 flush (the median of three alternating rounds), read over write, and the SM clocks of all six timings."""
    out = {}
    for r in fm["rows"]:
        shape = "x".join(map(str, r["shape"]))
        row = out.setdefault((shape, r["kernel"]), {"shape": shape, "kernel": r["kernel"], "passed": True, "mhz": []})
        row[r["flush"]] = r["tflops"]
        row["passed"] &= bool(r["passed"])
        row["mhz"] += r["sm_mhz"]
    for row in out.values():
        row["read_over_write"] = row["read"] / row["write"]
        row["mhz"] = clock_span(row["mhz"])
    return list(out.values())


# --------------------------------------------------------------------------- rung 17 taken apart (experiment pipeline_apart)
# What each probe switch leaves of rung 17 (PIPE_PROBE bits and the others, in kernels/ of commit 8ec4c42 only)
PIPE_PARTS = {1: "loads and barriers, no MMA", 2: "MMAs and barriers, no bytes", 6: "MMAs, no bytes, no waits for full",
              10: "MMAs alone (no ring)", 11: "no ring, no MMA (launch, empty loop, epilogue)"}
SWITCHES = {"RELEASE_PER_WG": lambda v: "one release per warpgroup", "MMA_DEPTH": lambda v: f"{v} wgmma groups in flight",
            "FULL_PEEK": lambda v: "the next stage's wait first", "PRODUCER_WARP": lambda v: "the producer's whole warp",
            "MBAR_WAIT": lambda v: {1: "wait hint", 2: "spin wait"}.get(int(v), "no wait hint"),
            "SKINNY_STAGES": lambda v: f"{v} stages", "SKINNY_CLUSTER": lambda v: "no cluster" if int(v) == 1 else
            f"clusters of {v}"}
CHECKED = {True: "yes", False: "NO", None: "not checked (wrong by design)"}


def rate_rows(pa: dict) -> list[dict]:
    """experiments.pipeline_apart.rates: clocks per K-tile (four m64nNk16 k-steps) in one SM for each width N and
    number of warpgroups issuing, and the share of the peak (4096 FLOP per clock per SM) they reach."""
    return [{"n": r["n"], "warpgroups": r["warpgroups"], "in_flight": "1 group" if r["depth"] else "drained",
             "clk": r["clk_per_ktile"], "ideal": r["warpgroups"] * 2 * 64 * r["n"] * 64 / 4096,
             "share": r["share_of_4096"]} for r in pa["rates"]]


def _switch_text(what: str) -> str:
    """'rung 17 PIPE_PROBE=2 MBAR_WAIT=1' -> 'MMAs and barriers, no bytes; wait hint'."""
    if what.startswith("cuBLAS"):
        return what
    parts = []
    for kv in what.replace("rung 17", "").replace("as recorded", "").split():
        k, v = kv.split("=")
        parts.append(PIPE_PARTS.get(int(v), f"PIPE_PROBE={v}") if k == "PIPE_PROBE" else
                     SWITCHES[k](v) if k in SWITCHES else f"{k}={v}")
    return "; ".join(parts) or "rung 17 as recorded"


def apart_rows(pa: dict, which: str, shape=(128, 8192, 8192)) -> list[dict]:
    """One set of experiments.pipeline_apart.pipes at `shape`: each variant's median time (us), its time against
    the same set's first row (rung 17 as recorded, or with the hint) and against cuBLAS (FP16 C, same run), its SM
    clocks and whether it was checked (None: a probe variant, wrong by design)."""
    rows = [r for r in pa["pipes"][which] if tuple(r["shape"]) == tuple(shape)]
    cub = next(r for r in rows if r["what"].startswith("cuBLAS"))
    base = rows[0]
    return [{"what": _switch_text(r["what"]), "us": r["us"], "vs_first": base["us"] / r["us"],
             "cublas_over": cub["us"] / r["us"], "passed": r["passed"],
             "correct": "" if r["what"].startswith("cuBLAS") else CHECKED[r["passed"]], "mhz": clock_span(r["sm_mhz"])}
            for r in rows]


def knob_round(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A knob round of lab/probes/rung17.py (``--knobs``), kept as results/logs/<name>-<gpu_slug>.json: per rung and
    knob setting, whether it was checked correct (and bit-identical to the model), its median TFLOP/s over the
    rounds, that over the rung as recorded, and the SM clocks of its rounds."""
    from ..results import load_log

    log, out = load_log(name, "lab/probes/rung17.py OUT.json RUNG --knobs", gpu_slug, directory), []
    for rung in sorted((k for k in log if k.isdigit()), key=int):
        first = log[rung][0]
        for r in log[rung]:
            knob = ", ".join(f"{k}={v}" for k, v in r["knobs"].items()) or "as recorded"
            out.append({"rung": int(rung), "knob": knob, "passed": r["passed"] and r.get("model") == "identical",
                        "tflops": r["tflops"], "vs": r["tflops"] / first["tflops"], "mhz": clock_span(r["sm_mhz"])})
    return out


def hint_rows(pa: dict) -> list[dict]:
    """experiments.pipeline_apart.wait_hint: per kernel and shape, its TFLOP/s with the wait hint off and on, on over
    off, whether both were correct, the SM clocks of all six timings, and the baseline it is compared with (cuBLAS
    writing the same C, cuBLASLt with the accumulation it matches) as timed in the same rounds, with hint-on over it."""
    runs = [r for r in pa["wait_hint"] if "median_ms" in r]
    checks = {(r.get("rung", r.get("kernel")), r["mbar_wait"], tuple(r["shape"])): r["passed"]
              for r in pa["wait_hint"] if "passed" in r}
    base = {(r["what"], tuple(r["shape"])): r["tflops"] for r in runs if r["mbar_wait"] is None}
    out = {}
    for r in runs:
        if r["mbar_wait"] is None:
            continue
        shape, name = tuple(r["shape"]), r["what"]
        kid = int(name.split()[1]) if name.startswith("rung ") else name
        row = out.setdefault((name, shape), {"kernel": name, "shape": "x".join(map(str, shape)), "mhz": [],
                                             "passed": True})
        row["mhz"] += [m for m in r["sm_mhz"] if m]
        row["off" if r["mbar_wait"] == 0 else "on"] = r["tflops"]
        row["passed"] &= bool(checks.get((kid, r["mbar_wait"], shape)))
        if isinstance(kid, int):
            row["ref"] = "cuBLAS " + ("float32" if rung_entry(kid).out_dtype == "float32" else "float16") + " C"
        else:
            row["ref"] = "cuBLASLt FP8 " + ("fast" if kid == "fp8_wgmma" else "default")
    for row in out.values():
        row["gain"] = row["on"] / row["off"]
        row["mhz"] = clock_span(row["mhz"])
        row["ref_tflops"] = base.get((row["ref"], tuple(int(x) for x in row["shape"].split("x"))))
        row["on_vs_ref"] = row["on"] / row["ref_tflops"] if row["ref_tflops"] else None
    return list(out.values())


# --------------------------------------------------------------------------- device probes (lab/probes/)
def probe_rung(k: int, timed, odd, timeout: int = 300) -> tuple[list[dict] | dict, bool]:
    """GPU: rung_rows of rung k in a child process (as the experiment runs it), with one summary line per row
    on stderr (the check, TFLOP/s, both cuBLAS timings, the clocks, the split); returns (rows, failed)."""
    import time

    from ..isolate import run_isolated

    t0 = time.time()
    rows = run_isolated("helpers.experiments.hopper:rung_rows", k, [list(s) for s in timed], [list(s) for s in odd],
                        True, timeout=timeout)
    _progress(f"rung {k}: {time.time() - t0:.0f} s")
    if isinstance(rows, dict):
        _progress(f"{k} {rows}")
        return rows, True
    for r in rows:
        _progress(" ".join(str(x) for x in (
            k, "x".join(str(r.get(d)) for d in "mnk"), "passed", r.get("passed"), "TFLOP/s", r.get("tflops"),
            "x cuBLAS same C", r.get("frac_cublas"), "cuBLAS FP16 C", r.get("cublas_fp16c_tflops"), "FP32 C",
            r.get("cublas_fp32c_tflops"), "MHz", r.get("sm_mhz"), r.get("cublas_sm_mhz"), "parts", r.get("splits"),
            "whole", r.get("whole_units"), str(r.get("error", ""))[:300])))
    return rows, not all(r.get("passed") for r in rows)


# --------------------------------------------------------------------------- rungs 25-26's TILE_N (lesson 6, Appendix D)
TILE_N_MADE_BY = "lab/probes/tile_n.py OUT.json"


def box_rows_per_mflop(width: int, cluster: int, rows: int = 128, shared: str = "B") -> float:
    """TMA box rows of 128 bytes one CTA asks L2 for per MFLOP of its `rows` x `width` tile: per K-tile of 64, A's
    `rows` rows and B's boxes of 64 columns (width / 64 rounded up, 64 rows each), the `shared` one's split among the
    `cluster` CTAs that multicast it (clusters along M share B, along N share A), against the tile's
    2 x rows x width x 64 FLOP."""
    a, b = rows, 64 * math.ceil(width / 64)
    a, b = (a / cluster, b) if shared == "A" else (a, b / cluster)
    return (a + b) / (2 * rows * width * 64 / 1e6)


def tile_n_rows(shape=(5000, 5000, 5000), gpu_slug: str = "nvidia-h200", directory=None, grid: dict | None = None,
                log: str = "tile-n-sweep") -> list[dict]:
    """lab/probes/tile_n.py's width sweep (results/logs/<log>-<gpu_slug>.json) at `shape`: per width and cluster of
    rung 25 (the TILE_N and CLUSTER_M knobs), the waves (helpers.kernels.cluster_waves with the driver's counts,
    quad_grid), the box rows per MFLOP (box_rows_per_mflop), the median TFLOP/s of three alternating rounds, its
    ratio to rung 25 as built in the same rounds (the median of the three rounds' ratios), the SM clocks of its
    rounds, and whether its check passed (bit-identical to the model); rung 25 as built last."""
    from ..clocks import clock_span
    from ..kernels import cluster_waves
    from ..results import load_log

    grid = quad_grid() if grid is None else grid
    rows = [r for r in load_log(log, TILE_N_MADE_BY, gpu_slug, directory)["forced"]["sweeps"]
            if r.get("shape") == list(shape)]
    base = next(r for r in rows if r.get("as_built"))
    M, N, _ = shape
    out = []
    for r in rows:
        if "width" not in r:
            continue
        w, c = r["width"], r["cluster"]
        ratio = statistics.median(b / x for b, x in zip(base["round_ms"], r["round_ms"]))
        out.append({"width": w, "cluster": c, "waves": cluster_waves(M, N, c, grid[c], w),
                    "rows_per_mflop": box_rows_per_mflop(w, c), "tflops": r["tflops"], "vs_rung25": ratio,
                    "mhz": clock_span(r["sm_mhz"]), "passed": r.get("passed", True) and r.get("model", "identical") == "identical",
                    "what": "rung 25 as built" if r.get("as_built") else "the two knobs"})
    return out


def tile_n_first_run(gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """The first run of the width chosen per shape (lesson 6's "TILE_N probe": rungs 27-28 at commit dabad09, numbers
    since given to the 256-row tile; results/logs/tile-n-probe): at each timed shape the TFLOP/s of the per-shape build
    and of rung 25 (26) beside it, in one process each, and the ratio. Keyed (the probe's rung then, shape)."""
    from ..results import load_log

    log = load_log("tile-n-probe", TILE_N_MADE_BY + " (at commit dabad09)", gpu_slug, directory)
    out = {}
    for new, old in (("27", "25"), ("28", "26")):
        b = {(r["m"], r["n"], r["k"]): r for r in log[old] if r.get("tflops")}
        for r in log[new]:
            key = (r["m"], r["n"], r["k"])
            if r.get("tflops") and key in b:
                out[int(new), key] = {"tflops": r["tflops"], "base": b[key]["tflops"], "ratio": r["tflops"] / b[key]["tflops"],
                                      "tile": r.get("tile"), "passed": r["passed"], "model": r.get("model")}
    return out


TALL_MADE_BY = "lab/probes/rung17.py OUT.json 27 (28)"


def _clock_fell(*rows) -> str:
    """'clock fell to N MHz' where the lowest SM clock sampled during these timings is under 90% of the highest."""
    lo = min(x.get("sm_mhz_min") or x["sm_mhz"] for x in rows)
    return f"clock fell to {lo} MHz" if lo < 0.9 * max(x["sm_mhz"] for x in rows) else ""


def _probe_pairs(name: str, made_by: str, pairs, gpu_slug: str, directory):
    """For each (rung, base) in `pairs`, from lab/probes/rung17.py's log `name` (formatted with the rung: each rung's
    rows, then its base's): (rung, base, shape, the rung's timed row, the base's at that shape, whether every check of
    the rung passed bit-identical to the model)."""
    from ..results import load_log

    for new, old in pairs:
        log = load_log(name.format(new), made_by, gpu_slug, directory)
        ok = all(r["passed"] and r.get("model") == "identical" for r in log[new])
        base = {(r["m"], r["n"], r["k"]): r for r in log[old] if r.get("tflops")}
        for r in log[new]:
            key = (r["m"], r["n"], r["k"])
            if r.get("tflops") and key in base:
                yield new, old, key, r, base[key], ok


def tall_first_run(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Rungs 27-28's first run (session 21, results/logs/tall-rung27-probe and tall-rung28-probe, each rung in its own
    process beside cuBLAS, then rung 25 or 26 the same way): per timed shape the tile the launcher built
    (helpers.kernels.tall_choice with the clusters of 2 the driver ran at once, as the row records: `resident`), the
    predicted gain over rung 25 (26),
    the TFLOP/s of both and their ratio, each over cuBLAS writing the same C, the SM clocks (lowest and last sample
    of each timing), `why`: where either timing's clock fell below 90% of the highest (a ratio to read with care);
    `checked`: every check of the rung, the odd sizes' too, passed bit-identical to the model."""
    from ..kernels import PENDING, tall_choice

    out = []
    for new, old, key, r, b, ok in _probe_pairs("tall-rung{}-probe", TALL_MADE_BY, (("27", "25"), ("28", "26")),
                                                gpu_slug, directory):
        fit = int(re.match(r"(\d+) clusters of 2", r["resident"]).group(1))    # one CTA per SM either tile
        rows, width = tall_choice(key[0], key[1], lambda: (fit, fit))
        out.append({"rung": int(new), "base": int(old), "shape": "x".join(map(str, key)),
                    "tile": f"{rows} x {width}", "predicted": PENDING[int(new)].predicted_gain if rows == 256 else 1.0,
                    "tflops": r["tflops"], "base_tflops": b["tflops"], "ratio": r["tflops"] / b["tflops"],
                    "vs_cublas": r["frac_cublas"], "base_vs_cublas": b["frac_cublas"],
                    "mhz": " / ".join(f"{x.get('sm_mhz_min', x['sm_mhz'])}-{x['sm_mhz']}" for x in (r, b)),
                    "why": _clock_fell(r, b), "checked": ok})
    return out


CHOOSER_MADE_BY = "lab/probes/rung17.py OUT.json 29 (30)"
# rung 29's chooser, predicted before its first run (lab/probes/rung17.py's docstring): x1.00 where rung 25's kernel
# is built, else these
CHOOSER_PREDICTED = {(5000, 5000, 5000): 1.05, (5496, 5496, 5496): 1.07}


def chooser_first_run(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Rungs 29-30's first run as the launcher builds them (results/logs/ct-rung29-probe and ct-rung30-probe: each
    rung in its own process beside cuBLAS, then rung 25 or 26 the same way): per timed shape the build (the C^T tile
    or rung 25's (26's) kernel, from the row's `built`), rung 29's prediction written before the run
    (CHOOSER_PREDICTED; x1.00 where rung 25's kernel is built; none stated for rung 30), both TFLOP/s and their ratio,
    each over cuBLAS writing the same C, the SM clocks (lowest and last sample) and the highest power of both timings
    (the rung's / its base's), `why` where a clock fell (_clock_fell) or cuBLAS's own timing flatters the
    ratio (flattered), and `checked`: every check of the rung, the odd sizes' too, bit-identical to the model."""
    from ..kernels import ALL_RUNGS

    out = []
    for new, old, key, r, b, ok in _probe_pairs("ct-rung{}-probe", CHOOSER_MADE_BY, (("29", "25"), ("30", "26")),
                                                gpu_slug, directory):
        ct = r["built"].startswith(ALL_RUNGS[int(new)].name + ",")
        out.append({"rung": int(new), "shape": "x".join(map(str, key)),
                    "built": "C^T, 160 x 256" if ct else f"rung {old}'s",
                    "predicted": (CHOOSER_PREDICTED.get(key, 1.0) if new == "29" else None),
                    "tflops": r["tflops"], "base_tflops": b["tflops"], "ratio": r["tflops"] / b["tflops"],
                    "vs_cublas": r["frac_cublas"],
                    "mhz": " / ".join(f"{x.get('sm_mhz_min', x['sm_mhz'])}-{x['sm_mhz']}" for x in (r, b)),
                    "power_w": f"{r['power_w_max']:.0f} / {b['power_w_max']:.0f}",
                    "why": "; ".join(x for x in (_clock_fell(r, b), flattered(r)) if x), "checked": ok})
    return out


# Written in session 19's device script before grid_128.py ran at both sizes: rungs 13 and 14 on 64 clusters of 2 (128
# CTAs) over 66 (132), at 4096^3 (lesson 7's FP8 kernel gained x1.014 there, walking the same order) and 8192^3.
GRID128_PREDICTED = {4096: 1.01, 8192: 1.00}


def tall_tile_rows(name: str = "tall-tile-probe", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/tall_tile.py's run (results/logs/<name>-<gpu>.json, sizes whose rows are 128-byte multiples): per
    size and forced build of the 256-row tile, its TFLOP/s, its speed over rung 14 (`ratio`: the median of the
    round-by-round ratios, helpers.timing.round_ratio; `low`, `high`: the lowest and highest round), the rounds it was
    faster, the prediction written before the run (at 4096^3; "" elsewhere) and its verdict (helpers.timing.verdict),
    the SM clocks of its rounds, and whether every check of the build was bit-identical to the model."""
    from ..results import load_log

    run = load_log(name, "lab/probes/tall_tile.py OUT.json", gpu_slug, directory)
    ok = {}
    for c in run["checks"]:
        ok[c["build"]] = ok.get(c["build"], True) and c["passed"] and c["model"] == "identical"
    out = []
    for n in sorted({r["n"] for r in run["timed"]}):
        t = {r["what"]: r for r in run["timed"] if r["n"] == n}
        base = t["rung 14"]
        for build in run["predicted"]:
            r = t[build]
            rr = round_ratio(r["round_ms"], base["round_ms"])
            p = run["predicted"][build] if n == 4096 else ""
            out.append({"n": n, "build": build, "tflops": r["tflops"], "ratio": rr["ratio"], "low": rr["low"],
                        "high": rr["high"], "won": f"{rr['won']} of {rr['rounds']}", "predicted": p,
                        "verdict": verdict(p, rr["low"], rr["high"]) if p != "" else "",
                        "mhz": clock_span(r["sm_mhz"]), "checked": ok[build]})
    return out


def ct_tile_rows(names=("ct-tile-probe", "ct-tile-sizes", "ct-tile-aligned"), gpu_slug: str = "nvidia-h200",
                 directory=None, new: int = 29, base: int = 25) -> list[dict]:
    """lab/probes/ct_tile.py's runs (results/logs/<name>-<gpu>.json; a name not logged is skipped): per size, rung
    29's TFLOP/s, its speed over rung 25 (`ratio`: the median of the round-by-round ratios, helpers.timing.round_ratio;
    `low`, `high`: the lowest and highest round), the rounds it was faster, the prediction written before that run and
    its verdict (helpers.timing.verdict), rung 25's and cuBLAS's (FP16 C) TFLOP/s, rung 29 over cuBLAS
    (`vs_cublas`), the SM clocks of rung 29's rounds, and whether every check of that run was bit-identical. Where a
    row of n halves is no multiple of 16 bytes, the rungs ran on zero-padded copies and cuBLAS on the matrices: the
    cuBLAS columns are "" there, and a `note` says why. `new` and `base`: the two rungs of a run (--pair-n: 31 and
    29, `power_w` the highest power of rung 31's rounds)."""
    from ..errors import ResultsError
    from ..results import load_log

    out = []
    for name in names:
        try:
            run = load_log(name, "lab/probes/ct_tile.py OUT.json", gpu_slug, directory)
        except ResultsError:   # not run yet: the rows of the runs there are
            continue
        ok = all(c["passed"] and c["model"] == "identical" for c in run["checks"])
        for n in sorted({r["n"] for r in run["timed"]}, key=lambda n: (n != 5000, n)):
            t = {r["what"]: r for r in run["timed"] if r["n"] == n}
            this, old, cub = t[f"rung {new}"], t[f"rung {base}"], t["cuBLAS"]
            rr = round_ratio(this["round_ms"], old["round_ms"])
            p = run["predicted"][str(n)]
            padded = (2 * n) % 16 != 0       # rows of no 16-byte multiple: TMA cannot read them as they are
            out.append({"n": n, "shape": f"{n}^3", "predicted": p, "tflops": this["tflops"], "ratio": rr["ratio"],
                        "low": rr["low"], "high": rr["high"], "verdict": verdict(p, rr["low"], rr["high"]),
                        "won": f"{rr['won']} of {rr['rounds']}",
                        "base_tflops": old["tflops"], "cublas": "" if padded else cub["tflops"],
                        "vs_cublas": "" if padded else row_ratio(this, cub),
                        "mhz": clock_span(this["sm_mhz"]), "power_w": round(max(this.get("power_w") or [0])),
                        "checked": ok,
                        "note": f"rows of {2 * n} bytes: the rungs ran zero-padded copies (the copy not timed), cuBLAS "
                                f"the matrices as they are, at {cub['tflops']:.0f} TFLOP/s" if padded else ""})
    return out


def grid128_rows(name: str = "grid-128-probe", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/grid_128.py's run (results/logs/<name>-<gpu>.json): per size and rung, its TFLOP/s as built and on
    128 CTAs (medians of the alternating rounds), the round-by-round ratio (`x128`: median of built / 128-CTA time),
    the rounds 128 CTAs won, each build over cuBLAS writing the same C (round by round: `vs_cublas`,
    `vs_cublas_128`), the spread of `x128` (`low`, `high`: the lowest and highest round) and, with GRID128_PREDICTED,
    its verdict (helpers.timing.verdict), the SM clocks over the 128-CTA build's rounds, and whether every check of the
    rung passed."""
    from ..results import load_log

    run = load_log(name, "lab/probes/grid_128.py OUT.json", gpu_slug, directory)
    ok = {}
    for c in run["checks"]:
        ok[c["rung"]] = ok.get(c["rung"], True) and c["passed"] and c["model"] == "identical"
    t = {(r["n"], r["what"], r["ctas"]): r for r in run["timed"]}
    out = []
    for n in sorted({r["n"] for r in run["timed"]}):
        for rung in sorted(ok):
            one, c128 = t[n, f"rung {rung}", None], t[n, f"rung {rung}", run["ctas"]]
            cub = next(r for r in run["timed"] if r["n"] == n and r["what"] == "cuBLAS" and r["c_dtype"] == one["c_dtype"])
            a, b, c = (np.array(x["round_ms"]) for x in (one, c128, cub))
            rr = round_ratio(c128["round_ms"], one["round_ms"])
            out.append({"n": n, "rung": rung, "c_dtype": one["c_dtype"], "tflops": one["tflops"],
                        "tflops_128": c128["tflops"], "x128": float(np.median(a / b)), "low": rr["low"],
                        "high": rr["high"], "verdict": verdict(GRID128_PREDICTED[n], rr["low"], rr["high"]),
                        "won": f"{int((b < a).sum())} of {len(b)}", "vs_cublas": float(np.median(c / a)),
                        "vs_cublas_128": float(np.median(c / b)), "mhz": clock_span(c128["sm_mhz"]),
                        "passed": ok[rung]})
    return out
