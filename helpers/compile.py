"""Compile the course's .cu files with NVRTC (through CuPy) and hand out kernels.

WMMA code includes <mma.h>, which includes <crt/mma.h>; CuPy's NVRTC does not always find crt/, so
``find_cuda_include_dirs`` looks for a CUDA include folder that has them. Each file is compiled once per
process and option set; arch-specific code (sm_90a: wgmma) is compiled for exactly its GPU by
``get_arch_kernel``, and its cubins are kept on disk between processes (``arch_cubin``).
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import site
import sys
import tempfile
from pathlib import Path

from . import device
from .errors import (DRIVER_MISMATCH, DRIVER_MISMATCH_FIX, ArchitectureError, DriverMismatchError,
                     HeaderNotFoundError, KernelCompileError, is_driver_mismatch)
from .paths import kernel_dir

KERNEL_DIR = kernel_dir()            # kernels/ of the clone, or of the installed package (helpers.paths)

# The headers the course's kernels include (directly or through mma.h).
REQUIRED_HEADERS = ("mma.h", "crt/mma.h", "cuda_fp16.h", "cuda_bf16.h")

HEADER_FIX = (
    "install CUDA headers that match your CuPy: for CUDA 13, `pip install nvidia-cuda-runtime "
    "nvidia-cuda-crt`; for CUDA 12, `pip install nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12`; "
    "or install the CUDA toolkit and set CUDA_PATH to it (e.g. export CUDA_PATH=/usr/local/cuda)."
)


def _site_dirs() -> list[str]:
    dirs = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some virtualenvs
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs += [p for p in sys.path if p.endswith("site-packages")]
    return list(dict.fromkeys(dirs))


def candidate_include_dirs(env=None, which=shutil.which, site_dirs=None) -> list[tuple[Path, str]]:
    """Where CUDA headers may live, in the order they are tried, each with where it came from."""
    env = os.environ if env is None else env
    site_dirs = _site_dirs() if site_dirs is None else site_dirs
    out: list[tuple[Path, str]] = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            out.append((Path(env[var]) / "include", f"${var}"))
    nvcc = which("nvcc")
    if nvcc:
        for p in {Path(nvcc).parent, Path(os.path.realpath(nvcc)).parent}:
            out.append((p.parent / "include", "next to nvcc"))
    out.append((Path("/usr/local/cuda/include"), "/usr/local/cuda"))
    for d in sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True):
        out.append((Path(d), "/usr/local/cuda-*"))
    for sd in site_dirs:  # pip wheels: nvidia/cu13/include, nvidia/cuda_runtime/include, ...
        for d in sorted(glob.glob(os.path.join(sd, "nvidia", "*", "include"))):
            out.append((Path(d), "pip wheel"))
    first: dict[Path, str] = {}
    for p, why in out:
        first.setdefault(p, why)
    return list(first.items())


def find_cuda_include_dirs(env=None, which=shutil.which, site_dirs=None,
                           required=REQUIRED_HEADERS) -> list[Path]:
    """Include folders that together provide every required header, each from the first candidate that has it
    (CUDA 12's pip wheels split mma.h and crt/mma.h); HeaderNotFoundError names what is missing and where it looked."""
    cands = candidate_include_dirs(env, which, site_dirs)
    chosen: list[Path] = []
    missing = []
    for h in required:
        hit = next((p for p, _ in cands if (p / h).is_file()), None)
        if hit is None:
            missing.append(h)
        elif hit not in chosen:
            chosen.append(hit)
    if missing:
        searched = "\n".join(f"  {p}  ({why})" for p, why in cands) or "  (nowhere: no candidates)"
        raise HeaderNotFoundError(
            f"CUDA headers needed by the kernels were not found: {', '.join(missing)}.\n"
            f"Searched:\n{searched}", HEADER_FIX)
    return chosen


_MODULES: dict = {}

# one diagnostic in an NVRTC log: "<path>(<line>): error: <message>" (also "catastrophic error",
# "warning", and NVRTC's own "<path>(<line>): error #20: ..." forms)
_DIAG = re.compile(r"^(?P<path>[^\n()]*?)\((?P<line>\d+)\): (?P<kind>catastrophic error|error|warning)"
                   r"(?: #[\w-]+)?: (?P<msg>.*)$")


def format_compile_log(log: str, source: str, filename: str, context: int = 2, max_errors: int = 5) -> str:
    """An NVRTC log made readable: each error with the lines of `source` around it (its line marked '>'), under
    `filename`; an error inside an included header is listed without the source."""
    lines = source.split("\n")
    width = len(str(len(lines)))
    out, n_err, n_warn = [], 0, 0
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if not m:
            continue
        kind, msg, path = m["kind"], m["msg"].strip(), m["path"]
        if kind == "warning":
            n_warn += 1
            continue
        n_err += 1
        if n_err > max_errors:
            continue
        ln = int(m["line"])
        header = os.path.basename(path) if path else ""
        own = (not header or header.endswith(".cu") or header == os.path.basename(filename)) and 1 <= ln <= len(lines)
        if own:
            out.append(f"{filename}, line {ln}: {kind}: {msg}")
            for k in range(max(1, ln - context), min(len(lines), ln + context) + 1):
                out.append(f"  {'>' if k == ln else ' '} {k:>{width}} | {lines[k - 1].rstrip()}")
        else:
            out.append(f"{path}, line {ln} (an included header): {kind}: {msg}")
    if not out:                           # a log we could not parse: show it as it is
        return log.strip()
    if n_err > max_errors:
        out.append(f"... and {n_err - max_errors} more errors (fix the first one first: later errors often follow "
                   "from it)")
    if n_warn:
        out.append(f"({n_warn} warning{'s' if n_warn > 1 else ''} not shown)")
    return "\n".join(out)


def load_module(filename: str, options: tuple[str, ...] = (), source: str | None = None):
    """Compile kernels/<filename> (or `source`) once per process; returns a cupy.RawModule."""
    import cupy

    device.require_gpu(f"compiling {filename}")
    if source is None:
        path = KERNEL_DIR / filename
        if not path.is_file():
            raise FileNotFoundError(f"no kernel file {path}")
        source = path.read_text()
    key = (filename, source, tuple(options))
    if key in _MODULES:
        return _MODULES[key]
    # -I kernels/: a course file may include a header next to it (hopper_primitives.cuh)
    opts = ("-std=c++17", f"-I{KERNEL_DIR}") + tuple(f"-I{d}" for d in find_cuda_include_dirs()) + tuple(options)
    mod = cupy.RawModule(code=source, options=opts, name_expressions=None)
    try:
        mod.compile()
    except cupy.cuda.compiler.CompileException as exc:
        raise compile_error(filename, source, str(exc)) from None
    _MODULES[key] = mod
    return mod


def compile_error(filename: str, source: str, log: str) -> KernelCompileError:
    """The KernelCompileError for an NVRTC log: errors with line numbers and the source around them."""
    return KernelCompileError(
        f"NVRTC could not compile {filename}:\n{format_compile_log(log, source, filename)}",
        "read the first error above: the line marked '>' is that line of the CUDA source you passed "
        "(line 1 is the first line of the string); fix it and run the cell again.")


def require_cc(name: str, min_cc: tuple[int, int], gpu) -> None:
    """ArchitectureError, before anything is compiled or allocated, when `gpu` is older than `min_cc`."""
    if tuple(gpu.cc) < tuple(min_cc):
        raise ArchitectureError(
            f"kernel {name} needs compute capability {min_cc[0]}.{min_cc[1]} (sm_{min_cc[0]}{min_cc[1]}) "
            f"or newer; this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}.",
            "run this part on a newer GPU, or set COURSE_DEVICE=cpu to see the CPU emulation and the "
            "recorded results instead.")


def arch_target(cc) -> str:
    """The arch-specific compile target of compute capability cc: 'sm_90a' for 9.0."""
    return f"sm_{cc[0]}{cc[1]}a"


def require_arch(name: str, cc, gpu) -> None:
    """ArchitectureError, before anything is compiled, unless `gpu` is of compute capability `cc` exactly:
    arch-specific code runs on no other GPU, newer ones included."""
    cc = tuple(cc)
    if tuple(gpu.cc) != cc:
        raise ArchitectureError(
            f"kernel {name} is {arch_target(cc)} code, which runs on compute capability {cc[0]}.{cc[1]} only "
            f"({'a Hopper GPU: wgmma exists on no other' if cc == (9, 0) else 'no other GPU'}); "
            f"this GPU, {gpu.name}, is {gpu.cc[0]}.{gpu.cc[1]}.",
            "run this part on a GPU of that compute capability, or set COURSE_DEVICE=cpu to see the CPU "
            "emulation and the recorded results instead.")


def get_kernel(filename: str, name: str, min_cc: tuple[int, int] = (0, 0), options: tuple[str, ...] = (),
               source: str | None = None):
    """The RawKernel `name` from kernels/<filename> (or from `source`, an edited copy of it, whose
    compile errors name `filename`), after checking the GPU is new enough."""
    gpu = device.require_gpu(f"kernel {name}")
    require_cc(name, min_cc, gpu)
    mod = load_module(filename, options) if source is None else load_module(filename, options, source)
    try:
        return mod.get_function(name)
    except Exception as exc:
        if not is_driver_mismatch(f"{type(exc).__name__}: {exc}"):
            raise
        raise DriverMismatchError(
            f"kernel {name} compiled, but the driver cannot load it ({type(exc).__name__}: {exc}; NVRTC {gpu.nvrtc}, "
            f"driver supports CUDA {gpu.driver}). {DRIVER_MISMATCH}.", DRIVER_MISMATCH_FIX) from None


_ARCH_MODULES: dict = {}


def get_arch_kernel(filename: str, name: str, cc: tuple[int, int], check_empty: bool = True,
                    source: str | None = None, options: tuple[str, ...] = ()):
    """The RawKernel `name` from kernels/<filename> (or `source`, an edited copy, with extra NVRTC `options`)
    compiled for the arch-specific target of compute capability `cc` (sm_90a: wgmma, setmaxnreg). CuPy's
    RawModule(code=...) appends its own -arch=sm_90, which cannot assemble them, so NVRTC compiles the file
    here (arch_cubin) and RawModule(path=...) loads it. check_empty: refuse a kernel of fewer than 32
    registers (its arch-specific body was not compiled)."""
    require_arch(name, cc, device.require_gpu(f"kernel {name}"))
    import cupy

    arch = arch_target(cc)
    key = (filename, arch) if source is None and not options else (filename, arch, source, tuple(options))
    if key not in _ARCH_MODULES:
        _ARCH_MODULES[key] = cupy.RawModule(path=arch_cubin(filename, arch, source, options))
    kern = _ARCH_MODULES[key].get_function(name)
    if check_empty and kern.num_regs < 32:
        raise ArchitectureError(f"{name} compiled to an empty kernel: the {arch} code path "
                                f"(__CUDA_ARCH_FEAT_SM{cc[0]}{cc[1]}_ALL) was not selected.",
                                f"compile with -arch={arch} (NVRTC) or "
                                f"-gencode=arch=compute_{cc[0]}{cc[1]}a,code={arch}.")
    return kern


_ARCH_CUBINS: dict = {}


def cubin_cache_dir() -> Path | None:
    """Where arch_cubin keeps cubins between processes: $COURSE_CUBIN_CACHE, else
    $XDG_CACHE_HOME/tensor-core-course/cubins (~/.cache/...); None when COURSE_CUBIN_CACHE is 0, off, no or false."""
    v = os.environ.get("COURSE_CUBIN_CACHE", "").strip()
    if v.lower() in ("0", "off", "no", "false"):
        return None
    if v:
        return Path(v).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tensor-core-course" / "cubins"


def cubin_key(filename: str, arch: str, src: str, options: tuple[str, ...], nvrtc_version) -> str:
    """The cache name of one compilation: a hash of all its cubin depends on (the file's name and text, every
    header in kernels/, the target, the options and the NVRTC version)."""
    h = hashlib.sha256()
    for part in (filename, arch, repr(tuple(options)), repr(nvrtc_version), src):
        h.update(part.encode() + b"\0")
    for header in sorted(KERNEL_DIR.glob("*.cuh")):
        h.update(header.name.encode() + b"\0" + header.read_bytes() + b"\0")
    return f"{filename.split('.')[0]}-{arch}-{h.hexdigest()[:32]}.cubin"


# The newest kept: a kernels/ file builds to 20-100 KB, a templated file of 28 kernels to 450 KB (90 MB at most)
CUBIN_CACHE_FILES = 200


def _prune(folder: Path, keep: int | None = None) -> None:
    """Delete all but the `keep` (CUBIN_CACHE_FILES) most recently used cubins in `folder`."""
    keep = CUBIN_CACHE_FILES if keep is None else keep

    def used(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:                        # pruned meanwhile by another process
            return 0.0

    for old in sorted(folder.glob("*.cubin"), key=used, reverse=True)[keep:]:
        try:
            old.unlink(missing_ok=True)
        except OSError:
            pass


def _nvrtc_version():
    from cupy_backends.cuda.libs import nvrtc

    return nvrtc.getVersion()


def _nvrtc_cubin(filename: str, arch: str, src: str, options: tuple[str, ...], learner: bool) -> bytes:
    """NVRTC's cubin of `src` for `arch` (the readable log for a learner's copy or knobs)."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(src, filename, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, ["-std=c++17", f"-arch={arch}", f"-I{KERNEL_DIR}", *options])
        except Exception as exc:
            if learner:                    # a learner's copy or knobs: the readable log
                raise compile_error(filename, src, nvrtc.getProgramLog(prog)) from None
            raise KernelCompileError(f"NVRTC could not compile {filename} for {arch}: {exc}\n"
                                     f"{nvrtc.getProgramLog(prog)}",
                                     "read the first error in the log (file:line) and fix the source.") from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _write_new(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary file beside it: a reader sees the whole file or none."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def arch_cubin(filename: str, arch: str, source: str | None = None, options: tuple[str, ...] = ()) -> str:
    """The path of kernels/<filename> (or `source`) compiled by NVRTC for `arch` ('sm_90a') with extra
    `options`; nothing is loaded into the GPU, so a sweep may compile its variants in threads first.
    Kept per process and on disk (cubin_cache_dir, keyed by cubin_key): lesson 6 checks each rung in a child
    process, and compiling a rung's file takes seconds. A folder that cannot be written only costs
    the reuse."""
    key = (filename, arch, source, tuple(options))
    if key in _ARCH_CUBINS:
        return _ARCH_CUBINS[key]
    src = (KERNEL_DIR / filename).read_text() if source is None else source
    learner = source is not None or bool(options)
    folder = cubin_cache_dir()
    cached = folder / cubin_key(filename, arch, src, tuple(options), _nvrtc_version()) if folder else None
    if cached is not None and cached.is_file():
        try:
            os.utime(cached)                   # recently used: the last to be pruned
        except OSError:
            pass
        _ARCH_CUBINS[key] = str(cached)
        return str(cached)
    cubin = _nvrtc_cubin(filename, arch, src, tuple(options), learner)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            _write_new(cached, cubin)
            _prune(cached.parent)
            _ARCH_CUBINS[key] = str(cached)
            return str(cached)
        except OSError:
            pass                           # a read-only home: this process's own copy below
    fd, path = tempfile.mkstemp(suffix=".cubin", prefix=filename.split(".")[0] + "_")
    with os.fdopen(fd, "wb") as f:
        f.write(cubin)
    _ARCH_CUBINS[key] = path
    return path
