"""helpers.display: kernel source and a rung's changed lines, read from kernels/ (issue 23)."""
import re

import pytest
from conftest import sweep

import helpers
from helpers import display
from helpers.fp8_gemm import FP8_KERNELS

_SPECS = {**helpers.KERNELS, **FP8_KERNELS}
_FIRST_OF_FILE = {next(k for k in _SPECS if _SPECS[k].file == f) for f in {x.file for x in _SPECS.values()}}


@pytest.mark.parametrize("name", sweep(_SPECS, _FIRST_OF_FILE))           # --full: every kernel
def test_kernel_source_finds_every_kernel_definition(name):
    """Every registered kernel (and lesson 07's FP8 kernels, declared with __launch_bounds__) is found as
    its definition, not its forward declaration: the text runs from extern "C" to the body's last brace."""
    spec = helpers.KERNELS.get(name) or FP8_KERNELS[name]
    src = display.kernel_source(spec.file, name)
    assert src.startswith('extern "C"') and f" {name}(" in src and src.rstrip().endswith("}")
    head = src[:src.index("{")]
    assert ";" not in head


@pytest.mark.parametrize("rung", sweep(helpers.kernels.ALL_RUNGS, (1, 2, 7, 8, 19, 25, 29)))   # --full: every rung
def test_rung_diff_compares_each_rung_with_the_one_before_or_its_base(rung):
    spec = helpers.kernels.ALL_RUNGS[rung]
    md = display.rung_diff(rung).data
    assert f"**Rung {rung}** (`{spec.name}`" in md
    if rung == 1:
        assert "its whole kernel" in md and "```c++" in md
    else:
        before = spec.base if spec.base is not None else rung - 1      # rung 19: its base, rung 17
        prev = helpers.kernels.ALL_RUNGS[before]
        assert f"against rung {before} (`{prev.name}`)" in md and '<pre class="course-diff" ' in md
        assert f'<span class="course-diff-file" style="font-weight:bold">+++ rung {rung} ({spec.name})</span>' in md


def test_rung_diff_shows_the_padding_change_and_folds_the_body_it_calls():
    md = display.rung_diff(3).data
    assert f'<span class="course-diff-del" style="{display.DIFF_STYLES["del"]}">-    tiled_body&lt;RUNG2_PAD&gt;(A, B, C,' in md
    assert f'<span class="course-diff-add" style="{display.DIFF_STYLES["add"]}">+    tiled_body&lt;SMEM_PAD&gt;(A, B, C,' in md
    assert "2 lines removed and 2 added against rung 2" in md
    assert "<details><summary><code>tiled_body</code></summary>" in md
    assert "<summary><code>wmma_block_step</code></summary>" in md     # called through tiled_body


def test_rung_diff_cuts_long_diffs_and_says_how_to_see_all():
    """The cut counts diff lines and says so; the changed-line count above it counts only + and - lines, and the
    full diff holds exactly that many of each."""
    short = display.rung_diff(6, max_lines=10).data
    whole = display.rung_diff(6, full=True).data
    assert "helpers.display.rung_diff(6, full=True)" in short
    assert "helpers.display.rung_diff(6, full=True)" not in whole
    removed, added, total = map(int, re.search(r"(\d+) lines removed and (\d+) added .* a diff of (\d+) lines", whole).groups())
    assert whole.count('class="course-diff-del"') == removed and whole.count('class="course-diff-add"') == added
    assert f"the diff's other {total - 10} lines (of {total})" in short
    assert short.count('class="course-diff-') < whole.count('class="course-diff-')


def test_diff_html_colours_added_and_removed_lines_and_escapes_code():
    out = display.diff_html(["--- a", "+++ b", "@@ -1 +1 @@", "-x<int>", "+y && z", " same", " "], more="... 3 more")
    assert out.startswith('<pre class="course-diff" ') and out.endswith("</code></pre>")
    lines = out.split("<code>", 1)[1].removesuffix("</code></pre>").split("\n")
    assert [re.match(r'<span class="course-diff-(\w+)"', ln).group(1) for ln in lines] == [
        "file", "file", "hunk", "del", "add", "ctx", "ctx", "more"]
    assert "-x&lt;int&gt;" in lines[3] and "+y &amp;&amp; z" in lines[4] and lines[5].endswith("> same</span>")
    assert lines[6] == '<span class="course-diff-ctx"> </span>'         # a blank context line is not blank HTML


def _documented(x):
    """A docstring
    of two lines."""
    return x + 1  # the body


def test_python_code_drops_only_the_docstring_unless_asked():
    """helpers.display.python_code: the function's source without its docstring (the signature and body kept), or
    with it when docstring=True; a function without one is shown whole."""
    import helpers

    shown = helpers.display.python_code(_documented).data
    assert "def _documented(x):" in shown and "return x + 1  # the body" in shown and "docstring" not in shown
    assert "of two lines." in helpers.display.python_code(_documented, docstring=True).data


def test_block_end_finds_the_closing_line():
    """helpers.display.block_end (lesson 7's promotion_loop, the lab's switch_lines): the line that closes the block a
    line opens, past nested blocks, braces in comments and strings; an else-if line closes the branch before it."""
    from helpers.display import block_end

    lines = ["if (a) {", "  x = '{';  // }", "  if (b) { y(); }", "} else if (c) {", "  z();", "}", "w();"]
    assert block_end(lines, 0) == 3                 # the first branch ends at the '} else if' line
    assert block_end(lines, 3) == 5                 # which opens the next, closed two lines on
    assert block_end(lines, 2) == 2                 # a block closed on its own line
    assert block_end(["if (a) {", "  x();"], 0) == 1     # never closed: the last line


def test_rung_diff_folds_each_device_function_its_kernel_calls():
    """rung_diff lists the device functions a rung's kernel calls, one folded block each, and counts what it lists."""
    for rung in (17, 25, 14, 3):
        md = display.rung_diff(rung).data
        n = int(re.search(r"The (\d+) device functions", md).group(1))
        assert n > 0 and md.count("<details><summary>") == n


def test_kernel_region_prints_the_marked_lines_of_a_rung_file():
    from helpers.display import kernel_region, rung_regions

    prod = kernel_region("hopper_rung09_sm90a.cu", "producer")
    assert "tma_load(" in prod and "wgmma" not in prod and "[region" not in prod
    assert prod.splitlines()[0] == prod.splitlines()[0].lstrip()          # dedented
    cons = kernel_region("hopper_rung09_sm90a.cu", "consumer")
    assert "mbar_wait(&full[s], phase)" in cons and "tma_load(" not in cons
    assert "sum_parts(" in kernel_region("hopper_rung15_sm90a.cu", "split-k")
    with pytest.raises(KeyError):
        kernel_region("hopper_rung08_sm90a.cu", "producer")
    md = rung_regions(13, ["epilogue"], ["store_slice_tma"]).data
    assert "tma_store(" in md and "<details>" in md and "[region" not in md.split("<details>")[1]
