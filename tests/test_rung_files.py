"""Lesson 6's rungs 8-16, one kernel file each, and lesson 5's rung 7 before them (kernels/ladder_sm90a.cu): short
enough to read whole, each a small step from the one before.

What a learner reads of a rung is its code path as helpers.display.rung_code shows it: the extern "C" kernel and every
device function of its file that it calls (the shared primitives of kernels/hopper_wgmma.cuh, shown once, left
out). These tests measure those listings, so a rung that grows, or drifts from its neighbour, fails here."""
import difflib
import re
import statistics

import pytest

from helpers import display, knobs
from helpers.compile import KERNEL_DIR
from helpers.kernels import ALL_RUNGS, hopper_rung_file

RUNGS = range(8, 17)
HOPPER_RUNGS = range(7, 17)           # rung 7 shares the header, so the step 7 -> 8 is measured too
MAX_LINES, MAX_CHANGED, MAX_MEDIAN = 350, 120, 60


def _changed(a: str, b: str) -> int:
    """Lines added or removed between two listings (a unified diff's + and - lines, as rung_diff counts them)."""
    return sum(1 for d in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="")
               if d[:1] in "+-" and not d.startswith(("+++", "---")))


@pytest.mark.parametrize("rung", RUNGS)
def test_each_rung_is_one_short_file_with_its_registry_kernel(rung):
    spec = ALL_RUNGS[rung]
    assert spec.file == hopper_rung_file(rung) and (KERNEL_DIR / spec.file).is_file()
    code = display.rung_code(rung)
    assert code.startswith('extern "C" __global__ void') and f" {spec.name}(" in code.splitlines()[0]
    assert len(code.splitlines()) <= MAX_LINES, (rung, len(code.splitlines()))
    text = (KERNEL_DIR / spec.file).read_text()
    # it stands whole: its own functions, and the one shared header
    assert re.findall(r'#include\s+"([^"]+)"', text) == ["hopper_wgmma.cuh"]
    assert len(re.findall(r'^extern "C" __global__ void\b[^;]*\{', text, re.M | re.S)) == 1
    assert "ws_gemm" not in text


def test_rung7_is_one_short_kernel_on_the_shared_header():
    spec = ALL_RUNGS[7]
    code = display.rung_code(7)
    assert code.startswith('extern "C" __global__ void') and f" {spec.name}(" in code.splitlines()[0]
    assert len(code.splitlines()) <= MAX_LINES
    text = (KERNEL_DIR / spec.file).read_text()
    assert re.findall(r'#include\s+"([^"]+)"', text) == ["hopper_wgmma.cuh"]
    assert len(re.findall(r'^extern "C" __global__ void\b[^;]*\{', text, re.M | re.S)) == 1
    # its own primitives are gone: every device function it defines is one the learner reads in its code path
    own = display.device_functions(spec.file, headers=False)
    assert own and set(own) <= set(display.called_functions(code, own))
    assert all("__CUDA_ARCH" in ln for ln in text.splitlines() if ln.strip().startswith("#if"))
    assert not re.findall(r"template\s*<", text)


def test_consecutive_rungs_differ_by_one_idea():
    codes = {r: display.rung_code(r) for r in HOPPER_RUNGS}
    changed = {r: _changed(codes[r - 1], codes[r]) for r in HOPPER_RUNGS[1:]}
    assert all(0 < n <= MAX_CHANGED for n in changed.values()), changed
    assert statistics.median(changed.values()) <= MAX_MEDIAN, changed
    # and rung_diff reports the same count a learner sees
    for r in (8, 12):
        m = re.search(r"(\d+) lines removed and (\d+) added against rung (\d+)", display.rung_diff(r).data)
        assert m and int(m[1]) + int(m[2]) == changed[r] and int(m[3]) == r - 1


def test_the_diff_counter_sees_a_bloated_rung():
    code = display.rung_code(13)
    bloated = code.replace("fence_proxy_async();", "fence_proxy_async();\n" + "    __syncwarp();\n" * 130)
    assert _changed(code, bloated) > MAX_CHANGED and len(bloated.splitlines()) > len(code.splitlines()) + 120


@pytest.mark.parametrize("rung", RUNGS)
def test_no_research_switch_and_only_small_templates(rung):
    text = (KERNEL_DIR / hopper_rung_file(rung)).read_text()
    own = {k.define for k in knobs.KNOBS[rung].values()}
    for line in (ln.strip() for ln in text.splitlines()):
        if not line.startswith("#if"):
            continue
        if line.startswith("#ifndef"):                    # a knob's default: #ifndef X / #define X default
            assert line.split()[1] in own, (rung, line)
        else:                                             # only the architecture decides what is compiled
            assert "__CUDA_ARCH" in line, (rung, line)
    assert not display.lab_switches(text)
    for params in re.findall(r"template\s*<([^>]*)>", text):
        assert len(params.split(",")) <= 4, (rung, params)


def test_every_knob_of_a_rung_is_a_macro_of_its_file():
    for rung in RUNGS:
        text = (KERNEL_DIR / hopper_rung_file(rung)).read_text()
        for k in knobs.KNOBS[rung].values():
            assert re.search(rf"^#ifndef {k.define}\n#define {k.define} {k.default}\b", text, re.M), (rung, k.define)
