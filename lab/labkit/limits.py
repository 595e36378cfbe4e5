"""results/limits.json: what the counters say limits a goal a lesson still misses, read from the lab's Nsight
Compute logs. `python lab/limits.py` writes the file; the lessons read it with helpers.results.limits(lesson).

Lesson 6: at 7000^3 on the H100 (rows of 14000 bytes, 16 bytes into a 32-byte sector) the best rung reaches about
0.8 of cuBLAS; lab/probes/ncu_row_alignment.py profiled the kernel the launcher builds there (rung 25's, in
clusters of 2) and cuBLAS's, each with the rows as they are and padded to 14080 bytes (whole 128-byte lines)."""
from __future__ import annotations

import json
import re

from . import ROOT
from .logs import load_log, log_path

SCHEMA = "tensor-core-course/limits/1"
COMMAND = "lab/probes/ncu_row_alignment.py OUT.json --pads 0,40 --rungs 29 --shape 7000x7000x7000"
# (log, GPU slug, which of its rows): the rung's kernel, then cuBLAS's
ROW_ALIGNMENT_LOGS = (("ncu-row-alignment-7000-quad", "nvidia-h100", "rung 29"),
                      ("ncu-row-alignment-7000", "nvidia-h100", "cuBLAS FP16 C"))
# the same day's timings on the H100 that name the cluster the launcher built at each shape (lab/probes/group_m.py)
BUILD_LOG = ("group-m-shapes", "nvidia-h100", "lab/probes/group_m.py OUT.json --shapes 7000x7000x7000,... --groups 8")


def built_cluster(kernel: str, shape: list[int]) -> int:
    """CTAs per cluster of `kernel` as the launcher built it at `shape` on the H100 (BUILD_LOG's 'as built' rows)."""
    name, slug, made_by = BUILD_LOG
    for r in load_log(name, made_by, slug)["rows"]:
        what = r["what"]
        if r["shape"] == list(shape) and " as built: " in what and what.split(": ")[1].startswith(kernel + ","):
            return int(what.rsplit("clusters of ", 1)[1])
    raise ValueError(f"{name}: no 'as built' row of {kernel} at {shape}")


def _header(name: str, slug: str) -> dict:
    """The GPU and date in the first line of a probe's .log ('# NVIDIA H100 80GB HBM3, driver ..., 2026-12-07, ...')."""
    first = log_path(name, COMMAND, slug, suffix=".log").read_text().splitlines()[0]
    gpu = first.lstrip("# ").split(",")[0].strip()
    date = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", first)
    return {"gpu": gpu, "date": date.group(1) if date else ""}


def row_alignment() -> dict:
    """The rung's kernel and cuBLAS at 7000^3 on the H100, rows as they are and padded: one row each with the kernel,
    bytes per row, duration, SM clock, DRAM bytes read, L2 hit rate, tensor pipe busy and the top stall."""
    rows, heads = [], []
    for name, slug, what in ROW_ALIGNMENT_LOGS:
        log = load_log(name, COMMAND, slug)
        heads.append(dict(_header(name, slug), ncu=log["ncu"].split("(")[0].replace("Version", "").strip()))
        for r in log["rows"]:
            c = r.get("counters")
            if r["what"] != what or not c:
                continue
            stall, share = r["top_stalls"][0]
            shape = [int(v) for v in r["shape"].split("x")]
            who = "cuBLAS" if what.startswith("cuBLAS") else \
                f"rung 25's kernel (clusters of {built_cluster(r['kernel_name'], shape)})"
            rows.append({"who": who, "shape": shape,
                         "kernel": r["kernel_name"], "row_bytes": r["row_bytes"],
                         "us": round(c["duration_ns"] / 1e3), "sm_mhz": round(c["sm_clock_hz"] / 1e6),
                         "dram_read_gb": round(c["dram_read_bytes"] / 1e9, 2),
                         "l2_hit_pct": round(c["l2_hit_rate_pct"]), "tensor_pct": round(c["tensor_pipe_pct"]),
                         "top_stall": f"{stall} {share:.1f}"})
    shapes = {tuple(r.pop("shape")) for r in rows}
    if len({(h["gpu"], h["date"]) for h in heads}) != 1 or len(shapes) != 1:
        raise ValueError(f"the row-alignment logs come from different runs or shapes: {heads}, {shapes}")
    return {**heads[0], "shape": list(shapes.pop()), "command": "python3 " + COMMAND, "rows": rows}


def build() -> dict:
    return {"schema": SCHEMA, "made_by": "python lab/limits.py", "lessons": {"06": {"row_alignment": row_alignment()}}}


def write(path=None):
    path = path or ROOT / "results" / "limits.json"
    path.write_text(json.dumps(build(), indent=1) + "\n")
    return path
