"""CPU tests of lesson 00's claims: the tolerance slide, the check's wrong answers, the n = 1000 point of
the recorded sweep, and the exercise checkers it uses (helpers/exercises/__init__.py)."""
import re
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import exercises

ROOT = Path(__file__).resolve().parent.parent
LESSON = (ROOT / "notebooks" / "00_start_here.py").read_text()
FLAT = re.sub(r"\s*\n#\s*", " ", LESSON)      # the prose with its comment line breaks removed
M, N, K = 200, 136, 72                        # the lesson's first run


@pytest.fixture(scope="module")
def first_run():
    A = helpers.random_matrix(M, K, seed=0)
    B = helpers.random_matrix(K, N, seed=1)
    return A, B


def test_tolerance_slide_reproduces_the_checks_tolerances(first_run):
    """'Where each tolerance comes from': its first two lines are the tolerances the FP32 and the WMMA
    checks above used. FP32 inputs already are the FP32 kernel's format: no input term; without
    inputs_rounded_in_reference the slide would print a larger tolerance than the check's."""
    A, B = first_run
    used = {}
    for name in ("gemm_fp32_kernel", "wmma_mixed_gemm_kernel"):
        spec = helpers.KERNELS[name]
        C = helpers.gemm(name, A.astype(spec.in_dtype), B.astype(spec.in_dtype), pad=True)
        used[name] = spec.check(C, A, B).tol
    fp32 = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N, inputs_rounded_in_reference=True)
    wmma = helpers.tolerance(K, "fp16", "fp32", acc_rounding="truncate", block=16, n_checked=M * N)
    assert f"{fp32.value:.2e}" == f"{used['gemm_fp32_kernel'].value:.2e}" and fp32.in_term == 0.0
    assert f"{wmma.value:.2e}" == f"{used['wmma_mixed_gemm_kernel'].value:.2e}" and wmma.in_term > 0
    plain = helpers.tolerance(K, "fp32", "fp32", n_checked=M * N)
    assert plain.value > fp32.value and plain.in_term > 0
    assert "inputs_rounded_in_reference=True" in LESSON


def test_truncating_accumulation_gets_the_worst_case_bound():
    """The slide: Tensor Cores truncate, truncation errors do not cancel, hence the worst-case bound."""
    t = helpers.tolerance(K, "fp16", "fp32", acc_rounding="truncate", block=16, n_checked=M * N)
    assert t.acc_bound == "worst-case" and t.block == 16
    assert helpers.tolerance(K, "fp32", "fp32", n_checked=M * N).acc_bound == "probabilistic"
    assert "a block of 16 products, then truncate" in FLAT


def test_the_notes_name_every_wrong_answer_shown(first_run):
    """The notes under the wrong-answer table name each wrong answer the table prints, and no other."""
    A, B = first_run
    A16, B16 = A.astype(np.float16), B.astype(np.float16)
    C = helpers.gemm("wmma_mixed_gemm_kernel", A16, B16, pad=True)
    wrong = helpers.check.wrong_results(C, A16, B16, inputs="fp16", acc="fp32", block=16, originals=(A, B))
    named = {"zeros": "(zeros)", "sign flipped": "a flipped sign", "scaled by 1.003": "a scale slightly off",
             "rows permuted": "(permuted rows)", "one element off by 10x its error": "by 10x its error",
             "one element 1% off": "by 1%", "a row copied from the row above": "(a copied row)",
             "edge tile missing its last K block": "skips the last K block",
             "wrong accumulator": "the wrong accumulator", "wrong input format": "the wrong format"}
    assert set(wrong) == set(named)
    notes = LESSON.split("A check is only worth something if it can fail.")[1].split("\n")[0]
    for what, phrase in named.items():
        assert phrase in notes, what
    assert "transposed" not in notes


def test_model_verdicts_can_be_a_sample():
    """'How the check decides': the model is compared on every element here, on a sample in some recorded
    runs (lesson 01's block shapes: 'a sample of 4096 elements'); the lesson no longer says 'every size'."""
    rec = helpers.results.load_latest()
    sampled = [r for r in rec.rows if r.get("model") == "identical" and r["model_cells"] < r["m"] * r["n"]]
    assert sampled
    checks = rec.meta["experiments"]["fp32_block_shapes"]["checks"]
    assert any("a sample of" in c["verdict"] for c in checks)
    assert "every element at every size" not in FLAT
    assert '"a sample of ... elements" in some of lesson 01\'s recorded runs' in FLAT


