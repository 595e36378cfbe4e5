#!/usr/bin/env bash
# Lesson 5 and reliability on the GPU: ladder experiment into the record, ladder and reliability
# GPU tests, sanitizer, sm_90a dumps, then notebook 05 executed (CPU outputs) and validated with nbval
# on the GPU. Each step has its own time limit so the bundle always comes back.
B=$1
t() { echo "-- $* ($(date +%T))"; }
t ladder experiment
COURSE_DEVICE=gpu timeout 170 python3 -m helpers.record --update-experiments ladder 2>&1 | tail -15
cp results/nvidia-h200.json "$B"/
t ladder tests
COURSE_DEVICE=gpu timeout 100 python3 -m pytest tests/test_gpu_ladder.py tests/test_gpu_reliability.py -q -p no:cacheprovider -rfE > "$B/tests_ladder.log" 2>&1
tail -15 "$B/tests_ladder.log"
t sanitize
SANITIZE_PY=python3 timeout 200 bash tools/sanitize.sh > "$B/sanitize.log" 2>&1; echo "sanitize rc=$?"
tail -25 "$B/sanitize.log"; cp results/sanitize-*.txt "$B"/ 2>/dev/null
t dumps
mkdir -p "$B/dumps"
nvcc -std=c++17 -arch=sm_90 -cubin -Xptxas -v -o /tmp/ladder.cubin kernels/ladder.cu > "$B/dumps/ladder.ptxas.txt" 2>&1 && cuobjdump -sass /tmp/ladder.cubin > "$B/dumps/ladder.sm_90.sass"
nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v -o /tmp/l90a.cubin kernels/ladder_sm90a.cu > "$B/dumps/ladder_sm90a.ptxas.txt" 2>&1 && cuobjdump -sass /tmp/l90a.cubin > "$B/dumps/ladder_sm90a.sm_90a.sass"
t notebook 05
COURSE_DEVICE=cpu timeout 60 python3 tools/execute_notebooks.py --inplace notebooks/05_closing_the_gap.ipynb 2>&1 | tail -3
cp notebooks/05_closing_the_gap.ipynb "$B"/
COURSE_DEVICE=gpu timeout 150 python3 -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
  --nbval-cell-timeout 180 notebooks/05_closing_the_gap.ipynb -q -p no:cacheprovider > "$B/nbval05.log" 2>&1
grep -E "passed|failed|FAILED" "$B/nbval05.log" | tail -15
t done
