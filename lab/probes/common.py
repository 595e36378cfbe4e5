"""What the device probes in lab/probes/ share: the check for a Hopper GPU before any GPU work (one line and exit
status 2 elsewhere), their command line, and timings in alternating rounds."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# Rungs 8-16 are one kernel file each in kernels/ since 2026-12-07, and so are rungs 17-26, 29 and 30 (later the same
# day), without the build switches below; the single templated file they were all built from (rungs 8-31 on ws_gemm,
# with the switches) is kept whole here, so that a probe that sets a switch on any of rungs 8-31 still builds what it
# measured. Rungs 27, 28 and 31 are always built from it (lab/labkit/rungs.py, RESEARCH_FILE).
RESEARCH_FILE = ROOT / "lab" / "kernels" / "hopper_sm90a_research.cu"
RESEARCH_SWITCHES = ("DESC_ADD", "TILE_ORDER", "WG_UNIFORM")


def research_source(rung: int, options: tuple = ()) -> str | None:
    """The frozen ws_gemm file's text where rung `rung` (8-31) is built with one of RESEARCH_SWITCHES among its NVRTC
    `options` (helpers.launch.launcher's source=), else None: the course's own file."""
    switched = any(o.startswith("-D") and o[2:].split("=")[0] in RESEARCH_SWITCHES for o in options)
    return RESEARCH_FILE.read_text() if switched and 8 <= rung <= 31 else None


# Lesson 7's FP8 kernels are clean files in kernels/ since 2026-12-07 (the main path's fp8_wgmma_sm90a.cu and
# fp8_promote_sm90a.cu, the same day the appendix's fp8_wgmma_store_sm90a.cu, fp8_promote_2acc_lean_sm90a.cu and
# fp8_block_scaled_sm90a.cu), without the build switches below; the file they were built from until then (every FP8
# kernel on one template, with the switches) is kept whole here, so that a probe that sets a switch on one of them
# still builds what it measured. The kernels that lost (labkit.fp8.LOST_KERNELS) are built from it always.
FP8_RESEARCH_FILE = ROOT / "lab" / "kernels" / "fp8_sm90a_research.cu"
FP8_RESEARCH_SWITCHES = ("F8_DESC_ADD", "F8_UNIFORM", "F8_FLOW", "F8_STORE_SPREAD", "F8_EXTRA_L2", "F8_PAIR")


def fp8_research_source(name: str, options: tuple = ()) -> str | None:
    """The frozen FP8 file's text where wgmma kernel `name` is built with one of FP8_RESEARCH_SWITCHES among its NVRTC
    `options` (helpers.fp8_gemm.launcher's source=), else None: the kernel's own file (the frozen one for the kernels
    that lost)."""
    from helpers.fp8_gemm import FP8_KERNELS

    spec = FP8_KERNELS.get(name)
    switched = any(o.startswith("-D") and o[2:].split("=")[0] in FP8_RESEARCH_SWITCHES for o in options)
    return FP8_RESEARCH_FILE.read_text() if switched and spec and spec.wgmma else None


def hopper_missing() -> str | None:
    """None on a Hopper GPU (the GPU backend, compute capability 9.0), else one line saying why not."""
    from helpers.device import backend

    b = backend()
    if b.is_gpu and tuple(b.gpu.cc) == (9, 0):
        return None
    why = b.reason if not b.is_gpu else f"{b.gpu.name} is sm_{b.gpu.cc[0]}{b.gpu.cc[1]}"
    return f"no Hopper GPU here: {why}; this probe needs a Hopper GPU (sm_90, COURSE_DEVICE=gpu)"


def hopper_here() -> bool:
    """True on a Hopper GPU; elsewhere one line on stderr saying why not (hopper_missing), and False: the probe then
    returns 2."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import lab.labkit.rungs  # noqa: F401  (registers the rungs outside the ladder in helpers.kernels.PENDING)

    why = hopper_missing()
    if why:
        print(why, file=sys.stderr)
    return why is None


def run(main, doc: str) -> None:
    """The probe's command line: its docstring when no output path is given, else main(arguments)'s exit status."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    sys.exit(main(sys.argv[1:]))


def int_option(argv, flag: str, default, one: bool = False):
    """The whole numbers > 0 after `flag` in argv, separated by commas (--sizes 4096,8192), as a tuple, or `default`
    without the flag; with `one`, a single number (--rounds 9). Raises SystemExit(2) with one line naming the fix when
    what follows the flag is not that."""
    if flag not in argv:
        return default
    given = argv[argv.index(flag) + 1:argv.index(flag) + 2]
    if not given or not all(x.isdigit() and int(x) > 0 for x in given[0].split(",")) or (one and "," in given[0]):
        example = f"{flag} 9" if one else f"{flag} 4096,8192"
        print(f"{flag} takes {'a whole number' if one else 'whole numbers'} > 0, e.g. {example}", file=sys.stderr)
        raise SystemExit(2)
    values = tuple(int(x) for x in given[0].split(","))
    return values[0] if one else values


def knob_variant(rung: int, knobs: dict):
    """Rung `rung` with `knobs` (helpers.try_kernel's names), as helpers.tryout builds it: (entry with its shared memory
    and cluster, NVRTC options, {macro: value})."""
    from helpers.tryout import defines, options, validate_knobs, variant_entry

    spec, settings, given = validate_knobs(rung, knobs)
    defs = defines(spec, given)
    return variant_entry(spec, settings), options(defs), defs


def alternating(timed: dict, flops: float, rounds: int = 3) -> dict:
    """helpers.timing.alternating: each launch function of `timed` benchmarked in turn, `rounds` rounds."""
    from helpers.timing import alternating as rounds_of

    return rounds_of(timed, flops, rounds)


def round_rows(timed: dict, flops: float, rounds: int, head) -> list[dict]:
    """alternating(timed, flops, rounds) as rows: head(key) (the fields that name the entry), then the median of its
    rounds, its TFLOP/s, each round's time, SM clock and power; each row also printed to stderr as JSON."""
    import json
    import sys

    rows = []
    for key, v in alternating(timed, flops, rounds).items():
        ms = sorted(v["ms"])[len(v["ms"]) // 2]
        rows.append({**head(key), "median_ms": ms, "tflops": flops / ms / 1e9, "round_ms": v["ms"],
                     "sm_mhz": v["sm_mhz"], "power_w": v["power_w"]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows
