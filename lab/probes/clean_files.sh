#!/usr/bin/env bash
# The course's clean kernel files against the builds the record measured, on a Hopper GPU: rungs 8-30
# (lab/probes/clean_rungs.py) and rung 7 with lesson 7's FP8 kernels (lab/probes/clean_fp8.py). Each step: every new
# build bit-identical to its CPU model and to the old build off the tile grid; compute-sanitizer memcheck, racecheck
# and synccheck; new against old in alternating rounds (L2 flushed, clocks beside).
#   bash lab/probes/clean_files.sh [RUNGS]      (RUNGS as clean_rungs.py takes them, e.g. 8-16; outputs in $OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-.gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-}:$PWD COURSE_DEVICE=gpu
CS=${CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
RUNGS=${1:-8-30}
fail=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/clean_files.txt"
for probe in "clean_rungs.py check $RUNGS" "clean_fp8.py check"; do
  python3 lab/probes/$probe 2>&1 | tee -a "$OUT/clean_files.txt" || fail=1
done
for tool in memcheck racecheck synccheck; do
  for probe in "clean_rungs.py sanitize $RUNGS" "clean_fp8.py sanitize"; do
    log="$OUT/clean_sanitize_${tool}_${probe%%.py*}.log"
    "$CS" --tool "$tool" --print-limit 20 --report-api-errors no python3 lab/probes/$probe > "$log" 2>&1 || fail=1
    echo "$tool ${probe%% *}: $(grep -c '@@case.*PASS' "$log") passed; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log")" | tee -a "$OUT/clean_files.txt"
  done
done
for probe in "clean_rungs.py time $RUNGS" "clean_fp8.py time"; do
  python3 lab/probes/$probe 2>&1 | tee -a "$OUT/clean_files.txt" || fail=1
done
echo "clean_files: $([ $fail = 0 ] && echo all steps ran clean || echo FAILURES, see $OUT)" | tee -a "$OUT/clean_files.txt"
exit $fail
