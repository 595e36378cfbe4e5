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


# --- arch_cubin's cache on disk: one NVRTC compile per build, shared by the child processes -----------------------


@pytest.fixture
def fake_nvrtc(monkeypatch, tmp_path):
    """arch_cubin with NVRTC replaced by a counter (no CUDA library needed), a kernels/ folder of its own
    (one .cu, one header) and the cache in tmp_path/cache; returns the list of compiles made."""
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    (kdir / "k.cu").write_text('#include "h.cuh"\nextern "C" __global__ void k() {}\n')
    (kdir / "h.cuh").write_text("// header v1\n")
    compiles = []

    def compile_(filename, arch, src, options, learner):
        compiles.append((filename, arch, src, options))
        return f"cubin of {filename} {arch} {options} #{len(compiles)}".encode()

    monkeypatch.setattr(hc, "KERNEL_DIR", kdir)
    monkeypatch.setattr(hc, "_nvrtc_cubin", compile_)
    monkeypatch.setattr(hc, "_nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(hc, "_ARCH_CUBINS", {})
    monkeypatch.setenv("COURSE_CUBIN_CACHE", str(tmp_path / "cache"))
    return compiles


def new_process():
    """What a fresh child process has: no cubin of this process yet."""
    hc._ARCH_CUBINS.clear()


def test_a_second_process_loads_the_cubin_instead_of_compiling(fake_nvrtc, tmp_path):
    first = hc.arch_cubin("k.cu", "sm_90a")
    new_process()
    second = hc.arch_cubin("k.cu", "sm_90a")
    assert len(fake_nvrtc) == 1 and first == second
    assert Path(second).parent == tmp_path / "cache"
    assert Path(second).read_bytes() == b"cubin of k.cu sm_90a () #1"


def test_every_input_of_a_compile_makes_a_new_cubin(fake_nvrtc, tmp_path, monkeypatch):
    base = hc.arch_cubin("k.cu", "sm_90a")
    paths = {base}
    new_process()
    paths.add(hc.arch_cubin("k.cu", "sm_90a", options=("-DSTAGES=3",)))          # a knob
    paths.add(hc.arch_cubin("k.cu", "sm_90a", source="// edited\n"))            # a learner's copy
    (tmp_path / "kernels" / "k.cu").write_text("// the file edited on disk\n")
    new_process()
    paths.add(hc.arch_cubin("k.cu", "sm_90a"))                                   # the file itself
    (tmp_path / "kernels" / "h.cuh").write_text("// header v2\n")
    new_process()
    paths.add(hc.arch_cubin("k.cu", "sm_90a"))                                   # a header it includes
    monkeypatch.setattr(hc, "_nvrtc_version", lambda: (13, 1))
    new_process()
    paths.add(hc.arch_cubin("k.cu", "sm_90a"))                                   # another NVRTC
    assert len(fake_nvrtc) == 6 and len(paths) == 6
    assert [c[3] for c in fake_nvrtc[:2]] == [(), ("-DSTAGES=3",)]


def test_the_cache_can_be_turned_off(fake_nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CUBIN_CACHE", "off")
    assert hc.cubin_cache_dir() is None
    a = hc.arch_cubin("k.cu", "sm_90a")
    new_process()
    b = hc.arch_cubin("k.cu", "sm_90a")
    assert len(fake_nvrtc) == 2 and a != b and not (tmp_path / "cache").exists()


def test_a_folder_that_cannot_be_written_only_costs_the_reuse(fake_nvrtc, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("COURSE_CUBIN_CACHE", str(blocker / "cache"))
    path = hc.arch_cubin("k.cu", "sm_90a")
    assert Path(path).read_bytes() == b"cubin of k.cu sm_90a () #1"
    assert hc.arch_cubin("k.cu", "sm_90a") == path and len(fake_nvrtc) == 1     # still once per process


def test_a_failed_compile_leaves_nothing_to_reuse(fake_nvrtc, tmp_path, monkeypatch):
    def broken(*args):
        raise hc.KernelCompileError("k.cu: error: expected ';'", "fix the source")

    monkeypatch.setattr(hc, "_nvrtc_cubin", broken)
    with pytest.raises(hc.KernelCompileError):
        hc.arch_cubin("k.cu", "sm_90a", source="int x\n")
    assert not (tmp_path / "cache").exists()
    assert hc._ARCH_CUBINS == {}


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("COURSE_CUBIN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hc.cubin_cache_dir() == tmp_path / "tensor-core-course" / "cubins"


def test_the_folder_keeps_only_the_most_recently_used(fake_nvrtc, tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(hc, "CUBIN_CACHE_FILES", 3)
    paths = []
    for i in range(3):
        paths.append(Path(hc.arch_cubin("k.cu", "sm_90a", options=(f"-DSTAGES={i}",))))
        os.utime(paths[-1], (1000 + i, 1000 + i))            # made in this order, a second apart
    new_process()
    assert hc.arch_cubin("k.cu", "sm_90a", options=("-DSTAGES=0",)) == str(paths[0])   # a hit: now the newest
    hc.arch_cubin("k.cu", "sm_90a", options=("-DSTAGES=3",))                         # a fourth: one must go
    kept = set((tmp_path / "cache").glob("*.cubin"))
    assert len(kept) == 3 and paths[1] not in kept and {paths[0], paths[2]} <= kept
    assert len(fake_nvrtc) == 4
