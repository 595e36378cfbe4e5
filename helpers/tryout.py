"""Try a changed kernel in one call: compile it, check it, time it beside the original and cuBLAS.

``try_kernel(like, source=None, **knobs)`` takes a registered kernel (a name or a rung number) and compile-time knobs
(``try_kernel(5, STAGES=2)`` compiles it with ``-DSTAGES=2``; helpers.knobs lists them), an edited copy of its file
(``source=``; ``source_of`` gives one to start from), or both. On a GPU that runs it, the variant is compiled, checked
at a size that is no tile multiple, then checked and timed beside the original and cuBLAS (an edited source, and a
kernel marked ``isolate``, in a child process). A compile error comes back as the readable log, a wrong result as the
check's verdict and the first wrong block tile. Elsewhere it says why in one line and shows the recorded sweep of
those knobs (the ``knobs`` experiment), read and laid out as text by ``tryout_sweep``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from . import device, launch
from . import isolate as _iso
from .clocks import clock_text
from .compile import KERNEL_DIR
from .cublas import BASELINES
from .errors import (CONTEXT_LOST_FIX, ArchitectureError, CourseError, GPUContextLostError, InputError,
                     KernelCompileError, translate_gpu_error)
from .formats import to_bf16_bits
from .kernels import ALL_RUNGS, GemmKernel, lookup
from .knobs import (KNOBS, MAX_SMEM_OPTIN, Knob, _knobs_text, _resolve, defines, defines_text,  # noqa: F401
                    entry_for_options, knob_table, options, validate_knobs, variant_entry)
from .numerics import abs_product, reference_gemm
from .timing import Timing, benchmark, gemm_flops
from .tryout_sweep import (_asked_rows, _fmt, _mark, _recorded_cells, _shown_knob, _size_text,  # noqa: F401
                           _table, _tflops_range, _value_label, _wrapped, asked_lines, recorded_sizes, recorded_sweep)

DEFAULT_SIZE = (1000, 1064, 1000)   # (M, N, K) of the check: a multiple of no block tile (128, 256) nor of BK
TIMING_SIZE = 4096
SEED = 2311
RECORD_FIX = "python -m helpers.record --update-experiments knobs"


# --------------------------------------------------------------------------- sources
def source_of(like="ladder_cp_async", replace: dict | None = None) -> str:
    """The text of kernels/<file> that holds kernel `like`, to edit and pass as source=; with replace={old: new},
    each `old` (which must occur exactly once) replaced."""
    spec = lookup(like)
    text = (KERNEL_DIR / spec.file).read_text()
    for old, new in (replace or {}).items():
        n = text.count(old)
        if n != 1:
            raise InputError(f"replace: {old[:60]!r} occurs {n} times in {spec.file}, not once.",
                             "give a longer piece of the line (with its neighbours) that occurs exactly once.")
        text = text.replace(old, new)
    return text


def _check_source(spec: GemmKernel, source) -> None:
    if not isinstance(source, str):
        raise InputError(f"source is {type(source).__name__}, not a string of CUDA code.",
                         f"pass the edited file as a string: src = helpers.tryout.source_of({spec.name!r}), then "
                         "change it and pass source=src.")
    if not re.search(r'extern\s+"C"\s+__global__\s+void\s+(__launch_bounds__\([^)]*\)\s+)?' + re.escape(spec.name)
                     + r"\s*\(", source):
        raise InputError(f"source has no kernel {spec.name}: the edited copy must keep "
                         f'extern "C" __global__ void {spec.name}(...), which is launched with {spec.name}\'s settings.',
                         f"start from helpers.tryout.source_of({spec.name!r}) and keep the kernel's name and arguments.")


def _label(spec: GemmKernel, source, given: dict) -> str:
    parts = [spec.name]
    if source is not None:
        parts.append("(your source)")
    if given:
        parts.append(_knobs_text(given))
    if source is None and not given:
        parts.append("(as recorded)")
    return " ".join(parts)


# --------------------------------------------------------------------------- measuring (GPU)
def _inputs(spec: GemmKernel, M: int, N: int, K: int, seed: int):
    import cupy

    rng = cupy.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=cupy.float32)
    B = rng.standard_normal((K, N), dtype=cupy.float32)
    if spec.inputs == "fp16":
        return A.astype(cupy.float16), B.astype(cupy.float16)
    if spec.inputs == "bf16":
        return to_bf16_bits(A), to_bf16_bits(B)
    return A, B


BASELINE_FOR = {"fp16": "cublas_fp16", "fp32": "cublas_fp32", "tf32": "cublas_tf32"}


def _timing_fields(t, flops: float) -> dict:
    return {"ms": round(t.median_ms, 6), "p10_ms": round(t.p10_ms, 6), "p90_ms": round(t.p90_ms, 6), "reps": t.n,
            "tflops": round(flops / (t.median_ms * 1e-3) / 1e12, 4), **(t.clocks or {})}


def _pool(timings: list):
    """One Timing from several rounds of the same kernel: all runs, the clocks of every round."""
    if len(timings) == 1:
        return timings[0]
    cl = [t.clocks for t in timings if t.clocks]
    clocks = {}
    if cl:
        clocks = {"sm_mhz": int(np.median([c["sm_mhz"] for c in cl])), "mem_mhz": int(np.median([c["mem_mhz"] for c in cl])),
                  "sm_mhz_min": min(c["sm_mhz_min"] for c in cl), "power_w": float(np.median([c["power_w"] for c in cl])),
                  "power_w_max": max(c["power_w_max"] for c in cl), "temp_c": max(c["temp_c"] for c in cl),
                  "throttle": sorted({r for c in cl for r in c["throttle"]} - {"none"}) or ["none"],
                  "clock_samples": sum(c["clock_samples"] for c in cl)}
    return Timing(np.concatenate([t.times_ms for t in timings]), timings[0].flops, None, clocks)


def wrong_tiles(C, ref, scale, tol: float, tile: tuple, first=None) -> dict:
    """Where a failed result is wrong, by block tile: elements NaN or beyond `tol` |A||B| (`first` (i, j) names one
    when none is: a result only the model rejects). Returns the first wrong tile in launch order, its first wrong
    element and how many tiles hold one."""
    xp = __import__("cupy") if type(C).__module__.startswith("cupy") else np
    C64 = xp.asarray(C, dtype=xp.float64)
    with np.errstate(invalid="ignore"):
        bad = xp.isnan(C64) | (xp.abs(C64 - ref) > tol * scale)
    M, N = C.shape
    tr, tc = tile
    tm, tn = math.ceil(M / tr), math.ceil(N / tc)
    out = {"tiles": tm * tn, "wrong_tiles": None, "first_tile": None, "first_element": None}
    if bool(bad.any()):
        padded = xp.zeros((tm * tr, tn * tc), dtype=bool)
        padded[:M, :N] = bad
        per_tile = padded.reshape(tm, tr, tn, tc).any(axis=(1, 3))
        ti, tj = divmod(int(xp.argmax(per_tile.ravel())), tn)
        block = bad[ti * tr:(ti + 1) * tr, tj * tc:(tj + 1) * tc]
        bi, bj = divmod(int(xp.argmax(block.ravel())), block.shape[1])
        i, j = ti * tr + bi, tj * tc + bj
        out.update(wrong_tiles=int(per_tile.sum()), first_tile=(ti, tj))
    elif first is not None:
        i, j = first
        out.update(first_tile=(i // tr, j // tc))
    else:
        return out
    out["first_element"] = (int(i), int(j), float(C64[i, j]), float(ref[i, j]))
    return out


def tile_text(w: dict, tile: tuple) -> str:
    """'first wrong tile: blockIdx.y = 1, blockIdx.x = 2 (rows 128-255, columns 256-383): C[130, 260] = ...'"""
    if not w.get("first_tile"):
        return ""
    ti, tj = w["first_tile"]
    tr, tc = tile
    s = (f"first wrong block tile: blockIdx.y = {ti}, blockIdx.x = {tj} (rows {ti * tr}-{(ti + 1) * tr - 1}, "
         f"columns {tj * tc}-{(tj + 1) * tc - 1})")
    if w.get("first_element"):
        i, j, got, want = w["first_element"]
        s += f", C[{i}, {j}] = {got:.6g}, expected {want:.6g}"
    if w.get("wrong_tiles") is not None:
        s += f"; {w['wrong_tiles']} of {w['tiles']} tiles wrong"
    return s


def check_variant(entry: GemmKernel, var: dict, A, B, ref=None) -> dict:
    """GPU: one launch of the variant (entry, var: source / options) on CuPy A, B, zero-padded, C poisoned with NaN,
    checked with the entry's check: passed, verdict, the check's fields, and where it is wrong."""
    import cupy

    run, C, (M, N) = launch.launcher(entry, A, B, pad=True, **var)
    run()
    cupy.cuda.get_current_stream().synchronize()
    Cv = C[:M, :N]
    ref = reference_gemm(A, B) if ref is None else ref
    chk = entry.check(Cv, A, B, reference=ref, backend="GPU")
    out = {"passed": bool(chk.passed), "verdict": chk.verdict(), "check": chk.fields(), "size": [M, N, A.shape[1]]}
    if not chk.passed:
        first = chk.first_wrong or chk.model_first
        w = wrong_tiles(Cv, ref, abs_product(A, B), chk.tol.value, entry.block_tile,
                        first=None if first is None else first[:2])
        out.update(wrong=w, where=tile_text(w, entry.block_tile), details=chk.mismatch_summary())
    return out


def _smem_limit() -> int:
    """The most dynamic shared memory a block may opt in to on this GPU (cudaDevAttrMaxSharedMemoryPerBlockOptin)."""
    import cupy

    return int(cupy.cuda.runtime.deviceGetAttribute(97, cupy.cuda.Device().id))


def measure(like, source=None, knobs=None, size=DEFAULT_SIZE, timing_size=TIMING_SIZE, runs: int = 1,
            seed: int = SEED, compare: bool = True) -> dict:
    """GPU, in this process: the variant of `like` compiled, checked at `size` and, if it passes, checked and timed
    at timing_size^3 (with the original and cuBLAS when `compare`). A JSON-serialisable dict whose 'stage' says how
    far it got: 'compile' ('error': the log), 'cannot' (not on this GPU), 'launch', 'fault' (the GPU context is
    lost), 'check' (a wrong result), 'done'."""
    import cupy

    spec, settings, given = validate_knobs(like, knobs or {})
    entry = variant_entry(spec, settings)
    defs = defines(spec, given)
    var = launch._variant(source, options(defs))
    gpu = device.require_gpu("try_kernel")
    out = {"like": spec.name, "rung": spec.rung, "variant": _label(spec, source, given), "knobs": given,
           "defines": defs, "edited": source is not None, "gpu": gpu.name, "stage": "compile", "passed": False,
           "verdict": "", "error": "", "size": list(size), "timing_size": timing_size, "timing": {}, "resources": {},
           "dyn_smem": entry.dyn_smem, "smem_static": entry.smem_static, "tile_k": entry.tile_k}
    try:
        launch.require_runs_here(entry, gpu)
    except ArchitectureError as exc:
        return dict(out, stage="cannot", verdict=exc.problem)
    if entry.dyn_smem > _smem_limit():
        return dict(out, stage="cannot", verdict=f"{out['variant']} needs {entry.dyn_smem} bytes of shared memory per "
                                                 f"block; this GPU, {gpu.name}, allows {_smem_limit()}.")
    what = out["variant"]
    try:
        try:
            out["resources"] = launch.kernel_resources(entry, **var)        # compiles it
        except KernelCompileError as exc:
            return dict(out, verdict=f"{what} does not compile: {_first_error(exc)}", error=str(exc))
        out["stage"] = "check"
        M, N, K = size
        A, B = _inputs(spec, M, N, K, seed)
        chk = check_variant(entry, var, A, B)
        out["check"] = chk
        if not chk["passed"]:
            return dict(out, verdict=chk["verdict"] + (f"; {chk['where']}" if chk.get("where") else ""),
                        error=chk.get("details", ""))
        if not timing_size:
            return dict(out, stage="done", passed=True, verdict=chk["verdict"])
        n = int(timing_size)
        del A, B
        A, B = _inputs(spec, n, n, n, seed + 1)
        ref = reference_gemm(A, B)
        chk_t = check_variant(entry, var, A, B, ref)
        out["check_timed"] = chk_t
        if not chk_t["passed"]:
            return dict(out, verdict=chk_t["verdict"] + (f"; {chk_t['where']}" if chk_t.get("where") else ""),
                        error=chk_t.get("details", ""))
        del ref
        flops = gemm_flops(n, n, n)
        runs_of = {"variant": launch.launcher(entry, A, B, pad=True, **var)[0]}
        if compare:
            runs_of["original"] = launch.launcher(spec, A, B, pad=True)[0]
            base = BASELINES.get(BASELINE_FOR.get(spec.inputs, ""))
            if base is not None and tuple(gpu.cc) >= tuple(base.min_cc):
                Cc = cupy.empty((n, n), dtype=base.out_dtype)
                runs_of[base.name] = (lambda b=base: b.run(A, B, Cc))
        timed: dict = {k: [] for k in runs_of}
        for _ in range(max(1, int(runs))):
            for k, fn in runs_of.items():          # alternating: drifting clocks touch all of them alike
                timed[k].append(benchmark(fn, flops=flops))
        out["timing"] = {("cublas" if k.startswith("cublas") else k): dict(_timing_fields(_pool(v), flops), name=k)
                         for k, v in timed.items()}
        return dict(out, stage="done", passed=True, verdict=chk["verdict"])
    except CourseError as exc:
        return dict(out, stage="launch", verdict=f"{what}: {exc.problem}", error=str(exc))
    except Exception as exc:                      # a CUDA error in the variant
        err = translate_gpu_error(exc, f"{what}")
        if err is not None and type(err).__name__ == "GPUContextLostError":
            return dict(out, stage="fault", verdict=f"{what} faulted: {type(exc).__name__}: {exc}", error=str(err))
        return dict(out, stage="launch", verdict=f"the launch of {what} failed: {type(exc).__name__}: {exc}",
                    error=str(err or f"{type(exc).__name__}: {exc}"))


def _first_error(exc) -> str:
    """The first error line of a KernelCompileError's readable log."""
    for ln in str(exc).splitlines()[1:]:
        if ": error" in ln or "catastrophic" in ln:
            return ln.strip()
    return str(exc).splitlines()[0]


