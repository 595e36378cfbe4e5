"""helpers.compile: CUDA header discovery with fake directory trees, and the compute-capability gate."""
from __future__ import annotations

from pathlib import Path

import pytest

import helpers
import helpers.compile as hc
import helpers.device
from helpers import ArchitectureError, HeaderNotFoundError, NoGPUError

ALL = ("mma.h", "crt/mma.h", "cuda_fp16.h", "cuda_bf16.h")


def touch(base: Path, *names: str) -> Path:
    for n in names:
        p = base / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("// fake header\n")
    return base


def no_nvcc(name):
    return None


@pytest.fixture
def only_under_tmp(monkeypatch, tmp_path):
    """Keep only candidates under tmp_path, so the machine's real toolkit cannot answer."""
    real = hc.candidate_include_dirs

    def filtered(*a, **kw):
        return [(p, why) for p, why in real(*a, **kw) if str(p).startswith(str(tmp_path))]

    monkeypatch.setattr(hc, "candidate_include_dirs", filtered)


def test_cuda_path_toolkit_is_found_first(tmp_path):
    inc = touch(tmp_path / "toolkit" / "include", *ALL)
    site = tmp_path / "site"
    touch(site / "nvidia" / "cuda_runtime" / "include", *ALL)   # also complete, but later in the order
    got = hc.find_cuda_include_dirs(env={"CUDA_PATH": str(tmp_path / "toolkit")}, which=no_nvcc,
                                    site_dirs=[str(site)])
    assert got == [inc]


def test_cuda_home_used_when_cuda_path_unset(tmp_path):
    inc = touch(tmp_path / "home" / "include", *ALL)
    got = hc.find_cuda_include_dirs(env={"CUDA_HOME": str(tmp_path / "home")}, which=no_nvcc, site_dirs=[])
    assert got == [inc]


def test_cuda_path_before_cuda_home(tmp_path):
    a = touch(tmp_path / "a" / "include", *ALL)
    touch(tmp_path / "b" / "include", *ALL)
    got = hc.find_cuda_include_dirs(env={"CUDA_PATH": str(tmp_path / "a"), "CUDA_HOME": str(tmp_path / "b")},
                                    which=no_nvcc, site_dirs=[])
    assert got == [a]


def test_headers_split_over_two_pip_wheels(tmp_path, only_under_tmp):
    site = tmp_path / "site"
    rt = touch(site / "nvidia" / "cuda_runtime" / "include", "mma.h", "cuda_fp16.h", "cuda_bf16.h")
    nvcc = touch(site / "nvidia" / "cuda_nvcc" / "include", "crt/mma.h")
    got = hc.find_cuda_include_dirs(env={}, which=no_nvcc, site_dirs=[str(site)])
    assert set(got) == {rt, nvcc}
    assert len(got) == 2


def test_split_wheels_with_fake_header_names_machine_independent(tmp_path):
    # Same layout, but with header names no real toolkit has: no filtering needed.
    req = ("course_fake_mma_xyz.h", "crt/course_fake_mma_xyz.h", "course_fake_fp16_xyz.h")
    site = tmp_path / "site"
    rt = touch(site / "nvidia" / "cuda_runtime" / "include", req[0], req[2])
    nv = touch(site / "nvidia" / "cuda_nvcc" / "include", req[1])
    got = hc.find_cuda_include_dirs(env={}, which=no_nvcc, site_dirs=[str(site)], required=req)
    assert got == [rt, nv]   # in the order of the required headers that first needed them


def test_nothing_found_raises_with_fix(tmp_path, only_under_tmp):
    site = tmp_path / "site"
    touch(site / "nvidia" / "cuda_runtime" / "include", "mma.h", "cuda_fp16.h", "cuda_bf16.h")  # no crt/
    with pytest.raises(HeaderNotFoundError) as ei:
        hc.find_cuda_include_dirs(env={}, which=no_nvcc, site_dirs=[str(site)])
    msg = str(ei.value)
    assert "crt/mma.h" in msg
    assert "Fix:" in msg
    assert "pip install" in msg
    # the headers that were found are not reported missing
    missing_line = msg.splitlines()[0]
    assert "cuda_fp16.h" not in missing_line
    # the searched places are listed
    assert str(site / "nvidia" / "cuda_runtime" / "include") in msg


def test_fake_required_header_not_found_anywhere(tmp_path):
    with pytest.raises(HeaderNotFoundError) as ei:
        hc.find_cuda_include_dirs(env={"CUDA_PATH": str(tmp_path / "nothing")}, which=no_nvcc,
                                  site_dirs=[str(tmp_path)],
                                  required=("course_fake_header_xyz.h", "crt/course_fake_header_xyz.h"))
    msg = str(ei.value)
    assert "course_fake_header_xyz.h" in msg and "crt/course_fake_header_xyz.h" in msg
    assert "Fix:" in msg and "pip install" in msg
    assert str(tmp_path / "nothing" / "include") in msg   # searched $CUDA_PATH/include
    assert isinstance(ei.value, hc.HeaderNotFoundError)


