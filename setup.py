"""Build hook: a wheel of the course carries kernels/ and results/ inside the package, as
helpers/_data/ (helpers.paths finds them there, or in the clone). Everything else is in pyproject.toml."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA = {"kernels": ("*.cu", "*.cuh"), "results": ("*.json", "*.txt", "reference/*.json", "build-*/*")}


class BuildWithData(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "helpers" / "_data"
        for folder, patterns in DATA.items():
            for pattern in patterns:
                for f in sorted((ROOT / folder).glob(pattern)):
                    if f.is_file():
                        out = dest / folder / f.relative_to(ROOT / folder)
                        out.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(f, out)


setup(cmdclass={"build_py": BuildWithData})
