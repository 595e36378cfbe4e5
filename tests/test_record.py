"""helpers.record without a GPU: the timing-agreement entry of the record (``extras.timing_agreement``)
stores the clocks beside each of its timings, with fakes in place of CuPy, torch and triton."""
from __future__ import annotations

import sys
import types

import numpy as np

from helpers import clocks, record, results
from helpers.timing import Timing

CLOCKS = {"sm_mhz": 1980, "mem_mhz": 3201, "sm_mhz_min": 1980, "power_w": 420.0, "power_w_max": 421.0,
          "temp_c": 53, "throttle": ["none"], "clock_samples": 12}


def _fakes(monkeypatch):
    from conftest import numpy_cupy

    cupy = numpy_cupy()
    triton, testing = types.ModuleType("triton"), types.ModuleType("triton.testing")
    testing.do_bench = lambda fn, warmup, rep, return_mode: (fn(), 0.181)[1]
    triton.testing = testing
    for name, mod in {"cupy": cupy, "torch": types.ModuleType("torch"), "triton": triton,
                      "triton.testing": testing}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(record, "benchmark", lambda fn, **kw: (fn(), Timing(np.array([0.18]), clocks=dict(CLOCKS)))[1])
    monkeypatch.setattr(clocks, "read", lambda: {"sm_mhz": 1965, "mem_mhz": 3201, "power_w": 430.0, "temp_c": 54,
                                                 "reasons": 0})


def test_timing_agreement_stores_clocks_beside_each_timing(monkeypatch):
    _fakes(monkeypatch)
    out = record.timing_agreement(n=32, log=lambda *a: None)
    assert out["harness_median_ms"] == [0.18, 0.18] and out["do_bench_median_ms"] == 0.181
    assert out["harness_clocks"] == [CLOCKS, CLOCKS]
    assert tuple(out["do_bench_clocks"]) == clocks.FIELDS           # sampled while do_bench ran
    assert out["do_bench_clocks"]["sm_mhz"] == 1965 and out["do_bench_clocks"]["throttle"] == ["none"]


def test_timing_agreement_without_nvml_still_records(monkeypatch):
    _fakes(monkeypatch)
    monkeypatch.setattr(clocks, "read", lambda: None)
    out = record.timing_agreement(n=32, log=lambda *a: None)
    assert out["do_bench_clocks"] == {} and clocks.clock_text(out["do_bench_clocks"]) == "clock not recorded"


def test_extras_can_be_updated_by_name():
    assert set(record.EXTRAS) == {"timing_agreement", "emulator_probe"}


# --------------------------------------------------------------------------- a record stopped part way, resumed
def _fake_record_run(monkeypatch, calls, stop_at=None):
    """make record on a fake GPU: two sizes, two extras and three experiments that log their calls; the experiment
    named `stop_at` interrupts the run as a timeout would."""
    from helpers.device import GPUInfo

    gpu = GPUInfo("Fake GPU", (9, 0), 132, 50 << 20, 80 << 30, None, "13.0", "13.0", "13.0", "14.0", None)
    monkeypatch.setattr(record, "require_gpu", lambda what: gpu)
    monkeypatch.setattr(record, "measure_size", lambda m, n, k, seed: calls.append(f"n={n}") or [
        {"kernel": "k", "m": m, "n": n, "k": k, "dtype_in": "fp32", "acc": "fp32", "median_ms": 1.0, "tflops": 1.0,
         "rel_err": 1e-7, "passed": True}])
    monkeypatch.setattr(record, "cap_sizes", lambda sizes, what: (sizes, ""))
    monkeypatch.setattr(record, "left_out", lambda names, gpu: ([], ""))
    monkeypatch.setattr(record, "release", lambda: None)
    monkeypatch.setitem(record.EXTRAS, "timing_agreement", lambda: calls.append("extra") or {"x": 1})
    monkeypatch.setitem(record.EXTRAS, "emulator_probe", lambda: {"y": 2})

    def exp(name):
        def fn():
            calls.append(name)
            if name == stop_at:
                raise KeyboardInterrupt
            return {"seen": sorted(record.RECORDING)}       # what earlier experiments left for this one
        return fn
    monkeypatch.setattr(record, "load_experiments", lambda: {n: exp(n) for n in ("alpha", "beta", "gamma")})
    monkeypatch.setattr(record, "unsupported", lambda name, gpu: None)
    monkeypatch.setattr(record, "RECORDING", {})


