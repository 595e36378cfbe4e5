"""The solution cells of lessons 00, 01, 04, 05, 06 and 07 are stored without output (tools/execute_notebooks.py), so nbval
compares nothing in them: here they run on the CPU backend, each under its lesson's imports, and every checker
they call must accept its own solution. (Lessons 02 and 03: tests/test_lesson02.py and test_lesson03.py.)"""
import json
from pathlib import Path

import pytest

from helpers import exercises

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# lesson: (its imports the solutions use, the verdicts its solutions print on the CPU backend)
LESSONS = {
    "00_start_here": ("import numpy as np\nimport helpers", {"Correct.": 2}),
    "01_fp32_baseline": ("import numpy as np\nimport helpers\nfrom helpers.exercises import baseline as ex",
                         {"Correct.": 4, "needs a CUDA GPU": 1}),       # the tiled kernel: a GPU gives its verdict
    "04_precision_analysis": ("import numpy as np\nimport helpers\nfrom helpers import emulate, numerics\n"
                              "import helpers.exercises.precision", {"Correct.": 3}),
    "05_closing_the_gap": ("import numpy as np\nimport helpers\nfrom helpers import analysis\n"
                           "from helpers.exercises import ladder as ex\nfrom helpers.kernels import RUNGS", {"Correct.": 4}),
    "06_hopper_full_speed": ("import numpy as np\nimport helpers\nfrom helpers.exercises import hopper as ex",
                             {"Correct.": 4, "The H200 recorded it": 1}),     # the ring edit: judged against the record
    "07_fp8": ("import numpy as np\nimport helpers\nfrom helpers import formats, fp8, fp8_gemm\n"
               "from helpers.exercises import fp8 as ex\nfrom helpers.experiments import fp8 as fp8x\n"
               "data = helpers.results.load_latest().meta['experiments']['fp8']\n"
               "A6, B6 = fp8x.random_inputs(64, 64, 4096, 'normal', seed=6)", {"Correct": 9}),   # the exercise's inputs
}


@pytest.mark.parametrize("stem", sorted(LESSONS))
def test_solution_cells_are_stored_empty_and_answer_correctly(stem, capsys):
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
    cells = [c for c in nb["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert cells and all(c["outputs"] == [] and c["execution_count"] is None for c in cells)
    imports, verdicts = LESSONS[stem]
    ns = {}
    exec(imports, ns)
    capsys.readouterr()
    for c in cells:
        exercises.last_result = None
        exec("".join(c["source"]), ns)
        assert exercises.last_result is not False, "".join(c["source"])
    out = capsys.readouterr().out
    for verdict, count in verdicts.items():
        assert out.count(verdict) == count, out
    assert "Not quite" not in out and "Not accepted" not in out and "Not answered" not in out
