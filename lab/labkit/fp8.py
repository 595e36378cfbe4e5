"""Lesson 7's lab: the FP8 kernels' race with cuBLASLt and its bookkeeping, read from lab/logs and the record.

What the course does not need lives here: the readers of the probes' logs (lab/logs/*fp8*), the predictions written
before each probe ran (`*_PREDICTED`, `PREDICTIONS`), the ideas that were tried and left (`*_TRIED`), the energy runs,
Nsight Compute summaries, the helpers that store a probe's run into the record (store_*), the registry entries of the
kernels that lost (LOST_KERNELS, registered with helpers.fp8_gemm at import, so probes can still launch them), and
`tried()`, the rows of lesson 7's "What else was tried" table (lab/tried.py writes them into results/tried.json).
The research notebook lab/notebooks/07_fp8_research.py tells the story."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from helpers.clocks import clock_span
from helpers.errors import ResultsError
from helpers.exercises import check_number, checker
from helpers.experiments.fp8 import speed_rows  # noqa: F401  (the research notebook's speed tables)
from helpers.fp8_gemm import FP8_KERNELS, Fp8Kernel
from helpers.results import RESULTS_DIR, load_latest
from helpers.timing import round_ratio, verdict

from .logs import load_log, log_path, row_ratio

# The FP8 file every FP8 kernel was built from until 2026-12-07 (every kernel on one template, with the research
# switches), frozen; as the course's helpers name a kernel file: relative to kernels/.
RESEARCH_FILE = "../lab/kernels/fp8_sm90a_research.cu"


@dataclass(frozen=True)
class LabFp8Kernel(Fp8Kernel):
    """An FP8 wgmma kernel that only the lab's frozen file holds (RESEARCH_FILE): launched as the course launches its
    own (helpers.fp8_gemm.launcher), built from that file."""

    @property
    def wgmma(self) -> bool:
        return True


# The kernels that lost their race and that no course path needs: the course's registry leaves them out; importing
# labkit.fp8 puts them back, so that the probes (and the record's rows of them) still name a kernel that launches.
LOST_KERNELS = {k.name: k for k in [
    LabFp8Kernel("fp8_promote_pingpong", RESEARCH_FILE, 128, 128, (9, 0),
                 "fp8_promote_128 with the consumer warpgroups taking turns: one promotes while the other's wgmmas "
                 "run"),
    LabFp8Kernel("fp8_promote_2acc", RESEARCH_FILE, 128, 128, (9, 0),
                 "fp8_promote_128 with two partial sums per warpgroup: K-tile kt - 1's is added while K-tile kt's "
                 "wgmmas run")]}
FP8_KERNELS.update(LOST_KERNELS)


def ncu_at(target: str, shape, path=None) -> dict | None:
    """The Nsight Compute entry of `target` profiled at `shape` (M, N, K) in results/ncu-nvidia-h200.json (the
    course's record of tools/ncu_counters.py), or None."""
    import json

    data = json.loads((path or RESULTS_DIR / "ncu-nvidia-h200.json").read_text())
    for e in data.get("kernels", []):
        if e.get("target") == target and list(e.get("size", data.get("size"))) == list(shape) and "counters" in e:
            return dict(e, date=e.get("date", data.get("date")), gpu=data["gpu"]["name"])
    return None


def load_sampling(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """A stored summary of Nsight Compute's per-instruction sampling (lab/probes/ncu_source.py summary):
    lab/logs/ncu-source-<name>-<gpu_slug>.json, e.g. name "fp8"."""
    return load_log(f"ncu-source-{name}", "lab/probes/ncu_source.py (with Nsight Compute)", gpu_slug, directory)


def sampling_counts(summary: dict, targets: dict, opcodes=(), stalls=()) -> list[dict]:
    """One row per target of a sampling summary (load_sampling), to set two builds of a kernel side by side.
    targets: {target: label}. Each row: the label (`build`), the warp-level instructions executed (`minstr`,
    millions), each opcode of `opcodes` executed (millions; the summary keeps its 12 most executed: asking for another
    is an error) and each stall reason of `stalls` as its share of the samples (0 where none was sampled)."""
    rows = []
    for t, label in targets.items():
        s = summary["targets"][t]
        missing = [op for op in opcodes if op not in s["opcodes"]]
        if missing:
            raise KeyError(f"{missing} not among the most executed opcodes of {t} in this summary")
        row = {"build": label, "minstr": s["warp_instructions"] / 1e6}
        row.update({op: s["opcodes"][op] / 1e6 for op in opcodes})
        row.update({st: s["stall_share"].get(st, 0.0) for st in stalls})
        rows.append(row)
    return rows


FP8_CALLS = {"fp8default": "FP8, default accumulation", "fp8fast": "FP8, fast accumulation"}


def cublaslt_kernel_rows(ck: dict, sms: int = 132) -> list[dict]:
    """One row per cuBLASLt FP8 call in the record's experiments.fp8.cublaslt_kernels (lab/probes/cublas_kernels.py
    --fp8): the shape, the accumulation, the kernel's name and what the name gives (nvjet_sm90_<types>_<tile>_
    <K-tile>x<stages>_<cluster>_...; the tile in cuBLAS's column-major terms), the cluster, the ring of all stages
    (KB, 1-byte elements), the dynamic shared memory (KB) and the waves of output tiles over `sms` SMs."""
    import re

    out = []
    for call in ck["calls"]:
        for k in call["kernels"]:
            m = re.match(r"nvjet_sm90_\w+?_(\d+x\d+)_(\d+)x(\d+)_(\d+x\d+)_", k["name"])
            row = {"shape": "x".join(map(str, call["shape"])), "C": FP8_CALLS.get(call["c"], call["c"]), "kernel": k["name"], "tile": None,
                   "k_tile": None, "stages": None, "ring_kb": None, "waves": None,
                   "cluster": int(k["launch__cluster_dim_x"]), "smem_kb": k["launch__shared_mem_per_block_dynamic"] / 1024}
            if m:
                a, b = map(int, m.group(1).split("x"))
                M, N, _ = call["shape"]
                row.update(tile=m.group(1), k_tile=int(m.group(2)), stages=int(m.group(3)),
                           ring_kb=int(m.group(3)) * (a + b) * int(m.group(2)) / 1024,
                           waves=-(-N // a) * -(-M // b) / sms)
            out.append(row)
    return out


# Table headers for the two kinds of power the record holds. NVML's power reading (nvmlDeviceGetPowerUsage, sampled
# by helpers.clocks.Sampler while a timing runs) is, on Ampere (except GA100) and newer GPUs, an average over the last
# second: a cold-L2 timing lasts a fraction of that, so the reading lags and mixes in the work before it
# (experiments.fp8.speed_pingpong at 4096^3: it climbs in the order the kernels ran). The energy probe's power is the
# energy counter's joules over a window of about 2 s of back-to-back launches (lab/probes/fp8_energy.py).
NVML_POWER = "W, NVML 1-s average (lags)"
ENERGY_POWER = "W, energy / time"


SASS_KINDS = {"instructions": None, "wgmma (QGMMA)": "QGMMA", "waits (WARPGROUP.DEPBAR)": "WARPGROUP.DEPBAR",
              "fences (WARPGROUP.ARRIVE)": "WARPGROUP.ARRIVE", "global stores (STG)": "STG"}


def sass_counts(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """How many instructions of each kind in SASS_KINDS a recorded listing holds (lab/logs/<name>-<gpu>.txt,
    cuobjdump -sass of one kernel; 'instructions': every line with an address)."""
    import re

    text = log_path(name, "cuobjdump -sass", gpu_slug, suffix=".txt", directory=directory).read_text()
    lines = [ln for ln in text.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    return {k: len(lines) if pat is None else sum(pat in ln for ln in lines) for k, pat in SASS_KINDS.items()}


PROMOTE_COUNTERS = {"duration_ns": ("time under ncu (us)", 1e-3), "tensor_pipe_pct": ("Tensor pipe busy (%)", 1),
                    "fma_pipe_pct": ("FMA pipe busy (%)", 1), "l2_hit_rate_pct": ("L2 hit rate (%)", 1),
                    "stall_wait": ("wait stall", 1), "stall_long_scoreboard": ("long scoreboard stall", 1),
                    "stall_barrier": ("barrier stall", 1)}


def promote_counters(kernels=("fp8_wgmma", "fp8_promote_128", "fp8_promote_256", "fp8_promote_512"),
                     n: int = 4096) -> list[dict]:
    """Nsight Compute at n^3 (tools/ncu_counters.py, one launch each) of lesson 7's kernels, from the newest
    results/ncu-*.json that has them: one row per kernel with PROMOTE_COUNTERS (stalls in cycles per issued
    instruction) and the date; [] when none is recorded."""

    rows = []
    for k in kernels:
        e = ncu_at(k, (n, n, n))
        if e is None:
            continue
        c, st = e["counters"], dict(e.get("top_stalls", []))
        row = {"kernel": k, "date": str(e.get("date", ""))[:10]}
        for key, (_, scale) in PROMOTE_COUNTERS.items():
            v = st.get(key[6:]) if key.startswith("stall_") else c.get(key)
            row[key] = None if v is None else v * scale
        rows.append(row)
    return rows


def _edit_record(path, edit) -> str:
    """Apply `edit` (a function of the parsed record) to a record file (default: the newest in results/) and write
    it back, indented as every results file is; the rest of the record is left as it is. Returns its path."""
    import json
    from pathlib import Path

    p = Path(path) if path is not None else load_latest().path
    rec = json.loads(p.read_text())
    edit(rec, p.name)
    p.write_text(json.dumps(rec, indent=1) + "\n")
    return str(p)


def store_block_scaled(out: dict, note: str, path=None) -> str:
    """Store run_block_scaled's output (e.g. lab/probes/fp8_block_scaled.py's JSON) as
    experiments.fp8.block_scaled of a record (default: the newest in results/), with a note saying where it
    came from; the rest of the record is left as it is. Returns the record's path."""
    def edit(rec, _name):
        rec.setdefault("experiments", {}).setdefault("fp8", {})["block_scaled"] = {"note": note, **out}
    return _edit_record(path, edit)


def store_speed(out: dict, key: str, note: str, path=None) -> str:
    """Store a speed run alone (lab/probes/fp8_pingpong.py --speed-only) as experiments.fp8[key] of a record (default:
    the newest in results/), with `note` and the date, for kernels the record holds already (e.g. timed again with a
    registry change); a kernel it does not hold is refused: store_new_kernels adds kernels with their checks."""
    import datetime

    def edit(rec, name):
        fp8 = rec.get("experiments", {}).get("fp8")
        if fp8 is None:
            raise ResultsError(f"{name} has no fp8 experiment to add a speed run to.",
                               "record it first: python -m helpers.record --update-experiments fp8 (on a GPU).")
        new = sorted({r["kernel"] for r in out["speed"]} - set(fp8["kernels"]) - {r["kernel"] for r in fp8["speed"]})
        if new:
            raise ResultsError(f"{name} does not hold {new}.",
                               "store them with store_new_kernels (lab/probes/fp8_pingpong.py without --speed-only).")
        fp8[key] = {"date": datetime.date.today().isoformat(), "note": note, "rows": out["speed"]}
    return _edit_record(path, edit)


def store_new_kernels(out: dict, key: str, note: str, path=None) -> str:
    """Store lab/probes/fp8_pingpong.py's output for kernels new to a record (default: the newest in results/):
    each kernel joins experiments.fp8's kernels, resources, probes (outputs, model mismatches), random and
    match_1024 as the experiment itself would have put it, and the speed run goes to experiments.fp8[key] with
    `note` and the date; the rest of the record is left as it is. A kernel the record holds already is refused:
    re-record experiment fp8 instead. Returns the record's path."""
    import datetime

    names = list(out["kernels"])

    def edit(rec, name):
        fp8 = rec.get("experiments", {}).get("fp8")
        if fp8 is None:
            raise ResultsError(f"{name} has no fp8 experiment to add kernels to.",
                               "record it first: python -m helpers.record --update-experiments fp8 (on a GPU).")
        held = [k for k in names if k in fp8["kernels"] or k in fp8["probes"]["outputs"]]
        if held:
            raise ResultsError(f"{name} holds {held} already.", "re-record experiment fp8 to measure them again.")
        if out["probes"]["kind"] != fp8["probes"]["kind"] or out["probes"]["param"] != fp8["probes"]["param"]:
            raise ResultsError("the probe matrices differ from the record's: these outputs cannot sit beside its own.",
                               "re-record experiment fp8 with this version of helpers.experiments.fp8.")
        fp8["kernels"] += names
        fp8["resources"].update({k: out["resources"][k] for k in names})
        for part in ("outputs", "model_mismatches"):
            fp8["probes"][part].update({k: out["probes"][part][k] for k in names})
        fp8["random"] += [r for r in out["random"] if r["kernel"] in names]
        fp8["match_1024"] += [r for r in out["match_1024"] if r["kernel"] in names]
        fp8[key] = {"date": datetime.date.today().isoformat(), "note": note, "rows": out["speed"]}
    return _edit_record(path, edit)


def reject_rows(name: str = "reject-wrong-fp8-store", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """lab/probes/reject_wrong_fp8.py's output kept as lab/logs/<name>-<gpu_slug>.json (one kernel's C and its
    wrong results at each shape): one row per C, and per shape "bounds alone / whole check", each "passes" or
    "rejects" ("-": equal to the kernel's C at that shape, so not a wrong result there); the first row is the kernel's
    own C, the second the worst-case tolerance of the check at that K."""

    shapes = load_log(name, "lab/probes/reject_wrong_fp8.py OUT.json", gpu_slug, directory)["rows"]
    key = lambda r: " x ".join(map(str, r["shape"])) if len(set(r["shape"])) > 1 else f"{r['shape'][0]}^3"  # noqa: E731
    word = lambda rejected: "rejects" if rejected else "passes"                                              # noqa: E731
    rows = [{"C": f"{shapes[0]['kernel']}'s", **{key(r): "- / " + ("pass" if r["correct"] and r["model"] == "identical"
                                                                   else "FAIL") for r in shapes}}]
    rows.append({"C": "(worst-case tolerance)", **{key(r): r["tolerance"] for r in shapes}})
    for what in shapes[0]["rejected"]:
        rows.append({"C": what, **{key(r): (f"{word(r['rejected_by_bounds'][what])} / {word(r['rejected'][what])}"
                                            if what in r["rejected"] else "-") for r in shapes}})
    return rows


def _median_of(v):
    """A reading kept per round (a list) as its median; a single reading as it is; None stays None."""

    if not isinstance(v, list):
        return v
    xs = [x for x in v if x is not None]
    return statistics.median(xs) if xs else None


def passed_by(rows: list[dict], key) -> dict:
    """{key(row): whether every check of that key passed} over a probe's rows that carry a check (`check_passed`;
    None, a yardstick's, is left out)."""
    ok: dict = {}
    for r in rows:
        if r.get("check_passed") is not None:
            ok[key(r)] = ok.get(key(r), True) and bool(r["check_passed"])
    return ok


def stage_rows(data: dict, base: str | None = None) -> list[dict]:
    """experiments.fp8.stages (lab/probes/fp8_stages.py): one row per size and kernel build, the median of three
    alternating rounds in TFLOP/s, over cuBLASLt with default and with fast accumulation timed in the same rounds (each
    ratio the median of the round-by-round ratios, row_ratio),
    the SM clocks of the three rounds (lowest-highest) and whether every check of that build passed. A build is a
    kernel, its stages and its probe switches (`options`, e.g. F8_DESC_ADD=1); with `base`, each row's TFLOP/s over
    kernel `base`'s as recorded (its registry's stages, no switch) in the same rounds (`vs_base`, row_ratio)."""
    rows = data["stages"]["rows"]
    build = lambda r: (r["kernel"], r["stages"], tuple(r.get("options", ())))   # noqa: E731
    ok = passed_by(rows, build)
    timed = [r for r in rows if "tflops" in r]
    lt = {(r["n"], r["kernel"]): r for r in timed if r["kernel"].startswith("cublaslt")}

    base_stages = FP8_KERNELS[base].stages if base in FP8_KERNELS else 4
    ref = {r["n"]: r for r in timed if base and build(r) == (base, base_stages, ())}
    out = []
    for r in timed:
        if r["kernel"].startswith("cublaslt"):
            continue
        row = {"n": r["n"], "kernel": r["kernel"], "stages": r["stages"], "tflops": r["tflops"],
               "options": " ".join(o.removeprefix("-D") for o in r.get("options", ())) or "-",
               "vs_default": row_ratio(r, lt[r["n"], "cublaslt_fp8"]),
               "vs_fast": row_ratio(r, lt[r["n"], "cublaslt_fp8_fast"]),
               "mhz": clock_span(r["sm_mhz"]) or "?", "passed": ok.get(build(r), False),
               "round_ms": r.get("round_ms")}
        if base:
            row["vs_base"] = row_ratio(r, ref[r["n"]])
        out.append(row)
    return out


# Tried and dropped (issue 26, sessions 13-14): fp8_promote_2acc_lean in 2-CTA clusters sharing B by multicast, as
# cuBLASLt's default-accumulation kernel at 4096^3 runs. The prediction was written in its kernel comment before any GPU
# ran it; the code is in commit `commit`; its run is lab/logs/<log>-<gpu>.json (lab/probes/fp8_stages.py
# --cluster) and its Nsight Compute summary lab/logs/<ncu>-<gpu>.log (tools/ncu_counters.py's printed table).
CLUSTER_TRIED = {"kernel": "fp8_promote_2acc_cluster", "over": "fp8_promote_2acc_lean", "predicted": 1.02,
                 "commit": "6596698", "log": "fp8-cluster-probe", "ncu": "ncu-fp8-cluster"}


# The TMA-store epilogue (issue 26, session 17): each *_store kernel was the kernel it names here with C written through
# shared memory and TMA stores, predicted x1.03 over it at 4096^3 in its kernel comment before any GPU ran it (commit
# 30b1673). Their first run is lab/logs/fp8-store-probe-<gpu>.json (lab/probes/fp8_stages.py --store), their
# Nsight Compute summary lab/logs/ncu-fp8-store-<gpu>.log (tools/ncu_counters.py's printed table).
# fp8_promote_2acc_store ran slower and left the course; its code is in commit `commit`.
STORE_PAIRS = {"fp8_wgmma_store": "fp8_wgmma", "fp8_promote_2acc_store": "fp8_promote_2acc_lean"}
STORE_PREDICTED = 1.03
STORE_TRIED = {"kernel": "fp8_promote_2acc_store", "over": "fp8_promote_2acc_lean", "predicted": STORE_PREDICTED,
               "commit": "30b1673", "log": "fp8-store-probe", "ncu": "ncu-fp8-store"}


def store_rows(data: dict) -> list[dict]:
    """stage_rows of a --store run (probe_log("fp8-store-probe")), one row per size and TMA-store kernel, beside the
    kernel it changes (`over`, storing C from registers) timed in the same rounds: its TFLOP/s (`over_tflops`), its
    clocks (`over_mhz`) and the ratio (`vs_over`, the median round-by-round ratio: row_ratio)."""
    rows = stage_rows(data)
    by = {(r["n"], r["kernel"]): r for r in rows}
    out = []
    for r in rows:
        over = STORE_PAIRS.get(r["kernel"])
        if over is not None:
            b = by[r["n"], over]
            out.append({**r, "over": over, "over_tflops": b["tflops"], "vs_over": row_ratio(r, b),
                        "over_mhz": b["mhz"], "both_passed": r["passed"] and b["passed"]})
    return out


# The yardstick of each kernel in issue 26: the plain kernel against cuBLASLt's fast accumulation, the promoting one
# against its default (promotion every 128 products, bit-identical to fp8_promote_128).
YARDSTICK = {"fp8_wgmma_store": "cublaslt_fp8_fast", "fp8_promote_2acc_lean": "cublaslt_fp8"}


def ctas_rows(name: str = "fp8-ctas-lean-probe", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A run of lab/probes/fp8_stages.py --ctas-lean (lab/logs/<name>-<gpu>.json): per size and kernel, its
    TFLOP/s on one CTA per SM and on 128 (medians of the alternating rounds), the ratio of the two round by round
    (`x128`: the median of one-per-SM time / 128-CTA time over the rounds), in how many rounds 128 CTAs was faster,
    the 128-CTA build over its yardstick (YARDSTICK, round by round, `vs_lt`; rounds faster: `lt_won`), the clocks of
    the 128-CTA build's rounds, and whether every check of both builds passed."""

    rows = probe_log(name, gpu_slug, directory)["stages"]["rows"]
    build = lambda r: (r["kernel"], tuple(r.get("options", ())))   # noqa: E731
    ok = passed_by(rows, build)
    t = {(r["n"],) + build(r): r for r in rows if "round_ms" in r}
    out = []
    for n in sorted({k[0] for k in t}):
        for k, lt in YARDSTICK.items():
            one, c128, yard = t[n, k, ()], t[n, k, ("ctas=128",)], t[n, lt, ()]
            a, b, y = (np.array(x["round_ms"]) for x in (one, c128, yard))
            out.append({"n": n, "kernel": k, "one_tflops": one["tflops"], "tflops": c128["tflops"],
                        "x128": float(np.median(a / b)), "won": f"{int((b < a).sum())} of {len(b)}",
                        "yardstick": lt, "vs_lt": float(np.median(y / b)), "lt_won": f"{int((b < y).sum())} of {len(b)}",
                        "mhz": clock_span(c128["sm_mhz"]),
                        "passed": ok.get((k, ()), False) and ok.get((k, ("ctas=128",)), False)})
    return out


# Written in session 19's device script before the run (lab/probes/fp8_stages.py --ctas-lean): 128 CTAs over one per
# SM, per kernel and size. fp8_wgmma_store's 4096^3 repeats its first run (x1.014); the rest: the same rounds of tiles
# on either grid (512 / 2048 tiles of 128 x 256, 1024 / 4096 of 128 x 128).
CTAS_PREDICTED = {("fp8_wgmma_store", 4096): 1.01, ("fp8_wgmma_store", 8192): 1.005,
                  ("fp8_promote_2acc_lean", 4096): 1.005, ("fp8_promote_2acc_lean", 8192): 1.00}
# Session 20, written before the record's speed run with UNIFORM = true (experiments.fp8.speed_uniform): each kernel
# over its YARDSTICK, the ratio of speed_128 times the probe's x1.020 / x1.027 at 4096^3; at 8192^3 the power limit
# decides, so the ratios of speed_128 again.
UNIFORM_PREDICTED = {("fp8_wgmma_store", 4096): 1.04, ("fp8_wgmma_store", 8192): 1.04,
                     ("fp8_promote_2acc_lean", 4096): 1.02, ("fp8_promote_2acc_lean", 8192): 0.97}

# Session 26, written before the first run of lab/probes/fp8_stages.py --period: the F8_PERIOD=1 build over the
# recorded one. The record's promotion cost, fp8_promote_128's time less fp8_wgmma_n128's, is a wait for all groups
# and the adds at every stage; at 256 and 512 that should fall to a half and a quarter of it (0.1243 - 0.1143 ms at
# 4096^3: 256 from 0.1291 to 0.119, 512 from 0.1267 to 0.117 ms, both about x1.08). At 8192^3 the power limit
# takes part of it back.
PERIOD_PREDICTED = {("fp8_promote_256", 4096): 1.08, ("fp8_promote_512", 4096): 1.08,
                    ("fp8_promote_256", 8192): 1.05, ("fp8_promote_512", 8192): 1.05}
# Session 26, after F8_PERIOD=1 ran slower (x0.970, x0.993 at 4096^3) and before F8_PERIOD=2 ran: fp8_promote_128's
# stage with the adds at a period's end only. The first run's 4096^3 rounds: fp8_promote_128 0.128 ms, fp8_wgmma_n128
# 0.114; if half of that 0.014 ms is the adds, 256 saves a quarter of it (0.1245 ms against 0.129 recorded), 512
# three eighths (0.123 against 0.126).
PERIOD2_PREDICTED = {("fp8_promote_256", 4096): 1.035, ("fp8_promote_512", 4096): 1.025,
                     ("fp8_promote_256", 8192): 1.01, ("fp8_promote_512", 8192): 1.01}
# Session 26, before Nsight Compute sampled fp8_promote_256 as first built (F8_PERIOD=0) beside fp8_promote_128 and
# its default build (lab/probes/ncu_source.py --only fp8_promote_128,fp8_promote_256_first,fp8_promote_256): if a
# stage let go one K-tile late is the cost, the producer waits longer for free stages in the first build: a larger
# share of its stall samples at the `empty` barriers' waits than in the other two.
WAITS_PREDICTED = "first build: the largest share of samples at the producer's waits for an empty stage"
# Session 26, before the record's speed table was timed again with F8_PERIOD=2 the default (experiments.fp8.speed_period:
# lab/probes/fp8_pingpong.py --speed-only --rounds 5 with every kernel of experiments.fp8.speed): fewer promotions,
# more speed, at both sizes: TFLOP/s in this order, slowest first (the period probe's rounds: 256 x1.036, 512 x1.081
# over 128 at 4096^3).
SPEED_PERIOD_PREDICTED = ("fp8_promote_32", "fp8_promote_64", "fp8_promote_128", "fp8_promote_256", "fp8_promote_512",
                          "fp8_wgmma_n128")


def target_rows(rows: list[dict]) -> list[dict]:
    """Issue 26's targets in a speed run timed in alternating rounds (experiments.fp8.speed_128): per size, each kernel of
    YARDSTICK over its cuBLASLt yardstick (`ratio`: the median of the round-by-round ratios, row_ratio), the rounds it
    was faster in (`won`), the median over the rounds of each one's SM clock (`mhz`: kernel / yardstick) and whether it
    passed its check. `met`: the ratio >= 1 and faster in most rounds; None (not judged, `why` says so) where the
    yardstick ran at a clock more than 2% below the kernel's, as lesson 6 judges cuBLAS's (a miss stands: a slower clock
    of the yardstick only flatters the kernel)."""

    by = {(r["n"], r["kernel"]): r for r in rows if "tflops" in r}
    out = []
    for n in sorted({r["n"] for r in rows}):
        for k, lt in YARDSTICK.items():
            a, y = by[n, k], by[n, lt]
            won = int((np.array(a["round_ms"]) < np.array(y["round_ms"])).sum())
            ratio = row_ratio(a, y)
            mine, theirs = (int(np.median([m for m in r["round_mhz"] if m])) for r in (a, y))
            met = ratio >= 1 and 2 * won > len(a["round_ms"]) and bool(a.get("check_passed"))
            why = f"cuBLASLt at {theirs} MHz against {mine}" if met and theirs < 0.98 * mine else ""
            out.append({"n": n, "kernel": k, "yardstick": lt, "tflops": a["tflops"], "lt_tflops": y["tflops"],
                        "ratio": ratio, "won": f"{won} of {len(a['round_ms'])}", "mhz": f"{mine} / {theirs}",
                        "passed": bool(a.get("check_passed")), "met": None if why else met, "why": why})
    return out


# Session 26, before the goals' run in nine alternating rounds (experiments.fp8.speed_goals: lab/probes/fp8_pingpong.py
# --speed-only --rounds 9 fp8_wgmma_store fp8_promote_2acc_lean), each kernel over its YARDSTICK, judged by
# helpers.timing.round_ratio as lesson 6 judges its targets: speed_uniform's ratios at 4096^3 (x1.011, x1.003); at
# 8192^3 the power limit decides, as close to even as its runs have swung (x0.983 to x1.043 for the plain kernel).
GOALS_PREDICTED = {("fp8_wgmma_store", 4096): 1.01, ("fp8_promote_2acc_lean", 4096): 1.00,
                   ("fp8_wgmma_store", 8192): 1.00, ("fp8_promote_2acc_lean", 8192): 0.99}


def round_goal_rows(rows: list[dict], predicted: dict | None = None) -> list[dict]:
    """Issue 26's goals judged by the course's one rule (helpers.timing.round_ratio, lesson 6's): per size, each kernel
    of YARDSTICK against its cuBLASLt yardstick timed in the same rounds: the median round-by-round ratio (`ratio`),
    the lowest and highest round, the rounds it was faster (`won`), TFLOP/s of both (median rounds), the SM clocks
    (lowest-highest, kernel / yardstick), whether its check passed, the prediction, and `met` ('yes' where the
    median ratio reaches 1.00 and the check passed, else 'no')."""

    by = {(r["n"], r["kernel"]): r for r in rows if "tflops" in r}
    out = []
    for n in sorted({r["n"] for r in rows}):
        for k, lt in YARDSTICK.items():
            a, y = by[n, k], by[n, lt]
            rr = round_ratio(a["round_ms"], y["round_ms"])
            ok = bool(a.get("check_passed"))
            out.append({"n": n, "kernel": k, "yardstick": lt, "tflops": a["tflops"], "lt_tflops": y["tflops"],
                        "ratio": rr["ratio"], "low": rr["low"], "high": rr["high"],
                        "won": f"{rr['won']} of {rr['rounds']}",
                        "mhz": f"{clock_span(a['round_mhz'])} / {clock_span(y['round_mhz'])}", "passed": ok,
                        "predicted": None if predicted is None else predicted[k, n],
                        "met": "yes" if rr["ratio"] >= 1 and ok else "no"})
    return out


# Joules per GEMM (issue 26, session 27): lab/probes/fp8_energy.py launches each kernel back to back for about 2 s
# between two readings of NVML's energy counter, the kernels in turn, in rounds; its runs are kept as
# lab/logs/<name>-<gpu>.json: "fp8-energy" (the goal kernels and cuBLASLt's two, 5 rounds, 4096^3 and 8192^3) and
# "fp8-energy-split" (lesson 7's kernels that differ in one thing each, 3 rounds, 8192^3). Their predictions, written
# before they ran, are in the probe (ENERGY_PREDICTED, SPLIT_PREDICTED); the lesson reads them from there.
ENERGY_MADE_BY = "lab/probes/fp8_energy.py OUT.json"
ENERGY_PREDICTED = {8192: 0.97, 4096: 1.00}   # cuBLASLt default's joules per GEMM over fp8_promote_2acc_lean's
# joules per GEMM over fp8_wgmma's at 8192^3 (session 27, before the run: speed_period's TFLOP/s, fp8_wgmma's over each;
# fp8_promote_2acc_lean's from the first energy run: its joules over fp8_wgmma_store's, 1.06)
SPLIT_PREDICTED = {"fp8_wgmma_n128": 1.06, "fp8_promote_128": 1.23, "fp8_promote_2acc_lean": 1.06}


def energy_log(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A run of lab/probes/fp8_energy.py kept as lab/logs/<name>-<gpu_slug>.json (its rows)."""

    return load_log(name, ENERGY_MADE_BY, gpu_slug, directory)


def energy_rows(rows: list[dict], base: str) -> list[dict]:
    """Per size and kernel of an fp8_energy.py run: TFLOP/s, joules per GEMM (median round; `j_low`, `j_high`: the lowest
    and highest), the window's mean power (W) and SM clock (MHz; medians), the work per cycle (`per_ghz`, TFLOP/s per
    GHz of SM clock), TFLOP per joule, and `vs_base`: the median of the round-by-round ratios of its joules to `base`'s
    (the same round; helpers.timing.round_ratio, above 1: it took more energy per GEMM), with `more`: in how many rounds
    it took more, and `low`, `high`: the lowest and highest round's ratio (the spread helpers.timing.verdict judges a
    prediction by). `passed`: the probe's check of a course kernel (None for cuBLASLt's)."""

    checks = passed_by(rows, lambda r: (r["n"], r["kernel"]))
    timed: dict = {}
    for r in rows:
        if "round" in r:
            timed.setdefault((r["n"], r["kernel"]), []).append(r)
    med = statistics.median
    out = []
    for (n, k), rs in timed.items():
        rs = sorted(rs, key=lambda r: r["round"])
        j = [r["joules"] for r in rs]
        rr = round_ratio([x["joules"] for x in sorted(timed[n, base], key=lambda r: r["round"])], j)
        out.append({"n": n, "kernel": k, "tflops": med(r["tflops"] for r in rs), "joules": med(j), "j_low": min(j),
                    "j_high": max(j), "power_w": med(r["power_w"] for r in rs), "sm_mhz": med(r["sm_mhz"] for r in rs),
                    "per_ghz": med(r["tflops"] / (r["sm_mhz"] / 1e3) for r in rs),
                    "tflop_per_j": med(r["tflop_per_j"] for r in rs), "vs_base": rr["ratio"], "low": rr["low"],
                    "high": rr["high"], "more": f"{rr['won']} of {rr['rounds']}", "passed": checks.get((n, k))})
    return out


def goal_rows(rows: list[dict], predicted: dict | None = None) -> list[dict]:
    """target_rows for a table: `met` as 'yes', 'no' or 'not judged', and with `predicted` ({(kernel, n): ratio},
    written before the run) each row's prediction (`predicted`)."""
    out = target_rows(rows)
    for r in out:
        r["met"] = {True: "yes", False: "no"}.get(r["met"], "not judged")
        if predicted is not None:
            r["predicted"] = predicted[r["kernel"], r["n"]]
    return out


def store_chunks(spread: bool, jj: int = 0) -> list[list[int]]:
    """The 16-byte chunks of the 128-byte box row that each half-warp's 16 lanes write in store_slice_tma's step jj
    (lab/kernels/fp8_sm90a_research.cu; the same for both of a lane's rows, g and g + 8): lane (g = lane / 4,
    tq = lane % 4) writes 8 bytes of chunk q ^ g, q = 2 jj + tq / 2, or with F8_STORE_SPREAD (`spread`) and tq = 2, 3,
    of chunk (2 (jj ^ 2) + tq / 2) ^ g. One list per half-warp."""
    out = []
    for half in (0, 1):
        row = []
        for lane in range(16 * half, 16 * half + 16):
            g, tq = lane // 4, lane % 4
            jl = jj ^ 2 if spread and tq & 2 else jj
            row.append((2 * jl + tq // 2) ^ g)
        out.append(row)
    return out


def store_wavefronts(spread: bool) -> int:
    """Shared-memory wavefronts of one warp's stores of one box (4 steps x 2 rows, each served half a warp at a time):
    a half-warp's 16 eight-byte stores take as many passes as the most lanes that write one bank (4-byte word w of
    chunk c is bank 4 c + w; each lane writes words 2 (tq % 2) and 2 (tq % 2) + 1 of its chunk)."""
    from collections import Counter

    per_row = 0
    for jj in range(4):
        for chunks in store_chunks(spread, jj):
            banks = Counter()
            for i, c in enumerate(chunks):
                tq = i % 4
                for w in (2 * (tq % 2), 2 * (tq % 2) + 1):
                    banks[4 * c + w] += 1
            per_row += max(banks.values())
    return 2 * per_row                                  # rows g and g + 8: the same chunks


def store_counter_rows(name: str = "ncu-fp8-spread", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """tools/ncu_counters.py's JSON of fp8_wgmma_store and its F8_STORE_SPREAD=1 build (lab/logs/<name>-<gpu_slug>
    .json, one launch each): per shared-memory store instruction, the wavefronts and bank conflicts counted and the
    wavefronts of the half-warp model (store_wavefronts over a warp's 8 store instructions of a box), and the tensor
    pipe's share of active cycles."""

    log = load_log(name, "tools/ncu_counters.py --only fp8_wgmma_store fp8_wgmma_store_spread", gpu_slug, directory)
    rows = []
    for k in log["kernels"]:
        c, spread = k["counters"], k["target"].endswith("_spread")
        n = c["smem_store_instructions"]
        rows.append({"target": k["target"], "switch": "F8_STORE_SPREAD=1" if spread else "as built", "stores_m": n / 1e6,
                     "wavefronts": c["smem_store_wavefronts"] / n, "model": store_wavefronts(spread) / 8,
                     "conflicts": c["smem_store_bank_conflicts"] / n, "tensor_pct": c["tensor_pipe_pct"]})
    return rows


def plot_store_chunks():
    """store_chunks drawn: for each half-warp (rows) and each 16-byte chunk of the 128-byte box row (columns, 4 banks
    each), how many of its 16 lanes write there at the first step, as built and with F8_STORE_SPREAD."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 2.2))
    for ax, spread in zip(axes, (False, True)):
        counts = np.zeros((2, 8), dtype=int)
        for half, chunks in enumerate(store_chunks(spread)):
            for c in chunks:
                counts[half, c] += 1
        ax.imshow(counts, cmap="Blues", vmin=0, vmax=4)
        for (h, c), v in np.ndenumerate(counts):
            ax.text(c, h, str(v), ha="center", va="center", color="w" if v > 2 else "k", fontsize=9)
        ax.set_xticks(range(8), [f"{4 * c}-{4 * c + 3}" for c in range(8)], fontsize=7)
        ax.set_yticks([0, 1], ["lanes 0-15", "lanes 16-31"], fontsize=8)
        ax.set_xlabel("chunk of the row: banks", fontsize=8)
        ax.set_title(f"F8_STORE_SPREAD={int(spread)}: {store_wavefronts(spread)} passes per warp and box", fontsize=9)
    fig.tight_layout()
    return fig


def ncu_summary(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """tools/ncu_counters.py's printed summary kept as lab/logs/<name>-<gpu_slug>.log, per target: ms, DRAM MB
    read and written, L2 sectors (millions), tensor pipe and occupancy (%), warp instructions (millions; logs written
    since session 28) and the top stalls as printed."""

    lines = log_path(name, "tools/ncu_counters.py", gpu_slug, suffix=".log", directory=directory).read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("target "))
    keys = ("ms", "dram_read_mb", "dram_write_mb", "l2_sectors_m", "smem_wavefronts_m", "conflicts_m", "tensor_pct",
            "occupancy_pct") + (("inst_m",) if " inst M " in lines[head] else ())    # the column since session 28
    out = {}
    for ln in lines[head + 1:]:
        if not ln.strip():
            break
        parts = ln.split()
        out[parts[0]] = dict(zip(keys, map(float, parts[1:1 + len(keys)])), top_stalls=" ".join(parts[1 + len(keys):]))
    return out


def switch_rows(name: str, built="ctas=128", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A run of builds of one kernel or more (lab/probes/fp8_stages.py, lab/logs/<name>-<gpu_slug>.json) as
    stage_rows gives it, with each row over its kernel's build `built` at the same size (`vs_built`: the median of the
    round-by-round ratios, row_ratio) and the
    rounds, of the alternating rounds, in which it was faster than that build (`faster`, e.g. '0 of 7'). `built`: the
    options as stage_rows writes them (the same stages as the row), or (stages, options)."""
    log = probe_log(name, gpu_slug, directory)
    rows = stage_rows(log)
    opts = lambda r: " ".join(o.removeprefix("-D") for o in r.get("options", ())) or "-"    # noqa: E731
    rounds = {(r["n"], r["kernel"], r["stages"], opts(r)): r["round_ms"] for r in log["stages"]["rows"]
              if "round_ms" in r and not r["kernel"].startswith("cublaslt")}
    for r in rows:
        base = (r["stages"], built) if isinstance(built, str) else tuple(built)
        ref = next(x for x in rows if (x["n"], x["kernel"], x["stages"], x["options"]) == (r["n"], r["kernel"], *base))
        mine, theirs = rounds[r["n"], r["kernel"], r["stages"], r["options"]], rounds[r["n"], r["kernel"], *base]
        r["vs_built"] = row_ratio(r, ref)
        r["faster"] = f"{sum(a < b for a, b in zip(mine, theirs))} of {len(mine)}"
    return rows


def period_rows(name: str = "fp8-period2-probe", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """fp8_promote_256 and _512 in their builds of the probe switch F8_PERIOD (lab/probes/fp8_stages.py --period,
    lab/logs/<name>-<gpu_slug>.json), per size: `build` (0: the first record's, which ptxas serialises; 1: a period
    at a time; 2: the default since session 26), TFLOP/s of the median round, over build 0 (`vs_first`: the median of
    the round-by-round ratios) with the rounds it was faster in (`faster`, of build 0's same rounds), over
    fp8_promote_128 in the same rounds (`vs_128`, likewise),
    the SM clocks (lowest-highest) and whether every check of the build passed. The session-26 runs passed no option
    for build 0 (then the default)."""

    log = probe_log(name, gpu_slug, directory)
    rows = stage_rows(log)
    period = lambda opts: int(opts.split("F8_PERIOD=")[1].split()[0]) if "F8_PERIOD=" in opts else 0   # noqa: E731
    rounds = {(r["n"], r["kernel"], period(" ".join(r.get("options", ())))): r["round_ms"]
              for r in log["stages"]["rows"] if "round_ms" in r}
    t128 = {r["n"]: r for r in rows if r["kernel"] == "fp8_promote_128"}
    out = []
    for r in rows:
        if r["kernel"] not in ("fp8_promote_256", "fp8_promote_512"):
            continue
        b = period(r["options"])
        rr = round_ratio(rounds[r["n"], r["kernel"], b], rounds[r["n"], r["kernel"], 0])
        out.append({"n": r["n"], "kernel": r["kernel"], "build": b, "tflops": r["tflops"],
                    "vs_first": rr["ratio"], "faster": "-" if b == 0 else f"{rr['won']} of {rr['rounds']}",
                    "vs_128": row_ratio(r, t128[r["n"]]), "mhz": r["mhz"], "passed": r["passed"]})
    return out


# fp8_promote_2acc_144 (session 27, out of the course since): fp8_promote_2acc_lean with 128 x 144 tiles on one CTA
# per SM. Predicted
# before any GPU ran it (its kernel comment gives the arithmetic), over fp8_promote_2acc_lean, median round-by-round:
FP8_WIDE_PREDICTED = {8192: 1.02, 4096: 0.89}
# Its first run (lab/probes/fp8_stages.py --wide, 5 rounds, lab/logs/fp8-wide-probe-<gpu>.json): x1.012 at 8192^3,
# x0.911 at 4096^3, bit-identical. Then issue 26's goal judged as the goals in nine rounds (lab/probes/fp8_pingpong.py
# --speed-only --rounds 9 ... fp8_promote_2acc_lean fp8_promote_2acc_144), predicted before that run: its median
# round-by-round ratio to cuBLASLt's default accumulation (session 26's 0.963 for the lean kernel at 8192^3 times the
# probe's x1.012; at 4096^3 session 26's 1.009 times x0.911).
WIDE_GOALS_PREDICTED = {8192: 0.975, 4096: 0.92}
# Both runs missed: the kernel left the course; its code is in commit `commit`, its runs in lab/logs/<log>-<gpu>.json
# (the probe) and <goals>-<gpu>.json (the nine rounds), its compute-sanitizer runs in sanitize-fp8-wide-*.
WIDE_TRIED = {"kernel": "fp8_promote_2acc_144", "over": "fp8_promote_2acc_lean", "commit": "3a670f9",
              "log": "fp8-wide-probe", "goals": "fp8-goals-wide"}


def wide_rows(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """fp8_promote_2acc_144's two runs (WIDE_TRIED), per run, size and kernel (the wide one and the lean one): TFLOP/s
    (median round), the median round-by-round ratio over the lean kernel (`vs_lean`, helpers.timing.round_ratio) and
    over cuBLASLt's default accumulation (`vs_default`) with the rounds it was faster than that (`won`), the SM clock
    (median of the rounds' medians; the probe's run keeps one clock per round too), the work per cycle (`per_ghz`,
    TFLOP/s per GHz of that clock), NVML's power (W; the median round where the run kept one per round), the
    prediction over the lean kernel and whether every check passed."""

    runs = (("5 rounds (fp8_stages.py --wide)", probe_log(WIDE_TRIED["log"], gpu_slug, directory)["stages"]["rows"],
             "sm_mhz"),
            ("9 rounds (fp8_pingpong.py)", load_log(WIDE_TRIED["goals"], "lab/probes/fp8_pingpong.py OUT.json "
                                                    "--speed-only --rounds 9", gpu_slug, directory)["speed"],
             "round_mhz"))
    out = []
    for run, rows, mhz in runs:
        ok = passed_by(rows, lambda r: r["kernel"])
        by = {(r["n"], r["kernel"]): r for r in rows if "round_ms" in r}
        for n in sorted({n for n, _ in by}):
            lean, lt = by[n, WIDE_TRIED["over"]], by[n, "cublaslt_fp8"]
            for k in (WIDE_TRIED["over"], WIDE_TRIED["kernel"]):
                r = by[n, k]
                clock = statistics.median(r[mhz])
                vd = round_ratio(r["round_ms"], lt["round_ms"])
                out.append({"run": run, "n": n, "kernel": k, "tflops": r["tflops"],
                            "vs_lean": round_ratio(r["round_ms"], lean["round_ms"])["ratio"],
                            "vs_default": vd["ratio"], "won": f"{vd['won']} of {vd['rounds']}", "mhz": clock,
                            "per_ghz": r["tflops"] / (clock / 1e3), "power_w": _median_of(r.get("power_w")),
                            "passed": ok.get(k, False),
                            "predicted": FP8_WIDE_PREDICTED[n] if k == WIDE_TRIED["kernel"] else "-"})
    return out


# MBAR_WAIT (kernels/hopper_primitives.cuh) for fp8_promote_2acc_lean (session 27, lab/probes/fp8_stages.py --wait,
# lab/logs/fp8-wait-probe-<gpu>.json): 0 as recorded, 1 every mbarrier wait with a suspend-time hint. Predicted before
# its first run, 1 over 0 (median round-by-round ratio):
WAIT_PREDICTED = {4096: 1.00, 8192: 1.01}


# F8_PAIR (then in kernels/fp8_sm90a.cu) for fp8_promote_2acc_lean (session 29, lab/probes/fp8_stages.py --pair,
# lab/logs/fp8-pair-probe-<gpu>.json): 0 as recorded (a stage per K-tile), 1 two K-tiles per stage, so that a
# consumer waits, releases and steps the ring once per pair. Counted offline before any GPU ran it (nvcc 13 -arch=sm_90a
# -DF8_STAGES=6, cuobjdump -sass, the consumer's steady loop of two K-tiles without the mbarrier wait's retry path): 221
# instructions a warp with 0, of them 128 FADDs; 204 with 1 (17 fewer, 8.5 a K-tile). Nsight Compute counted 268 M warp
# instructions at 8192^3 for the recorded build (lab/logs/ncu-fp8-lt-8192); 8 consumer warps x 262144 CTA K-tiles
# x 8.5 = 17.8 M fewer makes 250 M. Predicted before its first run: the instructions (Nsight Compute, 8192^3) and the
# speed, 1 over 0 (median round-by-round ratio): the energy run's hint (lesson 7, "Counted beside cuBLASLt") puts about
# 0.2% of energy on each 1% of instructions, and at the power limit speed follows energy.
PAIR_PREDICTED = {"instructions_8192": 0.935, 4096: 1.00, 8192: 1.01}
# Its first run (session 29, lab/logs/fp8-pair-probe) counted x0.933 the instructions (0.002 short), and timed no
# gain (x0.999 at 4096^3; x0.970 at 8192^3 with the rounds spread from 0.94 to 1.04). The energy probe asks the
# hint itself (lab/probes/fp8_energy.py --kernels fp8_promote_2acc_lean,fp8_promote_2acc_lean:-DF8_PAIR=1, back to
# back at the power cap): predicted before it ran, the F8_PAIR=1 build's joules per GEMM over the recorded build's, 0.2%
# of energy per 1% of instructions:
PAIR_ENERGY_PREDICTED = {4096: 0.986, 8192: 0.986}
# Neither run found a gain the course's timing tells apart: the switch left the kernel file (its code is in commit
# `commit`); its runs are in lab/logs/<log>-<gpu>.json (the probe), <energy>-<gpu>.json and <ncu>-<gpu>.json.
PAIR_TRIED = {"switch": "F8_PAIR=1", "kernel": "fp8_promote_2acc_lean", "commit": "2a049e0", "log": "fp8-pair-probe",
              "energy": "fp8-energy-pair", "ncu": "ncu-fp8-pair-8192", "flag": "--pair"}


# F8_EXTRA_L2 (lab/kernels/fp8_sm90a_research.cu; session 29, pending its first run): fp8_promote_2acc_lean with
# each K-tile's box of A loaded twice into the same place: every K-tile then asks L2 for 48 KB instead of 32 KB and writes as much into
# shared memory, with the same wgmmas, adds and instructions but the producer's one TMA load. It prices moving a byte
# from L2 into shared memory, the cost the promoting kernel pays more of than cuBLASLt's default (x1.16 the L2 read
# sectors at 8192^3). Predicted before any GPU ran it, the switched build over the recorded build (both 6 stages):
# Nsight Compute's L2 read sectors at 8192^3 (the boxes ask for x1.5; less would say that requests for the same box are
# merged before L2 counts them), and joules per GEMM and speed in fp8_energy.py's back-to-back rounds at the power cap,
# from the rough fit on lesson 7's "Counted beside cuBLASLt" slide (about 0.07% of energy per 1% of L2 sectors):
# +50% x 0.07 = +3.5%.
EXTRA_L2_PREDICTED = {"l2_read_sectors_8192": 1.5, "joules": {4096: 1.035, 8192: 1.035},
                      "speed_at_cap": {4096: 0.97, 8192: 0.97}}
# Where its runs will be kept (lab/logs/<log>-<gpu>.json and so on; switched_build_rows reads them as it reads F8_PAIR's):
EXTRA_L2_TRIED = {"switch": "F8_EXTRA_L2=1", "kernel": "fp8_promote_2acc_lean", "log": "fp8-extra-l2-probe",
                  "energy": "fp8-energy-extra-l2", "ncu": "ncu-fp8-extra-l2-8192", "flag": "--extra-l2"}


# Appendix H's speed predictions in one table (prediction_rows): (the slide's idea, the probe log, its switched build and
# the build it was predicted over, each (kernel, options without -D, stages or None), {n: the prediction written before
# the run}). The predictions are the slides' (and the constants above where they have one).
_LEAN, _C128 = "fp8_promote_2acc_lean", ("ctas=128",)
PREDICTIONS = [
    ("two partial sums", "fp8-2acc-probe", ("fp8_promote_2acc", (), 4), ("fp8_promote_128", (), 4), {4096: 1.08}),
    ("2-CTA clusters sharing B", CLUSTER_TRIED["log"], (CLUSTER_TRIED["kernel"], (), None), (_LEAN, (), None),
     {4096: CLUSTER_TRIED["predicted"]}),
    ("C through shared memory", STORE_TRIED["log"], ("fp8_wgmma_store", (), None), ("fp8_wgmma", (), None),
     {4096: STORE_PREDICTED}),
    ("C through shared memory, promoting", STORE_TRIED["log"], (STORE_TRIED["kernel"], (), None), (_LEAN, (), None),
     {4096: STORE_PREDICTED}),
    ("store conflicts spread", "fp8-spread-probe", ("fp8_wgmma_store", ("F8_STORE_SPREAD=1",), None),
     ("fp8_wgmma_store", (), None), {4096: 1.015}),
    ("128 CTAs", "fp8-ctas-probe", ("fp8_wgmma_store", _C128, None), ("fp8_wgmma_store", (), None), {4096: 1.00}),
    *[(f"128 CTAs, {k}", "fp8-ctas-lean-probe", (k, _C128, None), (k, (), None),
       {n: CTAS_PREDICTED[k, n] for n in (4096, 8192)}) for k in YARDSTICK],
    ("next tile's K-tiles during the store", "fp8-flow-probe", (_LEAN, _C128 + ("F8_FLOW=1",), None), (_LEAN, _C128, None),
     {4096: 1.02, 8192: 1.01}),
    ("only the next tile's first K-tile", "fp8-flow2-probe", (_LEAN, _C128 + ("F8_FLOW=2",), None),
     (_LEAN, _C128, None), {4096: 1.02, 8192: 1.01}),
    *[(f"a ring of {st} stages", "fp8-lean-stages-probe", (_LEAN, _C128, st), (_LEAN, _C128, 6), {4096: 1.00, 8192: 1.00})
      for st in (5, 7)],
    *[(f"uniform descriptors, {k}", "fp8-uniform-probe", (k, _C128 + ("F8_UNIFORM=1",), None), (k, _C128, None),
       {4096: 1.01, 8192: 1.00}) for k in YARDSTICK],
    *[(f"adds at a period's end, {k}", "fp8-period2-probe", (k, ("F8_PERIOD=2",), None), (k, (), None),
       {n: PERIOD2_PREDICTED[k, n] for n in (4096, 8192)}) for k in ("fp8_promote_256", "fp8_promote_512")],
    ("a time limit for the waits", "fp8-wait-probe", (_LEAN, _C128 + ("MBAR_WAIT=1",), None),
     (_LEAN, _C128 + ("MBAR_WAIT=0",), None), WAIT_PREDICTED),
    ("cuBLASLt's width, 128 x 144", WIDE_TRIED["log"], (WIDE_TRIED["kernel"], (), None), (_LEAN, _C128, None),
     FP8_WIDE_PREDICTED),
    ("two K-tiles per stage", PAIR_TRIED["log"], (_LEAN, _C128 + ("F8_PAIR=1",), None), (_LEAN, _C128 + ("F8_PAIR=0",), None),
     {n: PAIR_PREDICTED[n] for n in (4096, 8192)}),
]


def prediction_rows(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Every speed prediction of Appendix H (PREDICTIONS) beside its outcome, in one table: per idea and size, the
    prediction written before the run, the measured ratio (the median of the round-by-round ratios of the two builds
    timed in the same alternating rounds; helpers.timing.round_ratio), its spread (lowest and highest round), the
    verdict of the course's rule (helpers.timing.verdict), the rounds the switched build was faster, and the SM clocks
    of both builds (medians of their rounds; shown, not corrected for)."""

    logs: dict = {}                                # each probe's log read once (several ideas share one)
    out = []
    for idea, log, new, base, predicted in PREDICTIONS:
        if log not in logs:
            logs[log] = [r for r in probe_log(log, gpu_slug, directory)["stages"]["rows"] if "round_ms" in r]
        rows = logs[log]

        def pick(n, kernel, options, stages):
            got = [r for r in rows if r["n"] == n and r["kernel"] == kernel and stages in (None, r["stages"])
                   and tuple(o.removeprefix("-D") for o in r.get("options", ())) == options]
            if len(got) != 1:
                raise ResultsError(f"lab/logs/{log}: {len(got)} timings of {kernel} {' '.join(options)} at {n}^3.",
                                   "keep the probe's log as it ran")
            return got[0]

        for n, p in sorted(predicted.items()):
            a, b = pick(n, *new), pick(n, *base)
            rr = round_ratio(a["round_ms"], b["round_ms"])
            out.append({"idea": idea, "n": n, "predicted": p, "measured": rr["ratio"], "low": rr["low"],
                        "high": rr["high"], "verdict": verdict(p, rr["low"], rr["high"]),
                        "won": f"{rr['won']} of {rr['rounds']}",
                        "mhz": f"{statistics.median(a['sm_mhz']):.0f} / {statistics.median(b['sm_mhz']):.0f}"})
    return out


def switched_build_rows(tried: dict, predicted: dict, gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """A probe switch's two timed runs (`tried`: PAIR_TRIED or EXTRA_L2_TRIED), per run and size: the switched build of
    tried["kernel"] over the recorded build, timed in the same rounds with cuBLASLt's default accumulation: its speed
    (`speed`, the median round-by-round ratio, helpers.timing.round_ratio, above 1 faster) with the rounds it was faster
    (`faster`), the same over cuBLASLt's default (`vs_default`), the SM clocks of the recorded and the switched build
    (`mhz`, medians of the rounds) and the switched build's power (`power_w`, NVML, median round), its joules per GEMM
    over the recorded build's (`joules`, the energy run only: energy_rows' `vs_base`, above 1 more energy; '' in the
    probe's rows) with the rounds it took more (`more`), the predictions written before the runs (`predicted`: "cold",
    "cap" and "joules", each by size or None; '-' where none was written), each prediction judged by the course's
    rule on the rounds' spread (`verdict`, helpers.timing.verdict: "speed: ..." and "joules: ...", '-' where nothing
    was predicted; the clocks beside them, not corrected for), and whether every check of the switched build passed
    (bit for bit against the model). The probe's run has cold L2 before every launch (fp8_stages.py
    --pair, --extra-l2); the energy run launches back to back on the same inputs for two seconds at a time, at the
    power cap (fp8_energy.py)."""

    med = statistics.median
    k, sw = tried["kernel"], tried["switch"]
    label = f"{k}:-D{sw}"                                      # the energy run's name for the switched build
    said = lambda what, n: (predicted.get(what) or {}).get(n, "-")                        # noqa: E731

    def row(run, n, ms, lt_ms, base_ms, mhz, power_w, passed, spread=None, **energy):
        v = round_ratio(ms, base_ms)
        judged = [f"speed: {verdict(energy['predicted_speed'], v['low'], v['high'])}"] \
            if energy["predicted_speed"] != "-" else []
        if energy["predicted_joules"] != "-":
            judged.append("joules: " + verdict(energy["predicted_joules"], *spread, above="more", below="fewer",
                                               change="change"))
        return {"run": run, "n": n, "speed": v["ratio"], "faster": f"{v['won']} of {v['rounds']}",
                "vs_default": round_ratio(ms, lt_ms)["ratio"], "mhz": mhz, "power_w": power_w,
                "passed": passed, "verdict": "; ".join(judged) or "-", **energy}

    probe = probe_log(tried["log"], gpu_slug, directory)["stages"]["rows"]
    build = lambda r: 1 if f"-D{sw}" in r.get("options", ()) else 0                       # noqa: E731
    ok = passed_by([r for r in probe if r["kernel"] == k], build)
    timed = {(r["n"], "lt" if r["kernel"] == "cublaslt_fp8" else build(r)): r for r in probe
             if "round_ms" in r and r["kernel"] in (k, "cublaslt_fp8")}
    missing = sorted(f"{what} at {n}^3" for n in {n for n, _ in timed} for what, key in
                     (("the recorded build", 0), (f"the {sw} build", 1), ("cuBLASLt's default", "lt"))
                     if (n, key) not in timed)
    if missing or not timed:
    
        raise ResultsError(f"lab/logs/{tried['log']}: no timing of {', '.join(missing) or 'any build'}.",
                           f"run lab/probes/fp8_stages.py OUT.json {tried['flag']} on a Hopper GPU and keep its "
                           "output there.")
    out = []
    for n in sorted({n for n, _ in timed}):
        a, b = timed[n, 0], timed[n, 1]
        out.append(row(f"cold L2 (fp8_stages.py {tried['flag']})", n, b["round_ms"], timed[n, "lt"]["round_ms"],
                       a["round_ms"], f"{med(a['sm_mhz']):.0f} / {med(b['sm_mhz']):.0f}", _median_of(b.get("power_w")),
                       ok.get(1, False), joules="", more="-", predicted_speed=said("cold", n), predicted_joules="-"))
    energy = load_log(tried["energy"], "lab/probes/fp8_energy.py OUT.json --kernels <recorded>,<switched>",
                      gpu_slug, directory)
    per = {(r["n"], r["kernel"]): r for r in energy_rows(energy, base=k)}
    ms: dict = {}
    for r in sorted((r for r in energy if "round" in r), key=lambda r: r["round"]):
        ms.setdefault((r["n"], r["kernel"]), []).append(r["ms"])
    for n in sorted({n for n, kk in per if kk == label}):
        a, b = per[n, k], per[n, label]
        out.append(row("back to back at the power cap (fp8_energy.py)", n, ms[n, label], ms[n, "cublaslt_fp8"],
                       ms[n, k], f"{a['sm_mhz']:.0f} / {b['sm_mhz']:.0f}", b["power_w"],
                       ok.get(1, False) and bool(b["passed"]), (b["low"], b["high"]), joules=b["vs_base"],
                       more=b["more"], predicted_speed=said("cap", n), predicted_joules=said("joules", n)))
    return out


def pair_rows(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """F8_PAIR's two timed runs (PAIR_TRIED), as switched_build_rows gives them: cold L2 predicted by PAIR_PREDICTED, the
    joules at the power cap by PAIR_ENERGY_PREDICTED."""
    return switched_build_rows(PAIR_TRIED, {"cold": {n: PAIR_PREDICTED[n] for n in (4096, 8192)},
                                    "joules": PAIR_ENERGY_PREDICTED}, gpu_slug, directory)


def wait_rows(name: str = "fp8-wait-probe", gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """fp8_promote_2acc_lean built with MBAR_WAIT 0 and 1 (lab/probes/fp8_stages.py --wait), per size and build:
    TFLOP/s (median round), the median round-by-round ratio over build 0 (`vs_0`, helpers.timing.round_ratio) with the
    rounds it was faster (`faster`), the same over cuBLASLt's default accumulation (`vs_default`), the prediction, the
    SM clocks (lowest-highest), NVML's power (W, median round) and whether every check of the build passed (bit for
    bit against the model)."""

    log = probe_log(name, gpu_slug, directory)["stages"]["rows"]
    wait = lambda r: int(" ".join(r.get("options", ())).split("MBAR_WAIT=")[1][0])   # noqa: E731
    ok = passed_by([r for r in log if r["kernel"] == "fp8_promote_2acc_lean"], wait)
    timed = {(r["n"], "lt" if r["kernel"] == "cublaslt_fp8" else wait(r)): r for r in log
             if "round_ms" in r and r["kernel"] in ("cublaslt_fp8", "fp8_promote_2acc_lean")}
    out = []
    for n in sorted({n for n, _ in timed}):
        for b in (0, 1):
            r = timed[n, b]
            v0 = round_ratio(r["round_ms"], timed[n, 0]["round_ms"])
            out.append({"n": n, "build": f"MBAR_WAIT={b}", "tflops": r["tflops"], "vs_0": v0["ratio"],
                        "faster": "-" if b == 0 else f"{v0['won']} of {v0['rounds']}",
                        "predicted": "-" if b == 0 else WAIT_PREDICTED[n],
                        "vs_default": round_ratio(r["round_ms"], timed[n, "lt"]["round_ms"])["ratio"],
                        "mhz": clock_span(r["sm_mhz"]) or "?", "power_w": _median_of(r.get("power_w")),
                        "passed": ok.get(b, False)})
    return out


def period_waits(gpu_slug: str = "nvidia-h200", directory=None) -> list[dict]:
    """Nsight Compute's warp sampling at 4096^3 (lab/probes/ncu_source.py, lab/logs/ncu-source-first-<gpu>.json)
    of fp8_promote_128 and fp8_promote_256 as first built (F8_PERIOD=0) and as built now: per build, warp instructions
    (millions), wgmma waits executed (every WARPGROUP.DEPBAR), the wait for all groups among them, and the share of
    stall samples at the consumers' wait for a full stage (the mbarrier wait executed most) and at the producer's
    wait for an empty one (the next)."""

    log = load_log("ncu-source-first", "lab/probes/ncu_source.py OUT --set fp8 --only fp8_promote_128,"
                   "fp8_promote_256_first,fp8_promote_256", gpu_slug, directory)
    names = {"fp8_promote_128": "fp8_promote_128", "fp8_promote_256_first": "fp8_promote_256, F8_PERIOD=0",
             "fp8_promote_256": "fp8_promote_256, F8_PERIOD=2"}
    out = []
    for t, label in names.items():
        v = log[t]
        full, empty = v["mbarrier_waits"][:2]
        out.append({"build": label, "minst": v["warp_instructions"] / 1e6,
                    "waits": sum(w["executions"] for w in v["wgmma_waits"]),
                    "waits_all": sum(w["executions"] for w in v["wgmma_waits"] if w["le"] == "0x0"),
                    "wait_full": full["share"], "wait_empty": empty["share"]})
    return out


def probe_log(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """A run of lab/probes/fp8_stages.py kept as lab/logs/<name>-<gpu_slug>.json, in the shape of
    experiments.fp8.stages (so stage_rows reads it): e.g. name "fp8-2acc-probe" (its --two run)."""

    return {"stages": {"rows": load_log(name, "lab/probes/fp8_stages.py OUT.json", gpu_slug, directory)}}


def pipe_shares(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """Per kernel, the share of active cycles the tensor pipe was busy (Nsight Compute's
    sm__pipe_tensor_cycles_active, one launch each, clocks not locked), from lab/logs/<name>-<gpu_slug>.json,
    e.g. name "ncu-pipe-fp8-2acc" (its command is in the file)."""

    metric = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
    log = load_log(name, f"ncu --clock-control none --metrics {metric} (one launch per kernel)", gpu_slug, directory)
    return {k: v[metric] for k, v in log["kernels"].items()}


# (session 28, issue 26) Nsight Compute at 8192^3 on the course's two kernels nearest cuBLASLt and the cuBLASLt kernels
# they are measured against (tools/ncu_counters.py --size 8192 --only ..., one launch each, clocks left alone):
# lab/logs/ncu-fp8-lt-8192-<gpu>.json. Predicted before the run (commit 79269dc): the promoting kernel executes more
# warp instructions and reads more L2 sectors per GEMM than cuBLASLt's default ("more" = its count over cuBLASLt's > 1).
NCU_LT = {"log": "ncu-fp8-lt-8192", "commit": "79269dc",
          "pairs": {"fp8_promote_2acc_lean": "cublaslt_fp8_default", "fp8_wgmma_store": "cublaslt_fp8_fast"},
          "predicted": {"fp8_promote_2acc_lean": {"instructions": "more", "l2_read_sectors": "more"}}}


def ncu_pair_rows(name: str = NCU_LT["log"], pairs: dict | None = None, gpu_slug: str = "nvidia-h200",
                  directory=None) -> list[dict]:
    """A tools/ncu_counters.py JSON (lab/logs/<name>-<gpu_slug>.json), one row per target in `pairs` order (each
    course kernel, then the cuBLASLt kernel it is measured against): the kernel that ran (`runs`: Nsight Compute's
    name for it), ms, L2 read sectors and warp instructions executed (millions), the tensor and FMA pipes' share of
    active cycles (%), the top three stalls, and for a course kernel its counts over its yardstick's (`x_ms`, `x_l2`,
    `x_inst`). `ms` is one launch under the profiler; this log read no clock beside it."""

    pairs = NCU_LT["pairs"] if pairs is None else pairs
    log = load_log(name, "tools/ncu_counters.py --size 8192 --only <targets>", gpu_slug, directory)
    by = {k["target"]: k for k in log["kernels"]}

    def row(t):
        c = by[t]["counters"]
        return {"kernel": t, "runs": by[t].get("profiled_kernel", by[t]["kernel"]), "ms": c["duration_ns"] / 1e6,
                "l2_sectors_m": c["l2_read_sectors"] / 1e6, "inst_m": c["instructions"] / 1e6,
                "tensor_pct": c["tensor_pipe_pct"], "fma_pct": c["fma_pipe_pct"],
                "top_stalls": ", ".join(f"{s} {v:g}" for s, v in by[t]["top_stalls"][:3])}

    out = []
    for ours, theirs in pairs.items():
        a, b = row(ours), row(theirs)
        a.update(x_ms=a["ms"] / b["ms"], x_l2=a["l2_sectors_m"] / b["l2_sectors_m"], x_inst=a["inst_m"] / b["inst_m"],
                 against=theirs)
        out += [a, b]
    return out


def ncu_pair_verdicts(rows: list[dict], predicted: dict | None = None) -> dict:
    """NCU_LT's predictions judged on ncu_pair_rows: {kernel: {count: 'as predicted' or 'missed'}}. A predicted
    direction is judged by the direction (helpers.timing.verdict's rule has no spread to use for a count): 'more' is
    as predicted when the course kernel's count over its yardstick's is above 1."""
    predicted = NCU_LT["predicted"] if predicted is None else predicted
    key = {"instructions": "x_inst", "l2_read_sectors": "x_l2"}
    by = {r["kernel"]: r for r in rows}
    return {k: {what: "as predicted" if (by[k][key[what]] > 1) == (way == "more") else "missed"
                for what, way in p.items()}
            for k, p in predicted.items()}


# --------------------------------------------------------------------------- lesson 7's "What else was tried"
WHERE = "lab/notebooks/07_fp8_research.py"


def _at(pairs) -> str:
    """'x1.051 at 4096^3, x0.880 at 8192^3' from [(n, ratio), ...]."""
    return ", ".join(f"x{v:.3f} at {n}^3" for n, v in pairs)


def _stage_gain(data: dict, kernel: str, n: int = 4096) -> tuple[int, float]:
    """The best build of `kernel` with more than 4 stages over its 4-stage build in the same rounds (stage_rows)."""
    rows = [r for r in stage_rows(data, base=kernel) if r["kernel"] == kernel and r["n"] == n and r["stages"] > 4]
    best = max(rows, key=lambda r: r["vs_base"])
    return best["stages"], best["vs_base"]


def tried() -> list[dict]:
    """Lesson 7's rows of results/tried.json: one per idea of the FP8 kernels' race with cuBLASLt, in the order they
    ran, with the prediction written before its run and the ratio measured (each computed here from lab/logs and the
    record: prediction_rows' median round-by-round ratios where the idea was predicted, the record's timings where
    not). `kept`: whether the kernels the course records carry the idea."""
    pred = {}
    for r in prediction_rows():
        pred.setdefault(r["idea"], []).append(r)

    def row(idea, key, kept, predicted=None, measured=None):
        rs = pred.get(key, [])
        return {"idea": idea, "kept": kept, "where": WHERE,
                "predicted": predicted or _at((r["n"], r["predicted"]) for r in rs),
                "measured": measured or _at((r["n"], r["measured"]) for r in rs)}

    fp8 = load_latest().meta["experiments"]["fp8"]
    pp = {(r["n"], r["kernel"]): r for r in fp8["speed_pingpong"]["rows"] if "tflops" in r}
    ring = {k: _stage_gain(fp8, k) for k in ("fp8_wgmma_n128", "fp8_promote_128")}
    desc = {r["n"]: r["vs_base"] for r in stage_rows(probe_log("fp8-desc-add"), base="fp8_promote_128")
            if r["kernel"] == "fp8_promote_128" and r["options"] == "F8_DESC_ADD=1"}
    first = [r for r in period_rows("fp8-period-probe") if r["build"] == 1 and r["n"] == 4096]
    wide9 = [r for r in wide_rows() if r["run"].startswith("9") and r["kernel"] == WIDE_TRIED["kernel"]]
    period2 = {k[-3:]: pred[f"adds at a period's end, {k}"] for k in ("fp8_promote_256", "fp8_promote_512")}
    none = "none written"
    return [
        row("promotion overlapped: the two consumer warpgroups take turns (fp8_promote_pingpong)", None, "no", none,
            _at((n, pp[n, "fp8_promote_pingpong"]["tflops"] / pp[n, "fp8_promote_128"]["tflops"]) for n in (4096, 8192))
            + " over fp8_promote_128, one timing each (8192^3 at {} MHz against {})".format(
                *(pp[8192, k].get("sm_mhz") for k in ("fp8_promote_pingpong", "fp8_promote_128")))),
        row("a deeper ring: 5 to 7 stages for the 4-stage kernels", None, "no", none,
            "; ".join(f"{k} x{v:.3f} at best ({s} stages, 4096^3)" for k, (s, v) in ring.items())),
        row("fewer instructions: descriptors advanced by adds (F8_DESC_ADD)", None, "yes", none,
            _at(sorted(desc.items())) + " (fp8_promote_128)"),
        row("two partial sums in one warpgroup (fp8_promote_2acc)", "two partial sums", "yes"),
        row("two CTAs sharing B by multicast (fp8_promote_2acc_cluster)", "2-CTA clusters sharing B", "no"),
        row("C through shared memory and TMA (fp8_wgmma_store)", "C through shared memory", "yes"),
        row("C through shared memory, promoting kernel (fp8_promote_2acc_store)", "C through shared memory, promoting",
            "no"),
        row("the store's bank conflicts spread (F8_STORE_SPREAD)", "store conflicts spread", "no"),
        row("128 CTAs instead of one per SM (132)", "128 CTAs", "yes",
            measured=_at((r["n"], r["measured"]) for r in pred["128 CTAs"]) + "; both kernels, both sizes: " + ", ".join(
                f"x{r['measured']:.3f}" for k in YARDSTICK for r in pred[f"128 CTAs, {k}"])),
        row("the next tile's K-tiles during the store (F8_FLOW=1)", "next tile's K-tiles during the store", "no"),
        row("only the next tile's first K-tile during the store (F8_FLOW=2)", "only the next tile's first K-tile", "no"),
        row("a ring of 5 or 7 stages for the lean kernel (6)", None, "no",
            _at((r["n"], r["predicted"]) for r in pred["a ring of 5 stages"]) + " for each", "; ".join(f"{st} stages: " + _at((r["n"], r["measured"]) for r in pred[f"a ring of {st} stages"])
                                         for st in (5, 7))),
        row("descriptors in uniform registers (F8_UNIFORM)", None, "yes",
            _at((r["n"], r["predicted"]) for r in pred["uniform descriptors, fp8_wgmma_store"]),
            "; ".join(f"{k}: " + _at((r["n"], r["measured"]) for r in pred[f"uniform descriptors, {k}"])
                      for k in YARDSTICK)),
        row("promotion's wait only, without ptxas's injected one (F8_PERIOD=1)", None, "no",
            _at((n, PERIOD_PREDICTED[k, n]) for k, n in PERIOD_PREDICTED if k == "fp8_promote_256" and n == 4096)
            + " (256 and 512)",
            ", ".join(f"{r['kernel'][12:]}: x{r['vs_first']:.3f}" for r in first) + " at 4096^3"),
        row("each stage let go at once, the adds at a period's end (F8_PERIOD=2)", None, "yes",
            "; ".join(f"{k}: " + _at((r["n"], r["predicted"]) for r in rs) for k, rs in period2.items()),
            "; ".join(f"{k}: " + _at((r["n"], r["measured"]) for r in rs) for k, rs in period2.items())),
        row("a time limit for the mbarrier waits (MBAR_WAIT=1)", "a time limit for the waits", "no"),
        row("cuBLASLt's tile width, 128 x 144 (fp8_promote_2acc_144)", "cuBLASLt's width, 128 x 144", "no",
            measured=_at((r["n"], r["measured"]) for r in pred["cuBLASLt's width, 128 x 144"])
            + "; nine rounds: " + _at((r["n"], r["vs_lean"]) for r in wide9)),
        row("two K-tiles per stage: fewer waits and ring steps (F8_PAIR=1)", "two K-tiles per stage", "no"),
    ]


# --------------------------------------------------------------------------- the research notebook's exercise
def two_sum_registers(bn: int) -> int:
    """Registers a consumer thread needs for two FP32 partial sums and the total of a 64 x bn slice (128 threads):
    3 x (64 bn / 128)."""
    return 3 * (64 * bn // 128)


@checker
def check_two_sum_registers(answer, bn: int = 256) -> None:
    check_number(f"registers a consumer thread needs for two partial sums and the total, 64 x {bn} slice", answer,
                 two_sum_registers(bn), rel=0,
                 hint="a warpgroup's 128 threads hold the 64 x N FP32 accumulator: 64 N / 128 = N / 2 registers "
                      "each; two partial sums and the total are three such sets. setmaxnreg gives a consumer at "
                      "most 232 here (and 255 is the most any thread can have).")


# --------------------------------------------------------------------------- F8_FLOW's schedule, as a model
def stream_schedule(flow: bool, ktiles: int = 4, tiles: int = 2, store: float = 1.0, add: float = 0.25) -> dict:
    """A model of one consumer warpgroup of lesson 7's two-sum kernel (fp8_sm90a_research.cu, TWO), in units of one
    K-tile's wgmma time: it issues K-tile i (no time), then waits for K-tile i - 1's group, adds it (`add`) and, at a
    tile's last K-tile, stores C (`store`, an assumed cost, not a measurement). A group starts when issued and the one
    before it is done. As built (flow False) a tile's last K-tile is waited for and stored before the next tile's first
    is issued; with F8_FLOW (flow True) the next tile's first is issued first. Returns {'mma': [(start, end, label)],
    'cuda': [(start, end, 'add' | 'store')], 'busy': the Tensor Cores' share of the time}."""
    items = [(t, k) for t in range(tiles) for k in range(ktiles)]
    mma, cuda, w, end = [], [], 0.0, 0.0

    def retire(i):                                    # wait for item i's group, add it, store at a tile's end
        nonlocal w
        w = max(w, mma[i][1])
        cuda.append((w, w + add, "add"))
        w += add
        if items[i][1] == ktiles - 1:
            cuda.append((w, w + store, "store"))
            w += store
    for i, (t, k) in enumerate(items):
        start = max(w, end)                           # issued now; runs after the previous group
        end = start + 1.0
        mma.append((start, end, f"t{t} k{k}"))
        if i > 0 and (flow or k > 0):
            retire(i - 1)
        if not flow and k == ktiles - 1:              # as built: the tile's last K-tile, before the next tile
            retire(i)
    if flow:
        retire(len(items) - 1)
    return {"mma": mma, "cuda": cuda, "busy": len(items) / max(w, end)}


def k_tile_stream(ktiles: int = 4, tiles: int = 2, store: float = 1.0, add: float = 0.25):
    """Two panels of stream_schedule, as built and with F8_FLOW=1: per panel the Tensor Cores (a consumer's wgmma
    groups, labelled tile and K-tile) and the consumer's CUDA-core work (adds, stores of C). A model, not a
    measurement: the title says the assumed costs."""
    import matplotlib.pyplot as plt

    from helpers.plots import COLORS, apply_style

    apply_style()
    fig, axes = plt.subplots(2, 1, figsize=(11, 3.6), sharex=True)
    runs = [(False, "as built"), (True, "F8_FLOW=1: one stream of K-tiles")]
    horizon = max(max(e for _, e, _ in stream_schedule(f, ktiles, tiles, store, add)["cuda"]) for f, _ in runs)
    for ax, (flow, name) in zip(axes, runs):
        s = stream_schedule(flow, ktiles, tiles, store, add)
        for a, b, label in s["mma"]:
            ax.barh(1, b - a, left=a, height=0.7, color=COLORS[0], edgecolor="white")
            ax.text((a + b) / 2, 1, label, ha="center", va="center", color="white", fontsize=9)
        for a, b, kind in s["cuda"]:
            ax.barh(0, b - a, left=a, height=0.7, color=COLORS[2] if kind == "add" else COLORS[3], edgecolor="white")
            if kind == "store":
                ax.text((a + b) / 2, 0, "store C", ha="center", va="center", color="white", fontsize=9)
        ax.set_yticks([0, 1], ["adds, store", "Tensor Cores"], fontsize=10)
        ax.set_xlim(0, horizon + 0.1)
        ax.grid(axis="y", visible=False)
        ax.set_title(f"{name}: Tensor Cores busy {s['busy']:.0%} of the time", loc="left", fontsize=12)
    axes[-1].set_xlabel(f"time, in K-tiles of wgmma (a model: an add {add:g}, a store of C {store:g})")
    fig.tight_layout()
    return fig
