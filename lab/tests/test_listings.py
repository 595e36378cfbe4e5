"""labkit.listings: the research files as built and the lines of ws_gemm a template switch selects."""
import re

from labkit import listings as L


def test_research_source_leaves_out_the_lab_switches_code():
    """A lab switch (a macro #defined 0 that no knob sets) adds code the recorded rungs do not compile: the listings
    leave out its `#if X` / `#if X == 1` blocks, nested ones included; a block with an #else stays whole; knobs stay."""
    text = ("#ifndef P\n#define P 0\n#endif\n#ifndef K\n#define K 0\n#endif\nint a;\n#if P == 1\nint b;\n#if Q\nint c;\n"
            "#endif\nint d;\n#endif\n#if P\nint e;\n#else\nint f;\n#endif\nint g;\n")
    assert L.lab_switches(text) == {"P", "K"}
    kept = L.without_switched_code(text, {"P"})
    assert "int a;" in kept and "int g;" in kept and not any(f"int {x};" in kept for x in "bcd")
    assert "int e;" in kept and "int f;" in kept                     # an #else: the block stays whole
    assert L.without_switched_code(text, set()) == text
    assert L.lab_switches("#ifndef SMEM_PAD\n#define SMEM_PAD 0\n#endif\n") == set()     # a knob of helpers.tryout
    raw = L.HOPPER_RESEARCH.read_text()
    assert {"DESC_ADD", "TILE_ORDER", "WG_UNIFORM"} <= L.lab_switches(raw)
    built = L.research_source()
    assert len(built) < len(raw) and not re.search(r"^#if (DESC_ADD|TILE_ORDER|WG_UNIFORM)(\s*==\s*1)?\s*$", built, re.M)
    assert "ws_gemm" in L.research_functions()


def test_switch_lines_show_both_sides_of_a_switch():
    """switch_lines on ws_gemm (the research file as built): HALF_C's chains, the FP16 side (stmatrix, stmatrix .trans for the C^T
    tile) and the FP32 side (store2) both shown where no rung rules one out; CT's epilogue chain."""
    body = L.switch_lines("HALF_C", blocks_only=True).data.split("```c++\n")[1]
    for s_ in ("if constexpr (HALF_C) {", "stmatrix_x4_trans(", "stmatrix_x4(", "pack_half2", "store2("):
        assert s_ in body, s_
    assert "// (not in rung" not in body
    ct = L.switch_lines("CT", blocks_only=True).data
    assert "if constexpr (CT) {" in ct and "stmatrix_x4_trans(" in ct


def test_decide_reads_switch_conditions():
    s = {"CT": False, "TMA_STORE": True, "CLUSTER": 2, "PAIR_N": False, "BM": 128}
    assert L._decide("!TMA_STORE", s) is False and L._decide("CT", s) is False and L._decide(None, s) is True
    assert L._decide("CLUSTER == 1 || PAIR_N", s) is False and L._decide("CLUSTER > 1", s) is True
    assert L._decide("BM >= 128 && !CT", s) is True and L._decide("BM / 2 == 64", s) is True
    assert L._decide("row < M", s) is None and L._decide("TMA_STORE && row < M", s) is None
    assert L._decide("CT && row < M", s) is False and L._decide("TMA_STORE || row < M", s) is True
    assert L._decide("threadIdx.x % 128 == 0", s) is None and L._decide("(int)x", s) is None