def test_nvcc_location_makes_sibling_include_a_candidate(tmp_path):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("")
    cands = hc.candidate_include_dirs(env={}, which=lambda name: str(nvcc) if name == "nvcc" else None,
                                      site_dirs=[])
    assert (tmp_path / "include", "next to nvcc") in cands
    assert Path("/usr/local/cuda/include") in [p for p, _ in cands]   # always a candidate
    # and it is searched before /usr/local/cuda
    paths = [p for p, _ in cands]
    assert paths.index(tmp_path / "include") < paths.index(Path("/usr/local/cuda/include"))


def test_nvcc_sibling_include_is_used(tmp_path, only_under_tmp):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("")
    inc = touch(tmp_path / "include", *ALL)
    got = hc.find_cuda_include_dirs(env={}, which=lambda name: str(nvcc), site_dirs=[])
    assert got == [inc]


def test_nvcc_symlink_also_gives_target_toolkit(tmp_path):
    real = tmp_path / "cuda-12.9" / "bin" / "nvcc"
    real.parent.mkdir(parents=True)
    real.write_text("")
    link = tmp_path / "usrbin" / "nvcc"
    link.parent.mkdir()
    link.symlink_to(real)
    paths = [p for p, _ in hc.candidate_include_dirs(env={}, which=lambda n: str(link), site_dirs=[])]
    assert tmp_path / "usrbin" / ".." / "include" not in paths   # parent.parent, not a '..' path
    assert tmp_path / "include" in paths
    assert tmp_path / "cuda-12.9" / "include" in paths


def test_candidate_order_env_then_system_then_wheels(tmp_path):
    site = tmp_path / "site"
    for pkg in ("cuda_runtime", "cu13", "cuda_nvcc"):
        (site / "nvidia" / pkg / "include").mkdir(parents=True)
    (site / "nvidia" / "not_a_pkg").mkdir()           # no include/: not a candidate
    cands = hc.candidate_include_dirs(env={"CUDA_PATH": str(tmp_path / "tk")}, which=no_nvcc,
                                      site_dirs=[str(site)])
    paths = [p for p, _ in cands]
    assert paths[0] == tmp_path / "tk" / "include"
    assert cands[0][1] == "$CUDA_PATH"
    wheel = [p for p, why in cands if why == "pip wheel"]
    assert wheel == sorted(site / "nvidia" / pkg / "include" for pkg in ("cuda_runtime", "cu13", "cuda_nvcc"))
    assert paths.index(Path("/usr/local/cuda/include")) < paths.index(wheel[0])
    assert len(paths) == len(set(paths))               # no duplicates


def test_duplicate_candidates_removed(tmp_path):
    cands = hc.candidate_include_dirs(env={"CUDA_PATH": str(tmp_path), "CUDA_HOME": str(tmp_path)},
                                      which=no_nvcc, site_dirs=[])
    paths = [p for p, _ in cands]
    assert paths.count(tmp_path / "include") == 1
    assert cands[0] == (tmp_path / "include", "$CUDA_PATH")


def test_empty_env_values_are_ignored(tmp_path):
    cands = hc.candidate_include_dirs(env={"CUDA_PATH": ""}, which=no_nvcc, site_dirs=[])
    assert Path("include") not in [p for p, _ in cands]
    assert all(why != "$CUDA_PATH" for _, why in cands)


# --------------------------------------------------------------------------- compute-capability gate
def test_get_kernel_on_cpu_raises():
    with pytest.raises(NoGPUError) as ei:
        hc.get_kernel("wmma.cu", "wmma_gemm_naive", (7, 0))
    assert "wmma_gemm_naive" in str(ei.value)


def _fake_gpu(cc):
    return helpers.device.GPUInfo(name="Fake GPU", cc=cc, sms=1, l2_bytes=1 << 20, mem_bytes=1 << 30,
                                  mem_bw_gbs=None, driver="12.0", runtime="12.0", nvrtc="12.0",
                                  cupy="0", peaks=None)


def test_architecture_error_for_old_gpu(monkeypatch):
    fake = _fake_gpu((6, 1))
    monkeypatch.setattr(helpers.device, "require_gpu", lambda what: fake)
    monkeypatch.setattr(helpers.device, "backend",
                        lambda: helpers.device.Backend("gpu", "fake", fake))
    with pytest.raises(ArchitectureError) as ei:
        hc.get_kernel("wmma.cu", "wmma_gemm_naive", (7, 0))
    msg = str(ei.value)
    assert "7.0" in msg and "6.1" in msg and "sm_70" in msg and "Fix:" in msg
