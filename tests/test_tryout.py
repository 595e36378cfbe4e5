"""helpers.tryout (issue 23): the knobs of kernels/ladder.cu and their validation, the launch settings a
knob changes, the one-line answer without a GPU (or on one that cannot run the rung) with the recorded
sweep, source_of, the readable compile error / fault / wrong-tile verdicts (GPU calls mocked), and,
with nvcc, every knob value compiled for sm_80 and sm_90, changing exactly the kernels of its rungs and
leaving the default build's PTX as recorded. The GPU runs are tests/gpu/test_gpu_tryout.py."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import full_sweeps, sweep_cases

import helpers
import helpers.device
from helpers import tryout
from helpers.errors import CourseError, GPUContextLostError, InputError
from helpers.experiments import knobs as KX
from helpers.kernels import ALL_RUNGS, ladder_smem_bytes

ROOT = Path(__file__).resolve().parent.parent
LADDER = ROOT / "kernels" / "ladder.cu"


def _fake_gpu(monkeypatch, cc=(9, 0), name="NVIDIA H200"):
    info = helpers.device.GPUInfo(name=name, cc=cc, sms=132, l2_bytes=50 << 20, mem_bytes=141 << 30,
                                  mem_bw_gbs=4800.0, driver="13.0", runtime="13.0", nvrtc="13.0", cupy="(faked)",
                                  peaks=helpers.device.peaks_for(name))
    b = helpers.device.Backend("gpu", "mocked", info)
    monkeypatch.setattr(helpers.device, "backend", lambda: b)
    return b


class _NoCuPy(types.ModuleType):
    def __getattr__(self, name):
        raise AssertionError(f"cupy.{name} was used: the answer should have come before any GPU work")


@pytest.fixture
def no_cupy(monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupy_backends")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cupy", _NoCuPy("cupy"))
    monkeypatch.setitem(sys.modules, "cupy_backends", _NoCuPy("cupy_backends"))


# --------------------------------------------------------------------------- the knob table
def test_every_knob_has_its_macro_in_the_file_with_the_recorded_default():
    for r, table in tryout.KNOBS.items():
        spec = ALL_RUNGS[r]
        assert spec.file == ("ladder.cu" if r <= 6 else f"hopper_rung{r:02d}_sm90a.cu")
        src = (ROOT / "kernels" / spec.file).read_text()
        settings = tryout._resolve(spec, {})
        for name, k in table.items():
            assert k.teaches and f"#ifndef {k.define}\n" in src, (r, name)
            if not callable(k.default):
                assert re.search(rf"^#define {k.define} {k.default}\b", src, re.M), (r, name)
            assert settings[name] in k.allowed(settings)
    assert "#define WAIT_GROUP (STAGES - 2)" in LADDER.read_text()
    assert "#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)" in src      # rung 30's file: 40 -> 232
    assert tryout._resolve(ALL_RUNGS[5], {})["WAIT_GROUP"] == 2
    assert tryout._resolve(ALL_RUNGS[5], {"STAGES": 3})["WAIT_GROUP"] == 1
    # rung 2 is the unpadded body, rungs 3-6 the padded one
    assert tryout.KNOBS[2]["PAD"].define == "RUNG2_PAD" and tryout.KNOBS[2]["PAD"].default == 0
    assert {tryout.KNOBS[r]["PAD"].define for r in (3, 4, 5, 6)} == {"SMEM_PAD"}
    rows = tryout.knob_table()
    assert [(r["rung"], r["knob"]) for r in rows][:3] == [(2, "PAD"), (2, "BK"), (3, "PAD")]
    assert {r["knob"] for r in tryout.knob_table(6)} == {"PAD", "BK", "STAGES", "WAIT_GROUP", "LDMATRIX"}
    assert {r["knob"]: r["define"] for r in tryout.knob_table(13)} == {
        "STAGES": "HSTAGES", "PRODUCER_REGS": "PRODUCER_REGS", "CLUSTER_M": "CLUSTER_M", "GROUP_M": "GROUP_M"}
    assert set(tryout.KNOBS) == {2, 3, 4, 5, 6, *range(8, 27), 29, 30}   # rung 1 (wmma.cu) and 7: source= only
    assert {r["knob"]: r["define"] for r in tryout.knob_table(25)} == {
        "STAGES": "HSTAGES", "PRODUCER_REGS": "PRODUCER_REGS", "CLUSTER_M": "QUAD_CLUSTER", "GROUP_M": "GROUP_M",
        "TILE_N": "TILE_N"}


def test_the_defaults_are_the_registered_entries():
    for r in tryout.KNOBS:
        spec = ALL_RUNGS[r]
        s, settings, given = tryout.validate_knobs(r, {})
        assert s is spec and given == {}
        assert tryout.variant_entry(spec, settings) is spec              # nothing changes: the entry itself
        # every default passed explicitly: the same entry, and -D of the recorded values
        s2, settings2, given2 = tryout.validate_knobs(spec.name, dict(settings))
        assert settings2 == settings and tryout.variant_entry(spec, settings2) is spec
        assert tryout.defines(spec, given2) == {tryout.KNOBS[r][k].define: v for k, v in settings.items()}


@pytest.mark.parametrize("knobs, problem, allowed", [
    ({"STAGES": 7}, "STAGES=7 is not a value rung 5 (ladder_cp_async) allows", "2, 3, 4, 5, 6 (default 4)"),
    ({"STAGES": "3"}, "STAGES='3' is not a value", "2, 3, 4, 5, 6"),
    ({"STAGES": True}, "STAGES=True is not a value", "2, 3, 4, 5, 6"),
    ({"PAD": 4}, "PAD=4 is not a value", "0, 8, 16 (default 8)"),
    ({"WAIT_GROUP": 3}, "WAIT_GROUP=3 is not a value", "0, 1, 2 (default 2, with STAGES=4)"),
    ({"STAGES": 2, "WAIT_GROUP": 1}, "WAIT_GROUP=1 is not a value", "0 (default 0, with STAGES=2)"),
    ({"STAGE": 2}, "rung 5 (ladder_cp_async) has no knob STAGE; its knobs: PAD in {0, 8, 16} (default 8)",
     "STAGES in {2, 3, 4, 5, 6} (default 4); WAIT_GROUP in {0, 1, 2} (default 2)"),
    ({"LDMATRIX": 0}, "has no knob LDMATRIX", "WAIT_GROUP in {0, 1, 2}"),
])
def test_a_bad_knob_is_an_input_error_naming_the_allowed_values(knobs, problem, allowed):
    with pytest.raises(InputError) as ei:
        helpers.try_kernel(5, **knobs)
    msg = str(ei.value)
    assert problem in ei.value.problem and allowed in ei.value.problem, msg
    assert "\nFix: " in msg


def test_knob_names_are_case_insensitive_and_kernels_without_knobs_say_which_have():
    spec, settings, given = tryout.validate_knobs("ladder_cp_async", {"stages": 3})
    assert given == {"STAGES": 3} and settings["STAGES"] == 3
    with pytest.raises(InputError) as ei:
        helpers.try_kernel("wmma_gemm_naive", PAD=8)
    assert ei.value.problem.startswith("wmma_gemm_naive has no knobs; these rungs do: 2 (ladder_smem_tiled): PAD, BK;")
    assert "source=" in ei.value.fix
    with pytest.raises(CourseError, match="no kernel 'ladder_nope'"):
        helpers.try_kernel("ladder_nope")


def test_too_much_shared_memory_is_refused_before_compiling():
    assert ladder_smem_bytes(stages=6, pad=16, bk=64) > tryout.MAX_SMEM_OPTIN
    with pytest.raises(InputError, match="233472 bytes of shared memory per block; no GPU allows more than 232448"):
        tryout.validate_knobs(5, {"STAGES": 6, "BK": 64, "PAD": 16})


# --------------------------------------------------------------------------- launch settings
@pytest.mark.parametrize("r, knobs, field, want", [
    (5, {"STAGES": 2}, "dyn_smem", ladder_smem_bytes(stages=2)),
    (6, {"STAGES": 6}, "dyn_smem", ladder_smem_bytes(stages=6)),
    (5, {"PAD": 0}, "dyn_smem", ladder_smem_bytes(stages=4, pad=0)),
    (6, {"BK": 64}, "dyn_smem", ladder_smem_bytes(stages=4, bk=64)),
    (5, {"WAIT_GROUP": 0}, "dyn_smem", ladder_smem_bytes(stages=4)),
    (2, {"PAD": 8}, "smem_static", ladder_smem_bytes(pad=8)),
    (3, {"PAD": 0}, "smem_static", ladder_smem_bytes(pad=0)),
    (4, {"BK": 16, "PAD": 16}, "smem_static", ladder_smem_bytes(pad=16, bk=16)),
])
def test_a_knob_changes_the_launch_settings_it_implies(r, knobs, field, want):
    spec, settings, given = tryout.validate_knobs(r, knobs)
    v = tryout.variant_entry(spec, settings)
    assert getattr(v, field) == want
    assert v.tile_k == knobs.get("BK", 32)
    assert (v.block, v.block_tile, v.tile_mn, v.name, v.file, v.emulate) == \
        (spec.block, spec.block_tile, spec.tile_mn, spec.name, spec.file, spec.emulate)
    assert v.grid(1000, 1064) == spec.grid(1000, 1064) == (9, 8)
    assert v.padded(1000, 1064, 1000) == (1024, 1152, -(-1000 // v.tile_k) * v.tile_k)
    assert tryout.options(tryout.defines(spec, given)) == tuple(
        f"-D{tryout.KNOBS[r][k].define}={val}" for k, val in knobs.items())
    if field == "dyn_smem" and want > helpers.launch.DEFAULT_SMEM_LIMIT:
        assert v.dyn_smem > 48 * 1024                    # the launcher opts in to it (gpu_kernel)


def test_the_launcher_compiles_the_variant_with_its_options(monkeypatch):
    """helpers.launch passes source / options through to helpers.compile, and nothing extra otherwise."""
    _fake_gpu(monkeypatch)
    seen = []

    class Kern:
        max_dynamic_shared_size_bytes = 0

    def get_kernel(file, name, min_cc, **kw):
        seen.append((file, name, kw))
        return Kern()

    monkeypatch.setattr(helpers.compile, "get_kernel", get_kernel)
    spec, settings, given = tryout.validate_knobs(5, {"STAGES": 3})
    v = tryout.variant_entry(spec, settings)
    k = helpers.launch.gpu_kernel(v, options=tryout.options(tryout.defines(spec, given)))
    assert seen[-1] == ("ladder.cu", "ladder_cp_async", {"options": ("-DSTAGES=3",)})
    assert k.max_dynamic_shared_size_bytes == ladder_smem_bytes(stages=3)
    helpers.launch.gpu_kernel(spec)
    assert seen[-1] == ("ladder.cu", "ladder_cp_async", {})
    helpers.launch.gpu_kernel(spec, source="// my copy")
    assert seen[-1][2] == {"source": "// my copy"}


# --------------------------------------------------------------------------- sources
def test_source_of_is_the_file_and_replace_edits_one_place():
    assert tryout.source_of(5) == LADDER.read_text() == tryout.source_of("ladder_mma_sync")
    old = "    for (int kt = 0; kt < ktiles; ++kt) {\n        cp_async_wait<WAIT_GROUP>();   // this"
    src = tryout.source_of(5, replace={old: old.replace("kt < ktiles", "kt < ktiles - 1")})
    assert src.count("kt < ktiles - 1") == 1 and len(src) == len(LADDER.read_text()) + 4
    with pytest.raises(InputError, match="occurs 2 times in ladder.cu, not once"):
        tryout.source_of(5, replace={"cp_async_wait<WAIT_GROUP>();": ""})
    with pytest.raises(InputError, match="occurs 0 times"):
        tryout.source_of(5, replace={"no such line": ""})
    assert "wgmma" in tryout.source_of(9) and "tile_of(t, tiles_n, tm, tn)" in tryout.source_of("hopper_persistent")
    assert tryout.source_of(17) == (ROOT / "kernels" / "hopper_rung17_sm90a.cu").read_text()


def test_a_source_without_the_kernel_is_refused_on_every_backend():
    with pytest.raises(InputError, match='must keep extern "C" __global__ void ladder_cp_async'):
        helpers.try_kernel(5, source="__global__ void other() {}")
    with pytest.raises(InputError, match="not a string"):
        helpers.try_kernel(5, source=["a list"])
    with pytest.raises(InputError, match="size=\\(1, 2\\)"):
        helpers.try_kernel(5, size=(1, 2))
    with pytest.raises(InputError, match="runs=0"):
        helpers.try_kernel(5, runs=0)


# --------------------------------------------------------------------------- without a GPU: one line
def _record_with(monkeypatch, tmp_path, rows):
    """The committed H200 record with a `knobs` experiment of synthetic rows (not measurements)."""
    import json

    from helpers import results

    meta = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    meta.setdefault("experiments", {})["knobs"] = rows
    (tmp_path / "nvidia-h200.json").write_text(json.dumps(meta))
    monkeypatch.setattr(results, "load_latest", lambda *a, **k: results.load_record(tmp_path / "nvidia-h200.json"))


def _synthetic_rows():
    """Rows shaped like the knobs experiment's, with made-up numbers (for the display only)."""
    out = [{"rung": 0, "kernel": "cublas_fp16", "knob": None, "value": None, "tflops": 10.0, "ms": 1.0}]
    for knob, value, tf in ((None, None, 4.0), ("STAGES", 2, 3.0), ("STAGES", 3, 3.5), ("PAD", 0, 1.0)):
        out.append({"rung": 5, "kernel": "ladder_cp_async", "knob": knob, "value": value, "default": knob is None,
                    "settings": {"PAD": 8, "BK": 32, "STAGES": 4, "WAIT_GROUP": 2}, "passed": True, "m": 4096,
                    "ms": 1.0 / tf, "p10_ms": 0.9 / tf, "p90_ms": 1.1 / tf, "tflops": tf, "vs_default": tf / 4.0,
                    "sm_mhz": 1980, "throttle": ["none"]})
    return out


