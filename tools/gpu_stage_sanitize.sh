#!/usr/bin/env bash
# make sanitize on the GPU host (its python3 has CuPy); summary and raw logs into the bundle.
B=$1
SANITIZE_PY=python3 timeout 240 bash tools/sanitize.sh > "$B/sanitize.log" 2>&1; echo "sanitize rc=$?"
tail -12 "$B/sanitize.log"; cp results/sanitize-*.txt "$B"/ 2>/dev/null
mkdir -p "$B/sanitize_logs" && cp build/sanitize/*.log "$B/sanitize_logs/" 2>/dev/null; true
