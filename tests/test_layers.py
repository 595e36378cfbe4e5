"""The helpers package is layered: core, then presentation, then one module per lesson family, then the
`make record` command. A module imports only modules of its own layer or below (imports inside functions
count too), no import cycle exists, and `import helpers` loads no plotting or GPU package."""
import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "helpers"

CORE = {"errors", "paths", "device", "compile", "kernels", "hopper", "isolate", "launch", "knobs", "numerics",
        "emulate", "check", "mutations", "timing", "clocks", "memory", "cublas", "results", "profile", "analysis",
        "formats", "fp8", "fp8_gemm", "fp8_scaled", "training", "model_gpu"}
PRESENTATION = {"plot_style", "plots", "plots_ladder", "plots_hopper", "plots_fp8", "display", "tryout",
                "tryout_sweep"}


def layer(mod: str) -> int:
    """0 core, 1 presentation, 2 a lesson family (experiments/, exercises/), 3 the command and the package's
    facade (helpers/__init__.py, which re-exports names from every layer)."""
    parts = mod.split(".")[1:]
    if not parts or parts == ["record"]:
        return 3
    if parts[0] in ("experiments", "exercises"):
        return 2
    if parts[0] in PRESENTATION:
        return 1
    assert parts[0] in CORE, f"{mod}: put it in a layer (tests/test_layers.py)"
    return 0


def modules() -> dict:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports(mods: dict) -> dict:
    """{module: {helpers module it imports: first line}}, module level and inside functions alike."""
    graph = {}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        found = {}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs + ([base] if len(subs) < len(node.names) else [])
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != mod and t.startswith("helpers"):
                    found.setdefault(t, node.lineno)
        graph[mod] = found
    return graph


def cycles(graph: dict) -> list[list[str]]:
    """The import cycles: each strongly connected group of two or more modules (Tarjan's algorithm), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(m):
        index[m] = low[m] = len(index)
        stack.append(m)
        on.add(m)
        for t in graph[m]:
            if t not in index:
                visit(t)
                low[m] = min(low[m], low[t])
            elif t in on:
                low[m] = min(low[m], index[t])
        if low[m] == index[m]:
            group = []
            while not group or group[-1] != m:
                group.append(stack.pop())
                on.discard(group[-1])
            if len(group) > 1:
                out.append(sorted(group))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return sorted(out)


def test_every_import_goes_to_the_same_layer_or_below():
    mods = modules()
    graph = imports(mods)
    up = [f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)}) at {mods[m].relative_to(ROOT)}:{line}"
          for m, ts in sorted(graph.items()) for t, line in sorted(ts.items()) if layer(t) > layer(m)]
    assert not up, "imports to a higher layer:\n" + "\n".join(up)


def test_no_import_cycle():
    found = cycles(imports(modules()))
    assert not found, "import cycles among: " + "; ".join(", ".join(m.removeprefix("helpers.") for m in c)
                                                          for c in found)


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": 1}, "b": {}, "c": {"a": 1}}) == []


def test_import_helpers_loads_no_plotting_or_gpu_package():
    code = ("import sys, helpers; helpers.try_kernel; helpers.gemm; helpers.summary; "
            "print(' '.join(m for m in ('matplotlib', 'IPython', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import helpers loaded: {out.stdout.strip()}"


def test_every_module_and_name_of_the_package_loads_on_first_use():
    code = ("import pathlib, helpers; names = [p.stem for p in pathlib.Path(helpers.__file__).parent.iterdir() "
            "if p.suffix == '.py' and p.stem != '__init__' or (p / '__init__.py').is_file()]; "
            "[getattr(helpers, n) for n in names + helpers.__all__]; print(len(names))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