def test_without_a_gpu_one_line_and_no_recording_yet(capsys, monkeypatch, tmp_path, no_cupy):
    _record_with(monkeypatch, tmp_path, [])
    r = helpers.try_kernel(5, STAGES=2)
    assert not r.live and r.passed is None and r.row["ms"] is None and r.recorded == []
    r.show()
    out = capsys.readouterr().out.strip().splitlines()
    assert all(len(ln) <= 100 for ln in out), out                     # one sentence, wrapped at spaces
    out = [" ".join(out)]
    assert out[0].startswith("no GPU here (CPU backend), so nothing is compiled or timed; no recording of the sweep "
                             "of STAGES of ladder_cp_async exists yet")
    assert "python -m helpers.record --update-experiments knobs" in out[0]
    assert r.figure() is None


def test_without_a_gpu_the_recorded_sweep_of_that_knob(capsys, monkeypatch, tmp_path, no_cupy):
    _record_with(monkeypatch, tmp_path, _synthetic_rows())
    r = helpers.try_kernel("ladder_cp_async", STAGES=2)
    assert [(x["knob"], x["value"]) for x in r.recorded] == [(None, None), ("STAGES", 2), ("STAGES", 3)]
    r.show()
    lines = capsys.readouterr().out.strip().splitlines()
    assert all(len(ln) <= 100 for ln in lines if "|" not in ln), lines
    head = next(i for i, ln in enumerate(lines) if "|" in ln)          # the message's lines, then the table
    lines = [" ".join(lines[:head])] + lines[head:]
    assert lines[0] == ("no GPU here (CPU backend), so nothing is compiled or timed: showing the sweep of STAGES "
                        f"of ladder_cp_async recorded on {r.source}, at 4096^3.")      # the size the rows were timed at
    assert r.source.startswith("NVIDIA H200, recorded ")
    # the date of the run that wrote the knobs experiment (its update), not the record's first date
    from helpers.results import load_record

    rec = load_record(ROOT / "results" / "nvidia-h200.json")
    knob_runs = [u["date"][:10] for u in rec.meta["updates"] if "knobs" in u["experiments"]]
    assert rec.written("knobs") == knob_runs[-1] != rec.date and r.source == f"NVIDIA H200, recorded {knob_runs[-1]}"
    assert rec.written("no such experiment") == rec.date
    assert lines[1].split(" | ")[:4] == ["shown  ", "rung", "knob         ", "value"]
    assert lines[6].startswith("Your STAGES=2, as recorded: ")
    assert "(as recorded)" in lines[3] and "STAGES" in lines[4]
    fig = r.figure()
    assert fig is not None and len(fig.axes[0].patches) == 3
    # an edited source: the same, saying an edit runs on a GPU only; all of the rung's knobs
    r2 = helpers.try_kernel(5, source=tryout.source_of(5))
    assert "an edited source runs only on a GPU: showing the knob sweep of ladder_cp_async" in r2.message
    assert len(r2.recorded) == 4
    # a knob the sweep has no rows of: said so, not the rung as recorded alone
    r3 = helpers.try_kernel(5, WAIT_GROUP=0)
    assert r3.recorded == [] and "no recording of the sweep of WAIT_GROUP of ladder_cp_async exists yet" in r3.message
    assert "has no rows of WAIT_GROUP for it" in r3.message and tryout.RECORD_FIX in r3.message


