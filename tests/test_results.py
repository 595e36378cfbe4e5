"""Recorded results files: loading, validation, selection."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import ResultsError
from helpers import results as hr

ROOT = Path(__file__).resolve().parent.parent


def row(kernel="wmma_mixed_gemm_kernel", size=1024, tflops=100.0, **kw):
    r = {"kernel": kernel, "m": size, "n": size, "k": size, "dtype_in": "float16", "acc": "fp32",
         "median_ms": 2 * size**3 / (tflops * 1e12) * 1e3, "tflops": tflops, "rel_err": 1e-4}
    r.update(kw)
    return r


def record(gpu="NVIDIA H200", date="2025-06-01T12:00:00", rows=None, kind="gpu-record", **extra):
    d = {"schema": hr.SCHEMA, "kind": kind, "gpu": {"name": gpu}, "date": date,
         "records": rows if rows is not None else [row()]}
    d.update(extra)
    return d


def write(path: Path, obj) -> Path:
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def assert_results_error(path):
    with pytest.raises(ResultsError) as ei:
        hr.load_record(path)
    msg = str(ei.value)
    assert "Fix:" in msg and "make record" in msg
    return msg


def test_required_keys_cover_what_the_row_helpers_use():
    for k in ("kernel", "m", "n", "k", "tflops"):
        assert k in hr.REQUIRED_ROW_KEYS


def test_load_good_record(tmp_path):
    p = write(tmp_path / "nvidia-h200.json", record(rows=[row(size=512, tflops=50.0), row(size=1024)]))
    r = hr.load_record(p)
    assert r.gpu_name == "NVIDIA H200"
    assert r.date == "2025-06-01"
    assert r.label == "NVIDIA H200, recorded 2025-06-01"
    assert len(r.rows) == 2
    assert r.path == p


def test_published_label_names_its_source(tmp_path):
    d = record(kind="published", gpu="NVIDIA GeForce RTX 4090", source_short="the seed article")
    del d["date"]                                   # published figures need no date
    r = hr.load_record(write(tmp_path / "ref.json", d))
    assert r.label == "NVIDIA GeForce RTX 4090, published in the seed article"
    assert "recorded" not in r.label


def test_gpu_record_needs_a_date(tmp_path):
    d = record()
    del d["date"]
    msg = assert_results_error(write(tmp_path / "nodate.json", d))
    assert "date" in msg


def test_missing_file(tmp_path):
    msg = assert_results_error(tmp_path / "nope.json")
    assert "does not exist" in msg


def test_invalid_json(tmp_path):
    msg = assert_results_error(write(tmp_path / "bad.json", '{"schema": '))
    assert "not valid JSON" in msg


def test_not_an_object(tmp_path):
    assert_results_error(write(tmp_path / "list.json", [1, 2, 3]))


def test_wrong_schema(tmp_path):
    msg = assert_results_error(write(tmp_path / "old.json", record(schema="tensor-core-course/results/0")))
    assert "results/0" in msg and hr.SCHEMA in msg


@pytest.mark.parametrize("key", list(hr.REQUIRED_META))
def test_missing_meta_key(tmp_path, key):
    d = record()
    del d[key]
    msg = assert_results_error(write(tmp_path / "m.json", d))
    assert key in msg


@pytest.mark.parametrize("key", list(hr.REQUIRED_ROW_KEYS))
def test_missing_row_key(tmp_path, key):
    r2 = row()
    del r2[key]
    msg = assert_results_error(write(tmp_path / "r.json", record(rows=[row(), r2])))
    assert "record 1" in msg and key in msg


@pytest.mark.parametrize("records", [[], {}, None])
def test_empty_records(tmp_path, records):
    d = record()
    d["records"] = records
    msg = assert_results_error(write(tmp_path / "e.json", d))
    assert "no records" in msg


def test_load_latest_picks_newest_and_filters_by_gpu(tmp_path):
    write(tmp_path / "a.json", record(gpu="NVIDIA H200", date="2025-05-01T00:00:00"))
    write(tmp_path / "b.json", record(gpu="NVIDIA H200", date="2025-07-01T00:00:00"))
    write(tmp_path / "c.json", record(gpu="NVIDIA A100-SXM4-80GB", date="2025-06-01T00:00:00"))
    write(tmp_path / "ref.json", record(gpu="NVIDIA H200", date="2030-01-01", kind="published"))
    latest = hr.load_latest(tmp_path)
    assert latest.path.name == "b.json"
    a100 = hr.load_latest(tmp_path, gpu="a100")
    assert a100.path.name == "c.json"
    h200 = hr.load_latest(tmp_path, gpu="H200")
    assert h200.path.name == "b.json"
    with pytest.raises(ResultsError) as ei:
        hr.load_latest(tmp_path, gpu="T4")
    assert "'T4'" in str(ei.value) and "Fix:" in str(ei.value)


def test_load_latest_empty_directory(tmp_path):
    with pytest.raises(ResultsError) as ei:
        hr.load_latest(tmp_path)
    assert "make record" in str(ei.value)


def test_load_latest_reports_malformed_file(tmp_path):
    write(tmp_path / "a.json", record())
    write(tmp_path / "b.json", "not json")
    with pytest.raises(ResultsError):
        hr.load_latest(tmp_path)


def test_series_sorted_by_size_and_square_only(tmp_path):
    rows = [row(size=4096, tflops=400.0), row(size=256, tflops=5.0), row(size=1024, tflops=100.0),
            row(size=512, tflops=30.0, k=1024),                                        # not square
            row(kernel="cublas_fp16", size=128, tflops=1.0)]
    r = hr.load_record(write(tmp_path / "s.json", record(rows=rows)))
    sizes, vals = r.series("wmma_mixed_gemm_kernel")
    assert sizes == [256, 1024, 4096]
    assert vals == [5.0, 100.0, 400.0]
    sizes, _ = r.series("wmma_mixed_gemm_kernel", square=False)
    assert sizes == [256, 512, 1024, 4096]
    sizes, ms = r.series("wmma_mixed_gemm_kernel", y="median_ms")
    assert ms == [x["median_ms"] for x in sorted(rows[:3], key=lambda x: x["m"])]
    assert r.series("cublas_fp16") == ([128], [1.0])


def test_value_and_missing_size(tmp_path):
    r = hr.load_record(write(tmp_path / "v.json", record(rows=[row(size=1024, tflops=123.0)])))
    assert r.value("wmma_mixed_gemm_kernel", 1024) == 123.0
    assert r.value("wmma_mixed_gemm_kernel", 1024, y="rel_err") == 1e-4
    with pytest.raises(ResultsError) as ei:
        r.value("wmma_mixed_gemm_kernel", 2048)
    assert "2048" in str(ei.value) and "Fix:" in str(ei.value)
    with pytest.raises(ResultsError):
        r.value("no_such_kernel", 1024)


def test_select(tmp_path):
    rows = [row(size=256), row(size=512), row(kernel="cublas_fp16", size=256)]
    r = hr.load_record(write(tmp_path / "x.json", record(rows=rows)))
    assert len(r.select(m=256)) == 2
    assert r.select(kernel="cublas_fp16", m=256) == [rows[2]]
    assert r.select(kernel="cublas_fp16", m=512) == []


# --------------------------------------------------------------------------- committed files
_COMMITTED = hr.list_records(ROOT / "results") + sorted((ROOT / "results" / "reference").glob("*.json"))


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=str(p.relative_to(ROOT))) for p in _COMMITTED]
    or [pytest.param(None, marks=pytest.mark.skip(reason="no committed results/*.json yet"), id="none")])
def test_committed_results_load(path):
    r = hr.load_record(path)
    assert r.meta["kind"] in ("gpu-record", "published")
    assert r.gpu_name
    assert r.gpu_name in r.label
    if r.meta["kind"] == "gpu-record":
        assert len(r.date) == 10 and r.date[4] == "-"
    else:
        assert path.parent.name == "reference"      # published figures live in results/reference/


# --------------------------------------------------------------------------- writing
def test_write_json_and_what_counts_as_a_record(tmp_path):
    meta = json.loads((ROOT / "results" / "nvidia-h200.json").read_text())
    path = hr.write_json(meta, "nvidia-h200", tmp_path / "out")
    assert path == tmp_path / "out" / "nvidia-h200.json" and path.read_text().endswith("}\n")
    assert hr.load_record(path).meta == meta
    hr.write_json({"kind": "ncu-counters", "kernels": []}, "ncu-nvidia-h200", tmp_path / "out")
    assert hr.list_records(tmp_path / "out") == [path]          # Nsight Compute counters are not a record
    assert hr.load_latest(tmp_path / "out").path == path
