"""Lesson 6's rungs 8-30, one kernel file each, and lesson 5's rung 7 before them (kernels/ladder_sm90a.cu): short
enough to read whole, each a small step from the rung it builds on (the one before, or the registry's base).

What a learner reads of a rung is its code path as helpers.display.rung_code shows it: the extern "C" kernel and every
device function of its file that it calls (the shared primitives of kernels/hopper_wgmma.cuh, shown once, left
out). These tests measure those listings, so a rung that grows, or drifts from its neighbour, fails here."""
import difflib
import re
import statistics

import pytest

from helpers import display, knobs
from helpers.compile import KERNEL_DIR
from helpers.kernels import ALL_RUNGS, HOPPER_RUNGS, RUNG_FILES, hopper_rung_file

RUNGS = RUNG_FILES
MAX_LINES, MAX_CHANGED, MAX_MEDIAN = 350, 120, 60
# Rung 17 is measured against rung 14, the kernel its code builds on: rung 16 adds split-K of the last wave (a split-K
# function and region, a work-unit map) that the skinny tile drops again, so the step 16 -> 17 removes rung 16's idea
# as well as adding its own (its predicted gain is still over rung 16, the rung before it on the ladder).
BUILDS_ON = {17: 14}
# The headers a rung file may include: the shared one, and the generated wgmma widths (rungs 25-30's tiles)
HEADERS = ("hopper_wgmma.cuh", "wgmma_widths.cuh")


def _base(rung: int) -> int:
    """The rung a rung's code is compared with: BUILDS_ON, else the registry's base, else the rung before."""
    return BUILDS_ON.get(rung) or ALL_RUNGS[rung].base or rung - 1


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
    # it stands whole: its own functions, and the shared header (and the generated wgmma widths)
    includes = re.findall(r'#include\s+"([^"]+)"', text)
    assert includes[0] == "hopper_wgmma.cuh" and set(includes) <= set(HEADERS), includes
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


def test_every_lesson6_rung_is_a_rung_file():
    assert set(HOPPER_RUNGS) == set(RUNG_FILES)


def test_consecutive_rungs_differ_by_one_idea():
    codes = {r: display.rung_code(r) for r in (7, *RUNGS)}
    changed = {r: _changed(codes[_base(r)], codes[r]) for r in RUNGS}
    assert all(0 < n <= MAX_CHANGED for n in changed.values()), changed
    assert statistics.median(changed.values()) <= MAX_MEDIAN, changed
    # and rung_diff reports the same count a learner sees
    for r in (8, 12, 21):
        m = re.search(r"(\d+) lines removed and (\d+) added against rung (\d+)", display.rung_diff(r).data)
        assert m and int(m[1]) + int(m[2]) == changed[r] and int(m[3]) == _base(r)


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
    for params in re.findall(r"template\s*<([^>]*)>", text):
        assert len(params.split(",")) <= 4, (rung, params)


def test_every_knob_of_a_rung_is_a_macro_of_its_file():
    for rung in RUNGS:
        text = (KERNEL_DIR / hopper_rung_file(rung)).read_text()
        for k in knobs.KNOBS[rung].values():
            assert re.search(rf"^#ifndef {k.define}\n#define {k.define} {k.default}\b", text, re.M), (rung, k.define)
