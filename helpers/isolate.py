"""Running one helpers function in a child Python process on the GPU.

A kernel that faults leaves its process's CUDA context unusable, and one that hangs never returns: in the notebook's
own process, either would take every later GPU call with it. ``run_isolated("pkg.module:function", *args)`` runs the
function in a fresh ``python`` with ``COURSE_DEVICE=gpu`` and returns its JSON result, or ``{"error": ...}`` when the
child failed, faulted or timed out. Registry entries marked ``isolate=True`` run here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD_FLAG = "COURSE_ISOLATED_CHILD"      # set in the child processes
from .paths import IMPORT_ROOT as ROOT, child_env  # noqa: E402

# the child: import the function, read its arguments from stdin, print its result after a marker
# (the arguments travel on stdin: matrices as JSON can exceed the kernel's limit on one command-line
# argument, 128 KiB on Linux)
_CHILD = ("import importlib, json, sys; mod, fn = sys.argv[1].split(':'); "
          "f = getattr(importlib.import_module(mod), fn); a = json.loads(sys.stdin.read()); "
          "print('JSON' + json.dumps(f(*a)))")


def in_child() -> bool:
    """True inside a child process of run_isolated (which runs isolated work in-process)."""
    return os.environ.get(CHILD_FLAG) == "1"


def run_isolated(func: str, *args, timeout: int = 240, device: str = "gpu"):
    """``func(*args)`` in a child process, ``func`` written "package.module:function"; returns its
    JSON result, or {"error": ..., "returncode": ...} when the child failed, or {"error": ...}
    when it ran longer than `timeout` seconds."""
    env = child_env(dict(os.environ, COURSE_DEVICE=device, **{CHILD_FLAG: "1"}))
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, func], input=json.dumps(list(args)), cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        said = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        last = [ln for ln in said.strip().splitlines() if ln.strip()][-3:]
        return {"error": f"timed out after {timeout} s (a hang: e.g. an mbarrier that never completes)"
                         + (f"; its last words on stderr: {' | '.join(last)}" if last else "")}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("JSON")), None)
    if p.returncode != 0 or line is None:
        return {"error": (p.stderr or p.stdout)[-3000:], "returncode": p.returncode}
    return json.loads(line[4:])
