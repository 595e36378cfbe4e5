"""tools/probes/*.py without a GPU: each says in one line that it needs a Hopper GPU and exits with status 2
(no traceback), and each is where the record says its results came from."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBES = sorted((ROOT / "tools" / "probes").glob("*.py"))


def test_there_are_probes():
    assert {p.name for p in PROBES} == {"rungs_side_by_side.py", "fp8_pingpong.py", "sanitize_new_kernels.py",
                                        "reject_wrong_fp16c.py", "rung16.py",
                                        "tail_split_sweep.py", "row_alignment.py",
                                        "fp8_block_scaled.py", "cublas_kernels.py", "reject_wrong_block_scaled.py",
                                        "rung17.py", "fp8_stages.py", "flush_method.py", "wgmma_rate.py",
                                        "wait_hint.py"}


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.stem)
def test_probe_without_a_gpu_says_so(probe):
    p = subprocess.run([sys.executable, str(probe), "/tmp/never-written.json"], capture_output=True, text=True,
                       env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=120)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "needs a Hopper GPU" in p.stderr


def test_the_record_names_the_probe_it_came_from():
    rec = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    assert "tools/probes/fp8_pingpong.py" in rec["experiments"]["fp8"]["speed_pingpong"]["note"]
    assert "tools/probes/sanitize_new_kernels.py" in (ROOT / "results" / "logs" /
                                                      "sanitize-new-kernels-nvidia-h200.log").read_text()
    pa = rec["experiments"]["pipeline_apart"]
    assert all("tools/probes/wgmma_rate.py" in pa["commands"][k] or pa["commands"][k].startswith("... --set")
               for k in ("rates", "apart", "depth", "wait", "hold"))
    assert "tools/probes/wait_hint.py" in pa["commands"]["wait_hint"]