def test_without_a_gpu_a_timing_size_the_sweep_was_not_recorded_at_is_said(capsys, monkeypatch, tmp_path, no_cupy):
    """The recorded sweep names the size it was timed at; a timing_size other than that one is said not to be shown
    (lesson 6 asks for rung 14 with CLUSTER_M=4 at 5000^3, where the knobs experiment timed 4096^3 only); the
    default timing_size, and timing_size=None (check only), add nothing."""
    from helpers import results

    latest = results.load_latest
    _record_with(monkeypatch, tmp_path, _synthetic_rows())
    line = helpers.try_kernel(5, STAGES=2, timing_size=5000).message
    assert line.endswith(", at 4096^3. Not at your timing_size=5000: no sweep was recorded at 5000^3."), line
    for ts in (4096, None):
        assert helpers.try_kernel(5, STAGES=2, timing_size=ts).message.endswith(", at 4096^3."), ts
    assert tryout.recorded_sizes([{"m": 128, "n": 8192, "k": 8192}, {"m": 4096}, {"m": 4096}, {}]) == \
        [(128, 8192, 8192), (4096, 4096, 4096)]
    assert tryout._size_text((128, 8192, 8192)) == "128 x 8192 x 8192" and tryout._size_text((5000,) * 3) == "5000^3"
    # the committed record: every knob row at 4096^3, so lesson 6's call at 5000 says so
    monkeypatch.setattr(results, "load_latest", latest)
    r = helpers.try_kernel(14, CLUSTER_M=4, timing_size=5000)
    assert "recorded on NVIDIA H200, recorded " in r.message and r.message.endswith(
        ", at 4096^3. Not at your timing_size=5000: no sweep was recorded at 5000^3.")
    assert {(x["m"], x["n"], x["k"]) for x in r.recorded} == {(4096,) * 3}


