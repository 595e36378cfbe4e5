"""Recorded Nsight Compute counters (results/ncu-<gpu>.json) in the units a lesson argues with.

``make gpu-check STAGES=ncu`` (tools/ncu_counters.py) profiles one launch of each target at n^3 and writes
the file; the counters are hardware counts of that launch, so a notebook shows them without a GPU.
``load_ncu().row(target)`` gives the derived quantities (bytes at each level, sectors per request,
bank conflicts, pipe utilisation, occupancy, top stalls); a counter that was not collected reads as None.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import ResultsError
from .results import RESULTS_DIR

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

