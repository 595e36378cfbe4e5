"""Lesson 7's lab (labkit.fp8): the readers of the FP8 probes' logs in lab/logs, the rows of the lesson's "What else
was tried" table, the kernels that lost (registered at import), and the research notebook, run top to bottom."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import helpers
import labkit.fp8 as lk
from helpers.errors import ResultsError
from labkit import tried as T
from labkit.logs import LogMissing

LAB = Path(__file__).resolve().parents[1]
ROOT = LAB.parent


# --------------------------------------------------------------------------- what the lesson shows
def test_tried_rows_are_computed_and_committed():
    """labkit.fp8.tried(): one valid row per idea (idea, predicted, measured, kept, where), every measured figure a
    ratio read from the logs or the record; results/tried.json holds exactly these rows for lesson 07."""
    rows = T.check_rows("07", lk.tried())
    assert len(rows) == 18 and len({r["idea"] for r in rows}) == 18
    assert all("x" in r["measured"] and r["where"] == "lab/notebooks/07_fp8_research.py" for r in rows)
    kept = {r["idea"].split(" (")[0] for r in rows if r["kept"] == "yes"}
    assert {"two partial sums in one warpgroup", "C through shared memory and TMA", "128 CTAs instead of one per SM",
            "descriptors in uniform registers"} <= kept
    pred = {(r["idea"], r["n"]): r for r in lk.prediction_rows()}
    two = next(r for r in rows if r["idea"].startswith("two partial sums"))
    assert two["measured"] == f"x{pred['two partial sums', 4096]['measured']:.3f} at 4096^3"
    committed = json.loads((ROOT / "results" / "tried.json").read_text())
    assert committed["lessons"]["07"] == rows, "run python lab/tried.py and commit results/tried.json"
    assert helpers.results.tried("07") == rows


def test_tried_write_keeps_the_other_lessons(tmp_path):
    """write() replaces the lessons it builds and keeps any other lesson's rows in the file."""
    path = tmp_path / "tried.json"
    other = {"idea": "i", "predicted": "p", "measured": "m", "kept": "no", "where": "w"}
    path.write_text(json.dumps({"schema": T.SCHEMA, "lessons": {"06": [other], "07": []}}))
    T.write(path, {"07": "labkit.fp8"})
    lessons = json.loads(path.read_text())["lessons"]
    assert lessons["06"] == [other] and len(lessons["07"]) == 18


def test_the_research_notebook_runs_on_the_cpu(tmp_path):
    """lab/notebooks/07_fp8_research.py, top to bottom, as a script: every reader of lab/logs and the record it calls."""
    env = dict(os.environ, COURSE_DEVICE="cpu", MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, str(LAB / "notebooks" / "07_fp8_research.py")], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Correct." in p.stdout and "Traceback" not in p.stderr


# --------------------------------------------------------------------------- the kernels that lost
def test_the_lost_kernels_are_registered_by_the_lab_and_compute_promote_128s_sums():
    """fp8_promote_pingpong and fp8_promote_2acc are not in the course's registry but launch from the lab: importing
    labkit.fp8 registers them; both add the same partial sums as fp8_promote_128, so their CPU model is its model."""
    from helpers import fp8_gemm as F

    assert set(lk.LOST_KERNELS) == {"fp8_promote_pingpong", "fp8_promote_2acc"} <= set(F.FP8_KERNELS)
    A, B = F.random_inputs(16, 24, 512, "normal", seed=3)
    ref = F.matmul("fp8_promote_128", A, B)[0]
    for k in lk.LOST_KERNELS:
        assert np.array_equal(F.matmul(k, A, B)[0], ref), k


