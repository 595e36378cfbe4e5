#!/usr/bin/env bash
# One device call: record, GPU tests, kernel dumps, notebooks (CPU outputs, then nbval on the GPU).
# Usage on the GPU host (through the device tool): bash tools/gpu_session.sh [stage ...]
# Stages: record tests dumps nbval (default: all). Everything lands in $OUT/bundle.tar.gz.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=$OUT/b; mkdir -p "$B"
stages=${*:-record tests dumps nbval}
exec > >(tee "$B/session.log") 2>&1
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
fi
python3 -c "import sys, cupy, numpy, matplotlib; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'mpl', matplotlib.__version__)"
COURSE_DEVICE=gpu python3 -c "import helpers; helpers.summary()"
for s in $stages; do
  t0=$(date +%s); echo "== stage $s"
  case $s in
    record) COURSE_DEVICE=gpu python3 -m helpers.record ${RECORD_ARGS:-} 2>&1 | grep -v "^  [a-z_0-9]* *[0-9.]* ms"; cp results/*.json "$B"/ ;;
    tests)  COURSE_DEVICE=gpu python3 -m pytest tests/test_gpu*.py -q -p no:cacheprovider -rfE > "$B/tests_gpu.log" 2>&1
            tail -30 "$B/tests_gpu.log"
            python3 -m pytest tests -q -p no:cacheprovider 2>&1 | tail -5 ;;
    dumps)  mkdir -p "$B/dumps"
            for f in kernels/*.cu; do n=$(basename "$f" .cu)
              nvcc -std=c++17 -arch=sm_90 -cubin -Xptxas -v -o /tmp/$n.cubin "$f" > "$B/dumps/$n.ptxas.txt" 2>&1
              nvcc -std=c++17 -arch=sm_90 -ptx -o "$B/dumps/$n.sm_90.ptx" "$f"
              cuobjdump -sass /tmp/$n.cubin > "$B/dumps/$n.sm_90.sass"; done ;;
    nbval)  # validates the committed notebooks (CPU-backend outputs) with the GPU backend
            COURSE_DEVICE=gpu python3 -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
              --nbval-cell-timeout 600 notebooks -q -p no:cacheprovider > "$B/nbval_gpu.log" 2>&1
            grep -E "passed|failed|FAILED|Error" "$B/nbval_gpu.log" | tail -40 ;;
    *) [ -f "tools/gpu_stage_$s.sh" ] && bash "tools/gpu_stage_$s.sh" "$B" ;;
  esac
  echo "== stage $s took $(( $(date +%s) - t0 )) s"
done
tar -C "$B" -czf "$OUT/bundle.tar.gz" . && ls -la "$OUT"