def measure_json(like, source, knobs, size, timing_size, runs, seed, compare=True) -> dict:
    """The child-process side of try_kernel: measure() with JSON arguments and result."""
    out = measure(like, source, knobs, tuple(size), timing_size, runs, seed, compare)
    return _plain(out)


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


# --------------------------------------------------------------------------- the result
@dataclass
class TryResult:
    """What try_kernel found: ``row`` (one table row), ``show()`` (the row and a small bar plot)."""
    like: str
    rung: int | None
    variant: str
    knobs: dict
    defines: dict
    live: bool
    stage: str                      # done | check | compile | launch | fault | cannot | no-gpu
    passed: bool | None
    verdict: str
    message: str = ""               # the one line said when nothing was measured here
    error: str = ""                 # the compile log, the fault, the check's mismatch summary
    timing: dict = field(default_factory=dict)      # {'variant'|'original'|'cublas': timing fields}
    resources: dict = field(default_factory=dict)
    recorded: list = field(default_factory=list)    # the recorded sweep shown instead (not live)
    source: str = ""                # where the numbers come from, for the plot's title
    size: tuple = DEFAULT_SIZE
    timing_size: int | None = TIMING_SIZE
    first_wrong_tile: tuple | None = None
    outcome: dict = field(default_factory=dict)

    @classmethod
    def from_outcome(cls, o: dict, source: str) -> "TryResult":
        chk = o.get("check_timed") if o.get("check_timed") and not o["check_timed"].get("passed") else o.get("check")
        tile = (chk or {}).get("wrong", {}).get("first_tile")
        return cls(like=o["like"], rung=o.get("rung"), variant=o["variant"], knobs=dict(o.get("knobs") or {}),
                   defines=dict(o.get("defines") or {}), live=True, stage=o["stage"],
                   passed=bool(o.get("passed")) if o["stage"] in ("done", "check") else False,
                   verdict=o.get("verdict", ""), error=o.get("error", ""), timing=o.get("timing") or {},
                   resources=o.get("resources") or {}, source=source, size=tuple(o.get("size") or DEFAULT_SIZE),
                   timing_size=o.get("timing_size"), first_wrong_tile=tuple(tile) if tile else None, outcome=o)

    @property
    def row(self) -> dict:
        """One table row: variant, defines, passed, verdict, ms and tflops at timing_size^3, vs_original and
        vs_cublas (their median ms over the variant's: above 1, the variant is faster), clocks."""
        v, o, c = (self.timing.get(k) or {} for k in ("variant", "original", "cublas"))
        ms = v.get("ms")
        return {"variant": self.variant, "defines": defines_text(self.defines), "passed": self.passed,
                "verdict": self.verdict, "ms": ms, "tflops": v.get("tflops"),
                "vs_original": round(o["ms"] / ms, 4) if ms and o.get("ms") else None,
                "vs_cublas": round(c["ms"] / ms, 4) if ms and c.get("ms") else None,
                "clocks": clock_text(v) if v else None}

    # -- showing it
    def lines(self) -> list[str]:
        """What show() prints: the one line and the recorded sweep, or the row and any compile log or fault."""
        if not self.live:
            out = _wrapped(self.message)
            if self.recorded:
                knob = _shown_knob(self.recorded)
                mine = _asked_rows(self.recorded, self.knobs)
                cells = [dict(_recorded_cells(r, knob), shown=_mark(r, mine)) for r in self.recorded]
                out += _table(cells, ["shown", "rung", "knob", "value", "check", "ms", "TFLOP/s", "x default",
                                      "clocks"])
                out += [ln for line in asked_lines(self.recorded, self.knobs) for ln in _wrapped(line)]
            return out
        r = self.row
        cells = {"variant": r["variant"], "defines": r["defines"] or "-",
                 "check": {True: "PASS", False: "FAIL"}.get(r["passed"], "-") if self.stage in ("done", "check")
                 else self.stage.upper(),
                 "ms": _fmt(r["ms"], ".4f"), "TFLOP/s": _fmt(r["tflops"], ".1f"),
                 "vs original": _fmt(r["vs_original"], ".3f", "x"), "vs cuBLAS": _fmt(r["vs_cublas"], ".3f", "x"),
                 "clocks": r["clocks"] or "-"}
        out = _table([cells], list(cells))
        out.append(self.verdict)
        if self.error and self.stage != "done":
            out.append(self.error)
        return out

    def show(self, plot: bool = True) -> None:
        """Print the row (or the one line and the recorded sweep) and draw the bar plot."""
        print("\n".join(self.lines()))
        fig = self.figure() if plot else None
        if fig is not None:
            try:
                from IPython import get_ipython
                from IPython.display import display

                if get_ipython() is not None:
                    import matplotlib.pyplot as plt

                    display(fig)
                    plt.close(fig)
            except ImportError:    # pragma: no cover - IPython comes with Jupyter
                pass

    def _ipython_display_(self):
        self.show()

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def figure(self):
        """The bar plot of TFLOP/s (p10-p90 whiskers): live, the variant, the original and cuBLAS; else the recorded
        sweep; None when there is nothing to draw."""
        from . import plots     # matplotlib: loaded when a figure is drawn

        if self.live and self.timing.get("variant"):
            bars = [("original" if k == "original" else ("cuBLAS" if k == "cublas" else "your variant"), t)
                    for k in ("original", "variant", "cublas") for t in [self.timing.get(k)] if t]
            return plots.bars([(lbl, t["tflops"], _tflops_range(t)) for lbl, t in bars],
                              f"{self.variant} at {self.timing_size}^3 (cold L2)", self.source,
                              highlight="your variant")
        if not self.live and self.recorded:
            timed = [r for r in self.recorded if r.get("tflops")]
            if not timed:
                return None
            knob = _shown_knob(timed)
            mine = _asked_rows(timed, self.knobs)
            label = {id(r): _value_label(r, knob) + (" (yours)" if any(m is r for m in mine) else "") for r in timed}
            items = [(label[id(r)], r["tflops"], _tflops_range(r)) for r in timed]
            n = timed[0].get("m", TIMING_SIZE)
            title = (f"rung {timed[0]['rung']} ({timed[0]['kernel']}): "
                     + (f"{knob}" if knob else "its knobs, one at a time") + f" at {n}^3 (recorded)")
            default = next((r for r in timed if r.get("knob") is None), timed[0])
            return plots.bars(items, title, self.source, highlight=label[id(default)],
                              yours=label[id(mine[0])] if len(mine) == 1 else None)
        return None