def _row_as_recorded(r, capsys) -> list[str]:
    """The cells of the '(as recorded)' row that a TryResult's show() prints, without the "shown" column."""
    r.show()
    lines = capsys.readouterr().out.strip().splitlines()
    return next(x for x in lines if "(as recorded)" in x).split("|")[1:]


def rows_of(rung, **knobs):
    return helpers.try_kernel(rung, **knobs).recorded


def test_without_a_gpu_the_learners_value_is_marked_and_judged(capsys, monkeypatch, tmp_path, no_cupy):
    """The row and the bar of the value a learner asked for are marked beside the default's, and one line says what
    the record found for it, judged by timing.verdict against the spread the p10 and p90 timings allow: STAGES=3 at
    x0.875 with a spread of x0.716 to x1.069 resolves no difference; STAGES=2 (x0.75, spread x0.614 to x0.917) is
    slower; a value not recorded, or the default's own value, is said so."""
    _record_with(monkeypatch, tmp_path, _synthetic_rows())
    cases = {3: "x0.875 the default's speed (spread x0.716 to x1.069): no difference the spread can resolve.",
             2: "x0.750 the default's speed (spread x0.614 to x0.917): slower than the default, beyond the spread."}
    for value, said in cases.items():
        r = helpers.try_kernel(5, STAGES=value)
        r.show()
        lines = capsys.readouterr().out.strip().splitlines()
        head = next(i for i, ln in enumerate(lines) if "|" in ln)
        tail = next(i for i in range(len(lines) - 1, -1, -1) if "|" in lines[i]) + 1
        lines = [" ".join(lines[:head])] + lines[head:tail] + [" ".join(lines[tail:])]
        marked = {ln.split("|")[0].strip(): ln.split("|")[3].strip() for ln in lines[3:6]}
        assert marked == {"default": "4", "yours": str(value), "": str(5 - value)}, lines
        assert lines[-1] == f"Your STAGES={value}, as recorded: {said}"
        ticks = {t.get_text(): t.get_fontweight() for t in r.figure().axes[0].get_yticklabels()}
        assert ticks[f"STAGES={value} (yours)"] == "bold" and ticks["STAGES=4 (as recorded)"] == "normal"
    assert tryout.asked_lines(rows_of(5, STAGES=4), {"STAGES": 4}) == [
        "Your STAGES=4 is the rung as recorded (the default row)."]
    assert tryout.asked_lines(rows_of(5, STAGES=6), {"STAGES": 6}) == [
        "Your STAGES=6 was not recorded (recorded: 2, 3), so there is no number for it here."]
    # a ratio whose spread ends just below 1: enough digits that the printed spread excludes x1
    rows = _synthetic_rows()
    rows[1].update(p90_ms=0.25 * 1.00005, p10_ms=0.25 * 0.99)
    rows[3].update(ms=0.25 * 1.005, p10_ms=0.25 * 1.0001, p90_ms=0.25 * 1.01)
    _record_with(monkeypatch, tmp_path, rows)
    assert tryout.asked_lines(rows_of(5, STAGES=3), {"STAGES": 3})[0].endswith(
        "(spread x0.98020 to x0.99995): slower than the default, beyond the spread.")