def test_two_sum_registers_exercise(capsys):
    """The research notebook's exercise: two partial sums and the total of a 64 x 128 slice are 192 registers (within
    the consumers' 232), of a 64 x 256 slice 384."""
    from helpers import exercises

    assert lk.two_sum_registers(128) == 192 <= 232 < lk.two_sum_registers(256) == 384
    for bn, good, bad in ((256, 384, 256), (128, 192, 168)):
        lk.check_two_sum_registers(good, bn=bn)
        assert exercises.last_result is True
        lk.check_two_sum_registers(bad, bn=bn)
        assert exercises.last_result is False and "Hint" in capsys.readouterr().out
    lk.check_two_sum_registers("three hundred")
    assert exercises.last_result is False and "expects a number" in capsys.readouterr().out


# --------------------------------------------------------------------------- the readers
def test_energy_rows_read_the_rounds():
    """energy_rows: medians of the probe's rounds; vs_base is helpers.timing.round_ratio of the joules (the same
    round), 'more' the rounds above the base; per_ghz TFLOP/s per GHz; a made-up run checks the arithmetic."""
    rows = [{"kernel": "a", "n": 8, "check_passed": True}]
    for r, (ja, jb) in enumerate(((1.0, 0.9), (1.0, 1.2), (2.0, 1.9))):
        rows += [{"kernel": "a", "n": 8, "round": r, "joules": ja, "tflops": 100.0, "sm_mhz": 1000, "power_w": 700,
                  "tflop_per_j": 1.0},
                 {"kernel": "b", "n": 8, "round": r, "joules": jb, "tflops": 90.0 + r, "sm_mhz": 900 + r, "power_w": 690,
                  "tflop_per_j": 1.0}]
    got = {r["kernel"]: r for r in lk.energy_rows(rows, base="a")}
    assert got["b"]["vs_base"] == pytest.approx(0.95) and got["b"]["more"] == "1 of 3"
    assert got["a"]["vs_base"] == 1.0 and got["a"]["passed"] is True and got["b"]["passed"] is None
    assert (got["b"]["joules"], got["b"]["j_low"], got["b"]["j_high"]) == (1.2, 0.9, 1.9)
    assert got["b"]["per_ghz"] == pytest.approx(91 / 0.901) and got["a"]["per_ghz"] == 100.0


def test_passed_by_needs_every_check_of_a_key():
    """passed_by: a key passes only if every one of its checks did; a yardstick's None is left out; _median_of reads a
    reading kept per round, or one reading."""
    rows = [{"k": "a", "check_passed": True}, {"k": "a", "check_passed": False}, {"k": "b", "check_passed": True},
            {"k": "c", "check_passed": None}, {"k": "d"}]
    assert lk.passed_by(rows, lambda r: r["k"]) == {"a": False, "b": True}
    assert (lk._median_of([3.0, None, 1.0, 2.0]), lk._median_of(5.0), lk._median_of([None])) == (2.0, 5.0, None)
    assert all(r["power_w"] for r in lk.wait_rows()) and all(r["power_w"] for r in lk.wide_rows())


def test_readers_name_the_missing_log(tmp_path):
    """A reader given a folder without its log says what writes it; given the log, it reads it."""
    with pytest.raises(LogMissing, match="lab/probes/fp8_stages.py"):
        lk.probe_log("fp8-2acc-probe", directory=tmp_path)
    with pytest.raises(LogMissing, match="sm__pipe_tensor_cycles_active"):
        lk.pipe_shares("ncu-pipe-fp8-2acc", directory=tmp_path)
    with pytest.raises(LogMissing, match="tools/ncu_counters.py"):
        lk.ncu_summary("ncu-fp8-cluster", directory=tmp_path)
    (tmp_path / "p-nvidia-h200.json").write_text(json.dumps({"kernels": {"k": {
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 50.0}}}))
    assert lk.pipe_shares("p", directory=tmp_path) == {"k": 50.0}


