"""The lab's tests: the lab's folder and the repository root on sys.path, the course's CPU backend."""
import os
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
for p in (LAB, LAB.parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("COURSE_DEVICE", "cpu")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