def test_a_knob_the_launcher_chooses_shows_what_it_chose_as_recorded(capsys, no_cupy):
    """Rungs 25-26's CLUSTER_M, left out, is the launcher's choice per shape (helpers.kernels.quad_choice): at 4096^3
    clusters of 2, whatever the knob's default (4, what it forces when given). The recorded row as built shows what ran
    (its grid: '66 clusters of 2'), not the default; the CLUSTER_M=2 row is then the same kernel."""
    from helpers.kernels import quad_choice

    r = helpers.try_kernel(25, CLUSTER_M=4)
    built = next(x for x in r.recorded if x.get("knob") is None)
    assert built["settings"]["CLUSTER_M"] == 4 == tryout.KNOBS[25]["CLUSTER_M"].default_for({})
    assert "clusters of 2" in built["resident"] and quad_choice(4096, 4096, 8192, 8192, lambda: (30, 66)) == 2
    assert tryout.KNOBS[25]["CLUSTER_M"].chosen is tryout.KNOBS[26]["CLUSTER_M"].chosen is not None
    assert not tryout.KNOBS[25]["CLUSTER_M"].forces
    assert _row_as_recorded(r, capsys)[2].strip() == "2, chosen per shape"
    assert tryout._value_label(built, "CLUSTER_M") == "CLUSTER_M=2, chosen per shape (as recorded)"
    assert tryout._value_label(built, "STAGES") == "STAGES=4 (as recorded)"           # not chosen: its value
    assert tryout._value_label(dict(built, resident=None), "CLUSTER_M") == "CLUSTER_M chosen per shape (as recorded)"
    other = next(x for x in r.recorded if x.get("knob") == "CLUSTER_M")
    assert tryout._value_label(other, "CLUSTER_M") == "CLUSTER_M=2"                  # a knob's own row: its value
    assert any("chosen per shape" in t.get_text() for t in r.figure().axes[0].get_yticklabels())
    # rung 14's CLUSTER_M is not chosen: its row as built shows the value it was built with
    assert tryout.KNOBS[14]["CLUSTER_M"].chosen is None
    assert tryout._value_label(next(x for x in helpers.try_kernel(14, CLUSTER_M=4).recorded if x.get("knob") is None),
                               "CLUSTER_M") == "CLUSTER_M=2 (as recorded)"


def test_a_forcing_knobs_recorded_row_as_built_says_left_out(capsys, no_cupy):
    """CT_M forces the C^T tile even at its default (160), so rung 29 as recorded (the launcher's choice: at 4096^3
    rung 25's kernel) did not run CT_M=160: its row and its bar say 'left out', not 160 (the sweep's own CT_M=160 row
    is the forced tile, x0.84 in the record)."""
    r = helpers.try_kernel(29, CT_M=160)
    built = next(x for x in r.recorded if x.get("knob") is None)
    assert built["settings"]["CT_M"] == 160 and tryout.KNOBS[29]["CT_M"].forces
    assert _row_as_recorded(r, capsys)[2].strip() == "left out"
    assert tryout._value_label(built, "CT_M") == "CT_M left out (as recorded)"
    assert tryout._value_label(built, "STAGES") == "STAGES=4 (as recorded)"      # not forcing: its value
    fig = r.figure()
    assert any("left out" in t.get_text() for t in fig.axes[0].get_yticklabels())


def test_on_a_gpu_that_cannot_run_the_rung_one_line_before_any_gpu_work(capsys, monkeypatch, tmp_path, no_cupy):
    _fake_gpu(monkeypatch, cc=(7, 5), name="Tesla T4")
    _record_with(monkeypatch, tmp_path, _synthetic_rows())
    r = helpers.try_kernel(5, STAGES=3)
    r.show()
    line = " ".join(capsys.readouterr().out.split("\nshown ")[0].split("\n"))       # the sentence, wrapped at spaces
    assert line.startswith("rung 5 (ladder_cp_async) skipped: ") and "7.5" in line, line      # helpers.kernels' words
    assert ": showing the sweep of STAGES of ladder_cp_async recorded on NVIDIA H200, recorded " in line, line
    with pytest.raises(InputError):                 # validation still comes first
        helpers.try_kernel(5, STAGES=9)


# --------------------------------------------------------------------------- on a GPU, mocked: the verdicts
def _outcome(**kw):
    o = {"like": "ladder_cp_async", "rung": 5, "variant": "ladder_cp_async (your source)", "knobs": {}, "defines": {},
         "stage": "done", "passed": True, "verdict": "PASS ladder_cp_async M=1000 N=1064 K=1000: ...", "error": "",
         "size": [1000, 1064, 1000], "timing_size": 4096, "resources": {}, "timing": {}}
    o.update(kw)
    return o


