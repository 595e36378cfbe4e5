"""lab/probes/*.py without a GPU: each says in one line that it needs a Hopper GPU and exits with status 2
(no traceback), and each is where the record says its results came from."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBES = sorted(p for p in (ROOT / "lab" / "probes").glob("*.py") if p.name != "common.py")   # common: shared


def test_there_are_probes():
    assert {p.name for p in PROBES} == {"rungs_side_by_side.py", "fp8_pingpong.py", "sanitize_new_kernels.py",
                                        "reject_wrong_fp16c.py", "rung16.py",
                                        "tail_split_sweep.py", "row_alignment.py",
                                        "fp8_block_scaled.py", "cublas_kernels.py", "reject_wrong_block_scaled.py", "reject_wrong_fp8.py", "grid_128.py",
                                        "rung17.py", "fp8_stages.py", "flush_method.py", "wgmma_rate.py",
                                        "wait_hint.py", "ncu_source.py", "ncu_row_alignment.py", "tile_n.py",
                                        "tall_tile.py", "ct_tile.py", "record_cost.py", "knob_rows.py", "fp8_energy.py",
                                        "hopper_try.py", "check_model_probe.py", "nvmath_fp8_probe.py",
                                        "targets_elsewhere.py", "clean_rungs.py", "clean_fp8.py",
                                        "hopper_lab_kernels.py", "group_m.py", "l2_promotion.py"}


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.stem)
def test_probe_without_a_gpu_says_so(probe):
    p = subprocess.run([sys.executable, str(probe), "/tmp/never-written.json"], capture_output=True, text=True,
                       env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=120)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "needs a Hopper GPU" in p.stderr


def test_the_record_names_the_probe_it_came_from():
    rec = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    assert "lab/probes/fp8_pingpong.py" in rec["experiments"]["fp8"]["speed_pingpong"]["note"]
    assert "lab/probes/sanitize_new_kernels.py" in (ROOT / "lab" / "logs" /
                                                      "sanitize-new-kernels-nvidia-h200.log").read_text()
    pa = json.loads((ROOT / "lab" / "logs" / "record-pipeline-apart-nvidia-h200.json").read_text())
    assert all("lab/probes/wgmma_rate.py" in pa["commands"][k] for k in ("rates", "apart", "depth", "wait", "hold"))
    assert all("8ec4c42" in pa["commands"][k] for k in ("apart", "depth", "wait", "hold"))   # where its switches are
    assert "lab/probes/wait_hint.py" in pa["commands"]["wait_hint"]


def test_ncu_source_summary_reads_a_sass_page_and_the_stored_one_says_one_warpgroup():
    """lab/probes/ncu_source.py summary: the SASS page's rows become instruction totals, the HGMMA addresses with
    their executions, and stall shares; the stored H200 summary (lab/logs/ncu-source-m128-nvidia-h200.json) shows
    cuBLAS's kernel issuing the same 524288 warp-level HGMMA as rung 17 from half the warps (one consumer warpgroup
    of 4 warps per CTA: 128 CTAs x 4 warps x 128 K-tiles x 8), which rung 19 copies."""
    sys.path.insert(0, str(ROOT))
    from lab.probes.ncu_source import summary

    head = ('"Kernel Name","k",\n"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
            '"stall_wait","stall_long_sb"\n')
    text = head + ('"0x10","      HGMMA.64x64x16.F32 R24, gdesc[UR8], R24","30","100","20","10"\n'
                   '"0x20","  @!P0  NANOSLEEP.SYNCS 0x989680","70","50","0","70"\n')
    s = summary(text)
    assert s["warp_instructions"] == 150 and s["gmma_addresses"] == 1 and s["gmma_executions"] == [100]
    assert s["gmma_shapes"] == ["64x64x16.F32"] and s["stall_share"] == {"long_sb": 0.8, "wait": 0.2}
    assert [a["opcode"] for a in s["top_addresses"]] == ["NANOSLEEP.SYNCS", "HGMMA.64x64x16.F32"]
    rec = json.loads((ROOT / "lab" / "logs" / "ncu-source-m128-nvidia-h200.json").read_text())
    cub, r17 = rec["targets"]["cublas_fp16c"], rec["targets"]["rung17_hint"]
    assert sum(cub["gmma_executions"]) * 8 == 128 * 4 * 128 * 8          # two loop copies: 8 HGMMA addresses each
    assert cub["gmma_addresses"] == 16 and r17["gmma_addresses"] == 4
    assert r17["gmma_executions"] == [128 * 8 * 128]                       # 8 warps per CTA, 4 HGMMA per K-tile
    assert 0.3 < cub["warp_instructions"] / r17["warp_instructions"] < 0.4
    assert s["opcodes"] == {"HGMMA": 100, "NANOSLEEP": 50}
    assert s["mbarrier_waits"] == []
    w = summary(head + ('"0x10","      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR7], R26","3","100","3","0"\n'
                        '"0x20","  @P0   BRA 0x7f0","27","100","0","27"\n'
                        '"0x30","      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R15+URZ], R4","0","800","0","0"\n'
                        '"0x40","  @P0   BRA 0x7f8","10","800","0","10"\n'
                        '"0x50","      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR7], R28","0","0","0","0"\n'
                        '"0x60","  @!P0  BRA 0x7f0","0","0","0","0"\n'
                        '"0x70","      FADD R1, R2, R3","60","5","60","0"\n'))
    assert w["mbarrier_waits"] == [{"operand": "[R15+URZ]", "executions": 800, "share": 0.1},   # most executed first
                                   {"operand": "[UR7]", "executions": 100, "share": 0.3}]     # TRYWAIT + its branch
    d = summary(head + ('"0x10","      WARPGROUP.DEPBAR.LE gsb0, 0x1 ;","5","64","5","0"\n'
                        '"0x20","      WARPGROUP.DEPBAR.LE gsb0, 0x0","15","32","15","0"\n'))
    assert d["wgmma_waits"] == [{"le": "0x1", "executions": 64, "share": 0.25},
                                {"le": "0x0", "executions": 32, "share": 0.75}]
    q = summary(head + '"0x10","  @P1  QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24","1","7","1","0"\n')
    assert q["gmma_shapes"] == ["64x128x32.F32.E4M3.E4M3"] and q["gmma_executions"] == [7]
    from lab.probes.ncu_source import kernel_name

    assert kernel_name('==PROF== Profiling "nvjet_sm90_x": 0%....100% - 13 passes') == "nvjet_sm90_x"
    assert kernel_name("no profile") is None
    # rung 19 (session 11): one consumer warpgroup, 4 HGMMA m64n128k16 per K-tile: 128 CTAs x 4 warps x 128 K-tiles per
    # address, 4 addresses; 1.5x cuBLAS's warp instructions, with R2UR moves for its descriptors where cuBLAS has none
    r19 = rec["targets"]["rung19"]
    assert r19["kernel"] == "hopper_skinny_one" and cub["kernel"].startswith("nvjet_sm90_hsh_128x64_64x8_1x2")
    assert r19["gmma_addresses"] == 4 and r19["gmma_executions"] == [128 * 4 * 128]
    assert r19["gmma_shapes"] == ["64x128x16.F32"] and 1.4 < r19["warp_instructions"] / cub["warp_instructions"] < 1.6
    assert r19["opcodes"]["R2UR"] >= 4 * 4 * 128 * 4 * 128 and "R2UR" not in cub["opcodes"]


def test_probes_share_the_hopper_check_and_the_rounds(monkeypatch):
    """lab/probes/common.py: every probe checks for a Hopper GPU through hopper_here (none repeats the check), and
    alternating() (helpers.timing's, which experiment hopper_targets uses too) times each entry once per round, the
    order reversed every other round, keeping each round's median, clock, power and throttle reasons."""
    sys.path.insert(0, str(ROOT))
    from lab.probes import common

    for p in PROBES:
        if p.name == "hopper_try.py":          # asks a child process, so that a faulting GPU cannot take it
            continue
        src = p.read_text()
        assert "hopper_here()" in src and "hopper_missing" not in src, p.name
    calls = []

    class T:
        def __init__(self, ms):
            self.median_ms, self.clocks = ms, {"sm_mhz": 1980, "power_w": 500.0, "throttle": ["none"]}

    import helpers.timing

    monkeypatch.setattr(helpers.timing, "benchmark", lambda fn, flops: T(fn()))
    timed = {"a": lambda: calls.append("a") or 1.0, "b": lambda: calls.append("b") or 2.0}
    out = common.alternating(timed, flops=1.0, rounds=3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert out["a"] == {"ms": [1.0] * 3, "sm_mhz": [1980] * 3, "power_w": [500.0] * 3, "throttle": [["none"]] * 3}
    assert out["b"]["ms"] == [2.0] * 3 and common.alternating.__doc__.startswith("helpers.timing.alternating")


def test_reject_wrong_has_a_case_for_every_rung_it_names_and_refuses_one_it_has_not():
    """lab/probes/reject_wrong_fp16c.py: every rung with an 'other' rung has a case (rungs 25-26 once had none, and a
    run for them checked nothing and exited 0); a rung without a case is refused before any GPU work (exit 1)."""
    sys.path.insert(0, str(ROOT))
    from lab.probes import reject_wrong_fp16c as R

    assert {k for k, _ in R.CASES} == set(R.OTHER)
    p = subprocess.run([sys.executable, str(ROOT / "lab/probes/reject_wrong_fp16c.py"), "/tmp/never-written.json", "99"],
                       capture_output=True, text=True, env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 1 and "no case for rung(s) [99]" in p.stderr


def test_reject_wrong_fp8_builds_wrong_results_that_differ_from_c():
    """lab/probes/reject_wrong_fp8.py: every wrong result keeps C's shape and dtype and differs from C (a C whose
    FP16 rounding is exact is the one case that may not, and the probe then says so rather than count it)."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from lab.probes.reject_wrong_fp8 import wrong_results

    C = np.random.default_rng(0).standard_normal((40, 56)).astype(np.float32) * np.float32(37.1)
    W = wrong_results(C, C * np.float32(1 + 2 ** -20), np)
    assert {"zeros", "x1.003", "sign", "rows reversed", "rounded to FP16", "the other accumulator",
            "one element one ulp up"} <= set(W)
    for what, X in W.items():
        assert X.shape == C.shape and X.dtype == C.dtype and not np.array_equal(X, C), what


def test_tile_n_refactored_run_is_what_its_doc_says():
    """lab/probes/tile_n.py's doc: its session-18 run (lab/logs/tile-n-s18) had every forced check and every sweep
    build bit-identical to the model, at SM clocks of 1200-1965 MHz (so its timings decide nothing)."""
    d = json.loads((ROOT / "lab" / "logs" / "tile-n-s18-nvidia-h200.json").read_text())["forced"]
    assert len(d["checks"]) == 40 and all(c["passed"] and c["model"] == "identical" for c in d["checks"])
    builds = [r for r in d["sweeps"] if "passed" in r]
    assert len(builds) == 19 and all(r["passed"] and r["model"] == "identical" for r in builds)
    mhz = [x for r in d["sweeps"] for x in r["sm_mhz"]]
    assert (min(mhz), max(mhz)) == (1200, 1965)
    assert "1200-1965 MHz" in (ROOT / "lab" / "probes" / "tile_n.py").read_text().replace("\n", " ")


def test_int_option_reads_a_list_or_one_number_and_refuses_anything_else():
    """lab/probes/common.int_option (fp8_stages.py's and grid_128.py's --sizes and --rounds)."""
    sys.path.insert(0, str(ROOT))
    from lab.probes.common import int_option

    assert int_option(["out.json", "--sizes", "4096,8192"], "--sizes", (1,)) == (4096, 8192)
    assert int_option(["out.json"], "--sizes", (4096,)) == (4096,)
    assert int_option(["out.json", "--rounds", "9"], "--rounds", 3, one=True) == 9
    for argv, one in ((["o", "--rounds"], True), (["o", "--rounds", "3,4"], True), (["o", "--sizes", "0"], False),
                      (["o", "--sizes", "40x6"], False)):
        with pytest.raises(SystemExit) as e:
            int_option(argv, argv[1], 3, one=one)
        assert e.value.code == 2


@pytest.mark.parametrize("args", [["--switch"], ["--switch", "DESC_ADD"], ["--switch", "1X=2"], ["--switch", "A=1=2"]])
def test_grid_128_refuses_a_malformed_switch_before_looking_for_a_gpu(args):
    """grid_128.py --switch NAME=V (session 20): anything but NAME=VALUE is refused with the form to give, before the
    GPU check (so a typo costs no device time)."""
    p = subprocess.run([sys.executable, str(ROOT / "lab" / "probes" / "grid_128.py"), "/tmp/never-written.json", *args],
                       capture_output=True, text=True, env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 2 and "give NAME=VALUE, e.g. --switch DESC_ADD=1" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "needs a Hopper GPU" not in p.stderr


def test_grid_128_with_a_wellformed_switch_still_needs_the_gpu():
    p = subprocess.run([sys.executable, str(ROOT / "lab" / "probes" / "grid_128.py"), "/tmp/never-written.json",
                        "--switch", "DESC_ADD=1", "14"], capture_output=True, text=True,
                       env={"COURSE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "needs a Hopper GPU" in p.stderr


def test_tall_tile_probe_states_its_predictions_before_its_run():
    """lab/probes/tall_tile.py (written in session 21, not run yet): its predictions are in the module
    (TALL_PREDICTED) and its docstring, and the box rows per MFLOP it quotes are labkit.hopper's; the
    builds it forces carry the shared memory of their tile and stages (labkit.rungs.tall_tile), within 227 KB."""
    import importlib.util

    import labkit.hopper as H
    from helpers.kernels import rung_entry
    from labkit.rungs import tall_tile

    spec = importlib.util.spec_from_file_location("tall_tile_probe", ROOT / "lab" / "probes" / "tall_tile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert set(mod.TALL_PREDICTED) == set(mod.BUILDS)
    doc = " ".join(mod.__doc__.split())
    for name, x in mod.TALL_PREDICTED.items():
        assert f"{name.replace(', 4 stages', ' in 4 stages').replace(', 3 stages', '')}" in doc
        assert f"x{x:.2f}" in doc
    assert f"{H.box_rows_per_mflop(128, 2, 256):.0f} box rows per MFLOP against {H.box_rows_per_mflop(256, 2):.0f}" in doc
    for rows, width, stages in mod.BUILDS.values():
        entry, opts = tall_tile(rung_entry(27), rows, width, stages=stages)
        assert entry.dyn_smem <= 227 * 1024 and entry.block_tile == (rows, width)
        assert (f"-DTALL_STAGES={stages}" in opts) == (stages is not None)


def test_round_rows_names_each_entry_and_takes_the_median_of_its_rounds(monkeypatch, capsys):
    """lab.probes.common.round_rows (grid_128.py and tall_tile.py time through it): one row per entry of the
    alternating rounds, head(key)'s fields first, the median round (of an odd count: the middle one), TFLOP/s from it,
    every round's time, clock and power kept; each row printed once to stderr."""
    from lab.probes import common

    fake = {"a": {"ms": [3.0, 1.0, 2.0], "sm_mhz": [1980, 1965, 1980], "power_w": [500.0, 510.0, 505.0]},
            "b": {"ms": [4.0, 4.0, 8.0], "sm_mhz": [1500] * 3, "power_w": [690.0] * 3}}
    monkeypatch.setattr(common, "alternating", lambda timed, flops, rounds: fake)
    rows = common.round_rows({"a": None, "b": None}, 2e9, 3, lambda key: {"n": 7, "what": key})
    assert [(r["what"], r["median_ms"], r["tflops"]) for r in rows] == [("a", 2.0, 1.0), ("b", 4.0, 0.5)]
    assert rows[0]["n"] == 7 and rows[0]["round_ms"] == [3.0, 1.0, 2.0] and rows[1]["power_w"] == [690.0] * 3
    assert capsys.readouterr().err.count('"median_ms"') == 2


def test_ct_tile_probe_states_its_predictions_before_its_run():
    """lab/probes/ct_tile.py (written in session 22, before rung 29's first GPU run): its predictions are the
    registry's (over rung 25 at 5000^3) and the wave count's at 4096^3 (4 waves of 1.25 tile-times against rung 14's
    4: x0.80); its odd sizes are no multiples of the 160-row tile, of 16 (or of 8: 257, 1000 and 1064 are padded)."""
    import importlib.util
    import math

    from helpers import kernels as K
    spec = importlib.util.spec_from_file_location("ct_tile_probe", ROOT / "lab" / "probes" / "ct_tile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.CT_PREDICTED[5000] == 1.08
    units = -(-math.ceil(4096 / 160) // 2) * (4096 // 256)
    assert (-(-units // 66), 4 * 160 / 128 / 4) == (4, 1.25) and mod.CT_PREDICTED[4096] == round(1 / 1.25, 2)
    assert all(m % 160 and (m % 16 or n % 16 or k % 16) for m, n, k in mod.ODD)
    assert "x1.08 at 5000^3" in mod.__doc__ and "x0.80 at 4096^3" in mod.__doc__
    # the second run's sizes: the waves' ratio (rung 25's waves over rung 29's tile-times), times 0.94 where rung 25
    # builds clusters of 4, 1.00 where it builds clusters of 2
    h200 = lambda: (30, 66)   # noqa: E731  (clusters of 4 and of 2 resident at once on the H200)
    for n in (3000, 5500, 6750, 5496, 6744):
        four = K.quad_choice(n, n, 2 * n, 2 * n, h200) == 4
        waves = K.cluster_waves(n, n, 4, 30) if four else K.cluster_waves(n, n, 2, 66)
        units = -(-math.ceil(n / 160) // 2) * math.ceil(n / 256)
        ratio = waves / (-(-units // 66) * 160 / 128)
        assert mod.CT_PREDICTED[n] == round(ratio * (0.94 if four else 1.0), 2), n
    assert round(1.052 / 1.12, 2) == 0.94
    assert all((2 * n) % 16 == 0 and (2 * n) % 128 for n in (5496, 6744))   # TMA reads them as they are; misaligned


def test_record_cost_log_backs_the_move_of_the_inputs_to_the_gpu():
    """Why helpers.experiments.ladder._inputs draws on the GPU: at the hopper record's shapes, drawing the inputs with numpy
    took 15 of rung 14's 38 s (lab/logs/record-cost: lab/probes/record_cost.py under cProfile, cumulative
    seconds), more than the timings themselves (helpers.timing.benchmark); the record with rungs 29-30 had run past
    the call's 590 s (lab/logs/record-hopper-rung29-30-timeout)."""
    import re

    text = (ROOT / "lab" / "logs" / "record-cost-nvidia-h200.log").read_text()
    cum = {m.group(2): float(m.group(1)) for m in re.finditer(r"^\s*\S+\s+\S+\s+\S+\s+([\d.]+)\s+\S+\s+\S*?(\w+\.py:\d+\(\w+\))",
                                                             text, re.M)}
    total, inputs = cum["hopper.py:123(rung_rows)"], cum["ladder.py:38(_inputs)"]
    assert (round(inputs), round(total)) == (15, 38) and inputs > cum["timing.py:123(benchmark)"]
    assert "rc 124, 590 s" in (ROOT / "lab" / "logs" / "record-hopper-rung29-30-timeout-nvidia-h200.log").read_text()


def test_knob_rows_merge_replaces_only_the_rungs_it_ran(tmp_path):
    """lab/probes/knob_rows.py --merge: the run's rows replace exactly its rungs' rows in the record's knobs
    experiment (each tagged with where it came from), the others stay, `updates` names the rungs; a run on another GPU,
    with a failed row, or missing a rung merges nothing."""
    import json

    from lab.probes import knob_rows

    rec = {"gpu": {"name": "NVIDIA H200"}, "experiments": {"knobs": [
        {"rung": 0, "tflops": 700.0}, {"rung": 28, "tflops": 1.0}, {"rung": 29, "error": "trap"}, {"rung": 30, "error": "x"}]},
        "updates": []}
    path = tmp_path / "rec.json"
    good = {"rungs": [29, 30], "gpu": "NVIDIA H200", "date": "2026-12-04T11:00:00+00:00", "command": "c", "flush": "read",
            "versions": {}, "rows": [{"rung": 29, "knob": None, "passed": True}, {"rung": 29, "knob": "CT_M", "passed": True},
                                     {"rung": 30, "knob": None, "passed": True}]}
    for bad in (dict(good, gpu="NVIDIA H100"), dict(good, rows=good["rows"][:2]),
                dict(good, rows=[*good["rows"], {"rung": 30, "knob": "STAGES", "passed": False}])):
        path.write_text(json.dumps(rec))
        (tmp_path / "run.json").write_text(json.dumps(bad))
        assert knob_rows.merge(tmp_path / "run.json", path) == 2 and json.loads(path.read_text()) == rec
    (tmp_path / "run.json").write_text(json.dumps(good))
    assert knob_rows.merge(tmp_path / "run.json", path) == 0
    got = json.loads(path.read_text())
    assert [r["rung"] for r in got["experiments"]["knobs"]] == [0, 28, 29, 29, 30]
    assert not any("error" in r for r in got["experiments"]["knobs"])
    assert all(r["run"].startswith("lab/probes/knob_rows.py, 2026-12-04") for r in got["experiments"]["knobs"] if r["rung"] >= 29)
    assert got["updates"][-1]["rungs"] == [29, 30] and got["updates"][-1]["experiments"] == ["knobs"]


def test_the_energy_probe_writes_its_prediction_before_it_runs():
    """lab/probes/fp8_energy.py (issue 26; first run in session 27, read by lesson 7): its docstring's prediction is ENERGY_PREDICTED,
    it times the goal kernels, and without a Hopper GPU it exits 2 (test above)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fp8_energy", ROOT / "lab" / "probes" / "fp8_energy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = " ".join(mod.__doc__.split())
    assert mod.ENERGY_PREDICTED == {8192: 0.97, 4096: 1.00}
    assert ("at 8192^3 cuBLASLt's default accumulation takes about 3% less energy per GEMM than fp8_promote_2acc_lean"
            in doc and "at 4096^3 below the cap, within 2% of each other" in doc)
    from labkit.fp8 import YARDSTICK

    assert set(mod.KERNELS) == set(YARDSTICK)


def test_the_energy_probe_takes_a_probe_switch_per_kernel_and_refuses_what_is_not_one(capsys):
    """fp8_energy.py --kernels NAME:-DX=v[:stages=N] (session 29: the F8_PAIR=1 build beside the recorded one, and the
    F8_EXTRA_L2=1 build with 7 stages): the build is NAME with those switches and that ring; a name that is no FP8
    kernel, a part that is neither a -D definition nor stages=N exit 2 and name the kernels to use. Its prediction is
    PAIR_ENERGY_PREDICTED, in the docstring as written."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fp8_energy", ROOT / "lab" / "probes" / "fp8_energy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pair = "fp8_promote_2acc_lean,fp8_promote_2acc_lean:-DF8_PAIR=1"
    assert mod.kernel_option(["o.json", "--kernels", pair]) == tuple(pair.split(","))
    assert [mod.build_of(k) for k in pair.split(",")] == [("fp8_promote_2acc_lean", (), None),
                                                          ("fp8_promote_2acc_lean", ("-DF8_PAIR=1",), None)]
    extra = "fp8_promote_2acc_lean:-DF8_EXTRA_L2=1:stages=7"
    assert mod.kernel_option(["o.json", "--kernels", extra]) == (extra,)
    assert mod.build_of(extra) == ("fp8_promote_2acc_lean", ("-DF8_EXTRA_L2=1",), 7)
    for bad in ("fp8_nope", "fp8_promote_2acc_lean:F8_PAIR=1", "fp8_promote_2acc_lean:stages=x",
                "fp8_promote_2acc_lean:-DA=1;rm"):
        with pytest.raises(SystemExit) as e:
            mod.kernel_option(["o.json", "--kernels", bad])
        assert e.value.code == 2 and "fp8_promote_2acc_lean" in capsys.readouterr().err
    assert mod.PAIR_ENERGY_PREDICTED == {4096: 0.986, 8192: 0.986}
    assert "x0.986 the joules per GEMM at both sizes" in " ".join(mod.__doc__.split())


def test_hopper_missing_says_why_in_one_line(monkeypatch):
    """common.hopper_missing: what every device probe prints before it exits 2, on the CPU backend and on a GPU that
    is not sm_90; None on a Hopper GPU."""
    import helpers.device as D
    sys.path.insert(0, str(ROOT))
    from lab.probes import common

    cpu = D.Backend("cpu", "COURSE_DEVICE=cpu")
    mk = lambda name, cc: D.Backend("gpu", "found", D.GPUInfo(name, cc, 1, 1, 1, None, "", "", "", "", None))
    for b, want in ((cpu, "COURSE_DEVICE=cpu"), (mk("NVIDIA A100", (8, 0)), "NVIDIA A100 is sm_80"),
                    (mk("NVIDIA B200", (10, 0)), "is sm_100"), (mk("NVIDIA H200", (9, 0)), None)):
        monkeypatch.setattr(D, "backend", lambda b=b: b)
        got = common.hopper_missing()
        if want is None:
            assert got is None
        else:
            assert want in got and "needs a Hopper GPU" in got and "\n" not in got


def test_energy_counter_is_none_without_nvml(monkeypatch):
    """fp8_energy.energy_j: None where NVML cannot be reached (this machine, CI), a number of joules (mJ / 1000)
    where it can; a GPU without the counter (NVML raises) gives None too."""
    import importlib.util

    from helpers import clocks

    spec = importlib.util.spec_from_file_location("fp8_energy", ROOT / "lab" / "probes" / "fp8_energy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(clocks, "_HANDLE", {"h": None})
    assert mod.energy_j() is None

    class FakeNvml:
        @staticmethod
        def nvmlDeviceGetTotalEnergyConsumption(h):
            return 123456

    import sys
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml)
    monkeypatch.setattr(clocks, "_HANDLE", {"h": object()})
    assert mod.energy_j() == 123.456

    class NoCounter:
        @staticmethod
        def nvmlDeviceGetTotalEnergyConsumption(h):
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    monkeypatch.setitem(sys.modules, "pynvml", NoCounter)
    assert mod.energy_j() is None


def test_fp8_switched_builds_of_the_courses_kernels_build_the_frozen_file():
    """Lesson 7's FP8 kernels left the switches in 2026-12 (kernels/fp8_*_sm90a.cu): a probe that sets one on any of
    them builds the frozen file, whose text has the switch; the knobs the lesson keeps build the course's own file."""
    sys.path.insert(0, str(ROOT))
    from helpers.fp8_gemm import FP8_KERNELS, unknown_macros
    from lab.probes.common import fp8_research_source

    src = fp8_research_source("fp8_promote_128", ("-DF8_DESC_ADD=1",))
    assert src is not None and "#ifndef F8_DESC_ADD" in src and "fp8_promote_128(" in src
    assert not unknown_macros(FP8_KERNELS["fp8_promote_128"], ("-DF8_DESC_ADD=1",), source=src)
    assert fp8_research_source("fp8_wgmma", ("-DF8_UNIFORM=1",)) is not None
    assert fp8_research_source("fp8_promote_256", ("-DF8_PERIOD=0",)) is None
    for name, switch in (("fp8_promote_2acc_lean", "-DF8_FLOW=1"), ("fp8_wgmma_store", "-DF8_STORE_SPREAD=1")):
        assert unknown_macros(FP8_KERNELS[name], (switch,))                  # the course's file has no such switch
        src = fp8_research_source(name, (switch,))
        assert src is not None and f"{name}(" in src and not unknown_macros(FP8_KERNELS[name], (switch,), source=src)
    assert fp8_research_source("fp8_promote_128") is None


def test_targets_elsewhere_adds_rungs_where_rows_start_inside_a_line_and_only_for_their_c_type():
    """lab/probes/targets_elsewhere.py --add-rungs 25,26: rung 25 (FP16 C) joins the FP16-C cells and rung 26 (FP32 C)
    the FP32-C cells of the shapes whose rows start inside a 128-byte line (7000^3; 4104 x 8200 x 2056, where only
    A's rows do); 8192^3 keeps its candidates, or is left out with --misaligned-only."""
    sys.path.insert(0, str(ROOT))
    from lab.probes.targets_elsewhere import add_rungs, misaligned

    plan = [[[8192, 8192, 8192], "float16", 1.0, [29]], [[7000, 7000, 7000], "float16", 0.95, [16, 29]],
            [[7000, 7000, 7000], "float32", 0.95, [13, 30]], [[4104, 8200, 2056], "float32", 0.97, [13, 26]]]
    assert [misaligned(c[0]) for c in plan] == [False, True, True, True]
    assert [c[3] for c in add_rungs(plan, (25, 26), False)] == [[29], [16, 29, 25], [13, 30, 26], [13, 26]]
    assert [c[0] for c in add_rungs(plan, (25, 26), True)] == [[7000] * 3, [7000] * 3, [4104, 8200, 2056]]


def test_row_alignment_swaps_the_tensor_map_builder_the_launcher_calls():
    """lab/probes/row_alignment.py maps A and B into wider buffers by replacing helpers.launch.tensor_map_2d: the
    launcher must look that name up in its own module at call time (a probe that patched helpers.hopper's name
    instead saw no call, and refused every rung as 'probe invalid')."""
    import ast

    import helpers.launch as HL

    src = (ROOT / "lab" / "probes" / "row_alignment.py").read_text()
    targets = {ast.unparse(n.targets[0]) for n in ast.walk(ast.parse(src))
               if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]).endswith("tensor_map_2d")}
    assert targets == {"HL.tensor_map_2d"} and "import helpers.launch as HL" in src
    assert "tensor_map_2d" in HL.launcher.__code__.co_names or any(
        "tensor_map_2d" in c.co_names for c in HL.launcher.__code__.co_consts if hasattr(c, "co_names"))
