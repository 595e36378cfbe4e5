"""Where kernels/ and results/ are: inside an installed wheel (``helpers/_data/``, copied by setup.py), else the
clone's own folders; ``COURSE_KERNELS_DIR`` / ``COURSE_RESULTS_DIR`` point at folders of your own."""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# the folder `import helpers` resolves from: a child process with it on PYTHONPATH imports the same helpers
IMPORT_ROOT = PACKAGE_DIR.parent


def _data_root() -> Path:
    packaged = PACKAGE_DIR / "_data"
    return packaged if (packaged / "kernels").is_dir() else IMPORT_ROOT


def kernel_dir() -> Path:
    """Folder of the .cu files (COURSE_KERNELS_DIR overrides)."""
    return Path(os.environ.get("COURSE_KERNELS_DIR") or _data_root() / "kernels")


def results_dir() -> Path:
    """Folder of the recorded GPU results (COURSE_RESULTS_DIR overrides, read at every call)."""
    return Path(os.environ.get("COURSE_RESULTS_DIR") or _data_root() / "results")


def child_env(env: dict | None = None) -> dict:
    """An environment in which a child Python process imports these same helpers."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(IMPORT_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