def test_the_n1000_point():
    """The slide 'The point at n = 1000': the FP32 kernel is faster at 1000 than at 1024 (lesson 01's
    row stride); the naive WMMA kernel's jump at 1000 is much larger; 3000, padded too, runs like 2048
    and 4096."""
    rec = helpers.results.load_latest()
    tf = {k: dict(zip(*rec.series(k))) for k in ("gemm_fp32_kernel", "wmma_gemm_naive")}
    fp32, wmma = tf["gemm_fp32_kernel"], tf["wmma_gemm_naive"]
    assert fp32[1000] > fp32[1024]
    assert wmma[1000] / wmma[1024] > 1.5 > 1.2 > fp32[1000] / fp32[1024]
    assert all(abs(wmma[3000] / wmma[n] - 1) < 0.05 for n in (2048, 4096))
    spec = helpers.KERNELS["wmma_gemm_naive"]
    assert spec.padded(1000, 1000, 1000)[0] == 1008 and spec.padded(3000, 3000, 3000)[0] == 3008
    padded = {r["m"] for r in rec.select(kernel="wmma_gemm_naive") if r.get("padded")}
    assert {1000, 3000} <= padded
    assert "the course does not explain it" in FLAT


def test_exercise_checkers():
    """Lesson 00's exercises: the 1024^3 GEMM's FLOPs and one 16x16x16 mma_sync's; wrong answers rejected."""
    exercises.gemm_flops_exercise(None, 1024, 1024, 1024)
    assert exercises.last_result is None
    exercises.gemm_flops_exercise(2 * 1024**3, 1024, 1024, 1024)
    assert exercises.last_result is True
    exercises.gemm_flops_exercise(1024**3, 1024, 1024, 1024)          # multiply-adds, not FLOPs
    assert exercises.last_result is False
    exercises.mma_flops_exercise(8192)
    assert exercises.last_result is True
    exercises.mma_flops_exercise(4096)
    assert exercises.last_result is False
    exercises.mma_flops_exercise(512, 8, 8, 4)                         # another shape (lesson 02)
    assert exercises.last_result is True
    exercises.mma_flops_exercise(8192, 8, 8, 4)
    assert exercises.last_result is False


def _appendix(stem: str) -> str:
    """A lesson's source from its first appendix heading on (where its claims are checked)."""
    text = (ROOT / "notebooks" / f"{stem}.py").read_text()
    m = re.search(r"^# #+ Appendix", text, re.M)
    return text[m.start():] if m else ""


def test_the_seed_map_lists_the_lessons_that_check_each_seed():
    """The appendix table 'The source articles': its last column lists, for each seed, exactly the
    lessons whose appendices name it ("seed 000", "Seed 002's", ...), computed here from the lessons."""
    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("0[1-9]_*.py"))
    named = {s: sorted(st[:2] for st in stems if re.search(rf"\bseeds? {s}\b", _appendix(st), re.I))
             for s in ("000", "001", "002")}
    assert all(named.values())
    for seed, lessons in named.items():
        row = next(ln for ln in LESSON.splitlines() if ln.startswith(f"# | {seed} |"))
        assert row.rstrip().endswith(f"| lessons {', '.join(lessons)} |"), (seed, lessons, row)


def test_every_seed_figure_is_shown_where_the_map_says():
    """Seed 000's RTX 4090 figures (results/reference/seed_rtx4090.json): each kernel's is read from the
    reference in the appendix of the lessons the map names for it, and in no other; none is left out
    (the naive WMMA figure at 2048 once appeared in no lesson)."""
    ref = helpers.results.load_reference("seed_rtx4090")
    kernels = sorted({r["kernel"] for r in ref.rows})
    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("0[1-9]_*.py"))
    shown = {}
    for st in stems:
        app = _appendix(st)
        var = re.findall(r"^(\w+) = helpers\.results\.load_reference\(\"seed_rtx4090\"\)", app, re.M)
        for k in kernels:
            if any(re.search(rf"\b{v}\.(?:select|value)\((?:kernel=)?\"{k}\"", app) for v in var):
                shown.setdefault(k, []).append(st[:2])
    assert set(shown) == set(kernels), shown
    words = {1: "lesson {}", 2: "lessons {} and {}"}
    row = next(ln for ln in LESSON.splitlines() if ln.startswith("# | 000 |"))
    for k, lessons in shown.items():
        assert f"`{k}` ({words[len(lessons)].format(*lessons)})" in row, (k, lessons)
