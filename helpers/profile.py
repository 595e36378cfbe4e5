"""Recorded Nsight Compute counters (results/ncu-<gpu>.json): read them, and put them in the units a
lesson argues with.

``make gpu-check STAGES=ncu`` (tools/ncu_counters.py) profiles one launch of each target at n^3 on a
GPU that has ``ncu`` and writes the file: lesson 1's gemm_fp32_kernel with each block shape
(targets ``fp32_<bx>x<by>``), its tiled solution (``fp32_tiled_16``, ``fp32_tiled_32``) and every
rung of lesson 5's ladder (``rung1`` ... ``rung7``). The counters are hardware counts for that one
launch, the same on every machine that reads the file: a notebook shows them without a GPU.

``load_ncu()`` gives a ``Profile``; ``Profile.row(target)`` the derived quantities (bytes moved at
each level, sectors per request, shared-memory wavefronts and bank conflicts, pipe utilisation,
occupancy, the top stall reasons); ``Profile.rows(targets)`` a table of them. A metric the profiler
could not collect (listed in the file's ``not_collected``) reads as None.

``load_sampling(name)`` and ``sampling_rows`` read the other kind of record: summaries of Nsight Compute's
per-instruction sampling (results/logs/ncu-source-<name>-<gpu>.json, lab/probes/ncu_source.py): instructions by
opcode, the wgmma instructions, and where the warps wait.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import ResultsError
from .results import RESULTS_DIR, load_log

SECTOR_BYTES = 32          # L1, L2 and DRAM move 32-byte sectors
_FIX = ("run `make gpu-check STAGES=ncu` on a GPU with Nsight Compute to write one, or restore the "
        "committed file with `git checkout -- results/`.")


@dataclass
class Profile:
    path: Path
    meta: dict

    @property
    def gpu_name(self) -> str:
        return self.meta["gpu"]["name"]

    @property
    def size(self) -> tuple:
        return tuple(self.meta["size"])

    @property
    def label(self) -> str:
        return f"Nsight Compute on {self.gpu_name}, recorded {self.meta['date'][:10]}, one launch at " \
               f"{'x'.join(str(s) for s in self.size)}"

    def targets(self) -> list[str]:
        return [k["target"] for k in self.meta["kernels"]]

    def kernel(self, target: str) -> dict:
        for k in self.meta["kernels"]:
            if k["target"] == target:
                return k
        raise ResultsError(f"{self.path.name} has no target {target!r}; it has {', '.join(self.targets())}.", _FIX)

    def counter(self, target: str, name: str):
        """One raw counter (its short name, as in the file's ``metrics``), or None if not collected."""
        return self.kernel(target)["counters"].get(name)

    def row(self, target: str, stalls: int = 3) -> dict:
        """Derived quantities for one target (None where a counter is missing)."""
        k = self.kernel(target)
        c = k["counters"]

        def get(name, scale=1.0):
            v = c.get(name)
            return None if v is None else v * scale

        def ratio(a, b):
            return None if a is None or not b else a / b

        M, N, K = self.size
        out = {"target": target, "kernel": k["kernel"], "what": k["what"],
               "ms": get("duration_ns", 1e-6),
               "dram_read_gb": get("dram_read_bytes", 1e-9), "dram_write_gb": get("dram_write_bytes", 1e-9),
               "dram_pct": get("dram_throughput_pct"),
               "l2_read_gb": get("l2_read_sectors", SECTOR_BYTES * 1e-9), "l2_hit_pct": get("l2_hit_rate_pct"),
               "l1_load_gb": get("l1_global_load_sectors", SECTOR_BYTES * 1e-9),
               "l1_requests": get("l1_global_load_requests"), "l1_hit_pct": get("l1_hit_rate_pct"),
               "sectors_per_request": ratio(get("l1_global_load_sectors"), get("l1_global_load_requests")),
               "smem_load_wavefronts": get("smem_load_wavefronts"),
               "smem_load_conflicts": get("smem_load_bank_conflicts"),
               "smem_store_wavefronts": get("smem_store_wavefronts"),
               "smem_store_conflicts": get("smem_store_bank_conflicts"),
               "ldsm": get("ldsm_instructions"),
               "tensor_pct": get("tensor_pipe_pct"), "fma_pct": get("fma_pipe_pct"),
               "occupancy_pct": get("achieved_occupancy_pct"), "regs": get("registers_per_thread"),
               "cycles_per_issue": get("warp_cycles_per_issued_instruction"),
               "top_stalls": k.get("top_stalls", [])[:stalls]}
        out["conflicts_per_load_wavefront"] = ratio(out["smem_load_conflicts"], out["smem_load_wavefronts"])
        out["stalls"] = ", ".join(f"{name} {v:.1f}" for name, v in out["top_stalls"])
        out["flop"] = 2.0 * M * N * K
        return out

    def rows(self, targets, stalls: int = 3) -> list[dict]:
        return [self.row(t, stalls) for t in targets]

    @property
    def not_collected(self) -> list[str]:
        return list(self.meta.get("not_collected", []))


def list_profiles(directory=RESULTS_DIR) -> list[Path]:
    return sorted(Path(directory).glob("ncu-*.json"))


def load_ncu(directory=RESULTS_DIR, gpu: str | None = None) -> Profile:
    """The newest recorded Nsight Compute file in `directory` (optionally for a GPU whose name contains `gpu`)."""
    found = []
    for p in list_profiles(directory):
        try:
            meta = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResultsError(f"profiler file {p} is not valid JSON ({exc}).", _FIX) from None
        if not isinstance(meta, dict) or meta.get("kind") != "ncu-counters" or "kernels" not in meta:
            raise ResultsError(f"profiler file {p} is not an Nsight Compute counter file.", _FIX)
        if gpu is None or gpu.lower() in meta["gpu"]["name"].lower():
            found.append(Profile(p, meta))
    if not found:
        raise ResultsError(f"no recorded Nsight Compute counters in {directory}"
                           + (f" for a GPU matching {gpu!r}" if gpu else "") + ".", _FIX)
    return max(found, key=lambda pr: pr.meta["date"])


def load_sampling(name: str, gpu_slug: str = "nvidia-h200", directory=None) -> dict:
    """A stored summary of Nsight Compute's per-instruction sampling (lab/probes/ncu_source.py summary):
    results/logs/ncu-source-<name>-<gpu_slug>.json, e.g. name "m128" (lesson 6) or "fp8" (lesson 7)."""
    return load_log(f"ncu-source-{name}", "lab/probes/ncu_source.py (with Nsight Compute)", gpu_slug, directory)


def sampling_rows(summary: dict, targets, top: int = 4) -> list[dict]:
    """One row per target of a sampling summary (load_sampling): the kernel, warp-level instructions executed (in
    millions), the wgmma instructions (HGMMA or QGMMA: executed in all, and their shape), the `top` most executed
    opcodes with their share of all instructions, and the stall reason with the most samples."""
    rows = []
    for t in targets:
        s = summary["targets"][t]
        total = s["warp_instructions"]
        counted = [v for k, v in s["opcodes"].items() if k in ("HGMMA", "QGMMA")]     # among the top 12 opcodes
        per_address = sum(s["gmma_executions"]) // max(1, len(s["gmma_executions"]))   # (equal counts per address)
        gmma = counted[0] if counted else per_address * s["gmma_addresses"]
        ops = ", ".join(f"{k} {v / total:.0%}" for k, v in list(s["opcodes"].items())[:top])
        stall = next(iter(s["stall_share"].items()), ("-", 0))
        rows.append({"target": t, "kernel": s.get("kernel") or t, "warp_minstr": total / 1e6, "gmma": gmma,
                     "gmma_shape": ", ".join(s["gmma_shapes"]), "opcodes": ops,
                     "top_stall": f"{stall[0]} {stall[1]:.0%}"})
    return rows


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