# --------------------------------------------------------------------------- nothing measured here
def _not_here(spec: GemmKernel, source, given: dict, why: str, timing_size: int | None = None) -> TryResult:
    """The result without a measurement: one line (why, and what is shown instead) and the recorded sweep."""
    has = spec.rung in KNOBS and ALL_RUNGS[spec.rung] is spec
    rows, label = recorded_sweep(spec, given) if has else (None, f"{spec.name} has no knobs")
    what = (f"the sweep of {', '.join(given)}" if given else "the knob sweep") + f" of {spec.name}"
    edit = "; an edited source runs only on a GPU" if source is not None else ""
    if rows:
        sizes = recorded_sizes(rows)
        at = f", at {' and '.join(map(_size_text, sizes))}" if sizes else ""
        line = f"{why}{edit}: showing {what} recorded on {label}{at}."
        if sizes and timing_size and (timing_size,) * 3 not in sizes:
            line += f" Not at your timing_size={timing_size}: no sweep was recorded at {timing_size}^3."
    else:
        line = f"{why}{edit}; no recording of {what} exists yet ({label}: `{RECORD_FIX}` on a GPU records it)."
    return TryResult(like=spec.name, rung=spec.rung, variant=_label(spec, source, given), knobs=given,
                     defines=defines(spec, given), live=False, stage="no-gpu", passed=None, verdict="",
                     message=line, recorded=rows or [], source=label if rows else "")