def _fake_ladder(measured: list):
    """A long experiment as the Hopper ladder is one: rungs 1-3, each row saved through `checkpoint` as it is
    measured (its rung appended to `measured`), the rungs in `done` skipped; it stops after rung `stop_after`."""
    def ladder(done=None, checkpoint=None, stop_after=None):
        rows = list(done or [])
        for rung in (1, 2, 3):
            if any(r["rung"] == rung for r in rows):
                continue
            measured.append(rung)
            rows.append({"rung": rung})
            checkpoint(rows)
            if rung == stop_after:
                raise KeyboardInterrupt
        return rows
    return ladder


def test_a_record_stopped_part_way_resumes_where_it_stopped(tmp_path, monkeypatch):
    import json

    import pytest

    calls = []
    _fake_record_run(monkeypatch, calls, stop_at="beta")
    with pytest.raises(KeyboardInterrupt):
        record.main(["--sizes", "64", "128", "--out", str(tmp_path)])
    assert calls == ["n=64", "n=128", "extra", "alpha", "beta"] and not (tmp_path / "fake-gpu.json").exists()
    saved = json.loads((tmp_path / "fake-gpu.partial.json").read_text())
    assert list(saved["experiments"]) == ["alpha"] and len(saved["rows"]) == 2
    assert results.list_records(tmp_path) == []                      # a record in progress is no record

    calls.clear()
    _fake_record_run(monkeypatch, calls)
    assert record.main(["--sizes", "64", "128", "--out", str(tmp_path), "--resume"]) == 0
    assert calls == ["beta", "gamma"]                                # the sizes and alpha are not measured again
    rec = record.load_record(tmp_path / "fake-gpu.json")
    assert list(rec.meta["experiments"]) == ["alpha", "beta", "gamma"] and len(rec.rows) == 2
    assert rec.meta["experiments"]["beta"] == {"seen": ["alpha"]}   # alpha's data reached beta, as in one run
    assert not (tmp_path / "fake-gpu.partial.json").exists()

    calls.clear()                                # other sizes than the saved run's: the record starts over
    _fake_record_run(monkeypatch, calls, stop_at="beta")
    with pytest.raises(KeyboardInterrupt):
        record.main(["--sizes", "64", "--out", str(tmp_path)])
    _fake_record_run(monkeypatch, calls)
    calls.clear()
    assert record.main(["--sizes", "64", "128", "--out", str(tmp_path), "--resume"]) == 0
    assert calls[:3] == ["n=64", "n=128", "extra"]


def test_a_long_experiment_resumes_from_its_last_checkpoint(tmp_path, monkeypatch):
    """An experiment that takes `done` and `checkpoint` (the Hopper ladder, one child process per rung) saves its
    rows as it goes; a record stopped inside it goes on from the last saved row, not from the experiment's start."""
    import json

    import pytest

    calls = []
    _fake_record_run(monkeypatch, calls)
    measured = []
    ladder = _fake_ladder(measured)

    monkeypatch.setattr(record, "load_experiments",
                        lambda: {"ladder": lambda done=None, checkpoint=None: ladder(done, checkpoint, 2)})
    with pytest.raises(KeyboardInterrupt):
        record.main(["--sizes", "64", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "fake-gpu.partial.json").read_text())
    assert saved["unfinished"] == {"ladder": [{"rung": 1}, {"rung": 2}]} and saved["experiments"] == {}

    monkeypatch.setattr(record, "load_experiments",
                        lambda: {"ladder": lambda done=None, checkpoint=None: ladder(done, checkpoint)})
    assert record.main(["--sizes", "64", "--out", str(tmp_path), "--resume"]) == 0
    assert measured == [1, 2, 3]                                    # rungs 1 and 2 not measured again
    rec = record.load_record(tmp_path / "fake-gpu.json")
    assert rec.meta["experiments"]["ladder"] == [{"rung": 1}, {"rung": 2}, {"rung": 3}]
    assert "unfinished" not in rec.meta