def test_an_edited_source_runs_in_a_child_and_its_compile_error_reads(monkeypatch, capsys):
    from helpers import isolate
    from helpers.compile import compile_error

    _fake_gpu(monkeypatch)
    src = tryout.source_of(5)
    line = src.index("    const int ktiles = K / BK;\n\n    wmma")
    n = src[:line].count("\n") + 1
    log = f'/tmp/kern.cu({n}): error: identifier "BKK" is undefined\n'
    err = str(compile_error("ladder.cu", src, log))
    calls = []

    def run_isolated(func, *args, timeout=240):
        calls.append((func, args, timeout))
        return _outcome(stage="compile", passed=False, verdict="ladder_cp_async (your source) does not compile: x",
                        error=err)

    monkeypatch.setattr(isolate, "run_isolated", run_isolated)
    r = helpers.try_kernel(5, source=src)
    assert calls[0][0] == "helpers.tryout:measure_json" and calls[0][1][:3] == ("ladder_cp_async", src, {})
    assert r.stage == "compile" and r.passed is False and r.row["passed"] is False
    r.show(plot=False)
    out = capsys.readouterr().out
    assert f"ladder.cu, line {n}: error: identifier \"BKK\" is undefined" in out and f"> {n} |" in out
    assert "COMPILE" in out.splitlines()[2] and "Traceback" not in out


def test_a_fault_in_the_child_is_one_verdict(monkeypatch):
    from helpers import isolate

    _fake_gpu(monkeypatch)
    monkeypatch.setattr(isolate, "run_isolated", lambda *a, **k: _outcome(
        stage="fault", passed=False, verdict="ladder_cp_async (your source) faulted: CUDARuntimeError: illegal address"))
    r = helpers.try_kernel(5, source=tryout.source_of(5))
    assert r.stage == "fault" and r.verdict.endswith("(in a child process: this notebook's GPU context is intact)")
    monkeypatch.setattr(isolate, "run_isolated", lambda *a, **k: {"error": "Traceback ...\nSegmentation fault",
                                                                 "returncode": -11})
    r = helpers.try_kernel(5, source=tryout.source_of(5))
    assert r.stage == "fault" and "its child process failed (Traceback ... | Segmentation fault)" in r.verdict
    assert r.verdict.endswith("this notebook's GPU context is intact.")


def _in_process(monkeypatch, fail_at):
    """measure() in this process on a faked GPU, every CUDA call mocked; `fail_at` raises there."""
    from helpers import launch

    _fake_gpu(monkeypatch)
    monkeypatch.setattr(tryout, "_smem_limit", lambda: 227 * 1024)
    monkeypatch.setattr(launch, "kernel_resources", lambda *a, **k: fail_at("compile") or {"regs": 128})
    monkeypatch.setattr(tryout, "_inputs", lambda *a: fail_at("inputs") or (None, None))
    monkeypatch.setattr(tryout, "check_variant", lambda *a, **k: fail_at("check"))


def test_in_process_a_compile_error_a_wrong_result_and_a_fault(monkeypatch):
    from helpers.compile import compile_error

    src = tryout.source_of(5)

    def compile_fails(where):
        if where == "compile":
            raise compile_error("ladder.cu", src, "kern.cu(3): error: expected a \";\"\n")

    _in_process(monkeypatch, compile_fails)
    r = helpers.try_kernel(5, STAGES=3)
    assert r.stage == "compile" and "ladder.cu, line 3: error: expected a \";\"" in r.error
    assert r.verdict == 'ladder_cp_async STAGES=3 does not compile: ladder.cu, line 3: error: expected a ";"'

    def wrong(where):
        if where == "check":
            return {"passed": False, "verdict": "FAIL ladder_cp_async M=1000 N=1064 K=1000: 12 NaN",
                    "where": "first wrong block tile: blockIdx.y = 7, blockIdx.x = 8 (rows 896-1023, columns 1024-1151)",
                    "details": "12 of 1064000 elements wrong", "wrong": {"first_tile": (7, 8)}, "size": [1000, 1064, 1000]}

    _in_process(monkeypatch, wrong)
    r = helpers.try_kernel(5, STAGES=3)
    assert r.stage == "check" and r.passed is False and r.first_wrong_tile == (7, 8)
    assert r.verdict == ("FAIL ladder_cp_async M=1000 N=1064 K=1000: 12 NaN; first wrong block tile: blockIdx.y = 7, "
                         "blockIdx.x = 8 (rows 896-1023, columns 1024-1151)")

    class CUDARuntimeError(Exception):
        status = 700

    def fault(where):
        if where == "inputs":
            raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    _in_process(monkeypatch, fault)
    with pytest.raises(GPUContextLostError) as ei:
        helpers.try_kernel(5, STAGES=3)
    assert "ladder_cp_async STAGES=3 faulted" in ei.value.problem and "restart the notebook's kernel" in ei.value.fix


