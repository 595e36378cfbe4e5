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
            rows.append({"who": "cuBLAS" if what.startswith("cuBLAS") else "rung 25's kernel (clusters of 2)",
                         "kernel": r["kernel_name"], "row_bytes": r["row_bytes"],
                         "us": round(c["duration_ns"] / 1e3), "sm_mhz": round(c["sm_clock_hz"] / 1e6),
                         "dram_read_gb": round(c["dram_read_bytes"] / 1e9, 2),
                         "l2_hit_pct": round(c["l2_hit_rate_pct"]), "tensor_pct": round(c["tensor_pipe_pct"]),
                         "top_stall": f"{stall} {share:.1f}"})
    if len({(h["gpu"], h["date"]) for h in heads}) != 1:
        raise ValueError(f"the row-alignment logs come from different runs: {heads}")
    return {**heads[0], "shape": [7000, 7000, 7000], "command": "python3 " + COMMAND, "rows": rows}


def build() -> dict:
    return {"schema": SCHEMA, "made_by": "python lab/limits.py", "lessons": {"06": {"row_alignment": row_alignment()}}}


def write(path=None):
    path = path or ROOT / "results" / "limits.json"
    path.write_text(json.dumps(build(), indent=1) + "\n")
    return path
