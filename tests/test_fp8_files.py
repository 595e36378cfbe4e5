"""Lesson 7's FP8 kernels, each a whole kernel short enough to read top to bottom: the main path's
kernels/fp8_wgmma_sm90a.cu (no promotion) and kernels/fp8_promote_sm90a.cu (promotion every N_C products), and the
appendix's fp8_wgmma_store_sm90a.cu, fp8_promote_2acc_lean_sm90a.cu and fp8_block_scaled_sm90a.cu, with the limits
lesson 6's rung files keep (tests/test_rung_files.py): the code path of each kernel (its extern "C" function and every
device function of its file it calls; the shared headers, shown once, left out) at most 350 lines, no template over 4
parameters, no research switch, the knobs lesson 7 turns as #ifndef macros."""
import difflib
import re

import pytest

from helpers import display
from helpers.compile import KERNEL_DIR
from helpers.fp8_gemm import FP8_KERNELS
from helpers.fp8_scaled import SCALED_KERNELS

MAIN = {k: s for k, s in {**FP8_KERNELS, **SCALED_KERNELS}.items() if s.wgmma}
FILES = sorted({s.file for s in MAIN.values()})
KNOBS = {"F8_STAGES": 4, "F8_PERIOD": 2}      # helpers.fp8_gemm.launcher(stages=), helpers.experiments.fp8.try_period
MAX_LINES, MAX_CHANGED = 350, 120


def code_path(kernel: str) -> str:
    """The kernel and the device functions of its own file it calls, in order of first call."""
    f = MAIN[kernel].file
    src = display.kernel_source(f, kernel)
    own = display.device_functions(f, headers=False)
    return "\n\n".join([src] + [own[n] for n in display.called_functions(src, own)])


def test_each_wgmma_kernel_is_defined_in_one_file_of_its_own_family():
    assert FILES == ["fp8_block_scaled_sm90a.cu", "fp8_promote_2acc_lean_sm90a.cu", "fp8_promote_sm90a.cu",
                     "fp8_wgmma_sm90a.cu", "fp8_wgmma_store_sm90a.cu"]
    assert set(MAIN) == {"fp8_wgmma", "fp8_wgmma_n128", *(f"fp8_promote_{nc}" for nc in (32, 64, 128, 256, 512)),
                         "fp8_wgmma_store", "fp8_promote_2acc_lean", "fp8_block_scaled"}
    defined = {}
    for f in KERNEL_DIR.glob("*.cu"):             # each kernel name is defined in one file of kernels/ only
        for name in re.findall(r'^extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(', f.read_text(),
                               re.M):
            defined.setdefault(name, []).append(f.name)
    for k, s in MAIN.items():
        assert defined[k] == [s.file], (k, defined.get(k))
    assert not (KERNEL_DIR / "fp8_sm90a.cu").exists()     # the research file lives in the lab only


@pytest.mark.parametrize("kernel", sorted(MAIN))
def test_each_kernel_reads_top_to_bottom(kernel):
    code = code_path(kernel)
    assert code.startswith('extern "C" __global__ void') and f" {kernel}(" in code.splitlines()[0]
    assert "fp8_gemm" in code and "store_slice" in code            # the whole GEMM and its epilogue, not a fragment
    assert len(code.splitlines()) <= MAX_LINES, (kernel, len(code.splitlines()))


@pytest.mark.parametrize("filename", FILES)
def test_no_research_switch_and_only_small_templates(filename):
    text = (KERNEL_DIR / filename).read_text()
    assert re.findall(r'#include\s+"([^"]+)"', text) == ["fp8_wgmma.cuh"]
    for line in (ln.strip() for ln in text.splitlines()):
        if line.startswith("#ifndef"):                     # a knob's default: #ifndef X / #define X default
            assert line.split()[1] in KNOBS, line
        elif line.startswith("#if"):                       # only the architecture decides what is compiled
            assert "__CUDA_ARCH" in line, line
    for name in re.findall(r"^#ifndef (\w+)", text, re.M):
        assert re.search(rf"^#ifndef {name}\n#define {name} {KNOBS[name]}\b", text, re.M), name
    header = (KERNEL_DIR / "fp8_wgmma.cuh").read_text()
    for params in re.findall(r"template\s*<([^>]*)>", text + header):
        assert len(params.split(",")) <= 4, params


@pytest.mark.parametrize("base,kernel", [("fp8_wgmma_n128", "fp8_promote_128"), ("fp8_wgmma", "fp8_wgmma_store"),
                                         ("fp8_promote_128", "fp8_block_scaled")])
def test_each_idea_is_a_small_step_from_the_kernel_it_changes(base, kernel):
    """Promotion against the same 128 x 128 tile without it, the TMA-store epilogue against fp8_wgmma, the block scales
    against fp8_promote_128: the lines each changes, as a unified diff counts them, stay within a rung step's 120."""
    a, b = code_path(base).splitlines(), code_path(kernel).splitlines()
    changed = sum(1 for d in difflib.unified_diff(a, b, lineterm="") if d[:1] in "+-" and not d.startswith(("+++", "---")))
    assert 0 < changed <= MAX_CHANGED, changed