def test_the_row_and_the_plot_of_a_measured_variant(capsys):
    t = {"variant": {"ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.2, "tflops": 68.7, "sm_mhz": 1980, "throttle": ["none"]},
         "original": {"ms": 1.0, "p10_ms": 0.95, "p90_ms": 1.05, "tflops": 137.4},
         "cublas": {"ms": 0.5, "p10_ms": 0.49, "p90_ms": 0.52, "tflops": 274.9}}
    r = tryout.TryResult.from_outcome(_outcome(timing=t, variant="ladder_cp_async STAGES=2",
                                               defines={"STAGES": 2}), "measured live on NVIDIA H200")
    assert r.row == {"variant": "ladder_cp_async STAGES=2", "defines": "-DSTAGES=2", "passed": True,
                     "verdict": r.verdict, "ms": 2.0, "tflops": 68.7, "vs_original": 0.5, "vs_cublas": 0.25,
                     "clocks": "1980 MHz"}
    r.show()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(" | ")[0].strip() == "variant" and len(lines) == 4
    assert "0.500x" in lines[2] and "0.250x" in lines[2] and "PASS" in lines[2] and "1980 MHz" in lines[2]
    fig = r.figure()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["original", "your variant", "cuBLAS"]


def test_wrong_tiles_names_the_first_tile_in_launch_order():
    ref = np.ones((300, 400))
    scale = np.ones((300, 400))
    C = ref.copy()
    C[200, 10] = 5.0            # tile (1, 0)
    C[130, 300] = np.nan        # tile (1, 2): row 130 comes first row-major, but tile (1, 0) first in launch order
    w = tryout.wrong_tiles(C, ref, scale, 1e-3, (128, 128))
    assert w["tiles"] == 3 * 4 and w["wrong_tiles"] == 2 and w["first_tile"] == (1, 0)
    assert w["first_element"] == (200, 10, 5.0, 1.0)
    assert tryout.tile_text(w, (128, 128)) == ("first wrong block tile: blockIdx.y = 1, blockIdx.x = 0 (rows 128-255, "
                                               "columns 0-127), C[200, 10] = 5, expected 1; 2 of 12 tiles wrong")
    w = tryout.wrong_tiles(ref.copy(), ref, scale, 1e-3, (128, 256), first=(299, 399))   # only the model saw it
    assert w["first_tile"] == (2, 1) and w["wrong_tiles"] is None


# --------------------------------------------------------------------------- the knobs experiment (reading)
def test_the_sweep_covers_every_value_of_every_knob_once():
    for r, table in tryout.KNOBS.items():
        v = KX.variants(r)
        assert v[0] == (None, None) and len(v) == len(set(v))
        defaults = tryout._resolve(ALL_RUNGS[r], {})
        assert len(v) == 1 + sum(len(k.allowed(defaults)) - (not k.forces) for k in table.values())
    assert len([x for r in tryout.KNOBS for x in KX.variants(r)]) == 38 + 41 + 10 + 8 + 5 + 9 + 9 + 7 + 7 + 7 + 7 + 8 + 8 + 12 + 12 + 10 + 10   # 2-6, 8-13, 14-26, 29-30
    # (17, 18: + WAIT_HINT 1, 2; 19-22: STAGES, CLUSTER_M and WAIT_HINT, no PRODUCER_REGS; 23-24: + DESC_ADD 0;
    # 25-26: rung 14's four knobs, CLUSTER_M 2 or 4 and GROUP_M a multiple of it; 29-30: STAGES 2, 3, PRODUCER_REGS
    # 24, 56, GROUP_M 2, 4, 16, and CT_M 128 and 160: 160 is its default, but given it forces the C^T tile, a
    # different build from the rung as recorded, so the sweep records it too)
    assert [k for r in tryout.KNOBS for k in tryout.KNOBS[r].values() if k.forces] == [tryout.KNOBS[29]["CT_M"]] * 2
    assert ("CT_M", 160) in KX.variants(29) and ("CT_M", 160) in KX.variants(30)


# --------------------------------------------------------------------------- nvcc: every knob value compiles
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


def _ptx_entries(ptx: str) -> dict:
    """{kernel: its PTX code} of one PTX file, without the declarations of static shared arrays: rungs 2 and 3
    share tiled_body<PAD>, so when a knob gives both the same PAD its arrays move from inside each entry
    ("demoted") to the file scope; the code is unchanged."""
    parts = re.split(r"^(?=\.visible \.entry )", ptx, flags=re.M)
    keep = lambda ln: ln.strip() not in ("", "// demoted variable") and not re.match(r"\s*\.shared .* _ZZ\w+\[\d+\];$", ln)  # noqa: E731,E501
    return {re.match(r"\.visible \.entry (\w+)\(", p).group(1): "\n".join(filter(keep, p.splitlines()))
            for p in parts[1:]}


def _knob_builds(tmp_path, path: Path, rungs, archs, nvcc_arch, keep=None):
    """nvcc -ptx of `path` for each arch: the default build, every default passed, and every other allowed
    value of every knob of `rungs` (with pytest --full; else those of `keep`, "DEFINE=value" strings, or the first
    value of each knob); returns ({(arch, defines): PTX}, {define=value: rungs}, all defaults)."""
    def ptx(arch, defs):
        out = tmp_path / f"{arch}_{'_'.join(defs) or 'default'}.ptx"
        p = subprocess.run([NVCC, "-std=c++17", *nvcc_arch(arch), "-ptx", *(f"-D{d}" for d in defs), "-o", str(out),
                            str(path)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (arch, defs, p.stderr)
        return out.read_text()

    all_defaults, changes = {}, {}
    for r in rungs:
        s = tryout._resolve(ALL_RUNGS[r], {})
        all_defaults.update({k.define: s[n] for n, k in tryout.KNOBS[r].items()})
        for knob, value in KX.variants(r)[1:]:
            changes.setdefault(f"{tryout.KNOBS[r][knob].define}={value}", set()).add(r)
    if keep is None:
        keep = {next(c for c in changes if c.split("=")[0] == d) for d in {c.split("=")[0] for c in changes}}
    built = sweep_cases(changes, keep)
    changes = {c: r for c, r in changes.items() if c in built}
    every = tuple(f"{d}={v}" for d, v in all_defaults.items())
    jobs = [(a, d) for a in archs for d in [(), every] + [(c,) for c in changes]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(jobs, pool.map(lambda j: ptx(*j), jobs))), changes, every


FIXED_BY_PLAN = {"GROUP_M", "CLUSTER_M"}


def _check_changes(out, changes, every, archs, rungs):
    for a in archs:
        base = out[(a, ())]
        assert out[(a, every)] == base                               # every default passed: the same PTX
        base_k = {k: v for k, v in _ptx_entries(base).items() if k in {ALL_RUNGS[r].name for r in rungs}}
        assert set(base_k) == {ALL_RUNGS[r].name for r in rungs}
        for d, _ in changes.items():
            if d == f"CT_M={tryout.KNOBS[29]['CT_M'].default_for({})}":   # its default forces a build, same code
                assert out[(a, (d,))] == base
                continue
            got = _ptx_entries(out[(a, (d,))])
            changed = {name for name in base_k if got[name] != base_k[name]}
            define = d.split("=")[0]
            owners = {ALL_RUNGS[r].name for r in rungs if any(k.define == define for k in tryout.KNOBS[r].values())}
            # rung 16 reads GROUP_M and CLUSTER_M (its tile order and clusters) but does not offer them as knobs:
            # its split plan and model assume the defaults (helpers/tryout.py says so), so they change it too
            owners |= {ALL_RUNGS[16].name} & base_k.keys() if define in FIXED_BY_PLAN else set()
            # rungs 17-24 walk their tiles in rung 11's grouped order (GROUP_M) without offering it as a knob
            owners |= {ALL_RUNGS[k].name for k in range(17, 25)} & base_k.keys() if define == "GROUP_M" else set()
            assert changed == owners, (a, d, changed, owners)


@pytest.mark.sweep
@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
def test_every_knob_value_compiles_and_changes_exactly_its_rungs(tmp_path):
    """kernels/ladder.cu, nvcc -ptx for sm_80 and sm_90: the default build (nothing passed, or every default
    passed) is the PTX recorded on the H200 (results/build-nvidia-h200, same nvcc); every other allowed value
    of every knob compiles, and changes the PTX of exactly the kernels of the rungs that have that macro.
    Without --full: for sm_90, one value of each knob."""
    rungs = [r for r in tryout.KNOBS if r <= 6]
    archs = ("sm_80", "sm_90") if full_sweeps() else ("sm_90",)
    out, changes, every = _knob_builds(tmp_path, LADDER, rungs, archs, lambda a: [f"-arch={a}"])
    recorded = ROOT / "results" / "build-nvidia-h200" / "ladder.sm_90.ptx"
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    if recorded.is_file() and "V13.0.88" in version and "V13.0.88" in recorded.read_text()[:300]:
        assert out[("sm_90", ())] == recorded.read_text()           # byte for byte: the rungs as recorded
    _check_changes(out, changes, every, archs, rungs)


@pytest.mark.sweep
@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
def test_every_hopper_knob_value_compiles_for_sm90a_and_changes_exactly_its_rungs(tmp_path):
    """Lesson 6's files, nvcc -ptx for sm_90a (their only real target): the same, for lesson 6's rungs, file by file
    (one file per rung). Without --full: a knob many rungs offer
    (HSTAGES), one that some rungs read without offering it (GROUP_M), and the C^T tile's default, which forces a
    build of the same code (CT_M=160)."""
    keep = ("HSTAGES=3", "GROUP_M=4", "CT_M=160")
    groups = [(ROOT / "kernels" / f"hopper_rung{r:02d}_sm90a.cu", [r]) for r in tryout.KNOBS if r >= 8]
    for path, rungs in groups:
        sub = tmp_path / path.stem
        sub.mkdir()
        out, changes, every = _knob_builds(sub, path, rungs, ("sm_90a",), lambda a: [f"-arch={a}"], keep)
        assert ".target sm_90a" in out[("sm_90a", ())] and "wgmma.mma_async" in out[("sm_90a", ())]
        _check_changes(out, changes, every, ("sm_90a",), rungs)


def test_ct_m_192_is_offered_only_where_its_ring_fits():
    """Rungs 29-30 share one knob table; CT_M 192 only with 3 stages or fewer, because 4 do not fit in the 227 KB a
    block may have (helpers.kernels.ct_smem); CT_M's default, given, still forces the C^T tile (a build of its own)."""
    from helpers.kernels import ct_smem

    k = tryout.KNOBS[29]
    assert k is not tryout.KNOBS[30] and k == tryout.KNOBS[30]
    assert ct_smem(192, 4) > 227 * 1024 >= ct_smem(192, 3) and ct_smem(128, 4) <= 227 * 1024
    assert k["CT_M"].allowed({"STAGES": 4}) == (128, 160) and k["CT_M"].allowed({"STAGES": 3}) == (128, 160, 192)
    assert k["CT_M"].forces
