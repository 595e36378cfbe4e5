"""helpers.device: the peak-rate table, GPU name matching, choosing the backend, the CPU-backend summary."""
from __future__ import annotations

import io

import pytest

import helpers
import helpers.device
from helpers import CourseError, NoGPUError
from helpers.device import PEAKS_TABLE, Peaks, peaks_for


def test_h200():
    p = peaks_for("NVIDIA H200")
    assert p is not None and p.fp16 == 989.4
    assert p.bf16 == p.fp16 and p.mem_gbs == 4800
    # the H200 has the H100 SXM's compute and more bandwidth
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    assert p.fp16 == h100.fp16 and p.fp32 == h100.fp32 and p.mem_gbs > h100.mem_gbs


def test_geforce_fp16_accumulate_is_twice_fp32_accumulate():
    for name in ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090"):
        p = peaks_for(name)
        assert p is not None and "GeForce" in p.gpu
        assert p.fp16_acc16 == pytest.approx(2 * p.fp16, rel=1e-3)    # 330.3 vs 2 x 165.2 (rounded figures)


def test_datacenter_fp16_accumulate_not_faster():
    for keys, p in PEAKS_TABLE:
        if "GeForce" not in p.gpu and p.fp16 is not None:
            assert p.fp16_acc16 == p.fp16, p.gpu


def test_tesla_t4():
    p = peaks_for("Tesla T4")
    assert p is not None and p.gpu == "NVIDIA T4"
    assert p.tf32 is None and p.bf16 is None           # Turing: no TF32/BF16 tensor cores


def test_a100_variants_by_memory():
    sxm80 = peaks_for("NVIDIA A100-SXM4-80GB")
    pcie40 = peaks_for("NVIDIA A100-PCIE-40GB")
    pcie80 = peaks_for("NVIDIA A100 80GB PCIe")
    assert sxm80.mem_gbs == 2039
    assert pcie40.mem_gbs == 1555
    assert pcie80.mem_gbs == 1935
    assert sxm80.fp16 == pcie40.fp16 == 312.0


def test_h100_pcie_vs_sxm():
    pcie = peaks_for("NVIDIA H100 PCIe")
    sxm = peaks_for("NVIDIA H100 80GB HBM3")
    assert pcie.gpu == "NVIDIA H100 PCIe" and sxm.gpu == "NVIDIA H100 SXM5"
    assert pcie.fp16 < sxm.fp16 and pcie.mem_gbs < sxm.mem_gbs


def test_v100_variants():
    assert peaks_for("Tesla V100-PCIE-16GB").gpu == "NVIDIA V100 PCIe"
    assert peaks_for("Tesla V100-SXM2-16GB").gpu == "NVIDIA V100 SXM2"


def test_l4_vs_l40s():
    assert peaks_for("NVIDIA L4").gpu == "NVIDIA L4"
    assert peaks_for("NVIDIA L40S").gpu == "NVIDIA L40S"


@pytest.mark.parametrize("name", ["NVIDIA GeForce GTX 1080", "Quadro P1000", "", "AMD Instinct MI300X"])
def test_unknown_name(name):
    assert peaks_for(name) is None


def test_l40_is_not_an_l4():
    p = peaks_for("NVIDIA L40")
    assert p is None or p.gpu != "NVIDIA L4"


def test_t400_is_not_a_t4():
    p = peaks_for("NVIDIA T400 4GB")
    assert p is None or p.gpu != "NVIDIA T4"


def test_case_insensitive():
    assert peaks_for("nvidia h100 pcie").gpu == "NVIDIA H100 PCIe"


def test_table_consistency():
    assert PEAKS_TABLE
    for keys, p in PEAKS_TABLE:
        assert isinstance(p, Peaks)
        assert p.fp32 > 0 and p.mem_gbs > 0 and p.source
        if p.fp16 is not None:
            assert p.fp32 < p.fp16, p.gpu
        if p.tf32 is not None:
            assert p.fp32 <= p.tf32 <= p.fp16, p.gpu
        if p.bf16 is not None:
            assert p.bf16 == p.fp16, p.gpu
        # every entry is reachable: its own keys find it (no earlier entry shadows it)
        assert peaks_for(" ".join(keys)) is p, keys


def test_summary_on_cpu():
    buf = io.StringIO()
    rows = helpers.summary(file=buf)
    out = buf.getvalue()
    assert isinstance(rows, dict)
    assert "CPU" in out
    assert rows["backend"].startswith("CPU")
    assert "GPU" not in rows
    assert "numpy" in rows["host"]
    # one printed row each; a long one goes on in indented lines, none over 100 characters
    assert len([ln for ln in out.splitlines() if not ln.startswith(" ")]) == len(rows)
    assert all(len(ln) <= 100 for ln in out.splitlines())
    for k in rows:
        assert k in out


def test_backend_on_cpu():
    b = helpers.backend()
    assert b.name == "cpu" and b.reason == "COURSE_DEVICE=cpu"


# --------------------------------------------------------------------------- device selection
def test_course_device_gpu_without_gpu_raises(set_device, monkeypatch):
    def no_gpu():  # what CuPy says on a machine without a usable driver
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    monkeypatch.setattr(helpers.device, "_probe_gpu", no_gpu)   # same result with or without a GPU
    monkeypatch.setattr(helpers.device, "_driver_cuda_version", lambda: None)   # and no driver loads
    set_device("gpu")
    with pytest.raises(NoGPUError) as ei:
        helpers.device.backend()
    msg = str(ei.value)
    assert "COURSE_DEVICE" in msg and "Fix:" in msg and "no NVIDIA driver was found" in msg