def test_ncu_summary_reads_both_layouts():
    """ncu_summary reads the printed table with and without the 'inst M' column, the stalls kept apart."""
    nc = lk.ncu_summary("ncu-fp8-lt-8192")
    assert nc["fp8_promote_2acc_lean"]["inst_m"] == 268.2
    assert nc["fp8_promote_2acc_lean"]["top_stalls"].startswith("wait 0.93")
    old = lk.ncu_summary("ncu-fp8-cluster")
    assert set(old) == {"fp8_promote_2acc_lean", "fp8_promote_2acc_cluster"} and "inst_m" not in old["fp8_promote_2acc_lean"]


def test_switched_build_rows_reads_any_switch(tmp_path):
    """switched_build_rows serves F8_PAIR's runs (pair_rows) and any other switch's: F8_PAIR's two logs rewritten as
    F8_EXTRA_L2's give the same speeds, clocks and joules with EXTRA_L2_PREDICTED's figures; a log whose switched
    rows are missing is an error, not a table of the recorded build against itself."""
    for key in ("log", "energy"):
        text = (LAB / "logs" / f"{lk.PAIR_TRIED[key]}-nvidia-h200.json").read_text().replace("F8_PAIR", "F8_EXTRA_L2")
        (tmp_path / f"{lk.EXTRA_L2_TRIED[key]}-nvidia-h200.json").write_text(text)
    predicted = {"cap": lk.EXTRA_L2_PREDICTED["speed_at_cap"], "joules": lk.EXTRA_L2_PREDICTED["joules"]}
    new = lk.switched_build_rows(lk.EXTRA_L2_TRIED, predicted, directory=tmp_path)
    old = lk.pair_rows()
    assert len(new) == len(old) == 4
    for a, b in zip(new, old):
        for key in ("n", "speed", "faster", "vs_default", "mhz", "power_w", "passed", "joules", "more"):
            assert a[key] == b[key], key
    cap = [r for r in new if r["run"].startswith("back to back")]
    assert [(r["predicted_speed"], r["predicted_joules"]) for r in cap] == [(0.97, 1.035), (0.97, 1.035)]
    probe = tmp_path / "fp8-extra-l2-probe-nvidia-h200.json"
    probe.write_text(json.dumps([r for r in json.loads(probe.read_text()) if "-DF8_EXTRA_L2=1" not in r.get("options", ())]))
    with pytest.raises(ResultsError, match=r"(?s)no timing of the F8_EXTRA_L2=1 build at 4096\^3, .*--extra-l2"):
        lk.switched_build_rows(lk.EXTRA_L2_TRIED, predicted, directory=tmp_path)


def test_prediction_rows_judge_each_idea_by_the_rule(tmp_path):
    """prediction_rows: one row per idea and predicted size, the measured ratio (median of the round-by-round ratios)
    within its spread, judged by helpers.timing.verdict; a log without one of the two builds is an error naming it."""
    from helpers.timing import verdict

    rows = {(r["idea"], r["n"]): r for r in lk.prediction_rows()}
    assert len(rows) == sum(len(p) for *_, p in lk.PREDICTIONS) == 32
    for r in rows.values():
        assert r["low"] <= r["measured"] <= r["high"] and r["verdict"] == verdict(r["predicted"], r["low"], r["high"])
    assert rows["two partial sums", 4096]["verdict"] == "missed: worse than predicted"
    assert rows["C through shared memory", 4096]["verdict"] == "missed: better than predicted"
    for log in {e[1] for e in lk.PREDICTIONS}:
        name = f"{log}-nvidia-h200.json"
        (tmp_path / name).write_text((LAB / "logs" / name).read_text())
    two = tmp_path / "fp8-2acc-probe-nvidia-h200.json"
    two.write_text(json.dumps([r for r in json.loads(two.read_text()) if r.get("kernel") != "fp8_promote_128"]))
    with pytest.raises(ResultsError, match="0 timings of fp8_promote_128"):
        lk.prediction_rows(directory=tmp_path)


