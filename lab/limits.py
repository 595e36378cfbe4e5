"""Write results/limits.json from the lab's logs: python lab/limits.py"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labkit.limits import write  # noqa: E402

print("wrote", write())