def test_the_hopper_ladder_skips_the_rungs_a_stopped_run_measured(monkeypatch):
    """helpers.experiments.hopper.hopper with `done`: cuBLAS's rows and the rungs found there are not measured
    again, the others are, and each new rung is checkpointed."""
    import pytest

    from helpers.device import GPUInfo
    from helpers.experiments import hopper as hx

    gpu = GPUInfo("Fake GPU", (9, 0), 132, 50 << 20, 80 << 30, None, "13.0", "13.0", "13.0", "14.0", None)
    monkeypatch.setattr("helpers.device.require_gpu", lambda what: gpu)
    children = []
    monkeypatch.setattr("helpers.isolate.run_isolated",
                        lambda target, k, *a, **kw: children.append(k) or [{"rung": k, "m": 1}])
    def cublas_row(*a):
        pytest.fail("cuBLAS measured again")

    monkeypatch.setattr("helpers.experiments.ladder.cublas_row", cublas_row)
    saves = []
    done = [{"rung": 0, "m": 4096}, {"rung": 7, "m": 1}, {"rung": 8, "m": 1}]
    rows = hx.hopper(rungs=(7, 8, 9, 10), done=done, checkpoint=lambda r: saves.append(len(r)))
    assert children == [9, 10] and [r["rung"] for r in rows] == [0, 7, 8, 9, 10]
    assert saves == [4, 5] and done == [{"rung": 0, "m": 4096}, {"rung": 7, "m": 1}, {"rung": 8, "m": 1}]


def test_an_update_stopped_part_way_resumes_where_it_stopped(tmp_path, monkeypatch):
    """--update-experiments saves each experiment it finishes (and a long one's rows) beside the record; with
    --resume a stopped update measures only what is left, then writes the record and removes its progress file."""
    import json

    import pytest

    calls = []
    _fake_record_run(monkeypatch, calls)
    assert record.main(["--sizes", "64", "--out", str(tmp_path)]) == 0
    before = record.load_record(tmp_path / "fake-gpu.json").meta
    measured = []
    ladder = _fake_ladder(measured)

    exps = {"alpha": lambda: calls.append("alpha2") or {"new": True},
            "ladder": lambda done=None, checkpoint=None: ladder(done, checkpoint, 2)}
    monkeypatch.setattr(record, "load_experiments", lambda: exps)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        record.main(["--update-experiments", "alpha", "ladder", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "fake-gpu.update.partial.json").read_text())
    assert saved["done"] == {"alpha": {"new": True}} and saved["unfinished"] == {"ladder": [{"rung": 1}, {"rung": 2}]}
    assert record.load_record(tmp_path / "fake-gpu.json").meta == before       # the record is untouched so far

    exps["ladder"] = lambda done=None, checkpoint=None: ladder(done, checkpoint)
    calls.clear()
    assert record.main(["--update-experiments", "alpha", "ladder", "--out", str(tmp_path), "--resume"]) == 0
    assert calls == [] and measured == [1, 2, 3]                   # alpha and rungs 1-2 not measured again
    meta = record.load_record(tmp_path / "fake-gpu.json").meta
    assert meta["experiments"]["alpha"] == {"new": True}
    assert meta["experiments"]["ladder"] == [{"rung": 1}, {"rung": 2}, {"rung": 3}]
    assert meta["experiments"]["beta"] == before["experiments"]["beta"]   # the others left as they were
    assert meta["updates"][-1]["experiments"] == ["alpha", "ladder"]
    assert not (tmp_path / "fake-gpu.update.partial.json").exists()
    # the record and each update say what the tensor maps asked L2 to fetch per miss; the reader finds it per
    # experiment (the newest run that wrote it), and a record or update that names none asked for 256 bytes
    from helpers.hopper import L2_PROMOTION

    rec = record.load_record(tmp_path / "fake-gpu.json")
    assert before["l2_promotion"] == meta["updates"][-1]["l2_promotion"] == L2_PROMOTION
    assert rec.l2_promotion("alpha") == rec.l2_promotion("beta") == L2_PROMOTION
    rec.meta["updates"][-1]["l2_promotion"] = "NONE"
    rec.meta["l2_promotion"] = "L2_64B"
    assert (rec.l2_promotion("alpha"), rec.l2_promotion("beta")) == ("NONE", "L2_64B")
    del rec.meta["updates"][-1]["l2_promotion"], rec.meta["l2_promotion"]
    assert rec.l2_promotion("alpha") == rec.l2_promotion("beta") == "L2_256B"
