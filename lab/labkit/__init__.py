"""labkit: the lab's own code (not part of the installed course): readers of the probes' logs in lab/logs, the
predictions each idea was given before it ran, and the summary the lessons show (results/tried.json).

The lab depends on the course (it imports `helpers`); the course never imports the lab."""
from __future__ import annotations

import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
ROOT = LAB.parent
if str(ROOT) not in sys.path:          # `import helpers` from a clone, also without `pip install -e .`
    sys.path.insert(0, str(ROOT))