# --------------------------------------------------------------------------- the one call
def try_kernel(like="ladder_cp_async", source: str | None = None, *, size=DEFAULT_SIZE,
               timing_size: int | None = TIMING_SIZE, runs: int = 1, isolate: bool | None = None, seed: int = SEED,
               **knobs) -> TryResult:
    """Compile, check and time a variant of registered kernel `like` (a name or rung number): `source`, an edited
    copy of its file (source_of), and/or compile-time knobs (e.g. STAGES=2). Checked at `size` (M, N, K; zero-padded),
    then checked and timed at timing_size^3 beside the original and cuBLAS (`runs` alternating rounds;
    timing_size=None: check only). isolate: in a child process (default: for an edited source and kernels marked
    isolate). See the module docstring."""
    spec, settings, given = validate_knobs(like, knobs)
    if source is not None:
        _check_source(spec, source)
    _validate_sizes(size, timing_size, runs)
    b = device.backend()
    if not b.is_gpu:
        return _not_here(spec, source, given, "no GPU here (CPU backend), so nothing is compiled or timed",
                         timing_size)
    entry = variant_entry(spec, settings)
    why = entry.skip_message(b.gpu.cc)
    if why:
        return _not_here(spec, source, given, why.rstrip("."), timing_size)
    iso = (spec.isolate or source is not None) if isolate is None else bool(isolate)
    args = (spec.name, source, given, list(size), timing_size, runs, seed)
    if iso and not _iso.in_child():
        o = _iso.run_isolated("helpers.tryout:measure_json", *args, timeout=300)
        if "stage" not in o:                  # the child itself failed, hung or was killed
            last = [ln for ln in str(o.get("error", "")).strip().splitlines() if ln.strip()][-3:]
            o = {"like": spec.name, "rung": spec.rung, "variant": _label(spec, source, given), "knobs": given,
                 "defines": defines(spec, given), "stage": "fault",
                 "verdict": f"{_label(spec, source, given)}: its child process failed ({' | '.join(last)[:400]}); "
                            "this notebook's GPU context is intact.", "error": str(o.get("error", ""))}
        elif o["stage"] == "fault":
            o["verdict"] += " (in a child process: this notebook's GPU context is intact)"
        elif o["stage"] == "cannot":
            return _not_here(spec, source, given, o["verdict"].rstrip("."), timing_size)
        return TryResult.from_outcome(o, f"measured live on {b.gpu.name}, in a child process")
    o = measure(spec.name, source, given, tuple(size), timing_size, runs, seed)
    if o["stage"] == "fault":
        raise GPUContextLostError(o["verdict"] + ". The GPU context of this process is lost.", CONTEXT_LOST_FIX)
    if o["stage"] == "cannot":
        return _not_here(spec, source, given, o["verdict"].rstrip("."), timing_size)
    return TryResult.from_outcome(o, f"measured live on {b.gpu.name}")


def _validate_sizes(size, timing_size, runs) -> None:
    if not (isinstance(size, (tuple, list)) and len(size) == 3 and all(isinstance(v, (int, np.integer)) and v >= 1
                                                                      for v in size)):
        raise InputError(f"size={size!r}: the check's size is (M, N, K), three whole numbers >= 1.",
                         "pass e.g. size=(1000, 1064, 1000) (a multiple of no tile: the zero-padding is checked too).")
    if timing_size is not None and not (isinstance(timing_size, (int, np.integer)) and timing_size >= 16):
        raise InputError(f"timing_size={timing_size!r}: the timed size is one whole number n (n^3), at least 16, "
                         "or None.", "pass e.g. timing_size=4096, or timing_size=None to check only.")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise InputError(f"runs={runs!r}: the number of timing rounds is a whole number >= 1.", "pass e.g. runs=3.")