def test_the_store_model_halves_the_passes_and_moves_no_value():
    """store_chunks / store_wavefronts (fp8_wgmma_store's half-warp model): as built each half-warp writes four of the
    row's eight chunks (32 passes per warp and box), with F8_STORE_SPREAD all eight (16), and every value lands where
    it did (lane (g, tq) holds d[4 j + 2 h], d[4 j + 2 h + 1] of 8-column block j)."""
    built, spread = lk.store_chunks(False), lk.store_chunks(True)
    assert all(sorted(set(h)) in ([0, 1, 2, 3], [4, 5, 6, 7]) for h in built)
    assert all(sorted(set(h)) == list(range(8)) for h in spread)
    assert (lk.store_wavefronts(False), lk.store_wavefronts(True)) == (32, 16)

    def placement(spread):
        out = {}
        for jj in range(4):
            for h in range(2):
                for lane in range(32):
                    g, tq = lane // 4, lane % 4
                    jl = jj ^ 2 if spread and tq & 2 else jj
                    out[g + 8 * h, (2 * jl + tq // 2) ^ g, tq % 2] = (g + 8 * h, 8 * jl + 2 * tq)
        return out
    assert placement(False) == placement(True) and len(placement(True)) == 16 * 8 * 2


def test_stored_fp8_sampling_shows_cublaslt_promoting_every_128_products_as_fp8_promote_128_does():
    """lab/logs/ncu-source-fp8-nvidia-h200.json (4096^3): cuBLASLt's default-accumulation FP8 kernel and
    fp8_promote_128 execute the same QGMMA m64n128k32 count and the same FADD count, one add per output per 128
    products in warp instructions of 32 lanes; fp8_wgmma (no promotion) has no FADD among its top opcodes;
    cuBLASLt's kernel name reads a 128 x 128 tile, K-tiles of 128 in 6 stages, clusters of 2."""
    t = lk.load_sampling("fp8")["targets"]
    lt, ours, fast = t["cublaslt_fp8_default"], t["fp8_promote_128"], t["fp8_wgmma"]
    n = 4096
    assert lt["opcodes"]["QGMMA"] == ours["opcodes"]["QGMMA"] == n ** 3 // (64 * 128 * 32) * 4
    assert lt["gmma_shapes"] == ours["gmma_shapes"] == ["64x128x32.F32.E4M3.E4M3"]
    assert lt["opcodes"]["FADD"] == ours["opcodes"]["FADD"] == n * n * (n // 128) // 32
    assert "FADD" not in fast["opcodes"] and fast["gmma_shapes"] == ["64x256x32.F32.E4M3.E4M3"]
    assert "_128x128_128x6_2x1_" in lt["kernel"] and lt["kernel"].startswith("nvjet_sm90_qqsss")
    assert 1.2 < ours["warp_instructions"] / lt["warp_instructions"] < 1.4


def test_cublaslt_kernel_rows_read_the_names():
    """cublaslt_kernel_rows: each cuBLASLt FP8 call's kernel, its tile, K-tile and stages read from its name, in
    clusters of 2, the ring of its stages within its shared memory."""
    fp8 = helpers.results.load_latest().meta["experiments"]["fp8"]
    rows = lk.cublaslt_kernel_rows(fp8["cublaslt_kernels"], 132)
    assert len(rows) == 4 and all(r["cluster"] == 2 and r["k_tile"] == 128 for r in rows)
    assert all(0 < r["smem_kb"] - r["ring_kb"] < 32 for r in rows)
    d = {(r["shape"], r["C"]): r for r in rows}["4096x4096x4096", "FP8, default accumulation"]
    assert (d["tile"], d["stages"]) == ("128x128", 6)


# --------------------------------------------------------------------------- storing a probe's run, judging goals
def test_store_new_kernels_joins_the_record_and_refuses_what_it_holds(tmp_path):
    """store_new_kernels (lab/probes/fp8_pingpong.py's output into a record): a new kernel joins kernels, resources,
    probes, random and match_1024, the speed run goes under its key, the rest is left as it was; a kernel the record
    holds, other probe matrices, or a record without fp8 are refused with the command to run instead."""
    import json

    from helpers.errors import ResultsError

    probes = {"kind": ["gap_same_block"], "param": [0], "outputs": {"old": [1.0]}, "model_mismatches": {"old": 0}}
    rec = {"experiments": {"fp8": {"kernels": ["old"], "resources": {"old": {"regs": 1}}, "probes": probes,
                                   "random": [{"kernel": "old", "mismatches": 0}], "match_1024": [],
                                   "speed": [{"kernel": "old", "n": 4096}]}, "hopper": {"rows": 1}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rec))
    out = {"kernels": ["new"], "resources": {"new": {"regs": 2}},
           "probes": {"kind": ["gap_same_block"], "param": [0], "outputs": {"new": [2.0]}, "model_mismatches": {"new": 0}},
           "random": [{"kernel": "new", "mismatches": 0}], "match_1024": [{"kernel": "new", "mismatches": 0}],
           "speed": [{"kernel": "new", "n": 4096, "tflops": 1.0}]}
    lk.store_new_kernels(out, "speed_new", "a note", path=path)
    got = json.loads(path.read_text())
    fp8 = got["experiments"]["fp8"]
    assert fp8["kernels"] == ["old", "new"] and fp8["resources"]["new"] == {"regs": 2}
    assert fp8["probes"]["outputs"] == {"old": [1.0], "new": [2.0]} and fp8["probes"]["model_mismatches"]["new"] == 0
    assert [r["kernel"] for r in fp8["random"]] == ["old", "new"] and fp8["match_1024"] == out["match_1024"]
    assert fp8["speed_new"]["rows"] == out["speed"] and fp8["speed_new"]["note"] == "a note"
    assert fp8["speed"] == rec["experiments"]["fp8"]["speed"] and got["experiments"]["hopper"] == {"rows": 1}
    with pytest.raises(ResultsError, match="holds \\['new'\\] already"):
        lk.store_new_kernels(out, "speed_new", "again", path=path)
    other = dict(out, kernels=["newer"], probes=dict(out["probes"], param=[1]))
    with pytest.raises(ResultsError, match="probe matrices differ"):
        lk.store_new_kernels(other, "speed_newer", "n", path=path)
    path.write_text(json.dumps({"experiments": {}}))
    with pytest.raises(ResultsError, match="--update-experiments fp8"):
        lk.store_new_kernels(out, "speed_new", "n", path=path)



def test_store_speed_adds_a_speed_run_for_kernels_the_record_holds(tmp_path):
    """store_speed (lab/probes/fp8_pingpong.py --speed-only): the rows go under their key with the note and the date,
    the rest is left as it was; a kernel the record does not hold, or a record without fp8, is refused with the fix."""
    import json

    from helpers.errors import ResultsError

    rec = {"experiments": {"fp8": {"kernels": ["old"], "speed": [{"kernel": "cublaslt_fp8", "n": 4096}]},
                           "hopper": {"rows": 1}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rec))
    out = {"kernels": ["old"], "speed": [{"kernel": "old", "n": 4096, "tflops": 2.0},
                                         {"kernel": "cublaslt_fp8", "n": 4096, "tflops": 1.0}]}
    lk.store_speed(out, "speed_again", "a note", path=path)
    got = json.loads(path.read_text())
    assert got["experiments"]["fp8"]["speed_again"]["rows"] == out["speed"]
    assert got["experiments"]["fp8"]["speed_again"]["note"] == "a note" and got["experiments"]["hopper"] == {"rows": 1}
    assert got["experiments"]["fp8"]["speed"] == rec["experiments"]["fp8"]["speed"]
    with pytest.raises(ResultsError, match="does not hold \\['new'\\]") as e:
        lk.store_speed({"speed": [{"kernel": "new", "n": 4096}]}, "k", "n", path=path)
    assert "store_new_kernels" in str(e.value)
    path.write_text(json.dumps({"experiments": {}}))
    with pytest.raises(ResultsError, match="--update-experiments fp8"):
        lk.store_speed(out, "k", "n", path=path)



def test_target_rows_judges_by_rounds_and_leaves_a_flattered_win_unjudged():
    """target_rows: met when faster over the median round and in most rounds; not judged (None, with
    why) when the yardstick's clock was more than 2% below the kernel's; a loss stays a loss whatever the clocks."""
    def r(k, ms, mhz, ok=None):
        out = {"kernel": k, "n": 64, "tflops": 1 / sorted(ms)[len(ms) // 2], "round_ms": ms, "round_mhz": mhz}
        return out if ok is None else dict(out, check_passed=ok)
    rows = [r("fp8_wgmma_store", [1.0, 1.0, 1.2], [1980] * 3, True), r("cublaslt_fp8_fast", [1.1, 1.1, 1.0], [1980] * 3),
            r("fp8_promote_2acc_lean", [1.0, 1.0, 1.0], [1980] * 3, True), r("cublaslt_fp8", [1.2] * 3, [1800] * 3)]
    t = {x["kernel"]: x for x in lk.target_rows(rows)}
    assert t["fp8_wgmma_store"]["met"] is True and t["fp8_wgmma_store"]["won"] == "2 of 3"
    assert t["fp8_promote_2acc_lean"]["met"] is None and "1800 MHz against 1980" in t["fp8_promote_2acc_lean"]["why"]
    rows[0] = r("fp8_wgmma_store", [1.2, 1.2, 1.0], [1980] * 3, True)           # slower in most rounds
    rows[2] = r("fp8_promote_2acc_lean", [1.3] * 3, [1980] * 3, True)          # slower, the yardstick's clock lower
    t = {x["kernel"]: x for x in lk.target_rows(rows)}
    assert t["fp8_wgmma_store"]["met"] is False and t["fp8_promote_2acc_lean"]["met"] is False
    rows[0] = r("fp8_wgmma_store", [0.5] * 3, [1980] * 3, False)               # fast but wrong
    assert {x["kernel"]: x for x in lk.target_rows(rows)}["fp8_wgmma_store"]["met"] is False


def test_store_block_scaled(tmp_path):
    """store_block_scaled writes a probe's run into a record's experiments.fp8.block_scaled, leaving the rest."""
    from helpers.experiments import fp8_scaled as bsx

    import json

    p = tmp_path / "gpu.json"
    p.write_text(json.dumps({"gpu": {"name": "x"}, "experiments": {"fp8": {"speed": [1]}}}))
    lk.store_block_scaled({"checks": [], "speed": [{"kernel": "k", "n": 8, "tflops": 1.0}]}, "from the probe", path=p)
    rec = json.loads(p.read_text())
    assert rec["experiments"]["fp8"]["speed"] == [1]
    assert rec["experiments"]["fp8"]["block_scaled"]["note"] == "from the probe"
    assert bsx.block_scaled_speed_rows(rec["experiments"]["fp8"], kernels=("k",))[0]["TFLOP/s"] == 1.0


def test_the_nvmath_probe_says_it_needs_a_gpu(capsys, tmp_path):
    """lab/probes/nvmath_fp8_probe.py without a Hopper GPU: one line saying so, status 2, nothing written."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nvmath_fp8_probe", LAB / "probes" / "nvmath_fp8_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    assert probe.main([str(tmp_path / "out.json"), "--n", "256"]) == 2
    assert "needs a Hopper GPU" in capsys.readouterr().err and not (tmp_path / "out.json").exists()


def test_stream_schedule_hides_the_store_behind_the_next_tiles_first_k_tile():
    """stream_schedule (F8_FLOW's model): as built, the next tile's first K-tile starts after the last add and the
    store; with the stream it starts as the last K-tile ends, and the store runs beside it; every K-tile takes 1."""
    built, flow = lk.stream_schedule(False), lk.stream_schedule(True)
    assert [b - a for a, b, _ in built["mma"]] == [1.0] * 8 == [b - a for a, b, _ in flow["mma"]]
    assert built["mma"][4][0] == 4 + 0.25 + 1.0 and flow["mma"][4][0] == 4.0
    assert flow["mma"][5][0] == 4 + 0.25 + 1.0 and [c for c in flow["cuda"] if c[2] == "store"][0][0] == 4.25
    assert flow["busy"] > built["busy"] and lk.stream_schedule(True, store=0.5)["mma"][5][0] == 5.0
    fig = lk.k_tile_stream()
    assert len(fig.axes) == 2 and "busy 84%" in fig.axes[1].get_title(loc="left")


# --------------------------------------------------------------------------- the frozen file's switches
def _nvcc_build(tmp_path, *opts, what="-ptx"):
    """nvcc of lab/kernels/fp8_sm90a_research.cu for sm_90a with `opts`: (the process, the PTX text or "")."""
    import shutil

    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    out = tmp_path / ("k.ptx" if what == "-ptx" else "k.cubin")
    p = subprocess.run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", what, "-o", str(out), "-Xptxas",
                        "-v", *opts, f"-I{ROOT / 'kernels'}", str(ROOT / "lab" / "kernels" / "fp8_sm90a_research.cu")],
                       capture_output=True, text=True, timeout=600)
    return p, (out.read_text() if what == "-ptx" and p.returncode == 0 else "")


def _entries(ptx: str) -> dict:
    """{kernel: its PTX} of a PTX file."""
    import re

    parts = re.split(r"\n(?=\.visible \.entry )", ptx)
    return {re.match(r"\.visible \.entry (\w+)", q).group(1): q for q in parts if q.startswith(".visible .entry")}


@pytest.mark.skipif("LAB_NVCC" not in os.environ, reason="nvcc builds of the whole file: LAB_NVCC=1 make lab-test")
def test_the_descriptor_add_switch_changes_the_two_sum_kernel_only_where_asked(tmp_path):
    """F8_DESC_ADD (0 by default): the frozen file's default build splits a descriptor (desc_split's mov.b64 {..})
    in fp8_promote_2acc_lean alone, which passes DESC = 1 itself; with -DF8_DESC_ADD=1 fp8_promote_2acc does too."""
    ptx = {o: _entries(_nvcc_build(tmp_path, *o)[1]) for o in ((), ("-DF8_DESC_ADD=1",))}
    assert {n for n, body in ptx[()].items() if "mov.b64 {" in body} == {"fp8_promote_2acc_lean"}
    assert "mov.b64 {" in ptx[("-DF8_DESC_ADD=1",)]["fp8_promote_2acc"]


@pytest.mark.skipif("LAB_NVCC" not in os.environ, reason="nvcc builds of the whole file: LAB_NVCC=1 make lab-test")
def test_the_pair_switch_is_refused(tmp_path):
    """F8_PAIR=1 (two K-tiles per stage) is not a build of the frozen file: building it stops with an #error that says
    so; building with 0 works."""
    assert "#ifndef F8_PAIR" not in (ROOT / "lab" / "kernels" / "fp8_sm90a_research.cu").read_text()
    p, _ = _nvcc_build(tmp_path, "-DF8_STAGES=6", "-DF8_PAIR=1")
    assert p.returncode != 0 and "F8_PAIR=1 (two K-tiles per stage) is not a build of this file" in p.stderr
    assert _nvcc_build(tmp_path, "-DF8_STAGES=6", "-DF8_PAIR=0")[0].returncode == 0


@pytest.mark.skipif("LAB_NVCC" not in os.environ, reason="nvcc builds of the whole file: LAB_NVCC=1 make lab-test")
def test_the_extra_l2_probe_loads_a_second_box_of_a(tmp_path):
    """F8_EXTRA_L2, a build switch that prices L2 reads: any value but 0 and 1 stops with an #error; with 1 the lean
    kernel compiles without spills or a stack frame and every kernel of the file issues one TMA load more per K-tile
    (the copy of A's box) and nothing else changes in the count."""
    import re

    p, _ = _nvcc_build(tmp_path, "-DF8_EXTRA_L2=2")
    assert p.returncode != 0 and "F8_EXTRA_L2 is 0" in p.stderr
    p, _ = _nvcc_build(tmp_path, "-DF8_STAGES=6", "-DF8_EXTRA_L2=1", what="-cubin")
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "warning" not in out.lower() and "performance loss" not in out.lower(), out
    entries = dict(re.findall(r"Compiling entry function '(\w+)'.*?(\d+ bytes stack frame, \d+ bytes spill stores, "
                              r"\d+ bytes spill loads)", out, re.S))
    assert entries["fp8_promote_2acc_lean"] == "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", out
    plain, extra = ({k: v.count("cp.async.bulk.tensor") for k, v in _entries(
        _nvcc_build(tmp_path, "-DF8_STAGES=6", f"-DF8_EXTRA_L2={v}")[1]).items()} for v in (0, 1))
    assert plain.keys() == extra.keys() and len(plain) == 12        # every FP8 kernel of the frozen file
    assert all(extra[k] == plain[k] + 1 for k in plain), (plain, extra)


@pytest.mark.skipif("LAB_NVCC" not in os.environ, reason="nvcc builds of the whole file: LAB_NVCC=1 make lab-test")
def test_the_courses_fp8_kernels_compile_to_the_research_builds(tmp_path):
    """Every FP8 wgmma kernel of the course (kernels/fp8_*_sm90a.cu, as the registry builds it: F8_STAGES 4, or 6
    for the lean kernel) compiles with nvcc for sm_90a to the same SASS as the same kernel of the frozen research file,
    the build the record measured: cuobjdump -sass of each function, addresses and spacing aside, byte for byte."""
    import re
    import shutil

    from helpers.fp8_gemm import FP8_KERNELS
    from helpers.fp8_scaled import SCALED_KERNELS

    nvcc = shutil.which("nvcc")
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if nvcc is None or cuobjdump is None:
        pytest.skip("needs nvcc and cuobjdump (CUOBJDUMP=/path/to/cuobjdump)")

    def sass(src: Path, opts: tuple) -> dict:
        out = tmp_path / f"{src.stem}{len(opts)}.cubin"
        subprocess.run([nvcc, "-std=c++17", "-arch=sm_90a", "-cubin", *opts, f"-I{ROOT / 'kernels'}", "-o", str(out),
                        str(src)], check=True, capture_output=True, timeout=600)
        text = subprocess.run([cuobjdump, "-sass", str(out)], check=True, capture_output=True, text=True).stdout
        funcs = re.split(r"\n\s*Function : (\w+)\n", text)[1:]
        return {name: [" ".join(ln.split()) for ln in body.splitlines() if ln.strip()]
                for name, body in zip(funcs[::2], funcs[1::2])}

    research = ROOT / "lab" / "kernels" / "fp8_sm90a_research.cu"
    built, checked = {}, set()
    for name, spec in {**FP8_KERNELS, **SCALED_KERNELS}.items():
        if not spec.wgmma or name in lk.LOST_KERNELS:
            continue
        opts = spec.build_options()
        for src in (research, ROOT / "kernels" / spec.file):
            if (src, opts) not in built:
                built[src, opts] = sass(src, opts)
        mine, theirs = built[ROOT / "kernels" / spec.file, opts][name], built[research, opts][name]
        assert len(theirs) > 1000 and mine == theirs, (name, spec.file, opts)
        checked.add(name)
    assert {"fp8_wgmma_store", "fp8_promote_2acc_lean", "fp8_block_scaled", "fp8_promote_128"} <= checked