def test_summary_without_driver_is_one_sentence(set_device, monkeypatch, capsys):
    # the CUDA runtime is installed but no driver loads: CuPy reports an "insufficient driver"
    def no_gpu():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    monkeypatch.setattr(helpers.device, "_probe_gpu", no_gpu)
    monkeypatch.setattr(helpers.device, "_driver_cuda_version", lambda: None)
    set_device("auto")
    rows = helpers.device.summary()
    line = rows["backend"]
    assert line == ("CPU (no usable CUDA GPU (no NVIDIA driver was found on this machine: "
                    "the CUDA library libcuda does not load))")
    assert "insufficient" not in line                # not "no driver" and "driver too old" at once
    assert line.count("(") == 2                      # no third parenthesis quoting CUDA's error
    assert "backend" in capsys.readouterr().out


def test_course_device_banana_raises_course_error(set_device):
    set_device("banana")
    with pytest.raises(CourseError) as ei:
        helpers.device.backend()
    assert "banana" in str(ei.value) and "Fix:" in str(ei.value)
    assert not isinstance(ei.value, NoGPUError)


def test_course_device_cpu_is_cpu(set_device):
    set_device("CPU ")            # case and whitespace are tolerated
    b = helpers.device.backend()
    assert b.name == "cpu" and not b.is_gpu and b.gpu is None
    assert b.label == "CPU emulation"


def test_env_is_restored_after_monkeypatch():
    # runs after the tests above: the autouse fixture put the CPU backend back
    assert helpers.device.backend().name == "cpu"


def test_require_gpu_on_cpu():
    with pytest.raises(NoGPUError) as ei:
        helpers.device.require_gpu("x")
    assert str(ei.value).startswith("x needs a CUDA GPU")
    assert "Fix:" in str(ei.value)


def test_gpuinfo_slug_and_sm():
    g = helpers.device.GPUInfo("Fake GPU", (9, 0), 1, 1, 1, None, "", "", "", "", None)
    assert g.sm == "sm_90"
    g2 = helpers.device.GPUInfo("NVIDIA GeForce RTX 4090", (8, 9), 1, 1, 1, None, "", "", "", "", None)
    assert g2.slug == "nvidia-geforce-rtx-4090"


def test_sweep_peaks_are_of_the_gpu_the_rows_come_from(monkeypatch, capsys):
    """helpers.device.sweep_peaks (lessons 01-02's peak lines and roofline): recorded rows get the record's GPU's
    peaks; live rows this GPU's, from the table; a live GPU the table lacks gets no rates (None: no line is drawn,
    never the H200's) and the driver's bandwidth, with a line that says how to add it. The plots take None."""
    from helpers.experiments import Outcome

    D = helpers.device
    rec = helpers.results.load_latest()
    assert D.sweep_peaks(Outcome([], False, "recorded"), rec) == rec.meta["gpu"]["peaks"]
    mk = lambda name: D.Backend("gpu", "found", D.GPUInfo(name, (8, 9), 58, 1, 1, 504.0, "", "", "", "",  # noqa: E731
                                                          D.peaks_for(name)))
    monkeypatch.setattr(D, "backend", lambda: mk("NVIDIA GeForce RTX 4090"))
    assert D.sweep_peaks(Outcome([], True, "live"), rec)["fp32"] == D.peaks_for("NVIDIA GeForce RTX 4090").fp32 != \
        rec.meta["gpu"]["peaks"]["fp32"]
    monkeypatch.setattr(D, "backend", lambda: mk("NVIDIA GeForce RTX 4070"))
    p = D.sweep_peaks(Outcome([], True, "live"), rec)
    assert {k: p[k] for k in ("fp32", "tf32", "fp16", "bf16")} == dict.fromkeys(("fp32", "tf32", "fp16", "bf16"))
    assert p["mem_gbs"] == 504.0 and "PEAKS_TABLE" in capsys.readouterr().out
    helpers.plots.roofline({"k": (2.0, 10.0)}, peak_tflops=p["fp32"], mem_gbs=p["mem_gbs"])
    helpers.plots.roofline({"k": (2.0, 10.0)}, peak_tflops=None, mem_gbs=None)
    helpers.plots.tflops_vs_size({"k": ([256, 512], [1.0, 2.0])}, peaks={"FP32 peak": p["fp32"]})
    from helpers.experiments.baseline import implied_clock_hz

    assert implied_clock_hz(p["fp32"], 58) is None


def test_peak_clock_and_ceiling_are_inverse():
    from helpers import device
    per = device.HOPPER_TC_FLOP_PER_CLK_SM["fp16"]
    mhz = device.peak_clock_mhz(989.4, 132, per)
    assert 1829 < mhz < 1831                                    # the H100 SXM5 / H200 datasheet's 989.4 TFLOP/s
    assert abs(device.peak_at_clock(mhz, 132, per) - 989.4) < 1e-9
    assert device.peak_at_clock(1980, 132, per) > 989.4         # the clock the record ran at gives more
    assert device.HOPPER_TC_FLOP_PER_CLK_SM["fp8"] == 2 * per
